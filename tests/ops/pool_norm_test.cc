// Pooling and normalization operators against their double-precision references, on random
// shapes and attributes (fixed seeds), and their diagnostics.
//
// Tolerances: max pools are exact (tol 0: the result is one of the inputs); averages and
// normalizations compare with |got - want| <= 1e-5 * (1 + |want|).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <sstream>

#include "anvil/codegen/llvm/codegen_llvm.h"
#include "anvil/lower/lower.h"
#include "ops_testing.h"
#include "testing/errors.h"

namespace anvil::ops {
namespace {

using ir::DataType;
using ops_testing::check_op;
using ops_testing::CheckOptions;

const DataType f32 = DataType::Float32();

int64_t draw(std::mt19937& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

// Output size of one pooled dimension by the ONNX rule, computed independently of the op.
int64_t onnx_out(int64_t in, int64_t k, int64_t s, int64_t pb, int64_t pe, int64_t d, bool ceil) {
  double span = static_cast<double>(in + pb + pe - ((k - 1) * d + 1)) / static_cast<double>(s);
  int64_t out = static_cast<int64_t>(ceil ? std::ceil(span) : std::floor(span)) + 1;
  if (ceil && (out - 1) * s >= in + pb) --out;
  return out;
}

Attrs pool_attrs(const std::string& op, std::vector<int64_t> k, std::vector<int64_t> s,
                 std::vector<int64_t> p, std::vector<int64_t> d, int64_t ceil, int64_t cip) {
  Attrs a(op, {{"kernel_shape", k}, {"strides", s}, {"pads", p}, {"ceil_mode", ceil}});
  if (op.rfind("avg_pool2d", 0) == 0) a.set("count_include_pad", cip);
  if (!d.empty()) a.set("dilations", d);
  return a;
}

std::string describe(const Attrs& a, const std::vector<int64_t>& shape) {
  std::ostringstream os;
  os << a.op() << " x=" << to_string(TensorType{shape, f32});
  for (const auto& [name, v] : a.values()) {
    os << " " << name << "=";
    if (auto* i = std::get_if<int64_t>(&v)) os << *i;
    if (auto* l = std::get_if<std::vector<int64_t>>(&v)) {
      for (int64_t x : *l) os << x << ",";
    }
  }
  return os.str();
}

// Random pools: odd sizes, kernels larger than strides, padding on one side only, ceil_mode,
// count_include_pad, dilations; each checked against the reference and the ONNX size rule.
void random_pools(const std::string& op, uint32_t seed, int trials) {
  std::mt19937 rng(seed);
  for (int t = 0; t < trials; ++t) {
    std::vector<int64_t> shape = {draw(rng, 1, 2), draw(rng, 1, 5), draw(rng, 1, 13),
                                  draw(rng, 1, 23)};
    std::vector<int64_t> k(2), s(2), p(4), d(2);
    for (int i = 0; i < 2; ++i) {
      size_t ui = static_cast<size_t>(i);
      k[ui] = draw(rng, 1, 4);
      s[ui] = draw(rng, 1, 3);
      d[ui] = draw(rng, 0, 3) == 0 ? draw(rng, 2, 3) : 1;
      // Padding below the kernel extent, often on one side only.
      int64_t extent = (k[ui] - 1) * d[ui] + 1;
      int mode = static_cast<int>(draw(rng, 0, 3));
      p[ui] = mode == 1 || mode == 3 ? draw(rng, 0, k[ui] - 1) : 0;
      p[ui + 2] = mode == 2 || mode == 3 ? draw(rng, 0, k[ui] - 1) : 0;
      // Keep the kernel inside the padded input.
      int64_t padded = shape[2 + ui] + p[ui] + p[ui + 2];
      if (extent > padded) p[ui + 2] += extent - padded;
    }
    int64_t ceil = draw(rng, 0, 1), cip = draw(rng, 0, 1);
    Attrs a = pool_attrs(op, k, s, p, d, ceil, cip);
    SCOPED_TRACE(describe(a, shape));
    std::vector<TensorType> out = lookup(op).infer({{shape, f32}}, a);
    EXPECT_EQ(out[0].shape[2], onnx_out(shape[2], k[0], s[0], p[0], p[2], d[0], ceil == 1));
    EXPECT_EQ(out[0].shape[3], onnx_out(shape[3], k[1], s[1], p[1], p[3], d[1], ceil == 1));
    CheckOptions o;
    o.seed = seed + static_cast<uint32_t>(t);
    if (op == "max_pool2d") o.tol = 0;  // a max is one of its inputs: exact
    check_op(op, {{shape, f32}}, a, o);
  }
}

TEST(Pool, MaxRandom) {
  random_pools("max_pool2d", 11, 40);
}

TEST(Pool, AvgRandom) {
  random_pools("avg_pool2d", 23, 40);
}

// Wide enough for the vectorized and parallel schedule, with a tail.
TEST(Pool, WideMapsUseTheVectorSchedule) {
  for (const char* op : {"max_pool2d", "avg_pool2d"}) {
    check_op(op, {{{2, 8, 57, 61}, f32}}, pool_attrs(op, {3, 3}, {2, 2}, {1, 1, 0, 1}, {}, 1, 0));
    check_op(op, {{{1, 16, 40, 40}, f32}}, pool_attrs(op, {2, 2}, {1, 1}, {0, 0, 1, 1}, {}, 0, 1));
  }
  // ResNet-18's stem pool.
  check_op("max_pool2d", {{{1, 64, 112, 112}, f32}},
           pool_attrs("max_pool2d", {3, 3}, {2, 2}, {1, 1, 1, 1}, {}, 0, 0));
  check_op("max_pool2d", {{{1, 4, 33, 35}, f32}},
           pool_attrs("max_pool2d", {3, 2}, {1, 2}, {2, 0, 0, 1}, {2, 3}, 1, 0));
}

TEST(Pool, OneByOneMaps) {
  for (const char* op : {"max_pool2d", "avg_pool2d"}) {
    check_op(op, {{{2, 3, 1, 1}, f32}}, pool_attrs(op, {1, 1}, {1, 1}, {0, 0, 0, 0}, {}, 0, 0));
    // A 1x1 map under a 2x2 kernel with padding on the bottom/right only.
    Attrs a = pool_attrs(op, {2, 2}, {2, 2}, {0, 0, 1, 1}, {}, 1, 1);
    EXPECT_EQ(lookup(op).infer({{{1, 2, 1, 1}, f32}}, a)[0].shape,
              (std::vector<int64_t>{1, 2, 1, 1}));
    check_op(op, {{{1, 2, 1, 1}, f32}}, a);
  }
}

// The ceil_mode rule: with in = 5, k = 2, s = 2, pads 1 + 1: floor gives 3; ceil would give 4,
// but the fourth window starts at 6 - 1 = 5, past the input and left padding, so it is dropped.
TEST(Pool, CeilModeDropsWindowsStartingInTheRightPadding) {
  Attrs floor_a = pool_attrs("max_pool2d", {2, 2}, {2, 2}, {1, 1, 1, 1}, {}, 0, 0);
  Attrs ceil_a = pool_attrs("max_pool2d", {2, 2}, {2, 2}, {1, 1, 1, 1}, {}, 1, 0);
  EXPECT_EQ(lookup("max_pool2d").infer({{{1, 1, 5, 5}, f32}}, floor_a)[0].shape[2], 3);
  EXPECT_EQ(lookup("max_pool2d").infer({{{1, 1, 5, 5}, f32}}, ceil_a)[0].shape[2], 3);
  // in = 6, k = 3, s = 2, no pads: floor 2, ceil 3 (the last window starts at 4, inside).
  Attrs ceil_b = pool_attrs("avg_pool2d", {3, 3}, {2, 2}, {0, 0, 0, 0}, {}, 1, 0);
  EXPECT_EQ(lookup("avg_pool2d").infer({{{1, 1, 6, 6}, f32}}, ceil_b)[0].shape[2], 3);
  check_op("avg_pool2d", {{{1, 1, 6, 6}, f32}}, ceil_b);
  check_op("max_pool2d", {{{1, 1, 5, 5}, f32}}, ceil_a);
}

// count_include_pad: a 3x3 average over a 3x3 map of ones with pads 1 counts 4 of 9 at a corner
// (4/9 with count_include_pad, 1 without).
TEST(Pool, CountIncludePadOnKnownValues) {
  runtime::NDArray ones = testing::array({1, 1, 3, 3}, f32);
  for (int i = 0; i < 9; ++i) ones.data_as<float>()[i] = 1.0f;
  for (int64_t cip : {0, 1}) {
    Attrs a = pool_attrs("avg_pool2d", {3, 3}, {1, 1}, {1, 1, 1, 1}, {}, 0, cip);
    std::vector<runtime::NDArray> ref = lookup("avg_pool2d").reference({ones}, a);
    EXPECT_FLOAT_EQ(ref[0].data_as<float>()[0], cip ? 4.0f / 9.0f : 1.0f);
    EXPECT_FLOAT_EQ(ref[0].data_as<float>()[1], cip ? 6.0f / 9.0f : 1.0f);
    CheckOptions o;
    o.inputs = {ones};
    check_op("avg_pool2d", {{{1, 1, 3, 3}, f32}}, a, o);
  }
}

// Padding never wins a max: all-negative inputs stay negative next to the padding.
TEST(Pool, PaddingNeverWinsAMax) {
  CheckOptions o;
  o.lo = -3.0;
  o.hi = -1.0;
  check_op("max_pool2d", {{{1, 3, 7, 9}, f32}},
           pool_attrs("max_pool2d", {3, 3}, {2, 2}, {2, 2, 2, 2}, {}, 1, 0), o);
  Attrs a = pool_attrs("max_pool2d", {3, 3}, {1, 1}, {1, 1, 1, 1}, {}, 0, 0);
  runtime::NDArray x = testing::array({1, 1, 2, 2}, f32);
  for (int i = 0; i < 4; ++i) x.data_as<float>()[i] = -1.0f - static_cast<float>(i);
  std::vector<runtime::NDArray> ref = lookup("max_pool2d").reference({x}, a);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(ref[0].data_as<float>()[i], -1.0f);
}

// With dilations a window can hold only padding (H = 1, kernel 2, dilation 3, pads 2 + 1: the
// window at -2 reads -2 and 1): max gives -inf, an average that excludes padding gives 0.
TEST(Pool, WindowsOfPaddingOnly) {
  Attrs max_a = pool_attrs("max_pool2d", {2, 1}, {1, 1}, {2, 0, 1, 0}, {3, 1}, 0, 0);
  Attrs avg_a = pool_attrs("avg_pool2d", {2, 1}, {1, 1}, {2, 0, 1, 0}, {3, 1}, 0, 0);
  runtime::NDArray x = testing::array({1, 1, 1, 3}, f32);
  for (int i = 0; i < 3; ++i) x.data_as<float>()[i] = 2.0f + static_cast<float>(i);
  std::vector<runtime::NDArray> m = lookup("max_pool2d").reference({x}, max_a);
  std::vector<runtime::NDArray> v = lookup("avg_pool2d").reference({x}, avg_a);
  ASSERT_EQ(m[0].shape(), (std::vector<int64_t>{1, 1, 1, 3}));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(m[0].data_as<float>()[i], -std::numeric_limits<float>::infinity());
    EXPECT_EQ(v[0].data_as<float>()[i], 0.0f);
  }
  CheckOptions o;
  o.inputs = {x};
  o.tol = 0;
  check_op("max_pool2d", {{{1, 1, 1, 3}, f32}}, max_a, o);
  check_op("avg_pool2d", {{{1, 1, 1, 3}, f32}}, avg_a, o);
  // With count_include_pad the same windows average zeros over their padded positions.
  Attrs cip = pool_attrs("avg_pool2d", {2, 1}, {1, 1}, {2, 0, 1, 0}, {3, 1}, 0, 1);
  check_op("avg_pool2d", {{{1, 1, 1, 3}, f32}}, cip, o);
}

TEST(Pool, NaNPropagatesThroughMax) {
  runtime::NDArray x = testing::array({1, 1, 4, 4}, f32);
  for (int i = 0; i < 16; ++i) x.data_as<float>()[i] = static_cast<float>(i);
  x.data_as<float>()[5] = std::numeric_limits<float>::quiet_NaN();
  CheckOptions o;
  o.inputs = {x};
  check_op("max_pool2d", {{{1, 1, 4, 4}, f32}},
           pool_attrs("max_pool2d", {2, 2}, {2, 2}, {0, 0, 0, 0}, {}, 0, 0), o);
}

TEST(Pool, Global) {
  std::mt19937 rng(5);
  for (int t = 0; t < 8; ++t) {
    std::vector<int64_t> shape = {draw(rng, 1, 3), draw(rng, 1, 17), draw(rng, 1, 15),
                                  draw(rng, 1, 15)};
    SCOPED_TRACE(to_string(TensorType{shape, f32}));
    for (const char* op : {"global_max_pool2d", "global_avg_pool2d"}) {
      EXPECT_EQ(lookup(op).infer({{shape, f32}}, Attrs(op, {}))[0].shape,
                (std::vector<int64_t>{shape[0], shape[1], 1, 1}));
      CheckOptions o;
      o.seed = static_cast<uint32_t>(t);
      check_op(op, {{shape, f32}}, Attrs(op, {}), o);
    }
  }
  // Large enough for the parallel schedule.
  check_op("global_avg_pool2d", {{{2, 64, 28, 28}, f32}}, Attrs("global_avg_pool2d", {}));
  check_op("global_max_pool2d", {{{2, 64, 28, 28}, f32}}, Attrs("global_max_pool2d", {}));
}

TEST(Pool, Patterns) {
  for (const char* op : {"max_pool2d", "avg_pool2d", "global_max_pool2d", "global_avg_pool2d"})
    EXPECT_EQ(lookup(op).pattern, Pattern::kComplexOutFusable) << op;
  EXPECT_EQ(lookup("batch_norm").pattern, Pattern::kInjective);
  EXPECT_EQ(lookup("layer_norm").pattern, Pattern::kReduction);
  EXPECT_EQ(lookup("instance_norm").pattern, Pattern::kReduction);
}

// ---- pools on NCHW[x]c

// [N, C/b, H, W, b] -> [N, C/b * b, H, W]: the NCHW tensor a blocked one holds.
runtime::NDArray unblock(const runtime::NDArray& x) {
  const std::vector<int64_t>& s = x.shape();
  int64_t N = s[0], CB = s[1], H = s[2], W = s[3], B = s[4];
  runtime::NDArray y = testing::array({N, CB * B, H, W}, f32);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < CB * B; ++c)
      for (int64_t i = 0; i < H * W; ++i)
        y.data_as<float>()[(n * CB * B + c) * H * W + i] =
            x.data_as<float>()[((n * CB + c / B) * H * W + i) * B + c % B];
  return y;
}

// The blocked op checked twice: compiled against its reference (check_op), and its reference
// against the NCHW op's reference on the same tensor unblocked (the independent oracle).
void check_blocked_pool(const std::string& op, const std::vector<int64_t>& shape, const Attrs& a,
                        uint32_t seed, const Config& config = {}) {
  std::string nchw = op.substr(0, op.size() - 6);
  Attrs na(nchw, a.values());
  std::vector<int64_t> ns = {shape[0], shape[1] * shape[4], shape[2], shape[3]};
  std::vector<TensorType> bt = lookup(op).infer({{shape, f32}}, a);
  std::vector<TensorType> nt = lookup(nchw).infer({{ns, f32}}, na);
  EXPECT_EQ(bt[0].shape,
            (std::vector<int64_t>{shape[0], shape[1], nt[0].shape[2], nt[0].shape[3], shape[4]}));
  std::mt19937 rng(seed);
  runtime::NDArray x = ops_testing::random_array({shape, f32}, rng);
  runtime::NDArray want = lookup(nchw).reference({unblock(x)}, na)[0];
  runtime::NDArray got = unblock(lookup(op).reference({x}, a)[0]);
  ASSERT_EQ(got.shape(), want.shape());
  for (int64_t i = 0; i < want.numel(); ++i)
    ASSERT_EQ(got.data_as<float>()[i], want.data_as<float>()[i]) << op << " element " << i;
  CheckOptions o;
  o.inputs = {x};
  o.config = config;
  if (op.rfind("max", 0) == 0 || op.rfind("global_max", 0) == 0) o.tol = 0;
  check_op(op, {{shape, f32}}, a, o);
}

// The plain compiled forms of 3-D convolutions and pools (window_nd.cc) against their references:
// padding, strides, dilations, groups, bias, ceil_mode and count_include_pad.
TEST(WindowNd, Conv3dCompiled) {
  using V = std::vector<int64_t>;
  struct Case {
    V x, w;
    bool bias;
    V strides, dilations, pads;
    int64_t group;
  };
  for (const Case& c : std::vector<Case>{
           {{1, 2, 4, 5, 6}, {3, 2, 2, 3, 2}, false, {1, 1, 1}, {1, 1, 1}, {0, 0, 0, 0, 0, 0}, 1},
           {{2, 4, 5, 5, 5}, {4, 2, 3, 3, 3}, true, {2, 1, 2}, {1, 2, 1}, {1, 0, 2, 1, 2, 0}, 2},
           {{1, 3, 6, 4, 5}, {6, 1, 3, 2, 3}, true, {1, 2, 1}, {2, 1, 1}, {2, 1, 1, 2, 0, 1}, 3}}) {
    std::vector<TensorType> in = {{c.x, f32}, {c.w, f32}};
    if (c.bias) in.push_back({{c.w[0]}, f32});
    check_op("conv3d", in,
             Attrs("conv3d", {{"strides", c.strides},
                              {"dilations", c.dilations},
                              {"pads", c.pads},
                              {"group", c.group}}));
  }
}

// Transposed 1-D and 3-D convolutions (gathered: an output reads the taps whose stride divides
// its distance): strides, dilations, asymmetric pads, output padding, groups and bias.
TEST(WindowNd, TransposedConv1dAnd3dCompiled) {
  using V = std::vector<int64_t>;
  struct Case {
    const char* op;
    V x, w;
    bool bias;
    V strides, dilations, pads, output_padding;
    int64_t group;
  };
  for (const Case& c : std::vector<Case>{
           {"conv1d_transpose", {1, 1, 3}, {1, 2, 3}, false, {1}, {1}, {0, 0}, {0}, 1},
           {"conv1d_transpose", {2, 4, 7}, {4, 3, 4}, true, {3}, {2}, {1, 2}, {1}, 2},
           {"conv3d_transpose",
            {1, 2, 3, 4, 3},
            {2, 3, 2, 3, 2},
            true,
            {2, 1, 3},
            {1, 2, 1},
            {1, 0, 0, 0, 1, 1},
            {1, 0, 2},
            1},
           {"conv3d_transpose",
            {1, 4, 2, 3, 3},
            {4, 1, 3, 2, 2},
            false,
            {1, 2, 2},
            {1, 1, 2},
            {0, 1, 1, 2, 0, 0},
            {0, 1, 1},
            4}}) {
    SCOPED_TRACE(c.op);
    std::vector<TensorType> in = {{c.x, f32}, {c.w, f32}};
    if (c.bias) in.push_back({{c.w[1] * c.group}, f32});
    check_op(c.op, in,
             Attrs(c.op, {{"strides", c.strides},
                          {"dilations", c.dilations},
                          {"pads", c.pads},
                          {"output_padding", c.output_padding},
                          {"group", c.group}}));
  }
}

TEST(WindowNd, Pool3dCompiled) {
  using V = std::vector<int64_t>;
  for (const char* op : {"max_pool3d", "avg_pool3d"}) {
    bool avg = std::string(op) == "avg_pool3d";
    for (int64_t ceil : {0, 1}) {
      for (int64_t include : {0, 1}) {
        if (!avg && include) continue;
        SCOPED_TRACE(std::string(op) + " ceil " + std::to_string(ceil) + " include " +
                     std::to_string(include));
        std::map<std::string, AttrValue> a = {{"kernel_shape", V{3, 2, 3}},
                                              {"strides", V{2, 2, 1}},
                                              {"pads", V{1, 0, 1, 1, 1, 0}},
                                              {"ceil_mode", ceil}};
        if (avg) a["count_include_pad"] = include;
        check_op(op, {{{2, 3, 6, 5, 4}, f32}}, Attrs(op, a));
      }
    }
  }
}

TEST(PoolNchwc, RandomWindowsMatchNchw) {
  std::mt19937 rng(71);
  for (int t = 0; t < 24; ++t) {
    const char* op = t % 2 ? "avg_pool2d_nchwc" : "max_pool2d_nchwc";
    std::vector<int64_t> shape = {draw(rng, 1, 2), draw(rng, 1, 3), draw(rng, 1, 12),
                                  draw(rng, 1, 21), t % 3 == 0 ? 16 : (t % 3 == 1 ? 8 : 3)};
    std::vector<int64_t> k(2), s(2), p(4), d(2);
    for (size_t i = 0; i < 2; ++i) {
      k[i] = draw(rng, 1, 3);
      s[i] = draw(rng, 1, 2);
      d[i] = t % 5 == 4 ? 2 : 1;
      p[i] = draw(rng, 0, k[i] - 1);
      p[i + 2] = draw(rng, 0, k[i] - 1);
      int64_t extent = (k[i] - 1) * d[i] + 1, padded = shape[2 + i] + p[i] + p[i + 2];
      if (extent > padded) p[i + 2] += extent - padded;
    }
    Attrs a = pool_attrs(op, k, s, p, d, draw(rng, 0, 1), draw(rng, 0, 1));
    SCOPED_TRACE(describe(a, shape));
    check_blocked_pool(op, shape, a, 200 + static_cast<uint32_t>(t));
  }
}

// The tuning space of a blocked pool: every point (columns per block, parallel or not) against
// the reference, the rule's point first; global pools have none.
TEST(PoolNchwc, EveryConfigOfTheSpaceAgrees) {
  Target target = Target::host();
  std::vector<int64_t> shape = {1, 2, 9, 13, 16};
  uint32_t seed = 400;
  for (const char* op : {"max_pool2d_nchwc", "avg_pool2d_nchwc"}) {
    Attrs a = pool_attrs(op, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}, 0, 0);
    ConfigSpace space = lookup(op).space({{shape, f32}}, a, target);
    ASSERT_EQ(space.size(), 2u);
    EXPECT_EQ(space[0].name, "ow_block");
    EXPECT_EQ(space[1].name, "parallel");
    EXPECT_EQ(space[0].values.size(), 7u);  // the 7 output columns, each a block width
    for (int64_t cols : space[0].values)
      for (int64_t par : space[1].values) {
        SCOPED_TRACE(std::string(op) + " ow_block=" + std::to_string(cols) +
                     " parallel=" + std::to_string(par));
        check_blocked_pool(op, shape, a, seed++, {{"ow_block", cols}, {"parallel", par}});
      }
  }
  EXPECT_TRUE(lookup("global_avg_pool2d_nchwc")
                  .space({{{1, 2, 7, 7, 16}, f32}}, Attrs("global_avg_pool2d_nchwc", {}), target)
                  .empty());
}

