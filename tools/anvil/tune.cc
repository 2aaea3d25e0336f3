// `anvil tune`: the tasks of a model tuned together within one budget of trials.
//
// Every task first gets one batch (its default configuration first, in the order of their share
// of the model's FLOPs). After that a scheduler hands each batch to the task where it should
// gain the most end-to-end time: the one with the largest
//     kernels x best time so far x (relative gain of its best over its last two batches + 1%),
// so a task that still improves and costs the model much gets the trials, and one that has stopped
// improving still gets some. A task leaves the rotation when its space is exhausted or after
// --early-stopping trials without a 1% gain; its unspent trials stay with the others.
//
// Each batch is proposed by the search, compiled in parallel in the measure worker and then timed
// candidate by candidate (anvil/autotune/measure.h), and every trial is appended to the records as
// it comes, so a tuner killed at any moment leaves a valid file and a rerun resumes from it. The
// xgb search's model also learns from the records of the file's other tasks (transfer). After the
// trials (which --time-budget bounds), each task's best is checked against its default inside the
// compiled model (check_in_model), and the model's verdict is what the records apply.
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
#include <optional>
#include <set>
#include <sstream>

#include "anvil/autotune/features.h"
#include "anvil/autotune/measure.h"
#include "anvil/autotune/records.h"
#include "anvil/autotune/search.h"
#include "anvil/autotune/task.h"
#include "anvil/graph/build.h"
#include "anvil/runtime/c_runtime_api.h"
#include "anvil/runtime/device_api.h"
#include "anvil/runtime/model.h"
#include "anvil/support/error.h"
#include "anvil/support/temp_dir.h"
#include "tools/anvil/args.h"
#include "tools/anvil/commands.h"

namespace anvil::cli {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

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

// One task of the model as the tuner goes.
struct TaskState {
  const autotune::ModelTask* model_task = nullptr;
  ops::ConfigSpace space;
  int64_t size = 0;
  double flops = 0;                    // of one call
  std::map<int64_t, double> measured;  // point -> lowest cost (infinity: failed)
  size_t recorded = 0;                 // of `measured`, from the records already there
  std::unique_ptr<autotune::Search> search;
  std::vector<double> best_after_batch;  // this run's
  int measured_now = 0, failed = 0, since_gain = 0;
  double gain_reference = INFINITY;  // the best cost the next 1% gain is measured against
  bool done = false;

  const autotune::Task& task() const { return model_task->task; }
  std::pair<int64_t, double> best() const {
    std::pair<int64_t, double> b = {-1, INFINITY};
    for (const auto& [i, c] : measured)
      if (c < b.second) b = {i, c};
    return b;
  }
  double default_cost() const { return measured.count(0) ? measured.at(0) : INFINITY; }
  // The scheduler's estimate of the model time a batch on this task may save.
  double priority() const {
    const double best_cost = best().second;
    if (!std::isfinite(best_cost)) return 0;
    double gain = 0;
    if (best_after_batch.size() >= 3) {
      const double before = best_after_batch[best_after_batch.size() - 3];
      if (std::isfinite(before)) gain = (before - best_cost) / best_cost;
    } else {
      gain = 0.05;  // too new to tell: assume it still improves
    }
    return model_task->count * best_cost * (gain + 0.01);
  }
};

// The other tasks' trials in the records, as training rows for the cost model (transfer): per
// task at most `per_task` of its latest trials, at most `limit` rows in all. Features are cached
// by task and configuration across calls.
class TransferSet {
 public:
  autotune::TrainingSet for_task(const autotune::RecordFile& file, const std::string& task_key,
                                 const std::string& target) {
    std::map<std::string, std::vector<const autotune::Record*>> by_task;
    for (const autotune::Record& r : file.records)
      if (r.target == target && !r.in_model)
        by_task[autotune::task_key(r.task, r.target)].push_back(&r);
    autotune::TrainingSet set;
    for (const auto& [key, records] : by_task) {
      if (key == task_key || records.size() < 2) continue;
      std::vector<std::vector<float>> rows;
      std::vector<double> costs;
      const size_t first = records.size() > kPerTask ? records.size() - kPerTask : 0;
      for (size_t k = first; k < records.size() && set.size() + rows.size() < kLimit; ++k) {
        const std::vector<float>* f = features(key, *records[k]);
        if (!f) continue;
        rows.push_back(*f);
        costs.push_back(records[k]->cost());
      }
      if (rows.size() >= 2) set.add_task(rows, costs);
    }
    return set;
  }

