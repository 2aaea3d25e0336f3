// The operators' own GPU schedules (the tiled schedule of convolutions and matrix products) run
// through OpenCL on PoCL against the double-precision references: the default rule and sampled
// points of each space, on shapes with padding, strides, groups, depthwise, transposes, odd
// extents and batches (a grouped convolution with several channels per group takes the default
// schedule). A thread count that does not divide its axis is refused, naming the knob.
// Tolerance: 1e-4 * sqrt(K) relative, K the reduction's length.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "anvil/autotune/task.h"
#include "anvil/ops/schedule_gpu.h"
#include "ops_testing.h"
#include "testing/errors.h"

namespace anvil::ops {
namespace {

using ir::DataType;
using ops_testing::check_op;
using ops_testing::CheckOptions;

const DataType f32 = DataType::Float32();
const Target kOpenCL = Target::parse("opencl");

struct Case {
  std::string op;
  std::vector<TensorType> types;
  Attrs attrs;
  int64_t k;  // the reduction's length, for the tolerance
};

Attrs conv_attrs(const std::string& op, std::map<std::string, AttrValue> v) {
  return Attrs(op, std::move(v));
}

std::vector<Case> cases() {
  using V = std::vector<int64_t>;
  return {
      {"conv2d",
       {{{1, 16, 14, 14}, f32}, {{32, 16, 3, 3}, f32}, {{32}, f32}},
       conv_attrs("conv2d", {{"pads", V{1, 1, 1, 1}}}),
       16 * 9},
      {"conv2d",
       {{{1, 8, 15, 15}, f32}, {{16, 8, 3, 3}, f32}},
       conv_attrs("conv2d", {{"pads", V{1, 1, 1, 1}}, {"strides", V{2, 2}}}),
       8 * 9},
      {"conv2d",
       {{{1, 3, 20, 20}, f32}, {{8, 3, 7, 7}, f32}},
       conv_attrs("conv2d", {{"pads", V{3, 3, 3, 3}}, {"strides", V{2, 2}}}),
       3 * 49},
      {"conv2d",
       {{{1, 24, 7, 7}, f32}, {{24, 1, 3, 3}, f32}, {{24}, f32}},
       conv_attrs("conv2d", {{"pads", V{1, 1, 1, 1}}, {"group", int64_t{24}}}),
       9},
      {"conv2d",
       {{{2, 8, 6, 6}, f32}, {{8, 4, 1, 1}, f32}},
       conv_attrs("conv2d", {{"group", int64_t{2}}}),
       4},
      {"conv2d_transpose",
       {{{1, 16, 4, 4}, f32}, {{16, 8, 4, 4}, f32}},
       conv_attrs("conv2d_transpose", {{"pads", V{1, 1, 1, 1}}, {"strides", V{2, 2}}}),
       16 * 16},
      {"conv1d",
       {{{1, 6, 30}, f32}, {{12, 6, 5}, f32}},
       conv_attrs("conv1d", {{"pads", V{2, 2}}, {"dilations", V{2}}}),
       6 * 5},
      {"dense", {{{4, 96}, f32}, {{40, 96}, f32}, {{40}, f32}}, Attrs("dense", {}), 96},
      {"dense", {{{20, 33}, f32}, {{24, 33}, f32}}, Attrs("dense", {}), 33},
      {"matmul", {{{3, 12, 20}, f32}, {{20, 16}, f32}}, Attrs("matmul", {}), 20},
  };
}

CheckOptions gpu_opts(const Case& c, Config config) {
  CheckOptions o;
  o.tol = 1e-4 * std::sqrt(static_cast<double>(c.k));
  o.gpu_always = true;
  o.gpu_config = std::move(config);
  return o;
}

// Whether `config`'s thread counts divide their axes and make at most `max_threads` threads per
// block (inner counts always fit: the schedule takes the largest divisor up to them).
bool fits(const ConfigSpace& space, const Config& config, const TensorType& out,
          int64_t max_threads) {
  size_t tiled = 0;
  for (const Knob& k : space)
    if (k.name.ends_with("_threads")) ++tiled;
  size_t first = out.shape.size() - tiled, j = 0;
  int64_t threads = 1;
  for (const Knob& k : space) {
    if (!k.name.ends_with("_threads")) continue;
    int64_t t = config.at(k.name);
    if (out.shape[first + j++] % t != 0) return false;
    threads *= t;
  }
  return threads <= max_threads;
}

TEST(GpuSchedule, TheDefaultRuleMatchesTheReference) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.op + " " + to_string(c.types[0]) + " x " + to_string(c.types[1]));
    ConfigSpace space = lookup(c.op).space_gpu(c.types, c.attrs, kOpenCL);
    check_op(c.op, c.types, c.attrs, gpu_opts(c, autotune::config_at(space, 0)));
  }
}

