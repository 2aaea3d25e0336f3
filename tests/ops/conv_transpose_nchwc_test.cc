// conv2d_transpose_nchwc and its weight packing: against the blocked scatter reference
// (OpDef.reference), and cross-checked end to end against the NCHW conv2d_transpose reference
// (ONNX weight -> compiled pack op -> compiled transposed convolution on a naively re-laid-out
// input). Randomized (fixed seed) strides, kernels, asymmetric pads, output padding, dilations,
// blocks and odd sizes; fused epilogues; explicit configs with tails; diagnostics.
// Tolerance: |got - want| <= 1e-4 * (1 + |want|).
#include <gtest/gtest.h>

#include <cmath>
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
using ops_testing::random_array;
using runtime::NDArray;

const DataType f32 = DataType::Float32();
const char* kOp = "conv2d_transpose_nchwc";
const char* kPack = "conv2d_transpose_nchwc_pack_weight";

struct Deconv {
  int64_t N = 1, C = 4, O = 4, H = 5, W = 5, KH = 3, KW = 3;
  std::vector<int64_t> strides = {1, 1}, pads = {0, 0, 0, 0}, dilations = {1, 1},
                       output_padding = {0, 0};
  int64_t ib = 4, ob = 4;
  bool input_innermost = false;

  Attrs attrs() const {
    Attrs a(kOp, {{"kernel_shape", std::vector<int64_t>{KH, KW}},
                  {"strides", strides},
                  {"pads", pads},
                  {"dilations", dilations},
                  {"output_padding", output_padding}});
    if (input_innermost) a.set("input_innermost", int64_t{1});
    return a;
  }
  Attrs nchw_attrs() const {
    return Attrs("conv2d_transpose", {{"strides", strides},
                                      {"pads", pads},
                                      {"dilations", dilations},
                                      {"output_padding", output_padding}});
  }
  Attrs pack_attrs() const {
    Attrs a(kPack,
            {{"in_block", ib}, {"out_block", ob}, {"strides", strides}, {"dilations", dilations}});
    if (input_innermost) a.set("input_innermost", int64_t{1});
    return a;
  }
  std::vector<int64_t> x_blocked() const { return {N, (C + ib - 1) / ib, H, W, ib}; }
  std::string str() const {
    std::ostringstream os;
    auto l = [&](const char* n, const std::vector<int64_t>& v) {
      os << " " << n << "=[";
      for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << v[i];
      os << "]";
    };
    os << "N=" << N << " C=" << C << " O=" << O << " H=" << H << " W=" << W << " K=" << KH << "x"
       << KW << " ib=" << ib << " ob=" << ob;
    l("strides", strides);
    l("pads", pads);
    l("dilations", dilations);
    l("output_padding", output_padding);
    if (input_innermost) os << " input_innermost";
    return os.str();
  }
};

// NCHW [N, C, H, W] -> [N, ceil(C/b), H, W, b], zero channels appended.
NDArray to_blocked(const NDArray& a, int64_t b) {
  std::vector<int64_t> s = a.shape();
  int64_t cb = (s[1] + b - 1) / b;
  NDArray out = NDArray::empty({s[0], cb, s[2], s[3], b}, runtime::dl_float32(), true);
  for (int64_t n = 0; n < s[0]; ++n)
    for (int64_t c = 0; c < s[1]; ++c)
      for (int64_t i = 0; i < s[2] * s[3]; ++i)
        out.data_as<float>()[(((n * cb + c / b) * s[2] * s[3]) + i) * b + c % b] =
            a.data_as<float>()[(n * s[1] + c) * s[2] * s[3] + i];
  return out;
}

using Epilogue = std::function<te::Tensor(const te::Tensor& conv, const std::vector<te::Tensor>&)>;

