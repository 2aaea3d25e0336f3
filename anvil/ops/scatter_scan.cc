// Operators computed as a reduction along one axis of their output: cumsum (ONNX CumSum), topk
// (TopK), scatter_elements (ScatterElements and the older Scatter) and scatter_nd (ScatterND).
//
// A scatter writes updates[j] to the output position that indices[j] names. As a tensor
// expression it is the other way round: each output element looks for the updates aimed at it
// (a reduction over the update entries: the last one for reduction 'none', their sum or product
// for 'add' and 'mul'). That is |output| x |entries| comparisons, which suits the small scatters
// models build (masks, positions) but not a large scatter into a large tensor; an in-place
// scatter kernel would need a statement-level compute, which the library does not have yet.
// Cumsum likewise sums the axis prefix for each element (length^2 / 2 additions per row).
#include <numeric>

#include "anvil/ops/families.h"
#include "anvil/ops/schedule_util.h"
#include "anvil/ops/transform_common.h"

namespace anvil::ops {

using namespace transform_detail;

namespace {

void register_reduction_op(OpDef def) {
  def.pattern = Pattern::kOpaque;
  def.schedule_x86 = [](te::Schedule& s, const std::vector<te::Tensor>& outs, const Target& target,
                        const Config&) { schedule_reductions_x86(s, outs, target); };
  def.space = [](const std::vector<TensorType>&, const Attrs&, const Target&) {
    return ConfigSpace{};
  };
  ComputeFn compute = def.compute;
  std::string name = def.name;
  auto infer = def.infer;
  def.compute = [name, infer, compute](const std::vector<te::Tensor>& in, const Attrs& attrs) {
    std::vector<TensorType> outs = infer(types_of(in), attrs);
    check_not_empty(name, in, outs);
    for (const TensorType& t : types_of(in)) host::check_compiled_dtype(name, t.dtype, "a tensor");
    for (const TensorType& t : outs) host::check_compiled_dtype(name, t.dtype, "a tensor");
    return compute(in, attrs);
  };
  register_op(std::move(def));
}

void check_indices_type(const std::string& op, const TensorType& t) {
  ANVIL_CHECK(t.dtype == DataType::Int32() || t.dtype == DataType::Int64(), op,
              ": indices must be int32 or int64, not ", t.dtype);
}

// data, indices and updates of a scatter, by type.
void check_scatter_inputs(const std::string& op, const std::vector<TensorType>& in) {
  check_inputs(op, in, 3);
  check_data_type(op, in[0], "data");
  check_indices_type(op, in[1]);
  ANVIL_CHECK(in[2].dtype == in[0].dtype, op, ": updates are ", in[2].dtype, ", data ",
              in[0].dtype);
}

// An index made non-negative after the range check.
int64_t wrap_index(const std::string& op, int64_t k, int64_t n, size_t axis) {
  ANVIL_CHECK(k >= -n && k < n, op, ": index ", k, " is out of range for axis ", axis, " of size ",
              n);
  return k < 0 ? k + n : k;
}

// The one input of an op along an axis (cumsum, topk): numbers, at least one dimension.
void check_along_axis_input(const std::string& op, const std::vector<TensorType>& in) {
  check_inputs(op, in, 1);
  ANVIL_CHECK(in[0].dtype.is_float() || in[0].dtype.is_int_or_uint(), op,
              ": input must be a number type, not ", in[0].dtype);
  ANVIL_CHECK(!in[0].shape.empty(), op, ": input must have at least one dimension");
}

// ---- cumsum(x; axis, exclusive, reverse)

void register_cumsum() {
  OpDef def;
  def.name = "cumsum";
  def.attrs = {{"axis", AttrType::kInt, int64_t{0}, {}, "the axis summed along"},
               {"exclusive", AttrType::kInt, int64_t{0}, {}, "1: each sum leaves out its element"},
               {"reverse", AttrType::kInt, int64_t{0}, {}, "1: sums run from the end"}};
  def.flops = flops_per_input();
  def.infer = [](const std::vector<TensorType>& in, const Attrs& attrs) {
    check_along_axis_input("cumsum", in);
    norm_axis("cumsum", "axis", attrs.get_int("axis"), static_cast<int64_t>(in[0].shape.size()));
    return std::vector<TensorType>{in[0]};
  };
  def.compute = [](const std::vector<te::Tensor>& in, const Attrs& attrs) {
    te::Tensor x = in[0];
    std::vector<int64_t> shape = shape_of(x);
    size_t a = static_cast<size_t>(
        norm_axis("cumsum", "axis", attrs.get_int("axis"), static_cast<int64_t>(shape.size())));
    bool exclusive = attrs.get_int("exclusive") != 0, reverse = attrs.get_int("reverse") != 0;
    IterVar r = te::reduce_axis(static_cast<int>(shape[a]), "r");
    return std::vector<te::Tensor>{te::compute(
        to_exprs(shape),
        [&](const std::vector<Var>& i) {
          std::vector<Expr> idx = exprs(i);
          idx[a] = r->var;
          Expr k = r->var, at = i[a];
          Expr cond = reverse ? (exclusive ? k > at : k >= at) : (exclusive ? k < at : k <= at);
          return te::sum(x(idx), {r}, cond);
        },
        "cumsum")};
  };
  def.reference = [](const std::vector<runtime::NDArray>& in, const Attrs& attrs) {
    const runtime::NDArray& x = in[0];
    std::vector<int64_t> shape = x.shape();
    int64_t a =
        norm_axis("cumsum", "axis", attrs.get_int("axis"), static_cast<int64_t>(shape.size()));
    bool exclusive = attrs.get_int("exclusive") != 0, reverse = attrs.get_int("reverse") != 0;
    int64_t n = shape[static_cast<size_t>(a)];
    int64_t inner = 1;
    for (size_t d = static_cast<size_t>(a) + 1; d < shape.size(); ++d) inner *= shape[d];
    int64_t outer = numel(shape) / std::max<int64_t>(n * inner, 1);
    runtime::NDArray out = host_empty(shape, x.dtype());
    bool is_float = x.dtype().code == kDLFloat;
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t q = 0; q < inner; ++q) {
        double fsum = 0;
        int64_t isum = 0;  // integers wrap as the compiled code's do
        for (int64_t s = 0; s < n; ++s) {
          int64_t k = reverse ? n - 1 - s : s;
          int64_t at = (o * n + k) * inner + q;
          if (exclusive) {
            is_float ? host::write_f64(out, at, fsum) : host::write_i64(out, at, isum);
          }
          if (is_float) {
            fsum += host::read_f64(x, at);
          } else {
            isum = static_cast<int64_t>(static_cast<uint64_t>(isum) +
                                        static_cast<uint64_t>(host::read_i64(x, at)));
          }
          if (!exclusive) {
            is_float ? host::write_f64(out, at, fsum) : host::write_i64(out, at, isum);
          }
        }
      }
    }
    return std::vector<runtime::NDArray>{out};
  };
  register_reduction_op(std::move(def));
}

