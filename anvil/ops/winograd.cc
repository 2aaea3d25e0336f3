// Winograd convolution F(m x m, 3 x 3) on NCHW[x]c, for 3x3 stride-1 undilated convolutions.
//
//   conv2d_winograd_nchwc_pack_weight  w [O, C, 3, 3] -> U [a, a, O'/ob, C', ob]
//       U[a1, a2, ., c, .] = (G g G^T)[a1, a2] for g = w[o, c]; attrs in_block (ib), out_block
//       (ob), tile (m: 2 or 4, default 4); a = m + 2; C' and O' are C and O padded up to ib and
//       ob with zero filters. Injective: the graph compiler folds it once at compile time.
//   conv2d_winograd_nchwc  x [N, C'/ib, H, W, ib], U -> [N, O'/ob, OH, OW, ob]
//       attrs pads ([top, left, bottom, right], default 0), tile (optional; must match U);
//       strides, dilations, group and kernel_shape are accepted only at 1, 1, 1 and [3, 3].
//   conv2d_winograd  x [N, C, H, W], U [a, a, O, C, 1] (packed with in_block = out_block = 1)
//       [, b [O]] -> [N, O, OH, OW]: the same in NCHW (NCHW1c) with an optional bias, for the GPU
//       targets (schedule in winograd_gpu.cc; the x86 schedule below also runs it).
//
// Stages (one tensor each):
//   pad  D[n, cb, y, x, ci]  x zero-padded so that every tile's a x a window is in range
//                            (th*m + 2 rows, tw*m + 2 columns; th, tw = ceil(OH/m), ceil(OW/m))
//   BTd  T[a1, r2, p, c]     B^T d for tile p = (n, ty, tx) of channel c
//   V    V[a1, a2, p, c]     (B^T d) B
//   M    M[a1, a2, p, o]     sum_c U[a1, a2, o/ob, c, o%ob] * V[a1, a2, p, c]: a batch of a*a
//                            GEMMs [P x C'] . [C' x O'], the hot part
//   AtM  S[i, a2, p, o]      A^T M
//   Y    out[n, ob, y, x, oi] (S A)[y%m, x%m] of tile (n, y/m, x/m), cropped to OH x OW
// Expressions that depend on a transform coordinate are select chains over it; the schedule
// unrolls those loops and the simplifier folds the chains, so only the matrices' nonzero
// entries cost anything. Each product is its own stage so that a chain is a long, not a^2
// (one stage per transform made the tests' compiles ~3x slower).
//
// Default x86 schedule (the rule; knobs tile_p, tile_o, unroll_c, parallel override it, see
// wino_space; parallel: threads only with at least 4 MFLOP of GEMM):
//   D and V at the root, in parallel over rows and tiles; T computed per tile and channel block
//   inside V's loops; the transform coordinates unrolled, the channels of a block vectorized.
//   M as a register-blocked GEMM micro-kernel in the manner of bench/gemm_te.h: a
//   tile_p x tile_o block accumulates in a local buffer while c runs over all input channels
//   (unrolled by unroll_c), each step tile_p broadcasts of V times tile_o/lanes vector loads of
//   U (contiguous over ob); the (a1, a2, o-block) loops are fused and parallel.
//   tile_o: two vectors (2*ob) when ob is the vector width and divides O' twice, else one ob.
//   tile_p: accumulators tile_p * tile_o/lanes kept to ~24 of AVX-512's 32 registers (12 of
//   AVX2's 16): 24 rows with one vector, 12 with two, never more than P. The output transform
//   is the final (possibly epilogue) stage: tiles (n, o-block, tile row) in parallel, S per tile
//   at the tile, the m x m positions of a tile unrolled, ob vectorized, with the Y stage and
//   every injective epilogue stage (bias, relu, residual add) inlined into it.
//   The a*a planes of V and M are padded to a cache line past a multiple of L1's way (spread_sets).
//
// Measurements against the direct convolutions, and the rule for preferring Winograd: at
// prefer_winograd.
#include "anvil/ops/winograd.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "anvil/ir/op.h"
#include "anvil/ops/families.h"
#include "anvil/ops/nchwc.h"
#include "anvil/ops/op.h"
#include "anvil/ops/schedule_util.h"
#include "anvil/ops/window.h"
#include "anvil/support/error.h"

