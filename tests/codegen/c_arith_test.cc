// Every arithmetic node through the C backend against a naive C++ reference on random inputs,
// for every integer and float type, as scalars and as 4-lane vectors.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <type_traits>

#include "codegen/c_testing.h"

namespace anvil::testing {
namespace {

using namespace ir;

constexpr int kN = 64;

enum class Op {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kFloorDiv,
  kFloorMod,
  kTruncDiv,
  kTruncMod,
  kMin,
  kMax,
  kEQ,
  kNE,
  kLT,
  kLE,
  kGT,
  kGE
};
constexpr Op kOps[] = {Op::kAdd,      Op::kSub,      Op::kMul,      Op::kDiv,
                       Op::kFloorDiv, Op::kFloorMod, Op::kTruncDiv, Op::kTruncMod,
                       Op::kMin,      Op::kMax,      Op::kEQ,       Op::kNE,
                       Op::kLT,       Op::kLE,       Op::kGT,       Op::kGE};

const char* op_name(Op op) {
  static const char* names[] = {"add",      "sub",      "mul", "div", "floordiv", "floormod",
                                "truncdiv", "truncmod", "min", "max", "eq",       "ne",
                                "lt",       "le",       "gt",  "ge"};
  return names[static_cast<int>(op)];
}
bool is_compare(Op op) {
  return op >= Op::kEQ;
}
bool is_division(Op op) {
  return op >= Op::kDiv && op <= Op::kTruncMod;
}
bool applies(Op op, DataType t) {
  if (op == Op::kDiv) return t.is_float();
  if (op >= Op::kFloorDiv && op <= Op::kTruncMod) return !t.is_float();
  return true;
}

Expr make_op(Op op, Expr a, Expr b) {
  switch (op) {
    case Op::kAdd:
      return Add::make(a, b);
    case Op::kSub:
      return Sub::make(a, b);
    case Op::kMul:
      return Mul::make(a, b);
    case Op::kDiv:
      return Div::make(a, b);
    case Op::kFloorDiv:
      return FloorDiv::make(a, b);
    case Op::kFloorMod:
      return FloorMod::make(a, b);
    case Op::kTruncDiv:
      return TruncDiv::make(a, b);
    case Op::kTruncMod:
      return TruncMod::make(a, b);
    case Op::kMin:
      return Min::make(a, b);
    case Op::kMax:
      return Max::make(a, b);
    case Op::kEQ:
      return EQ::make(a, b);
    case Op::kNE:
      return NE::make(a, b);
    case Op::kLT:
      return LT::make(a, b);
    case Op::kLE:
      return LE::make(a, b);
    case Op::kGT:
      return GT::make(a, b);
    case Op::kGE:
      return GE::make(a, b);
  }
  return Expr();
}

// out[i] = f(in[i]...) over kN elements: as a scalar loop (lanes 1) or on Ramp vectors.
LoweredFunc elementwise(const std::string& name, std::vector<DataType> in_types, DataType out_type,
                        int lanes, const std::function<Expr(std::vector<Expr>)>& f) {
  std::vector<Buffer> args;
  for (size_t k = 0; k < in_types.size(); ++k)
    args.push_back(Buffer::make("I" + std::to_string(k), in_types[k], {kN}));
  Buffer out = Buffer::make("O", out_type, {kN});
  Var i("i");
  Expr index = lanes == 1 ? Expr(i) : Ramp::make(i * lanes, 1, lanes);
  std::vector<Expr> loads;
  for (const Buffer& b : args) loads.push_back(Load::make(b, {index}));
  args.push_back(out);
  Stmt body = For::make(i, 0, kN / lanes, ForKind::kSerial, Store::make(out, f(loads), {index}));
  return func(name, args, body);
}

template <typename T>
using Storage = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;

template <typename T>
bool same(T got, T want) {
  if constexpr (std::is_floating_point_v<T>) {
    return (std::isnan(got) && std::isnan(want)) || got == want;
  } else {
    return got == want;
  }
}

template <typename T>
std::string show(T v) {
  if constexpr (sizeof(T) == 1) return std::to_string(int{v});
  std::ostringstream os;
  os << v;
  return os.str();
}

// Random inputs: integers bounded where the IR leaves overflow undefined (signed add, sub, mul)
// and divisors non-zero; floats with NaN, infinities and signed zeros mixed in.
template <typename T>
std::vector<T> values(Op op, bool divisor, std::mt19937_64& rng) {
  std::vector<T> v(kN);
  for (T& x : v) {
    if constexpr (std::is_floating_point_v<T>) {
      const T specials[] = {std::numeric_limits<T>::quiet_NaN(),
                            std::numeric_limits<T>::infinity(),
                            -std::numeric_limits<T>::infinity(),
                            T(0),
                            -T(0),
                            T(1),
                            T(-3)};
      if (rng() % 5 == 0) {
        x = specials[rng() % 7];
      } else {
        x = std::uniform_real_distribution<T>(-100, 100)(rng);
      }
    } else if constexpr (std::is_signed_v<T>) {
      int64_t lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
      if (is_division(op)) {
        if (divisor)
          lo = -20, hi = 20;
        else
          lo = lo / 2, hi = hi / 2;
      } else if (op == Op::kAdd || op == Op::kSub || op == Op::kMul) {
        hi = (int64_t{1} << (sizeof(T) * 4 - 1)) - 1, lo = -hi;
      }
      do {
        x = static_cast<T>(std::uniform_int_distribution<int64_t>(lo, hi)(rng));
      } while (divisor && x == 0);
    } else {
      uint64_t hi = std::numeric_limits<T>::max();
      if (divisor && rng() % 2) hi = 20;
      do {
        x = static_cast<T>(std::uniform_int_distribution<uint64_t>(0, hi)(rng));
      } while (divisor && x == 0);
    }
  }
  return v;
}

template <typename T>
T reference(Op op, T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    bool nan = std::isnan(a) || std::isnan(b);
    switch (op) {
      case Op::kAdd:
        return a + b;
      case Op::kSub:
        return a - b;
      case Op::kMul:
        return a * b;
      case Op::kDiv:
        return a / b;
      case Op::kMin:
        return nan ? std::numeric_limits<T>::quiet_NaN() : std::min(a, b);
      case Op::kMax:
        return nan ? std::numeric_limits<T>::quiet_NaN() : std::max(a, b);
      default:
        break;
    }
  } else {
    // Wide arithmetic, then wrapped to T (inputs keep signed results in range).
    using W = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
    W x = a, y = b;
    auto floor_mod = [&] { return std::is_signed_v<T> ? ((x % y) + y) % y : x % y; };
    switch (op) {
      case Op::kAdd:
        return static_cast<T>(x + y);
      case Op::kSub:
        return static_cast<T>(x - y);
      case Op::kMul:
        return static_cast<T>(x * y);
      case Op::kFloorDiv:
        return static_cast<T>((x - floor_mod()) / y);
      case Op::kFloorMod:
        return static_cast<T>(floor_mod());
      case Op::kTruncDiv:
        return static_cast<T>(x / y);
      case Op::kTruncMod:
        return static_cast<T>(x % y);
      case Op::kMin:
        return std::min(a, b);
      case Op::kMax:
        return std::max(a, b);
      default:
        break;
    }
  }
  ADD_FAILURE() << "no reference for " << op_name(op);
  return T{};
}

template <typename T>
bool reference_compare(Op op, T a, T b) {
  switch (op) {
    case Op::kEQ:
      return a == b;
    case Op::kNE:
      return a != b;
    case Op::kLT:
      return a < b;
    case Op::kLE:
      return a <= b;
    case Op::kGT:
      return a > b;
    default:
      return a >= b;
  }
}

template <typename T>
void check_binary(DataType t) {
  std::vector<LoweredFunc> funcs;
  std::vector<std::pair<Op, int>> cases;
  for (Op op : kOps) {
    if (!applies(op, t)) continue;
    for (int lanes : {1, 4}) {
      DataType out = is_compare(op) ? DataType::Bool() : t;
      funcs.push_back(elementwise(std::string(op_name(op)) + "_x" + std::to_string(lanes), {t, t},
                                  out, lanes,
                                  [&](std::vector<Expr> in) { return make_op(op, in[0], in[1]); }));
      cases.push_back({op, lanes});
    }
  }
  runtime::Module m = build(funcs);
  std::mt19937_64 rng(42);
  for (size_t c = 0; c < cases.size(); ++c) {
    auto [op, lanes] = cases[c];
    SCOPED_TRACE(funcs[c].name + " on " + t.to_string());
    std::vector<T> a = values<T>(op, false, rng), b = values<T>(op, true, rng);
    if (!is_division(op)) {
      for (int k = 0; k < kN; k += 5) b[k] = a[k];  // equal operands
    }
    runtime::NDArray x = array({kN}, t), y = array({kN}, t);
    runtime::NDArray z = array({kN}, is_compare(op) ? DataType::Bool() : t);
    write(x, a);
    write(y, b);
    ANVIL_EXPECT_RUNS(m.get_function(funcs[c].name), tensors({x, y, z}));
    if (is_compare(op)) {
      std::vector<uint8_t> got = read<uint8_t>(z);
      for (int k = 0; k < kN; ++k)
        ASSERT_EQ(got[k], reference_compare(op, a[k], b[k]) ? 1 : 0)
            << show(a[k]) << " " << op_name(op) << " " << show(b[k]);
    } else {
      std::vector<T> got = read<T>(z);
      for (int k = 0; k < kN; ++k) {
        T want = reference(op, a[k], b[k]);
        ASSERT_TRUE(same(got[k], want)) << op_name(op) << "(" << show(a[k]) << ", " << show(b[k])
                                        << ") = " << show(got[k]) << ", expected " << show(want);
      }
    }
  }
}

const DataType kTypes[] = {DataType::Int(8),   DataType::Int(16),  DataType::Int(32),
                           DataType::Int(64),  DataType::UInt(8),  DataType::UInt(16),
                           DataType::UInt(32), DataType::UInt(64), DataType::Float(32),
                           DataType::Float(64)};

// Calls f(T{}) with the C++ type of t.
template <typename F>
void with_type(DataType t, F&& f) {
  if (t == DataType::Int(8)) return f(int8_t{});
  if (t == DataType::Int(16)) return f(int16_t{});
  if (t == DataType::Int(32)) return f(int32_t{});
  if (t == DataType::Int(64)) return f(int64_t{});
  if (t == DataType::UInt(8)) return f(uint8_t{});
  if (t == DataType::UInt(16)) return f(uint16_t{});
  if (t == DataType::UInt(32)) return f(uint32_t{});
  if (t == DataType::UInt(64)) return f(uint64_t{});
  if (t == DataType::Float(32)) return f(float{});
  if (t == DataType::Float(64)) return f(double{});
  if (t == DataType::Bool()) return f(bool{});
  FAIL() << "no C++ type for " << t;
}

std::string type_name(const ::testing::TestParamInfo<DataType>& info) {
  return info.param.to_string();
}

class CArith : public ::testing::TestWithParam<DataType> {};

TEST_P(CArith, EveryBinaryOperatorMatchesTheReference) {
  with_type(GetParam(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) check_binary<T>(GetParam());
  });
}

