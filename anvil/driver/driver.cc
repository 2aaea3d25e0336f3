#include "anvil/driver/driver.h"

#include <algorithm>
#include <filesystem>

#include "anvil/frontend/onnx/importer.h"
#include "anvil/models/models.h"
#include "anvil/runtime/host_cpu.h"

namespace anvil::driver {

const char* to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kBadInput:
      return "bad input";
    case ErrorKind::kCompile:
      return "compile error";
    case ErrorKind::kRuntime:
      return "runtime error";
  }
  return "error";
}

bool is_zoo_name(const std::string& model) {
  return model.rfind(kZooPrefix, 0) == 0;
}

namespace {

std::string type_string(const graph::Graph& g, graph::ValueId v) {
  return g.value(v).name + " " + ops::to_string(g.value(v).type);
}

graph::Graph zoo_model(const std::string& model, const ModelInputs& inputs) {
  const std::string name = model.substr(sizeof kZooPrefix - 1);
  std::vector<std::string> names = models::model_names();
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    std::string known;
    for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
    throw Error(ErrorKind::kBadInput,
                "unknown zoo model '" + name + "' (expected one of: " + known + ")");
  }
  if (!inputs.values.empty())
    throw Error(ErrorKind::kBadInput, "input value '" + inputs.values.begin()->first +
                                          "': " + model +
                                          " is a built-in model; its inputs take no values at "
                                          "compile time");
  graph::Graph g = with_kind(ErrorKind::kCompile, "building zoo model '" + name + "'",
                             [&] { return models::build_model(name); });
  // Zoo models have static shapes: a binding must name an input and agree with it.
  for (const auto& [input, dims] : inputs.shapes) {
    graph::ValueId v = g.find(input);
    bool is_input = std::find(g.inputs().begin(), g.inputs().end(), v) != g.inputs().end();
    if (v < 0 || !is_input) {
      std::string list;
      for (graph::ValueId i : g.inputs()) list += (list.empty() ? "" : ", ") + type_string(g, i);
      throw Error(ErrorKind::kBadInput, "input shape " + input + ": zoo model '" + name +
                                            "' has no input '" + input + "' (its inputs: " + list +
                                            ")");
    }
    if (g.value(v).type.shape != dims)
      throw Error(ErrorKind::kBadInput, "input shape " + input + "=" + runtime::shape_str(dims) +
                                            ": zoo model '" + name + "' fixes input '" + input +
                                            "' to " + ops::to_string(g.value(v).type));
  }
  return g;
}

frontend::ImportOptions import_options(const ModelInputs& inputs) {
  frontend::ImportOptions import;
  import.input_shapes = inputs.shapes;
  import.constant_inputs = inputs.values;
  return import;
}

}  // namespace

graph::Graph load_model(const std::string& model, const ModelInputs& inputs) {
  if (is_zoo_name(model)) return zoo_model(model, inputs);
  return with_kind(ErrorKind::kBadInput, "",
                   [&] { return frontend::import_onnx(model, import_options(inputs)); });
}

graph::Graph load_model_bytes(const std::string& bytes, const ModelInputs& inputs,
                              const std::string& origin) {
  return with_kind(ErrorKind::kBadInput, "", [&] {
    return frontend::import_onnx_bytes(bytes, import_options(inputs), origin);
  });
}

autotune::RecordFile read_tuning_records(const std::string& file, bool any_cpu) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec))
    throw Error(ErrorKind::kBadInput, file + ": no such file");
  if (std::filesystem::is_directory(file, ec))
    throw Error(ErrorKind::kBadInput, file + ": is a directory, not a file of tuning records");
  autotune::RecordFile records =
      with_kind(ErrorKind::kBadInput, "", [&] { return autotune::read_records(file); });
  if (!any_cpu) autotune::keep_cpu(records, runtime::host_cpu().id());
  return records;
}

Compiled compile(const graph::Graph& g, const Target& target, const CompileOptions& options) {
  graph::BuildOptions build;
  build.fuse = options.fuse;
  build.alter_layout = options.layout;
  build.print_after = options.print_after;
  build.strict = options.strict;
  // The book outlives the build: the build's configuration sources read it.
  const autotune::RecordBook book(options.tuning_records.records);
  std::vector<autotune::TaskLookup> lookups;
  if (!options.tuning_records.records.empty()) autotune::use_records(book, target, build, &lookups);
  if (!options.winograd)
    build.algorithm_for = [](const std::string&, const std::vector<ops::TensorType>&,
                             const ops::Attrs&) {
      return ops::Config{{"winograd_tile", 0}};
    };
  Compiled c{
      with_kind(ErrorKind::kCompile, "compiling " + options.name + " for '" + target.str() + "'",
                [&] { return graph::CompiledGraph::build(g, target, build); }),
      {},
      std::move(lookups)};
  for (const graph::CompiledGraph::Fallback& f : c.graph.fallbacks()) c.warnings.push_back(f.str());
  return c;
}

Compiled compile_model(const std::string& model, const std::string& target_text,
                       const CompileOptions& options, const ModelInputs& inputs, bool is_bytes) {
  const Target target = with_kind(ErrorKind::kBadInput, "target '" + target_text + "'",
                                  [&] { return Target::parse(target_text); });
  graph::Graph g = is_bytes ? load_model_bytes(model, inputs) : load_model(model, inputs);
  if (is_bytes || options.name != CompileOptions().name) return compile(g, target, options);
  CompileOptions named = options;
  named.name = model;
  return compile(g, target, named);
}

}  // namespace anvil::driver
