// Integer 2-D convolutions on int8 weights (ConvInteger, QLinearConv and what the importer maps to
// them):
//
//   conv2d_int8_pack_weight  w int8 [O, C, KH, KW] -> [ceil(O/16), ceil(C/4), KH, KW, 16, 4]
//                 (zeros past O and C): each output channel's weights in groups of 4 input
//                 channels, 16 output channels side by side, as the dot-product instruction reads.
//                 With attribute group = G > 1, w is [O, Cg, KH, KW] (Cg = C/G input channels per
//                 group) and a block holds the window of input channels its 16 filters read
//                 (Grouping below), each filter's weights zero outside its own group.
//   conv2d_int8   x uint8 [N, C, H, W], packed int8, optional pad_value uint8 [] (what the
//                 padding holds: the activations' zero point, so that the zero point's share is
//                 the same at every output, a constant per channel); attributes strides,
//                 dilations, pads, group (window.h) and channels = O -> int32 [N, O, OH, OW]
//     xb[n, c4, y, x, i]     = x[n, 4 c4 + i, y - pad_top, x - pad_left], else pad_value (past C:
//                              0), the input blocked by 4 channels and padded, computed first
//     acc[n, ob, oy, ox, o]  = sum over c4, ky, kx, i of xb[n, c4, sy oy + dy ky, sx ox + dx kx, i]
//                              * packed[ob, c4, ky, kx, o, i]   (grouped: xb's c4 offset by the
//                              block's first group, base(ob) / 4)
//     out[n, oc, oy, ox]     = acc[n, oc/16, oy, ox, oc%16]. Exact int32 arithmetic.
//   With attribute blocked = 1 (alter_layout's form, graph/layout.cc) the output is int32
//   NCHW16c [N, ceil(O/16), OH, OW, 16] (acc itself), and x may be uint8 NCHW16c
//   [N, ceil(C/16), H, W, 16] (rank 5; a first layer of few channels keeps rank 4): a group of 4
//   channels is 4 bytes of a pixel's block, read in place, so that no reordering copy of the
//   input is made (only a padded one where the window pads), the epilogue stores whole vectors
//   and consecutive layers exchange blocked tensors.
//
// Default x86 schedule: the output in tiles of one row by tile_w columns by tile_c output
// channels (whole blocks of 16 dividing the padded channels), the rows and channel tiles in
// parallel when the work pays; per tile the accumulators in registers (acc at the tile loop), the
// reduction over input channel groups and taps outside the tile's columns and channel vectors, each
// vector's 16 or 8 channels by 4 input channels tensorized (int8_dot.h's pick_int8_dot: vpdpbusd,
// AVX2's vpmaddubsw form where the values keep pairs of products in int16, else exact).
#include <algorithm>
#include <functional>

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

constexpr int kBlock = 16;  // output channels per packed block
constexpr int kGroup = 4;   // input channels per dot-product step

// The channel groups of a convolution of O filters over C = G * Cg input channels. A block of 16
// filters reads one window of input channels, from the first channel of its first group: Cg
// channels when O/G is a multiple of 16 (one group per block), 16/(O/G) groups' when O/G divides
// 16 and O is a multiple of 16 (several groups per block, each filter's weights zero outside its
// own). Cg a multiple of 4, so that a window starts at a whole group of 4 bytes. One group: the
// window is every channel, rounded up to 4.
struct Grouping {
  int64_t G = 1, O = 0, Cg = 0;

  int64_t filters() const { return O / G; }  // per group
  int64_t groups_per_block() const { return G == 1 ? 1 : std::max<int64_t>(1, kBlock / filters()); }
  int64_t window() const {
    return G == 1 ? ceil_div(Cg, kGroup) * kGroup : Cg * groups_per_block();
  }
  // The first input channel that block ob reads.
  int64_t base(int64_t ob) const { return G == 1 ? 0 : ob * kBlock / filters() * Cg; }
  // The same in groups of 4 channels, for a block index in the IR (grouped only).
  Expr base4(Expr ob) const {
    return floordiv(ob * kBlock, static_cast<int>(filters())) * static_cast<int>(Cg / kGroup);
  }
};

bool grouping_fits(const Grouping& g) {
  if (g.G == 1) return true;
  const int64_t og = g.filters();
  return g.O % g.G == 0 && g.Cg % kGroup == 0 && og > 0 &&
         (og % kBlock == 0 || (kBlock % og == 0 && g.O % kBlock == 0));
}

