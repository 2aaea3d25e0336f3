// Reductions: reduce_sum, reduce_mean, reduce_max, reduce_min, reduce_prod over any axes;
// argmax/argmin along one axis; softmax and log_softmax along one axis. Inputs of rank 1 or more:
// float32; float64 too for reduce_* and softmax/log_softmax (compiled and referenced, the
// references accumulating in double); float16 as float32 (float16_via_float32).
//
// Attributes (ONNX semantics):
//   reduce_*:           axes (list; negative counts from the end; empty or absent: all axes;
//                       duplicates rejected), keepdims (default 1).
//   argmax/argmin:      axis (default 0), keepdims (default 1), select_last_index (default 0);
//                       int64 output.
//   softmax/log_softmax: axis (default -1).
//
// Formulations.
//   - reduce_mean is one reduction, sum(x * (1/N)): the same single stage (and schedule) as
//     reduce_sum, and no second pass over the output. Its error is that of the sum plus one
//     rounding of 1/N, well inside the 1e-5 relative tolerance.
//   - argmax/argmin: te reductions combine one value (no tuple reducers), so the index is found in
//     two passes: M = max (min) along the axis, then the smallest k with x[k] == M, as a min
//     reduction of select(x[k] == M || x[k] != x[k], k, n) in int64 (the largest k, a max reduction
//     with -1 for the other positions, when select_last_index = 1). M is exactly one of the
//     values, so the comparison is exact, and the first occurrence is what ONNX (and NumPy)
//     return. Our max/min propagate NaN, so when the row holds a NaN, M is NaN and the index is
//     that of the first (last) NaN, as NumPy's argmax; the `x != x` term makes that so.
//   - softmax: M = max(x), E = exp(x - M), S = sum(E), out = E / S; log_softmax: M, S =
//     sum(exp(x - M)), L = log(S) (one log per row), out = (x - M) - L. Subtracting the row max
//     keeps exp's argument <= 0, so large inputs neither overflow nor lose the result; and x - M
//     is exact, where x - (M + L) would round M + L at the inputs' magnitude (about 1e-3 near
//     10,000 in float32: ONNX's test_logsoftmax_large_number).
//
// Patterns. The reductions and argmax/argmin are kReduction (they absorb injective producers,
// which are inlined into their reading stages). softmax and log_softmax are kOpaque, as in TVM:
// their schedule relies on their own four-stage structure (each stage attached per row), and an
// inlined producer would be evaluated by three stages.
//
// Default x86 schedules (the rule; `space` is empty, nothing is tuned yet). Let L be the f32
// vector width of the target.
//   - Reduction with the input's last axis kept (contiguous, not reduced): loops ordered
//     [kept axes except the last, reduction axes, last kept axis], the last kept axis split by L
//     and vectorized when its extent is >= L. Each reduction step then reads a contiguous vector
//     of the input and accumulates into a vector of outputs.
//   - Reduction with the input's last axis reduced (a contiguous reduction): when that axis has
//     at least 2L elements it is split by L and rfactor-ed into L partial results computed with
//     vector loads (the factored axis innermost and vectorized, attached per output element), then
//     combined; otherwise a serial inner loop. (Only the last axis: rfactor takes split reduction
//     axes, not fused ones.)
//   - The data-parallel loops outside the reduction are fused into one and made parallel when
//     the input has at least kParallelMinElements elements and the loop has at least two
//     iterations.
//   - argmax/argmin: the index stage follows the reduction rule (without rfactor: a serial scan
//     when the axis is the last) and the max stage, attached at its outer loop, follows it with
//     rfactor; a block of rows is thus scanned twice while in cache.
//   - softmax/log_softmax: the output's loops before the axis are fused (parallel by the same
//     rule) and its row stages are attached there, so each slab x[outer, :, inner...] is
//     computed in cache, stage after stage: max -> exp -> sum -> normalize (softmax), max -> sum
//     -> log-sum -> subtract (log_softmax). A stage is attached to a loop of a stage that reads
//     it (see the schedule). Every stage vectorizes its last axis when it has >= L elements; the
//     reductions follow the reduction rule (the vector axis innermost, the softmax axis outside
//     it; rfactor-ed vector partials when the softmax axis is the last).
#include <algorithm>
#include <cmath>
#include <limits>

#include "anvil/ir/op.h"
#include "anvil/ops/families.h"
#include "anvil/ops/host_value.h"
#include "anvil/ops/op.h"
#include "anvil/ops/schedule_gpu.h"
#include "anvil/support/error.h"

