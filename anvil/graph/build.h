// Graph compilation: the pass pipeline, fusion, one kernel per fused group as planned by
// plan_kernels (plan.h; the group's ops' tensor expressions in one schedule, scheduled by the
// group's anchor), all compiled by the target kind's backend (backend.h: one LLVM module,
// JIT-compiled; C through the system compiler; a GPU device program), and the program the
// runtime's graph executor runs: the kernel calls in order over a statically planned arena. The
// same program, with the kernels as a shared library and the constants, is the artifact save()
// writes.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "anvil/graph/backend.h"
#include "anvil/graph/graph.h"
#include "anvil/graph/passes.h"
#include "anvil/ir/function.h"
#include "anvil/runtime/c_runtime_api.h"
#include "anvil/runtime/graph_executor.h"
#include "anvil/runtime/model.h"
#include "anvil/target/target.h"

namespace anvil::graph {

struct SaveOptions {
  // Parameters in a separate safetensors file beside the library (model.so ->
  // model.safetensors) instead of inside it; the artifact records its size and checksum.
  bool separate_params = false;
};

struct BuildOptions {
  bool fuse = true;                      // false: one kernel per node (the ablation switch)
  bool alter_layout = true;              // convolutions in NCHW[x]c
  std::vector<std::string> print_after;  // passes to print the graph after (run_passes)
  // The schedule configuration of a kernel, from its anchor's op, input types and attributes
  // (tuning records: anvil/autotune/records.h); nullopt, or no function: the default rule.
  ConfigFn config_for;
  // The algorithm of a conv2d (direct or Winograd: ops::conv2d_algorithm_space), from the NCHW
  // node's op, input types and attributes, as alter_layout asks for it; nullopt, or no function:
  // the default rule (ops::prefer_winograd).
  ConfigFn algorithm_for;
  // A kernel whose schedule fails takes a fallback (the default loop nests; on a GPU, the default
  // GPU schedule in place of the op's own), recorded in CompiledGraph::fallbacks(). Strict: a
  // fallback is an anvil::Error naming the kernel, its op and nodes, and the schedule's error.
  // On by default, so that tests and benchmarks never time or check a kernel that silently lost
  // its schedule; the command line turns it off unless given --strict, and warns per fallback.
  bool strict = true;
};

class CompiledGraph {
 public:
  // Runs the pass pipeline on `g`, fuses, and compiles one kernel per fused group for `target`
  // (which must be the host's architecture to run; target "c" compiles generated C with the
  // system compiler). Throws anvil::Error naming the group's nodes when a group cannot be
  // compiled, or (options.strict) when one takes a fallback. An anvil::InternalError out of a
  // schedule is never taken for a refusal: it propagates.
  static CompiledGraph build(const Graph& g, const Target& target, const BuildOptions& options);

  // The pass pipeline build() runs before fusion (widen_float16, simplify_inference,
  // fold_constants, with options.alter_layout alter_layout and fold_constants again, CSE, dead
  // code): the graph that graph() returns after a build, without compiling anything.
  static Graph optimize(const Graph& g, const Target& target, const BuildOptions& options);

  // Runs the compiled graph: one array per graph input (checked against its name, shape and
  // dtype, as graph::interpret does); returns the outputs in order (fresh arrays). Safe to call
  // concurrently: each run has its own arena.
  std::vector<runtime::NDArray> run(const std::vector<runtime::NDArray>& inputs) const;

  // Writes the artifact (anvil/runtime/artifact.h): the kernels as a shared library, the
  // executor's program as JSON and the constants in safetensors layout, behind a trailer with
  // magic, format version and checksum. runtime::Model::load(path) runs it. Throws anvil::Error
  // naming the path when it cannot be written or linked.
  void save(const std::string& path, const SaveOptions& options = {}) const;

  // The kernels with their ops and schedules, and the memory totals.
  std::string summary() const;