// ResNet-18's stem pool on 64 channels in blocks of 16 (parallel rows, 8-column blocks with a
// tail), and a wide map with padding on one side.
TEST(PoolNchwc, ResNetStemAndWideMaps) {
  check_blocked_pool("max_pool2d_nchwc", {1, 4, 112, 112, 16},
                     pool_attrs("max_pool2d_nchwc", {3, 3}, {2, 2}, {1, 1, 1, 1}, {}, 0, 0), 1);
  check_blocked_pool("avg_pool2d_nchwc", {2, 2, 30, 37, 8},
                     pool_attrs("avg_pool2d_nchwc", {2, 3}, {1, 2}, {0, 1, 1, 0}, {}, 1, 0), 2);
}

TEST(PoolNchwc, GlobalMatchesNchw) {
  std::mt19937 rng(9);
  for (int t = 0; t < 6; ++t) {
    std::vector<int64_t> shape = {draw(rng, 1, 2), draw(rng, 1, 4), draw(rng, 1, 9),
                                  draw(rng, 1, 9), t % 2 ? 16 : 4};
    for (const char* op : {"global_max_pool2d_nchwc", "global_avg_pool2d_nchwc"}) {
      SCOPED_TRACE(std::string(op) + " " + to_string(TensorType{shape, f32}));
      check_blocked_pool(op, shape, Attrs(op, {}), 300 + static_cast<uint32_t>(t));
    }
  }
  // ResNet-18's last pool, and one large enough for the parallel schedule.
  check_blocked_pool("global_avg_pool2d_nchwc", {1, 32, 7, 7, 16},
                     Attrs("global_avg_pool2d_nchwc", {}), 4);
  check_blocked_pool("global_max_pool2d_nchwc", {2, 8, 28, 28, 16},
                     Attrs("global_max_pool2d_nchwc", {}), 5);
}

