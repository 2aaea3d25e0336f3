// The x86 schedule of conv2d_transpose_nchwc: the NCHWc direct-convolution micro-kernel.
//
// The output [N, O/ob, OH, OW, ob] is tiled into tile_oc channel blocks x tile_oh rows x tile_ow
// columns. The tile accumulates in a local buffer (cache_write, or the convolution stage itself
// when fused epilogue stages follow: those are inlined into the output stage) computed at the
// column-block loop, with the reduction (ic, jy, jx, ib) outside and the tile's channel blocks,
// rows and columns unrolled inside and ob vectorized: each reduction step is one broadcast of an
// input value per output pixel and one weight vector per phase the tile covers, feeding
// tile_oc*tile_oh*tile_ow independent FMA chains. A tile covers consecutive rows and columns, so
// it mixes phases: once the tile loops are unrolled, the phase arithmetic of every pixel is a
// constant and the input reads are those of a stride-1 convolution. The loops (n, channel tile,
// row tile) are fused and parallel (knob parallel, the layer's thread split: from 2^18
// multiply-adds on, as dense).
// With ic_chunk > 0 the accumulator is instead the whole output plane of the channel tile
// (computed at the fused (n, channel tile) loop): the input channels are reduced in chunks
// outside the register tiles, so that a chunk's weights stay in L2 while every row tile of the
// plane uses them (the tile's accumulators are promoted to registers within a chunk).
//
// The rule (every knob can be overridden by a Config; space lists the defaults first):
//   accumulators: 3/4 of the vector registers (24 of AVX-512's 32, 12 of AVX2's 16), leaving
//   room for the per-phase weight vectors and the broadcasts; a pixel takes ceil(ob/lanes)
//   vectors.
//   tile_oh: the height stride (one row of each phase), so that every weight cache line fetched
//   for a step is used: tiles of one row used half of each line pair and measured 1.5-3x slower
//   on DCGAN deconv1 (AVX-512). But 1 when one channel block's weights fit in an eighth of L2:
//   they stay cached anyway, and a row of one phase loads half the weight vectors per step
//   (deconv4 with ob = 3 or 8: 22 -> 31 GFLOP/s). And 1 when the weight vectors of every phase
//   the tile covers, plus the broadcast, do not fit in the registers the accumulators leave: on
//   AVX2 (16 registers, 12 accumulators) two rows of 2 x 2 phases need 5 of the 4 left, and LLVM
//   spilled; one row of 8 columns took DCGAN's deconv1-3 in the model on a Zen 3 from 40-52% of
//   peak to 62-79% (6.7 -> 4.3, 5.7 -> 3.6, 5.1 -> 3.4 ms at 1 thread).
//   tile_ow: the whole row when it fits the accumulators left; else the widest divisor of OW that
//   is a multiple of the width stride and fills at least half of them (no tail); else OW split
//   evenly into the fewest tiles that fit, rounded to the width stride.
//   tile_oc: as many channel blocks as the remaining accumulators allow, dividing O/ob.
//   unroll_ib: 0 (unrolling the ib steps made LLVM hoist broadcasts and spill: 80 vs 113 GFLOP/s
//   on DCGAN deconv3); unroll_kw: 0 (unrolled, LLVM keeps the broadcasts that neighbouring taps
//   share live across them and spills: deconv4 22 -> 29 GFLOP/s, deconv3 unchanged).
//   ic_chunk: 0 while the weights of one channel tile fit half of L2 (1 MB per core here) or its
//   output plane does not fit a quarter of it; else the largest divisor of C/ib whose weights fit
//   a quarter of it (DCGAN deconv1: 1 MB of weights per channel block, 32 MB in all, p10 36 -> 78
//   GFLOP/s). Then, when the tile spans the whole row, tile_oh grows to fill the accumulators
//   (deconv1: 3 rows x 8 columns, p10 73 -> 89 GFLOP/s). A tile of one row (tile_oh below the
//   height stride: AVX2) uses each weight vector for half as many FMAs, and every row tile reads
//   the channel tile's weights again: weights that fit half of L2 but not L1 are then chunked to
//   fit L1 (DCGAN deconv2 and deconv3 on a Zen 3, 256 and 128 KB of weights per channel block:
//   chunks of 8 blocks, 32 KB, took them 4.1-4.3 -> 3.5 and 3.7 -> 3.3 ms at 1 thread in the
//   model; the tuner had found chunks of 4-8 best). Streamed weights (deconv1) keep L2's chunks:
//   L1's took it 4.4 -> 4.8 ms.
#include <algorithm>

