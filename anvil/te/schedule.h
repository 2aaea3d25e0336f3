// Schedules: the loop structure of each tensor-expression stage, separate from what it computes.
// A Schedule holds one Stage per tensor (producers first); each primitive checks its arguments
// and refuses with an error naming the stage and the axis.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "anvil/ir/stmt.h"
#include "anvil/te/tensor.h"
#include "anvil/te/tensor_intrin.h"

namespace anvil::te {

// parent = outer * factor + inner (one of factor and nparts is given; the other derives).
struct SplitRelation {
  IterVar parent, outer, inner;
  int64_t factor = 0;
  int64_t nparts = 0;
};
// fused = outer * extent(inner) + inner.
struct FuseRelation {
  IterVar outer, inner, fused;
};
using Relation = std::variant<SplitRelation, FuseRelation>;

enum class AttachKind { kRoot, kInline, kScope };

struct IterVarAttr {
  ir::ForKind kind = ir::ForKind::kSerial;
  std::string thread_tag;  // kThreadBinding: "blockIdx.x", "threadIdx.y", ...
  std::vector<std::pair<std::string, Expr>> pragmas;
};

struct StorageAlign {
  int axis;  // dimension whose stride is padded
  int64_t factor, offset;
};

// The schedule of one tensor.
struct StageState {
  Tensor tensor;  // what this stage computes (its buffer is where results go)
  Expr body;      // the body as scheduled: cache_read/cache_write/inline rewrite it
  std::vector<IterVar> axis, reduce_axis;
  std::vector<IterVar> leaf;  // the loop order, outermost first
  std::vector<Relation> relations;
  std::unordered_map<const ir::IterVarNode*, IterVarAttr> attrs;
  AttachKind attach = AttachKind::kRoot;
  int attach_stage = -1;  // index in the schedule when attach == kScope
  IterVar attach_axis;
  ir::MemoryScope scope = ir::MemoryScope::kGlobal;
  std::vector<StorageAlign> aligns;
  bool double_buffer = false;
  bool is_output = false;
  // Stage::tensorize: the loops from this one inward become the intrinsic.
  IterVar tensorize_axis;
  std::shared_ptr<const TensorIntrin> tensorize_intrin;
};

struct ScheduleState {
  std::vector<Tensor> outputs;
  std::vector<StageState> stages;  // producers before consumers
};

class Stage {
 public:
  // A stage is named by its tensor, so it stays valid when cache_read, cache_write or rfactor
  // insert stages before it.
  Stage(std::shared_ptr<ScheduleState> s, const TensorNode* tensor)
      : s_(std::move(s)), tensor_(tensor) {}

  // (outer, inner) with inner's extent `factor`; a tail is guarded when the extent is not a
  // multiple.
  std::pair<IterVar, IterVar> split(const IterVar& parent, int64_t factor);
  // (outer, inner) with outer's extent `nparts`.
  std::pair<IterVar, IterVar> split_nparts(const IterVar& parent, int64_t nparts);
  // Splits x and y and orders the loops xo, yo, xi, yi; returns them in that order.
  std::vector<IterVar> tile(const IterVar& x, const IterVar& y, int64_t x_factor, int64_t y_factor);
  // One loop over two adjacent loops (outer immediately enclosing inner).
  IterVar fuse(const IterVar& outer, const IterVar& inner);
  // The given loops take the positions they occupied, in the given order.
  void reorder(const std::vector<IterVar>& order);

  // Computes this stage inside `parent`'s loop `scope`, just the region that loop needs.
  void compute_at(const Stage& parent, const IterVar& scope);
  // Substitutes this stage's body into its consumers (no buffer of its own).
  void compute_inline();
  // Back to its own loop nest at the top level.
  void compute_root();

