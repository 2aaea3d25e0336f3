// Integer depthwise 2-D convolutions on int8 weights (a grouped ConvInteger, QLinearConv or QDQ
// Conv with one input and one output channel per group: MobileNet's 3x3 layers):
//
//   depthwise_conv2d_int8_pack_weight  w int8 [C, 1, KH, KW] -> [ceil(C/16), KH, KW, 16] (zeros
//                 past C): each tap's weights for 16 channels side by side, one vector
//   depthwise_conv2d_int8  x uint8 [N, C, H, W], packed int8, optional pad_value uint8 [] (what
//                 the padding holds: the activations' zero point); attributes strides,
//                 dilations, pads (window.h)                          -> int32 [N, C, OH, OW]
//     xb[n, cb, y, x, l]      = x[n, 16 cb + l, y - pad_top, x - pad_left], else pad_value (past
//                               C: 0), the input blocked by 16 channels and padded, computed first
//     acc[n, cb, oy, ox, l]   = sum over ky, kx of xb[n, cb, sy oy + dy ky, sx ox + dx kx, l]
//                               * packed[cb, ky, kx, l]
//     out[n, c, oy, ox]       = acc[n, c/16, oy, ox, c%16]. Exact int32 arithmetic.
//   With attribute blocked = 1 (alter_layout's form, graph/layout.cc), x is uint8 NCHW16c
//   [N, ceil(C/16), H, W, 16] (read in place, or through a padded copy where the window pads)
//   and the output int32 NCHW16c (acc itself); the padded channels' filters are zeros.
//
// There is no reduction over channels, so no dot-product instruction applies: each tap is a
// vector multiply-add of 16 channels in int32 lanes (a byte load widened), and the kernel is bound
// by its loads. Default x86 schedule: the output in tiles of one row by tile_w columns by one
// block of 16 channels, the rows and blocks in parallel when the work pays; per tile the
// accumulators in registers, the taps outside the tile's columns.
#include <algorithm>

#include "anvil/ir/op.h"
#include "anvil/ops/families.h"
#include "anvil/ops/int8_dot.h"
#include "anvil/ops/op.h"
#include "anvil/ops/schedule_util.h"
#include "anvil/ops/window.h"
#include "anvil/support/error.h"
#include "anvil/support/int_math.h"