// Compiles `name` on arrays of the given shapes (extra placeholders for the epilogue after the
// op's own inputs), the output being the epilogue's last stage, and runs it.
NDArray run(const std::string& name, const std::vector<NDArray>& inputs, const Attrs& attrs,
            size_t op_inputs, const Config& config = {}, const Epilogue& epilogue = nullptr,
            std::string* ir_text = nullptr) {
  const OpDef& def = lookup(name);
  std::vector<te::Tensor> ins;
  for (size_t i = 0; i < inputs.size(); ++i)
    ins.push_back(te::placeholder(to_exprs(inputs[i].shape()), f32, "in" + std::to_string(i)));
  te::Tensor out = def.compute(
      std::vector<te::Tensor>(ins.begin(), ins.begin() + static_cast<long>(op_inputs)), attrs)[0];
  if (epilogue) {
    out = epilogue(out,
                   std::vector<te::Tensor>(ins.begin() + static_cast<long>(op_inputs), ins.end()));
  }
  te::Schedule s({out});
  Target target = Target::host();
  def.schedule_x86(s, {out}, target, config);
  std::vector<te::Tensor> args = ins;
  args.push_back(out);
  ir::LoweredFunc f = lower(s, args, name);
  if (ir_text) {
    std::ostringstream os;
    os << f.body;
    *ir_text = os.str();
  }
  auto module = codegen::LLVMModule::compile({f}, target);
  NDArray result = testing::array(shape_of(out), f32);
  std::vector<const DLTensor*> ptrs;
  for (const NDArray& a : inputs) ptrs.push_back(a.get());
  ptrs.push_back(result.get());
  EXPECT_EQ(testing::call(module->get_function(name), ptrs), 0) << AnvilGetLastError();
  return result;
}

void expect_close(const NDArray& got, const NDArray& want, double tol = 1e-4) {
  ASSERT_EQ(got.shape(), want.shape());
  int bad = 0;
  for (int64_t i = 0; i < want.numel() && bad < 5; ++i) {
    double g = got.data_as<float>()[i], w = want.data_as<float>()[i];
    if (!(std::abs(g - w) <= tol * (1 + std::abs(w)))) {
      ++bad;
      ADD_FAILURE() << "element " << i << ": got " << g << ", want " << w;
    }
  }
}

// The packed weight of a random ONNX weight (by the pack op's reference).
NDArray packed_weight(const Deconv& d, std::mt19937& rng) {
  NDArray w = random_array({{d.C, d.O, d.KH, d.KW}, f32}, rng);
  return lookup(kPack).reference({w}, d.pack_attrs())[0];
}

// The op under its schedule against its blocked scatter reference.
void check(const Deconv& d, uint32_t seed = 1, Config config = {}) {
  SCOPED_TRACE(d.str());
  std::mt19937 rng(seed);
  CheckOptions o;
  o.tol = 1e-4;
  o.config = std::move(config);
  NDArray x = random_array({d.x_blocked(), f32}, rng);
  NDArray w = packed_weight(d, rng);
  o.inputs = {x, w};
  check_op(kOp, {{x.shape(), f32}, {w.shape(), f32}}, d.attrs(), o);
}

// ONNX semantics end to end: compiled pack + compiled op against conv2d_transpose's reference.
void cross_check(const Deconv& d, uint32_t seed = 1, const Config& config = {}) {
  SCOPED_TRACE(d.str());
  std::mt19937 rng(seed);
  NDArray x = random_array({{d.N, d.C, d.H, d.W}, f32}, rng);
  NDArray w = random_array({{d.C, d.O, d.KH, d.KW}, f32}, rng);
  NDArray want = lookup("conv2d_transpose").reference({x, w}, d.nchw_attrs())[0];
  NDArray wp = run(kPack, {w}, d.pack_attrs(), 1);
  NDArray got = run(kOp, {to_blocked(x, d.ib), wp}, d.attrs(), 2, config);
  expect_close(got, to_blocked(want, d.ob));
}

// ---- the pack op

