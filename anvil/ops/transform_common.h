// Shared by the layout and data-movement operators (transform.cc, resize_layout.cc): checks that
// name the op and attribute, index helpers for compute bodies, host helpers for the references,
// and the registration of an injective operator.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "anvil/ir/op.h"
#include "anvil/ops/host_value.h"
#include "anvil/ops/op.h"
#include "anvil/ops/schedule_util.h"
#include "anvil/support/error.h"

namespace anvil::ops::transform_detail {

using namespace ir;

// ---- shared checks

inline std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

inline int64_t numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// An axis in [-rank, rank) made non-negative; throws naming the op and the attribute.
inline int64_t norm_axis(const std::string& op, const std::string& attr, int64_t axis,
                         int64_t rank) {
  ANVIL_CHECK(axis >= -rank && axis < rank, op, ": attribute '", attr, "' = ", axis,
              " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

inline void check_inputs(const std::string& op, const std::vector<TensorType>& in, size_t n) {
  ANVIL_CHECK(in.size() == n, op, ": expects ", n, " input", n == 1 ? "" : "s", ", got ",
              in.size());
}

// Data movement takes every element type of the references (it only copies elements).
inline void check_data_type(const std::string& op, const TensorType& t,
                            const char* what = "input") {
  ANVIL_CHECK(host::reference_dtype(t.dtype), op, ": ", what,
              " must be float16/32/64, int8-64, uint8-64 or bool, not ", t.dtype);
}

// With `allow_empty`, a 0 dimension (an empty tensor: the references handle it, compiled code
// refuses it, see register_transform).
inline void check_output_shape(const std::string& op, const std::vector<int64_t>& s,
                               bool allow_empty = false) {
  for (int64_t d : s) {
    ANVIL_CHECK(d >= (allow_empty ? 0 : 1) && d <= INT32_MAX, op, ": output shape ", shape_str(s),
                " has an empty or too large dimension");
  }
}

inline std::vector<TensorType> types_of(const std::vector<te::Tensor>& in) {
  std::vector<TensorType> out;
  for (const te::Tensor& t : in) out.push_back({shape_of(t), t->dtype});
  return out;
}

inline std::vector<Expr> exprs(const std::vector<Var>& v) {
  return std::vector<Expr>(v.begin(), v.end());
}

// Index e clamped into [0, extent).
inline Expr clamp_index(Expr e, int64_t extent) {
  return min(max(e, 0), static_cast<int>(extent - 1));
}

// The run-time check of an index-taking op: every element of `indices` lies in [-extent, extent)
// (ONNX counts negative indices from the end). Checked once over the indices before the op runs;
// the op still clamps what it reads, for the GPU, where kernels cannot report errors.
inline te::Check index_check(const std::string& op, const te::Tensor& indices, int64_t extent,
                             int64_t axis) {
  DataType it = indices->dtype;
  return te::check_all(
      indices->shape,
      [&](const std::vector<Var>& i) {
        Expr k = indices(std::vector<Expr>(i.begin(), i.end()));
        return k >= make_const(it, -extent) && k < make_const(it, extent);
      },
      str(op, ": an index is out of range for axis ", axis, " of size ", extent,
          " (valid: ", -extent, " to ", extent - 1, ")"));
}

// The run-time check of gather_nd's and scatter_nd's index tuples (the last axis of `indices`):
// element j of a tuple indexes data's dimension `first + j`.
inline te::Check nd_index_check(const std::string& op, const te::Tensor& indices,
                                const std::vector<int64_t>& dshape, size_t first) {
  std::vector<int64_t> ishape = shape_of(indices);
  int64_t k = ishape.back();
  std::string ranges;
  for (int64_t j = 0; j < k; ++j) {
    ranges += (j ? ", " : "") + std::to_string(dshape[first + static_cast<size_t>(j)]);
  }
  DataType it = indices->dtype;
  return te::check_all(
      indices->shape,
      [&](const std::vector<Var>& i) {
        Expr n = make_const(it, dshape[first + static_cast<size_t>(k - 1)]);
        for (int64_t j = k - 1; j-- > 0;) {
          n = select(i.back() == static_cast<int>(j),
                     make_const(it, dshape[first + static_cast<size_t>(j)]), n);
        }
        Expr v = indices(exprs(i));
        return v >= make_zero(it) - n && v < n;
      },
      str(op, ": an index is out of range for the dimensions it indexes (sizes ", ranges,
          "; valid: -size to size - 1)"));
}

// Row-major coordinates of flat offset `flat` in `shape`.
inline std::vector<Expr> unflatten(Expr flat, const std::vector<int64_t>& shape) {
  std::vector<Expr> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    int s = static_cast<int>(shape[d]);
    idx[d] = d == 0 ? flat : floormod(flat, s);
    flat = floordiv(flat, s);
  }
  return idx;
}

inline Expr flatten_index(const std::vector<Var>& idx, const std::vector<int64_t>& shape) {
  Expr flat = 0;
  for (size_t d = 0; d < shape.size(); ++d) flat = flat * static_cast<int>(shape[d]) + idx[d];
  return flat;
}

// ---- host helpers for the references (naive loops over the NDArrays' bytes)

inline std::vector<int64_t> strides_of(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * shape[d];
  return s;
}

inline size_t elem_bytes(const runtime::NDArray& a) {
  return static_cast<size_t>(a.dtype().bits / 8);
}

inline runtime::NDArray host_empty(const std::vector<int64_t>& shape, DLDataType t) {
  return runtime::NDArray::empty(shape, t, true);
}

inline void copy_elem(const runtime::NDArray& src, int64_t si, const runtime::NDArray& dst,
                      int64_t di) {
  size_t b = elem_bytes(src);
  std::memcpy(static_cast<char*>(dst.data()) + static_cast<size_t>(di) * b,
              static_cast<const char*>(src.data()) + static_cast<size_t>(si) * b, b);
}

// Element i set to v in the tensor's own type (data movement takes every reference type).
inline void set_elem(const runtime::NDArray& dst, int64_t i, double v) {
  host::write_f64(dst, i, v);
}

inline int64_t get_int_elem(const runtime::NDArray& a, int64_t i) {
  return host::read_i64(a, i);
}

// Calls fn(coord) for every coordinate of `shape` in row-major order.
template <typename F>
inline void for_each_coord(const std::vector<int64_t>& shape, F&& fn) {
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

inline int64_t offset_of(const std::vector<int64_t>& coord, const std::vector<int64_t>& strides) {
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
using TransformScheduleFn =
    std::function<void(te::Schedule&, const std::vector<te::Tensor>&, const Target&)>;

// Empty tensors (a 0 dimension) are for the references only: an error naming the op and the
// tensor when an input or output is one.
inline void check_not_empty(const std::string& name, const std::vector<te::Tensor>& in,
                            const std::vector<TensorType>& outs) {
  std::vector<TensorType> types = types_of(in);
  types.insert(types.end(), outs.begin(), outs.end());
  for (const TensorType& t : types) {
    ANVIL_CHECK(numel(t.shape) > 0, name, ": ", to_string(t),
                " is an empty tensor, which compiled code does not support (the reference "
                "interpreter does)");
  }
}

// `attrs`: the op's attribute schema (OpDef::attrs). `schedule`: the op's x86 schedule when the
// injective default does not fit (resize).
inline void register_transform(const std::string& name, std::vector<AttrSpec> attrs, InferFn infer,
                               ComputeFn compute, RefFn ref, TransformScheduleFn schedule = {}) {
  OpDef def;
  def.name = name;
  def.pattern = Pattern::kInjective;
  def.attrs = std::move(attrs);
  def.flops = flops_none();  // data movement
  def.compute = [name, infer, compute](const std::vector<te::Tensor>& in, const Attrs& attrs) {
    check_not_empty(name, in, infer(types_of(in), attrs));
    return compute(in, attrs);
  };
  def.infer = std::move(infer);
  def.reference = std::move(ref);
  def.schedule_x86 = [schedule](te::Schedule& s, const std::vector<te::Tensor>& outs,
                                const Target& t, const Config&) {
    if (schedule) return schedule(s, outs, t);
    for (const te::Tensor& o : outs) schedule_injective_x86(s, o, t);
  };
  def.space = [](const std::vector<TensorType>&, const Attrs&, const Target&) {
    return ConfigSpace{};
  };
  register_op(std::move(def));
}

inline std::vector<int64_t> host_shapes(const runtime::NDArray& a) {
  return a.shape();
}

// Defined in resize_layout.cc.
void register_layout_transform();
void register_resize();
// Defined in slice_pad.cc. Per input dimension: the first index and the step of the elements a
// slice selects, and the output shape.
struct SliceSpec {
  std::vector<int64_t> start, step, shape;
};
SliceSpec slice_spec(const std::vector<int64_t>& in, const Attrs& attrs);
void register_slice();
void register_pad();
// Defined in select_channels.cc.
void register_select_channels();

}  // namespace anvil::ops::transform_detail