// ---- topk(x; k, axis, largest): the k largest (or smallest) elements along the axis, sorted,
// and their indices (int64); equal values in index order, as ONNX specifies. Each element's rank
// is the count of elements that precede it (n^2 / element row), then output j takes the element
// of rank j: fine for class scores, slow for a top-k over a vocabulary of tens of thousands.

struct TopK {
  size_t axis;
  int64_t k;
  bool largest;
};

TopK topk_of(const std::vector<int64_t>& shape, const Attrs& attrs) {
  TopK t;
  t.axis = static_cast<size_t>(
      norm_axis("topk", "axis", attrs.get_int("axis"), static_cast<int64_t>(shape.size())));
  t.k = attrs.get_int("k");
  ANVIL_CHECK(t.k >= 1 && t.k <= shape[t.axis], "topk: attribute 'k' = ", t.k,
              " must be 1 to the axis's size ", shape[t.axis]);
  t.largest = attrs.get_int("largest") != 0;
  return t;
}

void register_topk() {
  OpDef def;
  def.name = "topk";
  def.attrs = {{"k", AttrType::kInt, std::nullopt, {}, "how many elements"},
               {"axis", AttrType::kInt, int64_t{-1}, {}, "the axis searched"},
               {"largest", AttrType::kInt, int64_t{1}, {}, "1: the largest, 0: the smallest"}};
  def.flops = flops_none();
  def.infer = [](const std::vector<TensorType>& in, const Attrs& attrs) {
    check_along_axis_input("topk", in);
    TopK t = topk_of(in[0].shape, attrs);
    std::vector<int64_t> shape = in[0].shape;
    shape[t.axis] = t.k;
    return std::vector<TensorType>{{shape, in[0].dtype}, {shape, DataType::Int64()}};
  };
  def.compute = [](const std::vector<te::Tensor>& in, const Attrs& attrs) {
    te::Tensor x = in[0];
    std::vector<int64_t> shape = shape_of(x);
    TopK t = topk_of(shape, attrs);
    size_t a = t.axis;
    int n = static_cast<int>(shape[a]);
    IterVar j = te::reduce_axis(n, "j");
    te::Tensor rank = te::compute(
        to_exprs(shape),
        [&](const std::vector<Var>& i) {
          std::vector<Expr> other = exprs(i);
          other[a] = j->var;
          Expr xj = x(other), xi = x(exprs(i));
          Expr before = t.largest ? xj > xi : xj < xi;
          before = before || (xj == xi && Expr(j->var) < i[a]);
          return te::sum(select(before, 1, 0), {j});
        },
        "topk_rank");
    std::vector<int64_t> oshape = shape;
    oshape[a] = t.k;
    IterVar e = te::reduce_axis(n, "e");
    te::Tensor indices = te::compute(
        to_exprs(oshape),
        [&](const std::vector<Var>& o) {
          std::vector<Expr> at = exprs(o);
          at[a] = e->var;
          return te::max(select(rank(at) == o[a], cast(DataType::Int64(), e->var),
                                make_const(DataType::Int64(), 0)),
                         {e});
        },
        "topk_indices");
    te::Tensor values = te::compute(
        to_exprs(oshape),
        [&](const std::vector<Var>& o) {
          std::vector<Expr> at = exprs(o);
          at[a] = cast(DataType::Int32(), indices(exprs(o)));
          return x(at);
        },
        "topk_values");
    return std::vector<te::Tensor>{values, indices};
  };
  def.reference = [](const std::vector<runtime::NDArray>& in, const Attrs& attrs) {
    const runtime::NDArray& x = in[0];
    std::vector<int64_t> shape = x.shape();
    TopK t = topk_of(shape, attrs);
    int64_t n = shape[t.axis], inner = 1;
    for (size_t d = t.axis + 1; d < shape.size(); ++d) inner *= shape[d];
    int64_t outer = numel(shape) / (n * inner);
    std::vector<int64_t> oshape = shape;
    oshape[t.axis] = t.k;
    runtime::NDArray values = host_empty(oshape, x.dtype());
    runtime::NDArray indices = host_empty(oshape, to_dlpack(DataType::Int64()));
    bool is_float = x.dtype().code == kDLFloat;
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t q = 0; q < inner; ++q) {
        auto at = [&](int64_t i) { return (o * n + i) * inner + q; };
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int64_t u, int64_t v) {
          if (is_float) {
            double a = host::read_f64(x, at(u)), b = host::read_f64(x, at(v));
            return t.largest ? a > b : a < b;
          }
          int64_t a = host::read_i64(x, at(u)), b = host::read_i64(x, at(v));
          return t.largest ? a > b : a < b;
        });
        for (int64_t r = 0; r < t.k; ++r) {
          int64_t to = (o * t.k + r) * inner + q;
          copy_elem(x, at(order[static_cast<size_t>(r)]), values, to);
          indices.data_as<int64_t>()[to] = order[static_cast<size_t>(r)];
        }
      }
    }
    return std::vector<runtime::NDArray>{values, indices};
  };
  register_reduction_op(std::move(def));
}

