// Simplification rules for arithmetic: + - * / floordiv floormod truncdiv truncmod min max,
// including the vector forms Ramp and Broadcast.
#include <cmath>
#include <type_traits>

#include "anvil/arith/modular.h"
#include "anvil/arith/simplifier.h"
#include "anvil/ir/equal.h"
#include "anvil/ir/op.h"
#include "anvil/support/int_math.h"

namespace anvil::arith {

using namespace ir;
using namespace simplify_detail;

namespace simplify_detail {

Expr smaller(const Expr& candidate, const Expr& fallback) {
  if (!candidate.defined()) return fallback;
  if (candidate.same_as(fallback)) return candidate;
  int64_t c = node_count(candidate), f = node_count(fallback);
  // An identical rewrite keeps the original node, so unchanged trees stay shared.
  if (c == f && structural_compare(candidate, fallback) == 0) return fallback;
  return c <= f ? candidate : fallback;
}

Expr canonical(const Expr& e) {
  std::optional<LinearSum> sum = linearize(e);
  return sum ? rebuild(*sum) : Expr();
}

Expr int_const(DataType t, int64_t v) {
  if (t.is_vector()) {
    Expr scalar = int_const(t.element_of(), v);
    return scalar.defined() ? Broadcast::make(scalar, t.lanes()) : Expr();
  }
  if (t.is_uint() && t.bits() < 64)
    v = static_cast<int64_t>(static_cast<uint64_t>(v) & ((uint64_t{1} << t.bits()) - 1));
  if (v < t.min_value() || v > t.max_value()) return Expr();
  return IntImm::make(t, v);
}

int64_t floordiv_int(int64_t a, int64_t b) {
  return floor_div(a, b);
}

int64_t floormod_int(int64_t a, int64_t b) {
  return floor_mod(a, b);
}

}  // namespace simplify_detail

namespace {

template <typename T>
Expr rebuilt(const T* op, const Expr& a, const Expr& b) {
  if (a.same_as(op->a) && b.same_as(op->b)) return op;
  return T::make(a, b);
}

// Folds a binary operation on two integer or two float constants; undefined when it cannot
// (not constants, division by zero, overflow, a float type narrower than 32 bits).
template <typename IntFn, typename FloatFn>
Expr fold(DataType t, const Expr& a, const Expr& b, IntFn int_fn, FloatFn float_fn) {
  if (t.is_int_or_uint()) {
    std::optional<int64_t> x = as_const_int(a), y = as_const_int(b);
    if (!x || !y) return Expr();
    std::optional<int64_t> r = int_fn(*x, *y);
    return r ? int_const(t, *r) : Expr();
  }
  if (t.is_float() && t.bits() >= 32 && t.code() == DataType::Code::kFloat) {
    std::optional<double> x = as_const_float(a), y = as_const_float(b);
    if (!x || !y) return Expr();
    double r = float_fn(*x, *y);
    if (t.bits() == 32) r = static_cast<float>(r);
    return make_const(t, r);
  }
  return Expr();
}

std::optional<int64_t> checked_add(int64_t x, int64_t y) {
  int64_t r;
  if (__builtin_add_overflow(x, y, &r)) return std::nullopt;
  return r;
}
std::optional<int64_t> checked_sub(int64_t x, int64_t y) {
  int64_t r;
  if (__builtin_sub_overflow(x, y, &r)) return std::nullopt;
  return r;
}
std::optional<int64_t> checked_mul(int64_t x, int64_t y) {
  int64_t r;
  if (__builtin_mul_overflow(x, y, &r)) return std::nullopt;
  return r;
}

// A Ramp, or a Broadcast when the stride is zero.
Expr make_ramp(const Expr& base, const Expr& stride, int lanes) {
  if (is_zero(stride)) return Broadcast::make(base, lanes);
  return Ramp::make(base, stride, lanes);
}

// Vector arithmetic on Ramps and Broadcasts: lane-wise + - * move inside. `scalar_op` builds and
// simplifies the scalar operation.
template <typename Op>
Expr vector_rules(const Expr& a, const Expr& b, bool is_sub, bool is_mul, Op scalar_op) {
  const Broadcast* ba = a.as<Broadcast>();
  const Broadcast* bb = b.as<Broadcast>();
  const Ramp* ra = a.as<Ramp>();
  const Ramp* rb = b.as<Ramp>();
  if (ba && bb) return Broadcast::make(scalar_op(ba->value, bb->value), ba->lanes);
  if (is_mul) {
    if (ra && bb)
      return make_ramp(scalar_op(ra->base, bb->value), scalar_op(ra->stride, bb->value), ra->lanes);
    if (ba && rb)
      return make_ramp(scalar_op(ba->value, rb->base), scalar_op(ba->value, rb->stride), rb->lanes);
    return Expr();
  }
  if (ra && rb)
    return make_ramp(scalar_op(ra->base, rb->base), scalar_op(ra->stride, rb->stride), ra->lanes);
  if (ra && bb) return make_ramp(scalar_op(ra->base, bb->value), ra->stride, ra->lanes);
  if (ba && rb) {
    Expr stride = is_sub ? scalar_op(make_zero(rb->stride.type()), rb->stride) : rb->stride;
    return make_ramp(scalar_op(ba->value, rb->base), stride, rb->lanes);
  }
  return Expr();
}

}  // namespace

Expr Simplifier::visit(const Add* op) {
  Expr a = mutate(op->a), b = mutate(op->b);
  Expr fallback = rebuilt(op, a, b);
  DataType t = op->type;
  if (Expr c = fold(t, a, b, checked_add, [](double x, double y) { return x + y; }); c.defined()) {
    return c;
  }
  if (t.is_vector()) {
    return smaller(
        vector_rules(a, b, false, false, [&](Expr x, Expr y) { return mutate(Add::make(x, y)); }),
        fallback);
  }
  if (t.is_int()) return smaller(canonical(fallback), fallback);
  if (t.is_uint() && is_zero(b)) return a;
  if (t.is_uint() && is_zero(a)) return b;
  return fallback;
}

Expr Simplifier::visit(const Sub* op) {
  Expr a = mutate(op->a), b = mutate(op->b);
  Expr fallback = rebuilt(op, a, b);
  DataType t = op->type;
  if (Expr c = fold(t, a, b, checked_sub, [](double x, double y) { return x - y; }); c.defined()) {
    return c;
  }
  if (t.is_vector()) {
    return smaller(
        vector_rules(a, b, true, false, [&](Expr x, Expr y) { return mutate(Sub::make(x, y)); }),
        fallback);
  }
  if (t.is_int()) return smaller(canonical(fallback), fallback);
  // x - 0 is exact for floats too (it keeps -0.0 and NaN).
  if (is_zero(b) || as_const_float(b) == 0.0) return a;
  if (t.is_uint() && structural_equal(a, b)) return make_zero(t);
  return fallback;
}

Expr Simplifier::visit(const Mul* op) {
  Expr a = mutate(op->a), b = mutate(op->b);
  DataType t = op->type;
  if (Expr c = fold(t, a, b, checked_mul, [](double x, double y) { return x * y; }); c.defined()) {
    return c;
  }
  // Commutative: constants to the right, otherwise a deterministic order.
  if (is_const(a) || (!is_const(b) && structural_compare(a, b) > 0)) std::swap(a, b);
  Expr fallback = (a.same_as(op->a) && b.same_as(op->b)) ? Expr(op) : Mul::make(a, b);
  if (t.is_vector()) {
    return smaller(
        vector_rules(a, b, false, true, [&](Expr x, Expr y) { return mutate(Mul::make(x, y)); }),
        fallback);
  }
  if (t.is_int()) return smaller(canonical(fallback), fallback);
  if (is_one(b) || as_const_float(b) == 1.0) return a;  // exact for floats as well
  if (t.is_uint() && is_zero(b)) return b;
  return fallback;
}

Expr Simplifier::visit(const Div* op) {
  Expr a = mutate(op->a), b = mutate(op->b);
  Expr fallback = rebuilt(op, a, b);
  if (Expr c = fold(
          op->type, a, b, [](int64_t, int64_t) { return std::optional<int64_t>(); },
          [](double x, double y) { return x / y; });
      c.defined()) {
    return c;
  }
  if (as_const_float(b) == 1.0) return a;
  return fallback;
}

Expr Simplifier::floordiv_rules(const Expr& a, const Expr& b, const Expr& fallback) {
  DataType t = a.type();
  std::optional<int64_t> c = as_const_int(b);
  if (c && *c != 0) {
    if (std::optional<int64_t> x = as_const_int(a)) {
      if (*c == -1 && *x == std::numeric_limits<int64_t>::min()) return fallback;
      return smaller(int_const(t, floordiv_int(*x, *c)), fallback);
    }
  }
  if (t.is_vector()) return vector_div_mod_rules(true, a, b, fallback);
  if (!c || *c <= 0 || !t.is_int()) return fallback;
  if (*c == 1) return a;
  std::optional<LinearSum> sum = linearize(a);
  if (!sum) return fallback;
  // a = c*q + r: the quotient moves out exactly, floordiv(c*q + r, c) = q + floordiv(r, c).
  LinearSum q{t, {}, floordiv_int(sum->constant, *c)};
  LinearSum r{t, {}, floormod_int(sum->constant, *c)};
  for (const LinearTerm& term : sum->terms) {
    if (term.coeff % *c == 0) {
      q.terms.push_back({term.atom, term.coeff / *c});
    } else {
      r.terms.push_back(term);
    }
  }
  Expr rest = rebuild(r);
  if (!rest.defined()) return fallback;
  IntBounds rb = bounds(rest);
  std::optional<LinearSum> result;
  if (rb.has_lower() && rb.has_upper() && floordiv_int(rb.min, *c) == floordiv_int(rb.max, *c)) {
    q.constant += floordiv_int(rb.min, *c);
    result = q;
  } else {
    Expr inner = rest;
    Expr divisor = b;
    // floordiv(floordiv(x, c1), c2) = floordiv(x, c1*c2) for positive c1, c2.
    if (const FloorDiv* nested = rest.as<FloorDiv>()) {
      std::optional<int64_t> c1 = as_const_int(nested->b);
      std::optional<int64_t> prod = c1 && *c1 > 0 ? checked_mul(*c1, *c) : std::nullopt;
      if (prod && *prod <= t.max_value()) {
        inner = nested->a;
        divisor = int_const(t, *prod);
      }
    }
    LinearSum atom{t, {{FloorDiv::make(inner, divisor), 1}}, 0};
    result = LinearSum::combine(q, atom, 1);
  }
  return result ? smaller(rebuild(*result), fallback) : fallback;
}

Expr Simplifier::floormod_rules(const Expr& a, const Expr& b, const Expr& fallback) {
  DataType t = a.type();
  std::optional<int64_t> c = as_const_int(b);
  if (c && *c != 0) {
    if (std::optional<int64_t> x = as_const_int(a))
      return smaller(int_const(t, floormod_int(*x, *c)), fallback);
  }
  if (t.is_vector()) return vector_div_mod_rules(false, a, b, fallback);
  if (!c || *c <= 0 || !t.is_int()) return fallback;
  if (*c == 1) return make_zero(t);
  std::optional<LinearSum> sum = linearize(a);
  if (!sum) return fallback;
  // Terms that are multiples of c vanish: floormod(c*q + r, c) = floormod(r, c).
  LinearSum r{t, {}, floormod_int(sum->constant, *c)};
  for (const LinearTerm& term : sum->terms) {
    if (term.coeff % *c != 0) r.terms.push_back(term);
  }
  Expr rest = rebuild(r);
  if (!rest.defined()) return fallback;
  IntBounds rb = bounds(rest);
  if (rb.has_lower() && rb.has_upper() && floordiv_int(rb.min, *c) == floordiv_int(rb.max, *c)) {
    r.constant -= floordiv_int(rb.min, *c) * *c;
    return smaller(rebuild(r), fallback);
  }
  ModularSet m = modular_set_of(rest);
  if (m.coeff % *c == 0) return smaller(int_const(t, floormod_int(m.base, *c)), fallback);
  // floormod(floormod(x, c1), c) = floormod(x, c) when c divides c1.
  if (const FloorMod* nested = rest.as<FloorMod>()) {
    std::optional<int64_t> c1 = as_const_int(nested->b);
    if (c1 && *c1 > 0 && *c1 % *c == 0) return smaller(FloorMod::make(nested->a, b), fallback);
  }
  return smaller(FloorMod::make(rest, b), fallback);
}

// A vector divided by a broadcast constant c > 0: a broadcast divides its scalar; a ramp
// x + s*i (s >= 0, n lanes) whose lanes all fall in one block of c (x known modulo c, with
// floormod(x, c) + s*(n-1) < c) has floordiv(x, c) in every lane and floormod(x, c) + s*i. So an
// index into panels of c columns, read a vector narrower than the panel at a time (AVX2's 8
// floats of a 16-column panel), stays a dense load instead of a gather.
Expr Simplifier::vector_div_mod_rules(bool is_div, const Expr& a, const Expr& b,
                                      const Expr& fallback) {
  const Broadcast* bc = b.as<Broadcast>();
  std::optional<int64_t> c = bc ? as_const_int(bc->value) : std::nullopt;
  if (!c || *c <= 0 || !bc->value.type().is_int()) return fallback;
  const Expr& cs = bc->value;
  auto scalar = [&](const Expr& x) {
    return is_div ? floordiv_rules(x, cs, FloorDiv::make(x, cs))
                  : floormod_rules(x, cs, FloorMod::make(x, cs));
  };
  if (const Broadcast* ba = a.as<Broadcast>())
    return smaller(Broadcast::make(scalar(ba->value), ba->lanes), fallback);
  const Ramp* r = a.as<Ramp>();
  std::optional<int64_t> s = r ? as_const_int(r->stride) : std::nullopt;
  if (!s || *s < 0) return fallback;
  ModularSet m = modular_set_of(r->base);
  std::optional<int64_t> span = checked_mul(*s, r->lanes - 1);
  if (m.coeff % *c != 0 || !span || floormod_int(m.base, *c) + *span >= *c) return fallback;
  if (is_div) return smaller(Broadcast::make(scalar(r->base), r->lanes), fallback);
  return smaller(make_ramp(scalar(r->base), r->stride, r->lanes), fallback);
}

Expr Simplifier::visit(const FloorDiv* op) {
  Expr a = mutate(op->a), b = mutate(op->b);
  return floordiv_rules(a, b, rebuilt(op, a, b));
}

Expr Simplifier::visit(const FloorMod* op) {
  Expr a = mutate(op->a), b = mutate(op->b);
  return floormod_rules(a, b, rebuilt(op, a, b));
}

Expr Simplifier::visit(const TruncDiv* op) {
  Expr a = mutate(op->a), b = mutate(op->b);
  Expr fallback = rebuilt(op, a, b);
  std::optional<int64_t> x = as_const_int(a), c = as_const_int(b);
  if (x && c && *c != 0 && !(*c == -1 && *x == std::numeric_limits<int64_t>::min())) {
    return smaller(int_const(op->type, *x / *c), fallback);
  }
  // On a non-negative dividend and a positive divisor, truncation and flooring agree.
  if (c && *c > 0 && op->type.is_int() && bounds(a).min >= 0) return floordiv_rules(a, b, fallback);
  return fallback;
}

Expr Simplifier::visit(const TruncMod* op) {
  Expr a = mutate(op->a), b = mutate(op->b);
  Expr fallback = rebuilt(op, a, b);
  std::optional<int64_t> x = as_const_int(a), c = as_const_int(b);
  if (x && c && *c != 0 && !(*c == -1 && *x == std::numeric_limits<int64_t>::min())) {
    return smaller(int_const(op->type, *x % *c), fallback);
  }
  if (c && *c > 0 && op->type.is_int() && bounds(a).min >= 0) return floormod_rules(a, b, fallback);
  return fallback;
}

namespace {

// Shared by min and max: `is_min` picks which. Returns the rewritten expression or undefined.
Expr min_max_rules(bool is_min, const Expr& a, const Expr& b, const IntBounds& ba,
                   const IntBounds& bb) {
  DataType t = a.type();
  if (std::optional<int64_t> x = as_const_int(a), y = as_const_int(b); x && y) {
    return int_const(t, is_min ? std::min(*x, *y) : std::max(*x, *y));
  }
  if (structural_equal(a, b)) return a;
  if (t.is_int_or_uint()) {
    // Decided by the operands' ranges, or by the range of their difference.
    if (ba.max <= bb.min) return is_min ? a : b;
    if (bb.max <= ba.min) return is_min ? b : a;
  }
  // min(a, max(a, b)) = a and max(a, min(a, b)) = a.
  auto absorbs = [&](const Expr& x, const Expr& y) {
    const Max* mx = y.as<Max>();
    const Min* mn = y.as<Min>();
    if (is_min && mx) return structural_equal(mx->a, x) || structural_equal(mx->b, x);
    if (!is_min && mn) return structural_equal(mn->a, x) || structural_equal(mn->b, x);
    return false;
  };
  if (absorbs(a, b)) return a;
  if (absorbs(b, a)) return b;
  return Expr();
}

}  // namespace

template <typename T>
Expr Simplifier::visit_min_max(const T* op) {
  constexpr bool is_min = std::is_same_v<T, Min>;
  Expr a = mutate(op->a), b = mutate(op->b);
  // Commutative: constants to the right, otherwise a deterministic order.
  if (is_const(a) || (!is_const(b) && structural_compare(a, b) > 0)) std::swap(a, b);
  Expr fallback = (a.same_as(op->a) && b.same_as(op->b)) ? Expr(op) : T::make(a, b);
  if (op->type.is_float()) {
    Expr c = fold(
        op->type, a, b, [](int64_t, int64_t) { return std::optional<int64_t>(); },
        [](double x, double y) { return is_min ? std::fmin(x, y) : std::fmax(x, y); });
    if (c.defined()) return c;
    return structural_equal(a, b) ? a : fallback;
  }
  if (op->type.is_int() && op->type.is_scalar()) {
    // Decided by the range of b - a.
    if (Expr d = canonical(Sub::make(b, a)); d.defined()) {
      IntBounds bd = bounds(d);
      if (bd.min >= 0) return is_min ? a : b;
      if (bd.max <= 0) return is_min ? b : a;
    }
  }
  if (Expr r = min_max_rules(is_min, a, b, bounds(a), bounds(b)); r.defined()) {
    return smaller(r, fallback);
  }
  // min(min(x, c1), c2) = min(x, min(c1, c2)), and the same for max.
  if (const T* inner = a.as<T>(); inner && is_const(b) && is_const(inner->b)) {
    return smaller(T::make(inner->a, mutate(T::make(inner->b, b))), fallback);
  }
  return fallback;
}

Expr Simplifier::visit(const Min* op) {
  return visit_min_max(op);
}
Expr Simplifier::visit(const Max* op) {
  return visit_min_max(op);
}

Expr Simplifier::visit(const Ramp* op) {
  Expr base = mutate(op->base), stride = mutate(op->stride);
  if (is_zero(stride)) return Broadcast::make(base, op->lanes);
  if (base.same_as(op->base) && stride.same_as(op->stride)) return op;
  return Ramp::make(base, stride, op->lanes);
}

}  // namespace anvil::arith
