#include "anvil/arith/bound.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "anvil/support/error.h"

namespace anvil::arith {

namespace {

using ir::DataType;
using ir::Expr;
using ir::IRNodeType;

constexpr int64_t kNegInf = IntBounds::kNegInf;
constexpr int64_t kPosInf = IntBounds::kPosInf;

// ---------------------------------------------------------------------------------------------
// Ends of intervals
//
// An end is a finite int64 strictly between the two sentinels, or a sentinel standing for an
// infinity. Every IntBounds built here keeps min < kPosInf and max > kNegInf, so no end ever
// reads as an infinity on the wrong side.

bool is_inf(int64_t v) {
  return v == kNegInf || v == kPosInf;
}

// An exact or saturated value as a sound lower end: a value at or above INT64_MAX (exact or
// overflowed) becomes the largest finite value, never +inf.
int64_t as_lower(int64_t v) {
  return v == kPosInf ? kPosInf - 1 : v;
}
// The same for an upper end.
int64_t as_upper(int64_t v) {
  return v == kNegInf ? kNegInf + 1 : v;
}

IntBounds make_bounds(int64_t lo, int64_t hi) {
  return {as_lower(lo), as_upper(hi)};
}

// -x, where -(-inf) is +inf. Never overflows; but -(INT64_MIN + 1) is INT64_MAX, the +inf
// sentinel, so a negated end goes through as_lower or as_upper.
int64_t neg(int64_t x) {
  if (x == kNegInf) return kPosInf;
  if (x == kPosInf) return kNegInf;
  return -x;
}

// x + y, saturating at the infinities. `unknown` is the answer to -inf + +inf: -inf for a lower
// end, +inf for an upper end.
int64_t sat_add(int64_t x, int64_t y, int64_t unknown) {
  if (is_inf(x) || is_inf(y)) {
    if (is_inf(x) && is_inf(y) && x != y) return unknown;
    return is_inf(x) ? x : y;
  }
  int64_t r;
  if (__builtin_add_overflow(x, y, &r)) return x > 0 ? kPosInf : kNegInf;
  return r;
}

// x * y, saturating at the infinities. An infinite end times zero is zero: the values it bounds
// are finite.
int64_t sat_mul(int64_t x, int64_t y) {
  if (x == 0 || y == 0) return 0;
  bool negative = (x < 0) != (y < 0);
  int64_t r;
  if (is_inf(x) || is_inf(y) || __builtin_mul_overflow(x, y, &r)) {
    return negative ? kNegInf : kPosInf;
  }
  return r;
}

// Floor or truncating division of a finite x by a positive y, which may be +inf.
int64_t div_end(int64_t x, int64_t y, bool floor) {
  if (y == kPosInf) return floor && x < 0 ? -1 : 0;
  int64_t q = x / y;
  if (floor && x % y != 0 && x < 0) --q;
  return q;
}

// ---------------------------------------------------------------------------------------------
// Interval operations

IntBounds add(const IntBounds& a, const IntBounds& b) {
  return make_bounds(sat_add(a.min, b.min, kNegInf), sat_add(a.max, b.max, kPosInf));
}

IntBounds negate(const IntBounds& a) {
  return make_bounds(neg(a.max), neg(a.min));
}

IntBounds sub(const IntBounds& a, const IntBounds& b) {
  return add(a, negate(b));
}

IntBounds mul(const IntBounds& a, const IntBounds& b) {
  int64_t c[] = {sat_mul(a.min, b.min), sat_mul(a.min, b.max), sat_mul(a.max, b.min),
                 sat_mul(a.max, b.max)};
  return make_bounds(*std::min_element(c, c + 4), *std::max_element(c, c + 4));
}

IntBounds unite(const IntBounds& a, const IntBounds& b) {
  return {std::min(a.min, b.min), std::max(a.max, b.max)};
}

// a / b rounded down or toward zero, for b > 0. The quotient grows with a; for a fixed a it
// shrinks toward zero as b grows, so each end comes from one corner.
IntBounds div_by_positive(const IntBounds& a, const IntBounds& b, bool floor) {
  int64_t lo = a.min == kNegInf ? kNegInf : div_end(a.min, a.min >= 0 ? b.max : b.min, floor);
  int64_t hi = a.max == kPosInf ? kPosInf : div_end(a.max, a.max >= 0 ? b.min : b.max, floor);
  return make_bounds(lo, hi);
}

// Both roundings satisfy q(a, b) == q(-a, -b), so a negative divisor becomes a positive one.
IntBounds divide(const IntBounds& a, const IntBounds& b, bool floor) {
  if (b.min > 0) return div_by_positive(a, b, floor);
  if (b.max < 0) return div_by_positive(negate(a), negate(b), floor);
  return IntBounds::everything();  // the divisor may be zero
}

int64_t floordiv(int64_t x, int64_t c) {
  return div_end(x, c, /*floor=*/true);
}
// For c > 0; x - floordiv(x, c) * c could overflow on the way.
int64_t floormod(int64_t x, int64_t c) {
  int64_t r = x % c;
  return r < 0 ? r + c : r;
}

// floormod(a, b) for b > 0: in [0, b.max - 1], and exact when a stays within one period.
IntBounds floormod_by_positive(const IntBounds& a, const IntBounds& b) {
  if (b.is_single() && a.has_lower() && a.has_upper()) {
    int64_t c = b.min;
    if (floordiv(a.min, c) == floordiv(a.max, c)) return {floormod(a.min, c), floormod(a.max, c)};
  }
  if (a.min >= 0 && a.max < b.min) return a;
  int64_t hi = sat_add(b.max, -1, kPosInf);
  if (a.min >= 0) hi = std::min(hi, a.max);
  return {0, hi};
}

// floormod takes the divisor's sign: floormod(a, b) == -floormod(-a, -b).
IntBounds floormod(const IntBounds& a, const IntBounds& b) {
  if (b.min > 0) return floormod_by_positive(a, b);
  if (b.max < 0) return negate(floormod_by_positive(negate(a), negate(b)));
  return IntBounds::everything();
}

// truncmod takes the dividend's sign and ignores the divisor's: truncmod(a, b) ==
// truncmod(a, -b), and for a >= 0 it is floormod.
IntBounds truncmod(const IntBounds& a, const IntBounds& b) {
  IntBounds m;
  if (b.min > 0) {
    m = b;
  } else if (b.max < 0) {
    m = negate(b);
  } else {
    return IntBounds::everything();
  }
  if (a.min >= 0) return floormod_by_positive(a, m);
  if (a.max <= 0) return negate(floormod_by_positive(negate(a), m));
  int64_t hi = sat_add(m.max, -1, kPosInf);
  return {std::max(a.min, as_lower(neg(hi))), std::min(a.max, hi)};
}

// A bool operand's interval, within [0, 1].
IntBounds as_bool(const IntBounds& b) {
  IntBounds r{std::max<int64_t>(b.min, 0), std::min<int64_t>(b.max, 1)};
  return r.min <= r.max ? r : IntBounds{0, 1};
}

IntBounds truth(bool always, bool never) {
  if (always) return IntBounds::single(1);
  if (never) return IntBounds::single(0);
  return {0, 1};
}

// ---------------------------------------------------------------------------------------------
// Types

bool is_integral(DataType t) {
  return t.is_int_or_uint() || t.is_bool();
}

// Every value of t (uint64's values above INT64_MAX lie under +inf).
IntBounds type_range(DataType t) {
  if (!is_integral(t)) return IntBounds::everything();
  return {t.min_value(), t.max_value()};
}

// The result of integer arithmetic in t. int32 and int64 arithmetic is assumed never to
// overflow (as Halide and TVM assume of index arithmetic), so the result lies in the type's
// range. Unsigned and narrower signed types wrap, so a result that leaves the range may be
// anywhere in it.
IntBounds fit(const IntBounds& b, DataType t) {
  IntBounds range = type_range(t);
  if (t.is_int() && t.bits() >= 32) {
    IntBounds r{std::max(b.min, range.min), std::min(b.max, range.max)};
    return r.min <= r.max ? r : range;
  }
  // A uint64 end at +inf may have wrapped past 2^64.
  bool may_wrap = b.min < range.min || b.max > range.max || (t.bits() == 64 && !b.has_upper());
  return may_wrap ? range : b;
}

// A uint64 interval open above may hold values beyond INT64_MAX, which only uint64 holds.
bool beyond_int64(const IntBounds& b, DataType t) {
  return t.is_uint() && t.bits() == 64 && !b.has_upper();
}

IntBounds cast(DataType to, DataType from, const IntBounds& b) {
  if (!is_integral(to)) return IntBounds::everything();
  if (to.is_bool()) {
    if (from.is_float()) return {0, 1};
    return truth(b.min > 0 || b.max < 0, b.min == 0 && b.max == 0);  // x != 0
  }
  IntBounds range = type_range(to);
  if (!is_integral(from)) return range;
  if (beyond_int64(b, from) && !(to.is_uint() && to.bits() == 64)) return range;
  return b.min >= range.min && b.max <= range.max ? b : range;
}

// ---------------------------------------------------------------------------------------------
// The analysis

class Bounds {
 public:
  explicit Bounds(const VarBounds& vars) : vars_(vars) {}

