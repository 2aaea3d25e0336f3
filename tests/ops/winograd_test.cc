// Winograd convolution on NCHW[x]c against a naive direct convolution of the OIHW weight; and
// conv2d_winograd (NCHW, the GPU targets' form) on the CPU and on OpenCL (PoCL).
//
// The weight is packed by the pack op's reference (and the compiled pack op is checked against
// that reference separately), the compiled kernel runs on the blocked input, and every output is
// compared with a double-precision direct convolution of the NCHW input with the OIHW weight,
// re-laid out to NCHW[x]c.
//
// Tolerance: |got - want| <= tol * (1 + S) with S = sum |x| |w| over the taps of that output.
// Winograd rounds in the transformed domain, where values grow with the transforms' entries
// (G's up to 4/3 and B^T's up to 5 after integer scaling for F(4,3), A^T's up to 1): each output is
// a sum of a*a float32 products of size ~S times those growth factors, so its error is a small
// multiple of eps_f32 * S * a^2 (6e-8 * 36 ~ 2e-6 for F(4,3), 1e-6 for F(2,3)). Measured worst
// (Randomized prints it): 1.7e-7 (F(2,3)) and 4.5e-6 (F(4,3)). tol = 1e-5 and 1e-4 keep a
// margin of 20x or more, while one wrong or missing term (~|x||w| ~ S / (9 C), C <= 20 here)
// is far above them.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <random>
#include <sstream>

#include "anvil/ir/op.h"
#include "anvil/ops/nchwc.h"
#include "anvil/ops/winograd.h"
#include "ops_testing.h"
#include "testing/errors.h"