namespace anvil::ops {

using namespace ir;

namespace {

const char* kPack = "conv2d_winograd_nchwc_pack_weight";
const char* kConv = "conv2d_winograd_nchwc";
const char* kConvNchw = "conv2d_winograd";

// ---- transform matrices from the interpolation points

using Matrix = std::vector<std::vector<double>>;

// Coefficients (lowest first) of prod_{j in roots} (x - j).
std::vector<double> poly_from_roots(const std::vector<double>& roots) {
  std::vector<double> c = {1.0};
  for (double r : roots) {
    std::vector<double> n(c.size() + 1, 0.0);
    for (size_t k = 0; k < c.size(); ++k) {
      n[k + 1] += c[k];
      n[k] -= r * c[k];
    }
    c = n;
  }
  return c;
}

// Toom-Cook for the polynomial product h = g * e (deg g = r-1, deg e = m-1) over the finite
// points p_i and infinity: h = C [(G g) .* (E e)], E evaluates e (infinity: its leading
// coefficient), C interpolates (column i: prod_{j != i} (x - p_j), the Lagrange basis without
// its scale; infinity: prod_j (x - p_j)), and G evaluates g divided by the Lagrange scale
// N_i = prod_{j != i} (p_i - p_j). The correlation is the transpose: A^T = E^T, B^T = C^T.
// Each row of B^T is scaled to small integers (and G's row divided by the same factor).
WinogradMatrices build_matrices(int64_t m, const std::vector<double>& points) {
  WinogradMatrices w;
  w.m = m;
  w.a = m + w.r - 1;
  size_t a = static_cast<size_t>(w.a), r = static_cast<size_t>(w.r), mm = static_cast<size_t>(m);
  ANVIL_ICHECK(points.size() + 1 == a, "winograd: ", points.size(), " points for a = ", a);
  w.AT.assign(mm, std::vector<double>(a, 0.0));
  w.G.assign(a, std::vector<double>(r, 0.0));
  w.BT.assign(a, std::vector<double>(a, 0.0));
  for (size_t i = 0; i < a; ++i) {
    bool inf = i + 1 == a;
    for (size_t j = 0; j < mm; ++j)
      w.AT[j][i] = inf ? (j + 1 == mm ? 1.0 : 0.0) : std::pow(points[i], j);
    std::vector<double> others;
    double scale = 1.0;
    for (size_t j = 0; j + 1 < a; ++j) {
      if (j == i) continue;
      others.push_back(points[j]);
      if (!inf) scale *= points[i] - points[j];
    }
    std::vector<double> row = poly_from_roots(inf ? points : others);
    // The smallest power of two making the row integral.
    double f = 1.0;
    for (; f < 1024; f *= 2) {
      bool integral = true;
      for (double c : row) integral = integral && std::abs(c * f - std::round(c * f)) < 1e-12;
      if (integral) break;
    }
    for (size_t k = 0; k < a; ++k) w.BT[i][k] = k < row.size() ? row[k] * f : 0.0;
    for (size_t k = 0; k < r; ++k) {
      w.G[i][k] = (inf ? (k + 1 == r ? 1.0 : 0.0) : std::pow(points[i], k) / scale) / f;
    }
  }
  return w;
}

}  // namespace

const WinogradMatrices& winograd_matrices(int64_t m) {
  static const WinogradMatrices f2 = build_matrices(2, {0.0, 1.0, -1.0});
  static const WinogradMatrices f4 = build_matrices(4, {0.0, 1.0, -1.0, 0.5, -0.5});
  ANVIL_CHECK(m == 2 || m == 4, kPack, ": attribute 'tile' must be 2 or 4, got ", m);
  return m == 2 ? f2 : f4;
}

// The output tile, from the GEMM work per pair of channels, a^2 x tiles (per image): F(4x4)
// unless F(2x2) does no more work (maps up to 5 wide, where 4x4 tiles waste most of their area),
// or F(4x4)'s weight (36 C O floats) exceeds the L2 cache and is streamed at batch 1 while it
// serves too few FMAs: with fewer than 12 rows of tiles the GEMM is bound by memory (measured:
// 7x7 512->512 and 10x10 520->520 run faster with F(2x2)), and otherwise F(4x4) must save more
// multiplies over F(2x2) per extra byte than the machine's balance (ResNet's 14x14 256->256
// saves 5.2 per byte: F(2x2), 3.4 -> 2.3-2.9 ms for layer 3 in the model on Zen 5), while F(2x2)
// has 16/36 of the weight and more rows.
int64_t winograd_tile(int64_t channels_in, int64_t channels_out, int64_t out_height,
                      int64_t out_width, const Target& target) {
  auto tiles = [&](int64_t m) { return ((out_height + m - 1) / m) * ((out_width + m - 1) / m); };
  if (16 * tiles(2) <= 36 * tiles(4)) return 2;
  if (36 * channels_in * channels_out * 4 <= target.l2_bytes) return 4;
  if (tiles(4) < 12) return 2;
  // Both weights stream at batch 1: F(4x4)'s 36 taps must save enough multiplies over F(2x2)'s
  // 16 per extra byte read, the machine's balance (as prefer_winograd weighs Winograd itself).
  const double saved = 2.0 * static_cast<double>(16 * tiles(2) - 36 * tiles(4));
  const double extra_bytes = 4.0 * (36 - 16);
  return saved / extra_bytes >= target.flops_per_cycle() / target.memory_bytes_per_cycle() ? 4 : 2;
}

namespace {

// ---- attributes and shapes

struct PackParams {
  int64_t O = 0, C = 0, ib = 0, ob = 0, m = 0, a = 0;
  int64_t Cp() const { return nchwc_channels(C, ib); }
  int64_t Op() const { return nchwc_channels(O, ob); }
};

PackParams parse_pack(const std::vector<TensorType>& in, const Attrs& attrs) {
  ANVIL_CHECK(in.size() == 1, kPack, ": expects 1 input (weight [O, C, 3, 3]), got ", in.size());
  ANVIL_CHECK(in[0].dtype == DataType::Float32(), kPack, ": weight must be float32, not ",
              to_string(in[0]));
  const std::vector<int64_t>& s = in[0].shape;
  ANVIL_CHECK(s.size() == 4 && s[2] == 3 && s[3] == 3, kPack,
              ": weight must be [O, C, 3, 3] (3x3 kernels only), got ", to_string(in[0]));
  PackParams p;
  p.O = s[0];
  p.C = s[1];
  // Blocks required and positive, tile 2 or 4: the schema checks them.
  p.ib = attrs.get_int("in_block");
  p.ob = attrs.get_int("out_block");
  p.m = attrs.get_int("tile");
  p.a = p.m + 2;
  return p;
}

std::vector<int64_t> pack_shape(const PackParams& p) {
  return {p.a, p.a, p.Op() / p.ob, p.Cp(), p.ob};
}

struct ConvParams {
  bool nchw = false;  // conv2d_winograd: x [N, C, H, W] (ib = ob = 1), output [N, O, OH, OW]
  bool bias = false;  // conv2d_winograd's optional third input b [O]
  int64_t N = 0, CB = 0, H = 0, W = 0, ib = 0;
  int64_t a = 0, m = 0, OB = 0, Cp = 0, ob = 0;
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;
  int64_t OH = 0, OW = 0, th = 0, tw = 0;
  int64_t P() const { return N * th * tw; }
};

// `nchw`: the op conv2d_winograd (NCHW, the transformed weight packed with in_block = out_block
// = 1, an optional bias), else conv2d_winograd_nchwc.
ConvParams parse_conv(const std::vector<TensorType>& in, const Attrs& attrs, bool nchw) {
  const char* op = nchw ? kConvNchw : kConv;
  if (nchw) {
    ANVIL_CHECK(in.size() == 2 || in.size() == 3, op,
                ": expects 2 or 3 inputs (x, transformed weight[, bias]), got ", in.size());
  } else {
    ANVIL_CHECK(in.size() == 2, op, ": expects 2 inputs (x, transformed weight), got ", in.size());
  }
  for (size_t i = 0; i < in.size(); ++i) {
    ANVIL_CHECK(in[i].dtype == DataType::Float32(), op, ": input ", i, " must be float32, not ",
                to_string(in[i]));
  }
  if (nchw) {
    ANVIL_CHECK(in[0].shape.size() == 4, op, ": input x must have rank 4 (NCHW), got ",
                to_string(in[0]));
  } else {
    ANVIL_CHECK(in[0].shape.size() == 5, op,
                ": input x must have rank 5 (NCHW[x]c: [N, C/ib, H, W, ib]), got ",
                to_string(in[0]));
  }
  const std::vector<int64_t>& u = in[1].shape;
  ANVIL_CHECK(u.size() == 5 && u[0] == u[1] && (u[0] == 4 || u[0] == 6) && (!nchw || u[4] == 1), op,
              ": the weight must be transformed by ", kPack,
              nchw ? " with in_block = out_block = 1 ([a, a, O, C, 1]" : " ([a, a, O/ob, C, ob]",
              " with a = 4 or 6), got ", to_string(in[1]));
  Window w = parse_window(attrs, 2, kWindowGroup);
  for (const auto& [name, v] : {std::pair{"strides", w.strides}, {"dilations", w.dilations}}) {
    ANVIL_CHECK(v == std::vector<int64_t>({1, 1}), op, ": attribute '", name,
                "' must be [1, 1] (Winograd F(m, 3) is stride-1 and undilated), got ", list_str(v));
  }
  ANVIL_CHECK(w.group == 1, op, ": attribute 'group' must be 1, got ", w.group);
  std::vector<int64_t> ks = attrs.get_ints("kernel_shape");
  ANVIL_CHECK(ks == std::vector<int64_t>({3, 3}), op,
              ": attribute 'kernel_shape' must be [3, 3], got ", list_str(ks));
  std::vector<int64_t> pads = w.pads();
  ConvParams p;
  p.nchw = nchw;
  const std::vector<int64_t>& xs = in[0].shape;
  p.N = xs[0];
  p.CB = xs[1];
  p.H = xs[2];
  p.W = xs[3];
  p.ib = nchw ? 1 : xs[4];
  p.a = u[0];
  p.m = p.a - 2;
  p.OB = u[2];
  p.Cp = u[3];
  p.ob = u[4];
  int64_t tile = attrs.get_int("tile", p.m);
  ANVIL_CHECK(tile == p.m, op, ": attribute 'tile' = ", tile,
              " does not match the transformed weight ", to_string(in[1]), " (tile ", p.m, ")");
  ANVIL_CHECK(p.CB * p.ib == p.Cp, op, ": input x ", to_string(in[0]), " has ", p.CB * p.ib,
              nchw ? "" : " (padded)", " channels, but the transformed weight ", to_string(in[1]),
              " expects ", p.Cp);
  if (in.size() == 3) {
    p.bias = true;
    ANVIL_CHECK(in[2].shape == std::vector<int64_t>{p.OB}, op, ": bias must be [", p.OB,
                "] (one per output channel), got ", to_string(in[2]));
  }
  p.pt = pads[0];
  p.pl = pads[1];
  p.pb = pads[2];
  p.pr = pads[3];
  p.OH = p.H + p.pt + p.pb - 2;
  p.OW = p.W + p.pl + p.pr - 2;
  ANVIL_CHECK(p.OH >= 1 && p.OW >= 1, op, ": the 3x3 kernel is larger than the padded input ",
              p.H + p.pt + p.pb, " x ", p.W + p.pl + p.pr, " (input ", to_string(in[0]),
              ", attribute 'pads' = ", list_str(pads), ")");
  p.th = (p.OH + p.m - 1) / p.m;
  p.tw = (p.OW + p.m - 1) / p.m;
  return p;
}

std::vector<int64_t> conv_shape(const ConvParams& p) {
  if (p.nchw) return {p.N, p.OB, p.OH, p.OW};
  return {p.N, p.OB, p.OH, p.OW, p.ob};
}

// ---- compute helpers

Expr fconst(double v) {
  return make_const(DataType::Float32(), v);
}

// acc + c * term, with c = +-1 as an add or subtract.
Expr add_term(Expr acc, double c, Expr term) {
  if (c == -1.0) return acc.defined() ? acc - term : fconst(0.0) - term;
  Expr t = c == 1.0 ? term : fconst(c) * term;
  return acc.defined() ? acc + t : t;
}

// f(v) for v in [0, n), as a select chain the simplifier folds once v is a constant.
Expr by_case(const Expr& v, int64_t n, const std::function<Expr(int64_t)>& f) {
  Expr e = f(n - 1);
  for (int64_t i = n - 2; i >= 0; --i) e = select(v == static_cast<int>(i), f(i), e);
  return e;
}

// sum_k coef[k] * term(k) over the nonzero coefficients.
Expr sparse_dot(const std::vector<double>& coef, const std::function<Expr(int64_t)>& term) {
  Expr acc;
  for (size_t k = 0; k < coef.size(); ++k)
    if (coef[k] != 0.0) acc = add_term(acc, coef[k], term(static_cast<int64_t>(k)));
  return acc.defined() ? acc : fconst(0.0);
}

Expr clamp_index(Expr i, int64_t n) {
  return max(min(i, static_cast<int>(n - 1)), 0);
}

int ci(int64_t v) {
  return static_cast<int>(v);
}

std::vector<te::Tensor> pack_compute(const std::vector<te::Tensor>& in, const Attrs& attrs) {
  PackParams p = parse_pack({type_of(in[0])}, attrs);
  const WinogradMatrices& wm = winograd_matrices(p.m);
  te::Tensor w = in[0];
  te::Tensor u = te::compute(
      to_exprs(pack_shape(p)),
      [&](const std::vector<Var>& i) {
        Expr o = i[2] * ci(p.ob) + i[4], c = i[3];
        // (G g G^T)[a1, a2] = sum_k1 G[a1][k1] sum_k2 G[a2][k2] g[k1][k2]
        Expr v = by_case(i[0], p.a, [&](int64_t a1) {
          return by_case(i[1], p.a, [&](int64_t a2) {
            return sparse_dot(wm.G[static_cast<size_t>(a1)], [&](int64_t k1) {
              return sparse_dot(wm.G[static_cast<size_t>(a2)], [&](int64_t k2) {
                return w(clamp_index(o, p.O), clamp_index(c, p.C), ci(k1), ci(k2));
              });
            });
          });
        });
        return select(o < ci(p.O) && c < ci(p.C), v, 0.0f);
      },
      kPack);
  return {u};
}

std::vector<te::Tensor> conv_compute(const std::vector<te::Tensor>& in, const Attrs& attrs,
                                     bool nchw) {
  std::vector<TensorType> types;
  for (const te::Tensor& t : in) types.push_back(type_of(t));
  ConvParams p = parse_conv(types, attrs, nchw);
  const WinogradMatrices& wm = winograd_matrices(p.m);
  te::Tensor x = in[0], u = in[1];
  std::string op = nchw ? kConvNchw : kConv;

  int64_t PH = p.th * p.m + 2, PW = p.tw * p.m + 2;
  te::Tensor d = te::compute(
      {ci(p.N), ci(p.CB), ci(PH), ci(PW), ci(p.ib)},
      [&](const std::vector<Var>& i) {
        Expr y = i[2] - ci(p.pt), xx = i[3] - ci(p.pl);
        Expr cond = y >= 0 && y < ci(p.H) && xx >= 0 && xx < ci(p.W);
        Expr yc = clamp_index(y, p.H), xc = clamp_index(xx, p.W);
        return select(cond, p.nchw ? x(i[0], i[1], yc, xc) : x(i[0], i[1], yc, xc, i[4]), 0.0f);
      },
      op + ".pad");

  int64_t tiles = p.th * p.tw;
  // B^T d, then (B^T d) B: two stages of a-long select chains rather than one of a^2.
  te::Tensor bd = te::compute(
      {ci(p.a), ci(p.a), ci(p.P()), ci(p.Cp)},
      [&](Var a1, Var r2, Var t, Var c) {
        Expr n = floordiv(t, ci(tiles)), ty = floordiv(floormod(t, ci(tiles)), ci(p.tw));
        Expr tx = floormod(t, ci(p.tw));
        Expr cb = floordiv(c, ci(p.ib)), cc = floormod(c, ci(p.ib));
        return by_case(a1, p.a, [&](int64_t i) {
          return sparse_dot(wm.BT[static_cast<size_t>(i)], [&](int64_t r1) {
            return d(n, cb, ty * ci(p.m) + ci(r1), tx * ci(p.m) + r2, cc);
          });
        });
      },
      op + ".BTd");
  te::Tensor v = te::compute(
      {ci(p.a), ci(p.a), ci(p.P()), ci(p.Cp)},
      [&](Var a1, Var a2, Var t, Var c) {
        return by_case(a2, p.a, [&](int64_t j) {
          return sparse_dot(wm.BT[static_cast<size_t>(j)],
                            [&](int64_t r2) { return bd(a1, ci(r2), t, c); });
        });
      },
      op + ".V");

  IterVar c = te::reduce_axis(ci(p.Cp), "c");
  int64_t Op = p.OB * p.ob;
  te::Tensor mm = te::compute(
      {ci(p.a), ci(p.a), ci(p.P()), ci(Op)},
      [&](Var a1, Var a2, Var t, Var o) {
        return te::sum(
            u(a1, a2, floordiv(o, ci(p.ob)), c->var, floormod(o, ci(p.ob))) * v(a1, a2, t, c->var),
            {c});
      },
      op + ".M");

  // A^T M, then (A^T M) A.
  te::Tensor am = te::compute(
      {ci(p.m), ci(p.a), ci(p.P()), ci(Op)},
      [&](Var i, Var a2, Var t, Var o) {
        return by_case(i, p.m, [&](int64_t i2) {
          return sparse_dot(wm.AT[static_cast<size_t>(i2)],
                            [&](int64_t a1) { return mm(ci(a1), a2, t, o); });
        });
      },
      op + ".AtM");
  te::Tensor y = te::compute(
      to_exprs(conv_shape(p)),
      [&](const std::vector<Var>& i) {
        Expr yi = floormod(i[2], ci(p.m)), xi = floormod(i[3], ci(p.m));
        Expr t = (i[0] * ci(p.th) + floordiv(i[2], ci(p.m))) * ci(p.tw) + floordiv(i[3], ci(p.m));
        Expr o = p.nchw ? Expr(i[1]) : i[1] * ci(p.ob) + i[4];
        Expr v = by_case(xi, p.m, [&](int64_t j) {
          return sparse_dot(wm.AT[static_cast<size_t>(j)],
                            [&](int64_t a2) { return am(yi, ci(a2), t, o); });
        });
        return p.bias ? v + in[2](o) : v;
      },
      op);
  return {y};
}

// ---- references: double precision naive loops

// The pseudo-inverse (G^T G)^-1 G^T of the a x 3 matrix G, which recovers g from G g G^T.
Matrix g_pinv(const WinogradMatrices& wm) {
  size_t a = static_cast<size_t>(wm.a);
  double n[3][3] = {};
  for (size_t i = 0; i < 3; ++i)
    for (size_t j = 0; j < 3; ++j)
      for (size_t k = 0; k < a; ++k) n[i][j] += wm.G[k][i] * wm.G[k][j];
  // The inverse of the 3x3 normal matrix by cofactors.
  double inv[3][3];
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      int r0 = (j + 1) % 3, r1 = (j + 2) % 3, c0 = (i + 1) % 3, c1 = (i + 2) % 3;
      inv[i][j] = n[r0][c0] * n[r1][c1] - n[r0][c1] * n[r1][c0];
    }
  }
  double det = n[0][0] * inv[0][0] + n[0][1] * inv[1][0] + n[0][2] * inv[2][0];
  Matrix pinv(3, std::vector<double>(a, 0.0));
  for (size_t i = 0; i < 3; ++i)
    for (size_t k = 0; k < a; ++k)
      for (size_t j = 0; j < 3; ++j) pinv[i][k] += inv[i][j] / det * wm.G[k][j];
  return pinv;
}

