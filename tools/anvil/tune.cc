#include "tools/anvil/tune.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>

#include "anvil/autotune/measure.h"
#include "anvil/autotune/records.h"
#include "anvil/autotune/search.h"
#include "anvil/autotune/task.h"
#include "anvil/graph/flops.h"
#include "tools/anvil/args.h"
#include "tools/anvil/commands.h"

namespace anvil::cli {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

std::string gflops_string(double flops, double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", flops / seconds / 1e9);
  return buf;
}

}  // namespace

std::vector<std::string> tuner_names() {
  return autotune::search_names();
}

void tune_command(const TuneOptions& o) {
  const Target target = with_exit_code(kUsage, "--target '" + o.target + "'",
                                       [&] { return Target::parse(o.target); });
  if (target.kind != Target::Kind::kLLVM)
    usage_error("--target '" + o.target + "': anvil tune measures on this CPU (llvm targets)");
  {
    fs::path parent = fs::path(o.records).parent_path();
    std::error_code ec;
    if (!parent.empty() && !fs::is_directory(parent, ec))
      usage_error("--tuning-records " + o.records + ": the directory '" + parent.string() +
                  "' does not exist");
  }
  // Resume: the trials already recorded count towards each task's.
  autotune::RecordFile file;
  std::error_code ec;
  if (fs::exists(o.records, ec)) file = read_tuning_records(o.records);

  graph::Graph g = load_model(o.model, o.input_shapes);
  std::vector<autotune::ModelTask> tasks =
      with_exit_code(kCompile, "extracting the tasks of " + o.model,
                     [&] { return autotune::extract_tasks(g, target, graph::BuildOptions{}); });
  std::printf("%s: %zu tunable tasks for '%s', %d trials each (%s search)\n", o.model.c_str(),
              tasks.size(), target.str().c_str(), o.trials, o.tuner.c_str());

  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) throw CliError(kRuntime, "cannot find the anvil executable for the measure worker");
  exe[n] = '\0';
  autotune::Measurer measurer({exe, "measure-worker"});
  autotune::MeasureOptions mo;
  mo.repeats = o.repeats;
  mo.timeout_s = o.timeout_s;

  const bool tty = isatty(STDOUT_FILENO);  // progress on one line that rewrites itself
  const auto start = Clock::now();
  auto out_of_time = [&] {
    return o.time_budget_min > 0 &&
           std::chrono::duration<double>(Clock::now() - start).count() > o.time_budget_min * 60;
  };
  for (size_t ti = 0; ti < tasks.size(); ++ti) {
    const autotune::ModelTask& mt = tasks[ti];
    const autotune::Task& task = mt.task;
    const ops::ConfigSpace space = task.space();
    const int64_t size = autotune::space_size(space);
    const double flops = mt.flops / mt.count;
    // What the records already hold for this task: point -> its lowest cost (infinity: failed).
    std::map<int64_t, double> measured;
    for (const autotune::Record& r : file.records) {
      if (autotune::task_key(r.task, r.target) != task.key()) continue;
      int64_t i = autotune::index_of(space, r.config);
      if (i < 0) continue;
      auto [it, added] = measured.emplace(i, r.cost());
      if (!added) it->second = std::min(it->second, r.cost());
    }
    const size_t recorded = measured.size();
    auto best_of = [&] {
      std::pair<int64_t, double> b = {-1, INFINITY};
      for (const auto& [i, c] : measured)
        if (c < b.second) b = {i, c};
      return b;
    };
    auto default_cost = [&] { return measured.count(0) ? measured.at(0) : INFINITY; };
    const int64_t wanted = std::min<int64_t>(o.trials, size);
    std::unique_ptr<autotune::Search> search =
        autotune::make_search(o.tuner, space, o.seed + static_cast<uint32_t>(ti));
    std::printf("[%zu/%zu] %s: %zu kernel(s), %.1f%% of the FLOPs, %lld configurations%s\n", ti + 1,
                tasks.size(), task.str().c_str(), mt.kernels.size(), 100 * mt.share,
                static_cast<long long>(size),
                recorded ? (", " + std::to_string(recorded) + " already recorded").c_str() : "");
    std::fflush(stdout);
    int failed = 0, measured_now = 0;
    // Measures point `index` and appends the trial.
    auto trial = [&](int64_t index) {
      const ops::Config config = autotune::config_at(space, index);
      autotune::Measurement m = measurer.measure(task, config, mo);
      autotune::Record r{task.to_json(), task.target, config,
                         m.costs_s,      m.error,     autotune::utc_now()};
      with_exit_code(kRuntime, "", [&] { autotune::append_record(o.records, r); });
      if (m.error) ++failed;
      auto [it, added] = measured.emplace(index, r.cost());
      if (!added) it->second = std::min(it->second, r.cost());
    };
    while (static_cast<int64_t>(measured.size()) < wanted && !out_of_time()) {
      int64_t index = search->next(measured);
      if (index < 0) break;
      trial(index);
      ++measured_now;
      if (!tty) continue;
      const double best = best_of().second;
      std::printf("\r  trial %zu/%lld: best %s GFLOP/s%s%s", measured.size(),
                  static_cast<long long>(wanted),
                  std::isfinite(best) ? gflops_string(flops, best).c_str() : "-",
                  std::isfinite(default_cost())
                      ? (" (default " + gflops_string(flops, default_cost()) + ")").c_str()
                      : "",
                  failed ? (", " + std::to_string(failed) + " failed").c_str() : "");
      std::fflush(stdout);
    }
    // A best point measured while something else ran could beat a default measured in a quiet
    // moment, or the reverse: both once more, one after the other, so that the records never
    // prefer a configuration that is slower than the default.
    if (measured_now > 0 && best_of().first > 0 && std::isfinite(best_of().second)) {
      const int64_t b = best_of().first;
      trial(0);
      trial(b);
      measured_now += 2;
    }
    const double best = best_of().second;
    std::printf("%s  %s: best %s GFLOP/s, default %s GFLOP/s (%d measured, %d failed)\n",
                measured_now && tty ? "\n" : "", task.op.c_str(),
                std::isfinite(best) ? gflops_string(flops, best).c_str() : "-",
                std::isfinite(default_cost()) ? gflops_string(flops, default_cost()).c_str() : "-",
                measured_now, failed);
    std::fflush(stdout);
    if (out_of_time()) {
      std::printf("time budget of %.1f min spent; the records resume from here\n",
                  o.time_budget_min);
      break;
    }
  }
  std::printf("records in %s\n", o.records.c_str());
}

void measure_worker_command() {
  autotune::serve_measurements(std::cin, std::cout);
}

}  // namespace anvil::cli
