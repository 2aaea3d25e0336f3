// What a new user ran into with the built `anvil`, each case fixed: outputs keep the graph's names
// (a node's several outputs, an input passed through, one value returned twice), `inspect`
// describes an artifact, a directory or an artifact given to `compile` is named as such,
// `--version`, weights in ONNX external data files, and an input of another batch says how to
// rebind the shape; scalars through .npy files; shape-deciding inputs bound with --input-value.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "anvil/frontend/onnx/importer.h"
#include "anvil/runtime/npy.h"
#include "frontend/onnx_model_builder.h"
#include "frontend/onnx_test_data.h"
#include "tools/cli_fixture.h"

namespace anvil::cli {
namespace {

using anvil::testing::floats;

std::vector<float> values(const runtime::NDArray& a) {
  return std::vector<float>(a.data_as<float>(), a.data_as<float>() + a.numel());
}

// r = relu(x), returned as "r" and again as "r2" (an Identity of it), and x passed through as "y".
std::string passthrough_model() {
  anvil::testing::OnnxModel m(13);
  m.input("x", {2, 3});
  m.node("Relu", {"x"}, {"r"}, "relu");
  m.node("Identity", {"r"}, {"r2"}, "again");
  m.node("Identity", {"x"}, {"y"}, "pass");
  m.output("r");
  m.output("r2");
  m.output("y");
  return m.bytes();
}

const std::vector<float> kX = {1, -2, 3, -4, 5, -6};

TEST_F(Cli, OutputsKeepTheGraphsNames) {
  write(path("pass.onnx"), passthrough_model());
  ASSERT_EQ(anvil("compile pass.onnx -o pass.so").code, 0);
  runtime::save_npy(path("x.npy"), floats({2, 3}, kX));
  Result r = anvil("run pass.so --input x=x.npy --output-dir pass_out");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::vector<float> relu = {1, 0, 3, 0, 5, 0};
  EXPECT_EQ(values(runtime::load_npy(path("pass_out/r.npy"))), relu);
  EXPECT_EQ(values(runtime::load_npy(path("pass_out/r2.npy"))), relu);
  EXPECT_EQ(values(runtime::load_npy(path("pass_out/y.npy"))), kX);
  EXPECT_FALSE(fs::exists(path("pass_out/x.npy")));
}

// The ONNX backend test whose three outputs were written under internal names.
TEST_F(Cli, AMultiOutputNodesOutputsKeepTheirNames) {
  const fs::path test = "/usr/share/libonnx-testdata/data/node/test_layer_normalization_2d_axis0";
  ASSERT_TRUE(fs::exists(test)) << test
                                << " is missing: install libonnx-testdata (scripts/setup.sh does)";
  Result c = anvil("compile " + (test / "model.onnx").string() + " --strict -o ln.so");
  ASSERT_EQ(c.code, 0) << c.err;
  const fs::path data = test / "test_data_set_0";
  std::string inputs;
  const char* input_names[] = {"X", "W", "B"};
  for (int i = 0; i < 3; ++i) {
    std::string file = std::string("ln_") + input_names[i] + ".npy";
    runtime::save_npy(path(file), frontend::load_onnx_tensor(
                                      (data / ("input_" + std::to_string(i) + ".pb")).string()));
    inputs += std::string(" --input ") + input_names[i] + "=" + file;
  }
  Result r = anvil("run ln.so" + inputs + " --output-dir ln_out");
  ASSERT_EQ(r.code, 0) << r.err;
  const char* names[] = {"Y", "Mean", "InvStdDev"};
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE(names[i]);
    runtime::NDArray want =
        frontend::load_onnx_tensor((data / ("output_" + std::to_string(i) + ".pb")).string());
    runtime::NDArray got = runtime::load_npy(path(std::string("ln_out/") + names[i] + ".npy"));
    ASSERT_EQ(got.shape(), want.shape());
    for (int64_t k = 0; k < want.numel(); ++k)
      EXPECT_NEAR(got.data_as<float>()[k], want.data_as<float>()[k],
                  1e-4 * std::abs(want.data_as<float>()[k]) + 1e-5)
          << k;
  }
}

TEST_F(Cli, InspectDescribesAnArtifact) {
  write(path("pass.onnx"), passthrough_model());
  ASSERT_EQ(anvil("compile pass.onnx -o inspect_me.so").code, 0);
  Result r = anvil("inspect inspect_me.so");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* part :
       {"artifact inspect_me.so", "target: llvm", "runs on this CPU", "'x' float32[2, 3]",
        "'r2' float32[2, 3]", "'y' float32[2, 3]", "kernels: ", "intermediate memory: "})
    EXPECT_NE(r.out.find(part), std::string::npos) << part << "\n" << r.out;
  expect_error("inspect inspect_me.so --stage graph", 1, {"inspect_me.so is a compiled artifact"});
  expect_error("inspect pass.onnx", 1, {"--stage is required for a model"});
}

