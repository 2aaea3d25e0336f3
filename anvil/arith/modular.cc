#include "anvil/arith/modular.h"

#include <limits>
#include <optional>
#include <utility>

#include "anvil/support/error.h"

namespace anvil::arith {

namespace {

using ir::DataType;
using ir::Expr;
using ir::IRNodeType;

constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
// The largest power of two that int64 holds with room to spare; stands in for 2^63 and 2^64,
// which it divides.
constexpr int64_t kBigPowerOfTwo = int64_t{1} << 62;

// |x| as an unsigned number: defined for every int64, INT64_MIN included.
uint64_t magnitude(int64_t x) {
  return x < 0 ? uint64_t{0} - static_cast<uint64_t>(x) : x;
}

// A coefficient from an unsigned magnitude. 2^63 does not fit, so it becomes 2^62: a divisor
// of it, which gives a larger, still sound, set.
int64_t as_coeff(uint64_t m) {
  return m > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ? kBigPowerOfTwo
                                                                        : static_cast<int64_t>(m);
}

// gcd(|x|, |y|), with gcd(0, y) = |y|.
int64_t gcd(int64_t x, int64_t y) {
  uint64_t a = magnitude(x), b = magnitude(y);
  while (b != 0) {
    uint64_t r = a % b;
    a = b;
    b = r;
  }
  return as_coeff(a);
}

// floordiv and floormod for c != 0; nullopt where the quotient overflows (INT64_MIN / -1).
std::optional<int64_t> floordiv(int64_t x, int64_t c) {
  if (c == -1) return x == kInt64Min ? std::nullopt : std::optional<int64_t>(-x);
  int64_t q = x / c;
  if (x % c != 0 && ((x < 0) != (c < 0))) --q;
  return q;
}

int64_t floormod(int64_t x, int64_t c) {
  if (c == 1 || c == -1) return 0;
  int64_t r = x % c;
  return r != 0 && ((r < 0) != (c < 0)) ? r + c : r;
}

// ---------------------------------------------------------------------------------------------
// Set operations

ModularSet everything() {
  return ModularSet::everything();
}

ModularSet add(const ModularSet& a, const ModularSet& b) {
  int64_t coeff = gcd(a.coeff, b.coeff);
  if (coeff == 0) {
    int64_t sum;
    if (__builtin_add_overflow(a.base, b.base, &sum)) return everything();
    return ModularSet::single(sum);
  }
  // Both residues lie in [0, coeff), so r1 - (coeff - r2) cannot overflow.
  int64_t r1 = floormod(a.base, coeff), r2 = floormod(b.base, coeff);
  return ModularSet::make(coeff, r1 - (coeff - r2));
}

ModularSet sub(const ModularSet& a, const ModularSet& b) {
  int64_t coeff = gcd(a.coeff, b.coeff);
  if (coeff == 0) {
    int64_t diff;
    if (__builtin_sub_overflow(a.base, b.base, &diff)) return everything();
    return ModularSet::single(diff);
  }
  return ModularSet::make(coeff, floormod(a.base, coeff) - floormod(b.base, coeff));
}

// (c1*n + b1) * (c2*m + b2) = c1*c2*n*m + c1*b2*n + c2*b1*m + b1*b2.
ModularSet mul(const ModularSet& a, const ModularSet& b) {
  int64_t cc, cb, bc, bb;
  if (__builtin_mul_overflow(a.coeff, b.coeff, &cc) ||
      __builtin_mul_overflow(a.coeff, b.base, &cb) ||
      __builtin_mul_overflow(b.coeff, a.base, &bc) || __builtin_mul_overflow(a.base, b.base, &bb)) {
    return everything();
  }
  return ModularSet::make(gcd(gcd(cc, cb), bc), bb);
}

// The smallest set holding both: every difference of members is a multiple of the coefficient.
ModularSet unite(const ModularSet& a, const ModularSet& b) {
  int64_t diff;
  if (__builtin_sub_overflow(a.base, b.base, &diff)) return everything();
  return ModularSet::make(gcd(gcd(a.coeff, b.coeff), diff), a.base);
}

// floordiv(c*n + b, k) = (c/k)*n + floordiv(b, k) when k divides c.
ModularSet floordiv(const ModularSet& a, int64_t k) {
  if (a.coeff % k != 0) return everything();
  std::optional<int64_t> q = floordiv(a.base, k);
  if (!q) return everything();
  return ModularSet::make(a.coeff / k, *q);
}

// floormod(x, k) = x - k*floordiv(x, k) keeps x's residue modulo any divisor of k.
ModularSet floormod(const ModularSet& a, int64_t k) {
  if (a.coeff % k == 0) return ModularSet::single(floormod(a.base, k));
  return ModularSet::make(gcd(a.coeff, k), a.base);
}

// truncdiv is exact on multiples of k, and otherwise rounds differently on either side of zero.
ModularSet truncdiv(const ModularSet& a, int64_t k) {
  if (a.is_single()) {
    if (k == -1 && a.base == kInt64Min) return everything();
    return ModularSet::single(a.base / k);
  }
  if (a.coeff % k != 0 || a.base % k != 0) return everything();
  return ModularSet::make(a.coeff / k, a.base / k);
}

// truncmod(x, k) = x - k*truncdiv(x, k): like floormod it keeps residues modulo divisors of k,
// and it is zero on multiples of k.
ModularSet truncmod(const ModularSet& a, int64_t k) {
  if (a.is_single()) return ModularSet::single(k == -1 ? 0 : a.base % k);
  if (a.coeff % k == 0 && floormod(a.base, k) == 0) return ModularSet::single(0);
  return ModularSet::make(gcd(a.coeff, k), a.base);
}

// ---------------------------------------------------------------------------------------------
// Types

// Unsigned and narrower signed arithmetic wraps; int32 and int64 arithmetic is assumed never
// to overflow (as the bound analysis assumes).
bool wraps(DataType t) {
  return t.is_uint() || (t.is_int() && t.bits() < 32);
}

// The set of `m`'s values converted to integer type t, that is, taken modulo 2^bits into t's
// range. A coefficient keeps only its common factor with 2^bits.
ModularSet wrap_to(const ModularSet& m, DataType t) {
  if (m.is_single() && m.base >= t.min_value() && m.base <= t.max_value()) return m;
  if (t.bits() >= 63) return ModularSet::make(gcd(m.coeff, kBigPowerOfTwo), m.base);
  int64_t modulus = int64_t{1} << t.bits();
  if (m.is_single()) {
    int64_t r = floormod(m.base, modulus);
    return ModularSet::single(r > t.max_value() ? r - modulus : r);
  }
  return ModularSet::make(gcd(m.coeff, modulus), m.base);
}

// Whether every value of `from` is a value of `to`, so that a cast changes nothing.
bool holds_all_of(DataType to, DataType from) {
  if (from.is_bool()) return true;
  if (from.is_uint() && from.bits() == 64) return to.is_uint() && to.bits() == 64;
  return from.min_value() >= to.min_value() && from.max_value() <= to.max_value();
}

ModularSet cast(DataType to, DataType from, const ModularSet& m) {
  bool integral_from = from.is_int_or_uint() || from.is_bool();
  if (!integral_from || !(to.is_int_or_uint() || to.is_bool())) return everything();
  if (to.is_bool()) {  // x != 0
    if (m.is_single()) return ModularSet::single(m.base != 0);
    return m.base != 0 ? ModularSet::single(1) : everything();
  }
  return holds_all_of(to, from) ? m : wrap_to(m, to);
}

// ---------------------------------------------------------------------------------------------
// The analysis

class Modular {
 public:
  explicit Modular(const VarModular& vars) : vars_(vars) {}

