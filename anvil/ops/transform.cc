// Layout and data movement operators (ONNX semantics, snake-case names): reshape, flatten,
// squeeze, unsqueeze, transpose, concat, split, slice, pad, gather, expand, tile, resize and
// layout_transform (NCHW <-> NCHW[x]c). Every output element is a copy of one input element
// (or a constant, or for resize a blend of a few), so all are injective.
//
// Memory safety: a select evaluates both of its arms, so every load below is given indices that
// are in bounds whatever the select decides (clamped where an arm is not taken); gather clamps
// indices the caller got wrong instead of reading outside its input.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <tuple>

#include "anvil/ir/op.h"
#include "anvil/ops/families.h"
#include "anvil/ops/op.h"
#include "anvil/ops/schedule_util.h"
#include "anvil/support/error.h"

namespace anvil::ops {

using namespace ir;

namespace {

// ---- shared checks

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

int64_t numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// An axis in [-rank, rank) made non-negative; throws naming the op and the attribute.
int64_t norm_axis(const std::string& op, const std::string& attr, int64_t axis, int64_t rank) {
  ANVIL_CHECK(axis >= -rank && axis < rank, op, ": attribute '", attr, "' = ", axis,
              " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

void check_inputs(const std::string& op, const std::vector<TensorType>& in, size_t n) {
  ANVIL_CHECK(in.size() == n, op, ": expects ", n, " input", n == 1 ? "" : "s", ", got ",
              in.size());
}

void check_data_type(const std::string& op, const TensorType& t, const char* what = "input") {
  ANVIL_CHECK(t.dtype == DataType::Float32() || t.dtype == DataType::Int32() ||
                  t.dtype == DataType::Int64(),
              op, ": ", what, " must be float32, int32 or int64, not ", t.dtype);
}

void check_output_shape(const std::string& op, const std::vector<int64_t>& s) {
  for (int64_t d : s) {
    ANVIL_CHECK(d > 0 && d <= INT32_MAX, op, ": output shape ", shape_str(s),
                " has an empty or too large dimension");
  }
}

std::vector<TensorType> types_of(const std::vector<te::Tensor>& in) {
  std::vector<TensorType> out;
  for (const te::Tensor& t : in) out.push_back({shape_of(t), t->dtype});
  return out;
}

std::vector<Expr> exprs(const std::vector<Var>& v) {
  return std::vector<Expr>(v.begin(), v.end());
}

// Index e clamped into [0, extent).
Expr clamp_index(Expr e, int64_t extent) {
  return min(max(e, 0), static_cast<int>(extent - 1));
}

// Row-major coordinates of flat offset `flat` in `shape`.
std::vector<Expr> unflatten(Expr flat, const std::vector<int64_t>& shape) {
  std::vector<Expr> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    int s = static_cast<int>(shape[d]);
    idx[d] = d == 0 ? flat : floormod(flat, s);
    flat = floordiv(flat, s);
  }
  return idx;
}

Expr flatten_index(const std::vector<Var>& idx, const std::vector<int64_t>& shape) {
  Expr flat = 0;
  for (size_t d = 0; d < shape.size(); ++d) flat = flat * static_cast<int>(shape[d]) + idx[d];
  return flat;
}

// ---- host helpers for the references (naive loops over the NDArrays' bytes)

std::vector<int64_t> strides_of(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * shape[d];
  return s;
}

size_t elem_bytes(const runtime::NDArray& a) {
  return static_cast<size_t>(a.dtype().bits / 8);
}

runtime::NDArray host_empty(const std::vector<int64_t>& shape, DLDataType t) {
  return runtime::NDArray::empty(shape, t, true);
}

void copy_elem(const runtime::NDArray& src, int64_t si, const runtime::NDArray& dst, int64_t di) {
  size_t b = elem_bytes(src);
  std::memcpy(static_cast<char*>(dst.data()) + static_cast<size_t>(di) * b,
              static_cast<const char*>(src.data()) + static_cast<size_t>(si) * b, b);
}

void set_elem(const runtime::NDArray& dst, int64_t i, double v) {
  DLDataType t = dst.dtype();
  if (t.code == kDLFloat) {
    dst.data_as<float>()[i] = static_cast<float>(v);
  } else if (t.bits == 32) {
    dst.data_as<int32_t>()[i] = static_cast<int32_t>(v);
  } else {
    dst.data_as<int64_t>()[i] = static_cast<int64_t>(v);
  }
}

int64_t get_int_elem(const runtime::NDArray& a, int64_t i) {
  return a.dtype().bits == 32 ? a.data_as<int32_t>()[i] : a.data_as<int64_t>()[i];
}

// Calls fn(coord) for every coordinate of `shape` in row-major order.
template <typename F>
void for_each_coord(const std::vector<int64_t>& shape, F&& fn) {
  int64_t n = numel(shape);
  std::vector<int64_t> c(shape.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    fn(c);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++c[d] < shape[d]) break;
      c[d] = 0;
    }
  }
}

int64_t offset_of(const std::vector<int64_t>& coord, const std::vector<int64_t>& strides) {
  int64_t off = 0;
  for (size_t d = 0; d < coord.size(); ++d) off += coord[d] * strides[d];
  return off;
}

// ---- registration

using InferFn =
    std::function<std::vector<TensorType>(const std::vector<TensorType>&, const Attrs&)>;
using ComputeFn =
    std::function<std::vector<te::Tensor>(const std::vector<te::Tensor>&, const Attrs&)>;
using RefFn = std::function<std::vector<runtime::NDArray>(const std::vector<runtime::NDArray>&,
                                                          const Attrs&)>;

void register_transform(const std::string& name, InferFn infer, ComputeFn compute, RefFn ref) {
  OpDef def;
  def.name = name;
  def.pattern = Pattern::kInjective;
  def.infer = std::move(infer);
  def.compute = std::move(compute);
  def.reference = std::move(ref);
  def.schedule_x86 = [](te::Schedule& s, const std::vector<te::Tensor>& outs, const Target& t,
                        const Config&) {
    for (const te::Tensor& o : outs) schedule_injective_x86(s, o, t);
  };
  def.space = [](const std::vector<TensorType>&, const Attrs&, const Target&) {
    return ConfigSpace{};
  };
  register_op(std::move(def));
}

std::vector<int64_t> host_shapes(const runtime::NDArray& a) {
  return a.shape();
}

// ---- reshape, flatten, squeeze, unsqueeze: same elements, new shape

std::vector<int64_t> reshape_shape(const std::vector<int64_t>& in, const Attrs& attrs) {
  const std::string op = "reshape";
  std::vector<int64_t> shape = attrs.get_ints("shape");
  int infer_at = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
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
  check_output_shape(op, shape);
  return shape;
}

std::vector<int64_t> flatten_shape(const std::vector<int64_t>& in, const Attrs& attrs) {
  int64_t rank = static_cast<int64_t>(in.size());
  int64_t axis = attrs.get_int("axis", 1);
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
void register_reshape_like(const std::string& name, ShapeFn shape_fn) {
  register_transform(
      name,
      [name, shape_fn](const std::vector<TensorType>& in, const Attrs& attrs) {
        check_inputs(name, in, 1);
        check_data_type(name, in[0]);
        std::vector<int64_t> s = shape_fn(in[0].shape, attrs);
        ANVIL_CHECK(!s.empty(), name, ": a rank-0 output is not supported (input ",
                    to_string(in[0]), ")");
        check_output_shape(name, s);
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
        std::memcpy(out.data(), in[0].data(), in[0].nbytes());
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
  int64_t axis = norm_axis("split", "axis", attrs.get_int("axis", 0), rank);
  int64_t dim = in[static_cast<size_t>(axis)];
  std::vector<int64_t> sizes;
  if (attrs.has("split")) {
    sizes = attrs.get_ints("split");
    int64_t total = 0;
    for (int64_t s : sizes) {
      ANVIL_CHECK(s > 0, "split: attribute 'split' ", shape_str(sizes),
                  " has a size that is not positive");
      total += s;
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

// ---- slice

// Per input dimension: the first index and the step of the selected elements, and the output
// shape.
struct SliceSpec {
  std::vector<int64_t> start, step, shape;
};

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
    n = std::max<int64_t>(n, 0);
    ANVIL_CHECK(n > 0, op, ": attributes select no element of axis ", d, " (size ", dim, ", start ",
                starts[k], ", end ", ends[k], ", step ", step, ")");
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
  s.mode = attrs.get_string("mode", "constant");
  ANVIL_CHECK(s.mode == "constant" || s.mode == "edge" || s.mode == "reflect", op,
              ": attribute 'mode' = '", s.mode, "' is not constant, edge or reflect");
  s.value = attrs.get_float("value", 0.0);
  for (size_t d = 0; d < rank; ++d) {
    int64_t b = pads[d], e = pads[d + rank];
    ANVIL_CHECK(b >= 0 && e >= 0, op, ": attribute 'pads' ", shape_str(pads),
                " has a negative entry for axis ", d, " (cropping is not supported)");
    ANVIL_CHECK(s.mode != "reflect" || (b < in[d] && e < in[d]), op, ": attribute 'pads' ",
                shape_str(pads), " pads axis ", d, " of size ", in[d], " by ", std::max(b, e),
                " in mode 'reflect', which needs pads smaller than the dimension");
    s.begin.push_back(b);
    s.end.push_back(e);
    s.shape.push_back(in[d] + b + e);
  }
  return s;
}

void register_pad() {
  const std::string name = "pad";
  register_transform(
      name,
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

// ---- gather

std::vector<int64_t> gather_shape(const std::vector<int64_t>& data,
                                  const std::vector<int64_t>& indices, const Attrs& attrs,
                                  int64_t* axis_out) {
  int64_t axis =
      norm_axis("gather", "axis", attrs.get_int("axis", 0), static_cast<int64_t>(data.size()));
  std::vector<int64_t> out(data.begin(), data.begin() + axis);
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  if (axis_out) *axis_out = axis;
  return out;
}

void register_gather() {
  const std::string name = "gather";
  register_transform(
      name,
      [name](const std::vector<TensorType>& in, const Attrs& attrs) {
        check_inputs(name, in, 2);
        check_data_type(name, in[0], "data");
        ANVIL_CHECK(in[1].dtype == DataType::Int32() || in[1].dtype == DataType::Int64(), name,
                    ": indices must be int32 or int64, not ", in[1].dtype);
        std::vector<int64_t> s = gather_shape(in[0].shape, in[1].shape, attrs, nullptr);
        ANVIL_CHECK(!s.empty(), name,
                    ": a scalar output is not supported (rank-1 data with "
                    "scalar indices); use indices of shape [1]");
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
            name)};
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
    out[i] = std::max(x, y);
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
    out.push_back(in[d] * reps[d]);
  }
  return out;
}

// expand (broadcast = true) and tile (modulo): each output coordinate reads one input coordinate
// computed per dimension.
void register_repeat(const std::string& name, ShapeFn shape_fn, bool broadcast) {
  register_transform(
      name,
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

void register_layout_transform() {
  const std::string name = "layout_transform";
  register_transform(
      name,
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
      });
}

// ---- resize (NCHW; H and W resized)

// The source coordinate of output index x along one axis, as the exact ratio (a*x + b) / d.
struct AxisMap {
  int64_t in, out;
  int64_t a, b, d;
};

struct ResizeSpec {
  std::string mode, coord, nearest;
  AxisMap h, w;
  std::vector<int64_t> shape;
};

// p / q == scale for small integers (denominator at most 1000, within float32 precision: ONNX
// scales are float32, so 0.6 arrives as 0.60000002).
std::pair<int64_t, int64_t> as_ratio(double scale) {
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
    if (out > 1) m.a = in - 1, m.b = 0, m.d = out - 1;  // x * (in - 1) / (out - 1)
  } else if (coord == "half_pixel" || out > 1) {
    m.a = 2 * q, m.b = q - p, m.d = 2 * p;  // (x + 0.5) / scale - 0.5
  }                                         // pytorch_half_pixel with one output: 0
  return m;
}

ResizeSpec resize_spec(const std::vector<int64_t>& in, const Attrs& attrs) {
  const std::string op = "resize";
  ResizeSpec s;
  s.mode = attrs.get_string("mode", "nearest");
  ANVIL_CHECK(s.mode == "nearest" || s.mode == "linear", op, ": attribute 'mode' = '", s.mode,
              "' is not nearest or linear");
  s.coord = attrs.get_string("coordinate_transformation_mode", "half_pixel");
  ANVIL_CHECK(s.coord == "half_pixel" || s.coord == "align_corners" || s.coord == "asymmetric" ||
                  s.coord == "pytorch_half_pixel",
              op, ": attribute 'coordinate_transformation_mode' = '", s.coord,
              "' is not half_pixel, align_corners, asymmetric or pytorch_half_pixel");
  s.nearest = attrs.get_string("nearest_mode", "round_prefer_floor");
  ANVIL_CHECK(s.nearest == "round_prefer_floor" || s.nearest == "round_prefer_ceil" ||
                  s.nearest == "floor" || s.nearest == "ceil",
              op, ": attribute 'nearest_mode' = '", s.nearest,
              "' is not round_prefer_floor, round_prefer_ceil, floor or ceil");
  ANVIL_CHECK(in.size() == 4, op, ": input ", shape_str(in), " is not NCHW (rank 4)");
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
  s.h = axis_map(s.coord, in[2], out_h, ph, qh);
  s.w = axis_map(s.coord, in[3], out_w, pw, qw);
  for (const AxisMap& m : {s.h, s.w}) {
    ANVIL_CHECK(4 * (m.a * m.out + std::abs(m.b) + m.d) < INT32_MAX, op, ": input ", shape_str(in),
                " and output sizes are too large");
  }
  s.shape = {in[0], in[1], out_h, out_w};
  return s;
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

void register_resize() {
  const std::string name = "resize";
  register_transform(
      name,
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
        return std::vector<te::Tensor>{te::compute(
            to_exprs(s.shape),
            [&](Var n, Var c, Var h, Var w) {
              if (s.mode == "nearest") {
                return x(n, c, nearest_index(s.h, s.nearest, h), nearest_index(s.w, s.nearest, w));
              }
              // Linear: the two neighbours floor(v) and floor(v) + 1, clamped (edge), weighted
              // by the fraction of v.
              auto neighbours = [](const AxisMap& m, Expr o) {
                Expr num = o * static_cast<int>(m.a) + static_cast<int>(m.b);
                Expr i0 = floordiv(num, static_cast<int>(m.d));
                Expr frac = cast(DataType::Float32(), num - i0 * static_cast<int>(m.d)) /
                            static_cast<float>(m.d);
                return std::tuple<Expr, Expr, Expr>{clamp_index(i0, m.in),
                                                    clamp_index(i0 + 1, m.in), frac};
              };
              auto [h0, h1, fh] = neighbours(s.h, h);
              auto [w0, w1, fw] = neighbours(s.w, w);
              Expr top = x(n, c, h0, w0) * (1.0f - fw) + x(n, c, h0, w1) * fw;
              Expr bottom = x(n, c, h1, w0) * (1.0f - fw) + x(n, c, h1, w1) * fw;
              return top * (1.0f - fh) + bottom * fh;
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
            return m.out == 1 ? 0.0
                              : xd * static_cast<double>(m.in - 1) / static_cast<double>(m.out - 1);
          }
          if (s.coord == "pytorch_half_pixel" && m.out == 1) return 0.0;
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
              if (s.mode == "nearest") {
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
      });
}

}  // namespace

void register_transform_ops() {
  register_reshape_like("reshape", reshape_shape);
  register_reshape_like("flatten", flatten_shape);
  register_reshape_like("squeeze", squeeze_shape);
  register_reshape_like("unsqueeze", unsqueeze_shape);
  register_transpose();
  register_concat();
  register_split();
  register_slice();
  register_pad();
  register_gather();
  register_repeat("expand", expand_shape, true);
  register_repeat("tile", tile_shape, false);
  register_layout_transform();
  register_resize();
}

}  // namespace anvil::ops