namespace anvil::ops {
namespace {

using ir::DataType;
using runtime::NDArray;

const DataType f32 = DataType::Float32();

struct Case {
  int64_t N = 1, C = 4, H = 8, W = 8, O = 4;
  std::vector<int64_t> pads = {1, 1, 1, 1};
  int64_t ib = 4, ob = 4, m = 4;
  std::string epilogue;         // "", "bias_relu", "residual"
  bool pack_in_kernel = false;  // the pack op as a stage of the same kernel (not folded)
  Config config;
  std::string str() const {
    std::ostringstream os;
    os << "N=" << N << " C=" << C << " H=" << H << " W=" << W << " O=" << O << " pads=[" << pads[0]
       << "," << pads[1] << "," << pads[2] << "," << pads[3] << "] ib=" << ib << " ob=" << ob
       << " m=" << m << " epilogue=" << epilogue;
    for (const auto& [k, v] : config) os << " " << k << "=" << v;
    return os.str();
  }
};

Case mk(int64_t N, int64_t C, int64_t H, int64_t W, int64_t O, std::vector<int64_t> pads,
        int64_t ib, int64_t ob, int64_t m, std::string epilogue = "") {
  Case k;
  k.N = N, k.C = C, k.H = H, k.W = W, k.O = O, k.pads = std::move(pads);
  k.ib = ib, k.ob = ob, k.m = m, k.epilogue = std::move(epilogue);
  return k;
}

double tolerance(int64_t m) {
  return m == 4 ? 1e-4 : 1e-5;
}

NDArray random(const std::vector<int64_t>& shape, std::mt19937& rng) {
  return ops_testing::random_array({shape, f32}, rng);
}

// NCHW -> NCHW[b]c, padded channels zero.
NDArray to_blocked(const NDArray& x, int64_t b) {
  std::vector<int64_t> s = x.shape();
  int64_t N = s[0], C = s[1], H = s[2], W = s[3], CB = (C + b - 1) / b;
  NDArray y = anvil::testing::array({N, CB, H, W, b});
  float* out = y.data_as<float>();
  const float* in = x.data_as<float>();
  for (int64_t i = 0; i < y.numel(); ++i) out[i] = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w)
          out[(((n * CB + c / b) * H + h) * W + w) * b + c % b] = in[((n * C + c) * H + h) * W + w];
  return y;
}

struct Result {
  double worst = 0;  // the largest |got - want| / (1 + S) seen
};

// Runs one case end to end; returns the worst error ratio.
Result run_case(const Case& k, uint32_t seed) {
  SCOPED_TRACE(k.str());
  std::mt19937 rng(seed);
  NDArray x = random({k.N, k.C, k.H, k.W}, rng);
  NDArray w = random({k.O, k.C, 3, 3}, rng);
  Attrs pack_attrs("conv2d_winograd_nchwc_pack_weight",
                   {{"in_block", k.ib}, {"out_block", k.ob}, {"tile", k.m}});
  NDArray u = lookup("conv2d_winograd_nchwc_pack_weight").reference({w}, pack_attrs)[0];
  NDArray xb = to_blocked(x, k.ib);

  const OpDef& def = lookup("conv2d_winograd_nchwc");
  Attrs attrs("conv2d_winograd_nchwc", {{"pads", k.pads}, {"tile", k.m}});
  std::vector<TensorType> types = {{xb.shape(), f32}, {u.shape(), f32}};
  std::vector<TensorType> out_types = def.infer(types, attrs);
  te::Tensor tx = te::placeholder(to_exprs(xb.shape()), f32, "x");
  te::Tensor tw = te::placeholder(to_exprs(w.shape()), f32, "w");
  te::Tensor tu = k.pack_in_kernel
                      ? lookup("conv2d_winograd_nchwc_pack_weight").compute({tw}, pack_attrs)[0]
                      : te::placeholder(to_exprs(u.shape()), f32, "u");
  te::Tensor conv = def.compute({tx, tu}, attrs)[0];
  EXPECT_EQ(shape_of(conv), out_types[0].shape);
  std::vector<int64_t> os = shape_of(conv);
  int64_t OB = os[1], OH = os[2], OW = os[3];
  std::vector<te::Tensor> args = {tx, k.pack_in_kernel ? tw : tu};
  std::vector<NDArray> arrays = {xb, k.pack_in_kernel ? w : u};
  te::Tensor out = conv;
  NDArray bias, resid;
  if (k.epilogue == "bias_relu") {
    te::Tensor tb = te::placeholder(
        {1, ir::Expr(static_cast<int>(OB)), 1, 1, static_cast<int>(k.ob)}, f32, "bias");
    te::Tensor biased = te::compute(
        conv->shape,
        [&](const std::vector<ir::Var>& i) {
          return conv(std::vector<ir::Expr>(i.begin(), i.end())) + tb(0, i[1], 0, 0, i[4]);
        },
        "bias_add");
    out = te::compute(
        conv->shape,
        [&](const std::vector<ir::Var>& i) {
          return ir::max(biased(std::vector<ir::Expr>(i.begin(), i.end())), 0.0f);
        },
        "relu");
    bias = random({1, OB, 1, 1, k.ob}, rng);
    args.push_back(tb);
    arrays.push_back(bias);
  } else if (k.epilogue == "residual") {
    te::Tensor tr = te::placeholder(conv->shape, f32, "residual");
    out = te::compute(
        conv->shape,
        [&](const std::vector<ir::Var>& i) {
          std::vector<ir::Expr> idx(i.begin(), i.end());
          return conv(idx) + tr(idx);
        },
        "residual_add");
    resid = random(os, rng);
    args.push_back(tr);
    arrays.push_back(resid);
  }
  te::Schedule s({out});
  Target target = Target::host();
  def.schedule_x86(s, {out}, target, k.config);
  args.push_back(out);
  // The output transform and the epilogue are one loop nest: no buffer for Y or for the
  // epilogue's intermediate stages in the loop nest the schedule builds.
  std::ostringstream loops;
  LowerOptions lo;
  lo.print_after = {"loops"};
  lo.dump_to = &loops;
  ir::LoweredFunc f = lower(s, args, "wino", lo);
  EXPECT_EQ(loops.str().find("allocate conv2d_winograd_nchwc["), std::string::npos);
  EXPECT_EQ(loops.str().find("allocate bias_add["), std::string::npos);
  EXPECT_NE(loops.str().find("allocate conv2d_winograd_nchwc.M["), std::string::npos);
  auto module = codegen::LLVMModule::compile({f}, target);
  NDArray got = anvil::testing::array(os);
  std::vector<const DLTensor*> ptrs;
  for (const NDArray& a : arrays) ptrs.push_back(a.get());
  ptrs.push_back(got.get());
  EXPECT_EQ(anvil::testing::call(module->get_function("wino"), ptrs), 0) << AnvilGetLastError();

  // The naive direct convolution of the original NCHW input and OIHW weight.
  Result r;
  const float* xp = x.data_as<float>();
  const float* wp = w.data_as<float>();
  int bad = 0;
  for (int64_t n = 0; n < k.N; ++n)
    for (int64_t o = 0; o < OB * k.ob; ++o)
      for (int64_t y = 0; y < OH; ++y)
        for (int64_t xx = 0; xx < OW; ++xx) {
          double sum = 0, mag = 0;
          if (o < k.O) {
            for (int64_t c = 0; c < k.C; ++c)
              for (int64_t ky = 0; ky < 3; ++ky)
                for (int64_t kx = 0; kx < 3; ++kx) {
                  int64_t iy = y + ky - k.pads[0], ix = xx + kx - k.pads[1];
                  if (iy < 0 || iy >= k.H || ix < 0 || ix >= k.W) continue;
                  double a = xp[((n * k.C + c) * k.H + iy) * k.W + ix];
                  double b = wp[((o * k.C + c) * 3 + ky) * 3 + kx];
                  sum += a * b;
                  mag += std::abs(a * b);
                }
          }
          int64_t idx = (((n * OB + o / k.ob) * OH + y) * OW + xx) * k.ob + o % k.ob;
          if (k.epilogue == "bias_relu") {
            sum = std::max(sum + bias.data_as<float>()[o], 0.0);
            mag += std::abs(bias.data_as<float>()[o]);
          } else if (k.epilogue == "residual") {
            sum += resid.data_as<float>()[idx];
            mag += std::abs(resid.data_as<float>()[idx]);
          }
          double g = got.data_as<float>()[idx];
          double ratio = std::abs(g - sum) / (1 + mag);
          r.worst = std::max(r.worst, ratio);
          if (!(ratio <= tolerance(k.m)) && bad++ < 5) {
            ADD_FAILURE() << "n=" << n << " o=" << o << " y=" << y << " x=" << xx << ": got " << g
                          << ", want " << sum << " (magnitude " << mag << ")";
          }
        }
  return r;
}

// ---- the transform matrices

// A^T [(G g) .* (B^T d)] is the correlation of d with g, for random d and g, in double.
TEST(WinogradMatrices, OneDimensionalCorrelation) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> dist(-1, 1);
  for (int64_t m : {2, 4}) {
    const WinogradMatrices& wm = winograd_matrices(m);
    ASSERT_EQ(wm.a, m + 2);
    size_t a = static_cast<size_t>(wm.a);
    for (int trial = 0; trial < 10; ++trial) {
      std::vector<double> d(a), g(3);
      for (double& v : d) v = dist(rng);
      for (double& v : g) v = dist(rng);
      std::vector<double> prod(a);
      for (size_t i = 0; i < a; ++i) {
        double gg = 0, dd = 0;
        for (size_t k = 0; k < 3; ++k) gg += wm.G[i][k] * g[k];
        for (size_t k = 0; k < a; ++k) dd += wm.BT[i][k] * d[k];
        prod[i] = gg * dd;
      }
      for (size_t j = 0; j < static_cast<size_t>(m); ++j) {
        double y = 0, want = 0;
        for (size_t i = 0; i < a; ++i) y += wm.AT[j][i] * prod[i];
        for (size_t k = 0; k < 3; ++k) want += g[k] * d[j + k];
        EXPECT_NEAR(y, want, 1e-12) << "m=" << m << " j=" << j;
      }
    }
  }
  EXPECT_NE(anvil::testing::user_error([] { winograd_matrices(3); }).find("'tile'"),
            std::string::npos);
}

