// Compiled graphs (CompiledGraph): each fused group one kernel, run over the planned arena, and
// compared with the reference interpreter on the original graph.
#include "anvil/graph/build.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <thread>

#include "anvil/graph/interpreter.h"
#include "anvil/models/models.h"
#include "anvil/ops/host_value.h"
#include "anvil/support/error.h"
#include "graph/passes_testing.h"

namespace anvil::graph {
namespace {

using namespace pt;
using ops::Attrs;

// `inputs` with every float32 array multiplied by `scale` (integer inputs, token ids, as they are).
std::vector<runtime::NDArray> scaled(const std::vector<runtime::NDArray>& inputs, float scale) {
  std::vector<runtime::NDArray> out;
  for (const runtime::NDArray& a : inputs) {
    if (ops::from_dlpack(a.dtype()) != f32) {
      out.push_back(a);
      continue;
    }
    runtime::NDArray b = runtime::NDArray::empty(a.shape(), a.dtype());
    for (int64_t i = 0; i < a.numel(); ++i) b.data_as<float>()[i] = a.data_as<float>()[i] * scale;
    out.push_back(b);
  }
  return out;
}

// expect_close's check (max |got - want| <= 1e-4 max |want| per output), except that an output
// that is the tanh of another output (`tanh_of`: its index -> its input's index) is held to its
// input's bound: tanh is 1-Lipschitz, so an error e in its input moves it by at most e, while
// large inputs saturate it to +-1 and shrink its own max |want| no further.
void expect_close_through_tanh(const std::vector<runtime::NDArray>& got,
                               const std::vector<runtime::NDArray>& want, const std::string& what,
                               const std::map<size_t, size_t>& tanh_of) {
  ASSERT_EQ(got.size(), want.size()) << what;
  std::vector<double> max_want(want.size(), 0), max_err(want.size(), 0);
  for (size_t o = 0; o < want.size(); ++o) {
    ASSERT_EQ(got[o].shape(), want[o].shape()) << what << " output " << o;
    for (int64_t i = 0; i < want[o].numel(); ++i) {
      double w = want[o].data_as<float>()[i], g = got[o].data_as<float>()[i];
      max_want[o] = std::max(max_want[o], std::abs(w));
      max_err[o] = std::max(max_err[o], std::isnan(g) ? INFINITY : std::abs(g - w));
    }
  }
  for (size_t o = 0; o < want.size(); ++o) {
    auto it = tanh_of.find(o);
    size_t bound_by = it == tanh_of.end() ? o : it->second;
    EXPECT_LE(max_err[o], 1e-4 * max_want[bound_by])
        << what << " output " << o << " (max |want| " << max_want[o] << ", bound by output "
        << bound_by << ")";
  }
}

// Builds g with fusion on and off (and, when `both_layouts`, with alter_layout off as well as on),
// checks each against the interpreter and returns the kernel counts {fused, unfused} (with
// alter_layout on). With `scales`, the default build (fused, NCHWc) is also checked on the inputs
// scaled by each.
std::pair<size_t, size_t> check_all(const Graph& g, const std::vector<runtime::NDArray>& inputs,
                                    const std::string& what, bool both_layouts = true,
                                    const std::vector<float>& scales = {}) {
  std::vector<runtime::NDArray> want = interpret(g, inputs);
  size_t counts[2] = {0, 0};
  for (bool fuse : {true, false}) {
    for (bool layout : {true, false}) {
      if (!layout && !both_layouts) continue;
      BuildOptions opt;
      opt.fuse = fuse;
      opt.alter_layout = layout;
      CompiledGraph cg = CompiledGraph::build(g, Target::host(), opt);
      std::string tag = what + (fuse ? " fused" : " unfused") + (layout ? " nchwc" : " nchw");
      expect_close(cg.run(inputs), want, tag + "\n" + cg.summary());
      if (fuse && layout) {
        for (float scale : scales) {
          std::vector<runtime::NDArray> x = scaled(inputs, scale);
          expect_close(cg.run(x), interpret(g, x), tag + " on inputs x" + std::to_string(scale));
        }
      }
      if (layout) counts[fuse ? 0 : 1] = cg.num_kernels();
      // Every kernel got its operators' schedule (none fell back to the default loop nests).
      EXPECT_EQ(cg.summary().find("default loops"), std::string::npos) << tag << cg.summary();
    }
  }
  return {counts[0], counts[1]};
}

// The small models in all four configurations; the large ones (seconds per build, and more in
// the reference interpreter) with fusion on and off in the default layout, as the issue asks. The
// default build also runs on the inputs scaled by 1e-3 and 1e3, within the same tolerance.
void check_model(const std::string& name, bool both_layouts = true) {
  Graph g = models::build_model(name);
  // Scaled inputs: lstm_lm's input is token ids, which do not scale
  // (ModelLstmLmOnScaledEmbeddings); dcgan's image saturates (ModelDcganOnScaledInputs).
  std::vector<float> scales;
  if (name != "lstm_lm" && name != "dcgan") scales = {1e-3f, 1e3f};
  auto [fused, unfused] = check_all(g, models::example_inputs(g), name, both_layouts, scales);
  // lstm_lm's groups are opaque LSTMs and reshapes between them: nothing to fuse.
  if (name == "lstm_lm")
    EXPECT_EQ(fused, unfused) << name;
  else
    EXPECT_LT(fused, unfused) << name;
}

TEST(Build, ConvBiasReluResidual) {
  Graph g;
  ValueId x = g.add_input("x", {{1, 8, 10, 10}, f32});
  ValueId w = g.add_constant("w", random_array({8, 8, 3, 3}, 1));
  ValueId b = g.add_constant("b", random_array({1, 8, 1, 1}, 2));
  Attrs pads("conv2d", {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  ValueId c = g.add("conv", "conv2d", pads, {x, w});
  ValueId cb = g.add("bias", "add", Attrs(), {c, b});
  ValueId r = g.add("relu", "relu", Attrs(), {cb});
  ValueId s = g.add("res", "add", Attrs(), {r, x});
  ValueId c2 = g.add("conv2", "conv2d", pads, {s, w});
  g.add_output(g.add("relu2", "relu", Attrs(), {c2}));
  auto [fused, unfused] = check_all(g, random_inputs(g), "conv block");
  EXPECT_LT(fused, unfused);
}

TEST(Build, DenseRelu) {
  Graph g;
  ValueId x = g.add_input("x", {{4, 32}, f32});
  ValueId w = g.add_constant("w", random_array({16, 32}, 3));
  ValueId d = g.add("fc", "dense", Attrs(), {x, w});
  ValueId r = g.add("relu", "relu", Attrs(), {d});
  g.add_output(r);
  auto [fused, unfused] = check_all(g, random_inputs(g), "dense+relu");
  EXPECT_EQ(fused, 1u);
  EXPECT_EQ(unfused, 2u);
}

TEST(Build, SoftmaxWithInjectiveProducers) {
  Graph g;
  ValueId x = g.add_input("x", {{3, 20}, f32});
  ValueId e = g.add("e", "exp", Attrs(), {x});
  ValueId a = g.add("a", "add", Attrs(), {e, x});
  ValueId sm = g.add("softmax", "softmax", Attrs(), {a});
  g.add_output(sm);
  auto [fused, unfused] = check_all(g, random_inputs(g), "softmax");
  EXPECT_LT(fused, unfused);
}

TEST(Build, InjectiveChainIsOneKernel) {
  Graph g;
  ValueId x = g.add_input("x", {{4, 6}, f32});
  ValueId y = g.add_input("y", {{6, 4}, f32});
  ValueId t =
      g.add("t", "transpose", Attrs("transpose", {{"perm", std::vector<int64_t>{1, 0}}}), {x});
  ValueId s = g.add("s", "add", Attrs(), {t, y});
  ValueId e = g.add("e", "exp", Attrs(), {s});
  ValueId m = g.add("m", "mul", Attrs(), {e, y});
  g.add_output(m);
  auto [fused, unfused] = check_all(g, random_inputs(g), "injective chain");
  EXPECT_EQ(fused, 1u);
  EXPECT_EQ(unfused, 4u);
}

TEST(Build, SplitMultipleOutputsAndInputAsOutput) {
  Graph g;
  ValueId x = g.add_input("x", {{4, 6}, f32});
  std::vector<ValueId> parts =
      g.add_node("split", "split", Attrs("split", {{"num_outputs", int64_t{2}}}), {x});
  ValueId t = g.add("tanh", "tanh", Attrs(), {parts[0]});
  ValueId u = g.add("neg", "neg", Attrs(), {parts[1]});
  g.add_output(t);
  g.add_output(u);
  g.add_output(x);
  check_all(g, random_inputs(g), "split");
}

TEST(Build, ModelDqn) {
  check_model("dqn");
}

TEST(Build, ModelDcgan) {
  check_model("dcgan");
}

TEST(Build, ModelResnet18) {
  check_model("resnet18", false);
}

TEST(Build, ModelMobilenetV1) {
  check_model("mobilenet_v1", false);
}

TEST(Build, ModelMobilenetV2) {
  check_model("mobilenet_v2", false);
}

TEST(Build, ModelLstmLm) {
  check_model("lstm_lm", false);
}

// dcgan on inputs scaled by 1e-3 and 1e3. Its image is the tanh of its last convolution, which
// becomes a second output here: the image is held to that input's bound
// (expect_close_through_tanh).
TEST(Build, ModelDcganOnScaledInputs) {
  Graph g = models::build_model("dcgan");
  ASSERT_EQ(g.outputs().size(), 1u);
  for (const Node& n : g.nodes())
    if (n.op == "tanh" && n.outputs[0] == g.outputs()[0]) g.add_output(n.inputs[0]);
  ASSERT_EQ(g.outputs().size(), 2u);
  CompiledGraph cg = CompiledGraph::build(g, Target::host(), BuildOptions());
  for (float scale : {1e-3f, 1e3f}) {
    std::vector<runtime::NDArray> x = scaled(models::example_inputs(g), scale);
    expect_close_through_tanh(cg.run(x), interpret(g, x),
                              "dcgan on inputs x" + std::to_string(scale), {{0, 1}});
  }
}

// lstm_lm's input is token ids: scaled inputs mean its embedding table (what the LSTMs read)
// scaled by 1e-3 and 1e3, each built as `anvil compile` does and checked against the interpreter.
TEST(Build, ModelLstmLmOnScaledEmbeddings) {
  for (float scale : {1e-3f, 1e3f}) {
    Graph g = models::build_model("lstm_lm");
    runtime::NDArray table = g.value(g.find("encoder.weight")).data;  // a handle to the weights
    ASSERT_TRUE(table.defined());
    for (int64_t i = 0; i < table.numel(); ++i) table.data_as<float>()[i] *= scale;
    std::vector<runtime::NDArray> inputs = models::example_inputs(g);
    CompiledGraph cg = CompiledGraph::build(g, Target::host(), BuildOptions());
    expect_close(cg.run(inputs), interpret(g, inputs),
                 "lstm_lm, embeddings x" + std::to_string(scale));
  }
}

// A float16 model (conv, relu, max pool, global average pool, dense, softmax): its convolution,
// pools, dense and softmax run float32 kernels between casts (widen_float16), and the output stays
// float16. Checked against the interpreter (float16 rounding after every op, as compiled) and
// against the same graph in float32 on the same (float16) weights and input, whose difference is
// float16's rounding of the activations alone.
TEST(Build, Float16ModelRunsFloat32KernelsBetweenCasts) {
  const ir::DataType f16 = ir::DataType::Float(16);
  auto half = [&](const runtime::NDArray& a) { return ops::host::float_converted(a, f16); };
  auto model = [&](ir::DataType t) {
    auto as_t = [&](const runtime::NDArray& a) {
      return t == f16 ? half(a) : ops::host::float_converted(half(a), f32);
    };
    Graph g;
    ValueId x = g.add_input("x", {{1, 4, 12, 12}, t});
    ValueId w = g.add_constant("w", as_t(random_array({8, 4, 3, 3}, 1)));
    ValueId b = g.add_constant("b", as_t(random_array({8}, 2)));
    Attrs pads("conv2d", {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
    ValueId r = g.add("relu", "relu", Attrs(), {g.add("conv", "conv2d", pads, {x, w, b})});
    Attrs pool("max_pool2d", {{"kernel_shape", std::vector<int64_t>{2, 2}},
                              {"strides", std::vector<int64_t>{2, 2}}});
    ValueId gp =
        g.add("gap", "global_avg_pool2d", Attrs(), {g.add("pool", "max_pool2d", pool, {r})});
    ValueId flat =
        g.add("flat", "reshape", Attrs("reshape", {{"shape", std::vector<int64_t>{1, 8}}}), {gp});
    ValueId d = g.add("fc", "dense", Attrs(),
                      {flat, g.add_constant("w2", as_t(random_array({5, 8}, 3, -4.0f, 4.0f)))});
    g.add_output(g.add("softmax", "softmax", Attrs(), {d}));
    return g;
  };
  Graph g = model(f16);
  Graph opt = CompiledGraph::optimize(g, Target::host(), BuildOptions());
  for (const Node& n : opt.nodes()) {
    if (n.op == "cast" || n.op == "relu" || n.op == "reshape") continue;
    for (ValueId v : n.inputs)
      EXPECT_NE(opt.value(v).type.dtype, f16) << n.name << " (" << n.op << ")";
  }
  runtime::NDArray x = random_array({1, 4, 12, 12}, 4);
  CompiledGraph cg = CompiledGraph::build(g, Target::host(), BuildOptions());
  std::vector<runtime::NDArray> got = cg.run({half(x)});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(ops::from_dlpack(got[0].dtype()), f16);
  auto as_f32 = [](std::vector<runtime::NDArray> v) {
    for (runtime::NDArray& a : v) a = ops::host::float_converted(a, f32);
    return v;
  };
  // A softmax near 0.2: a float16 ulp is 1/8192 there.
  expect_close(as_f32(got), as_f32(interpret(g, {half(x)})), "float16, interpreted", 4e-3);
  expect_close(as_f32(got), evaluate(model(f32), {ops::host::float_converted(half(x), f32)}),
               "float16 against float32", 1e-2);
}

// A float64 model computes in double from end to end: its convolutions, pools, normalizations,
// products and softmax stay float64 on their plain (NCHW) schedules, and the result is the
// interpreter's to 1e-12 (float32 anywhere would be about 1e-7 off).
TEST(Build, Float64ModelComputesInDouble) {
  const ir::DataType f64 = ir::DataType::Float(64);
  auto wide = [&](const runtime::NDArray& a) { return ops::host::float_converted(a, f64); };
  Graph g;
  ValueId x = g.add_input("x", {{1, 4, 12, 12}, f64});
  Attrs pads("conv2d", {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  ValueId c = g.add("conv", "conv2d", pads,
                    {x, g.add_constant("w", wide(random_array({8, 4, 3, 3}, 1))),
                     g.add_constant("b", wide(random_array({8}, 2)))});
  std::vector<ValueId> bn = {c};
  for (uint32_t i = 0; i < 4; ++i)
    bn.push_back(g.add_constant("bn" + std::to_string(i),
                                wide(random_array({8}, 10 + i, i == 3 ? 0.5f : -1.0f, 1.5f))));
  ValueId r = g.add("relu", "relu", Attrs(), {g.add("bn", "batch_norm", Attrs(), bn)});
  Attrs grouped("conv2d", {{"group", int64_t{2}}, {"strides", std::vector<int64_t>{2, 2}}});
  ValueId c2 = g.add("conv2", "conv2d", grouped,
                     {r, g.add_constant("w2", wide(random_array({8, 4, 3, 3}, 3)))});
  Attrs pool("max_pool2d", {{"kernel_shape", std::vector<int64_t>{2, 2}}});
  ValueId gp =
      g.add("gap", "global_avg_pool2d", Attrs(), {g.add("pool", "max_pool2d", pool, {c2})});
  ValueId flat =
      g.add("flat", "reshape", Attrs("reshape", {{"shape", std::vector<int64_t>{1, 8}}}), {gp});
  ValueId ln = g.add("ln", "layer_norm", Attrs(),
                     {flat, g.add_constant("gamma", wide(random_array({8}, 4)))});
  ValueId d =
      g.add("fc", "dense", Attrs(), {ln, g.add_constant("w3", wide(random_array({5, 8}, 5)))});
  g.add_output(g.add("softmax", "softmax", Attrs(), {d}));

  Graph opt = CompiledGraph::optimize(g, Target::host(), BuildOptions());
  for (const Node& n : opt.nodes()) {
    EXPECT_EQ(n.op.find("nchwc"), std::string::npos) << n.name << " (" << n.op << ")";
    for (ValueId v : n.inputs)
      EXPECT_EQ(opt.value(v).type.dtype, f64) << n.name << " (" << n.op << ")";
  }
  runtime::NDArray in = wide(random_array({1, 4, 12, 12}, 6));
  CompiledGraph cg = CompiledGraph::build(g, Target::host(), BuildOptions());
  expect_close(cg.run({in}), interpret(g, {in}), "float64, interpreted", 1e-12);
}

TEST(Build, InputErrorsAndConcurrentRuns) {
  Graph g;
  ValueId x = g.add_input("x", {{2, 8}, f32});
  g.add_output(g.add("r", "relu", Attrs(), {g.add("e", "exp", Attrs(), {x})}));
  CompiledGraph cg = CompiledGraph::build(g, Target::host(), BuildOptions());
  EXPECT_NE(cg.summary().find("1 kernels"), std::string::npos) << cg.summary();
  BuildOptions unfused;
  unfused.fuse = false;
  CompiledGraph cu = CompiledGraph::build(g, Target::host(), unfused);
  EXPECT_EQ(cu.num_kernels(), 2u);
  EXPECT_EQ(cu.memory_plan().planned_bytes, 64);  // exp's output, between the two kernels
  expect_close(cu.run({random_array({2, 8}, 5)}), interpret(g, {random_array({2, 8}, 5)}),
               "unfused");
  try {
    cg.run({random_array({2, 9}, 1)});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("input 'x'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(cg.run({}), Error);
  std::vector<runtime::NDArray> in = random_inputs(g);
  std::vector<runtime::NDArray> want = interpret(g, in);
  std::vector<std::thread> threads;
  std::vector<std::vector<runtime::NDArray>> got(4);
  for (size_t i = 0; i < got.size(); ++i) threads.emplace_back([&, i] { got[i] = cg.run(in); });
  for (std::thread& t : threads) t.join();
  for (const auto& o : got) expect_close(o, want, "concurrent run");
}

// A product whose epilogue moves elements (here a reshape to the same shape, the model's output,
// so it is not simplified away) is scheduled on its own output and the reshape after it: the
// product's tiles assume the epilogue reads it where it writes (it lowered into a loop nest that
// read an unbound variable).
TEST(Build, BatchedMatmulWithReshapeEpilogue) {
  for (std::vector<int64_t> shape : {std::vector<int64_t>{2, 3, 5}, {6, 5}, {5, 6}}) {
    Graph g;
    ValueId a = g.add_input("a", {{2, 3, 4}, f32});
    ValueId b = g.add_input("b", {{2, 4, 5}, f32});
    ValueId m = g.add("mm", "matmul", Attrs(), {a, b});
    g.add_output(g.add("r", "reshape", Attrs("reshape", {{"shape", shape}}), {m}));
    CompiledGraph cg = CompiledGraph::build(g, Target::host(), BuildOptions());
    std::vector<runtime::NDArray> in = random_inputs(g);
    expect_close(cg.run(in), interpret(g, in), "reshape epilogue");
  }
}

// An index out of range fails the run naming the node, as ONNX Runtime does, where compiled code
// would otherwise read a clamped row; the check reads the indices through the cast fused before
// the gather.
TEST(Build, OutOfRangeGatherIndexFailsNamingTheNode) {
  Graph g;
  ValueId table = g.add_input("table", {{10, 4}, f32});
  ValueId ids = g.add_input("ids", {{3}, ir::DataType::Int32()});
  ValueId wide = g.add("widen", "cast", Attrs("cast", {{"to", std::string("int64")}}), {ids});
  ValueId rows = g.add("lookup", "gather", Attrs(), {table, wide});
  g.add_output(g.add("act", "relu", Attrs(), {rows}));
  CompiledGraph cg = CompiledGraph::build(g, Target::host(), BuildOptions());
  EXPECT_EQ(cg.num_kernels(), 1u) << cg.summary();
  runtime::NDArray t = random_array({10, 4}, 3);
  runtime::NDArray good = runtime::NDArray::empty({3}, runtime::dl_int32());
  const int32_t good_ids[] = {0, -1, 9};
  std::memcpy(good.data(), good_ids, sizeof(good_ids));
  expect_close(cg.run({t, good}), interpret(g, {t, good}), "in range");
  runtime::NDArray bad = runtime::NDArray::empty({3}, runtime::dl_int32());
  const int32_t bad_ids[] = {0, 99, 9};
  std::memcpy(bad.data(), bad_ids, sizeof(bad_ids));
  try {
    cg.run({t, bad});
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("'lookup'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("gather: an index is out of range for axis 0 of size 10 (valid: -10 to 9)"),
              std::string::npos)
        << msg;
  }
}

// What `anvil inspect` shows: the optimized graph without compiling, and each kernel's loop IR,
// LLVM IR, assembly and C source.
TEST(Build, StagesOfEachKernel) {
  Graph g;
  ValueId x = g.add_input("x", {{1, 8, 6, 6}, f32});
  Attrs pads("conv2d", {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  ValueId c =
      g.add("conv", "conv2d", pads, {x, g.add_constant("w", random_array({16, 8, 3, 3}, 1))});
  g.add_output(g.add("relu", "relu", Attrs(), {c}));
  CompiledGraph cg = CompiledGraph::build(g, Target::host(), BuildOptions());
  EXPECT_EQ(CompiledGraph::optimize(g, Target::host(), BuildOptions()).str(), cg.graph().str());

  const CompiledGraph::Kernel* conv = nullptr;
  for (const CompiledGraph::Kernel& k : cg.kernels())
    if (k.name.find("conv2d") != std::string::npos) conv = &k;
  ASSERT_NE(conv, nullptr) << cg.summary();
  // 2 FLOP per tap of the direct convolution, one per element for the relu.
  EXPECT_EQ(conv->flops, 2.0 * (16 * 36) * (8 * 9) + 16 * 36);
  EXPECT_NE(cg.summary().find(" MFLOP"), std::string::npos) << cg.summary();

  std::string lowered = cg.lowered_ir(conv->name);
  EXPECT_EQ(lowered.find("// " + conv->name + ": 'conv' ("), 0u) << lowered;
  EXPECT_NE(lowered.find(conv->name + "("), std::string::npos) << lowered;
  EXPECT_NE(lowered.find("for ("), std::string::npos) << lowered;
  std::string ir = cg.llvm_ir(conv->name);
  EXPECT_NE(ir.find("define"), std::string::npos) << ir;
  EXPECT_NE(ir.find("@" + conv->name + "("), std::string::npos) << ir;
  EXPECT_NE(cg.llvm_ir().find("target triple"), std::string::npos);
  std::string assembly = cg.assembly();
  EXPECT_NE(assembly.find(conv->name + ":"), std::string::npos);
  EXPECT_NE(cg.c_source().find(conv->name), std::string::npos);

  for (auto* stage : {+[](const CompiledGraph& x) { return x.lowered_ir("fused_99"); },
                      +[](const CompiledGraph& x) { return x.llvm_ir("fused_99"); }}) {
    try {
      stage(cg);
      ADD_FAILURE() << "expected an error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("no kernel named 'fused_99'"), std::string::npos);
      EXPECT_NE(std::string(e.what()).find(conv->name), std::string::npos) << e.what();
    }
  }
  // Target c has no LLVM module; its C source is what it compiled.
  CompiledGraph cc = CompiledGraph::build(g, Target::parse("c"), BuildOptions());
  EXPECT_THROW(cc.llvm_ir(), Error);
  EXPECT_THROW(cc.assembly(), Error);
  EXPECT_NE(cc.c_source().find(conv->name), std::string::npos);
  EXPECT_NE(cc.lowered_ir(cc.kernels().at(0).name).find("for ("), std::string::npos);
}

}  // namespace
}  // namespace anvil::graph
