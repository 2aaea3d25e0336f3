// bench_gemm: the tensor-expression GEMM (bench/gemm_te.h) against OpenBLAS, at 1 and 2
// threads, on M=N=K=1024 and on the convolution-like 3136x64x576. Reports GFLOP/s, the fraction
// of the FMA peak (Target::peak_gflops_per_core, the one measurement every tool reports), and the
// ratio to OpenBLAS.
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

  anvil::Target target = anvil::Target::host();
  double peak = target.peak_gflops_per_core();
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
