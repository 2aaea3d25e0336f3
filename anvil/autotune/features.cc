// Features of one configuration: its candidate is built as measure.cc builds it (placeholders for
// the task's inputs, the op's compute, its x86 schedule with the configuration), lowered through
// storage flattening and the first simplification (LowerOptions::stop_after = "simplify"), then
// its loop nest is walked once. The loops still carry their kinds there (vectorize and unroll
// have not replaced them by code). Loop partitioning, the one pass in between, would only split
// guarded tails into copies of the nest: 4 times the IR and 80% of the time per call (conv2d_nchwc
// 8x28x28x16 -> 8x16, 3x3: 2.7 ms instead of 0.5 ms), where the guard count below says as much.
//
// The walk keeps a stack of the enclosing loops (extent, kind). At each Store it records the
// store and every Load of its value as an access, and for each access and each enclosing loop the
// access's stride along the loop's variable: the coefficient of the variable in the flattened
// index (arith::linearize; a floordiv(x, c) of a sum scales its terms' coefficients by 1/c, a
// floormod(x, c) keeps them, any other non-affine use counts as dependence with the enclosing
// coefficient). An access depends on a loop when its stride along it is not zero. From these:
//   bytes touched by the innermost k loop levels: element bytes x the product, over those of the
//     k innermost loops the index depends on (k = 1..4; all loops: the footprint over the whole
//     nest), of the values the loop gives the index: its extent, fewer where the variable
//     reaches the index only through a floordiv or floormod (a fused loop's parts);
//   reuse: iterations per element touched, the product over the enclosing loops of extent /
//     values (the extent of each loop the index does not depend on);
//   the stride along the innermost loop, and whether that loop is vectorized and the access
//     contiguous in it.
// The store with the most iterations is the main store (the reduction update of a convolution or
// matmul, the body of an elementwise kernel); the per-nest statistics describe its loop nest.
//
// Layout (every quantity that spans orders of magnitude is log2(1 + x); "lg" below):
//   0  nest.depth          loops enclosing the main store (plain count)
//   1  nest.loops          lg(For nodes in the function)
//   2  nest.parallel       lg(product of the extents of parallel loops around the main store; 0
//                          when there is none, as for the next three)
//   3  nest.vectorized     lg(product of the extents of vectorized loops around it)
//   4  nest.unrolled       lg(product of the extents of unrolled loops around it)
//   5  nest.serial         lg(product of the extents of serial loops around it)
//   6  nest.inner_extent   lg(extent of its innermost loop)
//   7  nest.iters          lg(iterations of the main store)
//   8  nest.total_iters    lg(iterations of all stores together)
//   9  nest.stores_inner   stores whose innermost loop is the main store's (plain count)
//   10 nest.body_flops     lg(float operations in the main store's value; an fma counts 2)
//   11 nest.total_flops    lg(float operations of all stores x their iterations)
//   12 nest.allocs         allocations (plain count)
//   13 nest.alloc_bytes    lg(bytes of all allocations together)
//   14 nest.stores         lg(Store statements in the function)
//   15 nest.guards         conditions around the main store (plain count: the guards of split
//                          tails, padding)
//   16 + 8b + j            buffer b (b = 0..4), each from its access with the most iterations:
//     j = 0..3 buf<b>.bytes_l1 .. bytes_l4   lg(bytes touched by the innermost 1..4 levels)
//     j = 4    buf<b>.bytes_all              lg(bytes touched by the whole nest: the footprint)
//     j = 5    buf<b>.reuse                  lg(iterations per element touched)
//     j = 6    buf<b>.stride                 lg(1 + |stride along the innermost loop|), elements
//     j = 7    buf<b>.vector                 innermost loop vectorized: 1 contiguous, 0.5 the
//                                            same element (broadcast), 0.25 strided; 0 not
//                                            vectorized
//     Buffer 0 is the one the main store writes; then the others the main store reads, then
//     every other buffer of the function, each group by footprint (largest first, then first
//     seen in the walk). Absent buffers are zeros.
//   56 + k  knob<k>                          sign(v) lg(|v|) of the k-th knob of the space in
//                                            the space's order (its default when the config does
//                                            not name it); zeros past the space's knobs
#include "anvil/autotune/features.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "anvil/arith/bound.h"
#include "anvil/arith/linear.h"
#include "anvil/ir/op.h"
#include "anvil/ir/visitor.h"
#include "anvil/lower/lower.h"
#include "anvil/support/error.h"

