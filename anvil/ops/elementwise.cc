// Elementwise operators: unary functions, binary operators, comparisons and logic with NumPy
// broadcasting, where (three-way broadcasting) and cast. All are kInjective and share one
// registration path: a dtype rule (which also validates the attributes), a scalar compute on the
// loaded operands, and a scalar reference on host values.
//
// Semantics follow ONNX:
// - Max/Min (maximum, minimum, relu, clip, hard_sigmoid) propagate NaN.
// - Integer div truncates toward zero (C semantics, ONNX Div on integers). Division by zero is
//   undefined in ONNX; here it gives 0 instead of trapping, and INT_MIN / -1 wraps.
// - Integer add/sub/mul wrap at the type's width in the reference (as NumPy does: uint8
//   200 + 100 = 44); in compiled code their overflow stays undefined, as in ONNX.
// Types: the references take float16/32/64, int8-64, uint8-64 and bool (host_value.h; float16
// results are rounded once from a double); compiled code takes float32, int32, int64 and bool,
// and its compute refuses the others naming the op.
// - clip with min > max gives max everywhere (Min(max, Max(x, min))).
// - cast from float to an integer truncates toward zero (out of range: undefined, as in ONNX);
//   to bool is x != 0 (NaN is true); int64 to int32 wraps.
// - Comparisons on NaN are false (equal, less, ...).
// Transcendentals use the IR intrinsics; the LLVM back end implements float32 exp, tanh, sigmoid
// and erf as polynomials (relative error about 2e-7).
#include <algorithm>
#include <cmath>
#include <utility>

#include "anvil/ir/op.h"
#include "anvil/ops/elementwise_common.h"
#include "anvil/ops/families.h"
#include "anvil/ops/host_value.h"
#include "anvil/ops/op.h"
#include "anvil/support/error.h"

