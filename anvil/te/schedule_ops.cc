// schedule_to_loops: from a Schedule to the loop nest of every stage.
//
//   1. Inline: stages marked compute_inline are substituted into their consumers.
//   2. Bound inference, consumers first: a stage computed at a consumer's loop covers the region
//      that the consumer's loops inside that point read; other stages cover their whole shape.
//   3. Loop nests, producers first: each stage's leaf loops, with split tails guarded, a
//      reduction as an init nest and an update nest, and the stages attached at a loop placed
//      inside it, each in its own Allocate.
#include <algorithm>
#include <unordered_map>

#include "anvil/arith/simplify.h"
#include "anvil/ir/op.h"
#include "anvil/ir/printer.h"
#include "anvil/ir/substitute.h"
#include "anvil/ir/visitor.h"
#include "anvil/support/error.h"
#include "anvil/te/schedule.h"
#include "anvil/te/tensorize.h"

namespace anvil::te {

using namespace ir;

namespace {

// An inclusive symbolic interval.
struct Interval {
  Expr min, max;
};
using RelaxMap = std::unordered_map<const Variable*, Interval>;

// The interval e covers while the variables in `relax` range over theirs; nullopt when e is not
// monotone in a way this understands.
std::optional<Interval> eval_interval(const Expr& e, const RelaxMap& relax) {
  bool uses = false;
  for (const auto& [var, _] : relax) uses = uses || uses_var(e, var);
  if (!uses) return Interval{e, e};
  if (const Variable* v = e.as<Variable>()) return relax.at(v);
  auto both = [&](const Expr& a, const Expr& b) -> std::optional<std::pair<Interval, Interval>> {
    std::optional<Interval> x = eval_interval(a, relax), y = eval_interval(b, relax);
    if (!x || !y) return std::nullopt;
    return std::make_pair(*x, *y);
  };
  if (const Add* op = e.as<Add>()) {
    auto r = both(op->a, op->b);
    if (!r) return std::nullopt;
    return Interval{r->first.min + r->second.min, r->first.max + r->second.max};
  }
  if (const Sub* op = e.as<Sub>()) {
    auto r = both(op->a, op->b);
    if (!r) return std::nullopt;
    return Interval{r->first.min - r->second.max, r->first.max - r->second.min};
  }
  if (const Mul* op = e.as<Mul>()) {
    Expr x = op->a, c = op->b;
    if (!as_const_int(c)) std::swap(x, c);
    std::optional<int64_t> k = as_const_int(c);
    std::optional<Interval> i = eval_interval(x, relax);
    if (!k || !i) return std::nullopt;
    if (*k >= 0) return Interval{i->min * c, i->max * c};
    return Interval{i->max * c, i->min * c};
  }
  if (const FloorDiv* op = e.as<FloorDiv>()) {
    std::optional<int64_t> k = as_const_int(op->b);
    std::optional<Interval> i = eval_interval(op->a, relax);
    if (!k || *k <= 0 || !i) return std::nullopt;
    return Interval{floordiv(i->min, op->b), floordiv(i->max, op->b)};
  }
  if (const FloorMod* op = e.as<FloorMod>()) {
    std::optional<int64_t> k = as_const_int(op->b);
    if (!k || *k <= 0) return std::nullopt;
    return Interval{make_zero(e.type()), make_const(e.type(), *k - 1)};
  }
  if (const Min* op = e.as<Min>()) {
    auto r = both(op->a, op->b);
    if (!r) return std::nullopt;
    return Interval{min(r->first.min, r->second.min), min(r->first.max, r->second.max)};
  }
  if (const Max* op = e.as<Max>()) {
    auto r = both(op->a, op->b);
    if (!r) return std::nullopt;
    return Interval{max(r->first.min, r->second.min), max(r->first.max, r->second.max)};
  }
  if (const Select* op = e.as<Select>()) {
    auto r = both(op->true_value, op->false_value);
    if (!r) return std::nullopt;
    return Interval{min(r->first.min, r->second.min), max(r->first.max, r->second.max)};
  }
  return std::nullopt;
}

// Loads of one tensor's buffer become loads of its realized buffer, shifted by the realized
// region's start.
class RealizeLoads : public IRMutator {
 public:
  struct Target {
    Buffer buffer;
    std::vector<Expr> offset;
  };
  explicit RealizeLoads(const std::unordered_map<const BufferNode*, Target>& targets)
      : targets_(targets) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Expr visit(const Load* op) override {
    Expr e = IRMutator::visit(op);
    const Load* load = e.as<Load>();
    auto it = targets_.find(load->buffer.get());
    if (it == targets_.end()) return e;
    std::vector<Expr> indices = load->indices;
    for (size_t d = 0; d < indices.size(); ++d) {
      if (!is_zero(it->second.offset[d])) {
        indices[d] = arith::simplify(indices[d] - it->second.offset[d]);
      }
    }
    return Load::make(it->second.buffer, indices, load->predicate);
  }