void check_grouping(const std::string& op, const Grouping& g) {
  ANVIL_CHECK(grouping_fits(g), op, ": group = ", g.G, " with ", g.Cg, " input and ", g.O, " / ",
              g.G,
              " output channels per group is not supported (input channels per group a multiple "
              "of ",
              kGroup, "; output channels per group a multiple of ", kBlock, ", or dividing ",
              kBlock, " with all output channels a multiple of ", kBlock, ")");
}

std::vector<TensorType> pack_infer(const std::vector<TensorType>& in, const Attrs& attrs) {
  const std::string op = "conv2d_int8_pack_weight";
  ANVIL_CHECK(in.size() == 1, op, ": expects 1 input (w), got ", in.size());
  ANVIL_CHECK(in[0].dtype == DataType::Int(8), op, ": input 'w' must be int8, not ", in[0].dtype);
  ANVIL_CHECK(in[0].shape.size() == 4, op, ": input 'w' must be [O, C, KH, KW], got ",
              list_str(in[0].shape));
  const std::vector<int64_t>& w = in[0].shape;
  const Grouping g{attrs.get_int("group", 1), w[0], w[1]};
  check_grouping(op, g);
  return {{{ceil_div(w[0], kBlock), g.window() / kGroup, w[2], w[3], kBlock, kGroup},
           DataType::Int(8)}};
}

constexpr int kInBlock = kInt8ChannelBlock;  // channels per block of a blocked input

struct Problem {
  int64_t N = 0, C = 0, H = 0, W = 0, O = 0, KH = 0, KW = 0, OH = 0, OW = 0, C4 = 0, OB = 0;
  Grouping groups;  // C4 = groups.window() / 4: the groups of 4 channels that a block reads
  Window win;
  bool pad_input = false, blocked = false, blocked_in = false;

  // The input channels each filter reads (one group: all of x's, or those its weights cover).
  int64_t channels_per_filter() const {
    return groups.G == 1 ? std::min(C, C4 * kGroup) : groups.Cg;
  }
};

Problem analyze(const std::vector<TensorType>& in, const Attrs& attrs) {
  const std::string op = "conv2d_int8";
  const bool blocked = attrs.get_int("blocked", 0) != 0;
  const bool blocked_in = blocked && !in.empty() && in[0].shape.size() == 5;
  check_int8_conv_inputs(op, in, blocked_in);
  ANVIL_CHECK(in[1].dtype == DataType::Int(8) && in[1].shape.size() == 6, op,
              ": input 'packed' must be int8 [O/16, C/4, KH, KW, 16, 4], got ", to_string(in[1]));
  Problem p;
  p.win = parse_window(attrs, 2, kWindowGroup);
  p.N = in[0].shape[0];
  p.blocked = blocked;
  p.blocked_in = blocked_in;
  p.C = blocked_in ? in[0].shape[1] * kInBlock : in[0].shape[1];
  p.H = in[0].shape[2];
  p.W = in[0].shape[3];
  p.O = attrs.get_int("channels");
  p.KH = in[1].shape[2];
  p.KW = in[1].shape[3];
  p.OB = ceil_div(p.O, kBlock);
  // The input channels per group. Blocked, x's channels are padded to a block: the filters'
  // groups of 4 cover its last block in part (the channels past them hold what no filter reads),
  // and the packed weight says how many there are.
  p.groups = {p.win.group, p.O, p.C / p.win.group};
  if (blocked_in) {
    p.groups.Cg = in[1].shape[1] * kGroup / p.groups.groups_per_block();
  } else {
    ANVIL_CHECK(p.C % p.win.group == 0, op, ": input 'x' ", to_string(in[0]), " has ", p.C,
                " channels, not divisible by attribute 'group' = ", p.win.group);
  }
  check_grouping(op, p.groups);
  p.C4 = p.groups.window() / kGroup;
  const int64_t true_channels = p.groups.G == 1 ? p.C4 * kGroup : p.groups.G * p.groups.Cg;
  const std::vector<int64_t> want = {p.OB, p.C4, p.KH, p.KW, kBlock, kGroup};
  ANVIL_CHECK(
      in[1].shape == want && (!blocked_in || ceil_div(true_channels, kInBlock) == in[0].shape[1]),
      op, ": input 'packed' ", list_str(in[1].shape), " does not hold channels = ", p.O,
      " filters over the ", p.C, " input channels of x ", to_string(in[0]),
      p.groups.G == 1 ? "" : " in groups of " + std::to_string(p.groups.Cg));
  p.OH = int8_window_extent(op, in[0], p.win, 0, p.H, p.KH);
  p.OW = int8_window_extent(op, in[0], p.win, 1, p.W, p.KW);
  p.pad_input = in.size() == 3;
  return p;
}