namespace anvil::ops {

namespace {

using ir::DataType;
using ir::Expr;
using ir::IterVar;
using ir::Var;

constexpr int kBlock = 16;  // channels per packed block

std::vector<TensorType> pack_infer(const std::vector<TensorType>& in, const Attrs&) {
  const std::string op = "depthwise_conv2d_int8_pack_weight";
  ANVIL_CHECK(in.size() == 1, op, ": expects 1 input (w), got ", in.size());
  ANVIL_CHECK(in[0].dtype == DataType::Int(8), op, ": input 'w' must be int8, not ", in[0].dtype);
  ANVIL_CHECK(in[0].shape.size() == 4 && in[0].shape[1] == 1, op,
              ": input 'w' must be [C, 1, KH, KW], got ", list_str(in[0].shape));
  const std::vector<int64_t>& w = in[0].shape;
  return {{{ceil_div(w[0], kBlock), w[2], w[3], kBlock}, DataType::Int(8)}};
}

struct Problem {
  int64_t N = 0, C = 0, H = 0, W = 0, KH = 0, KW = 0, OH = 0, OW = 0, CB = 0;
  Window win;
  bool pad_input = false, blocked = false;
  bool strided = false;  // a stride above 1 on some axis
};

Problem analyze(const std::vector<TensorType>& in, const Attrs& attrs) {
  const std::string op = "depthwise_conv2d_int8";
  const bool blocked = attrs.get_int("blocked", 0) != 0;
  check_int8_conv_inputs(op, in, blocked);
  ANVIL_CHECK(in[1].dtype == DataType::Int(8) && in[1].shape.size() == 4, op,
              ": input 'packed' must be int8 [C/16, KH, KW, 16], got ", to_string(in[1]));
  Problem p;
  p.win = parse_window(attrs, 2, 0);
  p.N = in[0].shape[0];
  p.blocked = blocked;
  p.C = blocked ? in[0].shape[1] * kBlock : in[0].shape[1];
  p.H = in[0].shape[2];
  p.W = in[0].shape[3];
  p.KH = in[1].shape[1];
  p.KW = in[1].shape[2];
  p.CB = ceil_div(p.C, kBlock);
  ANVIL_CHECK(in[1].shape[0] == p.CB && in[1].shape[3] == kBlock, op, ": input 'packed' ",
              list_str(in[1].shape), " does not hold the ", p.C, " channels of x ",
              to_string(in[0]), " (expected [", p.CB, ", KH, KW, ", kBlock, "])");
  p.OH = int8_window_extent(op, in[0], p.win, 0, p.H, p.KH);
  p.OW = int8_window_extent(op, in[0], p.win, 1, p.W, p.KW);
  p.pad_input = in.size() == 3;
  p.strided = p.win.strides[0] > 1 || p.win.strides[1] > 1;
  return p;
}

std::vector<te::Tensor> depthwise_int8_compute(const std::vector<te::Tensor>& in,
                                               const Attrs& attrs) {
  std::vector<TensorType> types;
  for (const te::Tensor& t : in) types.push_back(type_of(t));
  Problem p = analyze(types, attrs);
  te::Tensor x = in[0], w = in[1];
  const int C = static_cast<int>(p.C), H = static_cast<int>(p.H), W = static_cast<int>(p.W);
  const int pt = static_cast<int>(p.win.pad_lo[0]), pl = static_cast<int>(p.win.pad_lo[1]);
  const int64_t HP = p.H + p.win.pad_lo[0] + p.win.pad_hi[0];
  const int64_t WP = p.W + p.win.pad_lo[1] + p.win.pad_hi[1];
  // What the padding holds (read inside each compute's body, which records its reads).
  auto fill = [&] {
    return p.pad_input ? in[2](std::vector<Expr>{}) : ir::make_zero(DataType::UInt(8));
  };
  te::Tensor xb = x;
  if (p.blocked && int8_window_pads(p.win)) {
    xb = int8_padded_blocked(x, p.win, fill, "depthwise_conv2d_int8_x");
  } else if (!p.blocked) {
    xb = te::compute(
        to_exprs({p.N, p.CB, HP, WP, kBlock}),
        [&](const std::vector<Var>& v) {
          Expr c = v[1] * kBlock + v[4], y = v[2] - pt, xx = v[3] - pl;
          Expr inside = y >= 0 && y < H && xx >= 0 && xx < W;
          Expr value = x(v[0], min(c, C - 1), max(min(y, H - 1), 0), max(min(xx, W - 1), 0));
          return select(c < C, select(inside, value, fill()), ir::make_zero(DataType::UInt(8)));
        },
        "depthwise_conv2d_int8_x");
  }
  IterVar ky = te::reduce_axis(static_cast<int>(p.KH), "ky");
  IterVar kx = te::reduce_axis(static_cast<int>(p.KW), "kx");
  const int sy = static_cast<int>(p.win.strides[0]), sx = static_cast<int>(p.win.strides[1]);
  const int dy = static_cast<int>(p.win.dilations[0]), dx = static_cast<int>(p.win.dilations[1]);
  te::Tensor acc = te::compute(
      to_exprs({p.N, p.CB, p.OH, p.OW, kBlock}),
      [&](const std::vector<Var>& v) {
        Expr a = xb(v[0], v[1], v[2] * sy + ky->var * dy, v[3] * sx + kx->var * dx, v[4]);
        Expr b = w(v[1], ky->var, kx->var, v[4]);
        return te::sum(cast(DataType::Int32(), a) * cast(DataType::Int32(), b), {ky, kx});
      },
      "depthwise_conv2d_int8_acc");
  return {int8_conv_output(acc, p.blocked, p.C, "depthwise_conv2d_int8")};
}

std::vector<runtime::NDArray> depthwise_int8_reference(const std::vector<runtime::NDArray>& in,
                                                       const Attrs& attrs) {
  std::vector<TensorType> types = {{in[0].shape(), DataType::UInt(8)},
                                   {in[1].shape(), DataType::Int(8)}};
  if (in.size() == 3) types.push_back({in[2].shape(), DataType::UInt(8)});
  Problem p = analyze(types, attrs);
  const auto* x = in[0].data_as<uint8_t>();
  const auto* w = in[1].data_as<int8_t>();
  const int64_t fill = in.size() == 3 ? in[2].data_as<uint8_t>()[0] : 0;
  runtime::NDArray out =
      runtime::NDArray::empty(p.blocked ? std::vector<int64_t>{p.N, p.CB, p.OH, p.OW, kBlock}
                                        : std::vector<int64_t>{p.N, p.C, p.OH, p.OW},
                              runtime::dl_int32());
  // Blocked, x and the output are NCHW16c, and p.C counts the padded channels.
  auto at = [&](int64_t n, int64_t c, int64_t y, int64_t xx, int64_t h, int64_t w) {
    if (!p.blocked) return ((n * p.C + c) * h + y) * w + xx;
    return (((n * p.CB + c / kBlock) * h + y) * w + xx) * kBlock + c % kBlock;
  };
  int32_t* o = out.data_as<int32_t>();
  for (int64_t n = 0; n < p.N; ++n)
    for (int64_t c = 0; c < p.C; ++c)
      for (int64_t oy = 0; oy < p.OH; ++oy)
        for (int64_t ox = 0; ox < p.OW; ++ox) {
          int64_t s = 0;
          for (int64_t ky = 0; ky < p.KH; ++ky)
            for (int64_t kx = 0; kx < p.KW; ++kx) {
              const int64_t y = oy * p.win.strides[0] + ky * p.win.dilations[0] - p.win.pad_lo[0];
              const int64_t xx = ox * p.win.strides[1] + kx * p.win.dilations[1] - p.win.pad_lo[1];
              const bool inside = y >= 0 && y < p.H && xx >= 0 && xx < p.W;
              const int64_t a = inside ? x[at(n, c, y, xx, p.H, p.W)] : fill;
              const int64_t b = w[((c / kBlock * p.KH + ky) * p.KW + kx) * kBlock + c % kBlock];
              s += a * b;
            }
          o[at(n, c, oy, ox, p.OH, p.OW)] = static_cast<int32_t>(s);
        }
  return {out};
}

// Whether the schedule reads the padding through selects instead of a padded copy.
bool inline_padding(const Problem& p) {
  return p.blocked && p.strided;
}

struct Tiles {
  int64_t tw = 1, parallel = 0;
};

Tiles default_tiles(const Problem& p, const Target& target) {
  // One block of 16 channels is 16 / lanes vectors per column. Blocked and strided, the padding
  // is a select on the loads (no padded copy, which costs as much as the taps when half the
  // input is skipped) and 4 columns per tile (MobileNet v1's stride-2 layers on Zen 5: 0.21 ->
  // 0.13 ms at 56x56; its unstrided ones were 1.15x slower so); otherwise columns to 3/4 of the
  // registers. Balanced so that the last tile of a row is not a short tail.
  const int64_t vectors = kBlock / int8_dot_lanes(target);
  const int64_t cols =
      inline_padding(p) ? 4 : std::max<int64_t>(1, int8_tile_registers(target) * 3 / 4 / vectors);
  Tiles t;
  t.tw = ceil_div(p.OW, ceil_div(p.OW, cols));
  t.parallel = p.N * p.C * p.OH * p.OW * p.KH * p.KW >= kParallelMultiplyAdds ? 1 : 0;
  return t;
}

ConfigSpace depthwise_int8_space(const std::vector<TensorType>& in, const Attrs& attrs,
                                 const Target& target) {
  Problem p = analyze(in, attrs);
  Tiles d = default_tiles(p, target);
  Knob w{"tile_w", {d.tw}}, par{"parallel", {d.parallel, 1 - d.parallel}};
  for (int64_t v : {2, 4, 7, 8, 14, 16, 28})
    if (v <= p.OW && v != d.tw) w.values.push_back(v);
  return {w, par};
}

void schedule_depthwise_int8_x86(te::Schedule& s, const std::vector<te::Tensor>& outs,
                                 const Target& target, const Config& config) {
  const te::Tensor& out = outs[0];
  const auto [acc, xb, w] = inline_around_product(s, out, "depthwise_conv2d_int8");
  Problem p;
  p.N = ir::as_const_int(acc->shape[0]).value();
  p.CB = ir::as_const_int(acc->shape[1]).value();
  p.OH = ir::as_const_int(acc->shape[2]).value();
  p.OW = ir::as_const_int(acc->shape[3]).value();
  const bool blocked = out->shape.size() == 5;
  p.blocked = blocked;
  p.C = ir::as_const_int(out->shape[1]).value() * (blocked ? kBlock : 1);
  p.KH = ir::as_const_int(w->shape[1]).value();
  p.KW = ir::as_const_int(w->shape[2]).value();
  // (The window is not at hand here: a row read at least twice as wide as written is strided.)
  p.strided = ir::as_const_int(xb->shape[3]).value() >= 2 * p.OW;
  Tiles d = default_tiles(p, target);
  const int64_t tw = knob(config, "tile_w", d.tw), par = knob(config, "parallel", d.parallel);
  ANVIL_CHECK(tw >= 1, "depthwise_conv2d_int8: knob tile_w must be positive, not ", tw);

  // The output: n, channel blocks and rows in one parallel loop; inside, the column tiles (their
  // own loop, so that a shorter last tile splits off once), then the tile's columns, each a vector
  // of the block's channels.
  IterVar tile;
  te::Stage so = s[out];
  std::vector<IterVar> ax = so.axis();
  IterVar outer;
  if (blocked) {
    auto [wo, wi] = so.split(ax[3], tw);
    so.reorder({ax[0], ax[1], ax[2], wo, wi, ax[4]});
    so.vectorize(ax[4]);
    outer = so.fuse(so.fuse(ax[0], ax[1]), ax[2]);
    tile = wo;
  } else {
    auto [co, ci] = so.split(ax[1], kBlock);
    auto [wo, wi] = so.split(ax[3], tw);
    so.reorder({ax[0], co, ax[2], wo, wi, ci});
    so.vectorize(ci);
    outer = so.fuse(so.fuse(ax[0], co), ax[2]);
    tile = wo;
  }
  if (par) so.parallel(outer);

  // The accumulators at the tile loop, the taps outside the tile's columns and channel vector.
  te::Stage sa = s[acc];
  sa.set_scope(ir::MemoryScope::kLocal);
  sa.compute_at(so, tile);
  std::vector<IterVar> aa = sa.axis(), ra = sa.reduce_axis();
  sa.reorder({ra[0], ra[1], aa[3], aa[4]});
  sa.unroll(aa[3]);
  sa.vectorize(aa[4]);

  // The padding as selects on the loads, or the padded input first, its rows in parallel.
  if (!xb.is_compute()) return;
  if (inline_padding(p)) {
    s[xb].compute_inline();
    return;
  }
  te::Stage sx = s[xb];
  std::vector<IterVar> xa = sx.axis();
  IterVar rows = sx.fuse(sx.fuse(xa[0], xa[1]), xa[2]);
  if (par) sx.parallel(rows);
}

}  // namespace

void register_depthwise_int8_ops() {
  OpDef pack;
  set_int8_packing_defaults(pack);
  pack.name = "depthwise_conv2d_int8_pack_weight";
  pack.infer = pack_infer;
  pack.compute = [](const std::vector<te::Tensor>& in, const Attrs& attrs) {
    TensorType t = pack_infer({type_of(in[0])}, attrs)[0];
    const te::Tensor& w = in[0];
    const int C = static_cast<int>(shape_of(w)[0]);
    return std::vector<te::Tensor>{te::compute(
        to_exprs(t.shape),
        [&](const std::vector<Var>& v) {
          Expr c = v[0] * kBlock + v[3];
          return select(c < C, w(min(c, C - 1), 0, v[1], v[2]), ir::make_zero(DataType::Int(8)));
        },
        "depthwise_conv2d_int8_pack_weight")};
  };
  pack.reference = [](const std::vector<runtime::NDArray>& in, const Attrs& attrs) {
    TensorType t = pack_infer({{in[0].shape(), DataType::Int(8)}}, attrs)[0];
    const std::vector<int64_t>& ws = in[0].shape();
    runtime::NDArray out = runtime::NDArray::empty(t.shape, to_dlpack(DataType::Int(8)));
    const auto* w = in[0].data_as<int8_t>();
    auto* o = out.data_as<int8_t>();
    for (int64_t cb = 0; cb < t.shape[0]; ++cb)
      for (int64_t ky = 0; ky < ws[2]; ++ky)
        for (int64_t kx = 0; kx < ws[3]; ++kx)
          for (int64_t l = 0; l < kBlock; ++l) {
            const int64_t c = cb * kBlock + l;
            *o++ = c < ws[0] ? w[(c * ws[2] + ky) * ws[3] + kx] : int8_t{0};
          }
    return std::vector<runtime::NDArray>{out};
  };
  register_op(std::move(pack));

  OpDef def;
  def.name = "depthwise_conv2d_int8";
  def.pattern = Pattern::kComplexOutFusable;
  def.attrs = window_attrs(2, 0);
  def.attrs.push_back({"blocked",
                       AttrType::kInt,
                       int64_t{0},
                       {one_of({0, 1})},
                       "1: x and the output are NCHW16c (alter_layout's form)"});
  def.flops = [](const std::vector<TensorType>& in, const std::vector<TensorType>&,
                 const Attrs& attrs) {
    Problem p = analyze(in, attrs);
    return 2.0 * static_cast<double>(p.N * p.C * p.OH * p.OW) * static_cast<double>(p.KH * p.KW);
  };
  def.infer = [](const std::vector<TensorType>& in, const Attrs& attrs) {
    Problem p = analyze(in, attrs);
    if (p.blocked)
      return std::vector<TensorType>{{{p.N, p.CB, p.OH, p.OW, kBlock}, DataType::Int32()}};
    return std::vector<TensorType>{{{p.N, p.C, p.OH, p.OW}, DataType::Int32()}};
  };
  def.compute = depthwise_int8_compute;
  def.reference = depthwise_int8_reference;
  def.schedule_x86 = schedule_depthwise_int8_x86;
  def.space = depthwise_int8_space;
  register_op(std::move(def));
}

}  // namespace anvil::ops
