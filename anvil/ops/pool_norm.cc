// Pooling and normalization on NCHW tensors: max_pool2d, avg_pool2d, global_max_pool2d,
// global_avg_pool2d, batch_norm (inference), layer_norm, instance_norm. float32 or float64, every
// operand alike (float16 as float32: float16_via_float32).
//
// The pools also run on the blocked layout NCHW[x]c (nchwc.h): max_pool2d_nchwc, avg_pool2d_nchwc,
// global_max_pool2d_nchwc and global_avg_pool2d_nchwc take x [N, C/b, H, W, b] and give
// [N, C/b, OH, OW, b] ([N, C/b, 1, 1, b] for the global ones), with the attributes and semantics
// of their NCHW forms: pooling is per channel, so channel c = (c / b, c % b) pools over H and W
// exactly as in NCHW. The graph compiler's layout alteration keeps a convolution chain blocked
// through them.
//
// Fusion patterns:
//  - the pools are kComplexOutFusable (TVM's kOutEWiseFusable): a window reduction whose output
//    absorbs elementwise epilogues (a relu after a pool), but which never absorbs a producer,
//    because each input element is read by several windows;
//  - batch_norm (inference) is kInjective: per element, a scale and shift by its channel;
//  - layer_norm and instance_norm are kReduction: mean and variance per row, then normalize.
//
// Pool semantics (ONNX MaxPool / AveragePool):
//  - pads are [top, left, bottom, right]; padded positions never win a max, and are counted in
//    the average only with count_include_pad = 1. Positions that ceil_mode adds beyond the padded
//    end are never counted (as in PyTorch and ONNX Runtime).
//  - output size per dimension with extent e = (k - 1) * d + 1 over the padded input p = in +
//    begin + end: floor((p - e) / s) + 1, or with ceil_mode ceil((p - e) / s) + 1 less one when
//    the last window would start at or beyond in + begin (it must start inside the input or the
//    left padding).
//  - a window that holds no input element (possible only with dilations) gives -inf for max
//    and 0 for an average that excludes padding.
#include <cmath>
#include <limits>

#include "anvil/ir/op.h"
#include "anvil/ops/families.h"
#include "anvil/ops/host_value.h"
#include "anvil/ops/op.h"
#include "anvil/ops/schedule_gpu.h"
#include "anvil/ops/schedule_util.h"
#include "anvil/ops/window.h"
#include "anvil/support/error.h"