std::vector<te::Tensor> conv_int8_compute(const std::vector<te::Tensor>& in, const Attrs& attrs) {
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
  // What the product reads: group c4's byte i at padded position (y, x).
  std::function<Expr(Expr, Expr, Expr, Expr, Expr)> read;
  if (!p.blocked_in) {
    te::Tensor xb = te::compute(
        to_exprs({p.N, ceil_div(p.C, kGroup), HP, WP, kGroup}),
        [&](const std::vector<Var>& v) {
          Expr c = v[1] * kGroup + v[4], y = v[2] - pt, xx = v[3] - pl;
          Expr inside = y >= 0 && y < H && xx >= 0 && xx < W;
          Expr value = x(v[0], min(c, C - 1), max(min(y, H - 1), 0), max(min(xx, W - 1), 0));
          return select(c < C, select(inside, value, fill()), ir::make_zero(DataType::UInt(8)));
        },
        "conv2d_int8_x");
    read = [xb](Expr n, Expr c4, Expr y, Expr xx, Expr i) { return xb(n, c4, y, xx, i); };
  } else {
    te::Tensor src =
        int8_window_pads(p.win) ? int8_padded_blocked(x, p.win, fill, "conv2d_int8_x") : x;
    constexpr int per_block = kInBlock / kGroup;
    read = [src](Expr n, Expr c4, Expr y, Expr xx, Expr i) {
      return src(n, floordiv(c4, per_block), y, xx, floormod(c4, per_block) * kGroup + i);
    };
  }
  IterVar c4 = te::reduce_axis(static_cast<int>(p.C4), "c4");
  IterVar ky = te::reduce_axis(static_cast<int>(p.KH), "ky");
  IterVar kx = te::reduce_axis(static_cast<int>(p.KW), "kx");
  IterVar i = te::reduce_axis(kGroup, "i");
  const int sy = static_cast<int>(p.win.strides[0]), sx = static_cast<int>(p.win.strides[1]);
  const int dy = static_cast<int>(p.win.dilations[0]), dx = static_cast<int>(p.win.dilations[1]);
  te::Tensor acc = te::compute(
      to_exprs({p.N, p.OB, p.OH, p.OW, kBlock}),
      [&](const std::vector<Var>& v) {
        // Grouped, the block's window of input channels starts at its first group's.
        Expr c = p.groups.G == 1 ? Expr(c4->var) : p.groups.base4(v[1]) + c4->var;
        Expr a = read(v[0], c, v[2] * sy + ky->var * dy, v[3] * sx + kx->var * dx, i->var);
        Expr b = w(v[1], c4->var, ky->var, kx->var, v[4], i->var);
        return te::sum(cast(DataType::Int32(), a) * cast(DataType::Int32(), b), {c4, ky, kx, i});
      },
      "conv2d_int8_acc");
  return {int8_conv_output(acc, p.blocked, p.O, "conv2d_int8")};
}

