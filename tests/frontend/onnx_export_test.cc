// The ONNX exporter: every built-in model and small graphs of single ops are exported, checked as
// ModelProtos (opset, interface, onnx::checker when libonnx is there), imported back and run by
// the reference interpreter beside the original graph: the same math, so nearly the same numbers.
// Some models are also compiled from their imported form and compared with the original's
// interpretation. Then the errors: ops without an ONNX form (all listed), attributes ONNX 13
// cannot express, unwritable paths.
#include <gtest/gtest.h>
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <set>

#include "anvil/frontend/onnx/exporter.h"
#include "anvil/frontend/onnx/importer.h"
#include "anvil/graph/build.h"
#include "anvil/graph/interpreter.h"
#include "anvil/graph/passes.h"
#include "anvil/models/models.h"
#include "testing/errors.h"

namespace anvil {
namespace {

using graph::Graph;
using graph::ValueId;
using ir::DataType;
using ops::Attrs;
using runtime::NDArray;
using testing::user_error;
using Ints = std::vector<int64_t>;

// ---- comparing outputs

double to_double(const NDArray& a, int64_t i) {
  DataType t = ops::from_dlpack(a.dtype());
  if (t == DataType::Float32()) return a.data_as<float>()[i];
  if (t == DataType::Int64()) return static_cast<double>(a.data_as<int64_t>()[i]);
  if (t == DataType::Int32()) return a.data_as<int32_t>()[i];
  return a.data_as<uint8_t>()[i];
}

// max |got - want| <= rel * max |want| (and exact for non-float outputs, rel = 0).
void expect_close(const NDArray& got, const NDArray& want, double rel, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  ASSERT_EQ(ops::from_dlpack(got.dtype()), ops::from_dlpack(want.dtype())) << what;
  double ref = 0, diff = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    double w = to_double(want, i), g = to_double(got, i);
    ASSERT_FALSE(std::isnan(g) != std::isnan(w)) << what << ": element " << i;
    if (std::isnan(w)) continue;
    ref = std::max(ref, std::fabs(w));
    diff = std::max(diff, std::fabs(g - w));
  }
  EXPECT_LE(diff, rel * std::max(ref, 1e-30))
      << what << ": max |diff| " << diff << ", max |reference| " << ref;
}

// ---- onnx::checker (Debian's libonnx, which the frontend tests link)

void expect_valid(const ::onnx::ModelProto& m, const std::string& what) {
  try {
    ::onnx::checker::check_model(m);
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": onnx::checker rejects the model: " << e.what();
  }
}

TEST(OnnxExport, CheckerCatchesErrors) {
  // The checker does check: a node reading an undefined value is refused.
  ::onnx::ModelProto m;
  m.set_ir_version(7);
  m.add_opset_import()->set_version(13);
  ::onnx::NodeProto* n = m.mutable_graph()->add_node();
  n->set_op_type("Relu");
  n->add_input("undefined");
  n->add_output("y");
  m.mutable_graph()->set_name("broken");
  bool refused = false;
  try {
    ::onnx::checker::check_model(m);
  } catch (const std::exception&) {
    refused = true;
  }
  EXPECT_TRUE(refused);
}

// ---- the round trip

struct RoundTrip {
  ::onnx::ModelProto model;
  Graph imported;
};

RoundTrip export_and_import(const Graph& g, const std::string& name) {
  std::string bytes = frontend::export_onnx_bytes(g, name);
  RoundTrip rt;
  EXPECT_TRUE(rt.model.ParseFromString(bytes)) << name;
  expect_valid(rt.model, name);
  rt.imported = frontend::import_onnx_bytes(bytes, {}, name + ".onnx");
  return rt;
}

// Exports `g`, imports it back and interprets both on the same inputs; returns the imported graph.
Graph round_trip(const Graph& g, const std::string& name, double rel = 1e-5,
                 std::vector<NDArray> inputs = {}) {
  RoundTrip rt = export_and_import(g, name);
  if (inputs.empty()) inputs = models::example_inputs(g, 1, 5);
  std::vector<NDArray> want = graph::interpret(g, inputs);
  std::vector<NDArray> got = graph::interpret(rt.imported, inputs);
  EXPECT_EQ(got.size(), want.size()) << name;
  for (size_t k = 0; k < std::min(got.size(), want.size()); ++k)
    expect_close(got[k], want[k], rel, name + " output " + std::to_string(k));
  return std::move(rt.imported);
}

// ---- the built-in models

class ModelExport : public ::testing::TestWithParam<std::string> {};

TEST_P(ModelExport, RoundTripsAndCompiles) {
  const std::string name = GetParam();
  auto t0 = std::chrono::steady_clock::now();
  Graph g = models::build_model(name);
  RoundTrip rt = export_and_import(g, name);
  const ::onnx::ModelProto& m = rt.model;

  // The ModelProto: opset 13 of the default domain, the graph's interface with static shapes.
  EXPECT_GE(m.ir_version(), 7);
  EXPECT_LE(m.ir_version(), 8);
  EXPECT_EQ(m.producer_name(), "anvil");
  ASSERT_EQ(m.opset_import_size(), 1);
  EXPECT_EQ(m.opset_import(0).domain(), "");
  EXPECT_EQ(m.opset_import(0).version(), 13);
  ASSERT_EQ(m.graph().input_size(), static_cast<int>(g.inputs().size()));
  ASSERT_EQ(m.graph().output_size(), static_cast<int>(g.outputs().size()));
  auto expect_interface = [&](const ::onnx::ValueInfoProto& vi, ValueId v) {
    const graph::Value& val = g.value(v);
    EXPECT_EQ(vi.name(), val.name);
    const ::onnx::TypeProto::Tensor& tt = vi.type().tensor_type();
    EXPECT_EQ(tt.elem_type(), val.type.dtype == DataType::Int64() ? ::onnx::TensorProto::INT64
                                                                  : ::onnx::TensorProto::FLOAT);
    Ints dims;
    for (const auto& d : tt.shape().dim()) dims.push_back(d.dim_value());
    EXPECT_EQ(dims, val.type.shape) << vi.name();
  };
  for (size_t i = 0; i < g.inputs().size(); ++i)
    expect_interface(m.graph().input(static_cast<int>(i)), g.inputs()[i]);
  for (size_t i = 0; i < g.outputs().size(); ++i)
    expect_interface(m.graph().output(static_cast<int>(i)), g.outputs()[i]);
  // Every constant is an initializer of its own name, in raw little-endian bytes (the exporter
  // adds a few of its own: reshape's shapes, clip's bounds).
  std::map<std::string, const ::onnx::TensorProto*> inits;
  for (const ::onnx::TensorProto& t : m.graph().initializer()) inits[t.name()] = &t;
  for (ValueId v = 0; v < static_cast<ValueId>(g.num_values()); ++v) {
    const graph::Value& val = g.value(v);
    if (val.kind != graph::ValueKind::kConstant) continue;
    ASSERT_TRUE(inits.count(val.name)) << val.name;
    const ::onnx::TensorProto& t = *inits[val.name];
    EXPECT_EQ(Ints(t.dims().begin(), t.dims().end()), val.type.shape) << val.name;
    ASSERT_EQ(t.raw_data().size(), val.data.nbytes()) << val.name;
    EXPECT_EQ(std::memcmp(t.raw_data().data(), val.data.data(), val.data.nbytes()), 0) << val.name;
  }
  // The imported graph has the same interface and the same nodes (one ONNX node per Anvil node
  // in the built-in models, each imported as the same op).
  const Graph& back = rt.imported;
  ASSERT_EQ(back.num_nodes(), g.num_nodes());
  for (size_t n = 0; n < g.num_nodes(); ++n) {
    EXPECT_EQ(back.nodes()[n].name, g.nodes()[n].name);
    EXPECT_EQ(back.nodes()[n].op, g.nodes()[n].op) << g.nodes()[n].name;
  }

  // The same math: the reference interpreter on both.
  std::vector<NDArray> inputs = models::example_inputs(g);
  std::vector<NDArray> want = graph::interpret(g, inputs);
  std::vector<NDArray> got = graph::interpret(back, inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k)
    expect_close(got[k], want[k], 1e-5, name + " (imported, interpreted)");
  auto t1 = std::chrono::steady_clock::now();

  // Compiled from the imported graph: the five workloads and MobileNet v2 run from their ONNX
  // files (the bar; resnet18, mobilenet_v2 and lstm_lm take 15-25 s each to compile).
  graph::CompiledGraph cg = graph::CompiledGraph::build(back, Target::host(), {});
  std::vector<NDArray> compiled = cg.run(inputs);
  ASSERT_EQ(compiled.size(), want.size());
  for (size_t k = 0; k < compiled.size(); ++k)
    expect_close(compiled[k], want[k], 1e-4, name + " (imported, compiled)");
  auto t2 = std::chrono::steady_clock::now();
  std::printf("%s: export + import + interpret x2 %.2f s, compile + run %.2f s\n", name.c_str(),
              std::chrono::duration<double>(t1 - t0).count(),
              std::chrono::duration<double>(t2 - t1).count());
}

INSTANTIATE_TEST_SUITE_P(Zoo, ModelExport, ::testing::ValuesIn(models::model_names()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

TEST(OnnxExport, WritesAFileThatImports) {
  Graph g = models::dqn();
  std::string path = ::testing::TempDir() + "anvil_export_dqn.onnx";
  frontend::export_onnx(g, path, "dqn");
  Graph back = frontend::import_onnx(path);
  std::vector<NDArray> in = models::example_inputs(g);
  expect_close(graph::interpret(back, in)[0], graph::interpret(g, in)[0], 1e-5, "dqn from file");
  std::remove(path.c_str());
}

// ---- single ops

ops::TensorType f32(Ints shape) {
  return {std::move(shape), DataType::Float32()};
}

NDArray normal_constant(Ints shape, uint32_t seed, double scale = 1.0) {
  Graph tmp;
  tmp.add_input("x", f32(std::move(shape)));
  NDArray a = models::example_inputs(tmp, seed)[0];
  for (int64_t i = 0; i < a.numel(); ++i) a.data_as<float>()[i] *= static_cast<float>(scale);
  return a;
}

// A graph of one node `op` over inputs of the given types (constants where `constant` says so),
// every output a graph output.
Graph one_op(const std::string& op, Attrs attrs, const std::vector<ops::TensorType>& types,
             const std::vector<bool>& constant = {}) {
  Graph g;
  std::vector<ValueId> ins;
  for (size_t i = 0; i < types.size(); ++i) {
    std::string name = "in" + std::to_string(i);
    if (i < constant.size() && constant[i])
      ins.push_back(g.add_constant(name, normal_constant(types[i].shape, 7 + i)));
    else
      ins.push_back(g.add_input(name, types[i]));
  }
  for (ValueId v : g.add_node(op + "_node", op, std::move(attrs), ins)) g.add_output(v);
  return g;
}

struct OpCase {
  std::string name;
  std::function<Graph()> build;
};
void PrintTo(const OpCase& c, std::ostream* os) {
  *os << c.name;
}

std::vector<OpCase> op_cases() {
  using AV = std::map<std::string, ops::AttrValue>;
  auto A = [](AV m) { return Attrs("", std::move(m)); };
  std::vector<OpCase> c;
  c.push_back({"conv2d_grouped_strided_dilated", [=] {
                 return one_op("conv2d",
                               A({{"strides", Ints{2, 1}},
                                  {"dilations", Ints{1, 2}},
                                  {"pads", Ints{1, 0, 2, 1}},
                                  {"group", int64_t{2}}}),
                               {f32({1, 4, 9, 8}), f32({6, 2, 3, 3}), f32({6})},
                               {false, true, true});
               }});
  c.push_back({"conv1d", [=] {
                 return one_op("conv1d", A({{"strides", Ints{2}}, {"pads", Ints{1, 1}}}),
                               {f32({1, 3, 10}), f32({4, 3, 3})}, {false, true});
               }});
  c.push_back({"conv2d_transpose", [=] {
                 return one_op("conv2d_transpose",
                               A({{"strides", Ints{2, 2}},
                                  {"pads", Ints{1, 1, 0, 1}},
                                  {"output_padding", Ints{1, 0}},
                                  {"group", int64_t{2}}}),
                               {f32({1, 4, 5, 5}), f32({4, 3, 3, 3}), f32({6})},
                               {false, true, true});
               }});
  c.push_back({"dense_no_bias", [=] {
                 return one_op("dense", A({}), {f32({3, 5}), f32({4, 5})}, {false, true});
               }});
  c.push_back(
      {"matmul_trans_b", [=] {
         return one_op("matmul", A({{"trans_b", int64_t{1}}}), {f32({2, 3, 5}), f32({4, 5})});
       }});
  c.push_back({"batch_matmul_trans_a", [=] {
                 return one_op("batch_matmul", A({{"trans_a", int64_t{1}}}),
                               {f32({2, 5, 3}), f32({2, 5, 4})});
               }});
  c.push_back({"clip_min_only", [=] { return one_op("clip", A({{"min", 0.25}}), {f32({2, 7})}); }});
  c.push_back({"leaky_relu", [=] {
                 return one_op("leaky_relu", A({{"alpha", 0.2}}), {f32({2, 7})});
               }});
  c.push_back({"elu", [=] { return one_op("elu", A({{"alpha", 0.5}}), {f32({2, 7})}); }});
  c.push_back({"elu_default", [=] { return one_op("elu", A({}), {f32({2, 7})}); }});
  c.push_back({"hard_sigmoid", [=] {
                 return one_op("hard_sigmoid", A({{"alpha", 0.3}, {"beta", 0.4}}), {f32({9})});
               }});
  c.push_back({"hard_swish", [=] { return one_op("hard_swish", A({}), {f32({3, 11})}); }});
  c.push_back({"gelu", [=] { return one_op("gelu", A({}), {f32({3, 11})}); }});
  c.push_back({"gelu_tanh", [=] {
                 return one_op("gelu", A({{"approximate", std::string("tanh")}}), {f32({3, 11})});
               }});
  for (const char* u : {"sigmoid", "tanh", "exp", "neg", "abs", "floor", "erf"}) {
    c.push_back({u, [=] { return one_op(u, A({}), {f32({2, 3, 4})}); }});
  }
  for (const char* b : {"sub", "div", "maximum", "minimum", "prelu"}) {
    c.push_back({b, [=] { return one_op(b, A({}), {f32({2, 3, 4}), f32({3, 1})}); }});
  }
  c.push_back({"where_greater", [=] {
                 Graph g;
                 ValueId a = g.add_input("a", f32({2, 5})), b = g.add_input("b", f32({5}));
                 ValueId cond = g.add("cmp", "greater", A({}), {a, b});
                 g.add_output(g.add("sel", "where", A({}), {cond, a, b}));
                 return g;
               }});
  c.push_back({"cast_int32", [=] {
                 Graph g;
                 ValueId x = g.add_input("x", f32({2, 5}));
                 ValueId y = g.add("mul10", "mul", A({}), {x, x});
                 g.add_output(g.add("to_int", "cast", A({{"to", std::string("int32")}}), {y}));
                 return g;
               }});
  c.push_back({"batch_norm", [=] {
                 Graph g;
                 ValueId x = g.add_input("x", f32({1, 3, 4, 4}));
                 std::vector<ValueId> ins{x};
                 for (int k = 0; k < 4; ++k) {
                   NDArray p = normal_constant({3}, 20 + k, 0.1);
                   if (k == 0 || k == 3)
                     for (int i = 0; i < 3; ++i) p.data_as<float>()[i] += 1.0f;
                   ins.push_back(g.add_constant("p" + std::to_string(k), p));
                 }
                 g.add_output(g.add("bn", "batch_norm", A({{"epsilon", 1e-3}}), ins));
                 return g;
               }});
  c.push_back({"instance_norm", [=] {
                 return one_op("instance_norm", A({{"epsilon", 1e-4}}),
                               {f32({2, 3, 4, 5}), f32({3}), f32({3})}, {false, true, true});
               }});
  c.push_back({"layer_norm", [=] {
                 return one_op("layer_norm", A({{"axis", int64_t{-2}}}),
                               {f32({2, 3, 4, 5}), f32({4, 5}), f32({4, 5})}, {false, true, true});
               }});
  c.push_back({"max_pool_dilated_ceil", [=] {
                 return one_op("max_pool2d",
                               A({{"kernel_shape", Ints{3, 2}},
                                  {"strides", Ints{2, 2}},
                                  {"pads", Ints{1, 0, 1, 1}},
                                  {"dilations", Ints{1, 2}},
                                  {"ceil_mode", int64_t{1}}}),
                               {f32({1, 2, 9, 10})});
               }});
  c.push_back({"avg_pool_include_pad", [=] {
                 return one_op("avg_pool2d",
                               A({{"kernel_shape", Ints{3, 3}},
                                  {"strides", Ints{2, 2}},
                                  {"pads", Ints{1, 1, 1, 1}},
                                  {"count_include_pad", int64_t{1}}}),
                               {f32({1, 2, 7, 8})});
               }});
  c.push_back({"global_max_pool", [=] {
                 return one_op("global_max_pool2d", A({}), {f32({1, 3, 5, 4})});
               }});
  c.push_back({"reduce_sum_axes", [=] {
                 return one_op("reduce_sum", A({{"axes", Ints{0, 2}}, {"keepdims", int64_t{0}}}),
                               {f32({2, 3, 4})});
               }});
  c.push_back({"reduce_sum_all", [=] { return one_op("reduce_sum", A({}), {f32({2, 3, 4})}); }});
  c.push_back({"reduce_mean_max_min", [=] {
                 Graph g;
                 ValueId x = g.add_input("x", f32({3, 4, 5}));
                 g.add_output(g.add("mean", "reduce_mean", A({{"axes", Ints{-1}}}), {x}));
                 g.add_output(g.add("max", "reduce_max", A({{"keepdims", int64_t{0}}}), {x}));
                 g.add_output(g.add("min", "reduce_min", A({{"axes", Ints{1}}}), {x}));
                 return g;
               }});
  c.push_back(
      {"argmax_last", [=] {
         return one_op(
             "argmax",
             A({{"axis", int64_t{1}}, {"keepdims", int64_t{0}}, {"select_last_index", int64_t{1}}}),
             {f32({3, 6})});
       }});
  c.push_back({"softmax_axis1", [=] {
                 return one_op("softmax", A({{"axis", int64_t{1}}}), {f32({2, 5, 3})});
               }});
  c.push_back({"log_softmax", [=] { return one_op("log_softmax", A({}), {f32({2, 7})}); }});
  c.push_back({"reshape_transpose_flatten", [=] {
                 Graph g;
                 ValueId x = g.add_input("x", f32({2, 3, 4}));
                 ValueId r = g.add("r", "reshape", A({{"shape", Ints{0, -1, 2}}}), {x});
                 ValueId t = g.add("t", "transpose", A({{"perm", Ints{2, 0, 1}}}), {r});
                 g.add_output(g.add("f", "flatten", A({{"axis", int64_t{2}}}), {t}));
                 return g;
               }});
  c.push_back({"concat_split", [=] {
                 Graph g;
                 ValueId a = g.add_input("a", f32({2, 3})), b = g.add_input("b", f32({2, 5}));
                 ValueId cat = g.add("cat", "concat", A({{"axis", int64_t{-1}}}), {a, b});
                 for (ValueId v :
                      g.add_node("split", "split",
                                 A({{"axis", int64_t{1}}, {"num_outputs", int64_t{2}}}), {cat}))
                   g.add_output(v);
                 return g;
               }});
  c.push_back({"slice_steps", [=] {
                 return one_op("slice",
                               A({{"starts", Ints{1, -1}},
                                  {"ends", Ints{4, -100}},
                                  {"axes", Ints{0, 2}},
                                  {"steps", Ints{2, -2}}}),
                               {f32({5, 3, 7})});
               }});
  c.push_back({"pad_constant", [=] {
                 return one_op("pad", A({{"pads", Ints{0, 1, 2, 0, 2, 1}}, {"value", 1.5}}),
                               {f32({2, 3, 4})});
               }});
  c.push_back({"pad_reflect", [=] {
                 return one_op(
                     "pad",
                     A({{"pads", Ints{0, 0, 1, 2, 0, 0, 2, 1}}, {"mode", std::string("reflect")}}),
                     {f32({1, 2, 4, 5})});
               }});
  c.push_back({"squeeze_unsqueeze", [=] {
                 Graph g;
                 ValueId x = g.add_input("x", f32({1, 3, 1, 4}));
                 ValueId s = g.add("sq", "squeeze", A({{"axes", Ints{0, 2}}}), {x});
                 ValueId u = g.add("unsq", "unsqueeze", A({{"axes", Ints{1}}}), {s});
                 g.add_output(g.add("sq_all", "squeeze", A({}), {u}));
                 return g;
               }});
  c.push_back({"expand_tile", [=] {
                 Graph g;
                 ValueId x = g.add_input("x", f32({3, 1}));
                 ValueId e = g.add("e", "expand", A({{"shape", Ints{2, 3, 4}}}), {x});
                 g.add_output(g.add("t", "tile", A({{"repeats", Ints{1, 2, 1}}}), {e}));
                 return g;
               }});
  c.push_back({"gather_axis1", [=] {
                 return one_op("gather", A({{"axis", int64_t{1}}}),
                               {f32({3, 5, 2}), {{4}, DataType::Int64()}});
               }});
  c.push_back({"resize_nearest_scales", [=] {
                 return one_op("resize",
                               A({{"mode", std::string("nearest")},
                                  {"coordinate_transformation_mode", std::string("asymmetric")},
                                  {"nearest_mode", std::string("floor")},
                                  {"scales", std::vector<double>{1, 1, 2, 3}}}),
                               {f32({1, 2, 3, 4})});
               }});
  c.push_back({"resize_linear_sizes", [=] {
                 return one_op("resize",
                               A({{"mode", std::string("linear")}, {"sizes", Ints{1, 2, 5, 7}}}),
                               {f32({1, 2, 3, 4})});
               }});
  c.push_back({"lstm_bidirectional_states", [=] {
                 // X, W, R, (no B), (no sequence_lens), initial_h, initial_c
                 return one_op("lstm",
                               A({{"hidden_size", int64_t{3}},
                                  {"direction", std::string("bidirectional")},
                                  {"present", Ints{1, 1, 1, 0, 0, 1, 1}}}),
                               {f32({4, 2, 5}), f32({2, 12, 5}), f32({2, 12, 3}), f32({2, 2, 3}),
                                f32({2, 2, 3})},
                               {false, true, true, false, false});
               }});
  c.push_back({"lstm_clip_peepholes", [=] {
                 return one_op(
                     "lstm",
                     A({{"hidden_size", int64_t{2}},
                        {"clip", 0.5},
                        {"direction", std::string("reverse")},
                        {"activations", std::string("sigmoid,tanh,tanh")},
                        {"present", Ints{1, 1, 1, 1, 0, 0, 0, 1}}}),
                     {f32({3, 1, 4}), f32({1, 8, 4}), f32({1, 8, 2}), f32({1, 16}), f32({1, 6})},
                     {false, true, true, true, true});
               }});
  c.push_back({"gru_linear_before_reset", [=] {
                 return one_op(
                     "gru", A({{"hidden_size", int64_t{3}}, {"linear_before_reset", int64_t{1}}}),
                     {f32({4, 1, 2}), f32({1, 9, 2}), f32({1, 9, 3}), f32({1, 18})},
                     {false, true, true, true});
               }});
  // The reference-only ops of any spatial rank.
  c.push_back({"conv3d", [=] {
                 return one_op(
                     "conv3d", A({{"strides", Ints{1, 2, 1}}, {"pads", Ints{1, 0, 1, 0, 1, 1}}}),
                     {f32({1, 2, 4, 5, 3}), f32({3, 2, 2, 3, 2}), f32({3})}, {false, true, true});
               }});
  c.push_back({"conv1d_transpose", [=] {
                 return one_op("conv1d_transpose",
                               A({{"strides", Ints{2}}, {"output_padding", Ints{1}}}),
                               {f32({1, 2, 5}), f32({2, 3, 3})}, {false, true});
               }});
  c.push_back({"conv3d_transpose", [=] {
                 return one_op("conv3d_transpose", A({{"strides", Ints{2, 1, 2}}}),
                               {f32({1, 2, 2, 3, 2}), f32({2, 2, 2, 2, 3})}, {false, true});
               }});
  c.push_back({"max_pool3d", [=] {
                 return one_op(
                     "max_pool3d",
                     A({{"kernel_shape", Ints{2, 2, 2}}, {"pads", Ints{0, 1, 0, 1, 0, 1}}}),
                     {f32({1, 2, 3, 4, 5})});
               }});
  c.push_back({"avg_pool3d", [=] {
                 return one_op("avg_pool3d",
                               A({{"kernel_shape", Ints{2, 3, 2}}, {"strides", Ints{1, 2, 2}}}),
                               {f32({1, 2, 3, 5, 4})});
               }});
  c.push_back({"max_pool2d_with_indices", [=] {
                 return one_op("max_pool2d_with_indices",
                               A({{"kernel_shape", Ints{3, 3}},
                                  {"strides", Ints{2, 2}},
                                  {"pads", Ints{1, 1, 1, 1}},
                                  {"storage_order", int64_t{1}}}),
                               {f32({1, 2, 6, 7})});
               }});
  return c;
}

class OpExport : public ::testing::TestWithParam<OpCase> {};

TEST_P(OpExport, RoundTrips) {
  // Each case is one op (or a small chain) named by the case.
  Graph g = GetParam().build();
  round_trip(g, GetParam().name);
}

INSTANTIATE_TEST_SUITE_P(Ops, OpExport, ::testing::ValuesIn(op_cases()),
                         [](const ::testing::TestParamInfo<OpCase>& p) { return p.param.name; });

TEST(OnnxExport, NamesAreKeptAndMadeUnique) {
  // A helper initializer of the exporter would be called "r/shape": a value of that name keeps it.
  Graph g;
  ValueId x = g.add_input("input with spaces", f32({2, 3}));
  ValueId k = g.add_constant("r/shape", normal_constant({6}, 3));
  ValueId r = g.add("r", "reshape", Attrs("reshape", {{"shape", Ints{6}}}), {x});
  g.add_output(g.add("sum", "add", Attrs(), {r, k}));
  RoundTrip rt = export_and_import(g, "names");
  EXPECT_EQ(rt.model.graph().input(0).name(), "input_with_spaces");
  std::set<std::string> inits;
  for (const auto& t : rt.model.graph().initializer()) inits.insert(t.name());
  EXPECT_TRUE(inits.count("r/shape"));
  EXPECT_TRUE(inits.count("r/shape_1"));
  std::vector<NDArray> in = models::example_inputs(g);
  expect_close(graph::interpret(rt.imported, in)[0], graph::interpret(g, in)[0], 0, "names");
}

// Output names are the interface's, not the values': one value returned under two names, an
// input passed through under another, each kept by the graph passes, the ONNX export (an Identity
// per renamed output) and the import back.
TEST(OnnxExport, OutputNamesSurvivePassesAndTheRoundTrip) {
  Graph g;
  ValueId x = g.add_input("x", f32({2, 3}));
  ValueId r = g.add("r", "relu", Attrs(), {x});
  g.add_output(r, "a");
  g.add_output(r, "b");
  g.add_output(x, "c");
  EXPECT_EQ(user_error([&] { g.add_output(x, "a"); }), "graph: two outputs are named 'a'");
  const std::vector<std::string> names = {"a", "b", "c"};
  Graph optimized = graph::CompiledGraph::optimize(g, Target::host(), {});
  EXPECT_EQ(optimized.output_names(), names);
  RoundTrip rt = export_and_import(g, "output_names");
  EXPECT_EQ(rt.imported.output_names(), names);
  std::vector<NDArray> in = models::example_inputs(g);
  std::vector<NDArray> want = graph::interpret(g, in), got = graph::interpret(rt.imported, in);
  ASSERT_EQ(got.size(), 3u);
  for (size_t i = 0; i < 3; ++i) expect_close(got[i], want[i], 0, names[i]);
}

// ---- errors

TEST(OnnxExport, RefusesLayoutOpsListingEveryNode) {
  Graph g = graph::alter_layout(models::dqn(), Target::host());
  std::string msg = user_error([&] { frontend::export_onnx_bytes(g, "dqn_nchwc"); });
  EXPECT_NE(msg.find("dqn_nchwc"), std::string::npos) << msg;
  EXPECT_NE(msg.find("without an ONNX form"), std::string::npos) << msg;
  // Every such op and node is named (the three convolutions, the layout transforms).
  for (const graph::Node& n : g.nodes()) {
    if (n.op.find("nchwc") == std::string::npos && n.op != "layout_transform") continue;
    EXPECT_NE(msg.find(n.op + ":"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'" + n.name + "'"), std::string::npos) << n.name << "\n" << msg;
  }
}

TEST(OnnxExport, RefusesAnNchwcNode) {
  Graph g;
  ValueId x = g.add_input("x", f32({1, 16, 4, 4}));
  ValueId y = g.add("to_blocked", "layout_transform",
                    Attrs("layout_transform", {{"src_layout", std::string("NCHW")},
                                               {"dst_layout", std::string("NCHW8c")}}),
                    {x});
  g.add_output(g.add("relu", "relu", Attrs(), {y}));
  std::string msg = user_error([&] { frontend::export_onnx_bytes(g); });
  EXPECT_NE(msg.find("layout_transform: 'to_blocked'"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("relu"), std::string::npos) << msg;
}

TEST(OnnxExport, RefusesDilatedAveragePool) {
  Graph g = one_op("avg_pool2d",
                   Attrs("avg_pool2d", {{"kernel_shape", Ints{2, 2}}, {"dilations", Ints{2, 2}}}),
                   {f32({1, 1, 6, 6})});
  std::string msg = user_error([&] { frontend::export_onnx_bytes(g, "pool"); });
  EXPECT_NE(msg.find("node 'avg_pool2d_node' (avg_pool2d)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("dilations"), std::string::npos) << msg;
}

TEST(OnnxExport, UnwritablePathIsNamed) {
  std::string msg =
      user_error([&] { frontend::export_onnx(models::dqn(), "/nonexistent-dir/dqn.onnx", "dqn"); });
  EXPECT_NE(msg.find("/nonexistent-dir/dqn.onnx"), std::string::npos) << msg;
}

}  // namespace
}  // namespace anvil