// ---- the pack op

TEST(WinogradPack, CompiledMatchesReference) {
  for (int64_t m : {2, 4}) {
    for (auto [O, C, ib, ob] : std::vector<std::array<int64_t, 4>>{{5, 3, 2, 4}, {16, 8, 8, 16}}) {
      Attrs attrs("conv2d_winograd_nchwc_pack_weight",
                  {{"in_block", ib}, {"out_block", ob}, {"tile", m}});
      ops_testing::CheckOptions o;
      o.tol = 1e-6;
      ops_testing::check_op("conv2d_winograd_nchwc_pack_weight", {{{O, C, 3, 3}, f32}}, attrs, o);
    }
  }
  EXPECT_EQ(lookup("conv2d_winograd_nchwc_pack_weight").pattern, Pattern::kInjective);
}

TEST(WinogradPack, ShapeAndZeroPadding) {
  Attrs attrs("conv2d_winograd_nchwc_pack_weight", {{"in_block", 4}, {"out_block", 8}});
  std::vector<TensorType> t =
      lookup("conv2d_winograd_nchwc_pack_weight").infer({{{10, 6, 3, 3}, f32}}, attrs);
  EXPECT_EQ(t[0].shape, (std::vector<int64_t>{6, 6, 2, 8, 8}));  // tile 4 by default
  std::mt19937 rng(1);
  NDArray w = random({10, 6, 3, 3}, rng);
  NDArray u = lookup("conv2d_winograd_nchwc_pack_weight").reference({w}, attrs)[0];
  // Output channels 10..15 and input channels 6, 7 are zero filters.
  for (int64_t a = 0; a < 36; ++a)
    for (int64_t c = 0; c < 8; ++c)
      for (int64_t o = 0; o < 16; ++o) {
        float v = u.data_as<float>()[((a * 2 + o / 8) * 8 + c) * 8 + o % 8];
        if (o >= 10 || c >= 6) {
          EXPECT_EQ(v, 0.0f) << a << " " << c << " " << o;
        }
      }
}

