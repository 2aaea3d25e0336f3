// Convolutions on NCHW[x]c (conv2d_nchwc, depthwise_conv2d_nchwc) and their weight-packing ops
// against their double-precision references on the blocked layouts, on fixed and randomized
// (fixed-seed) shapes, attributes and block sizes, under the default rule and explicit configs;
// the blocked references cross-checked against the NCHW conv2d through the packing and layout
// references; fused epilogues; diagnostics. Tolerance: |got - want| <= 1e-4 * (1 + |want|).
#include <gtest/gtest.h>

#include <random>
#include <sstream>

#include "anvil/ir/op.h"
#include "anvil/ops/nchwc.h"
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

// A convolution in NCHW terms (channels C -> O) with the blocks of its NCHW[x]c form.
struct Conv {
  bool depthwise = false;
  int64_t N = 1, C = 1, H = 1, W = 1, O = 1, KH = 1, KW = 1;
  int64_t ib = 1, ob = 1;  // depthwise: ib is the block
  std::vector<int64_t> strides = {}, pads = {}, dilations = {};
  int64_t group = 1;  // conv2d_nchwc only
  int64_t merge = 1;  // groups merged into one by the weight packing (conv2d_nchwc)

  std::string op() const { return depthwise ? "depthwise_conv2d_nchwc" : "conv2d_nchwc"; }
  int64_t blocks(int64_t c, int64_t b) const { return (c + b - 1) / b; }
  Attrs attrs() const {
    std::map<std::string, AttrValue> v;
    if (!strides.empty()) v["strides"] = strides;
    if (!pads.empty()) v["pads"] = pads;
    if (!dilations.empty()) v["dilations"] = dilations;
    if (group != 1) v["group"] = (group + merge - 1) / merge;
    return Attrs(op(), v);
  }
  std::vector<TensorType> types() const {
    std::vector<int64_t> x = {N, blocks(C, ib), H, W, ib};
    if (depthwise) return {{x, f32}, {{blocks(C, ib), 1, KH, KW, 1, ib}, f32}};
    return {{x, f32}, {{blocks(O, ob), blocks(C / group * merge, ib), KH, KW, ib, ob}, f32}};
  }
  std::string str() const {
    std::ostringstream os;
    auto l = [&](const char* n, const std::vector<int64_t>& v) {
      os << " " << n << "=[";
      for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << v[i];
      os << "]";
    };
    os << op() << " N=" << N << " C=" << C << " HxW=" << H << "x" << W << " O=" << O << " K=" << KH
       << "x" << KW << " ib=" << ib << " ob=" << ob << " group=" << group << " merge=" << merge;
    l("strides", strides);
    l("pads", pads);
    l("dilations", dilations);
    return os.str();
  }
};

void check(const Conv& c, const CheckOptions& o = opts()) {
  SCOPED_TRACE(c.str());
  check_op(c.op(), c.types(), c.attrs(), o);
}

// ---- conv2d_nchwc

TEST(Conv2dNchwc, BlockSizes) {
  // Blocks 16, 8, 4, 3 and 1, input and output blocks different.
  check({.C = 32,
         .H = 9,
         .W = 11,
         .O = 32,
         .KH = 3,
         .KW = 3,
         .ib = 16,
         .ob = 16,
         .pads = {1, 1, 1, 1}});
  check({.C = 16, .H = 7, .W = 13, .O = 24, .KH = 3, .KW = 3, .ib = 8, .ob = 8});
  check({.N = 2,
         .C = 8,
         .H = 6,
         .W = 5,
         .O = 12,
         .KH = 2,
         .KW = 3,
         .ib = 4,
         .ob = 4,
         .pads = {1, 0, 0, 2}});
  check({.C = 3,
         .H = 12,
         .W = 12,
         .O = 16,
         .KH = 7,
         .KW = 7,
         .ib = 3,
         .ob = 16,
         .strides = {2, 2},
         .pads = {3, 3, 3, 3}});
  check({.C = 5, .H = 5, .W = 6, .O = 3, .KH = 3, .KW = 2, .ib = 1, .ob = 1});
  check({.C = 16, .H = 5, .W = 7, .O = 8, .KH = 1, .KW = 1, .ib = 16, .ob = 8});
  check(
      {.C = 8, .H = 5, .W = 7, .O = 32, .KH = 3, .KW = 3, .ib = 8, .ob = 32, .pads = {1, 1, 1, 1}});
}

TEST(Conv2dNchwc, OneByOneKernelsAndMaps) {
  check({.C = 32, .H = 14, .W = 14, .O = 48, .ib = 16, .ob = 16});
  check({.C = 32, .H = 9, .W = 9, .O = 32, .ib = 16, .ob = 16, .strides = {2, 2}});
  check({.N = 2, .C = 8, .H = 1, .W = 1, .O = 16, .ib = 8, .ob = 16});
  // 1x1 map, 3x3 kernel, padding 1: only the centre tap sees data.
  check({.C = 4, .H = 1, .W = 1, .O = 8, .KH = 3, .KW = 3, .ib = 4, .ob = 8, .pads = {1, 1, 1, 1}});
}