std::vector<runtime::NDArray> conv_int8_reference(const std::vector<runtime::NDArray>& in,
                                                  const Attrs& attrs) {
  std::vector<TensorType> types = {{in[0].shape(), DataType::UInt(8)},
                                   {in[1].shape(), DataType::Int(8)}};
  if (in.size() == 3) types.push_back({in[2].shape(), DataType::UInt(8)});
  Problem p = analyze(types, attrs);
  const auto* x = in[0].data_as<uint8_t>();
  const auto* w = in[1].data_as<int8_t>();
  const int64_t fill = in.size() == 3 ? in[2].data_as<uint8_t>()[0] : 0;
  // Blocked, the output's padded channels too (their filters are zeros).
  const int64_t O = p.blocked ? p.OB * kBlock : p.O;
  // The input channels filter oc reads: [lo, lo + Cg) (all of them, to a whole group of 4, with
  // one group).
  const Grouping& g = p.groups;
  const int64_t Cg = p.channels_per_filter();
  runtime::NDArray out =
      runtime::NDArray::empty(p.blocked ? std::vector<int64_t>{p.N, p.OB, p.OH, p.OW, kBlock}
                                        : std::vector<int64_t>{p.N, p.O, p.OH, p.OW},
                              runtime::dl_int32());
  auto x_at = [&](int64_t n, int64_t c, int64_t y, int64_t xx) {
    if (!p.blocked_in) return x[((n * p.C + c) * p.H + y) * p.W + xx];
    return x[(((n * (p.C / kInBlock) + c / kInBlock) * p.H + y) * p.W + xx) * kInBlock +
             c % kInBlock];
  };
  auto out_at = [&](int64_t n, int64_t oc, int64_t oy, int64_t ox) -> int32_t& {
    int32_t* o = out.data_as<int32_t>();
    if (!p.blocked) return o[((n * p.O + oc) * p.OH + oy) * p.OW + ox];
    return o[(((n * p.OB + oc / kBlock) * p.OH + oy) * p.OW + ox) * kBlock + oc % kBlock];
  };
  for (int64_t n = 0; n < p.N; ++n)
    for (int64_t oc = 0; oc < O; ++oc)
      for (int64_t oy = 0; oy < p.OH; ++oy)
        for (int64_t ox = 0; ox < p.OW; ++ox) {
          int64_t s = 0;
          const int64_t lo = g.G == 1 ? 0 : oc / g.filters() * g.Cg, base = g.base(oc / kBlock);
          for (int64_t c = lo; c < lo + Cg; ++c)
            for (int64_t ky = 0; ky < p.KH; ++ky)
              for (int64_t kx = 0; kx < p.KW; ++kx) {
                const int64_t y = oy * p.win.strides[0] + ky * p.win.dilations[0] - p.win.pad_lo[0];
                const int64_t xx =
                    ox * p.win.strides[1] + kx * p.win.dilations[1] - p.win.pad_lo[1];
                const bool inside = y >= 0 && y < p.H && xx >= 0 && xx < p.W;
                const int64_t a = inside ? x_at(n, c, y, xx) : fill;
                const int64_t b =
                    w[((((oc / kBlock * p.C4 + (c - base) / kGroup) * p.KH + ky) * p.KW + kx) *
                           kBlock +
                       oc % kBlock) *
                          kGroup +
                      (c - base) % kGroup];
                s += a * b;
              }
          out_at(n, oc, oy, ox) = static_cast<int32_t>(s);
        }
  return {out};
}

struct Tiles {
  int64_t tw = 1, tc = kBlock, parallel = 0;
};

Tiles default_tiles(const Problem& p, const Target& target) {
  const int64_t lanes = int8_dot_lanes(target);
  const int64_t regs = int8_tile_registers(target);
  Tiles t;
  // One block of 16 channels (2 AVX2 vectors, 1 AVX-512 one), columns to 3/4 of the registers,
  // balanced so that the last tile of a row is not a short tail.
  t.tc = kBlock;
  const int64_t vectors = kBlock / lanes;
  const int64_t cols = std::max<int64_t>(1, regs * 3 / 4 / vectors);
  const int64_t tiles = ceil_div(p.OW, cols);
  t.tw = ceil_div(p.OW, tiles);
  t.parallel = p.N * p.O * p.OH * p.OW * p.C * p.KH * p.KW >= kParallelMultiplyAdds ? 1 : 0;
  return t;
}

ConfigSpace conv_int8_space(const std::vector<TensorType>& in, const Attrs& attrs,
                            const Target& target) {
  Problem p = analyze(in, attrs);
  Tiles d = default_tiles(p, target);
  Knob w{"tile_w", {d.tw}}, c{"tile_c", {d.tc}}, par{"parallel", {d.parallel, 1 - d.parallel}};
  for (int64_t v : {2, 4, 6, 8, 12, 16})
    if (v <= p.OW && v != d.tw) w.values.push_back(v);
  for (int64_t b : {2, 4})
    if (p.OB % b == 0) c.values.push_back(b * kBlock);
  return {w, c, par};
}

