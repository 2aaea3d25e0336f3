// Intrinsic calls: the fast float32 approximations of exp, tanh, sigmoid and erf, measured over
// the whole float range against double-precision std:: functions, and the intrinsics that go to
// LLVM / libm.
//
// Bounds asserted (the measured maxima are printed, and were about half of these):
//   exp      <= 2 ulp of the correctly rounded result (denormal results included); +inf above
//            88.7228, 0 below -103.97, NaN stays NaN
//   tanh     <= 3e-7 absolute, <= 5e-7 relative (for |result| >= FLT_MIN)
//   sigmoid  <= 3e-7 absolute, <= 5e-7 relative (for result >= FLT_MIN)
//   erf      <= 3e-7 absolute, <= 5e-7 relative (for |result| >= FLT_MIN)
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "codegen/llvm_testing.h"

namespace anvil {
namespace {

using ir::Buffer;
using ir::DataType;
using ir::Expr;
using ir::Intrinsic;
using ir::Stmt;
using ir::Var;
using llvm_testing::array;
using llvm_testing::call;
using llvm_testing::compile;
using llvm_testing::func;
using llvm_testing::loop;
using llvm_testing::read;
using llvm_testing::write;
using ::testing::HasSubstr;

// out[i] = op(in[i]...) over n elements (padded to whole vectors), in 8-lane vector form, or as a
// scalar loop that LLVM vectorizes itself.
template <typename T>
std::vector<T> run(Intrinsic op, const std::vector<std::vector<T>>& inputs,
                   bool vector_form = true) {
  DataType t = sizeof(T) == 4 ? DataType::Float32() : DataType::Float(64);
  const int lanes = 8;
  int64_t n = (static_cast<int64_t>(inputs[0].size()) + lanes - 1) / lanes * lanes;
  Var size("n", DataType::Int64()), i("i", DataType::Int64());
  std::vector<Buffer> args;
  for (size_t k = 0; k < inputs.size(); ++k)
    args.push_back(Buffer::make("X" + std::to_string(k), t, {size}));
  Buffer out = Buffer::make("Y", t, {size});
  Expr idx = vector_form ? ir::Ramp::make(i * ir::make_const(i.type(), lanes),
                                          ir::make_one(i.type()), lanes)
                         : Expr(i);
  std::vector<Expr> call_args;
  for (const Buffer& b : args) call_args.push_back(ir::Load::make(b, {idx}));
  Expr extent = vector_form ? ir::floordiv(size, ir::make_const(size.type(), lanes)) : Expr(size);
  Stmt body = loop(i, extent, ir::Store::make(out, ir::Call::make(op, call_args), {idx}));
  args.push_back(out);
  auto m = compile({func("math", args, body)});
  std::vector<runtime::NDArray> arrays;
  std::vector<const DLTensor*> tensors;
  for (const std::vector<T>& in : inputs) {
    std::vector<T> padded = in;
    padded.resize(n, T(0));
    arrays.push_back(array({n}, t));
    write(arrays.back(), padded);
  }
  arrays.push_back(array({n}, t));
  for (const runtime::NDArray& a : arrays) tensors.push_back(a.get());
  EXPECT_EQ(call(m->get_function("math"), tensors), 0) << AnvilGetLastError();
  std::vector<T> result = read<T>(arrays.back());
  result.resize(inputs[0].size());
  return result;
}

// Every 1021st float bit pattern (both signs, every exponent: 4.2 million values), a dense sweep
// of [-12, 12], and the special values.
std::vector<float> sweep_inputs() {
  std::vector<float> x;
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 1021) {
    x.push_back(std::bit_cast<float>(static_cast<uint32_t>(bits)));
  }
  for (int k = 0; k <= 1000000; ++k) x.push_back(-12.0f + 24.0f * float(k) / 1e6f);
  const float specials[] = {0.0f,
                            -0.0f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            -std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::max(),
                            -std::numeric_limits<float>::max(),
                            std::numeric_limits<float>::min(),
                            -std::numeric_limits<float>::min(),
                            std::numeric_limits<float>::denorm_min(),
                            -std::numeric_limits<float>::denorm_min(),
                            88.72283172607422f,
                            88.72283935546875f,
                            -87.33654f,
                            -103.972f,
                            -103.973f,
                            0.625f,
                            -0.625f,
                            1.0f,
                            -1.0f,
                            4.0f,
                            9.0f};
  x.insert(x.end(), std::begin(specials), std::end(specials));
  return x;
}

struct ErrorStats {
  double max_abs = 0, max_rel = 0, max_ulp = 0;
  float worst_abs = 0, worst_rel = 0, worst_ulp = 0;
  int64_t special_failures = 0;
  float first_special_failure = 0;
};

// Units in the last place of a float result near `ref` (denormal spacing below FLT_MIN).
double ulp_of(double ref) {
  int e = std::max(std::ilogb(std::abs(ref)), -126);
  return std::ldexp(1.0, e - 23);
}

// Measures `got` against `ref` over the sweep. Values where the reference is NaN must be NaN;
// where it rounds to an infinity, the same infinity. Errors in ulp count denormal results only
// when `denormal_ulps`.
ErrorStats measure(const std::vector<float>& x, const std::vector<float>& got,
                   const std::function<double(double)>& ref, bool denormal_ulps = false) {
  ErrorStats s;
  for (size_t k = 0; k < x.size(); ++k) {
    double r = ref(x[k]);
    float y = got[k];
    float r_float = static_cast<float>(r);
    bool special = std::isnan(r) || std::isinf(r_float);
    if (special) {
      bool ok = std::isnan(r) ? std::isnan(y) : y == r_float;
      if (!ok && s.special_failures++ == 0) s.first_special_failure = x[k];
      continue;
    }
    if (!std::isfinite(y)) {
      if (s.special_failures++ == 0) s.first_special_failure = x[k];
      continue;
    }
    double abs_err = std::abs(double(y) - r);
    if (abs_err > s.max_abs) s.max_abs = abs_err, s.worst_abs = x[k];
    if (std::abs(r) >= std::numeric_limits<float>::min()) {
      double rel = abs_err / std::abs(r);
      if (rel > s.max_rel) s.max_rel = rel, s.worst_rel = x[k];
    }
    if (denormal_ulps || std::abs(r) >= std::numeric_limits<float>::min()) {
      double ulps = abs_err / ulp_of(r);
      if (ulps > s.max_ulp) s.max_ulp = ulps, s.worst_ulp = x[k];
    }
  }
  return s;
}

void report(const char* name, const ErrorStats& s, bool absolute = true) {
  if (absolute)
    std::printf("%-8s max abs %.3g (x = %.9g), ", name, s.max_abs, s.worst_abs);
  else
    std::printf("%-8s ", name);
  std::printf("max rel %.3g (x = %.9g), max %.3f ulp (x = %.9g)\n", s.max_rel, s.worst_rel,
              s.max_ulp, s.worst_ulp);
  EXPECT_EQ(s.special_failures, 0)
      << name << ": wrong NaN/infinity, first at x = " << s.first_special_failure;
}

class LLVMFastMath : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { inputs_ = new std::vector<float>(sweep_inputs()); }
  static void TearDownTestSuite() {
    delete inputs_;
    inputs_ = nullptr;
  }
  static const std::vector<float>& inputs() { return *inputs_; }
  static std::vector<float>* inputs_;
};
std::vector<float>* LLVMFastMath::inputs_ = nullptr;

