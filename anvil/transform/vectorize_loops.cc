#include "anvil/transform/vectorize_loops.h"

#include <algorithm>
#include <optional>
#include <type_traits>

#include "anvil/arith/simplify.h"
#include "anvil/ir/op.h"
#include "anvil/ir/substitute.h"
#include "anvil/ir/visitor.h"

namespace anvil::transform {

using namespace ir;

namespace {

int lanes_of(const Expr& e) {
  return e.defined() ? e.type().lanes() : 1;
}

// e with `lanes` lanes: a scalar is broadcast.
Expr widen(const Expr& e, int lanes) {
  if (lanes == 1 || e.type().lanes() == lanes) return e;
  return Broadcast::make(e, lanes);
}

// Both conditions (either may be undefined, meaning true), widened to a common lane count.
Expr conjoin(const Expr& a, const Expr& b) {
  if (!a.defined()) return b;
  if (!b.defined()) return a;
  int lanes = std::max(a.type().lanes(), b.type().lanes());
  return And::make(widen(a, lanes), widen(b, lanes));
}

// Rewrites the body of one vectorized loop. `failed()` tells that it met something it cannot
// vectorize; the result is then meaningless.
class Vectorizer : public IRMutator {
 public:
  Vectorizer(const Variable* var, Expr ramp) : var_(var), ramp_(std::move(ramp)) {}

  bool failed() const { return failed_; }

  // Vectors in the input mean an inner loop was vectorized already: nested vectors are not
  // supported, so the outer loop stays serial.
  Expr mutate(const Expr& e) override {
    if (e.defined() && e.type().is_vector()) return fail(e);
    return IRMutator::mutate(e);
  }
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Expr visit(const Variable* op) override {
    if (op == var_) return ramp_;
    if (auto it = renamed_.find(op); it != renamed_.end()) return it->second;
    return op;
  }

  Expr visit(const Cast* op) override {
    Expr value = mutate(op->value);
    if (value.same_as(op->value)) return op;
    // Widening a signed ramp is a ramp of the widened base and stride (index arithmetic does
    // not overflow), so an index cast to int64 stays a contiguous access.
    const Ramp* ramp = value.as<Ramp>();
    DataType from = value.type().element_of(), to = op->type;
    if (ramp && from.is_int() && to.is_int() && to.bits() >= from.bits()) {
      return Ramp::make(Cast::make(to, ramp->base), Cast::make(to, ramp->stride), ramp->lanes);
    }
    return Cast::make(to.with_lanes(value.type().lanes()), value);
  }

  Expr visit(const Add* op) override { return ramp_arith<Add>(op); }
  Expr visit(const Sub* op) override { return ramp_arith<Sub>(op); }
  Expr visit(const Mul* op) override { return ramp_arith<Mul>(op); }
  Expr visit(const Div* op) override { return binary<Div>(op); }
  Expr visit(const FloorDiv* op) override { return binary<FloorDiv>(op); }
  Expr visit(const FloorMod* op) override { return binary<FloorMod>(op); }
  Expr visit(const TruncDiv* op) override { return binary<TruncDiv>(op); }
  Expr visit(const TruncMod* op) override { return binary<TruncMod>(op); }
  Expr visit(const Min* op) override { return binary<Min>(op); }
  Expr visit(const Max* op) override { return binary<Max>(op); }
  Expr visit(const EQ* op) override { return binary<EQ>(op); }
  Expr visit(const NE* op) override { return binary<NE>(op); }
  Expr visit(const LT* op) override { return binary<LT>(op); }
  Expr visit(const LE* op) override { return binary<LE>(op); }
  Expr visit(const GT* op) override { return binary<GT>(op); }
  Expr visit(const GE* op) override { return binary<GE>(op); }
  Expr visit(const And* op) override { return binary<And>(op); }
  Expr visit(const Or* op) override { return binary<Or>(op); }

  Expr visit(const Select* op) override {
    Expr c = mutate(op->condition), t = mutate(op->true_value), f = mutate(op->false_value);
    if (c.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value)) {
      return op;
    }
    int lanes = std::max({lanes_of(c), lanes_of(t), lanes_of(f)});
    // A scalar condition may select between vectors; a vector one needs vector values.
    return Select::make(c, widen(t, lanes), widen(f, lanes));
  }