TEST(ConvTransposeNchwcPack, MatchesReferenceAndZeroFillsSlots) {
  auto pack = [](std::vector<int64_t> shape, int64_t ib, int64_t ob, std::vector<int64_t> s,
                 std::vector<int64_t> dl) {
    Attrs a(kPack, {{"in_block", ib}, {"out_block", ob}, {"strides", s}, {"dilations", dl}});
    CheckOptions o;
    o.tol = 0;
    check_op(kPack, {{shape, f32}}, a, o);
    return lookup(kPack).infer({{shape, f32}}, a)[0].shape;
  };
  // 4x4 stride 2: 2x2 slots per phase, no waste.
  EXPECT_EQ(pack({8, 16, 4, 4}, 4, 8, {2, 2}, {1, 1}),
            (std::vector<int64_t>{2, 2, 2, 2, 4, 2, 2, 8}));
  // 5x3 stride 2x3: phases of 3 and 2 taps -> 3 slots; 1 slot per phase along x.
  EXPECT_EQ(pack({5, 3, 5, 3}, 4, 8, {2, 3}, {1, 1}),
            (std::vector<int64_t>{1, 2, 3, 1, 4, 2, 3, 8}));
  // Dilation 2 with stride 2: odd phases have no taps (all zero).
  EXPECT_EQ(pack({3, 5, 3, 2}, 3, 4, {2, 1}, {2, 1}),
            (std::vector<int64_t>{2, 1, 3, 2, 3, 2, 1, 4}));
  pack({6, 7, 4, 5}, 16, 1, {3, 2}, {2, 3});
}

TEST(ConvTransposeNchwcPack, EveryTapExactlyOnce) {
  // Ones in the ONNX weight: the packed weight sums to C*O*KH*KW and holds only 0 and 1.
  Attrs a(kPack, {{"in_block", int64_t{4}},
                  {"out_block", int64_t{3}},
                  {"strides", std::vector<int64_t>{3, 2}},
                  {"dilations", std::vector<int64_t>{2, 1}}});
  NDArray w = NDArray::empty({5, 4, 5, 3}, runtime::dl_float32());
  for (int64_t i = 0; i < w.numel(); ++i) w.data_as<float>()[i] = 1;
  NDArray p = run(kPack, {w}, a, 1);
  double sum = 0;
  for (int64_t i = 0; i < p.numel(); ++i) {
    float v = p.data_as<float>()[i];
    EXPECT_TRUE(v == 0 || v == 1);
    sum += v;
  }
  EXPECT_EQ(sum, 5 * 4 * 5 * 3);
}

// ---- the op against the blocked scatter reference

TEST(ConvTransposeNchwc, DcganLikeStride2Kernel4) {
  check({.C = 32,
         .O = 32,
         .H = 4,
         .W = 4,
         .KH = 4,
         .KW = 4,
         .strides = {2, 2},
         .pads = {1, 1, 1, 1},
         .ib = 16,
         .ob = 16});
  check({.C = 16,
         .O = 3,
         .H = 7,
         .W = 9,
         .KH = 4,
         .KW = 4,
         .strides = {2, 2},
         .pads = {1, 1, 1, 1},
         .ib = 16,
         .ob = 8});
}

TEST(ConvTransposeNchwc, Stride1IsACorrelation) {
  check({.C = 5, .O = 6, .H = 6, .W = 7, .KH = 3, .KW = 3, .pads = {1, 1, 1, 1}, .ib = 4, .ob = 4});
}

TEST(ConvTransposeNchwc, KernelNotAMultipleOfStride) {
  check({.C = 4,
         .O = 8,
         .H = 5,
         .W = 6,
         .KH = 3,
         .KW = 5,
         .strides = {2, 3},
         .pads = {0, 1, 1, 2},
         .ib = 4,
         .ob = 8});
  check({.C = 3, .O = 5, .H = 4, .W = 3, .KH = 1, .KW = 2, .strides = {3, 3}, .ib = 3, .ob = 1});
}

