// `anvil tune`: every trial of every task of a model appended to the records (the default
// configuration first, a confirmation of the best against it last), a second run resumes instead
// of measuring again, and the records then tune every kernel of `anvil compile`; the genetic
// search runs too.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <set>

#include "anvil/autotune/records.h"
#include "anvil/autotune/task.h"
#include "anvil/models/models.h"
#include "anvil/runtime/device_api.h"
#include "tools/cli_fixture.h"

namespace anvil::cli {
namespace {

// The line `anvil compile zoo:dqn --tuning-records` prints when the records tune every tunable
// kernel of the model.
std::string every_dqn_kernel_tuned() {
  size_t kernels = 0;
  for (const autotune::ModelTask& t :
       autotune::extract_tasks(models::build_model("dqn"), Target::host(), {}))
    kernels += t.kernels.size();
  return std::to_string(kernels) + " of " + std::to_string(kernels) + " tunable kernels tuned\n";
}

TEST_F(Cli, TuneRecordsEveryTrialAndResumes) {
  std::vector<autotune::ModelTask> tasks =
      autotune::extract_tasks(models::build_model("dqn"), Target::host(), {});
  ASSERT_FALSE(tasks.empty());
  Result r = anvil("tune zoo:dqn --trials 2 --repeats 1 --tuning-records dqn.json");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find(std::to_string(tasks.size()) + " tunable tasks"), std::string::npos)
      << r.out;
  autotune::RecordFile f = autotune::read_records(path("dqn.json"));
  // Per task, in order: the default, one other point, and when that one was faster, the default
  // and it once more (the confirmation pass); then, when the other point is still the faster, its
  // comparisons inside the model (the in-model check), one cost per thread count.
  std::map<std::string, std::vector<int64_t>> points;
  std::map<std::string, std::vector<const autotune::Record*>> in_model;
  std::map<std::string, std::pair<double, int64_t>> isolated_best;  // lowest cost, its point
  for (const autotune::Record& rec : f.records) {
    EXPECT_FALSE(rec.error) << *rec.error;
    EXPECT_FALSE(rec.costs_s.empty());
    autotune::Task t = autotune::Task::from_json(rec.task, rec.target);
    const int64_t i = autotune::index_of(t.space(), rec.config);
    if (rec.in_model) {
      EXPECT_LE(rec.costs_s.size(), 2u);
      EXPECT_EQ(rec.default_s.size(), rec.costs_s.size());
      in_model[t.key()].push_back(&rec);
      continue;
    }
    EXPECT_TRUE(in_model[t.key()].empty()) << "an isolated trial after the in-model check";
    points[t.key()].push_back(i);
    auto [it, added] = isolated_best.emplace(t.key(), std::pair{rec.cost(), i});
    if (!added && rec.cost() < it->second.first) it->second = {rec.cost(), i};
  }
  bool any_checked = false;
  EXPECT_EQ(points.size(), tasks.size());
  for (const auto& [key, p] : points) {
    ASSERT_TRUE(p.size() == 2 || p.size() == 4) << key;
    EXPECT_EQ(p[0], 0) << key;
    EXPECT_GT(p[1], 0) << key;
    if (p.size() == 4) {
      EXPECT_EQ(p[2], 0) << key;
      EXPECT_EQ(p[3], p[1]) << key;
    }
    // Up to 3 comparisons, stopping at the first that is not a win; after 3 wins, up to 3 more
    // of all applied points together against the untuned build, stopping likewise. The records
    // apply the point exactly when every comparison was a win.
    const std::vector<const autotune::Record*>& m = in_model[key];
    if (isolated_best[key].second == 0) {
      EXPECT_TRUE(m.empty()) << key;  // the default won in isolation: nothing to check
      continue;
    }
    any_checked = true;
    ASSERT_GE(m.size(), 1u) << key;
    ASSERT_LE(m.size(), 6u) << key;
    bool all_wins = true;
    for (size_t k = 0; k < m.size(); ++k) {
      autotune::Task t = autotune::Task::from_json(m[k]->task, m[k]->target);
      EXPECT_EQ(autotune::index_of(t.space(), m[k]->config), p[1]) << key;
      const bool win = autotune::wins_in_model(*m[k]);
      // Only the last comparison of each round may be a loss.
      if (k + 1 < m.size()) {
        EXPECT_TRUE(win) << key << ": went on after a loss";
      }
      all_wins = all_wins && win;
    }
    if (m.size() <= 3) {
      EXPECT_FALSE(all_wins) << key << ": 3 wins, then no check of all together";
    }
    autotune::Task t = autotune::Task::from_json(m[0]->task, m[0]->target);
    ASSERT_TRUE(autotune::RecordBook(f.records).best(t).has_value()) << key;
    EXPECT_EQ(autotune::index_of(t.space(), *autotune::RecordBook(f.records).best(t)),
              all_wins ? p[1] : 0)
        << key;
  }
  // The in-model check also judges the other algorithms of each 3x3 stride-1 convolution (DQN has
  // one where Winograd applies), on the first run whatever the schedules did.
  const bool algorithms =
      !autotune::extract_algorithm_tasks(models::build_model("dqn"), Target::host(), {}).empty();
  EXPECT_EQ(r.out.find("in-model check") != std::string::npos, any_checked || algorithms) << r.out;
  const size_t total = f.records.size();

