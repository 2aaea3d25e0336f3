// grid_sample (ONNX GridSample, opset 16): X [N, C, H, W] sampled at the points of a grid
// [N, Ho, Wo, 2] holding (x, y) normalized to [-1, 1]; the output is [N, C, Ho, Wo].
//
//   coordinates  align_corners: -1 and 1 are the centres of the corner pixels,
//                x = (gx + 1) / 2 * (W - 1); otherwise their outer edges, x = ((gx + 1) * W - 1) /
//                2
//   mode         bilinear (4 taps), nearest (the rounded coordinate, halves to even), bicubic
//                (4 x 4 taps, Keys' kernel with a = -0.75; reference only for now)
//   padding      zeros: taps outside read 0; border: coordinates clamped into the image;
//                reflection: coordinates reflected at the image's edges (the corner centres with
//                align_corners, else the outer edges), then clamped. Bicubic pads each tap.
//
// Each output element reads a fixed number of taps, from small coordinate and weight stages
// (opaque: fused with nothing, so that they are not inlined back). The compute and the reference
// share the coordinate rules, written once over a number type (Expr or double).
#include <array>
#include <cmath>

#include "anvil/ops/elementwise_common.h"
#include "anvil/ops/families.h"
#include "anvil/ops/schedule_util.h"
#include "anvil/ops/transform_common.h"