 private:
  static constexpr size_t kPerTask = 64, kLimit = 1024;

  const std::vector<float>* features(const std::string& key, const autotune::Record& r) {
    const std::string id = key + " " + nlohmann::json(r.config).dump();
    auto it = cache_.find(id);
    if (it == cache_.end()) {
      std::vector<float> f;
      try {
        f = autotune::extract_features(autotune::Task::from_json(r.task, r.target), r.config);
      } catch (const Error&) {
        // A task this build no longer knows, or a configuration outside its space: skipped.
      }
      it = cache_.emplace(id, std::move(f)).first;
    }
    return it->second.empty() ? nullptr : &it->second;
  }

  std::map<std::string, std::vector<float>> cache_;
};

// How many times each in-model comparison is made; a point applies only when it wins every time.
constexpr int kInModelComparisons = 3;

// The last step: each task whose best point is not its default, against the default, inside the
// compiled model. A kernel timed alone is not the kernel in the model: its input was just written
// by the kernel before it (by which core, in which order, is the schedule's choice), its weights
// sit wherever the rest of the model left them, and its own schedule changes what the next kernel
// finds in the caches; so even a per-kernel profile of the model misattributes. The judge is the
// whole model: task by task (largest share first), the build with the points accepted so far and
// that task's best is timed against the build without it, in alternating (ABBA) blocks at 1
// thread and at the runtime's default. One such comparison cannot resolve a 1-2% effect (where
// each load's memory lands alone moves the model's time by that much), so it is made
// kInModelComparisons times, each with fresh loads of both builds, and the point is accepted only
// when it wins every one (autotune::wins_in_model). Before the points one by one, all of them
// together, accepted at once when they win so. Last, the build with every accepted point is
// compared the same way against the untuned build, and when it does not win every time, no point
// applies. Each comparison (but a loss of all together) is appended as an in-model record of
// every point it judged, and those records decide for the task from then on (records.h): a point
// applies only when it won all of its.
void check_in_model(const graph::Graph& g, const Target& target,
                    const std::vector<TaskState>& states, const std::string& records,
                    autotune::RecordFile& file, bool strict) {
  // The tasks whose best is not the default and has not been checked yet (a rerun with nothing
  // new checks nothing), and the points that earlier checks accepted.
  std::set<std::pair<std::string, ops::Config>> done;
  for (const autotune::Record& r : file.records)
    if (r.in_model) done.insert({autotune::task_key(r.task, r.target), r.config});
  std::map<std::string, ops::Config> accepted;
  const autotune::RecordBook book(file.records);
  std::vector<const TaskState*> checked;
  for (const TaskState& s : states) {
    const std::string key = s.task().key();
    std::optional<ops::Config> applied = book.best(s.task());
    if (applied && done.count({key, *applied}) && autotune::index_of(s.space, *applied) > 0)
      accepted[key] = *applied;
    if (s.best().first <= 0 || !std::isfinite(s.best().second)) continue;
    if (done.count({key, autotune::config_at(s.space, s.best().first)})) continue;
    checked.push_back(&s);
  }
  if (checked.empty()) return;

  std::optional<TempDir> temp;
  with_exit_code(kRuntime, "", [&] { temp.emplace("anvil-tune-check-", "the in-model check"); });
  // Builds of the model with `points` (task key -> configuration; the others by the default rule).
  const std::string target_str = target.str();
  int builds = 0;
  std::set<std::string> warned;  // each fallback once, not once per build
  auto compile = [&](const std::map<std::string, ops::Config>& points) {
    graph::BuildOptions build;
    build.config_for = [&points, target_str](
                           const std::string& op, const std::vector<ops::TensorType>& inputs,
                           const ops::Attrs& attrs) -> std::optional<ops::Config> {
      auto it = points.find(autotune::Task{op, inputs, attrs, target_str}.key());
      if (it == points.end()) return std::nullopt;
      return it->second;
    };
    const std::string file_name = temp->path() + "/build" + std::to_string(builds++) + ".so";
    with_exit_code(kCompile, "the in-model check: compiling the model",
                   [&] { build_graph(g, target, build, strict, &warned).save(file_name); });
    return file_name;
  };
  std::string base = compile(accepted);
  std::vector<runtime::NDArray> inputs;
  {
    const runtime::Model model =
        with_exit_code(kCompile, "loading " + base, [&] { return runtime::Model::load(base); });
    for (const runtime::TensorInfo& t : model.inputs()) inputs.push_back(filled_input(t, "random"));
  }
  const int default_threads = AnvilGetNumThreads();
  std::vector<int> thread_counts = {1};
  if (default_threads > 1) thread_counts.push_back(default_threads);

  // Median seconds per run of `a` and `b` at each thread count, ABBA blocks of 4 runs, about half
  // a second of runs per side and thread count (20 to 200).
  auto time_pair = [&](const runtime::Model& a, const runtime::Model& b) {
    std::vector<double> cost_a, cost_b;
    for (int threads : thread_counts) {
      AnvilSetNumThreads(threads);
      auto run_s = [&](const runtime::Model& m) {
        auto start = Clock::now();
        with_exit_code(kRuntime, "the in-model check: running the model", [&] { m.run(inputs); });
        return std::chrono::duration<double>(Clock::now() - start).count();
      };
      run_s(a), run_s(b);  // warm-up
      const int runs = std::clamp(static_cast<int>(0.5 / std::max(1e-6, run_s(a))), 20, 200);
      std::vector<double> ta, tb;
      for (int round = 0; static_cast<int>(ta.size()) < runs; ++round)
        for (int k = 0; k < 2; ++k) {
          const bool a_now = (k == 0) == (round % 2 == 0);
          for (int i = 0; i < 4; ++i) (a_now ? ta : tb).push_back(run_s(a_now ? a : b));
        }
      cost_a.push_back(latency_stats(ta).median_ms);  // seconds: the unit of ta
      cost_b.push_back(latency_stats(tb).median_ms);
    }
    AnvilSetNumThreads(0);
    return std::pair{cost_a, cost_b};
  };

  // Up to kInModelComparisons comparisons of build `with` (the points `with_points`) against
  // `without`, each printed and kept as an in-model record for each of `judged`; it stops at the
  // first that is not a win. Whether every one was. The records are appended at the end, when
  // all were wins or `record_loss`. Each comparison has loads of both builds of its own (all
  // coexisting, loaded in alternating order): where a load's memory lands moves the model's time
  // by a few percent (load_copies), as much as the effects judged here.
  auto compare = [&](const std::string& without, const std::string& with,
                     const std::map<std::string, ops::Config>& with_points,
                     const std::vector<const autotune::Task*>& judged, bool record_loss) {
    // Loaded without, with, then with, without, ...: each comparison its own pair.
    auto [without_loads, with_loads] = load_copies(without, with, kInModelComparisons);
    std::vector<autotune::Record> made;
    auto keep = [&] {
      for (const autotune::Record& r : made) {
        with_exit_code(kRuntime, "", [&] { autotune::append_record(records, r); });
        file.records.push_back(r);
      }
    };
    for (int k = 0; k < kInModelComparisons; ++k) {
      auto [without_s, with_s] = time_pair(without_loads[k], with_loads[k]);
      bool win = false;
      for (const autotune::Task* task : judged) {
        autotune::Record r{task->to_json(), task->target, with_points.at(task->key()),
                           with_s,          std::nullopt, autotune::utc_now()};
        r.in_model = true;
        r.default_s = without_s;
        made.push_back(r);
        win = autotune::wins_in_model(r);  // as the records will judge
      }
      std::string times;
      for (size_t t = 0; t < thread_counts.size(); ++t) {
        char buf[80];
        std::snprintf(buf, sizeof buf, "%s%.3f -> %.3f ms", t ? ", " : "", without_s[t] * 1e3,
                      with_s[t] * 1e3);
        times += buf;
      }
      std::printf("    %s: %s\n", times.c_str(), win ? "a win" : "not a win");
      std::fflush(stdout);
      if (!win) {
        if (record_loss) keep();
        return false;
      }
    }
    keep();
    return true;
  };

  std::printf("in-model check (the model's time per run at %s, without and with each best):\n",
              thread_counts.size() > 1 ? "1 thread and the default" : "1 thread");
  // First every best together: most tasks are a small share of the model, and a gain that the
  // check cannot resolve task by task may add up to one it can. A loss here is not recorded: the
  // points are then judged one by one.
  std::vector<const autotune::Task*> judged;
  if (checked.size() > 1) {
    std::map<std::string, ops::Config> with = accepted;
    for (const TaskState* s : checked) {
      with[s->task().key()] = autotune::config_at(s->space, s->best().first);
      judged.push_back(&s->task());
    }
    std::string candidate = compile(with);
    std::printf("  all %zu bests together:\n", checked.size());
    if (compare(base, candidate, with, judged, /*record_loss=*/false)) {
      std::printf("    all are applied\n");
      accepted = std::move(with);
      base = std::move(candidate);
      checked.clear();
    } else {
      std::printf("    each is judged alone\n");
    }
  }
  for (const TaskState* s : checked) {
    std::map<std::string, ops::Config> with = accepted;
    with[s->task().key()] = autotune::config_at(s->space, s->best().first);
    std::string candidate = compile(with);
    std::printf("  %s:\n", s->task().str().c_str());
    if (compare(base, candidate, with, {&s->task()}, /*record_loss=*/true)) {
      std::printf("    the best is applied\n");
      accepted = std::move(with);
      base = std::move(candidate);
    } else {
      std::printf("    the default is kept\n");
    }
  }
  if (accepted.empty()) return;
  std::printf("  all %zu applied points together, against the untuned build:\n", accepted.size());
  judged.clear();
  for (const TaskState& s : states)
    if (accepted.count(s.task().key())) judged.push_back(&s.task());
  if (compare(compile({}), base, accepted, judged, /*record_loss=*/true))
    std::printf("    the tuned build is kept\n");
  else
    std::printf("    not a consistent win: every task keeps its default\n");
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
    fs::path parent = fs::path(o.records).parent_path();
    std::error_code ec;
    if (!parent.empty() && !fs::is_directory(parent, ec))
      usage_error("--tuning-records " + o.records + ": the directory '" + parent.string() +
                  "' does not exist");
  }
  // Resume: the trials already recorded count towards each task's.
  autotune::RecordFile file;
  std::error_code ec;
  if (fs::exists(o.records, ec)) file = read_tuning_records(o.records, o.records_any_cpu);
  if (std::string note = autotune::other_cpus_note(file); !note.empty())
    std::printf(
        "%s: this run neither resumes from them nor learns from them "
        "(--records-any-cpu)\n",
        note.c_str());

