// cumsum, topk, scatter_elements, scatter_nd and gather_nd: the references against ONNX's own
// examples, the compiled code (LLVM, and the GPU schedule through OpenCL) against the references on
// random shapes, indices with duplicates and negative values, their errors, and the run-time index
// checks of the compiled code.
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
const DataType i32 = DataType::Int32();
const DataType i64 = DataType::Int64();

template <typename T>
runtime::NDArray array_of(const std::vector<T>& values, V shape, DataType t) {
  runtime::NDArray a = testing::array(std::move(shape), t);
  testing::write(a, values);
  return a;
}

runtime::NDArray random_indices(V shape, int64_t lo, int64_t hi, std::mt19937& rng) {
  runtime::NDArray a = testing::array(shape, i64);
  std::uniform_int_distribution<int64_t> d(lo, hi);
  for (int64_t i = 0; i < a.numel(); ++i) a.data_as<int64_t>()[i] = d(rng);
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

std::vector<float> reference_f32(const std::string& op, const std::vector<runtime::NDArray>& in,
                                 std::map<std::string, AttrValue> attrs) {
  return testing::read<float>(lookup(op).reference(in, Attrs(op, attrs))[0]);
}

// ---- cumsum

TEST(CumSum, TheOnnxExamples) {
  runtime::NDArray x = array_of<float>({1, 2, 3, 4, 5}, {5}, f32);
  EXPECT_EQ(reference_f32("cumsum", {x}, {}), (std::vector<float>{1, 3, 6, 10, 15}));
  EXPECT_EQ(reference_f32("cumsum", {x}, {{"exclusive", int64_t{1}}}),
            (std::vector<float>{0, 1, 3, 6, 10}));
  EXPECT_EQ(reference_f32("cumsum", {x}, {{"reverse", int64_t{1}}}),
            (std::vector<float>{15, 14, 12, 9, 5}));
  EXPECT_EQ(reference_f32("cumsum", {x}, {{"reverse", int64_t{1}}, {"exclusive", int64_t{1}}}),
            (std::vector<float>{14, 12, 9, 5, 0}));
  runtime::NDArray m = array_of<float>({1, 2, 3, 4, 5, 6}, {2, 3}, f32);
  EXPECT_EQ(reference_f32("cumsum", {m}, {{"axis", int64_t{1}}}),
            (std::vector<float>{1, 3, 6, 4, 9, 15}));
  EXPECT_EQ(reference_f32("cumsum", {m}, {{"axis", int64_t{0}}}),
            (std::vector<float>{1, 2, 3, 5, 7, 9}));
}

TEST(CumSum, EveryAxisAndModeCompiled) {
  for (int64_t axis : {0, 1, 2, -1}) {
    for (int64_t exclusive : {0, 1}) {
      for (int64_t reverse : {0, 1}) {
        SCOPED_TRACE(std::to_string(axis) + " " + std::to_string(exclusive) + " " +
                     std::to_string(reverse));
        Attrs attrs("cumsum", {{"axis", axis}, {"exclusive", exclusive}, {"reverse", reverse}});
        check_op("cumsum", {{{3, 7, 5}, f32}}, attrs);
        check_op("cumsum", {{{4, 6, 2}, i64}}, attrs, [] {
          CheckOptions o;
          o.lo = -50;
          o.hi = 50;
          return o;
        }());
      }
    }
  }
  // Large enough for the parallel loop: 64 rows of 512.
  check_op("cumsum", {{{64, 512}, f32}}, Attrs("cumsum", {{"axis", int64_t{1}}}));
}

TEST(CumSum, Errors) {
  EXPECT_HAS(infer_error("cumsum", {{{2, 3}, f32}}, {{"axis", int64_t{2}}}),
             "cumsum: attribute 'axis' = 2 is out of range for rank 2");
  EXPECT_HAS(infer_error("cumsum", {{{}, f32}}), "cumsum: input must have at least one dimension");
  EXPECT_HAS(infer_error("cumsum", {{{3}, DataType::Bool()}}),
             "cumsum: input must be a number type, not bool");
}

// ---- topk

TEST(TopK, TheOnnxExampleAndTies) {
  runtime::NDArray x = array_of<float>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {3, 4}, f32);
  Attrs k3("topk", {{"k", int64_t{3}}});
  std::vector<runtime::NDArray> out = lookup("topk").reference({x}, k3);
  EXPECT_EQ(testing::read<float>(out[0]), (std::vector<float>{3, 2, 1, 7, 6, 5, 11, 10, 9}));
  EXPECT_EQ(testing::read<int64_t>(out[1]), (std::vector<int64_t>{3, 2, 1, 3, 2, 1, 3, 2, 1}));
  // Equal values come in index order, largest or smallest.
  runtime::NDArray ties = array_of<float>({5, 1, 5, 1, 3}, {5}, f32);
  out = lookup("topk").reference({ties}, k3);
  EXPECT_EQ(testing::read<int64_t>(out[1]), (std::vector<int64_t>{0, 2, 4}));
  out =
      lookup("topk").reference({ties}, Attrs("topk", {{"k", int64_t{3}}, {"largest", int64_t{0}}}));
  EXPECT_EQ(testing::read<int64_t>(out[1]), (std::vector<int64_t>{1, 3, 4}));
  CheckOptions opt;
  opt.inputs = {ties};
  check_op("topk", {{{5}, f32}}, k3, opt);
}