TEST_F(LLVMFastMath, Exp) {
  const std::vector<float>& x = inputs();
  ErrorStats s = measure(
      x, run<float>(Intrinsic::kExp, {x}), [](double v) { return std::exp(v); }, true);
  report("exp", s, false);
  EXPECT_LE(s.max_ulp, 2.0) << "at x = " << s.worst_ulp;
  EXPECT_LE(s.max_rel, 2.5e-7) << "at x = " << s.worst_rel;
  std::vector<float> edge = run<float>(Intrinsic::kExp, {{-104.0f, -1000.0f, 89.0f, 1000.0f}});
  EXPECT_EQ(edge[0], 0.0f);
  EXPECT_EQ(edge[1], 0.0f);
  EXPECT_EQ(edge[2], std::numeric_limits<float>::infinity());
  EXPECT_EQ(edge[3], std::numeric_limits<float>::infinity());
}

TEST_F(LLVMFastMath, Tanh) {
  const std::vector<float>& x = inputs();
  std::vector<float> y = run<float>(Intrinsic::kTanh, {x});
  ErrorStats s = measure(x, y, [](double v) { return std::tanh(v); });
  report("tanh", s);
  EXPECT_LE(s.max_abs, 3e-7) << "at x = " << s.worst_abs;
  EXPECT_LE(s.max_rel, 5e-7) << "at x = " << s.worst_rel;
  std::vector<float> edge = run<float>(Intrinsic::kTanh, {{-0.0f, 20.0f, -20.0f}});
  EXPECT_TRUE(std::signbit(edge[0]) && edge[0] == 0.0f);
  EXPECT_EQ(edge[1], 1.0f);
  EXPECT_EQ(edge[2], -1.0f);
}

