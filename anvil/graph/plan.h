// Kernel planning: everything decided about each fused group's kernel before it is scheduled —
// its name, the node whose schedule it takes, the tuning task that node is (op, input types,
// attributes), its FLOPs, its arguments and its configuration. CompiledGraph::build compiles the
// plans; autotune::extract_tasks collects their tasks; both therefore name, count and configure
// every kernel alike.
#pragma once

#include <string>
#include <vector>

#include "anvil/graph/build.h"
#include "anvil/graph/graph.h"
#include "anvil/graph/passes.h"
#include "anvil/ops/op.h"
#include "anvil/target/target.h"

namespace anvil::graph {

struct KernelPlan {
  std::string name;  // "fused_<i>_<op>": i the group's index, op the scheduling node's
  FusedGroup group;  // its nodes (topological), anchor (-1: injective), inputs and outputs
  // The node whose schedule the kernel takes: the anchor, else (a purely injective group) the
  // group's last node. Its op, input types and attributes are the kernel's tuning task.
  NodeId sched_node = -1;
  std::string op;
  std::vector<ops::TensorType> inputs;
  ops::Attrs attrs;
  bool tunable = false;       // op declares knobs for these inputs on the target (space_for)
  double flops = 0;           // per call: node_flops summed over the group (flops.h)
  std::vector<ValueId> args;  // the group's inputs, then every output of its last node
  size_t num_inputs = 0;
  bool tuned = false;  // BuildOptions::config_for gave the configuration
  ops::Config config;  // that configuration (empty: the op's default rule)
};

// One plan per group of `groups` (fuse() of `g`, the graph after CompiledGraph::optimize), in
// order, but for control-flow nodes (if, loop, scan), which are steps of the executor, not
// kernels; kernels are numbered without them. Throws anvil::Error naming the kernel when an op's
// space refuses its inputs.
std::vector<KernelPlan> plan_kernels(const Graph& g, const std::vector<FusedGroup>& groups,
                                     const Target& target, const BuildOptions& options);

}  // namespace anvil::graph
