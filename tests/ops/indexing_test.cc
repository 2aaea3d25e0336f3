// gather_elements, grid_sample and trilu against their references (compiled through LLVM), the
// references against hand-computed values, and their errors.
#include <gtest/gtest.h>

#include "ops_testing.h"
#include "testing/errors.h"
#include "testing/kernel_args.h"

namespace anvil::ops {
namespace {

using ir::DataType;
using ops_testing::check_op;
using ops_testing::CheckOptions;
using ops_testing::compiled_error;
using V = std::vector<int64_t>;

const DataType f32 = DataType::Float32();
const DataType i64 = DataType::Int64();

template <typename T>
runtime::NDArray array_of(const std::vector<T>& values, V shape, DataType t) {
  runtime::NDArray a = testing::array(std::move(shape), t);
  testing::write(a, values);
  return a;
}

#define EXPECT_HAS(msg_expr, part)                         \
  do {                                                     \
    std::string msg_ = (msg_expr);                         \
    EXPECT_NE(msg_.find(part), std::string::npos) << msg_; \
  } while (0)

std::string infer_error(const std::string& op, const std::vector<TensorType>& in,
                        std::map<std::string, AttrValue> attrs = {}) {
  return testing::user_error([&] { lookup(op).infer(in, Attrs(op, attrs)); });
}

TEST(GatherElements, TheOnnxExamples) {
  // ONNX's two examples: axis 1 on [[1, 2], [3, 4]], axis 0 on a 3x3 with a negative index.
  runtime::NDArray data = array_of<float>({1, 2, 3, 4}, {2, 2}, f32);
  runtime::NDArray idx = array_of<int64_t>({0, 0, 1, 0}, {2, 2}, i64);
  Attrs axis1("gather_elements", {{"axis", int64_t{1}}});
  std::vector<runtime::NDArray> out = lookup("gather_elements").reference({data, idx}, axis1);
  EXPECT_EQ(testing::read<float>(out[0]), (std::vector<float>{1, 1, 4, 3}));
  CheckOptions opt;
  opt.inputs = {data, idx};
  check_op("gather_elements", {{{2, 2}, f32}, {{2, 2}, i64}}, axis1, opt);

  data = array_of<float>({1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3}, f32);
  idx = array_of<int64_t>({1, 2, 0, 2, 0, -3}, {2, 3}, i64);
  Attrs axis0("gather_elements", {});
  out = lookup("gather_elements").reference({data, idx}, axis0);
  EXPECT_EQ(testing::read<float>(out[0]), (std::vector<float>{4, 8, 3, 7, 2, 3}));
  opt.inputs = {data, idx};
  check_op("gather_elements", {{{3, 3}, f32}, {{2, 3}, i64}}, axis0, opt);
}

TEST(GatherElements, RandomIndicesOnEveryAxis) {
  std::mt19937 rng(5);
  V dshape = {4, 5, 6};
  for (int64_t axis : {0, 1, 2, -1}) {
    SCOPED_TRACE("axis " + std::to_string(axis));
    V ishape = {3, 5, 4};  // smaller than data off the axis
    int64_t n = dshape[static_cast<size_t>(axis < 0 ? axis + 3 : axis)];
    ishape[static_cast<size_t>(axis < 0 ? axis + 3 : axis)] = 7;  // the axis may be longer
    std::uniform_int_distribution<int64_t> d(-n, n - 1);
    runtime::NDArray indices = testing::array(ishape, i64);
    for (int64_t i = 0; i < indices.numel(); ++i) indices.data_as<int64_t>()[i] = d(rng);
    CheckOptions opt;
    opt.inputs = {ops_testing::random_array({dshape, f32}, rng), indices};
    check_op("gather_elements", {{dshape, f32}, {ishape, i64}},
             Attrs("gather_elements", {{"axis", axis}}), opt);
  }
}

TEST(GatherElements, Errors) {
  EXPECT_HAS(infer_error("gather_elements", {{{2, 3}, f32}, {{2}, i64}}),
             "gather_elements: indices [2] must have the rank of data [2, 3]");
  EXPECT_HAS(infer_error("gather_elements", {{{2, 3}, f32}, {{2, 4}, i64}}),
             "gather_elements: indices [2, 4] exceed data [2, 3] in dimension 1");
  EXPECT_HAS(infer_error("gather_elements", {{{2, 3}, f32}, {{2, 3}, f32}}),
             "gather_elements: indices must be int32 or int64, not float32");
  EXPECT_HAS(infer_error("gather_elements", {{{2, 3}, f32}, {{2, 3}, i64}}, {{"axis", int64_t{2}}}),
             "gather_elements: attribute 'axis'");
  runtime::NDArray data = array_of<float>({1, 2, 3, 4}, {2, 2}, f32);
  runtime::NDArray idx = array_of<int64_t>({0, 2, 1, 0}, {2, 2}, i64);
  EXPECT_HAS(testing::user_error([&] {
               lookup("gather_elements")
                   .reference({data, idx}, Attrs("gather_elements", {{"axis", int64_t{1}}}));
             }),
             "gather_elements: index 2 is out of range for axis 1 of size 2");
}

// Compiled code checks indices at run time, as the reference does: the kernel fails naming the op
// and the valid range, in place of reading a clamped element (gather: transform_test.cc).
TEST(GatherElements, CompiledCodeRefusesOutOfRangeIndices) {
  runtime::NDArray data = array_of<float>({1, 2, 3, 4, 5, 6}, {2, 3}, f32);
  Attrs axis1("gather_elements", {{"axis", int64_t{1}}});
  EXPECT_EQ(compiled_error("gather_elements", {data, array_of<int64_t>({0, -3, 2, 1}, {2, 2}, i64)},
                           axis1),
            "");
  EXPECT_HAS(compiled_error("gather_elements", {data, array_of<int64_t>({0, 1, 3, 1}, {2, 2}, i64)},
                            axis1),
             "gather_elements: an index is out of range for axis 1 of size 3 (valid: -3 to 2)");
  EXPECT_HAS(compiled_error("gather_elements",
                            {data, array_of<int64_t>({0, -4, 2, 1}, {2, 2}, i64)}, axis1),
             "out of range");
}

// grid_sample: compiled against the reference for every mode, padding and corner rule, on grids
// reaching past [-1, 1] (the reference itself is checked by ONNX's GridSample conformance tests);
// and a grid on the pixel centres (align_corners) gives the image back in every mode.
TEST(GridSample, EveryModeAndPaddingCompiled) {
  std::mt19937 rng(23);
  for (const char* mode : {"bilinear", "nearest"}) {  // bicubic: reference only
    for (const char* padding : {"zeros", "border", "reflection"}) {
      for (int64_t align : {0, 1}) {
        SCOPED_TRACE(std::string(mode) + " " + padding + " " + std::to_string(align));
        CheckOptions opt;
        opt.inputs = {ops_testing::random_array({{2, 3, 5, 6}, f32}, rng),
                      ops_testing::random_array({{2, 4, 7, 2}, f32}, rng, -1.6, 1.6)};
        check_op("grid_sample", {{{2, 3, 5, 6}, f32}, {{2, 4, 7, 2}, f32}},
                 Attrs("grid_sample", {{"mode", std::string(mode)},
                                       {"padding_mode", std::string(padding)},
                                       {"align_corners", align}}),
                 opt);
      }
    }
  }
}

TEST(GridSample, PixelCentresGiveTheImageBack) {
  std::mt19937 rng(29);
  runtime::NDArray x = ops_testing::random_array({{1, 2, 3, 4}, f32}, rng);
  runtime::NDArray grid = testing::array({1, 3, 4, 2}, f32);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 4; ++j) {
      grid.data_as<float>()[(i * 4 + j) * 2] = -1.0f + 2.0f * static_cast<float>(j) / 3.0f;
      grid.data_as<float>()[(i * 4 + j) * 2 + 1] = -1.0f + static_cast<float>(i);
    }
  }
  for (const char* mode : {"bilinear", "nearest", "bicubic"}) {
    Attrs attrs("grid_sample", {{"mode", std::string(mode)}, {"align_corners", int64_t{1}}});
    std::vector<float> got =
        testing::read<float>(lookup("grid_sample").reference({x, grid}, attrs)[0]);
    std::vector<float> want = testing::read<float>(x);
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR(got[k], want[k], 1e-6) << mode << " " << k;
    if (std::string(mode) == "bicubic") continue;  // reference only
    CheckOptions opt;
    opt.inputs = {x, grid};
    check_op("grid_sample", {{{1, 2, 3, 4}, f32}, {{1, 3, 4, 2}, f32}}, attrs, opt);
  }
}