  Expr visit(const Load* op) override {
    bool changed = false;
    std::vector<Expr> indices = mutate_all(op->indices, &changed);
    Expr predicate = mutate(op->predicate);
    // Under a lane mask every load is masked, so a masked-off lane reads nothing.
    predicate = conjoin(predicate, mask_);
    if (!changed && predicate.same_as(op->predicate)) return op;
    // A zero-dimensional buffer has no index to carry lanes, so it cannot be read under a mask.
    if (indices.empty()) return fail(op);
    indices = access_indices(std::move(indices), op->indices, lanes_of(predicate));
    return Load::make(op->buffer, indices, widen_predicate(predicate, indices));
  }

  Expr visit(const Let* op) override {
    Expr value = mutate(op->value);
    Var var = bind(op->var, value);
    Expr body = mutate(op->body);
    renamed_.erase(op->var.get());
    if (!var.defined()) return body;
    if (var.same_as(op->var) && value.same_as(op->value) && body.same_as(op->body)) return op;
    return Let::make(var, value, body);
  }

  Expr visit(const Call* op) override {
    bool changed = false;
    std::vector<Expr> args = mutate_all(op->args, &changed);
    if (!changed) return op;
    int lanes = 1;
    for (const Expr& a : args) lanes = std::max(lanes, lanes_of(a));
    for (Expr& a : args) a = widen(a, lanes);
    return Call::make(op->op, std::move(args));
  }

  Expr visit(const Reduce* op) override { return fail(op); }

  Stmt visit(const LetStmt* op) override {
    Expr value = mutate(op->value);
    Var var = bind(op->var, value);
    Stmt body = mutate(op->body);
    renamed_.erase(op->var.get());
    if (!var.defined()) return body;
    if (var.same_as(op->var) && value.same_as(op->value) && body.same_as(op->body)) return op;
    return LetStmt::make(var, value, body);
  }

  Stmt visit(const AttrStmt* op) override {
    if (!mutate(op->node).same_as(op->node) || !mutate(op->value).same_as(op->value)) {
      return fail(op);
    }
    return IRMutator::visit(op);
  }

  Stmt visit(const AssertStmt* op) override {
    if (!mutate(op->condition).same_as(op->condition)) return fail(op);
    return IRMutator::visit(op);
  }

  Stmt visit(const Store* op) override {
    bool changed = false;
    Expr value = mutate(op->value);
    std::vector<Expr> indices = mutate_all(op->indices, &changed);
    Expr predicate = conjoin(mutate(op->predicate), mask_);
    // Every iteration stores to the same address: a reduction over the vectorized axis, or a
    // store the loop repeats. Either way the lanes cannot be stored at once.
    bool vector_address = false;
    for (const Expr& i : indices) vector_address |= i.type().is_vector();
    if (!vector_address) return fail(op);
    indices = access_indices(std::move(indices), op->indices, 1);
    return Store::make(op->buffer, widen(value, access_lanes(indices)), indices,
                       widen_predicate(predicate, indices));
  }

  Stmt visit(const Allocate* op) override { return fail(op); }
  Stmt visit(const Barrier* op) override { return fail(op); }

  Stmt visit(const For* op) override {
    Expr min = mutate(op->min), extent = mutate(op->extent);
    if (!min.same_as(op->min) || !extent.same_as(op->extent)) return fail(op);
    Stmt body = mutate(op->body);
    if (body.same_as(op->body)) return op;
    return For::make(op->var, min, extent, op->kind, body, op->thread_tag);
  }

  Stmt visit(const IfThenElse* op) override {
    Expr condition = mutate(op->condition);
    if (condition.type().is_scalar()) {
      Stmt then_case = mutate(op->then_case), else_case = mutate(op->else_case);
      if (condition.same_as(op->condition) && then_case.same_as(op->then_case) &&
          else_case.same_as(op->else_case)) {
        return op;
      }
      return IfThenElse::make(condition, then_case, else_case);
    }
    // The condition differs across lanes: each branch runs under its part of the mask.
    condition = arith::simplify(condition);
    Expr outer = mask_;
    mask_ = conjoin(outer, condition);
    Stmt then_case = mutate(op->then_case);
    std::vector<Stmt> stmts{then_case};
    if (op->else_case.defined()) {
      mask_ = conjoin(outer, Not::make(condition));
      stmts.push_back(mutate(op->else_case));
    }
    mask_ = outer;
    return Seq::make(std::move(stmts));
  }

 private:
  template <typename T>
  Expr binary(const T* op) {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (a.same_as(op->a) && b.same_as(op->b)) return op;
    int lanes = std::max(lanes_of(a), lanes_of(b));
    return T::make(widen(a, lanes), widen(b, lanes));
  }