  // What the compiler made of each kernel, for `anvil inspect`. `kernel` names one (Kernel::name);
  // an unknown name throws anvil::Error listing the kernels.
  //   lowered_ir: the kernel's loop-level IR after lowering (its arguments, then the body);
  //   llvm_ir: the optimized LLVM IR of one kernel (with its outlined parallel loops), or of the
  //            whole module for an empty name; assembly: the whole module's. Both throw
  //            anvil::Error for target c, which has no LLVM module;
  //   c_source: the C source codegen::generate_c makes of every kernel (CPU targets), or the
  //             device program's CUDA or OpenCL source (GPU targets).
  std::string lowered_ir(const std::string& kernel) const;
  std::string llvm_ir(const std::string& kernel = "") const;
  std::string assembly() const;
  std::string c_source() const;

  size_t num_kernels() const { return kernels_.size(); }
  const Graph& graph() const { return graph_; }  // after the passes
  const MemoryPlan& memory_plan() const { return plan_; }

  struct Kernel {
    std::string name;           // "fused_<i>_<anchor op>"
    std::vector<NodeId> nodes;  // the group's nodes
    std::vector<ValueId> args;  // inputs, then outputs (every sink output)
    size_t num_inputs = 0;
    std::string schedule;  // which schedule was applied
    double flops = 0;      // per call: the sum of node_flops over its nodes (flops.h)
    bool tuned = false;    // BuildOptions::config_for gave its configuration (and no fallback
                           // dropped it)
    ops::Config config;    // that configuration (empty: the default rule)
  };
  const std::vector<Kernel>& kernels() const { return kernels_; }

  // A kernel that did not get its op's schedule (only in a build that is not strict).
  struct Fallback {
    std::string kernel;  // Kernel::name
    std::string op;      // the op whose schedule failed (the kernel's anchor)
    std::string reason;  // the schedule's error
    std::string used;  // what the kernel took instead: "default loops", "the default GPU schedule"
    // "kernel fused_3_conv2d (conv2d): schedule failed, using default loops: <reason>".
    std::string str() const;
  };
  const std::vector<Fallback>& fallbacks() const { return fallbacks_; }

  // The model the in-process kernels make (what run() runs).
  const runtime::Model& model() const { return model_; }

  // A control-flow node (if, loop, scan) of graph(): a step of the executor between kernels, its
  // bodies compiled as graphs of their own (bodies(); their kernels, named "b<k>_fused_...", in
  // the same library).
  struct Step {
    NodeId node = -1;
    size_t position = 0;         // kernels that run before it
    std::vector<size_t> bodies;  // into bodies()
  };
  const std::vector<Step>& steps() const { return steps_; }
  const std::vector<CompiledGraph>& bodies() const { return bodies_; }

 private:
  Graph graph_;
  Target target_;
  MemoryPlan plan_;
  std::vector<Kernel> kernels_;
  std::vector<Step> steps_;
  std::vector<CompiledGraph> bodies_;
  std::vector<Fallback> fallbacks_;
  // One function per kernel, in the same order; the root's also holds its bodies' after its own.
  LoweredKernels lowered_;
  std::shared_ptr<const Backend> backend_;  // the compiled kernels
  std::string no_device_;  // GPU targets: why the kernels cannot run here (empty: they can)
  // Optimizes `g`, fuses and schedules its kernels into `cg` (their functions appended to
  // `lowered`, named `prefix` + "fused_<i>_<op>"), and its control-flow nodes' bodies likewise,
  // recursively (`next_body` numbers them across the whole model).
  static void compile(CompiledGraph& cg, const Graph& g, const BuildOptions& options,
                      const std::string& prefix, int& next_body, LoweredKernels& lowered);
  // The executor's program of `cg` and its bodies; `taken` keeps parameter names unique across
  // all of them (they share one parameter file).
  static runtime::GraphProgram make_program(const CompiledGraph& cg, std::set<std::string>& taken);

  runtime::GraphProgram program_;  // kernels as run in process; save() writes it
  runtime::Model model_;
};

}  // namespace anvil::graph
