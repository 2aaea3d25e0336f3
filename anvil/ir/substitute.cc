#include "anvil/ir/substitute.h"

#include "anvil/ir/visitor.h"

namespace anvil::ir {

namespace {

class Substituter : public IRMutator {
 public:
  explicit Substituter(const VarMap& map) : map_(map) {}
  using IRMutator::mutate;
  using IRMutator::visit;

 protected:
  Expr visit(const Variable* op) override {
    auto it = map_.find(op);
    return it == map_.end() ? Expr(op) : it->second;
  }

 private:
  const VarMap& map_;
};

class VarFinder : public IRVisitor {
 public:
  explicit VarFinder(const Variable* var) : var_(var) {}
  using IRVisitor::visit;
  void visit(const Variable* op) override { found |= op == var_; }
  bool found = false;

 private:
  const Variable* var_;
};

}  // namespace

Expr substitute(const Expr& e, const VarMap& map) {
  if (map.empty()) return e;
  return Substituter(map).mutate(e);
}

Stmt substitute(const Stmt& s, const VarMap& map) {
  if (map.empty()) return s;
  return Substituter(map).mutate(s);
}

bool uses_var(const Expr& e, const Variable* var) {
  VarFinder finder(var);
  finder.visit(e);
  return finder.found;
}

bool uses_var(const Stmt& s, const Variable* var) {
  VarFinder finder(var);
  finder.visit(s);
  return finder.found;
}

}  // namespace anvil::ir
