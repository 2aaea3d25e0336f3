// The x86 schedule of conv2d_nchwc and depthwise_conv2d_nchwc: the classic NCHW[x]c direct
// convolution micro-kernel.
//
// The output [N, O/ob, OH, OW, ob] is cut into tiles of oc_tile channel blocks x ow_block columns
// of one row. A tile is accumulated in a local buffer (cache_write, or the convolution stage itself
// when an epilogue follows) computed at the output's column-block loop, so the epilogue (bias,
// batch-norm, relu, residual add: inlined into the output stage) is applied on the way out of the
// registers: one pass over the output. Inside the tile the loops are
//     ic, kh, kw, ib | oc_tile (unrolled), ow_block (unrolled), ob (vectorized)
// so each reduction step loads oc_tile weight vectors once and broadcasts each column's input
// element once (vbroadcastss, or vfmadd231ps with an embedded {1toN} broadcast when oc_tile is 1):
// oc_tile x ow_block independent accumulators in registers. The weight is read sequentially (its
// layout is the reduction order). A stride only changes the broadcast addresses, so strided
// convolutions need no gathers or phases. 1x1 convolutions are the same kernel: a packed GEMM
// with an (oc_tile*ob) x ow_block register tile.
// Depthwise: no reduction over channels, so each step is a vector load of the input per column
// (contiguous in the block) times one weight vector; the taps are unrolled (LLVM reuses the input
// vectors that neighbouring taps share).
// The loops (n, oc tiles, output rows) are fused and run in parallel (from 2^18 multiply-adds on;
// the knob `parallel` is the layer's thread split: all the threads or the calling one).
//
// The default rule (every knob can be overridden by a Config; conv_nchwc_space lists them).
// R = 32 vector registers with AVX-512 (16 float lanes), 16 with AVX2; a channel block takes
// v = ceil(ob / lanes) vectors.
//   Accumulators: at most A = 5R/8 (20 on AVX-512, 10 on AVX2). More measured slower here: LLVM's
//   scheduler hoists the next steps' weight loads and broadcasts and spills accumulators (28 zmm
//   accumulators: 55-80% of peak; 20: 97-99%).
//   oc_tile: ceil(2 * lanes / ob) channel blocks (at most O/ob), so that one broadcast feeds two
//   vectors' worth of FMAs: 2 blocks of 16 on AVX-512, 4 blocks of 8 (half-width vectors: each
//   FMA does half the work, so the loads per FMA must halve too; 4 x 8 measured 94% where 1 x 8
//   reached 75-85%).
//   ow_block: the fewest blocks of at most A / (oc_tile * v) columns, as equal as a fixed block
//   allows (OW 56, limit 10: blocks of 10 with a tail of 6; OW 59, limit 20: 20, 20, 19), so the
//   guarded tail wastes less than one column per block.
//   unroll_ib: the input block unrolled only with half-width vectors; with full-width vectors the
//   unrolled ib steps again let the scheduler hoist broadcasts into spills (pw 112x112 32->64:
//   65% unrolled, 97% not).
//   unroll_kw: 0. When it is unrolled, LLVM keeps the broadcasts that neighbouring taps share
//   live across the whole kernel width and spills them (30% of peak on 3x3 56x56 64->64).
//
//   oh_group: 0 (all rows), but when at least 4 channel tiles each sweep an input larger than 3/8
//   of L2 and the weight exceeds a quarter of it, the output rows go in groups whose input rows
//   fill at most a quarter of L2, the channel tiles inside; the group divides the rows.
//
//   ic_outer: 1 when a channel tile's whole output (oc_tile x OH x OW x ob floats) fits in L1 and
//   there are at least two channel tiles per core. The loops become
//       n, oc tiles (parallel) | ic chunks | oh, ow blocks | ic, kh, kw, ib | oc_tile, ow_block, ob
//   with the tile's accumulators in a buffer (LLVM keeps each register tile in registers across
//   the chunk's ic, kh, kw and ib). At batch 1 every weight is streamed once per inference, so
//   that is the case to fit, not a kernel timed alone with its weight hot. ResNet-18's layer 4 on
//   a Zen 5 host (7x7, 512 -> 512, 9 MiB of weight): 1.9-2.1 ms per layer row by row (rows in the
//   parallel loop) in the model, 1.57-1.6 ms with one channel block per pass (1.17 ms alone with
//   its weight in cache); the stride-2 256 -> 512: 1.05-1.2 -> 0.78-0.82 ms. On a Zen 4 host
//   (1 MiB L2), in the model: MobileNet's 1x1 256 -> 512 at 14x14 (512 KiB of weight) 0.70-0.83
//   ms row by row, bimodal up to 1.07, and 0.49-0.52 ms with ic outside; its 512 -> 512 layers
//   1.06-1.08 ms with one block per pass, 0.96 with all 32.
//   ic_chunk: the most input channel blocks (a divisor of them) whose weight slice (oc_tile x ob
//   x ib x KH x KW floats per block) takes at most half of L2, so a pass's slice stays in L2 for
//   all the rows while the input rows stream past it. On the Zen 4 host, in the model, more
//   blocks per pass were faster up to all of them (ResNet's stride-2 256 -> 512: 1.21 ms with 1,
//   1.16 with 4, 1.09-1.11 with 16; MobileNet's 1024 -> 1024 at 7x7: 1.14, 1.09, 1.02, 0.99 with
//   1, 8, 16 and 32 of its 64).
//
//   inline_pad: 0. The padded source is a stage at the root, its rows in parallel (inlined
//   selects measured 20-40% slower: one compare per broadcast).
//
//   Depthwise: oc_tile 1; the taps unrolled (unroll_kw 1, kh always); ow_block at most 4 columns
//   (4 measured faster than 7, 14 or 28 on AVX-512), R/8 when strided (2 on AVX2: the input
//   vectors and the padding's selects need registers; 4 took 1.07-1.35x longer there); the padding
//   inlined as selects on the loads (inline_pad 1): a separate padding pass costs as much as the
//   convolution itself for this memory-bound operator (stride 2: 30 -> 70 GFLOP/s inlined).
#include "anvil/ops/conv_nchwc_schedule.h"

