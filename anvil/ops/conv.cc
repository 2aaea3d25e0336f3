// Convolutions on NCHW (and NCW) tensors: conv1d, conv2d (groups, depthwise, dilation, asymmetric
// padding, optional bias) and conv2d_transpose in the gather formulation.
//
// Inputs: x [N, C, (H,) W], weight [O, C/group, (KH,) KW] (transpose: [C, O/group, (KH,) KW]),
// optional bias [O]. Attributes (ONNX's): strides, dilations (default 1), pads (begins then ends:
// [top, left, bottom, right], or [left, right] for conv1d; default 0), group (default 1),
// output_padding (conv2d_transpose only; default 0, each below its stride or dilation).
// Depthwise is group == C (O a multiple of C). float32 or float64, all inputs alike (float16
// is computed as float32: float16_via_float32).
//
//   conv:  out[n, o, y..] = sum_{ic, k..} P[n, g(o)*Cg + ic, y*s + k*d ..] * w[o, ic, k..] (+ b[o])
//          where P is x zero-padded (a root stage; absent without padding), Cg = C/group and
//          g(o) = o / (O/group). With a width stride s > 1, P's rows are also split into s phases
//          (P[.., r, q] = padded[.., q*s + r]) so that every kernel tap reads contiguous columns
//          and the columns vectorize as plain loads rather than strided gathers.
//   conv_transpose: the same stride-1 convolution over D, x dilated by the stride (zeros between
//          elements) and padded by d*(K-1) - pad_lo, with the kernel flipped and its channel
//          dimensions swapped: w[C, O/group, k..] -> w'[o, ic, K-1-k ..]. No scatter. With
//          attribute subpixel (GPU targets) it is computed by output phase instead
//          (subpixel_compute): ceil(K/s)^2 taps per output rather than K^2.
//
// Default x86 schedule (the rule; every knob can be overridden by a Config, see conv_space):
//   the output is tiled into tile_oc output channels x tile_ow output columns; the tile is
//   accumulated in a local buffer (cache_write, or the conv stage itself when a bias stage
//   follows) computed at the column-block loop, with the reduction loops (ic, kh, kw) outside
//   the unrolled channel rows and the vectorized columns, so each reduction step is tile_oc
//   broadcasts of a weight times ceil(tile_ow/lanes) vector loads of the input row: tile_oc x
//   vectors independent FMA chains. The loops (n, oc-block, oh) are fused and run in parallel.
//   tile_ow: two vectors when they divide OW, else OW itself when it is narrower than a vector,
//   else one vector (a tail, if any, is split off by loop partitioning into a narrower vector;
//   widths that are not a multiple of the vector, such as 28, and wider tiles with a tail measured
//   several times slower here).
//   tile_oc: the largest of 8, 6, 4 dividing the channels (else 8 with a tail): 8 x 2 vectors are
//   16 accumulators (AVX-512 has 32 registers); depthwise convolutions (one input channel per
//   output channel: no reuse across rows) take 4. kw is unrolled when the kernel is at most 7 wide.
//   Sources (padding, phases, the transpose's dilated input) are computed at the root, rows in
//   parallel.
// Measured on this host (AVX-512, one thread, best of 30): ResNet 3x3 64->64 at 56x56 about 100
// GFLOP/s, 3x3 stride 2 64->128 about 85, 7x7 stride 2 stem 3->64 at 224 about 105.
#include <algorithm>
#include <cmath>

#include "anvil/ir/op.h"
#include "anvil/ops/families.h"
#include "anvil/ops/host_value.h"
#include "anvil/ops/op.h"
#include "anvil/ops/schedule_gpu.h"
#include "anvil/ops/schedule_util.h"
#include "anvil/ops/window.h"
#include "anvil/support/error.h"