TEST(Conv2dNchwc, StridesPaddingDilation) {
  check({.C = 8,
         .H = 13,
         .W = 17,
         .O = 16,
         .KH = 3,
         .KW = 3,
         .ib = 8,
         .ob = 16,
         .strides = {2, 2},
         .pads = {1, 1, 1, 1}});
  check({.C = 4, .H = 21, .W = 23, .O = 8, .KH = 8, .KW = 8, .ib = 4, .ob = 8, .strides = {4, 4}});
  // Padding on one side only.
  check({.C = 4, .H = 6, .W = 7, .O = 4, .KH = 3, .KW = 3, .ib = 4, .ob = 4, .pads = {0, 0, 2, 1}});
  check({.C = 4, .H = 6, .W = 7, .O = 4, .KH = 3, .KW = 3, .ib = 4, .ob = 4, .pads = {2, 0, 0, 0}});
  check({.C = 4, .H = 6, .W = 9, .O = 8, .KH = 3, .KW = 3, .ib = 4, .ob = 8, .pads = {0, 3, 0, 0}});
  check({.C = 6,
         .H = 11,
         .W = 12,
         .O = 8,
         .KH = 3,
         .KW = 3,
         .ib = 3,
         .ob = 8,
         .pads = {2, 2, 2, 2},
         .dilations = {2, 2}});
  check({.C = 8,
         .H = 9,
         .W = 10,
         .O = 16,
         .KH = 3,
         .KW = 2,
         .ib = 8,
         .ob = 16,
         .strides = {2, 1},
         .dilations = {2, 3}});
  // A stride that leaves the last padded rows and columns unread.
  check({.C = 4,
         .H = 8,
         .W = 8,
         .O = 4,
         .KH = 3,
         .KW = 3,
         .ib = 4,
         .ob = 4,
         .strides = {4, 4},
         .pads = {1, 1, 1, 1}});
}

TEST(Conv2dNchwc, Randomized) {
  std::mt19937 rng(2026);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const int64_t blocks[] = {1, 3, 4, 8, 16};
  int done = 0;
  for (int trial = 0; done < 14 && trial < 200; ++trial) {
    Conv c;
    c.ib = blocks[pick(0, 4)];
    c.ob = blocks[pick(0, 4)];
    c.N = pick(1, 2);
    c.C = c.ib * pick(1, 3) - (c.ib > 1 ? pick(0, 1) : 0);
    c.O = c.ob * pick(1, 3);
    c.H = pick(1, 12);
    c.W = pick(1, 33);
    c.KH = pick(1, 4);
    c.KW = pick(1, 4);
    c.strides = {pick(1, 2), pick(1, 4)};
    c.dilations = {pick(1, 2), pick(1, 2)};
    c.pads = {pick(0, 2), pick(0, 2), pick(0, 2), pick(0, 2)};
    if ((c.KH - 1) * c.dilations[0] + 1 > c.H + c.pads[0] + c.pads[2] ||
        (c.KW - 1) * c.dilations[1] + 1 > c.W + c.pads[1] + c.pads[3])
      continue;
    check(c, opts(static_cast<uint32_t>(trial)));
    ++done;
  }
  EXPECT_EQ(done, 14);
}

TEST(Conv2dNchwc, ExplicitConfigsWithTails) {
  Conv c{.N = 2,
         .C = 16,
         .H = 7,
         .W = 29,
         .O = 40,
         .KH = 3,
         .KW = 3,
         .ib = 8,
         .ob = 8,
         .pads = {1, 1, 1, 1}};
  check(c, opts(3, {{"oc_tile", 2}, {"ow_block", 7}, {"unroll_kw", 0}, {"unroll_ib", 0}}));
  check(c, opts(4, {{"oc_tile", 4}, {"ow_block", 12}, {"unroll_kw", 1}, {"unroll_ib", 0}}));
  check(c, opts(6, {{"oc_tile", 3}, {"ow_block", 29}, {"inline_pad", 1}, {"unroll_ib", 0}}));
  // Output rows in groups of 3 (7 rows: 3, 3, 1) outside the channel tiles, two images.
  check(c, opts(7, {{"oc_tile", 2}, {"ow_block", 8}, {"oh_group", 3}}));
  // Input channels outside the rows: a channel tail (5 blocks in tiles of 3), column tails.
  check(c, opts(8, {{"oc_tile", 3}, {"ow_block", 8}, {"ic_outer", 1}}));
  check(c, opts(9, {{"oc_tile", 2}, {"ow_block", 7}, {"ic_outer", 1}, {"inline_pad", 1}}));
  // Input channels in chunks: both blocks per pass over the rows; 3 blocks in chunks of 2 (a tail).
  check(c, opts(10, {{"oc_tile", 2}, {"ow_block", 7}, {"ic_outer", 1}, {"ic_chunk", 2}}));
  Conv odd = c;
  odd.C = 24;
  check(odd, opts(11, {{"oc_tile", 3}, {"ow_block", 8}, {"ic_outer", 1}, {"ic_chunk", 2}}));
  // Each knob of the space moved away from the default computes the same result.
  Conv s{.C = 16,
         .H = 3,
         .W = 30,
         .O = 48,
         .KH = 3,
         .KW = 3,
         .ib = 16,
         .ob = 16,
         .strides = {1, 2},
         .pads = {1, 1, 1, 1}};
  ConfigSpace space = lookup(s.op()).space(s.types(), s.attrs(), Target::host());
  ASSERT_EQ(space.size(), 8u);
  uint32_t seed = 10;
  for (const Knob& k : space) {
    EXPECT_GT(k.values.size(), 1u) << k.name;
    // The last alternative to the default (the most distant from the rule's choice).
    check(s, opts(seed++, {{k.name, k.values.back()}}));
  }
}

