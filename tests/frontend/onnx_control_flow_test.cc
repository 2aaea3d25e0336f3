// Run-time control flow (If, Loop, Scan) built as small ONNX models: bodies that read values of
// the graphs around them, bodies nested in bodies, conditions and trip counts given at run time,
// loop-carried values and scan outputs. Each model is imported, compiled for the host (strict)
// and run; its outputs are checked against the same computation written as plain loops here, and
// against the reference interpreter. Errors name the node and what cannot be compiled. A model
// exported from PyTorch (torch.jit.script, a data-dependent while loop and branch: ONNX Loop and
// If, an If nested in the Loop's body reading its carried value) is compiled and checked against
// PyTorch's own outputs, committed beside it with the script that made them.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "anvil/frontend/onnx/importer.h"
#include "anvil/graph/build.h"
#include "anvil/graph/interpreter.h"
#include "anvil/runtime/model.h"
#include "anvil/runtime/npy.h"
#include "anvil/support/error.h"
#include "anvil/target/target.h"
#include "frontend/onnx_model_builder.h"
#include "frontend/onnx_test_data.h"

namespace anvil {
namespace {

namespace fs = std::filesystem;
using anvil::testing::floats;
using anvil::testing::OnnxModel;
using runtime::NDArray;

NDArray scalar_bool(bool v) {
  NDArray a = NDArray::empty({}, DLDataType{6, 8, 1});
  a.data_as<uint8_t>()[0] = v;
  return a;
}

NDArray scalar_i64(int64_t v) {
  NDArray a = NDArray::empty({}, DLDataType{kDLInt, 64, 1});
  a.data_as<int64_t>()[0] = v;
  return a;
}

std::vector<float> values(const NDArray& a) {
  return std::vector<float>(a.data_as<float>(), a.data_as<float>() + a.numel());
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-5 * (1 + std::fabs(want[i]))) << what << " [" << i << "]";
}

// The outputs of the model compiled for the host and of the reference interpreter, each checked
// against `want` (one vector per output).
void check(const graph::Graph& g, const graph::CompiledGraph& cg, const std::vector<NDArray>& in,
           const std::vector<std::vector<float>>& want, const std::string& what) {
  std::vector<NDArray> compiled = cg.run(in), interpreted = graph::interpret(g, in);
  ASSERT_EQ(compiled.size(), want.size()) << what;
  ASSERT_EQ(interpreted.size(), want.size()) << what;
  for (size_t k = 0; k < want.size(); ++k) {
    expect_near(values(compiled[k]), want[k], what + ", compiled, output " + std::to_string(k));
    expect_near(values(interpreted[k]), want[k],
                what + ", interpreted, output " + std::to_string(k));
  }
}

// A node of body `g`: op on `ins`, one output `out`.
::onnx::NodeProto* add_node(::onnx::GraphProto* g, const std::string& op,
                            const std::vector<std::string>& ins, const std::string& out) {
  ::onnx::NodeProto* k = g->add_node();
  k->set_op_type(op);
  for (const std::string& i : ins) k->add_input(i);
  k->add_output(out);
  return k;
}

// Declares the outputs of body `g`, in order.
void outputs(::onnx::GraphProto* g, const std::vector<std::string>& names) {
  for (const std::string& n : names) g->add_output()->set_name(n);
}

// A loop body that keeps its condition and its carried value v, and stacks v per iteration.
void stacking_body(::onnx::GraphProto* b) {
  for (const char* in : {"i", "cond", "v"}) b->add_input()->set_name(in);
  add_node(b, "Identity", {"cond"}, "cond_out");
  add_node(b, "Identity", {"v"}, "v_out");
  add_node(b, "Identity", {"v"}, "v_scan");
  outputs(b, {"cond_out", "v_out", "v_scan"});
}

// A float constant node of body `g`.
void constant(::onnx::GraphProto* g, const std::string& out, float v) {
  ::onnx::NodeProto* k = add_node(g, "Constant", {}, out);
  OnnxModel::floats(OnnxModel::attr_t(*k, "value")->mutable_t(), out + "_v", {}, {v}, false);
}

// if (c) y = x + a else y = x * b, x a graph input both branches read, a and b constants of the
// main graph.
TEST(ControlFlow, IfWithRunTimeConditionReadsOuterValues) {
  OnnxModel m;
  m.input("c", {}, ::onnx::TensorProto::BOOL);
  m.input("x", {4});
  m.init_floats("a", {4}, {1, 2, 3, 4});
  m.init_floats("b", {1}, {-2});
  m.output("y");
  ::onnx::NodeProto& n = m.node("If", {"c"}, {"y"}, "branch");
  ::onnx::GraphProto* then_g = OnnxModel::attr_g(n, "then_branch");
  add_node(then_g, "Add", {"x", "a"}, "t");
  outputs(then_g, {"t"});
  ::onnx::GraphProto* else_g = OnnxModel::attr_g(n, "else_branch");
  add_node(else_g, "Mul", {"x", "b"}, "e");
  outputs(else_g, {"e"});

  graph::Graph g = frontend::import_onnx_bytes(m.bytes());
  graph::CompiledGraph cg = graph::CompiledGraph::build(g, Target::host(), {});
  ASSERT_EQ(cg.steps().size(), 1u);
  EXPECT_EQ(cg.bodies().size(), 2u);
  NDArray x = floats({4}, {0.5f, -1, 2, 3});
  check(g, cg, {scalar_bool(true), x}, {{1.5f, 1, 5, 7}}, "then");
  check(g, cg, {scalar_bool(false), x}, {{-1, 2, -4, -6}}, "else");
}

// A while loop: y = y * 2 + x until sum(y) >= limit or M iterations, with a counter carried too.
// x and limit are read from the main graph; the trip count and the first condition are inputs.
OnnxModel while_loop_model() {
  OnnxModel m;
  m.input("M", {}, ::onnx::TensorProto::INT64);
  m.input("c", {}, ::onnx::TensorProto::BOOL);
  m.input("y0", {3});
  m.input("x", {3});
  m.input("limit", {});
  m.output("y");
  m.output("count");
  m.init_floats("zero", {}, {0});
  ::onnx::NodeProto& n = m.node("Loop", {"M", "c", "y0", "zero"}, {"y", "count"}, "while");
  ::onnx::GraphProto* b = OnnxModel::attr_g(n, "body");
  for (const char* in : {"i", "cond", "y_in", "count_in"}) b->add_input()->set_name(in);
  constant(b, "two", 2);
  constant(b, "one", 1);
  add_node(b, "Mul", {"y_in", "two"}, "y2");
  add_node(b, "Add", {"y2", "x"}, "y_out");
  add_node(b, "Add", {"count_in", "one"}, "count_out");
  OnnxModel::attr(*add_node(b, "ReduceSum", {"y_out"}, "s"), "keepdims", int64_t{0});
  add_node(b, "Less", {"s", "limit"}, "cond_out");
  outputs(b, {"cond_out", "y_out", "count_out"});
  return m;
}

// The loop above, in plain C++.
std::vector<std::vector<float>> while_loop(int64_t trips, bool c, std::vector<float> y,
                                           const std::vector<float>& x, float limit) {
  float count = 0;
  for (int64_t i = 0; i < trips && c; ++i) {
    float s = 0;
    for (size_t k = 0; k < y.size(); ++k) {
      y[k] = y[k] * 2 + x[k];
      s += y[k];
    }
    count += 1;
    c = s < limit;
  }
  return {y, {count}};
}

TEST(ControlFlow, LoopWithRunTimeTripCountAndCondition) {
  graph::Graph g = frontend::import_onnx_bytes(while_loop_model().bytes());
  graph::CompiledGraph cg = graph::CompiledGraph::build(g, Target::host(), {});
  std::vector<float> y0 = {0.1f, -0.2f, 0.3f}, x = {1, 0.5f, -0.25f};
  for (int64_t trips : {0, 1, 3, 100})
    for (bool c : {false, true})
      for (float limit : {-1.0f, 10.0f, 1000.0f}) {
        std::string what = "M " + std::to_string(trips) + ", cond " + std::to_string(c) +
                           ", limit " + std::to_string(limit);
        check(g, cg,
              {scalar_i64(trips), scalar_bool(c), floats({3}, y0), floats({3}, x),
               floats({}, {limit})},
              while_loop(trips, c, y0, x, limit), what);
      }
}

// The same loop saved as an artifact and run by the runtime alone: the subprogram, its kernels
// and its constants travel in the one file.
TEST(ControlFlow, LoopArtifactRunsInTheRuntime) {
  graph::Graph g = frontend::import_onnx_bytes(while_loop_model().bytes());
  graph::CompiledGraph cg = graph::CompiledGraph::build(g, Target::host(), {});
  fs::path path = fs::temp_directory_path() / "anvil_control_flow_loop.so";
  cg.save(path.string());
  runtime::Model model = runtime::Model::load(path.string());
  std::vector<float> y0 = {0.1f, -0.2f, 0.3f}, x = {1, 0.5f, -0.25f};
  std::vector<NDArray> out = model.run(
      {scalar_i64(50), scalar_bool(true), floats({3}, y0), floats({3}, x), floats({}, {40})});
  std::vector<std::vector<float>> want = while_loop(50, true, y0, x, 40);
  ASSERT_EQ(out.size(), 2u);
  expect_near(values(out[0]), want[0], "y");
  expect_near(values(out[1]), want[1], "count");
  EXPECT_EQ(model.outputs()[1].name, "count");
  fs::remove(path);
}

// A loop whose body holds an If whose branches read the loop-carried value, a value of the loop
// body and a graph input (two levels out); the scan output stacks the If's result per iteration.
// M is a constant: the scan output's length.
TEST(ControlFlow, NestedIfInLoopReadsValuesTwoLevelsOut) {
  OnnxModel m;
  m.input("x", {2});
  m.input("k", {});
  m.output("acc");
  m.output("trace");
  m.init_ints("M", {}, {5});
  ::onnx::NodeProto& n = m.node("Loop", {"M", "", "x"}, {"acc", "trace"}, "outer");
  ::onnx::GraphProto* b = OnnxModel::attr_g(n, "body");
  for (const char* in : {"i", "cond", "a"}) b->add_input()->set_name(in);
  // odd: i / 2 - floor(i / 2) > 1 / 4, on floats
  OnnxModel::attr(*add_node(b, "Cast", {"i"}, "fi"), "to", int64_t{::onnx::TensorProto::FLOAT});
  constant(b, "half", 0.5f);
  constant(b, "quarter", 0.25f);
  add_node(b, "Mul", {"fi", "half"}, "fh");
  add_node(b, "Floor", {"fh"}, "ff");
  add_node(b, "Sub", {"fh", "ff"}, "frac");
  add_node(b, "Greater", {"frac", "quarter"}, "odd");
  add_node(b, "Add", {"a", "fi"}, "shifted");  // a value of the body the branches read
  ::onnx::NodeProto* branch = add_node(b, "If", {"odd"}, "r");
  ::onnx::GraphProto* t = OnnxModel::attr_g(*branch, "then_branch");
  add_node(t, "Mul", {"shifted", "k"}, "tv");  // k: a graph input, two levels out
  outputs(t, {"tv"});
  ::onnx::GraphProto* e = OnnxModel::attr_g(*branch, "else_branch");
  add_node(e, "Sub", {"a", "k"}, "ev");  // a: the loop-carried value, one level out
  outputs(e, {"ev"});
  add_node(b, "Identity", {"cond"}, "cond_out");
  add_node(b, "Identity", {"r"}, "r_scan");
  outputs(b, {"cond_out", "r", "r_scan"});

  graph::Graph g = frontend::import_onnx_bytes(m.bytes());
  graph::CompiledGraph cg = graph::CompiledGraph::build(g, Target::host(), {});
  std::vector<float> x = {1.5f, -2}, a = x, trace;
  float k = 0.5f;
  for (int i = 0; i < 5; ++i) {
    for (float& v : a) v = i % 2 ? (v + static_cast<float>(i)) * k : v - k;
    trace.insert(trace.end(), a.begin(), a.end());
  }
  check(g, cg, {floats({2}, x), floats({}, {k})}, {a, trace}, "nested");
  EXPECT_EQ(cg.run({floats({2}, x), floats({}, {k})}).at(1).shape(), (std::vector<int64_t>{5, 2}));
}

// Scan (opset 11) over axis 1 of x, one scan input reversed, with a running sum as its state and
// two scan outputs: the sums stacked along axis 0 and the inputs scaled, stacked reversed along
// axis 1.
TEST(ControlFlow, ScanAxesAndDirections) {
  OnnxModel m(11);
  m.input("s0", {2});
  m.input("x", {2, 3});
  m.output("s");
  m.output("sums");
  m.output("scaled");
  m.init_floats("w", {}, {3});
  ::onnx::NodeProto& n = m.node("Scan", {"s0", "x"}, {"s", "sums", "scaled"}, "scan");
  OnnxModel::attr(n, "num_scan_inputs", int64_t{1});
  OnnxModel::attr(n, "scan_input_axes", std::vector<int64_t>{1});
  OnnxModel::attr(n, "scan_input_directions", std::vector<int64_t>{1});
  OnnxModel::attr(n, "scan_output_axes", std::vector<int64_t>{0, -1});
  OnnxModel::attr(n, "scan_output_directions", std::vector<int64_t>{0, 1});
  ::onnx::GraphProto* b = OnnxModel::attr_g(n, "body");
  for (const char* in : {"acc", "col"}) b->add_input()->set_name(in);
  add_node(b, "Add", {"acc", "col"}, "acc_out");
  add_node(b, "Mul", {"col", "w"}, "scaled_col");
  add_node(b, "Identity", {"acc_out"}, "sum_col");
  outputs(b, {"acc_out", "sum_col", "scaled_col"});

  graph::Graph g = frontend::import_onnx_bytes(m.bytes());
  graph::CompiledGraph cg = graph::CompiledGraph::build(g, Target::host(), {});
  std::vector<float> s0 = {10, 20}, x = {1, 2, 3, 4, 5, 6};
  // Steps t = 0, 1, 2 read columns 2, 1, 0 (reversed input).
  std::vector<float> s = s0, sums, scaled(6);
  for (int t = 0; t < 3; ++t) {
    int col = 2 - t;
    for (int r = 0; r < 2; ++r) s[r] += x[r * 3 + col];
    sums.insert(sums.end(), s.begin(), s.end());
    // scaled: [2, 3], axis -1 = 1, reversed: step t lands in column 2 - t
    for (int r = 0; r < 2; ++r) scaled[r * 3 + (2 - t)] = x[r * 3 + col] * 3;
  }
  check(g, cg, {floats({2}, s0), floats({2, 3}, x)}, {s, sums, scaled}, "scan");
}

// What cannot be compiled says so and names the node.
TEST(ControlFlow, StaticShapeLimitsAreClearErrors) {
  // Scan outputs of a loop whose trip count is a graph input: their length is unknown.
  {
    OnnxModel m;
    m.input("M", {}, ::onnx::TensorProto::INT64);
    m.input("x", {2});
    m.output("xs");
    ::onnx::NodeProto& n = m.node("Loop", {"M", "", "x"}, {"x_out", "xs"}, "stack");
    stacking_body(OnnxModel::attr_g(n, "body"));
    try {
      frontend::import_onnx_bytes(m.bytes());
      FAIL() << "a run-time trip count with scan outputs was accepted";
    } catch (const Error& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find("node 'stack'"), std::string::npos) << msg;
      EXPECT_NE(msg.find("--input-value M=FILE.npy"), std::string::npos) << msg;
    }
  }
  // Branches of different shapes.
  {
    OnnxModel m;
    m.input("c", {}, ::onnx::TensorProto::BOOL);
    m.input("x", {4});
    m.output("y");
    m.init_ints("starts", {1}, {0});
    m.init_ints("ends", {1}, {2});
    ::onnx::NodeProto& n = m.node("If", {"c"}, {"y"}, "shapes");
    ::onnx::GraphProto* t = OnnxModel::attr_g(n, "then_branch");
    add_node(t, "Identity", {"x"}, "whole");
    outputs(t, {"whole"});
    ::onnx::GraphProto* e = OnnxModel::attr_g(n, "else_branch");
    add_node(e, "Slice", {"x", "starts", "ends"}, "part");
    outputs(e, {"part"});
    try {
      frontend::import_onnx_bytes(m.bytes());
      FAIL() << "branches of different shapes were accepted";
    } catch (const Error& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find("'shapes'"), std::string::npos) << msg;
      EXPECT_NE(msg.find("float32[4] in the then-branch and float32[2] in the else-branch"),
                std::string::npos)
          << msg;
    }
  }
}

