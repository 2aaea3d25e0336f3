// The built-in models: interfaces, architecture (parameter counts checked against the published
// ones), seeded weights, and runs in the reference interpreter with finite outputs in a sane range.
#include "anvil/models/models.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "anvil/graph/interpreter.h"
#include "testing/errors.h"

namespace anvil::models {
namespace {

using graph::Graph;
using ::testing::HasSubstr;

const ir::DataType f32 = ir::DataType::Float32();

struct Interface {
  std::string input;
  ops::TensorType input_type;
  std::string output;
  ops::TensorType output_type;
};

Interface interface_of(const Graph& g) {
  EXPECT_EQ(g.inputs().size(), 1u);
  EXPECT_EQ(g.outputs().size(), 1u);
  const graph::Value& in = g.value(g.inputs()[0]);
  const graph::Value& out = g.value(g.outputs()[0]);
  return {in.name, in.type, out.name, out.type};
}

int64_t count_ops(const Graph& g, const std::string& op) {
  return std::count_if(g.nodes().begin(), g.nodes().end(),
                       [&](const graph::Node& n) { return n.op == op; });
}

// Elements held by constants (weights, biases, batch-norm statistics).
int64_t constant_elements(const Graph& g) {
  int64_t n = 0;
  for (size_t v = 0; v < g.num_values(); ++v) {
    const graph::Value& val = g.value(static_cast<graph::ValueId>(v));
    if (val.kind == graph::ValueKind::kConstant) n += val.data.numel();
  }
  return n;
}

// Elements of batch-norm running statistics (mean and variance), which the published parameter
// counts of PyTorch models leave out.
int64_t running_stat_elements(const Graph& g) {
  int64_t n = 0;
  for (const graph::Node& node : g.nodes())
    if (node.op == "batch_norm") n += 2 * g.value(node.inputs[3]).data.numel();
  return n;
}

struct Stats {
  double max_abs = 0, mean = 0, std = 0;
  bool finite = true;
};

Stats stats_of(const runtime::NDArray& a) {
  Stats s;
  double sum = 0, sq = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    double v = a.data_as<float>()[i];
    s.finite = s.finite && std::isfinite(v);
    s.max_abs = std::max(s.max_abs, std::fabs(v));
    sum += v;
    sq += v * v;
  }
  double n = static_cast<double>(a.numel());
  s.mean = sum / n;
  s.std = std::sqrt(std::max(0.0, sq / n - s.mean * s.mean));
  return s;
}

TEST(Zoo, NamesAndErrors) {
  EXPECT_THAT(model_names(), ::testing::ElementsAre("resnet18", "mobilenet_v1", "mobilenet_v2",
                                                    "lstm_lm", "dqn", "dcgan"));
  std::string msg = testing::user_error([] { build_model("resnet50"); });
  EXPECT_THAT(msg, HasSubstr("unknown model 'resnet50'"));
  EXPECT_THAT(msg, HasSubstr("resnet18, mobilenet_v1, mobilenet_v2, lstm_lm, dqn, dcgan"));
  EXPECT_EQ(build_model("dqn").num_nodes(), dqn().num_nodes());
}

TEST(Zoo, WeightsAreSeeded) {
  Graph a = dqn(0), b = dqn(0), c = dqn(1);
  const runtime::NDArray& wa = a.value(a.find("fc1.weight")).data;
  const runtime::NDArray& wb = b.value(b.find("fc1.weight")).data;
  const runtime::NDArray& wc = c.value(c.find("fc1.weight")).data;
  EXPECT_EQ(std::memcmp(wa.data(), wb.data(), wa.nbytes()), 0);
  EXPECT_NE(std::memcmp(wa.data(), wc.data(), wa.nbytes()), 0);
  // He-normal: std sqrt(2 / 3136) = 0.02525, mean 0 (1.6 million samples).
  Stats s = stats_of(wa);
  EXPECT_NEAR(s.std, std::sqrt(2.0 / 3136), 2e-4);
  EXPECT_NEAR(s.mean, 0.0, 1e-4);
}

TEST(Zoo, ResNet18) {
  Graph g = resnet18();
  Interface io = interface_of(g);
  EXPECT_EQ(io.input, "data");
  EXPECT_EQ(io.input_type, (ops::TensorType{{1, 3, 224, 224}, f32}));
  EXPECT_EQ(io.output, "logits");
  EXPECT_EQ(io.output_type, (ops::TensorType{{1, 1000}, f32}));
  EXPECT_EQ(count_ops(g, "conv2d"), 20);  // stem + 16 in blocks + 3 projections
  EXPECT_EQ(count_ops(g, "batch_norm"), 20);
  EXPECT_EQ(count_ops(g, "add"), 8);
  EXPECT_EQ(count_ops(g, "dense"), 1);
  // torchvision's resnet18 has 11,689,512 parameters.
  EXPECT_EQ(constant_elements(g) - running_stat_elements(g), 11689512);
  EXPECT_EQ(g.value(g.find("layer2.0.downsample.0")).type,
            (ops::TensorType{{1, 128, 28, 28}, f32}));
  EXPECT_EQ(g.value(g.find("layer4.1.relu2")).type, (ops::TensorType{{1, 512, 7, 7}, f32}));
}

TEST(Zoo, MobileNetV1) {
  Graph g = mobilenet_v1();
  Interface io = interface_of(g);
  EXPECT_EQ(io.input, "data");
  EXPECT_EQ(io.input_type, (ops::TensorType{{1, 3, 224, 224}, f32}));
  EXPECT_EQ(io.output, "logits");
  EXPECT_EQ(io.output_type, (ops::TensorType{{1, 1000}, f32}));
  EXPECT_EQ(count_ops(g, "conv2d"), 27);
  EXPECT_EQ(count_ops(g, "clip"), 27);
  // Keras' MobileNet (alpha 1.0, 224) has 4,253,864 weights, batch-norm statistics included.
  EXPECT_EQ(constant_elements(g), 4253864);
  EXPECT_EQ(g.value(g.find("blocks.12.pw_relu")).type, (ops::TensorType{{1, 1024, 7, 7}, f32}));
}

TEST(Zoo, MobileNetV2) {
  Graph g = mobilenet_v2();
  Interface io = interface_of(g);
  EXPECT_EQ(io.input, "data");
  EXPECT_EQ(io.input_type, (ops::TensorType{{1, 3, 224, 224}, f32}));
  EXPECT_EQ(io.output, "logits");
  EXPECT_EQ(io.output_type, (ops::TensorType{{1, 1000}, f32}));
  EXPECT_EQ(count_ops(g, "conv2d"), 52);  // stem, 2 + 16 x 3 in the blocks, the last 1x1
  EXPECT_EQ(count_ops(g, "add"), 10);
  // torchvision's mobilenet_v2 has 3,504,872 parameters.
  EXPECT_EQ(constant_elements(g) - running_stat_elements(g), 3504872);
  EXPECT_EQ(g.value(g.find("features.18.2")).type, (ops::TensorType{{1, 1280, 7, 7}, f32}));
}

TEST(Zoo, LstmLmInterface) {
  Graph g = lstm_lm();
  Interface io = interface_of(g);
  EXPECT_EQ(io.input, "tokens");
  EXPECT_EQ(io.input_type, (ops::TensorType{{35, 1}, ir::DataType::Int64()}));
  EXPECT_EQ(io.output, "logits");
  EXPECT_EQ(io.output_type, (ops::TensorType{{35, 10000}, f32}));
  EXPECT_EQ(count_ops(g, "lstm"), 2);
  // Embedding 10000 x 650; per lstm W and R 2600 x 650 and B 5200; decoder 10000 x 650 + 10000.
  EXPECT_EQ(constant_elements(g), 6500000 + 2 * (2 * 1690000 + 5200) + 6510000);
}

TEST(Zoo, DqnInterface) {
  Graph g = dqn();
  Interface io = interface_of(g);
  EXPECT_EQ(io.input, "state");
  EXPECT_EQ(io.input_type, (ops::TensorType{{1, 4, 84, 84}, f32}));
  EXPECT_EQ(io.output, "q_values");
  EXPECT_EQ(io.output_type, (ops::TensorType{{1, 18}, f32}));
  EXPECT_EQ(g.value(g.find("flatten")).type, (ops::TensorType{{1, 3136}, f32}));
  EXPECT_EQ(constant_elements(g), 1693362);
}

TEST(Zoo, DcganInterface) {
  Graph g = dcgan();
  Interface io = interface_of(g);
  EXPECT_EQ(io.input, "z");
  EXPECT_EQ(io.input_type, (ops::TensorType{{1, 100}, f32}));
  EXPECT_EQ(io.output, "image");
  EXPECT_EQ(io.output_type, (ops::TensorType{{1, 3, 64, 64}, f32}));
  EXPECT_EQ(count_ops(g, "conv2d_transpose"), 4);
  EXPECT_EQ(g.value(g.find("deconv3.relu")).type, (ops::TensorType{{1, 128, 32, 32}, f32}));
}

TEST(Zoo, ExampleInputs) {
  Graph g;
  graph::ValueId ids = g.add_input("ids", {{35, 1}, ir::DataType::Int64()});
  graph::ValueId x = g.add_input("x", {{1, 20000}, f32});
  g.add_output(ids);
  g.add_output(g.add("relu", "relu", ops::Attrs(), {x}));
  std::vector<runtime::NDArray> a = example_inputs(g), b = example_inputs(g),
                                c = example_inputs(g, 1);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].shape(), (std::vector<int64_t>{35, 1}));
  EXPECT_EQ(ops::from_dlpack(a[0].dtype()), ir::DataType::Int64());
  EXPECT_EQ(std::memcmp(a[0].data(), b[0].data(), a[0].nbytes()), 0);
  EXPECT_NE(std::memcmp(a[0].data(), c[0].data(), a[0].nbytes()), 0);
  for (int64_t i = 0; i < a[0].numel(); ++i) {
    EXPECT_GE(a[0].data_as<int64_t>()[i], 0);
    EXPECT_LT(a[0].data_as<int64_t>()[i], 10000);
  }
  // Standard normal: mean and std within about 3 standard errors (0.007 and 0.005).
  Stats s = stats_of(a[1]);
  EXPECT_NEAR(s.mean, 0.0, 0.02);
  EXPECT_NEAR(s.std, 1.0, 0.015);
}

