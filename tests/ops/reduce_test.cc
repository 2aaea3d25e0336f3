// Reductions, argmax/argmin and softmax against their double-precision references.
//
// Tolerances: reduce_sum/reduce_mean 1e-5 relative to the magnitude of what is summed (the sum,
// or mean, of |x| over the reduced elements; cancellation can make the result itself small);
// reduce_prod 1e-5 relative to the result; reduce_max/reduce_min and argmax/argmin exact;
// softmax/log_softmax 1e-5 (relative to 1 + |want|).
#include <gtest/gtest.h>

#include <random>
#include <sstream>

#include "ops_testing.h"
#include "testing/errors.h"

namespace anvil::ops {
namespace {

using ir::DataType;
using ops_testing::check_op;
using ops_testing::CheckOptions;

const DataType f32 = DataType::Float32();

std::string describe(const std::vector<int64_t>& v) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << "]";
  return os.str();
}

Attrs reduce_attrs(const std::string& op, const std::vector<int64_t>& axes, int64_t keepdims) {
  std::map<std::string, AttrValue> values{{"keepdims", keepdims}};
  if (!axes.empty()) values["axes"] = axes;
  return Attrs(op, values);
}

// |x| elementwise, for the magnitude of a sum.
runtime::NDArray abs_of(const runtime::NDArray& a) {
  runtime::NDArray out = runtime::NDArray::empty(a.shape(), runtime::dl_float32());
  for (int64_t i = 0; i < a.numel(); ++i) out.data_as<float>()[i] = std::abs(a.data_as<float>()[i]);
  return out;
}

// Checks reduction `op` with its tolerance rule.
void check_reduce(const std::string& op, const std::vector<int64_t>& shape,
                  const std::vector<int64_t>& axes, int64_t keepdims, uint32_t seed = 1) {
  SCOPED_TRACE(op + " shape " + describe(shape) + " axes " + describe(axes) + " keepdims " +
               std::to_string(keepdims));
  Attrs attrs = reduce_attrs(op, axes, keepdims);
  CheckOptions options;
  options.seed = seed;
  if (op == "reduce_sum" || op == "reduce_mean") {
    options.magnitude = [op, attrs](const std::vector<runtime::NDArray>& in) {
      return lookup(op).reference({abs_of(in[0])}, attrs);
    };
  }
  if (op == "reduce_prod") options.lo = 0.5, options.hi = 1.5;
  if (op == "reduce_max" || op == "reduce_min") options.tol = 0;  // one of the inputs, exactly
  check_op(op, {{shape, f32}}, attrs, options);
}

const std::vector<std::string> kReduceOps = {"reduce_sum", "reduce_mean", "reduce_max",
                                             "reduce_min", "reduce_prod"};

std::vector<int64_t> random_shape(std::mt19937& rng, int rank, int64_t lo, int64_t hi) {
  std::uniform_int_distribution<int64_t> d(lo, hi);
  std::vector<int64_t> shape;
  for (int i = 0; i < rank; ++i) shape.push_back(d(rng));
  return shape;
}

// Every subset of the axes of a rank-3 input (the empty one meaning all), each axis written
// positive or negative at random, keepdims 0 and 1.
TEST(Reduce, EveryAxisCombinationOfRank3) {
  std::mt19937 rng(7);
  std::vector<std::vector<int64_t>> shapes = {
      random_shape(rng, 3, 2, 23), {5, 1, 9}, {1, 7, 1}, random_shape(rng, 3, 1, 40)};
  for (const std::string& op : kReduceOps) {
    for (const std::vector<int64_t>& shape : shapes) {
      for (int mask = 0; mask < 8; ++mask) {
        std::vector<int64_t> axes;
        for (int d = 0; d < 3; ++d) {
          if (mask & (1 << d)) axes.push_back(rng() % 2 ? d : d - 3);
        }
        for (int64_t keepdims : {0, 1}) check_reduce(op, shape, axes, keepdims, rng());
      }
    }
  }
}

TEST(Reduce, OtherRanksAndUnorderedAxes) {
  std::mt19937 rng(11);
  for (const std::string& op : kReduceOps) {
    check_reduce(op, {17}, {}, 1);
    check_reduce(op, {17}, {0}, 0);
    check_reduce(op, {1}, {-1}, 0);
    check_reduce(op, {3, 4, 5, 6}, {3, -3}, 1, rng());
    check_reduce(op, {3, 4, 5, 6}, {2, 0}, 0, rng());
    check_reduce(op, {2, 3, 1, 5, 7}, {-1, 1, 2}, 0, rng());
    check_reduce(op, {}, {}, 0);  // a scalar: reduced over no axes, itself
    check_reduce(op, {}, {}, 1);
  }
}

// Shapes large enough for the parallel outer loop, the rfactor-ed contiguous reduction (last
// axis reduced, extent >= 2 vectors) and the vectorized kept last axis.
TEST(Reduce, LargeShapesUseEveryScheduleRule) {
  for (std::string op : {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min"}) {
    check_reduce(op, {67, 1001}, {1}, 0);       // rfactor, parallel
    check_reduce(op, {1001, 67}, {0}, 1);       // vectorized kept axis, parallel over its blocks
    check_reduce(op, {9, 37, 129}, {1}, 0);     // reduction between kept axes
    check_reduce(op, {9, 37, 129}, {1, 2}, 1);  // trailing run of two reduced axes
    check_reduce(op, {70000}, {}, 0);           // everything into a scalar
  }
  check_reduce("reduce_prod", {67, 101}, {1}, 0);
}

// float64 through the same schedules, within 1e-12 of the references' double sums.
TEST(Reduce, Float64) {
  for (const std::string& op : kReduceOps) {
    SCOPED_TRACE(op);
    CheckOptions options;
    options.tol = 1e-12;
    options.gpu = false;
    if (op == "reduce_prod") options.lo = 0.5, options.hi = 1.5;
    for (const auto& [shape, axes] :
         std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{
             {{67, 1001}, {1}}, {{1001, 67}, {0}}, {{9, 37, 129}, {1}}, {{3, 4, 5}, {}}})
      check_op(op, {{shape, DataType::Float(64)}}, reduce_attrs(op, axes, 0), options);
  }
}

// int32 and int64 sums, products and extremes: exact, against the references (the mean takes
// floats only).
TEST(Reduce, Integers) {
  for (const std::string& op : kReduceOps) {
    if (op == "reduce_mean") continue;
    for (DataType t : {DataType::Int32(), DataType::Int64()}) {
      SCOPED_TRACE(op + " " + t.to_string());
      CheckOptions options;
      options.tol = 0;
      options.gpu = false;
      options.lo = op == "reduce_prod" ? -1 : -1000;  // products of {-1, 0, 1} stay small
      options.hi = op == "reduce_prod" ? 1 : 1000;
      for (const auto& [shape, axes] :
           std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{
               {{5, 67}, {1}}, {{67, 5}, {0}}, {{3, 9, 4}, {1}}, {{2, 3, 2}, {}}})
        check_op(op, {{shape, t}}, reduce_attrs(op, axes, 0), options);
    }
  }
}

// A sum that cancels: the result is near zero, the tolerance relative to sum |x|.
TEST(Reduce, SumToleranceIsRelativeToTheMagnitude) {
  runtime::NDArray x = runtime::NDArray::empty({4, 3001}, runtime::dl_float32());
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> d(1000.0f, 2000.0f);
  for (int64_t r = 0; r < 4; ++r) {
    for (int64_t i = 0; i < 1500; ++i) {
      float v = d(rng);
      x.data_as<float>()[r * 3001 + 2 * i] = v;
      x.data_as<float>()[r * 3001 + 2 * i + 1] = -v;
    }
    x.data_as<float>()[r * 3001 + 3000] = 0.25f;
  }
  for (std::string op : {"reduce_sum", "reduce_mean"}) {
    Attrs attrs = reduce_attrs(op, {1}, 0);
    CheckOptions options;
    options.inputs = {x};
    options.magnitude = [op, attrs](const std::vector<runtime::NDArray>& in) {
      return lookup(op).reference({abs_of(in[0])}, attrs);
    };
    check_op(op, {{{4, 3001}, f32}}, attrs, options);
  }
}

TEST(Reduce, RejectsBadAxes) {
  auto infer = [](const std::string& op, const std::vector<int64_t>& shape, const Attrs& attrs) {
    return testing::user_error([&] { lookup(op).infer({{shape, f32}}, attrs); });
  };
  std::string msg = infer("reduce_sum", {2, 3, 4}, reduce_attrs("reduce_sum", {3}, 1));
  EXPECT_NE(msg.find("reduce_sum: axis 3 is out of range for an input of shape [2, 3, 4] (rank 3, "
                     "valid axes are -3 to 2)"),
            std::string::npos)
      << msg;
  msg = infer("reduce_max", {2, 3, 4}, reduce_attrs("reduce_max", {0, -4}, 1));
  EXPECT_NE(msg.find("reduce_max: axis -4 is out of range"), std::string::npos) << msg;
  msg = infer("reduce_mean", {2, 3, 4}, reduce_attrs("reduce_mean", {2, -1}, 1));
  EXPECT_NE(msg.find("reduce_mean: axis -1 (dimension 2) appears twice in axes"), std::string::npos)
      << msg;
  msg = infer("reduce_min", {2, 3}, reduce_attrs("reduce_min", {0}, 2));
  EXPECT_NE(msg.find("reduce_min: attribute 'keepdims' must be 0 or 1, got 2"), std::string::npos)
      << msg;
  msg = testing::user_error([] {
    lookup("reduce_mean").infer({{{2, 3}, DataType::Int32()}}, Attrs("reduce_mean", {}));
  });
  EXPECT_NE(msg.find("reduce_mean: input must be float16, float32 or float64, not int32"),
            std::string::npos)
      << msg;
  msg = testing::user_error([] {
    lookup("reduce_sum").infer({{{2, 3}, DataType::Int(16)}}, Attrs("reduce_sum", {}));
  });
  EXPECT_NE(msg.find("reduce_sum: input must be float16, float32 or float64, not int16"),
            std::string::npos)
      << msg;
  msg = testing::user_error([] {
    lookup("reduce_sum").infer({{{2}, f32}, {{2}, f32}}, Attrs("reduce_sum", {}));
  });
  EXPECT_NE(msg.find("reduce_sum: expects 1 input, got 2"), std::string::npos) << msg;
}

// ---- argmax / argmin

Attrs arg_attrs(const std::string& op, int64_t axis, int64_t keepdims, int64_t last) {
  return Attrs(op, {{"axis", axis}, {"keepdims", keepdims}, {"select_last_index", last}});
}

TEST(ArgReduce, EveryAxisOfRank3) {
  std::mt19937 rng(5);
  std::vector<std::vector<int64_t>> shapes = {random_shape(rng, 3, 2, 21), {6, 1, 35}, {40, 3, 33}};
  for (std::string op : {"argmax", "argmin"}) {
    for (const std::vector<int64_t>& shape : shapes) {
      for (int64_t axis = -3; axis < 3; ++axis) {
        for (int64_t keepdims : {0, 1}) {
          int64_t last = static_cast<int64_t>(rng() % 2);
          SCOPED_TRACE(op + " shape " + describe(shape) + " axis " + std::to_string(axis));
          CheckOptions options;
          options.seed = rng();
          check_op(op, {{shape, f32}}, arg_attrs(op, axis, keepdims, last), options);
        }
      }
    }
  }
}

TEST(ArgReduce, LargeShapes) {
  for (std::string op : {"argmax", "argmin"}) {
    check_op(op, {{{300, 257}, f32}}, arg_attrs(op, 1, 0, 0));
    check_op(op, {{{257, 300}, f32}}, arg_attrs(op, 0, 1, 0));
    check_op(op, {{{5000}, f32}}, arg_attrs(op, 0, 0, 1));
  }
}

// Values from {0, 1, 2}: every row has ties; the first (or last) index of the extreme wins.
TEST(ArgReduce, TiesPickTheFirstOrLastIndex) {
  std::vector<int64_t> shape = {7, 9, 33};
  runtime::NDArray x = runtime::NDArray::empty(shape, runtime::dl_float32());
  std::mt19937 rng(9);
  for (int64_t i = 0; i < x.numel(); ++i) x.data_as<float>()[i] = static_cast<float>(rng() % 3);
  for (std::string op : {"argmax", "argmin"}) {
    for (int64_t axis = 0; axis < 3; ++axis) {
      for (int64_t last : {0, 1}) {
        CheckOptions options;
        options.inputs = {x};
        check_op(op, {{shape, f32}}, arg_attrs(op, axis, 1, last), options);
      }
    }
  }
  // One row spelled out: max 5 at indices 1 and 3, min 1 at 0 and 4.
  runtime::NDArray row = runtime::NDArray::empty({5}, runtime::dl_float32());
  float values[] = {1, 5, 2, 5, 1};
  for (int i = 0; i < 5; ++i) row.data_as<float>()[i] = values[i];
  std::vector<runtime::NDArray> first =
      lookup("argmax").reference({row}, arg_attrs("argmax", 0, 0, 0));
  std::vector<runtime::NDArray> last =
      lookup("argmax").reference({row}, arg_attrs("argmax", 0, 0, 1));
  std::vector<runtime::NDArray> min_last =
      lookup("argmin").reference({row}, arg_attrs("argmin", 0, 0, 1));
  EXPECT_EQ(first[0].data_as<int64_t>()[0], 1);
  EXPECT_EQ(last[0].data_as<int64_t>()[0], 3);
  EXPECT_EQ(min_last[0].data_as<int64_t>()[0], 4);
  for (int64_t l : {0, 1}) {
    CheckOptions options;
    options.inputs = {row};
    check_op("argmax", {{{5}, f32}}, arg_attrs("argmax", 0, 0, l), options);
    check_op("argmin", {{{5}, f32}}, arg_attrs("argmin", 0, 0, l), options);
  }
}

// A NaN in a row is its argmax and argmin (NumPy's rule), the first one unless
// select_last_index.
TEST(ArgReduce, NaNIsTheExtreme) {
  runtime::NDArray x = runtime::NDArray::empty({3, 20}, runtime::dl_float32());
  std::mt19937 rng(2);
  for (int64_t i = 0; i < x.numel(); ++i) x.data_as<float>()[i] = static_cast<float>(rng() % 5);
  x.data_as<float>()[4] = NAN;
  x.data_as<float>()[11] = NAN;
  x.data_as<float>()[20 + 19] = NAN;
  std::vector<runtime::NDArray> want =
      lookup("argmax").reference({x}, arg_attrs("argmax", 1, 0, 0));
  EXPECT_EQ(want[0].data_as<int64_t>()[0], 4);
  EXPECT_EQ(want[0].data_as<int64_t>()[1], 19);
  want = lookup("argmin").reference({x}, arg_attrs("argmin", 1, 0, 1));
  EXPECT_EQ(want[0].data_as<int64_t>()[0], 11);
  for (std::string op : {"argmax", "argmin"}) {
    for (int64_t last : {0, 1}) {
      CheckOptions options;
      options.inputs = {x};
      check_op(op, {{{3, 20}, f32}}, arg_attrs(op, 1, 0, last), options);
    }
  }
}

TEST(ArgReduce, RejectsBadAttributes) {
  std::string msg = testing::user_error([] {
    lookup("argmax").infer({{{2, 3}, f32}}, arg_attrs("argmax", 2, 1, 0));
  });
  EXPECT_NE(msg.find("argmax: axis 2 is out of range for an input of shape [2, 3] (rank 2, valid "
                     "axes are -2 to 1)"),
            std::string::npos)
      << msg;
  msg = testing::user_error([] {
    lookup("argmin").infer({{{2, 3}, f32}}, arg_attrs("argmin", -3, 1, 0));
  });
  EXPECT_NE(msg.find("argmin: axis -3 is out of range"), std::string::npos) << msg;
  msg = testing::user_error([] {
    lookup("argmin").infer({{{2, 3}, f32}}, arg_attrs("argmin", 0, 1, 2));
  });
  EXPECT_NE(msg.find("argmin: attribute 'select_last_index' must be 0 or 1, got 2"),
            std::string::npos)
      << msg;
}

TEST(ArgReduce, OutputIsInt64) {
  std::vector<TensorType> out =
      lookup("argmax").infer({{{4, 5, 6}, f32}}, arg_attrs("argmax", -2, 0, 0));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape, (std::vector<int64_t>{4, 6}));
  EXPECT_EQ(out[0].dtype, DataType::Int64());
}

// ---- softmax / log_softmax

TEST(Softmax, EveryAxis) {
  std::mt19937 rng(13);
  std::vector<std::vector<int64_t>> shapes = {
      random_shape(rng, 3, 2, 25), {4, 1, 19}, random_shape(rng, 4, 1, 9), {37}};
  for (std::string op : {"softmax", "log_softmax"}) {
    for (const std::vector<int64_t>& shape : shapes) {
      int64_t rank = static_cast<int64_t>(shape.size());
      for (int64_t axis = -rank; axis < rank; ++axis) {
        SCOPED_TRACE(op + " shape " + describe(shape) + " axis " + std::to_string(axis));
        CheckOptions options;
        options.seed = rng();
        check_op(op, {{shape, f32}}, Attrs(op, {{"axis", axis}}), options);
      }
    }
    check_op(op, {{{3, 4, 5}, f32}}, Attrs(op, {}));  // default axis -1
  }
}

// Inputs in [-50, 50]: exp without the max subtracted would overflow (exp(50) * 1000 terms is
// fine in float, but e^88 is the limit: the shift keeps every exponent <= 0).
TEST(Softmax, LargeInputsAreStable) {
  for (std::string op : {"softmax", "log_softmax"}) {
    for (int64_t axis : {0, 1, -1}) {
      CheckOptions options;
      options.lo = -50, options.hi = 50;
      check_op(op, {{{16, 9, 77}, f32}}, Attrs(op, {{"axis", axis}}), options);
    }
    // Values near float's exp limit: exp(100) overflows float, exp(x - max) does not.
    runtime::NDArray x = runtime::NDArray::empty({2, 40}, runtime::dl_float32());
    for (int64_t i = 0; i < x.numel(); ++i)
      x.data_as<float>()[i] = 90.0f + static_cast<float>(i % 7);
    CheckOptions options;
    options.inputs = {x};
    check_op(op, {{{2, 40}, f32}}, Attrs(op, {{"axis", 1}}), options);
  }
}

TEST(Softmax, LargeShapes) {
  for (std::string op : {"softmax", "log_softmax"}) {
    check_op(op, {{{128, 1000}, f32}}, Attrs(op, {{"axis", 1}}));   // per row, parallel rows
    check_op(op, {{{64, 50, 33}, f32}}, Attrs(op, {{"axis", 1}}));  // vectorized inner axis
    check_op(op, {{{2000, 20}, f32}}, Attrs(op, {{"axis", 0}}));    // axis 0: no outer loop
  }
}

TEST(Softmax, RejectsBadAxis) {
  std::string msg = testing::user_error([] {
    lookup("softmax").infer({{{2, 3}, f32}}, Attrs("softmax", {{"axis", int64_t{2}}}));
  });
  EXPECT_NE(msg.find("softmax: axis 2 is out of range for an input of shape [2, 3] (rank 2, "
                     "valid axes are -2 to 1)"),
            std::string::npos)
      << msg;
  msg = testing::user_error([] {
    lookup("log_softmax").infer({{{2, 3}, f32}}, Attrs("log_softmax", {{"axis", int64_t{-3}}}));
  });
  EXPECT_NE(msg.find("log_softmax: axis -3 is out of range"), std::string::npos) << msg;
}

std::string lowered(const ir::LoweredFunc& f) {
  std::ostringstream os;
  os << f.body;
  return os.str();
}

// The default rules show in the loop nest: rfactor-ed vector partials for a contiguous
// reduction, vectors of outputs for a kept last axis, parallel outer loops for large inputs, one
// parallel loop over rows for softmax with its stages inside.
TEST(Reduce, DefaultSchedulesFollowTheRule) {
  std::string ir =
      lowered(check_op("reduce_sum", {{{67, 1001}, f32}}, reduce_attrs("reduce_sum", {1}, 0)));
  EXPECT_NE(ir.find("parallel for"), std::string::npos) << ir;
  EXPECT_NE(ir.find("reduce_sum.rf[ramp("), std::string::npos) << ir;
  ir = lowered(check_op("reduce_max", {{{1001, 67}, f32}}, reduce_attrs("reduce_max", {0}, 1)));
  EXPECT_NE(ir.find("parallel for"), std::string::npos) << ir;
  EXPECT_NE(ir.find("reduce_max[ramp("), std::string::npos) << ir;
  ir = lowered(check_op("reduce_min", {{{3, 5}, f32}}, reduce_attrs("reduce_min", {1}, 1)));
  EXPECT_EQ(ir.find("parallel for"), std::string::npos) << ir;  // too little work
  ir = lowered(check_op("softmax", {{{128, 1000}, f32}}, Attrs("softmax", {{"axis", int64_t{1}}})));
  EXPECT_EQ(ir.rfind("parallel for", 0), 0u) << ir;  // everything inside one loop over rows
  EXPECT_EQ(ir.find("parallel for", 1), std::string::npos) << ir;
  EXPECT_NE(ir.find("softmax_max.rf[ramp("), std::string::npos) << ir;
}

TEST(Reduce, Patterns) {
  for (const std::string& op : kReduceOps) EXPECT_EQ(lookup(op).pattern, Pattern::kReduction);
  EXPECT_EQ(lookup("argmax").pattern, Pattern::kReduction);
  EXPECT_EQ(lookup("argmin").pattern, Pattern::kReduction);
  EXPECT_EQ(lookup("softmax").pattern, Pattern::kOpaque);
  EXPECT_EQ(lookup("log_softmax").pattern, Pattern::kOpaque);
}

}  // namespace
}  // namespace anvil::ops