TEST(TopK, EveryAxisCompiledWithTies) {
  std::mt19937 rng(19);
  V shape = {3, 6, 5};
  for (int64_t axis : {0, 1, 2, -1}) {
    for (int64_t largest : {0, 1}) {
      int64_t n = shape[static_cast<size_t>(axis < 0 ? axis + 3 : axis)];
      for (int64_t k : {int64_t{1}, n - 1, n}) {
        SCOPED_TRACE(std::to_string(axis) + " " + std::to_string(largest) + " " +
                     std::to_string(k));
        Attrs attrs("topk", {{"k", k}, {"axis", axis}, {"largest", largest}});
        CheckOptions opt;  // integers in a small range: many ties
        opt.inputs = {random_indices(shape, -3, 3, rng)};
        check_op("topk", {{shape, i64}}, attrs, opt);
        check_op("topk", {{shape, f32}}, attrs);
      }
    }
  }
}

TEST(TopK, Errors) {
  EXPECT_HAS(infer_error("topk", {{{2, 3}, f32}}, {{"k", int64_t{4}}}),
             "topk: attribute 'k' = 4 must be 1 to the axis's size 3");
  EXPECT_HAS(infer_error("topk", {{{2, 3}, f32}}, {{"k", int64_t{0}}}), "must be 1 to");
  EXPECT_HAS(infer_error("topk", {{{2, 3}, f32}}, {{"k", int64_t{1}}, {"axis", int64_t{2}}}),
             "topk: attribute 'axis' = 2 is out of range for rank 2");
}

// ---- scatter_elements

TEST(ScatterElements, TheOnnxExamples) {
  // ONNX's examples: axis 0 into a 3x3 of zeros, and axis 1 with a negative index.
  runtime::NDArray data = array_of<float>(std::vector<float>(9, 0.0f), {3, 3}, f32);
  runtime::NDArray idx = array_of<int64_t>({1, 0, 2, 0, 2, 1}, {2, 3}, i64);
  runtime::NDArray upd = array_of<float>({1.0f, 1.1f, 1.2f, 2.0f, 2.1f, 2.2f}, {2, 3}, f32);
  EXPECT_EQ(reference_f32("scatter_elements", {data, idx, upd}, {}),
            (std::vector<float>{2.0f, 1.1f, 0.0f, 1.0f, 0.0f, 2.2f, 0.0f, 2.1f, 1.2f}));
  data = array_of<float>({1, 2, 3, 4, 5}, {1, 5}, f32);
  idx = array_of<int64_t>({1, -2}, {1, 2}, i64);
  upd = array_of<float>({1.1f, 2.1f}, {1, 2}, f32);
  EXPECT_EQ(reference_f32("scatter_elements", {data, idx, upd}, {{"axis", int64_t{1}}}),
            (std::vector<float>{1.0f, 1.1f, 3.0f, 2.1f, 5.0f}));
  // Duplicates add with reduction 'add'.
  idx = array_of<int64_t>({1, 1}, {1, 2}, i64);
  EXPECT_EQ(reference_f32("scatter_elements", {data, idx, upd},
                          {{"axis", int64_t{1}}, {"reduction", std::string("add")}}),
            (std::vector<float>{1.0f, 5.2f, 3.0f, 4.0f, 5.0f}));
}

