// autotune::TuningSession without the command line: a small model's tasks tuned through its
// callbacks, every trial in the records (naming this CPU), and the in-model check's verdict
// among them; a rerun resumes instead of measuring again.
#include "anvil/autotune/session.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <set>

#include "anvil/support/temp_dir.h"
#include "graph/passes_testing.h"

namespace anvil::autotune {
namespace {

using graph::Graph;
using graph::ValueId;
using graph::pt::f32;
using graph::pt::random_array;

// Two convolutions: small enough to compile and time in moments, with tunable tasks.
Graph two_convs() {
  Graph g;
  ValueId x = g.add_input("x", {{1, 16, 14, 14}, f32});
  ValueId w = g.add_constant("w", random_array({32, 16, 3, 3}, 1));
  ValueId w2 = g.add_constant("w2", random_array({16, 32, 1, 1}, 2));
  ops::Attrs pads("conv2d", {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  ValueId c = g.add("conv", "conv2d", pads, {x, w});
  g.add_output(
      g.add("conv2", "conv2d", ops::Attrs(), {g.add("relu", "relu", ops::Attrs(), {c}), w2}));
  return g;
}

TEST(TuningSession, TunesThroughItsCallbacksAndResumes) {
  TempDir dir("anvil-session-test-", "the test's records");
  TuningOptions o;
  o.trials = 3;
  o.batch = 2;
  o.measure.repeats = 1;
  o.measure_worker = {FAULT_WORKER_PATH, "none"};
  o.records = dir.path() + "/records.json";
  const Graph g = two_convs();
  TuningSession session(g, Target::host(), o, {});
  const std::vector<TaskStatus> before = session.status();
  ASSERT_FALSE(before.empty());
  EXPECT_EQ(session.recorded(), 0);
  int64_t budget = 0;
  for (const TaskStatus& s : before) {
    EXPECT_EQ(s.measured, 0);
    EXPECT_EQ(s.share, std::min<int64_t>(3, s.size));
    budget += s.share;
  }
  EXPECT_EQ(session.budget(), budget);

  std::vector<TuningProgress> batches;
  std::vector<std::string> notes;
  session.on_batch = [&](const TuningProgress& p) { batches.push_back(p); };
  session.on_note = [&](const std::string& line) { notes.push_back(line); };
  const int64_t trials = session.run();
  EXPECT_GE(trials, budget);  // the budget, and the confirmation of each new best
  ASSERT_FALSE(batches.empty());
  for (const TuningProgress& p : batches) {
    EXPECT_GE(p.task.measured, 1);
    EXPECT_GE(p.left_s, 0);
  }
  // The scheduler moves trials between tasks; together they spend the budget, each its default
  // first.
  int64_t measured = 0;
  for (const TaskStatus& s : session.status()) {
    measured += s.measured;
    EXPECT_GE(s.measured, 1) << s.task->task.str();
    EXPECT_TRUE(std::isfinite(s.best_s));
    EXPECT_LE(s.best_s, s.default_s);
  }
  EXPECT_EQ(measured, budget);

  RecordFile file = read_records(o.records);
  int64_t isolated = 0;
  for (const Record& r : file.records) {
    EXPECT_EQ(r.cpu, runtime::host_cpu().id());
    EXPECT_FALSE(r.error.has_value());
    if (!r.in_model) ++isolated;
  }
  EXPECT_EQ(isolated, trials);
  // Where a best beat its default in isolation, the model judged it, and said so.
  bool judged = false;
  for (const Record& r : file.records) judged = judged || r.in_model;
  if (judged) {
    ASSERT_FALSE(notes.empty());
    EXPECT_EQ(notes.front().rfind("in-model check", 0), 0u) << notes.front();
  }

  // The 3x3 convolution's other algorithms (direct, the other Winograd tile) were each judged in
  // the model, and the records give the build its verdict, a point of its space.
  ASSERT_EQ(session.algorithm_tasks().size(), 1u);
  const Task& conv = session.algorithm_tasks()[0].task;
  EXPECT_EQ(conv.choice, "algorithm");
  EXPECT_EQ(conv.inputs[1].shape, (std::vector<int64_t>{32, 16, 3, 3}));
  std::set<int64_t> judged_tiles;
  for (const Record& r : file.records)
    if (r.in_model && task_key(r.task, r.target) == conv.key())
      judged_tiles.insert(r.config.at("winograd_tile"));
  const std::vector<int64_t> tiles = conv.space().at(0).values;
  EXPECT_EQ(judged_tiles, std::set<int64_t>(tiles.begin() + 1, tiles.end()));
  const RecordBook book(file.records);
  const std::optional<ops::Config> verdict = book.best(conv);
  ASSERT_TRUE(verdict.has_value());
  EXPECT_GE(index_of(conv.space(), *verdict), 0);

  // A second session over the same records resumes: nothing left to measure.
  TuningSession again(g, Target::host(), o, read_records(o.records));
  EXPECT_EQ(again.recorded(), again.budget());
  EXPECT_EQ(again.run(), 0);
}

}  // namespace
}  // namespace anvil::autotune