  void vectorize(const IterVar& axis);
  void unroll(const IterVar& axis);
  void parallel(const IterVar& axis);
  // Runs the loop over `axis` on GPU threads: "blockIdx.x/y/z" (one block per iteration) or
  // "threadIdx.x/y/z" (one thread of the block per iteration). Loops of different stages bound
  // to the same index share it, which is how a stage computed at a block's loop is fetched
  // cooperatively by the block's threads. "vthread.x/y/z" makes the loop a virtual thread: each
  // thread runs its iterations, unrolled, and shared memory covers all of them (so a thread's
  // outputs can be strided by the block's width, for coalesced accesses).
  void bind(const IterVar& axis, const std::string& thread_tag);
  void pragma(const IterVar& axis, const std::string& key, Expr value = Expr(1));
  // A shared-memory stage computed inside a loop gets two buffers: each iteration computes into
  // one the next iteration's region while the other is read (transform/inject_double_buffer.h),
  // so the fetch of the next tile overlaps this tile's use, with one barrier per iteration.
  void double_buffer();
  // Keeps this stage's buffer in `scope` (e.g. a reduction computed at a thread's loop into
  // registers: kLocal). An output of the schedule stays global.
  void set_scope(ir::MemoryScope scope);
  // Replaces the loops from `axis` inward with `intrin` (te/tensor_intrin.h says what must
  // match); checked when the schedule is lowered, which refuses naming the mismatch.
  void tensorize(const IterVar& axis, const TensorIntrin& intrin);
  // Pads the stride of dimension `axis` of this stage's buffer to factor*k + offset.
  void storage_align(const IterVar& axis, int64_t factor, int64_t offset);

  const std::vector<IterVar>& axis() const { return state().axis; }
  const std::vector<IterVar>& reduce_axis() const { return state().reduce_axis; }
  const std::vector<IterVar>& leaf_axes() const { return state().leaf; }
  const std::string& name() const { return state().tensor.name(); }
  const Tensor& tensor() const { return state().tensor; }
  int index() const;  // position in the schedule (producers first)

 private:
  StageState& state() const { return s_->stages[static_cast<size_t>(index())]; }
  // Position of `iv` among the leaf loops; throws naming the primitive when absent.
  size_t leaf_position(const IterVar& iv, const char* primitive) const;
  void annotate(const IterVar& axis, ir::ForKind kind, const char* primitive);

  std::shared_ptr<ScheduleState> s_;
  const TensorNode* tensor_;
};

class Schedule {
 public:
  // One stage per tensor the outputs depend on, each with its default loop nest (the axes in
  // order, then the reduction axes) at the top level.
  explicit Schedule(std::vector<Tensor> outputs);

  // The stage of `t`; throws when t is not part of this schedule.
  Stage operator[](const Tensor& t) const;
  std::vector<Stage> stages() const;
  const std::vector<Tensor>& outputs() const { return s_->outputs; }

  // A copy of `t` in `scope`, read by `readers` instead of t. Returns the new tensor.
  Tensor cache_read(const Tensor& t, ir::MemoryScope scope, const std::vector<Tensor>& readers);
  // Computes t's body into a new tensor in `scope`; t then copies from it. Returns the new
  // tensor, which takes over t's reduction axes.
  Tensor cache_write(const Tensor& t, ir::MemoryScope scope);

  // Factors the reduction of t over `axis` (a reduction loop of t's stage, e.g. the inner part
  // of a split reduction axis) into a new stage whose last (or, with FactorAt::kFirst, first)
  // dimension is `axis`, data-parallel; t then reduces those partial results over one axis.
  // Returns the new tensor.
  enum class FactorAt { kLast, kFirst };
  Tensor rfactor(const Tensor& t, const IterVar& axis, FactorAt at = FactorAt::kLast);

  const ScheduleState& state() const { return *s_; }

 private:
  int index_of(const Tensor& t, const char* primitive) const;
  std::shared_ptr<ScheduleState> s_;
};

// The loop nest of a whole schedule: every stage's loops, attached and inlined as scheduled,
// with multi-dimensional loads and stores and an Allocate per intermediate tensor.
ir::Stmt schedule_to_loops(const Schedule& schedule);

// The region of t that its stage computes, per dimension, as schedule_to_loops infers it from the
// schedule so far: the whole shape for a root stage, the region its consumer reads for one
// computed at a consumer's loop (min in the enclosing loops' variables). Empty for an inlined
// stage or a placeholder.
std::vector<ir::Range> computed_region(const Schedule& schedule, const Tensor& t);

}  // namespace anvil::te
