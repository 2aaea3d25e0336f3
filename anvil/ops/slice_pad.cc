// slice and pad (ONNX semantics): the data-movement operators whose output reads a window of
// the input (pad with a constant, edge or reflect fill outside it). The rest of the family is in
// transform.cc.
#include "anvil/ops/transform_common.h"

namespace anvil::ops::transform_detail {

// ---- slice

SliceSpec slice_spec(const std::vector<int64_t>& in, const Attrs& attrs) {
  const std::string op = "slice";
  int64_t rank = static_cast<int64_t>(in.size());
  std::vector<int64_t> starts = attrs.get_ints("starts");
  std::vector<int64_t> ends = attrs.get_ints("ends");
  std::vector<int64_t> axes;
  for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
  axes = attrs.get_ints("axes", axes);
  std::vector<int64_t> steps = attrs.get_ints("steps", std::vector<int64_t>(starts.size(), 1));
  ANVIL_CHECK(
      ends.size() == starts.size() && axes.size() == starts.size() && steps.size() == starts.size(),
      op, ": attributes 'starts', 'ends', 'axes' and 'steps' have different lengths (",
      starts.size(), ", ", ends.size(), ", ", axes.size(), ", ", steps.size(), ")");
  SliceSpec s{std::vector<int64_t>(in.size(), 0), std::vector<int64_t>(in.size(), 1), in};
  std::vector<bool> seen(in.size(), false);
  for (size_t k = 0; k < starts.size(); ++k) {
    size_t d = static_cast<size_t>(norm_axis(op, "axes", axes[k], rank));
    ANVIL_CHECK(!seen[d], op, ": attribute 'axes' names axis ", d, " twice");
    seen[d] = true;
    int64_t dim = in[d], step = steps[k];
    ANVIL_CHECK(step != 0, op, ": attribute 'steps' has a 0 for axis ", d);
    int64_t b = starts[k], e = ends[k];
    // ONNX: negative indices count from the end; then clamp to [0, dim] (step > 0) or
    // [-1, dim - 1] (step < 0), starts to [0, dim - 1] for negative steps.
    if (b < 0) b = b < -dim ? 0 : b + dim;
    if (e < 0) e = e < -dim ? -1 : e + dim;
    if (step > 0) {
      b = std::clamp<int64_t>(b, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
    } else {
      b = std::clamp<int64_t>(b, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
    }
    int64_t n = step > 0 ? (e - b + step - 1) / step : (b - e + (-step) - 1) / (-step);
    n = std::max<int64_t>(n, 0);  // 0: an empty result (references only)
    s.start[d] = b;
    s.step[d] = step;
    s.shape[d] = n;
  }
  return s;
}

void register_slice() {
  const std::string name = "slice";
  register_transform(
      name,
      {{"starts",
        AttrType::kInts,
        std::nullopt,
        {},
        "the first index per sliced axis",
        /*required=*/true},
       {"ends",
        AttrType::kInts,
        std::nullopt,
        {},
        "the end (exclusive) per sliced axis",
        /*required=*/true},
       {"axes", AttrType::kInts, std::nullopt, {}, "the sliced axes (absent: the first ones)"},
       {"steps", AttrType::kInts, std::nullopt, {}, "the step per sliced axis (absent: 1)"}},
      [name](const std::vector<TensorType>& in, const Attrs& attrs) {
        check_inputs(name, in, 1);
        check_data_type(name, in[0]);
        return std::vector<TensorType>{{slice_spec(in[0].shape, attrs).shape, in[0].dtype}};
      },
      [name](const std::vector<te::Tensor>& in, const Attrs& attrs) {
        te::Tensor x = in[0];
        SliceSpec s = slice_spec(shape_of(x), attrs);
        return std::vector<te::Tensor>{te::compute(
            to_exprs(s.shape),
            [&](const std::vector<Var>& i) {
              std::vector<Expr> idx;
              for (size_t d = 0; d < i.size(); ++d) {
                idx.push_back(i[d] * static_cast<int>(s.step[d]) + static_cast<int>(s.start[d]));
              }
              return x(idx);
            },
            name)};
      },
      [](const std::vector<runtime::NDArray>& in, const Attrs& attrs) {
        std::vector<int64_t> ishape = host_shapes(in[0]);
        SliceSpec s = slice_spec(ishape, attrs);
        runtime::NDArray out = host_empty(s.shape, in[0].dtype());
        std::vector<int64_t> is = strides_of(ishape);
        int64_t o = 0;
        for_each_coord(s.shape, [&](const std::vector<int64_t>& c) {
          int64_t src = 0;
          for (size_t d = 0; d < c.size(); ++d) src += (s.start[d] + c[d] * s.step[d]) * is[d];
          copy_elem(in[0], src, out, o++);
        });
        return std::vector<runtime::NDArray>{out};
      });
}

namespace {

// ---- pad

struct PadSpec {
  std::vector<int64_t> begin, end, shape;
  std::string mode;
  double value;
};

PadSpec pad_spec(const std::vector<int64_t>& in, const Attrs& attrs) {
  const std::string op = "pad";
  size_t rank = in.size();
  std::vector<int64_t> pads = attrs.get_ints("pads");
  ANVIL_CHECK(pads.size() == 2 * rank, op, ": attribute 'pads' ", shape_str(pads), " has ",
              pads.size(), " entries, but the input ", shape_str(in), " needs ", 2 * rank);
  PadSpec s;
  s.mode = attrs.get_string("mode");
  ANVIL_CHECK(s.mode == "constant" || s.mode == "edge" || s.mode == "reflect", op,
              ": attribute 'mode' = '", s.mode, "' is not constant, edge or reflect");
  s.value = attrs.get_float("value");
  for (size_t d = 0; d < rank; ++d) {
    int64_t b = pads[d], e = pads[d + rank];
    ANVIL_CHECK(b >= 0 && e >= 0, op, ": attribute 'pads' ", shape_str(pads),
                " has a negative entry for axis ", d, " (cropping is not supported)");
    ANVIL_CHECK(b < (int64_t{1} << 40) && e < (int64_t{1} << 40), op, ": attribute 'pads' ",
                shape_str(pads), " pads axis ", d, " by more than 2^40");
    ANVIL_CHECK(s.mode != "reflect" || (b < in[d] && e < in[d]), op, ": attribute 'pads' ",
                shape_str(pads), " pads axis ", d, " of size ", in[d], " by ", std::max(b, e),
                " in mode 'reflect', which needs pads smaller than the dimension");
    s.begin.push_back(b);
    s.end.push_back(e);
    s.shape.push_back(in[d] + b + e);
  }
  return s;
}

}  // namespace

void register_pad() {
  const std::string name = "pad";
  register_transform(
      name,
      {{"pads", AttrType::kInts, std::nullopt, {}, "begins then ends, per axis", /*required=*/true},
       {"mode", AttrType::kString, std::string("constant"), {}, "constant, edge or reflect"},
       {"value", AttrType::kFloat, 0.0, {}, "the constant mode's fill"}},
      [name](const std::vector<TensorType>& in, const Attrs& attrs) {
        check_inputs(name, in, 1);
        check_data_type(name, in[0]);
        PadSpec s = pad_spec(in[0].shape, attrs);
        check_output_shape(name, s.shape);
        return std::vector<TensorType>{{s.shape, in[0].dtype}};
      },
      [name](const std::vector<te::Tensor>& in, const Attrs& attrs) {
        te::Tensor x = in[0];
        std::vector<int64_t> ishape = shape_of(x);
        PadSpec s = pad_spec(ishape, attrs);
        return std::vector<te::Tensor>{te::compute(
            to_exprs(s.shape),
            [&](const std::vector<Var>& i) {
              std::vector<Expr> idx;
              Expr inside;
              for (size_t d = 0; d < i.size(); ++d) {
                int64_t n = ishape[d];
                if (s.begin[d] == 0 && s.end[d] == 0) {
                  idx.push_back(i[d]);
                  continue;
                }
                Expr j = i[d] - static_cast<int>(s.begin[d]);
                if (s.mode == "reflect") {
                  // One reflection suffices: pads are smaller than the dimension.
                  Expr r = select(j < 0, -j, j);
                  idx.push_back(
                      select(r >= static_cast<int>(n), static_cast<int>(2 * (n - 1)) - r, r));
                } else {
                  idx.push_back(clamp_index(j, n));
                  if (s.mode == "constant") {
                    Expr c = j >= 0 && j < static_cast<int>(n);
                    inside = inside.defined() ? (inside && c) : c;
                  }
                }
              }
              Expr v = x(idx);
              if (!inside.defined()) return v;
              Expr fill = x->dtype.is_float() ? make_const(x->dtype, s.value)
                                              : make_const(x->dtype, static_cast<int64_t>(s.value));
              return select(inside, v, fill);
            },
            name)};
      },
      [](const std::vector<runtime::NDArray>& in, const Attrs& attrs) {
        std::vector<int64_t> ishape = host_shapes(in[0]);
        PadSpec s = pad_spec(ishape, attrs);
        runtime::NDArray out = host_empty(s.shape, in[0].dtype());
        std::vector<int64_t> is = strides_of(ishape);
        int64_t o = 0;
        for_each_coord(s.shape, [&](const std::vector<int64_t>& c) {
          int64_t src = 0;
          bool inside = true;
          for (size_t d = 0; d < c.size(); ++d) {
            int64_t n = ishape[d], j = c[d] - s.begin[d];
            if (j < 0 || j >= n) {
              if (s.mode == "constant") {
                inside = false;
              } else if (s.mode == "edge") {
                j = j < 0 ? 0 : n - 1;
              } else {
                j = j < 0 ? -j : 2 * n - 2 - j;
              }
            }
            src += j * is[d];
          }
          if (inside) {
            copy_elem(in[0], src, out, o);
          } else {
            set_elem(out, o, s.value);
          }
          ++o;
        });
        return std::vector<runtime::NDArray>{out};
      });
}

}  // namespace anvil::ops::transform_detail