TEST(GridSample, Errors) {
  EXPECT_HAS(infer_error("grid_sample", {{{1, 2, 3, 4}, f32}, {{1, 3, 4, 3}, f32}}),
             "grid_sample: grid must be [1, H_out, W_out, 2] for X [1, 2, 3, 4], got [1, 3, 4, 3]");
  EXPECT_HAS(infer_error("grid_sample", {{{1, 2, 3, 4}, f32}, {{1, 3, 4, 2}, f32}},
                         {{"mode", std::string("area")}}),
             "grid_sample: attribute 'mode' = 'area' is not bilinear, nearest or bicubic");
  EXPECT_HAS(infer_error("grid_sample", {{{1, 2, 3, 4}, f32}, {{1, 3, 4, 2}, f32}},
                         {{"padding_mode", std::string("wrap")}}),
             "is not zeros, border or reflection");
  te::Tensor x = te::placeholder(to_exprs({1, 2, 3, 4}), f32, "x");
  te::Tensor g = te::placeholder(to_exprs({1, 3, 4, 2}), f32, "g");
  EXPECT_HAS(testing::user_error([&] {
               lookup("grid_sample")
                   .compute({x, g}, Attrs("grid_sample", {{"mode", std::string("bicubic")}}));
             }),
             "grid_sample: mode 'bicubic' has no compiled form yet (input float32[1, 2, 3, 4])");
}

