// lstm and gru against their double-precision references (naive loops from the ONNX
// equations): every direction, with and without each optional input, clip, input_forget,
// linear_before_reset 0/1, batch 1 and 3, odd hidden sizes, seq_length 1 and 7, a shape large
// enough for the parallel products, and the errors.
//
// Tolerance: inputs are uniform in [-0.6, 0.6]; each step's pre-activations are sums of I + H
// float32 products, and the gates are contractions (|sigmoid'| <= 1/4, |tanh'| <= 1), so the
// float32 error stays within a small multiple of one step's: 1e-4 * sqrt(I + H) (1 + |want|).
#include <gtest/gtest.h>

#include <cmath>

#include "ops_testing.h"
#include "testing/errors.h"

namespace anvil::ops {
namespace {

using ir::DataType;
using ops_testing::check_op;
using ops_testing::CheckOptions;

const DataType f32 = DataType::Float32();

struct Case {
  std::string op = "lstm";
  std::string direction = "forward";
  int64_t seq = 3, batch = 1, input = 6, hidden = 5;
  bool bias = true, h0 = false, c0 = false, peep = false;
  double clip = 0;  // 0: none
  int64_t input_forget = 0, linear_before_reset = 0;
  int64_t gpu_form = 0;     // plain products, an lstm step's states in one stage
  bool gpu_always = false;  // every case through OpenCL too, not the first few
  Config config;            // the CPU schedule's knobs (empty: the rule)
  Config gpu_config;        // the GPU schedule's knobs (empty: the rule)
};

std::string describe(const Case& c) {
  std::ostringstream o;
  o << c.op << " " << c.direction << " seq=" << c.seq << " batch=" << c.batch
    << " input=" << c.input << " hidden=" << c.hidden << " B=" << c.bias << " h0=" << c.h0
    << " c0=" << c.c0 << " P=" << c.peep << " clip=" << c.clip << " input_forget=" << c.input_forget
    << " lbr=" << c.linear_before_reset << " gpu_form=" << c.gpu_form;
  return o.str();
}

void check(const Case& c, uint32_t seed = 1) {
  SCOPED_TRACE(describe(c));
  bool lstm = c.op == "lstm";
  int64_t dirs = c.direction == "bidirectional" ? 2 : 1, G = (lstm ? 4 : 3) * c.hidden;
  std::vector<TensorType> types = {
      {{c.seq, c.batch, c.input}, f32}, {{dirs, G, c.input}, f32}, {{dirs, G, c.hidden}, f32}};
  std::vector<int64_t> present = {1, 1, 1, c.bias, 0, c.h0};
  if (c.bias) types.push_back({{dirs, 2 * G}, f32});
  if (c.h0) types.push_back({{dirs, c.batch, c.hidden}, f32});
  if (lstm) {
    present.push_back(c.c0);
    present.push_back(c.peep);
    if (c.c0) types.push_back({{dirs, c.batch, c.hidden}, f32});
    if (c.peep) types.push_back({{dirs, 3 * c.hidden}, f32});
  }
  Attrs attrs(c.op, {{"hidden_size", c.hidden}, {"direction", c.direction}, {"present", present}});
  if (c.clip > 0) attrs.set("clip", c.clip);
  if (lstm) {
    attrs.set("input_forget", c.input_forget);
  } else {
    attrs.set("linear_before_reset", c.linear_before_reset);
  }
  if (c.gpu_form) attrs.set("gpu_form", c.gpu_form);
  CheckOptions o;
  o.tol = 1e-4 * std::sqrt(static_cast<double>(c.input + c.hidden));
  o.lo = -0.6;
  o.hi = 0.6;
  o.seed = seed;
  o.gpu_always = c.gpu_always;
  o.config = c.config;
  o.gpu_config = c.gpu_config;
  check_op(c.op, types, attrs, o);
}

// Per direction: seq 7 (one direction) or 3 (both), batch 3 with hidden 5 and bias, batch 1
// with hidden 17 and no bias.
std::vector<Case> direction_cases(const std::string& op, int64_t lbr) {
  std::vector<Case> cases;
  for (const char* dir : {"forward", "reverse", "bidirectional"}) {
    Case c;
    c.op = op;
    c.linear_before_reset = lbr;
    c.direction = dir;
    c.seq = c.direction == "bidirectional" ? 3 : 7;
    c.batch = 3;
    cases.push_back(c);
    c.batch = 1;
    c.hidden = 17;
    c.bias = false;
    c.h0 = op == "gru";
    cases.push_back(c);
  }
  return cases;
}

// The tuning space: both products on the packed path (seq x batch rows, 8 steps with a previous
// state), each knob at its last value with the others at the rule's (every other test runs the
// rule's), against the reference; the gru's steps (r and z apart from h) too.
TEST(Lstm, EveryKnobOfTheSpaceAgrees) {
  Target target = Target::host();
  for (const char* op : {"lstm", "gru"}) {
    Case c;
    c.op = op;
    c.seq = 9;
    c.batch = 2;
    c.input = 20;
    c.hidden = 24;
    int64_t G = (c.op == "lstm" ? 4 : 3) * c.hidden;
    std::vector<TensorType> types = {{{c.seq, c.batch, c.input}, f32},
                                     {{1, G, c.input}, f32},
                                     {{1, G, c.hidden}, f32},
                                     {{1, 2 * G}, f32}};
    Attrs attrs(c.op, {{"hidden_size", c.hidden}});
    ConfigSpace space = lookup(c.op).space(types, attrs, target);
    ASSERT_EQ(space.size(), 8u) << op;
    EXPECT_EQ(space[0].name, "xw_tile_m");
    EXPECT_EQ(space[4].name, "step_tile_m");
    EXPECT_EQ(space[4].values[0], c.batch);  // the steps' rows: the batch
    uint32_t seed = 60;
    for (const Knob& k : space) {
      c.config = {{k.name, k.values.back()}};
      SCOPED_TRACE(k.name + "=" + std::to_string(k.values.back()));
      check(c, seed++);
    }
  }
  // Too few steps to pack R, too few rows to pack W: nothing to tune.
  std::vector<TensorType> small = {{{2, 1, 6}, f32}, {{1, 20, 6}, f32}, {{1, 20, 5}, f32}};
  EXPECT_TRUE(
      lookup("lstm").space(small, Attrs("lstm", {{"hidden_size", int64_t{5}}}), target).empty());
}

TEST(Lstm, EveryDirection) {
  uint32_t seed = 1;
  for (const Case& c : direction_cases("lstm", 0)) check(c, seed++);
}

TEST(Lstm, GpuFormOnCpuAndOpenCl) {
  // gpu_form = 1 (the GPU targets' form): the same outputs, every direction, with initial
  // states, peepholes and input_forget, on the CPU and through OpenCL.
  uint32_t seed = 40;
  for (Case c : direction_cases("lstm", 0)) {
    c.gpu_form = 1;
    c.gpu_always = true;
    check(c, seed++);
  }
  Case c;
  c.gpu_form = 1;
  c.gpu_always = true;
  c.h0 = c.c0 = c.peep = true;
  c.input_forget = 1;
  c.clip = 0.5;
  check(c, seed++);
}

// The GPU schedule makes each step with a previous state one kernel: its gate sums stay in the
// block's shared memory (no global temporary holds them), and a kernel writes each step's states.
TEST(Lstm, GpuStepIsOneKernel) {
  const int64_t seq = 6, hidden = 16;
  std::vector<TensorType> types = {
      {{seq, 2, 8}, f32}, {{1, 4 * hidden, 8}, f32}, {{1, 4 * hidden, hidden}, f32}};
  Attrs attrs("lstm", {{"hidden_size", hidden}, {"gpu_form", int64_t{1}}});
  std::vector<te::Tensor> ins;
  for (size_t i = 0; i < types.size(); ++i)
    ins.push_back(te::placeholder(to_exprs(types[i].shape), f32, "in" + std::to_string(i)));
  std::vector<te::Tensor> outs = lookup("lstm").compute(ins, attrs);
  Target target = Target::parse("opencl");
  te::Schedule s(outs);
  schedule_for(lookup("lstm"), s, outs, attrs, target, {});
  std::vector<te::Tensor> args = ins;
  args.insert(args.end(), outs.begin(), outs.end());
  ir::DeviceFunc f = lower_gpu(s, args, "lstm", target);
  for (const ir::Buffer& b : f.temps)
    EXPECT_EQ(b->name.find("gemvsum"), std::string::npos) << b->name << " is in global memory";
  // The projection (no bias), the first step (no product), seq - 1 fused steps, Y, Y_h, Y_c.
  EXPECT_EQ(f.kernels.size(), 1 + 1 + (seq - 1) + 3u);
  int fused = 0;
  for (const ir::DeviceKernel& k : f.kernels)
    if (k.block[0] == 32 && k.block[1] == 4) ++fused;  // the rule: 32 lanes x 4 gates of 1 unit
  EXPECT_EQ(fused, seq - 1);
}

// Each knob of the GPU space at its other values against the reference, through OpenCL.
TEST(Lstm, EveryGpuKnobAgrees) {
  Case c;
  c.gpu_form = 1;
  c.gpu_always = true;
  c.seq = 4;
  c.batch = 2;
  c.hidden = 16;
  c.h0 = c.c0 = true;
  const int64_t G = 4 * c.hidden;
  std::vector<TensorType> types = {
      {{c.seq, c.batch, c.input}, f32}, {{1, G, c.input}, f32}, {{1, G, c.hidden}, f32}};
  ConfigSpace space = space_for(
      lookup("lstm"), types, Attrs("lstm", {{"hidden_size", c.hidden}, {"gpu_form", int64_t{1}}}),
      Target::parse("opencl"));
  ASSERT_EQ(space.size(), 4u);
  EXPECT_EQ(space[2].name, "step_units");
  EXPECT_EQ(space[2].values, (std::vector<int64_t>{1, 2}));  // 4 x 2 x 32 lanes: 256 threads
  EXPECT_EQ(space[3].name, "step_lanes");
  uint32_t seed = 90;
  for (const Knob& k : space) {
    for (size_t v = 1; v < k.values.size(); ++v) {
      c.gpu_config = {{k.name, k.values[v]}};
      SCOPED_TRACE(k.name + "=" + std::to_string(k.values[v]));
      check(c, seed++);
    }
  }
  // Units are at most step_units: within the block's limit, 2 units of 32 lanes (and 1 of 64).
  c.gpu_config = {{"step_units", 8}, {"step_lanes", 64}};
  check(c, seed++);
  // One unit's gates over more lanes than a block may have: refused, naming the knob.
  c.gpu_config = {{"step_lanes", 128}};
  anvil::testing::expect_has(anvil::testing::user_error([&] { check(c, seed); }),
                             "lstm GPU schedule: step_lanes 128 makes 512 threads per block for "
                             "one unit's 4 gates, over the target's limit of 256");
}

TEST(Lstm, InitialStatesAndPeepholes) {
  uint32_t seed = 10;
  for (const char* dir : {"forward", "bidirectional"}) {
    Case c;
    c.direction = dir;
    c.batch = c.direction == "forward" ? 3 : 1;
    c.hidden = 17;
    c.h0 = true;
    check(c, seed++);  // initial_h only: c starts at zero
    c.c0 = c.peep = true;
    check(c, seed++);
    c.h0 = false;  // peepholes against initial_c with no initial_h
    check(c, seed++);
  }
}

TEST(Lstm, ClipAndInputForget) {
  Case c;
  c.clip = 0.3;
  c.h0 = c.c0 = true;
  check(c, 20);
  c.clip = 0;
  c.input_forget = 1;
  c.direction = "reverse";
  check(c, 21);
  c.clip = 0.5;
  c.peep = true;
  c.direction = "bidirectional";
  check(c, 22);
}

TEST(Lstm, SingleStep) {
  Case c;
  c.seq = 1;
  c.batch = 1;
  check(c, 30);  // no recurrent product at all
  c.h0 = c.c0 = true;
  c.direction = "bidirectional";
  check(c, 31);
}

TEST(Lstm, ParallelProducts) {
  // 4H * H >= 2^18 multiply-adds: the recurrent product runs its gate-row blocks in parallel;
  // seq * batch >= 8: the projection takes the register-tiled GEMM; 8 products in all: R is
  // packed (in parallel) and the steps take the GEMV form.
  Case c;
  c.seq = 4;
  c.batch = 2;
  c.input = 40;
  c.hidden = 259;
  c.h0 = true;
  c.direction = "bidirectional";
  check(c, 40);
}

TEST(Gru, EveryDirectionBothResets) {
  uint32_t seed = 50;
  for (int64_t lbr : {0, 1}) {
    for (const Case& c : direction_cases("gru", lbr)) {
      // linear_before_reset = 1 shares all but the h row: batch 3 once is enough.
      if (lbr == 1 && c.batch == 3 && c.direction != "forward") continue;
      check(c, seed++);
    }
  }
}

TEST(Gru, GpuFormOnCpuAndOpenCl) {
  uint32_t seed = 60;
  // Bidirectional (forward and reverse at once), both resets.
  for (int64_t lbr : {0, 1})
    for (Case c : direction_cases("gru", lbr)) {
      if (c.direction != "bidirectional") continue;
      c.gpu_form = 1;
      c.gpu_always = true;
      check(c, seed++);
    }
}

TEST(Gru, ClipInitialStateAndSingleStep) {
  uint32_t seed = 70;
  for (int64_t lbr : {0, 1}) {
    Case c;
    c.op = "gru";
    c.linear_before_reset = lbr;
    c.clip = 0.4;
    c.h0 = true;
    check(c, seed++);
    c.clip = 0;
    c.seq = 1;
    c.h0 = false;
    check(c, seed++);  // no recurrent product; the reset gate still scales R's h bias
    c.h0 = true;
    c.direction = "bidirectional";
    check(c, seed++);
  }
}

// packed_weights = 1: W and R arrive as dense_pack_weight packs them (panels of 16 gate rows; G =
// 20 and 68 leave a partial last panel). The compiled op matches the reference, and the reference
// on the packed weights equals the reference on the plain ones exactly (the same loops).
TEST(Lstm, PackedWeights) {
  uint32_t seed = 120;
  for (int64_t hidden : {5, 17}) {
    SCOPED_TRACE("hidden " + std::to_string(hidden));
    const int64_t dirs = 2, seq = 3, batch = 2, input = 6, G = 4 * hidden;
    const int64_t panels = (G + 15) / 16;
    std::vector<int64_t> present = {1, 1, 1, 1, 0, 0, 0, 1};
    Attrs plain("lstm", {{"hidden_size", hidden},
                         {"direction", std::string("bidirectional")},
                         {"present", present}});
    Attrs packed = plain;
    packed.set("packed_weights", int64_t{1});
    std::vector<TensorType> types = {{{seq, batch, input}, f32},
                                     {{dirs, G, input}, f32},
                                     {{dirs, G, hidden}, f32},
                                     {{dirs, 2 * G}, f32},
                                     {{dirs, 3 * hidden}, f32}};
    std::mt19937 rng(seed++);
    std::vector<runtime::NDArray> in;
    for (const TensorType& t : types) in.push_back(ops_testing::random_array(t, rng, -0.6, 0.6));
    std::vector<runtime::NDArray> in_packed = in;
    const OpDef& pack = lookup("dense_pack_weight");
    for (size_t i : {1, 2}) {
      in_packed[i] = pack.reference({in[i]}, Attrs("dense_pack_weight", {}))[0];
      ASSERT_EQ(in_packed[i].shape(), (std::vector<int64_t>{dirs, panels, types[i].shape[2], 16}));
    }
    std::vector<runtime::NDArray> want = lookup("lstm").reference(in, plain);
    std::vector<runtime::NDArray> got = lookup("lstm").reference(in_packed, packed);
    ASSERT_EQ(got.size(), want.size());
    for (size_t o = 0; o < want.size(); ++o)
      for (int64_t k = 0; k < want[o].numel(); ++k)
        ASSERT_EQ(got[o].data_as<float>()[k], want[o].data_as<float>()[k]) << "output " << o;

    std::vector<TensorType> packed_types = types;
    packed_types[1].shape = {dirs, panels, input, 16};
    packed_types[2].shape = {dirs, panels, hidden, 16};
    CheckOptions o;
    o.tol = 1e-4 * std::sqrt(static_cast<double>(input + hidden));
    o.inputs = in_packed;
    check_op("lstm", packed_types, packed, o);
  }
  // Plain shapes under packed_weights are refused, naming the packed shape.
  std::string msg = testing::user_error([] {
    lookup("lstm").infer(
        {{{3, 1, 6}, f32}, {{1, 20, 6}, f32}, {{1, 20, 5}, f32}},
        Attrs("lstm", {{"hidden_size", int64_t{5}}, {"packed_weights", int64_t{1}}}));
  });
  EXPECT_NE(msg.find("input 'W' must have shape [1, 2, 6, 16]"), std::string::npos) << msg;
}

TEST(Gru, PackedRecurrentWeights) {
  // 8 products in all (4 steps, 2 directions, initial_h): R is packed, the z and r rows apart
  // from the h rows when linear_before_reset = 0.
  uint32_t seed = 90;
  for (int64_t lbr : {0, 1}) {
    Case c;
    c.op = "gru";
    c.linear_before_reset = lbr;
    c.direction = "bidirectional";
    c.seq = 4;
    c.batch = 2;
    c.hidden = 17;
    c.h0 = true;
    check(c, seed++);
  }
}

TEST(Gru, ParallelProducts) {
  Case c;
  c.op = "gru";
  c.seq = 3;
  c.batch = 3;
  c.input = 30;
  c.hidden = 300;
  c.h0 = true;
  check(c, 80);  // the dot form of the steps' products
  c.seq = 8;
  c.batch = 1;
  c.hidden = 280;
  c.linear_before_reset = 1;
  check(c, 81);  // packed R, the GEMV form
}

TEST(Recurrent, PresentDefaultsToLeadingInputs) {
  // Without 'present' the inputs are the leading ONNX inputs: X, W, R, B.
  std::vector<TensorType> types = {
      {{2, 1, 3}, f32}, {{1, 16, 3}, f32}, {{1, 16, 4}, f32}, {{1, 32}, f32}};
  Attrs attrs("lstm", {{"hidden_size", int64_t{4}}});
  std::vector<TensorType> out = lookup("lstm").infer(types, attrs);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].shape, (std::vector<int64_t>{2, 1, 1, 4}));
  EXPECT_EQ(out[1].shape, (std::vector<int64_t>{1, 1, 4}));
  EXPECT_EQ(out[2].shape, (std::vector<int64_t>{1, 1, 4}));
  CheckOptions o;
  o.tol = 1e-4;
  check_op("lstm", types, attrs, o);
  EXPECT_EQ(lookup("lstm").pattern, Pattern::kOpaque);
  EXPECT_EQ(lookup("gru").pattern, Pattern::kOpaque);
}

