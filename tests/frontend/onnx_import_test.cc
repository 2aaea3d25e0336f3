// The ONNX importer on tiny hand-written models: each is built with ONNX's protobuf classes,
// written to a temp file, imported, run by the reference interpreter and compared with values
// computed by hand here. Then every error a user can meet: unsupported ops (all listed at once),
// truncated and empty files, unbound symbolic dimensions.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "anvil/frontend/onnx/importer.h"
#include "anvil/graph/interpreter.h"
#include "frontend/onnx_model_builder.h"
#include "testing/errors.h"

namespace anvil {
namespace {

using frontend::import_onnx;
using frontend::ImportOptions;
using testing::OnnxModel;
using testing::user_error;

runtime::NDArray f32(const std::vector<int64_t>& shape, const std::vector<float>& v) {
  runtime::NDArray a = runtime::NDArray::empty(shape, ops::to_dlpack(ir::DataType::Float32()));
  EXPECT_EQ(a.numel(), static_cast<int64_t>(v.size()));
  std::memcpy(a.data(), v.data(), v.size() * sizeof(float));
  return a;
}

void expect_f32(const runtime::NDArray& a, const std::vector<int64_t>& shape,
                const std::vector<float>& want, float tol = 1e-5f) {
  ASSERT_EQ(a.shape(), shape);
  ASSERT_EQ(ops::from_dlpack(a.dtype()), ir::DataType::Float32());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(a.data_as<float>()[i], want[i], tol * std::max(1.0f, std::fabs(want[i])))
        << "element " << i;
}

std::vector<runtime::NDArray> run(const OnnxModel& m, const std::string& stem,
                                  const std::vector<runtime::NDArray>& in,
                                  const ImportOptions& opt = {}) {
  graph::Graph g = import_onnx(m.save(stem), opt);
  return graph::interpret(g, in);
}

TEST(OnnxImport, GemmWithTransposesAlphaBeta) {
  OnnxModel m(13);
  m.input("a", {3, 2});                            // transA: A is [K=3, M=2]
  m.init_floats("b", {2, 3}, {1, 2, 3, 4, 5, 6});  // transB: B is [N=2, K=3]
  m.init_floats("c", {2}, {10, 20}, /*raw=*/true);
  auto& n = m.node("Gemm", {"a", "b", "c"}, {"y"}, "gemm");
  OnnxModel::attr(n, "transA", int64_t{1});
  OnnxModel::attr(n, "transB", int64_t{1});
  OnnxModel::attr_f(n, "alpha", 2.0f);
  OnnxModel::attr_f(n, "beta", 0.5f);
  m.output("y");
  // A^T = [[1, 3, 5], [2, 4, 6]]; A^T B^T = [[22, 49], [28, 64]].
  auto out = run(m, "gemm", {f32({3, 2}, {1, 2, 3, 4, 5, 6})});
  expect_f32(out[0], {2, 2}, {2 * 22 + 5, 2 * 49 + 10, 2 * 28 + 5, 2 * 64 + 10});
}

TEST(OnnxImport, GemmAsDense) {
  OnnxModel m(11);
  m.input("x", {1, 2});
  m.init_floats("w", {3, 2}, {1, 0, 0, 1, 1, 1});
  m.init_floats("b", {3}, {0.5f, 0.25f, 0});
  OnnxModel::attr(m.node("Gemm", {"x", "w", "b"}, {"y"}, "fc"), "transB", int64_t{1});
  m.output("y");
  graph::Graph g = import_onnx(m.save("dense"));
  ASSERT_EQ(g.num_nodes(), 1u);
  EXPECT_EQ(g.nodes()[0].op, "dense");
  EXPECT_EQ(g.value(g.outputs()[0]).name, "y");  // graph outputs keep their ONNX names
  expect_f32(graph::interpret(g, {f32({1, 2}, {3, 4})})[0], {1, 3}, {3.5f, 4.25f, 7});
}

TEST(OnnxImport, ConvWithPadsAndGroups) {
  OnnxModel m(11);
  m.input("x", {1, 2, 2, 2});
  m.init_floats("w", {2, 1, 2, 2}, {1, 1, 1, 1, 1, 0, 0, -1});
  auto& n = m.node("Conv", {"x", "w"}, {"y"}, "conv");
  OnnxModel::attr(n, "group", int64_t{2});
  OnnxModel::attr(n, "pads", std::vector<int64_t>{0, 0, 1, 1});
  m.output("y");
  // Channel 0 (ones kernel) of [[1, 2], [3, 4]] padded bottom/right: [[10, 6], [7, 4]].
  // Channel 1 (x[i,j] - x[i+1,j+1]) of [[5, 6], [7, 8]]: [[5 - 8, 6], [7, 8]].
  auto out = run(m, "conv", {f32({1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8})});
  expect_f32(out[0], {1, 2, 2, 2}, {10, 6, 7, 4, -3, 6, 7, 8});
}

TEST(OnnxImport, ShapePlumbingFoldsAway) {
  // y = Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1])) : [2, 3, 4] -> [2, 12].
  OnnxModel m(13);
  m.input("x", {2, 3, 4});
  m.init_ints("zero", {}, {0});
  m.init_ints("axes0", {1}, {0}, /*raw=*/true);
  m.init_ints("minus1", {1}, {-1});
  m.node("Shape", {"x"}, {"s"});
  m.node("Gather", {"s", "zero"}, {"n"});
  m.node("Unsqueeze", {"n", "axes0"}, {"n1"});
  OnnxModel::attr(m.node("Concat", {"n1", "minus1"}, {"shape"}), "axis", int64_t{0});
  m.node("Reshape", {"x", "shape"}, {"y"}, "reshape");
  m.output("y");
  graph::Graph g = import_onnx(m.save("plumbing"));
  ASSERT_EQ(g.num_nodes(), 1u) << g.str();
  EXPECT_EQ(g.nodes()[0].op, "reshape");
  EXPECT_EQ(g.value(g.outputs()[0]).type.shape, (std::vector<int64_t>{2, 12}));
}

TEST(OnnxImport, ConstantNodesAndConstantOfShape) {
  OnnxModel m(13);
  m.input("x", {2, 2});
  auto& k = m.node("Constant", {}, {"k"});
  OnnxModel::floats(OnnxModel::attr_t(k, "value")->mutable_t(), "", {2}, {1, -1}, false);
  auto& shp = m.node("Constant", {}, {"shp"});
  OnnxModel::attr(shp, "value_ints", std::vector<int64_t>{2, 2});
  auto& cs = m.node("ConstantOfShape", {"shp"}, {"threes"});
  OnnxModel::floats(OnnxModel::attr_t(cs, "value")->mutable_t(), "", {1}, {3}, true);
  m.node("Add", {"x", "k"}, {"t"});
  m.node("Mul", {"t", "threes"}, {"y"});
  m.output("y");
  auto out = run(m, "constants", {f32({2, 2}, {1, 2, 3, 4})});
  expect_f32(out[0], {2, 2}, {6, 3, 12, 9});
}

TEST(OnnxImport, IfWithConstantConditionTakesItsBranch) {
  for (bool cond : {true, false}) {
    OnnxModel m(13);
    m.input("x", {2});
    auto& c = m.node("Constant", {}, {"c"});
    ::onnx::TensorProto* t = OnnxModel::attr_t(c, "value")->mutable_t();
    t->set_data_type(::onnx::TensorProto::BOOL);
    t->add_int32_data(cond);
    auto& n = m.node("If", {"c"}, {"y"}, "if");
    for (const char* b : {"then_branch", "else_branch"}) {
      ::onnx::GraphProto* g = OnnxModel::attr_g(n, b);
      auto* node = g->add_node();
      node->set_op_type(std::string(b) == "then_branch" ? "Neg" : "Abs");
      node->add_input("x");
      node->add_output(std::string("out_") + b);
      g->add_output()->set_name(std::string("out_") + b);
    }
    m.output("y");
    auto out = run(m, cond ? "if_then" : "if_else", {f32({2}, {-1, 2})});
    expect_f32(out[0], {2}, cond ? std::vector<float>{1, -2} : std::vector<float>{1, 2});
  }
}

TEST(OnnxImport, SoftmaxBeforeOpset13FlattensAtAxis) {
  OnnxModel m(11);
  m.input("x", {1, 2, 2});
  m.node("Softmax", {"x"}, {"y"});  // axis 1: normalized over the last 4 elements together
  m.output("y");
  auto out = run(m, "softmax11", {f32({1, 2, 2}, {0, 1, 2, 3})});
  float s = 1 + std::exp(1.0f) + std::exp(2.0f) + std::exp(3.0f);
  expect_f32(out[0], {1, 2, 2},
             {1 / s, std::exp(1.0f) / s, std::exp(2.0f) / s, std::exp(3.0f) / s});
}

TEST(OnnxImport, VariadicMaxAndClipByOpset) {
  OnnxModel m(7);
  m.input("a", {3});
  m.input("b", {3});
  m.input("c", {3});
  m.node("Max", {"a", "b", "c"}, {"m"});
  auto& clip = m.node("Clip", {"m"}, {"y"});
  OnnxModel::attr_f(clip, "min", 0.0f);
  OnnxModel::attr_f(clip, "max", 2.5f);
  m.output("y");
  auto out = run(m, "max7", {f32({3}, {1, -5, 9}), f32({3}, {0, -4, 1}), f32({3}, {2, -6, 0})});
  expect_f32(out[0], {3}, {2, 0, 2.5f});

  OnnxModel m13(13);
  m13.input("x", {3});
  m13.init_floats("lo", {}, {-1});
  m13.node("Clip", {"x", "lo", ""}, {"y"});
  m13.output("y");
  expect_f32(run(m13, "clip13", {f32({3}, {-3, 0, 7})})[0], {3}, {-1, 0, 7});
}

TEST(OnnxImport, ReduceAxesFromAttributeOrInput) {
  OnnxModel m11(11);
  m11.input("x", {2, 3});
  auto& r = m11.node("ReduceSum", {"x"}, {"y"});
  OnnxModel::attr(r, "axes", std::vector<int64_t>{1});
  OnnxModel::attr(r, "keepdims", int64_t{0});
  m11.output("y");
  auto x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_f32(run(m11, "reduce11", {x})[0], {2}, {6, 15});

  OnnxModel m13(13);
  m13.input("x", {2, 3});
  m13.init_ints("axes", {1}, {0});
  m13.node("ReduceSum", {"x", "axes"}, {"y"});
  m13.output("y");
  expect_f32(run(m13, "reduce13", {x})[0], {1, 3}, {5, 7, 9});
}

TEST(OnnxImport, BoundSymbolicDimension) {
  OnnxModel m(13);
  m.input("x", {-1, 2}, ::onnx::TensorProto::FLOAT, "batch");
  m.node("Relu", {"x"}, {"y"});
  m.output("y");
  std::string path = m.save("symbolic");
  std::string msg = user_error([&] { import_onnx(path); });
  EXPECT_NE(msg.find("input 'x'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("dimension 0 ('batch')"), std::string::npos) << msg;
  EXPECT_NE(msg.find(path), std::string::npos) << msg;

  ImportOptions opt;
  opt.input_shapes["x"] = {3, 2};
  auto out = graph::interpret(import_onnx(path, opt), {f32({3, 2}, {-1, 1, -2, 2, -3, 3})});
  expect_f32(out[0], {3, 2}, {0, 1, 0, 2, 0, 3});

  opt.input_shapes["x"] = {3, 5};
  msg = user_error([&] { import_onnx(path, opt); });
  EXPECT_NE(msg.find("dimension 1 is 2 in the model, but bound to 5"), std::string::npos) << msg;
  opt.input_shapes = {{"z", {1}}};
  msg = user_error([&] { import_onnx(path, opt); });
  EXPECT_NE(msg.find("'z', which is not an input"), std::string::npos) << msg;
}

TEST(OnnxImport, UnsupportedOpsAreAllListed) {
  OnnxModel m(13);
  m.input("x", {2});
  m.node("Foo", {"x"}, {"a"}, "foo_1");
  m.node("Relu", {"a"}, {"b"}, "relu");
  m.node("Foo", {"b"}, {"c"}, "foo_2");
  m.node("Bar", {"c"}, {"y"}, "bar");
  m.output("y");
  std::string msg = user_error([&] { import_onnx(m.save("unsupported")); });
  EXPECT_NE(msg.find("unsupported operators (2)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Foo: 'foo_1', 'foo_2'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Bar: 'bar'"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("Relu"), std::string::npos) << msg;
}

TEST(OnnxImport, TruncatedAndEmptyFiles) {
  OnnxModel m(13);
  m.input("x", {2, 2});
  m.init_floats("w", {2, 2}, {1, 2, 3, 4});
  m.node("MatMul", {"x", "w"}, {"y"});
  m.output("y");
  std::string bytes = m.bytes();
  std::string path = OnnxModel::write("truncated", bytes.substr(0, bytes.size() - 7));
  std::string msg = user_error([&] { import_onnx(path); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("not a valid ONNX model"), std::string::npos) << msg;

  path = OnnxModel::write("empty", "");
  msg = user_error([&] { import_onnx(path); });
  EXPECT_NE(msg.find(path + ": the file is empty"), std::string::npos) << msg;

  msg = user_error([&] { import_onnx("/nonexistent/model.onnx"); });
  EXPECT_NE(msg.find("/nonexistent/model.onnx: cannot open"), std::string::npos) << msg;
}

TEST(OnnxImport, ErrorsNameTheNode) {
  OnnxModel m(13);
  m.input("x", {2, 3});
  m.input("s", {2}, ::onnx::TensorProto::INT64);
  m.node("Reshape", {"x", "s"}, {"y"}, "dynamic_reshape");
  m.output("y");
  std::string msg = user_error([&] { import_onnx(m.save("dynamic")); });
  EXPECT_NE(msg.find("node 'dynamic_reshape' (Reshape)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("input 1 (shape) 's' must be known at compile time"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("from graph input 's': bind its value when compiling, anvil compile "
                     "--input-value s=FILE.npy"),
            std::string::npos)
      << msg;
}

TEST(OnnxImport, ConstantInputsFreezeShapeOperands) {
  OnnxModel m(13);
  m.input("x", {2, 3});
  m.input("shape", {2}, ::onnx::TensorProto::INT64);
  m.node("Reshape", {"x", "shape"}, {"y"}, "reshape");
  m.output("y");
  runtime::NDArray shape = runtime::NDArray::empty({2}, ops::to_dlpack(ir::DataType::Int64()));
  shape.data_as<int64_t>()[0] = 3;
  shape.data_as<int64_t>()[1] = -1;
  ImportOptions opt;
  opt.constant_inputs["shape"] = shape;
  graph::Graph g = import_onnx(m.save("frozen"), opt);
  ASSERT_EQ(g.inputs().size(), 1u);
  expect_f32(graph::interpret(g, {f32({2, 3}, {1, 2, 3, 4, 5, 6})})[0], {3, 2}, {1, 2, 3, 4, 5, 6});

  opt.constant_inputs["shape"] = f32({2}, {3, 2});
  std::string msg = user_error([&] { import_onnx(m.save("frozen"), opt); });
  EXPECT_NE(msg.find("input 'shape' is int64, but its constant value is float32"),
            std::string::npos)
      << msg;
}

TEST(OnnxImport, UnsupportedElementTypeNamesTheInput) {
  OnnxModel m(13);
  m.input("half", {4}, ::onnx::TensorProto::BFLOAT16);
  m.node("Relu", {"half"}, {"y"});
  m.output("y");
  std::string msg = user_error([&] { import_onnx(m.save("bfloat16")); });
  EXPECT_NE(msg.find("input 'half' has element type BFLOAT16, which is not supported"),
            std::string::npos)
      << msg;
}

TEST(OnnxImport, NarrowIntegersWrapAndCastToDouble) {
  // uint8 addition wraps (200 + 100 = 44, as NumPy has it); the cast to DOUBLE is exact.
  OnnxModel m(13);
  m.input("a", {3}, ::onnx::TensorProto::UINT8);
  m.input("b", {3}, ::onnx::TensorProto::UINT8);
  m.node("Add", {"a", "b"}, {"s"});
  OnnxModel::attr(m.node("Cast", {"s"}, {"d"}), "to", int64_t{::onnx::TensorProto::DOUBLE});
  m.output("s");
  m.output("d");
  auto u8 = [](std::vector<uint8_t> v) {
    runtime::NDArray a = runtime::NDArray::empty({3}, ops::to_dlpack(ir::DataType::UInt(8)));
    std::memcpy(a.data(), v.data(), 3);
    return a;
  };
  auto out = run(m, "uint8", {u8({200, 3, 255}), u8({100, 5, 2})});
  ASSERT_EQ(ops::from_dlpack(out[0].dtype()), ir::DataType::UInt(8));
  EXPECT_EQ(std::vector<uint8_t>(out[0].data_as<uint8_t>(), out[0].data_as<uint8_t>() + 3),
            (std::vector<uint8_t>{44, 8, 1}));
  ASSERT_EQ(ops::from_dlpack(out[1].dtype()), ir::DataType::Float(64));
  EXPECT_EQ(std::vector<double>(out[1].data_as<double>(), out[1].data_as<double>() + 3),
            (std::vector<double>{44, 8, 1}));
}

TEST(OnnxImport, ThreeDimensionalConvAndPoolRunInTheInterpreter) {
  // A 2x2x2 all-ones kernel over a 2x2x3 volume of 0..11 sums two 2x2 faces per output; then a
  // 3-D max pool over the 1x1x2 result.
  OnnxModel m(13);
  m.input("x", {1, 1, 2, 2, 3});
  m.init_floats("w", {1, 1, 2, 2, 2}, std::vector<float>(8, 1));
  m.node("Conv", {"x", "w"}, {"c"});
  OnnxModel::attr(m.node("MaxPool", {"c"}, {"y"}), "kernel_shape", std::vector<int64_t>{1, 1, 2});
  m.output("c");
  m.output("y");
  std::vector<float> x(12);
  for (int i = 0; i < 12; ++i) x[static_cast<size_t>(i)] = static_cast<float>(i);
  auto out = run(m, "conv3d", {f32({1, 1, 2, 2, 3}, x)});
  // Output column j sums x[d][h][j..j+1] over d, h: (0+1+3+4+6+7+9+10) and one more per element.
  expect_f32(out[0], {1, 1, 1, 1, 2}, {40, 48});
  expect_f32(out[1], {1, 1, 1, 1, 1}, {48});
}

TEST(OnnxImport, BatchNormTrainingModeUsesBatchStatistics) {
  // One channel holding 1, 2, 3, 4: batch mean 2.5, population variance 1.25; the running
  // statistics move from (0, 1) by 1 - momentum = 0.1 toward them.
  OnnxModel m(15);
  m.input("x", {2, 1, 2});
  m.init_floats("scale", {1}, {2});
  m.init_floats("b", {1}, {1});
  m.init_floats("mean", {1}, {0});
  m.init_floats("var", {1}, {1});
  auto& n = m.node("BatchNormalization", {"x", "scale", "b", "mean", "var"}, {"y", "rm", "rv"});
  OnnxModel::attr(n, "training_mode", int64_t{1});
  OnnxModel::attr_f(n, "epsilon", 0.0f);
  m.output("y");
  m.output("rm");
  m.output("rv");
  auto out = run(m, "bn_training", {f32({2, 1, 2}, {1, 2, 3, 4})});
  float sd = std::sqrt(1.25f);
  expect_f32(out[0], {2, 1, 2},
             {2 * -1.5f / sd + 1, 2 * -0.5f / sd + 1, 2 * 0.5f / sd + 1, 2 * 1.5f / sd + 1});
  expect_f32(out[1], {1}, {0.25f});
  expect_f32(out[2], {1}, {0.9f + 0.125f});
}

TEST(OnnxImport, LstmOutputsAndSplit) {
  // One LSTM step with zero weights: gates sigmoid(0) = 0.5, candidate tanh(0) = 0, so
  // c = 0.5 * c0 and h = 0.5 * tanh(c); then Split divides h into its two halves.
  OnnxModel m(14);
  m.input("x", {1, 1, 2});
  m.input("c0", {1, 1, 2});
  m.init_floats("w", {1, 8, 2}, std::vector<float>(16, 0));
  m.init_floats("r", {1, 8, 2}, std::vector<float>(16, 0));
  auto& n = m.node("LSTM", {"x", "w", "r", "", "", "", "c0"}, {"", "h", "c"}, "lstm");
  OnnxModel::attr(n, "hidden_size", int64_t{2});
  m.init_ints("halves", {2}, {1, 1});
  OnnxModel::attr(m.node("Split", {"h", "halves"}, {"h0", "h1"}), "axis", int64_t{2});
  m.output("c");
  m.output("h1");
  auto out = run(m, "lstm", {f32({1, 1, 2}, {1, 2}), f32({1, 1, 2}, {2, -4})});
  expect_f32(out[0], {1, 1, 2}, {1, -2});
  expect_f32(out[1], {1, 1, 1}, {0.5f * std::tanh(-2.0f)});
}

}  // namespace
}  // namespace anvil