// ---- the convolution

TEST(Winograd, ReferenceRecoversTheDirectConvolution) {
  // The op's own reference (filters recovered from U) against the compiled kernel, through the
  // shared harness.
  std::mt19937 rng(4);
  for (int64_t m : {4}) {
    NDArray w = random({6, 5, 3, 3}, rng);
    Attrs pa("conv2d_winograd_nchwc_pack_weight", {{"in_block", 3}, {"out_block", 4}, {"tile", m}});
    NDArray u = lookup("conv2d_winograd_nchwc_pack_weight").reference({w}, pa)[0];
    NDArray x = random({1, 2, 7, 6, 3}, rng);
    ops_testing::CheckOptions o;
    o.tol = tolerance(m) * 10;  // relative to 1 + |want|: a few times S
    o.inputs = {x, u};
    ops_testing::check_op(
        "conv2d_winograd_nchwc", {{x.shape(), f32}, {u.shape(), f32}},
        Attrs("conv2d_winograd_nchwc", {{"pads", std::vector<int64_t>{1, 0, 2, 1}}}), o);
  }
}

TEST(Winograd, BothTilesSmallShapes) {
  for (int64_t m : {2, 4}) {
    run_case(mk(1, 4, 8, 8, 4, {1, 1, 1, 1}, 4, 4, m), 1);
    run_case(mk(1, 2, 5, 5, 3, {0, 0, 0, 0}, 1, 3, m), 6);
    // Odd sizes, not multiples of the tile; channels padded to the blocks.
    run_case(mk(2, 5, 9, 7, 11, {1, 1, 1, 1}, 3, 8, m), 2);
    // 1x1 and 2x2 inputs with padding: every tile mostly reads zeros.
    run_case(mk(1, 3, 1, 1, 2, {1, 1, 1, 1}, 1, 1, m), 3);
    run_case(mk(1, 16, 2, 2, 16, {1, 1, 1, 1}, 16, 16, m), 4);
    // Asymmetric padding, one side only.
    run_case(mk(1, 8, 6, 11, 8, {0, 2, 1, 0}, 8, 8, m), 5);
  }
}

TEST(Winograd, Randomized) {
  std::mt19937 rng(2026);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  const int64_t blocks[] = {1, 3, 8, 16};
  double worst[2] = {0, 0};
  for (int trial = 0; trial < 16; ++trial) {
    Case k;
    k.N = pick(1, 2);
    k.C = pick(1, 20);
    k.O = pick(1, 20);
    k.pads = {pick(0, 2), pick(0, 2), pick(0, 2), pick(0, 2)};
    k.H = pick(std::max<int64_t>(1, 3 - k.pads[0] - k.pads[2]), 13);
    k.W = pick(std::max<int64_t>(1, 3 - k.pads[1] - k.pads[3]), 13);
    k.ib = blocks[pick(0, 3)];
    k.ob = blocks[pick(0, 3)];
    k.m = trial % 2 ? 4 : 2;
    Result r = run_case(k, static_cast<uint32_t>(trial));
    worst[trial % 2] = std::max(worst[trial % 2], r.worst);
  }
  // The precision the tolerance is justified by (see the file comment).
  std::printf("worst |err| / (1 + S): F(2,3) %.2g, F(4,3) %.2g\n", worst[0], worst[1]);
}

TEST(Winograd, ResNetLikeLayer) {
  // A medium layer through the default schedule: several GEMM register tiles, parallel loops.
  run_case(mk(1, 32, 14, 14, 48, {1, 1, 1, 1}, 16, 16, 4), 7);
}