INSTANTIATE_TEST_SUITE_P(Types, CArith, ::testing::ValuesIn(kTypes), type_name);

// ---- casts

// Values of From that convert to To without undefined behaviour (floats to integers must be in
// range; everything else converts with wrapping or rounding).
template <typename From, typename To>
std::vector<Storage<From>> cast_inputs(std::mt19937_64& rng) {
  std::vector<Storage<From>> v(kN);
  for (auto& x : v) {
    if constexpr (std::is_same_v<From, bool>) {
      x = rng() % 2;
    } else if constexpr (std::is_floating_point_v<From>) {
      if constexpr (std::is_integral_v<To> && !std::is_same_v<To, bool>) {
        double lo = std::is_signed_v<To> ? -100 : 0, hi = std::is_signed_v<To> ? 100 : 250;
        x = static_cast<From>(std::uniform_real_distribution<double>(lo, hi)(rng));
      } else {
        const From specials[] = {std::numeric_limits<From>::quiet_NaN(),
                                 std::numeric_limits<From>::infinity(), From(0), -From(0)};
        x = rng() % 4 == 0
                ? specials[rng() % 4]
                : static_cast<From>(std::uniform_real_distribution<double>(-1e6, 1e6)(rng));
      }
    } else {
      x = static_cast<From>(rng());
    }
  }
  return v;
}