namespace anvil::autotune {

namespace {

using namespace ir;

constexpr int kNestFeatures = 16;
constexpr int kBuffers = 5;
constexpr int kPerBuffer = 8;
constexpr int kKnobs = 8;
constexpr int kBufferBase = kNestFeatures;
constexpr int kKnobBase = kBufferBase + kBuffers * kPerBuffer;
static_assert(kKnobBase + kKnobs == kNumFeatures, "the layout must fill kNumFeatures");

const char* const kNestNames[kNestFeatures] = {
    "nest.depth",       "nest.loops",        "nest.parallel",     "nest.vectorized",
    "nest.unrolled",    "nest.serial",       "nest.inner_extent", "nest.iters",
    "nest.total_iters", "nest.stores_inner", "nest.body_flops",   "nest.total_flops",
    "nest.allocs",      "nest.alloc_bytes",  "nest.stores",       "nest.guards"};
const char* const kBufferNames[kPerBuffer] = {"bytes_l1",  "bytes_l2", "bytes_l3", "bytes_l4",
                                              "bytes_all", "reuse",    "stride",   "vector"};

float lg(double x) {
  return static_cast<float>(std::log2(1.0 + std::max(0.0, x)));
}

// ---------------------------------------------------------------------------------------------
// Strides of an index along variables

// How an index moves with one loop variable: its coefficient, and how many distinct values it
// takes as the variable runs over its loop (a floordiv by c divides that, a floormod by c caps
// it at c: a fused loop's variable reaches each part of the index through some of its values).
// The index depends on the variable when the coefficient is not zero (floordiv by more than the
// coefficient gives a fraction, not zero).
struct Dependence {
  const Variable* var;
  double stride;
  double distinct;
};
// Few variables per index: a small vector beats a hash map.
using Strides = std::vector<Dependence>;

// A variable reached through several atoms: the strides add, the distinct values multiply (the
// parts of a fused index vary independently); the product is capped by the loop's extent where
// it is used.
void merge(Strides& s, const Variable* var, double stride, double distinct) {
  for (Dependence& d : s) {
    if (d.var == var) {
      d.stride += stride;
      d.distinct *= distinct;
      return;
    }
  }
  s.push_back({var, stride, distinct});
}

const Dependence* find_stride(const Strides& s, const Variable* var) {
  for (const Dependence& d : s)
    if (d.var == var) return &d;
  return nullptr;
}

struct Loop {
  const For* node;
  int64_t extent;
  ForKind kind;
};

// Let-bound variables (LetStmt) as strides along the loop variables their values use.
using LetStrides = std::unordered_map<const Variable*, Strides>;

class StrideCollector {
 public:
  StrideCollector(const LetStrides& lets, const std::vector<Loop>& loops)
      : lets_(lets), loops_(loops) {}

  // Adds scale x (the strides of e) to out.
  void collect(const Expr& e, double scale, Strides& out) const {
    if (std::optional<arith::LinearSum> sum = arith::linearize(e)) {
      for (const arith::LinearTerm& t : sum->terms)
        atom(t.atom, scale * static_cast<double>(t.coeff), out);
      return;
    }
    atom(e, scale, out);
  }

 private:
  double extent_of(const Variable* v) const {
    for (const Loop& l : loops_)
      if (l.node->var.get() == v) return static_cast<double>(l.extent);
    return 1;
  }

