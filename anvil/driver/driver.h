// The public compile API: a model (an ONNX file or its bytes, or a built-in model) in, a compiled
// model out. The `anvil` command line and the Python package both go through it, so that a model
// compiles the same way, with the same errors, from either.
//
//   anvil::driver::Compiled c = anvil::driver::compile_model("model.onnx", "llvm", {});
//   std::vector<anvil::runtime::NDArray> out = c.graph.model().run(inputs);
//   c.graph.save("model.so");
//
// Every failure is a driver::Error whose kind says whose fault it is: the input given (a file
// that is not ONNX, an unknown built-in model, a shape that contradicts the model), the compiler
// (a valid model it cannot compile), or the run.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "anvil/autotune/records.h"
#include "anvil/graph/build.h"
#include "anvil/graph/graph.h"
#include "anvil/runtime/ndarray.h"
#include "anvil/support/error.h"
#include "anvil/target/target.h"

namespace anvil::driver {

// Whose fault an error is. The command line's exit codes and the Python package's exception
// classes are these.
enum class ErrorKind {
  kBadInput,  // the model, a file or a value given is not what it should be
  kCompile,   // the model is valid but could not be compiled (or saved)
  kRuntime,   // a kernel failed while running
};
// "bad input", "compile error", "runtime error".
const char* to_string(ErrorKind kind);

class Error : public anvil::Error {
 public:
  Error(ErrorKind kind, const std::string& message) : anvil::Error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

// Runs `fn`; any exception other than a driver::Error becomes one of `kind`, its message prefixed
// by `context` (when not empty) and ": ".
template <typename F>
auto with_kind(ErrorKind kind, const std::string& context, F&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(kind, context.empty() ? std::string(e.what()) : context + ": " + e.what());
  }
}

// How a model's inputs are bound when it is loaded.
struct ModelInputs {
  // Input shapes: name -> dims. Required for an ONNX input with a symbolic dimension; for a
  // built-in model, a binding must name an input and agree with its static shape.
  std::map<std::string, std::vector<int64_t>> shapes;
  // Inputs frozen to values known at compile time (ONNX files only): each becomes a constant and
  // leaves the model's inputs, so that what is computed from it (a Reshape's shape) folds.
  std::map<std::string, runtime::NDArray> values;
};

// The prefix that names a built-in model: "zoo:resnet18".
constexpr const char kZooPrefix[] = "zoo:";
bool is_zoo_name(const std::string& model);

// The graph of `model`: an ONNX file, or "zoo:NAME". Throws Error(kBadInput) for an unknown
// built-in model (listing the known ones), a file the importer refuses, or bindings the model
// contradicts.
graph::Graph load_model(const std::string& model, const ModelInputs& inputs = {});
// The graph of a serialized ONNX ModelProto; `origin` names it in errors.
graph::Graph load_model_bytes(const std::string& bytes, const ModelInputs& inputs = {},
                              const std::string& origin = "<bytes>");

// The tuning records of `file` (a torn last line skipped), those tuned on another CPU set aside
// unless `any_cpu`. Throws Error(kBadInput) naming the file when it is missing, a directory or
// unreadable, and the line when one is not a valid record ("FILE: no such file").
autotune::RecordFile read_tuning_records(const std::string& file, bool any_cpu);

struct CompileOptions {
  std::string name = "the model";  // in errors: "compiling NAME for 'llvm': ..."
  bool fuse = true;                // false: one kernel per node
  bool layout = true;              // convolutions in the blocked layout (NCHW[x]c)
  bool winograd = true;            // false: every convolution direct (CPU targets)
  bool strict = false;             // a kernel that loses its schedule is an error, not a warning
  std::vector<std::string> print_after;  // graph passes to print the graph after (or "all")
  autotune::RecordFile tuning_records;   // each kernel's best recorded configuration applies
};

struct Compiled {
  graph::CompiledGraph graph;  // run it (graph.model()), save it (graph.save)
  // One line per kernel that lost its schedule ("kernel fused_3_conv2d (conv2d): schedule
  // failed, using default loops: ..."): the build was not strict.
  std::vector<std::string> warnings;
  // With tuning records: every tunable kernel's task and whether a record applied.
  std::vector<autotune::TaskLookup> lookups;
};

// Compiles `g` for `target`. Throws Error(kCompile) naming what failed.
Compiled compile(const graph::Graph& g, const Target& target, const CompileOptions& options);

// load_model (or load_model_bytes when `is_bytes`) then compile, with the target parsed from
// `target` (Error(kBadInput) for one that does not parse). `options.name` defaults to `model`
// (a path or zoo name).
Compiled compile_model(const std::string& model, const std::string& target,
                       const CompileOptions& options, const ModelInputs& inputs = {},
                       bool is_bytes = false);

}  // namespace anvil::driver
