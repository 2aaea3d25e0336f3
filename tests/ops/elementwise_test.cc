// Elementwise operators against their references, on random shapes with broadcasting.
//
// Tolerances (|got - want| <= tol * (1 + |want|)):
//   1e-6  ops that are exact or correctly rounded in float32 (relu, leaky_relu, clip, neg, abs,
//         floor, ceil, add, sub, mul, div, reciprocal, sqrt, maximum, minimum, prelu,
//         hard_sigmoid, hard_swish) and libm's log and pow
//   2e-6  ops on the back end's float32 polynomials (exp, tanh, sigmoid, erf, gelu, elu)
//   exact integer and bool outputs (comparisons, logic, where, cast to integers and bool)
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <sstream>

#include "anvil/lower/lower.h"
#include "ops_testing.h"
#include "testing/errors.h"
#include "testing/kernel_args.h"

namespace anvil::ops {
namespace {

using ir::DataType;
using ops_testing::check_op;
using ops_testing::CheckOptions;

const DataType f32 = DataType::Float32();
const DataType i32 = DataType::Int32();
const DataType i64 = DataType::Int64();
const DataType b8 = DataType::Bool();
using Shape = std::vector<int64_t>;

constexpr double kExact = 1e-6;
constexpr double kPoly = 2e-6;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// Shapes for unary ops: fixed ones (one element, odd sizes, one big enough to be vectorized and
// parallel) and random ones of rank 1 to 4 (fixed seed).
std::vector<Shape> unary_shapes() {
  std::vector<Shape> shapes = {{1}, {7}, {3, 17, 5}, {3, 37, 5}};
  std::mt19937 rng(7);
  for (int k = 0; k < 3; ++k) {
    Shape s(std::uniform_int_distribution<size_t>(1, 4)(rng));
    for (int64_t& d : s) d = std::uniform_int_distribution<int64_t>(1, 9)(rng);
    shapes.push_back(s);
  }
  return shapes;
}

// Shape pairs for binary ops: broadcasting patterns, scalar-like [1], rank mismatch, both sides
// broadcasting, one element, a big one, and random equal shapes.
std::vector<std::pair<Shape, Shape>> binary_shapes() {
  std::vector<std::pair<Shape, Shape>> pairs = {
      {{4, 1, 7}, {3, 1}}, {{5, 6}, {1}},    {{1}, {2, 3, 5}},      {{2, 3, 5}, {5}},
      {{1}, {1}},          {{6, 1}, {1, 9}}, {{3, 37, 5}, {37, 1}}, {{2, 1, 3, 1}, {4, 1, 5}}};
  for (const Shape& s : unary_shapes()) pairs.push_back({s, s});
  return pairs;
}

void check_unary(const std::string& name, const Attrs& attrs, DataType t, double tol, double lo,
                 double hi) {
  uint32_t seed = 1;
  for (const Shape& s : unary_shapes()) {
    SCOPED_TRACE(name + " " + to_string(TensorType{s, t}));
    CheckOptions opt;
    opt.tol = tol;
    opt.lo = lo;
    opt.hi = hi;
    opt.seed = seed++;
    check_op(name, {{s, t}}, attrs, opt);
  }
}

void check_binary(const std::string& name, DataType t, double tol, double lo, double hi,
                  const Attrs& attrs = {}) {
  uint32_t seed = 1;
  for (const auto& [a, b] : binary_shapes()) {
    SCOPED_TRACE(name + " " + to_string(TensorType{a, t}) + " " + to_string(TensorType{b, t}));
    CheckOptions opt;
    opt.tol = tol;
    opt.lo = lo;
    opt.hi = hi;
    opt.seed = seed++;
    check_op(name, {{a, t}, {b, t}}, attrs, opt);
  }
}

template <typename T>
runtime::NDArray array_of(const std::vector<T>& values, DataType t) {
  runtime::NDArray a = testing::array({static_cast<int64_t>(values.size())}, t);
  testing::write(a, values);
  return a;
}

// `specials` followed by ordinary values up to 40 elements (so the vectorized loop sees them).
std::vector<float> padded(std::vector<float> specials, float fill = 0.5f) {
  for (size_t i = specials.size(); i < 40; ++i) specials.push_back(fill + 0.01f * i);
  return specials;
}

// ---- unary

TEST(Elementwise, UnaryFloat) {
  struct Case {
    std::string name;
    Attrs attrs;
    double tol, lo, hi;
  };
  std::vector<Case> cases = {
      {"relu", {}, kExact, -1, 1},
      {"leaky_relu", {}, kExact, -3, 3},
      {"leaky_relu", Attrs("leaky_relu", {{"alpha", 0.3}}), kExact, -3, 3},
      {"clip", Attrs("clip", {{"min", -0.5}, {"max", 0.25}}), kExact, -1, 1},
      {"clip", Attrs("clip", {{"min", int64_t{0}}}), kExact, -1, 1},
      {"clip", Attrs("clip", {{"max", 0.5}}), kExact, -1, 1},
      {"clip", {}, kExact, -1, 1},
      {"clip", Attrs("clip", {{"min", 0.5}, {"max", -0.5}}), kExact, -1, 1},  // min > max: max
      {"sigmoid", {}, kPoly, -20, 20},
      {"elu", {}, kPoly, -5, 5},
      {"elu", Attrs("elu", {{"alpha", 0.3}}), kPoly, -5, 5},
      {"hard_sigmoid", {}, kExact, -4, 4},
      {"hard_sigmoid", Attrs("hard_sigmoid", {{"alpha", 0.5}, {"beta", 0.1}}), kExact, -4, 4},
      {"hard_swish", {}, kExact, -5, 5},
      {"tanh", {}, kPoly, -10, 10},
      {"exp", {}, kPoly, -30, 30},
      {"log", {}, kExact, 1e-3, 100},
      {"sqrt", {}, kExact, 0, 100},
      {"reciprocal", {}, kExact, 0.25, 4},
      {"reciprocal", {}, kExact, -4, -0.25},
      {"erf", {}, kPoly, -4, 4},
      {"gelu", {}, kPoly, -6, 6},
      {"gelu", Attrs("gelu", {{"approximate", std::string("tanh")}}), kPoly, -6, 6},
      {"neg", {}, kExact, -10, 10},
      {"abs", {}, kExact, -10, 10},
      {"floor", {}, kExact, -10, 10},
      {"ceil", {}, kExact, -10, 10},
      {"round", {}, kExact, -10, 10},
      {"selu", {}, kPoly, -5, 5},
      {"selu", Attrs("selu", {{"alpha", 2.0}, {"gamma", 0.5}}), kPoly, -5, 5},
      {"celu", {}, kPoly, -5, 5},
      {"celu", Attrs("celu", {{"alpha", 2.0}}), kPoly, -5, 5},
      {"softplus", {}, kPoly, -30, 30},
      {"softsign", {}, kExact, -10, 10},
      {"thresholded_relu", {}, kExact, -3, 3},
      {"thresholded_relu", Attrs("thresholded_relu", {{"alpha", -0.5}}), kExact, -3, 3},
      {"shrink", {}, kExact, -2, 2},
      {"shrink", Attrs("shrink", {{"bias", 1.5}, {"lambd", 1.5}}), kExact, -3, 3},
      // libm (sin and cos: LLVM's own), correctly rounded or within an ulp or two.
      {"sin", {}, kExact, -10, 10},
      {"cos", {}, kExact, -10, 10},
      {"tan", {}, kExact, -1.5, 1.5},
      {"asin", {}, kExact, -1, 1},
      {"acos", {}, kExact, -1, 1},
      {"atan", {}, kExact, -10, 10},
      {"sinh", {}, kExact, -10, 10},
      {"cosh", {}, kExact, -10, 10},
      {"asinh", {}, kExact, -10, 10},
      {"acosh", {}, kExact, 1, 10},
      {"atanh", {}, kExact, -0.99, 0.99},
  };
  for (const Case& c : cases) {
    Attrs attrs(c.name, c.attrs.values());
    check_unary(c.name, attrs, f32, c.tol, c.lo, c.hi);
  }
}

TEST(Elementwise, UnaryInteger) {
  for (DataType t : {i32, i64}) {
    check_unary("relu", Attrs("relu", {}), t, 0, -100, 100);
    check_unary("neg", Attrs("neg", {}), t, 0, -100, 100);
    check_unary("abs", Attrs("abs", {}), t, 0, -100, 100);
    check_unary("clip", Attrs("clip", {{"min", -20.0}, {"max", int64_t{30}}}), t, 0, -100, 100);
    check_unary("clip", Attrs("clip", {{"max", int64_t{-5}}}), t, 0, -100, 100);
    check_unary("sign", Attrs("sign", {}), t, 0, -100, 100);
    // Bounds at the type's limits.
    double tmin = static_cast<double>(t.min_value()), tmax = t == i32 ? 2147483647.0 : 0x1p62;
    check_unary("clip", Attrs("clip", {{"min", tmin}, {"max", tmax}}), t, 0, -100, 100);
  }
}

TEST(Elementwise, UnarySpecialValues) {
  auto check = [](const std::string& name, std::vector<float> specials, double tol = kExact,
                  Attrs attrs = {}) {
    SCOPED_TRACE(name);
    std::vector<float> v = padded(std::move(specials));
    CheckOptions opt;
    opt.tol = tol;
    opt.inputs = {array_of(v, f32)};
    check_op(name, {{{static_cast<int64_t>(v.size())}, f32}}, Attrs(name, attrs.values()), opt);
  };
  check("relu", {kNaN, -kInf, kInf, -0.0f});
  check("leaky_relu", {kNaN, -kInf, kInf});
  check("clip", {kNaN, -kInf, kInf}, kExact, Attrs("clip", {{"min", -1.0}, {"max", 1.0}}));
  check("hard_sigmoid", {kNaN, -kInf, kInf});
  check("elu", {kNaN, -kInf, kInf, -0.0f, 1e-6f, -1e-6f, -100.0f}, kPoly);
  check("exp", {kNaN, -kInf, kInf, 88.0f, -87.0f, 100.0f, -200.0f}, kPoly);
  check("sigmoid", {kNaN, -kInf, kInf, 100.0f, -100.0f}, kPoly);
  check("tanh", {kNaN, -kInf, kInf, 20.0f, -20.0f}, kPoly);
  check("erf", {kNaN, -kInf, kInf, 10.0f, -10.0f}, kPoly);
  check("log", {kNaN, 0.0f, -1.0f, kInf});
  check("sqrt", {kNaN, 0.0f, -1.0f, kInf});
  check("reciprocal", {kNaN, 0.0f, -0.0f, kInf});
  check("abs", {kNaN, -kInf, -0.0f});
  check("floor", {kNaN, -kInf, -2.5f, 2.5f});
  check("ceil", {kNaN, kInf, -2.5f, 2.5f});
  check("round", {kNaN, kInf, -2.5f, 2.5f, 0.5f, 1.5f, -0.5f});  // halves to even
  check("softplus", {kNaN, -kInf, kInf, 100.0f, -100.0f, 0.0f}, kPoly);
  check("selu", {kNaN, -kInf, kInf, -0.0f}, kPoly);
  check("shrink", {kNaN, -kInf, kInf, 0.5f, -0.5f});
  check("asin", {kNaN, 1.5f, -1.0f, 1.0f});
  check("acosh", {kNaN, 0.5f, 1.0f, kInf});
  check("atanh", {kNaN, 1.0f, -1.0f, 2.0f});
  check("sign", {kNaN, -kInf, kInf, -0.0f, 0.0f, -3.0f, 1e-30f});
  check("is_nan", {kNaN, -kInf, kInf, 0.0f});
  check("is_inf", {kNaN, -kInf, kInf, 0.0f});
  check("is_inf", {kNaN, -kInf, kInf, 0.0f}, kExact,
        Attrs("is_inf", {{"detect_negative", int64_t{0}}}));
  check("is_inf", {kNaN, -kInf, kInf, 0.0f}, kExact,
        Attrs("is_inf", {{"detect_positive", int64_t{0}}}));
}

// ---- binary

TEST(Elementwise, BinaryFloat) {
  check_binary("add", f32, kExact, -10, 10);
  check_binary("sub", f32, kExact, -10, 10);
  check_binary("mul", f32, kExact, -10, 10);
  check_binary("div", f32, kExact, 0.5, 4);
  check_binary("div", f32, kExact, -4, -0.5);
  check_binary("pow", f32, kExact, 0.1, 3);
  check_binary("maximum", f32, kExact, -10, 10);
  check_binary("minimum", f32, kExact, -10, 10);
}

TEST(Elementwise, BinaryInteger) {
  for (DataType t : {i32, i64}) {
    for (const char* name : {"add", "sub", "mul", "div", "maximum", "minimum"}) {
      check_binary(name, t, 0, -100, 100);
    }
  }
}

// Every element type compiled code takes besides float32, int32, int64 and bool: 8- and 16-bit
// integers, the unsigned ones (their division, order and maximum are unsigned) and float64
// (libm's functions, so the references' double results within 1e-12).
TEST(Elementwise, NarrowUnsignedAndDoubleTypes) {
  const DataType i8 = DataType::Int(8), i16 = DataType::Int(16), u8 = DataType::UInt(8),
                 u16 = DataType::UInt(16), u32 = DataType::UInt(32), u64 = DataType::UInt(64),
                 f64 = DataType::Float(64);
  auto binary = [](const std::string& name, DataType t, double lo, double hi) {
    SCOPED_TRACE(name + " " + t.to_string());
    CheckOptions opt;
    opt.lo = lo;
    opt.hi = hi;
    opt.gpu = false;
    opt.tol = 1e-12;
    check_op(name, {{{3, 37, 5}, t}, {{37, 1}, t}}, Attrs(name, {}), opt);
  };
  auto unary = [](const std::string& name, DataType t, double lo, double hi, Attrs attrs = {}) {
    SCOPED_TRACE(name + " " + t.to_string());
    CheckOptions opt;
    opt.lo = lo;
    opt.hi = hi;
    opt.gpu = false;
    opt.tol = 1e-12;
    check_op(name, {{{3, 37, 5}, t}}, Attrs(name, attrs.values()), opt);
  };
  for (DataType t : {i8, i16, u8, u16, u32, u64, f64}) {
    // Products of values up to 11 fit in int8; unsigned ranges start at 0.
    for (const char* name : {"add", "sub", "mul", "maximum", "minimum", "greater", "less", "equal"})
      binary(name, t, -11, 11);
    binary("div", t, 1, 100);
    unary("relu", t, -100, 100);
    unary("abs", t, -100, 100);
    unary("sign", t, -100, 100);
    unary("cast", t, -100, 100, Attrs("cast", {{"to", std::string("float32")}}));
    // A negative float to an unsigned type is undefined (ONNX): from 0.
    unary("cast", f32, t.is_uint() ? 0 : -100, 100, Attrs("cast", {{"to", t.to_string()}}));
  }
  // Unsigned order and division above the signed range.
  binary("maximum", u64, 0, 9e18);
  binary("div", u32, 1, 4e9);
  for (DataType t : {i8, i16, f64}) unary("neg", t, -100, 100);
  for (const char* name : {"exp", "tanh", "sigmoid", "erf"}) unary(name, f64, -5, 5);
  unary("log", f64, 1e-3, 100);
  unary("sqrt", f64, 0, 100);
  binary("pow", f64, 0.1, 3);
}

TEST(Elementwise, BitShift) {
  // Random shifts of random values of each unsigned width, then the edges: shifts by 0, by
  // width - 1 and by the width or more (0), against the reference's C shifts.
  const DataType u64 = DataType::UInt(64);
  for (DataType t : {DataType::UInt(8), DataType::UInt(16), DataType::UInt(32), u64}) {
    for (const char* direction : {"left", "right"}) {
      SCOPED_TRACE(t.to_string() + " " + direction);
      Attrs a("bit_shift", {{"direction", std::string(direction)}});
      CheckOptions opt;
      opt.lo = 0;
      opt.hi = static_cast<double>(t.bits() - 1);
      opt.gpu = false;
      check_op("bit_shift", {{{4, 33}, t}, {{33}, t}}, a, opt);
      opt.inputs = {array_of(std::vector<uint64_t>{1, 3, 255, 12345, 7, 1, 0, 9}, u64),
                    array_of(std::vector<uint64_t>{0, 1, 7, 3, static_cast<uint64_t>(t.bits()),
                                                   static_cast<uint64_t>(t.bits()) + 5, 2, 63},
                             u64)};
      if (t != u64) {
        for (auto& in : opt.inputs)
          in = lookup("cast").reference({in}, Attrs("cast", {{"to", t.to_string()}}))[0];
      }
      check_op("bit_shift", {{{8}, t}, {{8}, t}}, a, opt);
    }
  }
  std::vector<runtime::NDArray> want =
      lookup("bit_shift")
          .reference({array_of(std::vector<uint64_t>{3, 3, 1}, u64),
                      array_of(std::vector<uint64_t>{2, 64, 63}, u64)},
                     Attrs("bit_shift", {{"direction", std::string("left")}}));
  EXPECT_EQ(testing::read<uint64_t>(want[0]), (std::vector<uint64_t>{12, 0, uint64_t{1} << 63}));
  std::string msg = testing::user_error([] {
    lookup("bit_shift")
        .infer({{{2}, i32}, {{2}, i32}}, Attrs("bit_shift", {{"direction", std::string("left")}}));
  });
  EXPECT_NE(msg.find("bit_shift: inputs are int32; bit shifts take unsigned integers"),
            std::string::npos)
      << msg;
}

TEST(Elementwise, Mod) {
  // The divisor's sign (fmod 0) or the dividend's (fmod 1); by 0 and by -1: 0.
  for (DataType t : {i32, i64, DataType::Int(8)}) {
    for (int64_t fmod : {0, 1}) {
      SCOPED_TRACE(t.to_string() + " fmod " + std::to_string(fmod));
      CheckOptions opt;
      opt.lo = -9;
      opt.hi = 9;
      opt.gpu = false;
      check_op("mod", {{{3, 37, 5}, t}, {{37, 1}, t}}, Attrs("mod", {{"fmod", fmod}}), opt);
    }
  }
  CheckOptions opt;
  opt.gpu = false;
  opt.inputs = {array_of(std::vector<int32_t>{7, -7, 7, -7, 5, INT32_MIN, 0, 4}, i32),
                array_of(std::vector<int32_t>{3, 3, -3, -3, 0, -1, 5, 2}, i32)};
  std::vector<runtime::NDArray> want = lookup("mod").reference(opt.inputs, Attrs("mod", {}));
  EXPECT_EQ(testing::read<int32_t>(want[0]), (std::vector<int32_t>{1, 2, -2, -1, 0, 0, 0, 0}));
  check_op("mod", {{{8}, i32}, {{8}, i32}}, Attrs("mod", {}), opt);
  want = lookup("mod").reference(opt.inputs, Attrs("mod", {{"fmod", int64_t{1}}}));
  EXPECT_EQ(testing::read<int32_t>(want[0]), (std::vector<int32_t>{1, -1, 1, -1, 0, 0, 0, 0}));
  check_op("mod", {{{8}, i32}, {{8}, i32}}, Attrs("mod", {{"fmod", int64_t{1}}}), opt);
  // Unsigned, and floats (exact, as C's fmod).
  CheckOptions u;
  u.lo = 0;
  u.hi = 200;
  u.gpu = false;
  check_op("mod", {{{3, 37, 5}, DataType::UInt(8)}, {{37, 1}, DataType::UInt(8)}}, Attrs("mod", {}),
           u);
  CheckOptions f;
  f.lo = -10;
  f.hi = 10;
  f.tol = 0;
  check_op("mod", {{{3, 37, 5}, f32}, {{37, 1}, f32}}, Attrs("mod", {{"fmod", int64_t{1}}}), f);
  std::string msg = testing::user_error([] {
    lookup("mod").infer({{{2}, f32}, {{2}, f32}}, Attrs("mod", {}));
  });
  EXPECT_NE(msg.find("mod: attribute 'fmod' must be 1 for float inputs"), std::string::npos) << msg;
}

// float16: stored as half, computed in float32 and rounded back once per op, as the reference
// rounds its double result once: equal up to a half's ulp (2^-10 relative) where the two
// roundings differ.
TEST(Elementwise, Float16) {
  const DataType f16 = DataType::Float(16);
  auto check = [&](const std::string& name, std::vector<TensorType> in, Attrs attrs, double lo,
                   double hi) {
    SCOPED_TRACE(name);
    CheckOptions opt;
    opt.lo = lo;
    opt.hi = hi;
    opt.gpu = false;
    opt.tol = 1e-3;
    check_op(name, in, Attrs(name, attrs.values()), opt);
  };
  TensorType a{{3, 37, 5}, f16}, b{{37, 1}, f16};
  for (const char* name : {"add", "sub", "mul", "div", "maximum", "less"})
    check(name, {a, b}, {}, 0.5, 4);
  for (const char* name : {"relu", "exp", "tanh", "sigmoid", "sqrt", "neg", "abs"})
    check(name, {a}, {}, 0.1, 4);
  check("cast", {a}, Attrs("cast", {{"to", std::string("float32")}}), -100, 100);
  check("cast", {{{3, 37, 5}, f32}}, Attrs("cast", {{"to", std::string("float16")}}), -100, 100);
  check("cast", {{{3, 37, 5}, f32}}, Attrs("cast", {{"to", std::string("float16")}}), -1e5, 1e5);
}

TEST(Elementwise, IntegerDivTruncatesTowardZero) {
  // ONNX Div on integers truncates; x / 0 is 0 here (undefined in ONNX) and INT_MIN / -1 wraps.
  std::vector<int32_t> a = {7, -7, 7, -7, 9, 5, INT32_MIN, 3, 0, -1};
  std::vector<int32_t> b = {2, 2, -2, -2, 3, 0, -1, 7, 4, 0};
  CheckOptions opt;
  opt.inputs = {array_of(a, i32), array_of(b, i32)};
  check_op("div", {{{10}, i32}, {{10}, i32}}, Attrs("div", {}), opt);
  std::vector<runtime::NDArray> want = lookup("div").reference(opt.inputs, Attrs("div", {}));
  std::vector<int32_t> got = testing::read<int32_t>(want[0]);
  EXPECT_EQ(got, (std::vector<int32_t>{3, -3, -3, 3, 3, 0, INT32_MIN, 0, 0, 0}));

  std::vector<int64_t> a64 = {7, -7, INT64_MIN, -9000000000LL};
  std::vector<int64_t> b64 = {-2, 0, -1, 4};
  opt.inputs = {array_of(a64, i64), array_of(b64, i64)};
  check_op("div", {{{4}, i64}, {{4}, i64}}, Attrs("div", {}), opt);
}

TEST(Elementwise, PowNegativeBase) {
  CheckOptions opt;
  opt.inputs = {array_of(padded({-2.0f, -2.0f, -3.0f, 0.0f, kNaN, 1.0f}), f32),
                array_of(padded({3.0f, 2.0f, 0.5f, -1.0f, 0.0f, kNaN}), f32)};
  check_op("pow", {{{40}, f32}, {{40}, f32}}, Attrs("pow", {}), opt);
}

TEST(Elementwise, MaximumMinimumPropagateNaN) {
  for (const char* name : {"maximum", "minimum"}) {
    CheckOptions opt;
    opt.inputs = {array_of(padded({kNaN, 1.0f, kNaN, -kInf, kInf, 2.0f}, 0.25f), f32),
                  array_of(padded({1.0f, kNaN, kNaN, 3.0f, 3.0f, -0.0f}, 0.75f), f32)};
    check_op(name, {{{40}, f32}, {{40}, f32}}, Attrs(name, {}), opt);
    // Checks the reference itself: NaN in either operand gives NaN.
    std::vector<float> want =
        testing::read<float>(lookup(name).reference(opt.inputs, Attrs(name, {}))[0]);
    EXPECT_TRUE(std::isnan(want[0]) && std::isnan(want[1]) && std::isnan(want[2])) << name;
  }
}

TEST(Elementwise, Prelu) {
  std::vector<std::pair<Shape, Shape>> cases = {{{2, 3, 4, 5}, {3, 1, 1}},
                                                {{2, 3, 4, 5}, {1}},
                                                {{2, 3, 4, 5}, {5}},
                                                {{3, 37, 5}, {3, 37, 5}},
                                                {{1}, {1}}};
  uint32_t seed = 1;
  for (const auto& [x, slope] : cases) {
    CheckOptions opt;
    opt.tol = kExact;
    opt.lo = -3;
    opt.hi = 3;
    opt.seed = seed++;
    check_op("prelu", {{x, f32}, {slope, f32}}, Attrs("prelu", {}), opt);
  }
}

// ---- comparisons and logic

TEST(Elementwise, Comparisons) {
  for (const char* name : {"equal", "less", "less_equal", "greater", "greater_equal"}) {
    check_binary(name, f32, 0, -3, 3);
    // Small integer ranges make ties common.
    check_binary(name, i32, 0, -2, 2);
    check_binary(name, i64, 0, -2, 2);
    // Ties and NaN in floats: every comparison with NaN is false.
    CheckOptions opt;
    opt.inputs = {array_of(padded({1.0f, kNaN, kNaN, -0.0f, kInf, 2.0f}), f32),
                  array_of(padded({1.0f, 1.0f, kNaN, 0.0f, kInf, 1.0f}), f32)};
    check_op(name, {{{40}, f32}, {{40}, f32}}, Attrs(name, {}), opt);
  }
  check_binary("equal", b8, 0, 0, 1);
}

TEST(Elementwise, Logical) {
  for (const char* name : {"logical_and", "logical_or", "logical_xor"}) {
    check_binary(name, b8, 0, 0, 1);
  }
  check_unary("logical_not", Attrs("logical_not", {}), b8, 0, 0, 1);
}

// ---- where and cast

TEST(Elementwise, WhereBroadcastsThreeWays) {
  std::vector<std::array<Shape, 3>> cases = {{{{4, 1, 7}, {3, 1}, {1}}},
                                             {{{1}, {2, 3}, {3}}},
                                             {{{5}, {5}, {5}}},
                                             {{{3, 1, 5}, {1, 37, 1}, {3, 37, 5}}},
                                             {{{1}, {1}, {1}}}};
  uint32_t seed = 1;
  for (DataType t : {f32, i32, i64, b8}) {
    for (const auto& [c, x, y] : cases) {
      SCOPED_TRACE(to_string(TensorType{c, b8}) + " " + to_string(TensorType{x, t}) + " " +
                   to_string(TensorType{y, t}));
      CheckOptions opt;
      opt.lo = -100;
      opt.hi = 100;
      opt.seed = seed++;
      std::mt19937 rng(seed + 1000);
      opt.inputs = {ops_testing::random_array({c, b8}, rng)};
      check_op("where", {{c, b8}, {x, t}, {y, t}}, Attrs("where", {}), opt);
    }
  }
}

TEST(Elementwise, Cast) {
  for (DataType from : {f32, i32, i64, b8}) {
    for (const char* to : {"float32", "int32", "int64", "bool"}) {
      SCOPED_TRACE(str(from, " -> ", to));
      Attrs attrs("cast", {{"to", std::string(to)}});
      // Floats to integers truncate toward zero; random floats are rarely integral.
      double lo = from.is_bool() ? 0 : -100, hi = from.is_bool() ? 1 : 100;
      check_unary("cast", attrs, from, 0, lo, hi);
    }
  }
  // Float specials to bool (NaN is true) and to float; int64 to int32 wraps.
  CheckOptions opt;
  opt.inputs = {array_of(padded({kNaN, 0.0f, -0.0f, kInf, -2.5f, 0.25f}), f32)};
  check_op("cast", {{{40}, f32}}, Attrs("cast", {{"to", std::string("bool")}}), opt);
  opt.inputs = {
      array_of(std::vector<int64_t>{(1LL << 33) + 5, -(1LL << 40) - 3, -1, INT64_MAX}, i64)};
  check_op("cast", {{{4}, i64}}, Attrs("cast", {{"to", std::string("int32")}}), opt);
  std::vector<int32_t> wrapped = testing::read<int32_t>(
      lookup("cast").reference(opt.inputs, Attrs("cast", {{"to", std::string("int32")}}))[0]);
  EXPECT_EQ(wrapped, (std::vector<int32_t>{5, -3, -1, -1}));
}

// The injective schedule's row form: rows of whole vectors (or at least four: a tail) are
// vectorized along their innermost axis alone, so no lane divides the flat index per axis (which
// the simplifier cannot always undo: gathers and scatters); shorter rows keep the flat form.
TEST(Elementwise, InjectiveRowsNeedNoLaneDivisions) {
  Target avx512 = Target::parse("llvm -vector-bits=512");
  auto lowered = [&](const std::vector<Shape>& shapes) {
    std::vector<te::Tensor> ins;
    for (size_t i = 0; i < shapes.size(); ++i)
      ins.push_back(te::placeholder(to_exprs(shapes[i]), f32, "in" + std::to_string(i)));
    te::Tensor out = lookup("add").compute(ins, Attrs("add", {}))[0];
    te::Schedule s({out});
    lookup("add").schedule_x86(s, {out}, avx512, {});
    std::vector<te::Tensor> args = ins;
    args.push_back(out);
    std::ostringstream os;
    os << lower(s, args, "k").body;
    return os.str();
  };
  for (const std::vector<Shape>& shapes : std::vector<std::vector<Shape>>{
           {{1, 6, 7, 48}, {48}}, {{2, 3, 70}, {2, 3, 70}}, {{1, 5, 5, 64}, {1, 5, 1, 1}}}) {
    std::string ir = lowered(shapes);
    EXPECT_EQ(ir.find("floordiv(ramp"), std::string::npos) << ir;
    EXPECT_EQ(ir.find("floormod(ramp"), std::string::npos) << ir;
    EXPECT_NE(ir.find("ramp("), std::string::npos) << ir;
    check_op("add", {{shapes[0], f32}, {shapes[1], f32}}, Attrs("add", {}));
  }
  // A 7-column row (NCHW at 7x7) stays flat: one loop over all of it.
  std::string flat = lowered({{1, 8, 7, 7}, {1, 8, 7, 7}});
  EXPECT_NE(flat.find("i.j.fused.k.fused.l.fused.outer"), std::string::npos) << flat;
}

TEST(Elementwise, AllInjective) {
  for (const char* name :
       {"relu",          "leaky_relu",  "elu",        "clip",        "sigmoid",     "hard_sigmoid",
        "hard_swish",    "tanh",        "exp",        "log",         "sqrt",        "reciprocal",
        "erf",           "gelu",        "neg",        "abs",         "floor",       "ceil",
        "add",           "sub",         "mul",        "div",         "pow",         "maximum",
        "minimum",       "prelu",       "equal",      "less",        "less_equal",  "greater",
        "greater_equal", "logical_and", "logical_or", "logical_xor", "logical_not", "where",
        "cast"}) {
    EXPECT_EQ(lookup(name).pattern, Pattern::kInjective) << name;
  }
}

// ---- errors

std::string infer_error(const std::string& op, const std::vector<TensorType>& in,
                        std::map<std::string, AttrValue> attrs = {}) {
  return testing::user_error([&] { lookup(op).infer(in, Attrs(op, attrs)); });
}

void expect_has(const std::string& msg, const std::string& part) {
  EXPECT_NE(msg.find(part), std::string::npos) << "message: " << msg << "\nexpected: " << part;
}

TEST(Elementwise, AddRejectsShapesThatDoNotBroadcast) {
  expect_has(infer_error("add", {{{4, 3}, f32}, {{2, 3}, f32}}),
             "add: shapes [4, 3] and [2, 3] do not broadcast (dimension 0: 4 vs 2)");
}

TEST(Elementwise, WhereRejectsShapesThatDoNotBroadcast) {
  expect_has(infer_error("where", {{{2, 3}, b8}, {{3}, f32}, {{4, 3}, f32}}),
             "where: shapes [2, 3] and [4, 3] do not broadcast");
}

TEST(Elementwise, RejectsWrongArity) {
  expect_has(infer_error("sub", {{{3}, f32}}), "sub: expects 2 inputs, got 1");
  expect_has(infer_error("exp", {{{3}, f32}, {{3}, f32}}), "exp: expects 1 input, got 2");
  expect_has(infer_error("where", {{{3}, b8}, {{3}, f32}}), "where: expects 3 inputs, got 2");
}

TEST(Elementwise, RejectsWrongTypes) {
  expect_has(infer_error("exp", {{{3}, i32}}),
             "exp: input 0 is int32[3], expected float16, float32 or float64");
  expect_has(infer_error("pow", {{{3}, i64}, {{3}, i64}}),
             "pow: input 0 is int64[3], expected float16, float32 or float64");
  expect_has(infer_error("add", {{{3}, f32}, {{3}, i32}}),
             "add: input types differ: float32[3] and int32[3]");
  expect_has(infer_error("add", {{{3}, b8}, {{3}, b8}}),
             "add: input 0 is bool[3], expected a float or integer type");
  expect_has(infer_error("less", {{{2}, b8}, {{2}, b8}}),
             "less: input 0 is bool[2], expected a float or integer type");
  expect_has(infer_error("logical_and", {{{2}, b8}, {{2}, f32}}),
             "logical_and: input 1 is float32[2], expected bool");
  expect_has(infer_error("where", {{{2}, f32}, {{2}, f32}, {{2}, f32}}),
             "where: input 0 (condition) is float32[2], expected bool");
  expect_has(infer_error("where", {{{2}, b8}, {{2}, f32}, {{2}, i32}}),
             "where: input types differ: float32[2] and int32[2]");
  expect_has(infer_error("prelu", {{{2}, i32}, {{2}, i32}}),
             "prelu: input 0 is int32[2], expected float16, float32 or float64");
}

TEST(Elementwise, PreluRejectsSlopeThatDoesNotBroadcastToInput) {
  expect_has(infer_error("prelu", {{{4, 5}, f32}, {{2, 4, 5}, f32}}),
             "prelu: input 1 of shape [2, 4, 5] does not broadcast to input 0's shape [4, 5]");
  expect_has(infer_error("prelu", {{{4, 5}, f32}, {{3, 5}, f32}}),
             "prelu: shapes [4, 5] and [3, 5] do not broadcast");
}

TEST(Elementwise, RejectsInvalidAttributes) {
  expect_has(infer_error("cast", {{{3}, f32}}, {{"to", std::string("float7")}}),
             "cast: attribute 'to' is 'float7', expected float16/32/64, int8/16/32/64, "
             "uint8/16/32/64 or bool");
  expect_has(infer_error("cast", {{{3}, f32}}), "cast: missing attribute 'to'");
  expect_has(infer_error("cast", {{{3}, f32}}, {{"to", int64_t{1}}}),
             "cast: attribute 'to' must be a string");
  expect_has(infer_error("clip", {{{3}, i32}}, {{"min", -2.5}}),
             "clip: attribute 'min' is -2.5, but must be an integer for int32 input");
  expect_has(infer_error("clip", {{{3}, i32}}, {{"max", 1e30}}),
             "clip: attribute 'max' is 1e+30, outside the range of int32");
  expect_has(infer_error("clip", {{{3}, i32}}, {{"max", 2147483648.0}}),
             "clip: attribute 'max' is 2.14748e+09, outside the range of int32");
  expect_has(infer_error("clip", {{{3}, i64}}, {{"min", -0x1p64}}), "outside the range of int64");
  expect_has(infer_error("clip", {{{3}, f32}}, {{"max", std::nan("")}}),
             "clip: attribute 'max' must be a number, got NaN");
  expect_has(infer_error("leaky_relu", {{{3}, f32}}, {{"alpha", std::nan("")}}),
             "leaky_relu: attribute 'alpha' must be a number, got NaN");
  expect_has(infer_error("leaky_relu", {{{3}, f32}}, {{"alpha", std::string("big")}}),
             "leaky_relu: attribute 'alpha' must be a number");
  expect_has(infer_error("elu", {{{3}, f32}}, {{"alpha", std::nan("")}}),
             "elu: attribute 'alpha' must be a number, got NaN");
  expect_has(infer_error("hard_sigmoid", {{{3}, f32}}, {{"beta", std::nan("")}}),
             "hard_sigmoid: attribute 'beta' must be a number, got NaN");
  expect_has(infer_error("gelu", {{{3}, f32}}, {{"approximate", std::string("fast")}}),
             "gelu: attribute 'approximate' must be 'none' or 'tanh', got 'fast'");
}

}  // namespace
}  // namespace anvil::ops
