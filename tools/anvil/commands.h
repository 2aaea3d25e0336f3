// The `anvil` commands, each a function of its parsed options. They throw CliError (args.h) with
// the exit code of what went wrong; main.cc parses the command line and reports.
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "anvil/graph/build.h"
#include "anvil/graph/graph.h"
#include "anvil/runtime/model.h"

namespace anvil::cli {

struct CompileOptions {
  std::string model;                      // an ONNX file, or zoo:NAME
  std::string target = "llvm";            // anvil::Target::parse
  std::vector<std::string> input_shapes;  // NAME=DIMS
  bool no_fuse = false;
  bool no_layout = false;
  bool no_winograd = false;  // every convolution direct (CPU targets)
  bool separate_params = false;
  bool verbose = false;
  bool strict = false;                    // a kernel that loses its schedule is an error
  std::vector<std::string> print_after;   // graph passes (or "all")
  std::vector<std::string> input_values;  // NAME=FILE.npy: inputs bound to values
  std::string tuning_records;             // JSON lines: each kernel's best recorded configuration
  bool records_any_cpu = false;           // apply records tuned on other CPUs too
  std::string output;                     // model.so
};
void compile_command(const CompileOptions& options);

struct RunOptions {
  std::string model;                // model.so
  std::vector<std::string> inputs;  // NAME=FILE.npy
  std::string fill_mode;            // "", "zeros", "ones" or "random": inputs not given
  std::string output_dir = ".";
  int repeat = 0;        // timed runs after one warm-up (0: one run, untimed)
  int threads = 0;       // 0: the runtime's default
  bool profile = false;  // time each kernel (median over `repeat` runs, 10 when not given)
  int top = 0;           // print each float output's `top` largest elements
};
void run_command(const RunOptions& options);

struct InspectOptions {
  std::string model;   // an ONNX file, or zoo:NAME
  std::string stage;   // graph, optimized, fused, lowered, llvm, asm or c
  std::string kernel;  // lowered, llvm, asm: only this kernel
  std::string target = "llvm";
  std::vector<std::string> input_shapes;  // NAME=DIMS
  std::vector<std::string> input_values;  // NAME=FILE.npy
  bool no_fuse = false;
  bool no_layout = false;
  bool strict = false;
};
void inspect_command(const InspectOptions& options);
// The stages `inspect --stage` takes, in pipeline order.
std::vector<std::string> inspect_stages();

void zoo_list_command();

// `anvil ops`: the ONNX operators the importer maps with the opsets of their versions, then the
// library's operators with their fusion pattern and attributes, and the element types compiled
// code takes.
void ops_command();

// `anvil env`: the CPU, what `target_text` says of the machine (Target::describe: vector width,
// registers, FMA units, caches, cores, the measured peak) and the kernel's huge page mode.
void env_command(const std::string& target_text);

struct ZooExportOptions {
  std::string name;
  std::string output;  // default NAME.onnx
};
void zoo_export_command(const ZooExportOptions& options);

// `anvil quantize` (quantize.cc): a QDQ ONNX file from a float one.
struct QuantizeCliOptions {
  std::string model;                   // the float ONNX file
  std::string calibration = "random";  // "random", or a directory of .npy inputs
  int samples = 8;                     // random calibration inputs
  double percentile = 100;             // activation ranges: min-max at 100
  bool reduce_range = false;           // 7-bit weights
  std::string output;                  // the QDQ ONNX file
};
void quantize_command(const QuantizeCliOptions& options);

// The directory a file named by `option` is written into must exist (CliError kUsage).
void check_output_path(const std::string& path, const std::string& option);

// The graph MODEL names (an ONNX file, or zoo:NAME) with the --input-shape bindings (NAME=DIMS)
// and --input-value bindings (NAME=FILE.npy: the input becomes a constant of that value, so that
// an operand computed from it, such as a Reshape's shape, is known at compile time; it leaves the
// model's inputs) applied. Throws CliError: kUsage for an unknown zoo name, a malformed binding or
// a value bound for a zoo model, kBadInput for an ONNX file the importer refuses, a .npy that does
// not load or a binding a zoo model contradicts.
graph::Graph load_model(const std::string& model, const std::vector<std::string>& input_shapes,
                        const std::vector<std::string>& input_values = {});

// An input of `t`'s shape and dtype for --fill-mode: zeros, ones, or seeded random values (floats
// uniform in [-1, 1], integers in [0, 10): valid indices for any embedding table). Throws
// CliError(kBadInput) for a dtype it cannot fill.
runtime::NDArray filled_input(const runtime::TensorInfo& t, const std::string& mode);

// CompiledGraph::build as the commands run it, with options.strict = `strict` (--strict): then a
// kernel whose schedule fails is a compile error; otherwise each fallback is one line on stderr,
// "anvil: warning: kernel fused_3_conv2d (conv2d): schedule failed, using default loops: ...",
// printed once when `warned` (the lines printed so far) is given, as for the many builds of one
// model that bench and tune make.
graph::CompiledGraph build_graph(const graph::Graph& g, const Target& target,
                                 graph::BuildOptions options, bool strict,
                                 std::set<std::string>* warned = nullptr);

// The passes --print-after takes ("all" and the pass names of the build pipeline).
std::vector<std::string> printable_passes();

}  // namespace anvil::cli
