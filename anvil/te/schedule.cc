#include "anvil/te/schedule.h"

#include <algorithm>

#include "anvil/ir/op.h"
#include "anvil/ir/printer.h"
#include "anvil/ir/substitute.h"
#include "anvil/ir/visitor.h"
#include "anvil/support/error.h"

namespace anvil::te {

using namespace ir;

namespace {

StageState make_stage(const Tensor& t) {
  StageState s;
  s.tensor = t;
  s.body = t->body;
  s.axis = t->axis;
  s.reduce_axis = t->reduce_axis;
  s.leaf = t->axis;
  s.leaf.insert(s.leaf.end(), t->reduce_axis.begin(), t->reduce_axis.end());
  return s;
}

std::string leaf_names(const std::vector<IterVar>& leaf) {
  std::string names;
  for (const IterVar& iv : leaf) names += (names.empty() ? "" : ", ") + iv->var.name();
  return names;
}

// Replaces loads of one buffer by loads of another (same indices).
class ReplaceBuffer : public IRMutator {
 public:
  ReplaceBuffer(const BufferNode* from, Buffer to) : from_(from), to_(std::move(to)) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Expr visit(const Load* op) override {
    Expr e = IRMutator::visit(op);
    const Load* load = e.as<Load>();
    if (load->buffer.get() != from_) return e;
    return Load::make(to_, load->indices, load->predicate);
  }