// x[s : s + 2] with s known only at run time is a gather of s and s + 1, clamped to the axis
// before the gather (which refuses an index out of range), as the reference interpreter does.
TEST(ControlFlow, RunTimeSliceStartIsClampedToTheAxis) {
  OnnxModel m;
  m.input("x", {5});
  m.input("s", {1}, ::onnx::TensorProto::INT64);
  m.output("y");
  m.init_ints("two", {1}, {2});
  m.node("Add", {"s", "two"}, {"e"}, "end");
  m.node("Slice", {"x", "s", "e"}, {"y"}, "window");
  graph::Graph g = frontend::import_onnx_bytes(m.bytes());
  graph::CompiledGraph cg = graph::CompiledGraph::build(g, Target::host(), {});
  NDArray x = NDArray::empty({5}, runtime::dl_float32());
  for (int i = 0; i < 5; ++i) x.data_as<float>()[i] = static_cast<float>(10 + i);
  for (auto [start, want] : std::vector<std::pair<int64_t, std::vector<float>>>{
           {1, {11, 12}}, {-2, {13, 14}}, {4, {14, 14}}, {9, {14, 14}}, {-9, {10, 10}}}) {
    NDArray s = NDArray::empty({1}, DLDataType{kDLInt, 64, 1});
    s.data_as<int64_t>()[0] = start;
    check(g, cg, {x, s}, {want}, "start " + std::to_string(start));
  }
}