  graph::Graph g = load_model(o.model, o.input_shapes);
  std::vector<autotune::ModelTask> tasks =
      with_exit_code(kCompile, "extracting the tasks of " + o.model,
                     [&] { return autotune::extract_tasks(g, target, graph::BuildOptions{}); });

  std::vector<TaskState> states;
  for (const autotune::ModelTask& mt : tasks) {
    TaskState s;
    s.model_task = &mt;
    s.space = mt.task.space();
    s.size = autotune::space_size(s.space);
    s.flops = mt.flops / mt.count;
    for (const autotune::Record& r : file.records) {
      if (r.in_model || autotune::task_key(r.task, r.target) != mt.task.key()) continue;
      int64_t i = autotune::index_of(s.space, r.config);
      if (i < 0) continue;
      auto [it, added] = s.measured.emplace(i, r.cost());
      if (!added) it->second = std::min(it->second, r.cost());
    }
    s.recorded = s.measured.size();
    s.gain_reference = s.best().second;
    states.push_back(std::move(s));
  }
  // The budget: trials per task on average, the recorded ones included.
  int64_t budget = 0, spent = 0;
  for (const TaskState& s : states) {
    budget += std::min<int64_t>(o.trials, s.size);
    spent += static_cast<int64_t>(s.measured.size());
  }
  std::printf(
      "%s: %zu tunable tasks for '%s', %d trials per task (%lld in all, %lld recorded; "
      "%s search)\n",
      o.model.c_str(), tasks.size(), target.str().c_str(), o.trials, static_cast<long long>(budget),
      static_cast<long long>(spent), o.tuner.c_str());
  for (size_t ti = 0; ti < states.size(); ++ti) {
    const TaskState& s = states[ti];
    std::printf(
        "[%zu/%zu] %s: %zu kernel(s), %.1f%% of the FLOPs, %lld configurations%s\n", ti + 1,
        states.size(), s.task().str().c_str(), s.model_task->kernels.size(),
        100 * s.model_task->share, static_cast<long long>(s.size),
        s.recorded ? (", " + std::to_string(s.recorded) + " already recorded").c_str() : "");
  }
  std::fflush(stdout);

