// Static memory planning over fused groups (passes.h).
//
// The planned values are the node outputs that need a buffer of their own: every output of a
// group's nodes except the graph outputs (the caller's buffers) and the values read only inside
// their own group (inlined into the group's kernel). A value lives from the group that writes it
// to the last group that reads it (just its own group when nothing reads it). A group's outputs
// never share storage with its inputs: a value may reuse the bytes of another only when that one
// was last read by an earlier group.
//
// Placement, values in order of their defining group (ties: larger first): best fit among the
// gaps between the blocks still live at that point, else right after the highest live block.
// Every size is rounded up to 64 bytes, so every offset is 64-byte aligned. The arena only grows
// when a value goes past its current end, by at most the value's size, so planned_bytes never
// exceeds unplanned_bytes (the sum of the rounded sizes: one buffer per value).
#include <algorithm>

#include "anvil/graph/passes.h"
#include "anvil/support/error.h"

namespace anvil::graph {

namespace {

constexpr int64_t kAlign = 64;

int64_t aligned_bytes(const ops::TensorType& t) {
  int64_t e = (t.dtype.bits() + 7) / 8 * t.dtype.lanes();
  for (int64_t d : t.shape) e *= d;
  return std::max<int64_t>(kAlign, (e + kAlign - 1) / kAlign * kAlign);
}

struct Block {
  int64_t offset, size, last;
};

}  // namespace

MemoryPlan plan_memory(const Graph& g, const std::vector<FusedGroup>& groups) {
  std::vector<int32_t> group_of(g.num_nodes(), -1);
  for (size_t gi = 0; gi < groups.size(); ++gi)
    for (NodeId n : groups[gi].nodes) {
      ANVIL_CHECK(n >= 0 && static_cast<size_t>(n) < g.num_nodes() && group_of[n] < 0,
                  "plan_memory: node ", n, " is missing from the graph or in two groups");
      group_of[n] = static_cast<int32_t>(gi);
    }
  for (size_t n = 0; n < g.num_nodes(); ++n)
    ANVIL_CHECK(group_of[n] >= 0, "plan_memory: node '", g.node(static_cast<NodeId>(n)).name,
                "' is in no group");
  std::vector<bool> is_graph_output(g.num_values(), false);
  for (ValueId v : g.outputs()) is_graph_output[v] = true;
  std::vector<std::vector<NodeId>> users = g.users();

  struct Item {
    ValueId v;
    int32_t def, last;
    int64_t size;
  };
  std::vector<Item> items;
  for (size_t n = 0; n < g.num_nodes(); ++n) {
    int32_t def = group_of[n];
    for (ValueId v : g.node(static_cast<NodeId>(n)).outputs) {
      if (is_graph_output[v]) continue;
      int32_t last = def;
      bool outside = users[v].empty();
      for (NodeId w : users[v]) {
        last = std::max(last, group_of[w]);
        outside = outside || group_of[w] != def;
      }
      if (!outside) continue;  // inlined into its group
      ANVIL_CHECK(last >= def, "plan_memory: value '", g.value(v).name,
                  "' is read by a group before the one that writes it");
      items.push_back({v, def, last, aligned_bytes(g.value(v).type)});
    }
  }
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    return a.def != b.def ? a.def < b.def : a.size > b.size;
  });

  MemoryPlan plan;
  plan.offset.assign(g.num_values(), -1);
  std::vector<Block> placed;
  for (const Item& it : items) {
    // The blocks still live when this value is written, by offset.
    std::vector<Block> live;
    for (const Block& b : placed)
      if (b.last >= it.def) live.push_back(b);
    std::sort(live.begin(), live.end(),
              [](const Block& a, const Block& b) { return a.offset < b.offset; });
    int64_t best = -1, best_gap = 0, cursor = 0;
    for (const Block& b : live) {
      int64_t gap = b.offset - cursor;
      if (gap >= it.size && (best < 0 || gap < best_gap)) best = cursor, best_gap = gap;
      cursor = std::max(cursor, b.offset + b.size);
    }
    int64_t offset = best >= 0 ? best : cursor;
    placed.push_back({offset, it.size, it.last});
    plan.offset[it.v] = offset;
    plan.planned_bytes = std::max(plan.planned_bytes, offset + it.size);
    plan.unplanned_bytes += it.size;
  }
  return plan;
}

}  // namespace anvil::graph