  IntBounds get(const Expr& e) {
    ANVIL_ICHECK(e.defined(), "bounds_of an undefined expression");
    if (!is_integral(e.type())) return IntBounds::everything();
    return visit(e);
  }

 private:
  template <typename T>
  const T* as(const Expr& e) {
    return static_cast<const T*>(e.get());
  }

  IntBounds visit(const Expr& e) {
    DataType t = e.type();
    switch (e.node_type()) {
      case IRNodeType::IntImm: {
        int64_t v = as<ir::IntImm>(e)->value;
        return make_bounds(v, v);
      }
      case IRNodeType::Variable:
        return variable(as<ir::Variable>(e));
      case IRNodeType::Cast: {
        const ir::Cast* op = as<ir::Cast>(e);
        return cast(t, op->value.type(), get(op->value));
      }
      case IRNodeType::Add: {
        auto [x, y] = operands<ir::Add>(e);
        return fit(add(x, y), t);
      }
      case IRNodeType::Sub: {
        auto [x, y] = operands<ir::Sub>(e);
        return fit(sub(x, y), t);
      }
      case IRNodeType::Mul: {
        auto [x, y] = operands<ir::Mul>(e);
        return fit(mul(x, y), t);
      }
      case IRNodeType::FloorDiv: {
        auto [x, y] = operands<ir::FloorDiv>(e);
        return fit(divide(x, y, /*floor=*/true), t);
      }
      case IRNodeType::TruncDiv: {
        auto [x, y] = operands<ir::TruncDiv>(e);
        return fit(divide(x, y, /*floor=*/false), t);
      }
      case IRNodeType::FloorMod: {
        auto [x, y] = operands<ir::FloorMod>(e);
        return fit(floormod(x, y), t);
      }
      case IRNodeType::TruncMod: {
        auto [x, y] = operands<ir::TruncMod>(e);
        return fit(truncmod(x, y), t);
      }
      case IRNodeType::Min: {
        auto [x, y] = operands<ir::Min>(e);
        return {std::min(x.min, y.min), std::min(x.max, y.max)};
      }
      case IRNodeType::Max: {
        auto [x, y] = operands<ir::Max>(e);
        return {std::max(x.min, y.min), std::max(x.max, y.max)};
      }
      case IRNodeType::EQ: {
        auto [x, y] = operands<ir::EQ>(e);
        return equal(x, y);
      }
      case IRNodeType::NE: {
        auto [x, y] = operands<ir::NE>(e);
        IntBounds eq = equal(x, y);
        return {1 - eq.max, 1 - eq.min};
      }
      case IRNodeType::LT: {
        auto [x, y] = operands<ir::LT>(e);
        return less(x, y, /*or_equal=*/false);
      }
      case IRNodeType::LE: {
        auto [x, y] = operands<ir::LE>(e);
        return less(x, y, /*or_equal=*/true);
      }
      case IRNodeType::GT: {
        auto [x, y] = operands<ir::GT>(e);
        return less(y, x, /*or_equal=*/false);
      }
      case IRNodeType::GE: {
        auto [x, y] = operands<ir::GE>(e);
        return less(y, x, /*or_equal=*/true);
      }
      case IRNodeType::And: {
        auto [x, y] = operands<ir::And>(e);
        x = as_bool(x), y = as_bool(y);
        return {std::min(x.min, y.min), std::min(x.max, y.max)};
      }
      case IRNodeType::Or: {
        auto [x, y] = operands<ir::Or>(e);
        x = as_bool(x), y = as_bool(y);
        return {std::max(x.min, y.min), std::max(x.max, y.max)};
      }
      case IRNodeType::Not: {
        IntBounds x = as_bool(get(as<ir::Not>(e)->a));
        return {1 - x.max, 1 - x.min};
      }
      case IRNodeType::Select: {
        const ir::Select* op = as<ir::Select>(e);
        IntBounds c = as_bool(get(op->condition));
        if (c == IntBounds::single(1)) return get(op->true_value);
        if (c == IntBounds::single(0)) return get(op->false_value);
        return unite(get(op->true_value), get(op->false_value));
      }
      case IRNodeType::Ramp: {
        const ir::Ramp* op = as<ir::Ramp>(e);
        IntBounds lanes{0, op->lanes - 1};
        return fit(add(get(op->base), mul(get(op->stride), lanes)), t);
      }
      case IRNodeType::Broadcast:
        return get(as<ir::Broadcast>(e)->value);
      case IRNodeType::Let:
        return let(as<ir::Let>(e));
      default:
        return type_range(t);  // loads, calls, reductions
    }
  }

