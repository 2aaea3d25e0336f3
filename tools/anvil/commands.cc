#include "tools/anvil/commands.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "anvil/autotune/ab_timing.h"
#include "anvil/codegen/c/codegen_c.h"
#include "anvil/codegen/cuda/nvrtc.h"
#include "anvil/codegen/llvm/codegen_llvm.h"
#include "anvil/frontend/onnx/exporter.h"
#include "anvil/frontend/onnx/importer.h"
#include "anvil/graph/build.h"
#include "anvil/graph/flops.h"
#include "anvil/models/models.h"
#include "anvil/runtime/c_runtime_api.h"
#include "anvil/runtime/device_api.h"
#include "anvil/runtime/graph_executor.h"
#include "anvil/runtime/host_cpu.h"
#include "anvil/runtime/host_memory.h"
#include "anvil/runtime/model.h"
#include "anvil/runtime/npy.h"
#include "anvil/support/error.h"
#include "anvil/target/peak.h"
#include "anvil/target/target.h"
#include "tools/anvil/args.h"
#include "tools/anvil/bench_report.h"

namespace anvil::cli {

namespace fs = std::filesystem;

namespace {

// One line per built-in model for `anvil zoo list`.
std::string zoo_description(const std::string& name) {
  static const std::map<std::string, std::string> descriptions = {
      {"resnet18", "ResNet-18 image classifier (ImageNet, 1000 classes)"},
      {"mobilenet_v1", "MobileNet v1, width 1.0 (depthwise separable convolutions)"},
      {"mobilenet_v2", "MobileNet v2, width 1.0 (inverted residual blocks)"},
      {"lstm_lm", "LSTM language model: 2 layers, hidden 650, vocabulary 10000, 35 steps"},
      {"dqn", "DQN Atari agent: 3 convolutions, dense 512, 18 actions"},
      {"dcgan", "DCGAN generator: 100-d code to a 3x64x64 image"},
  };
  auto it = descriptions.find(name);
  return it == descriptions.end() ? "" : it->second;
}

std::string known_models() {
  std::string s;
  for (const std::string& n : models::model_names()) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// An unknown zoo name is a usage error listing the known ones.
void check_zoo_name(const std::string& name, const std::string& option) {
  std::vector<std::string> names = models::model_names();
  if (std::find(names.begin(), names.end(), name) == names.end())
    usage_error(option + ": unknown zoo model '" + name + "' (expected one of: " + known_models() +
                ")");
}

// The zoo model called `name`.
graph::Graph zoo_model(const std::string& name, const std::string& option) {
  check_zoo_name(name, option);
  return with_exit_code(kCompile, "building zoo model '" + name + "'",
                        [&] { return models::build_model(name); });
}

std::string type_string(const graph::Graph& g, graph::ValueId v) {
  return g.value(v).name + " " + ops::to_string(g.value(v).type);
}

std::string type_string(const runtime::TensorInfo& t) {
  return "'" + t.name + "' " + runtime::to_string(t.dtype) + dims_string(t.shape);
}

// Whether `path` names a compiled artifact (a shared library: ELF's magic first).
bool is_artifact(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char magic[4] = {};
  return f.read(magic, 4) && magic[0] == '\x7f' && std::string(magic + 1, 3) == "ELF";
}

std::string slot_string(const runtime::GraphProgram& p, int32_t slot, const std::string& name) {
  const runtime::GraphProgram::Slot& s = p.slots[slot];
  return "'" + name + "' " + runtime::to_string(s.dtype) + dims_string(s.shape);
}

// `anvil inspect model.so`: what the artifact holds, read without loading its code (it may be
// for another CPU or a GPU this machine lacks), and whether it runs here.
// The calls of `p`, `indent` spaces in; a control-flow step's bodies (subprograms) under it.
void print_calls(const runtime::GraphProgram& p, int indent) {
  for (const runtime::GraphProgram::Call& c : p.calls) {
    if (!c.is_control()) {
      std::printf("%*s%-36s %10.4f GFLOP  %s\n", indent, "", c.kernel.c_str(), c.flops / 1e9,
                  c.nodes.c_str());
      continue;
    }
    std::printf("%*s%s: a control-flow step\n", indent, "", c.kernel.c_str());
    for (size_t b = 0; b < c.bodies.size(); ++b) {
      const runtime::GraphProgram& sub = p.subprograms.at(static_cast<size_t>(c.bodies[b]));
      const char* role = c.control.op != "if" ? "body" : b == 0 ? "then" : "else";
      std::printf("%*s%s (subprogram %d): %zu inputs, %zu outputs, %zu calls, %s planned\n",
                  indent + 2, "", role, c.bodies[b], sub.inputs.size(), sub.outputs.size(),
                  sub.calls.size(), bytes_string(sub.arena_bytes).c_str());
      print_calls(sub, indent + 4);
    }
  }
}

void describe_artifact(const std::string& path) {
  const runtime::ArtifactContents a =
      with_exit_code(kBadInput, "", [&] { return runtime::read_artifact(path); });
  const runtime::GraphProgram& p = a.program;
  std::cout << "artifact " << path << " (" << bytes_string(static_cast<int64_t>(a.file_bytes))
            << ": code " << bytes_string(static_cast<int64_t>(a.library_bytes)) << ", program "
            << bytes_string(static_cast<int64_t>(a.program_bytes)) << ", parameters "
            << (a.params_file.name.empty()
                    ? bytes_string(static_cast<int64_t>(a.params_bytes))
                    : "in " + a.params_file.name + ", " +
                          bytes_string(static_cast<int64_t>(a.params_file.bytes)))
            << ")\n";
  std::cout << "target: " << p.target << "\n";
  if (!p.cpu.empty() || !p.cpu_features.empty()) {
    std::string features;
    for (const std::string& f : p.cpu_features) features += " " + f;
    std::cout << "compiled for CPU: " << p.cpu << (features.empty() ? "" : ", using" + features)
              << "\n";
    std::vector<std::string> missing =
        runtime::missing_cpu_features(p.cpu_features, runtime::host_cpu());
    std::string lacks;
    for (const std::string& f : missing) lacks += (lacks.empty() ? "" : ", ") + f;
    std::cout << "runs on this CPU (" << runtime::host_cpu().id()
              << "): " << (missing.empty() ? "yes" : "no, it lacks " + lacks) << "\n";
  }
  std::cout << "inputs:\n";
  for (int32_t s : p.inputs) std::cout << "  " << slot_string(p, s, p.slots[s].name) << "\n";
  std::cout << "outputs:\n";
  for (size_t i = 0; i < p.outputs.size(); ++i)
    std::cout << "  " << slot_string(p, p.outputs[i], p.output_name(i)) << "\n";
  std::cout << "parameters: " << p.param_names.size() << " tensors\n";
  std::cout << "intermediate memory: " << bytes_string(p.arena_bytes) << " planned\n";
  double flops = 0;
  for (const runtime::GraphProgram::Call& c : p.calls) flops += c.flops;
  std::printf("kernels: %zu calls, %.3f GFLOP per run%s\n", p.calls.size(), flops / 1e9,
              p.subprograms.empty() ? "" : " (outside control flow)");
  print_calls(p, 2);
  std::fflush(stdout);
}

}  // namespace

void check_output_path(const std::string& path, const std::string& option) {
  fs::path parent = fs::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty() && !fs::is_directory(parent, ec))
    usage_error(option + " " + path + ": the directory '" + parent.string() + "' does not exist");
  if (fs::is_directory(path, ec))
    usage_error(option + " " + path + ": is a directory (expected a file name)");
}

graph::Graph load_model(const std::string& model, const std::vector<std::string>& input_shapes,
                        const std::vector<std::string>& input_values) {
  driver::ModelInputs inputs;
  for (const std::string& text : input_shapes) {
    auto [name, dims] = parse_shape_binding(text);
    if (!inputs.shapes.emplace(name, dims).second)
      usage_error("--input-shape: input '" + name + "' is bound twice");
  }
  std::set<std::string> valued;
  for (const std::string& text : input_values) {
    const auto [name, file_name] = parse_binding(text, "--input-value", "NAME=FILE.npy");
    const std::string file = file_name;  // a lambda cannot capture a structured binding (clang 14)
    if (!valued.insert(name).second)
      usage_error("--input-value: input '" + name + "' is bound twice");
    if (driver::is_zoo_name(model))
      usage_error("--input-value " + name + ": " + model +
                  " is a built-in model; its inputs take no values at compile time");
    inputs.values[name] = with_exit_code(kBadInput, "--input-value " + name + "=" + file,
                                         [&] { return runtime::load_npy(file); });
  }
  // An unknown zoo name is a mistake on the command line.
  if (driver::is_zoo_name(model))
    check_zoo_name(model.substr(sizeof driver::kZooPrefix - 1), "MODEL " + model);
  return with_exit_code(kBadInput, "", [&] { return driver::load_model(model, inputs); });
}

std::vector<std::string> printable_passes() {
  // The pass names of CompiledGraph::build's pipeline (anvil/graph/build.cc).
  return {"all",
          "simplify_inference",
          "fold_constants",
          "cut_conv_bands",
          "alter_layout",
          "eliminate_common_subexpressions",
          "eliminate_dead_code"};
}

graph::CompiledGraph build_graph(const graph::Graph& g, const Target& target,
                                 graph::BuildOptions options, bool strict,
                                 std::set<std::string>* warned) {
  options.strict = strict;
  graph::CompiledGraph cg = graph::CompiledGraph::build(g, target, options);
  for (const graph::CompiledGraph::Fallback& f : cg.fallbacks()) {
    std::string line = "anvil: warning: " + f.str();
    if (!warned || warned->insert(line).second) std::cerr << line << "\n";
  }
  return cg;
}

void compile_command(const CompileOptions& o) {
  check_output_path(o.output, "-o");
  const Target target = with_exit_code(kUsage, "--target '" + o.target + "'",
                                       [&] { return Target::parse(o.target); });
  for (const std::string& p : o.print_after)
    if (p == "alter_layout" && o.no_layout)
      usage_error("--print-after alter_layout: the pass does not run with --no-layout");
  driver::CompileOptions options;
  options.name = o.model;
  options.fuse = !o.no_fuse;
  options.layout = !o.no_layout;
  options.winograd = !o.no_winograd;
  options.strict = o.strict;
  options.print_after = o.print_after;
  if (!o.tuning_records.empty()) {
    options.tuning_records = read_tuning_records(o.tuning_records, o.records_any_cpu);
    if (std::string note = autotune::other_cpus_note(options.tuning_records); !note.empty())
      std::cout << note << " (--records-any-cpu applies them)\n";
  }

  graph::Graph g = load_model(o.model, o.input_shapes, o.input_values);
  driver::Compiled compiled =
      with_exit_code(kCompile, "", [&] { return driver::compile(g, target, options); });
  for (const std::string& w : compiled.warnings) std::cerr << "anvil: warning: " << w << "\n";
  const graph::CompiledGraph& cg = compiled.graph;
  if (!o.tuning_records.empty()) {
    const autotune::RecordBook book(options.tuning_records.records);
    std::cout << tuning_summary(book.num_records(), book.num_tasks(),
                                options.tuning_records.torn_lines, compiled.lookups);
  }

  graph::SaveOptions save;
  save.separate_params = o.separate_params;
  with_exit_code(kCompile, "", [&] { cg.save(o.output, save); });

  if (o.verbose) std::cout << cg.summary() << "\n";
  const graph::MemoryPlan& plan = cg.memory_plan();
  std::cout << "compiled " << o.model << " for '" << target.str() << "': " << cg.num_kernels()
            << " kernels"
            << (cg.steps().empty()
                    ? std::string()
                    : " and " + std::to_string(cg.steps().size()) +
                          " control-flow steps (their bodies: anvil inspect " + o.output + ")")
            << (o.no_fuse ? " (fusion off)" : "") << (o.no_layout ? " (layout alteration off)" : "")
            << (o.no_winograd ? " (no Winograd)" : "") << "; intermediate memory "
            << bytes_string(plan.planned_bytes) << " planned, "
            << bytes_string(plan.unplanned_bytes) << " unplanned\n";
  std::error_code ec;
  std::cout << "wrote " << o.output << " ("
            << bytes_string(static_cast<int64_t>(fs::file_size(o.output, ec))) << ")";
  if (o.separate_params) {
    fs::path params = fs::path(o.output).replace_extension(".safetensors");
    if (fs::exists(params, ec))
      std::cout << " and " << params.string() << " ("
                << bytes_string(static_cast<int64_t>(fs::file_size(params, ec))) << ")";
  }
  std::cout << "\n";
}

runtime::NDArray filled_input(const runtime::TensorInfo& t, const std::string& mode) {
  try {
    return autotune::filled_input(t, mode);
  } catch (const std::invalid_argument&) {
    throw CliError(kBadInput, "--fill-mode " + mode + ": input " + type_string(t) +
                                  " has a dtype it cannot fill; give it with --input");
  }
}

namespace {

// "top 5 of 'logits': [0, 412] 3.214, [0, 7] 3.101, ..." (index, value), largest first.
std::string top_elements(const std::string& name, const runtime::NDArray& a, int k) {
  const float* p = a.data_as<float>();
  std::vector<int64_t> order(static_cast<size_t>(a.numel()));
  for (int64_t i = 0; i < a.numel(); ++i) order[static_cast<size_t>(i)] = i;
  k = static_cast<int>(std::min<int64_t>(k, a.numel()));
  std::partial_sort(order.begin(), order.begin() + k, order.end(),
                    [&](int64_t x, int64_t y) { return p[x] > p[y]; });
  std::string s = "top " + std::to_string(k) + " of '" + name + "':";
  for (int i = 0; i < k; ++i) {
    // The flat index as a multi-dimensional one.
    std::vector<int64_t> index(a.shape().size());
    int64_t rest = order[static_cast<size_t>(i)];
    for (size_t d = index.size(); d-- > 0;) {
      index[d] = rest % a.shape()[d];
      rest /= a.shape()[d];
    }
    char value[32];
    std::snprintf(value, sizeof value, "%.4g", p[order[static_cast<size_t>(i)]]);
    s += std::string(i ? "," : "") + " " + dims_string(index) + " " + value;
  }
  return s + "\n";
}

}  // namespace

void run_command(const RunOptions& o) {
  // The output directory is created when missing (its parent must exist, as for -o).
  std::error_code ec;
  if (!fs::is_directory(o.output_dir, ec)) {
    fs::path parent = fs::absolute(o.output_dir, ec).parent_path();
    if (fs::exists(o.output_dir, ec) || !fs::is_directory(parent, ec) ||
        !fs::create_directory(o.output_dir, ec))
      usage_error("--output-dir " + o.output_dir +
                  ": not a directory, and it cannot be created (its parent must exist)");
  }
  std::map<std::string, std::string> files;
  for (const std::string& text : o.inputs) {
    auto [name, file] = parse_binding(text, "--input", "NAME=FILE.npy");
    if (!files.emplace(name, file).second)
      usage_error("--input: input '" + name + "' is given twice");
  }
  if (o.threads > 0) AnvilSetNumThreads(o.threads);

  // A GPU artifact on a machine without the GPU's driver is the machine's failure, not the file's.
  const runtime::Model model = with_exit_code(kBadInput, "", [&] {
    try {
      return runtime::Model::load(o.model);
    } catch (const runtime::DeviceUnavailable& e) {
      throw CliError(kRuntime, e.what());
    }
  });

  // Every input by name, with the file's shape and dtype checked here so that the message can
  // name the option and the file as well as what the model expects.
  std::string expected;
  for (const runtime::TensorInfo& t : model.inputs())
    expected += (expected.empty() ? "" : ", ") + type_string(t);
  std::map<std::string, runtime::NDArray> inputs;
  // Not a structured binding: clang 14 cannot capture those in the lambdas below.
  for (const auto& binding : files) {
    const std::string& name = binding.first;
    const std::string& file = binding.second;
    auto it = std::find_if(model.inputs().begin(), model.inputs().end(),
                           [&](const runtime::TensorInfo& t) { return t.name == name; });
    if (it == model.inputs().end())
      throw CliError(kBadInput, "--input " + name + "=" + file + ": " + o.model +
                                    " has no input '" + name + "' (its inputs: " + expected + ")");
    runtime::NDArray a = with_exit_code(kBadInput, "--input " + name + "=" + file,
                                        [&] { return runtime::load_npy(file); });
    const DLDataType dt = a.dtype();
    const bool same_dtype =
        dt.code == it->dtype.code && dt.bits == it->dtype.bits && dt.lanes == it->dtype.lanes;
    if (a.shape() != it->shape || !same_dtype)
      throw CliError(
          kBadInput,
          "--input " + name + "=" + file + ": the file holds " + runtime::to_string(dt) +
              dims_string(a.shape()) + ", but " + o.model + "'s input " + type_string(*it) +
              " expects " + runtime::to_string(it->dtype) + dims_string(it->shape) +
              (same_dtype && !a.shape().empty() ? runtime::rebind_hint(name, a.shape()) : ""));
    inputs.emplace(name, a);
  }
  for (const runtime::TensorInfo& t : model.inputs())
    if (!inputs.count(t.name)) {
      if (o.fill_mode.empty())
        throw CliError(kBadInput, "--input: " + o.model + "'s input " + type_string(t) +
                                      " is not given (expected --input " + t.name +
                                      "=FILE.npy, or --fill-mode)");
      inputs.emplace(t.name, filled_input(t, o.fill_mode));
    }

  auto run_once = [&] {
    try {
      return model.run(inputs);
    } catch (const runtime::InputError& e) {
      throw CliError(kBadInput, e.what());
    } catch (const std::exception& e) {
      throw CliError(kRuntime, "running " + o.model + ": " + e.what());
    }
  };
  std::vector<runtime::NDArray> outputs = run_once();
  if (o.profile) {
    const int runs = o.repeat > 0 ? o.repeat : 10;
    std::vector<runtime::NDArray> ordered;
    for (const runtime::TensorInfo& t : model.inputs()) ordered.push_back(inputs.at(t.name));
    std::vector<runtime::KernelProfile> kernels;
    try {
      kernels = model.profile(ordered, runs);
    } catch (const runtime::InputError& e) {
      throw CliError(kBadInput, e.what());
    } catch (const std::exception& e) {
      throw CliError(kRuntime, "profiling " + o.model + ": " + e.what());
    }
    // A GPU model's kernels run on the device: no thread count, and no measured peak.
    const bool on_gpu = Target::parse(model.target()).is_gpu();
    std::cout << profile_table(kernels, runs, on_gpu ? 0 : AnvilGetNumThreads(),
                               on_gpu ? PeakFlops{} : measured_peak());
    std::cout.flush();
  } else if (o.repeat > 0) {
    std::vector<double> ms;
    for (int i = 0; i < o.repeat; ++i) {
      auto start = std::chrono::steady_clock::now();
      outputs = run_once();  // the last run's are written: on a GPU, a replay of its graph
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count());
    }
    LatencyStats s = latency_stats(ms);
    const int threads = AnvilGetNumThreads();
    std::printf(
        "latency: median %.3f ms, min %.3f ms, max %.3f ms (%d runs after 1 warm-up, %d %s)\n",
        s.median_ms, s.min_ms, s.max_ms, o.repeat, threads, threads == 1 ? "thread" : "threads");
    std::fflush(stdout);
  }