TEST(ScatterElements, RandomIndicesEveryAxisAndReduction) {
  std::mt19937 rng(11);
  V dshape = {4, 5, 6};
  for (int64_t axis : {0, 1, 2, -1}) {
    size_t a = static_cast<size_t>(axis < 0 ? axis + 3 : axis);
    V ishape = {3, 4, 5};  // smaller than data off the axis
    ishape[a] = 7;         // more entries than the axis: duplicates
    for (const char* reduction : {"none", "add", "mul"}) {
      SCOPED_TRACE(std::to_string(axis) + " " + reduction);
      CheckOptions opt;
      opt.inputs = {ops_testing::random_array({dshape, f32}, rng),
                    random_indices(ishape, -dshape[a], dshape[a] - 1, rng),
                    ops_testing::random_array({ishape, f32}, rng)};
      check_op("scatter_elements", {{dshape, f32}, {ishape, i64}, {ishape, f32}},
               Attrs("scatter_elements", {{"axis", axis}, {"reduction", std::string(reduction)}}),
               opt);
    }
  }
  // Integer data, int32 indices.
  CheckOptions opt;
  runtime::NDArray idx = testing::array({2, 3}, i32);
  testing::write(idx, std::vector<int32_t>{0, 3, -1, 2, 2, 0});
  opt.inputs = {array_of<int64_t>({1, 2, 3, 4, 5, 6, 7, 8}, {2, 4}, i64), idx,
                array_of<int64_t>({10, 20, 30, 40, 50, 60}, {2, 3}, i64)};
  check_op("scatter_elements", {{{2, 4}, i64}, {{2, 3}, i32}, {{2, 3}, i64}},
           Attrs("scatter_elements", {{"axis", int64_t{1}}, {"reduction", std::string("add")}}),
           opt);
}

TEST(ScatterElements, Errors) {
  EXPECT_HAS(infer_error("scatter_elements", {{{2, 3}, f32}, {{2, 3}, i64}, {{2, 2}, f32}}),
             "scatter_elements: indices [2, 3] and updates [2, 2] must have one shape");
  EXPECT_HAS(infer_error("scatter_elements", {{{2, 3}, f32}, {{3, 3}, i64}, {{3, 3}, f32}},
                         {{"axis", int64_t{1}}}),
             "scatter_elements: indices [3, 3] exceed data [2, 3] in dimension 0");
  EXPECT_HAS(infer_error("scatter_elements", {{{2, 3}, f32}, {{2, 3}, i64}, {{2, 3}, f32}},
                         {{"reduction", std::string("max")}}),
             "scatter_elements: attribute 'reduction' = 'max' is not supported (none, add, mul)");
  EXPECT_HAS(infer_error("scatter_elements", {{{2, 3}, f32}, {{2, 3}, i64}, {{2, 3}, i64}}),
             "scatter_elements: updates are int64, data float32");
  runtime::NDArray data = array_of<float>({1, 2, 3, 4}, {2, 2}, f32);
  runtime::NDArray upd = array_of<float>({5, 6}, {1, 2}, f32);
  runtime::NDArray bad = array_of<int64_t>({0, 2}, {1, 2}, i64);
  Attrs attrs("scatter_elements", {});
  EXPECT_HAS(testing::user_error([&] {
               lookup("scatter_elements").reference({data, bad, upd}, attrs);
             }),
             "scatter_elements: index 2 is out of range for axis 0 of size 2");
  EXPECT_HAS(compiled_error("scatter_elements", {data, bad, upd}, attrs),
             "scatter_elements: an index is out of range for axis 0 of size 2 (valid: -2 to 1)");
  EXPECT_EQ(compiled_error("scatter_elements", {data, array_of<int64_t>({-2, 1}, {1, 2}, i64), upd},
                           attrs),
            "");
}

