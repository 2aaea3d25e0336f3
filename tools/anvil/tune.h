// `anvil tune`: searches each task of a model for a faster configuration than the default rule,
// measuring candidates in a worker process and appending every trial to the tuning records.
#pragma once

#include <string>
#include <vector>

namespace anvil::cli {

struct TuneOptions {
  std::string model;  // an ONNX file, or zoo:NAME
  std::vector<std::string> input_shapes;
  std::string target = "llvm";
  int trials = 20;            // per task on average, the default configuration included: the
                              // scheduler may move trials between tasks within the total
  std::string tuner = "xgb";  // xgb, genetic, random or grid (anvil/autotune/search.h)
  uint32_t seed = 0;
  double time_budget_min = 0;    // stop starting trials after this many minutes (0: no limit)
  double timeout_s = 60;         // per candidate: compile, check and timing
  int repeats = 5;               // timed repeats per candidate
  int early_stopping = 48;       // a task stops after this many trials without a 1% gain (0: never)
  int batch = 8;                 // candidates compiled together, then timed one by one
  std::string records;           // --tuning-records: read to resume, appended to
  bool records_any_cpu = false;  // resume from and learn from other CPUs' records too
  std::string measure_worker;    // the worker's command line (empty: `anvil measure-worker`)
  bool strict = false;           // the in-model check's builds: a lost schedule is an error
};
void tune_command(const TuneOptions& options);

// The tuners `--tuner` takes.
std::vector<std::string> tuner_names();

// The hidden `anvil measure-worker`: serves measurement requests on stdin/stdout
// (anvil/autotune/measure.h).
void measure_worker_command();

}  // namespace anvil::cli
