// Measurement: a candidate is compiled, checked against the operator's reference and timed; in a
// worker process, a candidate that crashes, hangs or writes wrong results is a failed trial that
// names why, the worker is restarted, and the next candidate is measured normally.
#include "anvil/autotune/measure.h"

#include <gtest/gtest.h>

#include <chrono>

namespace anvil::autotune {
namespace {

// dense_packed [8, 64] x [4, 64, 16]: small, with a space of several knobs.
Task small_task() {
  Task t;
  t.op = "dense_packed";
  t.inputs = {{{8, 64}, ir::DataType::Float32()}, {{4, 64, 16}, ir::DataType::Float32()}};
  t.attrs = ops::Attrs("dense_packed", {{"units", int64_t{64}}});
  t.target = Target::host().str();
  return t;
}

MeasureOptions quick() {
  MeasureOptions o;
  o.repeats = 3;
  o.min_repeat_ms = 1;
  o.timeout_s = 20;
  return o;
}

TEST(Measure, InProcessEveryPointOfASmallSpace) {
  Task t = small_task();
  ops::ConfigSpace space = t.space();
  ASSERT_GT(space_size(space), 1);
  for (int64_t i = 0; i < std::min<int64_t>(space_size(space), 6); ++i) {
    Measurement m = measure_here(t, config_at(space, i), quick());
    EXPECT_FALSE(m.error) << *m.error;
    ASSERT_EQ(m.costs_s.size(), 3u);
    for (double c : m.costs_s) EXPECT_GT(c, 0);
    EXPECT_GT(m.compile_s, 0);
  }
  // A configuration the schedule refuses is a compile failure.
  Measurement bad = measure_here(t, {{"tile_n", 7}}, quick());
  ASSERT_TRUE(bad.error.has_value());
  EXPECT_EQ(bad.error->rfind("compile: ", 0), 0u) << *bad.error;
}

TEST(Measure, WinogradIsCheckedOnATransformedWeight) {
  // Uniform random values are not a Winograd-transformed weight; the op's sample_inputs are.
  Task t;
  t.op = "conv2d_winograd_nchwc";
  t.inputs = {{{1, 1, 9, 9, 16}, ir::DataType::Float32()},
              {{6, 6, 1, 16, 16}, ir::DataType::Float32()}};
  t.attrs = ops::Attrs(t.op, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"tile", int64_t{4}}});
  t.target = Target::host().str();
  Measurement m = measure_here(t, {}, quick());
  EXPECT_FALSE(m.error) << *m.error;
}

TEST(Measure, FaultsInTheWorkerAreFailedTrials) {
  Task t = small_task();
  ops::Config other = config_at(t.space(), 1);
  struct Case {
    const char* fault;
    const char* error;
  } cases[] = {{"crash", "crash: "}, {"hang", "timeout: "}, {"wrong", "wrong result: "}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.fault);
    Measurer measurer({FAULT_WORKER_PATH, c.fault});
    MeasureOptions o = quick();
    o.timeout_s = 3;
    auto start = std::chrono::steady_clock::now();
    Measurement m = measurer.measure(t, other, o);
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_TRUE(m.error.has_value());
    EXPECT_EQ(m.error->rfind(c.error, 0), 0u) << *m.error;
    EXPECT_TRUE(m.costs_s.empty());
    EXPECT_LT(took, 15);  // a hang is cut at the time limit
    if (std::string(c.fault) == "crash") {
      // Killed by the signal; under AddressSanitizer, its SEGV report and exit status instead.
      EXPECT_TRUE(m.error->find("killed by signal 11") != std::string::npos ||
                  m.error->find("SEGV") != std::string::npos)
          << *m.error;
    }
  }
  // After a crash the worker is restarted: the next measurement in a good worker succeeds.
  Measurer good({FAULT_WORKER_PATH, "none"});
  Measurement m = good.measure(t, other, quick());
  EXPECT_FALSE(m.error) << *m.error;
  EXPECT_EQ(m.costs_s.size(), 3u);
  Measurer crashing({FAULT_WORKER_PATH, "crash"});
  EXPECT_TRUE(crashing.measure(t, other, quick()).error.has_value());
  EXPECT_TRUE(crashing.measure(t, other, quick()).error.has_value());  // restarted, crashed again
}

TEST(Task, RoundTripsThroughItsRecordJson) {
  Task t = small_task();
  Task u = Task::from_json(t.to_json(), t.target);
  EXPECT_EQ(u.key(), t.key());
  EXPECT_EQ(u.inputs, t.inputs);
  Task w;
  w.op = "conv2d_winograd_nchwc";
  w.inputs = {{{1, 1, 9, 9, 16}, ir::DataType::Float32()}};
  w.attrs = ops::Attrs(
      w.op,
      {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"scale", 0.5}, {"mode", std::string("x")}});
  w.target = "llvm";
  EXPECT_EQ(Task::from_json(w.to_json(), "llvm").key(), w.key());
}

}  // namespace
}  // namespace anvil::autotune
