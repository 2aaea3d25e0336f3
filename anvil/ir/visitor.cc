#include "anvil/ir/visitor.h"

#include "anvil/support/error.h"

namespace anvil::ir {

// ---------------------------------------------------------------------------------------------
// IRVisitor

void IRVisitor::visit(const Expr& e) {
  if (!e.defined()) return;
  switch (e.node_type()) {
#define ANVIL_DISPATCH(name) \
  case IRNodeType::name:     \
    return visit(static_cast<const name*>(e.get()));
    ANVIL_FOR_EACH_EXPR_NODE(ANVIL_DISPATCH)
#undef ANVIL_DISPATCH
    default:
      ANVIL_UNREACHABLE("statement node in an expression");
  }
}

void IRVisitor::visit(const Stmt& s) {
  if (!s.defined()) return;
  switch (s.node_type()) {
#define ANVIL_DISPATCH(name) \
  case IRNodeType::name:     \
    return visit(static_cast<const name*>(s.get()));
    ANVIL_FOR_EACH_STMT_NODE(ANVIL_DISPATCH)
#undef ANVIL_DISPATCH
    default:
      ANVIL_UNREACHABLE("expression node in a statement");
  }
}

void IRVisitor::visit(const IntImm*) {}
void IRVisitor::visit(const FloatImm*) {}
void IRVisitor::visit(const Variable*) {}
void IRVisitor::visit(const Cast* op) {
  visit(op->value);
}

#define ANVIL_VISIT_BINARY(name)          \
  void IRVisitor::visit(const name* op) { \
    visit(op->a);                         \
    visit(op->b);                         \
  }
ANVIL_VISIT_BINARY(Add)
ANVIL_VISIT_BINARY(Sub)
ANVIL_VISIT_BINARY(Mul)
ANVIL_VISIT_BINARY(Div)
ANVIL_VISIT_BINARY(FloorDiv)
ANVIL_VISIT_BINARY(FloorMod)
ANVIL_VISIT_BINARY(TruncDiv)
ANVIL_VISIT_BINARY(TruncMod)
ANVIL_VISIT_BINARY(Min)
ANVIL_VISIT_BINARY(Max)
ANVIL_VISIT_BINARY(EQ)
ANVIL_VISIT_BINARY(NE)
ANVIL_VISIT_BINARY(LT)
ANVIL_VISIT_BINARY(LE)
ANVIL_VISIT_BINARY(GT)
ANVIL_VISIT_BINARY(GE)
ANVIL_VISIT_BINARY(And)
ANVIL_VISIT_BINARY(Or)
#undef ANVIL_VISIT_BINARY

void IRVisitor::visit(const Not* op) {
  visit(op->a);
}
void IRVisitor::visit(const Select* op) {
  visit(op->condition);
  visit(op->true_value);
  visit(op->false_value);
}
void IRVisitor::visit(const Ramp* op) {
  visit(op->base);
  visit(op->stride);
}
void IRVisitor::visit(const Broadcast* op) {
  visit(op->value);
}
void IRVisitor::visit(const Load* op) {
  for (const Expr& i : op->indices) visit(i);
  visit(op->predicate);
}
void IRVisitor::visit(const Let* op) {
  visit(op->value);
  visit(op->body);
}
void IRVisitor::visit(const Call* op) {
  for (const Expr& a : op->args) visit(a);
}
void IRVisitor::visit(const Reduce* op) {
  for (const IterVar& iv : op->axis) {
    visit(iv->dom.min);
    visit(iv->dom.extent);
  }
  visit(op->source);
  visit(op->condition);
}

void IRVisitor::visit(const LetStmt* op) {
  visit(op->value);
  visit(op->body);
}
void IRVisitor::visit(const AttrStmt* op) {
  visit(op->node);
  visit(op->value);
  visit(op->body);
}
void IRVisitor::visit(const AssertStmt* op) {
  visit(op->condition);
  visit(op->body);
}
void IRVisitor::visit(const Store* op) {
  visit(op->value);
  for (const Expr& i : op->indices) visit(i);
  visit(op->predicate);
}
void IRVisitor::visit(const Allocate* op) {
  for (const Expr& e : op->buffer->shape) visit(e);
  visit(op->body);
}
void IRVisitor::visit(const For* op) {
  visit(op->min);
  visit(op->extent);
  visit(op->body);
}
void IRVisitor::visit(const IfThenElse* op) {
  visit(op->condition);
  visit(op->then_case);
  visit(op->else_case);
}
void IRVisitor::visit(const Seq* op) {
  for (const Stmt& s : op->stmts) visit(s);
}
void IRVisitor::visit(const Evaluate* op) {
  visit(op->value);
}
void IRVisitor::visit(const Barrier*) {}

// ---------------------------------------------------------------------------------------------
// IRMutator

Expr IRMutator::mutate(const Expr& e) {
  if (!e.defined()) return e;
  switch (e.node_type()) {
#define ANVIL_DISPATCH(name) \
  case IRNodeType::name:     \
    return visit(static_cast<const name*>(e.get()));
    ANVIL_FOR_EACH_EXPR_NODE(ANVIL_DISPATCH)
#undef ANVIL_DISPATCH
    default:
      ANVIL_UNREACHABLE("statement node in an expression");
  }
}

Stmt IRMutator::mutate(const Stmt& s) {
  if (!s.defined()) return s;
  switch (s.node_type()) {
#define ANVIL_DISPATCH(name) \
  case IRNodeType::name:     \
    return visit(static_cast<const name*>(s.get()));
    ANVIL_FOR_EACH_STMT_NODE(ANVIL_DISPATCH)
#undef ANVIL_DISPATCH
    default:
      ANVIL_UNREACHABLE("expression node in a statement");
  }
}

std::vector<Expr> IRMutator::mutate_all(const std::vector<Expr>& exprs, bool* changed) {
  std::vector<Expr> out;
  out.reserve(exprs.size());
  for (const Expr& e : exprs) {
    out.push_back(mutate(e));
    if (!out.back().same_as(e)) *changed = true;
  }
  return out;
}

std::vector<IterVar> IRMutator::mutate_axes(const std::vector<IterVar>& axis, bool* changed) {
  std::vector<IterVar> out;
  out.reserve(axis.size());
  for (const IterVar& iv : axis) {
    Expr min = mutate(iv->dom.min);
    Expr extent = mutate(iv->dom.extent);
    if (min.same_as(iv->dom.min) && extent.same_as(iv->dom.extent)) {
      out.push_back(iv);
    } else {
      *changed = true;
      out.push_back(IterVar::make(iv->var, Range::make(min, extent), iv->kind, iv->thread_tag));
    }
  }
  return out;
}

Expr IRMutator::visit(const IntImm* op) {
  return op;
}
Expr IRMutator::visit(const FloatImm* op) {
  return op;
}
Expr IRMutator::visit(const Variable* op) {
  return op;
}

Expr IRMutator::visit(const Cast* op) {
  Expr value = mutate(op->value);
  if (value.same_as(op->value)) return op;
  return Cast::make(op->type, std::move(value));
}

#define ANVIL_MUTATE_BINARY(name)                        \
  Expr IRMutator::visit(const name* op) {                \
    Expr a = mutate(op->a), b = mutate(op->b);           \
    if (a.same_as(op->a) && b.same_as(op->b)) return op; \
    return name::make(std::move(a), std::move(b));       \
  }
ANVIL_MUTATE_BINARY(Add)
ANVIL_MUTATE_BINARY(Sub)
ANVIL_MUTATE_BINARY(Mul)
ANVIL_MUTATE_BINARY(Div)
ANVIL_MUTATE_BINARY(FloorDiv)
ANVIL_MUTATE_BINARY(FloorMod)
ANVIL_MUTATE_BINARY(TruncDiv)
ANVIL_MUTATE_BINARY(TruncMod)
ANVIL_MUTATE_BINARY(Min)
ANVIL_MUTATE_BINARY(Max)
ANVIL_MUTATE_BINARY(EQ)
ANVIL_MUTATE_BINARY(NE)
ANVIL_MUTATE_BINARY(LT)
ANVIL_MUTATE_BINARY(LE)
ANVIL_MUTATE_BINARY(GT)
ANVIL_MUTATE_BINARY(GE)
ANVIL_MUTATE_BINARY(And)
ANVIL_MUTATE_BINARY(Or)
#undef ANVIL_MUTATE_BINARY

Expr IRMutator::visit(const Not* op) {
  Expr a = mutate(op->a);
  if (a.same_as(op->a)) return op;
  return Not::make(std::move(a));
}

Expr IRMutator::visit(const Select* op) {
  Expr c = mutate(op->condition), t = mutate(op->true_value), f = mutate(op->false_value);
  if (c.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value)) {
    return op;
  }
  return Select::make(std::move(c), std::move(t), std::move(f));
}

