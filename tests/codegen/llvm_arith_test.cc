// Every arithmetic, comparison, logic and cast node compiled by the LLVM back end against a naive
// C++ reference on random inputs (fixed seeds), in scalar loops and in 8-lane vector form.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include "codegen/llvm_testing.h"

namespace anvil {
namespace {

using ir::Buffer;
using ir::DataType;
using ir::Expr;
using ir::Stmt;
using ir::Var;
using llvm_testing::array;
using llvm_testing::call;
using llvm_testing::compile;
using llvm_testing::func;
using llvm_testing::loop;
using llvm_testing::read;
using llvm_testing::write;

constexpr int kN = 1024;

template <typename T>
DataType dtype() {
  if constexpr (std::is_same_v<T, bool>) {
    return DataType::Bool();
  } else if constexpr (std::is_floating_point_v<T>) {
    return DataType::Float(sizeof(T) * 8);
  } else if constexpr (std::is_signed_v<T>) {
    return DataType::Int(sizeof(T) * 8);
  } else {
    return DataType::UInt(sizeof(T) * 8);
  }
}

// How values lie in memory: bool as one byte.
template <typename T>
using Stored = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;

template <typename T>
bool same_value(T x, T y) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
  }
  return x == y;
}

// Random values of T: the whole range (with its edges), or "small" ones whose sums and products
// cannot overflow int32/int64 (whose overflow the IR leaves undefined).
template <typename T>
std::vector<T> random_values(uint32_t seed, bool small = false) {
  std::mt19937_64 rng(seed);
  std::vector<T> v(kN);
  if constexpr (std::is_floating_point_v<T>) {
    std::uniform_real_distribution<T> dist(-100, 100);
    for (T& x : v) x = dist(rng);
    const T specials[] = {0,
                          T(-0.0),
                          1,
                          -1,
                          std::numeric_limits<T>::infinity(),
                          -std::numeric_limits<T>::infinity(),
                          std::numeric_limits<T>::quiet_NaN(),
                          T(0.5),
                          T(-2.5)};
    for (size_t k = 0; k < std::size(specials); ++k) v[k * 37 % kN] = specials[k];
  } else {
    using Wide = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
    Wide lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
    if (small && sizeof(T) >= 4) {
      int half = static_cast<int>(sizeof(T) * 4 - 2);
      hi = Wide{1} << half;
      lo = std::is_signed_v<T> ? -hi : 0;
    }
    std::uniform_int_distribution<Wide> dist(lo, hi);
    for (T& x : v) x = static_cast<T>(dist(rng));
    const T edges[] = {
        0, 1, static_cast<T>(-1), static_cast<T>(lo), static_cast<T>(hi), 2, static_cast<T>(-2)};
    for (size_t k = 0; k < std::size(edges); ++k) v[k * 41 % kN] = edges[k];
  }
  return v;
}

// out[i] = f(a[i], b[i], i) for i < kN, in a scalar loop (lanes 1) or as `lanes`-wide vectors
// (check: 4, 8 and 16, SSE's, AVX's and AVX-512's widths of float32, where the back end has forms
// of its own); `i` is the index expression (a Ramp for vectors).
using Builder = std::function<Expr(Expr a, Expr b, Expr i)>;

template <typename T, typename R>
std::vector<R> run(const Builder& f, const std::vector<T>& a, const std::vector<T>& b, int lanes) {
  Buffer A = Buffer::make("A", dtype<T>(), {kN}), B = Buffer::make("B", dtype<T>(), {kN}),
         C = Buffer::make("C", dtype<R>(), {kN});
  Var i("i");
  Expr idx = lanes == 1 ? Expr(i) : ir::Ramp::make(i * lanes, 1, lanes);
  Expr la = ir::Load::make(A, {idx}), lb = ir::Load::make(B, {idx});
  Stmt body = loop(i, kN / lanes, ir::Store::make(C, f(la, lb, idx), {idx}));
  auto m = compile({func("op", {A, B, C}, body)});
  runtime::NDArray an = array({kN}, dtype<T>()), bn = array({kN}, dtype<T>()),
                   cn = array({kN}, dtype<R>());
  write(an, a);
  write(bn, b);
  EXPECT_EQ(call(m->get_function("op"), {an, bn, cn}), 0) << AnvilGetLastError();
  std::vector<R> out;
  for (Stored<R> x : read<Stored<R>>(cn)) out.push_back(static_cast<R>(x));
  return out;
}