// The default rule: on AVX-512 (28 accumulators) a 56-column row is two blocks of 28; a 7-column
// row takes two channel blocks per tile; a prime width is split into equal blocks.
TEST(Conv2dNchwc, DefaultRule) {
  // The rule's cache thresholds are the target's L2: this test states the one it assumes.
  Target avx512 = Target::parse("llvm -vector-bits=512");
  avx512.l2_bytes = 512 << 10;
  Target avx2 = Target::parse("llvm -vector-bits=256");
  ASSERT_EQ(avx512.vector_lanes_f32(), 16);
  ASSERT_EQ(avx2.vector_lanes_f32(), 8);
  auto defaults = [](const Conv& c, const Target& t) {
    Config d;
    for (const Knob& k : lookup(c.op()).space(c.types(), c.attrs(), t)) d[k.name] = k.values[0];
    return d;
  };
  Conv c2{.C = 64,
          .H = 56,
          .W = 56,
          .O = 64,
          .KH = 3,
          .KW = 3,
          .ib = 16,
          .ob = 16,
          .pads = {1, 1, 1, 1}};
  // Two channel blocks per tile (one broadcast feeds two FMAs), 20 accumulators: 56 columns in
  // six blocks of at most 10; ib not unrolled with full-width vectors.
  Config d = defaults(c2, avx512);
  EXPECT_EQ(d["oc_tile"], 2);
  EXPECT_EQ(d["ow_block"], 10);
  EXPECT_EQ(d["unroll_ib"], 0);
  EXPECT_EQ(d["inline_pad"], 0);
  EXPECT_EQ(d["parallel"], 1);
  // AVX2 with 8-channel blocks: 10 accumulators, 2 blocks x 5 columns.
  Conv c2b = c2;
  c2b.ib = c2b.ob = 8;
  d = defaults(c2b, avx2);
  EXPECT_EQ(d["oc_tile"], 2);
  EXPECT_EQ(d["ow_block"], 5);
  EXPECT_EQ(d["unroll_ib"], 0);
  // Half-width blocks on AVX-512: four blocks per tile, ib unrolled.
  d = defaults(c2b, avx512);
  EXPECT_EQ(d["oc_tile"], 4);
  EXPECT_EQ(d["ow_block"], 5);
  EXPECT_EQ(d["unroll_ib"], 1);
  Conv c12{
      .C = 64, .H = 7, .W = 7, .O = 64, .KH = 3, .KW = 3, .ib = 16, .ob = 16, .pads = {1, 1, 1, 1}};
  d = defaults(c12, avx512);
  EXPECT_EQ(d["oc_tile"], 2);
  EXPECT_EQ(d["ow_block"], 7);
  // One channel block: 20 columns, 59 in three equal blocks (20, 20, 19).
  Conv odd{.C = 8, .H = 59, .W = 59, .O = 8, .KH = 1, .KW = 1, .ib = 8, .ob = 8};
  d = defaults(odd, avx512);
  EXPECT_EQ(d["oc_tile"], 1);
  EXPECT_EQ(d["ow_block"], 20);
  // 222,784 multiply-adds (under 2^18): one thread.
  EXPECT_EQ(d["parallel"], 0);
  // Depthwise: 4 columns, the padding inlined.
  Conv dw{.depthwise = true,
          .C = 64,
          .H = 56,
          .W = 56,
          .KH = 3,
          .KW = 3,
          .ib = 16,
          .pads = {1, 1, 1, 1}};
  d = defaults(dw, avx512);
  EXPECT_EQ(d["ow_block"], 4);
  EXPECT_EQ(d["inline_pad"], 1);
  // Rows in groups when a large weight meets a large input: MobileNet's 1x1 512 -> 512 at 14x14
  // (1 MiB of weight, 392 KiB of input: at most 4 rows, 112 KiB of input, fit in a quarter of
  // L2; groups divide the rows, so 2 rows); not when
  // either is small (ResNet's 3x3 64 -> 64 at 56x56: 144 KiB of weight). On 16 cores: its 16
  // channel tiles are too few for input channels outside the rows (below).
  Target cores16 = avx512;
  cores16.cores = 16;
  Conv pw{.C = 512, .H = 14, .W = 14, .O = 512, .KH = 1, .KW = 1, .ib = 16, .ob = 16};
  EXPECT_EQ(defaults(pw, cores16)["ic_outer"], 0);
  EXPECT_EQ(defaults(pw, cores16)["oh_group"], 2);
  EXPECT_EQ(defaults(c2, cores16)["oh_group"], 0);
  EXPECT_EQ(defaults(c12, cores16)["oh_group"], 0);
  // With a 2 MiB L2 the whole 392 KiB input stays there: no groups.
  Target big_l2 = cores16;
  big_l2.l2_bytes = 2 << 20;
  EXPECT_EQ(defaults(pw, big_l2)["oh_group"], 0);
  // With 256 KiB, groups of 2 rows (56 KiB of input each).
  Target small_l2 = cores16;
  small_l2.l2_bytes = 256 << 10;
  EXPECT_EQ(defaults(pw, small_l2)["oh_group"], 2);
  // 28 rows of which 7 fit: groups of 7, none guarded out (ResNet's 3x3 stride-2 64 -> 128).
  Conv s2{.C = 64,
          .H = 56,
          .W = 56,
          .O = 128,
          .KH = 3,
          .KW = 3,
          .ib = 16,
          .ob = 16,
          .strides = {2, 2},
          .pads = {1, 1, 1, 1}};
  Target l2_1m = avx512;
  l2_1m.l2_bytes = 1 << 20;
  EXPECT_EQ(defaults(s2, l2_1m)["oh_group"], 7);
  // Channel tiles with their rows inside and input channels in chunks, wherever a channel tile's
  // whole output fits in L1 and there are two tiles per core: ResNet's layer 4 (7x7, 512 -> 512;
  // a tile's output 6 KiB), MobileNet's 1x1 512 -> 512 at 14x14 (25 KiB) in place of row groups,
  // and its 256 -> 512 whose weight (512 KiB) is no larger; not ResNet's 7x7 64 -> 64 (two
  // tiles), nor 56x56 maps (a tile's output: 392 KiB).
  Conv l4 = c12;
  l4.C = l4.O = 512;
  EXPECT_EQ(defaults(l4, avx512)["ic_outer"], 1);
  EXPECT_EQ(defaults(pw, avx512)["ic_outer"], 1);
  EXPECT_EQ(defaults(pw, avx512)["oh_group"], 0);
  Conv pw_half = pw;
  pw_half.C = 256;
  EXPECT_EQ(defaults(pw_half, avx512)["ic_outer"], 1);
  EXPECT_EQ(defaults(c12, avx512)["ic_outer"], 0);
  // A chunk: the most channel blocks (a divisor of them) whose weight slice takes at most half
  // of L2 (256 KiB here): all 32 of the 1x1's (2 KiB each), 8 of layer 4's 32 (18 KiB each);
  // all 32 with a 2 MiB L2.
  EXPECT_EQ(defaults(pw, avx512)["ic_chunk"], 32);
  EXPECT_EQ(defaults(l4, avx512)["ic_chunk"], 8);
  EXPECT_EQ(defaults(l4, big_l2)["ic_chunk"], 32);
  EXPECT_EQ(defaults(c2, avx512)["ic_outer"], 0);
  Conv wide = l4;
  wide.H = wide.W = 56;
  EXPECT_EQ(defaults(wide, avx512)["ic_outer"], 0);
  // A 16 KiB L1 does not hold MobileNet's 25 KiB.
  Target small_l1 = avx512;
  small_l1.l1d_bytes = 16 << 10;
  EXPECT_EQ(defaults(pw, small_l1)["ic_outer"], 0);
  EXPECT_EQ(defaults(l4, small_l1)["ic_outer"], 1);
  EXPECT_EQ(defaults(l4, cores16)["ic_outer"], 0);
}