// ---- scatter_nd

TEST(ScatterND, TheOnnxExamples) {
  // ONNX's first example: single elements of a 1-D tensor.
  runtime::NDArray data = array_of<float>({1, 2, 3, 4, 5, 6, 7, 8}, {8}, f32);
  runtime::NDArray idx = array_of<int64_t>({4, 3, 1, 7}, {4, 1}, i64);
  runtime::NDArray upd = array_of<float>({9, 10, 11, 12}, {4}, f32);
  EXPECT_EQ(reference_f32("scatter_nd", {data, idx, upd}, {}),
            (std::vector<float>{1, 11, 3, 10, 9, 6, 7, 12}));
  EXPECT_EQ(reference_f32("scatter_nd", {data, idx, upd}, {{"reduction", std::string("mul")}}),
            (std::vector<float>{1, 22, 3, 40, 45, 6, 7, 96}));
  // Whole rows of a 3-D tensor.
  std::vector<float> d(2 * 2 * 2);
  for (size_t i = 0; i < d.size(); ++i) d[i] = static_cast<float>(i);
  data = array_of<float>(d, {2, 2, 2}, f32);
  idx = array_of<int64_t>({1, 0}, {1, 2}, i64);
  upd = array_of<float>({-1, -2}, {1, 2}, f32);
  EXPECT_EQ(reference_f32("scatter_nd", {data, idx, upd}, {}),
            (std::vector<float>{0, 1, 2, 3, -1, -2, 6, 7}));
}

TEST(ScatterND, RandomTuplesCompiled) {
  std::mt19937 rng(13);
  V dshape = {4, 3, 5};
  for (int64_t k : {1, 2, 3}) {
    for (V lead : {V{6}, V{2, 3}}) {
      for (const char* reduction : {"none", "add", "mul"}) {
        SCOPED_TRACE(std::to_string(k) + " " + reduction);
        V ishape = lead;
        ishape.push_back(k);
        V ushape = lead;
        ushape.insert(ushape.end(), dshape.begin() + k, dshape.end());
        runtime::NDArray idx = testing::array(ishape, i64);
        for (int64_t i = 0; i < idx.numel(); ++i) {
          int64_t n = dshape[static_cast<size_t>(i % k)];
          idx.data_as<int64_t>()[i] = std::uniform_int_distribution<int64_t>(-n, n - 1)(rng);
        }
        CheckOptions opt;
        opt.inputs = {ops_testing::random_array({dshape, f32}, rng), idx,
                      ops_testing::random_array({ushape, f32}, rng)};
        check_op("scatter_nd", {{dshape, f32}, {ishape, i64}, {ushape, f32}},
                 Attrs("scatter_nd", {{"reduction", std::string(reduction)}}), opt);
      }
    }
  }
}