std::vector<runtime::NDArray> pack_reference(const std::vector<runtime::NDArray>& in,
                                             const Attrs& attrs) {
  PackParams p = parse_pack({{in[0].shape(), DataType::Float32()}}, attrs);
  const WinogradMatrices& wm = winograd_matrices(p.m);
  runtime::NDArray out = runtime::NDArray::empty(pack_shape(p), runtime::dl_float32());
  const float* w = in[0].data_as<float>();
  float* u = out.data_as<float>();
  int64_t OB = p.Op() / p.ob, Cp = p.Cp();
  for (int64_t a1 = 0; a1 < p.a; ++a1)
    for (int64_t a2 = 0; a2 < p.a; ++a2)
      for (int64_t o = 0; o < p.Op(); ++o)
        for (int64_t c = 0; c < Cp; ++c) {
          double s = 0;
          if (o < p.O && c < p.C) {
            for (size_t k1 = 0; k1 < 3; ++k1)
              for (size_t k2 = 0; k2 < 3; ++k2)
                s += wm.G[static_cast<size_t>(a1)][k1] * wm.G[static_cast<size_t>(a2)][k2] *
                     w[((o * p.C + c) * 3 + static_cast<int64_t>(k1)) * 3 +
                       static_cast<int64_t>(k2)];
          }
          int64_t idx = (((a1 * p.a + a2) * OB + o / p.ob) * Cp + c) * p.ob + o % p.ob;
          u[idx] = static_cast<float>(s);
        }
  return {out};
}