  void atom(const Expr& e, double scale, Strides& out) const {
    if (const Variable* v = e.as<Variable>()) {
      auto it = lets_.find(v);
      if (it == lets_.end()) {
        merge(out, v, scale, extent_of(v));
      } else {
        for (const Dependence& d : it->second) merge(out, d.var, scale * d.stride, d.distinct);
      }
      return;
    }
    if (const Cast* c = e.as<Cast>()) return collect(c->value, scale, out);
    const Expr* num = nullptr;
    std::optional<int64_t> divisor;
    bool div = false;
    if (const FloorDiv* d = e.as<FloorDiv>()) num = &d->a, divisor = as_const_int(d->b), div = true;
    if (const TruncDiv* d = e.as<TruncDiv>()) num = &d->a, divisor = as_const_int(d->b), div = true;
    if (const FloorMod* m = e.as<FloorMod>()) num = &m->a, divisor = as_const_int(m->b);
    if (const TruncMod* m = e.as<TruncMod>()) num = &m->a, divisor = as_const_int(m->b);
    if (num && divisor && *divisor > 0) {
      const double c = static_cast<double>(*divisor);
      Strides inner;
      collect(*num, 1.0, inner);
      for (const Dependence& d : inner) {
        if (div) {
          double distinct = std::min(d.distinct, std::ceil(d.distinct * std::fabs(d.stride) / c));
          merge(out, d.var, scale * d.stride / c, std::max(1.0, distinct));
        } else {
          merge(out, d.var, scale * d.stride, std::min(d.distinct, c));
        }
      }
      return;
    }
    // Anything else (min, max, select, a product of variables, a load): each variable it uses
    // moves it by about the enclosing coefficient.
    struct Uses final : IRVisitor {
      using IRVisitor::visit;
      const StrideCollector* self;
      double scale;
      Strides* out;
      void visit(const Variable* v) override { self->atom(Expr(v), scale, *out); }
    } uses;
    uses.self = this;
    uses.scale = scale;
    uses.out = &out;
    uses.visit(e);
  }

  const LetStrides& lets_;
  const std::vector<Loop>& loops_;
};

// ---------------------------------------------------------------------------------------------
// The walk

// One access of a buffer at a store, reduced to its features.
struct Access {
  const Variable* buffer;  // the buffer's data variable: flattened views share it
  size_t store;            // the index of its store in NestWalker::stores
  double iterations;
  float values[kPerBuffer];
};

struct StoreInfo {
  const Variable* buffer;
  double iterations;
  double flops;
  const For* innermost;
  int depth, guards;
  double parallel, vectorized, unrolled, serial, inner_extent;
};

// Float operations of an expression (an fma counts 2; loads and casts none).
class FlopCounter final : public IRVisitor {
 public:
  using IRVisitor::visit;
  double flops = 0;

 private:
  void count(const BaseExprNode* op) {
    if (op->type.is_float()) flops += op->type.lanes();
  }
  void visit(const Add* op) override {
    count(op);
    IRVisitor::visit(op);
  }
  void visit(const Sub* op) override {
    count(op);
    IRVisitor::visit(op);
  }
  void visit(const Mul* op) override {
    count(op);
    IRVisitor::visit(op);
  }
  void visit(const Div* op) override {
    count(op);
    IRVisitor::visit(op);
  }
  void visit(const Min* op) override {
    count(op);
    IRVisitor::visit(op);
  }
  void visit(const Max* op) override {
    count(op);
    IRVisitor::visit(op);
  }
  void visit(const Call* op) override {
    count(op);
    if (op->op == Intrinsic::kFma) count(op);
    IRVisitor::visit(op);
  }
};

class NestWalker final : public IRVisitor {
 public:
  using IRVisitor::visit;

  std::vector<StoreInfo> stores;
  std::vector<Access> accesses;
  std::vector<const Variable*> buffer_order;  // first seen in the walk
  int loops = 0, allocs = 0;
  double alloc_bytes = 0;

 private:
  void visit(const For* op) override {
    ++loops;
    int64_t extent = 1;
    if (std::optional<int64_t> e = as_const_int(op->extent)) {
      extent = *e;
    } else {
      // A region that depends on outer loops: its largest value.
      arith::VarBounds bounds;
      for (const Loop& l : stack_) {
        int64_t min = as_const_int(l.node->min).value_or(0);
        bounds[l.node->var.get()] = arith::IntBounds::from_range(min, l.extent);
      }
      arith::IntBounds b = arith::bounds_of(op->extent, bounds);
      extent = b.has_upper() ? b.max : 1;
    }
    stack_.push_back({op, std::max<int64_t>(1, extent), op->kind});
    visit(op->body);
    stack_.pop_back();
  }

  void visit(const LetStmt* op) override {
    Strides s;
    StrideCollector(lets_, stack_).collect(op->value, 1.0, s);
    lets_[op->var.get()] = std::move(s);
    visit(op->body);
  }

  void visit(const Allocate* op) override {
    ++allocs;
    double elems = 1;
    for (const Expr& d : op->buffer->shape)
      elems *= static_cast<double>(as_const_int(d).value_or(1));
    alloc_bytes += elems * op->buffer->dtype.bytes() * op->buffer->dtype.lanes();
    visit(op->body);
  }

