#include "anvil/transform/hoist_guards.h"

#include <vector>

#include "anvil/ir/equal.h"
#include "anvil/ir/substitute.h"
#include "anvil/ir/visitor.h"

namespace anvil::transform {

using namespace ir;

namespace {

// A condition that reads only scalar variables: its value cannot change inside the statement it
// guards, so it may be tested before the statement's loops instead of inside them.
bool is_pure(const Expr& e) {
  struct Finder : IRVisitor {
    using IRVisitor::visit;
    bool found = false;
    void visit(const Load*) override { found = true; }
    void visit(const Call*) override { found = true; }
  } finder;
  finder.visit(e);
  return !finder.found;
}

bool has_thread_binding(const Stmt& s) {
  struct Finder : IRVisitor {
    using IRVisitor::visit;
    bool found = false;
    void visit(const For* op) override {
      found |= op->kind == ForKind::kThreadBinding;
      IRVisitor::visit(op);
    }
  } finder;
  finder.visit(s);
  return finder.found;
}

// The branch a statement consists of, when it has no else arm and a pure condition.
const IfThenElse* as_guard(const Stmt& s) {
  const IfThenElse* op = s.as<IfThenElse>();
  return op && !op->else_case.defined() && is_pure(op->condition) ? op : nullptr;
}

class HoistGuards : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Stmt visit(const Seq* op) override {
    std::vector<Stmt> stmts;
    bool changed = false;
    for (const Stmt& s : op->stmts) {
      Stmt m = mutate(s);
      changed |= !m.same_as(s);
      const IfThenElse* cur = as_guard(m);
      const IfThenElse* prev = stmts.empty() ? nullptr : as_guard(stmts.back());
      if (cur && prev && structural_equal(cur->condition, prev->condition)) {
        stmts.back() =
            IfThenElse::make(prev->condition, Seq::make(prev->then_case, cur->then_case));
        changed = true;
      } else {
        stmts.push_back(m);
      }
    }
    if (!changed) return op;
    return Seq::make(std::move(stmts));
  }

  Stmt visit(const For* op) override {
    Stmt body = mutate(op->body);
    if (const IfThenElse* g = as_guard(body); g && !uses_var(g->condition, op->var.get())) {
      return IfThenElse::make(g->condition,
                              For::make(op->var, op->min, op->extent, op->kind, g->then_case));
    }
    if (body.same_as(op->body)) return op;
    return For::make(op->var, op->min, op->extent, op->kind, body, op->thread_tag);
  }

  Stmt visit(const Allocate* op) override {
    Stmt body = mutate(op->body);
    if (const IfThenElse* g = as_guard(body)) {
      return IfThenElse::make(g->condition, Allocate::make(op->buffer, g->then_case));
    }
    if (body.same_as(op->body)) return op;
    return Allocate::make(op->buffer, body);
  }

  Stmt visit(const LetStmt* op) override {
    Stmt body = mutate(op->body);
    if (const IfThenElse* g = as_guard(body); g && !uses_var(g->condition, op->var.get())) {
      return IfThenElse::make(g->condition, LetStmt::make(op->var, op->value, g->then_case));
    }
    if (body.same_as(op->body)) return op;
    return LetStmt::make(op->var, op->value, body);
  }
};

}  // namespace

Stmt hoist_guards(const Stmt& s) {
  if (has_thread_binding(s)) return s;
  return HoistGuards().mutate(s);
}

}  // namespace anvil::transform