  std::set<std::string> written;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const runtime::TensorInfo& t = model.outputs().at(i);
    std::string file = output_file(o.output_dir, t.name);
    if (!written.insert(file).second)
      throw CliError(kRuntime, "outputs of " + o.model + " map to the same file " + file +
                                   " (output '" + t.name + "')");
    with_exit_code(kRuntime, "writing output '" + t.name + "'",
                   [&] { runtime::save_npy(file, outputs[i]); });
    std::cout << "wrote " << file << " (" << runtime::to_string(outputs[i].dtype())
              << dims_string(outputs[i].shape()) << ")\n";
    if (o.top > 0 && outputs[i].dtype().code == kDLFloat && outputs[i].dtype().bits == 32)
      std::cout << top_elements(t.name, outputs[i], o.top);
  }
}

std::vector<std::string> inspect_stages() {
  return {"graph", "optimized", "fused", "lowered", "llvm", "asm", "c"};
}

namespace {

// The assembly of one function of `module_asm` and of its outlined parallel loops: each from its
// label to its .size directive (labels of local blocks and constants start with ".L").
std::string function_assembly(const std::string& module_asm, const std::string& name) {
  std::istringstream in(module_asm);
  std::string line, out;
  bool inside = false;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] != '.' && line[0] != '\t' && line[0] != ' ' &&
        line.back() == ':') {
      std::string label = line.substr(0, line.size() - 1);
      inside = label == name || label.rfind(name + ".parallel", 0) == 0;
    }
    if (inside) out += line + "\n";
    if (line.rfind("\t.size", 0) == 0) inside = false;
  }
  return out;
}

}  // namespace

