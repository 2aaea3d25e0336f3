// Direct convolutions on NCHW[x]c (nchwc.h) and their weight-packing operators.
//
//   conv2d_nchwc            x [N, C/ib, H, W, ib], weight [O/ob, C/group/ib, KH, KW, ib, ob]
//                           -> [N, O/ob, OH, OW, ob]
//     out[n, oc, y, x, o] = sum_{ic, kh, kw, i} P[n, g(oc)*Cg + ic, y*sh + kh*dh, x*sw + kw*dw, i]
//                                                * w[oc, ic, kh, kw, i, o]
//     with Cg = C/group/ib blocks per group and g(oc) = oc / (O/ob/group), the group of output
//     block oc: a grouped convolution (ResNeXt, RegNet) whose groups fill whole blocks on both
//     sides reads only its own group's input blocks.
//   depthwise_conv2d_nchwc  x [N, C/b, H, W, b], weight [C/b, 1, KH, KW, 1, b] -> [N, C/b, OH, OW,
//   b]
//     out[n, c, y, x, j] = sum_{kh, kw} P[n, c, y*sh + kh*dh, x*sw + kw*dw, j] * w[c, 0, kh, kw, 0,
//     j]
//   P is x zero-padded (a stage of its own, only when there is padding; it covers just the rows
//   and columns the convolution reads). Attributes (ONNX's): strides, dilations (default 1), pads
//   [top, left, bottom, right] (default 0), group (conv2d_nchwc, default 1). No bias (a bias is
//   an epilogue the schedule fuses). float32 only.
//
//   conv2d_nchwc_pack_weight            OIHW [O, C, KH, KW] -> [O'/ob, C'/ib, KH, KW, ib, ob]
//                                       attrs in_block, out_block; O', C' padded with zeros.
//                                       With merge m > 1 (and group G), the weight of G groups of
//                                       O/G = ob/m output channels becomes that of ceil(G/m)
//                                       groups of ob: block-diagonal, each output channel's C
//                                       weights at its group's slot (C' = m*C), zeros elsewhere
//   depthwise_conv2d_nchwc_pack_weight  [C, 1, KH, KW] -> [C'/b, 1, KH, KW, 1, b]; attr block
//
// The schedules are in conv_nchwc_schedule.cc.
#include <algorithm>

#include "anvil/ir/op.h"
#include "anvil/ops/conv_nchwc_schedule.h"
#include "anvil/ops/families.h"
#include "anvil/ops/nchwc.h"
#include "anvil/ops/op.h"
#include "anvil/ops/schedule_util.h"
#include "anvil/ops/window.h"
#include "anvil/support/error.h"