 private:
  const std::unordered_map<const BufferNode*, Target>& targets_;
};

// Loads of an inlined tensor become its body at those indices.
class InlineLoads : public IRMutator {
 public:
  InlineLoads(const BufferNode* buffer, const std::vector<IterVar>& axis, Expr body)
      : buffer_(buffer), axis_(axis), body_(std::move(body)) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Expr visit(const Load* op) override {
    Expr e = IRMutator::visit(op);
    const Load* load = e.as<Load>();
    if (load->buffer.get() != buffer_) return e;
    VarMap map;
    for (size_t d = 0; d < axis_.size(); ++d) map[axis_[d]->var.get()] = load->indices[d];
    return substitute(body_, map);
  }

 private:
  const BufferNode* buffer_;
  const std::vector<IterVar>& axis_;
  Expr body_;
};

// What the loops of one stage look like once its root ranges are known.
struct LoopInfo {
  std::unordered_map<const IterVarNode*, Expr> extent;  // every iteration variable
  std::unordered_map<const IterVarNode*, Expr> value;   // root ones, absolute, in leaf vars
  std::vector<Expr> data_guards, reduce_guards;         // split tails
};

class LoopBuilder {
 public:
  explicit LoopBuilder(const ScheduleState& s) : stages_(s.stages) {
    ranges_.resize(stages_.size());
    info_.resize(stages_.size());
    realized_.resize(stages_.size());
    checks_.resize(stages_.size());
    for (size_t i = 0; i < stages_.size(); ++i) {
      if (stages_[i].tensor.is_compute()) checks_[i] = stages_[i].tensor->checks;
    }
  }

  // The root ranges of stage `index`: bound inference as build() does it, for the stage and its
  // consumers only.
  std::vector<Range> region(int index) {
    inline_stages();
    check_attachments();
    for (int i = static_cast<int>(stages_.size()) - 1; i >= index; --i) infer_bounds(i);
    const StageState& st = stages_[static_cast<size_t>(index)];
    std::vector<Range> out;
    if (!st.tensor.is_compute() || st.attach == AttachKind::kInline) return out;
    for (const IterVar& iv : st.axis)
      out.push_back(ranges_[static_cast<size_t>(index)].at(iv.get()));
    return out;
  }

