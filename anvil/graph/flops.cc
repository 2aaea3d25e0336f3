// FLOP counts of operators and the measured peak (flops.h).
#include "anvil/graph/flops.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "anvil/support/error.h"
#include "anvil/target/target.h"

namespace anvil::graph {

namespace {

double numel(const std::vector<int64_t>& shape) {
  double n = 1;
  for (int64_t d : shape) n *= static_cast<double>(d);
  return n;
}

double numel(const ops::TensorType& t) {
  return numel(t.shape);
}

double product(const std::vector<int64_t>& v) {
  return numel(v);
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Operators that only move or convert data.
const std::set<std::string>& data_movement() {
  static const std::set<std::string> ops = {
      "reshape",  "flatten", "squeeze", "unsqueeze", "transpose",
      "concat",   "split",   "slice",   "pad",       "gather",
      "expand",   "tile",    "resize",  "cast",      "layout_transform",
      "identity", "dropout"};
  return ops;
}

}  // namespace

double op_flops(const std::string& op, const std::vector<ops::TensorType>& in,
                const std::vector<ops::TensorType>& out, const ops::Attrs& attrs) {
  // The rank each operand must have for its dimensions to be read below.
  auto need = [&](bool is_input, size_t i, size_t min_rank) -> const std::vector<int64_t>& {
    const std::vector<ops::TensorType>& v = is_input ? in : out;
    ANVIL_CHECK(i < v.size() && v[i].shape.size() >= min_rank, "flops: operator '", op, "' needs ",
                is_input ? "input " : "output ", i, " of rank at least ", min_rank, ", got ",
                i < v.size() ? ops::to_string(v[i]) : std::string("none"));
    return v[i].shape;
  };
  auto bias = [&](size_t index) { return in.size() > index ? numel(need(false, 0, 0)) : 0.0; };
  if (ends_with(op, "_pack_weight") || data_movement().count(op)) return 0;

  // Convolutions: 2 FLOP per tap of the direct convolution.
  if (op == "conv1d" || op == "conv2d" || op == "conv3d") {
    const std::vector<int64_t>& w = need(true, 1, 3);
    return 2 * numel(need(false, 0, 3)) * product(std::vector<int64_t>(w.begin() + 1, w.end())) +
           bias(2);
  }
  if (op == "conv1d_transpose" || op == "conv2d_transpose" || op == "conv3d_transpose") {
    const std::vector<int64_t>& w = need(true, 1, 3);
    return 2 * numel(need(true, 0, 3)) * product(std::vector<int64_t>(w.begin() + 1, w.end())) +
           bias(2);
  }
  if (op == "conv2d_nchwc") {
    const std::vector<int64_t>& w = need(true, 1, 6);  // [O/ob, C/ib, KH, KW, ib, ob]
    return 2 * numel(need(false, 0, 5)) * static_cast<double>(w[1] * w[4] * w[2] * w[3]);
  }
  if (op == "depthwise_conv2d_nchwc") {
    const std::vector<int64_t>& w = need(true, 1, 6);  // [C/b, 1, KH, KW, 1, b]
    return 2 * numel(need(false, 0, 5)) * static_cast<double>(w[2] * w[3]);
  }
  if (op == "conv2d_winograd_nchwc") {
    const std::vector<int64_t>& x = need(true, 0, 5);  // [N, C/ib, H, W, ib]
    return 2 * numel(need(false, 0, 5)) * static_cast<double>(x[1] * x[4]) * 9;
  }
  if (op == "conv2d_transpose_nchwc") {
    const std::vector<int64_t>& o = need(false, 0, 5);  // [N, O/ob, OH, OW, ob]
    std::vector<int64_t> k = attrs.get_ints("kernel_shape");
    return 2 * numel(need(true, 0, 5)) * static_cast<double>(o[1] * o[4]) * product(k);
  }

  // Matrix products: 2 FLOP per multiply-add of the reduction.
  if (op == "dense" || op == "dense_packed") {
    const std::vector<int64_t>& x = need(true, 0, 1);
    return 2 * numel(need(false, 0, 0)) * static_cast<double>(x.back()) + bias(2);
  }
  if (op == "matmul" || op == "batch_matmul") {
    const std::vector<int64_t>& a = need(true, 0, 1);
    bool trans_a = attrs.get_int("trans_a", 0) != 0 && a.size() >= 2;
    int64_t k = trans_a ? a[a.size() - 2] : a.back();
    return 2 * numel(need(false, 0, 0)) * static_cast<double>(k);
  }
  if (op == "lstm" || op == "gru") {
    const std::vector<int64_t>& x = need(true, 0, 3);  // [seq, batch, I]
    return 2 * static_cast<double>(x[0] * x[1]) *
           (numel(need(true, 1, 3)) + numel(need(true, 2, 3)));
  }

  // Windows and reductions.
  if (op.find("pool") != std::string::npos) {
    if (op.rfind("global_", 0) == 0) return numel(need(true, 0, 0));
    return numel(need(false, 0, 0)) * product(attrs.get_ints("kernel_shape"));
  }
  if (op.rfind("reduce_", 0) == 0 || op == "argmax" || op == "argmin")
    return numel(need(true, 0, 0));
  if (op == "softmax" || op == "log_softmax") return 4 * numel(need(true, 0, 0));
  if (op == "batch_norm") return 2 * numel(need(false, 0, 0));
  if (op == "layer_norm" || op == "instance_norm") return 8 * numel(need(false, 0, 0));

  // Everything else elementwise: one per output element; other opaque operators count nothing.
  if (ops::lookup(op).pattern != ops::Pattern::kInjective) return 0;
  double n = 0;
  for (const ops::TensorType& t : out) n += numel(t);
  return n;
}

double node_flops(const Graph& g, NodeId n) {
  const Node& node = g.node(n);
  std::vector<ops::TensorType> in, out;
  for (ValueId v : node.inputs) in.push_back(g.value(v).type);
  for (ValueId v : node.outputs) out.push_back(g.value(v).type);
  try {
    return op_flops(node.op, in, out, node.attrs);
  } catch (const InternalError&) {
    throw;
  } catch (const Error& e) {
    ANVIL_FAIL("node '", node.name, "' (", node.op, "): ", e.what());
  }
}

double graph_flops(const Graph& g) {
  double total = 0;
  for (size_t n = 0; n < g.num_nodes(); ++n) total += node_flops(g, static_cast<NodeId>(n));
  return total;
}

// ---- the peak
//
// Method: the peak of one core is (vector lanes) x (FMA pipes) x 2 FLOP x clock, but neither the
// number of pipes nor the clock (turbo, a VM's host) is reliably known, and on some CPUs a
// 512-bit FMA issues as two 256-bit halves. So the product is measured as a whole: kChains
// independent chains of FMAs on registers of the widest vector the kernels use (acc = acc * a + b,
// values that stay normal), enough chains to cover every pipe's latency (10: two pipes of latency
// 5 on the slowest x86 cores). A trial times a fixed number of iterations (about 4 ms); the best of
// five trials is the peak, which discounts a trial that another process interrupted. This is the
// rate the kernels' own FMA loops can reach at best, in the same units they are measured in.

constexpr int kChains = 10;
constexpr int kTrials = 5;

#define ANVIL_FMA_CHAINS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9)

// The operands come from the caller as values it read from volatile memory: a compiler that saw
// them as constants could find the chains' fixed points and fold the loop away (clang does).
__attribute__((target("avx512f"))) float fma_chains_avx512(int64_t iterations, float x, float y,
                                                           float z) {
  const __m512 a = _mm512_set1_ps(x), b = _mm512_set1_ps(y);
#define ANVIL_INIT(i) __m512 acc##i = _mm512_set1_ps(z + 0.001f * i);
#define ANVIL_STEP(i) acc##i = _mm512_fmadd_ps(acc##i, a, b);
#define ANVIL_SUM(i) sum = _mm512_add_ps(sum, acc##i);
  ANVIL_FMA_CHAINS(ANVIL_INIT)
  for (int64_t it = 0; it < iterations; ++it) {
    ANVIL_FMA_CHAINS(ANVIL_STEP)
  }
  __m512 sum = _mm512_setzero_ps();
  ANVIL_FMA_CHAINS(ANVIL_SUM)
#undef ANVIL_INIT
#undef ANVIL_STEP
#undef ANVIL_SUM
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, sum);
  float s = 0;
  for (float x : lanes) s += x;
  return s;
}

__attribute__((target("avx2,fma"))) float fma_chains_avx2(int64_t iterations, float x, float y,
                                                          float z) {
  const __m256 a = _mm256_set1_ps(x), b = _mm256_set1_ps(y);
#define ANVIL_INIT(i) __m256 acc##i = _mm256_set1_ps(z + 0.001f * i);
#define ANVIL_STEP(i) acc##i = _mm256_fmadd_ps(acc##i, a, b);
#define ANVIL_SUM(i) sum = _mm256_add_ps(sum, acc##i);
  ANVIL_FMA_CHAINS(ANVIL_INIT)
  for (int64_t it = 0; it < iterations; ++it) {
    ANVIL_FMA_CHAINS(ANVIL_STEP)
  }
  __m256 sum = _mm256_setzero_ps();
  ANVIL_FMA_CHAINS(ANVIL_SUM)
#undef ANVIL_INIT
#undef ANVIL_STEP
#undef ANVIL_SUM
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, sum);
  float s = 0;
  for (float x : lanes) s += x;
  return s;
}

