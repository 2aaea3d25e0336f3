// Convolutions (conv1d, conv2d, conv2d_transpose) against their double-precision references, on
// fixed and randomized (fixed-seed) shapes and attributes, under the default schedule and under
// explicit configs. Tolerance: 1e-4 relative, |got - want| <= 1e-4 * (1 + |want|).
#include <gtest/gtest.h>

#include <random>
#include <sstream>

#include "anvil/ir/op.h"
#include "ops_testing.h"
#include "testing/errors.h"

namespace anvil::ops {
namespace {

using ir::DataType;
using ops_testing::check_op;
using ops_testing::CheckOptions;

const DataType f32 = DataType::Float32();

CheckOptions opts(uint32_t seed = 1, Config config = {}) {
  CheckOptions o;
  o.tol = 1e-4;
  o.seed = seed;
  o.config = std::move(config);
  return o;
}

struct Conv {
  std::string op = "conv2d";
  std::vector<int64_t> x = {}, w = {};
  bool bias = false;
  std::vector<int64_t> strides = {}, pads = {}, dilations = {}, output_padding = {};
  int64_t group = 1;
  int64_t subpixel = 0;

  Attrs attrs() const {
    std::map<std::string, AttrValue> v;
    if (subpixel) v["subpixel"] = subpixel;
    if (!strides.empty()) v["strides"] = strides;
    if (!pads.empty()) v["pads"] = pads;
    if (!dilations.empty()) v["dilations"] = dilations;
    if (!output_padding.empty()) v["output_padding"] = output_padding;
    v["group"] = group;
    return Attrs(op, v);
  }
  std::vector<TensorType> types() const {
    std::vector<TensorType> t = {{x, f32}, {w, f32}};
    int64_t o = op == "conv2d_transpose" ? w[1] * group : w[0];
    if (bias) t.push_back({{o}, f32});
    return t;
  }
  std::string str() const {
    std::ostringstream os;
    auto l = [&](const char* n, const std::vector<int64_t>& v) {
      os << " " << n << "=[";
      for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << v[i];
      os << "]";
    };
    os << op;
    l("x", x);
    l("w", w);
    l("strides", strides);
    l("pads", pads);
    l("dilations", dilations);
    l("output_padding", output_padding);
    os << " group=" << group << " bias=" << bias << " subpixel=" << subpixel;
    return os.str();
  }
};

void check(const Conv& c, const CheckOptions& o = opts()) {
  SCOPED_TRACE(c.str());
  check_op(c.op, c.types(), c.attrs(), o);
}

// ---- conv2d

TEST(Conv2d, Plain3x3) {
  check({.x = {1, 3, 8, 8}, .w = {8, 3, 3, 3}});
  check({.x = {2, 5, 9, 11}, .w = {7, 5, 3, 3}, .bias = true, .pads = {1, 1, 1, 1}});
}

TEST(Conv2d, OneByOneKernelAndMap) {
  check({.x = {1, 16, 7, 7}, .w = {24, 16, 1, 1}, .bias = true});
  check({.x = {2, 9, 1, 1}, .w = {5, 9, 1, 1}});
  // 1x1 map, 3x3 kernel, padding 1: only the centre tap sees data.
  check({.x = {1, 4, 1, 1}, .w = {6, 4, 3, 3}, .pads = {1, 1, 1, 1}});
}

TEST(Conv2d, Stride2) {
  check({.x = {1, 4, 13, 13}, .w = {8, 4, 3, 3}, .strides = {2, 2}, .pads = {1, 1, 1, 1}});
  check({.x = {1, 3, 10, 15}, .w = {5, 3, 2, 3}, .strides = {2, 1}});
}

TEST(Conv2d, AsymmetricPaddingOneSide) {
  check({.x = {1, 3, 6, 7}, .w = {4, 3, 3, 3}, .pads = {0, 0, 2, 1}});
  check({.x = {1, 3, 6, 7}, .w = {4, 3, 3, 3}, .bias = true, .pads = {2, 0, 0, 0}});
  check({.x = {1, 2, 5, 9}, .w = {3, 2, 2, 2}, .strides = {2, 2}, .pads = {0, 1, 0, 0}});
}

TEST(Conv2d, Dilation2) {
  check({.x = {1, 3, 11, 12}, .w = {4, 3, 3, 3}, .pads = {2, 2, 2, 2}, .dilations = {2, 2}});
  check({.x = {1, 2, 9, 9}, .w = {3, 2, 3, 2}, .strides = {2, 1}, .dilations = {2, 3}});
}

TEST(Conv2d, Groups) {
  check({.x = {1, 6, 7, 9}, .w = {4, 3, 3, 3}, .bias = true, .pads = {1, 1, 1, 1}, .group = 2});
  check({.x = {2, 8, 5, 5}, .w = {12, 2, 1, 3}, .pads = {0, 1, 0, 1}, .group = 4});
}

TEST(Conv2d, Depthwise) {
  check({.x = {1, 8, 12, 12}, .w = {8, 1, 3, 3}, .pads = {1, 1, 1, 1}, .group = 8});
  check({.x = {1, 5, 9, 20},
         .w = {5, 1, 3, 3},
         .bias = true,
         .strides = {2, 2},
         .pads = {1, 1, 1, 1},
         .group = 5});
  // Channel multiplier 2.
  check({.x = {2, 3, 7, 7}, .w = {6, 1, 5, 5}, .pads = {2, 2, 2, 2}, .group = 3});
}

TEST(Conv2d, ResNetLikeLayers) {
  check({.x = {1, 64, 56, 56}, .w = {64, 64, 3, 3}, .pads = {1, 1, 1, 1}});
  check({.x = {1, 64, 28, 28},
         .w = {128, 64, 3, 3},
         .bias = true,
         .strides = {2, 2},
         .pads = {1, 1, 1, 1}});
  check({.x = {1, 64, 28, 28}, .w = {128, 64, 1, 1}, .strides = {2, 2}});
  check({.x = {1, 3, 32, 32}, .w = {16, 3, 7, 7}, .strides = {2, 2}, .pads = {3, 3, 3, 3}});
  check({.x = {1, 32, 14, 14}, .w = {32, 1, 3, 3}, .pads = {1, 1, 1, 1}, .group = 32});
}

TEST(Conv2d, Randomized) {
  std::mt19937 rng(2026);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int done = 0;
  for (int trial = 0; done < 24 && trial < 200; ++trial) {
    Conv c;
    int64_t group = std::vector<int64_t>{1, 1, 2, 3}[static_cast<size_t>(pick(0, 3))];
    int64_t cg = pick(1, 4), og = pick(1, 6);
    bool dw = pick(0, 4) == 0;
    if (dw) cg = 1, group = pick(2, 8), og = pick(1, 2);
    c.group = group;
    c.x = {pick(1, 2), cg * group, pick(1, 14), pick(1, 19)};
    c.w = {og * group, cg, pick(1, 4), pick(1, 4)};
    c.strides = {pick(1, 2), pick(1, 3)};
    c.dilations = {pick(1, 2), pick(1, 2)};
    c.pads = {pick(0, 2), pick(0, 2), pick(0, 2), pick(0, 2)};
    c.bias = pick(0, 1) == 1;
    bool fits = true;
    for (int d = 0; d < 2; ++d) {
      size_t i = static_cast<size_t>(d);
      fits =
          fits && (c.w[2 + i] - 1) * c.dilations[i] + 1 <= c.x[2 + i] + c.pads[i] + c.pads[2 + i];
    }
    if (!fits) continue;
    check(c, opts(static_cast<uint32_t>(trial)));
    ++done;
  }
  EXPECT_EQ(done, 24);
}

TEST(Conv2d, ExplicitConfigsWithTails) {
  Conv c{.x = {1, 6, 11, 23}, .w = {10, 6, 3, 3}, .bias = true, .pads = {1, 0, 1, 2}};
  check(c, opts(3, {{"tile_oc", 3}, {"tile_ow", 5}, {"unroll_kw", 0}}));
  check(c, opts(4, {{"tile_oc", 16}, {"tile_ow", 48}, {"unroll_kw", 1}}));
  check(c, opts(5, {{"tile_oc", 1}, {"tile_ow", 1}}));
  Conv dw{.x = {1, 4, 9, 35}, .w = {4, 1, 3, 3}, .pads = {1, 1, 1, 1}, .group = 4};
  check(dw, opts(6, {{"tile_oc", 3}, {"tile_ow", 17}}));
  // Width strides read phases of the padded rows; with kw not unrolled the phase is computed.
  Conv strided{.x = {1, 3, 9, 20}, .w = {5, 3, 3, 3}, .strides = {2, 3}, .pads = {1, 2, 0, 1}};
  check(strided, opts(7, {{"unroll_kw", 0}, {"tile_ow", 4}}));
  check(strided, opts(8, {{"unroll_kw", 1}, {"tile_oc", 2}}));
  check({.op = "conv1d", .x = {2, 4, 50}, .w = {3, 4, 4}, .strides = {2}, .dilations = {3}},
        opts(9, {{"unroll_kw", 0}}));
}

TEST(Conv2d, DepthwiseDefaultsDiffer) {
  Conv dw{.x = {1, 32, 56, 56}, .w = {32, 1, 3, 3}, .pads = {1, 1, 1, 1}, .group = 32};
  ConfigSpace space = lookup("conv2d").space(dw.types(), dw.attrs(), Target::host());
  EXPECT_EQ(space[0].values[0], 4);
  int64_t lanes = Target::host().vector_lanes_f32();
  EXPECT_EQ(space[1].values[0], 56 % (2 * lanes) == 0 ? 2 * lanes : std::min<int64_t>(lanes, 56));
}

TEST(Conv2d, SpaceListsDefaultsFirst) {
  Conv c{.x = {1, 64, 56, 56}, .w = {64, 64, 3, 3}, .pads = {1, 1, 1, 1}};
  Target t = Target::host();
  ConfigSpace space = lookup("conv2d").space(c.types(), c.attrs(), t);
  ASSERT_EQ(space.size(), 3u);
  EXPECT_EQ(space[0].name, "tile_oc");
  EXPECT_EQ(space[0].values[0], 8);
  EXPECT_EQ(space[1].name, "tile_ow");
  EXPECT_EQ(space[2].name, "unroll_kw");
  EXPECT_EQ(space[2].values[0], 1);
  for (const Knob& k : space) EXPECT_GT(k.values.size(), 1u) << k.name;
  // Every point of a small sample of the space computes the same result.
  for (int64_t oc : space[0].values) {
    check({.x = {1, 5, 6, 21}, .w = {9, 5, 3, 3}, .pads = {1, 1, 1, 1}},
          opts(7, {{"tile_oc", oc}, {"tile_ow", space[1].values.back()}}));
  }
  EXPECT_EQ(lookup("conv2d").pattern, Pattern::kComplexOutFusable);
}

// A fused group as the graph builds it: conv2d + bias, then relu on its output, scheduled by
// conv2d's schedule (complex-out-fusable: the epilogue is computed in the output tile).
TEST(Conv2d, FusedReluEpilogue) {
  Conv c{.x = {1, 6, 10, 19},
         .w = {12, 3, 3, 3},
         .bias = true,
         .strides = {1, 2},
         .pads = {1, 1, 1, 1},
         .group = 2};
  const OpDef& def = lookup("conv2d");
  std::vector<TensorType> types = c.types();
  std::vector<te::Tensor> ins;
  for (size_t i = 0; i < types.size(); ++i)
    ins.push_back(te::placeholder(to_exprs(types[i].shape), f32, "in" + std::to_string(i)));
  te::Tensor conv = def.compute(ins, c.attrs())[0];
  te::Tensor relu = te::compute(
      conv->shape,
      [&](const std::vector<ir::Var>& i) {
        return ir::max(conv(std::vector<ir::Expr>(i.begin(), i.end())), 0.0f);
      },
      "relu");
  te::Schedule s({relu});
  Target target = Target::host();
  def.schedule_x86(s, {relu}, target, {});
  std::vector<te::Tensor> args = ins;
  args.push_back(relu);
  auto module = codegen::LLVMModule::compile({lower(s, args, "fused")}, target);

  std::mt19937 rng(5);
  std::vector<runtime::NDArray> in;
  for (const TensorType& t : types) in.push_back(ops_testing::random_array(t, rng));
  runtime::NDArray out = anvil::testing::array(shape_of(relu));
  std::vector<const DLTensor*> ptrs;
  for (const auto& a : in) ptrs.push_back(a.get());
  ptrs.push_back(out.get());
  ASSERT_EQ(anvil::testing::call(module->get_function("fused"), ptrs), 0) << AnvilGetLastError();
  runtime::NDArray want = def.reference(in, c.attrs())[0];
  for (int64_t i = 0; i < want.numel(); ++i) {
    float w = std::max(want.data_as<float>()[i], 0.0f);
    ASSERT_NEAR(out.data_as<float>()[i], w, 1e-4 * (1 + std::abs(w))) << "element " << i;
  }
}

// ---- conv1d

TEST(Conv1d, Shapes) {
  check({.op = "conv1d", .x = {2, 3, 17}, .w = {5, 3, 3}, .pads = {1, 1}});
  check({.op = "conv1d",
         .x = {1, 4, 40},
         .w = {6, 2, 5},
         .bias = true,
         .strides = {2},
         .pads = {0, 3},
         .dilations = {2},
         .group = 2});
  check({.op = "conv1d", .x = {1, 6, 1}, .w = {6, 1, 1}, .group = 6});
  check({.op = "conv1d", .x = {1, 8, 33}, .w = {8, 1, 3}, .pads = {2, 0}, .group = 8});
}

// ---- conv2d_transpose

TEST(Conv2dTranspose, Stride2OutputPadding) {
  check({.op = "conv2d_transpose", .x = {1, 4, 5, 6}, .w = {4, 3, 3, 3}, .strides = {2, 2}});
  check({.op = "conv2d_transpose",
         .x = {1, 4, 5, 6},
         .w = {4, 3, 3, 3},
         .bias = true,
         .strides = {2, 2},
         .pads = {1, 1, 1, 1},
         .output_padding = {1, 1}});
  // DCGAN-like: 4x4 kernel, stride 2, padding 1 doubles the map.
  check({.op = "conv2d_transpose",
         .x = {2, 16, 8, 8},
         .w = {16, 8, 4, 4},
         .bias = true,
         .strides = {2, 2},
         .pads = {1, 1, 1, 1}});
}

// The sub-pixel form (GPU targets): each output reads only its phase's taps. Kernels that are and
// are not multiples of the stride, padding, output padding, a unit stride along one axis, bias;
// with groups or dilation the op keeps the zero-dilated form. Every call also runs the GPU
// schedule.
TEST(Conv2dTranspose, SubpixelForm) {
  CheckOptions o = opts();
  o.gpu_always = true;
  for (Conv c : std::vector<Conv>{
           {.x = {1, 8, 4, 4},
    .w = {8, 4, 4, 4},
    .bias = true,
    .strides = {2, 2},
    .pads = {1, 1, 1, 1}},
           {.x = {1, 4, 5, 6}, .w = {4, 3, 3, 3}, .strides = {2, 2}},
           {.x = {2, 4, 5, 6},
           .w = {4, 3, 3, 3},
           .bias = true,
           .strides = {2, 2},
           .pads = {1, 1, 1, 1},
           .output_padding = {1, 1}},
           {.x = {1, 3, 4, 7}, .w = {3, 5, 5, 2}, .strides = {3, 1}, .pads = {2, 0, 1, 1}},
           {.x = {1, 2, 7, 7}, .w = {2, 2, 2, 2}, .strides = {2, 2}, .pads = {3, 3, 2, 2}},
           {.x = {1, 6, 4, 5},
           .w = {6, 2, 3, 3},
           .strides = {2, 1},
           .pads = {0, 1, 2, 0},
           .group = 3},
           {.x = {1, 2, 5, 5}, .w = {2, 3, 3, 2}, .strides = {2, 2}, .dilations = {2, 2}},
       }) {
    c.op = "conv2d_transpose";
    c.subpixel = 1;
    check(c, o);
  }
}

TEST(Conv2dTranspose, GroupsDilationAsymmetric) {
  check({.op = "conv2d_transpose",
         .x = {1, 6, 4, 5},
         .w = {6, 2, 3, 3},
         .strides = {2, 1},
         .pads = {0, 1, 2, 0},
         .group = 3});
  check({.op = "conv2d_transpose",
         .x = {1, 2, 5, 5},
         .w = {2, 3, 3, 2},
         .strides = {3, 2},
         .pads = {1, 0, 0, 1},
         .dilations = {2, 2},
         .output_padding = {2, 1}});
  check({.op = "conv2d_transpose", .x = {1, 3, 1, 1}, .w = {3, 4, 1, 1}});
  // Padding wider than the dilated kernel (the dilated input starts inside x).
  check({.op = "conv2d_transpose",
         .x = {1, 2, 7, 7},
         .w = {2, 2, 2, 2},
         .strides = {2, 2},
         .pads = {3, 3, 2, 2}});
}

TEST(Conv2dTranspose, Randomized) {
  std::mt19937 rng(77);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int done = 0;
  for (int trial = 0; done < 12 && trial < 200; ++trial) {
    Conv c;
    c.op = "conv2d_transpose";
    c.group = pick(1, 2);
    c.x = {pick(1, 2), pick(1, 3) * c.group, pick(1, 7), pick(1, 9)};
    c.w = {c.x[1], pick(1, 4), pick(1, 4), pick(1, 4)};
    c.strides = {pick(1, 3), pick(1, 3)};
    c.dilations = {pick(1, 2), pick(1, 2)};
    c.pads = {pick(0, 2), pick(0, 2), pick(0, 2), pick(0, 2)};
    c.output_padding = {pick(0, std::max(c.strides[0], c.dilations[0]) - 1),
                        pick(0, std::max(c.strides[1], c.dilations[1]) - 1)};
    c.bias = pick(0, 1) == 1;
    bool ok = true;
    for (size_t d = 0; d < 2; ++d) {
      int64_t o = c.strides[d] * (c.x[2 + d] - 1) + c.output_padding[d] +
                  (c.w[2 + d] - 1) * c.dilations[d] + 1 - c.pads[d] - c.pads[2 + d];
      ok = ok && o >= 1;
    }
    if (!ok) continue;
    check(c, opts(static_cast<uint32_t>(trial)));
    ++done;
  }
  EXPECT_EQ(done, 12);
}

// ---- errors

std::string infer_error(const Conv& c) {
  return testing::user_error([&] { lookup(c.op).infer(c.types(), c.attrs()); });
}

void expect_has(const std::string& msg, const std::string& part) {
  EXPECT_NE(msg.find(part), std::string::npos) << "message: " << msg << "\nexpected: " << part;
}

TEST(ConvErrors, ChannelMismatch) {
  std::string m = infer_error({.x = {1, 3, 8, 8}, .w = {8, 4, 3, 3}});
  expect_has(m,
             "conv2d: input x float32[1, 3, 8, 8] has 3 channels, but weight "
             "float32[8, 4, 3, 3] expects 4 x group 1 = 4");
  m = infer_error({.x = {1, 6, 8, 8}, .w = {8, 2, 3, 3}, .group = 2});
  expect_has(m, "expects 2 x group 2 = 4");
  m = infer_error({.x = {1, 6, 8, 8}, .w = {6, 1, 3, 3}, .group = 4});
  expect_has(m, "has 6 channels, not divisible by attribute 'group' = 4");
  m = infer_error({.x = {1, 4, 8, 8}, .w = {6, 2, 3, 3}, .group = 2 * 2});
  expect_has(m, "conv2d: input x float32[1, 4, 8, 8] has 4 channels, but weight");
  m = infer_error({.x = {1, 4, 8, 8}, .w = {5, 2, 3, 3}, .group = 2});
  expect_has(m,
             "conv2d: weight float32[5, 2, 3, 3] has 5 output channels, not divisible by "
             "attribute 'group' = 2");
  m = infer_error({.op = "conv2d_transpose", .x = {1, 4, 8, 8}, .w = {3, 2, 3, 3}});
  expect_has(m,
             "conv2d_transpose: input x float32[1, 4, 8, 8] has 4 channels, but weight "
             "float32[3, 2, 3, 3] expects 3");
}

TEST(ConvErrors, BiasShape) {
  std::string m = testing::user_error([] {
    lookup("conv2d").infer({{{1, 4, 8, 8}, f32}, {{6, 4, 3, 3}, f32}, {{4}, f32}},
                           Attrs("conv2d", {}));
  });
  expect_has(m, "conv2d: bias must be float32[6] (one per output channel), got float32[4]");
}

TEST(ConvErrors, NegativePads) {
  std::string m = infer_error({.x = {1, 3, 8, 8}, .w = {8, 3, 3, 3}, .pads = {1, -1, 1, 1}});
  expect_has(m, "conv2d: attribute 'pads' must be non-negative, got [1, -1, 1, 1]");
  m = infer_error({.x = {1, 3, 8, 8}, .w = {8, 3, 3, 3}, .pads = {1, 1}});
  expect_has(m, "conv2d: attribute 'pads' must have 4 values, got [1, 1]");
  m = infer_error({.x = {1, 3, 8, 8}, .w = {8, 3, 3, 3}, .strides = {0, 1}});
  expect_has(m, "conv2d: attribute 'strides' must be positive, got [0, 1]");
  m = infer_error({.op = "conv1d", .x = {1, 3, 8}, .w = {8, 3, 3}, .dilations = {0}});
  expect_has(m, "conv1d: attribute 'dilations' must be positive, got [0]");
  m = infer_error({.x = {1, 3, 8, 8}, .w = {8, 3, 3, 3}, .group = 0});
  expect_has(m, "conv2d: attribute 'group' must be positive, got 0");
}

TEST(ConvErrors, KernelLargerThanPaddedInput) {
  std::string m = infer_error({.x = {1, 3, 4, 8}, .w = {8, 3, 3, 3}, .dilations = {2, 1}});
  expect_has(m,
             "conv2d: kernel height 3 (dilated 5, attribute 'dilations' = [2, 1]) is larger "
             "than the padded input height 4 (input 4, attribute 'pads' = [0, 0, 0, 0])");
  m = infer_error({.x = {1, 3, 8, 2}, .w = {8, 3, 3, 4}, .pads = {0, 1, 0, 0}});
  expect_has(m, "kernel width 4 (dilated 4");
  expect_has(m, "padded input width 3");
}

TEST(ConvErrors, TransposeAttributes) {
  std::string m = infer_error({.op = "conv2d_transpose",
                               .x = {1, 2, 4, 4},
                               .w = {2, 2, 3, 3},
                               .strides = {2, 2},
                               .output_padding = {2, 0}});
  expect_has(m,
             "conv2d_transpose: attribute 'output_padding' [2, 0] must be smaller than the "
             "stride or the dilation");
  m = infer_error(
      {.op = "conv2d_transpose", .x = {1, 2, 1, 1}, .w = {2, 2, 1, 1}, .pads = {1, 0, 1, 0}});
  expect_has(m, "conv2d_transpose: output height -1 is not positive");
}

TEST(ConvErrors, RankAndType) {
  std::string m = infer_error({.x = {1, 3, 8}, .w = {8, 3, 3, 3}});
  expect_has(m, "conv2d: input x must have rank 4 (NCHW), got float32[1, 3, 8]");
  m = testing::user_error([] {
    lookup("conv2d").infer({{{1, 3, 8, 8}, DataType::Int32()}, {{8, 3, 3, 3}, f32}},
                           Attrs("conv2d", {}));
  });
  expect_has(m, "conv2d: input 0 must be float32 or float64, not int32[1, 3, 8, 8]");
}

}  // namespace
}  // namespace anvil::ops