  Stmt build() {
    inline_stages();
    check_attachments();
    for (int i = static_cast<int>(stages_.size()) - 1; i >= 0; --i) infer_bounds(i);
    for (size_t i = 0; i < stages_.size(); ++i) realize(static_cast<int>(i));
    for (size_t i = 0; i < stages_.size(); ++i) {
      const StageState& st = stages_[i];
      if (st.attach == AttachKind::kScope)
        attached_[st.attach_axis.get()].push_back(static_cast<int>(i));
    }
    // Root stages in order, each intermediate one allocated around everything after it.
    std::vector<int> roots;
    for (size_t i = 0; i < stages_.size(); ++i) {
      const StageState& st = stages_[i];
      if (st.tensor.is_compute() && st.attach == AttachKind::kRoot)
        roots.push_back(static_cast<int>(i));
    }
    ANVIL_CHECK(!roots.empty(), "schedule: nothing to compute");
    Stmt result;
    for (auto it = roots.rbegin(); it != roots.rend(); ++it) {
      int first = it + 1 == roots.rend() ? 0 : *(it + 1) + 1;
      Stmt s = stage_stmt(*it);
      if (Stmt checks = check_stmts(first, *it, roots); checks.defined()) s = Seq::make(checks, s);
      result = result.defined() ? Seq::make(s, result) : s;
      if (!stages_[static_cast<size_t>(*it)].is_output) {
        result = Allocate::make(realized_[static_cast<size_t>(*it)].buffer, result);
      }
    }
    return result;
  }

 private:
  void inline_stages() {
    for (size_t i = 0; i < stages_.size(); ++i) {
      const StageState& st = stages_[i];
      if (st.attach != AttachKind::kInline) continue;
      InlineLoads inline_loads(st.tensor->buffer.get(), st.axis, st.body);
      for (size_t j = i + 1; j < stages_.size(); ++j) {
        stages_[j].body = inline_loads.mutate(stages_[j].body);
        for (Check& c : checks_[j]) c.condition = inline_loads.mutate(c.condition);
      }
    }
  }

  // The checks of stages first..last (the stages that end up in root stage `last`), each a serial
  // loop nest of assertions run before that root stage; undefined when there are none. What they
  // read must be ready by then: an input, or a root stage computed before.
  Stmt check_stmts(int first, int last, const std::vector<int>& roots) const {
    std::vector<Stmt> stmts;
    for (int j = first; j <= last; ++j) {
      for (const Check& c : checks_[static_cast<size_t>(j)]) {
        for (size_t k = 0; k < stages_.size(); ++k) {
          const StageState& st = stages_[k];
          if (!st.tensor.is_compute() || !reads_buffer(c.condition, st.tensor->buffer.get()))
            continue;
          bool ready = static_cast<int>(k) < first &&
                       std::find(roots.begin(), roots.end(), static_cast<int>(k)) != roots.end();
          ANVIL_CHECK(ready, "schedule: the check '", c.message, "' of '",
                      stages_[static_cast<size_t>(j)].tensor.name(), "' reads '", st.tensor.name(),
                      "', which is not computed before it at the top level");
        }
        Stmt s = AssertStmt::make(c.condition, c.message, Evaluate::make(0));
        for (auto a = c.axis.rbegin(); a != c.axis.rend(); ++a) {
          s = For::make((*a)->var, (*a)->dom.min, (*a)->dom.extent, ForKind::kSerial, s);
        }
        stmts.push_back(s);
      }
    }
    return stmts.empty() ? Stmt() : Seq::make(stmts);
  }

  // After inlining, a stage computed at a consumer's loop must be read by that consumer itself.
  void check_attachments() const {
    for (const StageState& st : stages_) {
      if (st.attach != AttachKind::kScope) continue;
      const StageState& consumer = stages_[static_cast<size_t>(st.attach_stage)];
      ANVIL_CHECK(reads_buffer(consumer.body, st.tensor->buffer.get()), "compute_at: '",
                  st.tensor.name(), "' is computed inside '", consumer.tensor.name(),
                  "', which reads it only through stages that are not inlined");
    }
  }