namespace anvil::ops {

using namespace ir;
using namespace elementwise;

namespace {

const DataType kBool = DataType::Bool();

// The dtype named by cast's attribute 'to'.
DataType cast_target(const Attrs& attrs) {
  std::string to = attrs.get_string("to");
  DataType t = kBool;
  bool ok = true;
  try {
    t = DataType::parse(to);
  } catch (const Error&) {
    ok = false;
  }
  ANVIL_CHECK(ok && in_set(t, TypeSet::kNumericOrBool), attrs.op(), ": attribute 'to' is '", to,
              "', expected float16/32/64, int8/16/32/64, uint8/16/32/64 or bool");
  return t;
}

// Integer arithmetic that wraps instead of overflowing (the reference must not be undefined).
int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t wrap_sub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
int64_t wrap_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

using BinaryF = std::function<Expr(Expr, Expr)>;
using BinaryFloatRef = std::function<double(double, double)>;
using BinaryIntRef = std::function<int64_t(int64_t, int64_t)>;
using BinaryUIntRef = std::function<uint64_t(uint64_t, uint64_t)>;

// A binary arithmetic op on floats and integers (floats only without `int_ref`). Integers narrower
// than 64 bits are exact in an int64; uint64 takes `uint_ref` when its result depends on the
// signedness (division, max, min), else `int_ref` on the bit patterns (add, sub, mul wrap alike).
void binary_arith(const Decl& decl, BinaryF f, BinaryFloatRef float_ref,
                  BinaryIntRef int_ref = nullptr, BinaryUIntRef uint_ref = nullptr) {
  register_elementwise(
      decl, 2, same_type(int_ref ? TypeSet::kNumeric : TypeSet::kFloat),
      [f](const std::vector<Expr>& x, const Attrs&) { return f(x[0], x[1]); },
      [float_ref, int_ref, uint_ref](const std::vector<Value>& x, const Attrs&) {
        if (x[0].is_float) return fval(float_ref(x[0].f, x[1].f));
        if (x[0].u && uint_ref) {
          uint64_t r = uint_ref(static_cast<uint64_t>(x[0].i), static_cast<uint64_t>(x[1].i));
          return ival(static_cast<int64_t>(r), true);
        }
        return ival(int_ref(x[0].i, x[1].i), x[0].u);
      });
}

// uint64 bit patterns as int64s of the same order (the sign bit flipped).
int64_t unsigned_order(int64_t v) {
  return static_cast<int64_t>(static_cast<uint64_t>(v) ^ (uint64_t{1} << 63));
}

// A comparison: bool output.
void comparison(const std::string& name, TypeSet set, BinaryF f,
                std::function<bool(double, double)> float_ref,
                std::function<bool(int64_t, int64_t)> int_ref) {
  register_elementwise(
      name, 2, to_bool(set),
      [f](const std::vector<Expr>& x, const Attrs&) { return f(x[0], x[1]); },
      [float_ref, int_ref](const std::vector<Value>& x, const Attrs&) {
        if (x[0].is_float) return bval(float_ref(x[0].f, x[1].f));
        if (x[0].u) return bval(int_ref(unsigned_order(x[0].i), unsigned_order(x[1].i)));
        return bval(int_ref(x[0].i, x[1].i));
      });
}

// Integer division truncating toward zero that never traps: x / 0 is 0, INT_MIN / -1 wraps
// (unsigned: only the zero divisor needs care).
Expr int_div(Expr a, Expr b) {
  DataType t = a.type();
  Expr zero = make_zero(t), one = make_one(t);
  if (t.is_uint()) return select(b == zero, zero, truncdiv(a, select(b == zero, one, b)));
  Expr minus_one = make_const(t, -1);
  Expr safe = select(b == zero || b == minus_one, one, b);
  Expr q = truncdiv(a, safe);
  // -a through unsigned arithmetic, which wraps (signed overflow would be undefined).
  DataType ut = DataType::UInt(t.bits());
  Expr neg = cast(t, make_zero(ut) - cast(ut, a));
  return select(b == zero, zero, select(b == minus_one, neg, q));
}

int64_t int_div_ref(int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (b == -1) return wrap_sub(0, a);
  return a / b;  // C++ truncates toward zero
}

void register_unary_ops() {
  // relu, neg and abs also take integers.
  register_elementwise(
      {"relu", {}, kKeepsBlocked}, 1, same_type(TypeSet::kNumeric),
      [](const std::vector<Expr>& x, const Attrs&) { return max(x[0], make_zero(x[0].type())); },
      [](const std::vector<Value>& x, const Attrs&) {
        if (x[0].is_float) return fval(std::isnan(x[0].f) ? x[0].f : x[0].f < 0 ? 0.0 : x[0].f);
        if (x[0].u) return x[0];
        return ival(x[0].i < 0 ? 0 : x[0].i);
      });
  register_elementwise(
      "neg", 1, same_type(TypeSet::kNumeric),
      [](const std::vector<Expr>& x, const Attrs&) {
        return x[0].type().is_float() ? -x[0] : make_zero(x[0].type()) - x[0];
      },
      [](const std::vector<Value>& x, const Attrs&) {
        return x[0].is_float ? fval(-x[0].f) : ival(wrap_sub(0, x[0].i));
      });
  register_elementwise(
      "abs", 1, same_type(TypeSet::kNumeric),
      [](const std::vector<Expr>& x, const Attrs&) {
        if (x[0].type().is_float()) return call(Intrinsic::kFabs, x[0]);
        Expr zero = make_zero(x[0].type());
        return select(x[0] < zero, zero - x[0], x[0]);
      },
      [](const std::vector<Value>& x, const Attrs&) {
        if (x[0].u) return x[0];
        return x[0].is_float ? fval(std::fabs(x[0].f))
                             : ival(x[0].i < 0 ? wrap_sub(0, x[0].i) : x[0].i);
      });

  // clip(x; min, max): float32, int32 or int64; for integers the bounds must be integers in the
  // type's range (or infinite: no bound).
  register_elementwise(
      {"clip",
       {float_attr("min", -INFINITY, "the lower bound (-inf: none)"),
        float_attr("max", INFINITY, "the upper bound (inf: none)")},
       kKeepsBlocked},
      1,
      [](const std::string& op, const std::vector<TensorType>& in, const Attrs& attrs) {
        DataType t = common_type(op, in, TypeSet::kNumeric);
        for (const char* name : {"min", "max"}) {
          double v = attrs.get_float(name);
          if (t.is_float() || std::isinf(v)) continue;
          ANVIL_CHECK(v == std::floor(v), op, ": attribute '", name, "' is ", v,
                      ", but must be an integer for ", t, " input");
          // As a double, int64's maximum rounds up to 2^63: the upper test is strict.
          ANVIL_CHECK(
              v >= static_cast<double>(t.min_value()) && v < static_cast<double>(t.max_value()) + 1,
              op, ": attribute '", name, "' is ", v, ", outside the range of ", t);
        }
        return t;
      },
      [](const std::vector<Expr>& x, const Attrs& attrs) {
        DataType t = x[0].type();
        double lo = attrs.get_float("min"), hi = attrs.get_float("max");
        Expr y = x[0];
        if (t.is_float()) {
          if (lo != -INFINITY) y = max(y, make_const(t, lo));
          if (hi != INFINITY) y = min(y, make_const(t, hi));
          return y;
        }
        // Integers (bounds validated to lie in the type's range): a bound at the type's limit is
        // no bound.
        if (lo != -INFINITY && static_cast<int64_t>(lo) > t.min_value()) {
          y = max(y, make_const(t, static_cast<int64_t>(lo)));
        }
        if (hi != INFINITY && static_cast<int64_t>(hi) < t.max_value()) {
          y = min(y, make_const(t, static_cast<int64_t>(hi)));
        }
        return y;
      },
      [](const std::vector<Value>& x, const Attrs& attrs) {
        double lo = attrs.get_float("min"), hi = attrs.get_float("max");
        if (x[0].is_float) {
          double v = x[0].f;
          if (v < lo) v = lo;
          if (v > hi) v = hi;
          return fval(v);
        }
        int64_t v = x[0].i;
        double d = x[0].u ? static_cast<double>(static_cast<uint64_t>(v)) : static_cast<double>(v);
        if (d < lo) v = static_cast<int64_t>(lo);
        if (d > hi) v = host::f64_to_i64(hi);  // a uint64 bound may exceed INT64_MAX
        return ival(v, x[0].u);
      });
}

void register_binary_ops() {
  binary_arith(
      {"add", {}, kKeepsBlocked}, [](Expr a, Expr b) { return a + b; },
      [](double a, double b) { return a + b; }, wrap_add);
  binary_arith(
      {"sub", {}, kKeepsBlocked}, [](Expr a, Expr b) { return a - b; },
      [](double a, double b) { return a - b; }, wrap_sub);
  binary_arith(
      {"mul", {}, kKeepsBlocked}, [](Expr a, Expr b) { return a * b; },
      [](double a, double b) { return a * b; }, wrap_mul);
  binary_arith(
      "div", [](Expr a, Expr b) { return a.type().is_float() ? a / b : int_div(a, b); },
      [](double a, double b) { return a / b; }, int_div_ref,
      [](uint64_t a, uint64_t b) { return b == 0 ? uint64_t{0} : a / b; });
  binary_arith(
      "pow",
      [](Expr a, Expr b) {
        return Call::make(Intrinsic::kPow, {a, b});
      },
      [](double a, double b) { return std::pow(a, b); });
  binary_arith(
      {"maximum", {}, kKeepsBlocked}, [](Expr a, Expr b) { return max(a, b); },
      [](double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN
                                      : a > b                        ? a
                                                                     : b; },
      [](int64_t a, int64_t b) { return a > b ? a : b; },
      [](uint64_t a, uint64_t b) { return a > b ? a : b; });
  binary_arith(
      {"minimum", {}, kKeepsBlocked}, [](Expr a, Expr b) { return min(a, b); },
      [](double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN
                                      : a < b                        ? a
                                                                     : b; },
      [](int64_t a, int64_t b) { return a < b ? a : b; },
      [](uint64_t a, uint64_t b) { return a < b ? a : b; });
  // mod(a, b; fmod): ONNX Mod. fmod 0 (integers only): the remainder with the divisor's sign
  // (Python's %); fmod 1: with the dividend's sign (C's fmod, exact for floats). An integer
  // remainder by 0 is 0 here (undefined in ONNX) and by -1 is 0 (INT_MIN % -1 would trap).
  register_elementwise(
      {"mod",
       {{"fmod",
         AttrType::kInt,
         int64_t{0},
         {one_of({0, 1})},
         "1: the remainder takes the dividend's sign; 0: the divisor's (integers only)"}}},
      2,
      [](const std::string& op, const std::vector<TensorType>& in, const Attrs& attrs) {
        DataType t = common_type(op, in, TypeSet::kNumeric);
        ANVIL_CHECK(!t.is_float() || attrs.get_int("fmod") == 1, op,
                    ": attribute 'fmod' must be 1 for float inputs (", t, "), got 0");
        return t;
      },
      [](const std::vector<Expr>& x, const Attrs& attrs) {
        DataType t = x[0].type();
        if (t.is_float()) return Call::make(Intrinsic::kFmod, {x[0], x[1]});
        Expr zero = make_zero(t), one = make_one(t);
        Expr trivial = x[1] == zero;
        if (!t.is_uint()) trivial = trivial || x[1] == make_const(t, -1);
        Expr b = select(trivial, one, x[1]);
        Expr r = attrs.get_int("fmod") ? truncmod(x[0], b) : floormod(x[0], b);
        return select(trivial, zero, r);
      },
      [](const std::vector<Value>& x, const Attrs& attrs) {
        if (x[0].is_float) return fval(std::fmod(x[0].f, x[1].f));
        if (x[0].u) {
          uint64_t a = static_cast<uint64_t>(x[0].i), b = static_cast<uint64_t>(x[1].i);
          return ival(b == 0 ? 0 : static_cast<int64_t>(a % b), true);
        }
        int64_t a = x[0].i, b = x[1].i;
        if (b == 0 || b == -1) return ival(0);
        int64_t r = a % b;  // C: the dividend's sign
        if (!attrs.get_int("fmod") && r != 0 && ((r < 0) != (b < 0))) r += b;
        return ival(r);
      });
  // bit_shift(x, s; direction): ONNX BitShift, unsigned integers only. The IR has no shift
  // nodes: x * 2^s (wrapping drops the high bits as a shift does) or x / 2^s, with 2^s the product
  // of the powers its set bits select; a shift by the width or more gives 0.
  register_elementwise(
      {"bit_shift",
       {{"direction", AttrType::kString, std::nullopt, {}, "left or right", /*required=*/true}}},
      2,
      [](const std::string& op, const std::vector<TensorType>& in, const Attrs& attrs) {
        DataType t = common_type(op, in, TypeSet::kNumeric);
        ANVIL_CHECK(t.is_uint(), op, ": inputs are ", t, "; bit shifts take unsigned integers");
        std::string d = attrs.get_string("direction");
        ANVIL_CHECK(d == "left" || d == "right", op, ": attribute 'direction' is '", d,
                    "', expected 'left' or 'right'");
        return t;
      },
      [](const std::vector<Expr>& x, const Attrs& attrs) {
        DataType t = x[0].type();
        const Expr& s = x[1];
        Expr power = make_one(t);
        for (int k = 0; (1 << k) < t.bits(); ++k) {
          Expr bit = floormod(floordiv(s, make_const(t, int64_t{1} << k)), make_const(t, 2));
          power = power *
                  select(bit == make_one(t), make_const(t, int64_t{1} << (1 << k)), make_one(t));
        }
        Expr shifted =
            attrs.get_string("direction") == "left" ? x[0] * power : floordiv(x[0], power);
        return select(s < make_const(t, t.bits()), shifted, make_zero(t));
      },
      [](const std::vector<Value>& x, const Attrs& attrs) {
        auto a = static_cast<uint64_t>(x[0].i), s = static_cast<uint64_t>(x[1].i);
        // Wider than the type: the result is cast to it when stored.
        uint64_t r = s >= 64 ? 0 : attrs.get_string("direction") == "left" ? a << s : a >> s;
        return ival(static_cast<int64_t>(r), true);
      });
  // prelu(x, slope): slope broadcasts to x's shape (ONNX unidirectional broadcasting).
  register_elementwise(
      {"prelu", {}, kKeepsBlocked}, 2, same_type(TypeSet::kFloat),
      [](const std::vector<Expr>& x, const Attrs&) {
        return select(x[0] < 0.0f, x[0] * x[1], x[0]);
      },
      [](const std::vector<Value>& x, const Attrs&) {
        return fval(x[0].f < 0 ? x[1].f * x[0].f : x[0].f);
      },
      /*first_shape=*/true);

  comparison(
      "equal", TypeSet::kNumericOrBool, [](Expr a, Expr b) { return a == b; },
      [](double a, double b) { return a == b; }, [](int64_t a, int64_t b) { return a == b; });
  comparison(
      "less", TypeSet::kNumeric, [](Expr a, Expr b) { return a < b; },
      [](double a, double b) { return a < b; }, [](int64_t a, int64_t b) { return a < b; });
  comparison(
      "less_equal", TypeSet::kNumeric, [](Expr a, Expr b) { return a <= b; },
      [](double a, double b) { return a <= b; }, [](int64_t a, int64_t b) { return a <= b; });
  comparison(
      "greater", TypeSet::kNumeric, [](Expr a, Expr b) { return a > b; },
      [](double a, double b) { return a > b; }, [](int64_t a, int64_t b) { return a > b; });
  comparison(
      "greater_equal", TypeSet::kNumeric, [](Expr a, Expr b) { return a >= b; },
      [](double a, double b) { return a >= b; }, [](int64_t a, int64_t b) { return a >= b; });

  auto logic_ref = [](std::function<bool(bool, bool)> f) {
    return [f](const std::vector<Value>& x, const Attrs&) { return bval(f(x[0].i, x[1].i)); };
  };
  register_elementwise(
      "logical_and", 2, same_type(TypeSet::kBool),
      [](const std::vector<Expr>& x, const Attrs&) { return x[0] && x[1]; },
      logic_ref([](bool a, bool b) { return a && b; }));
  register_elementwise(
      "logical_or", 2, same_type(TypeSet::kBool),
      [](const std::vector<Expr>& x, const Attrs&) { return x[0] || x[1]; },
      logic_ref([](bool a, bool b) { return a || b; }));
  register_elementwise(
      "logical_xor", 2, same_type(TypeSet::kBool),
      [](const std::vector<Expr>& x, const Attrs&) { return x[0] != x[1]; },
      logic_ref([](bool a, bool b) { return a != b; }));
  register_elementwise(
      "logical_not", 1, same_type(TypeSet::kBool),
      [](const std::vector<Expr>& x, const Attrs&) { return !x[0]; },
      [](const std::vector<Value>& x, const Attrs&) { return bval(x[0].i == 0); });
}

void register_other_ops() {
  // where(cond, x, y): cond bool, x and y of one type; all three broadcast.
  register_elementwise(
      "where", 3,
      [](const std::string& op, const std::vector<TensorType>& in, const Attrs&) {
        ANVIL_CHECK(in[0].dtype == kBool, op, ": input 0 (condition) is ", to_string(in[0]),
                    ", expected bool");
        return common_type(op, in, TypeSet::kNumericOrBool, 1);
      },
      [](const std::vector<Expr>& x, const Attrs&) { return select(x[0], x[1], x[2]); },
      [](const std::vector<Value>& x, const Attrs&) { return x[0].i != 0 ? x[1] : x[2]; });
  // cast(x; to).
  register_elementwise(
      {"cast",
       {{"to",
         AttrType::kString,
         std::nullopt,
         {},
         "the target type: float16/32/64, int8/16/32/64, uint8/16/32/64 or bool",
         /*required=*/true}}},
      1,
      [](const std::string& op, const std::vector<TensorType>& in, const Attrs& attrs) {
        common_type(op, in, TypeSet::kNumericOrBool);
        return cast_target(attrs);
      },
      [](const std::vector<Expr>& x, const Attrs& attrs) {
        DataType to = cast_target(attrs);
        host::check_compiled_dtype("cast", to, "the target type");
        return x[0].type() == to ? x[0] : Cast::make(to, x[0]);
      },
      [](const std::vector<Value>& x, const Attrs&) { return x[0]; });
}

}  // namespace

void register_elementwise_ops() {
  register_unary_ops();
  register_binary_ops();
  register_other_ops();
}

}  // namespace anvil::ops