  void visit(const IfThenElse* op) override {
    ++guards_;
    visit(op->then_case);
    visit(op->else_case);
    --guards_;
  }

  void visit(const Store* op) override {
    StoreInfo info{};
    info.buffer = op->buffer->data.get();
    info.iterations = 1;
    // Products of the extents of each kind of loop (0 when there is none).
    auto times = [](double& product, double e) { product = product == 0 ? e : product * e; };
    for (const Loop& l : stack_) {
      double e = static_cast<double>(l.extent);
      info.iterations *= e;
      switch (l.kind) {
        case ForKind::kParallel:
        case ForKind::kThreadBinding:
          times(info.parallel, e);
          break;
        case ForKind::kVectorized:
          times(info.vectorized, e);
          break;
        case ForKind::kUnrolled:
          times(info.unrolled, e);
          break;
        case ForKind::kSerial:
          times(info.serial, e);
          break;
      }
    }
    info.innermost = stack_.empty() ? nullptr : stack_.back().node;
    info.inner_extent = stack_.empty() ? 1 : static_cast<double>(stack_.back().extent);
    info.depth = static_cast<int>(stack_.size());
    info.guards = guards_;
    FlopCounter flops;
    flops.visit(op->value);
    info.flops = flops.flops;
    stores.push_back(info);

    add_access(op->buffer, op->indices, info.iterations);
    struct Loads final : IRVisitor {
      using IRVisitor::visit;
      NestWalker* self;
      double iterations;
      void visit(const Load* l) override {
        self->add_access(l->buffer, l->indices, iterations);
        IRVisitor::visit(l);
      }
    } loads;
    loads.self = this;
    loads.iterations = info.iterations;
    loads.visit(op->value);
    for (const Expr& index : op->indices) loads.visit(index);
  }

  void add_access(const Buffer& buffer, const std::vector<Expr>& indices, double iterations) {
    Strides strides;
    StrideCollector collector(lets_, stack_);
    // Flattened accesses have one index; a multi-dimensional one (stop_after before flatten)
    // weighs each index by the compact row-major stride of its dimension.
    double scale = 1;
    for (size_t i = indices.size(); i-- > 0;) {
      collector.collect(indices[i], scale, strides);
      if (i < buffer->shape.size())
        scale *= static_cast<double>(as_const_int(buffer->shape[i]).value_or(1));
    }
    Access a{};
    a.buffer = buffer->data.get();
    a.store = stores.size() - 1;
    a.iterations = iterations;
    const double elem = buffer->dtype.bytes() * buffer->dtype.lanes();
    const size_t n = stack_.size();
    double touched = elem, reuse = 1;
    for (size_t k = 1; k <= n; ++k) {
      const Loop& l = stack_[n - k];
      const Dependence* d = find_stride(strides, l.node->var.get());
      const double extent = static_cast<double>(l.extent);
      const double values = d && d->stride != 0 ? std::clamp(d->distinct, 1.0, extent) : 1.0;
      touched *= values;
      reuse *= extent / values;
      if (k <= 4) a.values[k - 1] = lg(touched);
    }
    for (size_t k = n + 1; k <= 4; ++k) a.values[k - 1] = lg(touched);
    a.values[4] = lg(touched);
    a.values[5] = lg(reuse);
    if (n > 0) {
      const Dependence* d = find_stride(strides, stack_.back().node->var.get());
      double stride = d ? std::fabs(d->stride) : 0;
      a.values[6] = lg(stride);
      if (stack_.back().kind == ForKind::kVectorized)
        a.values[7] = stride == 1 ? 1.0f : stride == 0 ? 0.5f : 0.25f;
    }
    if (std::find(buffer_order.begin(), buffer_order.end(), a.buffer) == buffer_order.end())
      buffer_order.push_back(a.buffer);
    accesses.push_back(a);
  }