  // Root ranges of stage i: its whole shape, or the region its consumer's inner loops read.
  void infer_bounds(int i) {
    StageState& st = stages_[static_cast<size_t>(i)];
    if (!st.tensor.is_compute() || st.attach == AttachKind::kInline) return;
    auto& ranges = ranges_[static_cast<size_t>(i)];
    for (const IterVar& iv : st.reduce_axis) ranges[iv.get()] = iv->dom;
    if (st.attach == AttachKind::kScope) {
      std::optional<std::vector<Interval>> region = consumer_region(i);
      for (size_t d = 0; d < st.axis.size(); ++d) {
        if (region) {
          Expr min = arith::simplify((*region)[d].min);
          Expr extent = arith::simplify((*region)[d].max - (*region)[d].min + 1);
          // A shared or local copy needs a static size: where the region's extent varies with
          // the enclosing loops (a strided or phased read whose start is not aligned alike in
          // every block), it takes the largest; the points past a region are guarded off.
          if (st.scope != MemoryScope::kGlobal && !as_const_int(extent)) {
            arith::IntBounds b = arith::bounds_of(extent, enclosing_bounds(i));
            if (b.has_upper() && b.max >= 1) extent = make_const(extent.type(), b.max);
          }
          ranges[st.axis[d].get()] = Range::make(min, extent);
        } else {
          ranges[st.axis[d].get()] = st.axis[d]->dom;
        }
      }
    } else {
      for (const IterVar& iv : st.axis) ranges[iv.get()] = iv->dom;
    }
    analyze(i);
  }

  std::optional<std::vector<Interval>> consumer_region(int i) {
    const StageState& st = stages_[static_cast<size_t>(i)];
    int p = st.attach_stage;
    const StageState& consumer = stages_[static_cast<size_t>(p)];
    const LoopInfo& info = info_[static_cast<size_t>(p)];
    RelaxMap relax;
    // Shared memory serves the whole block: its region covers every thread's, so the loops bound
    // to threadIdx (and virtual threads) relax wherever they are (the consumer's own, or those of
    // the stages it is computed inside).
    if (st.scope == MemoryScope::kShared) {
      for (size_t j = 0; j < stages_.size(); ++j) {
        for (const auto& [iv, attr] : stages_[j].attrs) {
          auto e = info_[j].extent.find(iv);
          bool in_block = attr.thread_tag.rfind("threadIdx", 0) == 0 ||
                          attr.thread_tag.rfind("vthread", 0) == 0;
          if (!in_block || e == info_[j].extent.end()) continue;
          relax[iv->var.get()] =
              Interval{make_zero(iv->var.type()), arith::simplify(e->second - 1)};
        }
      }
    }
    bool inside = false;
    for (const IterVar& l : consumer.leaf) {
      if (inside) {
        relax[l->var.get()] =
            Interval{make_zero(l->var.type()), arith::simplify(info.extent.at(l.get()) - 1)};
      }
      if (l.same_as(st.attach_axis)) inside = true;
    }
    Expr body = consumer_body(p);
    struct Reads : IRVisitor {
      using IRVisitor::visit;
      const BufferNode* target;
      std::vector<std::vector<Expr>> indices;
      void visit(const Load* op) override {
        if (op->buffer.get() == target) indices.push_back(op->indices);
        IRVisitor::visit(op);
      }
    } reads;
    reads.target = st.tensor->buffer.get();
    reads.visit(body);
    if (reads.indices.empty()) return std::nullopt;
    std::vector<Interval> region(st.axis.size());
    for (const std::vector<Expr>& idx : reads.indices) {
      for (size_t d = 0; d < idx.size(); ++d) {
        std::optional<Interval> r = eval_interval(idx[d], relax);
        if (!r) return std::nullopt;
        region[d] = region[d].min.defined()
                        ? Interval{min(region[d].min, r->min), max(region[d].max, r->max)}
                        : *r;
      }
    }
    return region;
  }

  // Stage p's body with its root variables replaced by their values in its leaf loops.
  Expr consumer_body(int p) {
    const StageState& st = stages_[static_cast<size_t>(p)];
    VarMap map;
    for (const auto& [iv, value] : info_[static_cast<size_t>(p)].value) map[iv->var.get()] = value;
    return substitute(st.body, map);
  }