void schedule_conv_int8_x86(te::Schedule& s, const std::vector<te::Tensor>& outs,
                            const Target& target, const Config& config) {
  const te::Tensor& out = outs[0];
  const auto [acc, xb, w] = inline_around_product(s, out, "conv2d_int8");
  Problem p;
  p.N = ir::as_const_int(acc->shape[0]).value();
  p.OB = ir::as_const_int(acc->shape[1]).value();
  p.OH = ir::as_const_int(acc->shape[2]).value();
  p.OW = ir::as_const_int(acc->shape[3]).value();
  const bool blocked = out->shape.size() == 5;
  p.O = ir::as_const_int(out->shape[1]).value() * (blocked ? kBlock : 1);
  p.C = ir::as_const_int(w->shape[1]).value() * kGroup;
  p.KH = ir::as_const_int(w->shape[2]).value();
  p.KW = ir::as_const_int(w->shape[3]).value();
  Tiles d = default_tiles(p, target);
  const int64_t tw = knob(config, "tile_w", d.tw), tc = knob(config, "tile_c", d.tc);
  const int64_t par = knob(config, "parallel", d.parallel);
  ANVIL_CHECK(tw >= 1, "conv2d_int8: knob tile_w must be positive, not ", tw);
  ANVIL_CHECK(tc > 0 && tc % kBlock == 0 && (p.OB * kBlock) % tc == 0,
              "conv2d_int8: knob tile_c must be a multiple of ", kBlock,
              " dividing the padded channels ", p.OB * kBlock, ", not ", tc);
  const int64_t lanes = int8_dot_lanes(target);

  // The output: n, channel tiles and rows in one parallel loop; inside, the column tiles (a loop
  // of its own, so that a last, shorter tile splits off as one: fused into the parallel loop, its
  // guard would stay in every tile), then the tile's channels and columns.
  // The epilogue runs on vectors of channels (blocked, one block's; else the tile's, stored to
  // their planes).
  te::Stage so = s[out];
  std::vector<IterVar> ax = so.axis();
  auto [co, ci] = so.split(ax[1], blocked ? tc / kBlock : tc);
  auto [wo, wi] = so.split(ax[3], tw);
  if (blocked) {
    so.reorder({ax[0], co, ax[2], wo, ci, wi, ax[4]});
    so.vectorize(ax[4]);
  } else {
    so.reorder({ax[0], co, ax[2], wo, wi, ci});
    so.vectorize(ci);
  }
  IterVar outer = so.fuse(so.fuse(ax[0], co), ax[2]);
  if (par) so.parallel(outer);

  // The accumulators at the tile loop; the reduction outside the tile's columns and vectors.
  te::Stage sa = s[acc];
  sa.set_scope(ir::MemoryScope::kLocal);
  sa.compute_at(so, wo);
  std::vector<IterVar> aa = sa.axis(), ra = sa.reduce_axis();
  IterVar oc = aa[4], nh, nl = oc;
  if (lanes < kBlock) std::tie(nh, nl) = sa.split(oc, lanes);
  std::vector<IterVar> order = {ra[0], ra[1], ra[2], aa[3], aa[1]};
  if (nh.get()) order.push_back(nh);
  order.insert(order.end(), {nl, ra[3]});
  sa.reorder(order);
  sa.unroll(aa[3]);
  sa.unroll(aa[1]);
  if (nh.get()) sa.unroll(nh);
  sa.tensorize(nl, pick_int8_dot(target, lanes, int8_values_read(xb), int8_values_read(w)));

  // The blocked, padded input first (if any), its rows in parallel.
  if (!xb.is_compute()) return;
  te::Stage sx = s[xb];
  std::vector<IterVar> xa = sx.axis();
  IterVar rows = sx.fuse(sx.fuse(xa[0], xa[1]), xa[2]);
  if (par) sx.parallel(rows);
  if (ir::as_const_int(xb->shape[4]).value() == kInBlock) sx.vectorize(xa[4]);
}

}  // namespace

bool conv_int8_takes_groups(int64_t channels, int64_t filters, int64_t group) {
  return group >= 1 && channels % group == 0 && grouping_fits({group, filters, channels / group});
}

