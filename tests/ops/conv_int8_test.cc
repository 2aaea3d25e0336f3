// conv2d_int8 and its weight packing against their references (exact: int32 arithmetic) over the
// full uint8 and int8 ranges: 1x1, 3x3 and 7x7 kernels, strides, dilations, asymmetric padding
// filled with a pad value, channels the groups and blocks do not divide, batch 2, every config of
// a space; grouped convolutions (one group per block of 16 filters, several per block), plain and
// blocked; against the plain float convolution's reference on the same integers, grouped too; and
// the errors.
#include <gtest/gtest.h>

#include <random>
#include <tuple>

#include "anvil/graph/build.h"
#include "anvil/graph/graph.h"
#include "ops_testing.h"
#include "testing/errors.h"

namespace anvil::ops {
namespace {

using ir::DataType;
using ops_testing::check_op;
using ops_testing::CheckOptions;
using ops_testing::random_bytes;

const DataType u8 = DataType::UInt(8), i8 = DataType::Int(8);

runtime::NDArray pack(const runtime::NDArray& w, int64_t group = 1) {
  return lookup("conv2d_int8_pack_weight")
      .reference({w}, Attrs("conv2d_int8_pack_weight", {{"group", group}}))[0];
}

struct Case {
  int64_t N, C, H, W, O, K;
  std::vector<int64_t> strides, dilations, pads;
  int pad_value;  // -1: no pad_value input
  int64_t group = 1;
};

Attrs conv_attrs(const Case& c) {
  return Attrs("conv2d_int8", {{"strides", c.strides},
                               {"dilations", c.dilations},
                               {"pads", c.pads},
                               {"channels", c.O},
                               {"group", c.group}});
}

// Checks conv2d_int8 on x (NCHW, or NCHW16c with `attrs` blocked), the packed weight and the
// case's pad value, if any, against the reference; returns the inputs.
std::vector<runtime::NDArray> check_inputs(const Case& c, const Attrs& attrs, runtime::NDArray x,
                                           runtime::NDArray packed, Config config = {}) {
  CheckOptions o;
  o.inputs = {x, packed};
  std::vector<TensorType> types = {{x.shape(), u8}, {packed.shape(), i8}};
  if (c.pad_value >= 0) {
    runtime::NDArray v = runtime::NDArray::empty({}, to_dlpack(u8));
    v.data_as<uint8_t>()[0] = static_cast<uint8_t>(c.pad_value);
    o.inputs.push_back(v);
    types.push_back({{}, u8});
  }
  o.config = std::move(config);
  o.gpu = false;
  check_op("conv2d_int8", types, attrs, o);
  return o.inputs;
}

void check_case(const Case& c, uint32_t seed, Config config = {}) {
  runtime::NDArray x = random_bytes({c.N, c.C, c.H, c.W}, u8, seed, 0, 255);
  runtime::NDArray w = random_bytes({c.O, c.C / c.group, c.K, c.K}, i8, seed + 1, -128, 127);
  check_inputs(c, conv_attrs(c), x, pack(w, c.group), std::move(config));
}

TEST(ConvInt8, MatchesTheReference) {
  uint32_t seed = 1;
  for (const Case& c : std::vector<Case>{
           {1, 64, 14, 14, 64, 3, {1, 1}, {1, 1}, {1, 1, 1, 1}, 0},      // ResNet's 3x3
           {1, 32, 9, 11, 48, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}, -1},      // 1x1
           {1, 13, 10, 9, 21, 3, {2, 2}, {1, 1}, {1, 0, 2, 1}, 100},     // odd channels, stride 2
           {2, 8, 12, 12, 16, 3, {1, 1}, {2, 2}, {2, 2, 2, 2}, 255},     // dilation, batch 2
           {1, 3, 23, 23, 16, 7, {2, 2}, {1, 1}, {3, 3, 3, 3}, 128}}) {  // the stem
    SCOPED_TRACE(::testing::Message()
                 << "C=" << c.C << " O=" << c.O << " K=" << c.K << " H=" << c.H << " W=" << c.W);
    check_case(c, seed);
    seed += 2;
  }
}

TEST(ConvInt8, EveryConfigOfTheSpaceAgrees) {
  const Case c{1, 20, 7, 10, 32, 3, {1, 1}, {1, 1}, {1, 1, 1, 1}, 7};
  std::vector<TensorType> types = {{{1, 20, 7, 10}, u8}, {{2, 5, 3, 3, 16, 4}, i8}, {{}, u8}};
  ConfigSpace space = lookup("conv2d_int8").space(types, conv_attrs(c), Target::host());
  ASSERT_EQ(space.size(), 3u);
  for (int64_t tw : space[0].values)
    for (int64_t tc : space[1].values) {
      SCOPED_TRACE(::testing::Message() << "tile_w=" << tw << " tile_c=" << tc);
      check_case(c, 9, {{"tile_w", tw}, {"tile_c", tc}, {"parallel", 1}});
    }
}

// The blocked form (alter_layout's: x and the output NCHW16c) against the reference, and the
// reference's blocked form against its plain one on the same values.
TEST(ConvInt8, BlockedFormMatchesTheReferenceAndThePlainForm) {
  for (const Case& c : std::vector<Case>{
           {1, 32, 9, 9, 48, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}, -1},    // 1x1, read in place
           {1, 20, 8, 7, 24, 3, {2, 1}, {1, 1}, {1, 0, 1, 2}, 9}}) {  // padded, odd channels
    SCOPED_TRACE(::testing::Message() << "C=" << c.C << " O=" << c.O << " K=" << c.K);
    const int64_t CB = (c.C + 15) / 16, OB = (c.O + 15) / 16;
    runtime::NDArray xb = random_bytes({c.N, CB, c.H, c.W, 16}, u8, 5, 0, 255);
    runtime::NDArray w = random_bytes({c.O, c.C, c.K, c.K}, i8, 6, -128, 127);
    Attrs a = conv_attrs(c);
    a.set("blocked", int64_t{1});
    const std::vector<runtime::NDArray> inputs = check_inputs(c, a, xb, pack(w));
    // The plain form on x's true channels gives the blocked output's true channels.
    runtime::NDArray x = runtime::NDArray::empty({c.N, c.C, c.H, c.W}, to_dlpack(u8));
    for (int64_t ch = 0; ch < c.C; ++ch)
      for (int64_t p = 0; p < c.H * c.W; ++p)
        x.data_as<uint8_t>()[ch * c.H * c.W + p] =
            xb.data_as<uint8_t>()[((ch / 16) * c.H * c.W + p) * 16 + ch % 16];
    std::vector<runtime::NDArray> plain_in = inputs, blocked_in = inputs;
    plain_in[0] = x;
    const OpDef& d = lookup("conv2d_int8");
    runtime::NDArray want = d.reference(plain_in, conv_attrs(c))[0];
    runtime::NDArray got = d.reference(blocked_in, a)[0];
    ASSERT_EQ(got.shape(), (std::vector<int64_t>{c.N, OB, want.shape()[2], want.shape()[3], 16}));
    const int64_t P = want.shape()[2] * want.shape()[3];
    for (int64_t oc = 0; oc < OB * 16; ++oc)
      for (int64_t p = 0; p < P; ++p) {
        const int32_t g = got.data_as<int32_t>()[((oc / 16) * P + p) * 16 + oc % 16];
        ASSERT_EQ(g, oc < c.O ? want.data_as<int32_t>()[oc * P + p] : 0) << oc << " " << p;
      }
  }
}

