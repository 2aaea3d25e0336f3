// What `anvil bench` measured, and its three forms: the Markdown tables people read, the summary
// JSON programs read (../shared/DESIGN.md, "Benchmark results as data"), and a PNG bar chart of
// the speedups per workload (the paper's figure 14) drawn by gnuplot.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "anvil/runtime/model.h"

namespace anvil::cli {

// One (model, threads, baseline): the medians of the two sides' runs, interleaved. Without a
// baseline time (`baseline_ms` empty) the row says why in `note` (the worker did not start, could
// not load the model, its outputs disagree), and Anvil was timed alone.
struct BenchRow {
  std::string name;
  int threads = 1;
  double anvil_ms = 0;
  std::string baseline;  // "" when no baseline was asked for
  std::optional<double> baseline_ms;
  double gflops = 0;  // Anvil's: the model's FLOPs / anvil_ms
  std::string note;
  // The fastest run of each side: a median far above it means another process took the cores.
  double anvil_min_ms = 0;
  double baseline_min_ms = 0;
  // With --processes: each process's median, per side.
  std::vector<double> anvil_process_ms, baseline_process_ms;
  // Anvil could not compile, load or run the model: why (the row has no times).
  std::string error;
  double speedup() const { return baseline_ms ? *baseline_ms / anvil_ms : 0; }
  // (max - min) / median of per-process medians; 0 with fewer than two processes.
  static double spread(const std::vector<double>& process_ms);
  // Either side's median is more than twice its fastest run.
  bool contended() const {
    return (anvil_min_ms > 0 && anvil_ms > 2 * anvil_min_ms) ||
           (baseline_ms && baseline_min_ms > 0 && *baseline_ms > 2 * baseline_min_ms);
  }
};

// One (model, threads) timed with fusion and layout alteration each on and off.
struct AblationRow {
  std::string name;
  int threads = 1;
  // Median ms: [0] fusion + layout (the default build), [1] no fusion, [2] no layout, [3] neither.
  double ms[4] = {0, 0, 0, 0};
};

// One model's kernels (`anvil bench --profile`), each the median of `runs` timed calls, in
// program order.
struct ModelProfile {
  std::string name;
  int threads = 1;  // 0: on the GPU
  int runs = 0;
  std::vector<runtime::KernelProfile> kernels;
};

// The machine the report was measured on, as a reader on another one needs it to compare: the
// CPU's identity and extensions (runtime/host_cpu.h) and what Target knows of its caches and
// vector units.
struct MachineFacts {
  std::string cpu_id;                 // "AuthenticAMD family 26 model 2"
  std::vector<std::string> features;  // instruction-set extensions, LLVM's names
  int vector_bits = 0, fma_units = 0, cores = 0;
  int64_t l1d_bytes = 0, l2_bytes = 0, l3_bytes = 0;
  static MachineFacts host();
};

// Each side's time per call on a model that does next to nothing (relu of one float, 1 thread):
// what every row's time carries besides the work, which matters for the smallest models.
struct CallOverhead {
  std::string baseline;
  double anvil_ms = 0;
  std::optional<double> baseline_ms;  // empty: the baseline could not be timed (`note`)
  std::string note;
};

// A side whose per-process medians spread more than this is flagged in the table.
constexpr double kSpreadWarning = 0.10;

struct BenchReport {
  std::string cpu;                  // the CPU's brand ("AMD EPYC 9B45")
  MachineFacts machine;             // the CPU's identity, extensions, caches (CPU runs)
  std::string gpu;                  // the device's name when the models ran on a GPU; else empty
  double peak_gflops_per_core = 0;  // the CPU's, measured; 0 when not measured (GPU runs)
  int runs = 0;                     // timed runs per side and row
  std::vector<CallOverhead> call_overhead;
  std::vector<BenchRow> rows;
  std::vector<AblationRow> ablation;
  std::vector<ModelProfile> profiles;
};

// The CPU's model name ("AMD EPYC 7B13"), or "unknown CPU".
std::string cpu_name();

// One line naming the machine: "AMD EPYC (AuthenticAMD family 26 model 2): 512-bit vectors, 2 FMA
// units, avx avx2 avx512bw ... fma; L1d 48 KiB, L2 1 MiB per core, L3 32 MiB; 2 cores; measured
// peak 249.0 GFLOP/s per core".
std::string machine_line(const BenchReport& report);

// One line per row: the baseline's median, the median of the Anvil runs interleaved with it, the
// speedup (or the mark of the row's note; a '*' when contended), Anvil's GFLOP/s and fraction of
// the peak; the notes follow the table.
std::string bench_table(const BenchReport& report);

// One line per (model, threads): the four builds' medians and each one's slowdown against the
// default. Empty when the report has no ablation.
std::string ablation_table(const BenchReport& report);

// The summary JSON: {"machine": {...}, "rows": [...]} with one row per (name, threads, baseline)
// ("contended": true on a contended row), plus "ablation": [...] when there is one.
nlohmann::json summary_json(const BenchReport& report);

// Draws the speedups as clustered bars (one cluster per model, one bar per baseline and thread
// count, a dashed line at 1) into `png` with gnuplot. Throws std::runtime_error when gnuplot is
// missing or fails (with its message), or when no row has a speedup.
void write_chart(const BenchReport& report, const std::string& png);

}  // namespace anvil::cli