// Runs in the interpreter: finite, not collapsed to a constant, not exploding. Each bound holds
// with a wide margin for these weights and inputs (measured: see the comments).
Stats run(const Graph& g) {
  std::vector<runtime::NDArray> out = graph::interpret(g, example_inputs(g));
  EXPECT_EQ(out.size(), 1u);
  Stats s = stats_of(out[0]);
  EXPECT_TRUE(s.finite);
  return s;
}

TEST(ZooRun, Dqn) {
  Stats s = run(dqn());
  EXPECT_LT(s.max_abs, 100.0);
  EXPECT_GT(s.std, 1e-2);
}

TEST(ZooRun, Dcgan) {
  Stats s = run(dcgan());
  EXPECT_LE(s.max_abs, 1.0);  // tanh
  EXPECT_GT(s.std, 0.05);     // an image, not a flat field
}

// The large models take the naive reference convolutions 1.5 to 3.5 s each in Release, several
// times that under the sanitizers: there they are skipped (the small ones above cover the same
// interpreter and reference code).
// (ANVIL_SANITIZED: defined for the tests of the sanitizer build, tests/CMakeLists.txt.)
#ifdef ANVIL_SANITIZED
#define SKIP_IF_SANITIZED() GTEST_SKIP() << "slow under the sanitizers; run in Release"
#else
#define SKIP_IF_SANITIZED() (void)0
#endif

TEST(ZooRun, LstmLm) {
  SKIP_IF_SANITIZED();
  Stats s = run(lstm_lm());
  EXPECT_LT(s.max_abs, 10.0);
  EXPECT_GT(s.std, 1e-3);
}

TEST(ZooRun, MobileNetV1) {
  SKIP_IF_SANITIZED();
  Stats s = run(mobilenet_v1());
  EXPECT_LT(s.max_abs, 1000.0);
  EXPECT_GT(s.std, 1e-2);
}

TEST(ZooRun, MobileNetV2) {
  SKIP_IF_SANITIZED();
  Stats s = run(mobilenet_v2());
  EXPECT_LT(s.max_abs, 1000.0);
  EXPECT_GT(s.std, 1e-2);
}

TEST(ZooRun, ResNet18) {
  SKIP_IF_SANITIZED();
  Stats s = run(resnet18());
  EXPECT_LT(s.max_abs, 1000.0);
  EXPECT_GT(s.std, 1e-2);
}

}  // namespace
}  // namespace anvil::models