namespace anvil::ops {

using namespace transform_detail;

namespace {

struct GridSpec {
  std::string mode, padding;
  bool align_corners = false;
};

GridSpec grid_spec(const Attrs& attrs) {
  GridSpec g{attrs.get_string("mode"), attrs.get_string("padding_mode"),
             attrs.get_int("align_corners") != 0};
  ANVIL_CHECK(g.mode == "bilinear" || g.mode == "nearest" || g.mode == "bicubic",
              "grid_sample: attribute 'mode' = '", g.mode, "' is not bilinear, nearest or bicubic");
  ANVIL_CHECK(g.padding == "zeros" || g.padding == "border" || g.padding == "reflection",
              "grid_sample: attribute 'padding_mode' = '", g.padding,
              "' is not zeros, border or reflection");
  return g;
}

// The arithmetic the rules need, for Expr (compiled) and double (reference).
struct ExprMath {
  using T = Expr;
  DataType t;
  T c(double v) const { return make_const(t, v); }
  T floor(T x) const { return elementwise::call(Intrinsic::kFloor, x); }
  T round(T x) const { return elementwise::call(Intrinsic::kRound, x); }
  T abs(T x) const { return elementwise::call(Intrinsic::kFabs, x); }
  T fmod(T x, T y) const { return Call::make(Intrinsic::kFmod, {x, y}); }
  T clamp(T x, T lo, T hi) const { return ir::min(ir::max(x, lo), hi); }
  T pick(Expr cond, T a, T b) const { return select(cond, a, b); }
};
struct DoubleMath {
  using T = double;
  T c(double v) const { return v; }
  T floor(T x) const { return std::floor(x); }
  T round(T x) const { return std::nearbyint(x); }
  T abs(T x) const { return std::fabs(x); }
  T fmod(T x, T y) const { return std::fmod(x, y); }
  T clamp(T x, T lo, T hi) const { return std::min(std::max(x, lo), hi); }
  T pick(bool cond, T a, T b) const { return cond ? a : b; }
};

// The pixel coordinate of normalized g along an axis of n pixels.
template <typename M>
typename M::T unnormalize(const M& m, typename M::T g, int64_t n, bool align) {
  double nd = static_cast<double>(n);
  return align ? (g + m.c(1.0)) * m.c((nd - 1) / 2)
               : ((g + m.c(1.0)) * m.c(nd) - m.c(1.0)) / m.c(2.0);
}

// A coordinate padded as `padding` says (zeros: unchanged; the taps test their bounds).
template <typename M>
typename M::T pad_coordinate(const M& m, typename M::T x, int64_t n, const GridSpec& g) {
  double hi = static_cast<double>(n - 1);
  if (g.padding == "border") return m.clamp(x, m.c(0.0), m.c(hi));
  if (g.padding != "reflection") return x;
  // Reflected between lo and lo + span, then clamped.
  double lo = g.align_corners ? 0.0 : -0.5;
  double span = g.align_corners ? hi : static_cast<double>(n);
  if (span <= 0) return m.c(0.0);
  auto d = m.abs(x - m.c(lo));
  auto extra = m.fmod(d, m.c(span));
  auto flips = m.floor(d / m.c(span));
  auto even = flips - m.c(2.0) * m.floor(flips / m.c(2.0));
  auto r = m.pick(even == m.c(0.0), extra + m.c(lo), m.c(span) - extra + m.c(lo));
  return m.clamp(r, m.c(0.0), m.c(hi));
}

// Keys' cubic weights of the four taps floor(x) - 1 .. floor(x) + 2 at fraction t.
template <typename M>
std::array<typename M::T, 4> cubic_weights(const M& m, typename M::T t) {
  const double a = -0.75;
  auto near = [&](typename M::T d) {  // |d| <= 1
    return (m.c(a + 2) * d - m.c(a + 3)) * d * d + m.c(1.0);
  };
  auto far = [&](typename M::T d) {  // 1 < |d| < 2
    return ((m.c(a) * d - m.c(5 * a)) * d + m.c(8 * a)) * d - m.c(4 * a);
  };
  return {far(t + m.c(1.0)), near(t), near(m.c(1.0) - t), far(m.c(2.0) - t)};
}

std::vector<int64_t> grid_out_shape(const std::vector<TensorType>& in) {
  check_inputs("grid_sample", in, 2);
  const std::vector<int64_t>&x = in[0].shape, &g = in[1].shape;
  ANVIL_CHECK(x.size() == 4, "grid_sample: X must be [N, C, H, W], got ", shape_str(x));
  ANVIL_CHECK(g.size() == 4 && g[0] == x[0] && g[3] == 2, "grid_sample: grid must be [", x[0],
              ", H_out, W_out, 2] for X ", shape_str(x), ", got ", shape_str(g));
  for (const TensorType& t : in) {
    ANVIL_CHECK(t.dtype.is_float(), "grid_sample: inputs must be floats, got ", t.dtype);
  }
  return {x[0], x[1], g[1], g[2]};
}

}  // namespace

void register_grid_sample_ops() {
  OpDef def;
  def.name = "grid_sample";
  def.pattern = Pattern::kOpaque;  // its coordinate stages stay apart (see compute)
  def.attrs = {
      {"mode", AttrType::kString, std::string("bilinear"), {}, "bilinear, nearest or bicubic"},
      {"padding_mode", AttrType::kString, std::string("zeros"), {}, "zeros, border or reflection"},
      {"align_corners", AttrType::kInt, int64_t{0}, {}, "1: -1 and 1 are the corner centres"}};
  def.flops = flops_per_output(8);
  def.infer = [](const std::vector<TensorType>& in, const Attrs& attrs) {
    grid_spec(attrs);
    return std::vector<TensorType>{{grid_out_shape(in), in[0].dtype}};
  };
  def.compute = [](const std::vector<te::Tensor>& in, const Attrs& attrs) {
    GridSpec g = grid_spec(attrs);
    te::Tensor x = in[0], grid = in[1];
    // Bicubic's 16 taps make an expression the vectorizer spends minutes on: reference only.
    ANVIL_CHECK(g.mode != "bicubic", "grid_sample: mode 'bicubic' has no compiled form yet (input ",
                to_string(type_of(x)), "); the reference interpreter runs it");
    std::vector<int64_t> xs = shape_of(x), out = grid_out_shape(types_of(in));
    int64_t H = xs[2], W = xs[3];
    DataType t = x->dtype;
    ExprMath m{t};
    int taps = g.mode == "nearest" ? 1 : g.mode == "bilinear" ? 2 : 4;
    // Three small stages keep each expression small (the coordinate rules nest deeply): the
    // padded pixel coordinate per point and axis (0: x, 1: y), then per tap its position and
    // weight, then the output sums taps^2 products.
    te::Tensor pos = te::compute(
        to_exprs({out[0], out[2], out[3], 2}),
        [&](const std::vector<Var>& i) {
          Expr v = cast(t, grid(exprs(i)));
          Expr px = pad_coordinate(m, unnormalize(m, v, W, g.align_corners), W, g);
          Expr py = pad_coordinate(m, unnormalize(m, v, H, g.align_corners), H, g);
          return select(i[3] == 0, px, py);
        },
        "grid_sample_pos");
    std::vector<Expr> tap_shape = to_exprs({out[0], out[2], out[3], 2, taps});
    te::Tensor where = te::compute(
        tap_shape,
        [&](const std::vector<Var>& i) {
          Expr p = pos(i[0], i[1], i[2], i[3]);
          if (g.mode == "nearest") return m.round(p);
          Expr k = m.floor(p) + cast(t, i[4]) - m.c(taps == 4 ? 1.0 : 0.0);
          if (taps == 4 && g.padding != "zeros") {
            k = select(i[3] == 0, pad_coordinate(m, k, W, g), pad_coordinate(m, k, H, g));
          }
          return k;
        },
        "grid_sample_taps");
    te::Tensor weight = te::compute(
        tap_shape,
        [&](const std::vector<Var>& i) {
          Expr p = pos(i[0], i[1], i[2], i[3]);
          if (g.mode == "nearest") return m.c(1.0);
          Expr f = p - m.floor(p);
          if (taps == 2) return select(i[4] == 0, m.c(1.0) - f, f);
          std::array<Expr, 4> w = cubic_weights(m, f);
          return select(i[4] == 0, w[0], select(i[4] == 1, w[1], select(i[4] == 2, w[2], w[3])));
        },
        "grid_sample_weights");
    return std::vector<te::Tensor>{te::compute(
        to_exprs(out),
        [&](const std::vector<Var>& o) {
          Expr sum;
          for (int a = 0; a < taps; ++a) {
            for (int b = 0; b < taps; ++b) {
              Expr yi = where(o[0], o[2], o[3], 1, a), xi = where(o[0], o[2], o[3], 0, b);
              Expr inside = yi >= m.c(0.0) && yi <= m.c(static_cast<double>(H - 1)) &&
                            xi >= m.c(0.0) && xi <= m.c(static_cast<double>(W - 1));
              Expr yc =
                  cast(DataType::Int32(), m.clamp(yi, m.c(0.0), m.c(static_cast<double>(H - 1))));
              Expr xc =
                  cast(DataType::Int32(), m.clamp(xi, m.c(0.0), m.c(static_cast<double>(W - 1))));
              Expr v = select(inside, x(o[0], o[1], yc, xc), make_zero(t)) *
                       (weight(o[0], o[2], o[3], 1, a) * weight(o[0], o[2], o[3], 0, b));
              sum = sum.defined() ? sum + v : v;
            }
          }
          return sum;
        },
        "grid_sample")};
  };
  def.reference = [](const std::vector<runtime::NDArray>& in, const Attrs& attrs) {
    GridSpec g = grid_spec(attrs);
    const runtime::NDArray &x = in[0], &grid = in[1];
    std::vector<int64_t> xs = x.shape(), gs = grid.shape();
    int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], Ho = gs[1], Wo = gs[2];
    runtime::NDArray out = host_empty({N, C, Ho, Wo}, x.dtype());
    DoubleMath m;
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t c = 0; c < C; ++c) {
        auto tap = [&](double yi, double xi) {
          if (g.mode == "bicubic" && g.padding != "zeros") {
            yi = pad_coordinate(m, yi, H, g);
            xi = pad_coordinate(m, xi, W, g);
          }
          if (yi < 0 || yi > static_cast<double>(H - 1) || xi < 0 ||
              xi > static_cast<double>(W - 1))
            return 0.0;
          return host::read_f64(
              x, ((n * C + c) * H + static_cast<int64_t>(yi)) * W + static_cast<int64_t>(xi));
        };
        for (int64_t i = 0; i < Ho; ++i) {
          for (int64_t j = 0; j < Wo; ++j) {
            int64_t at = ((n * Ho + i) * Wo + j) * 2;
            double px = pad_coordinate(
                m, unnormalize(m, host::read_f64(grid, at), W, g.align_corners), W, g);
            double py = pad_coordinate(
                m, unnormalize(m, host::read_f64(grid, at + 1), H, g.align_corners), H, g);
            double v = 0;
            if (g.mode == "nearest") {
              v = tap(std::nearbyint(py), std::nearbyint(px));
            } else {
              double y0 = std::floor(py), x0 = std::floor(px), fy = py - y0, fx = px - x0;
              if (g.mode == "bilinear") {
                v = (tap(y0, x0) * (1 - fx) + tap(y0, x0 + 1) * fx) * (1 - fy) +
                    (tap(y0 + 1, x0) * (1 - fx) + tap(y0 + 1, x0 + 1) * fx) * fy;
              } else {
                std::array<double, 4> wy = cubic_weights(m, fy), wx = cubic_weights(m, fx);
                for (int a = 0; a < 4; ++a)
                  for (int b = 0; b < 4; ++b)
                    v += tap(y0 + a - 1, x0 + b - 1) * wy[static_cast<size_t>(a)] *
                         wx[static_cast<size_t>(b)];
              }
            }
            host::write_f64(out, ((n * C + c) * Ho + i) * Wo + j, v);
          }
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
  def.float16_via_float32 = true;
  register_op(std::move(def));
}

}  // namespace anvil::ops