// The direct convolution with the filters recovered from U (g = G^+ U G^+^T): independent of the
// input and output transforms the kernel uses.
std::vector<runtime::NDArray> conv_reference(const std::vector<runtime::NDArray>& in,
                                             const Attrs& attrs, bool nchw) {
  std::vector<TensorType> types;
  for (const runtime::NDArray& a : in) types.push_back({a.shape(), DataType::Float32()});
  ConvParams p = parse_conv(types, attrs, nchw);
  const WinogradMatrices& wm = winograd_matrices(p.m);
  Matrix pinv = g_pinv(wm);
  int64_t Op = p.OB * p.ob;
  const float* x = in[0].data_as<float>();
  const float* u = in[1].data_as<float>();
  // g[o][c][k1][k2]
  std::vector<double> g(static_cast<size_t>(Op * p.Cp * 9), 0.0);
  for (int64_t o = 0; o < Op; ++o)
    for (int64_t c = 0; c < p.Cp; ++c)
      for (size_t k1 = 0; k1 < 3; ++k1)
        for (size_t k2 = 0; k2 < 3; ++k2) {
          double s = 0;
          for (int64_t a1 = 0; a1 < p.a; ++a1)
            for (int64_t a2 = 0; a2 < p.a; ++a2)
              s += pinv[k1][static_cast<size_t>(a1)] * pinv[k2][static_cast<size_t>(a2)] *
                   u[(((a1 * p.a + a2) * p.OB + o / p.ob) * p.Cp + c) * p.ob + o % p.ob];
          g[static_cast<size_t>((o * p.Cp + c) * 9) + k1 * 3 + k2] = s;
        }
  runtime::NDArray out = runtime::NDArray::empty(conv_shape(p), runtime::dl_float32());
  float* y = out.data_as<float>();
  for (int64_t n = 0; n < p.N; ++n)
    for (int64_t o = 0; o < Op; ++o)
      for (int64_t oy = 0; oy < p.OH; ++oy)
        for (int64_t ox = 0; ox < p.OW; ++ox) {
          double s = p.bias ? in[2].data_as<float>()[o] : 0.0;
          for (int64_t c = 0; c < p.Cp; ++c)
            for (int64_t k1 = 0; k1 < 3; ++k1)
              for (int64_t k2 = 0; k2 < 3; ++k2) {
                int64_t iy = oy + k1 - p.pt, ix = ox + k2 - p.pl;
                if (iy < 0 || iy >= p.H || ix < 0 || ix >= p.W) continue;
                s += g[static_cast<size_t>((o * p.Cp + c) * 9 + k1 * 3 + k2)] *
                     x[(((n * p.CB + c / p.ib) * p.H + iy) * p.W + ix) * p.ib + c % p.ib];
              }
          y[(((n * p.OB + o / p.ob) * p.OH + oy) * p.OW + ox) * p.ob + o % p.ob] =
              static_cast<float>(s);
        }
  return {out};
}

