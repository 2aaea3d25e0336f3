// `anvil bench`: Anvil against ONNX Runtime and PyTorch on the same models, the paper's speedup.
//
// For each model, Anvil compiles it into model.so and loads it as a user would; each baseline is
// a worker process (anvil/support/worker.h) that loads the same ONNX file (a zoo model is exported
// first) with the same inputs. Per thread count: every side runs once and the baselines' outputs
// are compared with Anvil's (a row whose outputs disagree carries a note, not a time); then after a
// warm-up, blocks of `block` timed runs alternate between Anvil and each baseline until each side
// has `runs`, each block after a pause in which the threads of the side before go to sleep. Medians
// are reported; speedup = baseline ms / Anvil ms. With --processes N (3 by default) each side runs
// in N fresh processes, all alive at once and timed round-robin (Anvil's through `anvil
// bench-worker`), and a row's median is the median of the N per-process medians, its spread (max -
// min) / median of them: where a process's memory lands can move a model's time for the life of
// that process. A model that fails to compile gets rows with the error, and the bench goes on to
// the next.
//
// The baselines' requests (the workers in tools/bench/ serve them; `--worker NAME=COMMAND` plugs
// in another):
//   on start   the worker prints {"ok": true, "name": "onnxruntime", "version": "1.30.0"}.
//   {"op": "load", "model": "/abs/m.onnx", "threads": 2, "inputs": {"data": "/abs/data.npy"}}
//              loads the ONNX file for `threads` intra-op threads (one inter-op thread) and reads
//              each input from its .npy file (C order; float32, float64, int32, int64 or bool).
//              Replaces the model loaded before. -> {"ok": true}
//   {"op": "run", "outputs_dir": "/abs/dir"}
//              runs once and writes output i (in the ONNX graph's order) to
//              outputs_dir/output_<i>.npy. -> {"ok": true, "outputs": ["/abs/dir/output_0.npy"]}
//   {"op": "time", "runs": 10}
//              runs `runs` times back to back, timing each call alone with a monotonic clock.
//              -> {"ok": true, "ms": [1.25, 1.24, ...]}
//
// With a GPU target (cuda, opencl) Anvil's model runs on the device, each run copying its inputs
// in and its outputs out; the baselines are PyTorch's on the GPU (torch_eager_cuda,
// torch_cuda_graph), whose inputs stay on the device; there is one row per model and baseline.
#pragma once

#include <string>
#include <vector>

#include "anvil/target/target.h"

namespace anvil::cli {

struct BenchOptions {
  std::vector<std::string> models;  // zoo names, zoo:NAME or ONNX files; empty: the five workloads
  std::vector<std::string> input_shapes;  // NAME=DIMS, for ONNX files with symbolic dimensions
  std::vector<int> threads = {1, 2};      // CPU targets only
  // onnxruntime, torch_eager, torch_jit, torch_eager_cuda, torch_cuda_graph, the names --worker
  // defines, or "none"; empty: default_baselines(target).
  std::vector<std::string> baselines;
  std::vector<std::string> workers;  // NAME=COMMAND: a baseline's worker command (split on spaces)
  std::string deps_dir;  // where npm's onnxruntime-node is (empty: $ANVIL_BENCH_DEPS, then
                         // bench-deps beside the bin/ directory of anvil)
  std::string target = "llvm";
  std::string tuning_records;    // apply these records; also time the untuned build ("untuned")
  bool records_any_cpu = false;  // apply records tuned on other CPUs too
  int runs = 50;                 // timed runs per side (rounded up to whole blocks)
  int block = 10;                // runs per block
  int warmup = 5;                // untimed runs per side before the first block
  int pause_ms = 20;  // idle time before each block, then until the cores are idle (0: none)
  // A baseline's float outputs agree with Anvil's within tolerance x the largest |output|; a
  // baseline that disagrees is not timed. Quantized models differ in rounding flips between
  // implementations of the same quantization (a value at a rounding tie goes one way or the
  // other, then propagates), so they may need more than float models' 1e-3.
  double tolerance = 1e-3;
  // Fresh processes per side and row (Anvil's: `anvil bench-worker` on the saved artifact), all
  // alive at once, timed round-robin a block at a time until each has `runs`; a row reports the
  // median of the per-process medians and their spread. 0: Anvil runs in this process, against
  // one baseline process (the untuned and ablation comparisons always run here).
  int processes = 3;
  bool ablation = false;     // also time each model with fusion and layout alteration off
  bool strict = false;       // a kernel that loses its schedule is a compile error
  bool profile = false;      // also time each kernel (`runs` calls each; table and summary JSON)
  std::string summary_json;  // write the summary JSON here
  std::string chart;         // write the PNG chart here
};
void bench_command(const BenchOptions& options);

// `anvil bench-worker`: serves the protocol above on stdin and stdout for one artifact at a time
// ("model" names a model.so, or an ONNX file it compiles for the host with `tuning_records`), the
// Anvil side of --processes.
void bench_worker_command(const std::string& tuning_records = "", bool records_any_cpu = false);

// The five workloads of the paper, by zoo name.
std::vector<std::string> default_bench_models();

// onnxruntime, torch_eager and torch_jit on the CPU; torch_eager_cuda and torch_cuda_graph on a
// GPU target.
std::vector<std::string> default_baselines(const Target& target);

}  // namespace anvil::cli