  // Resumed: nothing left to measure or check, nothing appended. Unless the check moved the 3x3
  // convolution to another algorithm (Winograd F(4x4) against F(2x2) is a close call on some CPUs,
  // decided by timing): that algorithm's kernel is a new task, tuned now, and a new in-model
  // check follows. Even then no recorded task is measured again on its own.
  std::set<std::string> recorded;
  for (const autotune::Record& rec : f.records)
    recorded.insert(autotune::Task::from_json(rec.task, rec.target).key());
  r = anvil("tune zoo:dqn --trials 2 --repeats 1 --tuning-records dqn.json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("2 already recorded"), std::string::npos) << r.out;
  const std::vector<autotune::Record> resumed = autotune::read_records(path("dqn.json")).records;
  ASSERT_GE(resumed.size(), total);
  bool new_task = false;
  for (size_t i = total; i < resumed.size(); ++i) {
    const std::string key = autotune::Task::from_json(resumed[i].task, resumed[i].target).key();
    if (recorded.count(key)) {
      EXPECT_TRUE(resumed[i].in_model) << "a recorded task measured again: " << key << "\n"
                                       << r.out;
    } else {
      new_task = true;
    }
  }
  if (!new_task) {
    EXPECT_EQ(resumed.size(), total) << r.out;
  }

  Result c = anvil("compile zoo:dqn --tuning-records dqn.json -o tuned.so");
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.out.find(every_dqn_kernel_tuned()), std::string::npos) << c.out;
}

TEST_F(Cli, TuneKilledMidRunResumesFromItsRecords) {
  // `anvil tune` killed (SIGKILL) once it has recorded a few trials: the records load. With a torn
  // last line added, as a kill inside a write would leave it, a rerun cuts that line off, resumes
  // and completes.
  const std::string run = "cd '" + dir_->string() + "' && ('" + ANVIL_CLI_PATH +
                          "' tune zoo:dqn --trials 50 --batch 2 --repeats 1 "
                          "--tuning-records killed.json "
                          "> killed.out 2>&1 & pid=$!; for i in $(seq 1200); do "
                          "[ \"$(cat killed.json 2>/dev/null | wc -l)\" -ge 3 ] && break; "
                          "sleep 0.1; done; kill -9 $pid; wait $pid; echo $? > killed.code)";
  ASSERT_EQ(std::system(run.c_str()), 0);
  EXPECT_EQ(read(path("killed.code")), "137\n") << read(path("killed.out"));
  autotune::RecordFile f = autotune::read_records(path("killed.json"));
  ASSERT_GE(f.records.size(), 3u);
  const size_t recorded = f.records.size();
  const std::string text = read(path("killed.json"));
  write(path("killed.json"), text + text.substr(0, text.find('\n') / 2));
  EXPECT_EQ(autotune::read_records(path("killed.json")).torn_lines, 1);

  // Four trials per task, in batches of two: the tasks the kill left unmeasured get theirs.
  Result r = anvil("tune zoo:dqn --trials 4 --batch 2 --repeats 1 --tuning-records killed.json");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("already recorded"), std::string::npos) << r.out;
  f = autotune::read_records(path("killed.json"));
  EXPECT_EQ(f.torn_lines, 0);
  EXPECT_GT(f.records.size(), recorded);
  // The rerun recorded every task.
  Result c = anvil("compile zoo:dqn --tuning-records killed.json -o killed.so");
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.out.find(every_dqn_kernel_tuned()), std::string::npos) << c.out;
}