#include "anvil/ir/op.h"
#include "anvil/ops/conv_transpose_nchwc.h"
#include "anvil/ops/schedule_util.h"
#include "anvil/support/error.h"

namespace anvil::ops::deconv {

using namespace ir;

Knobs default_knobs(int64_t Ob, int64_t ob, int64_t OH, int64_t OW, int64_t sy, int64_t sx,
                    int64_t Cb, int64_t ic_bytes, const Target& target) {
  int64_t lanes = target.vector_lanes_f32();
  int64_t regs = target.vector_registers;
  const int64_t l2_bytes = target.l2_bytes;
  int64_t budget = regs * 3 / 4;
  int64_t nv = (ob + lanes - 1) / lanes;
  Knobs k;
  // ic_bytes covers the stride's phases.
  const int64_t macs = Ob * OH * OW * Cb * ic_bytes / (4 * sy * sx);
  k.parallel = macs >= kParallelMultiplyAdds ? 1 : 0;
  bool small_weights = Cb * ic_bytes <= l2_bytes / 8;
  // A step loads one weight vector per phase the tile covers (and channel vector); those and the
  // broadcast must fit in the registers the accumulators leave.
  auto phases_fit = [&](int64_t oh) {
    return std::min(oh, sy) * std::min(sx, OW) * nv + 1 <= regs - budget;
  };
  k.tile_oh = small_weights ? 1 : std::max<int64_t>(1, std::min({sy, OH, budget / nv}));
  if (!phases_fit(k.tile_oh)) k.tile_oh = 1;
  int64_t cols = std::max<int64_t>(1, budget / (nv * k.tile_oh));
  if (OW <= cols) {
    k.tile_ow = OW;
  } else {
    k.tile_ow = 0;
    for (int64_t t = cols; t * 2 >= cols && k.tile_ow == 0; --t)
      if (OW % t == 0 && t % sx == 0) k.tile_ow = t;
    if (k.tile_ow == 0) {
      int64_t tiles = (OW + cols - 1) / cols;
      int64_t t = (OW + tiles - 1) / tiles;
      t = (t + sx - 1) / sx * sx;
      if (t > cols) t -= sx;
      k.tile_ow = std::max<int64_t>(1, t);
    }
  }
  k.tile_oc = std::max<int64_t>(1, std::min(Ob, budget / (k.tile_oh * k.tile_ow * nv)));
  while (Ob % k.tile_oc != 0) --k.tile_oc;
  k.unroll_ib = 0;
  k.unroll_kw = 0;
  k.ic_chunk = 0;
  int64_t plane_bytes = k.tile_oc * OH * OW * ob * 4;
  // Weights that stay in L2 but not in L1: a tile of fewer rows than the height stride feeds each
  // weight vector half as many FMAs, so its chunk's weights are kept in L1.
  const int64_t tile_weights = Cb * ic_bytes * k.tile_oc;
  const bool l1_chunks =
      k.tile_oh < sy && tile_weights > target.l1d_bytes && tile_weights <= l2_bytes / 2;
  const int64_t chunk_bytes = l1_chunks ? target.l1d_bytes : l2_bytes / 4;
  if ((tile_weights > l2_bytes / 2 || l1_chunks) && plane_bytes <= l2_bytes / 4) {
    k.ic_chunk = 1;
    for (int64_t c = Cb; c >= 1 && k.ic_chunk == 1; --c)
      if (Cb % c == 0 && c * ic_bytes * k.tile_oc <= chunk_bytes) k.ic_chunk = c;
    // Weights now come from L2: when the tile already spans the row, more rows add FMAs per
    // weight vector loaded.
    int64_t rows = std::min(OH, budget / (k.tile_ow * nv * k.tile_oc));
    if (k.tile_ow == OW && phases_fit(rows)) k.tile_oh = std::max(k.tile_oh, rows);
  }
  return k;
}

int64_t default_input_innermost_tile(int64_t ob, int64_t OW, int64_t sx, const Target& target) {
  // A column takes ob accumulators; whole phase groups (multiples of the width stride).
  int64_t cols = std::max<int64_t>(1, target.vector_registers * 3 / 4 / std::max<int64_t>(1, ob));
  if (cols >= sx) cols -= cols % sx;
  return std::min(cols, OW);
}

ConfigSpace space(const std::vector<TensorType>& in, const Attrs& attrs, const Target& target) {
  Params p = parse(in, attrs);
  auto with_default = [](int64_t def, std::vector<int64_t> others, int64_t limit) {
    std::vector<int64_t> v = {def};
    for (int64_t x : others)
      if (x != def && x <= limit) v.push_back(x);
    return v;
  };
  if (p.input_innermost) {
    const int64_t macs = p.N * p.Ob * p.ob * p.OH * p.OW * p.Cb * p.ib * p.py.taps * p.px.taps;
    const int64_t parallel = macs >= kParallelMultiplyAdds ? 1 : 0;
    int64_t t = default_input_innermost_tile(p.ob, p.OW, p.strides[1], target);
    return {{"tile_ow", with_default(t, {1, 2, 4, 6, 8, 12, 16}, p.OW)},
            {"parallel", with_default(parallel, {0, 1}, 1)}};
  }
  Knobs d =
      default_knobs(p.Ob, p.ob, p.OH, p.OW, p.strides[0], p.strides[1], p.Cb,
                    p.ib * p.py.taps * p.px.taps * p.strides[0] * p.strides[1] * p.ob * 4, target);
  return {
      {"tile_oc", with_default(d.tile_oc, {1, 2, 3, 4, 6, 8}, p.Ob)},
      {"tile_oh", with_default(d.tile_oh, {1, 2, 3, 4}, p.OH)},
      {"tile_ow", with_default(d.tile_ow, {2, 4, 6, 8, 12, 14, 16, 20, 24, 28, 32}, p.OW)},
      {"unroll_ib", with_default(d.unroll_ib, {0, 1}, 1)},
      {"unroll_kw", with_default(d.unroll_kw, {0, 1}, 1)},
      {"ic_chunk", with_default(d.ic_chunk, {0, 4, 8, 16}, p.Cb)},
      {"parallel", with_default(d.parallel, {0, 1}, 1)},
  };
}

namespace {

// The packed weight's shape: the 8-d input of the reduction stage.
std::vector<int64_t> packed_weight_shape(const te::Tensor& conv) {
  std::vector<int64_t> ws(8, 1);
  for (const auto& t : conv->inputs)
    if (std::vector<int64_t> sh = shape_of(te::Tensor(t.get())); sh.size() == 8) ws = sh;
  return ws;
}

// The zero-bordered sources at the root: rows (n, channel block, row fused) on the threads.
void schedule_sources(te::Schedule& s, const std::vector<te::Tensor>& sources, bool parallel) {
  for (const te::Tensor& t : sources) {
    std::vector<IterVar> ax = s[t].axis();
    IterVar f = s[t].fuse(s[t].fuse(ax[0], ax[1]), ax[2]);
    if (parallel) s[t].parallel(f);
  }
}

// The schedule of the input_innermost form (few output channels): the reduction over the input
// block is factored out (rfactor) so that its partial sums are vectors over the input channels,
// full vectors however few the output channels are. A tile of tile_ow columns x ob channels, one
// vector accumulator each, runs the reduction (ic, jy, jx) with the input vector of each column
// and the weight vector of each (phase, channel) loaded contiguously; the tile's vectors are then
// summed across their lanes into the output (and its inlined epilogue).
void schedule_input_innermost(te::Schedule& s, const te::Tensor& out, const te::Tensor& conv,
                              const std::vector<te::Tensor>& sources, const Target& target,
                              const Config& config) {
  std::vector<int64_t> oshape = shape_of(out);
  const int64_t OW = oshape[3], ob = oshape[4];
  std::vector<int64_t> ws = packed_weight_shape(conv);
  int64_t tile_ow = default_input_innermost_tile(ob, OW, ws[5], target);
  tile_ow = std::clamp<int64_t>(knob(config, "tile_ow", tile_ow), 1, OW);
  const int64_t macs =
      static_cast<int64_t>(numel(TensorType{oshape, {}})) * ws[1] * ws[2] * ws[3] * ws[7];
  const bool parallel = knob(config, "parallel", macs >= kParallelMultiplyAdds ? 1 : 0) != 0;
  schedule_sources(s, sources, parallel);

  te::Tensor rf = s.rfactor(conv, s[conv].reduce_axis().back());
  te::Stage so = s[out];
  std::vector<IterVar> ax = so.axis();
  auto [xo, xi] = so.split(ax[3], tile_ow);
  IterVar f = so.fuse(so.fuse(ax[0], ax[1]), ax[2]);
  if (parallel) so.parallel(f);
  so.vectorize(ax[4]);  // the epilogue on the output block's vector (tanh: 1 call per pixel)
  te::Stage sr = s[rf];
  if (out.get() != conv.get()) {
    // The lane sums are a tile buffer of the output's column block; the partial sums are
    // computed inside them (their row loop: one row in the tile).
    s[conv].compute_at(so, xo);
    sr.compute_at(s[conv], s[conv].axis()[2]);
  } else {
    sr.compute_at(so, xo);
  }
  std::vector<IterVar> r = sr.axis();          // n, channel block, y, x, o, ii
  std::vector<IterVar> rr = sr.reduce_axis();  // ic, jy, jx
  sr.reorder({r[0], r[1], r[2], rr[0], rr[1], rr[2], r[3], r[4], r[5]});
  sr.unroll(r[3]);
  sr.unroll(r[4]);
  sr.vectorize(r[5]);
}

}  // namespace

void schedule(te::Schedule& s, const std::vector<te::Tensor>& outs, const Target& target,
              const Config& config) {
  te::Tensor out = outs[0];
  // The reduction stage, the source it reads (x with zero borders, at the root) and the injective
  // stages between it and the output (fused epilogues: inlined).
  te::Tensor conv;
  std::vector<te::Tensor> order = te::topological_order(outs);
  for (const te::Tensor& t : order)
    if (t.is_compute() && !t->reduce_axis.empty()) conv = t;
  ANVIL_ICHECK(conv.defined(), "conv2d_transpose_nchwc: no reduction stage to schedule");
  std::vector<const te::TensorNode*> sources;
  for (const auto& t : conv->inputs)
    if (te::Tensor(t.get()).is_compute()) sources.push_back(t.get());
  std::vector<te::Tensor> sources_to_split;  // scheduled once the knobs are known
  for (const te::Tensor& t : order) {
    if (!t.is_compute() || t.get() == conv.get() || t.get() == out.get()) continue;
    if (std::find(sources.begin(), sources.end(), t.get()) != sources.end()) {
      sources_to_split.push_back(t);
      continue;
    }
    s[t].compute_inline();
  }
  if (conv.name() == kInputInnermostStage) {
    schedule_input_innermost(s, out, conv, sources_to_split, target, config);
    return;
  }

  std::vector<int64_t> oshape = shape_of(out);
  ANVIL_CHECK(oshape.size() == 5, "conv2d_transpose_nchwc: the scheduled output must be 5-d ",
              "(NCHW[x]c), got rank ", oshape.size());
  int64_t Ob = oshape[1], OH = oshape[2], OW = oshape[3], ob = oshape[4];
  std::vector<int64_t> ws = packed_weight_shape(conv);
  Knobs k = default_knobs(Ob, ob, OH, OW, ws[5], ws[6], ws[1],
                          ws[2] * ws[3] * ws[4] * ws[5] * ws[6] * ws[7] * 4, target);
  auto clamp = [](int64_t v, int64_t hi) { return std::max<int64_t>(1, std::min(v, hi)); };
  k.tile_oc = clamp(knob(config, "tile_oc", k.tile_oc), Ob);
  k.tile_oh = clamp(knob(config, "tile_oh", k.tile_oh), OH);
  k.tile_ow = clamp(knob(config, "tile_ow", k.tile_ow), OW);
  k.unroll_ib = knob(config, "unroll_ib", k.unroll_ib);
  k.unroll_kw = knob(config, "unroll_kw", k.unroll_kw);
  k.ic_chunk = std::max<int64_t>(0, knob(config, "ic_chunk", k.ic_chunk));
  k.parallel = knob(config, "parallel", k.parallel) != 0;
  schedule_sources(s, sources_to_split, k.parallel);

  te::Tensor inner = out.get() == conv.get() ? s.cache_write(conv, MemoryScope::kLocal) : conv;
  te::Stage so = s[out];
  std::vector<IterVar> ax = so.axis();
  te::Stage si = s[inner];
  std::vector<IterVar> iax = si.axis();
  std::vector<IterVar> rax = si.reduce_axis();
  auto [oo, oi] = so.split(ax[1], k.tile_oc);
  if (k.ic_chunk > 0) {
    // Planes: the accumulator is the whole output plane of the channel tile; the reduction over
    // input channels runs in chunks outside the register tiles, so a chunk's weights stay in L2
    // while every row tile uses them.
    IterVar f = so.fuse(ax[0], oo);
    if (k.parallel) so.parallel(f);
    so.vectorize(ax[4]);
    si.compute_at(so, f);
    auto [ico, ici] = si.split(rax[0], k.ic_chunk);
    auto [yo, yi] = si.split(iax[2], k.tile_oh);
    auto [xo, xi] = si.split(iax[3], k.tile_ow);
    si.reorder({iax[0], ico, yo, xo, ici, rax[1], rax[2], rax[3], iax[1], yi, xi, iax[4]});
    si.unroll(iax[1]);
    si.unroll(yi);
    si.unroll(xi);
    si.vectorize(iax[4]);
    if (k.unroll_ib) si.unroll(rax[3]);
    if (k.unroll_kw) si.unroll(rax[2]);
    return;
  }
  auto [yo, yi] = so.split(ax[2], k.tile_oh);
  auto [xo, xi] = so.split(ax[3], k.tile_ow);
  so.reorder({ax[0], oo, yo, xo, oi, yi, xi, ax[4]});
  IterVar f = so.fuse(so.fuse(ax[0], oo), yo);
  if (k.parallel) so.parallel(f);
  // Unrolled so that the tile's indices are constants and the tile stays in registers.
  so.unroll(oi);
  so.unroll(yi);
  so.unroll(xi);
  so.vectorize(ax[4]);

  si.compute_at(so, xo);
  si.reorder({iax[0], rax[0], rax[1], rax[2], rax[3], iax[1], iax[2], iax[3], iax[4]});
  si.unroll(iax[1]);
  si.unroll(iax[2]);
  si.unroll(iax[3]);
  si.vectorize(iax[4]);
  if (k.unroll_ib) si.unroll(rax[3]);
  if (k.unroll_kw) si.unroll(rax[2]);
}

}  // namespace anvil::ops::deconv
