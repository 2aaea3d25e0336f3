// The ONNX importer's resource limits on hostile models: tensors over the memory cap (inputs,
// initializers, constants folded at import, values nodes compute, and the inputs and constants
// together), absurd dimensions, cyclic graphs and deeply nested subgraphs are each refused with
// an error naming the file and the tensor or node, before anything that size is allocated. The
// caps here are small (1 MiB), so that a missing check would allocate a few MiB, not crash.
#include <gtest/gtest.h>

#include <gmock/gmock.h>

#include "anvil/frontend/onnx/importer.h"
#include "anvil/graph/interpreter.h"
#include "frontend/onnx_model_builder.h"
#include "testing/errors.h"

namespace anvil {
namespace {

using frontend::import_onnx;
using frontend::ImportOptions;
using ::testing::HasSubstr;
using testing::OnnxModel;
using testing::user_error;

constexpr int64_t kMiB = int64_t{1} << 20;

ImportOptions capped(int64_t bytes) {
  ImportOptions o;
  o.memory_cap = bytes;
  return o;
}

std::string import_error(const OnnxModel& m, const std::string& stem, const ImportOptions& o) {
  return user_error([&] { import_onnx(m.save(stem), o); });
}

TEST(OnnxLimits, AnInputOverTheCap) {
  OnnxModel m(13);
  m.input("x", {512, 1024});  // 2 MiB of float32
  m.node("Relu", {"x"}, {"y"});
  m.output("y");
  std::string e = import_error(m, "big_input", capped(kMiB));
  EXPECT_THAT(e, HasSubstr("input 'x' float32[512, 1024] would take 2097152 bytes"));
  EXPECT_THAT(e, HasSubstr("over the memory cap of 1048576 bytes"));
  // Under a larger cap the same model imports.
  EXPECT_NO_THROW(import_onnx(m.save("big_input"), capped(4 * kMiB)));
}

TEST(OnnxLimits, AbsurdDimensions) {
  // 2^40 x 2^40 floats: the byte count does not fit in 64 bits.
  OnnxModel m(13);
  m.input("x", {int64_t{1} << 40, int64_t{1} << 40});
  m.node("Relu", {"x"}, {"y"});
  m.output("y");
  std::string e = import_error(m, "absurd_input", ImportOptions());
  EXPECT_THAT(e, HasSubstr("input 'x'"));
  EXPECT_THAT(e, HasSubstr("would take more than 2^63 bytes"));
  // An initializer that claims 2^40 elements (and holds none) is refused by the cap, before its
  // data is looked at.
  OnnxModel w(13);
  w.input("x", {4});
  ::onnx::TensorProto* t = w.graph().add_initializer();
  t->set_name("w");
  t->set_data_type(::onnx::TensorProto::FLOAT);
  t->add_dims(int64_t{1} << 40);
  w.node("Add", {"x", "w"}, {"y"});
  w.output("y");
  e = import_error(w, "absurd_initializer", ImportOptions());
  EXPECT_THAT(e,
              HasSubstr("initializer 'w' float32[1099511627776] would take 4398046511104 bytes"));
}

TEST(OnnxLimits, InputsAndConstantsTogether) {
  // The input and two initializers of 768 KiB each: any two fit a 2 MiB cap, not all three.
  OnnxModel m(13);
  m.input("x", {196608});
  m.init_floats("a", {196608}, std::vector<float>(196608, 1.0f), true);
  m.init_floats("b", {196608}, std::vector<float>(196608, 2.0f), true);
  m.node("Add", {"x", "a"}, {"s"});
  m.node("Add", {"s", "b"}, {"y"});
  m.output("y");
  std::string e = import_error(m, "two_initializers", capped(2 * kMiB));
  EXPECT_THAT(e, HasSubstr("brings the model's inputs and constants to"));
  EXPECT_THAT(e, HasSubstr("over the memory cap of 2097152 bytes"));
}

TEST(OnnxLimits, AFoldedConstantOverTheCap) {
  // ConstantOfShape [1024, 1024] (4 MiB): refused before it is filled.
  OnnxModel m(13);
  m.input("x", {1});
  m.init_ints("shape", {2}, {1024, 1024});
  m.node("ConstantOfShape", {"shape"}, {"c"}, "fill");
  m.node("Add", {"x", "c"}, {"y"});
  m.output("y");
  std::string e = import_error(m, "folded", capped(kMiB));
  EXPECT_THAT(e, HasSubstr("node 'fill' (ConstantOfShape): output 0 float32[1024, 1024] would "
                           "take 4194304 bytes"));
  // A constant folded by an op's reference: Tile of a constant to [1024, 1024].
  OnnxModel t(13);
  t.input("x", {1});
  t.init_floats("one", {1, 1}, {1.0f});
  t.init_ints("reps", {2}, {1024, 1024});
  t.node("Tile", {"one", "reps"}, {"c"}, "tile");
  t.node("Add", {"x", "c"}, {"y"});
  t.output("y");
  e = import_error(t, "folded_tile", capped(kMiB));
  EXPECT_THAT(e, HasSubstr("node 'tile' (Tile): output 0 (folded at import) float32[1024, 1024]"));
}

TEST(OnnxLimits, AComputedValueOverTheCap) {
  // Expand of a [1, 1024] input to [1024, 1024]: the node's output is over the cap.
  OnnxModel m(13);
  m.input("x", {1, 1024});
  m.init_ints("shape", {2}, {1024, 1024});
  m.node("Expand", {"x", "shape"}, {"y"}, "expand");
  m.output("y");
  std::string e = import_error(m, "expand", capped(kMiB));
  EXPECT_THAT(e, HasSubstr("node 'expand' (Expand): output 0 float32[1024, 1024] would take"));
}

TEST(OnnxLimits, ACyclicGraph) {
  // a = Relu(b), b = Relu(a): the first node reads a value no earlier node defines.
  OnnxModel m(13);
  m.input("x", {2});
  m.node("Relu", {"b"}, {"a"}, "first");
  m.node("Relu", {"a"}, {"b"}, "second");
  m.output("b");
  std::string e = import_error(m, "cycle", ImportOptions());
  EXPECT_THAT(e, HasSubstr("node 'first' (Relu)"));
  EXPECT_THAT(e, HasSubstr("'b' is not defined by an earlier node"));
}

// If nodes nested `depth` deep, each taking its then-branch, the innermost computing Neg(x).
OnnxModel nested_ifs(int depth) {
  OnnxModel m(13);
  m.input("x", {2});
  auto& c = m.node("Constant", {}, {"c"});
  ::onnx::TensorProto* t = OnnxModel::attr_t(c, "value")->mutable_t();
  t->set_data_type(::onnx::TensorProto::BOOL);
  t->add_int32_data(1);
  ::onnx::GraphProto* g = &m.graph();
  for (int d = 0; d < depth; ++d) {
    ::onnx::NodeProto* n = g->add_node();
    n->set_op_type("If");
    n->set_name("if" + std::to_string(d));
    n->add_input("c");
    n->add_output("y" + std::to_string(d));
    if (d == 0) m.output("y0");
    ::onnx::GraphProto* els = OnnxModel::attr_g(*n, "else_branch");
    ::onnx::NodeProto* e = els->add_node();
    e->set_op_type("Abs");
    e->add_input("x");
    e->add_output("e" + std::to_string(d));
    els->add_output()->set_name("e" + std::to_string(d));
    g = OnnxModel::attr_g(*n, "then_branch");
    g->add_output()->set_name("y" + std::to_string(d + 1));
  }
  ::onnx::NodeProto* neg = g->add_node();
  neg->set_op_type("Neg");
  neg->add_input("x");
  neg->add_output("y" + std::to_string(depth));
  return m;
}

TEST(OnnxLimits, DeeplyNestedSubgraphs) {
  // 40 deep imports and runs (beyond protobuf's default nesting limit of 100 messages).
  graph::Graph g = import_onnx(nested_ifs(40).save("nested_40"));
  runtime::NDArray x = runtime::NDArray::empty({2}, ops::to_dlpack(ir::DataType::Float32()));
  x.data_as<float>()[0] = 1.5f;
  x.data_as<float>()[1] = -2.0f;
  std::vector<runtime::NDArray> y = graph::interpret(g, {x});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_EQ(y[0].data_as<float>()[0], -1.5f);
  EXPECT_EQ(y[0].data_as<float>()[1], 2.0f);
  // 100 deep: refused by the importer's own limit, naming the node.
  std::string e = user_error([&] { import_onnx(nested_ifs(100).save("nested_100")); });
  EXPECT_THAT(e, HasSubstr("node 'if64' (If) nests subgraphs more than 64 deep"));
  // 1000 deep: protobuf refuses to parse it, and the message says why it may have.
  e = user_error([&] { import_onnx(nested_ifs(1000).save("nested_1000")); });
  EXPECT_THAT(e, HasSubstr("not a valid ONNX model"));
  EXPECT_THAT(e, HasSubstr("nested more than 600 messages deep"));
}

}  // namespace
}  // namespace anvil