  void analyze(int i) {
    const StageState& st = stages_[static_cast<size_t>(i)];
    LoopInfo& info = info_[static_cast<size_t>(i)];
    const auto& ranges = ranges_[static_cast<size_t>(i)];
    for (const auto& [iv, r] : ranges) info.extent[iv] = r.extent;
    auto ceil_div = [](const Expr& a, int64_t b) {
      return arith::simplify(floordiv(a + static_cast<int>(b - 1), static_cast<int>(b)));
    };
    for (const Relation& rel : st.relations) {
      if (const SplitRelation* s = std::get_if<SplitRelation>(&rel)) {
        Expr ext = info.extent.at(s->parent.get());
        if (s->factor > 0) {
          info.extent[s->outer.get()] = ceil_div(ext, s->factor);
          info.extent[s->inner.get()] = make_const(ext.type(), s->factor);
        } else {
          info.extent[s->outer.get()] = make_const(ext.type(), s->nparts);
          info.extent[s->inner.get()] = ceil_div(ext, s->nparts);
        }
      } else {
        const FuseRelation& f = std::get<FuseRelation>(rel);
        info.extent[f.fused.get()] =
            arith::simplify(info.extent.at(f.outer.get()) * info.extent.at(f.inner.get()));
      }
    }
    // Values, from the leaves back to the roots (0-based offsets within each range).
    std::unordered_map<const IterVarNode*, Expr> value;
    for (const IterVar& l : st.leaf) value[l.get()] = l->var;
    for (auto it = st.relations.rbegin(); it != st.relations.rend(); ++it) {
      if (const SplitRelation* s = std::get_if<SplitRelation>(&*it)) {
        Expr parent =
            value.at(s->outer.get()) * info.extent.at(s->inner.get()) + value.at(s->inner.get());
        value[s->parent.get()] = parent;
        Expr ext = info.extent.at(s->parent.get());
        Expr covered = info.extent.at(s->outer.get()) * info.extent.at(s->inner.get());
        if (!arith::can_prove(covered <= ext)) {
          (s->parent->kind == IterKind::kReduce ? info.reduce_guards : info.data_guards)
              .push_back(parent < ext);
        }
      } else {
        const FuseRelation& f = std::get<FuseRelation>(*it);
        Expr inner_ext = info.extent.at(f.inner.get());
        value[f.outer.get()] = floordiv(value.at(f.fused.get()), inner_ext);
        value[f.inner.get()] = floormod(value.at(f.fused.get()), inner_ext);
      }
    }
    auto absolute = [&](const IterVar& iv) {
      return arith::simplify(ranges.at(iv.get()).min + value.at(iv.get()));
    };
    for (const IterVar& iv : st.axis) info.value[iv.get()] = absolute(iv);
    for (const IterVar& iv : st.reduce_axis) info.value[iv.get()] = absolute(iv);
    // A region computed for a consumer may reach past the tensor's own domain at the consumer's
    // tails; those points are not computed. The guards that the loop ranges of this stage and
    // its consumer already prove are left out.
    if (st.attach == AttachKind::kScope) {
      arith::VarBounds known = loop_bounds(i);
      for (const auto& [iv, b] : loop_bounds(st.attach_stage)) known[iv] = b;
      for (const IterVar& iv : st.axis) {
        Expr v = info.value.at(iv.get());
        Expr end = arith::simplify(iv->dom.min + iv->dom.extent);
        if (!arith::can_prove(iv->dom.min <= v, known))
          info.data_guards.push_back(iv->dom.min <= v);
        if (!arith::can_prove(v < end, known)) info.data_guards.push_back(v < end);
      }
    }
  }

  // The ranges of the constant-extent loops around stage i's attachment: its consumer's, that
  // one's consumer's, and so on to the root.
  arith::VarBounds enclosing_bounds(int i) const {
    arith::VarBounds b;
    for (int j = stages_[static_cast<size_t>(i)].attach_stage; j >= 0;
         j = stages_[static_cast<size_t>(j)].attach == AttachKind::kScope
                 ? stages_[static_cast<size_t>(j)].attach_stage
                 : -1)
      for (const auto& [var, bounds] : loop_bounds(j)) b[var] = bounds;
    return b;
  }

