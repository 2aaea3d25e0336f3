// Graph compilation: the pass pipeline, fusion, one kernel per fused group (the group's ops'
// tensor expressions in one schedule, scheduled by the group's anchor), all compiled into one
// LLVM module, and an executor that runs the kernels in order over a statically planned arena.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "anvil/graph/graph.h"
#include "anvil/graph/passes.h"
#include "anvil/runtime/c_runtime_api.h"
#include "anvil/target/target.h"

namespace anvil::codegen {
class LLVMModule;
}

namespace anvil::graph {

struct BuildOptions {
  bool fuse = true;                      // false: one kernel per node (the ablation switch)
  bool alter_layout = true;              // convolutions in NCHW[x]c
  std::vector<std::string> print_after;  // passes to print the graph after (run_passes)
};

class CompiledGraph {
 public:
  // Runs the pass pipeline on `g`, fuses, and compiles one kernel per fused group for `target`
  // (which must be the host's architecture to run). Throws anvil::Error naming the group's nodes
  // when a group cannot be compiled.
  static CompiledGraph build(const Graph& g, const Target& target, const BuildOptions& options);

  // Runs the compiled graph: one array per graph input (checked against its name, shape and
  // dtype, as graph::interpret does); returns the outputs in order (fresh arrays). Safe to call
  // concurrently: each run has its own arena.
  std::vector<runtime::NDArray> run(const std::vector<runtime::NDArray>& inputs) const;

  // The kernels with their ops and schedules, and the memory totals.
  std::string summary() const;

  size_t num_kernels() const { return kernels_.size(); }
  const Graph& graph() const { return graph_; }  // after the passes
  const MemoryPlan& memory_plan() const { return plan_; }

  struct Kernel {
    std::string name;           // "fused_<i>_<anchor op>"
    std::vector<NodeId> nodes;  // the group's nodes
    std::vector<ValueId> args;  // inputs, then outputs (every sink output)
    size_t num_inputs = 0;
    std::string schedule;          // which schedule was applied
    std::vector<ValueId> release;  // unplanned intermediates no later kernel reads
    AnvilKernel fn = nullptr;
  };

 private:
  Graph graph_;
  MemoryPlan plan_;
  std::vector<Kernel> kernels_;
  std::shared_ptr<codegen::LLVMModule> module_;
};

}  // namespace anvil::graph
