// Schedule fallbacks: a kernel whose schedule fails takes the default loops (on a GPU, the default
// GPU schedule), recorded in fallbacks() when the build is not strict and an error naming the
// kernel, its op and nodes and the reason when it is (the default); an internal error out of a
// schedule is a bug, never a fallback.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "anvil/graph/build.h"
#include "anvil/graph/interpreter.h"
#include "anvil/runtime/device_api.h"
#include "anvil/support/error.h"
#include "graph/passes_testing.h"
#include "testing/errors.h"

namespace anvil::graph {
namespace {

using ::testing::HasSubstr;
using namespace pt;

// dense (x [4, 32] by w [16, 32]) and relu: one kernel, fused_0_dense.
Graph dense_relu() {
  Graph g;
  ValueId x = g.add_input("x", {{4, 32}, f32});
  ValueId w = g.add_constant("w", random_array({16, 32}, 3));
  ValueId d = g.add("fc", "dense", ops::Attrs(), {x, w});
  g.add_output(g.add("act", "relu", ops::Attrs(), {d}));
  return g;
}

// Every kernel configured with knobs no schedule of dense accepts ("parallel" is 0 or 1; on a
// GPU, 7 threads do not divide 16 columns).
BuildOptions bad_config(bool strict) {
  BuildOptions o;
  o.alter_layout = false;  // dense stays dense (not dense_packed)
  o.strict = strict;
  o.config_for = [](const std::string&, const std::vector<ops::TensorType>&,
                    const ops::Attrs&) -> std::optional<ops::Config> {
    return ops::Config{{"parallel", 7}, {"n_threads", 7}};
  };
  return o;
}

TEST(Fallback, StrictBuildNamesKernelOpNodesAndReason) {
  std::string e = testing::user_error(
      [&] { CompiledGraph::build(dense_relu(), Target::host(), bad_config(true)); });
  EXPECT_THAT(e, HasSubstr("kernel fused_0_dense (dense; nodes 'fc' (dense), 'act' (relu))"));
  EXPECT_THAT(e, HasSubstr("does not fall back to default loops"));
  EXPECT_THAT(e, HasSubstr("knob parallel must be 0 or 1, not 7"));
}

TEST(Fallback, NonStrictBuildRecordsItAndStillComputes) {
  Graph g = dense_relu();
  CompiledGraph cg = CompiledGraph::build(g, Target::host(), bad_config(false));
  ASSERT_EQ(cg.fallbacks().size(), 1u) << cg.summary();
  const CompiledGraph::Fallback& f = cg.fallbacks()[0];
  EXPECT_EQ(f.kernel, "fused_0_dense");
  EXPECT_EQ(f.op, "dense");
  EXPECT_EQ(f.used, "default loops");
  EXPECT_THAT(f.reason, HasSubstr("knob parallel must be 0 or 1, not 7"));
  EXPECT_THAT(f.str(), HasSubstr("kernel fused_0_dense (dense): schedule failed, using default "
                                 "loops: "));
  EXPECT_THAT(cg.summary(), HasSubstr("[default loops ("));
  EXPECT_FALSE(cg.kernels()[0].tuned);  // the default loops take no configuration
  std::vector<runtime::NDArray> in = random_inputs(g);
  expect_close(cg.run(in), interpret(g, in), "dense+relu in default loops");

  // With the default rule's configuration there is nothing to fall back from.
  BuildOptions plain;
  plain.alter_layout = false;
  EXPECT_TRUE(CompiledGraph::build(g, Target::host(), plain).fallbacks().empty());
}

TEST(Fallback, GpuOpScheduleRefusingTakesTheDefaultGpuSchedule) {
  Graph g = dense_relu();
  const Target opencl = Target::parse("opencl");
  std::string e = testing::user_error([&] { CompiledGraph::build(g, opencl, bad_config(true)); });
  EXPECT_THAT(e, HasSubstr("kernel fused_0_dense (dense; nodes 'fc' (dense), 'act' (relu))"));
  EXPECT_THAT(e, HasSubstr("does not fall back to the default GPU schedule"));
  EXPECT_THAT(e, HasSubstr("n_threads 7"));

  CompiledGraph cg = CompiledGraph::build(g, opencl, bad_config(false));
  ASSERT_EQ(cg.fallbacks().size(), 1u) << cg.summary();
  EXPECT_EQ(cg.fallbacks()[0].used, "the default GPU schedule");
  EXPECT_FALSE(cg.kernels()[0].tuned);  // the op's knobs are not the default schedule's
  if (runtime::Device::available(kDLOpenCL)) {
    std::vector<runtime::NDArray> in = random_inputs(g);
    expect_close(cg.run(in), interpret(g, in), "dense+relu in the default GPU schedule");
  }
}

// An op whose x86 schedule fails an internal check: a copy of relu under another name.
void register_buggy_op() {
  static bool done = [] {
    ops::OpDef def = ops::lookup("relu");
    def.name = "test_buggy_schedule";
    def.schedule_x86 = [](te::Schedule&, const std::vector<te::Tensor>&, const Target&,
                          const ops::Config&) {
      ANVIL_ICHECK(false, "test_buggy_schedule: a bug in the schedule");
    };
    ops::register_op(std::move(def));
    return true;
  }();
  (void)done;
}

TEST(Fallback, InternalErrorInAScheduleIsNeverSwallowed) {
  register_buggy_op();
  Graph g;
  ValueId x = g.add_input("x", {{4, 8}, f32});
  g.add_output(g.add("bug", "test_buggy_schedule", ops::Attrs(), {x}));
  for (bool strict : {true, false}) {
    BuildOptions o;
    o.strict = strict;
    try {
      CompiledGraph::build(g, Target::host(), o);
      ADD_FAILURE() << "the build took the internal error for a refusal (strict " << strict << ")";
    } catch (const InternalError& e) {
      EXPECT_THAT(e.what(), HasSubstr("a bug in the schedule"));
    }
  }
}

}  // namespace
}  // namespace anvil::graph