template <typename From>
void check_casts(DataType from) {
  std::vector<LoweredFunc> funcs;
  std::vector<DataType> targets;
  for (DataType to : kTypes) targets.push_back(to);
  targets.push_back(DataType::Bool());
  for (DataType to : targets) {
    for (int lanes : {1, 4}) {
      funcs.push_back(elementwise(
          "to_" + to.to_string() + "_x" + std::to_string(lanes), {from}, to, lanes,
          [&](std::vector<Expr> in) { return Cast::make(to.with_lanes(lanes), in[0]); }));
    }
  }
  runtime::Module m = build(funcs);
  std::mt19937_64 rng(7);
  size_t c = 0;
  for (DataType to : targets) {
    with_type(to, [&](auto to_tag) {
      using To = decltype(to_tag);
      for (int lanes = 0; lanes < 2; ++lanes, ++c) {
        SCOPED_TRACE(funcs[c].name + " from " + from.to_string());
        std::vector<Storage<From>> in = cast_inputs<From, To>(rng);
        runtime::NDArray x = array({kN}, from), y = array({kN}, to);
        write(x, in);
        ANVIL_EXPECT_RUNS(m.get_function(funcs[c].name), tensors({x, y}));
        std::vector<Storage<To>> got = read<Storage<To>>(y);
        for (int k = 0; k < kN; ++k) {
          Storage<To> want;
          if constexpr (std::is_same_v<To, bool>) {
            want = in[k] != 0;
          } else {
            want = static_cast<To>(in[k]);
          }
          ASSERT_TRUE(same(got[k], want))
              << show(in[k]) << " became " << show(got[k]) << ", expected " << show(want);
        }
      }
    });
  }
}