TEST(Trilu, UpperAndLowerOnEveryDiagonal) {
  runtime::NDArray x = array_of<float>({1, 2, 3, 4, 5, 6}, {2, 3}, f32);
  auto ref = [&](int64_t upper, int64_t k) {
    return testing::read<float>(
        lookup("trilu").reference({x}, Attrs("trilu", {{"upper", upper}, {"k", k}}))[0]);
  };
  EXPECT_EQ(ref(1, 0), (std::vector<float>{1, 2, 3, 0, 5, 6}));
  EXPECT_EQ(ref(1, 1), (std::vector<float>{0, 2, 3, 0, 0, 6}));
  EXPECT_EQ(ref(0, 0), (std::vector<float>{1, 0, 0, 4, 5, 0}));
  EXPECT_EQ(ref(0, -1), (std::vector<float>{0, 0, 0, 4, 0, 0}));
  for (int64_t upper : {0, 1}) {
    for (int64_t k : {int64_t{-7}, int64_t{-2}, int64_t{0}, int64_t{3}, int64_t{1} << 40}) {
      SCOPED_TRACE("upper " + std::to_string(upper) + " k " + std::to_string(k));
      for (DataType t : {f32, i64, DataType::UInt(8)}) {
        CheckOptions opt;
        opt.lo = 0;
        opt.hi = 100;
        check_op("trilu", {{{2, 5, 7}, t}}, Attrs("trilu", {{"upper", upper}, {"k", k}}), opt);
      }
    }
  }
  EXPECT_HAS(infer_error("trilu", {{{5}, f32}}),
             "trilu: input float32[5] must have rank 2 or more");
}

// Data movement copies any element type the references take.
TEST(DataMovement, NarrowUnsignedDoubleAndBoolTypes) {
  for (DataType t : {DataType::Int(8), DataType::UInt(16), DataType::UInt(64), DataType::Float(64),
                     DataType::Bool()}) {
    SCOPED_TRACE(t.to_string());
    CheckOptions opt;
    opt.lo = 0;
    opt.hi = 100;
    opt.gpu = false;
    check_op("transpose", {{{3, 4, 5}, t}}, Attrs("transpose", {{"perm", V{2, 0, 1}}}), opt);
    check_op("concat", {{{3, 4}, t}, {{3, 2}, t}}, Attrs("concat", {{"axis", int64_t{1}}}), opt);
    check_op("reshape", {{{3, 4}, t}}, Attrs("reshape", {{"shape", V{2, 6}}}), opt);
  }
}

}  // namespace
}  // namespace anvil::ops