template <typename T, typename R>
void check(const char* what, const Builder& f, const std::function<R(T, T, int64_t)>& ref,
           const std::vector<T>& a, const std::vector<T>& b) {
  for (int lanes : {1, 4, 8, 16}) {
    std::vector<R> got = run<T, R>(f, a, b, lanes);
    for (int k = 0; k < kN; ++k) {
      R expected = ref(a[k], b[k], k), value = got[k];
      ASSERT_TRUE(same_value(value, expected))
          << what << " on " << dtype<T>() << " with " << lanes << " lanes at " << k
          << ": a = " << +a[k] << ", b = " << +b[k] << ": got " << +value << ", expected "
          << +expected;
    }
  }
}

template <typename T>
T wrap_add(T a, T b) {
  return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
template <typename T>
T wrap_sub(T a, T b) {
  return static_cast<T>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
template <typename T>
T wrap_mul(T a, T b) {
  return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

template <typename T>
T floor_div(T a, T b) {
  if constexpr (std::is_unsigned_v<T>) {
    return a / b;
  } else {
    int64_t q = int64_t{a} / b, r = int64_t{a} % b;
    return static_cast<T>((r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q);
  }
}
template <typename T>
T floor_mod(T a, T b) {
  if constexpr (std::is_unsigned_v<T>) {
    return a % b;
  } else {
    int64_t r = int64_t{a} % b;
    return static_cast<T>((r != 0 && ((r < 0) != (b < 0))) ? r + b : r);
  }
}

// ---------------------------------------------------------------------------------------------
// Integers of every width and signedness

template <typename T>
class LLVMIntArith : public ::testing::Test {};
using IntTypes =
    ::testing::Types<int8_t, uint8_t, int16_t, uint16_t, int32_t, uint32_t, int64_t, uint64_t>;
TYPED_TEST_SUITE(LLVMIntArith, IntTypes);

TYPED_TEST(LLVMIntArith, AddSubMul) {
  using T = TypeParam;
  std::vector<T> a = random_values<T>(1, true), b = random_values<T>(2, true);
  check<T, T>(
      "add", [](Expr x, Expr y, Expr) { return x + y; },
      [](T x, T y, int64_t) { return wrap_add(x, y); }, a, b);
  check<T, T>(
      "sub", [](Expr x, Expr y, Expr) { return x - y; },
      [](T x, T y, int64_t) { return wrap_sub(x, y); }, a, b);
  check<T, T>(
      "mul", [](Expr x, Expr y, Expr) { return x * y; },
      [](T x, T y, int64_t) { return wrap_mul(x, y); }, a, b);
}

TYPED_TEST(LLVMIntArith, DivisionByVariables) {
  using T = TypeParam;
  std::vector<T> a = random_values<T>(3), b = random_values<T>(4);
  for (size_t k = 0; k < b.size(); ++k) {
    if (b[k] == 0) b[k] = 3;
    if constexpr (std::is_signed_v<T>) {
      if (a[k] == std::numeric_limits<T>::min() && b[k] == T(-1)) b[k] = 5;
    }
  }
  check<T, T>(
      "floordiv", [](Expr x, Expr y, Expr) { return ir::floordiv(x, y); },
      [](T x, T y, int64_t) { return floor_div(x, y); }, a, b);
  check<T, T>(
      "floormod", [](Expr x, Expr y, Expr) { return ir::floormod(x, y); },
      [](T x, T y, int64_t) { return floor_mod(x, y); }, a, b);
  check<T, T>(
      "truncdiv", [](Expr x, Expr y, Expr) { return ir::truncdiv(x, y); },
      [](T x, T y, int64_t) { return static_cast<T>(x / y); }, a, b);
  check<T, T>(
      "truncmod", [](Expr x, Expr y, Expr) { return ir::truncmod(x, y); },
      [](T x, T y, int64_t) { return static_cast<T>(x % y); }, a, b);
}

TYPED_TEST(LLVMIntArith, DivisionByConstants) {
  using T = TypeParam;
  std::vector<T> a = random_values<T>(5), b(kN, T(0));
  // Powers of two (shift and mask), other positive constants, and (signed) negative ones.
  std::vector<int64_t> divisors = {1, 2, 8, 64, 3, 7, 100};
  if (std::is_signed_v<T>) divisors.insert(divisors.end(), {-1, -3, -8});
  for (int64_t d : divisors) {
    if (std::is_signed_v<T> && d == -1) {
      for (T& x : a) {
        if (x == std::numeric_limits<T>::min()) x = 0;
      }
    }
    T dt = static_cast<T>(d);
    auto c = [d](Expr x) { return ir::make_const(x.type(), d); };
    check<T, T>(
        "floordiv by a constant", [&](Expr x, Expr, Expr) { return ir::floordiv(x, c(x)); },
        [&](T x, T, int64_t) { return floor_div(x, dt); }, a, b);
    check<T, T>(
        "floormod by a constant", [&](Expr x, Expr, Expr) { return ir::floormod(x, c(x)); },
        [&](T x, T, int64_t) { return floor_mod(x, dt); }, a, b);
  }
}

TYPED_TEST(LLVMIntArith, MinMaxAndComparisons) {
  using T = TypeParam;
  std::vector<T> a = random_values<T>(6), b = random_values<T>(7);
  for (int k = 0; k < kN; k += 5) b[k] = a[k];
  check<T, T>(
      "min", [](Expr x, Expr y, Expr) { return ir::min(x, y); },
      [](T x, T y, int64_t) { return std::min(x, y); }, a, b);
  check<T, T>(
      "max", [](Expr x, Expr y, Expr) { return ir::max(x, y); },
      [](T x, T y, int64_t) { return std::max(x, y); }, a, b);
  check<T, bool>(
      "<", [](Expr x, Expr y, Expr) { return x < y; }, [](T x, T y, int64_t) { return x < y; }, a,
      b);
  check<T, bool>(
      "<=", [](Expr x, Expr y, Expr) { return x <= y; }, [](T x, T y, int64_t) { return x <= y; },
      a, b);
  check<T, bool>(
      ">", [](Expr x, Expr y, Expr) { return x > y; }, [](T x, T y, int64_t) { return x > y; }, a,
      b);
  check<T, bool>(
      ">=", [](Expr x, Expr y, Expr) { return x >= y; }, [](T x, T y, int64_t) { return x >= y; },
      a, b);
  check<T, bool>(
      "==", [](Expr x, Expr y, Expr) { return x == y; }, [](T x, T y, int64_t) { return x == y; },
      a, b);
  check<T, bool>(
      "!=", [](Expr x, Expr y, Expr) { return x != y; }, [](T x, T y, int64_t) { return x != y; },
      a, b);
  check<T, T>(
      "select", [](Expr x, Expr y, Expr) { return ir::select(x < y, y - x, x - y); },
      [](T x, T y, int64_t) { return x < y ? wrap_sub(y, x) : wrap_sub(x, y); }, a, b);
}

// Division of loop indices: non-negative ones take the unsigned path, shifted ones the general.
TEST(LLVMIntArith, FloorDivisionOfLoopIndices) {
  std::vector<int32_t> zeros(kN, 0);
  for (int offset : {0, -500}) {
    for (int d : {7, 8, -7}) {
      auto index = [offset](Expr i) { return i + ir::make_const(i.type(), offset); };
      auto c = [d](Expr i) { return ir::make_const(i.type(), d); };
      check<int32_t, int32_t>(
          "floordiv(i + offset, d) * 1000 + floormod(i + offset, d)",
          [&](Expr, Expr, Expr i) {
            return ir::floordiv(index(i), c(i)) * ir::make_const(i.type(), 1000) +
                   ir::floormod(index(i), c(i));
          },
          [&](int32_t, int32_t, int64_t i) {
            int32_t v = static_cast<int32_t>(i + offset);
            return floor_div<int32_t>(v, d) * 1000 + floor_mod<int32_t>(v, d);
          },
          zeros, zeros);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Floats: NaN and infinities included

template <typename T>
class LLVMFloatArith : public ::testing::Test {};
using FloatTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(LLVMFloatArith, FloatTypes);

TYPED_TEST(LLVMFloatArith, ArithmeticIsExact) {
  using T = TypeParam;
  std::vector<T> a = random_values<T>(8), b = random_values<T>(9);
  check<T, T>(
      "add", [](Expr x, Expr y, Expr) { return x + y; }, [](T x, T y, int64_t) { return x + y; }, a,
      b);
  check<T, T>(
      "sub", [](Expr x, Expr y, Expr) { return x - y; }, [](T x, T y, int64_t) { return x - y; }, a,
      b);
  check<T, T>(
      "mul", [](Expr x, Expr y, Expr) { return x * y; }, [](T x, T y, int64_t) { return x * y; }, a,
      b);
  check<T, T>(
      "div", [](Expr x, Expr y, Expr) { return x / y; }, [](T x, T y, int64_t) { return x / y; }, a,
      b);
  check<T, T>(
      "neg", [](Expr x, Expr, Expr) { return -x; }, [](T x, T, int64_t) { return -x; }, a, b);
}

// ONNX Min and Max: NaN in either operand gives NaN.
TYPED_TEST(LLVMFloatArith, MinMaxPropagateNaN) {
  using T = TypeParam;
  std::vector<T> a = random_values<T>(10), b = random_values<T>(11);
  const T nan = std::numeric_limits<T>::quiet_NaN();
  for (int k = 0; k < kN; k += 7) (k % 2 ? a : b)[k] = nan;
  auto onnx_min = [](T x, T y, int64_t) {
    return std::isnan(x) || std::isnan(y) ? x + y : std::min(x, y);
  };
  auto onnx_max = [](T x, T y, int64_t) {
    return std::isnan(x) || std::isnan(y) ? x + y : std::max(x, y);
  };
  check<T, T>(
      "min", [](Expr x, Expr y, Expr) { return ir::min(x, y); }, onnx_min, a, b);
  check<T, T>(
      "max", [](Expr x, Expr y, Expr) { return ir::max(x, y); }, onnx_max, a, b);
  // Against a constant bound (a clip's, a ReLU's zero), which takes the one-comparison form.
  for (double bound : {0.0, 0.25}) {
    SCOPED_TRACE(::testing::Message() << "bound " << bound);
    const T c = static_cast<T>(bound);
    check<T, T>(
        "min", [bound](Expr x, Expr, Expr) { return ir::min(x, ir::make_const(x.type(), bound)); },
        [&](T x, T, int64_t) { return onnx_min(x, c, 0); }, a, b);
    check<T, T>(
        "max", [bound](Expr x, Expr, Expr) { return ir::max(x, ir::make_const(x.type(), bound)); },
        [&](T x, T, int64_t) { return onnx_max(x, c, 0); }, a, b);
  }
}

// Ordered comparisons are false on NaN; != is true.
TYPED_TEST(LLVMFloatArith, ComparisonsAndSelect) {
  using T = TypeParam;
  std::vector<T> a = random_values<T>(12), b = random_values<T>(13);
  for (int k = 0; k < kN; k += 5) b[k] = a[k];
  check<T, bool>(
      "<", [](Expr x, Expr y, Expr) { return x < y; }, [](T x, T y, int64_t) { return x < y; }, a,
      b);
  check<T, bool>(
      "<=", [](Expr x, Expr y, Expr) { return x <= y; }, [](T x, T y, int64_t) { return x <= y; },
      a, b);
  check<T, bool>(
      ">", [](Expr x, Expr y, Expr) { return x > y; }, [](T x, T y, int64_t) { return x > y; }, a,
      b);
  check<T, bool>(
      ">=", [](Expr x, Expr y, Expr) { return x >= y; }, [](T x, T y, int64_t) { return x >= y; },
      a, b);
  check<T, bool>(
      "==", [](Expr x, Expr y, Expr) { return x == y; }, [](T x, T y, int64_t) { return x == y; },
      a, b);
  check<T, bool>(
      "!=", [](Expr x, Expr y, Expr) { return x != y; }, [](T x, T y, int64_t) { return x != y; },
      a, b);
  check<T, T>(
      "select", [](Expr x, Expr y, Expr) { return ir::select(x >= y, x, y * y); },
      [](T x, T y, int64_t) { return x >= y ? x : y * y; }, a, b);
}

// ---------------------------------------------------------------------------------------------
// Logic

TEST(LLVMLogic, AndOrNotAndScalarConditions) {
  std::vector<uint8_t> ab(kN), bb(kN);
  std::mt19937 rng(14);
  for (int k = 0; k < kN; ++k) ab[k] = rng() & 1, bb[k] = rng() & 1;
  // Through uint8 buffers, so that the bools are computed, stored and loaded as bytes.
  auto to_bool = [](Expr x) { return x != ir::make_zero(x.type()); };
  auto to_u8 = [](Expr x) { return ir::cast(DataType::UInt(8, x.type().lanes()), x); };
  check<uint8_t, uint8_t>(
      "and", [&](Expr x, Expr y, Expr) { return to_u8(to_bool(x) && to_bool(y)); },
      [](uint8_t x, uint8_t y, int64_t) { return uint8_t(x && y); }, ab, bb);
  check<uint8_t, uint8_t>(
      "or", [&](Expr x, Expr y, Expr) { return to_u8(to_bool(x) || to_bool(y)); },
      [](uint8_t x, uint8_t y, int64_t) { return uint8_t(x || y); }, ab, bb);
  check<uint8_t, uint8_t>(
      "not", [&](Expr x, Expr, Expr) { return to_u8(!to_bool(x)); },
      [](uint8_t x, uint8_t, int64_t) { return uint8_t(!x); }, ab, bb);
  // A scalar condition selecting between vectors.
  Var flag("flag");
  check<uint8_t, uint8_t>(
      "select on a scalar",
      [&](Expr x, Expr y, Expr) { return ir::Let::make(flag, 1, ir::select(flag > 0, x, y)); },
      [](uint8_t x, uint8_t, int64_t) { return x; }, ab, bb);
}

// ---------------------------------------------------------------------------------------------
// Casts between every pair of types, on values each target can hold (narrowing integer casts
// wrap; float to integer truncates toward zero).

template <typename From, typename To>
void check_cast() {
  std::vector<From> a;
  std::mt19937_64 rng(15);
  const double candidates[] = {
      0,    1,    -1,    2.75,   -2.75, 7,    100,    127,          -128,          255,
      300,  -300, 65535, -32768, 1e6,   -1e6, 0.4999, 2147483647.0, -2147483648.0, 4294967295.0,
      1e18, -1e18};
  while (static_cast<int>(a.size()) < kN) {
    double v = candidates[rng() % std::size(candidates)];
    if constexpr (std::is_integral_v<From>) {
      if (v != std::trunc(v) || v < double(std::numeric_limits<From>::lowest()) ||
          v > double(std::numeric_limits<From>::max())) {
        continue;
      }
    }
    if constexpr (std::is_integral_v<To> && !std::is_same_v<To, bool>) {
      if (std::is_floating_point_v<From>) {
        double t = std::trunc(v);
        if (t < double(std::numeric_limits<To>::lowest()) ||
            t >= double(std::numeric_limits<To>::max()))
          continue;
      }
    }
    a.push_back(static_cast<From>(v));
  }
  if constexpr (std::is_integral_v<From> && !std::is_integral_v<To>) {
    // Integers to floats: any value, rounded to nearest.
    std::vector<From> r = random_values<From>(16);
    a.insert(a.end() - kN / 2, r.begin(), r.begin() + kN / 2);
    a.resize(kN);
  }
  check<From, To>(
      "cast",
      [](Expr x, Expr, Expr) { return ir::cast(dtype<To>().with_lanes(x.type().lanes()), x); },
      [](From x, From, int64_t) { return static_cast<To>(x); }, a, a);
}

template <typename From>
void check_casts_from() {
  check_cast<From, int8_t>();
  check_cast<From, uint8_t>();
  check_cast<From, int16_t>();
  check_cast<From, uint16_t>();
  check_cast<From, int32_t>();
  check_cast<From, uint32_t>();
  check_cast<From, int64_t>();
  check_cast<From, uint64_t>();
  check_cast<From, float>();
  check_cast<From, double>();
  check_cast<From, bool>();
}

TEST(LLVMCasts, FromSignedIntegers) {
  check_casts_from<int8_t>();
  check_casts_from<int16_t>();
  check_casts_from<int32_t>();
  check_casts_from<int64_t>();
}

TEST(LLVMCasts, FromUnsignedIntegers) {
  check_casts_from<uint8_t>();
  check_casts_from<uint16_t>();
  check_casts_from<uint32_t>();
  check_casts_from<uint64_t>();
}

TEST(LLVMCasts, FromFloats) {
  check_casts_from<float>();
  check_casts_from<double>();
}

}  // namespace
}  // namespace anvil