// The assembly of `c` with its default schedule, compiled for `target` whatever the host is.
std::string default_assembly(const Conv& c, const Target& target) {
  const OpDef& def = lookup(c.op());
  std::vector<te::Tensor> ins;
  for (const TensorType& t : c.types())
    ins.push_back(te::placeholder(to_exprs(t.shape), f32, "in"));
  std::vector<te::Tensor> outs = def.compute(ins, c.attrs());
  te::Schedule s(outs);
  def.schedule_x86(s, outs, target, {});
  auto module = codegen::LLVMModule::compile({lower(s, {ins[0], ins[1], outs[0]}, "k")}, target);
  return module->assembly();
}

// The micro-kernel: broadcast FMAs from memory, no gathers.
TEST(Conv2dNchwc, AssemblyUsesBroadcastFma) {
  // Compiled for an AVX-512 CPU whatever the host is: only the assembly is inspected.
  Target target = Target::parse("llvm -mcpu=skylake-avx512 -vector-bits=512");
  ASSERT_EQ(target.vector_lanes_f32(), 16);
  Conv c{.C = 32,
         .H = 8,
         .W = 28,
         .O = 32,
         .KH = 3,
         .KW = 3,
         .ib = 16,
         .ob = 16,
         .pads = {1, 1, 1, 1}};
  std::string a = default_assembly(c, target);
  EXPECT_NE(a.find("vfmadd231ps"), std::string::npos);
  EXPECT_TRUE(a.find("{1to16}") != std::string::npos ||
              a.find("vbroadcastss") != std::string::npos);
  EXPECT_EQ(a.find("gather"), std::string::npos);
  // No accumulator spills: no vector register goes to the stack.
  for (size_t p = a.find("(%rsp)"); p != std::string::npos; p = a.find("(%rsp)", p + 1)) {
    size_t line = a.rfind('\n', p);
    EXPECT_EQ(a.substr(line, p - line).find("zmm"), std::string::npos) << a.substr(line, 80);
  }
}

// A 1x1 convolution's register tile on AVX2: each broadcast reads memory at a constant offset
// from one address register. Index arithmetic done in 32 bits and sign-extended per access cost
// an lea and a movslq before every broadcast (MobileNet's 1x1 layers on a Zen 3).
TEST(Conv2dNchwc, Avx2BroadcastsAddressMemoryDirectly) {
  Target target = Target::parse("llvm -mcpu=haswell");
  Conv c{.C = 256, .H = 4, .W = 28, .O = 32, .KH = 1, .KW = 1, .ib = 8, .ob = 8};
  std::string a = default_assembly(c, target);
  // The hottest loop: from the label before the first FMA to the branch back.
  size_t fma = a.find("vfmadd231ps");
  ASSERT_NE(fma, std::string::npos);
  size_t begin = a.rfind(":\n", fma), end = a.find("\tj", fma);
  std::string loop = a.substr(begin, end - begin);
  EXPECT_NE(loop.find("vbroadcastss"), std::string::npos) << loop;
  EXPECT_EQ(loop.find("movslq"), std::string::npos) << loop;
}

// The AVX2 rule (16 registers: 10 accumulators) on this host, when it runs AVX2 code.
TEST(Conv2dNchwc, Avx2Target) {
  if (Target::host().vector_lanes_f32() < 8) GTEST_SKIP() << "needs AVX2";
  Target avx2 = Target::parse("llvm -mattr=-avx512f -vector-bits=256");
  ASSERT_EQ(avx2.vector_lanes_f32(), 8);
  std::vector<Conv> convs = {
      {.C = 16, .H = 6, .W = 23, .O = 24, .KH = 3, .KW = 3, .ib = 8, .ob = 8, .pads = {1, 1, 1, 1}},
      {.C = 8, .H = 5, .W = 9, .O = 32, .KH = 1, .KW = 1, .ib = 8, .ob = 16, .strides = {2, 2}},
      {.depthwise = true,
       .C = 16,
       .H = 7,
       .W = 13,
       .KH = 3,
       .KW = 3,
       .ib = 8,
       .strides = {2, 1},
       .pads = {1, 1, 1, 1}}};
  uint32_t seed = 40;
  for (const Conv& c : convs) {
    SCOPED_TRACE(c.str());
    const OpDef& def = lookup(c.op());
    std::vector<TensorType> types = c.types();
    std::vector<te::Tensor> ins;
    for (size_t i = 0; i < types.size(); ++i)
      ins.push_back(te::placeholder(to_exprs(types[i].shape), f32, "in" + std::to_string(i)));
    std::vector<te::Tensor> outs = def.compute(ins, c.attrs());
    te::Schedule s(outs);
    def.schedule_x86(s, outs, avx2, {});
    auto module = codegen::LLVMModule::compile({lower(s, {ins[0], ins[1], outs[0]}, "k")}, avx2);
    EXPECT_EQ(module->assembly().find("%zmm"), std::string::npos);
    std::mt19937 rng(seed++);
    std::vector<runtime::NDArray> in;
    for (const TensorType& t : types) in.push_back(ops_testing::random_array(t, rng));
    runtime::NDArray out = anvil::testing::array(shape_of(outs[0]));
    ASSERT_EQ(
        anvil::testing::call(module->get_function("k"), {in[0].get(), in[1].get(), out.get()}), 0)
        << AnvilGetLastError();
    runtime::NDArray want = def.reference(in, c.attrs())[0];
    for (int64_t i = 0; i < want.numel(); ++i) {
      float w = want.data_as<float>()[i];
      ASSERT_NEAR(out.data_as<float>()[i], w, 1e-4 * (1 + std::abs(w))) << "element " << i;
    }
  }
}