void inspect_command(const InspectOptions& o) {
  if (o.model.rfind(driver::kZooPrefix, 0) != 0 && is_artifact(o.model)) {
    if (!o.stage.empty() || !o.kernel.empty())
      usage_error(o.model +
                  " is a compiled artifact: inspect describes it as a whole (--stage and "
                  "--kernel apply to ONNX and zoo models)");
    describe_artifact(o.model);
    return;
  }
  if (o.stage.empty())
    usage_error(
        "--stage is required for a model (graph, optimized, fused, lowered, llvm, asm or "
        "c); an artifact (model.so) needs none");
  const Target target = with_exit_code(kUsage, "--target '" + o.target + "'",
                                       [&] { return Target::parse(o.target); });
  const std::string& stage = o.stage;
  const bool per_kernel = stage == "lowered" || stage == "llvm" || stage == "asm";
  if (!o.kernel.empty() && !per_kernel)
    usage_error("--kernel " + o.kernel + ": --stage " + stage +
                " shows the whole model (--kernel applies to --stage lowered, llvm and asm)");
  if ((stage == "llvm" || stage == "asm") && target.kind != Target::Kind::kLLVM)
    usage_error("--stage " + stage + ": target '" + target.str() + "' compiles " +
                (target.is_gpu() ? "CUDA or OpenCL" : "C") +
                ", not LLVM IR (--stage c prints its source)");

  graph::Graph g = load_model(o.model, o.input_shapes, o.input_values);
  if (stage == "graph") {
    std::cout << g.str();
    return;
  }
  graph::BuildOptions build;
  build.fuse = !o.no_fuse;
  build.alter_layout = !o.no_layout;
  const std::string what = "compiling " + o.model + " for '" + target.str() + "'";
  if (stage == "optimized") {
    std::cout << with_exit_code(
        kCompile, what, [&] { return graph::CompiledGraph::optimize(g, target, build).str(); });
    return;
  }
  graph::CompiledGraph cg =
      with_exit_code(kCompile, what, [&] { return build_graph(g, target, build, o.strict); });
  std::vector<std::string> names;
  for (const graph::CompiledGraph::Kernel& k : cg.kernels()) names.push_back(k.name);
  if (!o.kernel.empty() && std::find(names.begin(), names.end(), o.kernel) == names.end()) {
    std::string list;
    for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
    usage_error("--kernel " + o.kernel + ": " + o.model + " has no kernel of that name (its " +
                std::to_string(names.size()) + " kernels: " + list + ")");
  }
  std::vector<std::string> selected = o.kernel.empty() ? names : std::vector{o.kernel};
  with_exit_code(kCompile, what, [&] {
    if (stage == "fused") {
      std::cout << cg.summary();
    } else if (stage == "lowered") {
      for (size_t i = 0; i < selected.size(); ++i)
        std::cout << (i ? "\n" : "") << cg.lowered_ir(selected[i]);
    } else if (stage == "llvm") {
      std::cout << cg.llvm_ir(o.kernel);
    } else if (stage == "asm") {
      std::cout << (o.kernel.empty() ? cg.assembly() : function_assembly(cg.assembly(), o.kernel));
    } else if (stage == "c") {
      std::cout << cg.c_source();
    }
  });
}