// A pool with an elementwise epilogue (what fusion makes of pool -> add -> relu), scheduled by
// the pool's schedule on the last stage, against the references composed; with AVX-512 (the
// host) and AVX2 (4-column blocks, two vectors per 16-channel block).
TEST(PoolNchwc, EpilogueIsInlined) {
  for (const char* op : {"max_pool2d_nchwc", "global_avg_pool2d_nchwc"}) {
    for (const char* tstr : {"", "llvm -mattr=-avx512f -vector-bits=256"}) {
      SCOPED_TRACE(std::string(op) + " " + tstr);
      bool global = std::string(op).rfind("global", 0) == 0;
      Attrs a = global ? Attrs(op, {}) : pool_attrs(op, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}, 0, 0);
      std::vector<int64_t> xs = {1, 3, 19, 23, 16};
      te::Tensor x = te::placeholder(to_exprs(xs), f32, "x");
      te::Tensor p = lookup(op).compute({x}, a)[0];
      te::Tensor y = te::placeholder(p->shape, f32, "y");
      te::Tensor sum = lookup("add").compute({p, y}, Attrs("add", {}))[0];
      te::Tensor out = lookup("relu").compute({sum}, Attrs("relu", {}))[0];
      te::Schedule s({out});
      Target target = *tstr ? Target::parse(tstr) : Target::host();
      lookup(op).schedule_x86(s, {out}, target, {});
      auto module = codegen::LLVMModule::compile({lower(s, {x, y, out}, "k")}, target);
      std::mt19937 rng(3);
      runtime::NDArray xa = ops_testing::random_array({xs, f32}, rng);
      runtime::NDArray ya = ops_testing::random_array({shape_of(p), f32}, rng);
      runtime::NDArray got = testing::array(shape_of(p), f32);
      ASSERT_EQ(testing::call(module->get_function("k"), {xa.get(), ya.get(), got.get()}), 0)
          << AnvilGetLastError();
      runtime::NDArray pooled = lookup(op).reference({xa}, a)[0];
      for (int64_t i = 0; i < got.numel(); ++i) {
        double want = std::max(0.0, double(pooled.data_as<float>()[i]) + ya.data_as<float>()[i]);
        ASSERT_NEAR(got.data_as<float>()[i], want, 1e-5 * (1 + std::abs(want))) << i;
      }
    }
  }
}