class CCast : public ::testing::TestWithParam<DataType> {};

TEST_P(CCast, ToEveryTypeMatchesCpp) {
  with_type(GetParam(), [&](auto tag) { check_casts<decltype(tag)>(GetParam()); });
}

INSTANTIATE_TEST_SUITE_P(Types, CCast,
                         ::testing::Values(DataType::Int(8), DataType::Int(16), DataType::Int(32),
                                           DataType::Int(64), DataType::UInt(8), DataType::UInt(16),
                                           DataType::UInt(32), DataType::UInt(64),
                                           DataType::Float(32), DataType::Float(64),
                                           DataType::Bool()),
                         type_name);

// ---- floor division of negative numbers, spelled out

TEST(CArithTable, FloorDivisionAndModulusOfNegatives) {
  struct Row {
    int a, b, div, mod;
  };
  const Row rows[] = {{7, 2, 3, 1},   {-7, 2, -4, 1},  {7, -2, -4, -1},   {-7, -2, 3, -1},
                      {-8, 2, -4, 0}, {-1, 3, -1, 2},  {1, -3, -1, -2},   {0, -3, 0, 0},
                      {-9, 4, -3, 3}, {9, -4, -3, -3}, {-100, 7, -15, 5}, {100, -7, -15, -5}};
  for (DataType t : {DataType::Int(8), DataType::Int(32), DataType::Int(64)}) {
    SCOPED_TRACE(t.to_string());
    std::vector<LoweredFunc> funcs;
    for (int lanes : {1, 4}) {
      for (Op op : {Op::kFloorDiv, Op::kFloorMod}) {
        funcs.push_back(
            elementwise(std::string(op_name(op)) + std::to_string(lanes), {t, t}, t, lanes,
                        [&](std::vector<Expr> in) { return make_op(op, in[0], in[1]); }));
      }
    }
    runtime::Module m = build(funcs);
    with_type(t, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        std::vector<T> a(kN), b(kN);
        for (int k = 0; k < kN; ++k) {
          a[k] = static_cast<T>(rows[k % 12].a);
          b[k] = static_cast<T>(rows[k % 12].b);
        }
        runtime::NDArray x = array({kN}, t), y = array({kN}, t), z = array({kN}, t);
        write(x, a);
        write(y, b);
        for (const LoweredFunc& f : funcs) {
          ANVIL_EXPECT_RUNS(m.get_function(f.name), tensors({x, y, z}));
          std::vector<T> got = read<T>(z);
          bool mod = f.name.find("mod") != std::string::npos;
          for (int k = 0; k < kN; ++k) {
            const Row& r = rows[k % 12];
            ASSERT_EQ(static_cast<int64_t>(got[k]), mod ? r.mod : r.div)
                << f.name << "(" << r.a << ", " << r.b << ")";
          }
        }
      }
    });
  }
}

// ---- logic and select

