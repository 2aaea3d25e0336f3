// Statement simplification (loops, branches, lets, sequences) and the public entry points.
#include "anvil/arith/simplify.h"

#include "anvil/arith/simplifier.h"
#include "anvil/ir/op.h"
#include "anvil/ir/substitute.h"

namespace anvil::arith {

using namespace ir;
using namespace simplify_detail;

namespace simplify_detail {

bool is_no_op(const Stmt& s) {
  if (!s.defined()) return true;
  const Evaluate* e = s.as<Evaluate>();
  return e && is_const(e->value);
}

Stmt no_op() {
  return Evaluate::make(0);
}

}  // namespace simplify_detail

Simplifier::ScopedBounds::ScopedBounds(VarBounds& map, const Variable* var, IntBounds b)
    : map_(map), var_(var) {
  if (auto it = map_.find(var); it != map_.end()) saved_ = it->second;
  map_[var] = b;
}

Simplifier::ScopedBounds::~ScopedBounds() {
  if (saved_) {
    map_[var_] = *saved_;
  } else {
    map_.erase(var_);
  }
}

void Simplifier::learn(const Expr& condition, bool truth, VarBounds& into) const {
  if (const And* op = condition.as<And>(); op && truth) {
    learn(op->a, true, into);
    learn(op->b, true, into);
    return;
  }
  if (const Or* op = condition.as<Or>(); op && !truth) {
    learn(op->a, false, into);
    learn(op->b, false, into);
    return;
  }
  if (const Not* op = condition.as<Not>()) return learn(op->a, !truth, into);

  // var < e, var <= e, e < var, e <= var, var == e on scalar integers. A false a < b is
  // b <= a, and a false a <= b is b < a.
  Expr a, b;
  bool strict;
  if (const LT* op = condition.as<LT>()) {
    a = op->a, b = op->b, strict = true;
  } else if (const LE* op = condition.as<LE>()) {
    a = op->a, b = op->b, strict = false;
  } else if (const EQ* op = condition.as<EQ>(); op && truth) {
    const Variable* v = op->a.as<Variable>();
    Expr other = op->b;
    if (!v) v = op->b.as<Variable>(), other = op->a;
    if (v && v->type.is_int_or_uint() && v->type.is_scalar()) {
      IntBounds known = bounds(Expr(v)), value = bounds(other);
      into[v] = {std::max(known.min, value.min), std::min(known.max, value.max)};
    }
    return;
  } else {
    return;
  }
  if (!a.type().is_int_or_uint() || a.type().is_vector()) return;
  if (!truth) std::swap(a, b), strict = !strict;
  // Now a < b (strict) or a <= b holds.
  auto narrow = [&](const Variable* v, IntBounds nb) {
    IntBounds known = into.count(v) ? into[v] : bounds(Expr(v));
    into[v] = {std::max(known.min, nb.min), std::min(known.max, nb.max)};
  };
  if (const Variable* v = a.as<Variable>()) {
    IntBounds rb = bounds(b);
    if (rb.has_upper()) narrow(v, {IntBounds::kNegInf, strict ? rb.max - 1 : rb.max});
  }
  if (const Variable* v = b.as<Variable>()) {
    IntBounds lb = bounds(a);
    if (lb.has_lower()) narrow(v, {strict ? lb.min + 1 : lb.min, IntBounds::kPosInf});
  }
}

Stmt Simplifier::mutate_with(const Stmt& s, VarBounds scoped) {
  std::vector<std::unique_ptr<ScopedBounds>> guards;
  for (const auto& [var, b] : scoped)
    guards.push_back(std::make_unique<ScopedBounds>(bounds_, var, b));
  return mutate(s);
}

Stmt Simplifier::visit(const LetStmt* op) {
  Expr value = mutate(op->value);
  if (is_const(value) || value.as<Variable>()) {
    return mutate(substitute(op->body, VarMap{{op->var.get(), value}}));
  }
  Stmt body;
  if (value.type().is_int_or_uint() || value.type().is_bool()) {
    ScopedBounds scope(bounds_, op->var.get(), bounds(value));
    body = mutate(op->body);
  } else {
    body = mutate(op->body);
  }
  if (is_no_op(body)) return body;
  if (!uses_var(body, op->var.get())) return body;
  if (value.same_as(op->value) && body.same_as(op->body)) return op;
  return LetStmt::make(op->var, value, body);
}

Stmt Simplifier::visit(const AssertStmt* op) {
  Expr condition = mutate(op->condition);
  Stmt body = mutate(op->body);
  if (is_const_int(condition, 1)) return body;
  if (condition.same_as(op->condition) && body.same_as(op->body)) return op;
  return AssertStmt::make(condition, op->message, body);
}

Stmt Simplifier::visit(const Store* op) {
  Stmt stored = IRMutator::visit(op);
  const Store* store = stored.as<Store>();
  if (store && store->predicate.defined()) {
    std::optional<int64_t> p = as_const_int(store->predicate);
    if (p && *p == 0) return no_op();
    if (p && *p == 1) return Store::make(store->buffer, store->value, store->indices);
  }
  return stored;
}

Stmt Simplifier::visit(const Allocate* op) {
  Stmt body = mutate(op->body);
  if (is_no_op(body)) return body;
  if (body.same_as(op->body)) return op;
  return Allocate::make(op->buffer, body);
}

Stmt Simplifier::visit(const For* op) {
  Expr min = mutate(op->min), extent = mutate(op->extent);
  std::optional<int64_t> n = as_const_int(extent);
  if (n && *n <= 0) return no_op();
  bool thread = op->kind == ForKind::kThreadBinding;
  if (n && *n == 1 && !thread) return mutate(substitute(op->body, VarMap{{op->var.get(), min}}));
  IntBounds bm = bounds(min), be = bounds(extent);
  IntBounds var_bounds;
  if (bm.has_lower()) var_bounds.min = bm.min;
  if (bm.has_upper() && be.has_upper() && be.max > 0 &&
      !__builtin_add_overflow(bm.max, be.max - 1, &var_bounds.max)) {
  } else {
    var_bounds.max = IntBounds::kPosInf;
  }
  Stmt body = mutate_with(op->body, {{op->var.get(), var_bounds}});
  if (is_no_op(body)) return body;
  if (min.same_as(op->min) && extent.same_as(op->extent) && body.same_as(op->body)) return op;
  return For::make(op->var, min, extent, op->kind, body, op->thread_tag);
}

Stmt Simplifier::visit(const IfThenElse* op) {
  Expr condition = mutate(op->condition);
  if (std::optional<int64_t> c = as_const_int(condition)) {
    Stmt taken = *c ? op->then_case : op->else_case;
    return taken.defined() ? mutate(taken) : no_op();
  }
  VarBounds if_true, if_false;
  learn(condition, true, if_true);
  learn(condition, false, if_false);
  Stmt then_case = mutate_with(op->then_case, if_true);
  Stmt else_case = op->else_case.defined() ? mutate_with(op->else_case, if_false) : Stmt();
  if (else_case.defined() && is_no_op(else_case)) else_case = Stmt();
  if (is_no_op(then_case) && !else_case.defined()) return no_op();
  if (is_no_op(then_case)) return IfThenElse::make(mutate(Not::make(condition)), else_case);
  if (condition.same_as(op->condition) && then_case.same_as(op->then_case) &&
      else_case.same_as(op->else_case)) {
    return op;
  }
  return IfThenElse::make(condition, then_case, else_case);
}

Stmt Simplifier::visit(const Seq* op) {
  std::vector<Stmt> kept;
  bool changed = false;
  for (const Stmt& s : op->stmts) {
    Stmt m = mutate(s);
    changed |= !m.same_as(s);
    if (is_no_op(m)) {
      changed = true;
    } else {
      kept.push_back(m);
    }
  }
  if (!changed) return op;
  if (kept.empty()) return no_op();
  return Seq::make(std::move(kept));
}

Expr simplify(const Expr& e, const VarBounds& bounds) {
  return Simplifier(bounds).mutate(e);
}

Stmt simplify(const Stmt& s, const VarBounds& bounds) {
  return Simplifier(bounds).mutate(s);
}

bool can_prove(const Expr& condition, const VarBounds& bounds) {
  return is_const_int(simplify(condition, bounds), 1);
}

}  // namespace anvil::arith