TEST(GpuSchedule, SampledConfigurationsMatchTheReference) {
  std::mt19937 rng(7);
  int checked = 0;
  for (const Case& c : cases()) {
    ConfigSpace space = lookup(c.op).space_gpu(c.types, c.attrs, kOpenCL);
    TensorType out = lookup(c.op).infer(c.types, c.attrs)[0];
    int64_t size = autotune::space_size(space);
    int taken = 0;
    for (int tries = 0; tries < 200 && taken < 3; ++tries) {
      Config config =
          autotune::config_at(space, std::uniform_int_distribution<int64_t>(0, size - 1)(rng));
      if (!fits(space, config, out, kOpenCL.max_threads_per_block)) continue;
      std::string knobs;
      for (const auto& [name, value] : config) knobs += " " + name + "=" + std::to_string(value);
      SCOPED_TRACE(c.op + " " + to_string(c.types[0]) + knobs);
      check_op(c.op, c.types, c.attrs, gpu_opts(c, config));
      ++taken;
      ++checked;
    }
    EXPECT_GT(taken, 0) << c.op << " " << to_string(c.types[0])
                        << ": no fitting configuration sampled";
  }
  EXPECT_GE(checked, 20);
}

TEST(GpuSchedule, EveryConvolutionTileOfASmallSpace) {
  // Points spread over a small convolution's space, k_tile and double buffering included.
  Case c = {"conv2d",
            {{{1, 4, 6, 6}, f32}, {{8, 4, 3, 3}, f32}},
            conv_attrs("conv2d", {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}),
            4 * 9};
  ConfigSpace space = lookup(c.op).space_gpu(c.types, c.attrs, kOpenCL);
  TensorType out = lookup(c.op).infer(c.types, c.attrs)[0];
  // About 16 points spread over the space (PoCL compiles each).
  int64_t size = autotune::space_size(space), step = std::max<int64_t>(7, size / 16) | 1;
  int ran = 0;
  for (int64_t i = 0; i < size; i += step) {
    Config config = autotune::config_at(space, i);
    if (!fits(space, config, out, kOpenCL.max_threads_per_block)) continue;
    check_op(c.op, c.types, c.attrs, gpu_opts(c, config));
    ++ran;
  }
  EXPECT_GE(ran, 5);
}

TEST(GpuSchedule, ATileThatDoesNotDivideIsRefusedNamingTheKnob) {
  Case c = cases()[0];
  const OpDef& def = lookup(c.op);
  std::vector<te::Tensor> ins;
  for (size_t i = 0; i < c.types.size(); ++i)
    ins.push_back(te::placeholder(to_exprs(c.types[i].shape), f32, "in" + std::to_string(i)));
  std::vector<te::Tensor> outs = def.compute(ins, c.attrs);
  std::string e = testing::user_error([&] {
    te::Schedule s(outs);
    def.schedule_gpu(s, outs, c.attrs, kOpenCL, {{"x_threads", 3}});
  });
  EXPECT_NE(e.find("x_threads 3 does not divide its extent 14"), std::string::npos) << e;
  e = testing::user_error([&] {
    te::Schedule s(outs);
    def.schedule_gpu(s, outs, c.attrs, kOpenCL, {{"k_tile", 5}});
  });
  EXPECT_NE(e.find("k_tile 5 does not divide the reduction's extent 16"), std::string::npos) << e;
}

