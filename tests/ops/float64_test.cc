// float64 through the compiled arithmetic ops (convolutions, products, pools, normalizations,
// softmax) on their plain x86 schedules, against the double-precision references.
//
// Tolerance 1e-12 * (1 + |want|): a float32 step anywhere (a constant, an accumulator, a
// reference rounding its result) is off by about 1e-7 and fails it.
#include <gtest/gtest.h>

#include "ops_testing.h"
#include "testing/errors.h"

namespace anvil::ops {
namespace {

using ir::DataType;
using ops_testing::check_op;
using ops_testing::CheckOptions;

const DataType f64 = DataType::Float(64);

CheckOptions exact_to_double() {
  CheckOptions o;
  o.tol = 1e-12;
  o.gpu = false;
  return o;
}

std::vector<TensorType> f64_types(const std::vector<std::vector<int64_t>>& shapes) {
  std::vector<TensorType> types;
  for (const std::vector<int64_t>& s : shapes) types.push_back({s, f64});
  return types;
}

TEST(Float64, Convolutions) {
  using V = std::vector<int64_t>;
  // Padded with bias; strided (the phased source); grouped; depthwise; dilated.
  check_op("conv2d", f64_types({{1, 5, 11, 13}, {7, 5, 3, 3}, {7}}),
           Attrs("conv2d", {{"pads", V{1, 1, 1, 1}}}), exact_to_double());
  check_op("conv2d", f64_types({{2, 3, 16, 15}, {8, 3, 7, 7}}),
           Attrs("conv2d", {{"pads", V{3, 3, 3, 3}}, {"strides", V{2, 2}}}), exact_to_double());
  check_op("conv2d", f64_types({{1, 8, 9, 9}, {12, 2, 3, 3}, {12}}),
           Attrs("conv2d", {{"group", int64_t{4}}, {"pads", V{0, 1, 2, 1}}}), exact_to_double());
  check_op("conv2d", f64_types({{1, 6, 10, 10}, {6, 1, 5, 5}}),
           Attrs("conv2d", {{"group", int64_t{6}}, {"pads", V{2, 2, 2, 2}}, {"strides", V{2, 2}}}),
           exact_to_double());
  check_op("conv2d", f64_types({{1, 4, 12, 12}, {4, 4, 3, 3}}),
           Attrs("conv2d", {{"dilations", V{2, 2}}}), exact_to_double());
  check_op("conv1d", f64_types({{2, 4, 30}, {6, 4, 5}, {6}}),
           Attrs("conv1d", {{"pads", V{2, 2}}, {"strides", V{3}}}), exact_to_double());
  check_op("conv2d_transpose", f64_types({{1, 6, 5, 7}, {6, 4, 4, 4}, {4}}),
           Attrs("conv2d_transpose", {{"strides", V{2, 2}}, {"pads", V{1, 1, 1, 1}}}),
           exact_to_double());
}

TEST(Float64, Products) {
  // dense: the dot path (few rows) and the packed tile (8 rows or more), with bias.
  check_op("dense", f64_types({{1, 300}, {70, 300}, {70}}), Attrs("dense", {}), exact_to_double());
  check_op("dense", f64_types({{19, 64}, {45, 64}, {45}}), Attrs("dense", {}), exact_to_double());
  check_op("matmul", f64_types({{3, 1, 17, 40}, {2, 40, 33}}), Attrs("matmul", {}),
           exact_to_double());
  check_op("matmul", f64_types({{12, 29}, {21, 29}}), Attrs("matmul", {{"trans_b", int64_t{1}}}),
           exact_to_double());
  check_op("batch_matmul", f64_types({{4, 24, 10}, {4, 24, 16}}),
           Attrs("batch_matmul", {{"trans_a", int64_t{1}}}), exact_to_double());
}

TEST(Float64, Pools) {
  using V = std::vector<int64_t>;
  check_op("max_pool2d", f64_types({{1, 3, 17, 19}}),
           Attrs("max_pool2d", {{"kernel_shape", V{3, 3}},
                                {"strides", V{2, 2}},
                                {"pads", V{1, 1, 1, 1}},
                                {"ceil_mode", int64_t{1}}}),
           exact_to_double());
  // The average divides by a count that varies at the edges.
  check_op("avg_pool2d", f64_types({{2, 4, 13, 16}}),
           Attrs("avg_pool2d", {{"kernel_shape", V{3, 3}}, {"pads", V{1, 1, 1, 1}}}),
           exact_to_double());
  check_op("global_avg_pool2d", f64_types({{1, 16, 7, 7}}), Attrs("global_avg_pool2d", {}),
           exact_to_double());
  check_op("global_max_pool2d", f64_types({{2, 5, 9, 4}}), Attrs("global_max_pool2d", {}),
           exact_to_double());
}

TEST(Float64, Normalizations) {
  CheckOptions positive = exact_to_double();  // batch_norm's variance must be positive
  positive.lo = 0.25;
  positive.hi = 2.0;
  check_op("batch_norm", f64_types({{2, 6, 5, 7}, {6}, {6}, {6}, {6}}), Attrs("batch_norm", {}),
           positive);
  // layer_norm over one axis of a multiple of 16 (interleaved partial sums) and over two axes.
  check_op("layer_norm", f64_types({{2, 7, 96}, {96}, {96}}), Attrs("layer_norm", {}),
           exact_to_double());
  check_op("layer_norm", f64_types({{3, 5, 9}, {5, 9}}),
           Attrs("layer_norm", {{"axis", int64_t{1}}}), exact_to_double());
  check_op("instance_norm", f64_types({{2, 3, 6, 10}, {3}, {3}}), Attrs("instance_norm", {}),
           exact_to_double());
}

TEST(Float64, Softmax) {
  CheckOptions wide = exact_to_double();
  wide.lo = -20;
  wide.hi = 20;
  check_op("softmax", f64_types({{6, 1000}}), Attrs("softmax", {}), wide);
  check_op("softmax", f64_types({{3, 12, 5}}), Attrs("softmax", {{"axis", int64_t{1}}}), wide);
  check_op("log_softmax", f64_types({{4, 77}}), Attrs("log_softmax", {}), wide);
}

// Operands of two float widths are refused by name, not computed at one of them.
TEST(Float64, MixedWidthsAreRefused) {
  const DataType f32 = DataType::Float32();
  Attrs none("conv2d", {});
  testing::expect_has(testing::user_error([&] {
                        lookup("conv2d").infer({{{1, 2, 5, 5}, f64}, {{3, 2, 3, 3}, f32}}, none);
                      }),
                      "conv2d: input 1 must be float64 like input 0, not float32[3, 2, 3, 3]");
  testing::expect_has(testing::user_error([&] {
                        lookup("dense").infer({{{1, 8}, f32}, {{4, 8}, f64}}, Attrs("dense", {}));
                      }),
                      "dense: input 1 must be float32 like input 0, not float64");
  testing::expect_has(
      testing::user_error([&] {
        lookup("layer_norm").infer({{{2, 8}, f64}, {{8}, f32}}, Attrs("layer_norm", {}));
      }),
      "layer_norm: input 'scale' must be float64 like input 'x', not float32");
  testing::expect_has(
      testing::user_error([&] {
        lookup("conv2d").infer({{{1, 2, 5, 5}, DataType::Int(8)}, {{3, 2, 3, 3}, f64}}, none);
      }),
      "conv2d: input 0 must be float32 or float64, not int8[1, 2, 5, 5]");
}

}  // namespace
}  // namespace anvil::ops
