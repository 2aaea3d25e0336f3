// Layout and data movement operators (ONNX semantics, snake-case names): reshape, flatten,
// squeeze, unsqueeze, transpose, concat, split, slice, pad, gather, expand, tile, resize and
// layout_transform (NCHW <-> NCHW[x]c); slice and pad live in slice_pad.cc, resize and
// layout_transform in resize_layout.cc. Every output element is a copy of one input element
// (or a constant, or for resize a blend of a few), so all are injective.
//
// Empty tensors (a 0 dimension: slice selecting nothing, split with 0-size pieces, reshape with
// allowzero = 1) pass the shape rules and the references; compiled code refuses them
// (register_transform).
//
// Memory safety: a select evaluates both of its arms, so every load below is given indices that
// are in bounds whatever the select decides (clamped where an arm is not taken); gather clamps
// indices the caller got wrong instead of reading outside its input.
#include "anvil/ops/families.h"
#include "anvil/ops/transform_common.h"

namespace anvil::ops {

using namespace ir;
using namespace transform_detail;

namespace {

// ---- reshape, flatten, squeeze, unsqueeze: same elements, new shape

std::vector<int64_t> reshape_shape(const std::vector<int64_t>& in, const Attrs& attrs) {
  const std::string op = "reshape";
  std::vector<int64_t> shape = attrs.get_ints("shape");
  // allowzero = 1 (ONNX): a 0 is an empty dimension, not a copy of the input's.
  bool allowzero = attrs.get_int("allowzero") == 1;
  int infer_at = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && allowzero) {
      known = 0;
      continue;
    }
    if (shape[i] == 0) {
      ANVIL_CHECK(i < in.size(), op, ": attribute 'shape' ", shape_str(shape), " copies dimension ",
                  i, " (0), but the input ", shape_str(in), " has rank ", in.size());
      shape[i] = in[i];
    } else if (shape[i] == -1) {
      ANVIL_CHECK(infer_at < 0, op, ": attribute 'shape' ", shape_str(shape),
                  " has more than one -1");
      infer_at = static_cast<int>(i);
      continue;
    } else {
      ANVIL_CHECK(shape[i] > 0, op, ": attribute 'shape' ", shape_str(shape),
                  " has invalid dimension ", shape[i]);
    }
    ANVIL_CHECK(shape[i] == 0 || known <= INT64_MAX / shape[i], op, ": attribute 'shape' ",
                shape_str(shape), " has more elements than 64 bits count");
    known *= shape[i];
  }
  int64_t total = numel(in);
  if (infer_at >= 0) {
    ANVIL_CHECK(known > 0 && total % known == 0, op, ": attribute 'shape' ", shape_str(shape),
                " cannot hold the ", total, " elements of input ", shape_str(in));
    shape[static_cast<size_t>(infer_at)] = total / known;
  }
  ANVIL_CHECK(numel(shape) == total, op, ": attribute 'shape' ", shape_str(shape), " has ",
              numel(shape), " elements, but the input ", shape_str(in), " has ", total);
  check_output_shape(op, shape, /*allow_empty=*/true);
  return shape;
}

std::vector<int64_t> flatten_shape(const std::vector<int64_t>& in, const Attrs& attrs) {
  int64_t rank = static_cast<int64_t>(in.size());
  int64_t axis = attrs.get_int("axis");
  ANVIL_CHECK(axis >= -rank && axis <= rank, "flatten: attribute 'axis' = ", axis,
              " is out of range for rank ", rank);
  if (axis < 0) axis += rank;
  int64_t a = 1, b = 1;
  for (int64_t d = 0; d < rank; ++d) (d < axis ? a : b) *= in[static_cast<size_t>(d)];
  return {a, b};
}