void env_command(const std::string& target_text) {
  const Target t = with_exit_code(kUsage, "--target '" + target_text + "'",
                                  [&] { return Target::parse(target_text); });
  auto list = [](const std::vector<std::string>& names) {
    std::string s;
    for (const std::string& n : names) s += (s.empty() ? "" : " ") + n;
    return s.empty() ? std::string("(none detected)") : s;
  };
  std::cout << "CPU: " << cpu_name() << " (" << runtime::host_cpu().id() << ")\n"
            << "extensions: " << list(runtime::host_cpu().features) << "\n";
  if (!t.is_gpu()) {
    try {
      const codegen::TargetCpu cpu = codegen::target_cpu(t);
      std::cout << "code for " << cpu.name << " may use: " << list(cpu.features) << "\n";
    } catch (const anvil::Error& e) {
      std::cout << "code generation: " << e.what() << "\n";  // the machine facts still apply
    }
  }
  std::cout << t.describe();
  // What GPU builds and runs would use here: the host code's C compiler, NVRTC, the devices.
  std::cout << "C compiler (GPU host code, target c): " << codegen::c_compiler() << "\n";
  std::string why;
  if (codegen::nvrtc_available(&why))
    std::cout << "NVRTC: " << codegen::nvrtc_version() << " (" << codegen::nvrtc_path() << ")\n";
  else
    std::cout << "NVRTC: none: " << why << "\n";
  for (DLDeviceType type : {kDLCUDA, kDLOpenCL}) {
    const char* name = type == kDLCUDA ? "CUDA device" : "OpenCL device";
    if (runtime::Device::available(type, &why))
      std::cout << name << ": " << runtime::Device::get(type).description() << "\n";
    else
      std::cout << name << ": none: " << why << "\n";
  }
  const std::string thp = runtime::huge_page_mode();
  std::cout << "transparent huge pages: " << thp
            << (thp == "always" || thp == "madvise"
                    ? " (a model's parameters, arenas and workspaces get them)\n"
                    : " (a model's memory stays in small pages: its time may vary more from one "
                      "process to the next)\n");
}