 private:
  const BufferNode* from_;
  Buffer to_;
};

// Fresh data-parallel axes over `shape`, named after `like`.
std::vector<IterVar> fresh_axes(const std::vector<IterVar>& like) {
  std::vector<IterVar> out;
  for (const IterVar& iv : like) {
    out.push_back(IterVar::make(Var(iv->var.name(), iv->var.type()), iv->dom, IterKind::kDataPar));
  }
  return out;
}

// Data-parallel axes i, i1, i2, ... over a shape.
std::vector<IterVar> axes_over(const std::vector<Expr>& shape) {
  std::vector<IterVar> axis;
  for (size_t d = 0; d < shape.size(); ++d) {
    Var v(d == 0 ? "i" : "i" + std::to_string(d), shape[d].type());
    axis.push_back(
        IterVar::make(v, Range::make(make_zero(v.type()), shape[d]), IterKind::kDataPar));
  }
  return axis;
}

std::vector<Tensor> inputs_of(const Tensor& t) {
  std::vector<Tensor> out;
  for (const auto& input : t->inputs) out.emplace_back(input.get());
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Stage

int Stage::index() const {
  for (size_t i = 0; i < s_->stages.size(); ++i) {
    if (s_->stages[i].tensor.get() == tensor_) return static_cast<int>(i);
  }
  ANVIL_UNREACHABLE("a stage outlived its tensor's place in the schedule");
}

size_t Stage::leaf_position(const IterVar& iv, const char* primitive) const {
  const StageState& s = state();
  ANVIL_CHECK(iv.defined(), primitive, " on stage '", name(), "': the axis is undefined");
  for (size_t i = 0; i < s.leaf.size(); ++i) {
    if (s.leaf[i].same_as(iv)) return i;
  }
  ANVIL_FAIL(primitive, ": axis '", iv->var.name(), "' is not a loop of stage '", name(),
             "' (its loops are ", leaf_names(s.leaf), ")");
}

std::pair<IterVar, IterVar> Stage::split(const IterVar& parent, int64_t factor) {
  size_t pos = leaf_position(parent, "split");
  ANVIL_CHECK(factor > 0, "split of '", parent->var.name(), "' in stage '", name(),
              "': the factor must be positive, not ", factor);
  DataType t = parent->var.type();
  IterVar outer = IterVar::make(Var(parent->var.name() + ".outer", t), Range(), parent->kind);
  IterVar inner = IterVar::make(Var(parent->var.name() + ".inner", t), Range(), parent->kind);
  StageState& s = state();
  s.relations.push_back(SplitRelation{parent, outer, inner, factor, 0});
  s.leaf[pos] = outer;
  s.leaf.insert(s.leaf.begin() + static_cast<std::ptrdiff_t>(pos) + 1, inner);
  return {outer, inner};
}

std::pair<IterVar, IterVar> Stage::split_nparts(const IterVar& parent, int64_t nparts) {
  size_t pos = leaf_position(parent, "split_nparts");
  ANVIL_CHECK(nparts > 0, "split_nparts of '", parent->var.name(), "' in stage '", name(),
              "': the number of parts must be positive, not ", nparts);
  DataType t = parent->var.type();
  IterVar outer = IterVar::make(Var(parent->var.name() + ".outer", t), Range(), parent->kind);
  IterVar inner = IterVar::make(Var(parent->var.name() + ".inner", t), Range(), parent->kind);
  StageState& s = state();
  s.relations.push_back(SplitRelation{parent, outer, inner, 0, nparts});
  s.leaf[pos] = outer;
  s.leaf.insert(s.leaf.begin() + static_cast<std::ptrdiff_t>(pos) + 1, inner);
  return {outer, inner};
}

std::vector<IterVar> Stage::tile(const IterVar& x, const IterVar& y, int64_t x_factor,
                                 int64_t y_factor) {
  auto [xo, xi] = split(x, x_factor);
  auto [yo, yi] = split(y, y_factor);
  reorder({xo, yo, xi, yi});
  return {xo, yo, xi, yi};
}

IterVar Stage::fuse(const IterVar& outer, const IterVar& inner) {
  size_t po = leaf_position(outer, "fuse"), pi = leaf_position(inner, "fuse");
  ANVIL_CHECK(pi == po + 1, "fuse in stage '", name(), "': '", outer->var.name(),
              "' must immediately enclose '", inner->var.name(), "' (loop order ",
              leaf_names(state().leaf), ")");
  ANVIL_CHECK(outer->kind == inner->kind, "fuse in stage '", name(),
              "': cannot fuse a reduction axis with a data-parallel one ('", outer->var.name(),
              "', '", inner->var.name(), "')");
  IterVar fused =
      IterVar::make(Var(outer->var.name() + "." + inner->var.name() + ".fused", outer->var.type()),
                    Range(), outer->kind);
  StageState& s = state();
  s.relations.push_back(FuseRelation{outer, inner, fused});
  s.leaf[po] = fused;
  s.leaf.erase(s.leaf.begin() + static_cast<std::ptrdiff_t>(pi));
  return fused;
}

void Stage::reorder(const std::vector<IterVar>& order) {
  std::vector<size_t> positions;
  for (const IterVar& iv : order) {
    size_t p = leaf_position(iv, "reorder");
    ANVIL_CHECK(std::find(positions.begin(), positions.end(), p) == positions.end(),
                "reorder in stage '", name(), "': axis '", iv->var.name(), "' appears twice");
    positions.push_back(p);
  }
  std::vector<size_t> slots = positions;
  std::sort(slots.begin(), slots.end());
  StageState& s = state();
  std::vector<IterVar> leaf = s.leaf;
  for (size_t i = 0; i < order.size(); ++i) leaf[slots[i]] = order[i];
  s.leaf = std::move(leaf);
}

void Stage::compute_at(const Stage& parent, const IterVar& scope) {
  ANVIL_CHECK(parent.s_ == s_, "compute_at: stage '", parent.name(),
              "' belongs to another schedule");
  parent.leaf_position(scope, "compute_at");
  // A consumer reads this stage directly or through other stages (which must end up inlined;
  // schedule_to_loops checks that once inlining is done).
  std::vector<bool> reaches(s_->stages.size(), false);
  const int self = index(), target = parent.index();
  reaches[static_cast<size_t>(self)] = true;
  for (size_t j = static_cast<size_t>(self) + 1; j < s_->stages.size(); ++j) {
    for (size_t p = static_cast<size_t>(self); p < j && !reaches[j]; ++p) {
      reaches[j] =
          reaches[p] && reads_buffer(s_->stages[j].body, s_->stages[p].tensor->buffer.get());
    }
  }
  ANVIL_CHECK(target > self && reaches[static_cast<size_t>(target)], "compute_at: stage '", name(),
              "' must be computed inside a consumer, but '", parent.name(), "' does not read it");
  ANVIL_CHECK(!state().is_output, "compute_at: '", name(),
              "' is an output of the schedule; outputs are computed at the top level");
  StageState& s = state();
  s.attach = AttachKind::kScope;
  s.attach_stage = target;
  s.attach_axis = scope;
}

void Stage::compute_inline() {
  StageState& s = state();
  ANVIL_CHECK(s.tensor.is_compute(), "compute_inline: '", name(), "' is a placeholder");
  ANVIL_CHECK(s.reduce_axis.empty(), "compute_inline: '", name(),
              "' is a reduction and cannot be inlined");
  ANVIL_CHECK(!s.is_output, "compute_inline: '", name(), "' is an output of the schedule");
  s.attach = AttachKind::kInline;
}

void Stage::compute_root() {
  StageState& s = state();
  s.attach = AttachKind::kRoot;
  s.attach_stage = -1;
  s.attach_axis = IterVar();
}

void Stage::annotate(const IterVar& axis, ForKind kind, const char* primitive) {
  leaf_position(axis, primitive);
  state().attrs[axis.get()].kind = kind;
}

void Stage::vectorize(const IterVar& axis) {
  annotate(axis, ForKind::kVectorized, "vectorize");
}
void Stage::unroll(const IterVar& axis) {
  annotate(axis, ForKind::kUnrolled, "unroll");
}
void Stage::parallel(const IterVar& axis) {
  ANVIL_CHECK(axis.defined() && axis->kind != IterKind::kReduce, "parallel: axis '",
              axis.defined() ? axis->var.name() : "?", "' of stage '", name(),
              "' is a reduction axis; parallel reductions race");
  annotate(axis, ForKind::kParallel, "parallel");
}

void Stage::bind(const IterVar& axis, const std::string& thread_tag) {
  static const char* const kTags[] = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z",
                                      "threadIdx.x", "threadIdx.y", "threadIdx.z",
                                      "vthread.x",   "vthread.y",   "vthread.z"};
  ANVIL_CHECK(std::find(std::begin(kTags), std::end(kTags), thread_tag) != std::end(kTags),
              "bind: '", thread_tag, "' on stage '", name(),
              "' is not a GPU thread index (blockIdx.x/y/z, threadIdx.x/y/z, vthread.x/y/z)");
  ANVIL_CHECK(axis.defined() && axis->kind != IterKind::kReduce, "bind: axis '",
              axis.defined() ? axis->var.name() : "?", "' of stage '", name(),
              "' is a reduction axis; threads reducing into one element would race (rfactor the "
              "reduction first)");
  for (const auto& [iv, attr] : state().attrs) {
    ANVIL_CHECK(iv == axis.get() || attr.thread_tag != thread_tag, "bind: stage '", name(),
                "' binds two loops to ", thread_tag, " ('", iv->var.name(), "' and '",
                axis->var.name(), "')");
  }
  annotate(axis, ForKind::kThreadBinding, "bind");
  state().attrs[axis.get()].thread_tag = thread_tag;
}

void Stage::double_buffer() {
  ANVIL_CHECK(
      state().scope == MemoryScope::kShared, "double_buffer: stage '", name(), "' is in ",
      memory_scope_name(state().scope),
      " memory; only a shared-memory stage (cache_read into shared) can be double-buffered");
  state().double_buffer = true;
}

void Stage::tensorize(const IterVar& axis, const TensorIntrin& intrin) {
  leaf_position(axis, "tensorize");
  ANVIL_CHECK(state().body.as<ir::Reduce>(), "tensorize: stage '", name(), "' is not a reduction; ",
              intrin.name, " declares one");
  state().tensorize_axis = axis;
  state().tensorize_intrin = std::make_shared<const TensorIntrin>(intrin);
}

void Stage::set_scope(MemoryScope scope) {
  ANVIL_CHECK(!state().is_output || scope == MemoryScope::kGlobal, "set_scope: '", name(),
              "' is an output of the schedule; it stays in global memory");
  state().scope = scope;
}

void Stage::pragma(const IterVar& axis, const std::string& key, Expr value) {
  leaf_position(axis, "pragma");
  ANVIL_CHECK(!key.empty(), "pragma on stage '", name(), "': empty key");
  state().attrs[axis.get()].pragmas.emplace_back(key, std::move(value));
}

void Stage::storage_align(const IterVar& axis, int64_t factor, int64_t offset) {
  StageState& s = state();
  int dim = -1;
  for (size_t d = 0; d < s.axis.size(); ++d) {
    if (s.axis[d].same_as(axis)) dim = static_cast<int>(d);
  }
  ANVIL_CHECK(dim >= 0, "storage_align: '", axis.defined() ? axis->var.name() : "?",
              "' is not a data-parallel axis of stage '", name(), "'");
  ANVIL_CHECK(factor > 0 && offset >= 0 && offset < factor, "storage_align on stage '", name(),
              "': need factor > 0 and 0 <= offset < factor, got factor ", factor, ", offset ",
              offset);
  s.aligns.push_back({dim, factor, offset});
}

// ---------------------------------------------------------------------------------------------
// Schedule

Schedule::Schedule(std::vector<Tensor> outputs) : s_(std::make_shared<ScheduleState>()) {
  ANVIL_CHECK(!outputs.empty(), "Schedule: no output tensors");
  s_->outputs = outputs;
  for (const Tensor& t : topological_order(outputs)) {
    StageState st = make_stage(t);
    for (const Tensor& o : outputs) st.is_output |= o.same_as(t);
    s_->stages.push_back(std::move(st));
  }
}

int Schedule::index_of(const Tensor& t, const char* primitive) const {
  ANVIL_CHECK(t.defined(), primitive, ": the tensor is undefined");
  for (size_t i = 0; i < s_->stages.size(); ++i) {
    if (s_->stages[i].tensor.same_as(t)) return static_cast<int>(i);
  }
  ANVIL_FAIL(primitive, ": tensor '", t.name(), "' is not part of this schedule");
}

Stage Schedule::operator[](const Tensor& t) const {
  return Stage(s_, s_->stages[static_cast<size_t>(index_of(t, "stage"))].tensor.get());
}

std::vector<Stage> Schedule::stages() const {
  std::vector<Stage> out;
  for (const StageState& st : s_->stages) out.emplace_back(s_, st.tensor.get());
  return out;
}

namespace {

// Inserts a stage at `pos`, shifting the attach indices that point at or past it.
void insert_stage(ScheduleState& s, size_t pos, StageState stage) {
  for (StageState& other : s.stages) {
    if (other.attach_stage >= static_cast<int>(pos)) ++other.attach_stage;
  }
  s.stages.insert(s.stages.begin() + static_cast<std::ptrdiff_t>(pos), std::move(stage));
}

}  // namespace

Tensor Schedule::cache_read(const Tensor& t, MemoryScope scope,
                            const std::vector<Tensor>& readers) {
  int producer = index_of(t, "cache_read");
  ANVIL_CHECK(!readers.empty(), "cache_read of '", t.name(), "': no readers given");
  std::vector<int> reader_index;
  for (const Tensor& r : readers) {
    int i = index_of(r, "cache_read");
    ANVIL_CHECK(reads_buffer(s_->stages[static_cast<size_t>(i)].body, t->buffer.get()),
                "cache_read: '", r.name(), "' does not read '", t.name(), "'");
    reader_index.push_back(i);
  }
  std::string name = t.name() + "." + memory_scope_name(scope);
  std::vector<IterVar> axis = axes_over(t->shape);
  std::vector<Expr> indices;
  for (const IterVar& iv : axis) indices.push_back(iv->var);
  Tensor cache = make_compute(name, t->shape, axis, Load::make(t->buffer, indices), {t});
  for (int i : reader_index) {
    StageState& r = s_->stages[static_cast<size_t>(i)];
    r.body = ReplaceBuffer(t->buffer.get(), cache->buffer).mutate(r.body);
  }
  StageState stage = make_stage(cache);
  stage.scope = scope;
  insert_stage(*s_, static_cast<size_t>(producer) + 1, std::move(stage));
  return cache;
}

Tensor Schedule::cache_write(const Tensor& t, MemoryScope scope) {
  int index = index_of(t, "cache_write");
  StageState& old = s_->stages[static_cast<size_t>(index)];
  ANVIL_CHECK(t.is_compute(), "cache_write: '", t.name(), "' is a placeholder");
  ANVIL_CHECK(old.relations.empty() && old.attrs.empty(), "cache_write of '", t.name(),
              "' must come before its stage is split, fused or annotated");
  std::string name = t.name() + "." + memory_scope_name(scope);
  std::vector<IterVar> axis = fresh_axes(old.axis);
  VarMap map;
  for (size_t d = 0; d < axis.size(); ++d) map[old.axis[d]->var.get()] = axis[d]->var;
  Tensor cache = make_compute(name, t->shape, axis, substitute(old.body, map), inputs_of(t));
  StageState stage = make_stage(cache);
  stage.scope = scope;
  // t now copies from the cache, over its own axes.
  std::vector<Expr> indices;
  for (const IterVar& iv : old.axis) indices.push_back(iv->var);
  old.body = Load::make(cache->buffer, indices);
  old.reduce_axis.clear();
  old.leaf = old.axis;
  insert_stage(*s_, static_cast<size_t>(index), std::move(stage));
  return cache;
}

Tensor Schedule::rfactor(const Tensor& t, const IterVar& axis, FactorAt at) {
  int index = index_of(t, "rfactor");
  StageState& st = s_->stages[static_cast<size_t>(index)];
  // Where the factored dimension goes among the new stage's dimensions.
  const size_t pos = at == FactorAt::kFirst ? 0 : st.axis.size();
  const Reduce* reduce = st.body.as<Reduce>();
  ANVIL_CHECK(reduce, "rfactor: '", t.name(), "' is not a reduction");
  ANVIL_CHECK(axis.defined() && axis->kind == IterKind::kReduce &&
                  std::any_of(st.leaf.begin(), st.leaf.end(),
                              [&](const IterVar& l) { return l.same_as(axis); }),
              "rfactor: '", axis.defined() ? axis->var.name() : "?",
              "' is not a reduction loop of stage '", t.name(), "'");
  // Extents of the reduction's iteration variables, and the roots' values in the leaves.
  std::unordered_map<const IterVarNode*, int64_t> extent;
  for (const IterVar& r : st.reduce_axis) {
    std::optional<int64_t> n = as_const_int(r->dom.extent);
    ANVIL_CHECK(n && is_zero(r->dom.min), "rfactor on '", t.name(), "': reduction axis '",
                r->var.name(), "' needs a constant extent starting at 0");
    extent[r.get()] = *n;
  }
  for (const Relation& rel : st.relations) {
    const SplitRelation* sp = std::get_if<SplitRelation>(&rel);
    ANVIL_CHECK(sp && sp->parent->kind == IterKind::kReduce, "rfactor on '", t.name(),
                "': only splits of reduction axes may precede it");
    int64_t n = extent.at(sp->parent.get());
    int64_t f = sp->factor > 0 ? sp->factor : (n + sp->nparts - 1) / sp->nparts;
    extent[sp->inner.get()] = f;
    extent[sp->outer.get()] = (n + f - 1) / f;
  }
  // Fresh variables: the new stage's axes, `axis` as its first or last dimension, the other
  // reduction leaves as its reduction axes.
  std::vector<IterVar> new_axis = fresh_axes(st.axis);
  Var factored(axis->var.name(), axis->var.type());
  new_axis.insert(new_axis.begin() + static_cast<std::ptrdiff_t>(pos),
                  IterVar::make(factored, Range::make(0, static_cast<int>(extent.at(axis.get()))),
                                IterKind::kDataPar));
  VarMap leaf_value;
  std::vector<IterVar> new_reduce;
  for (const IterVar& l : st.leaf) {
    if (l->kind != IterKind::kReduce) continue;
    if (l.same_as(axis)) {
      leaf_value[l->var.get()] = factored;
    } else {
      IterVar r =
          IterVar::make(Var(l->var.name(), l->var.type()),
                        Range::make(0, static_cast<int>(extent.at(l.get()))), IterKind::kReduce);
      new_reduce.push_back(r);
      leaf_value[l->var.get()] = r->var;
    }
  }
  std::unordered_map<const IterVarNode*, Expr> value;
  for (const IterVar& l : st.leaf) {
    if (l->kind == IterKind::kReduce) value[l.get()] = leaf_value.at(l->var.get());
  }
  Expr guard = make_bool(true);
  for (auto it = st.relations.rbegin(); it != st.relations.rend(); ++it) {
    const SplitRelation& sp = std::get<SplitRelation>(*it);
    Expr v = value.at(sp.outer.get()) * static_cast<int>(extent.at(sp.inner.get())) +
             value.at(sp.inner.get());
    value[sp.parent.get()] = v;
    if (extent.at(sp.outer.get()) * extent.at(sp.inner.get()) != extent.at(sp.parent.get())) {
      guard = guard && (v < static_cast<int>(extent.at(sp.parent.get())));
    }
  }
  VarMap map;
  for (size_t d = 0; d < st.axis.size(); ++d)
    map[st.axis[d]->var.get()] = new_axis[d < pos ? d : d + 1]->var;
  for (const IterVar& r : st.reduce_axis) map[r->var.get()] = value.at(r.get());
  Expr source = substitute(reduce->source, map);
  Expr condition = substitute(reduce->condition, map) && guard;
  Expr body = new_reduce.empty()
                  ? select(condition, source, reduce->combiner->identity)
                  : Expr(Reduce::make(reduce->combiner, source, new_reduce, condition));
  std::vector<Expr> shape = t->shape;
  shape.insert(shape.begin() + static_cast<std::ptrdiff_t>(pos),
               Expr(static_cast<int>(extent.at(axis.get()))));
  Tensor rf = make_compute(t.name() + ".rf", shape, new_axis, body, inputs_of(t));

  // t now reduces the partial results over one axis.
  IterVar kv =
      IterVar::make(Var(axis->var.name() + ".v", axis->var.type()),
                    Range::make(0, static_cast<int>(extent.at(axis.get()))), IterKind::kReduce);
  std::vector<Expr> indices;
  for (const IterVar& iv : st.axis) indices.push_back(iv->var);
  indices.insert(indices.begin() + static_cast<std::ptrdiff_t>(pos), kv->var);
  st.body = Reduce::make(reduce->combiner, Load::make(rf->buffer, indices), {kv});
  st.reduce_axis = {kv};
  st.relations.clear();
  st.leaf = st.axis;
  st.leaf.push_back(kv);
  for (auto it = st.attrs.begin(); it != st.attrs.end();) {
    it = it->first->kind == IterKind::kReduce ? st.attrs.erase(it) : std::next(it);
  }
  insert_stage(*s_, static_cast<size_t>(index), make_stage(rf));
  return rf;
}

}  // namespace anvil::te
