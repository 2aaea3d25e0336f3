#include "anvil/transform/partition_loops.h"

#include <optional>
#include <unordered_set>
#include <vector>

#include "anvil/arith/bound.h"
#include "anvil/arith/simplify.h"
#include "anvil/ir/op.h"
#include "anvil/ir/substitute.h"
#include "anvil/ir/visitor.h"
#include "anvil/transform/fresh_binders.h"
#include "anvil/transform/remove_no_op.h"

namespace anvil::transform {

using namespace ir;
using arith::IntBounds;
using arith::VarBounds;

namespace {

// How many times one loop may be split again (its parts, their parts...): a guard of a strange
// shape must not make the pass split a loop into many pieces.
constexpr int kMaxSplits = 4;

// The values a loop variable takes, given the bounds of its min and extent.
IntBounds loop_var_bounds(const Expr& min, const Expr& extent, const VarBounds& bounds) {
  IntBounds bm = arith::bounds_of(min, bounds), be = arith::bounds_of(extent, bounds);
  IntBounds out{bm.min, IntBounds::kPosInf};
  if (be.max <= 0) return bm;  // the loop never runs: any range will do
  if (bm.has_upper() && be.has_upper() && !__builtin_add_overflow(bm.max, be.max - 1, &out.max)) {
    return out;
  }
  out.max = IntBounds::kPosInf;
  return out;
}

void conjuncts(const Expr& e, std::vector<Expr>& out) {
  if (const And* op = e.as<And>()) {
    conjuncts(op->a, out);
    conjuncts(op->b, out);
  } else {
    out.push_back(e);
  }
}

bool has_load(const Expr& e) {
  struct Finder : IRVisitor {
    using IRVisitor::visit;
    bool found = false;
    void visit(const Load*) override { found = true; }
  } finder;
  finder.visit(e);
  return finder.found;
}

// Sets a variable's bounds for one scope.
class Scoped {
 public:
  Scoped(VarBounds& map, const Variable* var, IntBounds b) : map_(map), var_(var) {
    if (auto it = map_.find(var); it != map_.end()) saved_ = it->second;
    map_[var] = b;
  }
  ~Scoped() {
    if (saved_) {
      map_[var_] = *saved_;
    } else {
      map_.erase(var_);
    }
  }
  Scoped(const Scoped&) = delete;
  Scoped& operator=(const Scoped&) = delete;

 private:
  VarBounds& map_;
  const Variable* var_;
  std::optional<IntBounds> saved_;
};

// A binder between the partitioned loop and a guard: an inner loop or a let.
struct Binder {
  const For* loop = nullptr;
  const LetStmt* let = nullptr;
};

// What a guard conjunct is proven under: the bounds of the enclosing loops, the partitioned
// variable's range, then the binders on the way to the guard.
VarBounds bounds_at(const VarBounds& outer, const Variable* var, IntBounds range,
                    const std::vector<Binder>& path) {
  VarBounds b = outer;
  b[var] = range;
  for (const Binder& binder : path) {
    if (binder.loop) {
      b[binder.loop->var.get()] = loop_var_bounds(binder.loop->min, binder.loop->extent, b);
    } else if (binder.let->value.type().is_int_or_uint() && binder.let->value.type().is_scalar()) {
      b[binder.let->var.get()] = arith::bounds_of(binder.let->value, b);
    }
  }
  return b;
}

// A comparison of loop variables in the condition of a guard inside the loop over `var`, with
// the binders on the way there.
struct Candidate {
  Expr condition;
  std::vector<Binder> path;
};

class CandidateFinder : public IRVisitor {
 public:
  explicit CandidateFinder(const Variable* var) : depends_{var} {}
  using IRVisitor::visit;

  void visit(const For* op) override {
    if (uses_any(op->min) || uses_any(op->extent)) depends_.insert(op->var.get());
    path_.push_back({op, nullptr});
    IRVisitor::visit(op);
    path_.pop_back();
  }
  void visit(const LetStmt* op) override {
    if (uses_any(op->value)) depends_.insert(op->var.get());
    path_.push_back({nullptr, op});
    IRVisitor::visit(op);
    path_.pop_back();
  }
  void visit(const IfThenElse* op) override {
    std::vector<Expr> parts;
    conjuncts(op->condition, parts);
    for (const Expr& c : parts) {
      bool comparison = c.as<LT>() || c.as<LE>() || c.as<GT>() || c.as<GE>();
      if (comparison && uses_any(c) && !has_load(c)) found.push_back({c, path_});
    }
    IRVisitor::visit(op);
  }