// ---- schedule

struct WinoKnobs {
  int64_t tile_p, tile_o, unroll_c, parallel;
};

// The rule (see the file comment): P tiles, O' output channels in blocks of ob, `lanes` floats
// per vector.
WinoKnobs default_knobs(int64_t P, int64_t Op, int64_t ob, int64_t lanes, int64_t a, int64_t Cp) {
  WinoKnobs k{};
  k.tile_o = (ob == lanes && Op % (2 * ob) == 0) ? 2 * ob : ob;
  int64_t vectors = std::max<int64_t>(1, k.tile_o / lanes);
  int64_t budget = lanes >= 16 ? 24 : 12;
  k.tile_p = std::max<int64_t>(1, std::min(budget / vectors, P));
  k.unroll_c = 4;
  // Threads only with at least 4 MFLOP of GEMM (~40 us on one core): the kernel has four
  // parallel loops, and on DQN's 7x7 64 -> 64 (1.2 MFLOP, 13 us) two threads took 29 us.
  k.parallel = 2 * a * a * P * Cp * Op >= 4'000'000 ? 1 : 0;
  return k;
}

ConfigSpace wino_space(const std::vector<TensorType>& in, const Attrs& attrs, const Target& target,
                       bool nchw) {
  ConvParams p = parse_conv(in, attrs, nchw);
  int64_t lanes = target.vector_lanes_f32();
  int64_t Op = p.OB * p.ob;
  WinoKnobs d = default_knobs(p.P(), Op, p.ob, lanes, p.a, p.Cp);
  auto with_default = [](int64_t def, std::vector<int64_t> others, int64_t limit) {
    std::vector<int64_t> v = {def};
    for (int64_t x : others)
      if (x != def && x <= limit) v.push_back(x);
    return v;
  };
  return {
      {"tile_p", with_default(d.tile_p, {1, 2, 4, 6, 8, 12, 16, 24}, std::max(p.P(), d.tile_p))},
      {"tile_o", with_default(d.tile_o, {p.ob, 2 * p.ob, 4 * p.ob}, Op)},
      {"unroll_c", with_default(d.unroll_c, {1, 2, 4, 8}, p.Cp)},
      {"parallel", {d.parallel, 1 - d.parallel}},
  };
}

