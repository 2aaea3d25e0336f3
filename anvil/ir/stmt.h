// The statement nodes of the loop-level IR. Like expressions, each is built through a checked
// make().
#pragma once

#include <string>
#include <vector>

#include "anvil/ir/expr.h"

namespace anvil::ir {

// let var = value in body.
struct LetStmt final : StmtNode<LetStmt> {
  static constexpr IRNodeType kNodeType = IRNodeType::LetStmt;
  Var var;
  Expr value;
  Stmt body;
  static Stmt make(Var var, Expr value, Stmt body);
};

// An annotation on `body`: a key ("pragma_unroll", "thread_extent", ...), an optional node it is
// about, and a value.
struct AttrStmt final : StmtNode<AttrStmt> {
  static constexpr IRNodeType kNodeType = IRNodeType::AttrStmt;
  std::string key;
  Expr node;  // may be undefined
  Expr value;
  Stmt body;
  static Stmt make(std::string key, Expr node, Expr value, Stmt body);
};

// Fails at run time with `message` when `condition` is false; then runs body.
struct AssertStmt final : StmtNode<AssertStmt> {
  static constexpr IRNodeType kNodeType = IRNodeType::AssertStmt;
  Expr condition;
  std::string message;
  Stmt body;
  static Stmt make(Expr condition, std::string message, Stmt body);
};

// buffer[indices...] = value, lanes masked by `predicate` when defined.
struct Store final : StmtNode<Store> {
  static constexpr IRNodeType kNodeType = IRNodeType::Store;
  Buffer buffer;
  Expr value;
  std::vector<Expr> indices;
  Expr predicate;
  static Stmt make(Buffer buffer, Expr value, std::vector<Expr> indices, Expr predicate = Expr());
};

// Memory for `buffer` (its shape, in its scope) live during `body`.
struct Allocate final : StmtNode<Allocate> {
  static constexpr IRNodeType kNodeType = IRNodeType::Allocate;
  Buffer buffer;
  Stmt body;
  static Stmt make(Buffer buffer, Stmt body);
};

enum class ForKind : uint8_t { kSerial, kParallel, kVectorized, kUnrolled, kThreadBinding };
const char* for_kind_name(ForKind kind);

// for (var = min; var < min + extent; ++var) body. A kThreadBinding loop is executed by the
// GPU threads named by thread_tag ("threadIdx.x", "blockIdx.y", "vthread").
struct For final : StmtNode<For> {
  static constexpr IRNodeType kNodeType = IRNodeType::For;
  Var var;
  Expr min, extent;
  ForKind kind;
  std::string thread_tag;
  Stmt body;
  static Stmt make(Var var, Expr min, Expr extent, ForKind kind, Stmt body,
                   std::string thread_tag = "");
};

struct IfThenElse final : StmtNode<IfThenElse> {
  static constexpr IRNodeType kNodeType = IRNodeType::IfThenElse;
  Expr condition;
  Stmt then_case, else_case;  // else_case may be undefined
  static Stmt make(Expr condition, Stmt then_case, Stmt else_case = Stmt());
};

// Statements in order. make() flattens nested sequences and returns a lone statement as is.
struct Seq final : StmtNode<Seq> {
  static constexpr IRNodeType kNodeType = IRNodeType::Seq;
  std::vector<Stmt> stmts;
  static Stmt make(std::vector<Stmt> stmts);
  static Stmt make(Stmt first, Stmt second) { return make(std::vector<Stmt>{first, second}); }
};

// Evaluates an expression for its effect (or as a no-op placeholder: Evaluate(0)).
struct Evaluate final : StmtNode<Evaluate> {
  static constexpr IRNodeType kNodeType = IRNodeType::Evaluate;
  Expr value;
  static Stmt make(Expr value);
};

// Waits until every thread of the block has reached it, with memory in `scope` made visible.
struct Barrier final : StmtNode<Barrier> {
  static constexpr IRNodeType kNodeType = IRNodeType::Barrier;
  MemoryScope scope;
  static Stmt make(MemoryScope scope);
};

}  // namespace anvil::ir