TEST(PoolNchwc, Errors) {
  Attrs a = pool_attrs("max_pool2d_nchwc", {2, 2}, {1, 1}, {0, 0, 0, 0}, {}, 0, 0);
  EXPECT_NE(testing::user_error([&] {
              lookup("max_pool2d_nchwc").infer({{{1, 16, 5, 5}, f32}}, a);
            })
                .find("max_pool2d_nchwc: input 'x' must be 5-d (NCHW[x]c: [N, C/b, H, W, b]), got "
                      "float32[1, 16, 5, 5]"),
            std::string::npos);
  EXPECT_NE(testing::user_error([&] {
              lookup("global_avg_pool2d_nchwc")
                  .infer({{{1, 16, 5, 5}, f32}}, Attrs("global_avg_pool2d_nchwc", {}));
            }).find("global_avg_pool2d_nchwc: input 'x' must be 5-d"),
            std::string::npos);
  for (const char* op : {"max_pool2d_nchwc", "avg_pool2d_nchwc", "global_max_pool2d_nchwc",
                         "global_avg_pool2d_nchwc"})
    EXPECT_EQ(lookup(op).pattern, Pattern::kComplexOutFusable) << op;
}

// ---- normalizations

std::vector<TensorType> vectors(int n, int64_t c) {
  return std::vector<TensorType>(static_cast<size_t>(n), TensorType{{c}, f32});
}