// A loop on constants is evaluated by the compiler when its trip count is small; a long one (or a
// while loop) is left to run time instead of running in every build.
TEST(ControlFlow, ConstantLoopsFoldOnlyWhenShort) {
  for (int64_t trips : {3, 100000}) {
    OnnxModel m;
    m.output("y");
    m.init_ints("M", {}, {trips});
    m.init_floats("y0", {1}, {0});
    m.init_floats("one", {1}, {1});
    ::onnx::NodeProto& n = m.node("Loop", {"M", "", "y0"}, {"y"}, "count");
    ::onnx::GraphProto* b = OnnxModel::attr_g(n, "body");
    for (const char* in : {"i", "cond", "v"}) b->add_input()->set_name(in);
    add_node(b, "Identity", {"cond"}, "cond_out");
    add_node(b, "Add", {"v", "one"}, "v_out");
    outputs(b, {"cond_out", "v_out"});
    graph::Graph g = frontend::import_onnx_bytes(m.bytes());
    graph::CompiledGraph cg = graph::CompiledGraph::build(g, Target::host(), {});
    EXPECT_EQ(cg.steps().size(), trips > 4096 ? 1u : 0u) << trips;
    EXPECT_EQ(values(cg.run({}).at(0)), std::vector<float>{static_cast<float>(trips)}) << trips;
  }
}

