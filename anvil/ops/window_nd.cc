// Convolutions and pools of any spatial rank: conv3d, conv1d_transpose, conv3d_transpose,
// max_pool3d, avg_pool3d and max_pool2d_with_indices (ONNX MaxPool's second output). Each has a
// shape rule and a naive reference (double accumulation). The convolutions and the 3-D pools
// also have a plain compiled form (one reduction per output element, schedule_reductions_x86:
// correct, not tuned); the pool with indices runs in graph::interpret only (its compute throws an
// error naming the op and the input). The 2-D
// (and conv1d) operators with schedules are in conv.cc and pool_norm.cc; the semantics here are
// the same, per dimension (ONNX Conv, ConvTranspose, MaxPool, AveragePool):
//
//   conv:       out[n, o, y..] = sum_{ic, k..} x[n, g*Cg + ic, y*s + k*d - pad_lo ..]
//                                 * w[o, ic, k..] (+ b[o]),    g = o / (O/group)
//   transpose:  out[n, g*Og + oj, i*s - pad_lo + k*d ..] += x[n, g*Cg + ic, i..] * w[g*Cg + ic,
//               oj, k..]; output s*(in-1) + output_padding + (K-1)*d + 1 - pad_lo - pad_hi
//   pools:      as max_pool2d / avg_pool2d (pool_norm.cc): padding never wins a max and is
//               counted by an average only with count_include_pad; with ceil_mode the last
//               window must start inside the input or its left padding.
// Floats of any width (float16/32/64) are read as doubles; max pooling also takes integers, the
// convolutions int32 (their sums exact in double up to 2^53).
#include <cmath>
#include <limits>

#include "anvil/ir/op.h"
#include "anvil/ops/families.h"
#include "anvil/ops/host_value.h"
#include "anvil/ops/op.h"
#include "anvil/ops/schedule_util.h"
#include "anvil/ops/window.h"
#include "anvil/support/error.h"