// The transforms touch one line of each of the a*a matrices of V and M per tile; their stride
// (P*C floats) is often a multiple of L1's way (4 KiB on current x86: e.g. 56x56, 64 channels:
// 49 KiB), which puts all a*a lines in a few L1 sets. Padding it to one cache line past a
// multiple of the way gives every line its own set.
void spread_sets(te::Stage& st, const IterVar& a2, const Target& target) {
  st.storage_align(a2, target.l1d_way_bytes() / 4, target.cache_line_bytes / 4);
}

}  // namespace

WinogradStages winograd_stages(te::Schedule& s, const std::vector<te::Tensor>& outs) {
  std::vector<te::Tensor> order = te::topological_order(outs);
  WinogradStages w;
  size_t y_pos = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    const te::Tensor& t = order[i];
    if (!t.is_compute()) continue;
    for (const char* op : {kConv, kConvNchw}) {
      std::string name = op;
      if (t.name() == name + ".pad") w.pad = t;
      if (t.name() == name + ".V") w.v = t;
      if (t.name() == name + ".BTd") w.bd = t;
      if (t.name() == name + ".AtM") w.am = t;
      if (t.name() == name + ".M") w.mm = t;
      if (t.name() == name) w.y = t, y_pos = i;
    }
  }
  ANVIL_ICHECK(w.pad.defined() && w.bd.defined() && w.v.defined() && w.mm.defined() &&
                   w.am.defined() && w.y.defined(),
               "the stages of a Winograd convolution are not among the producers of '",
               outs[0].name(), "'");
  // Y and the injective epilogue stages after it are computed in the output's loops.
  for (size_t i = y_pos; i < order.size(); ++i)
    if (order[i].is_compute() && order[i].get() != outs[0].get()) s[order[i]].compute_inline();
  return w;
}

namespace {

void wino_schedule(te::Schedule& s, const std::vector<te::Tensor>& outs, const Target& target,
                   const Config& config) {
  te::Tensor out = outs[0];
  WinogradStages w = winograd_stages(s, outs);
  te::Tensor pad = w.pad, bd = w.bd, v = w.v, mm = w.mm, am = w.am;

  std::vector<int64_t> ushape =
      shape_of(mm->inputs[0].get() == v.get() ? te::Tensor(mm->inputs[1].get())
                                              : te::Tensor(mm->inputs[0].get()));
  std::vector<int64_t> vshape = shape_of(v);
  std::vector<int64_t> dshape = shape_of(pad);
  int64_t a = vshape[0], m = a - 2, P = vshape[2], Op = ushape[2] * ushape[4], ob = ushape[4];
  int64_t ib = dshape[4];
  int64_t lanes = target.vector_lanes_f32();
  WinoKnobs k = default_knobs(P, Op, ob, lanes, a, ushape[3]);
  k.tile_p = std::clamp<int64_t>(knob(config, "tile_p", k.tile_p), 1, P);
  k.tile_o = std::clamp<int64_t>(knob(config, "tile_o", k.tile_o), 1, Op);
  k.unroll_c = std::max<int64_t>(1, knob(config, "unroll_c", k.unroll_c));
  k.parallel = knob(config, "parallel", k.parallel);
  auto parallel = [&](te::Stage& st, const IterVar& axis) {
    if (k.parallel) st.parallel(axis);
  };

  te::Stage so = s[out];
  {
    std::vector<IterVar> ax = so.axis();
    auto [yo, yi] = so.split(ax[2], m);
    auto [xo, xi] = so.split(ax[3], m);
    // conv2d_winograd's NCHW output has no channel block to vectorize.
    bool blocked = ax.size() == 5;
    std::vector<IterVar> order = {ax[0], ax[1], yo, xo, yi, xi};
    if (blocked) order.push_back(ax[4]);
    so.reorder(order);
    parallel(so, so.fuse(so.fuse(ax[0], ax[1]), yo));
    so.unroll(yi);
    so.unroll(xi);
    if (blocked) so.vectorize(ax[4]);
    // A^T M of one tile and output block, at the tile.
    te::Stage sm = s[am];
    sm.compute_at(so, xo);
    std::vector<IterVar> sax = sm.axis();
    sm.unroll(sax[0]);
    sm.unroll(sax[1]);
    sm.vectorize(sax[3]);
  }
  // Padding: rows in parallel, the block's channels vectorized.
  {
    te::Stage st = s[pad];
    std::vector<IterVar> ax = st.axis();
    parallel(st, st.fuse(st.fuse(ax[0], ax[1]), ax[2]));
    st.vectorize(ax[4]);
  }
  // Input transform: (a1, a2) unrolled, channels within a block vectorized.
  {
    te::Stage st = s[v];
    std::vector<IterVar> ax = st.axis();
    auto [cb, cc] = st.split(ax[3], ib);
    st.reorder({ax[2], cb, ax[0], ax[1], cc});
    parallel(st, ax[2]);
    st.unroll(ax[0]);
    st.unroll(ax[1]);
    st.vectorize(cc);
    spread_sets(st, ax[1], target);
    // B^T d of one tile and channel block, at the block.
    te::Stage sb = s[bd];
    sb.compute_at(st, cb);
    std::vector<IterVar> bax = sb.axis();
    sb.unroll(bax[0]);
    sb.unroll(bax[1]);
    sb.vectorize(bax[3]);
  }
  // The batched GEMM: a tile_p x tile_o register tile over all input channels.
  auto micro_kernel = [&](te::Stage st, const std::vector<IterVar>& lead, const IterVar& p,
                          const IterVar& o, const IterVar& c) {
    auto [co, cu] = st.split(c, k.unroll_c);
    std::vector<IterVar> order = lead;
    order.insert(order.end(), {co, cu, p});
    IterVar ov = o;
    if (k.tile_o > lanes && k.tile_o % lanes == 0) {
      auto [vo, vi] = st.split(o, lanes);
      order.insert(order.end(), {vo, vi});
      st.unroll(vo);
      ov = vi;
    } else {
      order.push_back(o);
    }
    st.reorder(order);
    st.unroll(cu);
    st.unroll(p);
    st.vectorize(ov);
  };
  {
    te::Tensor acc = s.cache_write(mm, MemoryScope::kLocal);
    te::Stage st = s[mm];
    std::vector<IterVar> ax = st.axis();
    spread_sets(st, ax[1], target);
    auto [oo, oi] = st.split(ax[3], k.tile_o);
    auto [po, pi] = st.split(ax[2], k.tile_p);
    st.reorder({ax[0], ax[1], oo, po, pi, oi});
    parallel(st, st.fuse(st.fuse(ax[0], ax[1]), oo));
    st.vectorize(oi);
    te::Stage sa = s[acc];
    sa.compute_at(st, po);
    std::vector<IterVar> aax = sa.axis();
    micro_kernel(sa, {}, aax[2], aax[3], sa.reduce_axis()[0]);
  }
}

}  // namespace