  // The ranges of stage i's leaf loop variables whose extents are constant.
  arith::VarBounds loop_bounds(int i) const {
    arith::VarBounds b;
    const LoopInfo& info = info_[static_cast<size_t>(i)];
    for (const IterVar& l : stages_[static_cast<size_t>(i)].leaf) {
      auto it = info.extent.find(l.get());
      if (it == info.extent.end()) continue;
      if (std::optional<int64_t> n = as_const_int(it->second); n && *n > 0) {
        b[l->var.get()] = arith::IntBounds::from_range(0, *n);
      }
    }
    return b;
  }

  // The buffer each compute stage writes: its tensor's own, or a new one for a region, a
  // non-global scope or padded strides.
  void realize(int i) {
    const StageState& st = stages_[static_cast<size_t>(i)];
    auto& real = realized_[static_cast<size_t>(i)];
    if (!st.tensor.is_compute() || st.attach == AttachKind::kInline) return;
    const auto& ranges = ranges_[static_cast<size_t>(i)];
    std::vector<Expr> shape, offset;
    bool same =
        st.attach == AttachKind::kRoot && st.scope == MemoryScope::kGlobal && st.aligns.empty();
    for (const IterVar& iv : st.axis) {
      shape.push_back(ranges.at(iv.get()).extent);
      offset.push_back(st.attach == AttachKind::kScope ? ranges.at(iv.get()).min
                                                       : make_zero(iv->var.type()));
    }
    real.offset = offset;
    if (same) {
      real.buffer = st.tensor->buffer;
      return;
    }
    std::vector<Expr> strides;
    if (!st.aligns.empty()) {
      strides.resize(shape.size());
      Expr stride = make_one(shape.back().type());
      for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
        for (const StorageAlign& a : st.aligns) {
          if (a.axis != d) continue;
          std::optional<int64_t> s = as_const_int(arith::simplify(stride));
          ANVIL_CHECK(s, "storage_align on stage '", st.tensor.name(),
                      "' needs constant extents for the inner dimensions");
          int64_t padded = (*s - a.offset + a.factor - 1) / a.factor * a.factor + a.offset;
          stride = make_const(stride.type(), padded);
        }
        strides[static_cast<size_t>(d)] = arith::simplify(stride);
        stride = stride * shape[static_cast<size_t>(d)];
      }
    }
    real.buffer = Buffer::make(st.tensor.name(), st.tensor->dtype, shape, strides, st.scope);
    targets_[st.tensor->buffer.get()] = RealizeLoads::Target{real.buffer, offset};
  }

  // The loop nest of stage i, with the stages attached to its loops inside.
  Stmt stage_stmt(int i) {
    const StageState& st = stages_[static_cast<size_t>(i)];
    const LoopInfo& info = info_[static_cast<size_t>(i)];
    const auto& real = realized_[static_cast<size_t>(i)];
    Expr body = RealizeLoads(targets_).mutate(consumer_body(i));
    std::vector<Expr> indices;
    for (size_t d = 0; d < st.axis.size(); ++d) {
      indices.push_back(arith::simplify(info.value.at(st.axis[d].get()) - real.offset[d]));
    }
    auto guarded = [](Stmt s, const std::vector<Expr>& guards) {
      if (guards.empty()) return s;
      Expr c = guards[0];
      for (size_t g = 1; g < guards.size(); ++g) c = c && guards[g];
      return IfThenElse::make(c, s);
    };

    const Reduce* reduce = body.as<Reduce>();
    if (!reduce) {
      return wrap(st, st.leaf, guarded(Store::make(real.buffer, body, indices), info.data_guards),
                  true);
    }
    const CommReducerNode& r = *reduce->combiner;
    Stmt init = Store::make(real.buffer, r.identity, indices);
    Expr combined = substitute(r.result, VarMap{{r.lhs.get(), Load::make(real.buffer, indices)},
                                                {r.rhs.get(), reduce->source}});
    std::vector<Expr> guards = info.data_guards;
    guards.insert(guards.end(), info.reduce_guards.begin(), info.reduce_guards.end());
    if (!is_one(reduce->condition)) guards.push_back(reduce->condition);
    Stmt update = guarded(Store::make(real.buffer, combined, indices), guards);

    // Loops before the first reduction loop are shared by the init and update nests.
    size_t first = 0;
    while (first < st.leaf.size() && st.leaf[first]->kind != IterKind::kReduce) ++first;
    if (st.tensorize_intrin) {
      return tensorized_stmt(i, *reduce, indices, guards, guarded(init, info.data_guards), first);
    }
    std::vector<IterVar> common(st.leaf.begin(),
                                st.leaf.begin() + static_cast<std::ptrdiff_t>(first));
    std::vector<IterVar> rest(st.leaf.begin() + static_cast<std::ptrdiff_t>(first), st.leaf.end());
    std::vector<IterVar> init_loops;
    for (const IterVar& l : rest) {
      if (l->kind != IterKind::kReduce) init_loops.push_back(l);
    }
    Stmt inner = Seq::make(wrap(st, init_loops, guarded(init, info.data_guards), false),
                           wrap(st, rest, update, true));
    return wrap(st, common, inner, true);
  }

