// Transposed convolution on NCHW[x]c by phase (sub-pixel) decomposition: no scatter, no zeros
// inserted into the input, so no multiply by an inserted zero.
//
// conv2d_transpose_nchwc_pack_weight: ONNX weight w [C, O, KH, KW] -> packed
//   [O/ob, C/ib, TY, TX, ib, SY, SX, ob]
//   attrs in_block (ib), out_block (ob), strides [SY, SX], dilations (default 1). Channels are
//   padded with zeros up to the blocks. Along each spatial dimension (Phase in the header) output
//   position y, with u = y + pad_lo, is in phase R = u mod s and receives kernel taps
//   k = k0(R) + s'*j (j < T, the slot) from input rows base(u) - j*d'; for d = 1 that is
//   k = (u mod s) + s*j from rows floor(u/s) - j. Element [.., jy, jx, i, ry, rx, o] is
//   w[c, o, ky, kx] for those taps, zero where a phase has fewer than T taps (K not a multiple of
//   s, a little waste) or none. The pads do not enter the packing; strides and dilations do.
//   The phases are innermost but one so that the weights of all phases of one reduction step are
//   adjacent.
// conv2d_transpose_nchwc: x [N, C/ib, H, W, ib], packed weight -> [N, O/ob, OH, OW, ob]
//   attrs (ONNX ConvTranspose's) kernel_shape [KH, KW] (required: the packed weight does not
//   determine it), strides, pads [top, left, bottom, right], dilations, output_padding; group 1.
//   OH = SY*(H-1) + output_padding + DY*(KH-1) + 1 - top - bottom.
//   out[n, ob, y, x, o] = sum_{ic, jy, jx, i} src[n, ic, base_y(y + top) - jy*d'y + src_top,
//                               base_x(x + left) - jx*d'x + src_left, i]
//                         * wp[ob, ic, jy, jx, i, (y + top) mod SY, (x + left) mod SX, o]
//   where src is x with the zero rows/columns the reads need (a root stage; x itself when none).
//   Each output phase is a stride-1 correlation with a TY x TX sub-kernel: SY*SX fewer multiplies
//   than the zero-dilated formulation of conv.cc's conv2d_transpose.
// Blocks: any in_block and out_block work; the default is nchwc_block of the channel counts (the
// graph's blocks). With few output channels (DCGAN deconv4, O = 3) that is a 3-float vector per
// pixel: 29 GFLOP/s useful, within 10% of padding O to 8 (31, but 5 zero channels carried through
// the graph) and 2x faster than padding to 16. So such layers (transpose_input_innermost: an
// output block of at most half a vector, a full-vector input block) take attribute
// input_innermost, on both ops: the packed weight is [O/ob, C/ib, TY, TX, SY, SX, ob, ib], the
// input block innermost, and the schedule's vectors run over input channels (the reduction over
// the block factored out): full vectors whatever O is.
// The schedule (conv_transpose_nchwc_schedule.cc) is the NCHWc direct convolution micro-kernel,
// or with input_innermost its form over input channels.
#include "anvil/ops/conv_transpose_nchwc.h"

#include <algorithm>
#include <numeric>

#include "anvil/ir/op.h"
#include "anvil/ops/families.h"
#include "anvil/ops/nchwc.h"
#include "anvil/ops/schedule_util.h"
#include "anvil/ops/window.h"
#include "anvil/support/error.h"
#include "anvil/support/int_math.h"

