// Measuring configurations of a task: compile them, check each against the operator's reference
// on its first run, time it. Measurements run in a worker process (anvil/support/worker.h) so that
// a candidate that crashes or hangs costs the worker, which is restarted, and becomes a failed
// trial.
//
// A batch compiles its candidates in parallel, each in a fork()ed child of the worker that lowers
// it, compiles it with LLVM and links it into a shared library; the worker loads the libraries
// and only then checks and times the candidates one at a time, so that no compilation competes
// with a timing (on a 2-core machine it would corrupt it). Processes rather than threads because:
// - isolation: a compiler crash (an LLVM assertion, a stack overflow in a pass) or a compilation
//   that never ends kills or stalls that child only: the one candidate fails ("compile: ... killed
//   by signal", "timeout: ..."), the worker and the rest of the batch go on;
// - no shared state to trust: lowering and LLVM code generation would have to be thread-safe
//   everywhere (node ids and reference counts are atomic today, but every pass, the operator
//   registry's lazily built tables and LLVM's global options would stay one careless static away
//   from a race that silently changes a candidate's code), and a child cannot race with anything;
// - what is timed is what ships: the candidate runs from a shared library linked exactly as
//   `anvil compile` links the kernels of a model.
// The price: a fork and a link per candidate (LLVMModule starts its JIT only on get_function, so
// the child generates machine code once, for the object file). On 2 cores a batch of 8 conv2d_nchwc
// candidates of [1, 8, 28, 28, 16] x [8, 8, 3, 3, 16, 16] compiled and measured 1.6 times faster
// with 2 jobs than with 1.
#pragma once

#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "anvil/autotune/task.h"
#include "anvil/runtime/c_runtime_api.h"
#include "anvil/support/worker.h"

namespace anvil::autotune {

struct MeasureOptions {
  int repeats = 5;           // timed repeats; the cost of one is its mean time per call
  double min_repeat_ms = 5;  // each repeat calls the kernel until this much time has passed
  double timeout_s = 60;     // compile + check + timing of one candidate, in the worker; a batch
                             // of n candidates gets n * timeout_s for all of it, and each of
                             // its compilations at most timeout_s
  int compile_jobs = 0;      // a batch's candidates compiled at once (0: the online CPUs)
  // Evict the arguments (inputs, weights, outputs) from every cache level before each timed call,
  // and time the calls one by one, the flushes excluded. In a model a kernel's weights are used
  // once per inference and its input was written by another kernel: timing the same call back to
  // back on cache-resident data ranks candidates by a case the model never sees.
  bool flush_caches = true;
};

struct Measurement {
  std::vector<double> costs_s;       // seconds per call, one per repeat (empty when it failed)
  std::optional<std::string> error;  // "compile: ...", "wrong result: ...", "crash: ...",
                                     // "timeout: ...", "runtime: ..."
  double compile_s = 0;  // lowering and code generation of this candidate (in a batch, its own
                         // child's time, linking included), not the wait for other candidates
};

// Calls a compiled candidate (of configuration `config`) on its arguments (inputs, then outputs);
// returns its status. Tests replace it to make some candidates crash, hang or write wrong results.
using KernelCall = std::function<int32_t(
    AnvilKernel kernel, const std::vector<const DLTensor*>& args, const ops::Config& config)>;

// Measures in this process. The inputs are seeded random values; the reference outputs are
// computed once per task and kept for the process's later measurements of it. A task for a GPU
// target is compiled with its GPU schedule (NVRTC or OpenCL C) and run on that device: inputs
// copied there, outputs checked after the first call, each repeat timed over groups of launches
// with the device waited for after each group (no cache flushes; `call` is not used).
Measurement measure_here(const Task& task, const ops::Config& config, const MeasureOptions& options,
                         const KernelCall& call = {});

// Measures `configs` of `task` in this process as a batch: compiles them options.compile_jobs at a
// time in fork()ed children (each at most options.timeout_s), then checks and times each in turn.
// One Measurement per config, in order.
std::vector<Measurement> measure_batch_here(const Task& task,
                                            const std::vector<ops::Config>& configs,
                                            const MeasureOptions& options,
                                            const KernelCall& call = {});

// Serves measurement requests (the worker's side): greets, then answers
//   {"op": "measure", "task": {...}, "target": "...", "config": {...}, "repeats": 5,
//    "min_repeat_ms": 5, "flush_caches": true}
// with {"ok": true, "costs_s": [...], "compile_s": 0.2} or {"ok": true, "error": "..."} (a failed
// trial is an answer, not a protocol error), and
//   {"op": "measure_batch", "task": {...}, "target": "...", "configs": [{...}, ...],
//    "repeats": 5, "min_repeat_ms": 5, "flush_caches": true, "compile_jobs": 2,
//    "compile_timeout_s": 60}
// (compile_jobs 0 or absent: the online CPUs) with {"ok": true, "results": [{"costs_s": [...],
// "compile_s": 0.2}, {"costs_s": [], "compile_s": 0, "error": "..."}, ...]}, one per config in
// order; until {"op": "quit"} or the end of `in`.
void serve_measurements(std::istream& in, std::ostream& out, const KernelCall& call = {});

// The tuner's side: measurements in a worker started from `command` (restarted after a crash or a
// timeout, which become failed trials naming the signal or the time limit).
class Measurer {
 public:
  explicit Measurer(std::vector<std::string> command);
  Measurement measure(const Task& task, const ops::Config& config, const MeasureOptions& options);
  // Measures `configs` of `task` in the worker: compiles them `options.compile_jobs` at a time in
  // parallel (no candidate is timed while any compiles), then checks and times each in turn.
  // One Measurement per config, in order. The whole batch must answer within
  // options.timeout_s * configs.size(). A crash or a timeout fails only the candidate that caused
  // it (the batch is retried one candidate at a time to find it), and the worker restarts. A
  // worker that does not start is an anvil::Error.
  std::vector<Measurement> measure_batch(const Task& task, const std::vector<ops::Config>& configs,
                                         const MeasureOptions& options);

 private:
  // The running worker, started when there is none; throws anvil::Error when it does not start.
  Worker& worker();

  std::vector<std::string> command_;
  std::unique_ptr<Worker> worker_;
};

}  // namespace anvil::autotune