namespace anvil::ops {

using namespace ir;

namespace {

// ---- attributes and shapes

struct ConvParams {
  std::string op;
  bool transpose = false;
  size_t dims = 2;  // spatial dimensions
  std::vector<int64_t> strides, dilations, pad_lo, pad_hi, output_padding;
  int64_t group = 1;
  // From the input types.
  int64_t N = 0, C = 0, O = 0;
  std::vector<int64_t> in, kernel, out;
  bool bias = false;
  DataType dtype = DataType::Float32();
};

// The window attributes a convolution takes (window.h).
unsigned conv_window(bool transpose) {
  return kWindowGroup | (transpose ? kWindowOutputPadding : 0u);
}

ConvParams parse(const std::string& op, const std::vector<TensorType>& in, const Attrs& attrs) {
  ConvParams p;
  p.op = op;
  p.transpose = op == "conv2d_transpose";
  p.dims = op == "conv1d" ? 1 : 2;
  size_t rank = p.dims + 2;
  ANVIL_CHECK(in.size() == 2 || in.size() == 3, op,
              ": expects 2 or 3 inputs (x, weight, bias), got ", in.size());
  ANVIL_CHECK(host::native_float(in[0].dtype), op, ": input 0 must be float32 or float64, not ",
              to_string(in[0]));
  for (size_t i = 1; i < in.size(); ++i) {
    ANVIL_CHECK(in[i].dtype == in[0].dtype, op, ": input ", i, " must be ", in[0].dtype,
                " like input 0, not ", to_string(in[i]));
  }
  p.dtype = in[0].dtype;
  const char* layout = p.dims == 1 ? "NCW" : "NCHW";
  ANVIL_CHECK(in[0].shape.size() == rank, op, ": input x must have rank ", rank, " (", layout,
              "), got ", to_string(in[0]));
  ANVIL_CHECK(in[1].shape.size() == rank, op, ": weight must have rank ", rank, ", got ",
              to_string(in[1]));
  Window w = parse_window(attrs, p.dims, conv_window(p.transpose));
  p.strides = w.strides;
  p.dilations = w.dilations;
  p.pad_lo = w.pad_lo;
  p.pad_hi = w.pad_hi;
  p.group = w.group;
  p.output_padding = w.output_padding;
  check_output_padding(op, w);
  std::vector<int64_t> pads = w.pads();

  const std::vector<int64_t>& xs = in[0].shape;
  const std::vector<int64_t>& ws = in[1].shape;
  p.N = xs[0];
  p.C = xs[1];
  p.in.assign(xs.begin() + 2, xs.end());
  p.kernel.assign(ws.begin() + 2, ws.end());
  ANVIL_CHECK(p.C % p.group == 0, op, ": input x ", to_string(in[0]), " has ", p.C,
              " channels, not divisible by attribute 'group' = ", p.group);
  if (p.transpose) {
    ANVIL_CHECK(ws[0] == p.C, op, ": input x ", to_string(in[0]), " has ", p.C,
                " channels, but weight ", to_string(in[1]), " expects ", ws[0],
                " (dimension 0; group = ", p.group, ")");
    p.O = ws[1] * p.group;
  } else {
    ANVIL_CHECK(ws[1] * p.group == p.C, op, ": input x ", to_string(in[0]), " has ", p.C,
                " channels, but weight ", to_string(in[1]), " expects ", ws[1], " x group ",
                p.group, " = ", ws[1] * p.group);
    p.O = ws[0];
    ANVIL_CHECK(p.O % p.group == 0, op, ": weight ", to_string(in[1]), " has ", p.O,
                " output channels, not divisible by attribute 'group' = ", p.group);
  }
  if (in.size() == 3) {
    p.bias = true;
    ANVIL_CHECK(in[2].shape == std::vector<int64_t>{p.O}, op, ": bias must be ", p.dtype, "[", p.O,
                "] (one per output channel), got ", to_string(in[2]));
  }
  static const char* names[] = {"height", "width"};
  for (size_t d = 0; d < p.dims; ++d) {
    const char* name = p.dims == 1 ? "width" : names[d];
    int64_t eff = (p.kernel[d] - 1) * p.dilations[d] + 1;
    if (p.transpose) {
      int64_t o =
          p.strides[d] * (p.in[d] - 1) + p.output_padding[d] + eff - p.pad_lo[d] - p.pad_hi[d];
      ANVIL_CHECK(o >= 1, op, ": output ", name, " ", o, " is not positive (input ", p.in[d],
                  ", dilated kernel ", eff, ", attribute 'pads' = ", list_str(pads), ")");
      p.out.push_back(o);
    } else {
      int64_t padded = p.in[d] + p.pad_lo[d] + p.pad_hi[d];
      ANVIL_CHECK(eff <= padded, op, ": kernel ", name, " ", p.kernel[d], " (dilated ", eff,
                  ", attribute 'dilations' = ", list_str(p.dilations),
                  ") is larger than the padded input ", name, " ", padded, " (input ", p.in[d],
                  ", attribute 'pads' = ", list_str(pads), ")");
      p.out.push_back((padded - eff) / p.strides[d] + 1);
    }
  }
  return p;
}

std::vector<int64_t> out_shape(const ConvParams& p) {
  std::vector<int64_t> s = {p.N, p.O};
  s.insert(s.end(), p.out.begin(), p.out.end());
  return s;
}

std::vector<TensorType> infer_types(const std::vector<TensorType>& in, const Attrs& attrs,
                                    const std::string& op) {
  ConvParams p = parse(op, in, attrs);
  return {{out_shape(p), p.dtype}};
}

// ---- compute

// i clamped to [0, n): keeps the loads under a select inside the tensor.
Expr clamp_index(Expr i, int64_t n) {
  return max(min(i, static_cast<int>(n - 1)), 0);
}

// Whether conv2d_transpose takes its sub-pixel form: asked for (attribute subpixel, which
// alter_layout sets for GPU targets), one group, no dilation, some stride above 1.
bool subpixel_form(const ConvParams& p, const Attrs& attrs) {
  if (!p.transpose || attrs.get_int("subpixel", 0) == 0 || p.group != 1) return false;
  bool strided = false;
  for (size_t d = 0; d < p.dims; ++d) {
    if (p.dilations[d] != 1) return false;
    strided = strided || p.strides[d] > 1;
  }
  return strided;
}

// conv2d_transpose by output phase (sub-pixel): along each spatial dimension, output position y
// with u = y + pad_lo receives taps k = (u mod s) + s*j (j < T = ceil(K/s), k < K) from input rows
// floor(u/s) - j. The reduction is over (ic, jy, jx): each output reads T x T taps of its phase,
// not the K x K of the zero-dilated form, most of whose products are with inserted zeros.
te::Tensor subpixel_compute(const std::string& op, const ConvParams& p, const te::Tensor& x,
                            const te::Tensor& w) {
  size_t D = p.dims;
  // The source: x with T - 1 zero rows (columns) before it and enough after it for the last
  // output, so that every tap reads inside it with no bound in the reduction (a GPU schedule's
  // shared copy of it then has a static size).
  std::vector<int64_t> taps(D), base_hi(D);
  std::vector<Expr> src_shape = {static_cast<int>(p.N), static_cast<int>(p.C)};
  for (size_t d = 0; d < D; ++d) {
    taps[d] = (p.kernel[d] + p.strides[d] - 1) / p.strides[d];
    base_hi[d] = (p.out[d] - 1 + p.pad_lo[d]) / p.strides[d];  // the last output's input row
    src_shape.push_back(static_cast<int>(base_hi[d] + taps[d]));
  }
  te::Tensor src = te::compute(
      src_shape,
      [&](const std::vector<Var>& i) {
        std::vector<Expr> idx = {i[0], i[1]};
        Expr cond;
        for (size_t d = 0; d < D; ++d) {
          Expr r = i[2 + d] - static_cast<int>(taps[d] - 1);
          Expr c = r >= 0 && r < static_cast<int>(p.in[d]);
          cond = cond.defined() ? (cond && c) : c;
          idx.push_back(clamp_index(r, p.in[d]));
        }
        return select(cond, x(idx), make_zero(x->dtype));
      },
      op + ".phased");
  IterVar ic = te::reduce_axis(static_cast<int>(p.C), "ic");
  std::vector<IterVar> js;
  static const char* jnames[] = {"jy", "jx"};
  for (size_t d = 0; d < D; ++d)
    js.push_back(te::reduce_axis(static_cast<int>(taps[d]), D == 1 ? "jx" : jnames[d]));
  std::vector<IterVar> raxes = {ic};
  raxes.insert(raxes.end(), js.begin(), js.end());
  return te::compute(
      to_exprs(out_shape(p)),
      [&](const std::vector<Var>& i) {
        std::vector<Expr> sidx = {i[0], ic->var}, widx = {ic->var, i[1]};
        Expr valid;
        for (size_t d = 0; d < D; ++d) {
          const int s = static_cast<int>(p.strides[d]);
          Expr u = i[2 + d] + static_cast<int>(p.pad_lo[d]);
          Expr k = floormod(u, s) + js[d]->var * s;
          sidx.push_back(floordiv(u, s) + static_cast<int>(taps[d] - 1) - js[d]->var);
          if (p.kernel[d] % p.strides[d] == 0) {
            widx.push_back(k);
            continue;
          }
          // A phase with fewer than T taps: the missing ones are zero.
          Expr c = k < static_cast<int>(p.kernel[d]);
          valid = valid.defined() ? (valid && c) : c;
          widx.push_back(clamp_index(k, p.kernel[d]));
        }
        Expr product = src(sidx) * w(widx);
        return te::sum(
            valid.defined() ? select(valid, product, make_zero(product.type())) : product, raxes);
      },
      p.bias ? op + ".acc" : op);
}

std::vector<te::Tensor> conv_compute(const std::string& op, const std::vector<te::Tensor>& in,
                                     const Attrs& attrs) {
  std::vector<TensorType> types;
  for (const te::Tensor& t : in) types.push_back(type_of(t));
  ConvParams p = parse(op, types, attrs);
  te::Tensor x = in[0], w = in[1];
  size_t D = p.dims;
  int64_t Cg = p.C / p.group, Og = p.O / p.group;
  if (subpixel_form(p, attrs)) {
    te::Tensor conv = subpixel_compute(op, p, x, w);
    if (!p.bias) return {conv};
    te::Tensor b = in[2];
    return {te::compute(
        to_exprs(out_shape(p)),
        [&](const std::vector<Var>& i) {
          return conv(std::vector<Expr>(i.begin(), i.end())) + b(i[1]);
        },
        op)};
  }

  // The source the stride-s convolution reads: x itself, x padded, or (transpose) x dilated and
  // padded.
  te::Tensor src = x;
  std::vector<int64_t> src_stride = p.strides;
  int64_t phase = 1;  // > 1: the source's last dimension is split into this many phases
  if (p.transpose) {
    std::vector<int64_t> lead(D);
    std::vector<Expr> shape = {static_cast<int>(p.N), static_cast<int>(p.C)};
    for (size_t d = 0; d < D; ++d) {
      lead[d] = p.dilations[d] * (p.kernel[d] - 1) - p.pad_lo[d];
      shape.push_back(static_cast<int>(p.out[d] + p.dilations[d] * (p.kernel[d] - 1)));
    }
    src = te::compute(
        shape,
        [&](const std::vector<Var>& i) {
          std::vector<Expr> idx = {i[0], i[1]};
          Expr cond;
          for (size_t d = 0; d < D; ++d) {
            Expr r = i[2 + d] - static_cast<int>(lead[d]);
            Expr q = floordiv(r, static_cast<int>(p.strides[d]));
            Expr c = r >= 0 && q < static_cast<int>(p.in[d]);
            if (p.strides[d] > 1) c = c && floormod(r, static_cast<int>(p.strides[d])) == 0;
            cond = cond.defined() ? (cond && c) : c;
            idx.push_back(clamp_index(q, p.in[d]));
          }
          return select(cond, x(idx), make_zero(x->dtype));
        },
        op + ".dilated");
    src_stride.assign(D, 1);
  } else {
    // Padded, and with a stride s > 1 along the width also split into s phases of the padded row
    // (phased[.., r, q] = padded[.., q*s + r]), so that the columns x*s + k*d one kernel tap reads
    // are contiguous: phase (k*d) mod s, columns x + (k*d) div s.
    bool padded = false;
    for (size_t d = 0; d < D; ++d) padded = padded || p.pad_lo[d] > 0 || p.pad_hi[d] > 0;
    phase = p.strides[D - 1];
    if (padded || phase > 1) {
      std::vector<Expr> shape = {static_cast<int>(p.N), static_cast<int>(p.C)};
      for (size_t d = 0; d < D; ++d) {
        int64_t n = p.in[d] + p.pad_lo[d] + p.pad_hi[d];
        if (d + 1 == D && phase > 1) {
          shape.push_back(static_cast<int>(phase));
          n = (n + phase - 1) / phase;
        }
        shape.push_back(static_cast<int>(n));
      }
      src = te::compute(
          shape,
          [&](const std::vector<Var>& i) {
            std::vector<Expr> idx = {i[0], i[1]};
            Expr cond;
            for (size_t d = 0; d < D; ++d) {
              bool phased = d + 1 == D && phase > 1;
              Expr pos = phased ? i[3 + d] * static_cast<int>(phase) + i[2 + d] : Expr(i[2 + d]);
              Expr r = pos - static_cast<int>(p.pad_lo[d]);
              Expr c;
              if (p.pad_lo[d] > 0) c = r >= 0;
              if (p.pad_hi[d] > 0 || phased) {
                Expr hi = r < static_cast<int>(p.in[d]);
                c = c.defined() ? (c && hi) : hi;
              }
              if (c.defined()) cond = cond.defined() ? (cond && c) : c;
              idx.push_back(c.defined() ? clamp_index(r, p.in[d]) : r);
            }
            return cond.defined() ? select(cond, x(idx), make_zero(x->dtype)) : x(idx);
          },
          op + ".pad");
    } else {
      phase = 1;
    }
  }

  IterVar ic = te::reduce_axis(static_cast<int>(Cg), "ic");
  std::vector<IterVar> ks;
  static const char* knames[] = {"kh", "kw"};
  for (size_t d = 0; d < D; ++d)
    ks.push_back(te::reduce_axis(static_cast<int>(p.kernel[d]), D == 1 ? "kw" : knames[d]));
  std::vector<IterVar> raxes = {ic};
  raxes.insert(raxes.end(), ks.begin(), ks.end());

  std::vector<int64_t> oshape = out_shape(p);
  te::Tensor conv = te::compute(
      to_exprs(oshape),
      [&](const std::vector<Var>& i) {
        Expr o = i[1];
        Expr g = p.group == 1 ? Expr(0) : floordiv(o, static_cast<int>(Og));
        Expr c = p.group == 1 ? Expr(ic->var) : g * static_cast<int>(Cg) + ic->var;
        std::vector<Expr> sidx = {i[0], c};
        for (size_t d = 0; d < D; ++d) {
          int sd = static_cast<int>(p.transpose ? 1 : src_stride[d]);
          Expr tap = ks[d]->var * static_cast<int>(p.dilations[d]);
          if (d + 1 == D && phase > 1) {
            sidx.push_back(floormod(tap, static_cast<int>(phase)));
            sidx.push_back(i[2 + d] + floordiv(tap, static_cast<int>(phase)));
            continue;
          }
          Expr y = sd == 1 ? Expr(i[2 + d]) : i[2 + d] * sd;
          sidx.push_back(y + tap);
        }
        std::vector<Expr> widx;
        if (p.transpose) {
          widx = {p.group == 1 ? Expr(ic->var) : g * static_cast<int>(Cg) + ic->var,
                  p.group == 1 ? Expr(o) : floormod(o, static_cast<int>(Og))};
          for (size_t d = 0; d < D; ++d)
            widx.push_back(static_cast<int>(p.kernel[d] - 1) - ks[d]->var);
        } else {
          widx = {o, ic->var};
          for (size_t d = 0; d < D; ++d) widx.push_back(ks[d]->var);
        }
        return te::sum(src(sidx) * w(widx), raxes);
      },
      p.bias ? op + ".acc" : op);
  if (!p.bias) return {conv};
  te::Tensor b = in[2];
  te::Tensor out = te::compute(
      to_exprs(oshape),
      [&](const std::vector<Var>& i) {
        return conv(std::vector<Expr>(i.begin(), i.end())) + b(i[1]);
      },
      op);
  return {out};
}

// ---- reference: naive loops in double precision, direct (conv) or scatter (transpose)

std::vector<runtime::NDArray> conv_reference(const std::string& op,
                                             const std::vector<runtime::NDArray>& in,
                                             const Attrs& attrs) {
  std::vector<TensorType> types;
  for (const runtime::NDArray& a : in) types.push_back({a.shape(), from_dlpack(a.dtype())});
  ConvParams p = parse(op, types, attrs);
  // Treat conv1d as conv2d with height 1.
  auto sp = [&](const std::vector<int64_t>& v, int64_t one) {
    return p.dims == 1 ? std::vector<int64_t>{one, v[0]} : v;
  };
  std::vector<int64_t> I = sp(p.in, 1), K = sp(p.kernel, 1), Y = sp(p.out, 1), S = sp(p.strides, 1),
                       Dl = sp(p.dilations, 1), PL = sp(p.pad_lo, 0);
  int64_t Cg = p.C / p.group, Og = p.O / p.group;
  const std::vector<double> x = host::read_all_f64(in[0]), w = host::read_all_f64(in[1]);
  const std::vector<double> b = p.bias ? host::read_all_f64(in[2]) : std::vector<double>{};
  std::vector<double> acc(static_cast<size_t>(p.N * p.O * Y[0] * Y[1]), 0.0);
  auto at = [&](int64_t n, int64_t o, int64_t y, int64_t xx) -> double& {
    return acc[static_cast<size_t>(((n * p.O + o) * Y[0] + y) * Y[1] + xx)];
  };
  for (int64_t n = 0; n < p.N; ++n) {
    for (int64_t g = 0; g < p.group; ++g) {
      for (int64_t oj = 0; oj < Og; ++oj) {
        int64_t o = g * Og + oj;
        for (int64_t cj = 0; cj < Cg; ++cj) {
          int64_t c = g * Cg + cj;
          for (int64_t ky = 0; ky < K[0]; ++ky) {
            for (int64_t kx = 0; kx < K[1]; ++kx) {
              int64_t wi = p.transpose ? ((c * Og + oj) * K[0] + ky) * K[1] + kx
                                       : ((o * Cg + cj) * K[0] + ky) * K[1] + kx;
              double wv = w[static_cast<size_t>(wi)];
              if (!p.transpose) {
                for (int64_t y = 0; y < Y[0]; ++y) {
                  int64_t iy = y * S[0] + ky * Dl[0] - PL[0];
                  if (iy < 0 || iy >= I[0]) continue;
                  for (int64_t xo = 0; xo < Y[1]; ++xo) {
                    int64_t ix = xo * S[1] + kx * Dl[1] - PL[1];
                    if (ix < 0 || ix >= I[1]) continue;
                    at(n, o, y, xo) +=
                        wv * x[static_cast<size_t>(((n * p.C + c) * I[0] + iy) * I[1] + ix)];
                  }
                }
              } else {
                // Scatter: input pixel (iy, ix) contributes to output (iy*s - pad + k*d).
                for (int64_t iy = 0; iy < I[0]; ++iy) {
                  int64_t y = iy * S[0] - PL[0] + ky * Dl[0];
                  if (y < 0 || y >= Y[0]) continue;
                  for (int64_t ix = 0; ix < I[1]; ++ix) {
                    int64_t xo = ix * S[1] - PL[1] + kx * Dl[1];
                    if (xo < 0 || xo >= Y[1]) continue;
                    at(n, o, y, xo) +=
                        wv * x[static_cast<size_t>(((n * p.C + c) * I[0] + iy) * I[1] + ix)];
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  int64_t plane = Y[0] * Y[1];
  if (p.bias) {
    for (size_t i = 0; i < acc.size(); ++i)
      acc[i] += b[static_cast<size_t>((static_cast<int64_t>(i) / plane) % p.O)];
  }
  return {host::from_all_f64(out_shape(p), p.dtype, acc)};
}

// ---- schedule

struct ConvKnobs {
  int64_t tile_oc, tile_ow, unroll_kw;
};

// The rule, from what the schedule sees: O output channels, OW output columns, ic input channels
// reduced per output channel (1: depthwise-like, no reuse across rows), kw the kernel width.
ConvKnobs default_knobs(int64_t O, int64_t OW, int64_t ic, int64_t kw, int64_t lanes) {
  ConvKnobs k{};
  if (OW % (2 * lanes) == 0) {
    k.tile_ow = 2 * lanes;
  } else if (OW < lanes) {
    k.tile_ow = OW;
  } else {
    k.tile_ow = lanes;
  }
  bool depthwise = ic == 1;
  k.tile_oc = depthwise ? 4 : 8;
  if (!depthwise) {
    for (int64_t t : {8, 6, 4}) {
      if (O % t == 0) {
        k.tile_oc = t;
        break;
      }
    }
  }
  k.tile_oc = std::min(k.tile_oc, O);
  k.unroll_kw = kw <= 7 ? 1 : 0;
  return k;
}

ConfigSpace conv_space(const std::string& op, const std::vector<TensorType>& in, const Attrs& attrs,
                       const Target& target) {
  ConvParams p = parse(op, in, attrs);
  int64_t lanes = target.vector_lanes(p.dtype.bits());
  ConvKnobs d = default_knobs(p.O, p.out.back(), p.C / p.group, p.kernel.back(), lanes);
  auto with_default = [](int64_t def, std::vector<int64_t> others, int64_t limit) {
    std::vector<int64_t> v = {def};
    for (int64_t x : others)
      if (x != def && x <= limit) v.push_back(x);
    return v;
  };
  return {
      {"tile_oc", with_default(d.tile_oc, {1, 2, 4, 6, 8, 12, 16}, p.O)},
      {"tile_ow", with_default(d.tile_ow, {lanes / 2, lanes, 2 * lanes, 3 * lanes, 4 * lanes},
                               std::max(p.out.back(), d.tile_ow))},
      {"unroll_kw", with_default(d.unroll_kw, {0, 1}, 1)},
  };
}

void conv_schedule(const std::string& op, te::Schedule& s, const std::vector<te::Tensor>& outs,
                   const Target& target, const Config& config) {
  te::Tensor out = outs[0];
  // The reduction stage, the stages it reads (padding or dilation, computed at the root) and the
  // injective stages between it and the output (bias, fused epilogues: inlined).
  te::Tensor conv;
  std::vector<te::Tensor> order = te::topological_order(outs);
  for (const te::Tensor& t : order)
    if (t.is_compute() && !t->reduce_axis.empty()) conv = t;
  ANVIL_ICHECK(conv.defined(), op, ": no reduction stage to schedule");
  std::vector<te::Tensor> sources;
  for (const auto& t : conv->inputs)
    if (te::Tensor(t.get()).is_compute()) sources.push_back(te::Tensor(t.get()));
  for (const te::Tensor& t : order) {
    if (!t.is_compute() || t.get() == conv.get() || t.get() == out.get()) continue;
    if (std::find_if(sources.begin(), sources.end(),
                     [&](const te::Tensor& u) { return u.get() == t.get(); }) != sources.end())
      continue;
    s[t].compute_inline();
  }
  for (const te::Tensor& t : sources) {
    te::Stage st = s[t];
    std::vector<IterVar> ax = st.axis();
    // The rows in parallel; each row a serial loop (no division of a fused index per element).
    IterVar f = ax[0];
    for (size_t a = 1; a + 1 < ax.size(); ++a) f = st.fuse(f, ax[a]);
    st.parallel(f);
  }

  int64_t lanes = target.vector_lanes(out->dtype.bits());
  // Shape facts from the output tensor (inputs may come in any order after fusion).
  std::vector<int64_t> oshape = shape_of(out);
  int64_t O = oshape[1], OW = oshape.back();
  // The reduction axes are (ic, [kh,] kw).
  std::optional<int64_t> ic_ext = as_const_int(conv->reduce_axis[0]->dom.extent);
  std::optional<int64_t> kw_ext = as_const_int(conv->reduce_axis.back()->dom.extent);
  ConvKnobs k = default_knobs(O, OW, ic_ext.value_or(1), kw_ext.value_or(1), lanes);
  k.tile_oc = std::max<int64_t>(1, std::min(knob(config, "tile_oc", k.tile_oc), O));
  k.tile_ow = std::max<int64_t>(1, std::min(knob(config, "tile_ow", k.tile_ow), OW));
  k.unroll_kw = knob(config, "unroll_kw", k.unroll_kw);

  te::Tensor inner;
  if (out.get() == conv.get()) {
    inner = s.cache_write(conv, MemoryScope::kLocal);
  } else {
    inner = conv;
  }
  te::Stage so = s[out];
  std::vector<IterVar> ax = so.axis();
  bool two_d = ax.size() == 4;
  auto [oo, oi] = so.split(ax[1], k.tile_oc);
  auto [wo, wi] = so.split(ax.back(), k.tile_ow);
  std::vector<IterVar> order_out = {ax[0], oo};
  if (two_d) order_out.push_back(ax[2]);
  order_out.insert(order_out.end(), {wo, oi, wi});
  so.reorder(order_out);
  IterVar fused = so.fuse(ax[0], oo);
  if (two_d) fused = so.fuse(fused, ax[2]);
  so.parallel(fused);
  so.unroll(oi);
  // Columns: whole vectors split off and unrolled when the tile is several vectors wide.
  auto vectorize_cols = [&](te::Stage st, const IterVar& cols) {
    if (k.tile_ow > lanes && k.tile_ow % lanes == 0) {
      auto [co, ci] = st.split(cols, lanes);
      st.unroll(co);
      st.vectorize(ci);
      return std::vector<IterVar>{co, ci};
    }
    st.vectorize(cols);
    return std::vector<IterVar>{cols};
  };
  vectorize_cols(so, wi);

  te::Stage si = s[inner];
  si.compute_at(so, wo);
  std::vector<IterVar> iax = si.axis();
  std::vector<IterVar> rax = si.reduce_axis();
  IterVar io = iax[1], iw = iax.back();
  std::vector<IterVar> iorder = {iax[0]};
  if (two_d) iorder.push_back(iax[2]);
  iorder.insert(iorder.end(), rax.begin(), rax.end());
  iorder.push_back(io);
  std::vector<IterVar> cols;
  if (k.tile_ow > lanes && k.tile_ow % lanes == 0) {
    auto [co, ci] = si.split(iw, lanes);
    cols = {co, ci};
  } else {
    cols = {iw};
  }
  iorder.insert(iorder.end(), cols.begin(), cols.end());
  si.reorder(iorder);
  si.unroll(io);
  if (cols.size() == 2) si.unroll(cols[0]);
  si.vectorize(cols.back());
  if (k.unroll_kw) si.unroll(rax.back());
}

// ---- GPU schedule: the tiled one (schedule_gpu.h) over (output channels, rows, columns):
// default 4 channel threads x 4 channels each, 8 x 8 pixel threads, input channels in steps of
// up to 8 through shared memory (a depthwise convolution has one: its step is the whole kernel).
std::vector<GpuTileAxis> conv_gpu_axes(size_t dims) {
  std::vector<GpuTileAxis> axes = {{"f", 4, 4}};
  if (dims == 2) axes.push_back({"y", 8, 1});
  axes.push_back({"x", 8, 1});
  return axes;
}
constexpr int64_t kConvGpuMaxKTile = 8;

// Grouped convolutions with several output channels per group (not depthwise) take the default
// GPU schedule: a tile of channels across groups reads an input-channel range whose size the
// tiled schedule cannot make static.
bool conv_gpu_tiled(int64_t group, int64_t out_channels) {
  return group == 1 || group == out_channels;
}

ConfigSpace conv_gpu_space(const std::string& op, const std::vector<TensorType>& in,
                           const Attrs& attrs, const Target& target) {
  ConvParams p = parse(op, in, attrs);
  if (!conv_gpu_tiled(p.group, p.O)) return {};
  return gpu_tiled_space(out_shape(p), p.C / p.group, conv_gpu_axes(p.dims), kConvGpuMaxKTile,
                         target);
}

void register_conv(const std::string& name) {
  OpDef def;
  def.name = name;
  def.pattern = Pattern::kComplexOutFusable;
  bool transpose = name == "conv2d_transpose";
  def.attrs = window_attrs(name == "conv1d" ? 1 : 2, conv_window(transpose));
  if (transpose)
    def.attrs.push_back({"subpixel",
                         AttrType::kInt,
                         int64_t{0},
                         {one_of({0, 1})},
                         "1: compute by output phase, T x T taps per output (GPU targets; group 1, "
                         "no dilation)"});
  def.flops = conv_flops(transpose);
  def.infer = [name](const std::vector<TensorType>& in, const Attrs& attrs) {
    return infer_types(in, attrs, name);
  };
  def.compute = [name](const std::vector<te::Tensor>& in, const Attrs& attrs) {
    return conv_compute(name, in, attrs);
  };
  def.reference = [name](const std::vector<runtime::NDArray>& in, const Attrs& attrs) {
    return conv_reference(name, in, attrs);
  };
  def.schedule_x86 = [name](te::Schedule& s, const std::vector<te::Tensor>& outs,
                            const Target& target,
                            const Config& config) { conv_schedule(name, s, outs, target, config); };
  def.space = [name](const std::vector<TensorType>& in, const Attrs& attrs, const Target& target) {
    return conv_space(name, in, attrs, target);
  };
  def.schedule_gpu = [](te::Schedule& s, const std::vector<te::Tensor>& outs, const Attrs& attrs,
                        const Target& target, const Config& config) {
    std::vector<int64_t> out = shape_of(outs[0]);
    if (!conv_gpu_tiled(attrs.get_int("group"), out[1]))
      return schedule_gpu_default(s, outs, target);
    schedule_gpu_tiled(s, outs, conv_gpu_axes(out.size() - 2), kConvGpuMaxKTile, target, config);
  };
  def.space_gpu = [name](const std::vector<TensorType>& in, const Attrs& attrs,
                         const Target& target) { return conv_gpu_space(name, in, attrs, target); };
  def.float16_via_float32 = true;
  register_op(std::move(def));
}

}  // namespace

void register_conv_ops() {
  register_conv("conv1d");
  register_conv("conv2d");
  register_conv("conv2d_transpose");
}

}  // namespace anvil::ops