// ---- the scatters' combination of updates: 'none' (the last update wins), 'add', 'mul'

enum class Combine { kNone, kAdd, kMul };

Combine combine_of(const std::string& op, const Attrs& attrs) {
  const std::string& r = attrs.get_string("reduction");
  if (r == "none") return Combine::kNone;
  if (r == "add") return Combine::kAdd;
  ANVIL_CHECK(r == "mul", op, ": attribute 'reduction' = '", r,
              "' is not supported (none, add, mul)");
  return Combine::kMul;
}

AttrSpec reduction_attr() {
  return {"reduction", AttrType::kString, std::string("none"), {}, "none, add or mul"};
}

// The output of a scatter. For each element p of data, the update entries e (coordinates over
// the reduction axes `r`) aimed at it are those where hit(p, e) holds; value(p, e) is that
// entry's update for p. Loads in hit and value must stay in bounds for every p and e.
using EntryFn = std::function<Expr(const std::vector<Var>& p, const std::vector<Expr>& e)>;

te::Tensor scatter_compute(const std::string& name, Combine combine, const te::Tensor& data,
                           const std::vector<IterVar>& r, const EntryFn& hit, const EntryFn& value,
                           te::Check check) {
  std::vector<Expr> shape = to_exprs(shape_of(data));
  std::vector<Expr> rvars;
  std::vector<int64_t> extents;
  for (const IterVar& iv : r) {
    rvars.push_back(iv->var);
    extents.push_back(*as_const_int(iv->dom.extent));
  }
  DataType t = data->dtype;
  if (combine == Combine::kNone) {
    // The last entry aimed at each element (-1: none), then its update, or the data.
    Expr flat = rvars[0];
    for (size_t d = 1; d < r.size(); ++d) flat = flat * static_cast<int>(extents[d]) + rvars[d];
    te::Tensor last = te::compute(
        shape,
        [&](const std::vector<Var>& p) {
          return te::max(select(hit(p, rvars), flat, make_const(flat.type(), -1)), r);
        },
        name + "_last");
    return te::compute(shape,
                       [&](const std::vector<Var>& p) {
                         Expr k = last(exprs(p));
                         return select(k >= 0, value(p, unflatten(max(k, 0), extents)),
                                       data(exprs(p)));
                       },
                       name, {std::move(check)});
  }
  te::Tensor part = te::compute(
      shape,
      [&](const std::vector<Var>& p) {
        Var a("a", t), b("b", t);
        ir::CommReducer reducer = combine == Combine::kAdd
                                      ? ir::CommReducer::sum(t)
                                      : ir::CommReducer::make(a, b, a * b, make_const(t, 1.0));
        return te::reduce(reducer, value(p, rvars), r, hit(p, rvars));
      },
      name + "_updates");
  return te::compute(shape,
                     [&](const std::vector<Var>& p) {
                       Expr d = data(exprs(p)), u = part(exprs(p));
                       return combine == Combine::kAdd ? d + u : d * u;
                     },
                     name, {std::move(check)});
}

