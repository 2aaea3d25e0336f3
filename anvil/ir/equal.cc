#include "anvil/ir/equal.h"

#include <bit>
#include <cstdint>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

#include "anvil/support/error.h"

namespace anvil::ir {

namespace {

// -1, 0 or 1 as x is less than, equal to or greater than y.
template <typename T>
int cmp3(const T& x, const T& y) {
  return (y < x) - (x < y);
}

int cmp_dtype(DataType a, DataType b) {
  if (int c = cmp3(a.code(), b.code())) return c;
  if (int c = cmp3(a.bits(), b.bits())) return c;
  return cmp3(a.lanes(), b.lanes());
}

// A key whose unsigned order is the numeric order of doubles, made total: -NaN < -inf < ... <
// -0.0 < +0.0 < ... < +inf < +NaN. Equal keys are equal bit patterns, so NaN equals itself
// and -0.0 differs from +0.0 (they are different constants: 1 / x tells them apart).
uint64_t float_key(double v) {
  uint64_t bits = std::bit_cast<uint64_t>(v);
  return bits >> 63 ? ~bits : bits | (uint64_t{1} << 63);
}

// Variables by creation order; the address breaks ties between nodes that share an id (only
// possible for hand-built nodes), so that zero means the same variable.
int cmp_var_order(const Variable* a, const Variable* b) {
  if (a == b) return 0;
  if (int c = cmp3(a->id, b->id)) return c;
  return std::less<>{}(a, b) ? -1 : 1;
}

// Dispatch on the node tag to the fields() overload of the node's type; a and b (Comparer) or
// node (Hasher) name the nodes at the expansion site.
#define ANVIL_COMPARE_CASE(name) \
  case IRNodeType::name:         \
    return fields(static_cast<const name*>(a.get()), static_cast<const name*>(b.get()));
#define ANVIL_HASH_CASE(name) \
  case IRNodeType::name:      \
    return fields(static_cast<const name*>(node));

// Walks two trees in lockstep and returns the first difference, strcmp-like.
//
// Without renaming this is structural_compare: a total order in which every field counts and
// variables compare by id. With renaming it decides structural_equal: each binder pairs the
// variable it binds in `a` with the one in `b` for the binder's scope, and an occurrence of a
// variable matches only its partner. Under renaming only zero versus nonzero is meaningful.
//
// The pairs live on a stack, innermost last. An occurrence pair (x, y) is resolved by the
// innermost binder that binds x on the left or y on the right: equal when that binder binds
// both, different when it binds only one (one side is bound there, the other elsewhere or
// free). When no binder mentions either, both are free and must be the same node. This handles
// shadowing and rejects a free variable that meets a bound one of the same node.
class Comparer {
 public:
  explicit Comparer(bool rename) : rename_(rename) {}

  int expr(const Expr& a, const Expr& b) {
    if (same(a, b)) return 0;
    if (!a.defined() || !b.defined()) return cmp3(a.defined(), b.defined());
    if (int c = cmp3(a.node_type(), b.node_type())) return c;
    if (int c = cmp_dtype(a.type(), b.type())) return c;
    switch (a.node_type()) {
      ANVIL_FOR_EACH_EXPR_NODE(ANVIL_COMPARE_CASE)
      default:
        ANVIL_UNREACHABLE("statement node in an expression");
    }
  }

  int stmt(const Stmt& a, const Stmt& b) {
    if (same(a, b)) return 0;
    if (!a.defined() || !b.defined()) return cmp3(a.defined(), b.defined());
    if (int c = cmp3(a.node_type(), b.node_type())) return c;
    switch (a.node_type()) {
      ANVIL_FOR_EACH_STMT_NODE(ANVIL_COMPARE_CASE)
      default:
        ANVIL_UNREACHABLE("expression node in a statement");
    }
  }

 private:
  using Pair = std::pair<const Variable*, const Variable*>;

  // Ends the scope of the binders made since its construction.
  class Scope {
   public:
    explicit Scope(std::vector<Pair>& bound) : bound_(bound), mark_(bound.size()) {}
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    ~Scope() { bound_.resize(mark_); }

   private:
    std::vector<Pair>& bound_;
    size_t mark_;
  };

  // The same node is the same tree, unless a binder is open: then its free variables might be
  // paired with others (`let x = 1 in let y = 2 in E` against `let y = 1 in let x = 2 in E`).
  template <typename T>
  bool same(const Ref<T>& a, const Ref<T>& b) const {
    return a.same_as(b) && (!rename_ || bound_.empty());
  }

  int var(const Variable* a, const Variable* b) {
    if (rename_) {
      for (auto it = bound_.rbegin(); it != bound_.rend(); ++it) {
        if (it->first == a || it->second == b) return it->first == a && it->second == b ? 0 : 1;
      }
    }
    return cmp_var_order(a, b);
  }

