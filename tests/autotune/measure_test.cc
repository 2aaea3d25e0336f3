// Measurement: a candidate is compiled, checked against the operator's reference and timed; in a
// worker process, a candidate that crashes, hangs or writes wrong results is a failed trial that
// names why, the worker is restarted, and the next candidate is measured normally. A batch
// compiles its candidates in parallel child processes and gives the results that measuring them
// one at a time gives; a crash or a hang in a batch fails only the candidate that caused it.
#include "anvil/autotune/measure.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

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

TEST(Measure, FlushingTheCachesKeepsTheArgumentsAndTimesEveryRepeat) {
  // The flush writes the arguments back to memory and evicts them before each timed call: every
  // call must see the inputs it was checked on, and either way each repeat has a time.
  Task t = small_task();
  for (bool flush : {true, false}) {
    SCOPED_TRACE(flush ? "flush" : "warm");
    std::vector<std::vector<float>> first;  // the inputs as the first call saw them
    int calls = 0, changed = 0;
    KernelCall call = [&](AnvilKernel kernel, const std::vector<const DLTensor*>& args,
                          const ops::Config&) {
      for (size_t a = 0; a < 2; ++a) {
        const float* data = static_cast<const float*>(args[a]->data);
        std::vector<float> now(data, data + args[a]->shape[0] * args[a]->shape[1] *
                                                (args[a]->ndim == 3 ? args[a]->shape[2] : 1));
        if (first.size() < 2)
          first.push_back(now);
        else if (now != first[a])
          ++changed;
      }
      ++calls;
      return kernel(args.data(), static_cast<int32_t>(args.size()), nullptr);
    };
    MeasureOptions o = quick();
    o.flush_caches = flush;
    Measurement m = measure_here(t, {}, o, call);
    EXPECT_FALSE(m.error) << *m.error;
    ASSERT_EQ(m.costs_s.size(), 3u);
    for (double c : m.costs_s) EXPECT_GT(c, 0);
    EXPECT_GT(calls, 3);  // the check, then at least one call per repeat
    EXPECT_EQ(changed, 0);
  }
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

TEST(Measure, Int8KernelsAreCheckedOnEveryByteValue) {
  // The int8 products' candidates run on inputs over the whole uint8 and int8 ranges (not zeros),
  // so a candidate that got the largest products wrong would fail; every point of the spaces here
  // is right.
  Task dense;
  dense.op = "dense_int8";
  dense.inputs = {{{5, 40}, ir::DataType::UInt(8)}, {{3, 10, 16, 4}, ir::DataType::Int(8)}};
  dense.attrs = ops::Attrs(dense.op, {{"units", int64_t{48}}});
  dense.target = Target::host().str();
  Task conv;
  conv.op = "conv2d_int8";
  conv.inputs = {{{1, 12, 9, 9}, ir::DataType::UInt(8)},
                 {{2, 3, 3, 3, 16, 4}, ir::DataType::Int(8)}};
  conv.attrs =
      ops::Attrs(conv.op, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"channels", int64_t{32}}});
  conv.target = Target::host().str();
  for (const Task& t : {dense, conv}) {
    SCOPED_TRACE(t.op);
    ops::ConfigSpace space = t.space();
    ASSERT_GT(space_size(space), 1);
    for (int64_t i = 0; i < std::min<int64_t>(space_size(space), 4); ++i) {
      Measurement m = measure_here(t, config_at(space, i), quick());
      EXPECT_FALSE(m.error) << *m.error;
    }
  }
}

