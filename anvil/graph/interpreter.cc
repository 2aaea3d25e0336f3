// The reference interpreter: each node's OpDef::reference on host NDArrays, in node order.
//
// Inputs are checked against the graph's interface before anything runs (count, then each input's
// shape and dtype, the error naming the input). Every node's results are checked against the types
// its shape rule gave at add_node, so a reference that disagrees with its own op's `infer` is
// reported as an internal error naming the node rather than silently propagated. Intermediate
// values are released after their last use, so a large model holds only its live activations.
#include "anvil/graph/interpreter.h"

#include <cstring>

#include "anvil/graph/control_flow.h"
#include "anvil/support/error.h"

namespace anvil::graph {

namespace {}  // namespace

std::vector<runtime::NDArray> interpret(const Graph& g,
                                        const std::vector<runtime::NDArray>& inputs) {
  check_inputs(g, inputs, "interpret");

  // The last node reading each value (graph outputs are never released).
  std::vector<NodeId> last_use(g.num_values(), -1);
  for (size_t n = 0; n < g.num_nodes(); ++n)
    for (ValueId v : g.node(static_cast<NodeId>(n)).inputs) last_use[v] = static_cast<NodeId>(n);
  for (ValueId v : g.outputs()) last_use[v] = static_cast<NodeId>(g.num_nodes());

  std::vector<runtime::NDArray> env(g.num_values());
  for (size_t i = 0; i < inputs.size(); ++i) env[g.inputs()[i]] = inputs[i];

  for (size_t n = 0; n < g.num_nodes(); ++n) {
    const Node& node = g.node(static_cast<NodeId>(n));
    std::vector<runtime::NDArray> args;
    args.reserve(node.inputs.size());
    for (ValueId v : node.inputs) {
      const Value& val = g.value(v);
      const runtime::NDArray& a = val.kind == ValueKind::kConstant ? val.data : env[v];
      ANVIL_ICHECK(a.defined(), "interpret: node '", node.name, "' (", node.op, ") reads '",
                   val.name, "', which holds no data");
      args.push_back(a);
    }
    const ops::OpDef& def = ops::lookup(node.op);
    ANVIL_CHECK(def.reference || is_control_flow(node.op), "interpret: node '", node.name,
                "': operator '", node.op, "' has no reference implementation");
    std::vector<runtime::NDArray> outs;
    try {
      outs = is_control_flow(node.op) ? interpret_control(g, node, args)
                                      : def.reference(args, node.attrs);
    } catch (const InternalError&) {
      throw;
    } catch (const Error& e) {
      ANVIL_FAIL("interpret: node '", node.name, "' (", node.op, "): ", e.what());
    }
    ANVIL_ICHECK(outs.size() == node.outputs.size(), "interpret: node '", node.name, "' (", node.op,
                 ") produced ", outs.size(), " outputs, its shape rule gives ",
                 node.outputs.size());
    for (size_t k = 0; k < outs.size(); ++k) {
      const Value& val = g.value(node.outputs[k]);
      ANVIL_ICHECK(outs[k].defined() && type_of(outs[k]) == val.type, "interpret: node '",
                   node.name, "' (", node.op, ") output '", val.name, "' is ",
                   outs[k].defined() ? ops::to_string(type_of(outs[k])) : std::string("undefined"),
                   ", its shape rule gives ", ops::to_string(val.type));
      env[node.outputs[k]] = std::move(outs[k]);
    }
    // Release what no later node reads.
    for (ValueId v : node.inputs)
      if (last_use[v] == static_cast<NodeId>(n)) env[v] = runtime::NDArray();
    for (ValueId v : node.outputs)
      if (last_use[v] < 0) env[v] = runtime::NDArray();
  }

  // Outputs that are graph inputs or constants are copied, so that a caller writing to a result
  // never changes its own input or the graph.
  std::vector<runtime::NDArray> results;
  results.reserve(g.outputs().size());
  for (ValueId v : g.outputs()) {
    const Value& val = g.value(v);
    if (val.kind == ValueKind::kNodeOutput) {
      results.push_back(env[v]);
    } else {
      results.push_back(copy_of(val.kind == ValueKind::kConstant ? val.data : env[v]));
    }
  }
  return results;
}

}  // namespace anvil::graph