void register_winograd_ops() {
  {
    OpDef def;
    def.name = kPack;
    def.pattern = Pattern::kInjective;
    def.attrs = std::vector<AttrSpec>{
        {"in_block", AttrType::kInt, std::nullopt, {positive()}, "the input channel block", true},
        {"out_block", AttrType::kInt, std::nullopt, {positive()}, "the output channel block", true},
        {"tile",
         AttrType::kInt,
         int64_t{4},
         {one_of(std::vector<int64_t>{2, 4})},
         "m of F(m x m, 3x3)"}};
    def.flops = flops_none();
    def.infer = [](const std::vector<TensorType>& in, const Attrs& attrs) {
      return std::vector<TensorType>{{pack_shape(parse_pack(in, attrs)), DataType::Float32()}};
    };
    def.compute = pack_compute;
    def.reference = pack_reference;
    def.schedule_x86 = [](te::Schedule& s, const std::vector<te::Tensor>& outs,
                          const Target& target,
                          const Config&) { schedule_injective_x86(s, outs[0], target); };
    def.space = [](const std::vector<TensorType>&, const Attrs&, const Target&) {
      return ConfigSpace{};
    };
    register_op(std::move(def));
  }
  for (bool nchw : {false, true}) {
    OpDef def;
    def.name = nchw ? kConvNchw : kConv;
    def.pattern = Pattern::kComplexOutFusable;
    def.attrs = window_attrs(2, kWindowGroup);
    def.attrs.push_back({"kernel_shape",
                         AttrType::kInts,
                         std::vector<int64_t>{3, 3},
                         {},
                         "3x3 only (accepted for the convolution it replaces)"});
    def.attrs.push_back({"tile",
                         AttrType::kInt,
                         std::nullopt,
                         {},
                         "F(tile x tile, 3x3); default and only value: the weight's"});
    // The direct convolution's count, as everyone reports it (flops.h): a Winograd kernel can
    // run above the machine's peak.
    if (nchw) {
      def.flops = [](const std::vector<TensorType>& in, const std::vector<TensorType>& out,
                     const Attrs&) {
        const std::vector<int64_t>& x = flops_operand(kConvNchw, in, true, 0, 4);  // [N, C, H, W]
        double n = numel(TensorType{flops_operand(kConvNchw, out, false, 0, 4), {}});
        return 2 * n * static_cast<double>(x[1]) * 9 + (in.size() > 2 ? n : 0.0);
      };
    } else {
      def.flops = [](const std::vector<TensorType>& in, const std::vector<TensorType>& out,
                     const Attrs&) {
        const std::vector<int64_t>& x =
            flops_operand(kConv, in, true, 0, 5);  // [N, C/ib, H, W, ib]
        double n = numel(TensorType{flops_operand(kConv, out, false, 0, 5), {}});
        return 2 * n * static_cast<double>(x[1] * x[4]) * 9;
      };
    }
    def.infer = [nchw](const std::vector<TensorType>& in, const Attrs& attrs) {
      return std::vector<TensorType>{
          {conv_shape(parse_conv(in, attrs, nchw)), DataType::Float32()}};
    };
    def.compute = [nchw](const std::vector<te::Tensor>& in, const Attrs& attrs) {
      return conv_compute(in, attrs, nchw);
    };
    def.reference = [nchw](const std::vector<runtime::NDArray>& in, const Attrs& attrs) {
      return conv_reference(in, attrs, nchw);
    };
    def.schedule_x86 = wino_schedule;
    def.space = [nchw](const std::vector<TensorType>& in, const Attrs& attrs,
                       const Target& target) { return wino_space(in, attrs, target, nchw); };
    if (nchw) {
      def.schedule_gpu = winograd_schedule_gpu;
      def.space_gpu = [](const std::vector<TensorType>& in, const Attrs& attrs,
                         const Target& target) {
        ConvParams p = parse_conv(in, attrs, true);
        return winograd_space_gpu(p.a, p.P(), p.OB, p.Cp, target);
      };
    }
    // U must be the transform of a 3x3 weight: made from a random one by the pack op.
    def.sample_inputs = [nchw](const std::vector<TensorType>& in, const Attrs&,
                               const std::function<runtime::NDArray(const std::vector<int64_t>&)>&
                                   random) {
      const std::vector<int64_t>& x = in.at(0).shape;  // [N, C'/ib, H, W, ib] or [N, C, H, W]
      const std::vector<int64_t>& u = in.at(1).shape;  // [a, a, O'/ob, C', ob]
      runtime::NDArray w = random({u[2] * u[4], u[3], 3, 3});
      Attrs pack(kPack, {{"in_block", nchw ? 1 : x[4]}, {"out_block", u[4]}, {"tile", u[0] - 2}});
      std::vector<runtime::NDArray> v = {random(x), pack_reference({w}, pack)[0]};
      for (size_t i = 2; i < in.size(); ++i) v.push_back(random(in[i].shape));
      return v;
    };
    register_op(std::move(def));
  }
}