TEST(Norm, BatchNormRandom) {
  std::mt19937 rng(31);
  for (int t = 0; t < 10; ++t) {
    int rank = static_cast<int>(draw(rng, 2, 4));
    std::vector<int64_t> shape = {draw(rng, 1, 3), draw(rng, 1, 19)};
    for (int d = 2; d < rank; ++d) shape.push_back(draw(rng, 1, 11));
    double eps = t % 3 == 0 ? 1e-5 : (t % 3 == 1 ? 1e-3 : 0.1);
    Attrs a("batch_norm", {});
    if (t % 3) a.set("epsilon", eps);
    std::vector<TensorType> types = {{shape, f32}};
    for (const TensorType& v : vectors(4, shape[1])) types.push_back(v);
    SCOPED_TRACE(to_string(types[0]) + " eps=" + std::to_string(eps));
    // var must be non-negative: variances drawn in [0, 2] for the last input.
    CheckOptions o;
    o.seed = static_cast<uint32_t>(100 + t);
    std::mt19937 in_rng(o.seed);
    for (size_t i = 0; i < 4; ++i) o.inputs.push_back(ops_testing::random_array(types[i], in_rng));
    o.inputs.push_back(ops_testing::random_array(types[4], in_rng, 0.0, 2.0));
    check_op("batch_norm", types, a, o);
  }
  // Inputs in [0, 1] (variances included), large enough for the vector and parallel schedule.
  CheckOptions positive;
  positive.lo = 0.0;
  check_op("batch_norm",
           {{{2, 32, 20, 20}, f32}, {{32}, f32}, {{32}, f32}, {{32}, f32}, {{32}, f32}},
           Attrs("batch_norm", {}), positive);
}

