// Layout and data movement operators against their references: randomized shapes and attributes
// (fixed seeds), every dtype they take, negative axes, indices and steps, all pad modes, layout
// round trips, and the diagnostics of invalid attributes. Pure data movement compares exactly.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "ops_testing.h"
#include "testing/errors.h"

namespace anvil::ops {
namespace {

using ir::DataType;
using ops_testing::check_op;
using ops_testing::CheckOptions;
using V = std::vector<int64_t>;

const DataType f32 = DataType::Float32();
const DataType i32 = DataType::Int32();
const DataType i64 = DataType::Int64();
const DataType kTypes[] = {f32, i32, i64};

CheckOptions exact(uint32_t seed = 1) {
  CheckOptions o;
  o.tol = 0;
  o.lo = -1000;
  o.hi = 1000;
  o.seed = seed;
  return o;
}

V random_shape(std::mt19937& rng, int rank, int64_t lo = 1, int64_t hi = 7) {
  std::uniform_int_distribution<int64_t> d(lo, hi);
  V s;
  for (int i = 0; i < rank; ++i) s.push_back(d(rng));
  return s;
}

int64_t rand_int(std::mt19937& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

// The message of the error `infer` throws for these inputs and attributes.
std::string infer_error(const std::string& op, const std::vector<TensorType>& in,
                        std::map<std::string, AttrValue> attrs) {
  return testing::user_error([&] { lookup(op).infer(in, Attrs(op, std::move(attrs))); });
}

#define EXPECT_HAS(msg_expr, part)                         \
  do {                                                     \
    std::string msg_ = (msg_expr);                         \
    EXPECT_NE(msg_.find(part), std::string::npos) << msg_; \
  } while (0)

TEST(Transform, RegisteredInjective) {
  for (const char* op :
       {"reshape", "flatten", "squeeze", "unsqueeze", "transpose", "concat", "split", "slice",
        "pad", "gather", "expand", "tile", "layout_transform", "resize"}) {
    EXPECT_EQ(lookup(op).pattern, Pattern::kInjective) << op;
  }
}

// ---- reshape family

TEST(Transform, Reshape) {
  check_op("reshape", {{{2, 3, 4}, f32}}, Attrs("reshape", {{"shape", V{4, -1}}}), exact());
  check_op("reshape", {{{2, 3, 4}, i64}}, Attrs("reshape", {{"shape", V{0, 12}}}), exact());
  check_op("reshape", {{{6, 5}, i32}}, Attrs("reshape", {{"shape", V{-1, 0, 1}}}), exact());
  std::mt19937 rng(7);
  for (int t = 0; t < 6; ++t) {
    V s = random_shape(rng, static_cast<int>(rand_int(rng, 1, 4)));
    int64_t n = std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<>());
    // A random factorization of n with one -1.
    V target;
    int64_t left = n;
    for (int64_t f = 2; f <= left; ++f) {
      while (left % f == 0 && rand_int(rng, 0, 1)) {
        target.push_back(f);
        left /= f;
      }
    }
    target.insert(target.begin() + rand_int(rng, 0, static_cast<int64_t>(target.size())), -1);
    check_op("reshape", {{s, kTypes[t % 3]}}, Attrs("reshape", {{"shape", target}}),
             exact(static_cast<uint32_t>(t)));
  }
}

TEST(Transform, ReshapeErrors) {
  EXPECT_HAS(infer_error("reshape", {{{2, 3}, f32}}, {{"shape", V{4, 2}}}),
             "reshape: attribute 'shape' [4, 2] has 8 elements, but the input [2, 3] has 6");
  EXPECT_HAS(infer_error("reshape", {{{2, 3}, f32}}, {{"shape", V{-1, -1}}}),
             "reshape: attribute 'shape' [-1, -1] has more than one -1");
  EXPECT_HAS(infer_error("reshape", {{{2, 3}, f32}}, {{"shape", V{4, -1}}}),
             "reshape: attribute 'shape' [4, -1] cannot hold the 6 elements");
  EXPECT_HAS(infer_error("reshape", {{{6}, f32}}, {{"shape", V{3, 0}}}),
             "reshape: attribute 'shape' [3, 0] copies dimension 1");
  EXPECT_HAS(infer_error("reshape", {{{6}, f32}}, {{"shape", V{-2, 3}}}),
             "reshape: attribute 'shape' [-2, 3] has invalid dimension -2");
  EXPECT_HAS(infer_error("reshape", {{{6}, f32}}, {}), "reshape: missing attribute 'shape'");
  EXPECT_HAS(infer_error("reshape", {{{6}, DataType::BFloat16()}}, {{"shape", V{6}}}),
             "reshape: input must be float16/32/64, int8-64, uint8-64 or bool, not bfloat16");
}

TEST(Transform, Flatten) {
  std::mt19937 rng(11);
  for (int t = 0; t < 6; ++t) {
    int rank = static_cast<int>(rand_int(rng, 1, 4));
    V s = random_shape(rng, rank);
    int64_t axis = rand_int(rng, -rank, rank);
    check_op("flatten", {{s, kTypes[t % 3]}}, Attrs("flatten", {{"axis", axis}}), exact());
  }
  check_op("flatten", {{{2, 3, 4}, f32}}, Attrs("flatten", {}), exact());
  EXPECT_HAS(infer_error("flatten", {{{2, 3}, f32}}, {{"axis", int64_t{3}}}),
             "flatten: attribute 'axis' = 3 is out of range for rank 2");
}

TEST(Transform, SqueezeUnsqueeze) {
  check_op("squeeze", {{{1, 3, 1, 4}, f32}}, Attrs("squeeze", {}), exact());
  check_op("squeeze", {{{1, 3, 1, 4}, i64}}, Attrs("squeeze", {{"axes", V{-2}}}), exact());
  check_op("squeeze", {{{1, 3, 1, 4}, i32}}, Attrs("squeeze", {{"axes", V{0, 2}}}), exact());
  check_op("unsqueeze", {{{3, 4}, f32}}, Attrs("unsqueeze", {{"axes", V{0, -1}}}), exact());
  check_op("unsqueeze", {{{3}, i64}}, Attrs("unsqueeze", {{"axes", V{1, 0}}}), exact());
  check_op("unsqueeze", {{{3, 5}, i32}}, Attrs("unsqueeze", {{"axes", V{1, 3}}}), exact());
  EXPECT_HAS(infer_error("squeeze", {{{1, 3}, f32}}, {{"axes", V{1}}}),
             "squeeze: attribute 'axes' names axis 1 of input [1, 3], whose size is 3, not 1");
  EXPECT_HAS(infer_error("squeeze", {{{1, 3}, f32}}, {{"axes", V{2}}}),
             "squeeze: attribute 'axes' = 2 is out of range for rank 2");
  check_op("squeeze", {{{1, 1}, f32}}, Attrs("squeeze", {}), exact());  // to a scalar
  check_op("unsqueeze", {{{}, f32}}, Attrs("unsqueeze", {{"axes", V{0, 1}}}), exact());
  EXPECT_HAS(infer_error("unsqueeze", {{{3}, f32}}, {{"axes", V{0, -3}}}),
             "unsqueeze: attribute 'axes' names axis 0 twice");
  EXPECT_HAS(infer_error("unsqueeze", {{{3}, f32}}, {{"axes", V{3}}}),
             "unsqueeze: attribute 'axes' = 3 is out of range for rank 2");
}

// ---- transpose

TEST(Transform, Transpose) {
  check_op("transpose", {{{2, 3, 4}, f32}}, Attrs("transpose", {}), exact());
  std::mt19937 rng(13);
  for (int t = 0; t < 8; ++t) {
    int rank = static_cast<int>(rand_int(rng, 1, 5));
    V s = random_shape(rng, rank, 1, 6);
    V perm(static_cast<size_t>(rank));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    check_op("transpose", {{s, kTypes[t % 3]}}, Attrs("transpose", {{"perm", perm}}), exact());
  }
  check_op("transpose", {{{64, 33}, f32}}, Attrs("transpose", {{"perm", V{1, 0}}}), exact());
  EXPECT_HAS(infer_error("transpose", {{{2, 3, 4}, f32}}, {{"perm", V{0, 0, 1}}}),
             "transpose: attribute 'perm' [0, 0, 1] is not a permutation of 0..2");
  EXPECT_HAS(infer_error("transpose", {{{2, 3, 4}, f32}}, {{"perm", V{0, 1}}}),
             "transpose: attribute 'perm' [0, 1] has 2 entries, but the input has rank 3");
}

// ---- concat, split

TEST(Transform, Concat) {
  std::mt19937 rng(17);
  for (int t = 0; t < 8; ++t) {
    int rank = static_cast<int>(rand_int(rng, 1, 4));
    V s = random_shape(rng, rank);
    int64_t axis = rand_int(rng, -rank, rank - 1);
    size_t a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
    int n = static_cast<int>(rand_int(rng, 1, 4));
    std::vector<TensorType> in;
    for (int k = 0; k < n; ++k) {
      V sk = s;
      sk[a] = rand_int(rng, 1, 5);
      in.push_back({sk, kTypes[t % 3]});
    }
    check_op("concat", in, Attrs("concat", {{"axis", axis}}), exact(static_cast<uint32_t>(t)));
  }
  // A long vectorized axis.
  check_op("concat", {{{3, 37}, f32}, {{3, 50}, f32}}, Attrs("concat", {{"axis", int64_t{-1}}}),
           exact());
  EXPECT_HAS(infer_error("concat", {{{2, 3}, f32}, {{3, 3}, f32}}, {{"axis", int64_t{1}}}),
             "concat: input 1 float32[3, 3] differs from input 0 float32[2, 3] in dimension 0");
  EXPECT_HAS(infer_error("concat", {{{2, 3}, f32}, {{2, 3}, i32}}, {{"axis", int64_t{0}}}),
             "concat: input 1 is int32[2, 3], but input 0 is float32[2, 3]");
  EXPECT_HAS(infer_error("concat", {{{2, 3}, f32}}, {{"axis", int64_t{-3}}}),
             "concat: attribute 'axis' = -3 is out of range for rank 2");
  EXPECT_HAS(infer_error("concat", {{{2, 3}, f32}}, {}), "concat: missing attribute 'axis'");
}

TEST(Transform, Split) {
  check_op("split", {{{4, 6}, f32}}, Attrs("split", {{"axis", int64_t{1}}, {"split", V{1, 2, 3}}}),
           exact());
  check_op("split", {{{7, 2}, i64}}, Attrs("split", {{"num_outputs", int64_t{3}}}), exact());
  std::mt19937 rng(19);
  for (int t = 0; t < 6; ++t) {
    int rank = static_cast<int>(rand_int(rng, 1, 4));
    V s = random_shape(rng, rank, 2, 9);
    int64_t axis = rand_int(rng, -rank, rank - 1);
    int64_t dim = s[static_cast<size_t>(axis < 0 ? axis + rank : axis)];
    V sizes;
    for (int64_t left = dim; left > 0;) {
      sizes.push_back(rand_int(rng, 1, left));
      left -= sizes.back();
    }
    check_op("split", {{s, kTypes[t % 3]}}, Attrs("split", {{"axis", axis}, {"split", sizes}}),
             exact(static_cast<uint32_t>(t)));
  }
  EXPECT_HAS(infer_error("split", {{{4, 6}, f32}}, {{"axis", int64_t{1}}, {"split", V{1, 2}}}),
             "split: attribute 'split' [1, 2] sums to 3, but dimension 1 of input [4, 6] is 6");
  EXPECT_HAS(infer_error("split", {{{4, 6}, f32}}, {{"num_outputs", int64_t{5}}}),
             "split: attribute 'num_outputs' = 5 must be in [1, 4]");
  EXPECT_HAS(infer_error("split", {{{4, 6}, f32}}, {}), "split: needs attribute 'split'");
}

// ---- slice

TEST(Transform, Slice) {
  check_op("slice", {{{10, 8}, f32}},
           Attrs("slice", {{"starts", V{1, -1}}, {"ends", V{9, -100}}, {"steps", V{3, -2}}}),
           exact());
  check_op("slice", {{{10}, i64}},
           Attrs("slice", {{"starts", V{-3}}, {"ends", V{INT64_MAX}}, {"axes", V{-1}}}), exact());
  check_op("slice", {{{10}, i32}},
           Attrs("slice", {{"starts", V{100}}, {"ends", V{-100}}, {"steps", V{-1}}}), exact());
  std::mt19937 rng(23);
  for (int t = 0; t < 12; ++t) {
    int rank = static_cast<int>(rand_int(rng, 1, 4));
    V s = random_shape(rng, rank, 1, 9);
    V starts, ends, axes, steps;
    for (int d = 0; d < rank; ++d) {
      if (rand_int(rng, 0, 3) == 0) continue;
      int64_t dim = s[static_cast<size_t>(d)];
      int64_t step = rand_int(rng, 1, 3) * (rand_int(rng, 0, 1) ? 1 : -1);
      // A start and an end (possibly negative or out of range) that select at least one element.
      int64_t b = rand_int(rng, 0, dim - 1);
      int64_t e = step > 0 ? rand_int(rng, b + 1, dim + 2) : rand_int(rng, -1, b - 1);
      if (rand_int(rng, 0, 1)) b -= dim;  // the same start, counted from the end
      if (e >= 0 && e < dim && rand_int(rng, 0, 1)) e -= dim;
      if (e == -1 && step < 0) e = -dim - 5;  // ends before index 0
      starts.push_back(b);
      ends.push_back(e);
      axes.push_back(rand_int(rng, 0, 1) ? d : d - rank);
      steps.push_back(step);
    }
    if (starts.empty()) continue;
    check_op("slice", {{s, kTypes[t % 3]}},
             Attrs("slice", {{"starts", starts}, {"ends", ends}, {"axes", axes}, {"steps", steps}}),
             exact(static_cast<uint32_t>(t)));
  }
  EXPECT_HAS(
      infer_error("slice", {{{4}, f32}}, {{"starts", V{0}}, {"ends", V{4}}, {"steps", V{0}}}),
      "slice: attribute 'steps' has a 0 for axis 0");
  // Selecting nothing gives an empty tensor, for the references only (compiled code refuses it).
  Attrs nothing("slice", {{"starts", V{3}}, {"ends", V{1}}});
  EXPECT_EQ(lookup("slice").infer({{{4}, f32}}, nothing).at(0).shape, V{0});
  EXPECT_HAS(testing::user_error([&] {
               lookup("slice").compute({te::placeholder(to_exprs({4}), f32, "x")}, nothing);
             }),
             "slice: float32[0] is an empty tensor, which compiled code does not support");
  EXPECT_HAS(infer_error("slice", {{{4}, f32}}, {{"starts", V{0}}, {"ends", V{1}}, {"axes", V{1}}}),
             "slice: attribute 'axes' = 1 is out of range for rank 1");
  EXPECT_HAS(infer_error("slice", {{{4}, f32}}, {{"starts", V{0, 1}}, {"ends", V{1}}}),
             "slice: attributes 'starts', 'ends', 'axes' and 'steps' have different lengths");
}

// ---- pad

TEST(Transform, PadAllModes) {
  std::mt19937 rng(29);
  for (const char* mode : {"constant", "edge", "reflect"}) {
    for (int t = 0; t < 6; ++t) {
      int rank = static_cast<int>(rand_int(rng, 1, 4));
      V s = random_shape(rng, rank, 2, 7);
      V pads(static_cast<size_t>(2 * rank), 0);
      for (int d = 0; d < rank; ++d) {
        int64_t limit = std::string(mode) == "reflect" ? s[static_cast<size_t>(d)] - 1 : 4;
        // Pads on one side only, on both, or none.
        int side = static_cast<int>(rand_int(rng, 0, 3));
        if (side & 1) pads[static_cast<size_t>(d)] = rand_int(rng, 1, limit);
        if (side & 2) pads[static_cast<size_t>(d + rank)] = rand_int(rng, 1, limit);
      }
      std::map<std::string, AttrValue> a{{"pads", pads}, {"mode", std::string(mode)}};
      if (t % 2) a["value"] = t % 3 == 1 ? 2.5 : -7.0;
      check_op("pad", {{s, kTypes[t % 3]}}, Attrs("pad", a), exact(static_cast<uint32_t>(t)));
    }
  }
  // One side only, and a vectorized row.
  check_op("pad", {{{3, 40}, f32}}, Attrs("pad", {{"pads", V{0, 5, 0, 0}}, {"value", 1.5}}),
           exact());
  check_op("pad", {{{3, 40}, f32}},
           Attrs("pad", {{"pads", V{0, 0, 2, 9}}, {"mode", std::string("reflect")}}), exact());
  check_op("pad", {{{3, 40}, f32}},
           Attrs("pad", {{"pads", V{2, 0, 0, 0}}, {"mode", std::string("edge")}}), exact());
}

TEST(Transform, PadErrors) {
  EXPECT_HAS(infer_error("pad", {{{3, 4}, f32}},
                         {{"pads", V{0, 4, 0, 0}}, {"mode", std::string("reflect")}}),
             "pad: attribute 'pads' [0, 4, 0, 0] pads axis 1 of size 4 by 4 in mode 'reflect'");
  EXPECT_HAS(infer_error("pad", {{{3, 4}, f32}}, {{"pads", V{1, 1}}}),
             "pad: attribute 'pads' [1, 1] has 2 entries, but the input [3, 4] needs 4");
  EXPECT_HAS(infer_error("pad", {{{3, 4}, f32}}, {{"pads", V{0, -1, 0, 0}}}),
             "pad: attribute 'pads' [0, -1, 0, 0] has a negative entry for axis 1");
  EXPECT_HAS(
      infer_error("pad", {{{3, 4}, f32}}, {{"pads", V{0, 0, 0, 0}}, {"mode", std::string("wrap")}}),
      "pad: attribute 'mode' = 'wrap' is not constant, edge or reflect");
}

// ---- gather

TEST(Transform, Gather) {
  std::mt19937 rng(31);
  for (int t = 0; t < 10; ++t) {
    int rank = static_cast<int>(rand_int(rng, 1, 3));
    V ds = random_shape(rng, rank, 1, 7);
    V is = random_shape(rng, static_cast<int>(rand_int(rng, 1, 2)), 1, 5);
    int64_t axis = rand_int(rng, -rank, rank - 1);
    int64_t n = ds[static_cast<size_t>(axis < 0 ? axis + rank : axis)];
    DataType dt = kTypes[t % 3], it = t % 2 ? i64 : i32;
    CheckOptions o = exact(static_cast<uint32_t>(t));
    o.inputs.push_back(ops_testing::random_array({ds, dt}, rng, -1000, 1000));
    // Indices in [-n, n): negative ones count from the end.
    o.inputs.push_back(ops_testing::random_array({is, it}, rng, static_cast<double>(-n),
                                                 static_cast<double>(n - 1)));
    check_op("gather", {{ds, dt}, {is, it}}, Attrs("gather", {{"axis", axis}}), o);
  }
  EXPECT_HAS(infer_error("gather", {{{3, 4}, f32}, {{2}, f32}}, {}),
             "gather: indices must be int32 or int64, not float32");
  EXPECT_HAS(infer_error("gather", {{{3, 4}, f32}, {{2}, i64}}, {{"axis", int64_t{2}}}),
             "gather: attribute 'axis' = 2 is out of range for rank 2");
}

// Out-of-range indices are an error in ONNX: the reference says so, and the compiled kernel
// checks its indices before it runs and fails with the valid range (it still clamps what it reads,
// for GPU kernels, which cannot report an error).
TEST(Transform, GatherOutOfRangeIndices) {
  const OpDef& def = lookup("gather");
  Attrs attrs("gather", {{"axis", int64_t{0}}});
  runtime::NDArray data = testing::array({4}, f32), idx = testing::array({3}, i64);
  testing::write<float>(data, {10, 11, 12, 13});
  testing::write<int64_t>(idx, {3, -4, -1});
  te::Tensor d = te::placeholder({4}, f32, "data"), k = te::placeholder({3}, i64, "indices");
  std::vector<te::Tensor> outs = def.compute({d, k}, attrs);
  te::Schedule sch(outs);
  def.schedule_x86(sch, outs, Target::host(), {});
  auto module =
      codegen::LLVMModule::compile({lower(sch, {d, k, outs[0]}, "gather")}, Target::host());
  runtime::NDArray out = testing::array({3}, f32);
  ASSERT_EQ(testing::call(module->get_function("gather"), {data.get(), idx.get(), out.get()}), 0)
      << AnvilGetLastError();
  EXPECT_EQ(testing::read<float>(out), (std::vector<float>{13, 10, 13}));

  for (int64_t bad : {int64_t{4}, int64_t{-5}, int64_t{1} << 40}) {
    testing::write<int64_t>(idx, {0, bad, 1});
    EXPECT_HAS(testing::user_error([&] {
                 def.reference({data, idx}, attrs);
               }),
               "gather: index " + std::to_string(bad) + " is out of range for axis 0 of size 4");
    EXPECT_NE(testing::call(module->get_function("gather"), {data.get(), idx.get(), out.get()}), 0);
    EXPECT_HAS(std::string(AnvilGetLastError()),
               "gather: gather: an index is out of range for axis 0 of size 4 (valid: -4 to 3)");
  }
}

// ---- expand, tile

TEST(Transform, Expand) {
  check_op("expand", {{{3, 1}, f32}}, Attrs("expand", {{"shape", V{2, 1, 6}}}), exact());
  check_op("expand", {{{1, 4}, i64}}, Attrs("expand", {{"shape", V{3, 1}}}), exact());
  std::mt19937 rng(37);
  for (int t = 0; t < 6; ++t) {
    int rank = static_cast<int>(rand_int(rng, 1, 3));
    V s = random_shape(rng, rank, 1, 5);
    V shape;
    for (int d = 0; d < rank; ++d) {
      int64_t x = s[static_cast<size_t>(d)];
      if (rand_int(rng, 0, 1)) s[static_cast<size_t>(d)] = 1;
      shape.push_back(rand_int(rng, 0, 2) ? x : 1);
    }
    if (rand_int(rng, 0, 1)) shape.insert(shape.begin(), rand_int(rng, 1, 3));
    check_op("expand", {{s, kTypes[t % 3]}}, Attrs("expand", {{"shape", shape}}), exact());
  }
  EXPECT_HAS(infer_error("expand", {{{3, 2}, f32}}, {{"shape", V{4, 2, 3}}}),
             "expand: attribute 'shape' [4, 2, 3] does not broadcast with input [3, 2]");
}

TEST(Transform, Tile) {
  std::mt19937 rng(41);
  for (int t = 0; t < 6; ++t) {
    int rank = static_cast<int>(rand_int(rng, 1, 4));
    V s = random_shape(rng, rank, 1, 5);
    V reps = random_shape(rng, rank, 1, 3);
    check_op("tile", {{s, kTypes[t % 3]}}, Attrs("tile", {{"repeats", reps}}), exact());
  }
  EXPECT_HAS(infer_error("tile", {{{3, 2}, f32}}, {{"repeats", V{2}}}),
             "tile: attribute 'repeats' [2] has 1 entries, but the input [3, 2] has rank 2");
  EXPECT_HAS(infer_error("tile", {{{3, 2}, f32}}, {{"repeats", V{2, 0}}}),
             "tile: attribute 'repeats' [2, 0] has an entry below 1");
}

// ---- layout_transform

Attrs layout(const std::string& src, const std::string& dst, int64_t channels = 0) {
  std::map<std::string, AttrValue> a{{"src_layout", src}, {"dst_layout", dst}};
  if (channels) a["channels"] = channels;
  return Attrs("layout_transform", a);
}

TEST(Transform, LayoutTransform) {
  check_op("layout_transform", {{{2, 16, 3, 5}, f32}}, layout("NCHW", "NCHW8c"), exact());
  // Channels the block does not divide: zero-padded.
  check_op("layout_transform", {{{1, 13, 4, 3}, f32}}, layout("NCHW", "NCHW8c"), exact());
  check_op("layout_transform", {{{2, 3, 2, 5}, i64}}, layout("NCHW", "NCHW4c"), exact());
  check_op("layout_transform", {{{1, 2, 3, 5, 8}, f32}}, layout("NCHW8c", "NCHW"), exact());
  check_op("layout_transform", {{{1, 2, 3, 5, 8}, i32}}, layout("NCHW8c", "NCHW", 13), exact());
  check_op("layout_transform", {{{1, 3, 3, 2, 8}, f32}}, layout("NCHW8c", "NCHW16c"), exact());
  check_op("layout_transform", {{{1, 3, 3, 2, 8}, f32}}, layout("NCHW8c", "NCHW4c", 21), exact());
}

// NCHW -> NCHW[x]c -> NCHW gives back the input, for channels the block does not divide too.
TEST(Transform, LayoutTransformRoundTrip) {
  std::mt19937 rng(43);
  const OpDef& def = lookup("layout_transform");
  for (int t = 0; t < 6; ++t) {
    V s = {rand_int(rng, 1, 2), rand_int(rng, 1, 20), rand_int(rng, 1, 5), rand_int(rng, 1, 5)};
    int64_t block = int64_t{1} << rand_int(rng, 1, 4);
    std::string blocked = "NCHW" + std::to_string(block) + "c";
    runtime::NDArray x = ops_testing::random_array({s, f32}, rng);
    std::vector<runtime::NDArray> packed = def.reference({x}, layout("NCHW", blocked));
    // The compiled kernels agree with the references on both legs.
    check_op("layout_transform", {{s, f32}}, layout("NCHW", blocked), exact());
    check_op("layout_transform", {{packed[0].shape(), f32}}, layout(blocked, "NCHW", s[1]),
             exact());
    std::vector<runtime::NDArray> back = def.reference(packed, layout(blocked, "NCHW", s[1]));
    ASSERT_EQ(back[0].shape(), s);
    EXPECT_EQ(std::memcmp(back[0].data(), x.data(), x.nbytes()), 0) << blocked;
  }
}

TEST(Transform, LayoutTransformErrors) {
  EXPECT_HAS(
      infer_error("layout_transform", {{{1, 8, 2, 2}, f32}},
                  {{"src_layout", std::string("NCHW")}, {"dst_layout", std::string("NHWC")}}),
      "layout_transform: attribute 'dst_layout' = 'NHWC' is not NCHW or NCHW<x>c");
  EXPECT_HAS(
      infer_error("layout_transform", {{{1, 8, 2, 2}, f32}},
                  {{"src_layout", std::string("NCHW8c")}, {"dst_layout", std::string("NCHW")}}),
      "layout_transform: input [1, 8, 2, 2] does not have layout 'NCHW8c'");
  EXPECT_HAS(
      infer_error("layout_transform", {{{1, 2, 2, 2, 4}, f32}},
                  {{"src_layout", std::string("NCHW8c")}, {"dst_layout", std::string("NCHW")}}),
      "layout_transform: input [1, 2, 2, 2, 4] has channel block 4");
  EXPECT_HAS(infer_error("layout_transform", {{{1, 2, 2, 2, 4}, f32}},
                         {{"src_layout", std::string("NCHW4c")},
                          {"dst_layout", std::string("NCHW")},
                          {"channels", int64_t{3}}}),
             "layout_transform: attribute 'channels' = 3 does not fit input [1, 2, 2, 2, 4]");
}

// ---- resize

// Every mode combination on small images, scaled up and down, by sizes and by scales.
TEST(Transform, ResizeAllModes) {
  const char* coords[] = {"half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel"};
  const char* nearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  struct Case {
    V in;
    V sizes;                     // HW, or empty
    std::vector<double> scales;  // NCHW, or empty
  };
  const Case cases[] = {
      {{1, 2, 4, 5}, {8, 10}, {}},                        // up by 2
      {{1, 3, 8, 6}, {4, 3}, {}},                         // down by 2
      {{2, 1, 5, 7}, {7, 3}, {}},                         // up and down, uneven
      {{1, 2, 6, 4}, {1, 9}, {}},                         // one output row
      {{1, 2, 4, 6}, {}, {1.0, 1.0, 1.5, 0.5}},           // scales
      {{1, 1, 9, 5}, {}, {1.0, 1.0, 1.0 / 3.0, 3.0}},     // scales down by 3, up by 3
      {{1, 2, 5, 5}, {}, {1.0, 1.0, 0.6000000238, 2.5}},  // a float32 scale
      // Rows of at least a vector: the innermost axis vectorized, with a tail.
      {{1, 2, 5, 7}, {9, 37}, {}},
      {{1, 3, 4, 3}, {}, {1.0, 1.0, 4.0, 8.0}},  // up by 8 (24 columns)
  };
  for (const Case& c : cases) {
    for (const char* coord : coords) {
      for (const char* mode : {"nearest", "linear"}) {
        for (const char* nm : nearest) {
          if (std::string(mode) == "linear" && std::string(nm) != "floor") continue;
          std::map<std::string, AttrValue> a{{"mode", std::string(mode)},
                                             {"coordinate_transformation_mode", std::string(coord)},
                                             {"nearest_mode", std::string(nm)}};
          if (c.sizes.empty()) {
            a["scales"] = c.scales;
          } else {
            a["sizes"] = c.sizes;
          }
          CheckOptions o = exact();
          o.lo = -1, o.hi = 1;
          if (std::string(mode) == "linear") o.tol = 1e-5;
          SCOPED_TRACE(std::string(mode) + " " + coord + " " + nm);
          check_op("resize", {{c.in, f32}}, Attrs("resize", a), o);
        }
      }
    }
  }
}

// Cubic: every coordinate mode, up and down, Keys' coefficient -0.75 without exclude_outside and
// -0.5 with it, against the reference (double, ONNX's formulas).
TEST(Transform, ResizeCubic) {
  const char* coords[] = {"half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel"};
  struct Case {
    V in;
    V sizes;
    std::vector<double> scales;
  };
  const Case cases[] = {
      {{1, 1, 4, 4}, {}, {1.0, 1.0, 0.8, 0.8}},        // down by 0.8: the ONNX tests' case
      {{2, 1, 5, 9}, {3, 19}, {}},                     // up and down, long rows (vectorized)
      {{1, 1, 9, 5}, {}, {1.0, 1.0, 1.0 / 3.0, 3.0}},  // down by 3, up by 3
  };
  bool first = true;
  for (const Case& c : cases) {
    for (const char* coord : coords) {
      // Keys' -0.75 as is, -0.5 with the outside taps excluded (ONNX's test pairs them so).
      for (auto [a, exclude] : {std::pair{-0.75, int64_t{0}}, std::pair{-0.5, int64_t{1}}}) {
        std::map<std::string, AttrValue> attrs{
            {"mode", std::string("cubic")},
            {"coordinate_transformation_mode", std::string(coord)},
            {"cubic_coeff_a", a},
            {"exclude_outside", exclude}};
        if (c.sizes.empty()) {
          attrs["scales"] = c.scales;
        } else {
          attrs["sizes"] = c.sizes;
        }
        SCOPED_TRACE(std::string(coord) + " a " + std::to_string(a) + " exclude " +
                     std::to_string(exclude) + " input " + ops::list_str(c.in));
        CheckOptions o;
        o.tol = 1e-5;
        o.gpu = first;  // the GPU schedule (OpenCL) on the first case's modes
        check_op("resize", {{c.in, f32}}, Attrs("resize", attrs), o);
      }
    }
    first = false;
  }
}

// Known values: nearest half_pixel round_prefer_floor 2x2 -> 4x4 is a 2x2 block copy; linear
// align_corners of [[0, 1], [2, 3]] to 3x3 has the midpoints.
TEST(Transform, ResizeKnownValues) {
  const OpDef& def = lookup("resize");
  runtime::NDArray x = testing::array({1, 1, 2, 2}, f32);
  testing::write<float>(x, {0, 1, 2, 3});
  std::vector<runtime::NDArray> up = def.reference({x}, Attrs("resize", {{"sizes", V{4, 4}}}));
  EXPECT_EQ(testing::read<float>(up[0]),
            (std::vector<float>{0, 0, 1, 1, 0, 0, 1, 1, 2, 2, 3, 3, 2, 2, 3, 3}));
  std::vector<runtime::NDArray> lin = def.reference(
      {x}, Attrs("resize", {{"sizes", V{3, 3}},
                            {"mode", std::string("linear")},
                            {"coordinate_transformation_mode", std::string("align_corners")}}));
  EXPECT_EQ(testing::read<float>(lin[0]), (std::vector<float>{0, 0.5f, 1, 1, 1.5f, 2, 2, 2.5f, 3}));
  check_op("resize", {{{1, 1, 2, 2}, f32}},
           Attrs("resize", {{"sizes", V{3, 3}},
                            {"mode", std::string("linear")},
                            {"coordinate_transformation_mode", std::string("align_corners")}}));
  // align_corners with scales that give no whole output length: ONNX divides by in * scale - 1
  // (0.6 * 4 - 1 = 1.4), not by out - 1; the two outputs of a row 1, 2, 3, 4 are 1 and
  // 1 + 3 / 1.4.
  runtime::NDArray row = testing::array({1, 1, 1, 4});
  testing::write<float>(row, {1, 2, 3, 4});
  Attrs corners("resize", {{"scales", std::vector<double>{1, 1, 1, 0.6}},
                           {"mode", std::string("linear")},
                           {"coordinate_transformation_mode", std::string("align_corners")}});
  std::vector<float> got = testing::read<float>(def.reference({row}, corners)[0]);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_FLOAT_EQ(got[1], static_cast<float>(1 + 3 / 1.4));
  check_op("resize", {{{1, 2, 5, 4}, f32}},
           Attrs("resize", {{"scales", std::vector<double>{1, 1, 0.6, 0.6}},
                            {"mode", std::string("linear")},
                            {"coordinate_transformation_mode", std::string("align_corners")}}));
  check_op(
      "resize", {{{1, 2, 5, 7}, f32}},
      Attrs("resize", {{"sizes", V{3, 4}},
                       {"coordinate_transformation_mode", std::string("tf_half_pixel_for_nn")}}));
}

TEST(Transform, ResizeErrors) {
  TensorType img{{1, 2, 4, 4}, f32};
  EXPECT_HAS(infer_error("resize", {img}, {{"sizes", V{8, 8}}, {"mode", std::string("bicubic")}}),
             "resize: attribute 'mode' = 'bicubic' is not nearest, linear or cubic");
  EXPECT_HAS(
      infer_error(
          "resize", {img},
          {{"sizes", V{8, 8}}, {"mode", std::string("cubic")}, {"exclude_outside", int64_t{2}}}),
      "resize: attribute 'exclude_outside' must be 0 or 1, not 2");
  EXPECT_HAS(infer_error("resize", {img},
                         {{"sizes", V{8, 8}},
                          {"coordinate_transformation_mode", std::string("tf_crop_and_resize")}}),
             "resize: attribute 'coordinate_transformation_mode' = 'tf_crop_and_resize' is not");
  EXPECT_HAS(infer_error("resize", {img}, {{"sizes", V{8, 8}}, {"nearest_mode", std::string("x")}}),
             "resize: attribute 'nearest_mode' = 'x' is not");
  EXPECT_HAS(infer_error("resize", {img}, {}),
             "resize: needs exactly one of the attributes 'sizes' and 'scales'");
  EXPECT_HAS(infer_error("resize", {img}, {{"sizes", V{1, 3, 8, 8}}}),
             "resize: attribute 'sizes' [1, 3, 8, 8] changes N or C of input [1, 2, 4, 4]");
  EXPECT_HAS(infer_error("resize", {img}, {{"scales", std::vector<double>{1, 2, 2, 2}}}),
             "resize: attribute 'scales' must keep N and C");
  EXPECT_HAS(infer_error("resize", {img}, {{"scales", std::vector<double>{0.1, 0.1}}}),
             "resize: attribute 'scales' gives an empty output");
  EXPECT_HAS(infer_error("resize", {{{2, 4, 4}, f32}}, {{"sizes", V{8, 8}}}),
             "resize: input [2, 4, 4] is not NCHW (rank 4)");
  EXPECT_HAS(infer_error("resize", {{{1, 2, 4, 4}, i32}}, {{"sizes", V{8, 8}}}),
             "resize: input must be float32, not int32");
}

}  // namespace
}  // namespace anvil::ops
