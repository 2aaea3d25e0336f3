// Simplification rules for comparisons, logic, select, cast, let, loads and reductions.
#include <cmath>

#include "anvil/arith/modular.h"
#include "anvil/arith/simplifier.h"
#include "anvil/ir/equal.h"
#include "anvil/ir/op.h"
#include "anvil/ir/substitute.h"

namespace anvil::arith {

using namespace ir;
using namespace simplify_detail;

namespace {

template <typename T>
Expr rebuilt(const T* op, const Expr& a, const Expr& b) {
  if (a.same_as(op->a) && b.same_as(op->b)) return op;
  return T::make(a, b);
}

std::optional<bool> as_bool(const Expr& e) {
  if (!e.type().is_bool()) return std::nullopt;
  std::optional<int64_t> v = as_const_int(e);
  if (!v) return std::nullopt;
  return *v != 0;
}

// Compares two constants of any numeric type with `cmp`; nullopt unless both are constants.
template <typename Cmp>
std::optional<bool> fold_compare(const Expr& a, const Expr& b, Cmp cmp) {
  if (std::optional<int64_t> x = as_const_int(a), y = as_const_int(b); x && y) return cmp(*x, *y);
  if (std::optional<double> x = as_const_float(a), y = as_const_float(b); x && y) {
    return cmp(*x, *y);
  }
  return std::nullopt;
}

// The sum of the terms of `sum` with positive (or negated negative) coefficients.
LinearSum side(const LinearSum& sum, bool positive) {
  LinearSum out{sum.type, {}, 0};
  for (const LinearTerm& t : sum.terms) {
    if ((t.coeff > 0) == positive) out.terms.push_back({t.atom, positive ? t.coeff : -t.coeff});
  }
  return out;
}

// The comparison node of `kind` (LT, LE, EQ or NE).
Expr make_compare(IRNodeType kind, const Expr& a, const Expr& b) {
  switch (kind) {
    case IRNodeType::LT:
      return LT::make(a, b);
    case IRNodeType::LE:
      return LE::make(a, b);
    case IRNodeType::EQ:
      return EQ::make(a, b);
    case IRNodeType::NE:
      return NE::make(a, b);
    default:
      ANVIL_UNREACHABLE("not a canonical comparison");
  }
}

}  // namespace

Expr Simplifier::compare_rules(IRNodeType kind, const Expr& a, const Expr& b,
                               const Expr& fallback) {
  DataType t = a.type();
  int lanes = t.lanes();
  auto result = [&](bool v) { return make_bool(v, lanes); };
  auto decide = [&](auto cmp) -> std::optional<bool> { return fold_compare(a, b, cmp); };
  std::optional<bool> folded;
  switch (kind) {
    case IRNodeType::LT:
      folded = decide([](auto x, auto y) { return x < y; });
      break;
    case IRNodeType::LE:
      folded = decide([](auto x, auto y) { return x <= y; });
      break;
    case IRNodeType::EQ:
      folded = decide([](auto x, auto y) { return x == y; });
      break;
    case IRNodeType::NE:
      folded = decide([](auto x, auto y) { return x != y; });
      break;
    default:
      ANVIL_UNREACHABLE("not a canonical comparison");
  }
  if (folded) return result(*folded);
  if (!t.is_int_or_uint() && !t.is_bool()) return fallback;  // floats: NaN forbids the rest

  if (const Broadcast* x = a.as<Broadcast>()) {
    if (const Broadcast* y = b.as<Broadcast>()) {
      Expr scalar = make_compare(kind, x->value, y->value);
      return smaller(Broadcast::make(mutate(scalar), lanes), fallback);
    }
  }

  // Decided by the operands' ranges (sound for any integer type: no arithmetic is involved).
  IntBounds ba = bounds(a), bb = bounds(b);
  bool disjoint = ba.max < bb.min || bb.max < ba.min;
  switch (kind) {
    case IRNodeType::LT:
      if (ba.max < bb.min) return result(true);
      if (ba.min >= bb.max) return result(false);
      break;
    case IRNodeType::LE:
      if (ba.max <= bb.min) return result(true);
      if (ba.min > bb.max) return result(false);
      break;
    case IRNodeType::EQ:
      if (disjoint) return result(false);
      if (structural_equal(a, b)) return result(true);
      break;
    default:
      if (disjoint) return result(true);
      if (structural_equal(a, b)) return result(false);
      break;
  }
  if (!t.is_int() || t.is_vector()) return fallback;

  // Signed scalars: decide on the difference d = a - b, then write the canonical comparison
  // P + k op N with the common factor of the terms divided out.
  std::optional<LinearSum> la = linearize(a), lb = linearize(b);
  if (!la || !lb) return fallback;
  std::optional<LinearSum> d = LinearSum::combine(*la, *lb, -1);
  if (!d) return fallback;
  Expr diff = rebuild(*d);
  if (!diff.defined()) return fallback;
  IntBounds bd = bounds(diff);
  switch (kind) {
    case IRNodeType::LT:
      if (bd.max < 0) return result(true);
      if (bd.min >= 0) return result(false);
      break;
    case IRNodeType::LE:
      if (bd.max <= 0) return result(true);
      if (bd.min > 0) return result(false);
      break;
    case IRNodeType::EQ:
    case IRNodeType::NE: {
      bool never_zero = !bd.contains(0);
      ModularSet m = modular_set_of(diff);
      if (m.coeff == 0 ? m.base != 0 : floormod_int(m.base, m.coeff) != 0) never_zero = true;
      if (never_zero) return result(kind == IRNodeType::NE);
      if (bd.is_single()) return result(kind == IRNodeType::EQ);
      break;
    }
    default:
      break;
  }
  int64_t g = coeff_gcd(*d);
  if (g <= 0) return fallback;
  int64_t k = d->constant;
  if (k == std::numeric_limits<int64_t>::min()) return fallback;
  switch (kind) {
    case IRNodeType::LT:
      k = floordiv_int(k, g);
      break;  // g*T + k < 0  <=>  T + floor(k/g) < 0
    case IRNodeType::LE:
      k = -floordiv_int(-k, g);
      break;  // g*T + k <= 0 <=>  T + ceil(k/g) <= 0
    default:
      if (k % g != 0) return result(kind == IRNodeType::NE);  // g*T = -k has no solution
      k /= g;
      break;
  }
  LinearSum scaled{t, {}, 0};
  for (const LinearTerm& term : d->terms) scaled.terms.push_back({term.atom, term.coeff / g});
  LinearSum lhs = side(scaled, true), rhs = side(scaled, false);
  (k > 0 ? lhs : rhs).constant = k > 0 ? k : -k;
  Expr l = rebuild(lhs), r = rebuild(rhs);
  if (!l.defined() || !r.defined()) return fallback;
  return smaller(make_compare(kind, l, r), fallback);
}

Expr Simplifier::visit(const LT* op) {
  Expr a = mutate(op->a), b = mutate(op->b);
  return compare_rules(IRNodeType::LT, a, b, rebuilt(op, a, b));
}

Expr Simplifier::visit(const LE* op) {
  Expr a = mutate(op->a), b = mutate(op->b);
  return compare_rules(IRNodeType::LE, a, b, rebuilt(op, a, b));
}

// a > b is b < a; a >= b is b <= a (the canonical direction).
Expr Simplifier::visit(const GT* op) {
  Expr a = mutate(op->a), b = mutate(op->b);
  return compare_rules(IRNodeType::LT, b, a, LT::make(b, a));
}

Expr Simplifier::visit(const GE* op) {
  Expr a = mutate(op->a), b = mutate(op->b);
  return compare_rules(IRNodeType::LE, b, a, LE::make(b, a));
}

Expr Simplifier::visit(const EQ* op) {
  Expr a = mutate(op->a), b = mutate(op->b);
  return compare_rules(IRNodeType::EQ, a, b, rebuilt(op, a, b));
}

Expr Simplifier::visit(const NE* op) {
  Expr a = mutate(op->a), b = mutate(op->b);
  return compare_rules(IRNodeType::NE, a, b, rebuilt(op, a, b));
}

namespace {

// True when a is the negation of b (x and !x).
bool negates(const Expr& a, const Expr& b) {
  const Not* n = a.as<Not>();
  return n && structural_equal(n->a, b);
}

}  // namespace

Expr Simplifier::visit(const And* op) {
  Expr a = mutate(op->a), b = mutate(op->b);
  Expr fallback = rebuilt(op, a, b);
  int lanes = op->type.lanes();
  std::optional<bool> x = as_bool(a), y = as_bool(b);
  if ((x && !*x) || (y && !*y)) return make_bool(false, lanes);
  if (x) return b;
  if (y) return a;
  if (structural_equal(a, b)) return a;
  if (negates(a, b) || negates(b, a)) return make_bool(false, lanes);
  return fallback;
}

Expr Simplifier::visit(const Or* op) {
  Expr a = mutate(op->a), b = mutate(op->b);
  Expr fallback = rebuilt(op, a, b);
  int lanes = op->type.lanes();
  std::optional<bool> x = as_bool(a), y = as_bool(b);
  if ((x && *x) || (y && *y)) return make_bool(true, lanes);
  if (x) return b;
  if (y) return a;
  if (structural_equal(a, b)) return a;
  if (negates(a, b) || negates(b, a)) return make_bool(true, lanes);
  return fallback;
}

Expr Simplifier::visit(const Not* op) {
  Expr a = mutate(op->a);
  Expr fallback = a.same_as(op->a) ? Expr(op) : Not::make(a);
  if (std::optional<bool> x = as_bool(a)) return make_bool(!*x, op->type.lanes());
  if (const Not* inner = a.as<Not>()) return inner->a;
  if (const EQ* e = a.as<EQ>()) return NE::make(e->a, e->b);
  if (const NE* e = a.as<NE>()) return EQ::make(e->a, e->b);
  // !(a < b) is b <= a for integers (for floats NaN makes both false).
  if (const LT* e = a.as<LT>(); e && !e->a.type().is_float()) return mutate(LE::make(e->b, e->a));
  if (const LE* e = a.as<LE>(); e && !e->a.type().is_float()) return mutate(LT::make(e->b, e->a));
  return fallback;
}

Expr Simplifier::visit(const Select* op) {
  Expr c = mutate(op->condition);
  if (std::optional<bool> x = as_bool(c)) return mutate(*x ? op->true_value : op->false_value);
  Expr t = mutate(op->true_value), f = mutate(op->false_value);
  Expr fallback =
      (c.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value))
          ? Expr(op)
          : Select::make(c, t, f);
  if (structural_equal(t, f)) return t;
  if (const Not* n = c.as<Not>()) return smaller(Select::make(n->a, f, t), fallback);
  if (op->type.is_bool() && c.type() == op->type) {
    if (as_bool(t) == true && as_bool(f) == false) return c;
    if (as_bool(t) == false && as_bool(f) == true) return smaller(mutate(Not::make(c)), fallback);
  }
  return fallback;
}

