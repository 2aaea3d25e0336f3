#include "anvil/transform/unroll_loops.h"

#include <optional>
#include <vector>

#include "anvil/arith/simplify.h"
#include "anvil/ir/op.h"
#include "anvil/ir/substitute.h"
#include "anvil/ir/visitor.h"
#include "anvil/transform/fresh_binders.h"

namespace anvil::transform {

using namespace ir;

namespace {

// The copies of `loop`'s body for each iteration, or undefined when its extent is not constant.
Stmt unroll(const For* loop) {
  std::optional<int64_t> n = as_const_int(arith::simplify(loop->extent));
  if (!n) return Stmt();
  if (*n <= 0) return Evaluate::make(0);
  std::vector<Stmt> copies;
  copies.reserve(*n);
  for (int64_t i = 0; i < *n; ++i) {
    Stmt body = i == 0 ? loop->body : with_fresh_binders(loop->body);
    Expr value = arith::simplify(loop->min + make_const(loop->min.type(), i));
    copies.push_back(arith::simplify(substitute(body, VarMap{{loop->var.get(), value}})));
  }
  return Seq::make(std::move(copies));
}

class UnrollLoops : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Stmt visit(const For* op) override {
    Stmt inner = IRMutator::visit(op);  // inner loops first
    if (op->kind != ForKind::kUnrolled) return inner;
    const For* loop = inner.as<For>();
    if (Stmt unrolled = unroll(loop); unrolled.defined()) return unrolled;
    return For::make(loop->var, loop->min, loop->extent, ForKind::kSerial, loop->body);
  }

  Stmt visit(const AttrStmt* op) override {
    Stmt inner = IRMutator::visit(op);
    const AttrStmt* attr = inner.as<AttrStmt>();
    if (!attr || attr->key != "pragma_unroll" || is_zero(attr->value)) return inner;
    const For* loop = attr->body.as<For>();
    if (!loop || !loop->var.same_as(attr->node) || loop->kind == ForKind::kThreadBinding) {
      return inner;
    }
    if (Stmt unrolled = unroll(loop); unrolled.defined()) return unrolled;
    return inner;
  }
};

}  // namespace

Stmt unroll_loops(const Stmt& s) {
  return UnrollLoops().mutate(s);
}

}  // namespace anvil::transform