TEST(Measure, AnLstmIsCheckedOnWeightsThatKeepItContracting) {
  // With weights uniform in [-1, 1], 35 steps of 256 units drift past the check's tolerance (the
  // recurrence is chaotic); the op's sample_inputs scale them as trained weights are.
  Task t;
  t.op = "lstm";
  t.inputs = {{{35, 1, 32}, ir::DataType::Float32()},
              {{1, 1024, 32}, ir::DataType::Float32()},
              {{1, 1024, 256}, ir::DataType::Float32()}};
  t.attrs = ops::Attrs(t.op, {{"hidden_size", int64_t{256}}});
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

// The first `n` points of the small task's space, then one the schedule refuses.
std::vector<ops::Config> some_configs(const Task& t, int64_t n) {
  std::vector<ops::Config> configs;
  for (int64_t i = 0; i < std::min<int64_t>(space_size(t.space()), n); ++i)
    configs.push_back(config_at(t.space(), i));
  configs.push_back({{"tile_n", 7}});
  return configs;
}

// fault_worker's argument that gives `fault` to `config` only.
std::string fault_for(const std::string& fault, const ops::Config& config) {
  std::string s = fault + ":";
  for (const auto& [knob, value] : config)
    s += (s.back() == ':' ? "" : ",") + knob + "=" + std::to_string(value);
  return s;
}

// Equal outcomes: the same error (the same text for a compile error, whose message the worker
// forwards), or both measured with every repeat.
void expect_same_outcomes(const std::vector<Measurement>& got, const std::vector<Measurement>& want,
                          size_t repeats) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE("candidate " + std::to_string(i));
    ASSERT_EQ(got[i].error.has_value(), want[i].error.has_value())
        << got[i].error.value_or("(none)") << " vs " << want[i].error.value_or("(none)");
    if (got[i].error) {
      EXPECT_EQ(*got[i].error, *want[i].error);
      EXPECT_TRUE(got[i].costs_s.empty());
    } else {
      ASSERT_EQ(got[i].costs_s.size(), repeats);
      for (double c : got[i].costs_s) EXPECT_GT(c, 0);
      EXPECT_GT(got[i].compile_s, 0);
    }
  }
}

TEST(MeasureBatch, OneResultPerConfigInOrderAsSingleMeasurementsGive) {
  Task t = small_task();
  std::vector<ops::Config> configs = some_configs(t, 4);
  ASSERT_GE(configs.size(), 3u);
  MeasureOptions o = quick();
  o.compile_jobs = 2;
  Measurer measurer({FAULT_WORKER_PATH, "none"});
  std::vector<Measurement> batch = measurer.measure_batch(t, configs, o);
  std::vector<Measurement> single;
  for (const ops::Config& c : configs) single.push_back(measurer.measure(t, c, o));
  expect_same_outcomes(batch, single, 3);
  ASSERT_TRUE(batch.back().error.has_value());
  EXPECT_EQ(batch.back().error->rfind("compile: ", 0), 0u) << *batch.back().error;
  EXPECT_NE(batch.back().error->find("tile_n"), std::string::npos) << *batch.back().error;
  EXPECT_TRUE(measurer.measure_batch(t, {}, o).empty());
}