Expr IRMutator::visit(const Ramp* op) {
  Expr base = mutate(op->base), stride = mutate(op->stride);
  if (base.same_as(op->base) && stride.same_as(op->stride)) return op;
  return Ramp::make(std::move(base), std::move(stride), op->lanes);
}

Expr IRMutator::visit(const Broadcast* op) {
  Expr value = mutate(op->value);
  if (value.same_as(op->value)) return op;
  return Broadcast::make(std::move(value), op->lanes);
}

Expr IRMutator::visit(const Load* op) {
  bool changed = false;
  std::vector<Expr> indices = mutate_all(op->indices, &changed);
  Expr predicate = mutate(op->predicate);
  if (!changed && predicate.same_as(op->predicate)) return op;
  return Load::make(op->buffer, std::move(indices), std::move(predicate));
}

Expr IRMutator::visit(const Let* op) {
  Expr value = mutate(op->value), body = mutate(op->body);
  if (value.same_as(op->value) && body.same_as(op->body)) return op;
  return Let::make(op->var, std::move(value), std::move(body));
}

Expr IRMutator::visit(const Call* op) {
  bool changed = false;
  std::vector<Expr> args = mutate_all(op->args, &changed);
  if (!changed) return op;
  return Call::make(op->op, std::move(args));
}

