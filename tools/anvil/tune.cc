// `anvil tune`: the command line's driver of an autotune::TuningSession (session.h, where the
// search, the scheduler and the in-model check are described): it reads and checks the options
// and the records, and prints the session's progress.
#include "tools/anvil/tune.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "anvil/autotune/measure.h"
#include "anvil/autotune/records.h"
#include "anvil/autotune/search.h"
#include "anvil/autotune/session.h"
#include "anvil/runtime/device_api.h"
#include "tools/anvil/args.h"
#include "tools/anvil/commands.h"

namespace anvil::cli {

namespace fs = std::filesystem;

namespace {

std::string gflops_string(double flops, double seconds) {
  if (!std::isfinite(seconds)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", flops / seconds / 1e9);
  return buf;
}

std::string minutes_string(double seconds) {
  char buf[32];
  if (seconds < 90) {
    std::snprintf(buf, sizeof buf, "%.0f s", seconds);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f min", seconds / 60);
  }
  return buf;
}

}  // namespace

std::vector<std::string> tuner_names() {
  return autotune::search_names();
}

void tune_command(const TuneOptions& o) {
  const Target target = with_exit_code(kUsage, "--target '" + o.target + "'",
                                       [&] { return Target::parse(o.target); });
  // Candidates are measured where they run: this CPU for llvm targets, the GPU for GPU targets.
  if (target.is_gpu()) {
    std::string why;
    if (!runtime::Device::available(target.kind == Target::Kind::kCUDA ? kDLCUDA : kDLOpenCL, &why))
      usage_error("--target '" + o.target + "': no device to measure on: " + why);
  } else if (target.kind != Target::Kind::kLLVM) {
    usage_error("--target '" + o.target +
                "': anvil tune measures where the kernels run (llvm or GPU targets)");
  }
  {
    fs::path parent = fs::path(o.session.records).parent_path();
    std::error_code ec;
    if (!parent.empty() && !fs::is_directory(parent, ec))
      usage_error("--tuning-records " + o.session.records + ": the directory '" + parent.string() +
                  "' does not exist");
  }
  // Resume: the trials already recorded count towards each task's.
  autotune::RecordFile file;
  std::error_code ec;
  if (fs::exists(o.session.records, ec))
    file = read_tuning_records(o.session.records, o.records_any_cpu);
  if (std::string note = autotune::other_cpus_note(file); !note.empty())
    std::printf(
        "%s: this run neither resumes from them nor learns from them "
        "(--records-any-cpu)\n",
        note.c_str());

  graph::Graph g = load_model(o.model, o.input_shapes);
  autotune::TuningOptions options = o.session;
  std::istringstream words(o.measure_worker);
  for (std::string w; words >> w;) options.measure_worker.push_back(w);
  if (options.measure_worker.empty()) {
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) throw CliError(kRuntime, "cannot find the anvil executable for the measure worker");
    exe[n] = '\0';
    options.measure_worker = {exe, "measure-worker"};
  }
  autotune::TuningSession session =
      with_exit_code(kCompile, "extracting the tasks of " + o.model,
                     [&] { return autotune::TuningSession(g, target, options, std::move(file)); });
  const std::vector<autotune::TaskStatus> tasks = session.status();
  std::printf(
      "%s: %zu tunable tasks for '%s', %d trials per task (%lld in all, %lld recorded; "
      "%s search)\n",
      o.model.c_str(), tasks.size(), target.str().c_str(), o.session.trials,
      static_cast<long long>(session.budget()), static_cast<long long>(session.recorded()),
      o.session.tuner.c_str());
  for (const autotune::TaskStatus& s : tasks)
    std::printf(
        "[%zu/%zu] %s: %zu kernel(s), %.1f%% of the FLOPs, %lld configurations%s\n", s.index + 1,
        s.count, s.task->task.str().c_str(), s.task->kernels.size(), 100 * s.task->share,
        static_cast<long long>(s.size),
        s.recorded ? (", " + std::to_string(s.recorded) + " already recorded").c_str() : "");
  std::fflush(stdout);

  // Progress: the task's bar (its trials against its share of the budget), best and default
  // throughput, and the time left at this run's pace.
  session.on_batch = [](const autotune::TuningProgress& p) {
    const autotune::TaskStatus& s = p.task;
    const int width = 20;
    const int filled = static_cast<int>(std::min<int64_t>(width, s.measured * width / s.share));
    std::printf(
        "  [%zu/%zu] %s [%s%s] %lld/%lld trials, best %s GFLOP/s (default %s)%s%s, ~%s "
        "left\n",
        s.index + 1, s.count, s.task->task.op.c_str(), std::string(filled, '#').c_str(),
        std::string(width - filled, '.').c_str(), static_cast<long long>(s.measured),
        static_cast<long long>(s.share), gflops_string(s.flops, s.best_s).c_str(),
        gflops_string(s.flops, s.default_s).c_str(),
        s.failed ? (", " + std::to_string(s.failed) + " failed").c_str() : "",
        s.stopped_improving ? ", stopped improving" : "", minutes_string(p.left_s).c_str());
    std::fflush(stdout);
  };
  session.on_note = [](const std::string& line) {
    if (line.rfind("warning: ", 0) == 0)
      std::fprintf(stderr, "anvil: %s\n", line.c_str());
    else
      std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  };
  const auto start = std::chrono::steady_clock::now();
  const int64_t trials_now = with_exit_code(kRuntime, "", [&] { return session.run(); });
  const double elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const autotune::TaskStatus& s : session.status())
    std::printf("[%zu/%zu] %s: best %s GFLOP/s, default %s GFLOP/s (%d measured now, %d failed)\n",
                s.index + 1, s.count, s.task->task.op.c_str(),
                gflops_string(s.flops, s.best_s).c_str(),
                gflops_string(s.flops, s.default_s).c_str(), s.measured_now, s.failed);
  std::printf("records in %s (%lld trials in %s)\n", o.session.records.c_str(),
              static_cast<long long>(trials_now), minutes_string(elapsed_s).c_str());
}

void measure_worker_command() {
  autotune::serve_measurements(std::cin, std::cout);
}

}  // namespace anvil::cli
