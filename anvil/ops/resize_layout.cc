// layout_transform (NCHW <-> NCHW[x]c) and resize (NCHW; nearest, linear and cubic, compiled and
// in the reference; every ONNX coordinate mode but tf_crop_and_resize): the
// data-movement operators with the most index arithmetic. The rest of the family is in
// transform.cc.
#include "anvil/ops/transform_common.h"

namespace anvil::ops::transform_detail {

namespace {

// ---- layout_transform: NCHW <-> NCHW[x]c (and NCHW[x]c -> NCHW[y]c)

// The channel block of a layout: 0 for "NCHW", x for "NCHW<x>c".
int64_t parse_layout(const std::string& attr, const std::string& layout) {
  if (layout == "NCHW") return 0;
  bool ok = layout.size() > 5 && layout.compare(0, 4, "NCHW") == 0 && layout.back() == 'c';
  int64_t block = 0;
  for (size_t i = 4; ok && i + 1 < layout.size(); ++i) {
    ok = std::isdigit(static_cast<unsigned char>(layout[i])) && block < 1000000;
    block = block * 10 + (layout[i] - '0');
  }
  ANVIL_CHECK(ok && block > 0, "layout_transform: attribute '", attr, "' = '", layout,
              "' is not NCHW or NCHW<x>c");
  return block;
}

struct LayoutSpec {
  int64_t src_block, dst_block;
  int64_t channels;  // the logical channel count (the output's, when it drops padding)
  std::vector<int64_t> shape;
};

LayoutSpec layout_spec(const std::vector<int64_t>& in, const Attrs& attrs) {
  const std::string op = "layout_transform";
  LayoutSpec s;
  s.src_block = parse_layout("src_layout", attrs.get_string("src_layout"));
  s.dst_block = parse_layout("dst_layout", attrs.get_string("dst_layout"));
  size_t want_rank = s.src_block ? 5 : 4;
  ANVIL_CHECK(in.size() == want_rank, op, ": input ", shape_str(in), " does not have layout '",
              attrs.get_string("src_layout"), "' (rank ", want_rank, ")");
  if (s.src_block) {
    ANVIL_CHECK(in[4] == s.src_block, op, ": input ", shape_str(in), " has channel block ", in[4],
                ", but attribute 'src_layout' = '", attrs.get_string("src_layout"), "'");
  }
  int64_t stored = s.src_block ? in[1] * s.src_block : in[1];
  // Leaving a blocked layout, attribute `channels` drops the zero padding of the last block.
  s.channels = attrs.get_int("channels", stored);
  ANVIL_CHECK(s.channels >= 1 && s.channels <= stored &&
                  stored - s.channels < (s.src_block ? s.src_block : 1),
              op, ": attribute 'channels' = ", s.channels, " does not fit input ", shape_str(in),
              " with layout '", attrs.get_string("src_layout"), "'");
  if (s.dst_block) {
    s.shape = {in[0], (s.channels + s.dst_block - 1) / s.dst_block, in[2], in[3], s.dst_block};
  } else {
    s.shape = {in[0], s.channels, in[2], in[3]};
  }
  return s;
}

}  // namespace

void register_layout_transform() {
  const std::string name = "layout_transform";
  register_transform(
      name,
      {{"src_layout", AttrType::kString, std::nullopt, {}, "NCHW or NCHW<b>c", /*required=*/true},
       {"dst_layout", AttrType::kString, std::nullopt, {}, "NCHW or NCHW<b>c", /*required=*/true},
       {"channels",
        AttrType::kInt,
        std::nullopt,
        {},
        "the true channels, leaving a blocked layout (absent: all stored)"}},
      [name](const std::vector<TensorType>& in, const Attrs& attrs) {
        check_inputs(name, in, 1);
        check_data_type(name, in[0]);
        LayoutSpec s = layout_spec(in[0].shape, attrs);
        check_output_shape(name, s.shape);
        return std::vector<TensorType>{{s.shape, in[0].dtype}};
      },
      [name](const std::vector<te::Tensor>& in, const Attrs& attrs) {
        te::Tensor x = in[0];
        std::vector<int64_t> ishape = shape_of(x);
        LayoutSpec s = layout_spec(ishape, attrs);
        return std::vector<te::Tensor>{te::compute(
            to_exprs(s.shape),
            [&](const std::vector<Var>& i) {
              Expr c = s.dst_block ? i[1] * static_cast<int>(s.dst_block) + i[4] : Expr(i[1]);
              bool padded = s.dst_block && s.shape[1] * s.dst_block != s.channels;
              Expr cc = padded ? clamp_index(c, s.channels) : c;
              Expr v = s.src_block ? x(i[0], floordiv(cc, static_cast<int>(s.src_block)), i[2],
                                       i[3], floormod(cc, static_cast<int>(s.src_block)))
                                   : x(i[0], cc, i[2], i[3]);
              return padded ? select(c < static_cast<int>(s.channels), v, make_zero(x->dtype)) : v;
            },
            name)};
      },
      [](const std::vector<runtime::NDArray>& in, const Attrs& attrs) {
        std::vector<int64_t> ishape = host_shapes(in[0]);
        LayoutSpec s = layout_spec(ishape, attrs);
        runtime::NDArray out = host_empty(s.shape, in[0].dtype());  // zero-filled
        int64_t N = ishape[0], H = ishape[2], W = ishape[3];
        for (int64_t n = 0; n < N; ++n) {
          for (int64_t c = 0; c < s.channels; ++c) {
            for (int64_t h = 0; h < H; ++h) {
              for (int64_t w = 0; w < W; ++w) {
                int64_t src = s.src_block ? (((n * ishape[1] + c / s.src_block) * H + h) * W + w) *
                                                    s.src_block +
                                                c % s.src_block
                                          : ((n * ishape[1] + c) * H + h) * W + w;
                int64_t dst = s.dst_block ? (((n * s.shape[1] + c / s.dst_block) * H + h) * W + w) *
                                                    s.dst_block +
                                                c % s.dst_block
                                          : ((n * s.channels + c) * H + h) * W + w;
                copy_elem(in[0], src, out, dst);
              }
            }
          }
        }
        return std::vector<runtime::NDArray>{out};
      },
      // Into a block, from NCHW or another block: scalar copies (schedule_blocked_copy_x86).
      [](te::Schedule& s, const std::vector<te::Tensor>& outs, const Target& target) {
        for (const te::Tensor& out : outs) schedule_blocked_copy_x86(s, out, target);
      });
}

namespace {

// ---- resize (NCHW; H and W resized)

// The source coordinate of output index x along one axis, as the exact ratio (a*x + b) / d.
struct AxisMap {
  int64_t in, out;
  int64_t a, b, d;
};

struct ResizeSpec {
  std::string mode, coord, nearest;
  double cubic_a = -0.75;  // cubic only
  bool exclude_outside = false;
  AxisMap h, w;
  std::vector<int64_t> shape;
};

// p / q == scale for small integers (denominator at most 1000, within float32 precision: ONNX
// scales are float32, so 0.6 arrives as 0.60000002).
std::pair<int64_t, int64_t> as_ratio(double scale) {
  ANVIL_CHECK(scale > 0 && scale <= 1e6, "resize: attribute 'scales' has ", scale,
              ", outside (0, 1e6]");
  for (int64_t q = 1; q <= 1000; ++q) {
    double p = std::round(scale * static_cast<double>(q));
    if (p >= 1 && std::abs(p - scale * static_cast<double>(q)) <= 1e-6 * p) {
      return {static_cast<int64_t>(p), q};
    }
  }
  ANVIL_CHECK(false, "resize: attribute 'scales' has ", scale,
              ", which is not a ratio of integers with a denominator up to 1000");
  return {1, 1};
}

AxisMap axis_map(const std::string& coord, int64_t in, int64_t out, int64_t p, int64_t q) {
  // scale = p / q = out / in when sizes are given.
  AxisMap m{in, out, 0, 0, 1};
  if (coord == "asymmetric") {
    m.a = q, m.b = 0, m.d = p;  // x / scale
  } else if (coord == "align_corners") {
    // x * (in - 1) / (in * scale - 1), as ONNX's reference has it: with scales that do not give
    // a whole output length, in * scale is not the output length (0.6 * 4 = 2.4 for 2 outputs).
    if (p * in != q) m.a = q * (in - 1), m.b = 0, m.d = p * in - q;
  } else if (coord == "tf_half_pixel_for_nn") {
    m.a = 2 * q, m.b = q, m.d = 2 * p;  // (x + 0.5) / scale
  } else if (coord == "half_pixel" || out > 1) {
    m.a = 2 * q, m.b = q - p, m.d = 2 * p;  // (x + 0.5) / scale - 0.5
  }                                         // pytorch_half_pixel with one output: 0
  return m;
}

ResizeSpec resize_spec(const std::vector<int64_t>& in, const Attrs& attrs) {
  const std::string op = "resize";
  ResizeSpec s;
  s.mode = attrs.get_string("mode");
  ANVIL_CHECK(s.mode == "nearest" || s.mode == "linear" || s.mode == "cubic", op,
              ": attribute 'mode' = '", s.mode, "' is not nearest, linear or cubic");
  s.cubic_a = attrs.get_float("cubic_coeff_a");
  int64_t exclude = attrs.get_int("exclude_outside");
  ANVIL_CHECK(exclude == 0 || exclude == 1, op,
              ": attribute 'exclude_outside' must be 0 or 1, not ", exclude);
  s.exclude_outside = exclude == 1;
  s.coord = attrs.get_string("coordinate_transformation_mode");
  ANVIL_CHECK(s.coord == "half_pixel" || s.coord == "align_corners" || s.coord == "asymmetric" ||
                  s.coord == "pytorch_half_pixel" || s.coord == "tf_half_pixel_for_nn",
              op, ": attribute 'coordinate_transformation_mode' = '", s.coord,
              "' is not half_pixel, align_corners, asymmetric, pytorch_half_pixel or "
              "tf_half_pixel_for_nn");
  s.nearest = attrs.get_string("nearest_mode");
  ANVIL_CHECK(s.nearest == "round_prefer_floor" || s.nearest == "round_prefer_ceil" ||
                  s.nearest == "floor" || s.nearest == "ceil",
              op, ": attribute 'nearest_mode' = '", s.nearest,
              "' is not round_prefer_floor, round_prefer_ceil, floor or ceil");
  ANVIL_CHECK(in.size() == 4, op, ": input ", shape_str(in), " is not NCHW (rank 4)");
  // Spatial lengths up to 2^20 keep the coordinate arithmetic below (products of an input length,
  // an output length and a ratio term) inside 64 bits; the result must fit 32 bits anyway.
  constexpr int64_t kMaxLength = int64_t{1} << 20;
  ANVIL_CHECK(in[2] <= kMaxLength && in[3] <= kMaxLength, op, ": input ", shape_str(in),
              " is longer than 2^20 in H or W");
  ANVIL_CHECK(attrs.has("sizes") != attrs.has("scales"), op,
              ": needs exactly one of the attributes 'sizes' and 'scales'");
  int64_t out_h = 0, out_w = 0, ph = 0, qh = 0, pw = 0, qw = 0;
  if (attrs.has("sizes")) {
    std::vector<int64_t> sizes = attrs.get_ints("sizes");
    ANVIL_CHECK(sizes.size() == 4 || sizes.size() == 2, op, ": attribute 'sizes' ",
                shape_str(sizes), " must have 4 entries (NCHW) or 2 (HW)");
    if (sizes.size() == 4) {
      ANVIL_CHECK(sizes[0] == in[0] && sizes[1] == in[1], op, ": attribute 'sizes' ",
                  shape_str(sizes), " changes N or C of input ", shape_str(in));
      sizes = {sizes[2], sizes[3]};
    }
    ANVIL_CHECK(sizes[0] >= 1 && sizes[1] >= 1, op, ": attribute 'sizes' has an entry below 1");
    ANVIL_CHECK(sizes[0] <= kMaxLength && sizes[1] <= kMaxLength, op, ": attribute 'sizes' ",
                shape_str(sizes), " is longer than 2^20 in H or W");
    out_h = sizes[0], out_w = sizes[1];
    ph = out_h, qh = in[2], pw = out_w, qw = in[3];
  } else {
    std::vector<double> scales;
    auto it = attrs.values().find("scales");
    if (const auto* v = std::get_if<std::vector<double>>(&it->second)) {
      scales = *v;
    } else {
      for (int64_t x : attrs.get_ints("scales")) scales.push_back(static_cast<double>(x));
    }
    ANVIL_CHECK(scales.size() == 4 || scales.size() == 2, op,
                ": attribute 'scales' must have 4 entries (NCHW) or 2 (HW), not ", scales.size());
    if (scales.size() == 4) {
      ANVIL_CHECK(scales[0] == 1 && scales[1] == 1, op,
                  ": attribute 'scales' must keep N and C (scales 1), not ", scales[0], " and ",
                  scales[1]);
      scales = {scales[2], scales[3]};
    }
    for (double x : scales) {
      ANVIL_CHECK(x > 0 && std::isfinite(x), op, ": attribute 'scales' has ", x,
                  ", which is not positive");
    }
    std::tie(ph, qh) = as_ratio(scales[0]);
    std::tie(pw, qw) = as_ratio(scales[1]);
    // ONNX: output length floor(input length * scale).
    out_h = in[2] * ph / qh, out_w = in[3] * pw / qw;
    ANVIL_CHECK(out_h >= 1 && out_w >= 1, op, ": attribute 'scales' gives an empty output for ",
                "input ", shape_str(in));
  }
  ANVIL_CHECK(out_h <= kMaxLength && out_w <= kMaxLength, op, ": output ", out_h, "x", out_w,
              " is longer than 2^20 in H or W");
  s.h = axis_map(s.coord, in[2], out_h, ph, qh);
  s.w = axis_map(s.coord, in[3], out_w, pw, qw);
  for (const AxisMap& m : {s.h, s.w}) {
    ANVIL_CHECK(4 * (m.a * m.out + std::abs(m.b) + m.d) < INT32_MAX, op, ": input ", shape_str(in),
                " and output sizes are too large");
  }
  s.shape = {in[0], in[1], out_h, out_w};
  return s;
}

// Each output row vectorized along W (only the W coordinates' arithmetic per lane); the separable
// linear form's row stage (a two-tap reduction at the root) likewise, its rows in parallel.
void schedule_resize_x86(te::Schedule& s, const std::vector<te::Tensor>& outs,
                         const Target& target) {
  for (const te::Tensor& o : outs) schedule_injective_rows_x86(s, o, target);
  for (const te::Tensor& t : te::topological_order(outs)) {
    if (!t.is_compute() || t->reduce_axis.size() != 1 || shape_of(t).size() != 4) continue;
    te::Stage st = s[t];
    std::vector<IterVar> ax = st.axis();
    IterVar tap = st.reduce_axis()[0];
    IterVar rows = st.fuse(st.fuse(ax[0], ax[1]), ax[2]);
    st.parallel(rows);
    const int64_t lanes = target.vector_lanes_f32();
    if (shape_of(t)[3] >= lanes) {
      auto [wo, wi] = st.split(ax[3], lanes);
      st.reorder({rows, wo, tap, wi});
      st.vectorize(wi);
    }
    st.unroll(tap);
  }
}

// The nearest source index of output index x, clamped (integer arithmetic, exact).
Expr nearest_index(const AxisMap& m, const std::string& mode, Expr x) {
  Expr num = x * static_cast<int>(m.a) + static_cast<int>(m.b);
  int d = static_cast<int>(m.d);
  Expr i;
  if (mode == "floor") {
    i = floordiv(num, d);
  } else if (mode == "ceil") {
    i = floordiv(num + (d - 1), d);
  } else if (mode == "round_prefer_floor") {
    i = floordiv(num * 2 + (d - 1), 2 * d);  // ceil(v - 1/2)
  } else {
    i = floordiv(num * 2 + d, 2 * d);  // floor(v + 1/2)
  }
  return clamp_index(i, m.in);
}

// Cubic interpolation's four taps around output index o along one axis: source indices
// floor(v) - 1 .. floor(v) + 2, edge-clamped, weighted by Keys' kernel with coefficient a at
// r = v - floor(v) (float32; ONNX's whole-v case, taps from floor(v) - 2 at r = 1, weighs the
// same index alone as r = 0 does here). exclude_outside zeroes the taps outside the input and
// renormalizes the others.
struct CubicTaps {
  Expr index[4], weight[4];
  Expr pick_index(const Expr& t) const {
    return select(t == 0, index[0], select(t == 1, index[1], select(t == 2, index[2], index[3])));
  }
  Expr pick_weight(const Expr& t) const {
    return select(t == 0, weight[0],
                  select(t == 1, weight[1], select(t == 2, weight[2], weight[3])));
  }
};

CubicTaps cubic_taps(const AxisMap& m, const ResizeSpec& s, Expr o) {
  Expr num = o * static_cast<int>(m.a) + static_cast<int>(m.b);
  Expr i0 = floordiv(num, static_cast<int>(m.d));
  Expr r = cast(DataType::Float32(), num - i0 * static_cast<int>(m.d)) / static_cast<float>(m.d);
  const float a = static_cast<float>(s.cubic_a);
  auto far = [a](Expr t) { return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a; };  // |t| in 1..2
  auto near = [a](Expr t) { return ((a + 2) * t - (a + 3)) * t * t + 1.0f; };    // |t| in 0..1
  CubicTaps taps;
  Expr w[4] = {far(r + 1.0f), near(r), near(1.0f - r), far(2.0f - r)};
  Expr total;
  for (int k = 0; k < 4; ++k) {
    Expr i = i0 + (k - 1);
    taps.index[k] = clamp_index(i, m.in);
    taps.weight[k] = w[k];
    if (s.exclude_outside) {
      taps.weight[k] = select(i >= 0 && i < static_cast<int>(m.in), w[k], 0.0f);
      total = k == 0 ? taps.weight[k] : total + taps.weight[k];
    }
  }
  if (s.exclude_outside)
    for (Expr& wk : taps.weight) wk = wk / total;
  return taps;
}

}  // namespace

void register_resize() {
  const std::string name = "resize";
  register_transform(
      name,
      {{"mode", AttrType::kString, std::string("nearest"), {}, "nearest, linear or cubic"},
       {"cubic_coeff_a", AttrType::kFloat, -0.75, {}, "the cubic kernel's a"},
       {"exclude_outside",
        AttrType::kInt,
        int64_t{0},
        {},
        "1: cubic weights outside the input are dropped and the rest renormalized"},
       {"coordinate_transformation_mode",
        AttrType::kString,
        std::string("half_pixel"),
        {},
        "how output coordinates map to input ones (ONNX's modes)"},
       {"nearest_mode",
        AttrType::kString,
        std::string("round_prefer_floor"),
        {},
        "nearest mode's rounding"},
       {"scales", AttrType::kFloats, std::nullopt, {}, "NCHW or HW scales (or sizes)"},
       {"sizes", AttrType::kInts, std::nullopt, {}, "NCHW or HW output sizes (or scales)"}},
      [name](const std::vector<TensorType>& in, const Attrs& attrs) {
        check_inputs(name, in, 1);
        ANVIL_CHECK(in[0].dtype == DataType::Float32(), name, ": input must be float32, not ",
                    in[0].dtype);
        ResizeSpec s = resize_spec(in[0].shape, attrs);
        check_output_shape(name, s.shape);
        return std::vector<TensorType>{{s.shape, in[0].dtype}};
      },
      [name](const std::vector<te::Tensor>& in, const Attrs& attrs) {
        te::Tensor x = in[0];
        ResizeSpec s = resize_spec(shape_of(x), attrs);
        // Linear: the two neighbours floor(v) and floor(v) + 1, clamped (edge), weighted by the
        // fraction of v.
        auto neighbours = [](const AxisMap& m, Expr o) {
          Expr num = o * static_cast<int>(m.a) + static_cast<int>(m.b);
          Expr i0 = floordiv(num, static_cast<int>(m.d));
          Expr frac =
              cast(DataType::Float32(), num - i0 * static_cast<int>(m.d)) / static_cast<float>(m.d);
          return std::tuple<Expr, Expr, Expr>{clamp_index(i0, m.in), clamp_index(i0 + 1, m.in),
                                              frac};
        };
        if (s.mode == "linear" && s.h.in > s.shape[2]) {
          // Fewer output rows than input rows: the separable form would interpolate rows no
          // output reads; the four taps directly.
          return std::vector<te::Tensor>{te::compute(
              to_exprs(s.shape),
              [&](Var n, Var c, Var h, Var w) {
                auto [h0, h1, fh] = neighbours(s.h, h);
                auto [w0, w1, fw] = neighbours(s.w, w);
                Expr top = x(n, c, h0, w0) * (1.0f - fw) + x(n, c, h0, w1) * fw;
                Expr bottom = x(n, c, h1, w0) * (1.0f - fw) + x(n, c, h1, w1) * fw;
                return top * (1.0f - fh) + bottom * fh;
              },
              name)};
        }
        if (s.mode == "nearest") {
          return std::vector<te::Tensor>{te::compute(
              to_exprs(s.shape),
              [&](Var n, Var c, Var h, Var w) {
                return x(n, c, nearest_index(s.h, s.nearest, h), nearest_index(s.w, s.nearest, w));
              },
              name)};
        }
        if (s.mode == "cubic") {
          // Separable as linear below, with the four taps of cubic_taps along each axis.
          std::vector<int64_t> rows_shape = {s.shape[0], s.shape[1], s.h.in, s.shape[3]};
          te::Tensor rows = te::compute(
              to_exprs(rows_shape),
              [&](Var n, Var c, Var h, Var w) {
                CubicTaps t = cubic_taps(s.w, s, w);
                IterVar tap = te::reduce_axis(0, 4, "tap");
                return te::sum(x(n, c, h, t.pick_index(tap->var)) * t.pick_weight(tap->var), {tap});
              },
              name + ".rows");
          return std::vector<te::Tensor>{te::compute(
              to_exprs(s.shape),
              [&](Var n, Var c, Var h, Var w) {
                CubicTaps t = cubic_taps(s.h, s, h);
                Expr v = rows(n, c, t.index[0], w) * t.weight[0];
                for (int k = 1; k < 4; ++k) v = v + rows(n, c, t.index[k], w) * t.weight[k];
                return v;
              },
              name)};
        }
        // Separable: each input row interpolated along W first (a two-tap reduction, so that a
        // fused group keeps it as a stage: H_in rows instead of one per output row), then each
        // output row a blend of two of those rows, read contiguously.
        std::vector<int64_t> rows_shape = {s.shape[0], s.shape[1], s.h.in, s.shape[3]};
        te::Tensor rows = te::compute(
            to_exprs(rows_shape),
            [&](Var n, Var c, Var h, Var w) {
              auto [w0, w1, fw] = neighbours(s.w, w);
              IterVar tap = te::reduce_axis(0, 2, "tap");
              Expr first = tap->var == 0;
              return te::sum(x(n, c, h, select(first, w0, w1)) * select(first, 1.0f - fw, fw),
                             {tap});
            },
            name + ".rows");
        return std::vector<te::Tensor>{te::compute(
            to_exprs(s.shape),
            [&](Var n, Var c, Var h, Var w) {
              auto [h0, h1, fh] = neighbours(s.h, h);
              return rows(n, c, h0, w) * (1.0f - fh) + rows(n, c, h1, w) * fh;
            },
            name)};
      },
      [](const std::vector<runtime::NDArray>& in, const Attrs& attrs) {
        std::vector<int64_t> ishape = host_shapes(in[0]);
        ResizeSpec s = resize_spec(ishape, attrs);
        // The scales: given, or output / input lengths.
        std::vector<double> scales = {static_cast<double>(s.h.out) / static_cast<double>(s.h.in),
                                      static_cast<double>(s.w.out) / static_cast<double>(s.w.in)};
        if (attrs.has("scales")) {
          const AttrValue& v = attrs.values().at("scales");
          if (const auto* d = std::get_if<std::vector<double>>(&v)) {
            scales = {(*d)[d->size() - 2], (*d)[d->size() - 1]};
          } else {
            std::vector<int64_t> iv = attrs.get_ints("scales");
            scales = {static_cast<double>(iv[iv.size() - 2]), static_cast<double>(iv.back())};
          }
        }
        // The source coordinate by the ONNX formulas, in double.
        auto source = [&](const AxisMap& m, double scale, int64_t x) {
          double xd = static_cast<double>(x);
          if (s.coord == "asymmetric") return xd / scale;
          if (s.coord == "align_corners") {
            double len = scale * static_cast<double>(m.in);  // ONNX: in * scale, not out
            return len == 1 ? 0.0 : xd * static_cast<double>(m.in - 1) / (len - 1);
          }
          if (s.coord == "pytorch_half_pixel" && m.out == 1) return 0.0;
          if (s.coord == "tf_half_pixel_for_nn") return (xd + 0.5) / scale;
          return (xd + 0.5) / scale - 0.5;
        };
        auto clampi = [](int64_t i, int64_t n) { return std::min(std::max(i, int64_t{0}), n - 1); };
        auto nearest = [&](double v, int64_t n) {
          double f = std::floor(v), frac = v - f;
          const double eps = 1e-6;  // rounding noise of the double formula around exact ties
          int64_t i;
          if (frac < eps) {
            i = static_cast<int64_t>(f);
          } else if (frac > 1 - eps) {
            i = static_cast<int64_t>(f) + 1;
          } else if (s.nearest == "floor") {
            i = static_cast<int64_t>(f);
          } else if (s.nearest == "ceil") {
            i = static_cast<int64_t>(f) + 1;
          } else if (std::abs(frac - 0.5) < eps) {
            i = static_cast<int64_t>(f) + (s.nearest == "round_prefer_ceil" ? 1 : 0);
          } else {
            i = static_cast<int64_t>(f) + (frac > 0.5 ? 1 : 0);
          }
          return clampi(i, n);
        };
        // Cubic (ONNX): the four taps around v (v - 2 .. v + 1 when v is whole), edge-clamped,
        // weighted by Keys' kernel with coefficient A at ratio r = v - floor(v) (1 when whole);
        // exclude_outside zeroes the taps outside the input and renormalizes.
        auto cubic_taps = [&](double v, int64_t n, int64_t idx[4], double w[4]) {
          double f = std::floor(v);
          bool whole = v == f;
          double r = whole ? 1.0 : v - f;
          auto base = static_cast<int64_t>(f) - (whole ? 2 : 1);
          double A = s.cubic_a;
          auto far = [A](double t) { return ((A * t - 5 * A) * t + 8 * A) * t - 4 * A; };  // 1..2
          auto near = [A](double t) { return ((A + 2) * t - (A + 3)) * t * t + 1; };       // 0..1
          w[0] = far(r + 1), w[1] = near(r), w[2] = near(1 - r), w[3] = far(2 - r);
          double total = 0;
          for (int t = 0; t < 4; ++t) {
            int64_t i = base + t;
            if (s.exclude_outside && (i < 0 || i >= n)) w[t] = 0;
            total += w[t];
            idx[t] = clampi(i, n);
          }
          if (s.exclude_outside)
            for (int t = 0; t < 4; ++t) w[t] /= total;
        };
        auto cubic = [&](const float* plane, double vy, double vx) {
          int64_t W = ishape[3];
          int64_t iy[4], ix[4];
          double wy[4], wx[4];
          cubic_taps(vy, ishape[2], iy, wy);
          cubic_taps(vx, W, ix, wx);
          double v = 0;
          for (int a = 0; a < 4; ++a) {
            double row = 0;
            for (int b = 0; b < 4; ++b) row += wx[b] * plane[iy[a] * W + ix[b]];
            v += wy[a] * row;
          }
          return v;
        };
        runtime::NDArray out = host_empty(s.shape, in[0].dtype());
        const float* src = in[0].data_as<float>();
        float* dst = out.data_as<float>();
        int64_t H = ishape[2], W = ishape[3], OH = s.shape[2], OW = s.shape[3];
        for (int64_t nc = 0; nc < ishape[0] * ishape[1]; ++nc) {
          const float* plane = src + nc * H * W;
          for (int64_t y = 0; y < OH; ++y) {
            for (int64_t x = 0; x < OW; ++x) {
              double vy = source(s.h, scales[0], y), vx = source(s.w, scales[1], x);
              float r;
              if (s.mode == "cubic") {
                r = static_cast<float>(cubic(plane, vy, vx));
              } else if (s.mode == "nearest") {
                r = plane[nearest(vy, H) * W + nearest(vx, W)];
              } else {
                double fy = std::floor(vy), fx = std::floor(vx);
                double ly = vy - fy, lx = vx - fx;
                int64_t y0 = clampi(static_cast<int64_t>(fy), H);
                int64_t y1 = clampi(static_cast<int64_t>(fy) + 1, H);
                int64_t x0 = clampi(static_cast<int64_t>(fx), W);
                int64_t x1 = clampi(static_cast<int64_t>(fx) + 1, W);
                double v = (1 - ly) * ((1 - lx) * plane[y0 * W + x0] + lx * plane[y0 * W + x1]) +
                           ly * ((1 - lx) * plane[y1 * W + x0] + lx * plane[y1 * W + x1]);
                r = static_cast<float>(v);
              }
              dst[(nc * OH + y) * OW + x] = r;
            }
          }
        }
        return std::vector<runtime::NDArray>{out};
      },
      schedule_resize_x86);
}

}  // namespace anvil::ops::transform_detail
