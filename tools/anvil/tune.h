// `anvil tune`: searches each task of a model for a faster configuration than the default rule,
// measuring candidates in a worker process and appending every trial to the tuning records.
#pragma once

#include <string>
#include <vector>

#include "anvil/autotune/session.h"

namespace anvil::cli {

struct TuneOptions {
  std::string model;  // an ONNX file, or zoo:NAME
  std::vector<std::string> input_shapes;
  std::string target = "llvm";
  // Trials, search, budget, measurement, --tuning-records (read to resume, appended to) and
  // --strict, as the session takes them (their defaults are declared there).
  autotune::TuningOptions session;
  bool records_any_cpu = false;  // resume from and learn from other CPUs' records too
  std::string measure_worker;    // the worker's command line (empty: `anvil measure-worker`)
};
void tune_command(const TuneOptions& options);

// The tuners `--tuner` takes.
std::vector<std::string> tuner_names();

// The hidden `anvil measure-worker`: serves measurement requests on stdin/stdout
// (anvil/autotune/measure.h).
void measure_worker_command();

}  // namespace anvil::cli