// ---- depthwise_conv2d_nchwc

TEST(DepthwiseConv2dNchwc, Shapes) {
  check({.depthwise = true,
         .C = 32,
         .H = 12,
         .W = 13,
         .KH = 3,
         .KW = 3,
         .ib = 16,
         .pads = {1, 1, 1, 1}});
  check({.depthwise = true,
         .N = 2,
         .C = 16,
         .H = 9,
         .W = 20,
         .KH = 3,
         .KW = 3,
         .ib = 8,
         .strides = {2, 2},
         .pads = {1, 1, 1, 1}});
  check({.depthwise = true,
         .C = 12,
         .H = 7,
         .W = 7,
         .KH = 5,
         .KW = 5,
         .ib = 4,
         .pads = {2, 2, 2, 2}});
  check(
      {.depthwise = true, .C = 3, .H = 1, .W = 1, .KH = 3, .KW = 3, .ib = 3, .pads = {1, 1, 1, 1}});
  check({.depthwise = true,
         .C = 2,
         .H = 10,
         .W = 11,
         .KH = 2,
         .KW = 3,
         .ib = 1,
         .strides = {1, 4},
         .pads = {0, 2, 1, 0},
         .dilations = {2, 1}});
}

TEST(DepthwiseConv2dNchwc, Space) {
  Conv c{.depthwise = true,
         .C = 16,
         .H = 6,
         .W = 21,
         .KH = 3,
         .KW = 3,
         .ib = 8,
         .strides = {1, 2},
         .pads = {1, 0, 2, 1}};
  ConfigSpace space = lookup(c.op()).space(c.types(), c.attrs(), Target::host());
  ASSERT_EQ(space.size(), 4u);
  EXPECT_EQ(space[0].name, "ow_block");
  EXPECT_EQ(space[1].name, "unroll_kw");
  EXPECT_EQ(space[2].name, "inline_pad");
  EXPECT_EQ(space[3].name, "parallel");
  // The padding as a stage of its own, the taps as a loop, a wide block with a tail; threads.
  check(c, opts(1, {{"inline_pad", 0}}));
  check(c, opts(2, {{"unroll_kw", 0}, {"ow_block", 8}}));
  check(c, opts(3, {{"inline_pad", 0}, {"parallel", 1}}));
  EXPECT_EQ(lookup(c.op()).pattern, Pattern::kComplexOutFusable);
}

TEST(DepthwiseConv2dNchwc, Randomized) {
  std::mt19937 rng(7);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const int64_t blocks[] = {1, 3, 4, 8, 16};
  int done = 0;
  for (int trial = 0; done < 12 && trial < 200; ++trial) {
    Conv c;
    c.depthwise = true;
    c.ib = blocks[pick(0, 4)];
    c.N = pick(1, 2);
    c.C = c.ib * pick(1, 3);
    c.H = pick(1, 12);
    c.W = pick(1, 40);
    c.KH = pick(1, 5);
    c.KW = pick(1, 5);
    c.strides = {pick(1, 2), pick(1, 2)};
    c.dilations = {pick(1, 2), pick(1, 2)};
    c.pads = {pick(0, 2), pick(0, 2), pick(0, 2), pick(0, 2)};
    if ((c.KH - 1) * c.dilations[0] + 1 > c.H + c.pads[0] + c.pads[2] ||
        (c.KW - 1) * c.dilations[1] + 1 > c.W + c.pads[1] + c.pads[3])
      continue;
    Config cfg;
    if (pick(0, 1)) cfg["ow_block"] = pick(1, 16);
    check(c, opts(static_cast<uint32_t>(trial), cfg));
    ++done;
  }
  EXPECT_EQ(done, 12);
}

// ---- packing and cross-checks with the NCHW conv2d

Attrs pack_attrs(int64_t ib, int64_t ob, int64_t group = 1, int64_t merge = 1) {
  if (merge == 1) return Attrs("conv2d_nchwc_pack_weight", {{"in_block", ib}, {"out_block", ob}});
  return Attrs("conv2d_nchwc_pack_weight",
               {{"in_block", ib}, {"out_block", ob}, {"group", group}, {"merge", merge}});
}
Attrs dw_pack_attrs(int64_t b) {
  return Attrs("depthwise_conv2d_nchwc_pack_weight", {{"block", b}});
}