// A task for a GPU target (OpenCL, on PoCL here) has its GPU space; its candidates are compiled
// with the GPU schedule, checked and timed on the device, in process and in a batch alike, and a
// configuration that does not tile the output is a compile failure naming the knob.
TEST(MeasureBatch, GpuCandidatesRunOnTheDevice) {
  Task t;
  t.op = "conv2d";
  t.inputs = {{{1, 8, 8, 8}, ir::DataType::Float32()}, {{16, 8, 3, 3}, ir::DataType::Float32()}};
  t.attrs = ops::Attrs("conv2d", {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  t.target = Target::parse("opencl").str();
  ops::ConfigSpace space = t.space();
  ASSERT_FALSE(space.empty());
  EXPECT_EQ(space[0].name, "f_threads");  // the GPU knobs, not the CPU ones
  std::vector<ops::Config> configs = {config_at(space, 0),
                                      {{"x_threads", 4}, {"y_threads", 2}, {"f_inner", 2}},
                                      {{"x_threads", 3}}};
  MeasureOptions o = quick();
  o.compile_jobs = 2;
  std::vector<Measurement> batch = measure_batch_here(t, configs, o);
  ASSERT_EQ(batch.size(), 3u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_FALSE(batch[i].error) << i << ": " << *batch[i].error;
    ASSERT_EQ(batch[i].costs_s.size(), 3u);
    for (double c : batch[i].costs_s) EXPECT_GT(c, 0);
  }
  ASSERT_TRUE(batch[2].error.has_value());
  EXPECT_EQ(batch[2].error->rfind("compile: ", 0), 0u) << *batch[2].error;
  EXPECT_NE(batch[2].error->find("x_threads 3"), std::string::npos) << *batch[2].error;
  Measurement single = measure_here(t, configs[1], o);
  EXPECT_FALSE(single.error) << *single.error;
  EXPECT_EQ(single.costs_s.size(), 3u);
}

TEST(MeasureBatch, ACrashAndAHangFailOnlyTheirCandidates) {
  Task t = small_task();
  std::vector<ops::Config> configs = some_configs(t, 4);
  configs.pop_back();
  ASSERT_EQ(configs.size(), 4u);
  Measurer measurer(
      {FAULT_WORKER_PATH, fault_for("hang", configs[1]), fault_for("crash", configs[2])});
  MeasureOptions o = quick();
  o.compile_jobs = 2;
  // The limit comes from this host's own time for the two good candidates (a slow CI host beside
  // other tests, or the sanitizers, has taken over 1.5 s to compile one), at least 1.5 s.
  MeasureOptions relaxed = o;
  relaxed.timeout_s = 60;
  auto seconds_since = [](std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  auto start = std::chrono::steady_clock::now();
  for (const Measurement& m : measurer.measure_batch(t, {configs[0], configs[3]}, relaxed))
    ASSERT_FALSE(m.error) << *m.error;
  o.timeout_s = std::max(1.5, 2 * seconds_since(start));
  start = std::chrono::steady_clock::now();
  std::vector<Measurement> got = measurer.measure_batch(t, configs, o);
  double took = seconds_since(start);
  ASSERT_EQ(got.size(), 4u);
  for (size_t i : {0u, 3u}) {
    EXPECT_FALSE(got[i].error) << i << ": " << *got[i].error;
    EXPECT_EQ(got[i].costs_s.size(), 3u) << i;
  }
  ASSERT_TRUE(got[1].error.has_value());
  EXPECT_EQ(got[1].error->rfind("timeout: ", 0), 0u) << *got[1].error;
  ASSERT_TRUE(got[2].error.has_value());
  EXPECT_EQ(got[2].error->rfind("crash: ", 0), 0u) << *got[2].error;
  EXPECT_TRUE(got[1].costs_s.empty() && got[2].costs_s.empty());
  // The batch hangs until its limit, 4 candidates' (candidate 1 is timed before the crash of 2);
  // the retries, one candidate at a time, take one candidate's limit for the hang and little for
  // the others.
  EXPECT_GT(took, 5 * o.timeout_s - 0.5) << "limit " << o.timeout_s << " s";
  EXPECT_LT(took, 8 * o.timeout_s) << "limit " << o.timeout_s << " s";
  // The worker was restarted: the next batch is measured normally.
  for (const Measurement& m : measurer.measure_batch(t, {configs[0], configs[3]}, relaxed))
    EXPECT_FALSE(m.error) << *m.error;
}

TEST(MeasureBatch, TwoCompileJobsGiveTheResultsOfOne) {
  Task t = small_task();
  std::vector<ops::Config> configs = some_configs(t, 6);
  MeasureOptions one = quick(), two = quick();
  one.compile_jobs = 1;
  two.compile_jobs = 2;
  std::vector<Measurement> a = measure_batch_here(t, configs, one);
  std::vector<Measurement> b = measure_batch_here(t, configs, two);
  expect_same_outcomes(b, a, 3);
  for (size_t i = 0; i + 1 < a.size(); ++i) EXPECT_FALSE(a[i].error) << *a[i].error;
  EXPECT_TRUE(a.back().error.has_value());
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