TEST_F(Cli, TuneCompletesWithCrashingHangingAndWrongCandidates) {
  // The measure worker replaced by one that crashes on one candidate in six, hangs on another one
  // in six and corrupts the output of a third (chosen by a hash of the configuration, so the same
  // ones misbehave after every restart). One candidate per batch: a hang costs one time limit (5 s,
  // room for a healthy candidate's compile under the sanitizers).
  // The run completes; every fault is a failed trial with its kind; the records then tune the
  // model with measured points only.
  const std::string worker = std::string(FAULT_WORKER_PATH) + " crash/6/0 hang/6/1 wrong/6/2";
  Result r = anvil(
      "tune zoo:dqn --trials 8 --batch 1 --repeats 1 --timeout 5 "
      "--tuning-records faults.json --measure-worker '" +
      worker + "'");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  autotune::RecordFile f = autotune::read_records(path("faults.json"));
  std::map<std::string, int> outcomes;
  for (const autotune::Record& rec : f.records) {
    if (rec.in_model) continue;
    std::string kind = !rec.error ? "measured" : rec.error->substr(0, rec.error->find(':'));
    ++outcomes[kind];
    if (!rec.error) {
      EXPECT_FALSE(rec.costs_s.empty());
    }
  }
  EXPECT_GE(outcomes["crash"], 1) << r.out;
  EXPECT_GE(outcomes["timeout"], 1) << r.out;
  EXPECT_GE(outcomes["wrong result"], 1) << r.out;
  EXPECT_GE(outcomes["measured"], 5) << r.out;
  EXPECT_EQ(outcomes.size(), 4u) << "an unexpected kind of failure";
  // Every task's best point is one that was measured, or the default (which stays when the
  // in-model check finds no win, measured or not).
  autotune::RecordBook book(f.records);
  std::set<std::string> tasks, algorithm_tasks;
  for (const autotune::Record& rec : f.records) {
    autotune::Task t = autotune::Task::from_json(rec.task, rec.target);
    if (!t.choice.empty()) {  // a convolution's algorithm: only ever judged in the model
      EXPECT_TRUE(rec.in_model) << t.str();
      algorithm_tasks.insert(t.key());
      continue;
    }
    if (!tasks.insert(t.key()).second) continue;
    std::optional<ops::Config> best = book.best(t);
    if (!best) continue;
    bool measured = autotune::index_of(t.space(), *best) == 0;
    for (const autotune::Record& other : f.records)
      measured |= other.task == rec.task && other.config == *best && !other.error;
    EXPECT_TRUE(measured) << t.str();
  }
  EXPECT_EQ(tasks.size(), 5u);
  EXPECT_EQ(algorithm_tasks.size(), 1u);  // DQN's one 3x3 stride-1 convolution
  Result c = anvil("compile zoo:dqn --tuning-records faults.json -o faults.so");
  EXPECT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.out.find("the algorithm of 1 of 1 convolutions"), std::string::npos) << c.out;

  // A worker that cannot start is an error naming it, not a run of failed trials.
  Result bad =
      anvil("tune zoo:dqn --trials 2 --tuning-records none.json --measure-worker /no/such/worker");
  EXPECT_NE(bad.code, 0);
  EXPECT_NE(bad.err.find("the measure worker does not start"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("/no/such/worker"), std::string::npos) << bad.err;
  EXPECT_TRUE(!fs::exists(path("none.json")) || read(path("none.json")).empty())
      << read(path("none.json"));
}