TEST_F(LLVMFastMath, Sigmoid) {
  const std::vector<float>& x = inputs();
  ErrorStats s = measure(x, run<float>(Intrinsic::kSigmoid, {x}),
                         [](double v) { return 1.0 / (1.0 + std::exp(-v)); });
  report("sigmoid", s);
  EXPECT_LE(s.max_abs, 3e-7) << "at x = " << s.worst_abs;
  EXPECT_LE(s.max_rel, 5e-7) << "at x = " << s.worst_rel;
}

TEST_F(LLVMFastMath, Erf) {
  const std::vector<float>& x = inputs();
  ErrorStats s = measure(x, run<float>(Intrinsic::kErf, {x}), [](double v) { return std::erf(v); });
  report("erf", s);
  EXPECT_LE(s.max_abs, 3e-7) << "at x = " << s.worst_abs;
  EXPECT_LE(s.max_rel, 5e-7) << "at x = " << s.worst_rel;
}

// In a plain scalar loop the approximations are straight-line code, so LLVM vectorizes the loop.
TEST(LLVMFastMathCode, ScalarLoopsVectorizeWithoutCalls) {
  for (Intrinsic op : {Intrinsic::kExp, Intrinsic::kTanh, Intrinsic::kSigmoid, Intrinsic::kErf}) {
    Var n("n"), i("i");
    Buffer A = Buffer::make("A", DataType::Float32(), {n}),
           B = Buffer::make("B", DataType::Float32(), {n});
    Stmt body = loop(i, n, ir::Store::make(B, ir::Call::make(op, {ir::Load::make(A, {i})}), {i}));
    auto m = compile({func("f", {A, B}, body)});
    std::string ir = m->llvm_ir("f");
    EXPECT_THAT(ir, ::testing::ContainsRegex("<(8|16) x float>")) << ir::intrinsic_name(op);
    for (const char* callee : {"@expf", "@tanhf", "@erff", "@llvm.exp"}) {
      EXPECT_EQ(ir.find(callee), std::string::npos)
          << ir::intrinsic_name(op) << " calls " << callee;
    }
    // The results of the scalar form agree with the vector form.
    std::vector<float> x = {-3.0f, -0.5f, 0.0f, 0.25f, 1.0f, 2.0f, 7.5f, 30.0f, -30.0f};
    std::vector<float> scalar = run<float>(op, {x}, false), vector = run<float>(op, {x}, true);
    for (size_t k = 0; k < x.size(); ++k) EXPECT_EQ(scalar[k], vector[k]) << ir::intrinsic_name(op);
  }
}

// ---------------------------------------------------------------------------------------------
// Intrinsics through LLVM and libm

template <typename T>
void expect_close(const std::vector<T>& got, const std::vector<T>& x,
                  const std::function<double(double)>& ref, double rel, const char* name) {
  for (size_t k = 0; k < x.size(); ++k) {
    double r = ref(x[k]);
    if (std::isnan(r)) {
      EXPECT_TRUE(std::isnan(got[k])) << name << "(" << x[k] << ")";
      continue;
    }
    EXPECT_NEAR(got[k], r, rel * std::abs(r) + std::numeric_limits<T>::min())
        << name << "(" << x[k] << ")";
  }
}

template <typename T>
std::vector<T> random_inputs(T lo, T hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<T> dist(lo, hi);
  std::vector<T> v(999);
  for (T& x : v) x = dist(rng);
  return v;
}

template <typename T>
class LLVMLibmIntrinsics : public ::testing::Test {};
using FloatTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(LLVMLibmIntrinsics, FloatTypes);