TEST(ConvTransposeNchwc, OutputPaddingAndDilation) {
  check({.C = 4,
         .O = 4,
         .H = 5,
         .W = 5,
         .KH = 3,
         .KW = 3,
         .strides = {2, 2},
         .pads = {1, 0, 2, 1},
         .dilations = {2, 1},
         .output_padding = {1, 1}});
  check({.C = 2,
         .O = 3,
         .H = 4,
         .W = 6,
         .KH = 2,
         .KW = 3,
         .strides = {3, 2},
         .dilations = {2, 3},
         .output_padding = {2, 1},
         .ib = 1,
         .ob = 3});
}

TEST(ConvTransposeNchwc, Batch2AndLargePadding) {
  // Pads larger than the kernel crop the output; the first output rows read no padding.
  check({.N = 2,
         .C = 8,
         .O = 4,
         .H = 6,
         .W = 7,
         .KH = 4,
         .KW = 4,
         .strides = {2, 2},
         .pads = {4, 3, 2, 5},
         .ib = 8,
         .ob = 4});
}

TEST(ConvTransposeNchwc, ExplicitConfigsWithTails) {
  Deconv d{.C = 8,
           .O = 24,
           .H = 6,
           .W = 11,
           .KH = 4,
           .KW = 3,
           .strides = {2, 2},
           .pads = {1, 1, 0, 1},
           .output_padding = {1, 0},
           .ib = 4,
           .ob = 8};
  check(d, 2, {{"tile_oc", 2}, {"tile_oh", 3}, {"tile_ow", 5}, {"unroll_ib", 0}});
  check(d, 3, {{"tile_oc", 3}, {"tile_ow", 7}, {"unroll_kw", 0}});
  check(d, 4, {{"tile_oc", 1}, {"tile_oh", 2}, {"tile_ow", 1}});
  // Input channels in chunks (the whole plane accumulates), one that leaves a tail.
  check(d, 6, {{"ic_chunk", 1}, {"tile_oc", 3}, {"tile_oh", 2}, {"tile_ow", 6}});
  check(d, 7, {{"ic_chunk", 3}, {"unroll_ib", 1}, {"tile_oh", 3}});
  cross_check(d, 5, {{"tile_oc", 2}, {"tile_ow", 16}});
}

// Vectors over the input channels (input_innermost): the weight packed with the input block
// innermost, the reduction over it factored into vector partial sums.
TEST(ConvTransposeNchwc, InputInnermost) {
  Deconv dcgan{.C = 16,
               .O = 3,
               .H = 7,
               .W = 9,
               .KH = 4,
               .KW = 4,
               .strides = {2, 2},
               .pads = {1, 1, 1, 1},
               .ib = 8,
               .ob = 3,
               .input_innermost = true};
  check(dcgan);
  check(dcgan, 2, {{"tile_ow", 1}});
  check(dcgan, 3, {{"tile_ow", 5}, {"parallel", 0}});  // a tail, phases not aligned to tiles
  cross_check(dcgan, 4);
  Deconv odd{.N = 2,
             .C = 6,
             .O = 2,
             .H = 5,
             .W = 6,
             .KH = 3,
             .KW = 5,
             .strides = {2, 3},
             .pads = {0, 1, 1, 2},
             .dilations = {2, 1},
             .output_padding = {1, 2},
             .ib = 4,
             .ob = 1,
             .input_innermost = true};
  check(odd, 5);
  check(odd, 6, {{"tile_ow", 4}});
  cross_check(odd, 7);
  // The space: columns of ob accumulators filling 3/4 of the registers, whole phase pairs (12 of
  // AVX2's 16: 4 columns of 3 channels; 24 of AVX-512's 32: 8), and the thread split.
  dcgan.W = 32;
  std::vector<int64_t> ws =
      lookup(kPack).infer({{{dcgan.C, dcgan.O, 4, 4}, f32}}, dcgan.pack_attrs())[0].shape;
  EXPECT_EQ(ws, (std::vector<int64_t>{1, 2, 2, 2, 2, 2, 3, 8}));
  for (const char* cpu : {"llvm -mcpu=znver4 -vector-bits=512", "llvm -mcpu=znver3"}) {
    SCOPED_TRACE(cpu);
    Target t = Target::parse(cpu);
    ConfigSpace space = lookup(kOp).space({{dcgan.x_blocked(), f32}, {ws, f32}}, dcgan.attrs(), t);
    ASSERT_EQ(space.size(), 2u);
    EXPECT_EQ(space[0].name, "tile_ow");
    EXPECT_EQ(space[0].values[0], t.vector_lanes_f32() >= 16 ? 8 : 4);
    EXPECT_EQ(space[1].name, "parallel");
  }
  // Chosen where the output block is at most half a vector and the input block a whole one.
  Target avx2 = Target::parse("llvm -mcpu=znver3");
  EXPECT_TRUE(transpose_input_innermost(8, 3, avx2));
  EXPECT_TRUE(transpose_input_innermost(8, 4, avx2));
  EXPECT_FALSE(transpose_input_innermost(8, 8, avx2));
  EXPECT_FALSE(transpose_input_innermost(4, 3, avx2));
}