TEST(Conv2dNchwcPackWeight, Shapes) {
  CheckOptions exact;
  exact.tol = 0;
  check_op("conv2d_nchwc_pack_weight", {{{32, 16, 3, 3}, f32}}, pack_attrs(16, 16), exact);
  check_op("conv2d_nchwc_pack_weight", {{{13, 5, 3, 2}, f32}}, pack_attrs(4, 8), exact);
  check_op("conv2d_nchwc_pack_weight", {{{64, 3, 7, 7}, f32}}, pack_attrs(3, 16), exact);
  check_op("conv2d_nchwc_pack_weight", {{{7, 9, 1, 1}, f32}}, pack_attrs(1, 3), exact);
  // Merged groups: 8 groups of 4 into 2 of 16; 3 groups of 8 into 2 of 16 (the last padded).
  check_op("conv2d_nchwc_pack_weight", {{{32, 4, 3, 3}, f32}}, pack_attrs(16, 16, 8, 4), exact);
  check_op("conv2d_nchwc_pack_weight", {{{24, 8, 1, 2}, f32}}, pack_attrs(16, 16, 3, 2), exact);
  check_op("depthwise_conv2d_nchwc_pack_weight", {{{32, 1, 3, 3}, f32}}, dw_pack_attrs(16), exact);
  check_op("depthwise_conv2d_nchwc_pack_weight", {{{10, 1, 5, 3}, f32}}, dw_pack_attrs(4), exact);
  EXPECT_EQ(lookup("conv2d_nchwc_pack_weight").pattern, Pattern::kInjective);
  // Padding channels are zeros and every weight lands where conv2d_nchwc reads it.
  std::mt19937 rng(3);
  runtime::NDArray w = ops_testing::random_array({{5, 3, 2, 2}, f32}, rng);
  runtime::NDArray p = lookup("conv2d_nchwc_pack_weight").reference({w}, pack_attrs(2, 4))[0];
  ASSERT_EQ(p.shape(), (std::vector<int64_t>{2, 2, 2, 2, 2, 4}));
  const float* wp = w.data_as<float>();
  const float* pp = p.data_as<float>();
  for (int64_t o = 0; o < 8; ++o) {
    for (int64_t c = 0; c < 4; ++c) {
      for (int64_t t = 0; t < 4; ++t) {
        float want = o < 5 && c < 3 ? wp[(o * 3 + c) * 4 + t] : 0.0f;
        EXPECT_EQ(pp[(((o / 4) * 2 + c / 2) * 4 + t) * 8 + (c % 2) * 4 + o % 4], want);
      }
    }
  }
}

// NCHW conv2d (its own reference) against conv2d_nchwc on the packed operands: the blocked
// reference and the compiled kernel agree with it.
void cross_check(const Conv& c, uint32_t seed) {
  SCOPED_TRACE(c.str());
  std::mt19937 rng(seed);
  int64_t group = c.depthwise ? c.C : c.group;
  runtime::NDArray x = ops_testing::random_array({{c.N, c.C, c.H, c.W}, f32}, rng);
  runtime::NDArray w = ops_testing::random_array(
      {{c.depthwise ? c.C : c.O, c.depthwise ? 1 : c.C / c.group, c.KH, c.KW}, f32}, rng);
  std::map<std::string, AttrValue> v = c.attrs().values();
  v["group"] = group;
  runtime::NDArray want = lookup("conv2d").reference({x, w}, Attrs("conv2d", v))[0];
  int64_t ob = c.depthwise ? c.ib : c.ob;
  auto layout = [](const std::string& src, const std::string& dst) {
    return Attrs("layout_transform", {{"src_layout", src}, {"dst_layout", dst}});
  };
  const OpDef& lt = lookup("layout_transform");
  runtime::NDArray xb = lt.reference({x}, layout("NCHW", "NCHW" + std::to_string(c.ib) + "c"))[0];
  runtime::NDArray wb =
      c.depthwise
          ? lookup("depthwise_conv2d_nchwc_pack_weight").reference({w}, dw_pack_attrs(c.ib))[0]
          : lookup("conv2d_nchwc_pack_weight")
                .reference({w}, pack_attrs(c.ib, c.ob, c.group, c.merge))[0];
  runtime::NDArray wantb =
      lt.reference({want}, layout("NCHW", "NCHW" + std::to_string(ob) + "c"))[0];
  runtime::NDArray ref = lookup(c.op()).reference({xb, wb}, c.attrs())[0];
  ASSERT_EQ(ref.shape(), wantb.shape());
  int64_t OC = c.depthwise ? c.C : c.O;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    // Channels past O in the last block are zero in both.
    float e = wantb.data_as<float>()[i], g = ref.data_as<float>()[i];
    ASSERT_NEAR(g, e, 1e-4 * (1 + std::abs(e))) << "element " << i << " (O = " << OC << ")";
  }
  CheckOptions o = opts(seed);
  o.inputs = {xb, wb};
  check_op(c.op(), c.types(), c.attrs(), o);
}

TEST(Conv2dNchwc, CrossCheckWithNchwConv2d) {
  cross_check({.C = 20,
               .H = 9,
               .W = 10,
               .O = 24,
               .KH = 3,
               .KW = 3,
               .ib = 8,
               .ob = 16,
               .pads = {1, 1, 1, 1}},
              1);
  cross_check({.C = 3,
               .H = 15,
               .W = 15,
               .O = 16,
               .KH = 7,
               .KW = 7,
               .ib = 3,
               .ob = 16,
               .strides = {2, 2},
               .pads = {3, 3, 3, 3}},
              2);
  cross_check({.N = 2,
               .C = 13,
               .H = 6,
               .W = 7,
               .O = 10,
               .KH = 2,
               .KW = 3,
               .ib = 4,
               .ob = 4,
               .strides = {1, 2},
               .pads = {0, 1, 1, 0},
               .dilations = {2, 1}},
              3);
  cross_check({.depthwise = true,
               .C = 20,
               .H = 11,
               .W = 9,
               .KH = 3,
               .KW = 3,
               .ib = 8,
               .strides = {2, 2},
               .pads = {1, 1, 1, 1}},
              4);
  // Grouped: RegNet's 8 channels per group in blocks of 8 (stride 2), ResNeXt's 4 in blocks of
  // 4, and 16 per group read in blocks of 8 (two input blocks per group, 4 output blocks).
  cross_check({.C = 24,
               .H = 9,
               .W = 8,
               .O = 24,
               .KH = 3,
               .KW = 3,
               .ib = 8,
               .ob = 8,
               .strides = {2, 2},
               .pads = {1, 1, 1, 1},
               .group = 3},
              5);
  cross_check({.C = 16,
               .H = 7,
               .W = 7,
               .O = 16,
               .KH = 3,
               .KW = 3,
               .ib = 4,
               .ob = 4,
               .pads = {1, 1, 1, 1},
               .group = 4},
              6);
  cross_check({.C = 32, .H = 5, .W = 6, .O = 64, .KH = 1, .KW = 1, .ib = 8, .ob = 8, .group = 2},
              7);
  // Groups narrower than the block, merged block-diagonally: ResNeXt's 4 channels per group,
  // four to a block of 16; RegNet-Y's 8, two to a block, an odd count (the last block half
  // padding); 2 per group, four to a block of 8.
  cross_check({.C = 32,
               .H = 6,
               .W = 7,
               .O = 32,
               .KH = 3,
               .KW = 3,
               .ib = 16,
               .ob = 16,
               .pads = {1, 1, 1, 1},
               .group = 8,
               .merge = 4},
              8);
  cross_check({.C = 24,
               .H = 9,
               .W = 8,
               .O = 24,
               .KH = 3,
               .KW = 3,
               .ib = 16,
               .ob = 16,
               .strides = {2, 2},
               .pads = {1, 1, 1, 1},
               .group = 3,
               .merge = 2},
              9);
  cross_check({.C = 16,
               .H = 5,
               .W = 5,
               .O = 16,
               .KH = 1,
               .KW = 1,
               .ib = 8,
               .ob = 8,
               .group = 8,
               .merge = 4},
              10);
}