TEST(RecurrentErrors, AttributesAndShapes) {
  std::vector<TensorType> lstm_in = {{{2, 1, 3}, f32}, {{1, 16, 3}, f32}, {{1, 16, 4}, f32}};
  auto expect = [](const std::string& op, const std::vector<TensorType>& in,
                   std::map<std::string, AttrValue> a, const std::string& want) {
    std::string msg = testing::user_error([&] { lookup(op).infer(in, Attrs(op, a)); });
    EXPECT_NE(msg.find(want), std::string::npos) << msg;
  };
  AttrValue h4 = int64_t{4};
  expect("lstm", lstm_in, {}, "lstm: missing attribute 'hidden_size'");
  expect("lstm", lstm_in, {{"hidden_size", h4}, {"direction", std::string("sideways")}},
         "lstm: attribute 'direction' must be forward, reverse or bidirectional, not 'sideways'");
  expect("lstm", lstm_in, {{"hidden_size", h4}, {"activations", std::string("Sigmoid,Relu,Tanh")}},
         "lstm: attribute 'activations' 'Sigmoid,Relu,Tanh' is not supported");
  expect("lstm", lstm_in, {{"hidden_size", h4}, {"activation_alpha", std::vector<double>{1}}},
         "lstm: attribute 'activation_alpha' is not supported");
  expect("lstm", lstm_in, {{"hidden_size", int64_t{5}}},
         "lstm: input 'W' must have shape [1, 20, 3] (hidden_size 5, input_size of X), got "
         "[1, 16, 3]");
  expect("lstm", lstm_in, {{"hidden_size", h4}, {"direction", std::string("bidirectional")}},
         "lstm: input 'W' must have shape [2, 16, 3]");
  expect("lstm", lstm_in, {{"hidden_size", h4}, {"input_forget", int64_t{2}}},
         "lstm: attribute 'input_forget' must be 0 or 1, not 2");
  expect("lstm", lstm_in, {{"hidden_size", h4}, {"layout", int64_t{1}}},
         "lstm: attribute 'layout' must be 0");
  expect("lstm", lstm_in, {{"hidden_size", h4}, {"clip", -1.0}},
         "lstm: attribute 'clip' must be positive");
  expect("lstm", lstm_in, {{"hidden_size", h4}, {"gpu_form", int64_t{3}}},
         "lstm: attribute 'gpu_form' must be 0 or 1, not 3");
  expect("lstm", lstm_in,
         {{"hidden_size", h4}, {"gpu_form", int64_t{1}}, {"packed_weights", int64_t{1}}},
         "attributes 'gpu_form' and 'packed_weights' exclude each other");
  std::vector<TensorType> with_lens = lstm_in;
  with_lens.push_back({{1}, DataType::Int32()});
  expect("lstm", with_lens, {{"hidden_size", h4}, {"present", std::vector<int64_t>{1, 1, 1, 0, 1}}},
         "lstm: input 'sequence_lens' is not supported");
  expect("lstm", lstm_in, {{"hidden_size", h4}, {"present", std::vector<int64_t>{1, 1, 1, 1}}},
         "lstm: attribute 'present' names 4 inputs, but the node has 3");
  expect("lstm", lstm_in, {{"hidden_size", h4}, {"present", std::vector<int64_t>{1, 0, 1, 1}}},
         "lstm: input 'W' is required");
  std::vector<TensorType> bad_h0 = lstm_in;
  bad_h0.push_back({{1, 2, 4}, f32});
  expect("lstm", bad_h0, {{"hidden_size", h4}, {"present", std::vector<int64_t>{1, 1, 1, 0, 0, 1}}},
         "lstm: input 'initial_h' must have shape [1, 1, 4] (hidden_size 4, batch of X), got "
         "[1, 2, 4]");
  expect("lstm", {{{2, 3}, f32}, {{1, 16, 3}, f32}, {{1, 16, 4}, f32}}, {{"hidden_size", h4}},
         "lstm: input 'X' must have rank 3 [seq_length, batch, input_size], got [2, 3]");
  std::vector<TensorType> gru_in = {{{2, 1, 3}, f32}, {{1, 12, 3}, f32}, {{1, 12, 4}, f32}};
  expect("gru", gru_in, {{"hidden_size", h4}, {"linear_before_reset", int64_t{3}}},
         "gru: attribute 'linear_before_reset' must be 0 or 1, not 3");
  expect("gru", gru_in, {{"hidden_size", h4}, {"activations", std::string("Tanh,Tanh")}},
         "gru: attribute 'activations' 'Tanh,Tanh' is not supported: only the defaults "
         "(sigmoid,tanh) are");
  expect("gru", gru_in,
         {{"hidden_size", h4}, {"present", std::vector<int64_t>{1, 1, 1, 0, 0, 0, 1}}},
         "gru: attribute 'present' has 7 entries, but gru has 6 inputs");
  // The defaults, spelled out, are accepted.
  EXPECT_EQ(lookup("gru")
                .infer(gru_in, Attrs("gru", {{"hidden_size", h4},
                                             {"activations", std::string("Sigmoid, Tanh")}}))
                .size(),
            2u);
}

}  // namespace
}  // namespace anvil::ops