namespace anvil::ops {

using ir::DataType;
using namespace ir;

namespace {

int64_t product(const std::vector<int64_t>& v) {
  int64_t n = 1;
  for (int64_t d : v) n *= d;
  return n;
}

// Advances the row-major counter `i` within `extent`; false after the last position.
bool next(std::vector<int64_t>& i, const std::vector<int64_t>& extent) {
  for (size_t d = i.size(); d-- > 0;) {
    if (++i[d] < extent[d]) return true;
    i[d] = 0;
  }
  return false;
}

// Row-major offset of `i` in `shape`.
int64_t offset(const std::vector<int64_t>& i, const std::vector<int64_t>& shape) {
  int64_t o = 0;
  for (size_t d = 0; d < shape.size(); ++d) o = o * shape[d] + i[d];
  return o;
}

[[noreturn]] void no_compiled_form(const std::string& op, const std::vector<te::Tensor>& in) {
  throw Error(str(op,
                  ": has no compiled form yet (compiled code supports 1-D, 2-D and 3-D "
                  "convolutions, transposed or not, and 2-D and 3-D pools, not pools with "
                  "indices); input x is ",
                  to_string(type_of(in.at(0)))));
}

void check_float(const std::string& op, const TensorType& t, const char* what) {
  ANVIL_CHECK(t.dtype.is_float() && host::reference_dtype(t.dtype), op, ": ", what,
              " must be float16, float32 or float64, not ", to_string(t));
}

// ---- convolutions

struct Conv {
  bool transpose = false;
  size_t dims = 0;
  std::vector<int64_t> strides, dilations, pad_lo, pad_hi, output_padding;
  int64_t group = 1, N = 0, C = 0, O = 0;
  std::vector<int64_t> in, kernel, out;
  bool bias = false;
  std::vector<int64_t> out_shape() const {
    std::vector<int64_t> s = {N, O};
    s.insert(s.end(), out.begin(), out.end());
    return s;
  }
};

// The window attributes a convolution takes (window.h).
unsigned conv_window(bool transpose) {
  return kWindowGroup | (transpose ? kWindowOutputPadding : 0u);
}

Conv parse_conv(const std::string& op, size_t dims, bool transpose,
                const std::vector<TensorType>& in, const Attrs& attrs) {
  Conv p;
  p.transpose = transpose;
  p.dims = dims;
  size_t rank = dims + 2;
  ANVIL_CHECK(in.size() == 2 || in.size() == 3, op,
              ": expects 2 or 3 inputs (x, weight, bias), got ", in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    // int32: ONNX's integer convolutions (ConvInteger, QLinearConv) accumulate exactly in it.
    if (in[i].dtype != DataType::Int(32))
      check_float(op, in[i], i == 0 ? "input x" : i == 1 ? "the weight" : "the bias");
    ANVIL_CHECK(in[i].dtype == in[0].dtype, op, ": input ", i, " is ", to_string(in[i]),
                ", but x is ", to_string(in[0]));
  }
  ANVIL_CHECK(in[0].shape.size() == rank, op, ": input x must have rank ", rank, ", got ",
              to_string(in[0]));
  ANVIL_CHECK(in[1].shape.size() == rank, op, ": weight must have rank ", rank, ", got ",
              to_string(in[1]));
  Window w = parse_window(attrs, dims, conv_window(transpose));
  p.strides = w.strides;
  p.dilations = w.dilations;
  p.pad_lo = w.pad_lo;
  p.pad_hi = w.pad_hi;
  p.group = w.group;
  p.output_padding = w.output_padding;
  const std::vector<int64_t>& xs = in[0].shape;
  const std::vector<int64_t>& ws = in[1].shape;
  p.N = xs[0];
  p.C = xs[1];
  p.in.assign(xs.begin() + 2, xs.end());
  p.kernel.assign(ws.begin() + 2, ws.end());
  for (size_t d = 0; d < dims; ++d) {
    ANVIL_CHECK(p.in[d] >= 1 && p.kernel[d] >= 1, op, ": input x ", to_string(in[0]),
                " and weight ", to_string(in[1]), " must not have empty spatial dimensions");
  }
  ANVIL_CHECK(p.C % p.group == 0, op, ": input x ", to_string(in[0]), " has ", p.C,
              " channels, not divisible by attribute 'group' = ", p.group);
  if (transpose) {
    ANVIL_CHECK(ws[0] == p.C, op, ": input x ", to_string(in[0]), " has ", p.C,
                " channels, but weight ", to_string(in[1]), " expects ", ws[0]);
    p.O = ws[1] * p.group;
  } else {
    ANVIL_CHECK(ws[1] * p.group == p.C, op, ": input x ", to_string(in[0]), " has ", p.C,
                " channels, but weight ", to_string(in[1]), " expects ", ws[1], " x group ",
                p.group);
    p.O = ws[0];
    ANVIL_CHECK(p.O % p.group == 0, op, ": weight ", to_string(in[1]), " has ", p.O,
                " output channels, not divisible by attribute 'group' = ", p.group);
  }
  if (in.size() == 3) {
    p.bias = true;
    ANVIL_CHECK(in[2].shape == std::vector<int64_t>{p.O}, op, ": bias must have shape [", p.O,
                "] (one per output channel), got ", to_string(in[2]));
  }
  for (size_t d = 0; d < dims; ++d) {
    int64_t eff = (p.kernel[d] - 1) * p.dilations[d] + 1;
    int64_t o = transpose ? p.strides[d] * (p.in[d] - 1) + p.output_padding[d] + eff - p.pad_lo[d] -
                                p.pad_hi[d]
                          : (p.in[d] + p.pad_lo[d] + p.pad_hi[d] - eff) / p.strides[d] + 1;
    ANVIL_CHECK(o >= 1 && (transpose || eff <= p.in[d] + p.pad_lo[d] + p.pad_hi[d]), op,
                ": spatial dimension ", d, " has no output (input ", p.in[d], ", dilated kernel ",
                eff, ", attribute 'pads' = ", list_str(w.pads()), ")");
    p.out.push_back(o);
  }
  return p;
}

std::vector<runtime::NDArray> conv_reference(const Conv& p,
                                             const std::vector<runtime::NDArray>& in) {
  int64_t Cg = p.C / p.group, Og = p.O / p.group;
  std::vector<int64_t> oshape = p.out_shape();
  std::vector<double> acc(static_cast<size_t>(product(oshape)), 0.0);
  int64_t in_plane = product(p.in), out_plane = product(p.out), kvol = product(p.kernel);
  const runtime::NDArray &x = in[0], &w = in[1];
  std::vector<int64_t> k(p.dims), i(p.dims), pos(p.dims);
  for (int64_t n = 0; n < p.N; ++n) {
    for (int64_t g = 0; g < p.group; ++g) {
      for (int64_t oj = 0; oj < Og; ++oj) {
        int64_t o = g * Og + oj;
        for (int64_t cj = 0; cj < Cg; ++cj) {
          int64_t c = g * Cg + cj;
          int64_t wbase = p.transpose ? (c * Og + oj) * kvol : (o * Cg + cj) * kvol;
          int64_t xbase = (n * p.C + c) * in_plane, obase = (n * p.O + o) * out_plane;
          std::fill(k.begin(), k.end(), 0);
          do {
            double wv = host::read_f64(w, wbase + offset(k, p.kernel));
            // Conv: over output positions i, reading input i*s + k*d - pad. Transpose: over input
            // positions i, adding to output i*s - pad + k*d.
            const std::vector<int64_t>& range = p.transpose ? p.in : p.out;
            const std::vector<int64_t>& bound = p.transpose ? p.out : p.in;
            std::fill(i.begin(), i.end(), 0);
            do {
              bool inside = true;
              for (size_t d = 0; d < p.dims && inside; ++d) {
                pos[d] = i[d] * p.strides[d] + k[d] * p.dilations[d] - p.pad_lo[d];
                inside = pos[d] >= 0 && pos[d] < bound[d];
              }
              if (!inside) continue;
              if (p.transpose) {
                acc[static_cast<size_t>(obase + offset(pos, p.out))] +=
                    wv * host::read_f64(x, xbase + offset(i, p.in));
              } else {
                acc[static_cast<size_t>(obase + offset(i, p.out))] +=
                    wv * host::read_f64(x, xbase + offset(pos, p.in));
              }
            } while (next(i, range));
          } while (next(k, p.kernel));
        }
      }
    }
  }
  runtime::NDArray out = runtime::NDArray::empty(oshape, x.dtype());
  for (int64_t e = 0; e < out.numel(); ++e) {
    double v = acc[static_cast<size_t>(e)];
    if (p.bias) v += host::read_f64(in[2], (e / out_plane) % p.O);
    host::write_f64(out, e, v);
  }
  return {out};
}

std::vector<TensorType> in_types(const std::vector<te::Tensor>& in) {
  std::vector<TensorType> t;
  for (const te::Tensor& x : in) t.push_back(type_of(x));
  return t;
}

// The position along spatial dimension d that output index o and window tap k read.
Expr tap_position(Expr o, Expr k, size_t d, const std::vector<int64_t>& strides,
                  const std::vector<int64_t>& dilations, const std::vector<int64_t>& pad_lo) {
  return o * static_cast<int>(strides[d]) + k * static_cast<int>(dilations[d]) -
         static_cast<int>(pad_lo[d]);
}

// The convolution of any spatial rank, direct or transposed (gathered: each output sums the
// input positions whose taps land on it): one reduction over the input channels of the group
// and the window taps, padding and positions between strides read as zeros through clamped
// indices, the bias added after. Unblocked and untiled (schedule_reductions_x86): correct, not
// fast.
std::vector<te::Tensor> conv_nd_compute(const Conv& p, const std::vector<te::Tensor>& in) {
  const te::Tensor &x = in[0], &w = in[1];
  DataType t = x->dtype;
  int64_t Cg = p.C / p.group, Og = p.O / p.group;
  std::vector<IterVar> r = {te::reduce_axis(static_cast<int>(Cg), "rc")};
  for (size_t d = 0; d < p.dims; ++d) {
    r.push_back(te::reduce_axis(static_cast<int>(p.kernel[d]), "rk" + std::to_string(d)));
  }
  te::Tensor conv = te::compute(
      to_exprs(p.out_shape()),
      [&](const std::vector<Var>& o) {
        Expr channel = floordiv(o[1], static_cast<int>(Og)) * static_cast<int>(Cg) + r[0]->var;
        std::vector<Expr> xi = {o[0], channel}, wi = {o[1], r[0]->var};
        if (p.transpose) wi = {channel, floormod(o[1], static_cast<int>(Og))};
        Expr inside = make_bool(true);
        for (size_t d = 0; d < p.dims; ++d) {
          Expr pos;
          if (p.transpose) {
            // The input position i with i * s - pad_lo + k * d == o: a tap reads only where the
            // stride divides the distance.
            Expr num = o[d + 2] + static_cast<int>(p.pad_lo[d]) -
                       r[d + 1]->var * static_cast<int>(p.dilations[d]);
            int s = static_cast<int>(p.strides[d]);
            if (s > 1) inside = inside && floormod(num, s) == 0;
            pos = s > 1 ? floordiv(num, s) : num;
          } else {
            pos = tap_position(o[d + 2], r[d + 1]->var, d, p.strides, p.dilations, p.pad_lo);
          }
          inside = inside && pos >= 0 && pos < static_cast<int>(p.in[d]);
          xi.push_back(min(max(pos, 0), static_cast<int>(p.in[d] - 1)));
          wi.push_back(r[d + 1]->var);
        }
        return te::sum(select(inside, x(xi), make_zero(t)) * w(wi), r);
      },
      "conv_nd");
  if (!p.bias) return {conv};
  const te::Tensor& b = in[2];
  return {te::compute(
      to_exprs(p.out_shape()),
      [&](const std::vector<Var>& o) {
        std::vector<Expr> at(o.begin(), o.end());
        return conv(at) + b(o[1]);
      },
      "conv_nd_bias")};
}

void register_conv_nd(const std::string& name, size_t dims, bool transpose) {
  OpDef def;
  def.name = name;
  def.pattern = Pattern::kOpaque;
  def.attrs = window_attrs(dims, conv_window(transpose));
  def.flops = conv_flops(transpose);
  def.infer = [=](const std::vector<TensorType>& in, const Attrs& attrs) {
    return std::vector<TensorType>{
        {parse_conv(name, dims, transpose, in, attrs).out_shape(), in[0].dtype}};
  };
  def.compute = [=](const std::vector<te::Tensor>& in,
                    const Attrs& attrs) -> std::vector<te::Tensor> {
    return conv_nd_compute(parse_conv(name, dims, transpose, in_types(in), attrs), in);
  };
  def.schedule_x86 = [](te::Schedule& s, const std::vector<te::Tensor>& outs, const Target& target,
                        const Config&) { schedule_reductions_x86(s, outs, target); };
  def.space = [](const std::vector<TensorType>&, const Attrs&, const Target&) {
    return ConfigSpace{};
  };
  def.reference = [=](const std::vector<runtime::NDArray>& in, const Attrs& attrs) {
    std::vector<TensorType> types;
    for (const runtime::NDArray& a : in) types.push_back({a.shape(), from_dlpack(a.dtype())});
    return conv_reference(parse_conv(name, dims, transpose, types, attrs), in);
  };
  def.float16_via_float32 = true;
  register_op(std::move(def));
}

// ---- pools

struct Pool {
  std::vector<int64_t> in, kernel, strides, pad_lo, pad_hi, dilations, out;
  bool count_include_pad = false;
};

// The window attributes a pool takes (window.h).
unsigned pool_window(bool is_avg) {
  return kWindowKernel | kWindowCeilMode | (is_avg ? kWindowCountIncludePad : 0u);
}

Pool parse_pool(const std::string& op, size_t dims, bool is_avg, const std::vector<TensorType>& in,
                const Attrs& attrs) {
  ANVIL_CHECK(in.size() == 1, op, ": expects 1 input, got ", in.size());
  if (is_avg) {
    check_float(op, in[0], "input x");
  } else {
    ANVIL_CHECK(host::reference_dtype(in[0].dtype) && !in[0].dtype.is_bool(), op,
                ": input x must be a float or integer tensor, not ", to_string(in[0]));
  }
  ANVIL_CHECK(in[0].shape.size() == dims + 2, op, ": input x must have rank ", dims + 2, ", got ",
              to_string(in[0]));
  Pool p;
  p.in.assign(in[0].shape.begin() + 2, in[0].shape.end());
  Window w = parse_window(attrs, dims, pool_window(is_avg));
  ANVIL_CHECK(is_avg || !attrs.has("count_include_pad"), op,
              ": attribute 'count_include_pad' applies to average pooling only");
  p.kernel = w.kernel;
  p.strides = w.strides;
  p.dilations = w.dilations;
  p.pad_lo = w.pad_lo;
  p.pad_hi = w.pad_hi;
  p.count_include_pad = w.count_include_pad;
  bool ceil_mode = w.ceil_mode;
  for (size_t d = 0; d < dims; ++d) {
    int64_t extent = (p.kernel[d] - 1) * p.dilations[d] + 1;
    int64_t padded = p.in[d] + p.pad_lo[d] + p.pad_hi[d];
    ANVIL_CHECK(extent <= padded, op, ": attribute 'kernel_shape' ", list_str(p.kernel), " spans ",
                extent, " in dimension ", d, ", more than the padded input's ", padded);
    int64_t span = padded - extent, o;
    if (ceil_mode) {
      o = (span + p.strides[d] - 1) / p.strides[d] + 1;
      if ((o - 1) * p.strides[d] >= p.in[d] + p.pad_lo[d]) --o;
    } else {
      o = span / p.strides[d] + 1;
    }
    p.out.push_back(o);
  }
  return p;
}

// With `indices` (max only), also the flat index of each maximum (the first one on ties) in x as
// ONNX's MaxPool gives it: row-major (storage_order 0) or with the spatial dimensions reversed
// (storage_order 1).
std::vector<runtime::NDArray> pool_reference(const Pool& p, bool is_avg, const runtime::NDArray& x,
                                             bool indices = false, bool column_major = false) {
  size_t dims = p.in.size();
  int64_t N = x.shape()[0], C = x.shape()[1];
  std::vector<int64_t> oshape = {N, C};
  oshape.insert(oshape.end(), p.out.begin(), p.out.end());
  runtime::NDArray out = runtime::NDArray::empty(oshape, x.dtype());
  runtime::NDArray where;
  if (indices) where = runtime::NDArray::empty(oshape, to_dlpack(DataType::Int64()));
  std::vector<int64_t> rev_in(p.in.rbegin(), p.in.rend()), rev_pos(dims);
  bool is_float = from_dlpack(x.dtype()).is_float();
  int64_t in_plane = product(p.in), out_plane = product(p.out);
  std::vector<int64_t> o(dims), k(dims), pos(dims);
  for (int64_t nc = 0; nc < N * C; ++nc) {
    std::fill(o.begin(), o.end(), 0);
    do {
      double best = -std::numeric_limits<double>::infinity(), total = 0;
      int64_t ibest = std::numeric_limits<int64_t>::min(), counted = 0, arg = -1;
      bool nan = false;
      std::fill(k.begin(), k.end(), 0);
      do {
        bool inside = true, counts = true;
        for (size_t d = 0; d < dims; ++d) {
          pos[d] = o[d] * p.strides[d] - p.pad_lo[d] + k[d] * p.dilations[d];
          inside = inside && pos[d] >= 0 && pos[d] < p.in[d];
          int64_t lo = p.count_include_pad ? -p.pad_lo[d] : 0;
          int64_t hi = p.count_include_pad ? p.in[d] + p.pad_hi[d] : p.in[d];
          counts = counts && pos[d] >= lo && pos[d] < hi;
        }
        counted += counts;
        if (!inside) continue;
        int64_t e = nc * in_plane + offset(pos, p.in);
        bool better;
        if (is_float) {
          double v = host::read_f64(x, e);
          better = arg < 0 || v > best || (std::isnan(v) && !nan);
          nan = nan || std::isnan(v);
          best = std::max(best, v);
          total += v;
        } else {
          int64_t v = host::read_i64(x, e);  // integers: max pooling only
          better = arg < 0 || v > ibest;
          ibest = std::max(ibest, v);
        }
        if (better && !column_major) arg = e;
        if (better && column_major) {
          std::copy(pos.rbegin(), pos.rend(), rev_pos.begin());
          arg = nc * in_plane + offset(rev_pos, rev_in);
        }
      } while (next(k, p.kernel));
      int64_t e = nc * out_plane + offset(o, p.out);
      if (indices) where.data_as<int64_t>()[e] = arg;
      if (!is_float) {
        host::write_i64(out, e, ibest);
        continue;
      }
      double r = is_avg ? (counted ? total / static_cast<double>(counted) : 0.0) : best;
      host::write_f64(out, e, nan ? std::numeric_limits<double>::quiet_NaN() : r);
    } while (next(o, p.out));
  }
  if (indices) return {out, where};
  return {out};
}

// Max and average pools of any spatial rank: reductions over the window taps inside the input
// (clamped indices, the taps outside excluded by the reduction's condition); an average divides
// by the taps counted (inside the input, or inside the padding with count_include_pad).
std::vector<te::Tensor> pool_nd_compute(const Pool& p, bool is_avg, const te::Tensor& x) {
  size_t dims = p.in.size();
  std::vector<int64_t> oshape = {shape_of(x)[0], shape_of(x)[1]};
  oshape.insert(oshape.end(), p.out.begin(), p.out.end());
  std::vector<IterVar> r;
  for (size_t d = 0; d < dims; ++d) {
    r.push_back(te::reduce_axis(static_cast<int>(p.kernel[d]), "rk" + std::to_string(d)));
  }
  auto window = [&](const std::vector<Var>& o, bool counted_range, Expr* cond) {
    std::vector<Expr> xi = {o[0], o[1]};
    Expr inside = make_bool(true);
    for (size_t d = 0; d < dims; ++d) {
      Expr pos = tap_position(o[d + 2], r[d]->var, d, p.strides, p.dilations, p.pad_lo);
      int64_t lo = counted_range ? -p.pad_lo[d] : 0;
      int64_t hi = counted_range ? p.in[d] + p.pad_hi[d] : p.in[d];
      inside = inside && pos >= static_cast<int>(lo) && pos < static_cast<int>(hi);
      xi.push_back(min(max(pos, 0), static_cast<int>(p.in[d] - 1)));
    }
    *cond = inside;
    return xi;
  };
  if (!is_avg) {
    return {te::compute(
        to_exprs(oshape),
        [&](const std::vector<Var>& o) {
          Expr inside;
          std::vector<Expr> xi = window(o, false, &inside);
          return te::max(x(xi), r, inside);
        },
        "max_pool_nd")};
  }
  DataType t = x->dtype;
  te::Tensor total = te::compute(
      to_exprs(oshape),
      [&](const std::vector<Var>& o) {
        Expr inside;
        std::vector<Expr> xi = window(o, false, &inside);
        return te::sum(x(xi), r, inside);
      },
      "avg_pool_nd_sum");
  te::Tensor count = te::compute(
      to_exprs(oshape),
      [&](const std::vector<Var>& o) {
        Expr counts;
        window(o, p.count_include_pad, &counts);
        return te::sum(select(counts, make_const(t, 1.0), make_zero(t)), r);
      },
      "avg_pool_nd_count");
  return {te::compute(
      to_exprs(oshape),
      [&](const std::vector<Var>& o) {
        std::vector<Expr> at(o.begin(), o.end());
        return total(at) / max(count(at), make_const(t, 1.0));
      },
      "avg_pool_nd")};
}

// With `indices`: max pooling with a second output, the int64 indices of the maxima (attribute
// storage_order 0 or 1).
void register_pool_nd(const std::string& name, size_t dims, bool is_avg, bool indices = false) {
  OpDef def;
  def.name = name;
  def.pattern = Pattern::kOpaque;
  def.attrs = window_attrs(dims, pool_window(is_avg));
  if (indices) {
    def.attrs.push_back({"storage_order",
                         AttrType::kInt,
                         int64_t{0},
                         {one_of(std::vector<int64_t>{0, 1})},
                         "the indices' order: 0 row-major, 1 column-major"});
  }
  def.flops = pool_flops();
  def.infer = [=](const std::vector<TensorType>& in, const Attrs& attrs) {
    Pool p = parse_pool(name, dims, is_avg, in, attrs);
    std::vector<int64_t> s = {in[0].shape[0], in[0].shape[1]};
    s.insert(s.end(), p.out.begin(), p.out.end());
    if (indices) return std::vector<TensorType>{{s, in[0].dtype}, {s, DataType::Int64()}};
    return std::vector<TensorType>{{s, in[0].dtype}};
  };
  def.compute = [=](const std::vector<te::Tensor>& in,
                    const Attrs& attrs) -> std::vector<te::Tensor> {
    if (indices) no_compiled_form(name, in);
    return pool_nd_compute(parse_pool(name, dims, is_avg, in_types(in), attrs), is_avg, in[0]);
  };
  def.schedule_x86 = [](te::Schedule& s, const std::vector<te::Tensor>& outs, const Target& target,
                        const Config&) { schedule_reductions_x86(s, outs, target); };
  def.space = [](const std::vector<TensorType>&, const Attrs&, const Target&) {
    return ConfigSpace{};
  };
  def.reference = [=](const std::vector<runtime::NDArray>& in, const Attrs& attrs) {
    Pool p = parse_pool(name, dims, is_avg, {{in[0].shape(), from_dlpack(in[0].dtype())}}, attrs);
    return pool_reference(p, is_avg, in[0], indices,
                          indices && attrs.get_int("storage_order") == 1);
  };
  def.float16_via_float32 = true;
  register_op(std::move(def));
}

}  // namespace

void register_window_nd_ops() {
  register_conv_nd("conv3d", 3, false);
  register_conv_nd("conv1d_transpose", 1, true);
  register_conv_nd("conv3d_transpose", 3, true);
  register_pool_nd("max_pool3d", 3, false);
  register_pool_nd("avg_pool3d", 3, true);
  register_pool_nd("max_pool2d_with_indices", 2, false, /*indices=*/true);
}

}  // namespace anvil::ops
