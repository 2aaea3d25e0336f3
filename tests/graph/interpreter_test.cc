// The reference interpreter on small hand-built graphs (results worked out by hand), and the
// errors a caller can meet: wrong input count, shape, dtype, missing data, a failing node.
#include "anvil/graph/interpreter.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "testing/errors.h"

namespace anvil::graph {
namespace {

using ops::Attrs;
using ::testing::HasSubstr;

const ir::DataType f32 = ir::DataType::Float32();
const ir::DataType i64 = ir::DataType::Int64();

runtime::NDArray floats(std::vector<int64_t> shape, const std::vector<float>& values) {
  runtime::NDArray a = runtime::NDArray::empty(std::move(shape), runtime::dl_float32());
  EXPECT_EQ(static_cast<size_t>(a.numel()), values.size());
  for (size_t i = 0; i < values.size(); ++i) a.data_as<float>()[i] = values[i];
  return a;
}

runtime::NDArray ints(std::vector<int64_t> shape, const std::vector<int64_t>& values) {
  runtime::NDArray a = runtime::NDArray::empty(std::move(shape), ops::to_dlpack(i64));
  for (size_t i = 0; i < values.size(); ++i) a.data_as<int64_t>()[i] = values[i];
  return a;
}

std::vector<float> contents(const runtime::NDArray& a) {
  return std::vector<float>(a.data_as<float>(), a.data_as<float>() + a.numel());
}

// y = relu(x * w^T + b) + x2, with x [1, 2], w [3, 2], b [3], x2 [1, 3].
Graph dense_relu_add() {
  Graph g;
  ValueId x = g.add_input("x", {{1, 2}, f32});
  ValueId x2 = g.add_input("x2", {{1, 3}, f32});
  ValueId w = g.add_constant("w", floats({3, 2}, {1, 2, -1, 0, 0.5f, -3}));
  ValueId b = g.add_constant("b", floats({3}, {0.5f, 1, 0}));
  ValueId d = g.add("fc", "dense", Attrs(), {x, w, b});
  ValueId r = g.add("relu", "relu", Attrs(), {d});
  ValueId y = g.add("sum", "add", Attrs(), {r, x2});
  g.add_output(y);
  return g;
}

TEST(Interpreter, DenseReluAdd) {
  Graph g = dense_relu_add();
  // x = [2, -1]: fc = [2 - 2 + 0.5, -2 + 0 + 1, 1 + 3 + 0] = [0.5, -1, 4]; relu = [0.5, 0, 4].
  std::vector<runtime::NDArray> out =
      interpret(g, {floats({1, 2}, {2, -1}), floats({1, 3}, {10, 20, 30})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{1, 3}));
  EXPECT_THAT(contents(out[0]), ::testing::ElementsAre(10.5f, 20.0f, 34.0f));
}

TEST(Interpreter, ConvWithPaddingAndBias) {
  // A 3x3 all-ones kernel over a 3x3 input with padding 1: each output is the sum of its
  // neighbourhood, plus the bias 1.
  Graph g;
  ValueId x = g.add_input("x", {{1, 1, 3, 3}, f32});
  ValueId w = g.add_constant("w", floats({1, 1, 3, 3}, std::vector<float>(9, 1.0f)));
  ValueId b = g.add_constant("b", floats({1}, {1}));
  ValueId c = g.add("conv", "conv2d", Attrs("conv2d", {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}),
                    {x, w, b});
  g.add_output(c);
  std::vector<runtime::NDArray> out =
      interpret(g, {floats({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9})});
  EXPECT_THAT(contents(out[0]),
              ::testing::ElementsAre(13, 22, 17, 28, 46, 34, 25, 40, 29));  // + 1 each
}

TEST(Interpreter, MultipleOutputsConstantsAndInputsAsOutputs) {
  // split into two halves; the outputs are the second half, the graph input itself and a
  // constant, in that order.
  Graph g;
  ValueId x = g.add_input("x", {{4}, f32});
  ValueId k = g.add_constant("k", floats({2}, {7, 8}));
  std::vector<ValueId> parts =
      g.add_node("split", "split", Attrs("split", {{"num_outputs", int64_t{2}}}), {x});
  ValueId t = g.add("tanh", "tanh", Attrs(), {parts[0]});  // unused: released, never returned
  (void)t;
  g.add_output(parts[1]);
  g.add_output(x);
  g.add_output(k);
  std::vector<runtime::NDArray> out = interpret(g, {floats({4}, {1, 2, 3, 4})});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_THAT(contents(out[0]), ::testing::ElementsAre(3, 4));
  EXPECT_THAT(contents(out[1]), ::testing::ElementsAre(1, 2, 3, 4));
  EXPECT_THAT(contents(out[2]), ::testing::ElementsAre(7, 8));
  // Those are copies: writing to them changes neither the graph nor the caller's input.
  out[2].data_as<float>()[0] = 0;
  EXPECT_EQ(g.value(k).data.data_as<float>()[0], 7.0f);
}

TEST(Interpreter, GatherEmbeddingWithInt64Ids) {
  Graph g;
  ValueId ids = g.add_input("ids", {{3}, i64});
  ValueId table = g.add_constant("table", floats({4, 2}, {0, 1, 10, 11, 20, 21, 30, 31}));
  ValueId e = g.add("embed", "gather", Attrs(), {table, ids});
  g.add_output(e);
  std::vector<runtime::NDArray> out = interpret(g, {ints({3}, {3, 0, 2})});
  EXPECT_THAT(contents(out[0]), ::testing::ElementsAre(30, 31, 0, 1, 20, 21));
}

TEST(Interpreter, ValueUsedTwiceSurvivesItsFirstUse) {
  // x*x + x: x is read by two nodes; releasing after the first would lose it.
  Graph g;
  ValueId x = g.add_input("x", {{2}, f32});
  ValueId r = g.add("relu", "relu", Attrs(), {x});
  ValueId sq = g.add("sq", "mul", Attrs(), {r, r});
  ValueId y = g.add("y", "add", Attrs(), {sq, r});
  g.add_output(y);
  g.add_output(r);
  std::vector<runtime::NDArray> out = interpret(g, {floats({2}, {3, -2})});
  EXPECT_THAT(contents(out[0]), ::testing::ElementsAre(12, 0));
  EXPECT_THAT(contents(out[1]), ::testing::ElementsAre(3, 0));
}

TEST(InterpreterErrors, WrongInputCount) {
  Graph g = dense_relu_add();
  std::string msg = testing::user_error([&] { interpret(g, {floats({1, 2}, {0, 0})}); });
  EXPECT_THAT(msg, HasSubstr("2 input(s) ('x', 'x2'), but 1 were given"));
}

TEST(InterpreterErrors, WrongShapeNamesTheInput) {
  Graph g;
  ValueId x = g.add_input("x", {{1, 3, 224, 224}, f32});
  g.add_output(g.add("relu", "relu", Attrs(), {x}));
  runtime::NDArray bad = runtime::NDArray::empty({1, 3, 200, 200}, runtime::dl_float32());
  std::string msg = testing::user_error([&] { interpret(g, {bad}); });
  EXPECT_THAT(msg, HasSubstr("input 'x': expected float32[1, 3, 224, 224], got "
                             "float32[1, 3, 200, 200]"));
}

TEST(InterpreterErrors, WrongDtypeNamesTheInput) {
  Graph g = dense_relu_add();
  std::string msg = testing::user_error([&] {
    interpret(g, {floats({1, 2}, {0, 0}), ints({1, 3}, {1, 2, 3})});
  });
  EXPECT_THAT(msg, HasSubstr("input 'x2': expected float32[1, 3], got int64[1, 3]"));
}

TEST(InterpreterErrors, UndefinedInput) {
  Graph g = dense_relu_add();
  std::string msg = testing::user_error([&] {
    interpret(g, {floats({1, 2}, {0, 0}), runtime::NDArray()});
  });
  EXPECT_THAT(msg, HasSubstr("input 'x2': expected float32[1, 3], got an undefined array"));
}

TEST(InterpreterErrors, FailingNodeIsNamed) {
  // An embedding index past the table: gather's reference rejects it, the error names the node.
  Graph g;
  ValueId ids = g.add_input("ids", {{1}, i64});
  ValueId table = g.add_constant("table", floats({2, 1}, {0, 1}));
  g.add_output(g.add("encoder.embed", "gather", Attrs(), {table, ids}));
  std::string msg = testing::user_error([&] { interpret(g, {ints({1}, {5})}); });
  EXPECT_THAT(msg, HasSubstr("node 'encoder.embed' (gather)"));
  EXPECT_THAT(msg, HasSubstr("index 5 is out of range"));
}

}  // namespace
}  // namespace anvil::graph