// GPU programs run kernels on the device: control flow is a CPU feature for now, and says so.
TEST(ControlFlow, GpuTargetsRefuseRunTimeControlFlow) {
  graph::Graph g = frontend::import_onnx_bytes(while_loop_model().bytes());
  try {
    graph::CompiledGraph::build(g, Target::parse("cuda"), {});
    FAIL() << "a loop was compiled for a GPU";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("node 'while' (loop)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("CPU targets only"), std::string::npos) << msg;
  }
}

// A loop with scan outputs whose condition ends it before its trip count: the outputs were
// compiled for the trip count, and the run says so instead of returning a partly written tensor.
TEST(ControlFlow, EarlyExitWithScanOutputsIsARunTimeError) {
  OnnxModel m;
  m.input("c", {}, ::onnx::TensorProto::BOOL);
  m.input("x", {1});
  m.output("xs");
  m.init_ints("M", {}, {4});
  ::onnx::NodeProto& n = m.node("Loop", {"M", "c", "x"}, {"x_out", "xs"}, "stack");
  stacking_body(OnnxModel::attr_g(n, "body"));
  graph::Graph g = frontend::import_onnx_bytes(m.bytes());
  graph::CompiledGraph cg = graph::CompiledGraph::build(g, Target::host(), {});
  NDArray xs = cg.run({scalar_bool(true), floats({1}, {7})}).at(0);
  EXPECT_EQ(values(xs), (std::vector<float>{7, 7, 7, 7}));
  try {
    cg.run({scalar_bool(false), floats({1}, {7})});
    FAIL() << "a loop that ran 0 of 4 iterations filled its scan output";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("'stack'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("ran 0 iterations"), std::string::npos) << msg;
    EXPECT_NE(msg.find("compiled for 4"), std::string::npos) << msg;
  }
}

// PyTorch's export of a scripted module (tests/frontend/data/torch_loop_if/generate.py): a while
// loop on the activations' norm (Loop with a run-time condition, the Linear layer's weights read
// from the main graph, an If nested in its body) and a branch on their mean (If).
TEST(ControlFlow, TorchScriptedLoopAndBranchMatchPyTorch) {
  fs::path dir = fs::path(ANVIL_FRONTEND_DATA) / "torch_loop_if";
  graph::Graph g = frontend::import_onnx((dir / "model.onnx").string());
  graph::CompiledGraph cg = graph::CompiledGraph::build(g, Target::host(), {});
  EXPECT_GE(cg.steps().size(), 2u);  // the Loop and the If
  int cases = 0;
  for (int k = 0; fs::exists(dir / ("x" + std::to_string(k) + ".npy")); ++k, ++cases) {
    NDArray x = runtime::load_npy((dir / ("x" + std::to_string(k) + ".npy")).string());
    NDArray z = runtime::load_npy((dir / ("z" + std::to_string(k) + ".npy")).string());
    expect_near(values(cg.run({x}).at(0)), values(z), "case " + std::to_string(k));
    expect_near(values(graph::interpret(g, {x}).at(0)), values(z),
                "case " + std::to_string(k) + ", interpreted");
  }
  EXPECT_EQ(cases, 5);
}

}  // namespace
}  // namespace anvil
