#include "anvil/autotune/session.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>

#include "anvil/autotune/ab_timing.h"
#include "anvil/autotune/features.h"
#include "anvil/autotune/search.h"
#include "anvil/graph/build.h"
#include "anvil/runtime/c_runtime_api.h"
#include "anvil/support/error.h"
#include "anvil/support/temp_dir.h"

namespace anvil::autotune {

namespace {

using Clock = std::chrono::steady_clock;

// One task of the model as the session goes.
struct TaskState {
  const ModelTask* model_task = nullptr;
  ops::ConfigSpace space;
  int64_t size = 0;
  double flops = 0;                    // of one call
  std::map<int64_t, double> measured;  // point -> lowest cost (infinity: failed)
  size_t recorded = 0;                 // of `measured`, from the records already there
  std::unique_ptr<Search> search;
  std::vector<double> best_after_batch;  // this run's
  int measured_now = 0, failed = 0, since_gain = 0;
  double gain_reference = INFINITY;  // the best cost the next 1% gain is measured against
  bool done = false;

  const Task& task() const { return model_task->task; }
  std::pair<int64_t, double> best() const {
    std::pair<int64_t, double> b = {-1, INFINITY};
    for (const auto& [i, c] : measured)
      if (c < b.second) b = {i, c};
    return b;
  }
  double default_cost() const { return measured.count(0) ? measured.at(0) : INFINITY; }
  // Up to `k` points for the in-model check, fastest first: those measured faster than the
  // default (as the best always was).
  std::vector<int64_t> contenders(size_t k) const {
    std::vector<std::pair<double, int64_t>> by_cost;
    for (const auto& [i, c] : measured)
      if (i > 0 && std::isfinite(c) && c < default_cost()) by_cost.push_back({c, i});
    std::sort(by_cost.begin(), by_cost.end());
    std::vector<int64_t> out;
    for (size_t j = 0; j < by_cost.size() && j < k; ++j) out.push_back(by_cost[j].second);
    return out;
  }
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
  TrainingSet for_task(const RecordFile& file, const std::string& task_key,
                       const std::string& target) {
    std::map<std::string, std::vector<const Record*>> by_task;
    for (const Record& r : file.records)
      if (r.target == target && !r.in_model) by_task[task_key_of(r)].push_back(&r);
    TrainingSet set;
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

  static std::string task_key_of(const Record& r) { return task_key(r.task, r.target); }

  const std::vector<float>* features(const std::string& key, const Record& r) {
    const std::string id = key + " " + nlohmann::json(r.config).dump();
    auto it = cache_.find(id);
    if (it == cache_.end()) {
      std::vector<float> f;
      try {
        f = extract_features(Task::from_json(r.task, r.target), r.config);
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
// How many of a task's fastest points (in isolation) the in-model check tries, one at a time.
constexpr size_t kContenders = 2;

}  // namespace

struct TuningSession::State {
  const graph::Graph& graph;
  Target target;
  TuningOptions o;
  RecordFile file;
  std::vector<ModelTask> tasks;
  std::vector<TaskState> states;
  std::vector<ModelTask> algorithm_tasks;  // the convolutions whose algorithm the model judges
  int64_t budget = 0, spent = 0, recorded = 0, trials_now = 0;
  Clock::time_point start;
  TransferSet transfer;
  std::unique_ptr<Measurer> measurer;

  State(const graph::Graph& g, const Target& t, TuningOptions options, RecordFile records)
      : graph(g), target(t), o(std::move(options)), file(std::move(records)) {}

  double elapsed_s() const { return std::chrono::duration<double>(Clock::now() - start).count(); }
  bool out_of_time() const { return o.time_budget_min > 0 && elapsed_s() > o.time_budget_min * 60; }
  void note(TuningSession& session, const std::string& line) const {
    if (session.on_note) session.on_note(line);
  }
  TaskStatus status(const TaskState& s) const;
  void measure(TaskState& s, const std::vector<int64_t>& points);
  void start_search(TaskState& s);
  void check_in_model(TuningSession& session);
};

TaskStatus TuningSession::State::status(const TaskState& s) const {
  TaskStatus t;
  t.index = static_cast<size_t>(&s - states.data());
  t.count = states.size();
  t.task = s.model_task;
  t.size = s.size;
  t.measured = static_cast<int64_t>(s.measured.size());
  t.recorded = static_cast<int64_t>(s.recorded);
  t.share = std::min<int64_t>(o.trials, s.size);
  t.measured_now = s.measured_now;
  t.failed = s.failed;
  t.flops = s.flops;
  t.best_s = s.best().second;
  t.default_s = s.default_cost();
  t.done = s.done;
  t.stopped_improving = s.done && t.measured < s.size;
  return t;
}

// Measures `points` of task `s`, appends the trials, and updates what the task knows.
void TuningSession::State::measure(TaskState& s, const std::vector<int64_t>& points) {
  std::vector<ops::Config> configs;
  for (int64_t i : points) configs.push_back(config_at(s.space, i));
  std::vector<Measurement> ms = measurer->measure_batch(s.task(), configs, o.measure);
  for (size_t k = 0; k < points.size(); ++k) {
    Record r{s.task().to_json(), s.task().target, configs[k],
             ms[k].costs_s,      ms[k].error,     utc_now()};
    append_record(o.records, r);
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
}

void TuningSession::State::start_search(TaskState& s) {
  SearchContext context;
  const Task task = s.task();
  const ops::ConfigSpace space = s.space;
  context.features = [task, space](int64_t i) {
    return extract_features(task, config_at(space, i));
  };
  // On a GPU, a point whose kernels exceed the block's threads or shared memory (or that cannot
  // be lowered at all) is skipped: lowering it (a few ms) is cheaper than a trial.
  if (target.is_gpu())
    context.fits = [task, space, t = target](int64_t i) {
      try {
        lower_candidate_gpu(task, t, config_at(space, i));
        return true;
      } catch (const InternalError&) {
        throw;  // a compiler bug, not a point that does not fit
      } catch (const Error&) {
        return false;
      }
    };
  if (o.tuner == "xgb") context.prior = transfer.for_task(file, task.key(), task.target);
  s.search =
      make_search(o.tuner, s.space, o.seed + static_cast<uint32_t>(&s - states.data()), context);
}

TuningSession::TuningSession(const graph::Graph& g, const Target& target, TuningOptions options,
                             RecordFile records)
    : s_(std::make_unique<State>(g, target, std::move(options), std::move(records))) {
  State& st = *s_;
  // The kernels as the records' algorithms make them (a convolution an earlier session moved to
  // another algorithm is tuned as that one).
  graph::BuildOptions build;
  const RecordBook book(st.file.records);
  build.algorithm_for = algorithm_source(book, target);
  st.tasks = extract_tasks(g, target, build);
  st.algorithm_tasks = extract_algorithm_tasks(g, target, build);
  for (const ModelTask& mt : st.tasks) {
    TaskState s;
    s.model_task = &mt;
    s.space = mt.task.space();
    s.size = space_size(s.space);
    s.flops = mt.flops / mt.count;
    for (const Record& r : st.file.records) {
      if (r.in_model || task_key(r.task, r.target) != mt.task.key()) continue;
      int64_t i = index_of(s.space, r.config);
      if (i < 0) continue;
      auto [it, added] = s.measured.emplace(i, r.cost());
      if (!added) it->second = std::min(it->second, r.cost());
    }
    s.recorded = s.measured.size();
    s.gain_reference = s.best().second;
    st.budget += std::min<int64_t>(st.o.trials, s.size);
    st.recorded += static_cast<int64_t>(s.measured.size());
    st.states.push_back(std::move(s));
  }
  st.spent = st.recorded;
}

TuningSession::TuningSession(TuningSession&&) noexcept = default;
TuningSession& TuningSession::operator=(TuningSession&&) noexcept = default;
TuningSession::~TuningSession() = default;

int64_t TuningSession::budget() const {
  return s_->budget;
}
int64_t TuningSession::recorded() const {
  return s_->recorded;
}

const std::vector<ModelTask>& TuningSession::algorithm_tasks() const {
  return s_->algorithm_tasks;
}

std::vector<TaskStatus> TuningSession::status() const {
  std::vector<TaskStatus> out;
  for (const TaskState& s : s_->states) out.push_back(s_->status(s));
  return out;
}

int64_t TuningSession::run() {
  State& st = *s_;
  st.measurer = std::make_unique<Measurer>(st.o.measure_worker);
  st.start = Clock::now();
  const int batch_size = std::clamp(st.o.batch, 1, std::max(1, st.o.trials));
  while (st.spent < st.budget && !st.out_of_time()) {
    // The next task: one not yet started, else the scheduler's choice.
    TaskState* s = nullptr;
    for (TaskState& c : st.states)
      if (!c.done && c.measured.empty()) {
        s = &c;
        break;
      }
    if (!s)
      for (TaskState& c : st.states)
        if (!c.done && (!s || c.priority() > s->priority())) s = &c;
    if (!s) break;
    if (!s->search) st.start_search(*s);
    const int want = static_cast<int>(std::min<int64_t>(batch_size, st.budget - st.spent));
    std::vector<int64_t> points = s->search->next_batch(s->measured, want);
    if (points.empty()) {
      s->done = true;  // every point measured
      continue;
    }
    st.measure(*s, points);
    st.spent += static_cast<int64_t>(points.size());
    s->best_after_batch.push_back(s->best().second);
    if (static_cast<int64_t>(s->measured.size()) >= s->size) s->done = true;
    if (st.o.early_stopping > 0 && s->since_gain >= st.o.early_stopping) s->done = true;
    if (on_batch) {
      // The time left at this run's pace, within the time budget.
      const double per_trial = st.elapsed_s() / std::max<int64_t>(1, st.trials_now);
      double left = per_trial * static_cast<double>(st.budget - st.spent);
      if (st.o.time_budget_min > 0)
        left = std::min(left, st.o.time_budget_min * 60 - st.elapsed_s());
      on_batch({st.status(*s), std::max(0.0, left)});
    }
  }
  if (st.out_of_time()) {
    char line[120];
    std::snprintf(line, sizeof line, "time budget of %.1f min spent; the records resume from here",
                  st.o.time_budget_min);
    st.note(*this, line);
  }

  // A best point measured while something else ran could beat a default measured in a quiet
  // moment, or the reverse: both once more, one right after the other, so that the records never
  // prefer a configuration that is slower than the default.
  for (TaskState& s : st.states) {
    const int64_t b = s.best().first;
    if (s.measured_now > 0 && b > 0 && std::isfinite(s.best().second)) st.measure(s, {0, b});
  }
  st.check_in_model(*this);
  return st.trials_now;
}

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
// when it wins every one (wins_in_model). Before the points one by one, all of them together,
// accepted at once when they win so. Last, the build with every accepted point is compared the
// same way against the untuned build, and when it does not win every time, no point applies.
// Each comparison (but a loss of all together) is appended as an in-model record of every point
// it judged, and those records decide for the task from then on (records.h): a point applies only
// when it won all of its.
void TuningSession::State::check_in_model(TuningSession& session) {
  // The tasks whose best is not the default and has not been checked yet (a rerun with nothing
  // new checks nothing), and the points that earlier checks accepted.
  std::set<std::pair<std::string, ops::Config>> done;
  for (const Record& r : file.records)
    if (r.in_model) done.insert({task_key(r.task, r.target), r.config});
  std::map<std::string, ops::Config> accepted;
  const RecordBook book(file.records);
  std::vector<const TaskState*> checked;
  std::vector<std::pair<const Task*, ops::Config>> alternatives;  // algorithms not judged yet
  for (const ModelTask& mt : algorithm_tasks) {
    const std::string key = mt.task.key();
    const ops::ConfigSpace space = mt.task.space();
    std::optional<ops::Config> applied = book.best(mt.task);
    if (applied && done.count({key, *applied}) && index_of(space, *applied) > 0)
      accepted[key] = *applied;
    bool judged = false;
    for (int64_t i = 0; i < space_size(space); ++i)
      judged |= done.count({key, config_at(space, i)});
    if (!judged)
      for (int64_t i = 1; i < space_size(space); ++i)
        alternatives.push_back({&mt.task, config_at(space, i)});
  }
  for (const TaskState& s : states) {
    const std::string key = s.task().key();
    std::optional<ops::Config> applied = book.best(s.task());
    if (applied && done.count({key, *applied}) && index_of(s.space, *applied) > 0)
      accepted[key] = *applied;
    if (s.best().first <= 0 || !std::isfinite(s.best().second)) continue;
    if (done.count({key, config_at(s.space, s.best().first)})) continue;
    checked.push_back(&s);
  }
  if (checked.empty() && alternatives.empty()) return;

  TempDir temp("anvil-tune-check-", "the in-model check");
  // Builds of the model with `points` (task key -> configuration; the others by the default rule).
  const std::string target_str = target.str();
  int builds = 0;
  std::set<std::string> warned;  // each fallback once, not once per build
  auto compile = [&](const std::map<std::string, ops::Config>& points) {
    graph::BuildOptions build;
    build.strict = o.strict;
    auto lookup = [&points, target_str](const std::string& choice) {
      return [&points, target_str, choice](const std::string& op,
                                           const std::vector<ops::TensorType>& inputs,
                                           const ops::Attrs& attrs) -> std::optional<ops::Config> {
        auto it = points.find(Task{op, inputs, attrs, target_str, choice}.key());
        if (it == points.end()) return std::nullopt;
        return it->second;
      };
    };
    build.config_for = lookup("");
    build.algorithm_for = lookup("algorithm");
    const std::string file_name = temp.path() + "/build" + std::to_string(builds++) + ".so";
    graph::CompiledGraph cg = graph::CompiledGraph::build(graph, target, build);
    for (const graph::CompiledGraph::Fallback& f : cg.fallbacks())
      if (warned.insert(f.str()).second) note(session, "warning: " + f.str());
    cg.save(file_name);
    return file_name;
  };
  std::string base = compile(accepted);
  std::vector<runtime::NDArray> inputs;
  {
    const runtime::Model model = runtime::Model::load(base);
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
      std::vector<double> first;
      time_runs(a, inputs, 1, &first);
      AbOptions ab;
      ab.runs = std::clamp(static_cast<int>(500 / std::max(1e-3, first[0])), 20, 200);
      ab.block = 4;
      ab.warmup = 1;
      AbTimes t = time_ab({a}, {b}, inputs, ab);
      cost_a.push_back(median(t.a_ms) / 1e3);
      cost_b.push_back(median(t.b_ms) / 1e3);
    }
    AnvilSetNumThreads(0);
    return std::pair{cost_a, cost_b};
  };

  // Up to kInModelComparisons comparisons of build `with` (the points `with_points`) against
  // `without`, each noted and kept as an in-model record for each of `judged`; it stops at the
  // first that is not a win. Whether every one was. The records are appended at the end, when
  // all were wins or `record_loss`. Each comparison has loads of both builds of its own (all
  // coexisting, loaded in alternating order): where a load's memory lands moves the model's time
  // by a few percent (load_copies), as much as the effects judged here.
  auto compare = [&](const std::string& without, const std::string& with,
                     const std::map<std::string, ops::Config>& with_points,
                     const std::vector<const Task*>& judged, bool record_loss) {
    auto [without_loads, with_loads] = load_copies(without, with, kInModelComparisons);
    std::vector<Record> made;
    auto keep = [&] {
      for (const Record& r : made) {
        append_record(o.records, r);
        file.records.push_back(r);
      }
    };
    for (int k = 0; k < kInModelComparisons; ++k) {
      auto [without_s, with_s] = time_pair(without_loads[k], with_loads[k]);
      bool win = false;
      for (const Task* task : judged) {
        Record r{task->to_json(), task->target, with_points.at(task->key()),
                 with_s,          std::nullopt, utc_now()};
        r.in_model = true;
        r.default_s = without_s;
        made.push_back(r);
        win = wins_in_model(r);  // as the records will judge
      }
      std::string times;
      for (size_t t = 0; t < thread_counts.size(); ++t) {
        char buf[80];
        std::snprintf(buf, sizeof buf, "%s%.3f -> %.3f ms", t ? ", " : "", without_s[t] * 1e3,
                      with_s[t] * 1e3);
        times += buf;
      }
      note(session, "    " + times + ": " + (win ? "a win" : "not a win"));
      if (!win) {
        if (record_loss) keep();
        return false;
      }
    }
    keep();
    return true;
  };

  note(session, std::string("in-model check (the model's time per run at ") +
                    (thread_counts.size() > 1 ? "1 thread and the default" : "1 thread") +
                    ", without and with each best, then each convolution's other algorithms):");
  // First every best together: most tasks are a small share of the model, and a gain that the
  // check cannot resolve task by task may add up to one it can. A loss here is not recorded: the
  // points are then judged one by one.
  std::vector<const Task*> judged;
  if (checked.size() > 1) {
    std::map<std::string, ops::Config> with = accepted;
    for (const TaskState* s : checked) {
      with[s->task().key()] = config_at(s->space, s->best().first);
      judged.push_back(&s->task());
    }
    std::string candidate = compile(with);
    note(session, "  all " + std::to_string(checked.size()) + " bests together:");
    if (compare(base, candidate, with, judged, /*record_loss=*/false)) {
      note(session, "    all are applied");
      accepted = std::move(with);
      base = std::move(candidate);
      checked.clear();
    } else {
      note(session, "    each is judged alone");
    }
  }
  // Task by task, its best; where the model rejects it, the runner-up (the isolated ranking is
  // not the model's: a point a little slower alone may leave the caches better for its
  // neighbours, the issue the in-model check exists for).
  for (const TaskState* s : checked) {
    const std::string key = s->task().key();
    for (int64_t point : s->contenders(kContenders)) {
      const ops::Config config = config_at(s->space, point);
      if (done.count({key, config})) continue;
      std::map<std::string, ops::Config> with = accepted;
      with[key] = config;
      std::string candidate = compile(with);
      const bool best = point == s->best().first;
      note(session, "  " + s->task().str() + (best ? ":" : ", its runner-up:"));
      if (compare(base, candidate, with, {&s->task()}, /*record_loss=*/true)) {
        note(session, best ? "    the best is applied" : "    the runner-up is applied");
        accepted = std::move(with);
        base = std::move(candidate);
        break;
      }
      note(session, "    the default is kept");
    }
  }
  // The algorithms: a convolution's other algorithms (direct, the other Winograd tiles) one by
  // one, each against the build with everything accepted so far. The cost of a transformed
  // weight streamed at batch 1 (ops::prefer_winograd's estimate) is what the model measures here.
  for (const auto& [task, point] : alternatives) {
    std::map<std::string, ops::Config> with = accepted;
    with[task->key()] = point;
    std::string candidate = compile(with);
    const int64_t tile = point.at("winograd_tile");
    note(session, "  " + task->str() + " as " +
                      (tile == 0 ? std::string("a direct convolution")
                                 : "Winograd F(" + std::to_string(tile) + "x" +
                                       std::to_string(tile) + ", 3x3)") +
                      ":");
    if (compare(base, candidate, with, {task}, /*record_loss=*/true)) {
      note(session, "    applied");
      accepted = std::move(with);
      base = std::move(candidate);
    } else {
      note(session, "    not applied");
    }
  }
  if (accepted.empty()) return;
  note(session, "  all " + std::to_string(accepted.size()) +
                    " applied points together, against the untuned build:");
  judged.clear();
  for (const TaskState& s : states)
    if (accepted.count(s.task().key())) judged.push_back(&s.task());
  for (const ModelTask& mt : algorithm_tasks)
    if (accepted.count(mt.task.key())) judged.push_back(&mt.task);
  if (compare(compile({}), base, accepted, judged, /*record_loss=*/true))
    note(session, "    the tuned build is kept");
  else
    note(session, "    not a consistent win: every task keeps its default");
}

}  // namespace anvil::autotune