  // A binder: pairs the variables for the enclosing Scope when renaming, else orders them.
  int bind(const Var& a, const Var& b) {
    if (!rename_) return cmp_var_order(a.get(), b.get());
    if (int c = cmp_dtype(a.type(), b.type())) return c;
    bound_.emplace_back(a.get(), b.get());
    return 0;
  }

  int exprs(const std::vector<Expr>& a, const std::vector<Expr>& b) {
    if (int c = cmp3(a.size(), b.size())) return c;
    for (size_t i = 0; i < a.size(); ++i) {
      if (int c = expr(a[i], b[i])) return c;
    }
    return 0;
  }

  // A buffer in a Load or Store. Renaming: its data variable, so that the buffers of two
  // matching Allocates match. Ordering: by name, then creation order (of the data variable).
  int buffer_ref(const Buffer& a, const Buffer& b) {
    if (rename_) return var(a->data.get(), b->data.get());
    if (a.same_as(b)) return 0;
    if (int c = a->name.compare(b->name)) return cmp3(c, 0);
    if (int c = cmp_var_order(a->data.get(), b->data.get())) return c;
    return std::less<>{}(a.get(), b.get()) ? -1 : 1;
  }

  // The layout of an allocated buffer (its name does not count: allocations rename freely).
  int buffer_layout(const Buffer& a, const Buffer& b) {
    if (int c = cmp_dtype(a->dtype, b->dtype)) return c;
    if (int c = exprs(a->shape, b->shape)) return c;
    if (int c = exprs(a->strides, b->strides)) return c;
    return cmp3(a->scope, b->scope);
  }

  int reducer(const CommReducer& a, const CommReducer& b) {
    if (same(a, b)) return 0;
    if (int c = expr(a->identity, b->identity)) return c;
    Scope scope(bound_);
    if (int c = bind(a->lhs, b->lhs)) return c;
    if (int c = bind(a->rhs, b->rhs)) return c;
    return expr(a->result, b->result);
  }

  // Expressions.

  int fields(const IntImm* a, const IntImm* b) { return cmp3(a->value, b->value); }
  int fields(const FloatImm* a, const FloatImm* b) {
    return cmp3(float_key(a->value), float_key(b->value));
  }
  int fields(const Variable* a, const Variable* b) { return var(a, b); }
  int fields(const Cast* a, const Cast* b) { return expr(a->value, b->value); }
  template <typename T>
  int fields(const BinaryNode<T>* a, const BinaryNode<T>* b) {
    if (int c = expr(a->a, b->a)) return c;
    return expr(a->b, b->b);
  }
  int fields(const Not* a, const Not* b) { return expr(a->a, b->a); }
  int fields(const Select* a, const Select* b) {
    if (int c = expr(a->condition, b->condition)) return c;
    if (int c = expr(a->true_value, b->true_value)) return c;
    return expr(a->false_value, b->false_value);
  }
  int fields(const Ramp* a, const Ramp* b) {
    if (int c = expr(a->base, b->base)) return c;
    if (int c = expr(a->stride, b->stride)) return c;
    return cmp3(a->lanes, b->lanes);
  }
  int fields(const Broadcast* a, const Broadcast* b) {
    if (int c = expr(a->value, b->value)) return c;
    return cmp3(a->lanes, b->lanes);
  }
  int fields(const Load* a, const Load* b) {
    if (int c = buffer_ref(a->buffer, b->buffer)) return c;
    if (int c = exprs(a->indices, b->indices)) return c;
    return expr(a->predicate, b->predicate);
  }
  int fields(const Let* a, const Let* b) {
    if (int c = expr(a->value, b->value)) return c;  // outside the variable's scope
    Scope scope(bound_);
    if (int c = bind(a->var, b->var)) return c;
    return expr(a->body, b->body);
  }
  int fields(const Call* a, const Call* b) {
    if (int c = cmp3(a->op, b->op)) return c;
    return exprs(a->args, b->args);
  }
  int fields(const Reduce* a, const Reduce* b) {
    if (int c = reducer(a->combiner, b->combiner)) return c;
    if (int c = cmp3(a->axis.size(), b->axis.size())) return c;
    // Domains first: they are outside the scope of every axis.
    for (size_t i = 0; i < a->axis.size(); ++i) {
      const IterVarNode& x = *a->axis[i];
      const IterVarNode& y = *b->axis[i];
      if (int c = expr(x.dom.min, y.dom.min)) return c;
      if (int c = expr(x.dom.extent, y.dom.extent)) return c;
      if (int c = cmp3(x.kind, y.kind)) return c;
      if (int c = x.thread_tag.compare(y.thread_tag)) return cmp3(c, 0);
    }
    Scope scope(bound_);
    for (size_t i = 0; i < a->axis.size(); ++i) {
      if (int c = bind(a->axis[i]->var, b->axis[i]->var)) return c;
    }
    if (int c = expr(a->source, b->source)) return c;
    return expr(a->condition, b->condition);
  }

