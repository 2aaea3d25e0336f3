// Measuring one configuration of a task: compile it, check it against the operator's reference on
// its first run, time it. Measurements run in a worker process (anvil/support/worker.h) so that a
// candidate that crashes or hangs costs the worker, which is restarted, and becomes a failed trial.
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
  double timeout_s = 60;     // compile + check + timing of one candidate, in the worker
};

struct Measurement {
  std::vector<double> costs_s;       // seconds per call, one per repeat (empty when it failed)
  std::optional<std::string> error;  // "compile: ...", "wrong result: ...", "crash: ...",
                                     // "timeout: ...", "runtime: ..."
  double compile_s = 0;
};

// Calls a compiled candidate on its arguments (inputs, then outputs); returns its status. Tests
// replace it to make a candidate crash, hang or write wrong results.
using KernelCall =
    std::function<int32_t(AnvilKernel kernel, const std::vector<const DLTensor*>& args)>;

// Measures in this process. The inputs are seeded random values; the reference outputs are
// computed once per task and kept for the process's later measurements of it.
Measurement measure_here(const Task& task, const ops::Config& config, const MeasureOptions& options,
                         const KernelCall& call = {});

// Serves measurement requests (the worker's side): greets, then answers
//   {"op": "measure", "task": {...}, "target": "...", "config": {...}, "repeats": 5,
//    "min_repeat_ms": 5}
// with {"ok": true, "costs_s": [...], "compile_s": 0.2} or {"ok": true, "error": "..."} (a failed
// trial is an answer, not a protocol error), until {"op": "quit"} or the end of `in`.
void serve_measurements(std::istream& in, std::ostream& out, const KernelCall& call = {});

// The tuner's side: measurements in a worker started from `command` (restarted after a crash or a
// timeout, which become failed trials naming the signal or the time limit).
class Measurer {
 public:
  explicit Measurer(std::vector<std::string> command);
  Measurement measure(const Task& task, const ops::Config& config, const MeasureOptions& options);

 private:
  std::vector<std::string> command_;
  std::unique_ptr<Worker> worker_;
};

}  // namespace anvil::autotune
