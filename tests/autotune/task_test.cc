// Tasks and spaces: points of a space by index (point 0 is the default rule's), the distinct tasks
// of a model with their share of its FLOPs, and a build that takes each kernel's configuration
// from records: the recorded configuration is the one applied, and the tuned model still computes
// what the reference interpreter does.
#include "anvil/autotune/task.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "anvil/autotune/records.h"
#include "anvil/graph/interpreter.h"
#include "anvil/models/models.h"

namespace anvil::autotune {
namespace {

TEST(Space, IndexesEveryPointOnce) {
  ops::ConfigSpace space = {{"a", {4, 1, 2}}, {"b", {0, 1}}, {"c", {7}}};
  ASSERT_EQ(space_size(space), 6);
  std::set<ops::Config> seen;
  for (int64_t i = 0; i < space_size(space); ++i) {
    ops::Config c = config_at(space, i);
    EXPECT_EQ(index_of(space, c), i);
    seen.insert(c);
  }
  EXPECT_EQ(seen.size(), 6u);
  EXPECT_EQ(config_at(space, 0), (ops::Config{{"a", 4}, {"b", 0}, {"c", 7}}));  // the defaults
  EXPECT_EQ(index_of(space, {{"b", 1}}), 3);  // missing knobs take their default
  EXPECT_EQ(index_of(space, {{"a", 3}}), -1);
  EXPECT_EQ(index_of(space, {{"d", 0}}), -1);
  EXPECT_EQ(space_size({}), 1);
  EXPECT_EQ(config_at({}, 0), ops::Config{});
}

TEST(Tasks, DqnHasItsConvolutionsAndDenseLayers) {
  graph::Graph g = models::build_model("dqn");
  Target target = Target::parse("llvm -vector-bits=512");
  std::vector<ModelTask> tasks = extract_tasks(g, target, {});
  ASSERT_GE(tasks.size(), 4u);
  double share = 0;
  std::set<std::string> ops, keys;
  for (const ModelTask& t : tasks) {
    EXPECT_EQ(t.count, static_cast<int>(t.kernels.size()));
    EXPECT_FALSE(t.task.space().empty()) << t.task.str();
    EXPECT_EQ(t.task.target, target.str());
    share += t.share;
    ops.insert(t.task.op);
    keys.insert(t.task.key());
  }
  EXPECT_EQ(keys.size(), tasks.size());  // distinct
  EXPECT_TRUE(ops.count("conv2d_nchwc")) << tasks[0].task.str();
  EXPECT_TRUE(ops.count("dense_packed"));
  // The tasks are nearly all of the model's FLOPs (layout transforms and the like are the rest),
  // largest first.
  EXPECT_GT(share, 0.95);
  EXPECT_LE(share, 1.0 + 1e-9);
  for (size_t i = 1; i < tasks.size(); ++i) EXPECT_GE(tasks[i - 1].flops, tasks[i].flops);
}

TEST(Tasks, RecordedConfigurationsAreAppliedAndComputeTheSame) {
  graph::Graph g = models::build_model("dqn");
  Target target = Target::host();
  std::vector<ModelTask> tasks = extract_tasks(g, target, {});
  // A record per task: its last point (the one farthest from the default in index order).
  std::vector<Record> rs;
  for (const ModelTask& t : tasks) {
    ops::ConfigSpace space = t.task.space();
    rs.push_back({t.task.to_json(),
                  t.task.target,
                  config_at(space, space_size(space) - 1),
                  {1e-6},
                  std::nullopt,
                  utc_now()});
  }
  RecordBook book(rs);
  std::vector<TaskLookup> log;
  graph::BuildOptions options;
  options.config_for = config_source(book, target, &log);
  graph::CompiledGraph cg = graph::CompiledGraph::build(g, target, options);
  size_t tuned = 0;
  for (const graph::CompiledGraph::Kernel& k : cg.kernels()) {
    if (!k.tuned) continue;
    ++tuned;
    bool matched = false;
    for (const ModelTask& t : tasks)
      for (const std::string& name : t.kernels)
        if (name == k.name) {
          ops::ConfigSpace space = t.task.space();
          EXPECT_EQ(k.config, config_at(space, space_size(space) - 1)) << k.name;
          matched = true;
        }
    EXPECT_TRUE(matched) << k.name;
  }
  size_t kernels = 0;
  for (const ModelTask& t : tasks) kernels += t.kernels.size();
  EXPECT_EQ(tuned, kernels);
  EXPECT_EQ(log.size(), kernels);
  for (const TaskLookup& l : log) EXPECT_TRUE(l.found) << l.task.str();
  EXPECT_NE(cg.summary().find(", tuned: "), std::string::npos) << cg.summary();

  runtime::NDArray x = runtime::NDArray::empty({1, 4, 84, 84}, runtime::dl_float32());
  for (int64_t i = 0; i < x.numel(); ++i) x.data_as<float>()[i] = std::sin(0.37f * i);
  runtime::NDArray want = graph::interpret(g, {x}).at(0);
  runtime::NDArray got = cg.run({x}).at(0);
  double largest = 0, diff = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    largest = std::max(largest, std::fabs(double(want.data_as<float>()[i])));
    diff = std::max(diff, std::fabs(double(want.data_as<float>()[i]) - got.data_as<float>()[i]));
  }
  EXPECT_LE(diff, 1e-4 * largest);
}

}  // namespace
}  // namespace anvil::autotune