namespace anvil::ops {

using namespace ir;

namespace {

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// Compiled code takes float32 and float64 (float16 as float32: float16_via_float32).
void check_float_input(const std::string& op, const TensorType& t, const char* what) {
  ANVIL_CHECK(host::native_float(t.dtype), op, ": input '", what,
              "' must be float32 or float64, not ", t.dtype);
}

// Work (element operations) below which a parallel loop costs more than it saves.
constexpr int64_t kParallelWork = 1 << 15;

// ---- pools

struct PoolDim {
  int64_t in = 0, kernel = 0, stride = 1, pad_begin = 0, pad_end = 0, dilation = 1, out = 0;
  // The first input position of window o.
  int64_t start(int64_t o) const { return o * stride - pad_begin; }
  // How many positions of window o lie in [lo, hi).
  int64_t count(int64_t o, int64_t lo, int64_t hi) const {
    int64_t n = 0;
    for (int64_t k = 0; k < kernel; ++k) {
      int64_t p = start(o) + k * dilation;
      n += p >= lo && p < hi;
    }
    return n;
  }
  // The range counted by an average: the input, or the input and its explicit padding.
  int64_t count_lo(bool include_pad) const { return include_pad ? -pad_begin : 0; }
  int64_t count_hi(bool include_pad) const { return include_pad ? in + pad_end : in; }
};

struct PoolAttrs {
  PoolDim h, w;
  bool ceil_mode = false;
  bool count_include_pad = false;
};

// The window attributes a pool takes (window.h).
unsigned pool_window(bool is_avg) {
  return kWindowKernel | kWindowCeilMode | (is_avg ? kWindowCountIncludePad : 0u);
}

// Whether `op` is the NCHW[x]c form of a pool (its input is [N, C/b, H, W, b]).
bool is_blocked(const std::string& op) {
  return op.size() > 6 && op.compare(op.size() - 6, 6, "_nchwc") == 0;
}

// The input's rank check: 4-d NCHW, or 5-d NCHW[x]c for the blocked forms.
void check_pool_rank(const std::string& op, const TensorType& x) {
  bool blocked = is_blocked(op);
  ANVIL_CHECK(x.shape.size() == (blocked ? 5u : 4u), op, ": input 'x' must be ",
              blocked ? "5-d (NCHW[x]c: [N, C/b, H, W, b])" : "4-d (NCHW)", ", got ", to_string(x));
}

// The pooled shape: x's with H, W replaced (the block dimension, if any, kept).
std::vector<int64_t> pooled_shape(const std::vector<int64_t>& x, int64_t oh, int64_t ow) {
  std::vector<int64_t> out = x;
  out[2] = oh;
  out[3] = ow;
  return out;
}

PoolAttrs parse_pool(const std::string& op, const std::vector<TensorType>& in, const Attrs& attrs,
                     bool is_avg) {
  ANVIL_CHECK(in.size() == 1, op, ": expects 1 input, got ", in.size());
  // The references also take integers for max; compiled code float32 and float64.
  DataType t = in[0].dtype;
  ANVIL_CHECK(host::reference_dtype(t) && !t.is_bool() && (t.is_float() || !is_avg), op,
              ": input 'x' must be ", is_avg ? "a float" : "a float or integer", " tensor, not ",
              t);
  check_pool_rank(op, in[0]);
  Window win = parse_window(attrs, 2, pool_window(is_avg));
  ANVIL_CHECK(is_avg || !attrs.has("count_include_pad"), op,
              ": attribute 'count_include_pad' applies to avg_pool2d only");
  const std::vector<int64_t>& k = win.kernel;
  PoolAttrs a;
  a.ceil_mode = win.ceil_mode;
  a.count_include_pad = win.count_include_pad;
  PoolDim* dims[2] = {&a.h, &a.w};
  const char* names[2] = {"height", "width"};
  for (int i = 0; i < 2; ++i) {
    PoolDim& pd = *dims[i];
    pd.in = in[0].shape[static_cast<size_t>(2 + i)];
    pd.kernel = k[static_cast<size_t>(i)];
    pd.stride = win.strides[static_cast<size_t>(i)];
    pd.pad_begin = win.pad_lo[static_cast<size_t>(i)];
    pd.pad_end = win.pad_hi[static_cast<size_t>(i)];
    pd.dilation = win.dilations[static_cast<size_t>(i)];
    int64_t extent = (pd.kernel - 1) * pd.dilation + 1;
    int64_t padded = pd.in + pd.pad_begin + pd.pad_end;
    ANVIL_CHECK(extent <= padded, op, ": attribute 'kernel_shape' ", shape_str(k), " spans ",
                extent, " in ", names[i], ", more than the padded input's ", padded, " (", pd.in,
                " + pads ", pd.pad_begin, " + ", pd.pad_end, ")");
    int64_t span = padded - extent;
    if (a.ceil_mode) {
      pd.out = (span + pd.stride - 1) / pd.stride + 1;
      if ((pd.out - 1) * pd.stride >= pd.in + pd.pad_begin) --pd.out;
    } else {
      pd.out = span / pd.stride + 1;
    }
  }
  return a;
}

// Schedule of a window reduction `out` (axes n, c, oh, ow, reduction axes after): rule
//  - when the output row holds at least one vector, ow is split by the vector width and the
//    vector part moved inside the window loops, so each window step updates a vector of outputs;
//  - n, c and oh are fused into one loop, parallel when the work (outputs x window) reaches
//    kParallelWork and there are at least two rows.
void schedule_window_x86(te::Schedule& s, const te::Tensor& out, const Target& target) {
  te::Stage st = s[out];
  std::vector<IterVar> ax = st.axis(), rax = st.reduce_axis();
  std::vector<int64_t> shape = shape_of(out);
  int64_t window = 1;
  for (const IterVar& r : rax) window *= *as_const_int(r->dom.extent);
  int64_t lanes = target.vector_lanes(out->dtype.bits());
  IterVar rows = st.fuse(st.fuse(ax[0], ax[1]), ax[2]);
  if (shape[3] >= lanes) {
    auto [owo, owi] = st.split(ax[3], lanes);
    std::vector<IterVar> order = {rows, owo};
    order.insert(order.end(), rax.begin(), rax.end());
    order.push_back(owi);
    st.reorder(order);
    st.vectorize(owi);
  }
  int64_t nrows = shape[0] * shape[1] * shape[2];
  if (nrows >= 2 && nrows * shape[3] * window >= kParallelWork) st.parallel(rows);
}

// Positions of window o (start + k * d, k in [0, kernel)) inside [lo, hi), as an expression.
Expr window_count(const PoolDim& pd, Expr o, int64_t lo, int64_t hi) {
  Expr start = o * static_cast<int>(pd.stride) - static_cast<int>(pd.pad_begin);
  int d = static_cast<int>(pd.dilation);
  Expr first = max(floordiv(Expr(static_cast<int>(lo)) - start + (d - 1), d), 0);
  Expr last =
      min(floordiv(Expr(static_cast<int>(hi - 1)) - start, d), static_cast<int>(pd.kernel - 1));
  return max(last - first + 1, 0);
}

// The count of window positions along one dimension: a constant when every window has the same.
Expr dim_count(const PoolDim& pd, const Var& o, bool include_pad) {
  int64_t lo = pd.count_lo(include_pad), hi = pd.count_hi(include_pad);
  int64_t first = pd.count(0, lo, hi);
  bool uniform = true;
  for (int64_t i = 1; i < pd.out && uniform; ++i) uniform = pd.count(i, lo, hi) == first;
  if (uniform) return Expr(static_cast<int>(first));
  return window_count(pd, o, lo, hi);
}

std::vector<te::Tensor> pool_compute(const std::string& op, const te::Tensor& x, const Attrs& attrs,
                                     bool is_avg) {
  std::vector<int64_t> xs = shape_of(x);
  check_float_input(op, {xs, x->dtype}, "x");
  PoolAttrs a = parse_pool(op, {{xs, x->dtype}}, attrs, is_avg);
  IterVar rh = te::reduce_axis(static_cast<int>(a.h.kernel), "rh");
  IterVar rw = te::reduce_axis(static_cast<int>(a.w.kernel), "rw");
  // i: n, c, oh, ow (and the channel within the block, for NCHW[x]c).
  auto body = [&](const std::vector<Var>& i) {
    Expr ih = i[2] * static_cast<int>(a.h.stride) - static_cast<int>(a.h.pad_begin) +
              rh->var * static_cast<int>(a.h.dilation);
    Expr iw = i[3] * static_cast<int>(a.w.stride) - static_cast<int>(a.w.pad_begin) +
              rw->var * static_cast<int>(a.w.dilation);
    // Only the bounds some window crosses are tested.
    Expr cond;
    auto add = [&](Expr c) { cond = cond.defined() ? (cond && c) : c; };
    for (auto [pd, idx] : {std::pair{&a.h, ih}, std::pair{&a.w, iw}}) {
      if (pd->pad_begin > 0) add(idx >= 0);
      if (pd->start(pd->out - 1) + (pd->kernel - 1) * pd->dilation >= pd->in) {
        add(idx < static_cast<int>(pd->in));
      }
    }
    std::vector<Expr> at = {i[0], i[1], ih, iw};
    if (i.size() == 5) at.push_back(i[4]);
    Expr v = x(at);
    if (!is_avg) return te::max(v, {rh, rw}, cond);
    Expr count =
        dim_count(a.h, i[2], a.count_include_pad) * dim_count(a.w, i[3], a.count_include_pad);
    Expr inv = make_const(x->dtype, 1.0) / cast(x->dtype, max(count, 1));
    return te::sum(v * inv, {rh, rw}, cond);
  };
  return {te::compute(to_exprs(pooled_shape(xs, a.h.out, a.w.out)), body, op)};
}

// Naive loops; for NCHW[x]c the block's channels are an innermost loop (b = 1 for NCHW).
runtime::NDArray pool_reference(const std::string& op, const runtime::NDArray& x,
                                const Attrs& attrs, bool is_avg) {
  PoolAttrs a = parse_pool(op, {{x.shape(), from_dlpack(x.dtype())}}, attrs, is_avg);
  int64_t N = x.shape()[0], C = x.shape()[1], H = a.h.in, W = a.w.in;
  int64_t B = x.shape().size() == 5 ? x.shape()[4] : 1;
  runtime::NDArray out =
      runtime::NDArray::empty(pooled_shape(x.shape(), a.h.out, a.w.out), x.dtype());
  bool is_float = from_dlpack(x.dtype()).is_float();
  int64_t hlo = a.h.count_lo(a.count_include_pad), hhi = a.h.count_hi(a.count_include_pad);
  int64_t wlo = a.w.count_lo(a.count_include_pad), whi = a.w.count_hi(a.count_include_pad);
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t c = 0; c < C; ++c) {
      int64_t plane = (n * C + c) * H * W;
      for (int64_t oh = 0; oh < a.h.out; ++oh) {
        for (int64_t ow = 0; ow < a.w.out; ++ow) {
          for (int64_t j = 0; j < B; ++j) {
            double best = -std::numeric_limits<double>::infinity(), total = 0;
            int64_t counted = 0, ibest = std::numeric_limits<int64_t>::min();
            bool nan = false;
            for (int64_t kh = 0; kh < a.h.kernel; ++kh) {
              for (int64_t kw = 0; kw < a.w.kernel; ++kw) {
                int64_t ih = oh * a.h.stride - a.h.pad_begin + kh * a.h.dilation;
                int64_t iw = ow * a.w.stride - a.w.pad_begin + kw * a.w.dilation;
                if (ih >= hlo && ih < hhi && iw >= wlo && iw < whi) ++counted;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                int64_t at = (plane + ih * W + iw) * B + j;
                if (!is_float) {  // integers: max pooling only, exact
                  ibest = std::max(ibest, host::read_i64(x, at));
                  continue;
                }
                double v = host::read_f64(x, at);
                nan = nan || std::isnan(v);
                best = std::max(best, v);
                total += v;
              }
            }
            int64_t e = (((n * C + c) * a.h.out + oh) * a.w.out + ow) * B + j;
            if (!is_float) {
              host::write_i64(out, e, ibest);
              continue;
            }
            double r = is_avg ? (counted ? total / static_cast<double>(counted) : 0.0) : best;
            if (nan) r = std::numeric_limits<double>::quiet_NaN();
            host::write_f64(out, e, r);
          }
        }
      }
    }
  }
  return out;
}