  // The intervals of a binary node's operands.
  template <typename T>
  std::pair<IntBounds, IntBounds> operands(const Expr& e) {
    const T* op = as<T>(e);
    return {get(op->a), get(op->b)};
  }

  // x == y: true when both are the same single value, false when they do not overlap.
  static IntBounds equal(const IntBounds& x, const IntBounds& y) {
    return truth(x.is_single() && x == y, x.max < y.min || y.max < x.min);
  }

  // x < y (or x <= y): decided when the intervals do not overlap (or touch).
  static IntBounds less(const IntBounds& x, const IntBounds& y, bool or_equal) {
    if (or_equal) return truth(x.max <= y.min, x.min > y.max);
    return truth(x.max < y.min, x.min >= y.max);
  }

  IntBounds variable(const ir::Variable* v) {
    if (auto it = scoped_.find(v); it != scoped_.end()) return it->second;
    if (auto it = vars_.find(v); it != vars_.end()) {
      return make_bounds(it->second.min, it->second.max);
    }
    return type_range(v->type);
  }

  IntBounds let(const ir::Let* op) {
    IntBounds value = get(op->value);
    const ir::Variable* v = op->var.get();
    auto it = scoped_.find(v);
    std::optional<IntBounds> outer;
    if (it != scoped_.end()) outer = it->second;
    scoped_[v] = value;
    IntBounds body = get(op->body);
    if (outer) {
      scoped_[v] = *outer;
    } else {
      scoped_.erase(v);
    }
    return body;
  }

  const VarBounds& vars_;
  VarBounds scoped_;  // variables bound by enclosing Lets; they shadow vars_
};

}  // namespace

std::ostream& operator<<(std::ostream& os, const IntBounds& b) {
  os << '[';
  if (b.has_lower()) {
    os << b.min;
  } else {
    os << "-inf";
  }
  os << ", ";
  if (b.has_upper()) {
    os << b.max;
  } else {
    os << "+inf";
  }
  return os << ']';
}

IntBounds bounds_of(const ir::Expr& e, const VarBounds& vars) {
  return Bounds(vars).get(e);
}

}  // namespace anvil::arith