  // Statements.

  int fields(const LetStmt* a, const LetStmt* b) {
    if (int c = expr(a->value, b->value)) return c;
    Scope scope(bound_);
    if (int c = bind(a->var, b->var)) return c;
    return stmt(a->body, b->body);
  }
  int fields(const AttrStmt* a, const AttrStmt* b) {
    if (int c = a->key.compare(b->key)) return cmp3(c, 0);
    if (int c = expr(a->node, b->node)) return c;
    if (int c = expr(a->value, b->value)) return c;
    return stmt(a->body, b->body);
  }
  int fields(const AssertStmt* a, const AssertStmt* b) {
    if (int c = expr(a->condition, b->condition)) return c;
    if (int c = a->message.compare(b->message)) return cmp3(c, 0);
    return stmt(a->body, b->body);
  }
  int fields(const Store* a, const Store* b) {
    if (int c = buffer_ref(a->buffer, b->buffer)) return c;
    if (int c = expr(a->value, b->value)) return c;
    if (int c = exprs(a->indices, b->indices)) return c;
    return expr(a->predicate, b->predicate);
  }
  int fields(const Allocate* a, const Allocate* b) {
    if (int c = buffer_layout(a->buffer, b->buffer)) return c;
    Scope scope(bound_);
    if (int c = bind(a->buffer->data, b->buffer->data)) return c;
    return stmt(a->body, b->body);
  }
  int fields(const For* a, const For* b) {
    if (int c = expr(a->min, b->min)) return c;
    if (int c = expr(a->extent, b->extent)) return c;
    if (int c = cmp3(a->kind, b->kind)) return c;
    if (int c = a->thread_tag.compare(b->thread_tag)) return cmp3(c, 0);
    Scope scope(bound_);
    if (int c = bind(a->var, b->var)) return c;
    return stmt(a->body, b->body);
  }
  int fields(const IfThenElse* a, const IfThenElse* b) {
    if (int c = expr(a->condition, b->condition)) return c;
    if (int c = stmt(a->then_case, b->then_case)) return c;
    return stmt(a->else_case, b->else_case);
  }
  int fields(const Seq* a, const Seq* b) {
    if (int c = cmp3(a->stmts.size(), b->stmts.size())) return c;
    for (size_t i = 0; i < a->stmts.size(); ++i) {
      if (int c = stmt(a->stmts[i], b->stmts[i])) return c;
    }
    return 0;
  }
  int fields(const Evaluate* a, const Evaluate* b) { return expr(a->value, b->value); }
  int fields(const Barrier* a, const Barrier* b) { return cmp3(a->scope, b->scope); }

  const bool rename_;
  std::vector<Pair> bound_;
};

// Hashes a tree so that structurally equal trees hash equally: it feeds the same fields, in the
// same order, as the Comparer reads. A bound variable contributes the position of its binder on
// the stack of open binders (its De Bruijn level), which renaming preserves; a free variable
// contributes its id.
class Hasher {
 public:
  size_t result() const { return static_cast<size_t>(h_); }

  void expr(const Expr& e) {
    if (!e.defined()) return mix(kUndefined);
    mix(static_cast<uint64_t>(e.node_type()));
    dtype(e.type());
    const IRNode* node = e.get();
    switch (e.node_type()) {
      ANVIL_FOR_EACH_EXPR_NODE(ANVIL_HASH_CASE)
      default:
        ANVIL_UNREACHABLE("statement node in an expression");
    }
  }

  void stmt(const Stmt& s) {
    if (!s.defined()) return mix(kUndefined);
    mix(static_cast<uint64_t>(s.node_type()));
    const IRNode* node = s.get();
    switch (s.node_type()) {
      ANVIL_FOR_EACH_STMT_NODE(ANVIL_HASH_CASE)
      default:
        ANVIL_UNREACHABLE("expression node in a statement");
    }
  }

 private:
  static constexpr uint64_t kUndefined = 0x5bd1e9955bd1e995;
  static constexpr uint64_t kBound = 0xb0b0b0b0;
  static constexpr uint64_t kFree = 0xf4eef4ee;

  // Order-sensitive combination: a golden-ratio step followed by the splitmix64 finalizer.
  void mix(uint64_t v) {
    uint64_t x = h_ + 0x9e3779b97f4a7c15 + v;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9;
    x = (x ^ (x >> 27)) * 0x94d049bb133111eb;
    h_ = x ^ (x >> 31);
  }
  void mix(std::string_view s) { mix(std::hash<std::string_view>{}(s)); }
  void dtype(DataType t) {
    mix(static_cast<uint64_t>(t.code()) | static_cast<uint64_t>(t.bits()) << 8 |
        static_cast<uint64_t>(t.lanes()) << 16);
  }