void register_conv_int8_ops() {
  OpDef pack;
  set_int8_packing_defaults(pack);
  pack.name = "conv2d_int8_pack_weight";
  pack.attrs = {{"group",
                 AttrType::kInt,
                 int64_t{1},
                 {positive()},
                 "channel groups: w is [O, C/group, KH, KW]"}};
  pack.infer = pack_infer;
  pack.compute = [](const std::vector<te::Tensor>& in, const Attrs& attrs) {
    TensorType t = pack_infer({type_of(in[0])}, attrs)[0];
    const te::Tensor& w = in[0];
    const std::vector<int64_t> ws = shape_of(w);
    const Grouping g{attrs.get_int("group", 1), ws[0], ws[1]};
    const int O = static_cast<int>(ws[0]), Cg = static_cast<int>(ws[1]);
    return std::vector<te::Tensor>{te::compute(
        to_exprs(t.shape),
        [&](const std::vector<Var>& v) {
          // Output channel o, and input channel c relative to o's group.
          Expr o = v[0] * kBlock + v[4], c = v[1] * kGroup + v[5];
          if (g.G > 1) {
            const int og = static_cast<int>(g.filters());
            c = c + g.base4(v[0]) * kGroup - floordiv(o, og) * Cg;
          }
          return select(o < O && c >= 0 && c < Cg,
                        w(min(o, O - 1), max(min(c, Cg - 1), 0), v[2], v[3]),
                        ir::make_zero(DataType::Int(8)));
        },
        "conv2d_int8_pack_weight")};
  };
  pack.reference = [](const std::vector<runtime::NDArray>& in, const Attrs& attrs) {
    TensorType t = pack_infer({{in[0].shape(), DataType::Int(8)}}, attrs)[0];
    const std::vector<int64_t>& ws = in[0].shape();
    const Grouping g{attrs.get_int("group", 1), ws[0], ws[1]};
    runtime::NDArray out = runtime::NDArray::empty(t.shape, to_dlpack(DataType::Int(8)));
    const auto* w = in[0].data_as<int8_t>();
    auto* o = out.data_as<int8_t>();
    for (int64_t ob = 0; ob < t.shape[0]; ++ob)
      for (int64_t c4 = 0; c4 < t.shape[1]; ++c4)
        for (int64_t ky = 0; ky < ws[2]; ++ky)
          for (int64_t kx = 0; kx < ws[3]; ++kx)
            for (int64_t oi = 0; oi < kBlock; ++oi)
              for (int64_t i = 0; i < kGroup; ++i) {
                // Output channel oc, and input channel c relative to oc's group.
                const int64_t oc = ob * kBlock + oi;
                const int64_t c = g.base(ob) + c4 * kGroup + i - oc / g.filters() * g.Cg;
                *o++ = oc < ws[0] && c >= 0 && c < ws[1]
                           ? w[((oc * ws[1] + c) * ws[2] + ky) * ws[3] + kx]
                           : int8_t{0};
              }
    return std::vector<runtime::NDArray>{out};
  };
  register_op(std::move(pack));

  OpDef def;
  def.name = "conv2d_int8";
  def.pattern = Pattern::kComplexOutFusable;
  def.attrs = window_attrs(2, kWindowGroup);
  def.attrs.push_back(
      {"channels", AttrType::kInt, std::nullopt, {positive()}, "O, the output channels", true});
  def.attrs.push_back({"blocked",
                       AttrType::kInt,
                       int64_t{0},
                       {one_of({0, 1})},
                       "1: x and the output are NCHW16c (alter_layout's form)"});
  def.flops = [](const std::vector<TensorType>& in, const std::vector<TensorType>&,
                 const Attrs& attrs) {
    Problem p = analyze(in, attrs);
    return 2.0 * static_cast<double>(p.N * p.O * p.OH * p.OW) *
           static_cast<double>(p.channels_per_filter() * p.KH * p.KW);
  };
  def.infer = [](const std::vector<TensorType>& in, const Attrs& attrs) {
    Problem p = analyze(in, attrs);
    if (p.blocked)
      return std::vector<TensorType>{{{p.N, p.OB, p.OH, p.OW, kBlock}, DataType::Int32()}};
    return std::vector<TensorType>{{{p.N, p.O, p.OH, p.OW}, DataType::Int32()}};
  };
  def.compute = conv_int8_compute;
  def.reference = conv_int8_reference;
  def.schedule_x86 = schedule_conv_int8_x86;
  def.space = conv_int8_space;
  register_op(std::move(def));
}

}  // namespace anvil::ops