// ---- end to end against the NCHW operator

TEST(ConvTransposeNchwc, CrossCheckedWithNchwConvTranspose) {
  cross_check({.C = 16,
               .O = 16,
               .H = 4,
               .W = 4,
               .KH = 4,
               .KW = 4,
               .strides = {2, 2},
               .pads = {1, 1, 1, 1},
               .ib = 16,
               .ob = 16});
  cross_check({.C = 5,
               .O = 3,
               .H = 5,
               .W = 7,
               .KH = 4,
               .KW = 4,
               .strides = {2, 2},
               .pads = {1, 1, 1, 1},
               .ib = 4,
               .ob = 8});
}

TEST(ConvTransposeNchwc, RandomizedCrossCheck) {
  std::mt19937 rng(2026);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  const int64_t blocks[] = {1, 3, 4, 8, 16};
  int done = 0;
  for (int trial = 0; done < 24 && trial < 400; ++trial) {
    Deconv d;
    d.N = pick(1, 2);
    d.C = pick(1, 20);
    d.O = pick(1, 20);
    d.H = pick(1, 8);
    d.W = pick(1, 11);
    d.KH = pick(1, 5);
    d.KW = pick(1, 5);
    d.strides = {pick(1, 3), pick(1, 3)};
    d.dilations = {pick(1, 4) == 4 ? 2 : 1, pick(1, 4) == 4 ? 2 : 1};
    d.pads = {pick(0, 3), pick(0, 3), pick(0, 3), pick(0, 3)};
    d.output_padding = {pick(0, std::max(d.strides[0], d.dilations[0]) - 1),
                        pick(0, std::max(d.strides[1], d.dilations[1]) - 1)};
    d.ib = blocks[pick(0, 4)];
    d.ob = blocks[pick(0, 4)];
    bool ok = true;
    int64_t in[] = {d.H, d.W}, k[] = {d.KH, d.KW};
    for (size_t i = 0; i < 2; ++i) {
      int64_t o = d.strides[i] * (in[i] - 1) + d.output_padding[i] + d.dilations[i] * (k[i] - 1) +
                  1 - d.pads[i] - d.pads[2 + i];
      ok = ok && o >= 1;
    }
    if (!ok) continue;
    if (done % 3 == 0) {
      check(d, static_cast<uint32_t>(trial));
    } else {
      cross_check(d, static_cast<uint32_t>(trial));
    }
    ++done;
  }
  EXPECT_EQ(done, 24);
}

// ---- fused epilogues