TEST(GpuSchedule, CrossThreadReductionsOfLongRows) {
  // Few outputs over a long axis: a block per output shares the axis among its threads (rows
  // not a multiple of the threads leave a tail). Sums are relative to the sum of |x|.
  struct R {
    std::string op;
    std::vector<int64_t> shape;
    Attrs attrs;
  };
  std::vector<R> rs = {
      {"reduce_sum", {3, 1000}, Attrs("reduce_sum", {{"axes", std::vector<int64_t>{1}}})},
      {"reduce_max", {2, 5, 77}, Attrs("reduce_max", {{"axes", std::vector<int64_t>{2}}})},
      {"reduce_mean", {4, 3, 9, 9}, Attrs("reduce_mean", {{"axes", std::vector<int64_t>{2, 3}}})},
      {"softmax", {2, 1000}, Attrs("softmax", {{"axis", int64_t{1}}})},
      {"log_softmax", {1, 650}, Attrs("log_softmax", {{"axis", int64_t{-1}}})},
  };
  for (const R& r : rs) {
    SCOPED_TRACE(r.op);
    CheckOptions o;
    o.gpu_always = true;
    o.tol = 1e-5;
    if (r.op == "reduce_sum" || r.op == "reduce_mean") {
      o.magnitude = [r](const std::vector<runtime::NDArray>& in) {
        runtime::NDArray a = runtime::NDArray::empty(in[0].shape(), runtime::dl_float32());
        for (int64_t i = 0; i < a.numel(); ++i)
          a.data_as<float>()[i] = std::abs(in[0].data_as<float>()[i]);
        return lookup(r.op).reference({a}, r.attrs);
      };
    }
    check_op(r.op, {{r.shape, f32}}, r.attrs, o);
  }
}

TEST(GpuSchedule, TheDefaultScheduleIsTunable) {
  // Pooling, reductions and softmax, element-wise ops take the default GPU schedule with its
  // knobs: threads per block and outputs per thread, a block's width apart. Every point matches
  // the reference, with tails (no size here is a multiple of a block's outputs).
  std::vector<Case> ds = {
      {"max_pool2d",
       {{{1, 8, 13, 13}, f32}},
       Attrs("max_pool2d", {{"kernel_shape", std::vector<int64_t>{3, 3}},
                            {"strides", std::vector<int64_t>{2, 2}},
                            {"pads", std::vector<int64_t>{1, 1, 1, 1}}}),
       9},
      {"global_avg_pool2d", {{{1, 16, 7, 7}, f32}}, Attrs("global_avg_pool2d", {}), 49},
      {"softmax", {{{2, 1000}, f32}}, Attrs("softmax", {{"axis", int64_t{1}}}), 1000},
      {"add", {{{3, 77}, f32}, {{77}, f32}}, Attrs("add", {}), 1},
  };
  for (const Case& d : ds) {
    SCOPED_TRACE(d.op);
    ConfigSpace space = space_for(lookup(d.op), d.types, d.attrs, kOpenCL);
    ASSERT_EQ(space.size(), 2u);
    EXPECT_EQ(space[0].name, "threads");
    EXPECT_EQ(space[0].values, (std::vector<int64_t>{256, 64, 128}));  // OpenCL: 256 at most
    EXPECT_EQ(space[1].name, "inner");
    for (const Config& config : std::vector<Config>{{{"threads", 64}, {"inner", 4}},
                                                    {{"threads", 128}, {"inner", 2}},
                                                    {{"threads", 96}, {"inner", 3}}}) {
      CheckOptions o;
      o.gpu_always = true;
      o.gpu_config = config;
      o.tol = d.op == "max_pool2d" ? 0 : 1e-5;
      check_op(d.op, d.types, d.attrs, o);
    }
  }
  std::string e = testing::user_error([&] {
    std::vector<te::Tensor> ins = {te::placeholder(to_exprs({4, 5}), f32, "x")};
    std::vector<te::Tensor> outs = lookup("relu").compute(ins, Attrs("relu", {}));
    te::Schedule s(outs);
    schedule_for(lookup("relu"), s, outs, Attrs("relu", {}), kOpenCL, {{"threads", 512}});
  });
  EXPECT_NE(e.find("threads 512 is outside [1, 256]"), std::string::npos) << e;
}