// Reference: out = data, then every entry's update combined into the element it names.
void scatter_into(runtime::NDArray& out, int64_t at, const runtime::NDArray& updates, int64_t j,
                  Combine combine) {
  if (combine == Combine::kNone) return copy_elem(updates, j, out, at);
  if (out.dtype().code == kDLFloat) {
    double a = host::read_f64(out, at), b = host::read_f64(updates, j);
    return host::write_f64(out, at, combine == Combine::kAdd ? a + b : a * b);
  }
  uint64_t a = static_cast<uint64_t>(host::read_i64(out, at));
  uint64_t b = static_cast<uint64_t>(host::read_i64(updates, j));
  host::write_i64(out, at, static_cast<int64_t>(combine == Combine::kAdd ? a + b : a * b));
}

runtime::NDArray copy_of(const runtime::NDArray& a) {
  runtime::NDArray out = host_empty(a.shape(), a.dtype());
  std::memcpy(out.data(), a.data(), a.nbytes());
  return out;
}

// ---- scatter_elements(data, indices, updates; axis, reduction): updates[j] goes to data's
// element j with j[axis] = indices[j].

void register_scatter_elements() {
  const std::string name = "scatter_elements";
  OpDef def;
  def.name = name;
  def.attrs = {{"axis", AttrType::kInt, int64_t{0}, {}, "the axis the indices select along"},
               reduction_attr()};
  def.flops = flops_none();
  def.infer = [name](const std::vector<TensorType>& in, const Attrs& attrs) {
    check_scatter_inputs(name, in);
    ANVIL_CHECK(in[1].shape == in[2].shape, name, ": indices ", shape_str(in[1].shape),
                " and updates ", shape_str(in[2].shape), " must have one shape");
    size_t rank = in[0].shape.size();
    ANVIL_CHECK(in[1].shape.size() == rank, name, ": indices ", shape_str(in[1].shape),
                " must have the rank of data ", shape_str(in[0].shape));
    int64_t axis = norm_axis(name, "axis", attrs.get_int("axis"), static_cast<int64_t>(rank));
    for (size_t d = 0; d < rank; ++d) {
      ANVIL_CHECK(static_cast<int64_t>(d) == axis || in[1].shape[d] <= in[0].shape[d], name,
                  ": indices ", shape_str(in[1].shape), " exceed data ", shape_str(in[0].shape),
                  " in dimension ", d, ", which is not the axis");
    }
    combine_of(name, attrs);
    return std::vector<TensorType>{in[0]};
  };
  def.compute = [name](const std::vector<te::Tensor>& in, const Attrs& attrs) {
    te::Tensor data = in[0], indices = in[1], updates = in[2];
    std::vector<int64_t> dshape = shape_of(data), ishape = shape_of(indices);
    size_t a = static_cast<size_t>(
        norm_axis(name, "axis", attrs.get_int("axis"), static_cast<int64_t>(dshape.size())));
    int64_t n = dshape[a];
    IterVar r = te::reduce_axis(static_cast<int>(ishape[a]), "r");
    // Entry e of p: p with p[axis] = e (p's other coordinates clamped into indices' shape, and
    // hits only where they are inside it).
    auto entry = [&, a](const std::vector<Var>& p, const std::vector<Expr>& e) {
      std::vector<Expr> at;
      for (size_t d = 0; d < p.size(); ++d) {
        at.push_back(d == a                  ? e[0]
                     : ishape[d] < dshape[d] ? clamp_index(p[d], ishape[d])
                                             : Expr(p[d]));
      }
      return at;
    };
    EntryFn hit = [&, a](const std::vector<Var>& p, const std::vector<Expr>& e) {
      DataType it = indices->dtype;
      Expr k = indices(entry(p, e));
      k = select(k < make_zero(it), k + make_const(it, n), k);
      Expr h = k == cast(it, p[a]);
      for (size_t d = 0; d < p.size(); ++d) {
        if (d != a && ishape[d] < dshape[d]) h = h && p[d] < static_cast<int>(ishape[d]);
      }
      return h;
    };
    EntryFn value = [&](const std::vector<Var>& p, const std::vector<Expr>& e) {
      return updates(entry(p, e));
    };
    return std::vector<te::Tensor>{
        scatter_compute(name, combine_of(name, attrs), data, {r}, hit, value,
                        index_check(name, indices, n, static_cast<int64_t>(a)))};
  };
  def.reference = [name](const std::vector<runtime::NDArray>& in, const Attrs& attrs) {
    std::vector<int64_t> dshape = in[0].shape(), ishape = in[1].shape();
    size_t a = static_cast<size_t>(
        norm_axis(name, "axis", attrs.get_int("axis"), static_cast<int64_t>(dshape.size())));
    Combine combine = combine_of(name, attrs);
    runtime::NDArray out = copy_of(in[0]);
    std::vector<int64_t> strides = strides_of(dshape);
    int64_t j = 0;
    for_each_coord(ishape, [&](const std::vector<int64_t>& coord) {
      std::vector<int64_t> to = coord;
      to[a] = wrap_index(name, get_int_elem(in[1], j), dshape[a], a);
      scatter_into(out, offset_of(to, strides), in[2], j++, combine);
    });
    return std::vector<runtime::NDArray>{out};
  };
  register_reduction_op(std::move(def));
}

