// The base of every IR object: an intrusive reference count, the node-type tag, and the two
// handles Expr and Stmt. Nodes are immutable once built; handles share them freely.
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>

#include "anvil/ir/type.h"

namespace anvil::ir {

// Every IR node name, once. The enum, the visitor and the mutator are generated from these.
#define ANVIL_FOR_EACH_EXPR_NODE(X)                                                               \
  X(IntImm)                                                                                       \
  X(FloatImm)                                                                                     \
  X(Variable) X(Cast) X(Add) X(Sub) X(Mul) X(Div) X(FloorDiv) X(FloorMod) X(TruncDiv) X(TruncMod) \
      X(Min) X(Max) X(EQ) X(NE) X(LT) X(LE) X(GT) X(GE) X(And) X(Or) X(Not) X(Select) X(Ramp)     \
          X(Broadcast) X(Load) X(Let) X(Call) X(Reduce)

#define ANVIL_FOR_EACH_STMT_NODE(X) \
  X(LetStmt)                        \
  X(AttrStmt) X(AssertStmt) X(Store) X(Allocate) X(For) X(IfThenElse) X(Seq) X(Evaluate) X(Barrier)

enum class IRNodeType : uint8_t {
#define ANVIL_ENUM_ENTRY(name) name,
  ANVIL_FOR_EACH_EXPR_NODE(ANVIL_ENUM_ENTRY) ANVIL_FOR_EACH_STMT_NODE(ANVIL_ENUM_ENTRY)
#undef ANVIL_ENUM_ENTRY
};

const char* node_type_name(IRNodeType type);

// Intrusively reference-counted base of IR nodes and of the other shared IR objects
// (buffers, iteration variables, reducers).
class RefCounted {
 public:
  RefCounted() = default;
  RefCounted(const RefCounted&) = delete;
  RefCounted& operator=(const RefCounted&) = delete;
  virtual ~RefCounted() = default;

 private:
  template <typename T>
  friend class Ref;
  mutable std::atomic<int32_t> ref_count_{0};
};

// A shared pointer to an immutable T (T derives from RefCounted).
template <typename T>
class Ref {
 public:
  Ref() = default;
  Ref(const T* ptr) : ptr_(ptr) { retain(); }  // NOLINT: implicit by design
  Ref(const Ref& other) : ptr_(other.ptr_) { retain(); }
  Ref(Ref&& other) noexcept : ptr_(std::exchange(other.ptr_, nullptr)) {}
  template <typename U>
  Ref(const Ref<U>& other) : ptr_(other.get()) {  // NOLINT: derived to base
    retain();
  }
  Ref& operator=(Ref other) noexcept {
    std::swap(ptr_, other.ptr_);
    return *this;
  }
  ~Ref() { release(); }

  const T* get() const { return ptr_; }
  const T* operator->() const { return ptr_; }
  const T& operator*() const { return *ptr_; }
  bool defined() const { return ptr_ != nullptr; }
  explicit operator bool() const { return defined(); }
  bool same_as(const Ref& other) const { return ptr_ == other.ptr_; }

 private:
  void retain() {
    if (ptr_) ptr_->ref_count_.fetch_add(1, std::memory_order_relaxed);
  }
  void release() {
    if (ptr_ && ptr_->ref_count_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete ptr_;
  }
  const T* ptr_ = nullptr;
};

struct IRNode : RefCounted {
  explicit IRNode(IRNodeType t) : node_type(t) {}
  const IRNodeType node_type;
};

struct BaseExprNode : IRNode {
  explicit BaseExprNode(IRNodeType t) : IRNode(t) {}
  DataType type;
};

struct BaseStmtNode : IRNode {
  explicit BaseStmtNode(IRNodeType t) : IRNode(t) {}
};

// CRTP bases that give each node its static tag.
template <typename T>
struct ExprNode : BaseExprNode {
  ExprNode() : BaseExprNode(T::kNodeType) {}
};
template <typename T>
struct StmtNode : BaseStmtNode {
  StmtNode() : BaseStmtNode(T::kNodeType) {}
};

// A handle to an expression. Integer and float literals convert implicitly to int32 and
// float32 immediates so that `x * 4 + 1` reads as written.
class Expr : public Ref<BaseExprNode> {
 public:
  Expr() = default;
  Expr(const BaseExprNode* node) : Ref(node) {}  // NOLINT
  Expr(int value);                               // NOLINT: int32 immediate
  Expr(float value);                             // NOLINT: float32 immediate

  DataType type() const { return get()->type; }
  IRNodeType node_type() const { return get()->node_type; }

  // The node as T, or null when it is another kind of node.
  template <typename T>
  const T* as() const {
    const BaseExprNode* n = get();
    return n && n->node_type == T::kNodeType ? static_cast<const T*>(n) : nullptr;
  }
};

class Stmt : public Ref<BaseStmtNode> {
 public:
  Stmt() = default;
  Stmt(const BaseStmtNode* node) : Ref(node) {}  // NOLINT

  IRNodeType node_type() const { return get()->node_type; }

  template <typename T>
  const T* as() const {
    const BaseStmtNode* n = get();
    return n && n->node_type == T::kNodeType ? static_cast<const T*>(n) : nullptr;
  }
};

}  // namespace anvil::ir