TEST(CArithLogic, AndOrNotSelectOnBools) {
  DataType b = DataType::Bool(), f = DataType::Float32();
  std::vector<LoweredFunc> funcs;
  for (int lanes : {1, 4}) {
    std::string x = "_x" + std::to_string(lanes);
    funcs.push_back(elementwise("and" + x, {b, b, f, f}, b, lanes,
                                [](std::vector<Expr> in) { return And::make(in[0], in[1]); }));
    funcs.push_back(elementwise("or" + x, {b, b, f, f}, b, lanes, [](std::vector<Expr> in) {
      return Or::make(in[0], Not::make(in[1]));
    }));
    funcs.push_back(elementwise("eq" + x, {b, b, f, f}, b, lanes, [](std::vector<Expr> in) {
      return EQ::make(in[0], in[1]) && NE::make(in[2], in[3]);
    }));
    funcs.push_back(elementwise("select" + x, {b, b, f, f}, f, lanes, [](std::vector<Expr> in) {
      return Select::make(in[0], in[2], Select::make(in[1], in[3], in[2] * in[3]));
    }));
  }
  runtime::Module m = build(funcs);
  std::mt19937 rng(3);
  std::vector<uint8_t> p(kN), q(kN);
  std::vector<float> u(kN), v(kN);
  for (int k = 0; k < kN; ++k) {
    p[k] = rng() % 2;
    q[k] = rng() % 2;
    u[k] = float(rng() % 7);
    v[k] = float(rng() % 7);
  }
  runtime::NDArray P = array({kN}, b), Q = array({kN}, b), U = array({kN}), V = array({kN});
  write(P, p);
  write(Q, q);
  write(U, u);
  write(V, v);
  for (const LoweredFunc& fn : funcs) {
    SCOPED_TRACE(fn.name);
    bool is_select = fn.name.rfind("select", 0) == 0;
    runtime::NDArray out = array({kN}, is_select ? f : b);
    ANVIL_EXPECT_RUNS(m.get_function(fn.name), tensors({P, Q, U, V, out}));
    for (int k = 0; k < kN; ++k) {
      if (is_select) {
        float want = p[k] ? u[k] : q[k] ? v[k] : u[k] * v[k];
        ASSERT_EQ(read<float>(out)[k], want);
        continue;
      }
      bool want = fn.name[0] == 'a'   ? p[k] && q[k]
                  : fn.name[0] == 'o' ? p[k] || !q[k]
                                      : p[k] == q[k] && u[k] != v[k];
      ASSERT_EQ(read<uint8_t>(out)[k], want ? 1 : 0) << k;
    }
  }
}

// ---- intrinsics