// A first layer's form: x NCHW (3 channels, an image's), the output blocked; against the
// reference, and that against the plain form's output, blocked.
TEST(ConvInt8, PlainInputBlockedOutputMatchesThePlainForm) {
  const Case c{1, 3, 15, 14, 20, 3, {2, 2}, {1, 1}, {1, 1, 1, 1}, 128};
  runtime::NDArray x = random_bytes({c.N, c.C, c.H, c.W}, u8, 7, 0, 255);
  runtime::NDArray w = random_bytes({c.O, c.C, c.K, c.K}, i8, 8, -128, 127);
  runtime::NDArray v = runtime::NDArray::empty({}, to_dlpack(u8));
  v.data_as<uint8_t>()[0] = static_cast<uint8_t>(c.pad_value);
  Attrs a = conv_attrs(c);
  a.set("blocked", int64_t{1});
  CheckOptions o;
  o.inputs = {x, pack(w), v};
  o.gpu = false;
  check_op("conv2d_int8", {{x.shape(), u8}, {o.inputs[1].shape(), i8}, {{}, u8}}, a, o);
  const OpDef& d = lookup("conv2d_int8");
  runtime::NDArray want = d.reference(o.inputs, conv_attrs(c))[0];
  runtime::NDArray got = d.reference(o.inputs, a)[0];
  const int64_t P = want.shape()[2] * want.shape()[3];
  ASSERT_EQ(got.numel(), 2 * 16 * P);
  for (int64_t oc = 0; oc < 32; ++oc)
    for (int64_t p = 0; p < P; ++p)
      ASSERT_EQ(got.data_as<int32_t>()[((oc / 16) * P + p) * 16 + oc % 16],
                oc < c.O ? want.data_as<int32_t>()[oc * P + p] : 0)
          << oc << " " << p;
}

