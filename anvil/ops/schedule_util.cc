#include "anvil/ops/schedule_util.h"

#include "anvil/ir/op.h"
#include "anvil/ops/op.h"

namespace anvil::ops {

namespace {

// Every loop fused into one, split by the vector width. Rule: vectorize by the register width
// when there are at least two vectors of work; hand the threads chunks of at least 16 vectors, so
// a parallel loop never costs more than it saves.
void schedule_flat_x86(te::Schedule& s, const te::Tensor& out, const Target& target) {
  te::Stage stage = s[out];
  std::vector<ir::IterVar> axes = stage.axis();
  if (axes.empty()) return;
  int64_t total = 1;
  for (int64_t d : shape_of(out)) total *= d;
  ir::IterVar fused = axes[0];
  for (size_t i = 1; i < axes.size(); ++i) fused = stage.fuse(fused, axes[i]);
  int64_t lanes = target.vector_lanes_f32();
  if (total < 2 * lanes) return;
  auto [outer, inner] = stage.split(fused, lanes);
  stage.vectorize(inner);
  if (total >= 16 * lanes * 2) stage.parallel(outer);
}

}  // namespace

void schedule_injective_x86(te::Schedule& s, const te::Tensor& out, const Target& target) {
  // The row form for rows of whole vectors, or rows long enough that a tail wastes little: a
  // flat index vectorized becomes a ramp that every axis then divides and takes the remainder of
  // (lane by lane, when the simplifier cannot undo the flattening: ConvNeXt's GELU over
  // [1, 56, 56, 384] ran as gathers and scatters at 2 GFLOP/s).
  std::vector<int64_t> shape = shape_of(out);
  int64_t lanes = target.vector_lanes_f32();
  if (shape.size() >= 2 && shape.back() >= lanes &&
      (shape.back() % lanes == 0 || shape.back() >= 4 * lanes))
    return schedule_injective_rows_x86(s, out, target);
  schedule_flat_x86(s, out, target);
}

void schedule_injective_rows_x86(te::Schedule& s, const te::Tensor& out, const Target& target) {
  std::vector<int64_t> shape = shape_of(out);
  int64_t lanes = target.vector_lanes_f32();
  if (shape.size() < 2 || shape.back() < lanes) return schedule_flat_x86(s, out, target);
  te::Stage stage = s[out];
  std::vector<ir::IterVar> axes = stage.axis();
  int64_t rows = 1;
  ir::IterVar fused = axes[0];
  for (size_t i = 0; i + 1 < axes.size(); ++i) {
    rows *= shape[i];
    if (i > 0) fused = stage.fuse(fused, axes[i]);
  }
  auto [outer, inner] = stage.split(axes.back(), lanes);
  stage.vectorize(inner);
  // The flat form's threshold: at least 32 vectors of work (one row: its vectors in parallel).
  if (rows * shape.back() >= 32 * lanes) stage.parallel(rows > 1 ? fused : outer);
}

void schedule_blocked_copy_x86(te::Schedule& s, const te::Tensor& out, const Target& target) {
  if (shape_of(out).size() != 5) return schedule_injective_x86(s, out, target);
  te::Stage stage = s[out];
  std::vector<ir::IterVar> axes = stage.axis();
  stage.parallel(stage.fuse(stage.fuse(axes[0], axes[1]), axes[2]));
  stage.unroll(axes[4]);
}

void schedule_reductions_x86(te::Schedule& s, const std::vector<te::Tensor>& outs,
                             const Target& target) {
  for (te::Stage st : s.stages()) {
    const te::Tensor& t = st.tensor();
    if (!t.is_compute() || st.reduce_axis().empty() || st.axis().empty()) continue;
    ir::IterVar fused = st.axis()[0];
    for (size_t d = 1; d < st.axis().size(); ++d) fused = st.fuse(fused, st.axis()[d]);
    int64_t elements = 1;
    for (int64_t d : shape_of(t)) elements *= d;
    int64_t work = elements;
    for (const ir::IterVar& r : st.reduce_axis())
      work *= ir::as_const_int(r->dom.extent).value_or(1);
    if (work >= (int64_t{1} << 16) && elements > 1) st.parallel(fused);
  }
  for (const te::Tensor& o : outs) {
    if (o->reduce_axis.empty()) schedule_injective_x86(s, o, target);
  }
}

}  // namespace anvil::ops