// Schedule of a pool on NCHW[x]c (windowed or global); outs[0] is the pool or the last of an
// elementwise chain over it (an epilogue such as a relu, inlined into the output stage). Rule:
//  - the output [n, c, oh, ow, b]: n, c, oh fused into rows, parallel when the work (outputs x
//    window) reaches kParallelWork and there are at least two rows; ow in blocks of at most R/4
//    columns (8 with AVX-512's 32 vector registers, 4 with AVX2's 16; balanced, so the tail
//    block wastes least), the columns unrolled, b vectorized;
//  - the pool accumulates one block of columns in a local buffer (registers) computed at the
//    column block, the window loops outside the columns: each window step loads one vector per
//    column (contiguous: the block's channels) and updates it, with no gathers and no
//    transposes (the NCHW schedule vectorizes along strided columns).
// Knobs (pool_nchwc_space): ow_block (the columns per block) and parallel (0/1), the rule's
// values by default.
struct PoolKnobs {
  int64_t ow_block = 1, parallel = 0;
};

// The rule's knobs for an output [n, c, oh, ow, b] of a window of `window` taps.
PoolKnobs pool_rule(const std::vector<int64_t>& shape, int64_t window, const Target& target) {
  int64_t regs = target.vector_registers;
  int64_t blocks = (shape[3] + regs / 4 - 1) / (regs / 4);
  int64_t nrows = shape[0] * shape[1] * shape[2];
  PoolKnobs k;
  k.ow_block = (shape[3] + blocks - 1) / blocks;
  k.parallel = nrows >= 2 && nrows * shape[3] * shape[4] * window >= kParallelWork;
  return k;
}

// The knobs of a blocked pool's schedule with the rule's values first: ow_block every width up
// to R/2 columns (the register budget twice over) and the output width; parallel on and off.
ConfigSpace pool_nchwc_space(const std::vector<int64_t>& shape, int64_t window,
                             const Target& target) {
  PoolKnobs d = pool_rule(shape, window, target);
  Knob cols{"ow_block", {d.ow_block}};
  for (int64_t v = 1; v <= std::min<int64_t>(shape[3], target.vector_registers / 2); ++v)
    if (v != d.ow_block) cols.values.push_back(v);
  return {cols, {"parallel", {d.parallel, 1 - d.parallel}}};
}