TEST_F(Cli, TuneWithTheGeneticSearch) {
  Result r = anvil(
      "tune zoo:dqn --trials 3 --repeats 1 --tuner genetic --seed 4 "
      "--tuning-records genetic.json");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_GE(autotune::read_records(path("genetic.json")).records.size(), 3u);
}

// The scheduler spends exactly the budget (trials x tasks distinct points in all, however it
// spreads them), each task starting with its default, and reports progress per batch.
TEST_F(Cli, TuneSchedulerSpendsTheBudget) {
  std::vector<autotune::ModelTask> tasks =
      autotune::extract_tasks(models::build_model("dqn"), Target::host(), {});
  Result r = anvil(
      "tune zoo:dqn --trials 3 --batch 2 --repeats 1 --tuner random --early-stopping 0 "
      "--tuning-records sched.json");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("trials, best"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("left"), std::string::npos) << r.out;
  std::map<std::string, std::set<int64_t>> points;
  std::map<std::string, int64_t> first;
  for (const autotune::Record& rec : autotune::read_records(path("sched.json")).records) {
    if (rec.in_model) continue;  // the in-model check's, after the budget
    autotune::Task t = autotune::Task::from_json(rec.task, rec.target);
    const int64_t i = autotune::index_of(t.space(), rec.config);
    points[t.key()].insert(i);
    first.emplace(t.key(), i);
  }
  size_t distinct = 0;
  for (const auto& [key, p] : points) distinct += p.size();
  EXPECT_EQ(distinct, 3 * tasks.size());
  for (const auto& [key, i] : first) EXPECT_EQ(i, 0) << key;
}

// Tuning for a GPU target measures on that device (OpenCL on PoCL here): the records carry the
// target and the GPU knobs, and compiling with them applies them; without the device (CUDA here)
// tune says why.
TEST_F(Cli, TuneForAGpuTargetMeasuresOnTheDevice) {
  Result r =
      anvil("tune zoo:dqn --target opencl --trials 2 --repeats 1 --tuning-records dqn_cl.json");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  autotune::RecordFile f = autotune::read_records(path("dqn_cl.json"));
  ASSERT_FALSE(f.records.empty());
  int measured = 0;
  for (const autotune::Record& rec : f.records) {
    EXPECT_EQ(rec.target.rfind("opencl", 0), 0u) << rec.target;
    EXPECT_TRUE(rec.config.count("k_tile") || rec.config.count("n_threads")) << rec.target;
    if (!rec.error) ++measured;
  }
  EXPECT_GT(measured, 0);
  Result c =
      anvil("compile zoo:dqn --target opencl --tuning-records dqn_cl.json -o dqn_cl_tuned.so");
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.out.find("5 of 5 tunable kernels tuned"), std::string::npos) << c.out;
  if (!runtime::Device::available(kDLCUDA))
    expect_error("tune zoo:dqn --target cuda --tuning-records dqn_cuda.json", 1,
                 {"no device to measure on", "libcuda.so.1"});
}

TEST_F(Cli, TuneRefusesBadArguments) {
  expect_error("tune zoo:dqn --trials 2", 1, {"--tuning-records"});
  expect_error("tune zoo:dqn --tuner annealing --tuning-records x.json", 1, {"--tuner"});
  expect_error("tune zoo:dqn --batch 0 --tuning-records x.json", 1, {"--batch"});
  expect_error("tune zoo:dqn --trials 0 --tuning-records x.json", 1, {"--trials"});
  expect_error("tune zoo:nosuch --tuning-records x.json", 1, {"unknown zoo model 'nosuch'"});
  expect_error("tune zoo:dqn --tuning-records no/such/dir/x.json", 1, {"does not exist"});
  write(path("broken.json"), "{\"v\": 1}\n{}\n");
  expect_error("tune zoo:dqn --tuning-records broken.json", 2, {"broken.json", "line 1"});
}

}  // namespace
}  // namespace anvil::cli