  std::vector<Candidate> found;

 private:
  // Whether e depends on the partitioned variable (directly, or through a let or a loop bound).
  bool uses_any(const Expr& e) const {
    struct Finder : IRVisitor {
      using IRVisitor::visit;
      const std::unordered_set<const Variable*>* vars;
      bool found = false;
      void visit(const Variable* op) override { found |= vars->count(op) > 0; }
    } finder;
    finder.vars = &depends_;
    finder.visit(e);
    return finder.found;
  }

  std::unordered_set<const Variable*> depends_;
  std::vector<Binder> path_;
};

// Resolves the guard conjuncts that are provably true (dropped) or false (the branch not taken)
// under the ranges of the loops around them.
class GuardEliminator : public IRMutator {
 public:
  explicit GuardEliminator(VarBounds bounds) : bounds_(std::move(bounds)) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Stmt visit(const For* op) override {
    Scoped scope(bounds_, op->var.get(), loop_var_bounds(op->min, op->extent, bounds_));
    return IRMutator::visit(op);
  }

  Stmt visit(const LetStmt* op) override {
    if (!op->value.type().is_int_or_uint() || !op->value.type().is_scalar()) {
      return IRMutator::visit(op);
    }
    Scoped scope(bounds_, op->var.get(), arith::bounds_of(op->value, bounds_));
    return IRMutator::visit(op);
  }

  Stmt visit(const IfThenElse* op) override {
    std::vector<Expr> parts, kept;
    conjuncts(op->condition, parts);
    for (const Expr& c : parts) {
      if (arith::can_prove(c, bounds_)) continue;
      if (arith::can_prove(Not::make(c), bounds_)) {
        return op->else_case.defined() ? mutate(op->else_case) : Evaluate::make(0);
      }
      kept.push_back(c);
    }
    if (kept.empty()) return mutate(op->then_case);
    Expr condition = op->condition;
    if (kept.size() < parts.size()) {
      condition = kept[0];
      for (size_t i = 1; i < kept.size(); ++i) condition = And::make(condition, kept[i]);
    }
    Stmt then_case = mutate(op->then_case), else_case = mutate(op->else_case);
    if (condition.same_as(op->condition) && then_case.same_as(op->then_case) &&
        else_case.same_as(op->else_case)) {
      return op;
    }
    return IfThenElse::make(condition, then_case, else_case);
  }

 private:
  VarBounds bounds_;
};

class PartitionLoops : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Stmt visit(const For* op) override {
    int budget = pending_budget_ >= 0 ? pending_budget_ : kMaxSplits;
    pending_budget_ = -1;
    std::optional<int64_t> min = as_const_int(arith::simplify(op->min, bounds_));
    std::optional<int64_t> extent = as_const_int(arith::simplify(op->extent, bounds_));
    if (min && extent && *extent > 0 && op->kind != ForKind::kThreadBinding && budget > 0) {
      if (op->kind == ForKind::kParallel) {
        if (Stmt one = split_parallel(op, *min, *min + *extent, budget); one.defined()) return one;
      } else if (Stmt parts = split(op, *min, *min + *extent, budget); parts.defined()) {
        return parts;
      }
    }
    // Not split: resolve the guards the whole range decides, then the inner loops.
    IntBounds range = loop_var_bounds(op->min, op->extent, bounds_);
    Stmt body = eliminate(op->body, op->var.get(), range);
    Scoped scope(bounds_, op->var.get(), range);
    body = mutate(body);
    if (body.same_as(op->body)) return op;
    return For::make(op->var, op->min, op->extent, op->kind, body, op->thread_tag);
  }

  Stmt visit(const LetStmt* op) override {
    if (!op->value.type().is_int_or_uint() || !op->value.type().is_scalar()) {
      return IRMutator::visit(op);
    }
    Scoped scope(bounds_, op->var.get(), arith::bounds_of(op->value, bounds_));
    return IRMutator::visit(op);
  }

 private:
  bool provable(const Candidate& c, const Variable* var, int64_t lo, int64_t hi) const {
    return arith::can_prove(c.condition, bounds_at(bounds_, var, {lo, hi}, c.path));
  }

