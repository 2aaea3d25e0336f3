// Rank-0 tensors (scalars, shape []) through the importer, the compiled path (strict: no kernel
// loses its schedule) and the executor, as ONNX defines them: element-wise ops with scalar
// inputs and outputs, reductions to a scalar and of a scalar, Gather with a scalar index,
// Squeeze to a scalar and Unsqueeze of one, Reshape to and from [], Slice then Squeeze, Concat
// of unsqueezed scalars, Where with a scalar condition. Each model's outputs are compared with
// values worked out by hand, and the compiled ones with the reference interpreter too.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "anvil/frontend/onnx/importer.h"
#include "anvil/graph/build.h"
#include "anvil/graph/interpreter.h"
#include "anvil/target/target.h"
#include "frontend/onnx_model_builder.h"
#include "frontend/onnx_test_data.h"

namespace anvil {
namespace {

using anvil::testing::floats;
using anvil::testing::OnnxModel;
using runtime::NDArray;

struct Want {
  std::vector<int64_t> shape;
  std::vector<float> values;
};

// Imports `m`, runs it with the reference interpreter and compiled for the host, and checks
// every output against `want` (float32 outputs; bools read as 0/1).
void check(const OnnxModel& m, const std::vector<NDArray>& inputs, const std::vector<Want>& want) {
  graph::Graph g = frontend::import_onnx_bytes(m.bytes());
  std::vector<NDArray> ref = graph::interpret(g, inputs);
  graph::CompiledGraph cg = graph::CompiledGraph::build(g, Target::host(), {});
  std::vector<NDArray> got = cg.run(inputs);
  ASSERT_EQ(ref.size(), want.size());
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE("output " + std::to_string(i));
    for (const NDArray* a : {&ref[i], &got[i]}) {
      ASSERT_EQ(a->shape(), want[i].shape);
      ASSERT_EQ(a->numel(), static_cast<int64_t>(want[i].values.size()));
      for (int64_t k = 0; k < a->numel(); ++k)
        EXPECT_NEAR(a->data_as<float>()[k], want[i].values[static_cast<size_t>(k)],
                    1e-6 * std::abs(want[i].values[static_cast<size_t>(k)]) + 1e-6)
            << (a == &ref[i] ? "interpreter" : "compiled") << ", element " << k;
    }
  }
}

TEST(Scalars, ElementwiseOps) {
  OnnxModel m;
  m.input("s", {});
  m.input("v", {3});
  m.node("Add", {"s", "v"}, {"sum"});
  m.node("Mul", {"s", "s"}, {"square"});
  m.node("Sigmoid", {"s"}, {"sig"});
  m.node("Neg", {"square"}, {"neg"});
  for (const char* o : {"sum", "square", "sig", "neg"}) m.output(o);
  const float s = 0.5f;
  check(m, {floats({}, {s}), floats({3}, {1, 2, 3})},
        {{{3}, {1.5f, 2.5f, 3.5f}},
         {{}, {0.25f}},
         {{}, {1.0f / (1.0f + std::exp(-s))}},
         {{}, {-0.25f}}});
}

TEST(Scalars, ReductionsToAndOfAScalar) {
  OnnxModel m;
  m.input("x", {2, 3});
  m.input("s", {});
  auto& sum = m.node("ReduceSum", {"x"}, {"total"});
  OnnxModel::attr(sum, "keepdims", int64_t{0});
  auto& max = m.node("ReduceMax", {"x"}, {"largest"});
  OnnxModel::attr(max, "keepdims", int64_t{0});
  auto& of_scalar = m.node("ReduceMean", {"s"}, {"same"});
  OnnxModel::attr(of_scalar, "keepdims", int64_t{0});
  for (const char* o : {"total", "largest", "same"}) m.output(o);
  check(m, {floats({2, 3}, {1, -2, 3, 4, 5, -6}), floats({}, {7})},
        {{{}, {5}}, {{}, {5}}, {{}, {7}}});
}

TEST(Scalars, GatherWithAScalarIndex) {
  OnnxModel m;
  m.input("v", {4});
  m.input("x", {3, 4});
  m.init_ints("i", {}, {-3});
  m.node("Gather", {"v", "i"}, {"one"});
  auto& col = m.node("Gather", {"x", "i"}, {"column"});
  OnnxModel::attr(col, "axis", int64_t{1});
  m.output("one");
  m.output("column");
  check(m, {floats({4}, {10, 20, 30, 40}), floats({3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})},
        {{{}, {20}}, {{3}, {1, 5, 9}}});
}

TEST(Scalars, SqueezeUnsqueezeReshapeSliceConcat) {
  OnnxModel m;
  m.input("one", {1});
  m.input("v", {5});
  m.init_ints("axes0", {1}, {0});
  m.init_ints("no_dims", {0}, {});
  m.init_ints("dims1", {1}, {1});
  m.init_ints("start", {1}, {3});
  m.init_ints("end", {1}, {4});
  m.node("Squeeze", {"one"}, {"s"});                     // [1] -> []
  m.node("Unsqueeze", {"s", "axes0"}, {"back"});         // [] -> [1]
  m.node("Reshape", {"back", "no_dims"}, {"reshaped"});  // [1] -> []
  m.node("Reshape", {"reshaped", "dims1"}, {"again"});   // [] -> [1]
  m.node("Slice", {"v", "start", "end"}, {"piece"});     // [5] -> [1]
  m.node("Squeeze", {"piece", "axes0"}, {"element"});    // [1] -> []
  m.node("Unsqueeze", {"element", "axes0"}, {"e1"});     // [] -> [1]
  m.node("Concat", {"back", "e1"}, {"pair"}).add_attribute()->CopyFrom([] {
    ::onnx::AttributeProto a;
    a.set_name("axis");
    a.set_type(::onnx::AttributeProto::INT);
    a.set_i(0);
    return a;
  }());
  for (const char* o : {"s", "reshaped", "again", "element", "pair"}) m.output(o);
  check(m, {floats({1}, {-4}), floats({5}, {0, 1, 2, 3, 4})},
        {{{}, {-4}}, {{}, {-4}}, {{1}, {-4}}, {{}, {3}}, {{2}, {-4, 3}}});
}

TEST(Scalars, WhereWithAScalarCondition) {
  OnnxModel m;
  m.input("a", {});
  m.input("b", {3});
  m.node("Greater", {"a", "b"}, {"a_wins"});  // [3] bools
  m.node("Less", {"a", "a"}, {"never"});      // a [] bool
  m.node("Where", {"a_wins", "a", "b"}, {"larger"});
  m.node("Where", {"never", "b", "a"}, {"broadcast"});
  m.output("larger");
  m.output("broadcast");
  check(m, {floats({}, {2}), floats({3}, {1, 2, 3})}, {{{3}, {2, 2, 3}}, {{3}, {2, 2, 2}}});
}

}  // namespace
}  // namespace anvil
