// select_channels_nchwc: its reference against naive loops over NCHW (concat, slice, shuffle and
// chains of them, composed into one selection, on blocks that pad), the compiled kernel against
// the reference, and the diagnostics of runs that do not describe an output.
#include "anvil/ops/select_channels.h"

#include <gtest/gtest.h>

#include <random>

#include "ops_testing.h"
#include "testing/errors.h"

namespace anvil::ops {
namespace {

using ir::DataType;
using ops_testing::check_op;
using V = std::vector<int64_t>;

const DataType f32 = DataType::Float32();

// NCHW [1, C, H, W] with random contents, and its blocked form.
struct Image {
  runtime::NDArray nchw, blocked;
  int64_t channels = 0;
};

Image image(int64_t C, int64_t block, std::mt19937& rng) {
  Image im;
  im.channels = C;
  im.nchw = ops_testing::random_array({{1, C, 3, 5}, f32}, rng);
  Attrs to("layout_transform", {{"src_layout", std::string("NCHW")},
                                {"dst_layout", "NCHW" + std::to_string(block) + "c"}});
  im.blocked = lookup("layout_transform").reference({im.nchw}, to)[0];
  return im;
}

// The NCHW form of a blocked reference output with `channels` channels.
runtime::NDArray unblock(const runtime::NDArray& x, int64_t channels) {
  Attrs back("layout_transform", {{"src_layout", "NCHW" + std::to_string(x.shape()[4]) + "c"},
                                  {"dst_layout", std::string("NCHW")},
                                  {"channels", channels}});
  return lookup("layout_transform").reference({x}, back)[0];
}

// Channel c of an NCHW [1, C, 3, 5] tensor, as 15 floats.
std::vector<float> plane(const runtime::NDArray& x, int64_t c) {
  const float* p = x.data_as<float>() + c * 15;
  return std::vector<float>(p, p + 15);
}

runtime::NDArray select(const std::vector<Image>& in, const std::vector<ChannelRun>& runs,
                        int64_t channels, int64_t block) {
  std::vector<runtime::NDArray> xs;
  for (const Image& im : in) xs.push_back(im.blocked);
  runtime::NDArray y = lookup("select_channels_nchwc")
                           .reference(xs, select_channels_attrs(runs, channels, block))[0];
  // Padded channels are zero.
  const float* p = y.data_as<float>();
  for (int64_t i = 0; i < y.numel(); ++i)
    if ((i / (15 * block)) * block + i % block >= channels) {
      EXPECT_EQ(p[i], 0.0f) << i;
    }
  return unblock(y, channels);
}

// ShuffleNet's step: x1 = x[:C/2], x2 = x[C/2:], out = shuffle(concat(x1, f(x2)), 2); here f(x2)
// is a separate image y. Naive loops on NCHW against the composed selection, over blocks that
// pad (58 channels in blocks of 16) and mixed blocks.
TEST(SelectChannels, ConcatSliceShuffleMatchNaiveLoops) {
  std::mt19937 rng(7);
  for (auto [C, bx, by, bout] :
       std::vector<std::array<int64_t, 4>>{{116, 16, 16, 16}, {24, 8, 4, 16}, {10, 4, 16, 8}}) {
    SCOPED_TRACE(C);
    Image x = image(C, bx, rng), y = image(C / 2, by, rng);
    // x1 = slice of input 0; concat(x1, y) as runs over (x, y); then the shuffle composed in.
    std::optional<ChannelRun> x1 = slice_run(
        {1, C, 3, 5}, Attrs("slice", {{"starts", V{0}}, {"ends", V{C / 2}}, {"axes", V{1}}}));
    ASSERT_TRUE(x1);
    std::optional<std::vector<ChannelRun>> cat =
        compose_runs(concat_runs({C / 2, C / 2}), 0, {*x1}, 2);
    ASSERT_TRUE(cat);
    for (ChannelRun& r : *cat) r.input = r.input == 2 ? 0 : 1;  // (x, y)
    std::optional<std::vector<ChannelRun>> out = compose_runs(shuffle_runs(C, 2), 0, *cat, 0);
    ASSERT_TRUE(out);
    runtime::NDArray got = select({x, y}, *out, C, bout);
    for (int64_t c = 0; c < C; ++c) {
      // concat(x1, y)[k] is x[k] below C/2, else y[k - C/2]; shuffle: out[j*2 + r] = cat[r*C/2 + j]
      int64_t k = (c % 2) * (C / 2) + c / 2;
      std::vector<float> want = k < C / 2 ? plane(x.nchw, k) : plane(y.nchw, k - C / 2);
      EXPECT_EQ(plane(got, c), want) << "channel " << c;
    }
    // The second half of the shuffled tensor (the next block's x2), composed from the same runs.
    std::optional<ChannelRun> x2 = slice_run(
        {1, C, 3, 5}, Attrs("slice", {{"starts", V{C / 2}}, {"ends", V{C}}, {"axes", V{1}}}));
    ASSERT_TRUE(x2);
    std::optional<std::vector<ChannelRun>> second = compose_runs({*x2}, 0, *out, 0);
    ASSERT_TRUE(second);
    runtime::NDArray half = select({x, y}, *second, C / 2, 16);
    for (int64_t c = 0; c < C / 2; ++c) EXPECT_EQ(plane(half, c), plane(got, C / 2 + c)) << c;
    // The compiled kernel agrees with the reference.
    ops_testing::CheckOptions exact;
    exact.tol = 0;
    check_op("select_channels_nchwc", {{x.blocked.shape(), f32}, {y.blocked.shape(), f32}},
             select_channels_attrs(*out, C, bout), exact);
  }
}

// A slice with a step, and the shuffle of three groups.
TEST(SelectChannels, SteppedSliceAndThreeGroups) {
  std::mt19937 rng(11);
  Image x = image(21, 8, rng);
  std::optional<ChannelRun> every3 = slice_run(
      {1, 21, 3, 5},
      Attrs("slice", {{"starts", V{1}}, {"ends", V{21}}, {"axes", V{1}}, {"steps", V{3}}}));
  ASSERT_TRUE(every3);
  runtime::NDArray got = select({x}, {*every3}, 7, 4);
  for (int64_t c = 0; c < 7; ++c) EXPECT_EQ(plane(got, c), plane(x.nchw, 1 + 3 * c));
  runtime::NDArray shuffled = select({x}, shuffle_runs(21, 3), 21, 16);
  for (int64_t c = 0; c < 21; ++c)
    EXPECT_EQ(plane(shuffled, c), plane(x.nchw, (c % 3) * 7 + c / 3)) << c;
  // A slice of H or W is not a channel selection.
  EXPECT_FALSE(
      slice_run({1, 21, 3, 5}, Attrs("slice", {{"starts", V{1}}, {"ends", V{2}}, {"axes", V{2}}})));
  ops_testing::CheckOptions exact;
  exact.tol = 0;
  check_op("select_channels_nchwc", {{x.blocked.shape(), f32}},
           select_channels_attrs(shuffle_runs(21, 3), 21, 16), exact);
}

TEST(SelectChannels, RunsThatDoNotDescribeTheOutputAreRefused) {
  auto error = [](std::vector<ChannelRun> runs, int64_t channels) {
    return testing::user_error([&] {
      lookup("select_channels_nchwc")
          .infer({{{1, 2, 3, 3, 8}, f32}}, select_channels_attrs(runs, channels, 8));
    });
  };
  EXPECT_NE(error({{0, 0, 1, 0, 1, 4}, {0, 3, 1, 4, 1, 2}}, 5)
                .find("output channel 3 is written "
                      "twice"),
            std::string::npos);
  EXPECT_NE(error({{0, 0, 1, 0, 1, 4}}, 5).find("output channel 4 is not written"),
            std::string::npos);
  EXPECT_NE(error({{0, 0, 1, 10, 1, 8}}, 8).find("reads channel 17 of input 0"), std::string::npos);
  EXPECT_NE(error({{1, 0, 1, 0, 1, 8}}, 8).find("reads input 1 of 1"), std::string::npos);
}

}  // namespace
}  // namespace anvil::ops