// Split-K: a late layer's shape (few output tiles, a long reduction) on a target with more
// multiprocessors than the tiling has blocks. The rule splits; every split of the space matches
// the reference through OpenCL, with an epilogue (bias) and without (the output is the sum); the
// split makes one more kernel (the parts' sums) and the partial sums a global temporary.
// `c` scheduled with `config` for `target` and lowered.
ir::DeviceFunc lowered(const Case& c, const Config& config, const Target& target) {
  const OpDef& def = lookup(c.op);
  std::vector<te::Tensor> ins;
  for (size_t i = 0; i < c.types.size(); ++i)
    ins.push_back(te::placeholder(to_exprs(c.types[i].shape), f32, "in" + std::to_string(i)));
  std::vector<te::Tensor> outs = def.compute(ins, c.attrs);
  te::Schedule s(outs);
  def.schedule_gpu(s, outs, c.attrs, target, config);
  std::vector<te::Tensor> args = ins;
  args.insert(args.end(), outs.begin(), outs.end());
  return lower_gpu(s, args, "op", target);
}

std::string opencl_source(const Case& c, const Config& config, const Target& target) {
  return codegen::generate_opencl({lowered(c, config, target)});
}

TEST(GpuSchedule, SplitKForFewBlocks) {
  using V = std::vector<int64_t>;
  const std::vector<Case> late = {
      {"conv2d",
       {{{1, 64, 8, 8}, f32}, {{32, 64, 3, 3}, f32}, {{32}, f32}},
       conv_attrs("conv2d", {{"pads", V{1, 1, 1, 1}}, {"strides", V{2, 2}}}),
       64 * 9},
      {"dense", {{{8, 256}, f32}, {{24, 256}, f32}}, Attrs("dense", {}), 256},
  };
  const Target many = Target::parse("opencl -multiprocessors=64");
  EXPECT_EQ(many.str(), "opencl -max-threads=256 -max-shared-memory=32768 -multiprocessors=64");
  EXPECT_EQ(Target::parse("cuda -arch=sm_90").multiprocessors, 132);
  EXPECT_EQ(Target::parse("cuda -arch=sm_90").str(),
            "cuda -arch=sm_90 -max-threads=1024 -max-shared-memory=49152");
  for (const Case& c : late) {
    SCOPED_TRACE(c.op + " " + to_string(c.types[0]) + " x " + to_string(c.types[1]));
    ConfigSpace space = lookup(c.op).space_gpu(c.types, c.attrs, many);
    ASSERT_EQ(space.back().name, "k_split");
    const std::vector<int64_t>& parts = space.back().values;
    EXPECT_GT(parts[0], 1) << "the rule does not split";
    // Without a multiprocessor count the rule does not split (the knob is still there).
    ConfigSpace unknown = lookup(c.op).space_gpu(c.types, c.attrs, kOpenCL);
    ASSERT_EQ(unknown.back().name, "k_split");
    EXPECT_EQ(unknown.back().values[0], 1);
    for (int64_t p : parts) {
      SCOPED_TRACE("k_split=" + std::to_string(p));
      Config config = autotune::config_at(space, 0);
      config["k_split"] = p;
      ir::LoweredFunc unused = check_op(c.op, c.types, c.attrs, gpu_opts(c, config));
      (void)unused;
      // The kernels: the tiled one, and with a split the one adding the parts.
      ir::DeviceFunc f = lowered(c, config, many);
      EXPECT_EQ(f.kernels.size(), p > 1 ? 2u : 1u);
      EXPECT_EQ(f.temps.size(), p > 1 ? 1u : 0u);
    }
  }
  // Untuned (no knobs) the rule splits; a configuration tuned before the knob existed (other
  // knobs, no k_split) runs as it was measured, unsplit.
  const Case& c = late[0];
  EXPECT_EQ(lowered(c, {}, many).kernels.size(), 2u);
  Config old = autotune::config_at(lookup(c.op).space_gpu(c.types, c.attrs, many), 0);
  old.erase("k_split");
  EXPECT_EQ(lowered(c, old, many).kernels.size(), 1u);
  // A split that does not divide the reduction is refused, naming the knob.
  std::string e = testing::user_error([&] { lowered(c, {{"k_split", 3}}, kOpenCL); });
  EXPECT_NE(e.find("k_split 3 does not divide the reduction's extent 64"), std::string::npos) << e;
}

