// Structural queries the transform tests share: collecting the nodes of one kind in a tree.
#pragma once

#include <type_traits>
#include <vector>

#include "anvil/ir/visitor.h"

namespace anvil::testing {

// Every node of type T in `root` (an Expr or a Stmt), in visiting order.
template <typename T, typename Root>
std::vector<const T*> collect(const Root& root) {
  struct Collector : ir::IRVisitor {
    using ir::IRVisitor::visit;
    std::vector<const T*> found;
#define ANVIL_COLLECT(name)                                         \
  void visit(const ir::name* op) override {                         \
    if constexpr (std::is_same_v<T, ir::name>) found.push_back(op); \
    ir::IRVisitor::visit(op);                                       \
  }
    ANVIL_FOR_EACH_EXPR_NODE(ANVIL_COLLECT)
    ANVIL_FOR_EACH_STMT_NODE(ANVIL_COLLECT)
#undef ANVIL_COLLECT
  } collector;
  collector.visit(root);
  return collector.found;
}

template <typename T, typename Root>
int count(const Root& root) {
  return static_cast<int>(collect<T>(root).size());
}

// The loops of `kind` in `s`.
inline std::vector<const ir::For*> loops_of_kind(const ir::Stmt& s, ir::ForKind kind) {
  std::vector<const ir::For*> out;
  for (const ir::For* f : collect<ir::For>(s)) {
    if (f->kind == kind) out.push_back(f);
  }
  return out;
}

}  // namespace anvil::testing