// ---- fused epilogues

// conv2d_nchwc, then bias add ([1, O/ob, 1, 1, ob]), a batch-norm-like scale, a residual add and
// relu through the elementwise ops' computes, all scheduled by conv2d_nchwc's schedule on the last
// tensor; compared with the composition of the references.
void check_epilogue(const Conv& c, uint32_t seed) {
  SCOPED_TRACE(c.str());
  const OpDef& def = lookup(c.op());
  std::vector<TensorType> types = c.types();
  std::vector<int64_t> oshape = def.infer(types, c.attrs())[0].shape;
  std::vector<int64_t> cshape = {1, oshape[1], 1, 1, oshape[4]};
  types.push_back({cshape, f32});  // bias
  types.push_back({cshape, f32});  // scale
  types.push_back({oshape, f32});  // residual
  std::vector<te::Tensor> ins;
  for (size_t i = 0; i < types.size(); ++i)
    ins.push_back(te::placeholder(to_exprs(types[i].shape), f32, "in" + std::to_string(i)));
  const OpDef& add = lookup("add");
  const OpDef& mul = lookup("mul");
  const OpDef& relu = lookup("relu");
  te::Tensor t = def.compute({ins[0], ins[1]}, c.attrs())[0];
  t = add.compute({t, ins[2]}, Attrs("add", {}))[0];
  t = mul.compute({t, ins[3]}, Attrs("mul", {}))[0];
  t = add.compute({t, ins[4]}, Attrs("add", {}))[0];
  t = relu.compute({t}, Attrs("relu", {}))[0];
  te::Schedule s({t});
  Target target = Target::host();
  def.schedule_x86(s, {t}, target, {});
  std::vector<te::Tensor> args = ins;
  args.push_back(t);
  auto module = codegen::LLVMModule::compile({lower(s, args, "fused")}, target);

  std::mt19937 rng(seed);
  std::vector<runtime::NDArray> in;
  for (const TensorType& ty : types) in.push_back(ops_testing::random_array(ty, rng));
  runtime::NDArray out = anvil::testing::array(oshape);
  std::vector<const DLTensor*> ptrs;
  for (const auto& a : in) ptrs.push_back(a.get());
  ptrs.push_back(out.get());
  ASSERT_EQ(anvil::testing::call(module->get_function("fused"), ptrs), 0) << AnvilGetLastError();
  runtime::NDArray want = def.reference({in[0], in[1]}, c.attrs())[0];
  want = add.reference({want, in[2]}, Attrs("add", {}))[0];
  want = mul.reference({want, in[3]}, Attrs("mul", {}))[0];
  want = add.reference({want, in[4]}, Attrs("add", {}))[0];
  want = relu.reference({want}, Attrs("relu", {}))[0];
  int positive = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    float w = want.data_as<float>()[i];
    positive += w > 0;
    ASSERT_NEAR(out.data_as<float>()[i], w, 1e-4 * (1 + std::abs(w))) << "element " << i;
  }
  EXPECT_GT(positive, 0);
  EXPECT_LT(positive, want.numel());
}

TEST(Conv2dNchwc, FusedEpilogue) {
  check_epilogue({.N = 2,
                  .C = 16,
                  .H = 9,
                  .W = 30,
                  .O = 32,
                  .KH = 3,
                  .KW = 3,
                  .ib = 16,
                  .ob = 16,
                  .pads = {1, 1, 1, 1}},
                 1);
  check_epilogue(
      {.C = 8, .H = 7, .W = 7, .O = 12, .KH = 1, .KW = 1, .ib = 8, .ob = 4, .strides = {2, 2}}, 2);
  check_epilogue({.depthwise = true,
                  .C = 24,
                  .H = 10,
                  .W = 11,
                  .KH = 3,
                  .KW = 3,
                  .ib = 8,
                  .strides = {2, 2},
                  .pads = {1, 1, 1, 1}},
                 3);
}

// ---- errors

std::string infer_error(const std::string& op, const std::vector<TensorType>& types,
                        const Attrs& attrs) {
  return testing::user_error([&] { lookup(op).infer(types, attrs); });
}

void expect_has(const std::string& msg, const std::string& part) {
  EXPECT_NE(msg.find(part), std::string::npos) << "message: " << msg << "\nexpected: " << part;
}

TEST(ConvNchwcErrors, Attributes) {
  Conv c{.C = 8, .H = 8, .W = 8, .O = 8, .KH = 3, .KW = 3, .ib = 8, .ob = 8};
  auto with = [&](const std::string& name, std::vector<int64_t> v) {
    Attrs a = c.attrs();
    a.set(name, std::move(v));
    return infer_error(c.op(), c.types(), a);
  };
  expect_has(with("pads", {1, -1, 1, 1}),
             "conv2d_nchwc: attribute 'pads' must be non-negative, got [1, -1, 1, 1]");
  expect_has(with("pads", {1, 1}), "conv2d_nchwc: attribute 'pads' must have 4 values, got [1, 1]");
  expect_has(with("strides", {0, 1}),
             "conv2d_nchwc: attribute 'strides' must be positive, got [0, 1]");
  expect_has(with("dilations", {4, 1}),
             "conv2d_nchwc: kernel height 3 (dilated 9, attribute 'dilations' = [4, 1]) does "
             "not fit the padded input height 8");
}