int count_of(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(GpuSchedule, VectorFetchWhereTheCopyAllows) {
  struct VectorCase {
    Case c;
    int copies;  // shared copies fetched 4 or 2 floats at a time by default
  };
  const std::vector<VectorCase> all = {
      // The activations along k (k_tile 16, rows of 256); the weights are read from global memory.
      {{"dense", {{{8, 256}, f32}, {{24, 256}, f32}, {{24}, f32}}, Attrs("dense", {}), 256}, 1},
      // A along k, 2 at a time (k_tile 10); B is read from global memory.
      {{"matmul", {{{3, 12, 20}, f32}, {{20, 16}, f32}}, Attrs("matmul", {}), 20}, 1},
      // A 1x1 convolution without padding reads the input's rows unchanged; the weights' last
      // dimension is 1.
      {{"conv2d", {{{1, 32, 8, 8}, f32}, {{16, 32, 1, 1}, f32}}, conv_attrs("conv2d", {}), 32}, 1},
      // Padding is inlined into the input's copy, and 3-wide weight rows: no copy vectorizes.
      {cases()[0], 0},
  };
  for (const VectorCase& v : all) {
    const Case& c = v.c;
    SCOPED_TRACE(c.op + " " + to_string(c.types[0]) + " x " + to_string(c.types[1]));
    ConfigSpace space = lookup(c.op).space_gpu(c.types, c.attrs, kOpenCL);
    Config config = autotune::config_at(space, 0);
    EXPECT_EQ(config.at("vector_fetch"), 1);
    // A vector load per copy (and per tail partitioned off a copy's loop), and only there.
    std::string source = opencl_source(c, config, kOpenCL);
    EXPECT_GE(count_of(source, "vload"), v.copies);
    EXPECT_EQ(count_of(source, "vload"), count_of(source, "vstore"));
    if (v.copies == 0) {
      EXPECT_EQ(count_of(source, "vload"), 0);
    }
    check_op(c.op, c.types, c.attrs, gpu_opts(c, config));
    config["vector_fetch"] = 0;
    EXPECT_EQ(count_of(opencl_source(c, config, kOpenCL), "vload"), 0);
    check_op(c.op, c.types, c.attrs, gpu_opts(c, config));
  }
}

TEST(GpuSchedule, DefaultsAreTheFirstValues) {
  // conv2d 16 -> 32 at 14x14: 4 channel threads x 4 channels, 7 x 7 pixel threads, k_tile 8.
  Case c = cases()[0];
  ConfigSpace space = lookup(c.op).space_gpu(c.types, c.attrs, kOpenCL);
  Config d = autotune::config_at(space, 0);
  EXPECT_EQ(d.at("f_threads"), 4);
  EXPECT_EQ(d.at("f_inner"), 4);
  EXPECT_EQ(d.at("y_threads"), 7);
  EXPECT_EQ(d.at("x_threads"), 7);
  EXPECT_EQ(d.at("k_tile"), 8);
  EXPECT_EQ(d.at("double_buffer"), 0);
  EXPECT_EQ(d.at("vector_fetch"), 1);
  // The x86 space is another one.
  EXPECT_NE(space_for(lookup(c.op), c.types, c.attrs, Target::host()).size(), space.size());
}

}  // namespace
}  // namespace anvil::ops
