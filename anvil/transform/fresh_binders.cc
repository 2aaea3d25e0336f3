#include "anvil/transform/fresh_binders.h"

#include <unordered_map>
#include <utility>

#include "anvil/ir/substitute.h"
#include "anvil/ir/visitor.h"
#include "anvil/support/error.h"

namespace anvil::transform {

using namespace ir;

namespace {

class FreshBinders : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Expr visit(const Variable* op) override {
    auto it = vars_.find(op);
    return it == vars_.end() ? Expr(op) : it->second;
  }

  Expr visit(const Let* op) override {
    Expr value = mutate(op->value);
    Var var = rename(op->var);
    return Let::make(var, value, mutate(op->body));
  }

  Expr visit(const Load* op) override {
    bool changed = false;
    std::vector<Expr> indices = mutate_all(op->indices, &changed);
    return Load::make(buffer(op->buffer), std::move(indices), mutate(op->predicate));
  }

  Stmt visit(const Store* op) override {
    bool changed = false;
    Expr value = mutate(op->value);
    std::vector<Expr> indices = mutate_all(op->indices, &changed);
    return Store::make(buffer(op->buffer), value, std::move(indices), mutate(op->predicate));
  }

  Stmt visit(const LetStmt* op) override {
    Expr value = mutate(op->value);
    Var var = rename(op->var);
    return LetStmt::make(var, value, mutate(op->body));
  }

  Stmt visit(const For* op) override {
    Expr min = mutate(op->min), extent = mutate(op->extent);
    Var var = rename(op->var);
    return For::make(var, min, extent, op->kind, mutate(op->body), op->thread_tag);
  }

  Stmt visit(const Allocate* op) override {
    const BufferNode& b = *op->buffer;
    bool changed = false;
    Buffer fresh = Buffer::make(b.name, b.dtype, mutate_all(b.shape, &changed),
                                mutate_all(b.strides, &changed), b.scope);
    buffers_[b.data.get()] = {op->buffer.get(), fresh};
    vars_[b.data.get()] = fresh->data;
    return Allocate::make(fresh, mutate(op->body));
  }

 private:
  Var rename(const Var& var) {
    Var fresh(var.name(), var.type());
    vars_[var.get()] = fresh;
    return fresh;
  }

  // The buffer an access inside the copy uses: the new allocation when `b` is the allocated
  // buffer, a one-dimensional view of it when `b` is one (as after storage flattening), and b
  // itself when it is not allocated inside the copy.
  Buffer buffer(const Buffer& b) {
    auto it = buffers_.find(b->data.get());
    if (it == buffers_.end()) return b;
    const auto& [original, fresh] = it->second;
    if (b.get() == original) return fresh;
    ANVIL_ICHECK(b.ndim() == 1 && b->strides.empty() && b->dtype == fresh->dtype, "buffer '",
                 b->name, "' is a view of an allocation with another element type or layout");
    Buffer& view = views_[b.get()];
    if (!view.defined()) view = Buffer::make_flat(fresh, mutate(b->shape[0]));
    return view;
  }

  VarMap vars_;
  // Allocated data variable -> (the allocated buffer, its replacement).
  std::unordered_map<const Variable*, std::pair<const BufferNode*, Buffer>> buffers_;
  std::unordered_map<const BufferNode*, Buffer> views_;
};

}  // namespace

Stmt with_fresh_binders(const Stmt& s) {
  return FreshBinders().mutate(s);
}

}  // namespace anvil::transform