  std::vector<std::string> worker;
  std::istringstream words(o.measure_worker);
  for (std::string w; words >> w;) worker.push_back(w);
  if (worker.empty()) {
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) throw CliError(kRuntime, "cannot find the anvil executable for the measure worker");
    exe[n] = '\0';
    worker = {exe, "measure-worker"};
  }
  autotune::Measurer measurer(worker);
  autotune::MeasureOptions mo;
  mo.repeats = o.repeats;
  mo.timeout_s = o.timeout_s;

  const auto start = Clock::now();
  auto elapsed_s = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  auto out_of_time = [&] { return o.time_budget_min > 0 && elapsed_s() > o.time_budget_min * 60; };
  TransferSet transfer;
  int64_t trials_now = 0;

  // Measures `points` of task `s`, appends the trials, and updates what the task knows.
  auto measure = [&](TaskState& s, const std::vector<int64_t>& points) {
    std::vector<ops::Config> configs;
    for (int64_t i : points) configs.push_back(autotune::config_at(s.space, i));
    std::vector<autotune::Measurement> ms = measurer.measure_batch(s.task(), configs, mo);
    for (size_t k = 0; k < points.size(); ++k) {
      autotune::Record r{s.task().to_json(), s.task().target, configs[k],
                         ms[k].costs_s,      ms[k].error,     autotune::utc_now()};
      with_exit_code(kRuntime, "", [&] { autotune::append_record(o.records, r); });
      file.records.push_back(r);
      if (ms[k].error) ++s.failed;
      auto [it, added] = s.measured.emplace(points[k], r.cost());
      if (!added) it->second = std::min(it->second, r.cost());
      ++s.measured_now;
      ++trials_now;
      if (r.cost() < s.gain_reference * 0.99 || !std::isfinite(s.gain_reference)) {
        s.gain_reference = std::min(s.gain_reference, r.cost());
        s.since_gain = 0;
      } else {
        ++s.since_gain;
      }
    }
  };

  const int batch_size = std::clamp(o.batch, 1, std::max(1, o.trials));
  while (spent < budget && !out_of_time()) {
    // The next task: one not yet started, else the scheduler's choice.
    TaskState* s = nullptr;
    for (TaskState& c : states)
      if (!c.done && c.measured.empty()) {
        s = &c;
        break;
      }
    if (!s)
      for (TaskState& c : states)
        if (!c.done && (!s || c.priority() > s->priority())) s = &c;
    if (!s) break;
    if (!s->search) {
      autotune::SearchContext context;
      const autotune::Task task = s->task();
      const ops::ConfigSpace space = s->space;
      context.features = [task, space](int64_t i) {
        return autotune::extract_features(task, autotune::config_at(space, i));
      };
      // On a GPU, a point whose kernels exceed the block's threads or shared memory (or that
      // cannot be lowered at all) is skipped: lowering it (a few ms) is cheaper than a trial.
      if (target.is_gpu())
        context.fits = [task, space, target](int64_t i) {
          try {
            autotune::lower_candidate_gpu(task, target, autotune::config_at(space, i));
            return true;
          } catch (const InternalError&) {
            throw;  // a compiler bug, not a point that does not fit
          } catch (const Error&) {
            return false;
          }
        };
      if (o.tuner == "xgb") context.prior = transfer.for_task(file, task.key(), task.target);
      s->search = autotune::make_search(o.tuner, s->space,
                                        o.seed + static_cast<uint32_t>(s - states.data()), context);
    }
    const int want = static_cast<int>(std::min<int64_t>(batch_size, budget - spent));
    std::vector<int64_t> points = s->search->next_batch(s->measured, want);
    if (points.empty()) {
      s->done = true;  // every point measured
      continue;
    }
    measure(*s, points);
    spent += static_cast<int64_t>(points.size());
    s->best_after_batch.push_back(s->best().second);
    if (static_cast<int64_t>(s->measured.size()) >= s->size) s->done = true;
    if (o.early_stopping > 0 && s->since_gain >= o.early_stopping) s->done = true;

    // Progress: this task's bar (its trials against its share of the budget), best and default
    // throughput, and the time left at this run's pace.
    const size_t ti = static_cast<size_t>(s - states.data());
    const int64_t share = std::min<int64_t>(o.trials, s->size);
    const int64_t have = static_cast<int64_t>(s->measured.size());
    const int width = 20;
    const int filled = static_cast<int>(std::min<int64_t>(width, have * width / share));
    const double per_trial = elapsed_s() / std::max<int64_t>(1, trials_now);
    double left = per_trial * static_cast<double>(budget - spent);
    if (o.time_budget_min > 0) left = std::min(left, o.time_budget_min * 60 - elapsed_s());
    std::printf(
        "  [%zu/%zu] %s [%s%s] %lld/%lld trials, best %s GFLOP/s (default %s)%s%s, ~%s "
        "left\n",
        ti + 1, states.size(), s->task().op.c_str(), std::string(filled, '#').c_str(),
        std::string(width - filled, '.').c_str(), static_cast<long long>(have),
        static_cast<long long>(share), gflops_string(s->flops, s->best().second).c_str(),
        gflops_string(s->flops, s->default_cost()).c_str(),
        s->failed ? (", " + std::to_string(s->failed) + " failed").c_str() : "",
        s->done && have < s->size ? ", stopped improving" : "",
        minutes_string(std::max(0.0, left)).c_str());
    std::fflush(stdout);
  }
  if (out_of_time())
    std::printf("time budget of %.1f min spent; the records resume from here\n", o.time_budget_min);

  // A best point measured while something else ran could beat a default measured in a quiet
  // moment, or the reverse: both once more, one right after the other, so that the records never
  // prefer a configuration that is slower than the default.
  for (TaskState& s : states) {
    const int64_t b = s.best().first;
    if (s.measured_now > 0 && b > 0 && std::isfinite(s.best().second)) measure(s, {0, b});
  }
  check_in_model(g, target, states, o.records, file, o.strict);
  for (size_t ti = 0; ti < states.size(); ++ti) {
    const TaskState& s = states[ti];
    std::printf("[%zu/%zu] %s: best %s GFLOP/s, default %s GFLOP/s (%d measured now, %d failed)\n",
                ti + 1, states.size(), s.task().op.c_str(),
                gflops_string(s.flops, s.best().second).c_str(),
                gflops_string(s.flops, s.default_cost()).c_str(), s.measured_now, s.failed);
  }
  std::printf("records in %s (%lld trials in %s)\n", o.records.c_str(),
              static_cast<long long>(trials_now), minutes_string(elapsed_s()).c_str());
}

void measure_worker_command() {
  autotune::serve_measurements(std::cin, std::cout);
}

}  // namespace anvil::cli