void schedule_pool_nchwc_x86(te::Schedule& s, const std::vector<te::Tensor>& outs,
                             const Target& target, const Config& config) {
  te::Tensor out = outs[0], pool;
  std::vector<te::Tensor> order = te::topological_order(outs);
  for (const te::Tensor& t : order)
    if (t.is_compute() && !t->reduce_axis.empty()) pool = t;
  ANVIL_CHECK(pool.defined(), "pool schedule: no pooling stage under output '", out.name(), "'");
  ANVIL_CHECK(shape_of(out) == shape_of(pool), "pool schedule: output '", out.name(), "' ",
              shape_str(shape_of(out)), " must have the pool's shape ", shape_str(shape_of(pool)),
              " (an elementwise epilogue)");
  for (const te::Tensor& t : order)
    if (t.is_compute() && t.get() != pool.get() && t.get() != out.get()) s[t].compute_inline();
  te::Tensor inner = out.get() == pool.get() ? s.cache_write(pool, MemoryScope::kLocal) : pool;
  std::vector<int64_t> shape = shape_of(out);
  int64_t window = 1;
  for (const IterVar& r : pool->reduce_axis) window *= *as_const_int(r->dom.extent);
  PoolKnobs d = pool_rule(shape, window, target);
  int64_t cols = knob(config, "ow_block", d.ow_block), par = knob(config, "parallel", d.parallel);
  ANVIL_CHECK(cols >= 1, "pool schedule: knob ow_block must be >= 1, not ", cols);

  te::Stage so = s[out];
  std::vector<IterVar> ax = so.axis();
  auto [wo, wi] = so.split(ax[3], cols);
  so.reorder({ax[0], ax[1], ax[2], wo, wi, ax[4]});
  IterVar rows = so.fuse(so.fuse(ax[0], ax[1]), ax[2]);
  so.unroll(wi);
  so.vectorize(ax[4]);
  if (par) so.parallel(rows);

  te::Stage si = s[inner];
  si.compute_at(so, wo);
  std::vector<IterVar> iax = si.axis(), rax = si.reduce_axis();
  std::vector<IterVar> iorder = {iax[0], iax[1], iax[2]};
  iorder.insert(iorder.end(), rax.begin(), rax.end());
  iorder.insert(iorder.end(), {iax[3], iax[4]});
  si.reorder(iorder);
  si.unroll(iax[3]);
  si.vectorize(iax[4]);
}

void register_pool(const std::string& name, bool is_avg) {
  OpDef def;
  def.name = name;
  def.pattern = Pattern::kComplexOutFusable;
  def.attrs = window_attrs(2, pool_window(is_avg));
  def.flops = pool_flops();
  if (!is_blocked(name)) def.blocked_form = name + "_nchwc";  // pooling is per channel
  def.space_gpu = gpu_default_space;                          // the default GPU schedule, tunable
  def.infer = [name, is_avg](const std::vector<TensorType>& in, const Attrs& attrs) {
    PoolAttrs a = parse_pool(name, in, attrs, is_avg);
    return std::vector<TensorType>{{pooled_shape(in[0].shape, a.h.out, a.w.out), in[0].dtype}};
  };
  def.compute = [name, is_avg](const std::vector<te::Tensor>& in, const Attrs& attrs) {
    return pool_compute(name, in[0], attrs, is_avg);
  };
  def.reference = [name, is_avg](const std::vector<runtime::NDArray>& in, const Attrs& attrs) {
    return std::vector<runtime::NDArray>{pool_reference(name, in[0], attrs, is_avg)};
  };
  def.schedule_x86 = [name](te::Schedule& s, const std::vector<te::Tensor>& outs, const Target& t,
                            const Config& config) {
    if (is_blocked(name)) {
      schedule_pool_nchwc_x86(s, outs, t, config);
    } else {
      schedule_window_x86(s, outs[0], t);
    }
  };
  // Blocked pools: the columns per block and the parallel rows (pool_nchwc_space).
  def.space = [name, is_avg](const std::vector<TensorType>& in, const Attrs& attrs,
                             const Target& t) {
    if (!is_blocked(name)) return ConfigSpace{};
    PoolAttrs a = parse_pool(name, in, attrs, is_avg);
    return pool_nchwc_space(pooled_shape(in[0].shape, a.h.out, a.w.out), a.h.kernel * a.w.kernel,
                            t);
  };
  def.float16_via_float32 = true;
  register_op(std::move(def));
}

// ---- global pools: [N, C, H, W] -> [N, C, 1, 1]

void check_global_input(const std::string& op, const std::vector<TensorType>& in) {
  ANVIL_CHECK(in.size() == 1, op, ": expects 1 input, got ", in.size());
  check_float_input(op, in[0], "x");
  check_pool_rank(op, in[0]);
}

// Rule: the fused n*c loop is parallel when the work reaches kParallelWork and there are at
// least two planes; each plane is reduced by a serial loop (its accumulator stays in a
// register).
void schedule_global_x86(te::Schedule& s, const te::Tensor& out) {
  te::Stage st = s[out];
  std::vector<IterVar> ax = st.axis();
  std::vector<int64_t> shape = shape_of(out);
  int64_t window = 1;
  for (const IterVar& r : st.reduce_axis()) window *= *as_const_int(r->dom.extent);
  IterVar planes = st.fuse(st.fuse(st.fuse(ax[0], ax[1]), ax[2]), ax[3]);
  int64_t n = shape[0] * shape[1];
  if (n >= 2 && n * window >= kParallelWork) st.parallel(planes);
}