void check_fused_bias_relu_tanh(const Deconv& d) {
  SCOPED_TRACE(d.str());
  std::mt19937 rng(7);
  NDArray x = random_array({d.x_blocked(), f32}, rng);
  NDArray w = packed_weight(d, rng);
  int64_t Ob = (d.O + d.ob - 1) / d.ob;
  NDArray bias = random_array({{1, Ob, 1, 1, d.ob}, f32}, rng);
  NDArray want = lookup(kOp).reference({x, w}, d.attrs())[0];
  for (int chain = 1; chain <= 3; ++chain) {
    SCOPED_TRACE("epilogue stages: " + std::to_string(chain));
    Epilogue epi = [&](const te::Tensor& conv, const std::vector<te::Tensor>& extra) {
      te::Tensor b = extra[0];
      te::Tensor t = te::compute(
          conv->shape,
          [&](const std::vector<ir::Var>& i) {
            return conv(std::vector<ir::Expr>(i.begin(), i.end())) + b(0, i[1], 0, 0, i[4]);
          },
          "bias_add");
      if (chain >= 2) {
        te::Tensor u = t;
        t = te::compute(
            conv->shape,
            [&](const std::vector<ir::Var>& i) {
              return ir::max(u(std::vector<ir::Expr>(i.begin(), i.end())), 0.0f);
            },
            "relu");
      }
      if (chain >= 3) {
        te::Tensor u = t;
        t = te::compute(
            conv->shape,
            [&](const std::vector<ir::Var>& i) {
              return ir::Call::make(ir::Intrinsic::kTanh,
                                    {u(std::vector<ir::Expr>(i.begin(), i.end()))});
            },
            "tanh");
      }
      return t;
    };
    NDArray expect = NDArray::empty(want.shape(), runtime::dl_float32());
    int64_t per_block = want.shape()[2] * want.shape()[3] * d.ob;
    for (int64_t i = 0; i < want.numel(); ++i) {
      double v =
          want.data_as<float>()[i] + bias.data_as<float>()[(i / per_block) % Ob * d.ob + i % d.ob];
      if (chain >= 2) v = std::max(v, 0.0);
      if (chain >= 3) v = std::tanh(v);
      expect.data_as<float>()[i] = static_cast<float>(v);
    }
    for (const Config& config : {Config{}, Config{{"ic_chunk", 2}}, Config{{"tile_ow", 3}}}) {
      std::string text;
      NDArray got = run(kOp, {x, w, bias}, d.attrs(), 2, config, epi, &text);
      expect_close(got, expect);
      // Fused: the convolution's stages are tile buffers inside the output's loops, not whole
      // tensors.
      std::string alloc = "allocate conv2d_transpose_nchwc";
      size_t at = text.find(alloc);
      ASSERT_NE(at, std::string::npos) << text;
      for (; at != std::string::npos; at = text.find(alloc, at + 1)) {
        if (text.compare(at + alloc.size(), 4, ".src") == 0) continue;  // the padded input
        size_t size_at = text.find("[float32 * ", at);
        ASSERT_NE(size_at, std::string::npos) << text;
        EXPECT_LT(std::stoll(text.substr(size_at + 11)), want.numel()) << text.substr(at, 80);
      }
      EXPECT_EQ(text.find("allocate bias_add"), std::string::npos);
    }
  }
}

TEST(ConvTransposeNchwc, FusedBiasReluTanh) {
  Deconv d{.C = 12,
           .O = 20,
           .H = 5,
           .W = 6,
           .KH = 4,
           .KW = 4,
           .strides = {2, 2},
           .pads = {1, 1, 1, 1},
           .ib = 4,
           .ob = 8};
  check_fused_bias_relu_tanh(d);
  // Vectors over the input channels: 3 output channels, as DCGAN's last layer.
  d.O = 3;
  d.ob = 3;
  d.ib = 8;
  d.C = 16;
  d.input_innermost = true;
  check_fused_bias_relu_tanh(d);
}

// ---- the default rule