TEST(Winograd, EpiloguesFuse) {
  run_case(mk(1, 6, 7, 10, 20, {1, 1, 1, 1}, 3, 8, 2, "bias_relu"), 8);
  run_case(mk(2, 16, 5, 5, 16, {1, 1, 1, 1}, 16, 16, 4, "residual"), 9);
}

TEST(Winograd, PackStageInTheSameKernel) {
  // A weight that is not constant-folded: the pack op's stage stays at the root of the kernel.
  Case k = mk(1, 5, 6, 7, 9, {1, 0, 1, 1}, 4, 8, 4, "bias_relu");
  k.pack_in_kernel = true;
  run_case(k, 12);
}

TEST(Winograd, ExplicitConfigsWithTails) {
  Case k = mk(1, 20, 9, 11, 24, {1, 2, 1, 0}, 4, 8, 4);
  // P = 3 * 3 tiles, C' = 20: tile_p and unroll_c leave tails.
  for (Config c : std::vector<Config>{{{"tile_p", 4}, {"tile_o", 16}, {"unroll_c", 3}},
                                      {{"tile_p", 7}, {"tile_o", 24}, {"unroll_c", 8}},
                                      {{"tile_p", 1}, {"tile_o", 8}, {"unroll_c", 1}},
                                      {{"parallel", 1}}}) {
    k.config = c;
    run_case(k, 10);
  }
}