std::vector<int64_t> squeeze_shape(const std::vector<int64_t>& in, const Attrs& attrs) {
  int64_t rank = static_cast<int64_t>(in.size());
  std::vector<bool> drop(in.size(), false);
  if (attrs.has("axes")) {
    for (int64_t a : attrs.get_ints("axes")) {
      size_t d = static_cast<size_t>(norm_axis("squeeze", "axes", a, rank));
      ANVIL_CHECK(!drop[d], "squeeze: attribute 'axes' names axis ", d, " twice");
      ANVIL_CHECK(in[d] == 1, "squeeze: attribute 'axes' names axis ", d, " of input ",
                  shape_str(in), ", whose size is ", in[d], ", not 1");
      drop[d] = true;
    }
  } else {
    for (size_t d = 0; d < in.size(); ++d) drop[d] = in[d] == 1;
  }
  std::vector<int64_t> out;
  for (size_t d = 0; d < in.size(); ++d) {
    if (!drop[d]) out.push_back(in[d]);
  }
  return out;
}

std::vector<int64_t> unsqueeze_shape(const std::vector<int64_t>& in, const Attrs& attrs) {
  std::vector<int64_t> axes = attrs.get_ints("axes");
  int64_t rank = static_cast<int64_t>(in.size() + axes.size());
  std::vector<bool> ins(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    size_t d = static_cast<size_t>(norm_axis("unsqueeze", "axes", a, rank));
    ANVIL_CHECK(!ins[d], "unsqueeze: attribute 'axes' names axis ", d, " twice");
    ins[d] = true;
  }
  std::vector<int64_t> out;
  size_t j = 0;
  for (size_t d = 0; d < ins.size(); ++d) out.push_back(ins[d] ? 1 : in[j++]);
  return out;
}

using ShapeFn = std::function<std::vector<int64_t>(const std::vector<int64_t>&, const Attrs&)>;

// An op that keeps the elements in row-major order and changes the shape only.
void register_reshape_like(const std::string& name, std::vector<AttrSpec> attrs, ShapeFn shape_fn) {
  register_transform(
      name, std::move(attrs),
      [name, shape_fn](const std::vector<TensorType>& in, const Attrs& attrs) {
        check_inputs(name, in, 1);
        check_data_type(name, in[0]);
        std::vector<int64_t> s = shape_fn(in[0].shape, attrs);
        check_output_shape(name, s, /*allow_empty=*/true);
        return std::vector<TensorType>{{s, in[0].dtype}};
      },
      [name, shape_fn](const std::vector<te::Tensor>& in, const Attrs& attrs) {
        te::Tensor x = in[0];
        std::vector<int64_t> ishape = shape_of(x);
        std::vector<int64_t> oshape = shape_fn(ishape, attrs);
        return std::vector<te::Tensor>{te::compute(
            to_exprs(oshape),
            [&](const std::vector<Var>& i) {
              return x(unflatten(flatten_index(i, oshape), ishape));
            },
            name)};
      },
      [shape_fn](const std::vector<runtime::NDArray>& in, const Attrs& attrs) {
        std::vector<int64_t> oshape = shape_fn(host_shapes(in[0]), attrs);
        runtime::NDArray out = host_empty(oshape, in[0].dtype());
        if (in[0].nbytes() > 0) std::memcpy(out.data(), in[0].data(), in[0].nbytes());
        return std::vector<runtime::NDArray>{out};
      });
}

// ---- transpose

std::vector<int64_t> transpose_perm(const std::vector<int64_t>& in, const Attrs& attrs) {
  size_t rank = in.size();
  std::vector<int64_t> perm;
  for (size_t d = rank; d-- > 0;) perm.push_back(static_cast<int64_t>(d));
  perm = attrs.get_ints("perm", perm);
  ANVIL_CHECK(perm.size() == rank, "transpose: attribute 'perm' ", shape_str(perm), " has ",
              perm.size(), " entries, but the input has rank ", rank);
  std::vector<bool> seen(rank, false);
  for (int64_t p : perm) {
    ANVIL_CHECK(p >= 0 && p < static_cast<int64_t>(rank) && !seen[static_cast<size_t>(p)],
                "transpose: attribute 'perm' ", shape_str(perm), " is not a permutation of 0..",
                static_cast<int64_t>(rank) - 1);
    seen[static_cast<size_t>(p)] = true;
  }
  return perm;
}

