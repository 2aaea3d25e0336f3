#include "anvil/transform/remove_no_op.h"

#include <optional>
#include <vector>

#include "anvil/ir/equal.h"
#include "anvil/ir/op.h"
#include "anvil/ir/visitor.h"

namespace anvil::transform {

using namespace ir;

namespace {

Stmt no_op() {
  return Evaluate::make(0);
}

// True when `value` is a load of exactly the element(s) `store` writes, so the store writes back
// what is there. A predicated load does not count unless the store has the same predicate (its
// masked-off lanes read as unspecified); a predicated store of an unpredicated load does.
bool stores_what_it_loads(const Store* store) {
  const Load* load = store->value.as<Load>();
  if (!load || !load->buffer->data.same_as(store->buffer->data)) return false;
  if (load->buffer->dtype != store->buffer->dtype) return false;
  // Two views of the same memory agree on an element when both are one-dimensional.
  auto flat = [](const Buffer& b) { return b.ndim() == 1 && b->strides.empty(); };
  if (!load->buffer.same_as(store->buffer) && !(flat(load->buffer) && flat(store->buffer))) {
    return false;
  }
  for (size_t d = 0; d < load->indices.size(); ++d) {
    if (!structural_equal(load->indices[d], store->indices[d])) return false;
  }
  return !load->predicate.defined() || structural_equal(load->predicate, store->predicate);
}

class RemoveNoOp : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Stmt visit(const Store* op) override {
    if (stores_what_it_loads(op)) return no_op();
    return op;
  }

  Stmt visit(const LetStmt* op) override { return unless_empty(IRMutator::visit(op)); }
  Stmt visit(const AttrStmt* op) override { return unless_empty(IRMutator::visit(op)); }
  Stmt visit(const Allocate* op) override { return unless_empty(IRMutator::visit(op)); }

  Stmt visit(const For* op) override {
    if (std::optional<int64_t> n = as_const_int(op->extent); n && *n <= 0) return no_op();
    return unless_empty(IRMutator::visit(op));
  }

  Stmt visit(const IfThenElse* op) override {
    Stmt then_case = mutate(op->then_case);
    Stmt else_case = mutate(op->else_case);
    if (else_case.defined() && is_no_op(else_case)) else_case = Stmt();
    if (is_no_op(then_case)) {
      if (!else_case.defined()) return no_op();
      return IfThenElse::make(Not::make(op->condition), else_case);
    }
    if (then_case.same_as(op->then_case) && else_case.same_as(op->else_case)) return op;
    return IfThenElse::make(op->condition, then_case, else_case);
  }

  Stmt visit(const Seq* op) override {
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

 private:
  // The statement, or nothing when the body it wraps does nothing.
  static Stmt unless_empty(const Stmt& s) {
    Stmt body;
    if (const LetStmt* op = s.as<LetStmt>()) body = op->body;
    if (const AttrStmt* op = s.as<AttrStmt>()) body = op->body;
    if (const Allocate* op = s.as<Allocate>()) body = op->body;
    if (const For* op = s.as<For>()) body = op->body;
    return body.defined() && is_no_op(body) ? no_op() : s;
  }
};

}  // namespace

bool is_no_op(const Stmt& s) {
  if (!s.defined()) return true;
  const Evaluate* e = s.as<Evaluate>();
  return e && is_const(e->value);
}

Stmt remove_no_op(const Stmt& s) {
  return RemoveNoOp().mutate(s);
}

}  // namespace anvil::transform