TEST(Winograd, SpaceListsDefaultsFirst) {
  std::vector<TensorType> types = {{{1, 4, 28, 28, 16}, f32}, {{6, 6, 4, 64, 16}, f32}};
  Attrs attrs("conv2d_winograd_nchwc", {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  Target t = Target::host();
  ConfigSpace space = lookup("conv2d_winograd_nchwc").space(types, attrs, t);
  ASSERT_EQ(space.size(), 4u);
  EXPECT_EQ(space[0].name, "tile_p");
  EXPECT_EQ(space[1].name, "tile_o");
  EXPECT_EQ(space[2].name, "unroll_c");
  EXPECT_EQ(space[3].name, "parallel");
  EXPECT_EQ(space[3].values[0], 1);  // 2 * 36 * 49 * 64 * 64 FLOP
  // The rule: two vectors of output channels when the block is one vector (AVX-512: 2 x 16;
  // AVX2: the 16-block is already two vectors), accumulators ~24 (AVX-512) or ~12 (AVX2).
  int64_t lanes = t.vector_lanes_f32();
  EXPECT_EQ(space[1].values[0], lanes == 16 ? 32 : 16);
  EXPECT_EQ(space[0].values[0], lanes == 16 ? 12 : 6);
  for (const Knob& k : space) EXPECT_GT(k.values.size(), 1u) << k.name;
  EXPECT_EQ(lookup("conv2d_winograd_nchwc").pattern, Pattern::kComplexOutFusable);
}

TEST(Winograd, TileRule) {
  // Large maps take F(4x4); a 7x7 map with 512 channels takes F(2x2) (its F(4x4) GEMM has 4
  // rows and a 37 MB weight: bound by memory), a small weight keeps F(4x4). Where both weights
  // stream, F(4x4) must save enough multiplies per extra byte: a 14x14 map with 256 channels
  // saves 5.2 FLOPs per byte over F(2x2), below every machine's balance (11 to 21), a 28x28 map
  // with 128 channels 34. The same on every machine the table knows, whatever its L2.
  for (const char* cpu : {"", " -mcpu=znver3", " -mcpu=znver5", " -mcpu=sapphirerapids"}) {
    Target t = Target::parse(std::string("llvm") + cpu);
    EXPECT_EQ(winograd_tile(64, 64, 56, 56, t), 4) << cpu;
    EXPECT_EQ(winograd_tile(128, 128, 28, 28, t), 4) << cpu;
    EXPECT_EQ(winograd_tile(256, 256, 14, 14, t), 2) << cpu;
    EXPECT_EQ(winograd_tile(512, 512, 7, 7, t), 2) << cpu;
    // A 2-wide map wastes less with F(2x2).
    EXPECT_EQ(winograd_tile(64, 64, 2, 2, t), 2) << cpu;
  }
  // The L2 decides between the two where F(4x4) has few rows: 8x8 maps (4 tiles of 4x4) with 128
  // channels have a 2.25 MiB F(4x4) weight, within a 4 MiB L2 and not a 512 KiB one.
  Target small = Target::parse("llvm -mcpu=znver3");
  Target large = small;
  large.l2_bytes = 4 << 20;
  EXPECT_EQ(winograd_tile(128, 128, 8, 8, small), 2);
  EXPECT_EQ(winograd_tile(128, 128, 8, 8, large), 4);
  // A 7x7 map with 64 channels: a 576 KiB F(4x4) weight, past Zen 3's 512 KiB L2, within Zen 5's.
  EXPECT_EQ(winograd_tile(64, 64, 7, 7, small), 2);
  EXPECT_EQ(winograd_tile(64, 64, 7, 7, Target::parse("llvm -mcpu=znver5")), 4);
}

TEST(Winograd, PreferRule) {
  Target t = Target::host();
  EXPECT_TRUE(prefer_winograd(64, 64, 56, 56, 3, 3, 1, 1, 1, 1, t));
  EXPECT_TRUE(prefer_winograd(256, 256, 14, 14, 3, 3, 1, 1, 1, 1, t));
  EXPECT_FALSE(prefer_winograd(64, 64, 56, 56, 3, 3, 2, 2, 1, 1, t));  // stride
  EXPECT_FALSE(prefer_winograd(64, 64, 56, 56, 3, 3, 1, 1, 2, 2, t));  // dilation
  EXPECT_FALSE(prefer_winograd(64, 64, 56, 56, 5, 5, 1, 1, 1, 1, t));  // kernel
  EXPECT_FALSE(prefer_winograd(1, 32, 56, 56, 3, 3, 1, 1, 1, 1, t));   // one input channel
  EXPECT_TRUE(prefer_winograd(3, 64, 56, 56, 3, 3, 1, 1, 1, 1, t));
  EXPECT_TRUE(prefer_winograd(32, 1, 56, 56, 3, 3, 1, 1, 1, 1, t));
  // Weight-bound: 4 tiles of a 4x4 map, 512 channels.
  EXPECT_FALSE(prefer_winograd(512, 512, 4, 4, 3, 3, 1, 1, 1, 1, t));
  // Few tiles, but the transformed weight fits in L2 (DQN's 7x7 64 -> 64).
  EXPECT_TRUE(prefer_winograd(64, 64, 7, 7, 3, 3, 1, 1, 1, 1, t));
}

// At batch 1 a transformed weight past L2 is streamed from memory: Winograd only where the FLOPs
// it saves per extra byte exceed the machine's balance (its FLOPs per cycle over the bytes per
// cycle a core streams). ResNet's layer 4 (7x7, 512 channels, F(2x2): 13 FLOPs per byte) is direct
// on a core with two 512-bit FMA pipes (64 FLOPs per cycle) and Winograd on Zen 4 (one 512-bit
// pipe) and AVX2 (32); layer 3 (14x14, 256, F(2x2): 70 per byte) is Winograd on all three.
TEST(Winograd, PreferRuleWeighsWeightTraffic) {
  Target zen5 = Target::parse("llvm -mcpu=znver5 -vector-bits=512");
  Target zen4 = Target::parse("llvm -mcpu=znver4 -vector-bits=512");
  Target zen3 = Target::parse("llvm -mcpu=znver3 -vector-bits=256");
  ASSERT_EQ(winograd_tile(512, 512, 7, 7, zen5), 2);
  EXPECT_FALSE(prefer_winograd(512, 512, 7, 7, 3, 3, 1, 1, 1, 1, zen5));
  EXPECT_TRUE(prefer_winograd(512, 512, 7, 7, 3, 3, 1, 1, 1, 1, zen4));
  EXPECT_TRUE(prefer_winograd(512, 512, 7, 7, 3, 3, 1, 1, 1, 1, zen3));
  for (const Target& t : {zen5, zen4, zen3}) {
    ASSERT_EQ(winograd_tile(256, 256, 14, 14, t), 2) << t.mcpu;
    EXPECT_TRUE(prefer_winograd(256, 256, 14, 14, 3, 3, 1, 1, 1, 1, t)) << t.mcpu;
  }
  // A weight within L2 is not streamed: layer 4's shape with 64 channels stays Winograd.
  EXPECT_TRUE(prefer_winograd(64, 64, 7, 7, 3, 3, 1, 1, 1, 1, zen5));
}

TEST(Winograd, Errors) {
  using anvil::testing::user_error;
  const OpDef& pack = lookup("conv2d_winograd_nchwc_pack_weight");
  const OpDef& conv = lookup("conv2d_winograd_nchwc");
  auto pack_attrs = [](int64_t ib, int64_t ob, int64_t m) {
    return Attrs("conv2d_winograd_nchwc_pack_weight",
                 {{"in_block", ib}, {"out_block", ob}, {"tile", m}});
  };
  auto has = [](const std::string& msg, const std::string& what) {
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
  };
  has(user_error([&] { pack.infer({{{8, 8, 5, 5}, f32}}, pack_attrs(8, 8, 4)); }), "3x3");
  has(user_error([&] { pack.infer({{{8, 8, 3, 3}, f32}}, pack_attrs(8, 8, 3)); }), "'tile'");
  has(user_error([&] { pack.infer({{{8, 8, 3, 3}, f32}}, pack_attrs(0, 8, 4)); }), "'in_block'");
  has(user_error([&] { pack.infer({{{8, 8, 3, 3}, f32}}, pack_attrs(8, -1, 4)); }), "'out_block'");
  has(user_error([&] {
        pack.infer({{{8, 8, 3, 3}, f32}}, Attrs("conv2d_winograd_nchwc_pack_weight", {}));
      }),
      "in_block");

  std::vector<TensorType> ok = {{{1, 2, 8, 8, 4}, f32}, {{6, 6, 1, 8, 8}, f32}};
  auto attrs = [](std::map<std::string, AttrValue> v) {
    return Attrs("conv2d_winograd_nchwc", std::move(v));
  };
  EXPECT_EQ(conv.infer(ok, attrs({}))[0].shape, (std::vector<int64_t>{1, 1, 6, 6, 8}));
  has(user_error([&] {
        conv.infer(ok, attrs({{"strides", std::vector<int64_t>{2, 2}}}));
      }),
      "'strides'");
  has(user_error([&] {
        conv.infer(ok, attrs({{"dilations", std::vector<int64_t>{1, 2}}}));
      }),
      "'dilations'");
  has(user_error([&] { conv.infer(ok, attrs({{"group", int64_t{2}}})); }), "'group'");
  has(user_error([&] {
        conv.infer(ok, attrs({{"kernel_shape", std::vector<int64_t>{5, 5}}}));
      }),
      "'kernel_shape'");
  has(user_error([&] { conv.infer(ok, attrs({{"pads", std::vector<int64_t>{1, 1}}})); }), "'pads'");
  has(user_error([&] {
        conv.infer(ok, attrs({{"pads", std::vector<int64_t>{-1, 0, 0, 0}}}));
      }),
      "'pads'");
  has(user_error([&] { conv.infer(ok, attrs({{"tile", int64_t{2}}})); }), "'tile'");
  // Channels of x and the transformed weight disagree.
  has(user_error([&] { conv.infer({{{1, 3, 8, 8, 4}, f32}, ok[1]}, attrs({})); }), "expects 8");
  // A weight that was not transformed.
  has(user_error([&] { conv.infer({ok[0], {{8, 8, 3, 3}, f32}}, attrs({})); }), "transformed");
  has(user_error([&] { conv.infer({{{1, 8, 8, 8}, f32}, ok[1]}, attrs({})); }), "rank 5");
  // The kernel does not fit the padded input.
  has(user_error([&] { conv.infer({{{1, 2, 2, 8, 4}, f32}, ok[1]}, attrs({})); }), "larger");
  has(user_error([&] { conv.infer({ok[0]}, attrs({})); }), "2 inputs");
}

// ---- conv2d_winograd: NCHW with an optional bias (the GPU targets' form)

struct NchwCase {
  int64_t N, C, H, W, O;
  std::vector<int64_t> pads;
  int64_t m;
  bool bias;
};

// Runs conv2d_winograd through check_op (x86, and the GPU schedule with `gpu_config` on PoCL)
// against its own reference, after checking that reference against conv2d's (the direct
// convolution of the untransformed weight).
void run_nchw(const NchwCase& k, uint32_t seed, const Config& gpu_config = {}) {
  SCOPED_TRACE(::testing::Message() << "N=" << k.N << " C=" << k.C << " H=" << k.H << " W=" << k.W
                                    << " O=" << k.O << " m=" << k.m << " bias=" << k.bias);
  std::mt19937 rng(seed);
  NDArray x = random({k.N, k.C, k.H, k.W}, rng), w = random({k.O, k.C, 3, 3}, rng);
  NDArray b = random({k.O}, rng);
  Attrs pa("conv2d_winograd_nchwc_pack_weight", {{"in_block", 1}, {"out_block", 1}, {"tile", k.m}});
  NDArray u = lookup("conv2d_winograd_nchwc_pack_weight").reference({w}, pa)[0];
  std::vector<NDArray> ins = {x, u}, direct_ins = {x, w};
  if (k.bias) ins.push_back(b), direct_ins.push_back(b);
  Attrs attrs("conv2d_winograd", {{"pads", k.pads}});
  NDArray want = lookup("conv2d").reference(direct_ins, Attrs("conv2d", {{"pads", k.pads}}))[0];
  NDArray own = lookup("conv2d_winograd").reference(ins, attrs)[0];
  ASSERT_EQ(want.shape(), own.shape());
  for (int64_t i = 0; i < want.numel(); ++i)
    ASSERT_NEAR(own.data_as<float>()[i], want.data_as<float>()[i], 1e-5) << i;

  ops_testing::CheckOptions o;
  o.tol = tolerance(k.m) * 10;  // relative to 1 + |want|: a few times S
  o.inputs = ins;
  o.gpu_always = true;
  o.gpu_config = gpu_config;
  std::vector<TensorType> types;
  for (const NDArray& a : ins) types.push_back({a.shape(), f32});
  ops_testing::check_op("conv2d_winograd", types, attrs, o);
}

TEST(WinogradNchw, DefaultSchedulesOnCpuAndOpenCl) {
  for (int64_t m : {2, 4}) {
    run_nchw({1, 16, 14, 14, 24, {1, 1, 1, 1}, m, true}, 1);
    // Odd sizes, not multiples of the tile; asymmetric padding; two images; no bias.
    run_nchw({2, 5, 9, 7, 3, {0, 2, 1, 0}, m, false}, 2);
    run_nchw({1, 3, 2, 2, 17, {1, 1, 1, 1}, m, true}, 3);
  }
}

TEST(WinogradNchw, GpuSpacePointsOnOpenCl) {
  // P = 4 * 4 tiles of 4x4 (a 14x14 map), O = 32, C = 24.
  std::vector<TensorType> types = {{{1, 24, 14, 14}, f32}, {{6, 6, 32, 24, 1}, f32}};
  Attrs attrs("conv2d_winograd", {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  ConfigSpace space = lookup("conv2d_winograd").space_gpu(types, attrs, Target::parse("opencl"));
  std::vector<std::string> names;
  for (const Knob& k : space) names.push_back(k.name);
  EXPECT_EQ(names, (std::vector<std::string>{"p_threads", "p_inner", "o_threads", "o_inner",
                                             "k_tile", "double_buffer", "vector_fetch"}));
  for (const Config& c :
       std::vector<Config>{{{"p_threads", 4}, {"p_inner", 4}, {"o_threads", 8}, {"k_tile", 3}},
                           {{"p_threads", 16}, {"o_threads", 2}, {"o_inner", 8}, {"k_tile", 24}},
                           {{"p_threads", 1}, {"o_threads", 32}, {"double_buffer", 1}},
                           {{"p_threads", 4}, {"o_threads", 8}, {"vector_fetch", 0}}})
    run_nchw({1, 24, 14, 14, 32, {1, 1, 1, 1}, 4, true}, 5, c);
}

TEST(WinogradNchw, Errors) {
  using anvil::testing::user_error;
  const OpDef& conv = lookup("conv2d_winograd");
  Attrs attrs("conv2d_winograd", {});
  TensorType u = {{6, 6, 8, 4, 1}, f32};
  EXPECT_EQ(conv.infer({{{1, 4, 8, 8}, f32}, u}, attrs)[0].shape,
            (std::vector<int64_t>{1, 8, 6, 6}));
  auto has = [](const std::string& msg, const std::string& what) {
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
  };
  has(user_error([&] { conv.infer({{{1, 4, 8, 8, 1}, f32}, u}, attrs); }), "rank 4");
  has(user_error([&] {
        conv.infer({{{1, 4, 8, 8}, f32}, {{6, 6, 2, 4, 4}, f32}}, attrs);
      }),
      "in_block = out_block = 1");
  has(user_error([&] {
        conv.infer({{{1, 4, 8, 8}, f32}, u, {{4}, f32}}, attrs);
      }),
      "bias must be [8]");
  has(user_error([&] { conv.infer({{{1, 5, 8, 8}, f32}, u}, attrs); }), "expects 4");
}

}  // namespace
}  // namespace anvil::ops