void register_global_pool(const std::string& name, bool is_avg) {
  OpDef def;
  def.name = name;
  def.pattern = Pattern::kComplexOutFusable;
  def.flops = flops_per_input();
  if (!is_blocked(name)) def.blocked_form = name + "_nchwc";
  def.space_gpu = gpu_default_space;  // the default GPU schedule, tunable
  def.infer = [name](const std::vector<TensorType>& in, const Attrs&) {
    check_global_input(name, in);
    return std::vector<TensorType>{{pooled_shape(in[0].shape, 1, 1), in[0].dtype}};
  };
  def.compute = [name, is_avg](const std::vector<te::Tensor>& in, const Attrs&) {
    te::Tensor x = in[0];
    std::vector<int64_t> xs = shape_of(x);
    check_global_input(name, {{xs, x->dtype}});
    IterVar rh = te::reduce_axis(static_cast<int>(xs[2]), "rh");
    IterVar rw = te::reduce_axis(static_cast<int>(xs[3]), "rw");
    auto body = [&](const std::vector<Var>& i) {
      std::vector<Expr> at = {i[0], i[1], rh->var, rw->var};
      if (i.size() == 5) at.push_back(i[4]);
      Expr v = x(at);
      if (!is_avg) return te::max(v, {rh, rw});
      return te::sum(v * make_const(x->dtype, 1.0 / static_cast<double>(xs[2] * xs[3])), {rh, rw});
    };
    return std::vector<te::Tensor>{te::compute(to_exprs(pooled_shape(xs, 1, 1)), body, name)};
  };
  // Plane p's element i at (p / B * plane + i) * B + p % B (B = 1 for NCHW).
  def.reference = [is_avg](const std::vector<runtime::NDArray>& in, const Attrs&) {
    const std::vector<int64_t>& xs = in[0].shape();
    int64_t B = xs.size() == 5 ? xs[4] : 1;
    const std::vector<double> x = host::read_all_f64(in[0]);
    int64_t plane = xs[2] * xs[3];
    std::vector<double> out(static_cast<size_t>(xs[0] * xs[1] * B));
    for (int64_t p = 0; p < xs[0] * xs[1] * B; ++p) {
      double best = -std::numeric_limits<double>::infinity(), total = 0;
      bool nan = false;
      for (int64_t i = 0; i < plane; ++i) {
        double v = x[static_cast<size_t>((p / B * plane + i) * B + p % B)];
        nan = nan || std::isnan(v);
        best = std::max(best, v);
        total += v;
      }
      double r = is_avg ? total / static_cast<double>(plane) : best;
      out[static_cast<size_t>(p)] = nan ? std::numeric_limits<double>::quiet_NaN() : r;
    }
    return std::vector<runtime::NDArray>{
        host::from_all_f64(pooled_shape(xs, 1, 1), from_dlpack(in[0].dtype()), out)};
  };
  def.schedule_x86 = [name](te::Schedule& s, const std::vector<te::Tensor>& outs, const Target& t,
                            const Config& config) {
    if (is_blocked(name)) {
      schedule_pool_nchwc_x86(s, outs, t, config);
    } else {
      schedule_global_x86(s, outs[0]);
    }
  };
  def.space = [](const std::vector<TensorType>&, const Attrs&, const Target&) {
    return ConfigSpace{};
  };
  def.float16_via_float32 = true;
  register_op(std::move(def));
}

// `per` FLOPs for each element of the (first) output.
FlopsFn norm_flops(double per) {
  return [per](const std::vector<TensorType>&, const std::vector<TensorType>& out,
               const Attrs& attrs) {
    return per * numel(TensorType{flops_operand(attrs.op(), out, false, 0, 0), {}});
  };
}

// ---- batch_norm (inference): y = (x - mean[c]) * scale[c] / sqrt(var[c] + epsilon) + bias[c]

// The normalizations' epsilon (finite and non-negative: the schema checks it).
AttrSpec epsilon_attr() {
  AttrCheck finite{"be finite and non-negative", [](const AttrValue& v) {
                     const double* d = std::get_if<double>(&v);
                     double e = d ? *d : static_cast<double>(std::get<int64_t>(v));
                     return std::isfinite(e) && e >= 0;
                   }};
  return {"epsilon", AttrType::kFloat, 1e-5, {finite}, "added to the variance"};
}

double epsilon_of(const std::string&, const Attrs& attrs) {
  return attrs.get_float("epsilon");
}

// Checks that input `i` (named `what`) of `op` has exactly `shape`.
void check_param(const std::string& op, const std::vector<TensorType>& in, size_t i,
                 const char* what, const std::vector<int64_t>& shape, const std::string& why) {
  ANVIL_CHECK(in[i].dtype == in[0].dtype, op, ": input '", what, "' must be ", in[0].dtype,
              " like input 'x', not ", in[i].dtype);
  ANVIL_CHECK(in[i].shape == shape, op, ": input '", what, "' has shape ", shape_str(in[i].shape),
              ", expected ", shape_str(shape), " (", why, ")");
}

void check_batch_norm(const std::string& op, const std::vector<TensorType>& in,
                      const Attrs& attrs) {
  ANVIL_CHECK(in.size() == 5, op, ": expects 5 inputs (x, scale, bias, mean, var), got ",
              in.size());
  check_float_input(op, in[0], "x");
  ANVIL_CHECK(in[0].shape.size() >= 2, op, ": input 'x' must have at least 2 dimensions, got ",
              to_string(in[0]));
  const char* names[] = {"x", "scale", "bias", "mean", "var"};
  int64_t C = in[0].shape[1];
  for (size_t i = 1; i < 5; ++i) {
    check_param(op, in, i, names[i], {C}, "one per channel of x, C = " + std::to_string(C));
  }
  epsilon_of(op, attrs);
}