namespace anvil::ops {

using namespace ir;

namespace {

// Inputs with at least this many elements get a parallel outer loop.
constexpr int64_t kParallelMinElements = int64_t{1} << 14;

const DataType f32 = DataType::Float32();

// ---- attributes

std::string shape_string(const std::vector<int64_t>& shape) {
  return to_string(TensorType{shape, f32}).substr(7);  // drop "float32"
}

// With `any_float`, float64 too (reduce_*, softmax). float16 reaches no op of this
// file: they declare float16_via_float32, so register_op hands them float32 instead.
void check_input(const std::string& op, const std::vector<TensorType>& in, bool any_float = false) {
  ANVIL_CHECK(in.size() == 1, op, ": expects 1 input, got ", in.size());
  bool ok = in[0].dtype == f32 ||
            (any_float && in[0].dtype.is_float() && host::reference_dtype(in[0].dtype));
  ANVIL_CHECK(ok, op, ": input must be ", any_float ? "float16, float32 or float64" : "float32",
              ", not ", in[0].dtype);
}

// `axis` (negative counts from the end) as an index into a shape of `rank` dimensions.
int normalize_axis(const std::string& op, const char* attr, int64_t axis,
                   const std::vector<int64_t>& shape) {
  int64_t rank = static_cast<int64_t>(shape.size());
  ANVIL_CHECK(axis >= -rank && axis < rank, op, ": ", attr, " ", axis,
              " is out of range for an input of shape ", shape_string(shape), " (rank ", rank,
              ", valid axes are ", -rank, " to ", rank - 1, ")");
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

// Which dimensions a reduce_* reduces, and the output shape.
struct ReduceSpec {
  std::vector<int64_t> in_shape;
  std::vector<bool> reduced;  // per input dimension
  bool keepdims = true;

  std::vector<int64_t> out_shape() const {
    std::vector<int64_t> out;
    for (size_t d = 0; d < in_shape.size(); ++d) {
      if (!reduced[d]) {
        out.push_back(in_shape[d]);
      } else if (keepdims) {
        out.push_back(1);
      }
    }
    return out;
  }
  int64_t reduced_count() const {
    int64_t n = 1;
    for (size_t d = 0; d < in_shape.size(); ++d) n *= reduced[d] ? in_shape[d] : 1;
    return n;
  }
};

// The schema's entries (OpDef::attrs).
AttrSpec keepdims_attr() {
  return {"keepdims",
          AttrType::kInt,
          int64_t{1},
          {one_of(std::vector<int64_t>{0, 1})},
          "1: the reduced dimensions stay, with extent 1"};
}

ReduceSpec reduce_spec(const std::string& op, const std::vector<int64_t>& shape,
                       const Attrs& attrs) {
  ReduceSpec spec;
  spec.in_shape = shape;
  spec.keepdims = attrs.get_int("keepdims") == 1;
  std::vector<int64_t> axes = attrs.get_ints("axes");
  spec.reduced.assign(shape.size(), axes.empty());
  for (int64_t a : axes) {
    int d = normalize_axis(op, "axis", a, shape);
    ANVIL_CHECK(!spec.reduced[static_cast<size_t>(d)], op, ": axis ", a, " (dimension ", d,
                ") appears twice in axes");
    spec.reduced[static_cast<size_t>(d)] = true;
  }
  return spec;
}

// The axis of argmax/argmin/softmax.
struct AxisSpec {
  std::vector<int64_t> in_shape;
  int axis = 0;
  bool keepdims = true;
  bool last_index = false;

  std::vector<int64_t> keep_shape() const {
    std::vector<int64_t> s = in_shape;
    s[static_cast<size_t>(axis)] = 1;
    return s;
  }
  std::vector<int64_t> out_shape() const {
    std::vector<int64_t> s = keep_shape();
    if (!keepdims) s.erase(s.begin() + axis);
    return s;
  }
  int64_t extent() const { return in_shape[static_cast<size_t>(axis)]; }
};

AxisSpec arg_spec(const std::string& op, const std::vector<int64_t>& shape, const Attrs& attrs) {
  AxisSpec spec;
  spec.in_shape = shape;
  spec.axis = normalize_axis(op, "axis", attrs.get_int("axis"), shape);
  spec.keepdims = attrs.get_int("keepdims") == 1;
  spec.last_index = attrs.get_int("select_last_index") == 1;
  return spec;
}

AxisSpec softmax_spec(const std::string& op, const std::vector<int64_t>& shape,
                      const Attrs& attrs) {
  AxisSpec spec;
  spec.in_shape = shape;
  spec.axis = normalize_axis(op, "axis", attrs.get_int("axis"), shape);
  return spec;
}

// ---- host helpers for the references (row-major strides, double accumulation)

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// The tensor split around `axis` as [outer, extent, inner].
struct Slabs {
  int64_t outer = 1, extent = 1, inner = 1;
};
Slabs slabs(const std::vector<int64_t>& shape, int axis) {
  Slabs s;
  for (int d = 0; d < static_cast<int>(shape.size()); ++d) {
    int64_t n = shape[static_cast<size_t>(d)];
    if (d < axis) s.outer *= n;
    if (d == axis) s.extent = n;
    if (d > axis) s.inner *= n;
  }
  return s;
}

// ---- reduce_*

enum class ReduceKind { kSum, kMean, kMax, kMin, kProd };

Expr reduce_body(ReduceKind kind, Expr v, const std::vector<IterVar>& axes, int64_t count) {
  if (axes.empty()) return v;  // a scalar input: each reduction of one element is that element
  switch (kind) {
    case ReduceKind::kSum:
      return te::sum(v, axes);
    case ReduceKind::kMean:
      return te::sum(v * make_const(v.type(), 1.0 / static_cast<double>(count)), axes);
    case ReduceKind::kMax:
      return te::max(v, axes);
    case ReduceKind::kMin:
      return te::min(v, axes);
    case ReduceKind::kProd: {
      Var a("a", v.type()), b("b", v.type());
      return te::reduce(CommReducer::make(a, b, a * b, make_const(v.type(), 1.0)), v, axes);
    }
  }
  return Expr();
}

te::Tensor reduce_compute(const std::string& name, ReduceKind kind, const te::Tensor& x,
                          const ReduceSpec& spec) {
  std::vector<IterVar> raxes;
  for (size_t d = 0; d < spec.in_shape.size(); ++d) {
    if (spec.reduced[d]) {
      raxes.push_back(te::reduce_axis(static_cast<int>(spec.in_shape[d]), "k" + std::to_string(d)));
    }
  }
  return te::compute(
      to_exprs(spec.out_shape()),
      [&](const std::vector<Var>& o) {
        std::vector<Expr> idx;
        size_t oi = 0, ri = 0;
        for (size_t d = 0; d < spec.in_shape.size(); ++d) {
          if (spec.reduced[d]) {
            idx.push_back(raxes[ri++]->var);
            if (spec.keepdims) ++oi;
          } else {
            idx.push_back(o[oi++]);
          }
        }
        return reduce_body(kind, x(idx), raxes, spec.reduced_count());
      },
      name);
}

std::vector<runtime::NDArray> reduce_reference(ReduceKind kind, const runtime::NDArray& in,
                                               const ReduceSpec& spec) {
  std::vector<int64_t> out_shape = spec.out_shape();
  int64_t n_out = numel(out_shape);
  double init = kind == ReduceKind::kMax    ? -INFINITY
                : kind == ReduceKind::kMin  ? INFINITY
                : kind == ReduceKind::kProd ? 1.0
                                            : 0.0;
  std::vector<double> acc(static_cast<size_t>(n_out), init);
  size_t rank = spec.in_shape.size();
  std::vector<int64_t> coord(rank, 0);
  for (int64_t i = 0; i < numel(spec.in_shape); ++i) {
    // The output element: the row-major offset over the kept dimensions.
    int64_t o = 0;
    for (size_t d = 0; d < rank; ++d) {
      if (!spec.reduced[d]) o = o * spec.in_shape[d] + coord[d];
    }
    double v = host::read_f64(in, i);
    double& a = acc[static_cast<size_t>(o)];
    switch (kind) {
      case ReduceKind::kSum:
      case ReduceKind::kMean:
        a += v;
        break;
      case ReduceKind::kProd:
        a *= v;
        break;
      case ReduceKind::kMax:
        a = (std::isnan(a) || std::isnan(v)) ? NAN : std::max(a, v);
        break;
      case ReduceKind::kMin:
        a = (std::isnan(a) || std::isnan(v)) ? NAN : std::min(a, v);
        break;
    }
    for (size_t d = rank; d-- > 0;) {
      if (++coord[d] < spec.in_shape[d]) break;
      coord[d] = 0;
    }
  }
  runtime::NDArray out = runtime::NDArray::empty(out_shape, in.dtype());
  double count = static_cast<double>(spec.reduced_count());
  for (int64_t o = 0; o < n_out; ++o) {
    double a = acc[static_cast<size_t>(o)];
    host::write_f64(out, o, kind == ReduceKind::kMean ? a / count : a);
  }
  return {out};
}

// A fused data-parallel loop and its trip count.
struct OuterLoop {
  IterVar loop;  // undefined when there is none
  int64_t extent = 1;
};

int64_t extent_of(const IterVar& iv) {
  std::optional<int64_t> e = as_const_int(iv->dom.extent);
  ANVIL_ICHECK(e, "axis '", iv->var.name(), "' has no constant extent");
  return *e;
}

// Fuses `loops` (adjacent, outermost first) into one.
OuterLoop fuse_all(te::Stage st, const std::vector<IterVar>& loops,
                   const std::vector<int64_t>& extents) {
  OuterLoop out;
  if (loops.empty()) return out;
  out.loop = loops[0];
  for (size_t i = 1; i < loops.size(); ++i) out.loop = st.fuse(out.loop, loops[i]);
  for (int64_t e : extents) out.extent *= e;
  return out;
}

// The rule for one reduction stage whose loops are its data-parallel axes, then its reduction
// axes (as created). When `last_kept` (the input's last axis is one of the stage's axes, its
// last), that axis goes innermost, split by L and vectorized when long enough. Returns the fused
// data-parallel loop outside the reduction.
OuterLoop schedule_reduce_loops(te::Stage st, bool last_kept, int64_t lanes) {
  std::vector<IterVar> dp = st.axis();
  std::vector<IterVar> red = st.reduce_axis();
  std::vector<IterVar> outer = dp;
  std::vector<int64_t> extents;
  for (const IterVar& iv : dp) extents.push_back(extent_of(iv));
  if (last_kept && !dp.empty()) {
    IterVar last = dp.back();
    int64_t extent = extents.back();
    outer.pop_back();
    extents.pop_back();
    IterVar inner = last;
    bool vector = extent >= lanes;
    if (vector) {
      auto [vo, vi] = st.split(last, lanes);
      outer.push_back(vo);
      extents.push_back((extent + lanes - 1) / lanes);
      inner = vi;
    }
    if (!red.empty()) {
      std::vector<IterVar> order = outer;
      order.insert(order.end(), red.begin(), red.end());
      order.push_back(inner);
      st.reorder(order);
    }
    if (vector) st.vectorize(inner);
  }
  return fuse_all(st, outer, extents);
}

void maybe_parallel(te::Stage st, const OuterLoop& p, int64_t work) {
  if (p.loop.defined() && work >= kParallelMinElements && p.extent >= 2) st.parallel(p.loop);
}

// The rule for reduction stage `t` whose last reduction axis indexes the input's last
// (contiguous) dimension: when that axis has at least 2L elements, it is split by L and
// rfactor-ed into L partial results (the factored axis innermost and vectorized, attached per
// element of t), then combined; otherwise a serial inner loop. (Only the last axis: rfactor takes
// split reduction axes, not fused ones.) Returns t's fused data-parallel loop.
OuterLoop schedule_contiguous_reduction(te::Schedule& s, const te::Tensor& t, int64_t lanes) {
  IterVar r = s[t].reduce_axis().back();
  if (extent_of(r) < 2 * lanes) return schedule_reduce_loops(s[t], false, lanes);
  auto [ro, ri] = s[t].split(r, lanes);
  (void)ro;
  te::Tensor rf = s.rfactor(t, ri);
  te::Stage rst = s[rf];
  // The factored axis (rf's last) innermost, vectorized: each step loads L contiguous values.
  IterVar lane_axis = rst.axis().back();
  std::vector<IterVar> order = rst.reduce_axis();
  order.insert(order.begin(), lane_axis);
  std::rotate(order.begin(), order.begin() + 1, order.end());
  rst.reorder(order);
  rst.vectorize(lane_axis);
  OuterLoop p = schedule_reduce_loops(s[t], false, lanes);
  if (p.loop.defined()) rst.compute_at(s[t], p.loop);
  return p;
}

void schedule_reduce_x86(te::Schedule& s, const te::Tensor& out, const Target& target,
                         const ReduceSpec& spec) {
  int64_t lanes = target.vector_lanes_f32();
  bool last_kept = !spec.reduced.back();
  OuterLoop p = last_kept ? schedule_reduce_loops(s[out], true, lanes)
                          : schedule_contiguous_reduction(s, out, lanes);
  maybe_parallel(s[out], p, numel(spec.in_shape));
}

void register_reduce(const std::string& name, ReduceKind kind) {
  OpDef def;
  def.name = name;
  def.pattern = Pattern::kReduction;
  def.attrs = std::vector<AttrSpec>{
      {"axes", AttrType::kInts, std::vector<int64_t>{}, {}, "the reduced axes (empty: all)"},
      keepdims_attr()};
  def.flops = flops_per_input();      // one per input element
  def.space_gpu = gpu_default_space;  // the default GPU schedule, tunable
  // Sums, products and extremes also of int32 and int64 (exact; ONNX allows them); the mean of
  // floats only.
  auto integer = [kind](DataType t) {
    return kind != ReduceKind::kMean && (t == DataType::Int(32) || t == DataType::Int(64));
  };
  def.infer = [name, integer](const std::vector<TensorType>& in, const Attrs& attrs) {
    if (in.size() != 1 || !integer(in[0].dtype)) check_input(name, in, /*any_float=*/true);
    return std::vector<TensorType>{
        {reduce_spec(name, in[0].shape, attrs).out_shape(), in[0].dtype}};
  };
  def.compute = [name, kind, integer](const std::vector<te::Tensor>& in, const Attrs& attrs) {
    DataType t = in[0]->dtype;
    ANVIL_CHECK(t == f32 || t == DataType::Float(64) || integer(t), name, ": input is ", t,
                ", which compiled code does not take yet (it takes float32/64",
                kind == ReduceKind::kMean ? "" : ", int32/64", ")");
    ReduceSpec spec = reduce_spec(name, shape_of(in[0]), attrs);
    return std::vector<te::Tensor>{reduce_compute(name, kind, in[0], spec)};
  };
  def.reference = [name, kind](const std::vector<runtime::NDArray>& in, const Attrs& attrs) {
    return reduce_reference(kind, in[0], reduce_spec(name, in[0].shape(), attrs));
  };
  def.schedule_x86 = [name](te::Schedule& s, const std::vector<te::Tensor>& outs,
                            const Target& target, const Config&) {
    // Which input dimensions are reduced: those the load under the reduction indexes with a
    // reduction variable (the schedule is not given the attributes).
    const te::Tensor& out = outs[0];
    const Reduce* r = out->body.as<Reduce>();
    if (r == nullptr) return;  // of a scalar: one element copied, nothing to schedule
    const Load* load = r->source.as<Load>();
    if (load == nullptr) {  // reduce_mean: sum(x * (1/N))
      const Mul* mul = r->source.as<Mul>();
      load = !mul ? nullptr : mul->a.as<Load>() ? mul->a.as<Load>() : mul->b.as<Load>();
    }
    ANVIL_ICHECK(load, name, ": stage '", out.name(), "' is not a reduction of a load");
    ReduceSpec spec;
    for (size_t d = 0; d < load->indices.size(); ++d) {
      bool reduced = false;
      for (const IterVar& iv : out->reduce_axis)
        reduced = reduced || load->indices[d].same_as(iv->var);
      std::optional<int64_t> extent = as_const_int(load->buffer->shape[d]);
      ANVIL_ICHECK(extent, name, ": input has a symbolic shape");
      spec.reduced.push_back(reduced);
      spec.in_shape.push_back(*extent);
    }
    schedule_reduce_x86(s, outs[0], target, spec);
  };
  def.space = [](const std::vector<TensorType>&, const Attrs&, const Target&) {
    return ConfigSpace{};
  };
  def.float16_via_float32 = true;
  register_op(std::move(def));
}

// The tensor named `name` among those `out` depends on (a stage of this op's own compute).
te::Tensor find_stage(const te::Tensor& out, const std::string& name) {
  for (const te::Tensor& t : te::topological_order({out})) {
    if (t.name() == name) return t;
  }
  ANVIL_ICHECK(false, "stage '", name, "' not found among the producers of '", out.name(), "'");
  return te::Tensor();
}

// Splits the last axis of an elementwise stage by L and vectorizes it when long enough.
void vectorize_last(te::Stage st, int64_t lanes) {
  if (st.axis().empty()) return;
  IterVar last = st.axis().back();
  if (extent_of(last) < lanes) return;
  auto [outer, inner] = st.split(last, lanes);
  (void)outer;
  st.vectorize(inner);
}

// The indices of `x` for output coordinates `o` of a tensor that has `x`'s rank with `axis`
// replaced by `k` (o[axis] is ignored).
std::vector<Expr> along(const std::vector<Var>& o, int axis, Expr k) {
  std::vector<Expr> idx(o.begin(), o.end());
  idx[static_cast<size_t>(axis)] = std::move(k);
  return idx;
}

// ---- argmax / argmin

std::vector<te::Tensor> arg_compute(const std::string& name, bool is_max, const te::Tensor& x,
                                    const AxisSpec& spec) {
  int a = spec.axis;
  int n = static_cast<int>(spec.extent());
  IterVar k1 = te::reduce_axis(n, "k");
  te::Tensor m = te::compute(
      to_exprs(spec.keep_shape()),
      [&](const std::vector<Var>& o) {
        Expr v = x(along(o, a, k1->var));
        return is_max ? te::max(v, {k1}) : te::min(v, {k1});
      },
      name + "_value");
  IterVar k2 = te::reduce_axis(n, "k");
  DataType i64 = DataType::Int64();
  te::Tensor out = te::compute(
      to_exprs(spec.out_shape()),
      [&](const std::vector<Var>& o) {
        std::vector<Expr> xi, mi;
        size_t oi = 0;
        for (int d = 0; d < static_cast<int>(spec.in_shape.size()); ++d) {
          if (d == a) {
            xi.push_back(k2->var);
            mi.push_back(0);
            if (spec.keepdims) ++oi;
          } else {
            xi.push_back(o[oi]);
            mi.push_back(o[oi]);
            ++oi;
          }
        }
        Expr v = x(xi);
        Expr hit = v == m(mi) || v != v;  // the extreme value, or a NaN (then the extreme is NaN)
        Expr k = cast(i64, k2->var);
        if (spec.last_index) return te::max(select(hit, k, make_const(i64, -1)), {k2});
        return te::min(select(hit, k, make_const(i64, static_cast<int64_t>(n))), {k2});
      },
      name);
  return {out};
}

std::vector<runtime::NDArray> arg_reference(bool is_max, const runtime::NDArray& in,
                                            const AxisSpec& spec) {
  Slabs sl = slabs(spec.in_shape, spec.axis);
  runtime::NDArray out = runtime::NDArray::empty(spec.out_shape(), DLDataType{kDLInt, 64, 1});
  const float* x = in.data_as<float>();
  for (int64_t o = 0; o < sl.outer; ++o) {
    for (int64_t i = 0; i < sl.inner; ++i) {
      int64_t best = -1;
      double best_v = 0;
      for (int64_t k = 0; k < sl.extent; ++k) {
        double v = x[(o * sl.extent + k) * sl.inner + i];
        if (best >= 0 && std::isnan(best_v) && !spec.last_index) continue;  // first NaN wins
        bool take = best < 0 || std::isnan(v) ||
                    (spec.last_index ? (is_max ? v >= best_v : v <= best_v)
                                     : (is_max ? v > best_v : v < best_v));
        if (best >= 0 && std::isnan(best_v) && !std::isnan(v)) take = false;  // NaN stays
        if (take) {
          best = k;
          best_v = v;
        }
      }
      out.data_as<int64_t>()[o * sl.inner + i] = best;
    }
  }
  return {out};
}

void register_arg(const std::string& name, bool is_max) {
  OpDef def;
  def.name = name;
  def.pattern = Pattern::kReduction;
  def.attrs = std::vector<AttrSpec>{{"axis", AttrType::kInt, int64_t{0}, {}, "the reduced axis"},
                                    keepdims_attr(),
                                    {"select_last_index",
                                     AttrType::kInt,
                                     int64_t{0},
                                     {one_of(std::vector<int64_t>{0, 1})},
                                     "1: the last of equal extremes, 0: the first"}};
  def.flops = flops_per_input();      // one comparison per input element
  def.space_gpu = gpu_default_space;  // the default GPU schedule, tunable
  def.infer = [name](const std::vector<TensorType>& in, const Attrs& attrs) {
    check_input(name, in);
    return std::vector<TensorType>{
        {arg_spec(name, in[0].shape, attrs).out_shape(), DataType::Int64()}};
  };
  def.compute = [name, is_max](const std::vector<te::Tensor>& in, const Attrs& attrs) {
    return arg_compute(name, is_max, in[0], arg_spec(name, shape_of(in[0]), attrs));
  };
  def.reference = [name, is_max](const std::vector<runtime::NDArray>& in, const Attrs& attrs) {
    return arg_reference(is_max, in[0], arg_spec(name, in[0].shape(), attrs));
  };
  def.schedule_x86 = [](te::Schedule& s, const std::vector<te::Tensor>& outs, const Target& target,
                        const Config&) {
    const te::Tensor& out = outs[0];
    te::Tensor m = find_stage(out, out.name() + "_value");
    int64_t lanes = target.vector_lanes_f32();
    std::vector<int64_t> in_shape = shape_of(m);
    int64_t work = numel(in_shape) * extent_of(m->reduce_axis[0]);
    // The input's last axis is kept exactly when the max's load indexes it with a data-parallel
    // variable (the schedule is not given the attributes).
    const Reduce* r = m->body.as<Reduce>();
    const Load* load = r ? r->source.as<Load>() : nullptr;
    ANVIL_ICHECK(load, "stage '", m.name(), "' is not a reduction of a load");
    bool last_kept = !load->indices.back().same_as(m->reduce_axis[0]->var);
    OuterLoop p = schedule_reduce_loops(s[out], last_kept, lanes);
    if (p.loop.defined()) s[m].compute_at(s[out], p.loop);
    if (last_kept) {
      schedule_reduce_loops(s[m], true, lanes);
    } else {
      schedule_contiguous_reduction(s, m, lanes);
    }
    maybe_parallel(s[out], p, work);
  };
  def.space = [](const std::vector<TensorType>&, const Attrs&, const Target&) {
    return ConfigSpace{};
  };
  def.float16_via_float32 = true;
  register_op(std::move(def));
}

// ---- softmax / log_softmax

Expr call(Intrinsic op, Expr x) {
  return Call::make(op, {std::move(x)});
}

std::vector<te::Tensor> softmax_compute(const std::string& name, bool log, const te::Tensor& x,
                                        const AxisSpec& spec) {
  int a = spec.axis;
  int n = static_cast<int>(spec.extent());
  std::vector<Expr> shape = to_exprs(spec.in_shape), keep = to_exprs(spec.keep_shape());
  auto row = [&](const std::vector<Var>& o) { return along(o, a, 0); };
  auto all = [](const std::vector<Var>& o) { return std::vector<Expr>(o.begin(), o.end()); };
  IterVar k1 = te::reduce_axis(n, "k");
  te::Tensor m = te::compute(
      keep, [&](const std::vector<Var>& o) { return te::max(x(along(o, a, k1->var)), {k1}); },
      name + "_max");
  IterVar k2 = te::reduce_axis(n, "k");
  if (!log) {
    te::Tensor e = te::compute(
        shape,
        [&](const std::vector<Var>& o) { return call(Intrinsic::kExp, x(all(o)) - m(row(o))); },
        name + "_exp");
    te::Tensor sum = te::compute(
        keep, [&](const std::vector<Var>& o) { return te::sum(e(along(o, a, k2->var)), {k2}); },
        name + "_sum");
    return {te::compute(
        shape, [&](const std::vector<Var>& o) { return e(all(o)) / sum(row(o)); }, name)};
  }
  te::Tensor sum = te::compute(
      keep,
      [&](const std::vector<Var>& o) {
        return te::sum(call(Intrinsic::kExp, x(along(o, a, k2->var)) - m(all(o))), {k2});
      },
      name + "_sum");
  te::Tensor logsum = te::compute(
      keep, [&](const std::vector<Var>& o) { return call(Intrinsic::kLog, sum(all(o))); },
      name + "_logsum");
  return {te::compute(
      shape, [&](const std::vector<Var>& o) { return (x(all(o)) - m(row(o))) - logsum(row(o)); },
      name)};
}

std::vector<runtime::NDArray> softmax_reference(bool log, const runtime::NDArray& in,
                                                const AxisSpec& spec) {
  Slabs sl = slabs(spec.in_shape, spec.axis);
  const std::vector<double> xv = host::read_all_f64(in);
  std::vector<double> y(xv.size());
  for (int64_t o = 0; o < sl.outer; ++o) {
    for (int64_t i = 0; i < sl.inner; ++i) {
      auto at = [&](int64_t k) { return static_cast<size_t>((o * sl.extent + k) * sl.inner + i); };
      auto x = [&](int64_t k) { return xv[at(k)]; };
      double mx = -INFINITY;
      for (int64_t k = 0; k < sl.extent; ++k) mx = std::max(mx, x(k));
      double total = 0;
      for (int64_t k = 0; k < sl.extent; ++k) total += std::exp(x(k) - mx);
      for (int64_t k = 0; k < sl.extent; ++k) {
        double v = x(k) - mx;
        y[at(k)] = log ? v - std::log(total) : std::exp(v) / total;
      }
    }
  }
  return {host::from_all_f64(spec.in_shape, from_dlpack(in.dtype()), y)};
}

void register_softmax(const std::string& name, bool log) {
  OpDef def;
  def.name = name;
  def.pattern = Pattern::kOpaque;
  def.attrs =
      std::vector<AttrSpec>{{"axis", AttrType::kInt, int64_t{-1}, {}, "the axis normalized over"}};
  def.flops = flops_per_input(4);     // max, exp, sum, scale per element
  def.space_gpu = gpu_default_space;  // the default GPU schedule, tunable
  def.infer = [name](const std::vector<TensorType>& in, const Attrs& attrs) {
    check_input(name, in, /*any_float=*/true);
    softmax_spec(name, in[0].shape, attrs);
    return std::vector<TensorType>{in[0]};
  };
  def.compute = [name, log](const std::vector<te::Tensor>& in, const Attrs& attrs) {
    return softmax_compute(name, log, in[0], softmax_spec(name, shape_of(in[0]), attrs));
  };
  def.reference = [name, log](const std::vector<runtime::NDArray>& in, const Attrs& attrs) {
    return softmax_reference(log, in[0], softmax_spec(name, in[0].shape(), attrs));
  };
  def.schedule_x86 = [log](te::Schedule& s, const std::vector<te::Tensor>& outs,
                           const Target& target, const Config&) {
    const te::Tensor& out = outs[0];
    int64_t lanes = target.vector_lanes(out->dtype.bits());
    te::Tensor m = find_stage(out, out.name() + "_max");
    te::Tensor sum = find_stage(out, out.name() + "_sum");
    std::vector<te::Tensor> row_stages{m, sum};
    row_stages.push_back(find_stage(out, out.name() + (log ? "_logsum" : "_exp")));
    // The softmax axis: the index of the max's load that is its reduction variable.
    const Reduce* r = m->body.as<Reduce>();
    const Load* load = r ? r->source.as<Load>() : nullptr;
    ANVIL_ICHECK(load, "stage '", m.name(), "' is not a reduction of a load");
    int rank = out.ndim(), a = -1;
    for (int d = 0; d < rank; ++d) {
      if (load->indices[static_cast<size_t>(d)].same_as(m->reduce_axis[0]->var)) a = d;
    }
    ANVIL_ICHECK(a >= 0, "stage '", m.name(), "' does not reduce along an axis");
    bool last_kept = a < rank - 1;
    te::Stage so = s[out];
    std::vector<IterVar> dp = so.axis();
    std::vector<int64_t> extents;
    for (int d = 0; d < a; ++d) extents.push_back(extent_of(dp[static_cast<size_t>(d)]));
    OuterLoop p = fuse_all(so, std::vector<IterVar>(dp.begin(), dp.begin() + a), extents);
    vectorize_last(so, lanes);
    // A stage is attached at a loop of a stage that reads it. softmax: exp and sum at the
    // output's outer loop, the max at the exp's loop just outside the axis (exp is its only
    // reader). log_softmax: the max and the log-sum (both read by the output) at the output's
    // outer loop, the sum (read by the log-sum alone) at the log-sum's loop over the axis
    // (extent 1).
    std::vector<IterVar> dp_of_first = s[row_stages[2]].axis();
    if (p.loop.defined()) s[row_stages[2]].compute_at(so, p.loop);
    if (!log) {
      if (p.loop.defined()) s[sum].compute_at(so, p.loop);
      if (a > 0) s[m].compute_at(s[row_stages[2]], dp_of_first[static_cast<size_t>(a - 1)]);
    } else {
      if (p.loop.defined()) s[m].compute_at(so, p.loop);
      s[sum].compute_at(s[row_stages[2]], dp_of_first[static_cast<size_t>(a)]);
    }
    for (const te::Tensor& t : row_stages) {
      if (t->reduce_axis.empty()) {
        vectorize_last(s[t], lanes);
      } else if (last_kept) {
        schedule_reduce_loops(s[t], true, lanes);
      } else {
        schedule_contiguous_reduction(s, t, lanes);
      }
    }
    maybe_parallel(s[out], p, numel(shape_of(out)));  // rfactor renumbered the stages
  };
  def.space = [](const std::vector<TensorType>&, const Attrs&, const Target&) {
    return ConfigSpace{};
  };
  def.float16_via_float32 = true;
  register_op(std::move(def));
}

}  // namespace

void register_reduce_ops() {
  register_reduce("reduce_sum", ReduceKind::kSum);
  register_reduce("reduce_mean", ReduceKind::kMean);
  register_reduce("reduce_max", ReduceKind::kMax);
  register_reduce("reduce_min", ReduceKind::kMin);
  register_reduce("reduce_prod", ReduceKind::kProd);
  register_arg("argmax", true);
  register_arg("argmin", false);
  register_softmax("softmax", false);
  register_softmax("log_softmax", true);
}

}  // namespace anvil::ops
