// depthwise_conv2d_int8 and its weight packing against their references (exact: int32
// arithmetic) over the full uint8 and int8 ranges: 3x3 and 5x5 kernels, strides, dilation,
// asymmetric padding filled with a pad value, channels the blocks do not divide, batch 2, every
// config of a space; the reference against the grouped float convolution's on the same integers;
// and the errors.
#include <gtest/gtest.h>

#include "ops_testing.h"
#include "testing/errors.h"

namespace anvil::ops {
namespace {

using ir::DataType;
using ops_testing::check_op;
using ops_testing::CheckOptions;
using ops_testing::random_bytes;

const DataType u8 = DataType::UInt(8), i8 = DataType::Int(8);

runtime::NDArray pack(const runtime::NDArray& w) {
  return lookup("depthwise_conv2d_int8_pack_weight")
      .reference({w}, Attrs("depthwise_conv2d_int8_pack_weight", {}))[0];
}

struct Case {
  int64_t N, C, H, W, K;
  std::vector<int64_t> strides, dilations, pads;
  int pad_value;  // -1: no pad_value input
};

Attrs conv_attrs(const Case& c) {
  return Attrs("depthwise_conv2d_int8",
               {{"strides", c.strides}, {"dilations", c.dilations}, {"pads", c.pads}});
}

void check_case(const Case& c, uint32_t seed, Config config = {}) {
  runtime::NDArray x = random_bytes({c.N, c.C, c.H, c.W}, u8, seed, 0, 255);
  runtime::NDArray w = random_bytes({c.C, 1, c.K, c.K}, i8, seed + 1, -128, 127);
  CheckOptions o;
  o.inputs = {x, pack(w)};
  std::vector<TensorType> types = {{x.shape(), u8}, {o.inputs[1].shape(), i8}};
  if (c.pad_value >= 0) {
    runtime::NDArray v = runtime::NDArray::empty({}, to_dlpack(u8));
    v.data_as<uint8_t>()[0] = static_cast<uint8_t>(c.pad_value);
    o.inputs.push_back(v);
    types.push_back({{}, u8});
  }
  o.config = std::move(config);
  o.gpu = false;
  check_op("depthwise_conv2d_int8", types, conv_attrs(c), o);
}

TEST(DepthwiseInt8, MatchesTheReference) {
  uint32_t seed = 1;
  for (const Case& c : std::vector<Case>{
           {1, 32, 14, 14, 3, {1, 1}, {1, 1}, {1, 1, 1, 1}, 0},      // MobileNet's 3x3
           {1, 64, 15, 15, 3, {2, 2}, {1, 1}, {0, 0, 1, 1}, 17},     // stride 2, pads at the end
           {1, 21, 10, 9, 5, {1, 2}, {1, 1}, {2, 1, 2, 3}, 255},     // odd channels, 5x5
           {2, 16, 12, 12, 3, {1, 1}, {2, 2}, {2, 2, 2, 2}, -1}}) {  // dilation, batch 2
    SCOPED_TRACE(::testing::Message()
                 << "C=" << c.C << " K=" << c.K << " H=" << c.H << " W=" << c.W);
    check_case(c, seed);
    seed += 2;
  }
}

TEST(DepthwiseInt8, EveryConfigOfTheSpaceAgrees) {
  const Case c{1, 40, 9, 17, 3, {1, 1}, {1, 1}, {1, 1, 1, 1}, 7};
  std::vector<TensorType> types = {{{1, 40, 9, 17}, u8}, {{3, 3, 3, 16}, i8}, {{}, u8}};
  ConfigSpace space = lookup("depthwise_conv2d_int8").space(types, conv_attrs(c), Target::host());
  ASSERT_EQ(space.size(), 2u);
  for (int64_t tw : space[0].values)
    for (int64_t par : space[1].values) {
      SCOPED_TRACE(::testing::Message() << "tile_w=" << tw << " parallel=" << par);
      check_case(c, 9, {{"tile_w", tw}, {"parallel", par}});
    }
}

// The blocked form (alter_layout's: x and the output NCHW16c) against the reference, and the
// reference's blocked form against its plain one on the same values.
TEST(DepthwiseInt8, BlockedFormMatchesTheReferenceAndThePlainForm) {
  for (const Case& c : std::vector<Case>{
           {1, 32, 9, 9, 3, {1, 1}, {1, 1}, {1, 1, 1, 1}, 3},      // padded
           {1, 20, 8, 7, 3, {2, 2}, {1, 1}, {0, 0, 0, 0}, -1}}) {  // read in place, odd channels
    SCOPED_TRACE(::testing::Message() << "C=" << c.C << " K=" << c.K);
    const int64_t CB = (c.C + 15) / 16;
    runtime::NDArray xb = random_bytes({c.N, CB, c.H, c.W, 16}, u8, 5, 0, 255);
    runtime::NDArray w = random_bytes({c.C, 1, c.K, c.K}, i8, 6, -128, 127);
    Attrs a = conv_attrs(c);
    a.set("blocked", int64_t{1});
    CheckOptions o;
    o.inputs = {xb, pack(w)};
    std::vector<TensorType> types = {{xb.shape(), u8}, {o.inputs[1].shape(), i8}};
    if (c.pad_value >= 0) {
      runtime::NDArray v = runtime::NDArray::empty({}, to_dlpack(u8));
      v.data_as<uint8_t>()[0] = static_cast<uint8_t>(c.pad_value);
      o.inputs.push_back(v);
      types.push_back({{}, u8});
    }
    o.gpu = false;
    check_op("depthwise_conv2d_int8", types, a, o);
    runtime::NDArray x = runtime::NDArray::empty({c.N, c.C, c.H, c.W}, to_dlpack(u8));
    for (int64_t ch = 0; ch < c.C; ++ch)
      for (int64_t p = 0; p < c.H * c.W; ++p)
        x.data_as<uint8_t>()[ch * c.H * c.W + p] =
            xb.data_as<uint8_t>()[((ch / 16) * c.H * c.W + p) * 16 + ch % 16];
    std::vector<runtime::NDArray> plain_in = o.inputs;
    plain_in[0] = x;
    const OpDef& d = lookup("depthwise_conv2d_int8");
    runtime::NDArray want = d.reference(plain_in, conv_attrs(c))[0];
    runtime::NDArray got = d.reference(o.inputs, a)[0];
    const int64_t P = want.shape()[2] * want.shape()[3];
    ASSERT_EQ(got.numel(), CB * 16 * P);
    for (int64_t ch = 0; ch < CB * 16; ++ch)
      for (int64_t p = 0; p < P; ++p) {
        const int32_t g = got.data_as<int32_t>()[((ch / 16) * P + p) * 16 + ch % 16];
        ASSERT_EQ(g, ch < c.C ? want.data_as<int32_t>()[ch * P + p] : 0) << ch << " " << p;
      }
  }
}

// The reference itself against the grouped float convolution's on the same integers (pad 0).
TEST(DepthwiseInt8, ReferenceAgreesWithTheFloatConvolution) {
  const int64_t C = 19, H = 7, W = 6;
  runtime::NDArray x = random_bytes({1, C, H, W}, u8, 3, 0, 255);
  runtime::NDArray w = random_bytes({C, 1, 3, 3}, i8, 4, -128, 127);
  runtime::NDArray xf = runtime::NDArray::empty({1, C, H, W}, runtime::dl_float32());
  runtime::NDArray wf = runtime::NDArray::empty({C, 1, 3, 3}, runtime::dl_float32());
  for (int64_t i = 0; i < x.numel(); ++i) xf.data_as<float>()[i] = x.data_as<uint8_t>()[i];
  for (int64_t i = 0; i < w.numel(); ++i) wf.data_as<float>()[i] = w.data_as<int8_t>()[i];
  Case c{1, C, H, W, 3, {2, 1}, {1, 1}, {1, 0, 1, 2}, -1};
  runtime::NDArray got = lookup("depthwise_conv2d_int8").reference({x, pack(w)}, conv_attrs(c))[0];
  runtime::NDArray want = lookup("conv2d").reference(
      {xf, wf}, Attrs("conv2d", {{"strides", c.strides}, {"pads", c.pads}, {"group", C}}))[0];
  ASSERT_EQ(got.shape(), want.shape());
  for (int64_t i = 0; i < got.numel(); ++i)
    ASSERT_EQ(got.data_as<int32_t>()[i], static_cast<int32_t>(want.data_as<float>()[i])) << i;
}

TEST(DepthwiseInt8, Errors) {
  const OpDef& d = lookup("depthwise_conv2d_int8");
  Attrs a("depthwise_conv2d_int8", {});
  testing::expect_has(testing::user_error([&] {
                        d.infer({{{1, 8, 5, 5}, i8}, {{1, 3, 3, 16}, i8}}, a);
                      }),
                      "input 'x' must be uint8 [N, C, H, W]");
  testing::expect_has(testing::user_error([&] {
                        d.infer({{{1, 20, 5, 5}, u8}, {{1, 3, 3, 16}, i8}}, a);
                      }),
                      "does not hold the 20 channels of x");
  testing::expect_has(testing::user_error([&] {
                        d.infer({{{1, 8, 2, 2}, u8}, {{1, 3, 3, 16}, i8}}, a);
                      }),
                      "is smaller than the dilated kernel 3");
  testing::expect_has(
      testing::user_error([&] {
        lookup("depthwise_conv2d_int8_pack_weight").infer({{{8, 2, 3, 3}, i8}}, Attrs("p", {}));
      }),
      "input 'w' must be [C, 1, KH, KW]");
}

}  // namespace
}  // namespace anvil::ops