void register_batch_norm() {
  const std::string name = "batch_norm";
  OpDef def;
  def.name = name;
  def.attrs = std::vector<AttrSpec>{epsilon_attr()};
  def.flops = norm_flops(2);  // scale and shift per element
  def.pattern = Pattern::kInjective;
  def.infer = [name](const std::vector<TensorType>& in, const Attrs& attrs) {
    check_batch_norm(name, in, attrs);
    return std::vector<TensorType>{in[0]};
  };
  def.compute = [name](const std::vector<te::Tensor>& in, const Attrs& attrs) {
    double eps = epsilon_of(name, attrs);
    te::Tensor x = in[0], scale = in[1], bias = in[2], mean = in[3], var = in[4];
    Expr e = make_const(x->dtype, eps);
    return std::vector<te::Tensor>{te::compute(
        x->shape,
        [&](const std::vector<Var>& i) {
          Expr c = i[1];
          Expr inv = Call::make(Intrinsic::kRsqrt, {var(c) + e});
          return (x(std::vector<Expr>(i.begin(), i.end())) - mean(c)) * (scale(c) * inv) + bias(c);
        },
        name)};
  };
  def.reference = [name](const std::vector<runtime::NDArray>& in, const Attrs& attrs) {
    double eps = epsilon_of(name, attrs);
    const std::vector<int64_t>& xs = in[0].shape();
    int64_t C = xs[1], inner = 1;
    for (size_t d = 2; d < xs.size(); ++d) inner *= xs[d];
    std::vector<std::vector<double>> v;
    for (const runtime::NDArray& a : in) v.push_back(host::read_all_f64(a));
    std::vector<double> out(v[0].size());
    for (size_t i = 0; i < out.size(); ++i) {
      size_t c = i / static_cast<size_t>(inner) % static_cast<size_t>(C);
      out[i] = (v[0][i] - v[3][c]) / std::sqrt(v[4][c] + eps) * v[1][c] + v[2][c];
    }
    return std::vector<runtime::NDArray>{host::from_all_f64(xs, from_dlpack(in[0].dtype()), out)};
  };
  def.schedule_x86 = [](te::Schedule& s, const std::vector<te::Tensor>& outs, const Target& t,
                        const Config&) { schedule_injective_x86(s, outs[0], t); };
  def.space = [](const std::vector<TensorType>&, const Attrs&, const Target&) {
    return ConfigSpace{};
  };
  def.float16_via_float32 = true;
  register_op(std::move(def));
}

// ---- layer_norm and instance_norm: each row (the leading `outer` dimensions fixed) is
// normalized by its own mean and variance, then scaled and shifted.

// The affine parameters' indices for an element, given its coordinates.
using ParamIndex = std::function<std::vector<Expr>(const std::vector<Var>&)>;

// The interleaved partial sums of a row's statistics (normalize).
constexpr int64_t kStatPartials = 16;

// The normalized tensor: stages `<op>_mean` and `<op>_var` (shape: the leading `outer`
// dimensions, or [1] when there are none; over one axis of a multiple of kStatPartials, each
// sums a `<op>_mean_partial` / `<op>_var_partial` stage) and the output.
te::Tensor normalize(const std::string& op, const te::Tensor& x, size_t outer, double eps,
                     const te::Tensor& scale, const te::Tensor& bias, const ParamIndex& index) {
  std::vector<int64_t> xs = shape_of(x);
  std::vector<int64_t> row_shape(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(outer));
  int64_t cols = 1;
  for (size_t d = outer; d < xs.size(); ++d) cols *= xs[d];
  if (row_shape.empty()) row_shape = {1};
  Expr inv_cols = make_const(x->dtype, 1.0 / static_cast<double>(cols));
  auto row_of = [&](const std::vector<Var>& i) {
    if (outer == 0) return std::vector<Expr>{Expr(0)};
    return std::vector<Expr>(i.begin(), i.begin() + static_cast<std::ptrdiff_t>(outer));
  };
  // x at the row of coordinates i (their first `outer`) and the reduction axes `r`.
  auto x_at = [&](const std::vector<Var>& i, const std::vector<IterVar>& r) {
    std::vector<Expr> idx(i.begin(), i.begin() + static_cast<std::ptrdiff_t>(outer));
    for (const IterVar& v : r) idx.push_back(v->var);
    return x(idx);
  };
  auto reduce_axes = [&](const char* tag) {
    std::vector<IterVar> r;
    for (size_t d = outer; d < xs.size(); ++d) {
      r.push_back(te::reduce_axis(static_cast<int>(xs[d]), std::string(tag) + std::to_string(d)));
    }
    return r;
  };
  te::Tensor mean, var;
  if (outer > 0 && xs.size() - outer == 1 && cols % kStatPartials == 0 && cols > kStatPartials) {
    // A row of one axis is summed in kStatPartials interleaved partial sums (elements p,
    // p + kStatPartials, ...: a vector of accumulators where one scalar sum would wait on each add
    // before it), then the partial sums are added.
    std::vector<int64_t> partial_shape = row_shape;
    partial_shape.push_back(kStatPartials);
    auto partial = [&](const std::string& name, auto term) {
      IterVar r = te::reduce_axis(static_cast<int>(cols / kStatPartials), "r");
      return te::compute(
          to_exprs(partial_shape),
          [&](const std::vector<Var>& i) {
            std::vector<Expr> idx(i.begin(), i.end() - 1);
            idx.push_back(r->var * static_cast<int>(kStatPartials) + i.back());
            std::vector<Var> row(i.begin(), i.end() - 1);
            return te::sum(term(x(idx), row), {r});
          },
          name);
    };
    auto total = [&](const std::string& name, const te::Tensor& parts) {
      IterVar p = te::reduce_axis(static_cast<int>(kStatPartials), "p");
      return te::compute(
          to_exprs(row_shape),
          [&](const std::vector<Var>& i) {
            std::vector<Expr> idx(i.begin(), i.end());
            idx.push_back(p->var);
            return te::sum(parts(idx) * inv_cols, {p});
          },
          name);
    };
    mean = total(op + "_mean",
                 partial(op + "_mean_partial", [](Expr v, const std::vector<Var>&) { return v; }));
    var = total(op + "_var", partial(op + "_var_partial", [&](Expr v, const std::vector<Var>& row) {
                  Expr d = v - mean(std::vector<Expr>(row.begin(), row.end()));
                  return d * d;
                }));
  } else {
    std::vector<IterVar> rm = reduce_axes("rm");
    mean = te::compute(
        to_exprs(row_shape),
        [&](const std::vector<Var>& i) { return te::sum(x_at(i, rm) * inv_cols, rm); },
        op + "_mean");
    std::vector<IterVar> rv = reduce_axes("rv");
    var = te::compute(
        to_exprs(row_shape),
        [&](const std::vector<Var>& i) {
          Expr d = x_at(i, rv) - mean(row_of(i));
          return te::sum(d * d * inv_cols, rv);
        },
        op + "_var");
  }
  Expr e = make_const(x->dtype, eps);
  return te::compute(
      x->shape,
      [&](const std::vector<Var>& i) {
        std::vector<Expr> row = row_of(i);
        Expr inv = Call::make(Intrinsic::kRsqrt, {var(row) + e});
        Expr v = (x(std::vector<Expr>(i.begin(), i.end())) - mean(row)) * inv;
        std::vector<Expr> p = index(i);
        v = v * scale(p);
        if (bias.defined()) v = v + bias(p);
        return v;
      },
      op);
}