Expr IRMutator::visit(const Reduce* op) {
  bool changed = false;
  std::vector<IterVar> axis = mutate_axes(op->axis, &changed);
  Expr source = mutate(op->source), condition = mutate(op->condition);
  if (!changed && source.same_as(op->source) && condition.same_as(op->condition)) return op;
  return Reduce::make(op->combiner, std::move(source), std::move(axis), std::move(condition));
}

Stmt IRMutator::visit(const LetStmt* op) {
  Expr value = mutate(op->value);
  Stmt body = mutate(op->body);
  if (value.same_as(op->value) && body.same_as(op->body)) return op;
  return LetStmt::make(op->var, std::move(value), std::move(body));
}

Stmt IRMutator::visit(const AttrStmt* op) {
  Expr node = mutate(op->node), value = mutate(op->value);
  Stmt body = mutate(op->body);
  if (node.same_as(op->node) && value.same_as(op->value) && body.same_as(op->body)) return op;
  return AttrStmt::make(op->key, std::move(node), std::move(value), std::move(body));
}

Stmt IRMutator::visit(const AssertStmt* op) {
  Expr condition = mutate(op->condition);
  Stmt body = mutate(op->body);
  if (condition.same_as(op->condition) && body.same_as(op->body)) return op;
  return AssertStmt::make(std::move(condition), op->message, std::move(body));
}

Stmt IRMutator::visit(const Store* op) {
  bool changed = false;
  Expr value = mutate(op->value);
  std::vector<Expr> indices = mutate_all(op->indices, &changed);
  Expr predicate = mutate(op->predicate);
  if (!changed && value.same_as(op->value) && predicate.same_as(op->predicate)) return op;
  return Store::make(op->buffer, std::move(value), std::move(indices), std::move(predicate));
}

Stmt IRMutator::visit(const Allocate* op) {
  Stmt body = mutate(op->body);
  if (body.same_as(op->body)) return op;
  return Allocate::make(op->buffer, std::move(body));
}

Stmt IRMutator::visit(const For* op) {
  Expr min = mutate(op->min), extent = mutate(op->extent);
  Stmt body = mutate(op->body);
  if (min.same_as(op->min) && extent.same_as(op->extent) && body.same_as(op->body)) return op;
  return For::make(op->var, std::move(min), std::move(extent), op->kind, std::move(body),
                   op->thread_tag);
}

Stmt IRMutator::visit(const IfThenElse* op) {
  Expr condition = mutate(op->condition);
  Stmt then_case = mutate(op->then_case), else_case = mutate(op->else_case);
  if (condition.same_as(op->condition) && then_case.same_as(op->then_case) &&
      else_case.same_as(op->else_case)) {
    return op;
  }
  return IfThenElse::make(std::move(condition), std::move(then_case), std::move(else_case));
}

Stmt IRMutator::visit(const Seq* op) {
  std::vector<Stmt> stmts;
  stmts.reserve(op->stmts.size());
  bool changed = false;
  for (const Stmt& s : op->stmts) {
    stmts.push_back(mutate(s));
    if (!stmts.back().same_as(s)) changed = true;
  }
  if (!changed) return op;
  return Seq::make(std::move(stmts));
}

Stmt IRMutator::visit(const Evaluate* op) {
  Expr value = mutate(op->value);
  if (value.same_as(op->value)) return op;
  return Evaluate::make(std::move(value));
}

Stmt IRMutator::visit(const Barrier* op) {
  return op;
}

}  // namespace anvil::ir
