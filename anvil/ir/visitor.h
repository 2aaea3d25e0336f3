// IRVisitor walks a tree; IRMutator rebuilds it. Both dispatch on the node tag. A mutator's
// default visit() returns the very same node when no child changed, so a pass that touches one
// loop allocates one loop.
//
// Subclasses override the visit() overloads they care about and add `using IRVisitor::visit;`
// (or `using IRMutator::visit;`) so the remaining overloads stay visible.
#pragma once

#include <vector>

#include "anvil/ir/stmt.h"

namespace anvil::ir {

class IRVisitor {
 public:
  virtual ~IRVisitor() = default;

  // Dispatch on the node tag; an undefined handle is skipped.
  virtual void visit(const Expr& e);
  virtual void visit(const Stmt& s);

#define ANVIL_VISITOR_METHOD(name) virtual void visit(const name* op);
  ANVIL_FOR_EACH_EXPR_NODE(ANVIL_VISITOR_METHOD)
  ANVIL_FOR_EACH_STMT_NODE(ANVIL_VISITOR_METHOD)
#undef ANVIL_VISITOR_METHOD
};

class IRMutator {
 public:
  virtual ~IRMutator() = default;

  // Dispatch on the node tag; an undefined handle comes back undefined.
  virtual Expr mutate(const Expr& e);
  virtual Stmt mutate(const Stmt& s);

 protected:
#define ANVIL_MUTATOR_EXPR_METHOD(name) virtual Expr visit(const name* op);
#define ANVIL_MUTATOR_STMT_METHOD(name) virtual Stmt visit(const name* op);
  ANVIL_FOR_EACH_EXPR_NODE(ANVIL_MUTATOR_EXPR_METHOD)
  ANVIL_FOR_EACH_STMT_NODE(ANVIL_MUTATOR_STMT_METHOD)
#undef ANVIL_MUTATOR_EXPR_METHOD
#undef ANVIL_MUTATOR_STMT_METHOD

  // Mutates every element; sets *changed when any element changed.
  std::vector<Expr> mutate_all(const std::vector<Expr>& exprs, bool* changed);
  // The reduction axes with their domains mutated.
  std::vector<IterVar> mutate_axes(const std::vector<IterVar>& axis, bool* changed);
};

}  // namespace anvil::ir
