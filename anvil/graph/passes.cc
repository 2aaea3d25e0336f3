// The graph-to-graph passes of passes.h that do not change layouts: inference simplification,
// constant folding, dead-code and common-subexpression elimination, and the pass manager.
// (Fusion: fuse.cc; layout alteration: layout.cc; memory planning: memory_plan.cc.)
#include "anvil/graph/passes.h"

#include <cmath>
#include <iostream>
#include <map>
#include <numbers>
#include <optional>
#include <tuple>

#include "anvil/graph/control_flow.h"
#include "anvil/ops/window.h"
#include "anvil/support/error.h"

namespace anvil::graph {

namespace {

bool is_output(const Graph& g, ValueId v) {
  for (ValueId o : g.outputs())
    if (o == v) return true;
  return false;
}

// The distinct nodes reading value v.
std::vector<NodeId> distinct_users(const std::vector<std::vector<NodeId>>& users, ValueId v) {
  std::vector<NodeId> out;
  for (NodeId n : users[v])
    if (out.empty() || out.back() != n) out.push_back(n);
  return out;
}

const float* f32_data(const Value& v) {
  return v.data.data_as<float>();
}

bool is_f32_constant(const Graph& g, ValueId v) {
  const Value& val = g.value(v);
  return val.kind == ValueKind::kConstant && val.type.dtype == ir::DataType::Float32();
}

// ---- simplify_inference
//
// A conv2d / conv2d_transpose / dense with constant weights (and bias) whose output is read by
// one node only, and not a graph output, absorbs that node when it is a per-output-channel affine
// map with constant parameters: batch_norm (scale = gamma / sqrt(var + eps), shift = beta -
// mean * scale), mul / add by a constant of one value per channel or one value in all, sub / div
// by such a constant. y = scale * (W x + b) + shift becomes (scale W) x + (scale b + shift): the
// weight rows of each output channel are scaled and the bias is added (or replaced). Rounds repeat
// until nothing folds, so conv -> bn -> mul -> add becomes one conv. identity and dropout (when
// such operators are registered) and pads by zero are bypassed unless their output is a graph
// output. What no anchor absorbs is decomposed (decompose): batch_norm into mul and add, division
// by a constant into multiplication by its reciprocal. Convolution taps that read only padding
// are cut (drop_dead_taps).

// The per-output-channel affine map y = scale[o] * x + shift[o] that node `u` applies to its
// input `x` (the output of a conv or dense with `channels` channels on axis 1, type `t`), or
// false when `u` is not such a map with constant parameters.
bool channel_affine(const Graph& g, const Node& u, ValueId x, const ops::TensorType& t,
                    int64_t channels, std::vector<double>& scale, std::vector<double>& shift) {
  scale.assign(static_cast<size_t>(channels), 1.0);
  shift.assign(static_cast<size_t>(channels), 0.0);
  if (u.outputs.size() != 1 || !(g.value(u.outputs[0]).type == t)) return false;
  if (u.op == "batch_norm") {
    if (u.inputs.size() != 5 || u.inputs[0] != x) return false;
    for (size_t i = 1; i < 5; ++i)
      if (!is_f32_constant(g, u.inputs[i])) return false;
    double eps = u.attrs.get_float("epsilon");
    const float* gamma = f32_data(g.value(u.inputs[1]));
    const float* beta = f32_data(g.value(u.inputs[2]));
    const float* mean = f32_data(g.value(u.inputs[3]));
    const float* var = f32_data(g.value(u.inputs[4]));
    for (int64_t o = 0; o < channels; ++o) {
      double s = gamma[o] / std::sqrt(static_cast<double>(var[o]) + eps);
      scale[o] = s;
      shift[o] = beta[o] - mean[o] * s;
    }
    return true;
  }
  // mul and add in either order; sub and div with the convolution first (x - c, x / c).
  bool commutes = u.op == "mul" || u.op == "add";
  if (!commutes && u.op != "sub" && u.op != "div") return false;
  if (u.inputs.size() != 2 || u.inputs[0] == u.inputs[1]) return false;
  ValueId c = u.inputs[0] == x ? u.inputs[1] : u.inputs[1] == x && commutes ? u.inputs[0] : -1;
  if (c < 0 || !is_f32_constant(g, c)) return false;
  // The constant must broadcast to one value per channel (axis 1) or one value in all.
  const std::vector<int64_t>& cs = g.value(c).type.shape;
  size_t rank = t.shape.size();
  if (cs.size() > rank) return false;
  int64_t per_channel = 1;
  for (size_t i = 0; i < cs.size(); ++i) {
    size_t axis = rank - cs.size() + i;
    if (cs[i] == 1) continue;
    if (axis != 1 || cs[i] != channels) return false;
    per_channel = channels;
  }
  const float* d = f32_data(g.value(c));
  for (int64_t o = 0; o < channels; ++o) {
    double v = d[per_channel == 1 ? 0 : o];
    if (u.op == "mul") scale[o] = v;
    if (u.op == "div") scale[o] = 1.0 / v;
    if (u.op == "add") shift[o] = v;
    if (u.op == "sub") shift[o] = -v;
  }
  return true;
}

// Whether node `n` is a conv2d / conv2d_transpose / dense with a constant float32 weight (and
// bias, when it has one) whose weights a per-channel affine map can be folded into.
bool foldable_anchor(const Graph& g, const Node& n) {
  if (n.op != "conv2d" && n.op != "conv2d_transpose" && n.op != "dense") return false;
  if (n.outputs.size() != 1 || n.inputs.size() < 2) return false;
  for (size_t i = 1; i < n.inputs.size(); ++i)
    if (!is_f32_constant(g, n.inputs[i])) return false;
  return g.value(n.outputs[0]).type.shape.size() >= 2;
}

// The output channel of each weight element's leading two indices (w[i, j, ...]).
int64_t out_channel(const Node& n, const std::vector<int64_t>& ws, int64_t i, int64_t j) {
  if (n.op != "conv2d_transpose") return i;  // conv2d [O, C/g, ..], dense [N, K]
  // conv2d_transpose: [C, O/g, KH, KW]; input channel i is in group i / (C/g).
  int64_t group = n.attrs.get_int("group");  // the schema's default when absent
  return i / (ws[0] / group) * ws[1] + j;
}

// Folds `u` (a per-channel affine map of `n`'s output) into `n`: adds the new node and returns
// its output.
ValueId fold_affine(GraphRewriter& rw, const Node& n, const Node& u,
                    const std::vector<double>& scale, const std::vector<double>& shift) {
  const Graph& g = rw.old();
  Graph& out = rw.out();
  const Value& w = g.value(n.inputs[1]);
  const std::vector<int64_t>& ws = w.type.shape;
  runtime::NDArray nw = runtime::NDArray::empty(ws, runtime::dl_float32());
  int64_t inner = 1;
  for (size_t d = 2; d < ws.size(); ++d) inner *= ws[d];
  const float* src = w.data.data_as<float>();
  float* dst = nw.data_as<float>();
  for (int64_t i = 0; i < ws[0]; ++i)
    for (int64_t j = 0; j < ws[1]; ++j) {
      double s = scale[static_cast<size_t>(out_channel(n, ws, i, j))];
      for (int64_t k = 0; k < inner; ++k) {
        int64_t e = (i * ws[1] + j) * inner + k;
        dst[e] = static_cast<float>(src[e] * s);
      }
    }
  int64_t channels = static_cast<int64_t>(scale.size());
  runtime::NDArray nb = runtime::NDArray::empty({channels}, runtime::dl_float32());
  const float* old_bias = n.inputs.size() > 2 ? f32_data(g.value(n.inputs[2])) : nullptr;
  for (int64_t o = 0; o < channels; ++o)
    nb.data_as<float>()[o] =
        static_cast<float>((old_bias ? old_bias[o] : 0.0) * scale[o] + shift[o]);
  ValueId wv = out.add_constant(out.unique_name(w.name + "_folded"), nw);
  ValueId bv = out.add_constant(out.unique_name(n.name + "_bias_folded"), nb);
  const std::string& uname = g.value(u.outputs[0]).name;
  std::string out_name = out.find(uname) < 0 ? uname : out.unique_name(uname);
  std::vector<ValueId> outs = out.add_node(out.unique_name(n.name), n.op, n.attrs,
                                           {rw.map(n.inputs[0]), wv, bv}, {out_name});
  return outs[0];
}

// A name for a new node's output in `out`: the old value's name when it is still free.
std::string output_name(Graph& out, const std::string& old_name) {
  return out.find(old_name) < 0 ? old_name : out.unique_name(old_name);
}

// A batch_norm that no convolution absorbed (after a concat or a pool, as in DenseNet, or first
// in a model) becomes a per-channel mul and add, which fuse with their neighbours and run in the
// blocked layout; a float division by a constant without zeros becomes a multiplication by its
// reciprocal (GELU's x / sqrt(2)), which keeps the blocked layout where a division would not.
// Returns whether `n` was rewritten.
bool decompose(GraphRewriter& rw, const Node& n) {
  const Graph& g = rw.old();
  Graph& out = rw.out();
  if (n.outputs.size() != 1 || n.inputs.empty() || !is_f32_constant(g, n.inputs.back()) ||
      g.value(n.inputs[0]).type.dtype != ir::DataType::Float32())
    return false;
  const std::string& y = g.value(n.outputs[0]).name;
  if (n.op == "div" && n.inputs.size() == 2) {
    const Value& c = g.value(n.inputs[1]);
    runtime::NDArray r = runtime::NDArray::empty(c.type.shape, runtime::dl_float32());
    for (int64_t i = 0; i < r.numel(); ++i) {
      float v = 1.0f / f32_data(c)[i];
      if (!std::isfinite(v) || v == 0.0f) return false;
      r.data_as<float>()[i] = v;
    }
    ValueId rc = out.add_constant(out.unique_name(c.name + "_reciprocal"), r);
    rw.set(n.outputs[0],
           out.add(output_name(out, y), "mul", ops::Attrs("mul", {}), {rw.map(n.inputs[0]), rc}));
    return true;
  }
  if (n.op != "batch_norm" || n.inputs.size() != 5) return false;
  const std::vector<int64_t>& xs = g.value(n.inputs[0]).type.shape;
  for (size_t i = 1; i < 5; ++i)
    if (!is_f32_constant(g, n.inputs[i])) return false;
  if (xs.size() < 2) return false;
  std::vector<double> scale, shift;
  if (!channel_affine(g, n, n.inputs[0], g.value(n.outputs[0]).type, xs[1], scale, shift))
    return false;
  std::vector<int64_t> shape(xs.size() - 1, 1);  // [C, 1, ..]: broadcasts over axis 1
  shape[0] = xs[1];
  runtime::NDArray sc = runtime::NDArray::empty(shape, runtime::dl_float32());
  runtime::NDArray sh = runtime::NDArray::empty(shape, runtime::dl_float32());
  for (int64_t o = 0; o < xs[1]; ++o) {
    sc.data_as<float>()[o] = static_cast<float>(scale[static_cast<size_t>(o)]);
    sh.data_as<float>()[o] = static_cast<float>(shift[static_cast<size_t>(o)]);
  }
  ValueId scv = out.add_constant(out.unique_name(n.name + "_scale"), sc);
  ValueId shv = out.add_constant(out.unique_name(n.name + "_shift"), sh);
  ValueId m = out.add(out.unique_name(n.name + "_mul"), "mul", ops::Attrs("mul", {}),
                      {rw.map(n.inputs[0]), scv});
  rw.set(n.outputs[0], out.add(output_name(out, y), "add", ops::Attrs("add", {}), {m, shv}));
  return true;
}

// A pad by zero on every side (PyTorch exports one before some average pools).
bool no_op_pad(const Node& n) {
  if (n.op != "pad") return false;
  for (int64_t p : n.attrs.get_ints("pads"))
    if (p != 0) return false;
  return true;
}

// The value of a float32 constant with one element, or none.
std::optional<double> scalar_constant(const Graph& g, ValueId v) {
  const Value& c = g.value(v);
  if (!is_f32_constant(g, v) || c.data.numel() != 1) return std::nullopt;
  return static_cast<double>(f32_data(c)[0]);
}

bool near(std::optional<double> v, double want) {
  return v && std::abs(*v - want) <= 1e-6 * std::abs(want);
}

// The GELU that exporters spell out, 0.5 x (1 + erf(x / sqrt 2)) (PyTorch's nn.GELU: div, erf,
// add 1, mul by x, mul by 0.5; or 0.5 x first, or x times 1 / sqrt 2), ending at node `n`,
// becomes one gelu: then its x, a dense or convolution output read twice by the pattern, is read
// once, and the gelu fuses into that kernel's epilogue. Returns whether `n` was rewritten; the
// pattern's other nodes are left to dead-code elimination.
bool recognize_gelu(GraphRewriter& rw, const Node& n,
                    const std::vector<std::vector<NodeId>>& users) {
  const Graph& g = rw.old();
  if (n.op != "mul" || n.inputs.size() != 2 || n.outputs.size() != 1 ||
      g.value(n.outputs[0]).type.dtype != ir::DataType::Float32())
    return false;
  // The node producing v, when v is an intermediate value read once, by one node.
  auto sole = [&](ValueId v, const char* op) -> const Node* {
    const Value& val = g.value(v);
    if (val.kind != ValueKind::kNodeOutput || is_output(g, v) || users[v].size() != 1)
      return nullptr;
    const Node& p = g.node(val.node);
    return p.op == op && p.outputs.size() == 1 ? &p : nullptr;
  };
  // The other operand of binary node b when one operand is the scalar constant `c`.
  auto other_than_scalar = [&](const Node& b, double c) -> std::optional<ValueId> {
    if (b.inputs.size() != 2) return std::nullopt;
    for (int k = 0; k < 2; ++k)
      if (near(scalar_constant(g, b.inputs[k]), c)) return b.inputs[1 - k];
    return std::nullopt;
  };
  // 1 + erf(x / sqrt 2) as node `a`: returns x.
  auto one_plus_erf = [&](ValueId v) -> std::optional<ValueId> {
    const Node* a = sole(v, "add");
    std::optional<ValueId> e = a ? other_than_scalar(*a, 1.0) : std::nullopt;
    const Node* erf = e ? sole(*e, "erf") : nullptr;
    if (!erf || erf->inputs.size() != 1) return std::nullopt;
    if (const Node* d = sole(erf->inputs[0], "div")) {
      if (d->inputs.size() == 2 && near(scalar_constant(g, d->inputs[1]), std::numbers::sqrt2))
        return d->inputs[0];
    } else if (const Node* m = sole(erf->inputs[0], "mul")) {
      return other_than_scalar(*m, 1 / std::numbers::sqrt2);
    }
    return std::nullopt;
  };
  std::optional<ValueId> x;
  if (std::optional<ValueId> half_of = other_than_scalar(n, 0.5)) {
    // (x (1 + erf)) 0.5
    if (const Node* m = sole(*half_of, "mul")) {
      for (int k = 0; k < 2 && !x; ++k) {
        std::optional<ValueId> inner = one_plus_erf(m->inputs[k]);
        if (inner && *inner == m->inputs[1 - k]) x = inner;
      }
    }
  } else {
    // (0.5 x) (1 + erf)
    for (int k = 0; k < 2 && !x; ++k) {
      const Node* h = sole(n.inputs[k], "mul");
      std::optional<ValueId> hx = h ? other_than_scalar(*h, 0.5) : std::nullopt;
      std::optional<ValueId> inner = hx ? one_plus_erf(n.inputs[1 - k]) : std::nullopt;
      if (inner && *inner == *hx) x = inner;
    }
  }
  if (!x) return false;
  Graph& out = rw.out();
  rw.set(n.outputs[0], out.add(output_name(out, g.value(n.outputs[0]).name), "gelu",
                               ops::Attrs("gelu", {}), {rw.map(*x)}));
  return true;
}

// For each output position of a convolution along one spatial axis, the first and last tap that
// read inside the input (taps between them do too; first > last: none).
struct LiveTaps {
  int64_t first, last;
  friend bool operator==(const LiveTaps&, const LiveTaps&) = default;
};
std::vector<LiveTaps> live_taps(int64_t K, int64_t in, int64_t out, int64_t stride, int64_t dil,
                                int64_t pad_lo) {
  std::vector<LiveTaps> r(static_cast<size_t>(out), {K, -1});
  for (int64_t o = 0; o < out; ++o) {
    for (int64_t k = 0; k < K; ++k) {
      int64_t i = o * stride + k * dil - pad_lo;
      if (i < 0 || i >= in) continue;
      r[o].first = std::min(r[o].first, k);
      r[o].last = k;
    }
  }
  return r;
}

// The taps [first[d], last[d]] of an OIHW weight.
runtime::NDArray cut_taps(const Value& w, const int64_t first[2], const int64_t last[2]) {
  const std::vector<int64_t>& ws = w.type.shape;
  int64_t kh = last[0] - first[0] + 1, kw = last[1] - first[1] + 1;
  runtime::NDArray nw = runtime::NDArray::empty({ws[0], ws[1], kh, kw}, runtime::dl_float32());
  const float* src = f32_data(w);
  float* dst = nw.data_as<float>();
  for (int64_t oc = 0; oc < ws[0] * ws[1]; ++oc)
    for (int64_t i = 0; i < kh; ++i)
      for (int64_t j = 0; j < kw; ++j)
        dst[(oc * kh + i) * kw + j] = src[(oc * ws[2] + first[0] + i) * ws[3] + first[1] + j];
  return nw;
}

// A float32 conv2d with a constant weight and a 4-d input (the candidates for cutting taps):
// its input and output shapes, weight and window.
struct ConvOperands {
  const std::vector<int64_t>&xs, &ys;  // input, output
  const Value& w;
  const std::vector<int64_t>& ws;
  ops::Window win;
};
std::optional<ConvOperands> conv_with_constant_weight(const Graph& g, const Node& n) {
  if (n.op != "conv2d" || n.inputs.size() < 2 || n.outputs.size() != 1 ||
      !is_f32_constant(g, n.inputs[1]) || g.value(n.inputs[0]).type.shape.size() != 4 ||
      g.value(n.inputs[1]).type.shape.size() != 4)
    return std::nullopt;
  const Value& w = g.value(n.inputs[1]);
  return ConvOperands{g.value(n.inputs[0]).type.shape, g.value(n.outputs[0]).type.shape, w,
                      w.type.shape, ops::parse_window(n.attrs, 2, ops::kWindowGroup)};
}

// The conv2d `n` with weight `w`, attributes `attrs` and input `x` (other inputs as they were).
ValueId conv_like(GraphRewriter& rw, const Node& n, ValueId x, runtime::NDArray w,
                  const ops::Attrs& attrs, const std::string& y) {
  Graph& out = rw.out();
  const Value& old_w = rw.old().value(n.inputs[1]);
  std::vector<ValueId> ins = {
      x, out.add_constant(out.unique_name(old_w.name + "_live_taps"), std::move(w))};
  for (size_t i = 2; i < n.inputs.size(); ++i) ins.push_back(rw.map(n.inputs[i]));
  return out.add_node(out.unique_name(n.name), "conv2d", attrs, ins, {y})[0];
}

// A 2-d convolution whose outer taps read only padding at every output position (a dilated
// convolution on a map smaller than its dilation: DeepLabv3's atrous rates 24 and 36 on a 14 x 14
// map leave only the centre tap) loses those taps: the weight is cut to the taps that can read
// the input and the pads shrink by what was cut, so every output reads the same values. Returns
// whether `n` was rewritten.
bool drop_dead_taps(GraphRewriter& rw, const Node& n) {
  const Graph& g = rw.old();
  std::optional<ConvOperands> c = conv_with_constant_weight(g, n);
  if (!c) return false;
  const auto& [xs, ys, w, ws, win] = *c;
  // Per spatial axis: the first and last tap that some output reads inside the input.
  int64_t first[2], last[2];
  std::vector<int64_t> lo = win.pad_lo, hi = win.pad_hi;
  bool cut = false;
  for (int d = 0; d < 2; ++d) {
    int64_t K = ws[2 + d], in = xs[2 + d], out = ys[2 + d];
    int64_t s = win.strides[d], dil = win.dilations[d];
    first[d] = K;
    last[d] = -1;
    for (const LiveTaps& t : live_taps(K, in, out, s, dil, win.pad_lo[d])) {
      first[d] = std::min(first[d], t.first);
      last[d] = std::max(last[d], t.last);
    }
    if (last[d] < 0) return false;  // reads only padding: leave it to the op
    lo[d] = win.pad_lo[d] - first[d] * dil;
    int64_t span = (last[d] - first[d]) * dil + 1;
    // The end pad that keeps `out` outputs (none when the original's last rows went unread).
    hi[d] = std::max<int64_t>((out - 1) * s + span - in - lo[d], 0);
    if (lo[d] < 0 || (in + lo[d] + hi[d] - span) / s + 1 != out) return false;
    cut = cut || first[d] > 0 || last[d] < K - 1;
  }
  if (!cut) return false;
  ops::Attrs attrs = n.attrs;
  attrs.set("pads", std::vector<int64_t>{lo[0], lo[1], hi[0], hi[1]});
  const std::string& y = g.value(n.outputs[0]).name;
  rw.set(n.outputs[0], conv_like(rw, n, rw.map(n.inputs[0]), cut_taps(w, first, last), attrs,
                                 output_name(rw.out(), y)));
  return true;
}

// A convolution is cut when its bands cost at most this fraction of it (each band is a kernel of
// its own, and the bands are copied into one output).
constexpr double kMaxBandsCost = 0.8;

// A dilated convolution on a map about as small as its dilation (DeepLabv3's atrous rate 12 on a
// 14 x 14 map) multiplies mostly padding: at each output only the taps that land inside the map
// count. Cut along one spatial axis into bands of outputs that read the same taps, each band is a
// convolution without padding on that axis, over the rows its taps read (a slice), with the
// weight cut to those taps; the bands are concatenated. A band re-reads its taps' weights, which
// at batch 1 stream from memory: a band of P output positions and T taps costs T * (P + R)
// multiplies per channel pair, R the multiplies the target does in the time it streams one
// weight (Target::memory_bytes_per_cycle), and the cut is made when the bands cost at most
// kMaxBandsCost of the whole. cut_conv_bands repeats until no cut pays, so the bands of one axis
// may be cut along the other.
bool cut_into_bands(GraphRewriter& rw, const Node& n, const Target& target) {
  const Graph& g = rw.old();
  std::optional<ConvOperands> c = conv_with_constant_weight(g, n);
  if (!c) return false;
  const auto& [xs, ys, w, ws, win] = *c;
  double stream = target.flops_per_cycle() / 2 * 4 / target.memory_bytes_per_cycle();
  auto cost = [&](int64_t taps, int64_t positions) {
    return static_cast<double>(taps) * (static_cast<double>(positions) + stream);
  };
  for (int d = 0; d < 2; ++d) {
    int64_t K = ws[2 + d], in = xs[2 + d], out = ys[2 + d];
    int64_t other_taps = ws[3 - d], other_out = ys[3 - d];
    int64_t s = win.strides[d], dil = win.dilations[d];
    std::vector<LiveTaps> live = live_taps(K, in, out, s, dil, win.pad_lo[d]);
    // Bands: runs of outputs with the same live taps, [begin, end).
    std::vector<std::pair<int64_t, int64_t>> runs;
    double bands_cost = 0;
    for (int64_t a = 0; a < out;) {
      if (live[a].last < live[a].first) return false;  // padding only: leave it to the op
      int64_t b = a;
      while (b < out && live[b] == live[a]) ++b;
      runs.push_back({a, b});
      bands_cost += cost((live[a].last - live[a].first + 1) * other_taps, (b - a) * other_out);
      a = b;
    }
    if (runs.size() < 2 || bands_cost > kMaxBandsCost * cost(K * other_taps, out * other_out))
      continue;
    Graph& o = rw.out();
    const std::string& y = g.value(n.outputs[0]).name;
    std::vector<ValueId> bands;
    for (auto [a, b] : runs) {
      // Rows [r0, r1) are what taps [first, last] read for outputs [a, b), all inside the input.
      int64_t r0 = a * s + live[a].first * dil - win.pad_lo[d];
      int64_t r1 = (b - 1) * s + live[a].last * dil - win.pad_lo[d] + 1;
      ValueId x = rw.map(n.inputs[0]);
      if (r0 > 0 || r1 < in) {
        ops::Attrs slice("slice", {{"starts", std::vector<int64_t>{r0}},
                                   {"ends", std::vector<int64_t>{r1}},
                                   {"axes", std::vector<int64_t>{2 + d}}});
        x = o.add(o.unique_name(n.name + "_band_input"), "slice", slice, {x});
      }
      int64_t first[2] = {0, 0}, last[2] = {ws[2] - 1, ws[3] - 1};
      first[d] = live[a].first;
      last[d] = live[a].last;
      std::vector<int64_t> pads = {win.pad_lo[0], win.pad_lo[1], win.pad_hi[0], win.pad_hi[1]};
      pads[d] = pads[2 + d] = 0;
      ops::Attrs attrs = n.attrs;
      attrs.set("pads", pads);
      bands.push_back(
          conv_like(rw, n, x, cut_taps(w, first, last), attrs, o.unique_name(y + "_band")));
    }
    rw.set(n.outputs[0], o.add_node(o.unique_name(n.name + "_bands"), "concat",
                                    ops::Attrs("concat", {{"axis", int64_t{2 + d}}}), bands,
                                    {output_name(o, y)})[0]);
    return true;
  }
  return false;
}

// One round: every anchor absorbs at most its one affine consumer. Returns whether it changed.
bool simplify_round(const Graph& g, Graph& result) {
  GraphRewriter rw(g);
  std::vector<std::vector<NodeId>> users = g.users();
  std::vector<bool> absorbed(g.num_nodes(), false);
  bool changed = false;
  for (NodeId id = 0; id < static_cast<NodeId>(g.num_nodes()); ++id) {
    if (absorbed[id]) continue;
    const Node& n = g.node(id);
    if ((n.op == "identity" || n.op == "dropout" || no_op_pad(n)) && !n.inputs.empty() &&
        !n.outputs.empty() && !is_output(g, n.outputs[0])) {
      rw.set(n.outputs[0], rw.map(n.inputs[0]));
      for (size_t i = 1; i < n.outputs.size(); ++i)  // a dropout mask: must be unused
        ANVIL_CHECK(users[n.outputs[i]].empty() && !is_output(g, n.outputs[i]),
                    "simplify_inference: node '", n.name, "' (", n.op, "): output ",
                    g.value(n.outputs[i]).name, " is used; it cannot be dropped");
      changed = true;
      continue;
    }
    if (drop_dead_taps(rw, n) || recognize_gelu(rw, n, users)) {
      changed = true;
      continue;
    }
    if (foldable_anchor(g, n) && !is_output(g, n.outputs[0])) {
      std::vector<NodeId> us = distinct_users(users, n.outputs[0]);
      if (us.size() == 1) {
        const Node& u = g.node(us[0]);
        const ops::TensorType& t = g.value(n.outputs[0]).type;
        std::vector<double> scale, shift;
        if (channel_affine(g, u, n.outputs[0], t, t.shape[1], scale, shift)) {
          rw.set(u.outputs[0], fold_affine(rw, n, u, scale, shift));
          absorbed[us[0]] = true;
          changed = true;
          continue;
        }
      }
    }
    if (decompose(rw, n)) {
      changed = true;
      continue;
    }
    rw.copy_node(id);
  }
  result = rw.finish();
  return changed;
}

}  // namespace

// Dead nodes are removed first: a dead reader of a convolution's output would otherwise keep its
// batch norm from folding.
Graph simplify_inference(const Graph& g) {
  Graph cur = eliminate_dead_code(g);
  for (;;) {
    Graph next;
    if (!simplify_round(cur, next)) return next;
    cur = std::move(next);
  }
}

// ---- cut_conv_bands

Graph cut_conv_bands(const Graph& g, const Target& target) {
  Graph cur = g;
  for (;;) {
    GraphRewriter rw(cur);
    bool changed = false;
    for (NodeId id = 0; id < static_cast<NodeId>(cur.num_nodes()); ++id) {
      if (cut_into_bands(rw, cur.node(id), target)) {
        changed = true;
        continue;
      }
      rw.copy_node(id);
    }
    if (!changed) return cur;
    cur = rw.finish();
  }
}

// ---- fold_constants

// A node is not folded when its outputs are more than kMaxGrowth times the size of its inputs
// and larger than kMaxFoldBytes: a broadcast (expand of a scalar to an activation's shape) would
// turn a few bytes into megabytes of parameters that a kernel computes faster than it loads.
// Weight packing (at most 4x for Winograd's 6x6 tiles of a 3x3 kernel) always folds.
constexpr int64_t kMaxGrowth = 8;
constexpr int64_t kMaxFoldBytes = 64 * 1024;
// A loop is folded only when its trip count is given and at most this: a constant loop runs in
// the compiler once per build, and a while loop (no trip count) may not end.
constexpr int64_t kMaxFoldTrips = 4096;

// Whether a control-flow node on these constant arguments is cheap to evaluate now.
bool foldable_control(const Node& n, const std::vector<runtime::NDArray>& args) {
  if (n.op != "loop") return true;  // an if runs one body once; a scan, one step per slice
  if (!n.attrs.get_int("has_trip_count") || args.empty() || args[0].numel() != 1) return false;
  ir::DataType t = ops::from_dlpack(args[0].dtype());
  int64_t trips = t == ir::DataType::Int64()   ? args[0].data_as<int64_t>()[0]
                  : t == ir::DataType::Int32() ? args[0].data_as<int32_t>()[0]
                                               : kMaxFoldTrips + 1;
  return trips <= kMaxFoldTrips;
}

Graph fold_constants(const Graph& g) {
  GraphRewriter rw(g);
  // Folded values stay here until a kept node or the graph's outputs read them, so that the
  // intermediate results of a folded chain (and the constants it consumed) do not linger.
  std::vector<runtime::NDArray> folded(g.num_values());
  auto constant_data = [&](ValueId v) -> runtime::NDArray {
    const Value& val = g.value(v);
    return val.kind == ValueKind::kConstant ? val.data : folded[v];
  };
  auto materialize = [&](ValueId v) {
    if (folded[v].defined() && !rw.mapped(v))
      rw.set(v, rw.out().add_constant(rw.out().unique_name(g.value(v).name), folded[v]));
  };
  for (NodeId id = 0; id < static_cast<NodeId>(g.num_nodes()); ++id) {
    const Node& n = g.node(id);
    bool all_const = !n.inputs.empty();
    int64_t in_bytes = 0, out_bytes = 0;
    std::vector<runtime::NDArray> args;
    for (ValueId v : n.inputs) {
      runtime::NDArray d = constant_data(v);
      if (!d.defined()) {
        all_const = false;
        break;
      }
      in_bytes += static_cast<int64_t>(d.nbytes());
      args.push_back(d);
    }
    for (ValueId v : n.outputs) {
      const ops::TensorType& t = g.value(v).type;
      int64_t e = (t.dtype.bits() + 7) / 8 * t.dtype.lanes();
      for (int64_t d : t.shape) e *= d;
      out_bytes += e;
    }
    if (!all_const || (out_bytes > kMaxFoldBytes && out_bytes > kMaxGrowth * in_bytes) ||
        (is_control_flow(n.op) && !foldable_control(n, args))) {
      for (ValueId v : n.inputs) materialize(v);
      rw.copy_node(id);
      continue;
    }
    std::vector<runtime::NDArray> res = is_control_flow(n.op)
                                            ? interpret_control(g, n, args)
                                            : ops::lookup(n.op).reference(args, n.attrs);
    ANVIL_CHECK(res.size() == n.outputs.size(), "fold_constants: node '", n.name, "' (", n.op,
                "): the reference returned ", res.size(), " outputs, expected ", n.outputs.size());
    for (size_t i = 0; i < res.size(); ++i) {
      const Value& ov = g.value(n.outputs[i]);
      ANVIL_CHECK(res[i].shape() == ov.type.shape, "fold_constants: node '", n.name, "' (", n.op,
                  "): the reference's output ", i, " has shape ", ops::list_str(res[i].shape()),
                  ", expected ", ops::to_string(ov.type));
      ANVIL_CHECK(ops::from_dlpack(res[i].dtype()) == ov.type.dtype, "fold_constants: node '",
                  n.name, "' (", n.op, "): the reference's output ", i, " has dtype ",
                  ops::from_dlpack(res[i].dtype()), ", expected ", ops::to_string(ov.type));
      folded[n.outputs[i]] = res[i];
    }
  }
  for (ValueId v : g.outputs()) materialize(v);
  return rw.finish();
}

// ---- eliminate_dead_code

Graph eliminate_dead_code(const Graph& g) {
  std::vector<bool> live_value(g.num_values(), false), live_node(g.num_nodes(), false);
  for (ValueId v : g.outputs()) live_value[v] = true;
  for (NodeId id = static_cast<NodeId>(g.num_nodes()) - 1; id >= 0; --id) {
    const Node& n = g.node(id);
    for (ValueId v : n.outputs) live_node[id] = live_node[id] || live_value[v];
    if (live_node[id])
      for (ValueId v : n.inputs) live_value[v] = true;
  }
  GraphRewriter rw(g);
  for (NodeId id = 0; id < static_cast<NodeId>(g.num_nodes()); ++id)
    if (live_node[id]) rw.copy_node(id);
  return rw.finish();
}

// ---- eliminate_common_subexpressions

Graph eliminate_common_subexpressions(const Graph& g) {
  GraphRewriter rw(g);
  using Key = std::tuple<std::string, std::map<std::string, ops::AttrValue>, std::vector<ValueId>>;
  std::map<Key, NodeId> seen;  // -> the old node whose (new) outputs stand for the key
  for (NodeId id = 0; id < static_cast<NodeId>(g.num_nodes()); ++id) {
    const Node& n = g.node(id);
    std::vector<ValueId> ins;
    for (ValueId v : n.inputs) ins.push_back(rw.map(v));
    if (!n.bodies.empty()) {  // equal inputs and attributes, but bodies of their own
      rw.copy_node(id);
      continue;
    }
    Key key{n.op, n.attrs.values(), ins};
    auto it = seen.find(key);
    bool is_graph_output = false;
    for (ValueId v : n.outputs) is_graph_output = is_graph_output || is_output(g, v);
    // A duplicate that is a graph output stays: outputs keep their own values and names.
    if (it != seen.end() && !is_graph_output) {
      const Node& first = g.node(it->second);
      for (size_t i = 0; i < n.outputs.size(); ++i) rw.set(n.outputs[i], rw.map(first.outputs[i]));
      continue;
    }
    rw.copy_node(id);
    if (it == seen.end()) seen.emplace(std::move(key), id);
  }
  return rw.finish();
}

// ---- run_passes

Graph run_passes(const Graph& g, const std::vector<Pass>& passes,
                 const std::vector<std::string>& print_after) {
  auto wants = [&](const std::string& name) {
    for (const std::string& p : print_after)
      if (p == "all" || p == name) return true;
    return false;
  };
  for (const std::string& p : print_after) {
    bool known = p == "all";
    for (const Pass& pass : passes) known = known || pass.name == p;
    ANVIL_CHECK(known, "run_passes: print_after names '", p, "', which is not a pass here");
  }
  Graph cur = g;
  for (const Pass& pass : passes) {
    cur = pass.run(cur);
    if (wants(pass.name)) std::cerr << "// after " << pass.name << "\n" << cur.str();
  }
  return cur;
}

}  // namespace anvil::graph