TYPED_TEST(LLVMLibmIntrinsics, UnaryFunctions) {
  using T = TypeParam;
  const double eps = std::numeric_limits<T>::epsilon();
  std::vector<T> any = random_inputs<T>(-20, 20, 1), positive = random_inputs<T>(T(1e-3), 50, 2);
  expect_close<T>(
      run<T>(Intrinsic::kExp2, {any}), any, [](double v) { return std::exp2(v); }, 2 * eps, "exp2");
  expect_close<T>(
      run<T>(Intrinsic::kLog, {positive}), positive, [](double v) { return std::log(v); }, 2 * eps,
      "log");
  expect_close<T>(
      run<T>(Intrinsic::kLog2, {positive}), positive, [](double v) { return std::log2(v); },
      2 * eps, "log2");
  expect_close<T>(
      run<T>(Intrinsic::kSqrt, {positive}), positive, [](double v) { return std::sqrt(v); }, eps,
      "sqrt");
  expect_close<T>(
      run<T>(Intrinsic::kRsqrt, {positive}), positive, [](double v) { return 1 / std::sqrt(v); },
      2 * eps, "rsqrt");
  expect_close<T>(
      run<T>(Intrinsic::kFabs, {any}), any, [](double v) { return std::fabs(v); }, 0, "fabs");
  expect_close<T>(
      run<T>(Intrinsic::kFloor, {any}), any, [](double v) { return std::floor(v); }, 0, "floor");
  expect_close<T>(
      run<T>(Intrinsic::kCeil, {any}), any, [](double v) { return std::ceil(v); }, 0, "ceil");
  expect_close<T>(
      run<T>(Intrinsic::kTrunc, {any}), any, [](double v) { return std::trunc(v); }, 0, "trunc");
  expect_close<T>(
      run<T>(Intrinsic::kSin, {any}), any, [](double v) { return std::sin(v); }, 4 * eps, "sin");
  expect_close<T>(
      run<T>(Intrinsic::kCos, {any}), any, [](double v) { return std::cos(v); }, 4 * eps, "cos");
  if constexpr (sizeof(T) == 8) {
    // float64 exp, tanh, sigmoid and erf go to libm.
    expect_close<T>(
        run<T>(Intrinsic::kExp, {any}), any, [](double v) { return std::exp(v); }, 2 * eps, "exp");
    expect_close<T>(
        run<T>(Intrinsic::kTanh, {any}), any, [](double v) { return std::tanh(v); }, 2 * eps,
        "tanh");
    expect_close<T>(
        run<T>(Intrinsic::kSigmoid, {any}), any, [](double v) { return 1 / (1 + std::exp(-v)); },
        4 * eps, "sigmoid");
    expect_close<T>(
        run<T>(Intrinsic::kErf, {any}), any, [](double v) { return std::erf(v); }, 2 * eps, "erf");
  }
}

TYPED_TEST(LLVMLibmIntrinsics, PowAndFma) {
  using T = TypeParam;
  const double eps = std::numeric_limits<T>::epsilon();
  std::vector<T> base = random_inputs<T>(T(0.1), 10, 3), power = random_inputs<T>(-4, 4, 4),
                 c = random_inputs<T>(-10, 10, 5);
  std::vector<T> p = run<T>(Intrinsic::kPow, {base, power});
  for (size_t k = 0; k < base.size(); ++k) {
    double r = std::pow(double(base[k]), double(power[k]));
    EXPECT_NEAR(p[k], r, 4 * eps * r) << base[k] << " ^ " << power[k];
  }
  std::vector<T> f = run<T>(Intrinsic::kFma, {base, power, c});
  for (size_t k = 0; k < base.size(); ++k) EXPECT_EQ(f[k], std::fma(base[k], power[k], c[k]));
}

// round() takes halfway cases to even, as ONNX Round and numpy.round do.
TYPED_TEST(LLVMLibmIntrinsics, RoundHalfToEven) {
  using T = TypeParam;
  std::vector<T> x = {T(0.5), T(1.5), T(2.5), T(-0.5), T(-1.5), T(-2.5), T(3.7), T(-3.2), T(0)};
  std::vector<T> expected = {T(0), T(2), T(2), T(-0.0), T(-2), T(-2), T(4), T(-3), T(0)};
  std::vector<T> got = run<T>(Intrinsic::kRound, {x});
  for (size_t k = 0; k < x.size(); ++k) {
    EXPECT_EQ(got[k], expected[k]) << "round(" << x[k] << ")";
    EXPECT_EQ(std::signbit(got[k]), std::signbit(expected[k])) << "round(" << x[k] << ")";
  }
}

}  // namespace
}  // namespace anvil