TEST(Norm, LayerNormRandom) {
  std::mt19937 rng(41);
  for (int t = 0; t < 12; ++t) {
    int rank = static_cast<int>(draw(rng, 1, 4));
    std::vector<int64_t> shape;
    for (int d = 0; d < rank; ++d) shape.push_back(draw(rng, 1, 13));
    int64_t axis = draw(rng, -rank, rank - 1);
    size_t first = static_cast<size_t>(axis < 0 ? axis + rank : axis);
    std::vector<int64_t> norm(shape.begin() + static_cast<std::ptrdiff_t>(first), shape.end());
    Attrs a("layer_norm", {{"axis", axis}});
    if (t % 2) a.set("epsilon", t % 4 == 1 ? 1e-3 : 1e-6);
    std::vector<TensorType> types = {{shape, f32}, {norm, f32}};
    if (t % 3) types.push_back({norm, f32});
    SCOPED_TRACE(to_string(types[0]) + " axis=" + std::to_string(axis) +
                 " inputs=" + std::to_string(types.size()));
    CheckOptions o;
    o.seed = static_cast<uint32_t>(200 + t);
    check_op("layer_norm", types, a, o);
  }
  // Default axis (-1), rows long enough for the vector and parallel schedule.
  check_op("layer_norm", {{{64, 100}, f32}, {{100}, f32}, {{100}, f32}}, Attrs("layer_norm", {}));
  check_op("layer_norm", {{{4, 6, 50}, f32}, {{6, 50}, f32}, {{6, 50}, f32}},
           Attrs("layer_norm", {{"axis", int64_t{1}}}));
  check_op("layer_norm", {{{3, 40}, f32}, {{3, 40}, f32}, {{3, 40}, f32}},
           Attrs("layer_norm", {{"axis", int64_t{0}}}));
  // Rows of a multiple of 16 over one axis: the statistics in 16 interleaved partial sums
  // (ConvNeXt's 96 channels, ViT's 768, the smallest: 32).
  check_op("layer_norm", {{{50, 96}, f32}, {{96}, f32}, {{96}, f32}}, Attrs("layer_norm", {}));
  check_op("layer_norm", {{{2, 7, 768}, f32}, {{768}, f32}}, Attrs("layer_norm", {}));
  check_op("layer_norm", {{{3, 32}, f32}, {{32}, f32}, {{32}, f32}}, Attrs("layer_norm", {}));
}