void register_transpose() {
  const std::string name = "transpose";
  register_transform(
      name,
      {{"perm",
        AttrType::kInts,
        std::nullopt,
        {},
        "input axis of each output axis (absent: reversed)"}},
      [name](const std::vector<TensorType>& in, const Attrs& attrs) {
        check_inputs(name, in, 1);
        check_data_type(name, in[0]);
        std::vector<int64_t> perm = transpose_perm(in[0].shape, attrs);
        std::vector<int64_t> s;
        for (int64_t p : perm) s.push_back(in[0].shape[static_cast<size_t>(p)]);
        return std::vector<TensorType>{{s, in[0].dtype}};
      },
      [name](const std::vector<te::Tensor>& in, const Attrs& attrs) {
        te::Tensor x = in[0];
        std::vector<int64_t> ishape = shape_of(x);
        std::vector<int64_t> perm = transpose_perm(ishape, attrs);
        std::vector<int64_t> oshape;
        for (int64_t p : perm) oshape.push_back(ishape[static_cast<size_t>(p)]);
        return std::vector<te::Tensor>{te::compute(
            to_exprs(oshape),
            [&](const std::vector<Var>& i) {
              std::vector<Expr> idx(perm.size());
              for (size_t d = 0; d < perm.size(); ++d) idx[static_cast<size_t>(perm[d])] = i[d];
              return x(idx);
            },
            name)};
      },
      [](const std::vector<runtime::NDArray>& in, const Attrs& attrs) {
        std::vector<int64_t> ishape = host_shapes(in[0]);
        std::vector<int64_t> perm = transpose_perm(ishape, attrs);
        std::vector<int64_t> oshape;
        for (int64_t p : perm) oshape.push_back(ishape[static_cast<size_t>(p)]);
        runtime::NDArray out = host_empty(oshape, in[0].dtype());
        std::vector<int64_t> is = strides_of(ishape);
        int64_t o = 0;
        for_each_coord(oshape, [&](const std::vector<int64_t>& c) {
          int64_t src = 0;
          for (size_t d = 0; d < perm.size(); ++d) src += c[d] * is[static_cast<size_t>(perm[d])];
          copy_elem(in[0], src, out, o++);
        });
        return std::vector<runtime::NDArray>{out};
      });
}

// ---- concat

std::vector<int64_t> concat_shape(const std::vector<TensorType>& in, const Attrs& attrs,
                                  int64_t* axis_out) {
  ANVIL_CHECK(!in.empty(), "concat: expects at least 1 input, got 0");
  int64_t rank = static_cast<int64_t>(in[0].shape.size());
  int64_t axis = norm_axis("concat", "axis", attrs.get_int("axis"), rank);
  std::vector<int64_t> out = in[0].shape;
  out[static_cast<size_t>(axis)] = 0;
  for (size_t k = 0; k < in.size(); ++k) {
    ANVIL_CHECK(in[k].dtype == in[0].dtype, "concat: input ", k, " is ", to_string(in[k]),
                ", but input 0 is ", to_string(in[0]));
    ANVIL_CHECK(static_cast<int64_t>(in[k].shape.size()) == rank, "concat: input ", k, " ",
                to_string(in[k]), " has rank ", in[k].shape.size(), ", but input 0 has rank ",
                rank);
    for (int64_t d = 0; d < rank; ++d) {
      size_t ud = static_cast<size_t>(d);
      ANVIL_CHECK(d == axis || in[k].shape[ud] == in[0].shape[ud], "concat: input ", k, " ",
                  to_string(in[k]), " differs from input 0 ", to_string(in[0]), " in dimension ", d,
                  " (axis = ", axis, ")");
    }
    out[static_cast<size_t>(axis)] += in[k].shape[static_cast<size_t>(axis)];
  }
  if (axis_out) *axis_out = axis;
  return out;
}