TEST_F(Cli, CompileNamesADirectoryAndAnArtifactForWhatTheyAre) {
  fs::create_directories(path("a_dir"));
  expect_error("compile a_dir -o out.so", 2, {"a_dir: a directory, not an ONNX file"});
  write(path("pass.onnx"), passthrough_model());
  ASSERT_EQ(anvil("compile pass.onnx -o built.so").code, 0);
  expect_error("compile built.so -o again.so", 2, {"built.so: a shared library", "anvil run"});
}

TEST_F(Cli, VersionNamesAnvilAndItsLlvm) {
  Result r = anvil("--version");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("anvil ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("(LLVM "), std::string::npos) << r.out;
}

// A model saved with its weights as external data (every model over 2 GiB is): y = x + w.
TEST_F(Cli, CompilesAModelWithExternalData) {
  fs::create_directories(path("ext/weights"));
  const std::vector<float> w = {0.5f, 1, 2, 4, 8, 16};
  std::ofstream(path("ext/weights/w.bin"), std::ios::binary)
      .write(reinterpret_cast<const char*>(w.data()), static_cast<std::streamsize>(w.size() * 4));
  anvil::testing::OnnxModel m(13);
  m.input("x", {2, 3});
  ::onnx::TensorProto* t = m.graph().add_initializer();
  t->set_name("w");
  t->set_data_type(::onnx::TensorProto::FLOAT);
  t->add_dims(2);
  t->add_dims(3);
  t->set_data_location(::onnx::TensorProto::EXTERNAL);
  ::onnx::StringStringEntryProto* e = t->add_external_data();
  e->set_key("location");
  e->set_value("weights/w.bin");
  m.node("Add", {"x", "w"}, {"y"}, "add");
  m.output("y");
  write(path("ext/model.onnx"), m.bytes());
  Result c = anvil("compile ext/model.onnx -o ext.so");
  ASSERT_EQ(c.code, 0) << c.err;
  runtime::save_npy(path("x.npy"), floats({2, 3}, kX));
  Result r = anvil("run ext.so --input x=x.npy --output-dir ext_out");
  ASSERT_EQ(r.code, 0) << r.err;
  std::vector<float> want;
  for (size_t i = 0; i < kX.size(); ++i) want.push_back(kX[i] + w[i]);
  EXPECT_EQ(values(runtime::load_npy(path("ext_out/y.npy"))), want);
  fs::remove(path("ext/weights/w.bin"));
  expect_error("compile ext/model.onnx -o ext.so", 2,
               {"initializer 'w'", "cannot read its external data file", "w.bin"});
}

// An operand that decides a shape (Reshape's target) given as a graph input: refused with the
// way out, then bound with --input-value, after which it leaves the artifact's inputs.
TEST_F(Cli, AShapeDecidingInputIsBoundWithInputValue) {
  anvil::testing::OnnxModel m(13);
  m.input("x", {2, 3});
  m.input("shape", {2}, ::onnx::TensorProto::INT64);
  m.node("Reshape", {"x", "shape"}, {"y"}, "reshape");
  m.output("y");
  write(path("reshape.onnx"), m.bytes());
  expect_error("compile reshape.onnx -o reshape.so", 2,
               {"node 'reshape' (Reshape)", "'shape' must be known at compile time",
                "--input-value shape=FILE.npy"});
  runtime::NDArray shape = runtime::NDArray::empty({2}, DLDataType{kDLInt, 64, 1});
  shape.data_as<int64_t>()[0] = 3;
  shape.data_as<int64_t>()[1] = 2;
  runtime::save_npy(path("shape.npy"), shape);
  Result c = anvil("compile reshape.onnx --input-value shape=shape.npy -o reshape.so");
  ASSERT_EQ(c.code, 0) << c.err;
  Result i = anvil("inspect reshape.so");
  ASSERT_EQ(i.code, 0) << i.err;
  EXPECT_EQ(i.out.find("'shape'"), std::string::npos) << i.out;
  runtime::save_npy(path("x.npy"), floats({2, 3}, kX));
  Result r = anvil("run reshape.so --input x=x.npy --output-dir reshape_out");
  ASSERT_EQ(r.code, 0) << r.err;
  runtime::NDArray y = runtime::load_npy(path("reshape_out/y.npy"));
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(values(y), kX);
  expect_error("compile reshape.onnx --input-value nope=shape.npy -o r.so", 2,
               {"--input-value names 'nope', which is not an input"});
  expect_error("compile reshape.onnx --input-value shape=missing.npy -o r.so", 2,
               {"--input-value shape=missing.npy"});
  expect_error("compile zoo:dqn --input-value state=shape.npy -o r.so", 1, {"built-in model"});
}

// A scalar model: .npy files of shape () in and out.
TEST_F(Cli, ScalarsRunFromAndToNpy) {
  anvil::testing::OnnxModel m(13);
  m.input("s", {});
  m.node("Mul", {"s", "s"}, {"square"}, "mul");
  m.output("square");
  write(path("scalar.onnx"), m.bytes());
  ASSERT_EQ(anvil("compile scalar.onnx --strict -o scalar.so").code, 0);
  runtime::save_npy(path("s.npy"), floats({}, {-3}));
  Result r = anvil("run scalar.so --input s=s.npy --output-dir scalar_out");
  ASSERT_EQ(r.code, 0) << r.err;
  runtime::NDArray y = runtime::load_npy(path("scalar_out/square.npy"));
  EXPECT_TRUE(y.shape().empty());
  EXPECT_EQ(values(y), std::vector<float>{9});
}

TEST_F(Cli, AnInputOfAnotherBatchSaysHowToRebindTheShape) {
  write(path("pass.onnx"), passthrough_model());
  ASSERT_EQ(anvil("compile pass.onnx -o batch.so").code, 0);
  runtime::save_npy(path("x4.npy"), runtime::NDArray::empty({4, 3}, runtime::dl_float32(), true));
  expect_error(
      "run batch.so --input x=x4.npy", 2,
      {"expects float32[2, 3]", "bound when the model was compiled", "--input-shape x=4x3"});
}

// A model with run-time control flow (PyTorch's export of a scripted while loop and branch):
// compiled, run from .npy files, and its artifact described with the bodies under their steps.
TEST_F(Cli, RunTimeControlFlowCompilesRunsAndIsInspected) {
  const fs::path data = fs::path(ANVIL_FRONTEND_DATA) / "torch_loop_if";
  Result c = anvil("compile " + (data / "model.onnx").string() + " --strict -o loop_if.so");
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.out.find("2 control-flow steps"), std::string::npos) << c.out;
  Result r =
      anvil("run loop_if.so --input x=" + (data / "x0.npy").string() + " --output-dir loop_if_out");
  ASSERT_EQ(r.code, 0) << r.err;
  std::vector<float> got = values(runtime::load_npy(path("loop_if_out/z.npy")));
  std::vector<float> want = values(runtime::load_npy((data / "z0.npy").string()));
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;
  Result i = anvil("inspect loop_if.so");
  ASSERT_EQ(i.code, 0) << i.err;
  for (const char* part :
       {"loop '/Loop': a control-flow step", "body (subprogram 0)", "if '/If': a control-flow step",
        "then (subprogram", "else (subprogram", "b0_fused_0_dense_packed"})
    EXPECT_NE(i.out.find(part), std::string::npos) << part << "\n" << i.out;
}

}  // namespace
}  // namespace anvil::cli