  // + - * keep ramps: ramp(b, s) + x is ramp(b + x, s), and so on, so that addresses stay
  // ramps.
  template <typename T>
  Expr ramp_arith(const T* op) {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (a.same_as(op->a) && b.same_as(op->b)) return op;
    const Ramp* ra = a.as<Ramp>();
    const Ramp* rb = b.as<Ramp>();
    bool sa = a.type().is_scalar(), sb = b.type().is_scalar();
    constexpr bool is_add = std::is_same_v<T, Add>, is_sub = std::is_same_v<T, Sub>;
    if constexpr (is_add || is_sub) {
      if (ra && rb)
        return Ramp::make(T::make(ra->base, rb->base), T::make(ra->stride, rb->stride), ra->lanes);
      if (ra && sb) return Ramp::make(T::make(ra->base, b), ra->stride, ra->lanes);
      if (sa && rb) {
        Expr stride = is_add ? rb->stride : Sub::make(make_zero(rb->stride.type()), rb->stride);
        return Ramp::make(T::make(a, rb->base), stride, rb->lanes);
      }
    } else {
      if (ra && sb) return Ramp::make(Mul::make(ra->base, b), Mul::make(ra->stride, b), ra->lanes);
      if (sa && rb) return Ramp::make(Mul::make(a, rb->base), Mul::make(a, rb->stride), rb->lanes);
    }
    return binary(op);
  }

  // The indices of a vector access of `lanes` lanes (simplified where they changed). Scalar
  // indices may stay scalar beside a vector one; when all are scalar, the last is broadcast.
  std::vector<Expr> access_indices(std::vector<Expr> indices, const std::vector<Expr>& original,
                                   int lanes) {
    bool any_vector = false;
    for (size_t d = 0; d < indices.size(); ++d) {
      if (!indices[d].same_as(original[d])) indices[d] = arith::simplify(indices[d]);
      any_vector |= indices[d].type().is_vector();
      lanes = std::max(lanes, lanes_of(indices[d]));
    }
    if (!any_vector && lanes > 1) indices.back() = widen(indices.back(), lanes);
    return indices;
  }

  // The predicate of an access with `indices`, widened to its lanes (undefined stays so).
  static Expr widen_predicate(const Expr& predicate, const std::vector<Expr>& indices) {
    return predicate.defined() ? widen(predicate, access_lanes(indices)) : predicate;
  }

  static int access_lanes(const std::vector<Expr>& indices) {
    int lanes = 1;
    for (const Expr& i : indices) lanes = std::max(lanes, lanes_of(i));
    return lanes;
  }

  // The variable a let binds in the vectorized body: a new vector variable when the value
  // became a vector, or none when it became a Ramp, which replaces the variable (an index
  // through a let stays a Ramp, a contiguous access).
  Var bind(const Var& var, const Expr& value) {
    if (value.type() == var.type()) return var;
    if (value.as<Ramp>()) {
      renamed_[var.get()] = value;
      return Var(static_cast<const Variable*>(nullptr));  // undefined: no let
    }
    Var vector(var.name(), value.type());
    renamed_[var.get()] = vector;
    return vector;
  }

  template <typename Node>
  Node fail(Node node) {
    failed_ = true;
    return node;
  }

  const Variable* var_;
  Expr ramp_;
  Expr mask_;  // the lanes that are active, or undefined when all are
  bool failed_ = false;
  VarMap renamed_;
};

class VectorizeLoops : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Stmt visit(const For* op) override {
    Stmt inner = IRMutator::visit(op);  // inner loops first
    const For* loop = inner.as<For>();
    if (op->kind != ForKind::kVectorized) return inner;
    std::optional<int64_t> n = as_const_int(arith::simplify(loop->extent));
    if (n && *n == 1) return substitute(loop->body, VarMap{{loop->var.get(), loop->min}});
    if (n && *n >= 2 && *n <= 65535) {
      Expr ramp = Ramp::make(loop->min, make_one(loop->min.type()), static_cast<int>(*n));
      Vectorizer vectorizer(loop->var.get(), ramp);
      Stmt body = vectorizer.mutate(loop->body);
      if (!vectorizer.failed()) return body;
    }
    return For::make(loop->var, loop->min, loop->extent, ForKind::kSerial, loop->body);
  }
};

}  // namespace

Stmt vectorize_loops(const Stmt& s) {
  return VectorizeLoops().mutate(s);
}

}  // namespace anvil::transform