#include <algorithm>

#include "anvil/ir/op.h"
#include "anvil/ops/schedule_util.h"
#include "anvil/support/error.h"

namespace anvil::ops::conv_nchwc_detail {

using namespace ir;

namespace {

struct Knobs {
  int64_t oc_tile = 1, ow_block = 1, unroll_kw = 1, unroll_ib = 1;
  int64_t oh_group = 0;    // output rows per group (0: all): groups outside the channel tiles
  int64_t inline_pad = 0;  // 1: the padding is a select inside the convolution, not a stage
  int64_t ic_outer = 0;    // 1: input channels outside the rows (a channel tile's whole output
                           // accumulates in a buffer; each weight slice is used by every row)
  int64_t ic_chunk = 1;    // with ic_outer: input channel blocks per pass over the rows
  int64_t parallel = 1;    // 0: the whole convolution on the calling thread
};

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// The largest divisor of n that is at most `limit` (at least 1). Row groups are whole: a group
// that overhangs the rows leaves guarded-out units in the parallel loop, all of them on the last
// thread (ResNet's 3x3 stride-2 64 -> 128 at 28x28 rows: groups of 10 took 0.88x oneDNN at 2
// threads, groups of 7 0.95x).
int64_t largest_divisor(int64_t n, int64_t limit) {
  for (int64_t d = std::clamp<int64_t>(limit, 1, n); d > 1; --d)
    if (n % d == 0) return d;
  return 1;
}

// The fewest equal blocks of at most `limit` columns covering n.
int64_t balanced_block(int64_t n, int64_t limit) {
  limit = std::max<int64_t>(1, limit);
  return ceil_div(n, ceil_div(n, limit));
}

Knobs default_knobs(const ConvShape& c, const Target& target) {
  int64_t lanes = target.vector_lanes_f32();
  int64_t regs = target.vector_registers;
  int64_t v = ceil_div(c.ob, lanes);
  Knobs k;
  const int64_t macs = c.OB * c.ob * c.OH * c.OW * c.ic_blocks * c.ib * c.KH * c.KW;
  k.parallel = macs >= kParallelMultiplyAdds ? 1 : 0;
  if (c.depthwise) {
    // Unstrided rows read ow_block + KW - 1 input vectors: 4 columns fit AVX2's 16 registers too
    // (Zen 3, MobileNet's five unstrided depthwise layers: 4 columns 1.0-1.2x faster than 2).
    // Strided rows read about twice as many, which with the padding's selects leave room for R/8.
    const bool strided = c.IW >= 2 * c.OW;
    k.ow_block = balanced_block(c.OW, strided ? regs / 8 : 4);
    k.inline_pad = 1;
    k.unroll_kw = 1;
    return k;
  }
  int64_t acc = regs * 5 / 8;
  k.oc_tile = std::clamp<int64_t>(ceil_div(2 * lanes, c.ob), 1, std::max<int64_t>(1, acc / v));
  k.oc_tile = std::min(k.oc_tile, c.OB);
  k.ow_block = balanced_block(c.OW, acc / (k.oc_tile * v));
  k.unroll_kw = 0;
  k.unroll_ib = c.ob < lanes ? 1 : 0;
  // A large weight against a large input: each channel tile sweeps the whole input, and
  // an input of about L2's size stayed in L2 or not depending on where its pages landed (1x1 512
  // -> 512 at 14x14: 1.06 or 1.6 ms from one process to the next). Rows in groups whose input
  // takes a quarter of L2 keep it there; the weight is then read once per group.
  const int64_t row_bytes = c.ic_blocks * c.ib * c.KH * c.OW * 4;
  const int64_t weight_bytes = c.OB * c.ob * c.ic_blocks * c.ib * c.KH * c.KW * 4;
  const int64_t l2 = target.l2_bytes;
  const int64_t oc_tiles = ceil_div(c.OB, k.oc_tile);
  if (oc_tiles >= 4 && weight_bytes > l2 / 4 && row_bytes * c.OH > l2 * 3 / 8)
    k.oh_group = largest_divisor(c.OH, l2 / 4 / row_bytes);
  // At batch 1 every weight is streamed once per inference: channel tiles with their rows inside
  // and each tile's output in a buffer (see ic_outer above), wherever that buffer fits in L1.
  const int64_t tile_bytes = k.oc_tile * c.ob * c.OH * c.OW * 4;
  if (tile_bytes <= target.l1d_bytes && oc_tiles >= 2 * std::max(1, target.cores)) {
    k.ic_outer = 1;
    k.oh_group = 0;
  }
  // The most input channel blocks (a divisor of them) whose weight slice fits in half of L2.
  const int64_t block_bytes = k.oc_tile * c.ob * c.ib * c.KH * c.KW * 4;
  k.ic_chunk = std::clamp<int64_t>(l2 / 2 / std::max<int64_t>(1, block_bytes), 1, c.ic_blocks);
  while (c.ic_blocks % k.ic_chunk != 0) --k.ic_chunk;
  return k;
}

Knobs knobs_from(const ConvShape& c, const Target& target, const Config& config) {
  Knobs k = default_knobs(c, target);
  k.oc_tile = std::clamp<int64_t>(knob(config, "oc_tile", k.oc_tile), 1, c.OB);
  k.ow_block = std::clamp<int64_t>(knob(config, "ow_block", k.ow_block), 1, c.OW);
  k.unroll_kw = knob(config, "unroll_kw", k.unroll_kw);
  k.unroll_ib = knob(config, "unroll_ib", k.unroll_ib);
  k.inline_pad = knob(config, "inline_pad", k.inline_pad);
  k.oh_group = std::clamp<int64_t>(knob(config, "oh_group", k.oh_group), 0, c.OH);
  if (k.oh_group >= c.OH) k.oh_group = 0;
  k.ic_outer = c.depthwise ? 0 : knob(config, "ic_outer", k.ic_outer) != 0;
  if (k.ic_outer) k.oh_group = 0;
  k.ic_chunk = std::clamp<int64_t>(knob(config, "ic_chunk", k.ic_chunk), 1, c.ic_blocks);
  k.parallel = knob(config, "parallel", k.parallel) != 0;
  return k;
}

std::vector<int64_t> with_default(int64_t def, const std::vector<int64_t>& others, int64_t limit) {
  std::vector<int64_t> v = {def};
  for (int64_t x : others)
    if (x != def && x <= limit) v.push_back(x);
  return v;
}

}  // namespace

ConfigSpace conv_nchwc_space(const ConvShape& c, const Target& target) {
  Knobs d = default_knobs(c, target);
  // Every column block up to 28 (the register tile's width: the accumulators are oc_tile x
  // ow_block vectors, so the good values depend on oc_tile and on the registers).
  std::vector<int64_t> ow_blocks;
  for (int64_t b = 1; b <= 28; ++b) ow_blocks.push_back(b);
  ConfigSpace space = {
      {"ow_block", with_default(d.ow_block, ow_blocks, c.OW)},
      {"unroll_kw", with_default(d.unroll_kw, {0, 1}, 1)},
      {"inline_pad", with_default(d.inline_pad, {0, 1}, 1)},
      {"parallel", with_default(d.parallel, {0, 1}, 1)},
  };
  if (!c.depthwise) {
    space.push_back({"oc_tile", with_default(d.oc_tile, {1, 2, 3, 4, 6, 8}, c.OB)});
    space.push_back({"unroll_ib", with_default(d.unroll_ib, {0, 1}, 1)});
    space.push_back({"oh_group", with_default(d.oh_group, {0, 1, 2, 4, 7, 8, 14}, c.OH - 1)});
    space.push_back({"ic_outer", with_default(d.ic_outer, {0, 1}, 1)});
    std::vector<int64_t> chunks;  // divisors of the input channel blocks
    for (int64_t b = 1; b <= c.ic_blocks; ++b)
      if (c.ic_blocks % b == 0) chunks.push_back(b);
    if (chunks.size() > 1)
      space.push_back({"ic_chunk", with_default(d.ic_chunk, chunks, c.ic_blocks)});
  }
  return space;
}

void conv_nchwc_schedule(const std::string& op, te::Schedule& s,
                         const std::vector<te::Tensor>& outs, const Target& target,
                         const Config& config) {
  ANVIL_CHECK(outs.size() == 1, op, ": the schedule takes one output, got ", outs.size());
  te::Tensor out = outs[0];
  // The reduction stage, the padded source it reads (computed at the root), and the injective
  // stages between it and the output (the epilogue: inlined into the output stage).
  te::Tensor conv;
  std::vector<te::Tensor> order = te::topological_order(outs);
  for (const te::Tensor& t : order)
    if (t.is_compute() && !t->reduce_axis.empty()) conv = t;
  ANVIL_CHECK(conv.defined(), op, ": no convolution stage under output '", out.name(), "'");
  std::vector<te::Tensor> sources;
  for (const auto& t : conv->inputs)
    if (te::Tensor(t.get()).is_compute()) sources.push_back(te::Tensor(t.get()));
  auto is_source = [&](const te::Tensor& t) {
    return std::any_of(sources.begin(), sources.end(),
                       [&](const te::Tensor& u) { return u.get() == t.get(); });
  };
  for (const te::Tensor& t : order) {
    if (!t.is_compute() || t.get() == conv.get() || t.get() == out.get() || is_source(t)) continue;
    s[t].compute_inline();
  }
  std::vector<int64_t> cs = shape_of(conv);
  ANVIL_CHECK(cs.size() == 5 && shape_of(out) == cs, op, ": output '", out.name(),
              "' must have the convolution's shape (an elementwise epilogue)");
  bool depthwise = conv->reduce_axis.size() == 2;
  ConvShape c;
  c.OB = cs[1];
  c.OH = cs[2];
  c.OW = cs[3];
  c.ob = cs[4];
  c.depthwise = depthwise;
  auto extent = [&](size_t r) {
    return as_const_int(conv->reduce_axis[r]->dom.extent).value_or(1);
  };
  c.ic_blocks = depthwise ? 1 : extent(0);
  c.KH = extent(depthwise ? 0 : 1);
  c.KW = extent(depthwise ? 1 : 2);
  c.ib = depthwise ? 1 : extent(3);
  for (const auto& t : conv->inputs)  // the input (or its padded source) is the 5-d one
    if (std::vector<int64_t> sh = shape_of(te::Tensor(t.get())); sh.size() == 5) c.IW = sh[3];
  Knobs k = knobs_from(c, target, config);

  te::Tensor inner = out.get() == conv.get() ? s.cache_write(conv, MemoryScope::kLocal) : conv;
  te::Stage so = s[out];
  std::vector<IterVar> ax = so.axis();  // n, oc, oh, ow, ob
  IterVar oco = ax[1], oci;
  if (k.oc_tile > 1) std::tie(oco, oci) = so.split(ax[1], k.oc_tile);
  auto [wo, wi] = so.split(ax[3], k.ow_block);
  IterVar oh = ax[2], oho;
  if (k.oh_group > 0) std::tie(oho, oh) = so.split(ax[2], k.oh_group);
  std::vector<IterVar> order_out = {ax[0]};
  if (oho.defined()) order_out.push_back(oho);
  order_out.insert(order_out.end(), {oco, oh, wo});
  if (oci.defined()) order_out.push_back(oci);
  order_out.insert(order_out.end(), {wi, ax[4]});
  so.reorder(order_out);
  IterVar fused = oho.defined() ? so.fuse(ax[0], oho) : ax[0];
  fused = so.fuse(fused, oco);
  IterVar tile = fused;
  if (!k.ic_outer) fused = so.fuse(fused, oh);
  if (k.parallel) so.parallel(fused);
  for (const te::Tensor& t : sources) {
    te::Stage st = s[t];
    std::vector<IterVar> sax = st.axis();
    if (k.inline_pad) {
      st.compute_inline();
      continue;
    } else {
      // At the root, the rows in parallel.
      IterVar f = sax[0];
      for (size_t a = 1; a + 2 < sax.size(); ++a) f = st.fuse(f, sax[a]);
      if (k.parallel) st.parallel(f);
    }
    if (shape_of(t).back() >= 4) st.vectorize(sax.back());
  }
  if (oci.defined()) so.unroll(oci);
  so.unroll(wi);
  so.vectorize(ax[4]);

  te::Stage si = s[inner];
  if (k.ic_outer) {
    // n | ic | oh, ow blocks | kh, kw, ib | oc, ow (registers)
    si.compute_at(so, tile);
    std::vector<IterVar> iax = si.axis();
    std::vector<IterVar> rax = si.reduce_axis();
    auto [iwo, iwi] = si.split(iax[3], k.ow_block);
    if (k.ic_chunk > 1) {
      auto [ico, ici] = si.split(rax[0], k.ic_chunk);
      si.reorder({iax[0], ico, iax[2], iwo, ici, rax[1], rax[2], rax[3], iax[1], iwi, iax[4]});
    } else {
      si.reorder({iax[0], rax[0], iax[2], iwo, rax[1], rax[2], rax[3], iax[1], iwi, iax[4]});
    }
    si.unroll(iax[1]);
    si.unroll(iwi);
    si.vectorize(iax[4]);
    if (k.unroll_kw) si.unroll(rax[2]);
    if (k.unroll_ib) si.unroll(rax[3]);
    return;
  }
  si.compute_at(so, wo);
  std::vector<IterVar> iax = si.axis();
  std::vector<IterVar> rax = si.reduce_axis();
  std::vector<IterVar> iorder = {iax[0], iax[2]};
  iorder.insert(iorder.end(), rax.begin(), rax.end());
  iorder.insert(iorder.end(), {iax[1], iax[3], iax[4]});
  si.reorder(iorder);
  si.unroll(iax[1]);
  si.unroll(iax[3]);
  si.vectorize(iax[4]);
  IterVar kw = rax[depthwise ? 1 : 2];
  if (k.unroll_kw) si.unroll(kw);
  if (depthwise) {
    si.unroll(rax[0]);
  } else if (k.unroll_ib) {
    si.unroll(rax[3]);
  }
}

}  // namespace anvil::ops::conv_nchwc_detail