  // Stage i with its loops from the tensorize axis inward replaced by the intrinsic: the init
  // nest first (its own loops, inside the tensorized region when that holds whole reductions),
  // then the intrinsic inside the loops outside the region.
  Stmt tensorized_stmt(int i, const Reduce& reduce, const std::vector<Expr>& indices,
                       const std::vector<Expr>& guards, const Stmt& init, size_t first) {
    const StageState& st = stages_[static_cast<size_t>(i)];
    const LoopInfo& info = info_[static_cast<size_t>(i)];
    const TensorIntrin& intrin = *st.tensorize_intrin;
    auto at = std::find_if(st.leaf.begin(), st.leaf.end(),
                           [&](const IterVar& l) { return l.same_as(st.tensorize_axis); });
    ANVIL_CHECK(at != st.leaf.end(), "tensorize of stage '", st.tensor.name(), "' with ",
                intrin.name, ": loop '", st.tensorize_axis->var.name(),
                "' was split or fused after tensorize; tensorize its remaining loop instead");
    const size_t pos = static_cast<size_t>(at - st.leaf.begin());
    std::vector<IterVar> outer(st.leaf.begin(), at), region(at, st.leaf.end());
    std::vector<Expr> extents;
    for (const IterVar& l : region) {
      auto a = st.attrs.find(l.get());
      ANVIL_CHECK(a == st.attrs.end() || a->second.kind == ForKind::kSerial, "tensorize of stage '",
                  st.tensor.name(), "' with ", intrin.name, ": loop '", l->var.name(),
                  "' is inside the tensorized loops and cannot also be ",
                  for_kind_name(a->second.kind));
      ANVIL_CHECK(!attached_.count(l.get()), "tensorize of stage '", st.tensor.name(), "' with ",
                  intrin.name, ": a stage is computed at loop '", l->var.name(),
                  "', inside the tensorized loops");
      for (const Expr& g : guards) {
        ANVIL_CHECK(!uses_var(g, l->var.get()), "tensorize of stage '", st.tensor.name(), "' with ",
                    intrin.name, ": loop '", l->var.name(), "' has a tail (guard ", g,
                    "); split by a factor that divides its extent");
      }
      extents.push_back(info.extent.at(l.get()));
    }
    // Declared values belong to placeholders; anything else may hold its type's whole range.
    auto values_of = [&](const Buffer& b) {
      for (const StageState& s : stages_) {
        if (!s.tensor.is_compute() && s.tensor->buffer.same_as(b)) return value_range(s.tensor);
      }
      return ValueRange{b->dtype.min_value(), b->dtype.max_value()};
    };
    arith::VarBounds bounds = loop_bounds(i);
    if (st.attach == AttachKind::kScope) {
      for (const auto& [var, b] : enclosing_bounds(i)) bounds[var] = b;
    }
    Stmt update =
        tensorize_update(st.tensor.name(), intrin, region, extents, reduce,
                         realized_[static_cast<size_t>(i)].buffer, indices, values_of, bounds);
    if (!guards.empty()) {
      Expr c = guards[0];
      for (size_t g = 1; g < guards.size(); ++g) c = c && guards[g];
      update = IfThenElse::make(c, update);
    }
    auto data_loops = [](std::vector<IterVar>::const_iterator b,
                         std::vector<IterVar>::const_iterator e) {
      std::vector<IterVar> v;
      for (auto l = b; l != e; ++l)
        if ((*l)->kind != IterKind::kReduce) v.push_back(*l);
      return v;
    };
    if (pos >= first) {
      std::vector<IterVar> common(st.leaf.begin(),
                                  st.leaf.begin() + static_cast<std::ptrdiff_t>(first));
      std::vector<IterVar> rest(st.leaf.begin() + static_cast<std::ptrdiff_t>(first), at);
      Stmt inner = Seq::make(
          wrap(st, data_loops(st.leaf.begin() + static_cast<std::ptrdiff_t>(first), st.leaf.end()),
               init, false),
          wrap(st, rest, update, true));
      return wrap(st, common, inner, true);
    }
    Stmt inner = Seq::make(wrap(st, data_loops(at, st.leaf.end()), init, false), update);
    return wrap(st, outer, inner, true);
  }

