// Operators whose values depend on element indices: gather_elements (ONNX GatherElements),
// gather_nd (GatherND) and trilu (Trilu). All are injective: each output element reads one input
// element. The gathers check their indices at run time (index_check, nd_index_check).
#include "anvil/ops/families.h"
#include "anvil/ops/transform_common.h"

namespace anvil::ops {

using namespace transform_detail;

namespace {

// ---- gather_elements(data, indices; axis): out[i] = data[i with i[axis] = indices[i]]

void check_gather_elements(const std::string& name, const std::vector<TensorType>& in,
                           int64_t axis) {
  ANVIL_CHECK(in[1].dtype == DataType::Int32() || in[1].dtype == DataType::Int64(), name,
              ": indices must be int32 or int64, not ", in[1].dtype);
  ANVIL_CHECK(in[0].shape.size() == in[1].shape.size(), name, ": indices ", shape_str(in[1].shape),
              " must have the rank of data ", shape_str(in[0].shape));
  for (size_t d = 0; d < in[0].shape.size(); ++d) {
    if (static_cast<int64_t>(d) == axis) continue;
    ANVIL_CHECK(in[1].shape[d] <= in[0].shape[d], name, ": indices ", shape_str(in[1].shape),
                " exceed data ", shape_str(in[0].shape), " in dimension ", d,
                ", which is not the axis");
  }
}

void register_gather_elements() {
  const std::string name = "gather_elements";
  auto axis_of = [name](const Attrs& attrs, size_t rank) {
    return norm_axis(name, "axis", attrs.get_int("axis"), static_cast<int64_t>(rank));
  };
  register_transform(
      name, {{"axis", AttrType::kInt, int64_t{0}, {}, "the axis the indices select along"}},
      [name, axis_of](const std::vector<TensorType>& in, const Attrs& attrs) {
        check_inputs(name, in, 2);
        check_data_type(name, in[0], "data");
        check_gather_elements(name, in, axis_of(attrs, in[0].shape.size()));
        return std::vector<TensorType>{{in[1].shape, in[0].dtype}};
      },
      [name, axis_of](const std::vector<te::Tensor>& in, const Attrs& attrs) {
        te::Tensor data = in[0], indices = in[1];
        std::vector<int64_t> dshape = shape_of(data);
        size_t axis = static_cast<size_t>(axis_of(attrs, dshape.size()));
        int64_t n = dshape[axis];
        return std::vector<te::Tensor>{
            te::compute(to_exprs(shape_of(indices)),
                        [&](const std::vector<Var>& i) {
                          DataType it = indices->dtype;
                          Expr k = indices(exprs(i));
                          k = select(k < make_zero(it), k + make_const(it, n), k);
                          // Out-of-range indices (an error in ONNX) are clamped, never read outside
                          // data.
                          std::vector<Expr> didx = exprs(i);
                          didx[axis] = cast(DataType::Int32(), clamp_index(k, n));
                          return data(didx);
                        },
                        name, {index_check(name, indices, n, static_cast<int64_t>(axis))})};
      },
      [name, axis_of](const std::vector<runtime::NDArray>& in, const Attrs& attrs) {
        std::vector<int64_t> dshape = in[0].shape(), ishape = in[1].shape();
        size_t axis = static_cast<size_t>(axis_of(attrs, dshape.size()));
        int64_t n = dshape[axis];
        std::vector<int64_t> dstrides = strides_of(dshape);
        runtime::NDArray out = host_empty(ishape, in[0].dtype());
        int64_t j = 0;
        for_each_coord(ishape, [&](const std::vector<int64_t>& coord) {
          int64_t k = get_int_elem(in[1], j);
          ANVIL_CHECK(k >= -n && k < n, name, ": index ", k, " is out of range for axis ", axis,
                      " of size ", n);
          std::vector<int64_t> src = coord;
          src[axis] = k < 0 ? k + n : k;
          copy_elem(in[0], offset_of(src, dstrides), out, j++);
        });
        return std::vector<runtime::NDArray>{out};
      });
}

// ---- gather_nd(data, indices; batch_dims): indices [B..., M..., k] name the first k
// coordinates (after the b batch dimensions) of slices of data [B..., D...]; the output is
// [B..., M..., D[b + k:]...].

std::vector<int64_t> gather_nd_shape(const std::string& name, const std::vector<int64_t>& d,
                                     const std::vector<int64_t>& i, int64_t b) {
  ANVIL_CHECK(b >= 0 && b < static_cast<int64_t>(std::min(d.size(), i.size())), name,
              ": attribute 'batch_dims' = ", b, " must be below the ranks of data ", shape_str(d),
              " and indices ", shape_str(i));
  for (size_t x = 0; x < static_cast<size_t>(b); ++x) {
    ANVIL_CHECK(d[x] == i[x], name, ": data ", shape_str(d), " and indices ", shape_str(i),
                " differ in batch dimension ", x);
  }
  int64_t k = i.back();
  ANVIL_CHECK(k >= 1 && b + k <= static_cast<int64_t>(d.size()), name,
              ": the last dimension of indices ", shape_str(i), " must be 1 to ",
              static_cast<int64_t>(d.size()) - b, " (the rank of data ", shape_str(d), " after ", b,
              " batch dimensions)");
  std::vector<int64_t> out(i.begin(), i.end() - 1);
  out.insert(out.end(), d.begin() + b + k, d.end());
  return out;
}

void register_gather_nd() {
  const std::string name = "gather_nd";
  register_transform(
      name, {{"batch_dims", AttrType::kInt, int64_t{0}, {}, "leading dimensions shared"}},
      [name](const std::vector<TensorType>& in, const Attrs& attrs) {
        check_inputs(name, in, 2);
        check_data_type(name, in[0], "data");
        ANVIL_CHECK(in[1].dtype == DataType::Int32() || in[1].dtype == DataType::Int64(), name,
                    ": indices must be int32 or int64, not ", in[1].dtype);
        std::vector<int64_t> s =
            gather_nd_shape(name, in[0].shape, in[1].shape, attrs.get_int("batch_dims"));
        check_output_shape(name, s);
        return std::vector<TensorType>{{s, in[0].dtype}};
      },
      [name](const std::vector<te::Tensor>& in, const Attrs& attrs) {
        te::Tensor data = in[0], indices = in[1];
        std::vector<int64_t> dshape = shape_of(data), ishape = shape_of(indices);
        int64_t b = attrs.get_int("batch_dims");
        std::vector<int64_t> oshape = gather_nd_shape(name, dshape, ishape, b);
        size_t q = ishape.size() - 1, k = static_cast<size_t>(ishape.back());
        size_t bb = static_cast<size_t>(b);
        return std::vector<te::Tensor>{te::compute(
            to_exprs(oshape),
            [&](const std::vector<Var>& o) {
              DataType it = indices->dtype;
              std::vector<Expr> at(o.begin(), o.begin() + static_cast<ptrdiff_t>(bb));
              for (size_t j = 0; j < k; ++j) {
                std::vector<Expr> tuple(o.begin(), o.begin() + static_cast<ptrdiff_t>(q));
                tuple.push_back(static_cast<int>(j));
                Expr v = indices(tuple);
                int64_t n = dshape[bb + j];
                v = select(v < make_zero(it), v + make_const(it, n), v);
                at.push_back(cast(DataType::Int32(), clamp_index(v, n)));
              }
              at.insert(at.end(), o.begin() + static_cast<ptrdiff_t>(q), o.end());
              return data(at);
            },
            name, {nd_index_check(name, indices, dshape, bb)})};
      },
      [name](const std::vector<runtime::NDArray>& in, const Attrs& attrs) {
        std::vector<int64_t> dshape = in[0].shape(), ishape = in[1].shape();
        int64_t b = attrs.get_int("batch_dims");
        std::vector<int64_t> oshape = gather_nd_shape(name, dshape, ishape, b);
        size_t q = ishape.size() - 1, k = static_cast<size_t>(ishape.back());
        size_t bb = static_cast<size_t>(b);
        std::vector<int64_t> dstrides = strides_of(dshape);
        runtime::NDArray out = host_empty(oshape, in[0].dtype());
        int64_t slice = 1;
        for (size_t d = bb + k; d < dshape.size(); ++d) slice *= dshape[d];
        int64_t tuples = numel(ishape) / static_cast<int64_t>(k), per_batch = 1;
        for (size_t d = bb; d < q; ++d) per_batch *= ishape[d];
        for (int64_t t = 0; t < tuples; ++t) {
          int64_t base = 0, batch = t / per_batch;
          for (size_t d = bb; d-- > 0;) {  // the batch coordinates of tuple t
            base += (batch % dshape[d]) * dstrides[d];
            batch /= dshape[d];
          }
          for (size_t j = 0; j < k; ++j) {
            int64_t v = get_int_elem(in[1], t * static_cast<int64_t>(k) + static_cast<int64_t>(j));
            int64_t n = dshape[bb + j];
            ANVIL_CHECK(v >= -n && v < n, name, ": index ", v, " is out of range for axis ", bb + j,
                        " of size ", n);
            base += (v < 0 ? v + n : v) * dstrides[bb + j];
          }
          for (int64_t s = 0; s < slice; ++s) copy_elem(in[0], base + s, out, t * slice + s);
        }
        return std::vector<runtime::NDArray>{out};
      });
}

// ---- trilu(x; upper, k): the upper (j - i >= k) or lower (j - i <= k) triangle of the last two
// dimensions, zeros elsewhere.

bool trilu_keeps(bool upper, int64_t k, int64_t row, int64_t col) {
  return upper ? col - row >= k : col - row <= k;
}

void register_trilu() {
  const std::string name = "trilu";
  register_transform(
      name,
      {{"upper", AttrType::kInt, int64_t{1}, {one_of({0, 1})}, "1: the upper triangle; 0: lower"},
       {"k", AttrType::kInt, int64_t{0}, {}, "the diagonal kept last (0: the main one)"}},
      [name](const std::vector<TensorType>& in, const Attrs&) {
        check_inputs(name, in, 1);
        check_data_type(name, in[0]);
        ANVIL_CHECK(in[0].shape.size() >= 2, name, ": input ", to_string(in[0]),
                    " must have rank 2 or more");
        return std::vector<TensorType>{in[0]};
      },
      [name](const std::vector<te::Tensor>& in, const Attrs& attrs) {
        te::Tensor x = in[0];
        std::vector<int64_t> shape = shape_of(x);
        bool upper = attrs.get_int("upper") != 0;
        // Beyond the matrix's extent every k keeps all or nothing: clamped to fit an int32.
        int64_t span = shape[shape.size() - 2] + shape.back();
        int64_t k = std::clamp(attrs.get_int("k"), -span, span);
        return std::vector<te::Tensor>{te::compute(
            to_exprs(shape),
            [&](const std::vector<Var>& i) {
              Expr row = i[i.size() - 2], col = i.back();
              Expr keep = upper ? col - row >= Expr(static_cast<int32_t>(k))
                                : col - row <= Expr(static_cast<int32_t>(k));
              return select(keep, x(exprs(i)), make_zero(x->dtype));
            },
            name)};
      },
      [](const std::vector<runtime::NDArray>& in, const Attrs& attrs) {
        std::vector<int64_t> shape = in[0].shape();
        bool upper = attrs.get_int("upper") != 0;
        int64_t k = attrs.get_int("k");
        runtime::NDArray out = host_empty(shape, in[0].dtype());
        std::memset(out.data(), 0, out.nbytes());
        int64_t j = 0;
        for_each_coord(shape, [&](const std::vector<int64_t>& c) {
          if (trilu_keeps(upper, k, c[c.size() - 2], c.back())) copy_elem(in[0], j, out, j);
          ++j;
        });
        return std::vector<runtime::NDArray>{out};
      });
}

}  // namespace

void register_indexing_ops() {
  register_gather_elements();
  register_gather_nd();
  register_trilu();
}

}  // namespace anvil::ops
