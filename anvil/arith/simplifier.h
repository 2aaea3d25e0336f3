// The simplifier's mutator, shared by its source files (one per family of rules):
//   simplify_arith.cc  + - * / floordiv floormod truncdiv truncmod min max, vectors
//   simplify_logic.cc  comparisons, && || !, select, cast, let
//   simplify_stmt.cc   statements and the public entry points
// Every visit() returns the smaller of its rewritten form and the node rebuilt from simplified
// children, so by induction simplification never makes an expression larger.
#pragma once

#include <memory>
#include <optional>

#include "anvil/arith/bound.h"
#include "anvil/arith/linear.h"
#include "anvil/ir/visitor.h"
#include "anvil/support/error.h"

namespace anvil::arith {

class Simplifier : public ir::IRMutator {
 public:
  explicit Simplifier(VarBounds bounds) : bounds_(std::move(bounds)) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  ir::Expr visit(const ir::Cast* op) override;
  ir::Expr visit(const ir::Add* op) override;
  ir::Expr visit(const ir::Sub* op) override;
  ir::Expr visit(const ir::Mul* op) override;
  ir::Expr visit(const ir::Div* op) override;
  ir::Expr visit(const ir::FloorDiv* op) override;
  ir::Expr visit(const ir::FloorMod* op) override;
  ir::Expr visit(const ir::TruncDiv* op) override;
  ir::Expr visit(const ir::TruncMod* op) override;
  ir::Expr visit(const ir::Min* op) override;
  ir::Expr visit(const ir::Max* op) override;
  ir::Expr visit(const ir::EQ* op) override;
  ir::Expr visit(const ir::NE* op) override;
  ir::Expr visit(const ir::LT* op) override;
  ir::Expr visit(const ir::LE* op) override;
  ir::Expr visit(const ir::GT* op) override;
  ir::Expr visit(const ir::GE* op) override;
  ir::Expr visit(const ir::And* op) override;
  ir::Expr visit(const ir::Or* op) override;
  ir::Expr visit(const ir::Not* op) override;
  ir::Expr visit(const ir::Select* op) override;
  ir::Expr visit(const ir::Ramp* op) override;
  ir::Expr visit(const ir::Load* op) override;
  ir::Expr visit(const ir::Let* op) override;
  ir::Expr visit(const ir::Reduce* op) override;

  ir::Stmt visit(const ir::LetStmt* op) override;
  ir::Stmt visit(const ir::AssertStmt* op) override;
  ir::Stmt visit(const ir::Store* op) override;
  ir::Stmt visit(const ir::Allocate* op) override;
  ir::Stmt visit(const ir::For* op) override;
  ir::Stmt visit(const ir::IfThenElse* op) override;
  ir::Stmt visit(const ir::Seq* op) override;

 private:
  // Sets a variable's bounds until the guard goes out of scope.
  class ScopedBounds {
   public:
    ScopedBounds(VarBounds& map, const ir::Variable* var, IntBounds b);
    ~ScopedBounds();

   private:
    VarBounds& map_;
    const ir::Variable* var_;
    std::optional<IntBounds> saved_;
  };

  IntBounds bounds(const ir::Expr& e) const { return bounds_of(e, bounds_); }

  // floordiv / floormod of simplified operands, shared with truncdiv / truncmod on
  // non-negative values.
  ir::Expr floordiv_rules(const ir::Expr& a, const ir::Expr& b, const ir::Expr& fallback);
  ir::Expr floormod_rules(const ir::Expr& a, const ir::Expr& b, const ir::Expr& fallback);
  // Their vector forms: a broadcast or a ramp divided by a broadcast constant.
  ir::Expr vector_div_mod_rules(bool is_div, const ir::Expr& a, const ir::Expr& b,
                                const ir::Expr& fallback);
  template <typename T>
  ir::Expr visit_min_max(const T* op);
  // a < b (strict) or a <= b on simplified operands.
  ir::Expr compare_rules(ir::IRNodeType kind, const ir::Expr& a, const ir::Expr& b,
                         const ir::Expr& fallback);
  // What `condition` being `truth` tells about variable bounds, added to `into`.
  void learn(const ir::Expr& condition, bool truth, VarBounds& into) const;
  ir::Stmt mutate_with(const ir::Stmt& s, VarBounds scoped);

  VarBounds bounds_;
};

// Helpers shared by the rule files.
namespace simplify_detail {
// The smaller (in node count) of candidate and fallback; the candidate wins ties unless it is
// identical to the fallback. An undefined candidate yields the fallback.
ir::Expr smaller(const ir::Expr& candidate, const ir::Expr& fallback);
// The canonical rebuild of e's linear form, or undefined.
ir::Expr canonical(const ir::Expr& e);
// An integer constant of type t when v fits (unsigned types wrap), else undefined.
ir::Expr int_const(ir::DataType t, int64_t v);
int64_t floordiv_int(int64_t a, int64_t b);  // b != 0
int64_t floormod_int(int64_t a, int64_t b);  // b != 0
bool is_no_op(const ir::Stmt& s);
ir::Stmt no_op();
}  // namespace simplify_detail

}  // namespace anvil::arith
