// Fusion (the TVM paper's rules) and static memory planning over the fused groups.
#include <gtest/gtest.h>

#include <random>

#include "anvil/graph/passes.h"
#include "graph/passes_testing.h"

namespace anvil::graph {
namespace {

using namespace pt;
using ops::Attrs;

std::vector<std::string> names(const Graph& g, const FusedGroup& fg) {
  std::vector<std::string> out;
  for (NodeId n : fg.nodes) out.push_back(g.node(n).name);
  return out;
}

std::vector<std::string> value_names(const Graph& g, const std::vector<ValueId>& vs) {
  std::vector<std::string> out;
  for (ValueId v : vs) out.push_back(g.value(v).name);
  return out;
}

using S = std::vector<std::string>;

// x -> conv(+bias) -> add bias -> relu -> add(residual x2) -> relu -> conv2 -> relu
Graph residual_block() {
  Graph g;
  ValueId x = g.add_input("x", {{1, 4, 6, 6}, f32});
  ValueId w = g.add_constant("w", random_array({4, 4, 3, 3}, 1));
  ValueId b = g.add_constant("b", random_array({1, 4, 1, 1}, 2));
  Attrs pads("conv2d", {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  ValueId c = g.add("conv", "conv2d", pads, {x, w});
  ValueId cb = g.add("bias", "add", Attrs(), {c, b});
  ValueId r = g.add("relu", "relu", Attrs(), {cb});
  ValueId s = g.add("res", "add", Attrs(), {r, x});
  ValueId r2 = g.add("relu2", "relu", Attrs(), {s});
  ValueId c2 = g.add("conv2", "conv2d", pads, {r2, w});
  g.add_output(g.add("relu3", "relu", Attrs(), {c2}));
  return g;
}

TEST(Fuse, ConvAbsorbsItsElementwiseEpilogue) {
  Graph g = residual_block();
  std::vector<FusedGroup> groups = fuse(g);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(names(g, groups[0]), (S{"conv", "bias", "relu", "res", "relu2"}));
  EXPECT_EQ(g.node(groups[0].anchor).name, "conv");
  EXPECT_EQ(value_names(g, groups[0].inputs), (S{"x", "w", "b"}));
  EXPECT_EQ(value_names(g, groups[0].outputs), (S{"relu2"}));
  EXPECT_EQ(names(g, groups[1]), (S{"conv2", "relu3"}));
  EXPECT_EQ(value_names(g, groups[1].inputs), (S{"relu2", "w"}));
  EXPECT_EQ(value_names(g, groups[1].outputs), (S{"relu3"}));
}

TEST(Fuse, AblationSwitchGivesOneGroupPerNode) {
  Graph g = residual_block();
  std::vector<FusedGroup> groups = fuse(g, false);
  ASSERT_EQ(groups.size(), g.num_nodes());
  for (size_t i = 0; i < groups.size(); ++i) {
    EXPECT_EQ(groups[i].nodes, std::vector<NodeId>{static_cast<NodeId>(i)});
    EXPECT_EQ(groups[i].outputs, g.node(static_cast<NodeId>(i)).outputs);
  }
  EXPECT_EQ(groups[0].anchor, 0);   // conv
  EXPECT_EQ(groups[1].anchor, -1);  // add
}

TEST(Fuse, EpilogueStopsWhereAValueIsSharedOrAnOutput) {
  Graph g;
  ValueId x = g.add_input("x", {{2, 8}, f32});
  ValueId w = g.add_constant("w", random_array({8, 8}, 1));
  ValueId d = g.add("fc", "dense", Attrs(), {x, w});
  ValueId r = g.add("relu", "relu", Attrs(), {d});
  ValueId e = g.add("exp", "exp", Attrs(), {r});  // relu is read twice: the chain stops at relu
  ValueId n = g.add("neg", "neg", Attrs(), {r});
  g.add_output(g.add("sum", "add", Attrs(), {e, n}));
  std::vector<FusedGroup> groups = fuse(g);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(names(g, groups[0]), (S{"fc", "relu"}));
  EXPECT_EQ(names(g, groups[1]), (S{"exp", "neg", "sum"}));
  EXPECT_EQ(groups[1].anchor, -1);
  EXPECT_EQ(value_names(g, groups[1].inputs), (S{"relu"}));
}

TEST(Fuse, ReductionAbsorbsInjectiveProducersOpaqueStandsAlone) {
  Graph g;
  ValueId x = g.add_input("x", {{4, 6}, f32});
  ValueId t =
      g.add("t", "transpose", Attrs("transpose", {{"perm", std::vector<int64_t>{1, 0}}}), {x});
  ValueId e = g.add("e", "exp", Attrs(), {t});
  ValueId s =
      g.add("sum", "reduce_sum", Attrs("reduce_sum", {{"axes", std::vector<int64_t>{0}}}), {e});
  ValueId r = g.add("after", "relu", Attrs(), {s});  // a reduction does not absorb consumers
  ValueId sm = g.add("softmax", "softmax", Attrs(), {x});
  ValueId sm2 = g.add("post", "exp", Attrs(), {sm});
  g.add_output(r);
  g.add_output(sm2);
  std::vector<FusedGroup> groups = fuse(g);
  ASSERT_EQ(groups.size(), 4u);
  EXPECT_EQ(names(g, groups[0]), (S{"t", "e", "sum"}));
  EXPECT_EQ(g.node(groups[0].anchor).name, "sum");
  EXPECT_EQ(names(g, groups[1]), (S{"after"}));
  EXPECT_EQ(names(g, groups[2]), (S{"softmax"}));
  EXPECT_EQ(g.node(groups[2].anchor).name, "softmax");
  EXPECT_EQ(names(g, groups[3]), (S{"post"}));
}

TEST(Fuse, NeverTwoAnchorsAndEveryNodeOnce) {
  // dense -> relu -> dense -> add(relu output of the first) : the second dense cannot join.
  Graph g;
  ValueId x = g.add_input("x", {{2, 8}, f32});
  ValueId w = g.add_constant("w", random_array({8, 8}, 1));
  ValueId d1 = g.add("fc1", "dense", Attrs(), {x, w});
  ValueId d2 = g.add("fc2", "dense", Attrs(), {d1, w});
  ValueId s = g.add("sum", "reduce_sum", Attrs(), {d2});
  g.add_output(g.add("out", "relu", Attrs(), {s}));
  std::vector<FusedGroup> groups = fuse(g);
  std::vector<int> seen(g.num_nodes(), 0);
  for (const FusedGroup& fg : groups) {
    int anchors = 0;
    for (NodeId n : fg.nodes) {
      ++seen[n];
      anchors += ops::lookup(g.node(n).op).pattern != ops::Pattern::kInjective;
    }
    EXPECT_LE(anchors, 1);
  }
  for (int c : seen) EXPECT_EQ(c, 1);
  EXPECT_EQ(groups.size(), 4u);
}

// Checks a plan: aligned offsets, and values whose lifetimes overlap do not overlap in memory.
void check_plan(const Graph& g, const std::vector<FusedGroup>& groups, const MemoryPlan& plan) {
  std::vector<int> def(g.num_values(), -1), last(g.num_values(), -1);
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    for (NodeId n : groups[gi].nodes)
      for (ValueId v : g.node(n).outputs) def[v] = last[v] = static_cast<int>(gi);
    for (ValueId v : groups[gi].inputs)
      if (def[v] >= 0) last[v] = static_cast<int>(gi);
  }
  std::vector<ValueId> planned;
  for (size_t v = 0; v < g.num_values(); ++v) {
    if (plan.offset[v] < 0) continue;
    EXPECT_EQ(plan.offset[v] % 64, 0);
    EXPECT_GE(def[v], 0) << g.value(static_cast<ValueId>(v)).name
                         << " is planned but written by no group";
    planned.push_back(static_cast<ValueId>(v));
  }
  for (ValueId o : g.outputs()) EXPECT_EQ(plan.offset[o], -1);
  for (ValueId a : planned)
    for (ValueId b : planned) {
      if (a >= b) continue;
      bool live_together = def[a] <= last[b] && def[b] <= last[a];
      if (!live_together) continue;
      auto size = [&](ValueId v) {
        int64_t e = 4;
        for (int64_t d : g.value(v).type.shape) e *= d;
        return e;
      };
      bool disjoint =
          plan.offset[a] + size(a) <= plan.offset[b] || plan.offset[b] + size(b) <= plan.offset[a];
      EXPECT_TRUE(disjoint) << g.value(a).name << " and " << g.value(b).name;
    }
  EXPECT_LE(plan.planned_bytes, plan.unplanned_bytes);
}

TEST(PlanMemory, ReusesDeadBuffersAndNeverOverlapsLiveOnes) {
  Graph g = residual_block();
  for (bool fused : {true, false}) {
    std::vector<FusedGroup> groups = fuse(g, fused);
    MemoryPlan plan = plan_memory(g, groups);
    check_plan(g, groups, plan);
    if (!fused) {
      // 6 intermediates of 144 floats (576 bytes each): at most 3 live at once (x is an input).
      EXPECT_EQ(plan.unplanned_bytes, 6 * 576);
      EXPECT_LT(plan.planned_bytes, plan.unplanned_bytes);
    } else {
      EXPECT_EQ(plan.unplanned_bytes, 576);  // relu2 only
    }
  }
}

TEST(PlanMemory, RandomChainsWithBranches) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 20; ++trial) {
    Graph g;
    std::vector<ValueId> vals = {g.add_input("x", {{1, 16}, f32})};
    int n = 6 + static_cast<int>(rng() % 10);
    for (int i = 0; i < n; ++i) {
      ValueId a = vals[rng() % vals.size()], b = vals[rng() % vals.size()];
      std::string name = "n" + std::to_string(i);
      if (rng() % 3 == 0) {
        int64_t k = g.value(a).type.shape[1];
        ValueId w = g.add_constant(name + "_w", random_array({k, k}, i));
        vals.push_back(g.add(name, "dense", Attrs(), {a, w}));
      } else if (g.value(a).type == g.value(b).type) {
        vals.push_back(g.add(name, "add", Attrs(), {a, b}));
      } else {
        vals.push_back(g.add(name, "exp", Attrs(), {a}));
      }
    }
    g.add_output(vals.back());
    for (bool fused : {true, false}) {
      std::vector<FusedGroup> groups = fuse(g, fused);
      check_plan(g, groups, plan_memory(g, groups));
    }
  }
}

}  // namespace
}  // namespace anvil::graph
