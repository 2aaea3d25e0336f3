// frontend::quantize_onnx (`anvil quantize`): a small float model (Conv with a BatchNormalization
// to fold, Relu, Gemm, a Conv whose weight is computed) quantized with random calibration inputs.
// The QDQ file it writes holds int8 weights per channel and uint8 activations, keeps what it cannot
// quantize in float (and says so), runs on Anvil's int8 kernels, and stays close to the float
// model: the report's difference is the one measured here, and the cosine similarity of the outputs
// is above 0.99. Errors name the opset and the missing calibration.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "anvil/frontend/onnx/importer.h"
#include "anvil/frontend/onnx/quantize.h"
#include "anvil/graph/build.h"
#include "anvil/support/temp_dir.h"
#include "anvil/target/target.h"
#include "frontend/onnx_model_builder.h"
#include "testing/errors.h"

namespace anvil {
namespace {

using anvil::testing::OnnxModel;
using runtime::NDArray;
using V = std::vector<int64_t>;

std::vector<float> normal(size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

NDArray uniform(const V& shape, uint32_t seed) {
  NDArray a = NDArray::empty(shape, runtime::dl_float32());
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  for (int64_t i = 0; i < a.numel(); ++i) a.data_as<float>()[i] = d(rng);
  return a;
}

std::string write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// x [1, 8, 10, 10] -> Conv 3x3 (16) -> BatchNormalization -> Relu -> Conv with a computed weight
// (left float) -> Flatten -> Gemm (transB, 16*10*10 -> 12).
OnnxModel float_model(int64_t opset = 13) {
  OnnxModel m(opset);
  m.input("x", {1, 8, 10, 10});
  m.init_floats("w1", {16, 8, 3, 3}, normal(16 * 8 * 9, 1, 0.12f));
  m.init_floats("b1", {16}, normal(16, 2, 0.1f));
  std::vector<float> gamma = normal(16, 6, 0.2f), var = normal(16, 7, 0.3f);
  for (float& g : gamma) g += 1.0f;
  for (float& v : var) v = v * v + 0.5f;
  m.init_floats("bn_scale", {16}, gamma);
  m.init_floats("bn_bias", {16}, normal(16, 8, 0.1f));
  m.init_floats("bn_mean", {16}, normal(16, 9, 0.2f));
  m.init_floats("bn_var", {16}, var);
  m.init_floats("w2", {16, 16, 1, 1}, normal(16 * 16, 3, 0.25f));
  m.init_floats("w3", {12, 1600}, normal(12 * 1600, 4, 0.025f));
  m.init_floats("b3", {12}, normal(12, 5, 0.1f));
  m.output("y");
  OnnxModel::attr(m.node("Conv", {"x", "w1", "b1"}, {"c1"}, "conv1"), "pads", V{1, 1, 1, 1});
  m.node("BatchNormalization", {"c1", "bn_scale", "bn_bias", "bn_mean", "bn_var"}, {"n1"}, "bn1");
  m.node("Relu", {"n1"}, {"r1"}, "relu1");
  m.node("Neg", {"w2"}, {"w2n"}, "neg");
  m.node("Conv", {"r1", "w2n"}, {"c2"}, "conv2");
  m.node("Flatten", {"c2"}, {"f"}, "flatten");
  OnnxModel::attr(m.node("Gemm", {"f", "w3", "b3"}, {"y"}, "fc"), "transB", int64_t{1});
  return m;
}

TEST(QuantizeModel, WritesAQdqModelThatRunsOnTheInt8Kernels) {
  TempDir dir("anvil_quantize_", "the quantize test's models");
  const std::string in = write(dir.path() + "/float.onnx", float_model().bytes());
  const std::string out = dir.path() + "/model.int8.onnx";
  frontend::QuantizeOptions o;
  for (uint32_t s = 0; s < 4; ++s) o.calibration.push_back({{"x", uniform({1, 8, 10, 10}, s)}});
  frontend::QuantizeReport r = frontend::quantize_onnx(in, out, o);
  EXPECT_EQ(r.folded_batch_norms, 1);
  EXPECT_EQ(r.quantized, (std::vector<std::string>{"conv1", "fc"}));
  ASSERT_EQ(r.left_float.size(), 1u);
  EXPECT_NE(r.left_float[0].find("conv2 (Conv): its weight is not an initializer"),
            std::string::npos)
      << r.left_float[0];

  // The file: int8 weights with one scale per output channel, no float copies of them left.
  ::onnx::ModelProto m;
  std::ifstream f(out, std::ios::binary);
  ASSERT_TRUE(m.ParseFromIstream(&f));
  int q = 0, dq = 0;
  for (const auto& n : m.graph().node()) {
    q += n.op_type() == "QuantizeLinear";
    dq += n.op_type() == "DequantizeLinear";
  }
  EXPECT_EQ(q, 4);   // conv1's and fc's activations and outputs
  EXPECT_EQ(dq, 6);  // those four and the two weights
  for (const auto& n : m.graph().node()) EXPECT_NE(n.op_type(), "BatchNormalization");
  bool w1_int8 = false;
  for (const auto& t : m.graph().initializer()) {
    EXPECT_NE(t.name(), "w1");
    EXPECT_NE(t.name(), "w3");
    EXPECT_NE(t.name(), "bn_mean");
    if (t.name() == "n1_folded_weight_quantized") {
      w1_int8 = t.data_type() == ::onnx::TensorProto::INT8;
      const std::string& raw = t.raw_data();
      // Symmetric per channel: each filter reaches 127 or -127.
      for (int o = 0; o < 16; ++o) {
        int peak = 0;
        for (int i = 0; i < 72; ++i) peak = std::max(peak, std::abs(int{int8_t(raw[o * 72 + i])}));
        EXPECT_EQ(peak, 127) << "filter " << o;
      }
    }
  }
  EXPECT_TRUE(w1_int8);

  // On Anvil's int8 kernels, close to the float model.
  graph::CompiledGraph fm =
      graph::CompiledGraph::build(frontend::import_onnx(in), Target::host(), {});
  graph::CompiledGraph qm =
      graph::CompiledGraph::build(frontend::import_onnx(out), Target::host(), {});
  EXPECT_NE(qm.summary().find("conv2d_int8"), std::string::npos) << qm.summary();
  EXPECT_NE(qm.summary().find("dense_int8"), std::string::npos) << qm.summary();
  // conv2's computed weight kept it in float, and the summary says so.
  EXPECT_NE(qm.summary().find("int8: 2 products; left in float: conv"), std::string::npos)
      << qm.summary();
  EXPECT_NE(qm.summary().find("'conv2'"), std::string::npos) << qm.summary();
  double worst = 0, peak = 0, min_cos = 1;
  for (const auto& sample : o.calibration) {
    NDArray want = fm.run({sample.at("x")})[0], got = qm.run({sample.at("x")})[0];
    double dot = 0, ww = 0, gg = 0;
    for (int64_t i = 0; i < want.numel(); ++i) {
      const double a = want.data_as<float>()[i], b = got.data_as<float>()[i];
      worst = std::max(worst, std::abs(a - b));
      peak = std::max(peak, std::abs(a));
      dot += a * b;
      ww += a * a;
      gg += b * b;
    }
    min_cos = std::min(min_cos, dot / std::sqrt(ww * gg));
  }
  EXPECT_NEAR(r.max_abs_difference, worst, 1e-6 * (1 + worst));
  EXPECT_NEAR(r.max_abs_float, peak, 1e-6 * (1 + peak));
  EXPECT_GT(min_cos, 0.99);
  EXPECT_NEAR(r.min_cosine, min_cos, 1e-9);
  EXPECT_LT(worst, 0.1 * peak);  // quantization noise, not a wrong model

  // Reduced range: 7-bit weights.
  o.reduce_range = true;
  frontend::quantize_onnx(in, out, o);
  ::onnx::ModelProto m7;
  std::ifstream f7(out, std::ios::binary);
  ASSERT_TRUE(m7.ParseFromIstream(&f7));
  for (const auto& t : m7.graph().initializer()) {
    if (t.data_type() != ::onnx::TensorProto::INT8 || t.dims_size() < 2) continue;
    for (char c : t.raw_data()) EXPECT_LE(std::abs(int{int8_t(c)}), 63) << t.name();
  }
}

TEST(QuantizeModel, Errors) {
  TempDir dir("anvil_quantize_", "the quantize test's models");
  frontend::QuantizeOptions o;
  o.calibration.push_back({{"x", uniform({1, 8, 10, 10}, 0)}});
  const std::string old = write(dir.path() + "/old.onnx", float_model(11).bytes());
  testing::expect_has(
      testing::user_error([&] { frontend::quantize_onnx(old, dir.path() + "/o.onnx", o); }),
      "opset 11 of the default domain; per-channel QuantizeLinear and "
      "DequantizeLinear need 13");
  const std::string in = write(dir.path() + "/float.onnx", float_model().bytes());
  testing::expect_has(
      testing::user_error([&] { frontend::quantize_onnx(in, dir.path() + "/o.onnx", {}); }),
      "no calibration inputs");
  frontend::QuantizeOptions wrong;
  wrong.calibration.push_back({{"image", uniform({1, 8, 10, 10}, 0)}});
  testing::expect_has(
      testing::user_error([&] { frontend::quantize_onnx(in, dir.path() + "/o.onnx", wrong); }),
      "the calibration inputs have no 'x', an input of the model");
}

}  // namespace
}  // namespace anvil