TEST(ConvTransposeNchwc, SpaceListsTheRuleFirst) {
  // The rule's thresholds are the target's L2: this test states the 1 MiB it assumes. Its tiles
  // depend on the registers, so the rule is checked for a CPU with AVX-512 (32 registers of 16
  // floats) and one with AVX2 (16 of 8), whatever this host is; the sampled points run here.
  auto space_of = [&](const Deconv& d, const Target& t) {
    std::vector<int64_t> ws =
        lookup(kPack).infer({{{d.C, d.O, d.KH, d.KW}, f32}}, d.pack_attrs())[0].shape;
    return lookup(kOp).space({{d.x_blocked(), f32}, {ws, f32}}, d.attrs(), t);
  };
  // DCGAN-like, 256 KB of weights per channel block: with AVX-512 a tile of one row per phase (2)
  // x 8 columns, 16 accumulators; with AVX2's 16 registers the 2 x 2 phases' weight vectors (2
  // each) would not fit beside the accumulators, so one row of 4 columns of 2 vectors.
  Deconv d1{.C = 256,
            .O = 32,
            .H = 4,
            .W = 4,
            .KH = 4,
            .KW = 4,
            .strides = {2, 2},
            .pads = {1, 1, 1, 1},
            .ib = 16,
            .ob = 16};
  // 64 KB of weights per channel block stay cached: one row; 1024 input channels: 1 MB of
  // weights per channel block, reduced in chunks of 256 KB.
  Deconv small = d1, big = d1;
  small.C = 64;
  big.C = 1024;
  for (const char* cpu : {"llvm -mcpu=znver4 -vector-bits=512", "llvm -mcpu=znver3"}) {
    SCOPED_TRACE(cpu);
    Target t = Target::parse(cpu);
    t.l2_bytes = 1 << 20;
    const bool wide = t.vector_lanes_f32() >= 16;
    ConfigSpace space = space_of(d1, t);
    ASSERT_EQ(space.size(), 7u);
    std::vector<std::string> names = {"tile_oc",   "tile_oh",  "tile_ow", "unroll_ib",
                                      "unroll_kw", "ic_chunk", "parallel"};
    for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(space[i].name, names[i]);
    EXPECT_EQ(space[0].values[0], 1);
    EXPECT_EQ(space[1].values[0], wide ? 2 : 1);
    EXPECT_EQ(space[2].values[0], wide ? 8 : 4);
    // With AVX-512 no chunks below 512 KB per channel block; AVX2's one-row tile keeps a chunk's
    // weights in L1 (32 KB: two blocks of 16 KB).
    EXPECT_EQ(space[5].values[0], wide ? 0 : 2);
    // The thread split: threads by the rule (2^18 multiply-adds and more).
    EXPECT_EQ(space[6].values[0], 1);
    for (const Knob& k : space) EXPECT_GT(k.values.size(), 1u) << k.name;
    space = space_of(small, t);
    EXPECT_EQ(space[1].values[0], 1);
    EXPECT_EQ(space[2].values[0], wide ? 8 : 4);
    EXPECT_EQ(space[0].values[0], wide ? 2 : 1);
    space = space_of(big, t);
    EXPECT_EQ(space[5].values[0], 16);  // past half of L2: chunks of a quarter of it
    // Weights from L2 and a tile spanning the row: rows fill the accumulators (3 x 8 of 24); with
    // AVX2 the tile is one row (its phases' weights) of half the row.
    EXPECT_EQ(space[1].values[0], wide ? 3 : 1);
    // With a 4 MiB L2 the same 1 MB per channel block needs no chunks of L2's size (AVX2: L1's).
    t.l2_bytes = 4 << 20;
    EXPECT_EQ(space_of(big, t)[5].values[0], wide ? 0 : 2);
  }
  // A sample of this host's space computes the same result, threads on and off.
  Target host = Target::host();
  host.l2_bytes = 1 << 20;
  ConfigSpace space = space_of(d1, host);
  check(d1, 9, {{"tile_ow", space[2].values[1]}, {"tile_oc", space[0].values[1]}});
  check(d1, 10, {{"tile_oh", space[1].values[1]}, {"ic_chunk", space[5].values[1]}});
  check(d1, 11, {{"parallel", 0}});
  check(d1, 12, {{"parallel", 0}, {"ic_chunk", space[5].values[1]}});
}

