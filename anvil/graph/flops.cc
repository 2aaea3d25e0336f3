// FLOP counts of graph nodes (flops.h). The rules live with the operators
// (OpDef::flops); this file dispatches.
#include "anvil/graph/flops.h"

#include "anvil/support/error.h"

namespace anvil::graph {

double op_flops(const std::string& op, const std::vector<ops::TensorType>& in,
                const std::vector<ops::TensorType>& out, const ops::Attrs& attrs) {
  const ops::OpDef& def = ops::lookup(op);
  // Never a guess: an op without a rule would make every profile's GFLOP/s silently wrong.
  ANVIL_CHECK(def.flops, "flops: operator '", op, "' has no FLOP rule (OpDef::flops)");
  return def.flops(in, out, attrs);
}

double node_flops(const Graph& g, NodeId n) {
  const Node& node = g.node(n);
  std::vector<ops::TensorType> in, out;
  for (ValueId v : node.inputs) in.push_back(g.value(v).type);
  for (ValueId v : node.outputs) out.push_back(g.value(v).type);
  try {
    return op_flops(node.op, in, out, node.attrs);
  } catch (const InternalError&) {
    throw;
  } catch (const Error& e) {
    ANVIL_FAIL("node '", node.name, "' (", node.op, "): ", e.what());
  }
}

double graph_flops(const Graph& g) {
  double total = 0;
  for (size_t n = 0; n < g.num_nodes(); ++n) total += node_flops(g, static_cast<NodeId>(n));
  return total;
}

}  // namespace anvil::graph