// Grouped: 4 filters per group (4 groups per block of 16), 8 (2 per block), 32 (2 blocks per
// group), with padding, a pad value and strides; the compiled kernel against the reference, plain
// and blocked (x NCHW16c, its padded channels never read).
TEST(ConvInt8, GroupedMatchesTheReference) {
  uint32_t seed = 30;
  for (const Case& c : std::vector<Case>{
           {1, 32, 9, 10, 32, 3, {1, 1}, {1, 1}, {1, 1, 1, 1}, 17, 8},     // ResNeXt's 4 per group
           {1, 48, 8, 8, 48, 3, {2, 2}, {1, 1}, {1, 0, 1, 2}, -1, 6},      // 8 in, 8 out per group
           {2, 16, 7, 7, 64, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}, -1, 2},      // 32 out per group
           {1, 24, 6, 9, 32, 3, {1, 2}, {2, 1}, {2, 1, 2, 1}, 250, 2}}) {  // 12 in, 16 out
    SCOPED_TRACE(::testing::Message() << "C=" << c.C << " O=" << c.O << " group=" << c.group);
    check_case(c, seed);
    // Blocked: the same values in NCHW16c, the output too.
    const int64_t CB = (c.C + 15) / 16;
    runtime::NDArray xb = random_bytes({c.N, CB, c.H, c.W, 16}, u8, seed + 2, 0, 255);
    runtime::NDArray w = random_bytes({c.O, c.C / c.group, c.K, c.K}, i8, seed + 3, -128, 127);
    Attrs a = conv_attrs(c);
    a.set("blocked", int64_t{1});
    check_inputs(c, a, xb, pack(w, c.group));
    seed += 4;
  }
}

// The weight packing compiled against its reference: one group with channels the blocks do not
// divide, and grouped weights (several groups per block, and one).
TEST(ConvInt8, PackingMatchesItsReference) {
  for (const auto& [O, Cg, group] : {std::tuple<int64_t, int64_t, int64_t>{21, 13, 1},
                                     std::tuple<int64_t, int64_t, int64_t>{48, 8, 6},
                                     std::tuple<int64_t, int64_t, int64_t>{64, 4, 2}}) {
    SCOPED_TRACE(::testing::Message() << "O=" << O << " Cg=" << Cg << " group=" << group);
    CheckOptions o;
    o.inputs = {random_bytes({O, Cg, 3, 3}, i8, 13, -128, 127)};
    o.gpu = false;
    check_op("conv2d_int8_pack_weight", {{{O, Cg, 3, 3}, i8}},
             Attrs("conv2d_int8_pack_weight", {{"group", group}}), o);
  }
}