  // `body` inside the given loops of stage st (outermost first), with attached stages placed
  // inside the loops they are attached to.
  Stmt wrap(const StageState& st, const std::vector<IterVar>& loops, Stmt body,
            bool with_attachments) {
    const LoopInfo& info = info_[static_cast<size_t>(&st - stages_.data())];
    for (auto it = loops.rbegin(); it != loops.rend(); ++it) {
      const IterVar& l = *it;
      if (with_attachments) {
        auto found = attached_.find(l.get());
        if (found != attached_.end()) {
          const std::vector<int>& producers = found->second;
          for (auto p = producers.rbegin(); p != producers.rend(); ++p) {
            const Buffer& buffer = realized_[static_cast<size_t>(*p)].buffer;
            body = Allocate::make(buffer, Seq::make(stage_stmt(*p), body));
            if (stages_[static_cast<size_t>(*p)].double_buffer)
              body = AttrStmt::make("double_buffer", buffer->data, Expr(1), body);
          }
        }
      }
      ForKind kind = ForKind::kSerial;
      std::string thread_tag;
      std::vector<std::pair<std::string, Expr>> pragmas;
      if (auto a = st.attrs.find(l.get()); a != st.attrs.end()) {
        kind = a->second.kind;
        thread_tag = a->second.thread_tag;
        pragmas = a->second.pragmas;
      }
      Expr extent = info.extent.at(l.get());
      body = For::make(l->var, make_zero(l->var.type()), extent, kind, body, thread_tag);
      for (const auto& [key, value] : pragmas)
        body = AttrStmt::make("pragma_" + key, l->var, value, body);
    }
    return body;
  }

  std::vector<StageState> stages_;
  std::vector<std::unordered_map<const IterVarNode*, Range>> ranges_;
  std::vector<LoopInfo> info_;
  struct Realized {
    Buffer buffer;
    std::vector<Expr> offset;
  };
  std::vector<Realized> realized_;
  std::vector<std::vector<Check>> checks_;  // per stage, with inlined stages substituted
  std::unordered_map<const BufferNode*, RealizeLoads::Target> targets_;
  std::unordered_map<const IterVarNode*, std::vector<int>> attached_;
};

}  // namespace

Stmt schedule_to_loops(const Schedule& schedule) {
  return LoopBuilder(schedule.state()).build();
}

std::vector<Range> computed_region(const Schedule& schedule, const Tensor& t) {
  return LoopBuilder(schedule.state()).region(schedule[t].index());
}

}  // namespace anvil::te