float fma_chains_scalar(int64_t iterations, float a, float b, float z) {
  float acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = z + 0.001f * static_cast<float>(i);
  for (int64_t it = 0; it < iterations; ++it)
    for (int i = 0; i < kChains; ++i) acc[i] = acc[i] * a + b;
  float s = 0;
  for (float x : acc) s += x;
  return s;
}

#undef ANVIL_FMA_CHAINS

PeakFlops measure_peak() {
  PeakFlops p;
  float (*chains)(int64_t, float, float, float) = fma_chains_scalar;
  p.isa = "scalar";
  int lanes = Target::host().vector_lanes_f32();
  __builtin_cpu_init();
  if (lanes >= 16 && __builtin_cpu_supports("avx512f")) {
    chains = fma_chains_avx512;
    p.lanes = 16;
    p.isa = "avx512f";
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    chains = fma_chains_avx2;
    p.lanes = 8;
    p.isa = "avx2+fma";
  }
  using clock = std::chrono::steady_clock;
  volatile float sink = 0, a = 0.9999999f, b = 1e-7f, z = 1.0f;
  auto run = [&](int64_t iterations) { return chains(iterations, a, b, z); };
  // Calibrate the iteration count to about 4 ms a trial.
  int64_t iterations = 1 << 12;
  double seconds = 0;
  while (true) {
    auto start = clock::now();
    sink = sink + run(iterations);
    seconds = std::chrono::duration<double>(clock::now() - start).count();
    if (seconds >= 1e-3 || iterations >= (int64_t{1} << 40)) break;
    iterations *= 4;
  }
  iterations = std::max<int64_t>(
      1, static_cast<int64_t>(static_cast<double>(iterations) * 4e-3 / std::max(seconds, 1e-9)));
  double best = 0;
  for (int t = 0; t < kTrials; ++t) {
    auto start = clock::now();
    sink = sink + run(iterations);
    double s = std::chrono::duration<double>(clock::now() - start).count();
    double flops = 2.0 * static_cast<double>(iterations) * kChains * p.lanes;
    best = std::max(best, flops / std::max(s, 1e-9));
  }
  p.gflops_per_core = best / 1e9;
  return p;
}

const PeakFlops& measured_peak() {
  static const PeakFlops peak = measure_peak();
  return peak;
}

}  // namespace anvil::graph
