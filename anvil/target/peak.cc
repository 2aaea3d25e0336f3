#include "anvil/target/peak.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "anvil/target/target.h"

namespace anvil {

namespace {

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

}  // namespace

const PeakFlops& measured_peak() {
  static const PeakFlops peak = measure_peak();
  return peak;
}

}  // namespace anvil
