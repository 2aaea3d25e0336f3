// The graph-to-graph passes: inference simplification, constant folding, dead-code and
// common-subexpression elimination, the pass manager. Each rewriting pass is checked by running
// the graph before and after through a reference evaluator on random inputs.
#include "anvil/graph/passes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "anvil/support/error.h"
#include "graph/passes_testing.h"

namespace anvil::graph {
namespace {

using namespace pt;
using ops::Attrs;

ValueId param(Graph& g, const std::string& name, std::vector<int64_t> shape, uint32_t seed,
              float lo = -1.0f, float hi = 1.0f) {
  return g.add_constant(name, random_array(std::move(shape), seed, lo, hi));
}

// batch_norm with random statistics (variance in [0.5, 1.5]).
ValueId batch_norm(Graph& g, const std::string& name, ValueId x, int64_t C, uint32_t seed) {
  ValueId s = param(g, name + "_gamma", {C}, seed, 0.5f, 1.5f);
  ValueId b = param(g, name + "_beta", {C}, seed + 1);
  ValueId m = param(g, name + "_mean", {C}, seed + 2);
  ValueId v = param(g, name + "_var", {C}, seed + 3, 0.5f, 1.5f);
  return g.add(name, "batch_norm", Attrs("batch_norm", {{"epsilon", 1e-3}}), {x, s, b, m, v});
}

Attrs conv_attrs(std::vector<int64_t> pads = {1, 1, 1, 1}, int64_t group = 1) {
  return Attrs("conv2d", {{"pads", pads}, {"group", group}});
}

TEST(SimplifyInference, FoldsBatchNormIntoConvWithAndWithoutBias) {
  Graph g;
  ValueId x = g.add_input("x", {{1, 3, 8, 8}, f32});
  ValueId c1 = g.add("conv1", "conv2d", conv_attrs(),
                     {x, param(g, "w1", {8, 3, 3, 3}, 1), param(g, "b1", {8}, 2)});
  ValueId r = g.add("relu", "relu", Attrs(), {batch_norm(g, "bn1", c1, 8, 10)});
  ValueId c2 =
      g.add("conv2", "conv2d", conv_attrs({0, 0, 0, 0}, 2), {r, param(g, "w2", {6, 4, 1, 1}, 3)});
  g.add_output(batch_norm(g, "bn2", c2, 6, 20));
  Graph s = simplify_inference(g);
  EXPECT_EQ(count_op(s, "batch_norm"), 0) << s.str();
  EXPECT_EQ(count_op(s, "conv2d"), 2);
  EXPECT_NE(s.find("bn2"), -1) << "the output keeps its name";
  expect_same_outputs(g, s);
}

TEST(SimplifyInference, FoldsChannelScalesAndShiftsAfterConv) {
  Graph g;
  ValueId x = g.add_input("x", {{2, 4, 6, 6}, f32});
  ValueId c = g.add("conv", "conv2d", conv_attrs(), {x, param(g, "w", {5, 4, 3, 3}, 1)});
  ValueId m = g.add("scale", "mul", Attrs(), {param(g, "s", {1, 5, 1, 1}, 2), c});
  ValueId a = g.add("shift", "add", Attrs(), {m, param(g, "t", {5, 1, 1}, 3)});
  ValueId k = g.add("scalar", "mul", Attrs(), {a, param(g, "k", {1}, 4)});
  ValueId d = g.add("div", "div", Attrs(), {k, param(g, "dv", {5, 1, 1}, 5, 0.5f, 2.0f)});
  ValueId sb = g.add("sub", "sub", Attrs(), {d, param(g, "sv", {1, 1, 1, 1}, 6)});
  ValueId rs = g.add("rsub", "sub", Attrs(), {param(g, "rv", {1}, 7), sb});  // c - x: kept
  g.add_output(g.add("relu", "relu", Attrs(), {rs}));
  Graph s = simplify_inference(g);
  EXPECT_EQ(count_op(s, "mul") + count_op(s, "add") + count_op(s, "div"), 0) << s.str();
  EXPECT_EQ(count_op(s, "sub"), 1) << s.str();
  expect_same_outputs(g, s);
}

TEST(SimplifyInference, FoldsIntoDenseAndTransposedConv) {
  Graph g;
  ValueId x = g.add_input("x", {{3, 10}, f32});
  ValueId d = g.add("fc", "dense", Attrs(), {x, param(g, "w", {7, 10}, 1), param(g, "b", {7}, 2)});
  g.add_output(batch_norm(g, "bn", d, 7, 5));
  ValueId y = g.add_input("y", {{1, 4, 5, 5}, f32});
  ValueId t = g.add(
      "deconv", "conv2d_transpose",
      Attrs("conv2d_transpose", {{"strides", std::vector<int64_t>{2, 2}}, {"group", int64_t{2}}}),
      {y, param(g, "wt", {4, 3, 4, 4}, 3)});
  g.add_output(batch_norm(g, "bn_t", t, 6, 30));
  Graph s = simplify_inference(g);
  EXPECT_EQ(count_op(s, "batch_norm"), 0) << s.str();
  expect_same_outputs(g, s);
}

// Taps that read only padding are cut: DeepLabv3's atrous convolutions on a small map (dilation
// 6 on 5 x 5: the centre alone, a 1x1 convolution without pads), one side only (dilation 3 with
// asymmetric pads, stride 2), and nothing when every tap reads the input somewhere.
TEST(SimplifyInference, CutsTapsThatReadOnlyPadding) {
  auto dilated = [](std::vector<int64_t> pads, int64_t dil, int64_t stride, int64_t group = 1) {
    return Attrs("conv2d", {{"pads", pads},
                            {"dilations", std::vector<int64_t>{dil, dil}},
                            {"strides", std::vector<int64_t>{stride, stride}},
                            {"group", group}});
  };
  auto kernel_of = [](const Graph& s, const std::string& op_name) {
    for (const Node& n : s.nodes())
      if (n.name.starts_with(op_name)) return s.value(n.inputs[1]).type.shape;
    return std::vector<int64_t>{};
  };
  Graph g;
  ValueId x = g.add_input("x", {{1, 4, 5, 5}, f32});
  g.add_output(g.add("centre", "conv2d", dilated({6, 6, 6, 6}, 6, 1),
                     {x, param(g, "w1", {3, 4, 3, 3}, 1), param(g, "b1", {3}, 2)}));
  g.add_output(g.add("side", "conv2d", dilated({5, 2, 0, 2}, 3, 2, 2),
                     {x, param(g, "w2", {6, 2, 3, 3}, 3)}));
  g.add_output(
      g.add("all", "conv2d", dilated({2, 2, 2, 2}, 2, 1), {x, param(g, "w3", {3, 4, 3, 3}, 4)}));
  Graph s = simplify_inference(g);
  EXPECT_EQ(kernel_of(s, "centre"), (std::vector<int64_t>{3, 4, 1, 1})) << s.str();
  EXPECT_EQ(kernel_of(s, "side"), (std::vector<int64_t>{6, 2, 2, 3})) << s.str();
  EXPECT_EQ(kernel_of(s, "all"), (std::vector<int64_t>{3, 4, 3, 3})) << s.str();
  expect_same_outputs(g, s);
}

// A convolution whose taps mostly read padding is cut into bands of outputs that read the same
// taps where the bands cost less, counting each band's weight as streamed once (on Zen 5 about 43
// multiplies per weight). DeepLabv3's atrous rate 12 on a 14 x 14 map: three bands of rows (2 rows
// reading 2 rows of taps, 10 reading the centre row, 2 reading 2); the middle band is cut again
// into columns, the outer ones are not (their 4 x 2 corners would re-read 4 taps for 4 outputs).
// 516 of the 1,764 tap positions remain. Its batch norm folded before. A stride-2 convolution
// with asymmetric pads is cut along one axis; a dilation of 2 stays whole.
TEST(CutConvBands, CutsWhereTheBandsCostLess) {
  Target zen5 = Target::parse("llvm -mcpu=znver5");
  auto dilated = [](std::vector<int64_t> pads, int64_t dil, int64_t stride) {
    return Attrs("conv2d", {{"pads", pads},
                            {"dilations", std::vector<int64_t>{dil, dil}},
                            {"strides", std::vector<int64_t>{stride, stride}}});
  };
  // Output positions times taps over the convolutions of a graph.
  auto multiplies_per_channel = [](const Graph& s) {
    int64_t m = 0;
    for (const Node& n : s.nodes()) {
      if (n.op != "conv2d") continue;
      const std::vector<int64_t>& w = s.value(n.inputs[1]).type.shape;
      const std::vector<int64_t>& y = s.value(n.outputs[0]).type.shape;
      m += y[2] * y[3] * w[2] * w[3];
    }
    return m;
  };
  {
    Graph g;
    ValueId x = g.add_input("x", {{1, 4, 14, 14}, f32});
    ValueId c = g.add("aspp", "conv2d", dilated({12, 12, 12, 12}, 12, 1),
                      {x, param(g, "w", {3, 4, 3, 3}, 1), param(g, "b", {3}, 2)});
    g.add_output(g.add("relu", "relu", Attrs(), {batch_norm(g, "bn", c, 3, 3)}));
    Graph s = cut_conv_bands(simplify_inference(g), zen5);
    EXPECT_EQ(count_op(s, "batch_norm") + count_op(s, "mul"), 0) << s.str();
    EXPECT_EQ(count_op(s, "conv2d"), 5) << s.str();
    EXPECT_EQ(count_op(s, "concat"), 2) << s.str();
    EXPECT_EQ(multiplies_per_channel(s), 516) << s.str();
    expect_same_outputs(g, s);
  }
  {
    Graph g;
    ValueId x = g.add_input("x", {{1, 2, 9, 64}, f32});
    // H: 5 outputs at stride 2 over 9 rows with pads 8 and dilation 8: 7 of 15 tap positions
    // live, in 3 bands. W: pads 1, dilation 1: every tap reads the input at 62 of 64 outputs.
    Attrs a("conv2d", {{"pads", std::vector<int64_t>{8, 1, 8, 1}},
                       {"dilations", std::vector<int64_t>{8, 1}},
                       {"strides", std::vector<int64_t>{2, 1}}});
    g.add_output(g.add("one_axis", "conv2d", a, {x, param(g, "w", {5, 2, 3, 3}, 4)}));
    g.add_output(g.add("whole", "conv2d", dilated({2, 2, 2, 2}, 2, 1),
                       {x, param(g, "w2", {3, 2, 3, 3}, 5)}));
    Graph s = cut_conv_bands(g, zen5);
    EXPECT_EQ(count_op(s, "concat"), 1) << s.str();
    EXPECT_EQ(count_op(s, "conv2d"), 4) << s.str();  // 3 bands and the whole one
    expect_same_outputs(g, s);
  }
}

// The GELU exporters spell out becomes one gelu, in PyTorch's order (x / sqrt 2, erf, + 1, * x,
// * 0.5), with the half taken first, and with x times 1 / sqrt 2; not when an intermediate value
// is read elsewhere, or with another constant.
TEST(SimplifyInference, RecognizesGelu) {
  auto scalar = [](Graph& g, const std::string& name, float v) {
    runtime::NDArray a = runtime::NDArray::empty({}, runtime::dl_float32());
    a.data_as<float>()[0] = v;
    return g.add_constant(name, a);
  };
  for (int form = 0; form < 5; ++form) {
    SCOPED_TRACE(form);
    Graph g;
    ValueId in = g.add_input("in", {{2, 8}, f32});
    ValueId x =
        g.add("fc", "dense", Attrs(), {in, param(g, "w", {6, 8}, 1), param(g, "b", {6}, 2)});
    ValueId scaled = form == 2 ? g.add("scale", "mul", Attrs(), {x, scalar(g, "r", 0.70710678f)})
                               : g.add("scale", "div", Attrs(),
                                       {x, scalar(g, "s", form == 4 ? 1.5f : 1.41421356f)});
    ValueId e = g.add("erf", "erf", Attrs(), {scaled});
    ValueId a = g.add("one_plus", "add", Attrs(), {scalar(g, "one", 1.0f), e});
    ValueId y;
    if (form == 1) {
      ValueId h = g.add("half_x", "mul", Attrs(), {scalar(g, "half", 0.5f), x});
      y = g.add("gelu_out", "mul", Attrs(), {a, h});
    } else {
      ValueId m = g.add("times_x", "mul", Attrs(), {x, a});
      y = g.add("gelu_out", "mul", Attrs(), {m, scalar(g, "half", 0.5f)});
    }
    g.add_output(y);
    if (form == 3) g.add_output(g.add("other", "relu", Attrs(), {e}));  // erf read elsewhere
    Graph s = eliminate_dead_code(simplify_inference(g));
    bool expected = form <= 2;
    EXPECT_EQ(count_op(s, "gelu"), expected ? 1 : 0) << s.str();
    EXPECT_EQ(count_op(s, "erf"), expected ? 0 : 1) << s.str();
    expect_same_outputs(g, s);
  }
}

TEST(SimplifyInference, LeavesSharedAndNonConstantOperandsAlone) {
  Graph g;
  ValueId x = g.add_input("x", {{1, 4, 5, 5}, f32});
  ValueId z = g.add_input("z", {{1, 4, 5, 5}, f32});
  ValueId c = g.add("conv", "conv2d", conv_attrs(), {x, param(g, "w", {4, 4, 3, 3}, 1)});
  ValueId bn = batch_norm(g, "bn", c, 4, 3);
  g.add_output(bn);
  g.add_output(g.add("other", "relu", Attrs(), {c}));  // conv output used twice
  ValueId c2 = g.add("conv2", "conv2d", conv_attrs(), {x, param(g, "w2", {4, 4, 3, 3}, 2)});
  g.add_output(g.add("mul_var", "mul", Attrs(), {c2, z}));  // not a constant
  Graph s = simplify_inference(g);
  // The shared conv keeps its batch norm, as a per-channel mul and add (decompose).
  EXPECT_EQ(count_op(s, "batch_norm"), 0);
  EXPECT_EQ(count_op(s, "conv2d"), 2);
  EXPECT_EQ(count_op(s, "mul"), 2);
  EXPECT_EQ(count_op(s, "add"), 1);
  expect_same_outputs(g, s);
}

TEST(FoldConstants, EvaluatesConstantSubgraphs) {
  Graph g;
  ValueId x = g.add_input("x", {{4, 3}, f32});
  ValueId a = param(g, "a", {3, 4}, 1);
  ValueId t =
      g.add("t", "transpose", Attrs("transpose", {{"perm", std::vector<int64_t>{1, 0}}}), {a});
  ValueId e = g.add("e", "exp", Attrs(), {t});
  ValueId y = g.add("y", "add", Attrs(), {x, e});
  g.add_output(y);
  Graph f = fold_constants(g);
  EXPECT_EQ(f.num_nodes(), 1u) << f.str();
  EXPECT_EQ(f.nodes()[0].op, "add");
  EXPECT_EQ(f.find("a"), -1) << "the consumed constant is gone";
  EXPECT_EQ(f.find("t"), -1) << "the chain's intermediate result is not kept";
  expect_same_outputs(g, f);
  // The folded value is the transposed exponential.
  const Value& c = f.value(f.nodes()[0].inputs[1]);
  ASSERT_EQ(c.kind, ValueKind::kConstant);
  EXPECT_EQ(c.type.shape, (std::vector<int64_t>{4, 3}));
  EXPECT_FLOAT_EQ(c.data.data_as<float>()[1 * 3 + 2],
                  std::exp(g.value(a).data.data_as<float>()[2 * 4 + 1]));
}

TEST(FoldConstants, SkipsBroadcastsThatBlowUpTheSize) {
  Graph g;
  ValueId x = g.add_input("x", {{1, 64, 32, 32}, f32});
  ValueId s = param(g, "s", {1}, 1);
  ValueId big = g.add("big", "expand",
                      Attrs("expand", {{"shape", std::vector<int64_t>{1, 64, 32, 32}}}), {s});
  ValueId small =
      g.add("small", "expand", Attrs("expand", {{"shape", std::vector<int64_t>{4, 4}}}), {s});
  g.add_output(g.add("y", "add", Attrs(), {x, big}));
  g.add_output(small);
  Graph f = fold_constants(g);
  EXPECT_EQ(count_op(f, "expand"), 1) << f.str();  // 256 KiB from 4 bytes: kept
  EXPECT_EQ(f.value(f.outputs()[1]).kind, ValueKind::kConstant);
  expect_same_outputs(g, f);
}

TEST(EliminateDeadCode, RemovesNodesThatReachNoOutput) {
  Graph g;
  ValueId x = g.add_input("x", {{8}, f32});
  ValueId dead = g.add("dead", "exp", Attrs(), {x});
  g.add("dead2", "relu", Attrs(), {dead});
  ValueId unused_const = param(g, "unused", {8}, 3);
  g.add("dead3", "add", Attrs(), {x, unused_const});
  g.add_output(g.add("live", "relu", Attrs(), {x}));
  Graph d = eliminate_dead_code(g);
  EXPECT_EQ(d.num_nodes(), 1u) << d.str();
  EXPECT_EQ(d.find("unused"), -1);
  EXPECT_EQ(d.inputs().size(), 1u);
  expect_same_outputs(g, d);
}

TEST(EliminateCommonSubexpressions, MergesIdenticalNodes) {
  Graph g;
  ValueId x = g.add_input("x", {{8}, f32});
  ValueId a1 = g.add("a1", "clip", Attrs("clip", {{"min", 0.0}, {"max", 0.5}}), {x});
  ValueId a2 = g.add("a2", "clip", Attrs("clip", {{"min", 0.0}, {"max", 0.5}}), {x});
  ValueId a3 = g.add("a3", "clip", Attrs("clip", {{"min", 0.0}, {"max", 0.25}}), {x});
  ValueId b1 = g.add("b1", "exp", Attrs(), {a1});
  ValueId b2 = g.add("b2", "exp", Attrs(), {a2});  // the same after a2 -> a1
  ValueId s = g.add("s", "add", Attrs(), {b1, b2});
  g.add_output(g.add("y", "add", Attrs(), {s, a3}));
  Graph c = eliminate_common_subexpressions(g);
  EXPECT_EQ(count_op(c, "clip"), 2) << c.str();
  EXPECT_EQ(count_op(c, "exp"), 1) << c.str();
  expect_same_outputs(g, c);
}

TEST(EliminateCommonSubexpressions, KeepsDuplicateGraphOutputs) {
  Graph g;
  ValueId x = g.add_input("x", {{8}, f32});
  g.add_output(g.add("a", "exp", Attrs(), {x}));
  g.add_output(g.add("b", "exp", Attrs(), {x}));
  Graph c = eliminate_common_subexpressions(g);
  EXPECT_EQ(c.outputs().size(), 2u);
  expect_same_outputs(g, c);
}

TEST(RunPasses, AppliesInOrderAndPrints) {
  Graph g;
  ValueId x = g.add_input("x", {{1, 3, 8, 8}, f32});
  ValueId c = g.add("conv", "conv2d", conv_attrs(), {x, param(g, "w", {4, 3, 3, 3}, 1)});
  ValueId bn = batch_norm(g, "bn", c, 4, 2);
  g.add("dead", "exp", Attrs(), {bn});
  g.add_output(g.add("relu", "relu", Attrs(), {bn}));
  std::vector<Pass> passes = {
      {"dce", eliminate_dead_code},
      {"simplify", simplify_inference},
      {"fold", fold_constants},
  };
  ::testing::internal::CaptureStderr();
  Graph r = run_passes(g, passes, {"simplify"});
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(err, ::testing::HasSubstr("// after simplify"));
  EXPECT_THAT(err, ::testing::Not(::testing::HasSubstr("// after dce")));
  EXPECT_THAT(err, ::testing::HasSubstr("conv2d("));
  EXPECT_EQ(r.num_nodes(), 2u) << r.str();
  expect_same_outputs(g, r);

  ::testing::internal::CaptureStderr();
  run_passes(g, passes, {"all"});
  err = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(err, ::testing::HasSubstr("// after dce"));
  EXPECT_THAT(err, ::testing::HasSubstr("// after fold"));
  EXPECT_THROW(run_passes(g, passes, {"nope"}), anvil::Error);
}

}  // namespace
}  // namespace anvil::graph