namespace anvil::ops {

using namespace ir;

namespace deconv {

namespace {

const char* kOp = "conv2d_transpose_nchwc";
const char* kPackOp = "conv2d_transpose_nchwc_pack_weight";
// The window attributes (window.h): the kernel is given (the packed weight does not determine it).
constexpr unsigned kWindow = kWindowKernel | kWindowGroup | kWindowOutputPadding;

Expr c32(int64_t v) {
  return Expr(static_cast<int>(v));
}

}  // namespace

Phase Phase::make(int64_t stride, int64_t dilation, int64_t kernel) {
  Phase p;
  p.s = stride;
  p.d = dilation;
  p.K = kernel;
  p.g = std::gcd(stride, dilation);
  p.sp = stride / p.g;
  p.dp = dilation / p.g;
  p.inv = 0;
  for (int64_t v = 0; v < p.sp; ++v)
    if ((v * p.dp) % p.sp == 1 % p.sp) p.inv = v;
  p.taps = 0;
  for (int64_t R = 0; R < p.s; ++R) {
    int64_t k = p.k0(R);
    if (k >= 0 && k < kernel) p.taps = std::max(p.taps, (kernel - 1 - k) / p.sp + 1);
  }
  return p;
}

int64_t Phase::k0(int64_t R) const {
  if (R % g != 0) return -1;
  return (R / g * inv) % sp;
}

int64_t Phase::base(int64_t u) const {
  int64_t v = floor_div(u, g);
  if (sp == 1) return v;
  return floor_div(v - floor_mod(v * inv, sp) * dp, sp);
}

Expr Phase::base(const Expr& u) const {
  Expr v = g == 1 ? u : floordiv(u, c32(g));
  if (sp == 1) return v;
  if (dp == 1) return floordiv(v, c32(sp));  // inv == 1: v - (v mod s') over s'
  return floordiv(v - floormod(v * c32(inv), c32(sp)) * c32(dp), c32(sp));
}

AttrSpec input_innermost_attr() {
  return {"input_innermost",
          AttrType::kInt,
          AttrValue{int64_t{0}},
          {one_of(std::vector<int64_t>{0, 1})},
          "1: the packed weight keeps the input channel block innermost (vectors over input "
          "channels, for few output channels)"};
}

std::vector<int64_t> packed_shape(int64_t Ob, int64_t Cb, int64_t ty, int64_t tx, int64_t ib,
                                  int64_t sy, int64_t sx, int64_t ob, bool input_innermost) {
  return packed_index<int64_t>(Ob, Cb, ty, tx, ib, sy, sx, ob, input_innermost);
}

Params parse(const std::vector<TensorType>& in, const Attrs& attrs) {
  Params p;
  p.op = kOp;
  ANVIL_CHECK(in.size() == 2, kOp, ": expects 2 inputs (x, packed weight), got ", in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    ANVIL_CHECK(in[i].dtype == DataType::Float32(), kOp, ": input ", i, " must be float32, not ",
                to_string(in[i]));
  }
  ANVIL_CHECK(in[0].shape.size() == 5, kOp, ": input x must have rank 5 (NCHW[x]c), got ",
              to_string(in[0]));
  p.input_innermost = attrs.get_int("input_innermost", 0) != 0;
  const char* layout = p.input_innermost ? "[O/ob, C/ib, TY, TX, SY, SX, ob, ib]"
                                         : "[O/ob, C/ib, TY, TX, ib, SY, SX, ob]";
  ANVIL_CHECK(in[1].shape.size() == 8, kOp, ": weight must have rank 8 (", layout, ", from ",
              kPackOp, "), got ", to_string(in[1]));
  Window w = parse_window(attrs, 2, kWindow);
  ANVIL_CHECK(w.group == 1, kOp, ": attribute 'group' must be 1, got ", w.group);
  p.kernel = w.kernel;
  p.strides = w.strides;
  p.dilations = w.dilations;
  p.pad_lo = w.pad_lo;
  p.pad_hi = w.pad_hi;
  p.output_padding = w.output_padding;
  check_output_padding(kOp, w);
  const std::vector<int64_t>& xs = in[0].shape;
  const std::vector<int64_t>& ws = in[1].shape;
  p.N = xs[0];
  p.Cb = xs[1];
  p.H = xs[2];
  p.W = xs[3];
  p.ib = xs[4];
  p.Ob = ws[0];
  p.ob = p.input_innermost ? ws[6] : ws[7];
  p.py = Phase::make(p.strides[0], p.dilations[0], p.kernel[0]);
  p.px = Phase::make(p.strides[1], p.dilations[1], p.kernel[1]);
  std::vector<int64_t> want = packed_shape(ws[0], p.Cb, p.py.taps, p.px.taps, p.ib, p.strides[0],
                                           p.strides[1], p.ob, p.input_innermost);
  ANVIL_CHECK(ws == want, kOp, ": weight ", to_string(in[1]), " does not fit input x ",
              to_string(in[0]), " with attributes 'kernel_shape' ", list_str(p.kernel),
              ", 'strides' ", list_str(p.strides), ", 'dilations' ", list_str(p.dilations),
              ", 'input_innermost' ", p.input_innermost ? 1 : 0, ": expected ", list_str(want),
              " (", kPackOp, "'s layout ", layout, ")");
  static const char* names[] = {"height", "width"};
  int64_t sizes[] = {p.H, p.W};
  for (size_t d = 0; d < 2; ++d) {
    int64_t eff = (p.kernel[d] - 1) * p.dilations[d] + 1;
    int64_t o =
        p.strides[d] * (sizes[d] - 1) + p.output_padding[d] + eff - p.pad_lo[d] - p.pad_hi[d];
    ANVIL_CHECK(o >= 1, kOp, ": output ", names[d], " ", o, " is not positive (input ", sizes[d],
                ", dilated kernel ", eff, ", attribute 'pads' = ", list_str(w.pads()), ")");
    (d == 0 ? p.OH : p.OW) = o;
  }
  // The source rows every output row reads, over all slots (zero slots read too).
  auto extent = [](const Phase& ph, int64_t pad, int64_t out, int64_t size, int64_t& lo,
                   int64_t& hi) {
    int64_t mn = 0, mx = size - 1;
    for (int64_t y = 0; y < out; ++y) {
      int64_t b = ph.base(y + pad);
      mx = std::max(mx, b);
      mn = std::min(mn, b - (ph.taps - 1) * ph.dp);
    }
    lo = -mn;
    hi = mx - (size - 1);
  };
  extent(p.py, p.pad_lo[0], p.OH, p.H, p.src_top, p.src_bottom);
  extent(p.px, p.pad_lo[1], p.OW, p.W, p.src_left, p.src_right);
  return p;
}

namespace {

std::vector<TensorType> infer(const std::vector<TensorType>& in, const Attrs& attrs) {
  Params p = parse(in, attrs);
  return {{{p.N, p.Ob, p.OH, p.OW, p.ob}, DataType::Float32()}};
}

std::vector<te::Tensor> compute(const std::vector<te::Tensor>& in, const Attrs& attrs) {
  Params p = parse({type_of(in[0]), type_of(in[1])}, attrs);
  te::Tensor x = in[0], w = in[1];
  te::Tensor src = x;
  if (p.src_top > 0 || p.src_bottom > 0 || p.src_left > 0 || p.src_right > 0) {
    std::vector<Expr> shape = {c32(p.N), c32(p.Cb), c32(p.H + p.src_top + p.src_bottom),
                               c32(p.W + p.src_left + p.src_right), c32(p.ib)};
    src = te::compute(
        shape,
        [&](const std::vector<Var>& i) {
          Expr r = i[2] - c32(p.src_top), c = i[3] - c32(p.src_left);
          Expr ok = r >= 0 && r < c32(p.H) && c >= 0 && c < c32(p.W);
          Expr rc = max(min(r, c32(p.H - 1)), 0), cc = max(min(c, c32(p.W - 1)), 0);
          return select(ok, x(i[0], i[1], rc, cc, i[4]), 0.0f);
        },
        std::string(kOp) + ".src");
  }
  IterVar ic = te::reduce_axis(c32(p.Cb), "ic");
  IterVar jy = te::reduce_axis(c32(p.py.taps), "jy");
  IterVar jx = te::reduce_axis(c32(p.px.taps), "jx");
  IterVar ii = te::reduce_axis(c32(p.ib), "ii");
  te::Tensor out = te::compute(
      {c32(p.N), c32(p.Ob), c32(p.OH), c32(p.OW), c32(p.ob)},
      [&](const std::vector<Var>& i) {
        Expr uy = i[2] + c32(p.pad_lo[0]), ux = i[3] + c32(p.pad_lo[1]);
        Expr row = p.py.base(uy) - jy->var * c32(p.py.dp) + c32(p.src_top);
        Expr col = p.px.base(ux) - jx->var * c32(p.px.dp) + c32(p.src_left);
        Expr ry = p.py.s == 1 ? Expr(0) : floormod(uy, c32(p.py.s));
        Expr rx = p.px.s == 1 ? Expr(0) : floormod(ux, c32(p.px.s));
        return te::sum(src(i[0], ic->var, row, col, ii->var) *
                           w(packed_index<Expr>(i[1], ic->var, jy->var, jx->var, ii->var, ry, rx,
                                                i[4], p.input_innermost)),
                       {ic, jy, jx, ii});
      },
      p.input_innermost ? kInputInnermostStage : kOp);
  return {out};
}

// Naive scatter over the blocked layouts, in double precision: input pixel (iy, ix) adds to
// output (iy*s - pad + k*d), the weight of tap k read at its (phase, slot) in the packed layout.
std::vector<runtime::NDArray> reference(const std::vector<runtime::NDArray>& in,
                                        const Attrs& attrs) {
  Params p =
      parse({{in[0].shape(), DataType::Float32()}, {in[1].shape(), DataType::Float32()}}, attrs);
  const float* x = in[0].data_as<float>();
  const float* w = in[1].data_as<float>();
  std::vector<int64_t> ws = in[1].shape();
  int64_t C = p.Cb * p.ib, O = p.Ob * p.ob;
  std::vector<double> acc(static_cast<size_t>(p.N * O * p.OH * p.OW), 0.0);
  for (int64_t n = 0; n < p.N; ++n) {
    for (int64_t o = 0; o < O; ++o) {
      for (int64_t c = 0; c < C; ++c) {
        for (int64_t ky = 0; ky < p.kernel[0]; ++ky) {
          for (int64_t kx = 0; kx < p.kernel[1]; ++kx) {
            std::vector<int64_t> wi = packed_index<int64_t>(
                o / p.ob, c / p.ib, p.py.slot_of_tap(ky), p.px.slot_of_tap(kx), c % p.ib,
                p.py.phase_of_tap(ky), p.px.phase_of_tap(kx), o % p.ob, p.input_innermost);
            int64_t off = 0;
            for (size_t d = 0; d < 8; ++d) off = off * ws[d] + wi[d];
            double wv = w[off];
            for (int64_t iy = 0; iy < p.H; ++iy) {
              int64_t y = iy * p.strides[0] - p.pad_lo[0] + ky * p.dilations[0];
              if (y < 0 || y >= p.OH) continue;
              for (int64_t ix = 0; ix < p.W; ++ix) {
                int64_t xo = ix * p.strides[1] - p.pad_lo[1] + kx * p.dilations[1];
                if (xo < 0 || xo >= p.OW) continue;
                double xv = x[(((n * p.Cb + c / p.ib) * p.H + iy) * p.W + ix) * p.ib + c % p.ib];
                acc[static_cast<size_t>(((n * O + o) * p.OH + y) * p.OW + xo)] += wv * xv;
              }
            }
          }
        }
      }
    }
  }
  runtime::NDArray out =
      runtime::NDArray::empty({p.N, p.Ob, p.OH, p.OW, p.ob}, runtime::dl_float32());
  float* o = out.data_as<float>();
  for (int64_t n = 0; n < p.N; ++n)
    for (int64_t c = 0; c < O; ++c)
      for (int64_t y = 0; y < p.OH; ++y)
        for (int64_t xx = 0; xx < p.OW; ++xx)
          o[(((n * p.Ob + c / p.ob) * p.OH + y) * p.OW + xx) * p.ob + c % p.ob] =
              static_cast<float>(acc[static_cast<size_t>(((n * O + c) * p.OH + y) * p.OW + xx)]);
  return {out};
}

// ---- conv2d_transpose_nchwc_pack_weight

struct PackParams {
  int64_t C = 0, O = 0, ib = 1, ob = 1;
  bool input_innermost = false;
  std::vector<int64_t> kernel, strides, dilations;
  Phase py, px;
  std::vector<int64_t> shape;
};

PackParams parse_pack(const std::vector<TensorType>& in, const Attrs& attrs) {
  PackParams p;
  ANVIL_CHECK(in.size() == 1, kPackOp, ": expects 1 input (ONNX weight [C, O, KH, KW]), got ",
              in.size());
  ANVIL_CHECK(in[0].dtype == DataType::Float32(), kPackOp, ": weight must be float32, not ",
              to_string(in[0]));
  ANVIL_CHECK(in[0].shape.size() == 4, kPackOp, ": weight must have rank 4 ([C, O, KH, KW]), got ",
              to_string(in[0]));
  p.ib = attrs.get_int("in_block");  // required and positive: the schema checks them
  p.ob = attrs.get_int("out_block");
  p.input_innermost = attrs.get_int("input_innermost", 0) != 0;
  Window w = parse_window(attrs, 2, 0);
  p.strides = w.strides;
  p.dilations = w.dilations;
  const std::vector<int64_t>& s = in[0].shape;
  p.C = s[0];
  p.O = s[1];
  p.kernel = {s[2], s[3]};
  p.py = Phase::make(p.strides[0], p.dilations[0], s[2]);
  p.px = Phase::make(p.strides[1], p.dilations[1], s[3]);
  p.shape = packed_shape((p.O + p.ob - 1) / p.ob, (p.C + p.ib - 1) / p.ib, p.py.taps, p.px.taps,
                         p.ib, p.strides[0], p.strides[1], p.ob, p.input_innermost);
  return p;
}

std::vector<te::Tensor> pack_compute(const std::vector<te::Tensor>& in, const Attrs& attrs) {
  PackParams p = parse_pack({type_of(in[0])}, attrs);
  te::Tensor w = in[0];
  // Tap of (phase R, slot j) along one dimension and whether it exists.
  auto tap = [](const Phase& ph, const Var& R, const Var& j, Expr& cond) {
    Expr k0 = ph.sp == 1 ? Expr(0) : floormod(floordiv(R, c32(ph.g)) * c32(ph.inv), c32(ph.sp));
    Expr k = k0 + j * c32(ph.sp);
    Expr ok = k < c32(ph.K);
    if (ph.g > 1) ok = ok && floormod(R, c32(ph.g)) == 0;
    cond = cond.defined() ? (cond && ok) : ok;
    return max(min(k, c32(ph.K - 1)), 0);
  };
  te::Tensor out = te::compute(
      to_exprs(p.shape),
      [&](const std::vector<Var>& v) {
        // The indices in the standard order [O/ob, C/ib, TY, TX, ib, SY, SX, ob].
        std::vector<Var> i = v;
        if (p.input_innermost) i = {v[0], v[1], v[2], v[3], v[7], v[4], v[5], v[6]};
        Expr o = i[0] * c32(p.ob) + i[7], c = i[1] * c32(p.ib) + i[4];
        Expr cond;
        Expr ky = tap(p.py, i[5], i[2], cond), kx = tap(p.px, i[6], i[3], cond);
        if (p.O % p.ob != 0) cond = cond && o < c32(p.O);
        if (p.C % p.ib != 0) cond = cond && c < c32(p.C);
        Expr oc = max(min(o, c32(p.O - 1)), 0), cc = max(min(c, c32(p.C - 1)), 0);
        return select(cond, w(cc, oc, ky, kx), 0.0f);
      },
      kPackOp);
  return {out};
}

std::vector<runtime::NDArray> pack_reference(const std::vector<runtime::NDArray>& in,
                                             const Attrs& attrs) {
  PackParams p = parse_pack({{in[0].shape(), DataType::Float32()}}, attrs);
  runtime::NDArray out = runtime::NDArray::empty(p.shape, runtime::dl_float32(), true);
  const float* w = in[0].data_as<float>();
  float* o = out.data_as<float>();
  for (int64_t c = 0; c < p.C; ++c) {
    for (int64_t oc = 0; oc < p.O; ++oc) {
      for (int64_t ky = 0; ky < p.kernel[0]; ++ky) {
        for (int64_t kx = 0; kx < p.kernel[1]; ++kx) {
          std::vector<int64_t> idx = packed_index<int64_t>(
              oc / p.ob, c / p.ib, p.py.slot_of_tap(ky), p.px.slot_of_tap(kx), c % p.ib,
              p.py.phase_of_tap(ky), p.px.phase_of_tap(kx), oc % p.ob, p.input_innermost);
          int64_t off = 0;
          for (size_t d = 0; d < 8; ++d) off = off * p.shape[d] + idx[d];
          o[off] = w[((c * p.O + oc) * p.kernel[0] + ky) * p.kernel[1] + kx];
        }
      }
    }
  }
  return {out};
}

}  // namespace
}  // namespace deconv

bool transpose_input_innermost(int64_t ib, int64_t ob, const Target& target) {
  const int64_t lanes = target.vector_lanes_f32();
  return ib == lanes && 2 * ob <= lanes;
}

void register_conv_transpose_nchwc_ops() {
  OpDef def;
  def.name = deconv::kOp;
  def.pattern = Pattern::kComplexOutFusable;
  def.attrs = window_attrs(2, deconv::kWindow);
  def.attrs.push_back(deconv::input_innermost_attr());
  // As conv2d_transpose's: 2 per tap of every input element scattered to the O (blocked) output
  // channels.
  def.flops = [](const std::vector<TensorType>& in, const std::vector<TensorType>& out,
                 const Attrs& attrs) {
    const std::vector<int64_t>& o = flops_operand(deconv::kOp, out, false, 0, 5);  // [N, O/ob, ..]
    double taps = static_cast<double>(o[1] * o[4]);
    for (int64_t k : attrs.get_ints("kernel_shape")) taps *= static_cast<double>(k);
    return 2 * numel(TensorType{flops_operand(deconv::kOp, in, true, 0, 5), {}}) * taps;
  };
  def.infer = deconv::infer;
  def.compute = deconv::compute;
  def.reference = deconv::reference;
  def.schedule_x86 = deconv::schedule;
  def.space = deconv::space;
  register_op(std::move(def));

  OpDef pack;
  pack.name = deconv::kPackOp;
  pack.pattern = Pattern::kInjective;
  // The blocks, and the window's strides and dilations (which place the phases' taps).
  pack.attrs = std::vector<AttrSpec>{
      {"in_block", AttrType::kInt, std::nullopt, {positive()}, "the input channel block", true},
      {"out_block", AttrType::kInt, std::nullopt, {positive()}, "the output channel block", true}};
  for (const AttrSpec& spec : window_attrs(2, 0))
    if (spec.name != "pads") pack.attrs.push_back(spec);
  pack.attrs.push_back(deconv::input_innermost_attr());
  pack.flops = flops_none();
  pack.infer = [](const std::vector<TensorType>& in, const Attrs& attrs) {
    return std::vector<TensorType>{{deconv::parse_pack(in, attrs).shape, DataType::Float32()}};
  };
  pack.compute = deconv::pack_compute;
  pack.reference = deconv::pack_reference;
  pack.schedule_x86 = [](te::Schedule& s, const std::vector<te::Tensor>& outs, const Target& target,
                         const Config&) { schedule_injective_x86(s, outs[0], target); };
  pack.space = [](const std::vector<TensorType>&, const Attrs&, const Target&) {
    return ConfigSpace{};
  };
  register_op(std::move(pack));
}

}  // namespace anvil::ops