// Rule for a normalization: injective producers inlined; the output's leading (row) dimensions are
// fused into one loop, parallel when the work reaches kParallelWork and there are at least two
// rows; the row's mean and variance (and their partial sums) are computed inside it (compute_at),
// just for that row; the row dimensions are fused and vectorized by the vector width when a row
// holds at least one vector.
void schedule_norm_x86(te::Schedule& s, const te::Tensor& out, const Target& target) {
  // Injective stages before the normalization (ConvNeXt's transpose out of the blocked layout)
  // are read where the row reads them: computed whole at the root they would be serial copies
  // of the tensor, and a row reads its elements three times from L1.
  for (const te::Tensor& t : te::topological_order({out}))
    if (t.is_compute() && t.get() != out.get() && t->reduce_axis.empty()) s[t].compute_inline();
  te::Stage st = s[out];
  std::vector<IterVar> ax = st.axis();
  // The statistics stages (normalize's `<op>_mean` and `<op>_var`); a row is what they do not
  // reduce.
  std::vector<te::Tensor> stats;
  for (const auto& t : out->inputs) {
    te::Tensor in(t.get());
    if (in.name() == out.name() + "_mean" || in.name() == out.name() + "_var") stats.push_back(in);
  }
  ANVIL_ICHECK(stats.size() == 2, "normalization '", out.name(), "' has no statistics stages");
  size_t outer = ax.size() - stats[0]->reduce_axis.size();
  std::vector<int64_t> shape = shape_of(out);
  int64_t rows = 1, cols = 1;
  for (size_t d = 0; d < shape.size(); ++d) (d < outer ? rows : cols) *= shape[d];
  int64_t lanes = target.vector_lanes(out->dtype.bits());
  IterVar col = ax[outer];
  for (size_t d = outer + 1; d < ax.size(); ++d) col = st.fuse(col, ax[d]);
  if (cols >= lanes) st.vectorize(st.split(col, lanes).second);
  if (outer == 0) return;  // one row: the statistics stay at the root
  IterVar row = ax[0];
  for (size_t d = 1; d < outer; ++d) row = st.fuse(row, ax[d]);
  for (const te::Tensor& t : stats) {
    s[t].compute_at(st, row);
    // Partial sums (normalize's `<stat>_partial`) inside the statistic, the partials' axis inside
    // their reduction, vectorized.
    for (const auto& u : t->inputs) {
      te::Tensor part(u.get());
      if (part.name() != t.name() + "_partial") continue;
      te::Stage sp = s[part];
      sp.compute_at(s[t], s[t].axis().back());
      std::vector<IterVar> pax = sp.axis();
      sp.reorder({sp.reduce_axis()[0], pax.back()});
      sp.vectorize(pax.back());
    }
  }
  if (rows >= 2 && rows * cols * 3 >= kParallelWork) st.parallel(row);
}

int64_t layer_norm_axis(const std::string& op, const TensorType& x, const Attrs& attrs) {
  int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t axis = attrs.get_int("axis");
  ANVIL_CHECK(axis >= -rank && axis < rank, op, ": attribute 'axis' = ", axis,
              " is out of range for a ", rank, "-d input");
  return axis < 0 ? axis + rank : axis;
}

void check_layer_norm(const std::string& op, const std::vector<TensorType>& in,
                      const Attrs& attrs) {
  ANVIL_CHECK(in.size() == 2 || in.size() == 3, op,
              ": expects 2 or 3 inputs (x, scale[, bias]), got ", in.size());
  check_float_input(op, in[0], "x");
  ANVIL_CHECK(!in[0].shape.empty(), op, ": input 'x' must have at least 1 dimension");
  int64_t axis = layer_norm_axis(op, in[0], attrs);
  std::vector<int64_t> norm(in[0].shape.begin() + axis, in[0].shape.end());
  std::string why = "the normalized dimensions of x from axis " + std::to_string(axis);
  check_param(op, in, 1, "scale", norm, why);
  if (in.size() == 3) check_param(op, in, 2, "bias", norm, why);
  epsilon_of(op, attrs);
}

void check_instance_norm(const std::string& op, const std::vector<TensorType>& in,
                         const Attrs& attrs) {
  ANVIL_CHECK(in.size() == 3, op, ": expects 3 inputs (x, scale, bias), got ", in.size());
  check_float_input(op, in[0], "x");
  ANVIL_CHECK(in[0].shape.size() >= 3, op,
              ": input 'x' must have at least 3 dimensions (N, C, spatial...), got ",
              to_string(in[0]));
  int64_t C = in[0].shape[1];
  std::string why = "one per channel of x, C = " + std::to_string(C);
  check_param(op, in, 1, "scale", {C}, why);
  check_param(op, in, 2, "bias", {C}, why);
  epsilon_of(op, attrs);
}