TEST(Norm, InstanceNormRandom) {
  std::mt19937 rng(51);
  for (int t = 0; t < 10; ++t) {
    int rank = static_cast<int>(draw(rng, 3, 5));
    std::vector<int64_t> shape = {draw(rng, 1, 3), draw(rng, 1, 9)};
    for (int d = 2; d < rank; ++d) shape.push_back(draw(rng, 1, 12));
    Attrs a("instance_norm", {});
    if (t % 2) a.set("epsilon", t % 4 == 1 ? 1e-2 : 1e-6);
    std::vector<TensorType> types = {{shape, f32}, {{shape[1]}, f32}, {{shape[1]}, f32}};
    SCOPED_TRACE(to_string(types[0]));
    CheckOptions o;
    o.seed = static_cast<uint32_t>(300 + t);
    check_op("instance_norm", types, a, o);
  }
  check_op("instance_norm", {{{2, 32, 24, 24}, f32}, {{32}, f32}, {{32}, f32}},
           Attrs("instance_norm", {}));
}

// ---- diagnostics

std::string infer_error(const std::string& op, std::vector<TensorType> types, const Attrs& a) {
  return testing::user_error([&] { lookup(op).infer(types, a); });
}

void expect_has(const std::string& msg, const std::string& part) {
  EXPECT_NE(msg.find(part), std::string::npos) << "message: " << msg << "\nexpected: " << part;
}

TEST(PoolErrors, NegativePads) {
  std::string m = infer_error("max_pool2d", {{{1, 1, 5, 5}, f32}},
                              pool_attrs("max_pool2d", {2, 2}, {1, 1}, {0, -1, 0, 0}, {}, 0, 0));
  expect_has(m, "max_pool2d: attribute 'pads' must be non-negative, got [0, -1, 0, 0]");
}