  std::vector<Loop> stack_;
  LetStrides lets_;
  int guards_ = 0;
};

}  // namespace

// The features of a lowered function's loop nest with the knob values of `config` in `space`.
// Declared here until features.h declares it; tests use it on hand-built schedules.
std::vector<float> loop_nest_features(const Stmt& body, const ops::ConfigSpace& space,
                                      const ops::Config& config) {
  std::vector<float> f(kNumFeatures, 0.0f);
  NestWalker w;
  w.visit(body);

  if (!w.stores.empty()) {
    size_t main = 0;
    double total_iters = 0, total_flops = 0;
    for (size_t i = 0; i < w.stores.size(); ++i) {
      if (w.stores[i].iterations > w.stores[main].iterations) main = i;
      total_iters += w.stores[i].iterations;
      total_flops += w.stores[i].iterations * w.stores[i].flops;
    }
    const StoreInfo& m = w.stores[main];
    int stores_inner = 0;
    for (const StoreInfo& s : w.stores) stores_inner += s.innermost == m.innermost;
    f[0] = static_cast<float>(m.depth);
    f[1] = lg(w.loops);
    f[2] = lg(m.parallel);
    f[3] = lg(m.vectorized);
    f[4] = lg(m.unrolled);
    f[5] = lg(m.serial);
    f[6] = lg(m.inner_extent);
    f[7] = lg(m.iterations);
    f[8] = lg(total_iters);
    f[9] = static_cast<float>(stores_inner);
    f[10] = lg(m.flops);
    f[11] = lg(total_flops);
    f[12] = static_cast<float>(w.allocs);
    f[13] = lg(w.alloc_bytes);
    f[14] = lg(static_cast<double>(w.stores.size()));
    f[15] = static_cast<float>(m.guards);

    // Each buffer's hottest access (ties: the first), whether the main store touches it.
    struct Slot {
      const Access* access = nullptr;
      int group = 2;  // 0: written by the main store, 1: read by it, 2: elsewhere
      size_t seen = 0;
    };
    std::vector<Slot> slots(w.buffer_order.size());
    for (size_t b = 0; b < w.buffer_order.size(); ++b) slots[b].seen = b;
    auto slot_of = [&](const Variable* buffer) -> Slot& {
      size_t b = static_cast<size_t>(
          std::find(w.buffer_order.begin(), w.buffer_order.end(), buffer) - w.buffer_order.begin());
      return slots[b];
    };
    for (const Access& acc : w.accesses) {
      Slot& s = slot_of(acc.buffer);
      if (!s.access || acc.iterations > s.access->iterations) s.access = &acc;
      if (acc.store == main) s.group = std::min(s.group, acc.buffer == m.buffer ? 0 : 1);
    }
    std::sort(slots.begin(), slots.end(), [](const Slot& a, const Slot& b) {
      if (a.group != b.group) return a.group < b.group;
      if (a.access->values[4] != b.access->values[4])
        return a.access->values[4] > b.access->values[4];
      return a.seen < b.seen;
    });
    for (size_t b = 0; b < slots.size() && b < static_cast<size_t>(kBuffers); ++b) {
      for (int j = 0; j < kPerBuffer; ++j)
        f[static_cast<size_t>(kBufferBase + static_cast<int>(b) * kPerBuffer + j)] =
            slots[b].access->values[j];
    }
  }

  for (size_t k = 0; k < space.size() && k < static_cast<size_t>(kKnobs); ++k) {
    const ops::Knob& knob = space[k];
    int64_t v = ops::knob(config, knob.name, knob.values.empty() ? 0 : knob.values[0]);
    double mag = lg(std::fabs(static_cast<double>(v)));
    f[static_cast<size_t>(kKnobBase) + k] = static_cast<float>(v < 0 ? -mag : mag);
  }
  return f;
}

std::string feature_name(int i) {
  ANVIL_CHECK(i >= 0 && i < kNumFeatures, "feature_name: index ", i, " is not in [0, ",
              kNumFeatures, ")");
  if (i < kBufferBase) return kNestNames[i];
  if (i < kKnobBase) {
    int b = (i - kBufferBase) / kPerBuffer;
    return str("buf", b, ".", kBufferNames[(i - kBufferBase) % kPerBuffer]);
  }
  return str("knob", i - kKnobBase);
}

std::vector<float> extract_features(const Task& task, const ops::Config& config) {
  try {
    const Target target = Target::parse(task.target);
    LowerOptions options;
    options.stop_after = "simplify";
    ir::LoweredFunc f = lower_candidate(task, target, config, nullptr, options);
    return loop_nest_features(f.body, task.space(), config);
  } catch (const std::exception& e) {
    std::string knobs;
    for (const auto& [name, value] : config)
      knobs += str(knobs.empty() ? "" : ", ", name, "=", value);
    ANVIL_FAIL("features of task ", task.str(), " (", task.target, ") with config {", knobs,
               "}: ", e.what());
  }
}

}  // namespace anvil::autotune
