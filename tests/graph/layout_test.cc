// Layout alteration: convolution chains on NCHW[x]c, transforms only at the boundaries, weights
// packed by constant folding. Every rewrite is checked numerically against the NCHW graph.
#include <gtest/gtest.h>

#include "anvil/graph/passes.h"
#include "anvil/ops/nchwc.h"
#include "anvil/ops/winograd.h"
#include "anvil/support/error.h"
#include "graph/passes_testing.h"

namespace anvil::graph {
namespace {

using namespace pt;
using ops::Attrs;

// The host's target with `bits`-wide vectors and FMA pipes as wide, so that the block rule is the
// same on every host (where 512-bit FMAs issue as two halves, as on Zen 4, 8-channel blocks cost
// no more than 16 and 104 channels would take blocks of 8).
Target target_with_bits(int bits) {
  Target t = Target::parse("llvm");
  t.vector_bits = bits;
  t.fma_pipe_bits = bits;
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

// The algorithm space of a conv2d: the default rule's choice first, then the others; empty where
// only the direct convolution applies.
TEST(AlterLayout, AConvolutionsAlgorithmsAreItsDefaultThenTheOthers) {
  const Target t = target_with_bits(512);
  auto space = [&](std::vector<int64_t> x, std::vector<int64_t> w, Attrs attrs) {
    return ops::conv2d_algorithm_space({{x, f32}, {w, f32}}, attrs, t);
  };
  const ops::ConfigSpace s = space({1, 16, 10, 10}, {16, 16, 3, 3}, conv({1, 1, 1, 1}));
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].name, "winograd_tile");
  std::vector<int64_t> sorted = s[0].values;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, (std::vector<int64_t>{0, 2, 4}));
  const int64_t rule = ops::prefer_winograd(16, 16, 10, 10, 3, 3, 1, 1, 1, 1, t)
                           ? ops::winograd_tile(16, 16, 10, 10, t)
                           : 0;
  EXPECT_EQ(s[0].values[0], rule);
  EXPECT_TRUE(space({1, 16, 10, 10}, {16, 16, 3, 3}, conv({1, 1, 1, 1}, {2, 2})).empty());
  EXPECT_TRUE(space({1, 16, 10, 10}, {16, 8, 3, 3}, conv({1, 1, 1, 1}, {1, 1}, 2)).empty());
  EXPECT_TRUE(space({1, 16, 10, 10}, {16, 16, 1, 1}, conv({0, 0, 0, 0})).empty());
}