// Measurements (this host: 2 cores shared with other builds, AVX-512, FMA peak ~117 GFLOP/s per
// core; best of 30 runs; effective GFLOP/s = 2 C O OH OW 9 / time; conv2d_nchwc is the blocked
// direct convolution of conv_nchwc.cc, conv2d the NCHW one of conv.cc), 1 thread:
//   layer (map, C -> O)        tile  Winograd ms (GF/s)  conv2d_nchwc     conv2d
//   ResNet c2  56, 64 -> 64     4    0.85 (271)          2.03 (114)       2.35 (99)
//   ResNet c6  28, 128 -> 128   4    0.79 (294)          2.01 (115)       2.41 (96)
//   ResNet c9  14, 256 -> 256   4    1.04 (222)          2.03 (114)       2.44 (95)
//   ResNet c12  7, 512 -> 512   2    1.61 (144)          2.09 (111)       3.43 (67)
//   DQN conv3  9 -> 7, 64 -> 64 4    0.013 (287)         0.031 (117)      0.051 (70)
//   c2' 59, 72 -> 72            4    1.49 (219)          3.01 (106)       3.35 (97)
//   c6' 31, 136 -> 136          4    1.28 (249)          3.04 (105)       3.29 (97)
//   c9' 17, 264 -> 264          4    2.38 (153)          3.33 (109)       5.16 (70)
//   c12' 10, 520 -> 520         2    3.86 (126)          4.51 (108)       6.89 (71)
//   DQN' 12 -> 10, 72 -> 72     4    0.039 (241)         0.086 (108)      0.127 (74)
// 2 threads (best of 30; most medians were ruined by other builds): c2 0.40-0.46 ms (503-575),
// c6 0.40-0.47 (494-584), c2' 0.95 (341), c6' 0.86 (374), c9' 1.26 (288), c12 0.90 (256);
// conv2d_nchwc 1.02-1.77 ms (187-227). DQN stays on one thread (parallel rule): 0.013 ms.
// With glibc's default allocator settings each call may page-fault its 4-5 MB of intermediate
// buffers afresh (the same c2 then takes 1.3-2.4 ms in some processes); a workspace pool in the
// runtime, or raising MALLOC_TRIM_THRESHOLD_ and MALLOC_MMAP_THRESHOLD_, removes that.
// The rule: Winograd for 3x3, stride 1, undilated convolutions with at least 3 input channels
// (the input transform is paid per input channel and the output transform per output channel;
// at 56x56 with 1 input channel -> 32 it measured 0.032 ms against conv2d_nchwc's 0.017, with 2
// even, with 3 -> 64 0.074 against 0.102; few output channels win: 32 -> 1 and 32 -> 4 measured
// 0.064 and 0.070 ms against 0.39 and 0.15), unless the transformed weight it streams costs more
// than the arithmetic it saves. At batch 1 each weight is read once per inference; a transformed
// weight larger than L2 comes from L3 or memory, a^2 C O floats against the direct convolution's
// 9 C O. It saves 2 C O (9 P - a^2 T) FLOPs (P output positions, T tiles) for 4 C O (a^2 - 9)
// more bytes: worth it when that ratio exceeds the machine's balance, its FLOPs per cycle over
// the bytes per cycle one core streams from memory while others share it (Target).
// In ResNet-18 on a Zen 5 host (64 FLOPs per cycle: balance 21) layer 4's F(2x2) (7x7 maps, 512
// channels: 13 FLOPs per byte) took 2.0-2.2 ms per layer against the direct convolution's 1.6,
// layer 3's F(4x4) (14x14, 256: 22 per byte) 1.2-1.3 ms, no slower than direct; on Zen 4 and
// AVX2 cores (32 FLOPs per cycle: balance 11) both stay Winograd, as measured there (the table).
// height and width are the output's (the input's for the usual padding 1).
bool prefer_winograd(int64_t channels_in, int64_t channels_out, int64_t height, int64_t width,
                     int64_t kernel_h, int64_t kernel_w, int64_t stride_h, int64_t stride_w,
                     int64_t dilation_h, int64_t dilation_w, const Target& target) {
  if (kernel_h != 3 || kernel_w != 3 || stride_h != 1 || stride_w != 1 || dilation_h != 1 ||
      dilation_w != 1)
    return false;
  if (channels_in < 3 || channels_out < 1 || height < 1 || width < 1) return false;
  const int64_t m = winograd_tile(channels_in, channels_out, height, width, target);
  const int64_t a = m + 2;
  const int64_t tiles = ((height + m - 1) / m) * ((width + m - 1) / m);
  if (a * a * channels_in * channels_out * 4 <= target.l2_bytes) return true;
  // FLOPs saved per byte of extra weight, against the machine's balance.
  const double saved = 2.0 * static_cast<double>(9 * height * width - a * a * tiles);
  const double extra_bytes = 4.0 * static_cast<double>(a * a - 9);
  return saved / extra_bytes >= target.flops_per_cycle() / target.memory_bytes_per_cycle();
}

ConfigSpace conv2d_algorithm_space(const std::vector<TensorType>& inputs, const Attrs& attrs,
                                   const Target& target) {
  if (inputs.size() < 2 || inputs[0].shape.size() != 4 || inputs[1].shape.size() != 4 ||
      inputs[0].dtype != DataType::Float32() || inputs[1].dtype != DataType::Float32())
    return {};
  const Window w = parse_window(attrs, 2, kWindowGroup);
  const std::vector<int64_t>&x = inputs[0].shape, &k = inputs[1].shape;
  if (w.group != 1 || k[1] != x[1]) return {};
  const int64_t oh = x[2] + w.pad_lo[0] + w.pad_hi[0] - 2,
                ow = x[3] + w.pad_lo[1] + w.pad_hi[1] - 2;
  if (k[2] != 3 || k[3] != 3 || oh < 1 || ow < 1 || w.strides != std::vector<int64_t>{1, 1} ||
      w.dilations != std::vector<int64_t>{1, 1} || x[1] < 3)
    return {};
  const int64_t first = prefer_winograd(x[1], k[0], oh, ow, 3, 3, 1, 1, 1, 1, target)
                            ? winograd_tile(x[1], k[0], oh, ow, target)
                            : 0;
  std::vector<int64_t> tiles = {first};
  for (int64_t t : {0, 2, 4})
    if (t != first) tiles.push_back(t);
  return {{"winograd_tile", tiles}};
}

}  // namespace anvil::ops