Expr Simplifier::visit(const Cast* op) {
  Expr value = mutate(op->value);
  DataType t = op->type;
  if (value.type() == t) return value;
  Expr fallback = value.same_as(op->value) ? Expr(op) : Cast::make(t, value);
  if (t.is_vector()) {
    // Widening a signed ramp keeps it a ramp (signed arithmetic does not wrap).
    if (const Ramp* r = value.as<Ramp>();
        r && t.is_int() && r->base.type().is_int() && t.bits() >= r->base.type().bits()) {
      DataType e = t.element_of();
      return smaller(
          Ramp::make(mutate(Cast::make(e, r->base)), mutate(Cast::make(e, r->stride)), r->lanes),
          fallback);
    }
    if (const Broadcast* b = value.as<Broadcast>()) {
      return smaller(Broadcast::make(mutate(Cast::make(t.element_of(), b->value)), t.lanes()),
                     fallback);
    }
    return fallback;
  }
  if (std::optional<int64_t> x = as_const_int(value)) {
    if (t.is_bool()) return make_bool(*x != 0);
    if (t.is_int_or_uint()) return smaller(int_const(t, *x), fallback);  // wraps only unsigned
    if (t.is_float() && t.bits() >= 32 && t.code() == DataType::Code::kFloat) {
      double d = t.bits() == 32 ? static_cast<float>(*x) : static_cast<double>(*x);
      return make_const(t, d);
    }
  }
  if (std::optional<double> x = as_const_float(value)) {
    if (t.is_float() && t.bits() >= 32 && t.code() == DataType::Code::kFloat) {
      return make_const(t, t.bits() == 32 ? static_cast<double>(static_cast<float>(*x)) : *x);
    }
    if (t.is_int_or_uint() && std::isfinite(*x)) {
      double truncated = std::trunc(*x);
      if (truncated >= static_cast<double>(t.min_value()) &&
          truncated <= static_cast<double>(t.max_value()) && std::abs(truncated) < 9.0e18) {
        return make_const(t, static_cast<int64_t>(truncated));
      }
    }
  }
  return fallback;
}