TEST(ConvNchwcErrors, Shapes) {
  Attrs a("conv2d_nchwc", {});
  expect_has(infer_error("conv2d_nchwc", {{{1, 2, 8, 8, 8}, f32}, {{2, 2, 3, 3, 4, 8}, f32}}, a),
             "conv2d_nchwc: input x float32[1, 2, 8, 8, 8] has 2 channel blocks of 8, but weight "
             "float32[2, 2, 3, 3, 4, 8] expects 2 blocks of 4");
  expect_has(infer_error("conv2d_nchwc", {{{1, 3, 8, 8, 8}, f32}, {{2, 2, 3, 3, 8, 8}, f32}}, a),
             "has 3 channel blocks of 8, but weight");
  Attrs g3("conv2d_nchwc", {{"group", int64_t{3}}});
  expect_has(infer_error("conv2d_nchwc", {{{1, 2, 8, 8, 8}, f32}, {{2, 1, 3, 3, 8, 8}, f32}}, g3),
             "conv2d_nchwc: attribute 'group' = 3 does not divide the input's 2 channel blocks");
  Attrs g2("conv2d_nchwc", {{"group", int64_t{2}}});
  expect_has(infer_error("conv2d_nchwc", {{{1, 4, 8, 8, 8}, f32}, {{2, 1, 3, 3, 8, 8}, f32}}, g2),
             "expects 1 blocks of 8 per group (dimensions 1 and 4; group 2)");
  expect_has(infer_error("conv2d_nchwc", {{{1, 16, 8, 8}, f32}, {{2, 2, 3, 3, 8, 8}, f32}}, a),
             "conv2d_nchwc: input x must have rank 5 (NCHW[x]c), got float32[1, 16, 8, 8]");
  expect_has(infer_error("conv2d_nchwc", {{{1, 2, 8, 8, 8}, f32}, {{16, 16, 3, 3}, f32}}, a),
             "conv2d_nchwc: weight must have rank 6 ([O/ob, C/ib, KH, KW, ib, ob])");
  expect_has(infer_error("conv2d_nchwc",
                         {{{1, 2, 8, 8, 8}, DataType::Int32()}, {{2, 2, 3, 3, 8, 8}, f32}}, a),
             "conv2d_nchwc: input 0 must be float32, not int32[1, 2, 8, 8, 8]");
  Attrs d("depthwise_conv2d_nchwc", {});
  expect_has(infer_error("depthwise_conv2d_nchwc",
                         {{{1, 2, 8, 8, 8}, f32}, {{2, 1, 3, 3, 1, 16}, f32}}, d),
             "depthwise_conv2d_nchwc: weight float32[2, 1, 3, 3, 1, 16] does not match input x "
             "float32[1, 2, 8, 8, 8] (expected [2, 1, KH, KW, 1, 8])");
  expect_has(infer_error("conv2d_nchwc_pack_weight", {{{8, 8, 3, 3}, f32}},
                         Attrs("conv2d_nchwc_pack_weight",
                               {{"in_block", int64_t{0}}, {"out_block", int64_t{8}}})),
             "conv2d_nchwc_pack_weight: attribute 'in_block' must be positive, got 0");
  expect_has(infer_error("conv2d_nchwc_pack_weight", {{{8, 8, 3, 3}, f32}},
                         Attrs("conv2d_nchwc_pack_weight", {{"in_block", int64_t{8}}})),
             "out_block");
  expect_has(
      infer_error("depthwise_conv2d_nchwc_pack_weight", {{{8, 2, 3, 3}, f32}}, dw_pack_attrs(8)),
      "depthwise_conv2d_nchwc_pack_weight: weight float32[8, 2, 3, 3] is not depthwise");
}

TEST(Nchwc, BlockRule) {
  // Zen 5: blocks of 8 run at half the FMA rate, so padding to whole vectors pays (116 -> 128).
  Target zen5 = Target::parse("llvm -mcpu=znver5 -vector-bits=512");
  EXPECT_EQ(nchwc_block(64, zen5), 16);
  EXPECT_EQ(nchwc_block(116, zen5), 16);
  EXPECT_EQ(nchwc_block(72, zen5), 16);
  EXPECT_EQ(nchwc_block(20, zen5), 16);
  EXPECT_EQ(nchwc_block(1000, zen5), 16);
  EXPECT_EQ(nchwc_block(3, zen5), 3);  // an RGB input: padding would triple the stem's reduction
  EXPECT_EQ(nchwc_channels(17, 16), 32);
  // Zen 4 splits a 512-bit FMA in two 256-bit halves: blocks of 8 lose no rate, so they win
  // wherever 16 would pad more (116 -> 120, not 128), and 64 keeps whole vectors.
  Target zen4 = Target::parse("llvm -mcpu=znver4 -vector-bits=512");
  EXPECT_EQ(nchwc_block(116, zen4), 8);
  EXPECT_EQ(nchwc_block(72, zen4), 8);
  EXPECT_EQ(nchwc_block(64, zen4), 16);
  EXPECT_EQ(nchwc_block(3, zen4), 3);
  // AVX2: whole vectors are 8.
  Target zen3 = Target::parse("llvm -mcpu=znver3 -vector-bits=256");
  EXPECT_EQ(nchwc_block(1000, zen3), 8);
  EXPECT_EQ(nchwc_block(20, zen3), 8);
  EXPECT_EQ(nchwc_block(64, zen3), 8);
}

}  // namespace
}  // namespace anvil::ops
