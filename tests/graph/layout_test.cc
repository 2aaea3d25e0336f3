// Layout alteration: convolution chains on NCHW[x]c, transforms only at the boundaries, weights
// packed by constant folding. Every rewrite is checked numerically against the NCHW graph.
#include <gtest/gtest.h>

#include "anvil/graph/passes.h"
#include "anvil/ops/nchwc.h"
#include "graph/passes_testing.h"

namespace anvil::graph {
namespace {

using namespace pt;
using ops::Attrs;

Target target_with_bits(int bits) {
  Target t = Target::parse("llvm");
  t.vector_bits = bits;
  return t;
}

Attrs conv(std::vector<int64_t> pads, std::vector<int64_t> strides = {1, 1}, int64_t group = 1) {
  return Attrs("conv2d", {{"pads", pads}, {"strides", strides}, {"group", group}});
}

ValueId param(Graph& g, const std::string& name, std::vector<int64_t> shape, uint32_t seed) {
  return g.add_constant(name, random_array(std::move(shape), seed, -0.5f, 0.5f));
}

// stem 3x3 conv (3 -> 16, bias) -> relu -> 3x3 conv 16 -> 16 -> residual add -> clip ->
// depthwise 3x3 stride 2 -> 1x1 conv 16 -> 18 (+bias) -> relu -> global pool -> flatten -> dense
Graph conv_chain() {
  Graph g;
  ValueId x = g.add_input("x", {{1, 3, 10, 10}, f32});
  ValueId c1 = g.add("stem", "conv2d", conv({1, 1, 1, 1}),
                     {x, param(g, "w1", {16, 3, 3, 3}, 1), param(g, "b1", {16}, 2)});
  ValueId r1 = g.add("relu1", "relu", Attrs(), {c1});
  ValueId c2 =
      g.add("conv2", "conv2d", conv({1, 1, 1, 1}), {r1, param(g, "w2", {16, 16, 3, 3}, 3)});
  ValueId a = g.add("res", "add", Attrs(), {c2, r1});
  ValueId cl = g.add("clip", "clip", Attrs("clip", {{"min", 0.0}, {"max", 6.0}}), {a});
  ValueId dw =
      g.add("dw", "conv2d", conv({1, 1, 1, 1}, {2, 2}, 16), {cl, param(g, "wd", {16, 1, 3, 3}, 4)});
  ValueId c3 = g.add("pw", "conv2d", conv({0, 0, 0, 0}),
                     {dw, param(g, "w3", {18, 16, 1, 1}, 5), param(g, "b3", {18}, 6)});
  ValueId r3 = g.add("relu3", "relu", Attrs(), {c3});
  ValueId p = g.add("pool", "global_avg_pool2d", Attrs(), {r3});
  ValueId f = g.add("flat", "flatten", Attrs(), {p});
  g.add_output(g.add("fc", "dense", Attrs(), {f, param(g, "wf", {5, 18}, 7)}));
  return g;
}

// Layout transforms from NCHW into a blocked layout, and back.
std::pair<int, int> transforms(const Graph& g) {
  int in = 0, out = 0;
  for (const Node& n : g.nodes()) {
    if (n.op != "layout_transform") continue;
    (n.attrs.get_string("src_layout") == "NCHW" ? in : out) += 1;
  }
  return {in, out};
}

TEST(AlterLayout, ConvChainRunsBlockedBetweenBoundaries) {
  for (int bits : {512, 256}) {
    SCOPED_TRACE(bits);
    Target t = target_with_bits(bits);
    Graph g = conv_chain();
    Graph a = alter_layout(g, t);
    EXPECT_EQ(count_op(a, "conv2d"), 0) << a.str();
    // The 3x3 stride-1 convolutions by Winograd (ops::prefer_winograd), the 1x1 directly.
    EXPECT_EQ(count_op(a, "conv2d_nchwc"), 1) << a.str();
    EXPECT_EQ(count_op(a, "conv2d_winograd_nchwc"), 2) << a.str();
    EXPECT_EQ(count_op(a, "depthwise_conv2d_nchwc"), 1);
    // One transform into the blocked layout (the input), one out of it (before the pool); the
    // stem's 3-channel block differs from 16 only in its input, which is the stem's own.
    EXPECT_EQ(transforms(a), std::make_pair(1, 1)) << a.str();
    expect_same_outputs(g, a);
    Graph f = fold_constants(a);
    for (const char* pack : {"conv2d_nchwc_pack_weight", "depthwise_conv2d_nchwc_pack_weight",
                             "conv2d_winograd_nchwc_pack_weight"})
      EXPECT_EQ(count_op(f, pack), 0) << pack << "\n" << f.str();
    expect_same_outputs(g, f);
  }
}

TEST(AlterLayout, GpuTargetsKeepNchwAndTakeWinogradFor3x3) {
  Graph g = conv_chain();
  Graph a = alter_layout(g, Target::parse("opencl"));
  // Only conv2 (16 -> 16, 3x3, stride 1) qualifies (ops::prefer_winograd_gpu): the stem has 3
  // input channels, the others are depthwise and 1x1.
  EXPECT_EQ(count_op(a, "conv2d_winograd"), 1) << a.str();
  EXPECT_EQ(count_op(a, "conv2d"), 3) << a.str();
  EXPECT_EQ(count_op(a, "layout_transform"), 0) << a.str();
  EXPECT_EQ(count_op(a, "dense_packed"), 0) << a.str();
  expect_same_outputs(g, a);
  Graph f = fold_constants(a);
  EXPECT_EQ(count_op(f, "conv2d_winograd_nchwc_pack_weight"), 0) << f.str();
  expect_same_outputs(g, f);

  // An lstm keeps its weights unpacked and takes its GPU form.
  Graph l;
  ValueId x = l.add_input("x", {{4, 1, 6}, f32});
  std::vector<ValueId> ys = l.add_node(
      "lstm", "lstm", Attrs("lstm", {{"hidden_size", int64_t{5}}}),
      {x, param(l, "W", {1, 20, 6}, 8), param(l, "R", {1, 20, 5}, 9)}, {"Y", "Y_h", "Y_c"});
  l.add_output(ys[0]);
  Graph la = alter_layout(l, Target::parse("opencl"));
  ASSERT_EQ(count_op(la, "lstm"), 1) << la.str();
  EXPECT_EQ(count_op(la, "dense_pack_weight"), 0) << la.str();
  for (const Node& n : la.nodes())
    if (n.op == "lstm") {
      EXPECT_EQ(n.attrs.get_int("gpu_form", 0), 1);
      EXPECT_EQ(n.attrs.get_int("packed_weights", 0), 0);
    }
  expect_same_outputs(l, la);
}

TEST(AlterLayout, PaddedChannelsAndBlockChanges) {
  // 18 channels: padded to the vector width; then a conv to 12 channels (a smaller block).
  Target t = target_with_bits(512);
  Graph g;
  ValueId x = g.add_input("x", {{2, 18, 7, 7}, f32});
  ValueId c1 = g.add("c1", "conv2d", conv({0, 0, 0, 0}),
                     {x, param(g, "w1", {12, 18, 1, 1}, 1), param(g, "b1", {12}, 2)});
  ValueId r = g.add("r", "relu", Attrs(), {c1});
  ValueId c2 =
      g.add("c2", "conv2d", conv({1, 1, 1, 1}, {2, 2}), {r, param(g, "w2", {18, 12, 3, 3}, 3)});
  g.add_output(c2);
  g.add_output(r);  // a value read both blocked (c2) and as a graph output
  Graph a = alter_layout(g, t);
  EXPECT_EQ(transforms(a), std::make_pair(1, 2)) << a.str();
  EXPECT_EQ(a.value(a.outputs()[0]).name, "c2");
  EXPECT_EQ(a.value(a.outputs()[1]).name, "r");
  expect_same_outputs(g, a);
  expect_same_outputs(g, fold_constants(a));
  int64_t b18 = ops::nchwc_block(18, t);
  EXPECT_EQ(ops::nchwc_channels(18, b18) % b18, 0);
}

TEST(AlterLayout, NchwOpBetweenConvsConvertsBackAndForth) {
  Target t = target_with_bits(512);
  Graph g;
  ValueId x = g.add_input("x", {{1, 16, 8, 8}, f32});
  ValueId c1 = g.add("c1", "conv2d", conv({0, 0, 0, 0}), {x, param(g, "w1", {16, 16, 1, 1}, 1)});
  ValueId sm = g.add("softmax", "softmax", Attrs("softmax", {{"axis", int64_t{1}}}), {c1});
  ValueId c2 = g.add("c2", "conv2d", conv({0, 0, 0, 0}), {sm, param(g, "w2", {16, 16, 1, 1}, 2)});
  g.add_output(g.add("out", "sigmoid", Attrs(), {c2}));
  Graph a = alter_layout(g, t);
  EXPECT_EQ(transforms(a), std::make_pair(2, 2)) << a.str();
  expect_same_outputs(g, a);
}

// Pools run blocked (pooling is per channel): a stem conv -> relu -> max pool -> conv ->
// avg pool -> conv -> global pool stays in NCHW[x]c from the input's transform to the one before
// flatten, padded channels included (20 channels in blocks of 16, 8 with AVX2).
TEST(AlterLayout, PoolsStayBlocked) {
  for (int bits : {512, 256}) {
    SCOPED_TRACE(bits);
    Target t = target_with_bits(bits);
    Graph g;
    ValueId x = g.add_input("x", {{1, 3, 23, 21}, f32});
    ValueId c0 = g.add("stem", "conv2d", conv({3, 3, 3, 3}, {2, 2}),
                       {x, param(g, "w0", {20, 3, 7, 7}, 1), param(g, "b0", {20}, 2)});
    ValueId r0 = g.add("r0", "relu", Attrs(), {c0});
    ValueId mp = g.add("maxpool", "max_pool2d",
                       Attrs("max_pool2d", {{"kernel_shape", std::vector<int64_t>{3, 3}},
                                            {"strides", std::vector<int64_t>{2, 2}},
                                            {"pads", std::vector<int64_t>{1, 1, 1, 1}}}),
                       {r0});
    ValueId c1 = g.add("c1", "conv2d", conv({1, 1, 1, 1}), {mp, param(g, "w1", {20, 20, 3, 3}, 3)});
    ValueId ap = g.add("avgpool", "avg_pool2d",
                       Attrs("avg_pool2d", {{"kernel_shape", std::vector<int64_t>{2, 2}},
                                            {"strides", std::vector<int64_t>{1, 1}},
                                            {"pads", std::vector<int64_t>{0, 0, 1, 1}},
                                            {"count_include_pad", int64_t{1}}}),
                       {c1});
    ValueId c2 = g.add("c2", "conv2d", conv({0, 0, 0, 0}), {ap, param(g, "w2", {24, 20, 1, 1}, 4)});
    ValueId gp = g.add("gap", "global_avg_pool2d", Attrs(), {c2});
    ValueId f = g.add("flat", "flatten", Attrs(), {gp});
    g.add_output(g.add("fc", "dense", Attrs(), {f, param(g, "wf", {5, 24}, 5)}));
    Graph a = alter_layout(g, t);
    for (const char* op : {"max_pool2d", "avg_pool2d", "global_avg_pool2d"}) {
      EXPECT_EQ(count_op(a, op), 0) << op << "\n" << a.str();
      EXPECT_EQ(count_op(a, std::string(op) + "_nchwc"), 1) << op << "\n" << a.str();
    }
    EXPECT_EQ(transforms(a), std::make_pair(1, 1)) << a.str();
    expect_same_outputs(g, a);
    expect_same_outputs(g, fold_constants(a));
  }
}

// A pool whose input has no blocked form (no convolution before it) stays NCHW.
TEST(AlterLayout, PoolOfAnNchwValueStaysNchw) {
  Graph g;
  ValueId x = g.add_input("x", {{1, 16, 8, 8}, f32});
  ValueId p = g.add("pool", "max_pool2d",
                    Attrs("max_pool2d", {{"kernel_shape", std::vector<int64_t>{2, 2}},
                                         {"strides", std::vector<int64_t>{2, 2}}}),
                    {x});
  g.add_output(g.add("c", "conv2d", conv({0, 0, 0, 0}), {p, param(g, "w", {16, 16, 1, 1}, 1)}));
  Graph a = alter_layout(g, target_with_bits(512));
  EXPECT_EQ(count_op(a, "max_pool2d"), 1) << a.str();
  EXPECT_EQ(transforms(a), std::make_pair(1, 1)) << a.str();
  expect_same_outputs(g, a);
}

TEST(AlterLayout, TransposedConvAndUnsupportedConvs) {
  Target t = target_with_bits(512);
  Graph g;
  ValueId x = g.add_input("x", {{1, 16, 4, 4}, f32});
  ValueId d = g.add("deconv", "conv2d_transpose",
                    Attrs("conv2d_transpose", {{"strides", std::vector<int64_t>{2, 2}},
                                               {"pads", std::vector<int64_t>{1, 1, 1, 1}}}),
                    {x, param(g, "wt", {16, 8, 4, 4}, 1), param(g, "bt", {8}, 2)});
  ValueId r = g.add("relu", "relu", Attrs(), {d});
  // Grouped (not depthwise) and non-constant weights stay NCHW.
  ValueId gc = g.add("grouped", "conv2d", conv({0, 0, 0, 0}, {1, 1}, 2),
                     {r, param(g, "wg", {8, 4, 1, 1}, 3)});
  ValueId w_in = g.add_input("w_in", {{8, 8, 1, 1}, f32});
  g.add_output(g.add("dyn", "conv2d", conv({0, 0, 0, 0}), {gc, w_in}));
  Graph a = alter_layout(g, t);
  EXPECT_EQ(count_op(a, "conv2d_transpose_nchwc"), 1) << a.str();
  EXPECT_EQ(count_op(a, "conv2d"), 2);
  expect_same_outputs(g, a);
  expect_same_outputs(g, fold_constants(a));
}

// Constant weights of dense and lstm are packed into panels (by fold_constants, once); a dense
// with a weight that is a graph input stays dense.
TEST(AlterLayout, DenseAndLstmWeightsArePacked) {
  Target t = target_with_bits(512);
  Graph g;
  ValueId x = g.add_input("x", {{4, 1, 6}, f32});
  std::vector<ValueId> y = g.add_node(
      "rnn", "lstm", Attrs("lstm", {{"hidden_size", int64_t{5}}}),
      {x, param(g, "W", {1, 20, 6}, 1), param(g, "R", {1, 20, 5}, 2), param(g, "B", {1, 40}, 3)},
      {"Y", "Yh", "Yc"});
  ValueId h =
      g.add("flat", "reshape", Attrs("reshape", {{"shape", std::vector<int64_t>{4, 5}}}), {y[0]});
  ValueId d =
      g.add("fc", "dense", Attrs(), {h, param(g, "wf", {18, 5}, 4), param(g, "bf", {18}, 5)});
  ValueId w_in = g.add_input("w_in", {{3, 18}, f32});
  g.add_output(g.add("dyn", "dense", Attrs(), {d, w_in}));
  g.add_output(y[1]);
  Graph a = alter_layout(g, t);
  EXPECT_EQ(count_op(a, "dense_packed"), 1) << a.str();
  EXPECT_EQ(count_op(a, "dense"), 1);
  EXPECT_EQ(count_op(a, "dense_pack_weight"), 3);
  bool packed_lstm = false;
  for (const Node& n : a.nodes())
    if (n.op == "lstm") packed_lstm = n.attrs.get_int("packed_weights", 0) == 1;
  EXPECT_TRUE(packed_lstm) << a.str();
  expect_same_outputs(g, a);
  Graph folded = fold_constants(a);
  EXPECT_EQ(count_op(folded, "dense_pack_weight"), 0) << folded.str();
  expect_same_outputs(g, folded);
}

// The whole pipeline on a ResNet-style block with batch norms: the compile order of the graph
// compiler, checked numerically, then fused and planned.
TEST(Pipeline, ResidualBlockThroughEveryPass) {
  Target t = target_with_bits(512);
  Graph g;
  ValueId x = g.add_input("x", {{1, 8, 12, 12}, f32});
  auto bn = [&](const std::string& name, ValueId v, int64_t C, uint32_t seed) {
    std::vector<ValueId> p = {v};
    for (int i = 0; i < 4; ++i) {
      runtime::NDArray d = random_array({C}, seed + i, 0.5f, 1.5f);
      p.push_back(g.add_constant(name + "_" + std::to_string(i), d));
    }
    return g.add(name, "batch_norm", Attrs(), p);
  };
  ValueId c0 = g.add("stem", "conv2d", conv({1, 1, 1, 1}), {x, param(g, "w0", {16, 8, 3, 3}, 1)});
  ValueId r0 = g.add("r0", "relu", Attrs(), {bn("bn0", c0, 16, 10)});
  ValueId c1 = g.add("c1", "conv2d", conv({1, 1, 1, 1}), {r0, param(g, "w1", {16, 16, 3, 3}, 2)});
  ValueId r1 = g.add("r1", "relu", Attrs(), {bn("bn1", c1, 16, 20)});
  ValueId c2 = g.add("c2", "conv2d", conv({1, 1, 1, 1}), {r1, param(g, "w2", {16, 16, 3, 3}, 3)});
  ValueId s = g.add("sum", "add", Attrs(), {bn("bn2", c2, 16, 30), r0});
  ValueId r2 = g.add("r2", "relu", Attrs(), {s});
  ValueId p = g.add("pool", "global_avg_pool2d", Attrs(), {r2});
  ValueId f = g.add("flat", "flatten", Attrs(), {p});
  g.add_output(g.add("fc", "dense", Attrs(), {f, param(g, "wf", {10, 16}, 4)}));

  std::vector<Pass> passes = {
      {"simplify", simplify_inference},
      {"fold", fold_constants},
      {"layout", [&](const Graph& h) { return alter_layout(h, t); }},
      {"fold_packed", fold_constants},
      {"cse", eliminate_common_subexpressions},
      {"dce", eliminate_dead_code},
  };
  Graph o = run_passes(g, passes);
  EXPECT_EQ(count_op(o, "batch_norm"), 0) << o.str();
  EXPECT_EQ(transforms(o), std::make_pair(1, 1)) << o.str();
  expect_same_outputs(g, o);
  // Every constant is read (nothing folded away lingers).
  std::vector<std::vector<NodeId>> users = o.users();
  for (size_t v = 0; v < o.num_values(); ++v)
    if (o.value(static_cast<ValueId>(v)).kind == ValueKind::kConstant) {
      EXPECT_FALSE(users[v].empty()) << o.value(static_cast<ValueId>(v)).name;
    }

  // Groups: transform | stem+bias+relu | c1+bias+relu | c2+bias+add+relu | pool (blocked) |
  // back+flatten | dense.
  std::vector<FusedGroup> groups = fuse(o);
  EXPECT_EQ(groups.size(), 7u);
  EXPECT_EQ(count_op(o, "global_avg_pool2d_nchwc"), 1) << o.str();
  int anchored = 0;
  for (const FusedGroup& fg : groups) anchored += fg.anchor >= 0;
  EXPECT_EQ(anchored, 5);
  MemoryPlan plan = plan_memory(o, groups);
  MemoryPlan plan_unfused = plan_memory(o, fuse(o, false));
  EXPECT_LE(plan.planned_bytes, plan.unplanned_bytes);
  EXPECT_LT(plan.unplanned_bytes, plan_unfused.unplanned_bytes);
  EXPECT_LT(plan_unfused.planned_bytes, plan_unfused.unplanned_bytes);
}

}  // namespace
}  // namespace anvil::graph