  ModularSet get(const Expr& e) {
    ANVIL_ICHECK(e.defined(), "modular_set_of an undefined expression");
    DataType t = e.type();
    if (!(t.is_int_or_uint() || t.is_bool())) return everything();
    return visit(e);
  }

 private:
  template <typename T>
  const T* as(const Expr& e) {
    return static_cast<const T*>(e.get());
  }

  template <typename T>
  std::pair<ModularSet, ModularSet> operands(const Expr& e) {
    const T* op = as<T>(e);
    return {get(op->a), get(op->b)};
  }

  // A division or modulo by a nonzero constant, or nothing known.
  template <typename T, typename F>
  ModularSet by_constant(const Expr& e, F rule) {
    auto [x, y] = operands<T>(e);
    if (!y.is_single() || y.base == 0) return everything();
    return arith(e, rule(x, y.base));
  }

  // The result of arithmetic in e's type, which may wrap.
  static ModularSet arith(const Expr& e, const ModularSet& m) {
    return wraps(e.type()) ? wrap_to(m, e.type()) : m;
  }

  ModularSet visit(const Expr& e) {
    switch (e.node_type()) {
      case IRNodeType::IntImm:
        return ModularSet::single(as<ir::IntImm>(e)->value);
      case IRNodeType::Variable:
        return variable(as<ir::Variable>(e));
      case IRNodeType::Cast: {
        const ir::Cast* op = as<ir::Cast>(e);
        return cast(e.type(), op->value.type(), get(op->value));
      }
      case IRNodeType::Add: {
        auto [x, y] = operands<ir::Add>(e);
        return arith(e, add(x, y));
      }
      case IRNodeType::Sub: {
        auto [x, y] = operands<ir::Sub>(e);
        return arith(e, sub(x, y));
      }
      case IRNodeType::Mul: {
        auto [x, y] = operands<ir::Mul>(e);
        return arith(e, mul(x, y));
      }
      case IRNodeType::FloorDiv:
        return by_constant<ir::FloorDiv>(
            e, [](const ModularSet& x, int64_t k) { return floordiv(x, k); });
      case IRNodeType::FloorMod:
        return by_constant<ir::FloorMod>(
            e, [](const ModularSet& x, int64_t k) { return floormod(x, k); });
      case IRNodeType::TruncDiv:
        return by_constant<ir::TruncDiv>(
            e, [](const ModularSet& x, int64_t k) { return truncdiv(x, k); });
      case IRNodeType::TruncMod:
        return by_constant<ir::TruncMod>(
            e, [](const ModularSet& x, int64_t k) { return truncmod(x, k); });
      case IRNodeType::Min: {
        auto [x, y] = operands<ir::Min>(e);
        return unite(x, y);
      }
      case IRNodeType::Max: {
        auto [x, y] = operands<ir::Max>(e);
        return unite(x, y);
      }
      case IRNodeType::Select: {
        const ir::Select* op = as<ir::Select>(e);
        ModularSet c = get(op->condition);
        if (c.is_single()) return get(c.base != 0 ? op->true_value : op->false_value);
        return unite(get(op->true_value), get(op->false_value));
      }
      case IRNodeType::Ramp: {  // base + i*stride: every lane differs from base by a stride
        const ir::Ramp* op = as<ir::Ramp>(e);
        ModularSet base = get(op->base);
        return arith(e, unite(base, add(base, get(op->stride))));
      }
      case IRNodeType::Broadcast:
        return get(as<ir::Broadcast>(e)->value);
      case IRNodeType::Let:
        return let(as<ir::Let>(e));
      default:
        return everything();  // comparisons, logic, loads, calls, reductions
    }
  }

