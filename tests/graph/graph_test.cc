// The graph IR: building, shape inference through the op registry, printing, rewriting, errors.
#include "anvil/graph/graph.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "testing/errors.h"

namespace anvil::graph {
namespace {

using ops::Attrs;
using ops::TensorType;

const ir::DataType f32 = ir::DataType::Float32();

runtime::NDArray zeros(std::vector<int64_t> shape) {
  return runtime::NDArray::empty(std::move(shape), runtime::dl_float32(), true);
}

Graph small() {
  Graph g;
  ValueId x = g.add_input("x", {{1, 3, 8, 8}, f32});
  ValueId w = g.add_constant("w", zeros({4, 3, 3, 3}));
  ValueId c = g.add("conv", "conv2d", Attrs("conv2d", {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}),
                    {x, w});
  ValueId r = g.add("relu", "relu", Attrs(), {c});
  g.add_output(r);
  return g;
}

TEST(Graph, InfersTypesAndPrints) {
  Graph g = small();
  EXPECT_EQ(g.num_nodes(), 2u);
  EXPECT_EQ(g.value(g.find("relu")).type, (TensorType{{1, 4, 8, 8}, f32}));
  EXPECT_EQ(g.value(g.find("w")).kind, ValueKind::kConstant);
  EXPECT_EQ(g.str(),
            "input %x: float32[1, 3, 8, 8]\n"
            "const %w: float32[4, 3, 3, 3]\n"
            "%conv: float32[1, 4, 8, 8] = conv2d(%x, %w) {pads=[1, 1, 1, 1]}  # conv\n"
            "%relu: float32[1, 4, 8, 8] = relu(%conv)  # relu\n"
            "outputs %relu\n");
  std::vector<std::vector<NodeId>> users = g.users();
  EXPECT_EQ(users[g.find("conv")], std::vector<NodeId>{1});
  EXPECT_EQ(g.unique_name("conv"), "conv_1");
  EXPECT_EQ(g.unique_name("other"), "other");
}

// unique_name gives the smallest free suffix, skipping names taken directly, and the same name
// until it is used.
TEST(Graph, UniqueNamesTakeTheSmallestFreeSuffix) {
  Graph g = small();
  ValueId r = g.find("relu");
  g.add("relu_2", "relu", Attrs(), {r});
  EXPECT_EQ(g.unique_name("relu"), "relu_1");
  EXPECT_EQ(g.unique_name("relu"), "relu_1");
  g.add(g.unique_name("relu"), "relu", Attrs(), {r});
  EXPECT_EQ(g.unique_name("relu"), "relu_3");
  for (int i = 0; i < 1000; ++i) g.add(g.unique_name("relu"), "relu", Attrs(), {r});
  EXPECT_EQ(g.unique_name("relu"), "relu_1003");
  EXPECT_EQ(g.unique_name("relu_2"), "relu_2_1");
}

TEST(Graph, RewriterCopiesAndReplaces) {
  Graph g = small();
  GraphRewriter rw(g);
  // Copy the conv, replace relu by sigmoid; the unused constant stays out until mapped.
  rw.copy_node(0);
  ValueId s = rw.out().add("sig", "sigmoid", Attrs(), {rw.map(g.node(0).outputs[0])});
  rw.set(g.node(1).outputs[0], s);
  Graph h = rw.finish();
  EXPECT_EQ(h.num_nodes(), 2u);
  EXPECT_EQ(h.node(1).op, "sigmoid");
  EXPECT_EQ(h.outputs().size(), 1u);
  EXPECT_EQ(h.value(h.outputs()[0]).name, "sig");
}

TEST(Graph, ErrorsNameTheNode) {
  Graph g;
  ValueId x = g.add_input("x", {{1, 3, 8, 8}, f32});
  ValueId w = g.add_constant("w", zeros({4, 5, 3, 3}));
  EXPECT_THAT(testing::user_error([&] {
                g.add("bad_conv", "conv2d", Attrs(), {x, w});
              }),
              ::testing::AllOf(::testing::HasSubstr("node 'bad_conv'"),
                               ::testing::HasSubstr("x: float32[1, 3, 8, 8]")));
  EXPECT_THAT(testing::user_error([&] { g.add("n", "no_such_op", Attrs(), {x}); }),
              ::testing::HasSubstr("no_such_op"));
  EXPECT_THAT(testing::user_error([&] {
                g.add_input("x", {{1}, f32});
              }),
              ::testing::HasSubstr("'x' is already used"));
  EXPECT_THAT(testing::user_error([&] { g.add("r", "relu", Attrs(), {42}); }),
              ::testing::HasSubstr("not defined"));
}

}  // namespace
}  // namespace anvil::graph