  // A parallel loop is split as a serial one would be, and its parts become the branches of one
  // parallel loop (if (v < k1) part 1 else if (v < k2) part 2 ...): the guarded parts (a split's
  // tail tile) run beside the others, not after them on one thread. Undefined when no guard gives
  // a split.
  Stmt split_parallel(const For* op, int64_t begin, int64_t end, int budget) {
    Stmt serial = For::make(op->var, op->min, op->extent, ForKind::kSerial, op->body);
    Stmt parts = split(serial.as<For>(), begin, end, budget);
    if (!parts.defined()) return Stmt();
    // The parts in order: [lo, hi) and the body, on the parallel loop's variable.
    struct Part {
      int64_t lo, hi;
      Stmt body;
    };
    std::vector<Part> found;
    bool all_loops = true;
    auto collect = [&](auto&& self, const Stmt& st) -> void {
      if (const Seq* seq = st.as<Seq>()) {
        for (const Stmt& x : seq->stmts) self(self, x);
      } else if (const For* f = st.as<For>();
                 f && as_const_int(f->min) && as_const_int(f->extent)) {
        int64_t lo = *as_const_int(f->min);
        found.push_back({lo, lo + *as_const_int(f->extent),
                         substitute(f->body, {{f->var.get(), Expr(op->var)}})});
      } else if (!is_no_op(st)) {
        all_loops = false;
      }
    };
    collect(collect, parts);
    if (!all_loops || found.empty()) return Stmt();
    // From the last part back: the branches before a part take the iterations below the end of
    // the part before it; a gap between parts (all its guards false) does nothing.
    DataType t = op->var.type();
    Stmt chain = Evaluate::make(0);
    for (size_t i = found.size(); i-- > 0;) {
      const Part& p = found[i];
      bool gap = p.lo > (i == 0 ? begin : found[i - 1].hi);
      if (i + 1 == found.size() && p.hi == end && !gap) {
        chain = p.body;
        continue;
      }
      Expr in = op->var < make_const(t, p.hi);
      if (gap) in = in && op->var >= make_const(t, p.lo);
      chain = is_no_op(chain) ? IfThenElse::make(in, p.body) : IfThenElse::make(in, p.body, chain);
    }
    return For::make(op->var, op->min, op->extent, op->kind, chain, op->thread_tag);
  }

  // The loop over [begin, end) split where a guard stops (or starts) holding, each part with
  // the guards it decides resolved; undefined when no guard gives a split.
  Stmt split(const For* op, int64_t begin, int64_t end, int budget) {
    const Variable* var = op->var.get();
    CandidateFinder finder(var);
    finder.visit(op->body);
    std::optional<int64_t> cut;
    bool prefix = true;
    for (const Candidate& c : finder.found) {
      // The largest k such that the guard holds on [begin, k).
      if (provable(c, var, begin, end - 1)) continue;  // holds everywhere: nothing to split
      int64_t good = begin, bad = end;
      while (bad - good > 1) {
        int64_t mid = good + (bad - good) / 2;
        (provable(c, var, begin, mid - 1) ? good : bad) = mid;
      }
      if (good > begin) {
        cut = good;
        break;
      }
      // The smallest k such that the guard holds on [k, end).
      int64_t lo = begin, hi = end;  // holds on [hi, end), not on [lo, end)
      while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        (provable(c, var, mid, end - 1) ? hi : lo) = mid;
      }
      if (hi < end) {
        cut = hi;
        prefix = false;
        break;
      }
    }
    if (!cut) return Stmt();

    DataType t = op->var.type();
    auto part = [&](int64_t lo, int64_t hi) {
      Stmt body = eliminate(op->body, var, {lo, hi - 1});
      return For::make(op->var, make_const(t, lo), make_const(t, hi - lo), op->kind, body,
                       op->thread_tag);
    };
    // The part without the guard keeps the loop's variables; the other gets fresh ones.
    Stmt first = part(begin, *cut), second = part(*cut, end);
    if (prefix) {
      second = with_fresh_binders(second);
    } else {
      first = with_fresh_binders(first);
    }
    std::vector<Stmt> parts;
    for (const Stmt& p : {first, second}) {
      pending_budget_ = budget - 1;
      // A part whose guards are all false is left with empty loops: drop them.
      Stmt done = remove_no_op(mutate(p));
      pending_budget_ = -1;
      if (!is_no_op(done)) parts.push_back(done);
    }
    if (parts.empty()) return Evaluate::make(0);
    return Seq::make(std::move(parts));
  }

  Stmt eliminate(const Stmt& body, const Variable* var, IntBounds range) const {
    VarBounds b = bounds_;
    b[var] = range;
    return GuardEliminator(std::move(b)).mutate(body);
  }

  VarBounds bounds_;
  int pending_budget_ = -1;  // the split budget of the next loop visited, when it is a part
};

}  // namespace

Stmt partition_loops(const Stmt& s) {
  return PartitionLoops().mutate(s);
}

}  // namespace anvil::transform