namespace anvil::ops {

// The block that makes the layer's work cheapest, counted for the two roles a tensor's block
// plays: the vector of its producer's output channels (padded channels computed, at the rate
// vectors of that width retire on the target's FMA pipes) and the reduction step of its
// consumers (padded channels read and multiplied, at the full rate). Blocks are powers of two
// from 4 to the vector width, or the channel count itself below 4 (3: an RGB input, which would
// otherwise triple a stem's reduction). On Zen 5 a block of 8 halves the rate, so 116 channels pad
// to 128 in blocks of 16; on Zen 4 (two 256-bit pipes) blocks of 8 lose nothing, so they keep 120.
int64_t nchwc_block(int64_t channels, const Target& target) {
  const int64_t lanes = target.vector_lanes_f32();
  const double full = target.fma_lanes_per_cycle(lanes);
  auto cost = [&](int64_t b) {
    double padded = static_cast<double>(nchwc_channels(channels, b));
    return padded / target.fma_lanes_per_cycle(b) + padded / full;
  };
  int64_t best = channels < 4 ? channels : lanes;
  for (int64_t b = lanes; b >= 4; b /= 2)
    if (cost(b) < cost(best)) best = b;
  return best;
}

namespace conv_nchwc_detail {
namespace {

using namespace ir;

struct Params {
  std::string op;
  bool depthwise = false;
  int64_t N = 0, CB = 0, ib = 0, H = 0, W = 0;  // x [N, CB, H, W, ib]
  int64_t OB = 0, ob = 0, KH = 0, KW = 0;       // weight [OB, CB/group, KH, KW, ib, ob]
  // Groups (conv2d_nchwc): output block o reads the group's input blocks, from
  // (o / (OB/group)) * CBg on; each group's channels fill whole blocks on both sides.
  int64_t group = 1, CBg = 0;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1, pt = 0, pl = 0, pb = 0, pr = 0;
  int64_t OH = 0, OW = 0;
  // The extents of the padded source the convolution reads.
  int64_t PH = 0, PW = 0;
  bool padded() const { return pt > 0 || pl > 0 || PH > pt + H || PW > pl + W; }
};

Params parse(const std::string& op, const std::vector<TensorType>& in, const Attrs& attrs) {
  Params p;
  p.op = op;
  p.depthwise = op == "depthwise_conv2d_nchwc";
  ANVIL_CHECK(in.size() == 2, op, ": expects 2 inputs (x, weight), got ", in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    ANVIL_CHECK(in[i].dtype == DataType::Float32(), op, ": input ", i, " must be float32, not ",
                to_string(in[i]));
  }
  const std::vector<int64_t>& xs = in[0].shape;
  const std::vector<int64_t>& ws = in[1].shape;
  ANVIL_CHECK(xs.size() == 5, op, ": input x must have rank 5 (NCHW[x]c), got ", to_string(in[0]));
  ANVIL_CHECK(ws.size() == 6, op, ": weight must have rank 6 (",
              p.depthwise ? "[C/b, 1, KH, KW, 1, b]" : "[O/ob, C/ib, KH, KW, ib, ob]", "), got ",
              to_string(in[1]));
  p.N = xs[0];
  p.CB = xs[1];
  p.H = xs[2];
  p.W = xs[3];
  p.ib = xs[4];
  p.KH = ws[2];
  p.KW = ws[3];
  if (p.depthwise) {
    ANVIL_CHECK(ws[0] == p.CB && ws[1] == 1 && ws[4] == 1 && ws[5] == p.ib, op, ": weight ",
                to_string(in[1]), " does not match input x ", to_string(in[0]), " (expected [",
                p.CB, ", 1, KH, KW, 1, ", p.ib, "])");
    p.OB = p.CB;
    p.ob = p.ib;
  } else {
    p.group = parse_window(attrs, 2, kWindowGroup).group;
    ANVIL_CHECK(p.CB % p.group == 0 && ws[0] % p.group == 0, op, ": attribute 'group' = ", p.group,
                " does not divide the input's ", p.CB, " channel blocks and the weight's ", ws[0],
                " output blocks (each group must fill whole blocks)");
    ANVIL_CHECK(ws[1] * p.group == p.CB && ws[4] == p.ib, op, ": input x ", to_string(in[0]),
                " has ", p.CB, " channel blocks of ", p.ib, ", but weight ", to_string(in[1]),
                " expects ", ws[1], " blocks of ", ws[4], " per group (dimensions 1 and 4; group ",
                p.group, ")");
    p.OB = ws[0];
    p.ob = ws[5];
    p.CBg = ws[1];
  }
  Window w = parse_window(attrs, 2, p.depthwise ? 0u : unsigned{kWindowGroup});
  const std::vector<int64_t>& s = w.strides;
  const std::vector<int64_t>& d = w.dilations;
  std::vector<int64_t> pads = w.pads();
  p.sh = s[0];
  p.sw = s[1];
  p.dh = d[0];
  p.dw = d[1];
  p.pt = pads[0];
  p.pl = pads[1];
  p.pb = pads[2];
  p.pr = pads[3];
  auto out_extent = [&](const char* name, int64_t in_n, int64_t k, int64_t dil, int64_t lo,
                        int64_t hi, int64_t stride) {
    int64_t eff = (k - 1) * dil + 1;
    int64_t padded = in_n + lo + hi;
    ANVIL_CHECK(k >= 1 && eff <= padded, op, ": kernel ", name, " ", k, " (dilated ", eff,
                ", attribute 'dilations' = ", list_str(d), ") does not fit the padded input ", name,
                " ", padded, " (input ", in_n, ", attribute 'pads' = ", list_str(pads), ")");
    return (padded - eff) / stride + 1;
  };
  p.OH = out_extent("height", p.H, p.KH, p.dh, p.pt, p.pb, p.sh);
  p.OW = out_extent("width", p.W, p.KW, p.dw, p.pl, p.pr, p.sw);
  p.PH = (p.OH - 1) * p.sh + (p.KH - 1) * p.dh + 1;
  p.PW = (p.OW - 1) * p.sw + (p.KW - 1) * p.dw + 1;
  return p;
}

std::vector<int64_t> out_shape(const Params& p) {
  return {p.N, p.OB, p.OH, p.OW, p.ob};
}

std::vector<TensorType> types_of(const std::vector<te::Tensor>& in) {
  std::vector<TensorType> t;
  for (const te::Tensor& x : in) t.push_back({shape_of(x), x->dtype});
  return t;
}

// i clamped to [0, n): the load under the padding's select stays in bounds.
Expr clamp_index(Expr i, int64_t n) {
  return max(min(i, static_cast<int>(n - 1)), 0);
}

std::vector<te::Tensor> conv_compute(const std::string& op, const std::vector<te::Tensor>& in,
                                     const Attrs& attrs) {
  Params p = parse(op, types_of(in), attrs);
  te::Tensor x = in[0], w = in[1];
  te::Tensor src = x;
  if (p.padded()) {
    src = te::compute(
        {static_cast<int>(p.N), static_cast<int>(p.CB), static_cast<int>(p.PH),
         static_cast<int>(p.PW), static_cast<int>(p.ib)},
        [&](const std::vector<Var>& i) {
          Expr cond;
          auto add = [&](Expr c) { cond = cond.defined() ? (cond && c) : c; };
          Expr r = i[2] - static_cast<int>(p.pt), c = i[3] - static_cast<int>(p.pl);
          if (p.pt > 0) add(r >= 0);
          if (p.PH > p.pt + p.H) add(r < static_cast<int>(p.H));
          if (p.pl > 0) add(c >= 0);
          if (p.PW > p.pl + p.W) add(c < static_cast<int>(p.W));
          Expr v = x(i[0], i[1], clamp_index(r, p.H), clamp_index(c, p.W), i[4]);
          return cond.defined() ? select(cond, v, 0.0f) : v;
        },
        op + ".pad");
  }
  IterVar kh = te::reduce_axis(static_cast<int>(p.KH), "kh");
  IterVar kw = te::reduce_axis(static_cast<int>(p.KW), "kw");
  auto row = [&](Expr y) {
    Expr tap = p.dh == 1 ? Expr(kh->var) : kh->var * static_cast<int>(p.dh);
    return (p.sh == 1 ? y : y * static_cast<int>(p.sh)) + tap;
  };
  auto col = [&](Expr xx) {
    Expr tap = p.dw == 1 ? Expr(kw->var) : kw->var * static_cast<int>(p.dw);
    return (p.sw == 1 ? xx : xx * static_cast<int>(p.sw)) + tap;
  };
  if (p.depthwise) {
    return {te::compute(
        to_exprs(out_shape(p)),
        [&](const std::vector<Var>& i) {
          return te::sum(
              src(i[0], i[1], row(i[2]), col(i[3]), i[4]) * w(i[1], 0, kh->var, kw->var, 0, i[4]),
              {kh, kw});
        },
        op)};
  }
  IterVar ic = te::reduce_axis(static_cast<int>(p.CBg), "ic");
  IterVar ib = te::reduce_axis(static_cast<int>(p.ib), "ib");
  int64_t group_blocks = p.OB / p.group;
  return {te::compute(
      to_exprs(out_shape(p)),
      [&](const std::vector<Var>& i) {
        Expr c = p.group == 1
                     ? Expr(ic->var)
                     : floordiv(i[1], static_cast<int>(group_blocks)) * static_cast<int>(p.CBg) +
                           ic->var;
        return te::sum(src(i[0], c, row(i[2]), col(i[3]), ib->var) *
                           w(i[1], ic->var, kh->var, kw->var, ib->var, i[4]),
                       {ic, kh, kw, ib});
      },
      op)};
}

// Naive loops in double precision, directly on the blocked layouts.
std::vector<runtime::NDArray> conv_reference(const std::string& op,
                                             const std::vector<runtime::NDArray>& in,
                                             const Attrs& attrs) {
  std::vector<TensorType> types;
  for (const runtime::NDArray& a : in) types.push_back({a.shape(), DataType::Float32()});
  Params p = parse(op, types, attrs);
  const float* x = in[0].data_as<float>();
  const float* w = in[1].data_as<float>();
  runtime::NDArray out = runtime::NDArray::empty(out_shape(p), runtime::dl_float32());
  float* o = out.data_as<float>();
  auto xat = [&](int64_t n, int64_t c, int64_t y, int64_t xx, int64_t i) -> double {
    if (y < 0 || y >= p.H || xx < 0 || xx >= p.W) return 0.0;
    return x[(((n * p.CB + c) * p.H + y) * p.W + xx) * p.ib + i];
  };
  for (int64_t n = 0; n < p.N; ++n) {
    for (int64_t oc = 0; oc < p.OB; ++oc) {
      for (int64_t y = 0; y < p.OH; ++y) {
        for (int64_t xo = 0; xo < p.OW; ++xo) {
          for (int64_t j = 0; j < p.ob; ++j) {
            double acc = 0;
            for (int64_t kh = 0; kh < p.KH; ++kh) {
              int64_t iy = y * p.sh + kh * p.dh - p.pt;
              for (int64_t kw = 0; kw < p.KW; ++kw) {
                int64_t ix = xo * p.sw + kw * p.dw - p.pl;
                if (p.depthwise) {
                  acc += xat(n, oc, iy, ix, j) * w[((oc * p.KH + kh) * p.KW + kw) * p.ob + j];
                  continue;
                }
                int64_t c0 = oc / (p.OB / p.group) * p.CBg;
                for (int64_t ic = 0; ic < p.CBg; ++ic) {
                  for (int64_t i = 0; i < p.ib; ++i) {
                    acc += xat(n, c0 + ic, iy, ix, i) *
                           w[((((oc * p.CBg + ic) * p.KH + kh) * p.KW + kw) * p.ib + i) * p.ob + j];
                  }
                }
              }
            }
            o[(((n * p.OB + oc) * p.OH + y) * p.OW + xo) * p.ob + j] = static_cast<float>(acc);
          }
        }
      }
    }
  }
  return {out};
}

ConvShape conv_shape(const Params& p) {
  return {p.OB, p.ob, p.OH,        p.OW, p.depthwise ? 1 : p.CBg, p.depthwise ? 1 : p.ib,
          p.KH, p.KW, p.depthwise, p.W};
}

// The direct convolution's count, 2 per tap (flops.h): over the blocked, padded input channels
// C/ib * ib, or one channel for depthwise.
double nchwc_conv_flops(const std::vector<TensorType>& in, const std::vector<TensorType>& out,
                        const Attrs& attrs) {
  const std::string& op = attrs.op();
  // [O/ob, C/ib, KH, KW, ib, ob], depthwise [C/b, 1, KH, KW, 1, b]
  const std::vector<int64_t>& w = flops_operand(op, in, true, 1, 6);
  double outputs = numel(TensorType{flops_operand(op, out, false, 0, 5), {}});
  double channels = op == "depthwise_conv2d_nchwc" ? 1.0 : static_cast<double>(w[1] * w[4]);
  return 2 * outputs * channels * static_cast<double>(w[2] * w[3]);
}

void register_conv(const std::string& name) {
  OpDef def;
  def.name = name;
  def.pattern = Pattern::kComplexOutFusable;
  def.attrs = window_attrs(2, name == "conv2d_nchwc" ? unsigned{kWindowGroup} : 0u);
  def.flops = nchwc_conv_flops;
  def.infer = [name](const std::vector<TensorType>& in, const Attrs& attrs) {
    return std::vector<TensorType>{{out_shape(parse(name, in, attrs)), DataType::Float32()}};
  };
  def.compute = [name](const std::vector<te::Tensor>& in, const Attrs& attrs) {
    return conv_compute(name, in, attrs);
  };
  def.reference = [name](const std::vector<runtime::NDArray>& in, const Attrs& attrs) {
    return conv_reference(name, in, attrs);
  };
  def.schedule_x86 = [name](te::Schedule& s, const std::vector<te::Tensor>& outs,
                            const Target& target, const Config& config) {
    conv_nchwc_schedule(name, s, outs, target, config);
  };
  def.space = [name](const std::vector<TensorType>& in, const Attrs& attrs, const Target& target) {
    return conv_nchwc_space(conv_shape(parse(name, in, attrs)), target);
  };
  register_op(std::move(def));
}

// ---- weight packing

struct Pack {
  int64_t O = 0, C = 0, KH = 0, KW = 0, ib = 1, ob = 1;
  int64_t merge = 1, group_out = 0;  // groups merged into one; output channels per group
  std::vector<int64_t> shape;        // the packed shape
};

Pack parse_pack(const std::string& op, const std::vector<TensorType>& in, const Attrs& attrs) {
  bool dw = op == "depthwise_conv2d_nchwc_pack_weight";
  ANVIL_CHECK(in.size() == 1, op, ": expects 1 input (weight), got ", in.size());
  ANVIL_CHECK(in[0].dtype == DataType::Float32(), op, ": weight must be float32, not ",
              to_string(in[0]));
  const std::vector<int64_t>& ws = in[0].shape;
  ANVIL_CHECK(ws.size() == 4, op, ": weight must have rank 4 (", dw ? "[C, 1, KH, KW]" : "OIHW",
              "), got ", to_string(in[0]));
  Pack k;
  k.O = ws[0];
  k.C = ws[1];
  k.KH = ws[2];
  k.KW = ws[3];
  auto block = [&](const char* name) { return attrs.get_int(name); };  // the schema checks it
  if (dw) {
    ANVIL_CHECK(k.C == 1, op, ": weight ", to_string(in[0]),
                " is not depthwise (dimension 1 must be 1)");
    k.ob = block("block");
    k.shape = {(k.O + k.ob - 1) / k.ob, 1, k.KH, k.KW, 1, k.ob};
  } else {
    k.ib = block("in_block");
    k.ob = block("out_block");
    k.merge = attrs.get_int("merge");
    int64_t group = attrs.get_int("group");
    if (k.merge > 1) {
      ANVIL_CHECK(
          k.O % group == 0 && (k.O / group) * k.merge == k.ob && (k.merge * k.C) % k.ib == 0, op,
          ": merging ", k.merge, " of ", group, " groups of weight ", to_string(in[0]),
          " needs out_block = merge * O/group and in_block dividing merge * C (blocks ", k.ib, ", ",
          k.ob, ")");
      k.group_out = k.O / group;
    }
    k.shape = {(k.O + k.ob - 1) / k.ob, (k.merge * k.C + k.ib - 1) / k.ib, k.KH, k.KW, k.ib, k.ob};
  }
  return k;
}

void register_pack(const std::string& name) {
  OpDef def;
  def.name = name;
  def.pattern = Pattern::kInjective;
  auto block = [](const char* name, const char* doc) {
    return AttrSpec{name, AttrType::kInt, std::nullopt, {positive()}, doc, /*required=*/true};
  };
  if (name == "depthwise_conv2d_nchwc_pack_weight") {
    def.attrs = std::vector<AttrSpec>{block("block", "the channel block")};
  } else {
    def.attrs = std::vector<AttrSpec>{
        block("in_block", "the input channel block"),
        block("out_block", "the output channel block"),
        AttrSpec{"group", AttrType::kInt, int64_t{1}, {positive()}, "the weight's groups"},
        AttrSpec{"merge",
                 AttrType::kInt,
                 int64_t{1},
                 {positive()},
                 "groups merged into one, block-diagonal (out_block = merge * O/group)"}};
  }
  def.flops = flops_none();
  def.infer = [name](const std::vector<TensorType>& in, const Attrs& attrs) {
    return std::vector<TensorType>{{parse_pack(name, in, attrs).shape, DataType::Float32()}};
  };
  def.compute = [name](const std::vector<te::Tensor>& in, const Attrs& attrs) {
    Pack k = parse_pack(name, types_of(in), attrs);
    te::Tensor w = in[0];
    return std::vector<te::Tensor>{te::compute(
        to_exprs(k.shape),
        [&](const std::vector<Var>& i) {
          Expr o = i[0] * static_cast<int>(k.ob) + i[5];
          Expr c = i[1] * static_cast<int>(k.ib) + i[4];
          Expr cond;
          auto both = [&](Expr e) { cond = cond.defined() ? (cond && e) : e; };
          if (k.O % k.ob) both(o < static_cast<int>(k.O));
          if (k.merge > 1) {
            // Input channel c of the merged group is channel c % C of its slot c / C; output
            // channel o's group sits in slot (o / group_out) % merge.
            Expr slot = floordiv(i[5], static_cast<int>(k.group_out));
            both(floordiv(c, static_cast<int>(k.C)) == slot);
            c = floormod(c, static_cast<int>(k.C));
          } else if (k.C % k.ib) {
            both(c < static_cast<int>(k.C));
          }
          Expr v = w(cond.defined() ? clamp_index(o, k.O) : o,
                     cond.defined() ? clamp_index(c, k.C) : c, i[2], i[3]);
          return cond.defined() ? select(cond, v, 0.0f) : v;
        },
        name)};
  };
  def.reference = [name](const std::vector<runtime::NDArray>& in, const Attrs& attrs) {
    Pack k = parse_pack(name, {{in[0].shape(), DataType::Float32()}}, attrs);
    runtime::NDArray out = runtime::NDArray::empty(k.shape, runtime::dl_float32());
    const float* w = in[0].data_as<float>();
    float* o = out.data_as<float>();
    int64_t taps = k.KH * k.KW;
    // Zero everywhere, then every weight to its place.
    std::fill(o, o + out.numel(), 0.0f);
    for (int64_t oc = 0; oc < k.O; ++oc) {
      // Merged groups: output channel oc's weights go to its group's slot of input channels.
      int64_t slot = k.merge > 1 ? (oc % k.ob) / k.group_out * k.C : 0;
      for (int64_t c0 = 0; c0 < k.C; ++c0) {
        int64_t c = slot + c0;
        for (int64_t t = 0; t < taps; ++t) {
          int64_t dst = (((oc / k.ob) * k.shape[1] + c / k.ib) * taps + t) * k.ib * k.ob +
                        (c % k.ib) * k.ob + oc % k.ob;
          o[dst] = w[(oc * k.C + c0) * taps + t];
        }
      }
    }
    return std::vector<runtime::NDArray>{out};
  };
  def.schedule_x86 = [](te::Schedule& s, const std::vector<te::Tensor>& outs, const Target& target,
                        const Config&) { schedule_injective_x86(s, outs[0], target); };
  def.space = [](const std::vector<TensorType>&, const Attrs&, const Target&) {
    return ConfigSpace{};
  };
  register_op(std::move(def));
}

}  // namespace
}  // namespace conv_nchwc_detail

void register_conv_nchwc_ops() {
  conv_nchwc_detail::register_conv("conv2d_nchwc");
  conv_nchwc_detail::register_conv("depthwise_conv2d_nchwc");
  conv_nchwc_detail::register_pack("conv2d_nchwc_pack_weight");
  conv_nchwc_detail::register_pack("depthwise_conv2d_nchwc_pack_weight");
}

}  // namespace anvil::ops