TEST(ScatterND, Errors) {
  EXPECT_HAS(infer_error("scatter_nd", {{{4, 3}, f32}, {{2, 3}, i64}, {{2}, f32}}),
             "scatter_nd: the last dimension of indices [2, 3] must be 1 to the rank of data");
  EXPECT_HAS(infer_error("scatter_nd", {{{4, 3}, f32}, {{2, 1}, i64}, {{2, 4}, f32}}),
             "scatter_nd: updates [2, 4] must be [2, 3] for data [4, 3] and indices [2, 1]");
  runtime::NDArray data = array_of<float>({1, 2, 3, 4, 5, 6}, {2, 3}, f32);
  runtime::NDArray upd = array_of<float>({7}, {1}, f32);
  Attrs attrs("scatter_nd", {});
  EXPECT_EQ(
      compiled_error("scatter_nd", {data, array_of<int64_t>({-2, 2}, {1, 2}, i64), upd}, attrs),
      "");
  EXPECT_HAS(
      compiled_error("scatter_nd", {data, array_of<int64_t>({1, 3}, {1, 2}, i64), upd}, attrs),
      "scatter_nd: an index is out of range for the dimensions it indexes (sizes 2, 3; "
      "valid: -size to size - 1)");
  EXPECT_NE(
      compiled_error("scatter_nd", {data, array_of<int64_t>({-3, 0}, {1, 2}, i64), upd}, attrs),
      "");
}

// ---- gather_nd

TEST(GatherND, TheOnnxExamples) {
  runtime::NDArray data = array_of<float>({0, 1, 2, 3}, {2, 2}, f32);
  EXPECT_EQ(reference_f32("gather_nd", {data, array_of<int64_t>({0, 0, 1, 1}, {2, 2}, i64)}, {}),
            (std::vector<float>{0, 3}));
  EXPECT_EQ(reference_f32("gather_nd", {data, array_of<int64_t>({1, 0}, {2, 1}, i64)}, {}),
            (std::vector<float>{2, 3, 0, 1}));
  runtime::NDArray cube = array_of<float>({0, 1, 2, 3, 4, 5, 6, 7}, {2, 2, 2}, f32);
  EXPECT_EQ(reference_f32("gather_nd", {cube, array_of<int64_t>({1, 0}, {2, 1}, i64)},
                          {{"batch_dims", int64_t{1}}}),
            (std::vector<float>{2, 3, 4, 5}));
}

TEST(GatherND, RandomTuplesCompiled) {
  std::mt19937 rng(17);
  V dshape = {3, 4, 5, 2};
  for (int64_t b : {0, 1}) {
    for (int64_t k = 1; k + b <= 4; ++k) {
      SCOPED_TRACE(std::to_string(b) + " " + std::to_string(k));
      V ishape = b ? V{3, 2, k} : V{2, 3, k};
      runtime::NDArray idx = testing::array(ishape, i64);
      for (int64_t i = 0; i < idx.numel(); ++i) {
        int64_t n = dshape[static_cast<size_t>(b + i % k)];
        idx.data_as<int64_t>()[i] = std::uniform_int_distribution<int64_t>(-n, n - 1)(rng);
      }
      CheckOptions opt;
      opt.inputs = {ops_testing::random_array({dshape, f32}, rng), idx};
      check_op("gather_nd", {{dshape, f32}, {ishape, i64}}, Attrs("gather_nd", {{"batch_dims", b}}),
               opt);
    }
  }
}

TEST(GatherND, Errors) {
  EXPECT_HAS(infer_error("gather_nd", {{{2, 3}, f32}, {{2, 3}, i64}}),
             "gather_nd: the last dimension of indices [2, 3] must be 1 to 2");
  EXPECT_HAS(infer_error("gather_nd", {{{2, 3}, f32}, {{3, 1}, i64}}, {{"batch_dims", int64_t{1}}}),
             "gather_nd: data [2, 3] and indices [3, 1] differ in batch dimension 0");
  runtime::NDArray data = array_of<float>({0, 1, 2, 3, 4, 5}, {3, 2}, f32);
  Attrs attrs("gather_nd", {});
  EXPECT_HAS(compiled_error("gather_nd", {data, array_of<int64_t>({2, 2}, {1, 2}, i64)}, attrs),
             "gather_nd: an index is out of range for the dimensions it indexes (sizes 3, 2;");
  EXPECT_EQ(compiled_error("gather_nd", {data, array_of<int64_t>({2, -2}, {1, 2}, i64)}, attrs),
            "");
}

}  // namespace
}  // namespace anvil::ops