void register_concat() {
  const std::string name = "concat";
  register_transform(
      name,
      {{"axis", AttrType::kInt, std::nullopt, {}, "the axis joined along", /*required=*/true}},
      [](const std::vector<TensorType>& in, const Attrs& attrs) {
        for (const TensorType& t : in) check_data_type("concat", t);
        return std::vector<TensorType>{{concat_shape(in, attrs, nullptr), in[0].dtype}};
      },
      [name](const std::vector<te::Tensor>& in, const Attrs& attrs) {
        int64_t axis = 0;
        std::vector<int64_t> oshape = concat_shape(types_of(in), attrs, &axis);
        size_t a = static_cast<size_t>(axis);
        return std::vector<te::Tensor>{te::compute(
            to_exprs(oshape),
            [&](const std::vector<Var>& i) {
              // From the last input back: select(i < end_k, in_k[...], later).
              std::vector<int64_t> begin;
              int64_t b = 0;
              for (const te::Tensor& t : in) {
                begin.push_back(b);
                b += shape_of(t)[a];
              }
              Expr value;
              for (size_t k = in.size(); k-- > 0;) {
                int64_t extent = shape_of(in[k])[a];
                std::vector<Expr> idx = exprs(i);
                idx[a] = clamp_index(i[a] - static_cast<int>(begin[k]), extent);
                Expr v = in[k](idx);
                value = value.defined()
                            ? select(i[a] < static_cast<int>(begin[k] + extent), v, value)
                            : v;
              }
              return value;
            },
            name)};
      },
      [](const std::vector<runtime::NDArray>& in, const Attrs& attrs) {
        std::vector<TensorType> types;
        for (const runtime::NDArray& x : in) types.push_back({x.shape(), DataType::Float32()});
        int64_t axis = 0;
        std::vector<int64_t> oshape = concat_shape(types, attrs, &axis);
        runtime::NDArray out = host_empty(oshape, in[0].dtype());
        std::vector<int64_t> os = strides_of(oshape);
        int64_t base = 0;
        for (const runtime::NDArray& x : in) {
          int64_t src = 0;
          for_each_coord(x.shape(), [&](const std::vector<int64_t>& c) {
            std::vector<int64_t> oc = c;
            oc[static_cast<size_t>(axis)] += base;
            copy_elem(x, src++, out, offset_of(oc, os));
          });
          base += x.shape()[static_cast<size_t>(axis)];
        }
        return std::vector<runtime::NDArray>{out};
      });
}

// ---- split

// The sizes of the pieces along the axis.
std::vector<int64_t> split_sizes(const std::vector<int64_t>& in, const Attrs& attrs,
                                 int64_t* axis_out) {
  int64_t rank = static_cast<int64_t>(in.size());
  int64_t axis = norm_axis("split", "axis", attrs.get_int("axis"), rank);
  int64_t dim = in[static_cast<size_t>(axis)];
  std::vector<int64_t> sizes;
  if (attrs.has("split")) {
    sizes = attrs.get_ints("split");
    int64_t total = 0;
    for (int64_t s : sizes) {
      ANVIL_CHECK(s >= 0 && s <= dim, "split: attribute 'split' ", shape_str(sizes),
                  " has a size outside [0, ", dim, "] (dimension ", axis, " of input ",
                  shape_str(in), ")");  // 0: an empty output (references only)
      total += s;                       // at most dim per entry: no overflow
      ANVIL_CHECK(total <= dim, "split: attribute 'split' ", shape_str(sizes), " sums past ", dim,
                  ", dimension ", axis, " of input ", shape_str(in));
    }
    ANVIL_CHECK(total == dim, "split: attribute 'split' ", shape_str(sizes), " sums to ", total,
                ", but dimension ", axis, " of input ", shape_str(in), " is ", dim);
  } else {
    ANVIL_CHECK(attrs.has("num_outputs"),
                "split: needs attribute 'split' (sizes) or 'num_outputs' (equal parts)");
    int64_t n = attrs.get_int("num_outputs");
    ANVIL_CHECK(n >= 1 && n <= dim, "split: attribute 'num_outputs' = ", n, " must be in [1, ", dim,
                "] for dimension ", axis, " of input ", shape_str(in));
    // ONNX: ceil(dim / n) each, the last one smaller when n does not divide dim.
    int64_t chunk = (dim + n - 1) / n;
    for (int64_t k = 0, left = dim; k < n; ++k) {
      int64_t s = std::min(chunk, left);
      ANVIL_CHECK(s > 0, "split: attribute 'num_outputs' = ", n, " leaves output ", k,
                  " empty for dimension ", axis, " of size ", dim);
      sizes.push_back(s);
      left -= s;
    }
  }
  if (axis_out) *axis_out = axis;
  return sizes;
}