// ---- diagnostics

void expect_has(const std::string& msg, const std::string& part) {
  EXPECT_NE(msg.find(part), std::string::npos) << "message: " << msg << "\nexpected: " << part;
}

TEST(ConvTransposeNchwc, Errors) {
  Deconv d{.C = 8,
           .O = 8,
           .H = 4,
           .W = 4,
           .KH = 4,
           .KW = 4,
           .strides = {2, 2},
           .pads = {1, 1, 1, 1},
           .ib = 4,
           .ob = 8};
  std::vector<int64_t> ws = {1, 2, 2, 2, 4, 2, 2, 8};
  auto infer = [&](std::vector<int64_t> x, std::vector<int64_t> w, Attrs a) {
    return testing::user_error([&] { lookup(kOp).infer({{x, f32}, {w, f32}}, a); });
  };
  expect_has(infer({1, 2, 4, 4}, ws, d.attrs()),
             "conv2d_transpose_nchwc: input x must have rank 5");
  expect_has(infer({1, 2, 4, 4, 4}, {2, 2, 4, 4}, d.attrs()),
             "conv2d_transpose_nchwc: weight must have rank 8");
  expect_has(infer({1, 3, 4, 4, 4}, ws, d.attrs()), "does not fit input x float32[1, 3, 4, 4, 4]");
  Attrs a = d.attrs();
  a.set("kernel_shape", std::vector<int64_t>{5, 5});
  expect_has(infer({1, 2, 4, 4, 4}, ws, a), "'kernel_shape' [5, 5]");
  a = d.attrs();
  a.set("output_padding", std::vector<int64_t>{2, 0});
  expect_has(infer({1, 2, 4, 4, 4}, ws, a),
             "conv2d_transpose_nchwc: attribute 'output_padding' [2, 0] must be smaller");
  a = d.attrs();
  a.set("group", int64_t{2});
  expect_has(infer({1, 2, 4, 4, 4}, ws, a), "conv2d_transpose_nchwc: attribute 'group' must be 1");
  a = d.attrs();
  a.set("pads", std::vector<int64_t>{5, 5, 5, 5});
  expect_has(infer({1, 2, 4, 4, 4}, ws, a),
             "conv2d_transpose_nchwc: output height 0 is not positive");
  a = d.attrs();
  a.set("strides", std::vector<int64_t>{0, 2});
  expect_has(infer({1, 2, 4, 4, 4}, ws, a), "attribute 'strides' must be positive, got [0, 2]");
  expect_has(infer({1, 2, 4, 4, 4}, ws, Attrs(kOp, {})),
             "conv2d_transpose_nchwc: missing attribute 'kernel_shape'");
  expect_has(testing::user_error([&] {
               lookup(kOp).infer({{{1, 2, 4, 4, 4}, DataType::Int32()}, {ws, f32}}, d.attrs());
             }),
             "conv2d_transpose_nchwc: input 0 must be float32");

  auto pack = [&](std::vector<int64_t> w, Attrs a) {
    return testing::user_error([&] { lookup(kPack).infer({{w, f32}}, a); });
  };
  expect_has(pack({8, 8, 4}, d.pack_attrs()),
             "conv2d_transpose_nchwc_pack_weight: weight must have rank 4");
  expect_has(pack({8, 8, 4, 4}, Attrs(kPack, {{"out_block", int64_t{8}}})),
             "conv2d_transpose_nchwc_pack_weight: missing attribute 'in_block'");
  Attrs pa = d.pack_attrs();
  pa.set("out_block", int64_t{0});
  expect_has(pack({8, 8, 4, 4}, pa),
             "conv2d_transpose_nchwc_pack_weight: attribute 'out_block' must be positive, got 0");
}

}  // namespace
}  // namespace anvil::ops