TEST(PoolErrors, KernelBiggerThanPaddedInput) {
  std::string m = infer_error("avg_pool2d", {{{1, 1, 3, 8}, f32}},
                              pool_attrs("avg_pool2d", {5, 2}, {1, 1}, {1, 0, 0, 0}, {}, 0, 0));
  expect_has(m,
             "avg_pool2d: attribute 'kernel_shape' [5, 2] spans 5 in height, more than the "
             "padded input's 4");
  std::string d = infer_error("max_pool2d", {{{1, 1, 8, 4}, f32}},
                              pool_attrs("max_pool2d", {2, 3}, {1, 1}, {0, 0, 0, 0}, {1, 2}, 0, 0));
  expect_has(d, "max_pool2d: attribute 'kernel_shape' [2, 3] spans 5 in width");
}

TEST(PoolErrors, BadAttributes) {
  expect_has(infer_error("max_pool2d", {{{1, 1, 5, 5}, f32}}, Attrs("max_pool2d", {})),
             "max_pool2d: missing attribute 'kernel_shape'");
  expect_has(infer_error("max_pool2d", {{{1, 1, 5, 5}, f32}},
                         pool_attrs("max_pool2d", {2, 2}, {0, 1}, {0, 0, 0, 0}, {}, 0, 0)),
             "max_pool2d: attribute 'strides' must be positive, got [0, 1]");
  expect_has(infer_error("avg_pool2d", {{{1, 1, 5, 5}, f32}},
                         pool_attrs("avg_pool2d", {2, 2}, {1, 1}, {0, 0}, {}, 0, 0)),
             "avg_pool2d: attribute 'pads' must have 4 values, got [0, 0]");
  expect_has(infer_error("max_pool2d", {{{1, 1, 5, 5}, f32}},
                         pool_attrs("max_pool2d", {2, 2}, {1, 1}, {0, 0, 0, 0}, {0, 1}, 0, 0)),
             "max_pool2d: attribute 'dilations' must be positive");
  expect_has(infer_error("avg_pool2d", {{{1, 1, 5, 5}, f32}},
                         pool_attrs("avg_pool2d", {2, 2}, {1, 1}, {0, 0, 0, 0}, {}, 2, 0)),
             "avg_pool2d: attribute 'ceil_mode' must be 0 or 1, got 2");
  expect_has(infer_error("avg_pool2d", {{{1, 1, 5, 5}, f32}},
                         pool_attrs("avg_pool2d", {2, 2}, {1, 1}, {0, 0, 0, 0}, {}, 0, 3)),
             "avg_pool2d: attribute 'count_include_pad' must be 0 or 1, got 3");
  expect_has(infer_error("max_pool2d", {{{5, 5}, f32}},
                         pool_attrs("max_pool2d", {2, 2}, {1, 1}, {0, 0, 0, 0}, {}, 0, 0)),
             "max_pool2d: input 'x' must be 4-d (NCHW), got float32[5, 5]");
  expect_has(infer_error("global_avg_pool2d", {{{1, 5, 5}, f32}}, Attrs("global_avg_pool2d", {})),
             "global_avg_pool2d: input 'x' must be 4-d (NCHW)");
}

TEST(NormErrors, WrongScaleLength) {
  std::vector<TensorType> bn = {
      {{2, 4, 3, 3}, f32}, {{5}, f32}, {{4}, f32}, {{4}, f32}, {{4}, f32}};
  expect_has(infer_error("batch_norm", bn, Attrs("batch_norm", {})),
             "batch_norm: input 'scale' has shape [5], expected [4] (one per channel of x, C = 4)");
  bn[1] = {{4}, f32};
  bn[4] = {{3}, f32};
  expect_has(infer_error("batch_norm", bn, Attrs("batch_norm", {})),
             "batch_norm: input 'var' has shape [3], expected [4]");
  expect_has(infer_error("instance_norm", {{{2, 4, 3, 3}, f32}, {{4}, f32}, {{2}, f32}},
                         Attrs("instance_norm", {})),
             "instance_norm: input 'bias' has shape [2], expected [4]");
  expect_has(infer_error("layer_norm", {{{2, 4, 3}, f32}, {{4}, f32}},
                         Attrs("layer_norm", {{"axis", int64_t{1}}})),
             "layer_norm: input 'scale' has shape [4], expected [4, 3]");
}

TEST(NormErrors, BadAttributesAndInputs) {
  expect_has(infer_error("layer_norm", {{{2, 4}, f32}, {{4}, f32}},
                         Attrs("layer_norm", {{"axis", int64_t{2}}})),
             "layer_norm: attribute 'axis' = 2 is out of range for a 2-d input");
  expect_has(infer_error("layer_norm", {{{2, 4}, f32}, {{4}, f32}},
                         Attrs("layer_norm", {{"epsilon", -1.0}})),
             "layer_norm: attribute 'epsilon' must be finite and non-negative, got -1");
  expect_has(infer_error("instance_norm", {{{2, 4}, f32}, {{4}, f32}, {{4}, f32}},
                         Attrs("instance_norm", {})),
             "instance_norm: input 'x' must have at least 3 dimensions");
  expect_has(infer_error("batch_norm", {{{2, 4}, f32}, {{4}, f32}}, Attrs("batch_norm", {})),
             "batch_norm: expects 5 inputs (x, scale, bias, mean, var), got 2");
}

}  // namespace
}  // namespace anvil::ops