void register_split() {
  const std::string name = "split";
  register_transform(
      name,
      {{"axis", AttrType::kInt, int64_t{0}, {}, "the axis split along"},
       {"split", AttrType::kInts, std::nullopt, {}, "the pieces' sizes (or num_outputs)"},
       {"num_outputs", AttrType::kInt, std::nullopt, {}, "equal pieces, the last smaller"}},
      [name](const std::vector<TensorType>& in, const Attrs& attrs) {
        check_inputs(name, in, 1);
        check_data_type(name, in[0]);
        int64_t axis = 0;
        std::vector<int64_t> sizes = split_sizes(in[0].shape, attrs, &axis);
        std::vector<TensorType> out;
        for (int64_t s : sizes) {
          TensorType t = in[0];
          t.shape[static_cast<size_t>(axis)] = s;
          out.push_back(t);
        }
        return out;
      },
      [name](const std::vector<te::Tensor>& in, const Attrs& attrs) {
        te::Tensor x = in[0];
        std::vector<int64_t> ishape = shape_of(x);
        int64_t axis = 0;
        std::vector<int64_t> sizes = split_sizes(ishape, attrs, &axis);
        size_t a = static_cast<size_t>(axis);
        std::vector<te::Tensor> outs;
        int64_t begin = 0;
        for (size_t k = 0; k < sizes.size(); ++k) {
          std::vector<int64_t> oshape = ishape;
          oshape[a] = sizes[k];
          outs.push_back(te::compute(
              to_exprs(oshape),
              [&](const std::vector<Var>& i) {
                std::vector<Expr> idx = exprs(i);
                idx[a] = i[a] + static_cast<int>(begin);
                return x(idx);
              },
              name + "_" + std::to_string(k)));
          begin += sizes[k];
        }
        return outs;
      },
      [](const std::vector<runtime::NDArray>& in, const Attrs& attrs) {
        std::vector<int64_t> ishape = host_shapes(in[0]);
        int64_t axis = 0;
        std::vector<int64_t> sizes = split_sizes(ishape, attrs, &axis);
        std::vector<runtime::NDArray> outs;
        std::vector<int64_t> is = strides_of(ishape);
        int64_t begin = 0;
        for (int64_t size : sizes) {
          std::vector<int64_t> oshape = ishape;
          oshape[static_cast<size_t>(axis)] = size;
          runtime::NDArray out = host_empty(oshape, in[0].dtype());
          int64_t o = 0;
          for_each_coord(oshape, [&](const std::vector<int64_t>& c) {
            std::vector<int64_t> ic = c;
            ic[static_cast<size_t>(axis)] += begin;
            copy_elem(in[0], offset_of(ic, is), out, o++);
          });
          outs.push_back(out);
          begin += size;
        }
        return outs;
      });
}

// ---- gather

std::vector<int64_t> gather_shape(const std::vector<int64_t>& data,
                                  const std::vector<int64_t>& indices, const Attrs& attrs,
                                  int64_t* axis_out) {
  int64_t axis =
      norm_axis("gather", "axis", attrs.get_int("axis"), static_cast<int64_t>(data.size()));
  std::vector<int64_t> out(data.begin(), data.begin() + axis);
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  if (axis_out) *axis_out = axis;
  return out;
}

