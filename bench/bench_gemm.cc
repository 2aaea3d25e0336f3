// bench_gemm: the tensor-expression GEMM (bench/gemm_te.h) against OpenBLAS, at 1 and 2
// threads, on M=N=K=1024 and on the convolution-like 3136x64x576. Reports GFLOP/s, the fraction
// of the FMA peak measured by a micro-benchmark in this binary, and the ratio to OpenBLAS.
// Outputs are compared with OpenBLAS's before anything is timed. Repetitions of all benchmarks
// are interleaved (Google Benchmark's random interleaving) and medians are reported.
//
//   build/bin/bench_gemm [--summary-json FILE] [google benchmark flags]
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "anvil/codegen/llvm/codegen_llvm.h"
#include "anvil/lower/lower.h"
#include "anvil/runtime/ndarray.h"
#include "gemm_te.h"

extern "C" void openblas_set_num_threads(int);
extern "C" char* openblas_get_config(void);

namespace {

using anvil::runtime::NDArray;

struct Shape {
  const char* name;
  int m, n, k;
};
constexpr Shape kShapes[] = {{"gemm_1024", 1024, 1024, 1024}, {"gemm_3136x64x576", 3136, 64, 576}};
constexpr int kThreads[] = {1, 2};

double gflop(const Shape& s) {
  return 2.0 * s.m * s.n * s.k / 1e9;
}

// ---------------------------------------------------------------------------------------------
// The machine's FMA peak on one core: 12 independent chains of 8-lane FMAs (enough to cover the
// FMA latency on both pipes). Measurement code, not part of any kernel.

#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) double fma_peak_gflops_once() {
  __m256 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i));
  const __m256 x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-7f);
  const int64_t iters = 20'000'000;
  auto start = std::chrono::steady_clock::now();
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], x, y);
    asm volatile(""
                 : "+x"(acc[0]), "+x"(acc[1]), "+x"(acc[2]), "+x"(acc[3]), "+x"(acc[4]),
                   "+x"(acc[5]), "+x"(acc[6]), "+x"(acc[7]), "+x"(acc[8]), "+x"(acc[9]),
                   "+x"(acc[10]), "+x"(acc[11]));
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return static_cast<double>(iters) * 12 * 8 * 2 / seconds / 1e9;
}
#endif

double fma_peak_gflops() {
#if defined(__x86_64__)
  std::vector<double> runs;
  for (int r = 0; r < 7; ++r) runs.push_back(fma_peak_gflops_once());
  std::sort(runs.begin(), runs.end());
  return runs.back();  // the peak is the best the core reached
#else
  return 0.0;
#endif
}

// The CPU's model name as the kernel reports it.
std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown";
}

// ---------------------------------------------------------------------------------------------
// The two sides

struct Problem {
  Shape shape;
  NDArray a, b, c_anvil, c_blas;
  std::unique_ptr<anvil::codegen::LLVMModule> module;
  AnvilKernel kernel = nullptr;
};

std::vector<std::unique_ptr<Problem>>& problems() {
  static std::vector<std::unique_ptr<Problem>> p;
  return p;
}

void run_anvil(Problem& p) {
  const DLTensor* args[] = {p.a.get(), p.b.get(), p.c_anvil.get()};
  if (p.kernel(args, 3, nullptr) != 0) {
    std::fprintf(stderr, "anvil kernel failed: %s\n", AnvilGetLastError());
    std::exit(1);
  }
}

void run_blas(Problem& p) {
  const Shape& s = p.shape;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s.m, s.n, s.k, 1.0f, p.a.data_as<float>(),
              s.k, p.b.data_as<float>(), s.n, 0.0f, p.c_blas.data_as<float>(), s.n);
}

std::unique_ptr<Problem> prepare(const Shape& s, const anvil::Target& target) {
  auto p = std::make_unique<Problem>();
  p->shape = s;
  p->a = NDArray::empty({s.m, s.k}, anvil::runtime::dl_float32());
  p->b = NDArray::empty({s.k, s.n}, anvil::runtime::dl_float32());
  p->c_anvil = NDArray::empty({s.m, s.n}, anvil::runtime::dl_float32(), true);
  p->c_blas = NDArray::empty({s.m, s.n}, anvil::runtime::dl_float32(), true);
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t i = 0; i < p->a.numel(); ++i) p->a.data_as<float>()[i] = dist(rng);
  for (int64_t i = 0; i < p->b.numel(); ++i) p->b.data_as<float>()[i] = dist(rng);

  anvil::bench::GemmKernel g = anvil::bench::gemm(s.m, s.n, s.k, anvil::bench::for_target(target));
  anvil::ir::LoweredFunc f = anvil::lower(g.schedule, g.args, s.name);
  p->module = anvil::codegen::LLVMModule::compile({f}, target);
  p->kernel = p->module->get_function(s.name);

  // Outputs agree before anything is timed.
  openblas_set_num_threads(1);
  run_anvil(*p);
  run_blas(*p);
  double max_err = 0.0;
  for (int64_t i = 0; i < p->c_blas.numel(); ++i) {
    double x = p->c_anvil.data_as<float>()[i], y = p->c_blas.data_as<float>()[i];
    max_err = std::max(max_err, std::abs(x - y) / (1.0 + std::abs(y)));
  }
  if (!(max_err < 1e-3)) {
    std::fprintf(stderr, "%s: Anvil and OpenBLAS disagree (max relative error %g)\n", s.name,
                 max_err);
    std::exit(1);
  }
  return p;
}

