// Operands that ONNX allows to be run-time tensors and that only change values, given as graph
// inputs: Clip's min and max (either or both; a min above the max gives the max), Pad's
// constant_value (constant mode), Where's branches. Each is imported, compiled for the host
// (strict) and checked against values worked out by hand and against the reference interpreter.
#include <gtest/gtest.h>

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

// The model's only output, from the reference interpreter and from the compiled build, each
// expected to equal `want` exactly (the ops only select and copy values).
void check(const OnnxModel& m, const std::vector<NDArray>& inputs,
           const std::vector<int64_t>& shape, const std::vector<float>& want) {
  graph::Graph g = frontend::import_onnx_bytes(m.bytes());
  for (graph::ValueId v : g.inputs())
    EXPECT_EQ(g.value(v).kind, graph::ValueKind::kInput) << g.value(v).name;
  graph::CompiledGraph cg = graph::CompiledGraph::build(g, Target::host(), {});
  for (const NDArray& y : {graph::interpret(g, inputs).at(0), cg.run(inputs).at(0)}) {
    ASSERT_EQ(y.shape(), shape);
    EXPECT_EQ(std::vector<float>(y.data_as<float>(), y.data_as<float>() + y.numel()), want);
  }
}

const std::vector<float> kX = {-3, -1, 0, 2, 5, 9};

TEST(RuntimeOperands, ClipBounds) {
  const float lo = -1.5f, hi = 4;
  for (int which : {1, 2, 3}) {  // bit 0: min given, bit 1: max given
    SCOPED_TRACE(which);
    const bool has_lo = which & 1, has_hi = which & 2;
    OnnxModel m;
    m.input("x", {2, 3});
    std::vector<NDArray> in = {floats({2, 3}, kX)};
    if (has_lo) m.input("lo", {}), in.push_back(floats({}, {lo}));
    if (has_hi) m.input("hi", {}), in.push_back(floats({}, {hi}));
    std::vector<std::string> ins = {"x", has_lo ? "lo" : ""};
    if (has_hi) ins.push_back("hi");
    m.node("Clip", ins, {"y"});
    m.output("y");
    std::vector<float> want;
    for (float v : kX) {
      if (has_lo) v = std::max(v, lo);
      want.push_back(has_hi ? std::min(v, hi) : v);
    }
    check(m, in, {2, 3}, want);
  }
  // A min above the max: every element is the max.
  OnnxModel m;
  m.input("x", {2, 3});
  m.input("lo", {});
  m.input("hi", {});
  m.node("Clip", {"x", "lo", "hi"}, {"y"});
  m.output("y");
  check(m, {floats({2, 3}, kX), floats({}, {3}), floats({}, {1})}, {2, 3},
        std::vector<float>(6, 1.0f));
}

TEST(RuntimeOperands, PadConstantValue) {
  OnnxModel m;
  m.input("x", {2, 2});
  m.input("fill", {});
  m.init_ints("pads", {4}, {0, 1, 1, 0});  // one column before, one row after
  m.node("Pad", {"x", "pads", "fill"}, {"y"});
  m.output("y");
  check(m, {floats({2, 2}, {1, 2, 3, 4}), floats({}, {-7})}, {3, 3},
        {-7, 1, 2, -7, 3, 4, -7, -7, -7});
}

TEST(RuntimeOperands, WhereBranches) {
  OnnxModel m;
  m.input("x", {2, 3});
  m.input("other", {3});
  m.init_floats("zero", {}, {0});
  m.node("Greater", {"x", "zero"}, {"positive"});
  m.node("Where", {"positive", "x", "other"}, {"y"});
  m.output("y");
  check(m, {floats({2, 3}, kX), floats({3}, {10, 20, 30})}, {2, 3}, {10, 20, 30, 2, 5, 9});
}

}  // namespace
}  // namespace anvil