  void var(const Variable* v) {
    for (size_t i = bound_.size(); i-- > 0;) {
      if (bound_[i] == v) {
        mix(kBound);
        return mix(i);
      }
    }
    mix(kFree);
    mix(v->id);
  }
  // A binder: its type here, its position at each occurrence. The caller restores the stack.
  void bind(const Var& v) {
    dtype(v.type());
    bound_.push_back(v.get());
  }
  void exprs(const std::vector<Expr>& es) {
    mix(es.size());
    for (const Expr& e : es) expr(e);
  }

  void fields(const IntImm* op) { mix(static_cast<uint64_t>(op->value)); }
  void fields(const FloatImm* op) { mix(float_key(op->value)); }
  void fields(const Variable* op) { var(op); }
  void fields(const Cast* op) { expr(op->value); }
  template <typename T>
  void fields(const BinaryNode<T>* op) {
    expr(op->a);
    expr(op->b);
  }
  void fields(const Not* op) { expr(op->a); }
  void fields(const Select* op) {
    expr(op->condition);
    expr(op->true_value);
    expr(op->false_value);
  }
  void fields(const Ramp* op) {
    expr(op->base);
    expr(op->stride);
    mix(op->lanes);
  }
  void fields(const Broadcast* op) {
    expr(op->value);
    mix(op->lanes);
  }
  void fields(const Load* op) {
    var(op->buffer->data.get());
    exprs(op->indices);
    expr(op->predicate);
  }
  void fields(const Let* op) {
    expr(op->value);
    bind(op->var);
    expr(op->body);
    bound_.pop_back();
  }
  void fields(const Call* op) {
    mix(static_cast<uint64_t>(op->op));
    exprs(op->args);
  }
  void fields(const Reduce* op) {
    const CommReducerNode& r = *op->combiner;
    expr(r.identity);
    bind(r.lhs);
    bind(r.rhs);
    expr(r.result);
    bound_.resize(bound_.size() - 2);
    mix(op->axis.size());
    for (const IterVar& iv : op->axis) {
      expr(iv->dom.min);
      expr(iv->dom.extent);
      mix(static_cast<uint64_t>(iv->kind));
      mix(iv->thread_tag);
    }
    for (const IterVar& iv : op->axis) bind(iv->var);
    expr(op->source);
    expr(op->condition);
    bound_.resize(bound_.size() - op->axis.size());
  }

  void fields(const LetStmt* op) {
    expr(op->value);
    bind(op->var);
    stmt(op->body);
    bound_.pop_back();
  }
  void fields(const AttrStmt* op) {
    mix(op->key);
    expr(op->node);
    expr(op->value);
    stmt(op->body);
  }
  void fields(const AssertStmt* op) {
    expr(op->condition);
    mix(op->message);
    stmt(op->body);
  }
  void fields(const Store* op) {
    var(op->buffer->data.get());
    expr(op->value);
    exprs(op->indices);
    expr(op->predicate);
  }
  void fields(const Allocate* op) {
    const BufferNode& b = *op->buffer;
    dtype(b.dtype);
    exprs(b.shape);
    exprs(b.strides);
    mix(static_cast<uint64_t>(b.scope));
    bind(b.data);
    stmt(op->body);
    bound_.pop_back();
  }
  void fields(const For* op) {
    expr(op->min);
    expr(op->extent);
    mix(static_cast<uint64_t>(op->kind));
    mix(op->thread_tag);
    bind(op->var);
    stmt(op->body);
    bound_.pop_back();
  }
  void fields(const IfThenElse* op) {
    expr(op->condition);
    stmt(op->then_case);
    stmt(op->else_case);
  }
  void fields(const Seq* op) {
    mix(op->stmts.size());
    for (const Stmt& s : op->stmts) stmt(s);
  }
  void fields(const Evaluate* op) { expr(op->value); }
  void fields(const Barrier* op) { mix(static_cast<uint64_t>(op->scope)); }

  uint64_t h_ = 0;
  std::vector<const Variable*> bound_;
};

#undef ANVIL_COMPARE_CASE
#undef ANVIL_HASH_CASE

}  // namespace

bool structural_equal(const Expr& a, const Expr& b) {
  return Comparer(true).expr(a, b) == 0;
}
bool structural_equal(const Stmt& a, const Stmt& b) {
  return Comparer(true).stmt(a, b) == 0;
}

size_t structural_hash(const Expr& e) {
  Hasher h;
  h.expr(e);
  return h.result();
}

size_t structural_hash(const Stmt& s) {
  Hasher h;
  h.stmt(s);
  return h.result();
}

int structural_compare(const Expr& a, const Expr& b) {
  return Comparer(false).expr(a, b);
}

}  // namespace anvil::ir