// Reference: rows of `cols` contiguous elements; parameter p of element j in row r at
// param(r, j).
runtime::NDArray normalize_reference(const std::vector<runtime::NDArray>& in, int64_t rows,
                                     int64_t cols, double eps,
                                     const std::function<int64_t(int64_t, int64_t)>& param) {
  const std::vector<double> xv = host::read_all_f64(in[0]), scale = host::read_all_f64(in[1]);
  const std::vector<double> bias =
      in.size() > 2 ? host::read_all_f64(in[2]) : std::vector<double>{};
  const double* x = xv.data();
  std::vector<double> out(xv.size());
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < cols; ++j) mean += x[r * cols + j];
    mean /= static_cast<double>(cols);
    for (int64_t j = 0; j < cols; ++j) var += (x[r * cols + j] - mean) * (x[r * cols + j] - mean);
    var /= static_cast<double>(cols);
    for (int64_t j = 0; j < cols; ++j) {
      int64_t p = param(r, j);
      double y = (x[r * cols + j] - mean) / std::sqrt(var + eps) * scale[static_cast<size_t>(p)];
      if (!bias.empty()) y += bias[static_cast<size_t>(p)];
      out[static_cast<size_t>(r * cols + j)] = y;
    }
  }
  return host::from_all_f64(in[0].shape(), from_dlpack(in[0].dtype()), out);
}

void register_layer_norm() {
  const std::string name = "layer_norm";
  OpDef def;
  def.name = name;
  def.attrs = std::vector<AttrSpec>{
      epsilon_attr(), {"axis", AttrType::kInt, int64_t{-1}, {}, "the first normalized axis"}};
  def.flops = norm_flops(8);  // mean, variance, normalize, scale and shift per element
  def.pattern = Pattern::kReduction;
  def.space_gpu = gpu_default_space;  // the default GPU schedule, tunable
  def.infer = [name](const std::vector<TensorType>& in, const Attrs& attrs) {
    check_layer_norm(name, in, attrs);
    return std::vector<TensorType>{in[0]};
  };
  def.compute = [name](const std::vector<te::Tensor>& in, const Attrs& attrs) {
    TensorType xt{shape_of(in[0]), in[0]->dtype};
    size_t axis = static_cast<size_t>(layer_norm_axis(name, xt, attrs));
    te::Tensor bias = in.size() > 2 ? in[2] : te::Tensor();
    return std::vector<te::Tensor>{normalize(
        name, in[0], axis, epsilon_of(name, attrs), in[1], bias, [axis](const std::vector<Var>& i) {
          return std::vector<Expr>(i.begin() + static_cast<std::ptrdiff_t>(axis), i.end());
        })};
  };
  def.reference = [name](const std::vector<runtime::NDArray>& in, const Attrs& attrs) {
    const std::vector<int64_t>& xs = in[0].shape();
    int64_t axis = layer_norm_axis(name, {xs, from_dlpack(in[0].dtype())}, attrs);
    int64_t rows = 1, cols = 1;
    for (size_t d = 0; d < xs.size(); ++d) (static_cast<int64_t>(d) < axis ? rows : cols) *= xs[d];
    return std::vector<runtime::NDArray>{normalize_reference(
        in, rows, cols, epsilon_of(name, attrs), [](int64_t, int64_t j) { return j; })};
  };
  def.schedule_x86 = [](te::Schedule& s, const std::vector<te::Tensor>& outs, const Target& t,
                        const Config&) { schedule_norm_x86(s, outs[0], t); };
  def.space = [](const std::vector<TensorType>&, const Attrs&, const Target&) {
    return ConfigSpace{};
  };
  def.float16_via_float32 = true;
  register_op(std::move(def));
}

void register_instance_norm() {
  const std::string name = "instance_norm";
  OpDef def;
  def.name = name;
  def.attrs = std::vector<AttrSpec>{epsilon_attr()};
  def.flops = norm_flops(8);  // mean, variance, normalize, scale and shift per element
  def.pattern = Pattern::kReduction;
  def.space_gpu = gpu_default_space;  // the default GPU schedule, tunable
  def.infer = [name](const std::vector<TensorType>& in, const Attrs& attrs) {
    check_instance_norm(name, in, attrs);
    return std::vector<TensorType>{in[0]};
  };
  def.compute = [name](const std::vector<te::Tensor>& in, const Attrs& attrs) {
    return std::vector<te::Tensor>{
        normalize(name, in[0], 2, epsilon_of(name, attrs), in[1], in[2],
                  [](const std::vector<Var>& i) { return std::vector<Expr>{i[1]}; })};
  };
  def.reference = [name](const std::vector<runtime::NDArray>& in, const Attrs& attrs) {
    const std::vector<int64_t>& xs = in[0].shape();
    int64_t C = xs[1], cols = 1;
    for (size_t d = 2; d < xs.size(); ++d) cols *= xs[d];
    return std::vector<runtime::NDArray>{normalize_reference(
        in, xs[0] * C, cols, epsilon_of(name, attrs), [C](int64_t r, int64_t) { return r % C; })};
  };
  def.schedule_x86 = [](te::Schedule& s, const std::vector<te::Tensor>& outs, const Target& t,
                        const Config&) { schedule_norm_x86(s, outs[0], t); };
  def.space = [](const std::vector<TensorType>&, const Attrs&, const Target&) {
    return ConfigSpace{};
  };
  def.float16_via_float32 = true;
  register_op(std::move(def));
}

}  // namespace

void register_pool_norm_ops() {
  register_pool("max_pool2d", false);
  register_pool("avg_pool2d", true);
  register_global_pool("global_max_pool2d", false);
  register_global_pool("global_avg_pool2d", true);
  register_pool("max_pool2d_nchwc", false);
  register_pool("avg_pool2d_nchwc", true);
  register_global_pool("global_max_pool2d_nchwc", false);
  register_global_pool("global_avg_pool2d_nchwc", true);
  register_batch_norm();
  register_layer_norm();
  register_instance_norm();
}

}  // namespace anvil::ops