// The grouped reference against the float convolution's with the same groups, on the same
// integers (pad value 0): 2 filters per group and 16.
TEST(ConvInt8, GroupedReferenceAgreesWithTheFloatConvolution) {
  for (const auto& [C, O, group] : {std::tuple<int64_t, int64_t, int64_t>{64, 32, 16},
                                    std::tuple<int64_t, int64_t, int64_t>{8, 32, 2}}) {
    SCOPED_TRACE(::testing::Message() << "C=" << C << " O=" << O << " group=" << group);
    const int64_t H = 6, W = 7, Cg = C / group;
    runtime::NDArray x = random_bytes({1, C, H, W}, u8, 11, 0, 255);
    runtime::NDArray w = random_bytes({O, Cg, 3, 3}, i8, 12, -128, 127);
    runtime::NDArray xf = runtime::NDArray::empty({1, C, H, W}, runtime::dl_float32());
    runtime::NDArray wf = runtime::NDArray::empty({O, Cg, 3, 3}, runtime::dl_float32());
    for (int64_t i = 0; i < x.numel(); ++i) xf.data_as<float>()[i] = x.data_as<uint8_t>()[i];
    for (int64_t i = 0; i < w.numel(); ++i) wf.data_as<float>()[i] = w.data_as<int8_t>()[i];
    Case c{1, C, H, W, O, 3, {1, 2}, {1, 1}, {1, 1, 0, 1}, -1, group};
    runtime::NDArray got = lookup("conv2d_int8").reference({x, pack(w, group)}, conv_attrs(c))[0];
    runtime::NDArray want = lookup("conv2d").reference(
        {xf, wf}, Attrs("conv2d", {{"strides", c.strides}, {"pads", c.pads}, {"group", group}}))[0];
    ASSERT_EQ(got.shape(), want.shape());
    for (int64_t i = 0; i < got.numel(); ++i)
      ASSERT_EQ(got.data_as<int32_t>()[i], static_cast<int32_t>(want.data_as<float>()[i])) << i;
  }
}

// The reference itself against the float convolution's on the same integers (pad value 0).
TEST(ConvInt8, ReferenceAgreesWithTheFloatConvolution) {
  const int64_t C = 6, O = 5, H = 7, W = 6;
  runtime::NDArray x = random_bytes({1, C, H, W}, u8, 3, 0, 255);
  runtime::NDArray w = random_bytes({O, C, 3, 3}, i8, 4, -128, 127);
  runtime::NDArray xf = runtime::NDArray::empty({1, C, H, W}, runtime::dl_float32());
  runtime::NDArray wf = runtime::NDArray::empty({O, C, 3, 3}, runtime::dl_float32());
  for (int64_t i = 0; i < x.numel(); ++i) xf.data_as<float>()[i] = x.data_as<uint8_t>()[i];
  for (int64_t i = 0; i < w.numel(); ++i) wf.data_as<float>()[i] = w.data_as<int8_t>()[i];
  Case c{1, C, H, W, O, 3, {2, 1}, {1, 1}, {1, 0, 1, 2}, -1};
  runtime::NDArray got = lookup("conv2d_int8").reference({x, pack(w)}, conv_attrs(c))[0];
  runtime::NDArray want = lookup("conv2d").reference(
      {xf, wf}, Attrs("conv2d", {{"strides", c.strides}, {"pads", c.pads}}))[0];
  ASSERT_EQ(got.shape(), want.shape());
  for (int64_t i = 0; i < got.numel(); ++i)
    ASSERT_EQ(got.data_as<int32_t>()[i], static_cast<int32_t>(want.data_as<float>()[i])) << i;
}