// ---------------------------------------------------------------------------------------------
// Reporting: medians per (shape, side, threads), then the summary.

struct Median {
  double ms = 0.0;
};
std::map<std::string, Median>& medians() {
  static std::map<std::string, Median> m;
  return m;
}

class MedianReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.run_type == Run::RT_Aggregate && r.aggregate_name == "median") {
        // "anvil/gemm_1024/threads:1/min_time:0.200/real_time" -> "anvil/gemm_1024/threads:1"
        std::string name = r.run_name.str();
        name = name.substr(0, name.find("/min_time"));
        medians()[name] = {r.GetAdjustedRealTime()};  // in the benchmark's unit, ms
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::string summary_path;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--summary-json") == 0 && i + 1 < argc) {
      summary_path = argv[++i];
    } else {
      args.push_back(argv[i]);
    }
  }
  static char interleave[] = "--benchmark_enable_random_interleaving=true";
  static char reps[] = "--benchmark_repetitions=15";
  static char aggregates[] = "--benchmark_report_aggregates_only=true";
  args.insert(args.begin() + 1, {interleave, reps, aggregates});
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());

  double peak = fma_peak_gflops();
  anvil::Target target = anvil::Target::host();
  std::printf("FMA peak (1 core, measured): %.1f GFLOP/s\nOpenBLAS: %s\n", peak,
              openblas_get_config());

  for (const Shape& s : kShapes) problems().push_back(prepare(s, target));
  for (auto& p : problems()) {
    Problem* prob = p.get();
    for (int t : kThreads) {
      benchmark::RegisterBenchmark(prob->shape.name,
                                   [prob, t](benchmark::State& st) {
                                     AnvilSetNumThreads(t);
                                     for (auto _ : st) run_anvil(*prob);
                                     st.counters["GFLOPS"] = benchmark::Counter(
                                         gflop(prob->shape) * 1e9 * st.iterations(),
                                         benchmark::Counter::kIsRate);
                                   })
          ->Name(std::string("anvil/") + prob->shape.name + "/threads:" + std::to_string(t))
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime()
          ->MinTime(0.2);
      benchmark::RegisterBenchmark(prob->shape.name,
                                   [prob, t](benchmark::State& st) {
                                     openblas_set_num_threads(t);
                                     for (auto _ : st) run_blas(*prob);
                                     st.counters["GFLOPS"] = benchmark::Counter(
                                         gflop(prob->shape) * 1e9 * st.iterations(),
                                         benchmark::Counter::kIsRate);
                                   })
          ->Name(std::string("openblas/") + prob->shape.name + "/threads:" + std::to_string(t))
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime()
          ->MinTime(0.2);
    }
  }
  MedianReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);

  // The table and the summary.
  std::string json = "{\"machine\": {\"cpu\": \"" + cpu_model() + "\", \"target\": \"" +
                     target.str() + "\", \"peak_gflops_per_core\": " + std::to_string(peak) +
                     "},\n \"rows\": [";
  std::printf(
      "\n| name | threads | anvil ms | openblas ms | speedup | anvil GFLOP/s | peak fraction |\n"
      "|---|---|---|---|---|---|---|\n");
  bool first = true;
  for (const Shape& s : kShapes) {
    for (int t : kThreads) {
      std::string suffix = std::string(s.name) + "/threads:" + std::to_string(t);
      auto a = medians().find("anvil/" + suffix), b = medians().find("openblas/" + suffix);
      if (a == medians().end() || b == medians().end()) continue;
      double anvil_ms = a->second.ms, blas_ms = b->second.ms;
      double gflops = gflop(s) / (anvil_ms / 1e3);
      double fraction = peak > 0 ? gflops / (peak * t) : 0.0;
      std::printf("| %s | %d | %.3f | %.3f | %.3f | %.1f | %.3f |\n", s.name, t, anvil_ms, blas_ms,
                  blas_ms / anvil_ms, gflops, fraction);
      char row[512];
      std::snprintf(row, sizeof row,
                    "%s\n  {\"name\": \"%s\", \"threads\": %d, \"anvil_ms\": %.4f, \"baseline\": "
                    "\"openblas\", \"baseline_ms\": %.4f, \"speedup\": %.4f, \"gflops\": %.2f, "
                    "\"peak_fraction\": %.4f}",
                    first ? "" : ",", s.name, t, anvil_ms, blas_ms, blas_ms / anvil_ms, gflops,
                    fraction);
      json += row;
      first = false;
    }
  }
  json += "\n]}\n";
  if (!summary_path.empty()) {
    std::ofstream(summary_path) << json;
    std::printf("summary written to %s\n", summary_path.c_str());
  }
  return 0;
}