// BuildOptions::algorithm_for (tuning records) overrides the rule per convolution: direct, F(2x2)
// or F(4x4), each computing the same outputs; a point outside the space is an error naming the
// node.
TEST(AlterLayout, TheAlgorithmGivenForAConvolutionReplacesTheRule) {
  const Target t = target_with_bits(512);
  const Graph g = conv_chain();
  for (int64_t tile : {0, 2, 4}) {
    SCOPED_TRACE(tile);
    std::vector<std::string> asked;
    ConfigFn algorithm_for = [&](const std::string& op, const std::vector<ops::TensorType>&,
                                 const ops::Attrs&) -> std::optional<ops::Config> {
      asked.push_back(op);
      return ops::Config{{"winograd_tile", tile}};
    };
    Graph a = alter_layout(g, t, algorithm_for);
    // Asked about the two 3x3 stride-1 convolutions only (not the depthwise or the 1x1).
    EXPECT_EQ(asked, (std::vector<std::string>{"conv2d", "conv2d"}));
    EXPECT_EQ(count_op(a, "conv2d_winograd_nchwc"), tile == 0 ? 0 : 2) << a.str();
    EXPECT_EQ(count_op(a, "conv2d_nchwc"), tile == 0 ? 3 : 1) << a.str();
    for (const Node& n : a.nodes()) {
      if (n.op == "conv2d_winograd_nchwc") {
        EXPECT_EQ(n.attrs.get_int("tile", 0), tile);
      }
    }
    expect_same_outputs(g, fold_constants(a));
  }
  ConfigFn bad = [](const std::string&, const std::vector<ops::TensorType>&,
                    const ops::Attrs&) -> std::optional<ops::Config> {
    return ops::Config{{"winograd_tile", 3}};
  };
  try {
    alter_layout(g, t, bad);
    FAIL() << "a Winograd tile of 3 was accepted";
  } catch (const anvil::Error& e) {
    EXPECT_NE(std::string(e.what()).find("conv2d 'stem'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("winograd_tile"), std::string::npos) << e.what();
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

TEST(AlterLayout, TransposedGroupedAndUnsupportedConvs) {
  Target t = target_with_bits(512);
  Graph g;
  ValueId x = g.add_input("x", {{1, 16, 4, 4}, f32});
  ValueId d = g.add("deconv", "conv2d_transpose",
                    Attrs("conv2d_transpose", {{"strides", std::vector<int64_t>{2, 2}},
                                               {"pads", std::vector<int64_t>{1, 1, 1, 1}}}),
                    {x, param(g, "wt", {16, 8, 4, 4}, 1), param(g, "bt", {8}, 2)});
  ValueId r = g.add("relu", "relu", Attrs(), {d});
  // A grouped convolution runs blocked when its groups fill blocks of 4 or more; one with 2
  // channels per group, and one with a non-constant weight, stay NCHW.
  ValueId gc = g.add("grouped", "conv2d", conv({0, 0, 0, 0}, {1, 1}, 2),
                     {r, param(g, "wg", {8, 4, 1, 1}, 3)});
  ValueId gc2 = g.add("grouped2", "conv2d", conv({1, 1, 1, 1}, {1, 1}, 4),
                      {gc, param(g, "wg2", {8, 2, 3, 3}, 4)});
  ValueId w_in = g.add_input("w_in", {{8, 8, 1, 1}, f32});
  g.add_output(g.add("dyn", "conv2d", conv({0, 0, 0, 0}), {gc2, w_in}));
  Graph a = alter_layout(g, t);
  EXPECT_EQ(count_op(a, "conv2d_transpose_nchwc"), 1) << a.str();
  EXPECT_EQ(count_op(a, "conv2d_nchwc"), 1) << a.str();
  EXPECT_EQ(count_op(a, "conv2d"), 2);
  expect_same_outputs(g, a);
  expect_same_outputs(g, fold_constants(a));
}

// Groups narrower than a vector merge into vector-wide block-diagonal groups, so a ResNeXt-like
// chain (1x1, grouped 3x3 with 4 channels per group, 1x1) and a RegNet-Y-like one (8 per group,
// 13 groups: 104 channels padded to 112) stay in one block from boundary to boundary.
TEST(AlterLayout, NarrowGroupsMergeIntoWholeVectors) {
  struct Case {
    int bits;
    int64_t channels, group, merge;
  };
  for (Case c : {Case{512, 32, 8, 4}, Case{512, 104, 13, 2}, Case{256, 32, 8, 2}}) {
    SCOPED_TRACE(std::to_string(c.bits) + " bits, " + std::to_string(c.group) + " groups");
    int64_t C = c.channels, cg = C / c.group;
    Graph g;
    ValueId x = g.add_input("x", {{1, 16, 6, 6}, f32});
    ValueId a = g.add("a", "conv2d", conv({0, 0, 0, 0}), {x, param(g, "wa", {C, 16, 1, 1}, 1)});
    ValueId r = g.add("r", "relu", Attrs(), {a});
    ValueId gc = g.add("grouped", "conv2d", conv({1, 1, 1, 1}, {1, 1}, c.group),
                       {r, param(g, "wg", {C, cg, 3, 3}, 2), param(g, "bg", {C}, 3)});
    ValueId r2 = g.add("r2", "relu", Attrs(), {gc});
    g.add_output(g.add("b", "conv2d", conv({0, 0, 0, 0}), {r2, param(g, "wb", {16, C, 1, 1}, 4)}));
    Graph al = alter_layout(g, target_with_bits(c.bits));
    EXPECT_EQ(count_op(al, "conv2d_nchwc"), 3) << al.str();
    EXPECT_EQ(transforms(al), std::make_pair(1, 1)) << al.str();
    int64_t lanes = c.bits / 32;
    int merged_packs = 0, grouped_convs = 0;
    for (const Node& n : al.nodes()) {
      if (n.op == "conv2d_nchwc_pack_weight" && n.attrs.get_int("merge") > 1) {
        ++merged_packs;
        EXPECT_EQ(n.attrs.get_int("merge"), c.merge);
        EXPECT_EQ(n.attrs.get_int("out_block"), lanes);
      }
      if (n.op == "conv2d_nchwc" && n.attrs.get_int("group") != 1) {
        ++grouped_convs;
        EXPECT_EQ(n.attrs.get_int("group"), (c.group + c.merge - 1) / c.merge) << al.str();
      }
    }
    EXPECT_EQ(merged_packs, 1) << al.str();
    EXPECT_EQ(grouped_convs, 1) << al.str();
    expect_same_outputs(g, al);
    expect_same_outputs(g, fold_constants(al));
  }
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

// A MobileNet v3 block: 1x1 expand -> hard-swish -> depthwise 3x3 -> squeeze-and-excitation
// (global pool, 1x1 reduce + relu, 1x1 expand + hard-sigmoid, broadcast multiply) -> 1x1 project
// -> leaky relu -> per-channel scale and shift (an unfolded batch norm's form) -> GELU's erf form
// (a division by a constant) and PRelu: every op runs blocked, transforms only at the boundaries.
TEST(AlterLayout, SqueezeExcitationAndActivationsStayBlocked) {
  for (int bits : {512, 256}) {
    SCOPED_TRACE(bits);
    Target t = target_with_bits(bits);
    Graph g;
    ValueId x = g.add_input("x", {{1, 8, 9, 9}, f32});
    ValueId e = g.add("expand", "conv2d", conv({0, 0, 0, 0}),
                      {x, param(g, "we", {24, 8, 1, 1}, 1), param(g, "be", {24}, 2)});
    ValueId hs = g.add("hswish", "hard_swish", Attrs(), {e});
    ValueId dw = g.add("dw", "conv2d", conv({1, 1, 1, 1}, {1, 1}, 24),
                       {hs, param(g, "wd", {24, 1, 3, 3}, 3)});
    ValueId sq = g.add("squeeze", "global_avg_pool2d", Attrs(), {dw});
    ValueId r = g.add("reduce", "conv2d", conv({0, 0, 0, 0}),
                      {sq, param(g, "wr", {8, 24, 1, 1}, 4), param(g, "br", {8}, 5)});
    ValueId rr = g.add("rrelu", "relu", Attrs(), {r});
    ValueId ex = g.add("excite", "conv2d", conv({0, 0, 0, 0}),
                       {rr, param(g, "wx", {24, 8, 1, 1}, 6), param(g, "bx", {24}, 7)});
    ValueId hsig = g.add("hsig", "hard_sigmoid",
                         Attrs("hard_sigmoid", {{"alpha", 1.0 / 6}, {"beta", 0.5}}), {ex});
    ValueId se = g.add("se", "mul", Attrs(), {dw, hsig});
    ValueId pr =
        g.add("project", "conv2d", conv({0, 0, 0, 0}), {se, param(g, "wp", {20, 24, 1, 1}, 8)});
    ValueId lr = g.add("lrelu", "leaky_relu", Attrs("leaky_relu", {{"alpha", 0.1}}), {pr});
    ValueId sc = g.add("scale", "mul", Attrs(), {lr, param(g, "s", {20, 1, 1}, 9)});
    ValueId sh = g.add("shift", "add", Attrs(), {sc, param(g, "h", {1, 20, 1, 1}, 10)});
    ValueId dv = g.add("div", "div", Attrs(),
                       {sh, g.add_constant("sqrt2", random_array({}, 11, 1.3f, 1.5f))});
    ValueId ef = g.add("erf", "erf", Attrs(), {dv});
    ValueId pl = g.add("prelu", "prelu", Attrs(), {ef, param(g, "slope", {20, 1, 1}, 12)});
    ValueId out =
        g.add("last", "conv2d", conv({0, 0, 0, 0}), {pl, param(g, "wl", {12, 20, 1, 1}, 13)});
    g.add_output(out);
    Graph a = alter_layout(simplify_inference(g), t);
    EXPECT_EQ(count_op(a, "div"), 0) << a.str();  // a multiplication by the reciprocal
    EXPECT_EQ(transforms(a), std::make_pair(1, 1)) << a.str();
    expect_same_outputs(g, a);
    expect_same_outputs(g, fold_constants(a));
  }
}

// Channel concats run blocked (the inputs' blocks end to end), also when the last input does not
// fill its last block; an unfolded batch norm after the concat is a blocked mul and add. A concat
// whose non-last input does not fill whole blocks (18 channels in blocks of 16) reads NCHW.
TEST(AlterLayout, ChannelConcatAndUnfoldedBatchNormStayBlocked) {
  Target t = target_with_bits(512);
  for (int64_t c2 : {16, 12}) {
    SCOPED_TRACE(c2);
    Graph g;
    ValueId x = g.add_input("x", {{1, 8, 6, 6}, f32});
    ValueId a1 = g.add("a1", "conv2d", conv({0, 0, 0, 0}), {x, param(g, "w1", {16, 8, 1, 1}, 1)});
    ValueId a2 = g.add("a2", "conv2d", conv({1, 1, 1, 1}), {x, param(g, "w2", {c2, 8, 3, 3}, 2)});
    ValueId pool = g.add("pool", "max_pool2d",
                         Attrs("max_pool2d", {{"kernel_shape", std::vector<int64_t>{3, 3}},
                                              {"pads", std::vector<int64_t>{1, 1, 1, 1}}}),
                         {a1});
    ValueId cat = g.add("cat", "concat", Attrs("concat", {{"axis", int64_t{1}}}), {a1, pool, a2});
    int64_t C = 32 + c2;
    ValueId bn =
        g.add("bn", "batch_norm", Attrs("batch_norm", {{"epsilon", 1e-5}}),
              {cat, param(g, "gamma", {C}, 3), param(g, "beta", {C}, 4), param(g, "mean", {C}, 5),
               g.add_constant("var", random_array({C}, 6, 0.5f, 1.5f))});
    ValueId r = g.add("relu", "relu", Attrs(), {bn});
    g.add_output(g.add("last", "conv2d", conv({0, 0, 0, 0}), {r, param(g, "wl", {8, C, 1, 1}, 7)}));
    Graph s = simplify_inference(g);
    EXPECT_EQ(count_op(s, "batch_norm"), 0) << s.str();
    Graph a = alter_layout(s, t);
    // 12 channels pad to a block of 16, the concat's (the last convolution reads it as it is).
    EXPECT_EQ(transforms(a), std::make_pair(1, 1)) << a.str();
    expect_same_outputs(g, a);
    expect_same_outputs(g, fold_constants(a));
  }
  // 18 channels first: the second input starts inside a block, so the concat is a selection.
  Graph g;
  ValueId x = g.add_input("x", {{1, 8, 6, 6}, f32});
  ValueId a1 = g.add("a1", "conv2d", conv({0, 0, 0, 0}), {x, param(g, "w1", {18, 8, 1, 1}, 1)});
  ValueId a2 = g.add("a2", "conv2d", conv({0, 0, 0, 0}), {x, param(g, "w2", {16, 8, 1, 1}, 2)});
  ValueId cat = g.add("cat", "concat", Attrs("concat", {{"axis", int64_t{1}}}), {a1, a2});
  g.add_output(
      g.add("last", "conv2d", conv({0, 0, 0, 0}), {cat, param(g, "wl", {8, 34, 1, 1}, 7)}));
  Graph a = alter_layout(g, t);
  EXPECT_EQ(count_op(a, "select_channels_nchwc"), 1);
  EXPECT_EQ(transforms(a).second, 1) << a.str();  // the output
  expect_same_outputs(g, a);
}

// ShuffleNet's unit: the channel split (two slices), the concat and the channel shuffle (reshape,
// transpose, reshape) run blocked as select_channels_nchwc, the slice feeding the concat and the
// concat feeding the shuffle folded into one selection; the head's mean over H and W is a blocked
// global pool. Channels that blocks of 16 pad (2 x 12) and a block of 4 on the input side.
TEST(AlterLayout, ChannelSplitShuffleAndSpatialMeanStayBlocked) {
  Target t = target_with_bits(512);
  for (int64_t C : {24, 32}) {
    SCOPED_TRACE(C);
    Graph g;
    ValueId x = g.add_input("x", {{1, 4, 6, 6}, f32});
    ValueId s = g.add("stem", "conv2d", conv({0, 0, 0, 0}), {x, param(g, "w0", {C, 4, 1, 1}, 1)});
    auto half = [&](const char* name, int64_t begin) {
      return g.add(name, "slice",
                   Attrs("slice", {{"starts", std::vector<int64_t>{begin}},
                                   {"ends", std::vector<int64_t>{begin + C / 2}},
                                   {"axes", std::vector<int64_t>{1}}}),
                   {s});
    };
    ValueId x1 = half("x1", 0), x2 = half("x2", C / 2);
    ValueId y = g.add("branch", "conv2d", conv({0, 0, 0, 0}),
                      {x2, param(g, "w1", {C / 2, C / 2, 1, 1}, 2)});
    ValueId cat = g.add("cat", "concat", Attrs("concat", {{"axis", int64_t{1}}}), {x1, y});
    ValueId r1 =
        g.add("r1", "reshape",
              Attrs("reshape", {{"shape", std::vector<int64_t>{1, 2, C / 2, 6, 6}}}), {cat});
    ValueId tr = g.add("tr", "transpose",
                       Attrs("transpose", {{"perm", std::vector<int64_t>{0, 2, 1, 3, 4}}}), {r1});
    ValueId r2 = g.add("r2", "reshape",
                       Attrs("reshape", {{"shape", std::vector<int64_t>{1, C, 6, 6}}}), {tr});
    ValueId last =
        g.add("last", "conv2d", conv({0, 0, 0, 0}), {r2, param(g, "w2", {16, C, 1, 1}, 3)});
    g.add_output(g.add(
        "mean", "reduce_mean",
        Attrs("reduce_mean", {{"axes", std::vector<int64_t>{-1, 2}}, {"keepdims", int64_t{0}}}),
        {last}));
    g.add_output(g.add("max", "reduce_max",
                       Attrs("reduce_max", {{"axes", std::vector<int64_t>{2, 3}}}), {last}));
    Graph a = eliminate_dead_code(alter_layout(g, t));
    // x2, and the concat of x1 and y shuffled: one selection each (x1 and the concat are folded
    // into the shuffle).
    EXPECT_EQ(count_op(a, "select_channels_nchwc"), 2) << a.str();
    for (const char* op : {"slice", "concat", "transpose", "reduce_mean", "reduce_max"})
      EXPECT_EQ(count_op(a, op), 0) << op << "\n" << a.str();
    EXPECT_EQ(count_op(a, "global_avg_pool2d_nchwc"), 1);
    EXPECT_EQ(count_op(a, "global_max_pool2d_nchwc"), 1);
    // In: the input; out: the two pooled outputs.
    EXPECT_EQ(transforms(a), std::make_pair(1, 2)) << a.str();
    expect_same_outputs(g, a);
    expect_same_outputs(g, fold_constants(a));
  }
}

// ConvNeXt's permute back from channels-last: the transpose to NCHW gets a blocked form, so the
// per-channel scale and the residual add after it run blocked (no conversion of the residual).
TEST(AlterLayout, TransposeFromNhwcFeedsBlockedOps) {
  Target t = target_with_bits(512);
  Graph g;
  ValueId x = g.add_input("x", {{1, 16, 5, 5}, f32});
  ValueId nhwc = g.add_input("nhwc", {{1, 5, 5, 16}, f32});
  ValueId c = g.add("c", "conv2d", conv({0, 0, 0, 0}), {x, param(g, "w0", {16, 16, 1, 1}, 1)});
  ValueId tr = g.add("tr", "transpose",
                     Attrs("transpose", {{"perm", std::vector<int64_t>{0, 3, 1, 2}}}), {nhwc});
  ValueId scaled = g.add("scale", "mul", Attrs(), {tr, param(g, "gamma", {16, 1, 1}, 2)});
  ValueId sum = g.add("res", "add", Attrs(), {scaled, c});
  g.add_output(
      g.add("last", "conv2d", conv({0, 0, 0, 0}), {sum, param(g, "w1", {8, 16, 1, 1}, 3)}));
  Graph a = eliminate_dead_code(alter_layout(g, t));
  for (const Node& n : a.nodes()) {
    if (n.op == "add" || n.op == "mul") {
      EXPECT_EQ(a.value(n.outputs[0]).type.shape.size(), 5u) << n.name << "\n" << a.str();
    }
  }
  // In: x, and the transposed tensor into its block; out: the output.
  EXPECT_EQ(transforms(a), std::make_pair(2, 1)) << a.str();
  expect_same_outputs(g, a);
}

// Spatial pads run on the blocked form (Inception's padded average pools); a pad by zero is
// removed by simplify_inference; a pad of the channels reads NCHW.
TEST(AlterLayout, SpatialPadStaysBlocked) {
  Target t = target_with_bits(512);
  auto pad = [](std::vector<int64_t> pads, const char* mode) {
    return Attrs("pad", {{"pads", pads}, {"mode", std::string(mode)}, {"value", 0.5}});
  };
  Graph g;
  ValueId x = g.add_input("x", {{1, 8, 6, 6}, f32});
  ValueId c = g.add("c", "conv2d", conv({0, 0, 0, 0}), {x, param(g, "w", {16, 8, 1, 1}, 1)});
  ValueId z = g.add("zero", "pad", pad({0, 0, 0, 0, 0, 0, 0, 0}, "constant"), {c});
  ValueId p1 = g.add("p1", "pad", pad({0, 0, 1, 2, 0, 0, 2, 1}, "constant"), {z});
  ValueId p2 = g.add("p2", "pad", pad({0, 0, 1, 1, 0, 0, 0, 1}, "reflect"), {p1});
  ValueId pool = g.add("pool", "avg_pool2d",
                       Attrs("avg_pool2d", {{"kernel_shape", std::vector<int64_t>{3, 3}}}), {p2});
  g.add_output(
      g.add("last", "conv2d", conv({0, 0, 0, 0}), {pool, param(g, "wl", {8, 16, 1, 1}, 2)}));
  ValueId pc = g.add("pc", "pad", pad({0, 1, 0, 0, 0, 1, 0, 0}, "constant"), {c});
  g.add_output(pc);
  Graph s = simplify_inference(g);
  EXPECT_EQ(count_op(s, "pad"), 3) << s.str();
  Graph a = alter_layout(s, t);
  // In: x. Out: the last conv's output, and c for the channel pad.
  EXPECT_EQ(transforms(a), std::make_pair(1, 2)) << a.str();
  expect_same_outputs(g, a);
}

// matmul against a constant [K, N] (a Linear layer over a sequence) is dense_packed over the
// packed transpose, at any rank of A; B given transposed or with unit batch dimensions also is.
// matmul of two activations, a trans_a one and a B with a real batch stay matmul.
TEST(AlterLayout, MatmulWithConstantWeightIsPacked) {
  Target t = target_with_bits(512);
  Graph g;
  ValueId x = g.add_input("x", {{1, 9, 6}, f32});
  ValueId s = g.add_input("s", {{7, 1, 6}, f32});
  auto mm = [&](const std::string& name, ValueId a, ValueId b, int64_t trans_a, int64_t trans_b) {
    return g.add(name, "matmul", Attrs("matmul", {{"trans_a", trans_a}, {"trans_b", trans_b}}),
                 {a, b});
  };
  ValueId q = mm("q", x, param(g, "wq", {6, 20}, 1), 0, 0);      // [1, 9, 20]
  ValueId k = mm("k", x, param(g, "wk", {20, 6}, 2), 0, 1);      // trans_b: [1, 9, 20]
  ValueId v = mm("v", s, param(g, "wv", {1, 6, 20}, 3), 0, 0);   // seq-first: [7, 1, 20]
  ValueId r = mm("r", param(g, "a0", {4, 9}, 4), x, 0, 0);       // constant A: [1, 4, 6]
  ValueId att = mm("att", q, k, 0, 1);                           // two activations
  ValueId bb = mm("bb", s, param(g, "wb", {7, 6, 3}, 5), 0, 0);  // B with a real batch
  ValueId ta = mm("ta", x, param(g, "wt", {9, 4}, 6), 1, 0);     // trans_a
  for (ValueId o : {q, v, r, att, bb, ta}) g.add_output(o);
  Graph a = alter_layout(g, t);
  EXPECT_EQ(count_op(a, "dense_packed"), 3) << a.str();
  EXPECT_EQ(count_op(a, "matmul"), 4) << a.str();
  expect_same_outputs(g, a);
  Graph folded = fold_constants(a);
  EXPECT_EQ(count_op(folded, "dense_pack_weight"), 0) << folded.str();
  EXPECT_EQ(count_op(folded, "transpose"), 0) << folded.str();
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