void register_gather() {
  const std::string name = "gather";
  register_transform(
      name, {{"axis", AttrType::kInt, int64_t{0}, {}, "the axis indexed"}},
      [name](const std::vector<TensorType>& in, const Attrs& attrs) {
        check_inputs(name, in, 2);
        check_data_type(name, in[0], "data");
        ANVIL_CHECK(in[1].dtype == DataType::Int32() || in[1].dtype == DataType::Int64(), name,
                    ": indices must be int32 or int64, not ", in[1].dtype);
        std::vector<int64_t> s = gather_shape(in[0].shape, in[1].shape, attrs, nullptr);
        check_output_shape(name, s);
        return std::vector<TensorType>{{s, in[0].dtype}};
      },
      [name](const std::vector<te::Tensor>& in, const Attrs& attrs) {
        te::Tensor data = in[0], indices = in[1];
        std::vector<int64_t> dshape = shape_of(data), ishape = shape_of(indices);
        int64_t axis = 0;
        std::vector<int64_t> oshape = gather_shape(dshape, ishape, attrs, &axis);
        size_t a = static_cast<size_t>(axis), r = ishape.size();
        int64_t n = dshape[a];
        return std::vector<te::Tensor>{te::compute(
            to_exprs(oshape),
            [&](const std::vector<Var>& i) {
              std::vector<Expr> iidx(i.begin() + static_cast<ptrdiff_t>(a),
                                     i.begin() + static_cast<ptrdiff_t>(a + r));
              Expr k = indices(iidx);
              DataType it = indices->dtype;
              k = select(k < make_zero(it), k + make_const(it, n), k);
              // Out-of-range indices (an error in ONNX) are clamped, never read outside data.
              k = cast(DataType::Int32(), min(max(k, make_zero(it)), make_const(it, n - 1)));
              std::vector<Expr> didx(i.begin(), i.begin() + static_cast<ptrdiff_t>(a));
              didx.push_back(k);
              didx.insert(didx.end(), i.begin() + static_cast<ptrdiff_t>(a + r), i.end());
              return data(didx);
            },
            name, {index_check(name, indices, n, axis)})};
      },
      [](const std::vector<runtime::NDArray>& in, const Attrs& attrs) {
        std::vector<int64_t> dshape = host_shapes(in[0]), ishape = host_shapes(in[1]);
        int64_t axis = 0;
        std::vector<int64_t> oshape = gather_shape(dshape, ishape, attrs, &axis);
        size_t a = static_cast<size_t>(axis), r = ishape.size();
        int64_t n = dshape[a];
        std::vector<int64_t> outer_shape(dshape.begin(), dshape.begin() + axis);
        std::vector<int64_t> inner_shape(dshape.begin() + axis + 1, dshape.end());
        int64_t outer = numel(outer_shape), inner = numel(inner_shape), m = numel(ishape);
        (void)r;
        runtime::NDArray out = host_empty(oshape, in[0].dtype());
        for (int64_t p = 0; p < outer; ++p) {
          for (int64_t j = 0; j < m; ++j) {
            int64_t k = get_int_elem(in[1], j);
            ANVIL_CHECK(k >= -n && k < n, "gather: index ", k, " is out of range for axis ", a,
                        " of size ", n);
            if (k < 0) k += n;
            for (int64_t q = 0; q < inner; ++q) {
              copy_elem(in[0], (p * n + k) * inner + q, out, (p * m + j) * inner + q);
            }
          }
        }
        return std::vector<runtime::NDArray>{out};
      });
}

// ---- expand, tile

std::vector<int64_t> expand_shape(const std::vector<int64_t>& in, const Attrs& attrs) {
  std::vector<int64_t> shape = attrs.get_ints("shape");
  size_t n = std::max(in.size(), shape.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t x = i < n - in.size() ? 1 : in[i - (n - in.size())];
    int64_t y = i < n - shape.size() ? 1 : shape[i - (n - shape.size())];
    ANVIL_CHECK(y >= 1 && (x == y || x == 1 || y == 1), "expand: attribute 'shape' ",
                shape_str(shape), " does not broadcast with input ", shape_str(in), " (dimension ",
                i, ": ", x, " vs ", y, ")");
    out[i] = x == 1 ? y : x;  // an empty input dimension stays empty
  }
  return out;
}

std::vector<int64_t> tile_shape(const std::vector<int64_t>& in, const Attrs& attrs) {
  std::vector<int64_t> reps = attrs.get_ints("repeats");
  ANVIL_CHECK(reps.size() == in.size(), "tile: attribute 'repeats' ", shape_str(reps), " has ",
              reps.size(), " entries, but the input ", shape_str(in), " has rank ", in.size());
  std::vector<int64_t> out;
  for (size_t d = 0; d < in.size(); ++d) {
    ANVIL_CHECK(reps[d] >= 1, "tile: attribute 'repeats' ", shape_str(reps),
                " has an entry below 1");
    ANVIL_CHECK(in[d] == 0 || reps[d] <= INT64_MAX / in[d], "tile: attribute 'repeats' ",
                shape_str(reps), " makes more elements of input ", shape_str(in),
                " than 64 bits count");
    out.push_back(in[d] * reps[d]);
  }
  return out;
}