// ---- scatter_nd(data, indices, updates; reduction): indices [..., k] name the first k
// coordinates of a slice of data; updates [..., data.shape[k:]] hold each slice's values.

void register_scatter_nd() {
  const std::string name = "scatter_nd";
  OpDef def;
  def.name = name;
  def.attrs = {reduction_attr()};
  def.flops = flops_none();
  def.infer = [name](const std::vector<TensorType>& in, const Attrs& attrs) {
    check_scatter_inputs(name, in);
    const std::vector<int64_t>&d = in[0].shape, &i = in[1].shape, &u = in[2].shape;
    ANVIL_CHECK(!i.empty() && i.back() >= 1 && i.back() <= static_cast<int64_t>(d.size()), name,
                ": the last dimension of indices ", shape_str(i), " must be 1 to the rank of data ",
                shape_str(d));
    std::vector<int64_t> want(i.begin(), i.end() - 1);
    want.insert(want.end(), d.begin() + i.back(), d.end());
    ANVIL_CHECK(u == want, name, ": updates ", shape_str(u), " must be ", shape_str(want),
                " for data ", shape_str(d), " and indices ", shape_str(i));
    combine_of(name, attrs);
    return std::vector<TensorType>{in[0]};
  };
  def.compute = [name](const std::vector<te::Tensor>& in, const Attrs& attrs) {
    te::Tensor data = in[0], indices = in[1], updates = in[2];
    std::vector<int64_t> dshape = shape_of(data), ishape = shape_of(indices);
    size_t k = static_cast<size_t>(ishape.back()), q = ishape.size() - 1;
    std::vector<IterVar> r;
    for (size_t d = 0; d < q; ++d) r.push_back(te::reduce_axis(static_cast<int>(ishape[d]), "r"));
    if (r.empty()) r.push_back(te::reduce_axis(1, "r"));  // indices [k]: one entry
    auto entry_index = [&](const std::vector<Expr>& e, size_t j) {
      std::vector<Expr> at(e.begin(), e.begin() + static_cast<ptrdiff_t>(q));
      at.push_back(static_cast<int>(j));
      return at;
    };
    EntryFn hit = [&](const std::vector<Var>& p, const std::vector<Expr>& e) {
      DataType it = indices->dtype;
      Expr h;
      for (size_t j = 0; j < k; ++j) {
        Expr v = indices(entry_index(e, j));
        v = select(v < make_zero(it), v + make_const(it, dshape[j]), v);
        Expr eq = v == cast(it, p[j]);
        h = h.defined() ? (h && eq) : eq;
      }
      return h;
    };
    EntryFn value = [&](const std::vector<Var>& p, const std::vector<Expr>& e) {
      std::vector<Expr> at(e.begin(), e.begin() + static_cast<ptrdiff_t>(q));
      at.insert(at.end(), p.begin() + static_cast<ptrdiff_t>(k), p.end());
      return updates(at);
    };
    return std::vector<te::Tensor>{scatter_compute(name, combine_of(name, attrs), data, r, hit,
                                                   value,
                                                   nd_index_check(name, indices, dshape, 0))};
  };
  def.reference = [name](const std::vector<runtime::NDArray>& in, const Attrs& attrs) {
    std::vector<int64_t> dshape = in[0].shape(), ishape = in[1].shape();
    int64_t k = ishape.back();
    int64_t entries = numel(ishape) / k;
    int64_t slice = 1;
    for (size_t d = static_cast<size_t>(k); d < dshape.size(); ++d) slice *= dshape[d];
    std::vector<int64_t> strides = strides_of(dshape);
    Combine combine = combine_of(name, attrs);
    runtime::NDArray out = copy_of(in[0]);
    for (int64_t e = 0; e < entries; ++e) {
      int64_t base = 0;
      for (int64_t j = 0; j < k; ++j) {
        size_t dj = static_cast<size_t>(j);
        base += wrap_index(name, get_int_elem(in[1], e * k + j), dshape[dj], dj) * strides[dj];
      }
      for (int64_t s = 0; s < slice; ++s)
        scatter_into(out, base + s, in[2], e * slice + s, combine);
    }
    return std::vector<runtime::NDArray>{out};
  };
  register_reduction_op(std::move(def));
}

}  // namespace

void register_scatter_scan_ops() {
  register_cumsum();
  register_topk();
  register_scatter_elements();
  register_scatter_nd();
}

}  // namespace anvil::ops
