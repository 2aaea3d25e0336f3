// FLOP counts (flops.h) against counts worked out by hand from each operator's definition, the
// same layer counted equally in NCHW and after layout alteration, and the measured peak.
#include "anvil/graph/flops.h"

#include <gtest/gtest.h>

#include "anvil/graph/build.h"
#include "anvil/support/error.h"
#include "graph/passes_testing.h"

namespace anvil::graph {
namespace {

using ops::Attrs;
using ops::TensorType;
using pt::f32;
using pt::random_array;

TensorType t(std::vector<int64_t> shape) {
  return {std::move(shape), f32};
}

TEST(Flops, Convolutions) {
  // 3x3, 3 -> 16 channels, 32x32 output: 2 * (16*32*32 outputs) * (3*3*3 taps), + 1 per output
  // for the bias.
  Attrs pads("conv2d", {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  EXPECT_EQ(op_flops("conv2d", {t({1, 3, 32, 32}), t({16, 3, 3, 3})}, {t({1, 16, 32, 32})}, pads),
            2.0 * 16384 * 27);
  EXPECT_EQ(op_flops("conv2d", {t({1, 3, 32, 32}), t({16, 3, 3, 3}), t({16})}, {t({1, 16, 32, 32})},
                     pads),
            2.0 * 16384 * 27 + 16384);
  // Two groups of 2 input channels: each output reads 2 channels x 9 taps.
  EXPECT_EQ(op_flops("conv2d", {t({1, 4, 8, 8}), t({6, 2, 3, 3})}, {t({1, 6, 6, 6})},
                     Attrs("conv2d", {{"group", int64_t{2}}})),
            2.0 * 216 * 18);
  EXPECT_EQ(op_flops("conv1d", {t({2, 3, 10}), t({5, 3, 4})}, {t({2, 5, 7})}, Attrs()),
            2.0 * 70 * 12);
  // Transposed: every input element scattered to O/group x KH x KW outputs.
  EXPECT_EQ(op_flops("conv2d_transpose", {t({1, 4, 5, 5}), t({4, 2, 3, 3})}, {t({1, 2, 11, 11})},
                     Attrs("conv2d_transpose", {{"strides", std::vector<int64_t>{2, 2}}})),
            2.0 * 100 * 18);
}

TEST(Flops, BlockedConvolutionsCountTheDirectConvolution) {
  // 8 -> 16 channels, 3x3, 6x6 output, as conv2d_nchwc with blocks 4 and 8: the NCHW count.
  double nchw = 2.0 * (16 * 36) * (8 * 9);
  EXPECT_EQ(op_flops("conv2d_nchwc", {t({1, 2, 8, 8, 4}), t({2, 2, 3, 3, 4, 8})},
                     {t({1, 2, 6, 6, 8})}, Attrs()),
            nchw);
  // Winograd reports the direct convolution's count (so it may exceed the peak).
  EXPECT_EQ(op_flops("conv2d_winograd_nchwc", {t({1, 2, 8, 8, 4}), t({6, 6, 2, 8, 8})},
                     {t({1, 2, 6, 6, 8})}, Attrs()),
            nchw);
  // conv2d_winograd (NCHW, 8 -> 16 channels, with a bias): the direct count plus one add per
  // output.
  EXPECT_EQ(op_flops("conv2d_winograd", {t({1, 8, 8, 8}), t({6, 6, 16, 8, 1}), t({16})},
                     {t({1, 16, 6, 6})}, Attrs()),
            nchw + 16 * 36);
  // Depthwise 3x3 over 32 channels: 9 taps per output.
  EXPECT_EQ(op_flops("depthwise_conv2d_nchwc", {t({1, 2, 10, 10, 16}), t({2, 1, 3, 3, 1, 16})},
                     {t({1, 2, 8, 8, 16})}, Attrs()),
            2.0 * 2048 * 9);
  // DCGAN-style 4x4 stride-2 transposed convolution, 16 -> 8 channels on a 4x4 input: as the
  // NCHW conv2d_transpose of x [1, 16, 4, 4] and w [16, 8, 4, 4].
  Attrs deconv("conv2d_transpose_nchwc", {{"kernel_shape", std::vector<int64_t>{4, 4}},
                                          {"strides", std::vector<int64_t>{2, 2}},
                                          {"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  double direct = op_flops("conv2d_transpose", {t({1, 16, 4, 4}), t({16, 8, 4, 4})},
                           {t({1, 8, 8, 8})}, Attrs());
  EXPECT_EQ(direct, 2.0 * 256 * 128);
  EXPECT_EQ(op_flops("conv2d_transpose_nchwc", {t({1, 2, 4, 4, 8}), t({1, 2, 2, 2, 8, 2, 2, 8})},
                     {t({1, 1, 8, 8, 8})}, deconv),
            direct);
}

TEST(Flops, MatrixProductsAndRecurrentLayers) {
  EXPECT_EQ(op_flops("dense", {t({2, 10}), t({5, 10}), t({5})}, {t({2, 5})}, Attrs()), 210.0);
  EXPECT_EQ(op_flops("dense_packed", {t({1, 3136}), t({32, 3136, 16})}, {t({1, 512})}, Attrs()),
            2.0 * 512 * 3136);
  EXPECT_EQ(op_flops("matmul", {t({3, 4, 6}), t({6, 5})}, {t({3, 4, 5})}, Attrs()), 2.0 * 60 * 6);
  EXPECT_EQ(op_flops("batch_matmul", {t({3, 6, 4}), t({3, 6, 5})}, {t({3, 4, 5})},
                     Attrs("batch_matmul", {{"trans_a", int64_t{1}}})),
            2.0 * 60 * 6);
  // lstm_lm's first layer: 35 steps, batch 1, hidden 650, input 650; 4 gates, each an input and a
  // recurrent product.
  EXPECT_EQ(op_flops("lstm", {t({35, 1, 650}), t({1, 2600, 650}), t({1, 2600, 650})},
                     {t({35, 1, 1, 650}), t({1, 1, 650}), t({1, 1, 650})}, Attrs()),
            35 * 4 * 650 * (2.0 * 650 + 2.0 * 650));
  // A bidirectional gru: 3 gates, two directions, input 10, hidden 8, batch 2, 5 steps.
  EXPECT_EQ(op_flops("gru", {t({5, 2, 10}), t({2, 24, 10}), t({2, 24, 8})},
                     {t({5, 2, 2, 8}), t({2, 2, 8})}, Attrs()),
            5 * 2 * 2 * 24 * (2.0 * 10 + 2.0 * 8));
}

TEST(Flops, PoolsReductionsElementwiseAndDataMovement) {
  Attrs pool("max_pool2d", {{"kernel_shape", std::vector<int64_t>{3, 3}},
                            {"strides", std::vector<int64_t>{2, 2}}});
  EXPECT_EQ(op_flops("max_pool2d", {t({1, 8, 9, 9})}, {t({1, 8, 4, 4})}, pool), 128.0 * 9);
  EXPECT_EQ(op_flops("avg_pool2d_nchwc", {t({1, 1, 9, 9, 8})}, {t({1, 1, 4, 4, 8})}, pool),
            128.0 * 9);
  EXPECT_EQ(op_flops("global_avg_pool2d", {t({1, 8, 7, 7})}, {t({1, 8, 1, 1})}, Attrs()), 392.0);
  EXPECT_EQ(op_flops("reduce_sum", {t({4, 6})}, {t({4})}, Attrs()), 24.0);
  EXPECT_EQ(op_flops("softmax", {t({2, 10})}, {t({2, 10})}, Attrs()), 80.0);
  EXPECT_EQ(op_flops("relu", {t({2, 3})}, {t({2, 3})}, Attrs()), 6.0);
  EXPECT_EQ(op_flops("add", {t({2, 3}), t({3})}, {t({2, 3})}, Attrs()), 6.0);
  EXPECT_EQ(op_flops("batch_norm", {t({1, 4, 2, 2})}, {t({1, 4, 2, 2})}, Attrs()), 32.0);
  for (const char* op : {"reshape", "transpose", "concat", "layout_transform", "flatten",
                         "dense_pack_weight", "conv2d_nchwc_pack_weight", "cast", "pad"})
    EXPECT_EQ(op_flops(op, {t({2, 3})}, {t({3, 2})}, Attrs()), 0.0) << op;
}

TEST(Flops, OperandsOfTheWrongRankAreErrorsNamingTheOp) {
  try {
    op_flops("conv2d_nchwc", {t({1, 2, 8, 8, 4}), t({2, 2})}, {t({1, 2, 6, 6, 8})}, Attrs());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'conv2d_nchwc' needs input 1 of rank at least 6"),
              std::string::npos)
        << e.what();
  }
}

// The count is the model's arithmetic: the same before and after the graph passes (layout
// alteration, Winograd, packed dense), and each kernel carries the sum of its nodes.
TEST(Flops, GraphCountSurvivesOptimizationAndFusion) {
  Graph g;
  ValueId x = g.add_input("x", {{1, 16, 14, 14}, f32});
  Attrs pads("conv2d", {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  ValueId c1 =
      g.add("c1", "conv2d", pads, {x, g.add_constant("w1", random_array({32, 16, 3, 3}, 1))});
  ValueId r1 = g.add("r1", "relu", Attrs(), {c1});
  ValueId c2 =
      g.add("c2", "conv2d", Attrs(), {r1, g.add_constant("w2", random_array({32, 32, 1, 1}, 2))});
  ValueId f = g.add("f", "flatten", Attrs(), {g.add("r2", "relu", Attrs(), {c2})});
  g.add_output(
      g.add("fc", "dense", Attrs(), {f, g.add_constant("w3", random_array({10, 6272}, 3))}));
  const double convs = 2.0 * (32 * 196) * (16 * 9) + 2.0 * (32 * 196) * 32;
  const double expected = convs + 2 * 6272.0 + 2.0 * 10 * 6272;
  EXPECT_EQ(graph_flops(g), expected);
  EXPECT_EQ(graph_flops(CompiledGraph::optimize(g, Target::host(), BuildOptions())), expected);

  CompiledGraph cg = CompiledGraph::build(g, Target::host(), BuildOptions());
  double sum = 0;
  for (const CompiledGraph::Kernel& k : cg.kernels()) {
    double nodes = 0;
    for (NodeId n : k.nodes) nodes += node_flops(cg.graph(), n);
    EXPECT_EQ(k.flops, nodes) << k.name;
    sum += k.flops;
  }
  EXPECT_EQ(sum, expected);
}

}  // namespace
}  // namespace anvil::graph