// expand (broadcast = true) and tile (modulo): each output coordinate reads one input coordinate
// computed per dimension.
void register_repeat(const std::string& name, ShapeFn shape_fn, bool broadcast) {
  register_transform(
      name,
      {broadcast ? AttrSpec{"shape",
                            AttrType::kInts,
                            std::nullopt,
                            {},
                            "the shape the input broadcasts to",
                            /*required=*/true}
                 : AttrSpec{"repeats",
                            AttrType::kInts,
                            std::nullopt,
                            {},
                            "the copies per axis",
                            /*required=*/true}},
      [name, shape_fn](const std::vector<TensorType>& in, const Attrs& attrs) {
        check_inputs(name, in, 1);
        check_data_type(name, in[0]);
        std::vector<int64_t> s = shape_fn(in[0].shape, attrs);
        check_output_shape(name, s);
        return std::vector<TensorType>{{s, in[0].dtype}};
      },
      [name, shape_fn, broadcast](const std::vector<te::Tensor>& in, const Attrs& attrs) {
        te::Tensor x = in[0];
        std::vector<int64_t> ishape = shape_of(x);
        std::vector<int64_t> oshape = shape_fn(ishape, attrs);
        size_t lead = oshape.size() - ishape.size();
        return std::vector<te::Tensor>{te::compute(
            to_exprs(oshape),
            [&](const std::vector<Var>& i) {
              std::vector<Expr> idx;
              for (size_t d = 0; d < ishape.size(); ++d) {
                Expr o = i[lead + d];
                if (ishape[d] == oshape[lead + d]) {
                  idx.push_back(o);
                } else if (broadcast || ishape[d] == 1) {
                  idx.push_back(0);
                } else {
                  idx.push_back(floormod(o, static_cast<int>(ishape[d])));
                }
              }
              return x(idx);
            },
            name)};
      },
      [shape_fn](const std::vector<runtime::NDArray>& in, const Attrs& attrs) {
        std::vector<int64_t> ishape = host_shapes(in[0]);
        std::vector<int64_t> oshape = shape_fn(ishape, attrs);
        size_t lead = oshape.size() - ishape.size();
        std::vector<int64_t> is = strides_of(ishape);
        runtime::NDArray out = host_empty(oshape, in[0].dtype());
        int64_t o = 0;
        for_each_coord(oshape, [&](const std::vector<int64_t>& c) {
          int64_t src = 0;
          for (size_t d = 0; d < ishape.size(); ++d) src += (c[lead + d] % ishape[d]) * is[d];
          copy_elem(in[0], src, out, o++);
        });
        return std::vector<runtime::NDArray>{out};
      });
}

}  // namespace

void register_transform_ops() {
  register_reshape_like("reshape",
                        {{"shape",
                          AttrType::kInts,
                          std::nullopt,
                          {},
                          "the output shape (0: the input's dimension, -1: inferred)",
                          /*required=*/true},
                         {"allowzero",
                          AttrType::kInt,
                          int64_t{0},
                          {one_of(std::vector<int64_t>{0, 1})},
                          "1: a 0 in shape is an empty dimension"}},
                        reshape_shape);
  register_reshape_like(
      "flatten",
      {{"axis", AttrType::kInt, int64_t{1}, {}, "the axes before it make the first dimension"}},
      flatten_shape);
  register_reshape_like(
      "squeeze",
      {{"axes", AttrType::kInts, std::nullopt, {}, "the unit axes removed (absent: all)"}},
      squeeze_shape);
  register_reshape_like("unsqueeze",
                        {{"axes",
                          AttrType::kInts,
                          std::nullopt,
                          {},
                          "the output's inserted unit axes",
                          /*required=*/true}},
                        unsqueeze_shape);
  register_transpose();
  register_concat();
  register_split();
  register_slice();
  register_pad();
  register_gather();
  register_repeat("expand", expand_shape, true);
  register_repeat("tile", tile_shape, false);
  register_layout_transform();
  register_select_channels();
  register_resize();
}

}  // namespace anvil::ops
