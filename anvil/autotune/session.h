// A tuning session: the tasks of one model tuned together within one budget of trials, then each
// task's best judged inside the compiled model. `anvil tune` drives it and prints its progress;
// any other driver (a Python binding, a service) gets the same search through the callbacks.
//
// Every task first gets one batch (its default configuration first, in the order of their share
// of the model's FLOPs). After that a scheduler hands each batch to the task where it should
// gain the most end-to-end time: the one with the largest
//     kernels x best time so far x (relative gain of its best over its last two batches + 1%),
// so a task that still improves and costs the model much gets the trials, and one that has stopped
// improving still gets some. A task leaves the rotation when its space is exhausted or after
// `early_stopping` trials without a 1% gain; its unspent trials stay with the others.
//
// Each batch is proposed by the search, compiled in parallel in the measure worker and then timed
// candidate by candidate (measure.h), and every trial is appended to the records as it comes, so a
// session killed at any moment leaves a valid file and a rerun resumes from it. The xgb search's
// model also learns from the records of the file's other tasks (transfer). After the trials (which
// `time_budget_min` bounds), each task's best is checked against its default inside the compiled
// model (the in-model check), then each convolution's other algorithms (direct, the other
// Winograd tile: tasks with choice "algorithm", never timed alone), and the model's verdict is
// what the records apply.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "anvil/autotune/measure.h"
#include "anvil/autotune/records.h"
#include "anvil/autotune/task.h"
#include "anvil/graph/graph.h"
#include "anvil/target/target.h"

namespace anvil::autotune {

struct TuningOptions {
  int trials = 20;  // per task on average, the default and the recorded trials included
  std::string tuner = "xgb";
  uint32_t seed = 0;
  int early_stopping = 48;     // trials without a 1% gain before a task stops (0: never)
  int batch = 8;               // candidates compiled together
  double time_budget_min = 0;  // stop starting trials after this long (0: no limit)
  MeasureOptions measure;
  std::vector<std::string> measure_worker;  // the command of the measure worker process
  bool strict = false;                      // the in-model check's builds as strict builds
  std::string records;                      // the file every trial is appended to
};

// Where one task stands.
struct TaskStatus {
  size_t index = 0, count = 0;  // this task's place among the session's tasks
  const ModelTask* task = nullptr;
  int64_t size = 0;      // configurations in its space
  int64_t measured = 0;  // distinct configurations measured, recorded ones included
  int64_t recorded = 0;  // of those, from the records the session started with
  int64_t share = 0;     // its share of the budget
  int measured_now = 0, failed = 0;
  double flops = 0;                  // of one call
  double best_s = 0, default_s = 0;  // seconds per call (infinity: none)
  bool done = false;                 // out of the rotation
  bool stopped_improving = false;    // done before its space was exhausted
};

struct TuningProgress {
  TaskStatus task;    // the task that just measured a batch
  double left_s = 0;  // the session's estimate of the time left
};

class TuningSession {
 public:
  // The tasks of `g` for `target` (an llvm target for this CPU, or a GPU target measured on its
  // device), resuming from `records` (the records file read, its other CPUs' records set aside by
  // the caller). `g` must outlive the session. Throws anvil::Error when the tasks cannot be
  // extracted.
  TuningSession(const graph::Graph& g, const Target& target, TuningOptions options,
                RecordFile records);
  TuningSession(TuningSession&&) noexcept;
  TuningSession& operator=(TuningSession&&) noexcept;
  ~TuningSession();

  // Called after every batch, and with each line the session has to say (the in-model check's
  // comparisons, a spent time budget). Either may be empty.
  std::function<void(const TuningProgress&)> on_batch;
  std::function<void(const std::string&)> on_note;

  // The budget in trials (the recorded ones included) and how many are recorded already.
  int64_t budget() const;
  int64_t recorded() const;
  std::vector<TaskStatus> status() const;
  // The convolutions whose algorithm the in-model check judges (extract_algorithm_tasks).
  const std::vector<ModelTask>& algorithm_tasks() const;

  // Runs the trials, measures each new best once more beside its default, and checks the bests in
  // the model. Returns the trials measured now. Throws anvil::Error when the records cannot be
  // written or the model cannot be compiled or run for the check.
  int64_t run();

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace anvil::autotune