// The compiled kernel of a layer, one group and grouped (ResNeXt's 4 channels per group), for a
// Zen 4 (AVX-512 VNNI; LLVM 15 does not know znver4: its features on a Zen 3) and an AVX2-only
// Zen 3, whatever the host: vpdpbusd where the CPU has it; on AVX2 with full-range weights the
// exact form, which LLVM computes with vpmaddwd.
TEST(ConvInt8, TheKernelUsesTheDotProductInstructionWhereTheCpuHasIt) {
  const std::string zen4 = "llvm -mcpu=znver3 -mattr=+avx512f,+avx512bw,+avx512vl,+avx512vnni";
  for (int64_t group : {1, 16}) {
    graph::Graph g;
    const int64_t C = 64, O = 64;
    graph::ValueId x = g.add_input("x", {{1, C, 14, 14}, u8});
    graph::ValueId w =
        g.add_constant("w", pack(random_bytes({O, C / group, 3, 3}, i8, 3, -128, 127), group));
    Case c{1, C, 14, 14, O, 3, {1, 1}, {1, 1}, {1, 1, 1, 1}, -1, group};
    g.add_output(g.add("conv", "conv2d_int8", conv_attrs(c), {x, w}));
    for (const auto& [cpu, vnni] :
         {std::pair{zen4, true}, std::pair{std::string("llvm -mcpu=znver3"), false}}) {
      SCOPED_TRACE(cpu + ", group " + std::to_string(group));
      graph::CompiledGraph cg = graph::CompiledGraph::build(g, Target::parse(cpu), {});
      std::string code = cg.assembly();
      // The summary says what the products cost where the CPU has no VNNI.
      EXPECT_EQ(cg.summary().find("this CPU has no VNNI") == std::string::npos, vnni)
          << cg.summary();
      EXPECT_EQ(code.find("vpdpbusd") != std::string::npos, vnni);
      if (!vnni) {
        EXPECT_NE(code.find("vpmaddwd"), std::string::npos);
      }
    }
  }
}

TEST(ConvInt8, Errors) {
  const OpDef& d = lookup("conv2d_int8");
  Attrs a("conv2d_int8", {{"channels", int64_t{16}}});
  testing::expect_has(testing::user_error([&] {
                        d.infer({{{1, 8, 5, 5}, i8}, {{1, 2, 3, 3, 16, 4}, i8}}, a);
                      }),
                      "input 'x' must be uint8 [N, C, H, W]");
  testing::expect_has(testing::user_error([&] {
                        d.infer({{{1, 8, 5, 5}, u8}, {{1, 3, 3, 3, 16, 4}, i8}}, a);
                      }),
                      "does not hold channels = 16 filters over the 8 input channels");
  testing::expect_has(testing::user_error([&] {
                        d.infer({{{1, 8, 2, 2}, u8}, {{1, 2, 3, 3, 16, 4}, i8}}, a);
                      }),
                      "is smaller than the dilated kernel 3");
  testing::expect_has(testing::user_error([&] {
                        d.infer({{{1, 8, 5, 5}, u8}, {{1, 2, 3, 3, 16, 4}, i8}, {{1}, u8}}, a);
                      }),
                      "input 'pad_value' must be a uint8 scalar");
  // Groups whose channels the blocks do not take.
  Attrs grouped("conv2d_int8", {{"channels", int64_t{24}}, {"group", int64_t{2}}});
  testing::expect_has(testing::user_error([&] {
                        d.infer({{{1, 16, 5, 5}, u8}, {{2, 2, 3, 3, 16, 4}, i8}}, grouped);
                      }),
                      "group = 2 with 8 input and 24 / 2 output channels per group is not "
                      "supported");
  testing::expect_has(testing::user_error([&] {
                        d.infer({{{1, 15, 5, 5}, u8}, {{2, 2, 3, 3, 16, 4}, i8}}, grouped);
                      }),
                      "has 15 channels, not divisible by attribute 'group' = 2");
  const OpDef& pack_def = lookup("conv2d_int8_pack_weight");
  testing::expect_has(testing::user_error([&] {
                        pack_def.infer({{{32, 6, 3, 3}, i8}},
                                       Attrs("conv2d_int8_pack_weight", {{"group", int64_t{4}}}));
                      }),
                      "group = 4 with 6 input and 32 / 4 output channels per group");
}

}  // namespace
}  // namespace anvil::ops