Expr Simplifier::visit(const Load* op) {
  Expr loaded = IRMutator::visit(op);
  const Load* load = loaded.as<Load>();
  if (load && load->predicate.defined() && as_bool(load->predicate) == true) {
    return Load::make(load->buffer, load->indices);
  }
  return loaded;
}

Expr Simplifier::visit(const Let* op) {
  Expr value = mutate(op->value);
  // Constants and variables are substituted: nothing is saved by naming them.
  if (is_const(value) || value.as<Variable>()) {
    return mutate(substitute(op->body, VarMap{{op->var.get(), value}}));
  }
  Expr body;
  if (value.type().is_int_or_uint() || value.type().is_bool()) {
    ScopedBounds scope(bounds_, op->var.get(), bounds(value));
    body = mutate(op->body);
  } else {
    body = mutate(op->body);
  }
  if (!uses_var(body, op->var.get())) return body;
  if (value.same_as(op->value) && body.same_as(op->body)) return op;
  return Let::make(op->var, value, body);
}

Expr Simplifier::visit(const Reduce* op) {
  std::vector<std::unique_ptr<ScopedBounds>> scopes;
  for (const IterVar& iv : op->axis) {
    std::optional<int64_t> min = as_const_int(iv->dom.min), extent = as_const_int(iv->dom.extent);
    if (min && extent && *extent > 0) {
      scopes.push_back(std::make_unique<ScopedBounds>(bounds_, iv->var.get(),
                                                      IntBounds::from_range(*min, *extent)));
    }
  }
  return IRMutator::visit(op);
}

}  // namespace anvil::arith
