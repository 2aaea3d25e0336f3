// Operator fusion by the TVM paper's rules over the ops' fusion patterns (ops::Pattern).
//
// Nodes are visited in topological order; each starts a group of its own and may then absorb
// the groups of its producers. Every group keeps one invariant: only its last node (the sink)
// has outputs used outside the group or that are graph outputs; every other member's outputs are
// read only inside the group. A producer group is absorbed by node u only when all of its sink's
// outputs are read by u alone and none is a graph output, which keeps the invariant; and a group
// with that invariant can never form a cycle with the rest of the graph (a path leaving the group
// starts at the sink, which every member reaches), so the groups sorted by sink stay a
// topological order.
//
// Absorption rules, for the node u being visited:
//   * u injective: when a producer group is anchored by a complex-out-fusable node and u is
//     element-wise over the anchor's output (u's output has the anchor output's shape), u joins
//     that group (the anchor's epilogue: bias, batch-norm scale, relu, residual add). Otherwise
//     u absorbs its purely injective producer groups (injective ops fuse together).
//   * u reduction: u absorbs its purely injective producer groups and anchors the result.
//   * u complex-out-fusable: anchors a new group (it absorbs consumers, not producers).
//   * u opaque: stands alone (its own anchor).
// A group therefore never has two anchors: only purely injective groups are ever merged into
// another, except the one anchored group an element-wise u joins, and u is injective.
#include <algorithm>

#include "anvil/graph/passes.h"
#include "anvil/support/error.h"

namespace anvil::graph {

namespace {

struct Group {
  std::vector<NodeId> nodes;
  NodeId anchor = -1;
  NodeId sink = -1;
  bool alive = true;
};

}  // namespace

std::vector<FusedGroup> fuse(const Graph& g, bool enabled) {
  const size_t num_nodes = g.num_nodes();
  std::vector<std::vector<NodeId>> users = g.users();
  std::vector<bool> is_graph_output(g.num_values(), false);
  for (ValueId v : g.outputs()) is_graph_output[v] = true;

  std::vector<Group> groups(num_nodes);
  std::vector<int32_t> group_of(num_nodes);
  for (NodeId id = 0; id < static_cast<NodeId>(num_nodes); ++id) {
    ops::Pattern p = ops::lookup(g.node(id).op).pattern;
    groups[id].nodes = {id};
    groups[id].sink = id;
    groups[id].anchor = p == ops::Pattern::kInjective ? -1 : id;
    group_of[id] = id;
  }

  auto merge_into = [&](int32_t from, int32_t to) {
    Group& a = groups[from];
    Group& b = groups[to];
    ANVIL_ICHECK(a.anchor < 0 || b.anchor < 0, "fuse: two anchors in one group (nodes '",
                 g.node(std::max(a.anchor, 0)).name, "' and '", g.node(std::max(b.anchor, 0)).name,
                 "')");
    if (b.anchor < 0) b.anchor = a.anchor;
    for (NodeId n : a.nodes) group_of[n] = to;
    b.nodes.insert(b.nodes.end(), a.nodes.begin(), a.nodes.end());
    a.nodes.clear();
    a.alive = false;
  };

  for (NodeId u = 0; enabled && u < static_cast<NodeId>(num_nodes); ++u) {
    const Node& node = g.node(u);
    ops::Pattern pu = ops::lookup(node.op).pattern;
    if (pu != ops::Pattern::kInjective && pu != ops::Pattern::kReduction) continue;
    // The producer groups u may absorb: their sink's outputs are read by u alone.
    std::vector<int32_t> eligible;
    for (ValueId v : node.inputs) {
      const Value& val = g.value(v);
      if (val.kind != ValueKind::kNodeOutput) continue;
      int32_t pg = group_of[val.node];
      if (pg == group_of[u] || std::count(eligible.begin(), eligible.end(), pg)) continue;
      bool only_u = true;
      for (ValueId o : g.node(groups[pg].sink).outputs) {
        if (is_graph_output[o]) only_u = false;
        for (NodeId w : users[o]) only_u = only_u && w == u;
      }
      if (only_u) eligible.push_back(pg);
    }
    int32_t own = group_of[u];
    if (pu == ops::Pattern::kInjective) {
      bool joined = false;
      for (int32_t pg : eligible) {
        NodeId a = groups[pg].anchor;
        if (a < 0 || ops::lookup(g.node(a).op).pattern != ops::Pattern::kComplexOutFusable)
          continue;
        const Node& an = g.node(a);
        if (node.outputs.size() != 1 || an.outputs.size() != 1 ||
            g.value(node.outputs[0]).type.shape != g.value(an.outputs[0]).type.shape)
          continue;
        merge_into(own, pg);  // u joins the anchored group as its new sink
        groups[pg].sink = u;
        group_of[u] = pg;
        joined = true;
        break;
      }
      if (joined) continue;
    }
    for (int32_t pg : eligible) {
      if (groups[pg].anchor >= 0) continue;
      merge_into(pg, own);
    }
  }

  // Groups in the order of their sinks; members in node order.
  std::vector<FusedGroup> result;
  std::vector<int32_t> order;
  for (size_t i = 0; i < groups.size(); ++i)
    if (groups[i].alive) order.push_back(static_cast<int32_t>(i));
  std::sort(order.begin(), order.end(),
            [&](int32_t a, int32_t b) { return groups[a].sink < groups[b].sink; });
  for (int32_t gi : order) {
    FusedGroup fg;
    fg.nodes = groups[gi].nodes;
    std::sort(fg.nodes.begin(), fg.nodes.end());
    ANVIL_ICHECK(fg.nodes.back() == groups[gi].sink, "fuse: group sink '",
                 g.node(groups[gi].sink).name, "' is not its last node");
    fg.anchor = groups[gi].anchor;
    for (NodeId n : fg.nodes) {
      for (ValueId v : g.node(n).inputs) {
        const Value& val = g.value(v);
        bool inside = val.kind == ValueKind::kNodeOutput && group_of[val.node] == gi;
        if (!inside && std::find(fg.inputs.begin(), fg.inputs.end(), v) == fg.inputs.end())
          fg.inputs.push_back(v);
      }
      for (ValueId v : g.node(n).outputs) {
        bool outside = is_graph_output[v];
        for (NodeId w : users[v]) outside = outside || group_of[w] != gi;
        if (outside) fg.outputs.push_back(v);
      }
    }
    result.push_back(std::move(fg));
  }
  return result;
}

}  // namespace anvil::graph