void zoo_list_command() {
  for (const std::string& name : models::model_names()) {
    graph::Graph g = with_exit_code(kCompile, "building zoo model '" + name + "'",
                                    [&] { return models::build_model(name); });
    std::string io;
    for (graph::ValueId v : g.inputs()) io += (io.empty() ? "" : ", ") + type_string(g, v);
    io += " -> ";
    for (size_t i = 0; i < g.outputs().size(); ++i)
      io += (i ? ", " : "") + g.output_names()[i] + " " +
            ops::to_string(g.value(g.outputs()[i]).type);
    std::string padded = name + std::string(name.size() < 14 ? 14 - name.size() : 1, ' ');
    std::cout << padded << zoo_description(name) << "\n" << std::string(14, ' ') << io << "\n";
  }
}

void ops_command() {
  std::vector<frontend::OnnxOpSupport> onnx = frontend::onnx_op_support();
  std::cout << "ONNX operators the importer maps (" << onnx.size()
            << "; opsets 7 through 17 are the target, 1 through 18 are read), with the opsets "
               "that define their versions:\n";
  for (const frontend::OnnxOpSupport& s : onnx) {
    std::string versions;
    for (int v : s.versions) versions += (versions.empty() ? "" : ", ") + std::to_string(v);
    if (versions.empty()) versions = "(no ONNX schema: a function or a newer op)";
    std::cout << "  " << s.op << std::string(s.op.size() < 28 ? 28 - s.op.size() : 1, ' ')
              << versions << "\n";
  }
  std::vector<std::string> names = ops::registered_ops();
  std::cout << "\nLibrary operators (" << names.size() << "): fusion pattern, attributes\n";
  for (const std::string& name : names) {
    const ops::OpDef& def = ops::lookup(name);
    std::string attrs;
    for (const ops::AttrSpec& a : def.attrs) attrs += (attrs.empty() ? "" : ", ") + a.name;
    std::cout << "  " << name << std::string(name.size() < 28 ? 28 - name.size() : 1, ' ')
              << ops::pattern_name(def.pattern) << (attrs.empty() ? "" : "  (" + attrs + ")")
              << "\n";
  }
  std::cout << "\nElement types: the reference interpreter takes float16/32/64, int8-64, uint8-64 "
               "and bool for every op. Compiled code takes all of them for the elementwise ops "
               "and data movement; float32 and float64 for convolutions, matrix products, pools, "
               "normalizations, reductions and softmax (float16 computed as float32); float32 "
               "(with int32, int64 and bool where the op allows) for the others. A type it does "
               "not take is a compile error naming the op.\n";
}

void zoo_export_command(const ZooExportOptions& o) {
  const std::string output = o.output.empty() ? o.name + ".onnx" : o.output;
  check_output_path(output, "-o");
  graph::Graph g = zoo_model(o.name, "zoo export");
  with_exit_code(kCompile, "exporting zoo model '" + o.name + "'",
                 [&] { frontend::export_onnx(g, output, o.name); });
  std::error_code ec;
  std::cout << "wrote " << output << " ("
            << bytes_string(static_cast<int64_t>(fs::file_size(output, ec))) << ")\n";
}

}  // namespace anvil::cli
