// `anvil tune`: every trial of every task of a model appended to the records (the default
// configuration first), a second run resumes instead of measuring again, and the records then
// tune every kernel of `anvil compile`.
#include <gtest/gtest.h>

#include <set>

#include "anvil/autotune/records.h"
#include "anvil/autotune/task.h"
#include "anvil/models/models.h"
#include "tools/cli_fixture.h"

namespace anvil::cli {
namespace {

TEST_F(Cli, TuneRecordsEveryTrialAndResumes) {
  std::vector<autotune::ModelTask> tasks =
      autotune::extract_tasks(models::build_model("dqn"), Target::host(), {});
  ASSERT_FALSE(tasks.empty());
  Result r = anvil("tune zoo:dqn --trials 2 --repeats 1 --tuning-records dqn.json");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find(std::to_string(tasks.size()) + " tunable tasks"), std::string::npos)
      << r.out;
  autotune::RecordFile f = autotune::read_records(path("dqn.json"));
  ASSERT_EQ(f.records.size(), 2 * tasks.size());
  std::set<std::string> tuned_tasks;
  for (const autotune::Record& rec : f.records) {
    EXPECT_FALSE(rec.error) << *rec.error;
    EXPECT_FALSE(rec.costs_s.empty());
    tuned_tasks.insert(autotune::task_key(rec.task, rec.target));
  }
  EXPECT_EQ(tuned_tasks.size(), tasks.size());
  // Each task's first trial is its default configuration.
  for (size_t i = 0; i < tasks.size(); ++i) {
    const autotune::Record& first = f.records[2 * i];
    autotune::Task t = autotune::Task::from_json(first.task, first.target);
    EXPECT_EQ(autotune::index_of(t.space(), first.config), 0) << t.str();
  }

  // Resumed: nothing left to measure, nothing appended.
  r = anvil("tune zoo:dqn --trials 2 --repeats 1 --tuning-records dqn.json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("2 already recorded"), std::string::npos) << r.out;
  EXPECT_EQ(autotune::read_records(path("dqn.json")).records.size(), 2 * tasks.size());

  size_t kernels = 0;
  for (const autotune::ModelTask& t : tasks) kernels += t.kernels.size();
  Result c = anvil("compile zoo:dqn --tuning-records dqn.json -o tuned.so");
  ASSERT_EQ(c.code, 0) << c.err;
  const std::string all =
      std::to_string(kernels) + " of " + std::to_string(kernels) + " tunable kernels tuned\n";
  EXPECT_NE(c.out.find(all), std::string::npos) << c.out;
}

TEST_F(Cli, TuneRefusesBadArguments) {
  expect_error("tune zoo:dqn --trials 2", 1, {"--tuning-records"});
  expect_error("tune zoo:dqn --tuner annealing --tuning-records x.json", 1, {"--tuner"});
  expect_error("tune zoo:dqn --trials 0 --tuning-records x.json", 1, {"--trials"});
  expect_error("tune zoo:nosuch --tuning-records x.json", 1, {"unknown zoo model 'nosuch'"});
  expect_error("tune zoo:dqn --tuning-records no/such/dir/x.json", 1, {"does not exist"});
  write(path("broken.json"), "{\"v\": 1}\n{}\n");
  expect_error("tune zoo:dqn --tuning-records broken.json", 2, {"broken.json", "line 1"});
}

}  // namespace
}  // namespace anvil::cli