template <typename T>
void check_intrinsics(DataType t) {
  const Intrinsic all[] = {
      Intrinsic::kExp,   Intrinsic::kExp2,  Intrinsic::kLog,   Intrinsic::kLog2,
      Intrinsic::kSqrt,  Intrinsic::kRsqrt, Intrinsic::kTanh,  Intrinsic::kSigmoid,
      Intrinsic::kErf,   Intrinsic::kPow,   Intrinsic::kFabs,  Intrinsic::kFloor,
      Intrinsic::kCeil,  Intrinsic::kRound, Intrinsic::kTrunc, Intrinsic::kFma,
      Intrinsic::kSin,   Intrinsic::kCos,   Intrinsic::kTan,   Intrinsic::kAsin,
      Intrinsic::kAcos,  Intrinsic::kAtan,  Intrinsic::kSinh,  Intrinsic::kCosh,
      Intrinsic::kAsinh, Intrinsic::kAcosh, Intrinsic::kAtanh, Intrinsic::kFmod};
  std::vector<LoweredFunc> funcs;
  for (Intrinsic op : all) {
    for (int lanes : {1, 4}) {
      funcs.push_back(elementwise(std::string(intrinsic_name(op)) + "_x" + std::to_string(lanes),
                                  {t, t, t}, t, lanes, [&](std::vector<Expr> in) {
                                    in.resize(intrinsic_arity(op));
                                    return Call::make(op, in);
                                  }));
    }
  }
  runtime::Module m = build(funcs);
  std::mt19937 rng(11);
  std::vector<T> a(kN), b(kN), c(kN);
  for (int k = 0; k < kN; ++k) {
    a[k] = std::uniform_real_distribution<T>(0.05, 4)(rng) * (k % 2 ? 1 : -1);
    b[k] = std::uniform_real_distribution<T>(-2, 2)(rng);
    c[k] = std::uniform_real_distribution<T>(-2, 2)(rng);
  }
  a[0] = 2.5, a[2] = -2.5, a[4] = 0.5;              // round: halves go to even
  std::vector<T> pos(kN), unit(kN), above_one(kN);  // the domains of log, asin, acosh
  for (int k = 0; k < kN; ++k) {
    pos[k] = std::fabs(a[k]);
    unit[k] = b[k] / 2;
    above_one[k] = 1 + pos[k];
  }
  runtime::NDArray A = array({kN}, t), P = array({kN}, t), U = array({kN}, t), O = array({kN}, t),
                   B = array({kN}, t), C = array({kN}, t);
  write(A, a);
  write(P, pos);
  write(U, unit);
  write(O, above_one);
  write(B, b);
  write(C, c);
  const double tolerance = sizeof(T) == 4 ? 2e-6 : 1e-14;
  size_t f = 0;
  for (Intrinsic op : all) {
    bool needs_positive = op == Intrinsic::kLog || op == Intrinsic::kLog2 ||
                          op == Intrinsic::kSqrt || op == Intrinsic::kRsqrt ||
                          op == Intrinsic::kPow;
    bool needs_unit = op == Intrinsic::kAsin || op == Intrinsic::kAcos || op == Intrinsic::kAtanh;
    bool needs_above_one = op == Intrinsic::kAcosh;
    const std::vector<T>& x = needs_positive    ? pos
                              : needs_unit      ? unit
                              : needs_above_one ? above_one
                                                : a;
    for (int lanes = 0; lanes < 2; ++lanes, ++f) {
      SCOPED_TRACE(funcs[f].name + " on " + t.to_string());
      runtime::NDArray out = array({kN}, t);
      ANVIL_EXPECT_RUNS(m.get_function(funcs[f].name), tensors({needs_positive    ? P
                                                                : needs_unit      ? U
                                                                : needs_above_one ? O
                                                                                  : A,
                                                                B, C, out}));
      std::vector<T> got = read<T>(out);
      for (int k = 0; k < kN; ++k) {
        long double v = x[k], w = b[k], z = c[k], want = 0;
        switch (op) {
          case Intrinsic::kExp:
            want = std::exp(v);
            break;
          case Intrinsic::kExp2:
            want = std::exp2(v);
            break;
          case Intrinsic::kLog:
            want = std::log(v);
            break;
          case Intrinsic::kLog2:
            want = std::log2(v);
            break;
          case Intrinsic::kSqrt:
            want = std::sqrt(v);
            break;
          case Intrinsic::kRsqrt:
            want = 1 / std::sqrt(v);
            break;
          case Intrinsic::kTanh:
            want = std::tanh(v);
            break;
          case Intrinsic::kSigmoid:
            want = 1 / (1 + std::exp(-v));
            break;
          case Intrinsic::kErf:
            want = std::erf(v);
            break;
          case Intrinsic::kPow:
            want = std::pow(v, w);
            break;
          case Intrinsic::kFabs:
            want = std::fabs(v);
            break;
          case Intrinsic::kFloor:
            want = std::floor(v);
            break;
          case Intrinsic::kCeil:
            want = std::ceil(v);
            break;
          case Intrinsic::kRound:
            want = std::nearbyint(v);
            break;
          case Intrinsic::kTrunc:
            want = std::trunc(v);
            break;
          case Intrinsic::kFma:
            want = v * w + z;
            break;
          case Intrinsic::kSin:
            want = std::sin(v);
            break;
          case Intrinsic::kCos:
            want = std::cos(v);
            break;
          case Intrinsic::kTan:
            want = std::tan(v);
            break;
          case Intrinsic::kAsin:
            want = std::asin(v);
            break;
          case Intrinsic::kAcos:
            want = std::acos(v);
            break;
          case Intrinsic::kAtan:
            want = std::atan(v);
            break;
          case Intrinsic::kSinh:
            want = std::sinh(v);
            break;
          case Intrinsic::kCosh:
            want = std::cosh(v);
            break;
          case Intrinsic::kAsinh:
            want = std::asinh(v);
            break;
          case Intrinsic::kAcosh:
            want = std::acosh(v);
            break;
          case Intrinsic::kAtanh:
            want = std::atanh(v);
            break;
          case Intrinsic::kFmod:
            want = std::fmod(v, w);
            break;
          case Intrinsic::kDotU8S8:
          case Intrinsic::kDotU8S8Sat16:
            FAIL() << "not a float intrinsic";  // tests/te/tensorize_test.cc tests it
        }
        ASSERT_NEAR(double(got[k]), double(want), tolerance * (1 + std::fabs(double(want))))
            << intrinsic_name(op) << "(" << x[k] << ", " << b[k] << ", " << c[k] << ")";
      }
    }
  }
}

TEST(CArithIntrinsics, Float32) {
  check_intrinsics<float>(DataType::Float32());
}

TEST(CArithIntrinsics, Float64) {
  check_intrinsics<double>(DataType::Float(64));
}

}  // namespace
}  // namespace anvil::testing