  ModularSet variable(const ir::Variable* v) {
    if (auto it = scoped_.find(v); it != scoped_.end()) return it->second;
    if (auto it = vars_.find(v); it != vars_.end()) return it->second;
    return everything();
  }

  ModularSet let(const ir::Let* op) {
    ModularSet value = get(op->value);
    const ir::Variable* v = op->var.get();
    std::optional<ModularSet> outer;
    if (auto it = scoped_.find(v); it != scoped_.end()) outer = it->second;
    scoped_[v] = value;
    ModularSet body = get(op->body);
    if (outer) {
      scoped_[v] = *outer;
    } else {
      scoped_.erase(v);
    }
    return body;
  }

  const VarModular& vars_;
  VarModular scoped_;  // variables bound by enclosing Lets; they shadow vars_
};

}  // namespace

ModularSet ModularSet::make(int64_t coeff, int64_t base) {
  int64_t c = as_coeff(magnitude(coeff));
  return {c, c == 0 ? base : floormod(base, c)};
}

std::ostream& operator<<(std::ostream& os, const ModularSet& m) {
  if (m.is_single()) return os << '{' << m.base << '}';
  os << '{' << m.coeff << "k";
  if (m.base != 0) os << " + " << m.base;
  return os << '}';
}

ModularSet modular_set_of(const ir::Expr& e, const VarModular& vars) {
  return Modular(vars).get(e);
}

}  // namespace anvil::arith
