// Kernel planning (plan.h).
#include "anvil/graph/plan.h"

#include <optional>

#include "anvil/graph/control_flow.h"
#include "anvil/graph/flops.h"
#include "anvil/support/error.h"

namespace anvil::graph {

std::vector<KernelPlan> plan_kernels(const Graph& g, const std::vector<FusedGroup>& groups,
                                     const Target& target, const BuildOptions& options) {
  std::vector<KernelPlan> plans;
  plans.reserve(groups.size());
  for (size_t i = 0; i < groups.size(); ++i) {
    const FusedGroup& group = groups[i];
    ANVIL_ICHECK(!group.nodes.empty(), "plan_kernels: fused group ", i, " is empty");
    if (is_control_flow(g.node(group.nodes.back()).op)) continue;  // a step, not a kernel
    KernelPlan p;
    p.group = group;
    p.sched_node = group.anchor >= 0 ? group.anchor : group.nodes.back();
    const Node& node = g.node(p.sched_node);
    p.name = "fused_" + std::to_string(plans.size()) + "_" + node.op;
    p.op = node.op;
    for (ValueId v : node.inputs) p.inputs.push_back(g.value(v).type);
    p.attrs = node.attrs;
    try {
      p.tunable = !ops::space_for(ops::lookup(p.op), p.inputs, p.attrs, target).empty();
    } catch (const InternalError&) {
      throw;
    } catch (const Error& e) {
      ANVIL_FAIL("kernel ", p.name, ": the knobs of node '", node.name, "' (", p.op,
                 "): ", e.what());
    }
    for (NodeId n : group.nodes) p.flops += node_flops(g, n);
    p.args = group.inputs;
    p.num_inputs = group.inputs.size();
    for (ValueId v : g.node(group.nodes.back()).outputs) p.args.push_back(v);
    if (options.config_for) {
      if (std::optional<ops::Config> c = options.config_for(p.op, p.inputs, p.attrs)) {
        p.tuned = true;
        p.config = *c;
      }
    }
    plans.push_back(std::move(p));
  }
  return plans;
}

}  // namespace anvil::graph
