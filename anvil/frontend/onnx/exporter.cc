// The ONNX exporter: one function per Anvil op (or family) in op_table(), each writing the ONNX
// nodes (opset 13) that compute what the op computes. The inverse of ops_map.cc for the ops it
// maps; where opset 13 has no single operator (hard_swish, gelu, layer_norm) a short chain of
// ONNX nodes that the importer maps back to the same math is written.
#include "anvil/frontend/onnx/exporter.h"

#include <onnx/onnx_pb.h>  // onnx-ml.pb.h with ONNX_ML=1 (Debian ships no onnx.pb.h)

#include <cctype>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <numbers>
#include <set>
#include <sstream>

#include "anvil/frontend/onnx/importer_internal.h"
#include "anvil/support/error.h"

namespace anvil::frontend {

namespace {

using graph::ValueId;
using ir::DataType;
using Ints = std::vector<int64_t>;

constexpr int64_t kOpset = 13;
constexpr int64_t kIrVersion = 7;  // opset 13's IR version: ONNX Runtime 1.6 and later load it

int32_t onnx_dtype(DataType t, const std::string& what) {
  using TP = ::onnx::TensorProto;
  if (t.is_bool()) return TP::BOOL;
  if (t == DataType::Float32()) return TP::FLOAT;
  if (t == DataType::Float(64)) return TP::DOUBLE;
  if (t == DataType::Float(16)) return TP::FLOAT16;
  if (t == DataType::BFloat16()) return TP::BFLOAT16;
  if (t.is_int()) {
    switch (t.bits()) {
      case 8:
        return TP::INT8;
      case 16:
        return TP::INT16;
      case 32:
        return TP::INT32;
      case 64:
        return TP::INT64;
      default:
        break;
    }
  }
  if (t.is_uint()) {
    switch (t.bits()) {
      case 8:
        return TP::UINT8;
      case 16:
        return TP::UINT16;
      case 32:
        return TP::UINT32;
      case 64:
        return TP::UINT64;
      default:
        break;
    }
  }
  throw Error(str(what, " has element type ", t, ", which has no ONNX tensor type"));
}

// ONNX names may be any string, but other tools expect printable ones: anything else becomes '_'.
std::string printable(const std::string& s) {
  std::string out = s.empty() ? std::string("_") : s;
  for (char& c : out) {
    if (c <= ' ' || c >= 127) c = '_';
  }
  return out;
}

class Exporter {
 public:
  Exporter(const graph::Graph& g, ::onnx::GraphProto* gp) : g_(g), gp_(gp) {}

  const graph::Graph& g() const { return g_; }
  const graph::Node& node() const { return *node_; }
  void begin(const graph::Node* n) { node_ = n; }

  // ---- names
  // A value name not used yet (values, initializers and helpers share one namespace).
  std::string fresh(const std::string& base) {
    std::string b = printable(base), name = b;
    for (int k = 1; !used_.insert(name).second; ++k) name = b + "_" + std::to_string(k);
    return name;
  }
  std::string fresh_node(const std::string& base) {
    std::string b = printable(base), name = b;
    for (int k = 1; !used_nodes_.insert(name).second; ++k) name = b + "_" + std::to_string(k);
    return name;
  }
  const std::string& name(ValueId v) {
    auto it = names_.find(v);
    if (it == names_.end()) it = names_.emplace(v, fresh(g_.value(v).name)).first;
    return it->second;
  }
  const ops::TensorType& type(ValueId v) const { return g_.value(v).type; }
  // The current node's i-th input and output (names and types).
  const std::string& in(size_t i) { return name(node_->inputs.at(i)); }
  const std::string& out(size_t i = 0) { return name(node_->outputs.at(i)); }
  const ops::TensorType& in_type(size_t i) const { return type(node_->inputs.at(i)); }
  const ops::TensorType& out_type(size_t i = 0) const { return type(node_->outputs.at(i)); }
  const ops::Attrs& attrs() const { return node_->attrs; }
  // A helper value named after the current node.
  std::string tmp(const std::string& what) { return fresh(node_->name + "/" + what); }

  // ---- nodes
  ::onnx::NodeProto* add(const std::string& op_type, const std::vector<std::string>& inputs,
                         const std::vector<std::string>& outputs, const std::string& part = "") {
    ::onnx::NodeProto* n = gp_->add_node();
    n->set_op_type(op_type);
    n->set_name(fresh_node(part.empty() ? node_->name : node_->name + "/" + part));
    for (const std::string& s : inputs) n->add_input(s);
    for (const std::string& s : outputs) n->add_output(s);
    return n;
  }
  // One ONNX node computing the current node's outputs from its inputs.
  ::onnx::NodeProto* same(const std::string& op_type) {
    std::vector<std::string> ins, outs;
    for (size_t i = 0; i < node_->inputs.size(); ++i) ins.push_back(in(i));
    for (size_t i = 0; i < node_->outputs.size(); ++i) outs.push_back(out(i));
    return add(op_type, ins, outs);
  }

  // ---- initializers
  std::string initializer(const std::string& name, const runtime::NDArray& a) {
    ::onnx::TensorProto* t = gp_->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx_dtype(ops::from_dlpack(a.dtype()), "constant '" + name + "'"));
    for (int64_t d : a.shape()) t->add_dims(d);
    // raw_data is little-endian, as this host's memory (x86-64, aarch64).
    if (a.nbytes() > 0) t->set_raw_data(a.data(), a.nbytes());
    return name;
  }
  std::string ints(const std::string& what, const Ints& v) {
    runtime::NDArray a = runtime::NDArray::empty({static_cast<int64_t>(v.size())},
                                                 ops::to_dlpack(DataType::Int64()));
    if (!v.empty()) std::memcpy(a.data(), v.data(), v.size() * sizeof(int64_t));
    return initializer(tmp(what), a);
  }
  // A rank-0 constant of dtype `t` holding `x` (float or integer types).
  std::string scalar(const std::string& what, DataType t, double x) {
    runtime::NDArray a = runtime::NDArray::empty({}, ops::to_dlpack(t));
    if (t == DataType::Float32()) {
      a.data_as<float>()[0] = static_cast<float>(x);
    } else if (t == DataType::Float(64)) {
      a.data_as<double>()[0] = x;
    } else if (t == DataType::Int64()) {
      a.data_as<int64_t>()[0] = static_cast<int64_t>(x);
    } else if (t == DataType::Int32()) {
      a.data_as<int32_t>()[0] = static_cast<int32_t>(x);
    } else {
      throw Error(str("a constant ", what, " of type ", t, " cannot be written"));
    }
    return initializer(tmp(what), a);
  }

 private:
  const graph::Graph& g_;
  ::onnx::GraphProto* gp_;
  const graph::Node* node_ = nullptr;
  std::map<ValueId, std::string> names_;
  std::set<std::string> used_, used_nodes_;
};

// ---- attributes

void set_int(::onnx::NodeProto* n, const std::string& name, int64_t v) {
  ::onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(v);
}
void set_float(::onnx::NodeProto* n, const std::string& name, double v) {
  ::onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::FLOAT);
  a->set_f(static_cast<float>(v));
}
void set_ints(::onnx::NodeProto* n, const std::string& name, const Ints& v) {
  ::onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
void set_string(::onnx::NodeProto* n, const std::string& name, const std::string& v) {
  ::onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::STRING);
  a->set_s(v);
}
void set_strings(::onnx::NodeProto* n, const std::string& name, const std::vector<std::string>& v) {
  ::onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::STRINGS);
  for (const std::string& s : v) a->add_strings(s);
}

// Copies the listed attributes the Anvil node has (same name, same meaning in ONNX).
void copy_ints(Exporter& e, ::onnx::NodeProto* n, std::initializer_list<const char*> names) {
  for (const char* a : names)
    if (e.attrs().has(a)) set_ints(n, a, e.attrs().get_ints(a));
}
void copy_int(Exporter& e, ::onnx::NodeProto* n, std::initializer_list<const char*> names) {
  for (const char* a : names)
    if (e.attrs().has(a)) set_int(n, a, e.attrs().get_int(a));
}
void copy_float(Exporter& e, ::onnx::NodeProto* n, std::initializer_list<const char*> names) {
  for (const char* a : names)
    if (e.attrs().has(a)) set_float(n, a, e.attrs().get_float(a));
}

int64_t rank(const ops::TensorType& t) {
  return static_cast<int64_t>(t.shape.size());
}

// ---- the ops

using ExportFn = std::function<void(Exporter&)>;

void export_conv(Exporter& e, const std::string& op_type) {
  ::onnx::NodeProto* n = e.same(op_type);
  copy_ints(e, n, {"strides", "dilations", "pads", "output_padding"});
  copy_int(e, n, {"group"});
}

void export_pool(Exporter& e, bool is_avg) {
  if (is_avg && e.attrs().has("dilations")) {
    for (int64_t d : e.attrs().get_ints("dilations"))
      ANVIL_CHECK(d == 1, "attribute 'dilations' ", ops::list_str(e.attrs().get_ints("dilations")),
                  " has no ONNX form: AveragePool takes dilations only from opset 19");
  }
  ::onnx::NodeProto* n = e.same(is_avg ? "AveragePool" : "MaxPool");
  copy_ints(e, n, {"kernel_shape", "strides", "pads"});
  if (!is_avg) copy_ints(e, n, {"dilations"});
  copy_int(e, n, {"ceil_mode"});
  if (is_avg) copy_int(e, n, {"count_include_pad"});
  if (!is_avg) copy_int(e, n, {"storage_order"});  // max_pool2d_with_indices
}

// matmul / batch_matmul: the transposed operands through Transpose nodes, then MatMul.
void export_matmul(Exporter& e) {
  std::vector<std::string> ins;
  for (size_t i = 0; i < 2; ++i) {
    const char* flag = i == 0 ? "trans_a" : "trans_b";
    if (e.attrs().get_int(flag, 0) == 0) {
      ins.push_back(e.in(i));
      continue;
    }
    int64_t r = rank(e.in_type(i));
    ANVIL_CHECK(r >= 2, "attribute '", flag, "' on an input of rank ", r);
    Ints perm;
    for (int64_t d = 0; d < r; ++d) perm.push_back(d);
    std::swap(perm[static_cast<size_t>(r - 2)], perm[static_cast<size_t>(r - 1)]);
    std::string t = e.tmp(i == 0 ? "a_transposed" : "b_transposed");
    set_ints(e.add("Transpose", {e.in(i)}, {t}, flag), "perm", perm);
    ins.push_back(t);
  }
  e.add("MatMul", ins, {e.out()});
}

void export_clip(Exporter& e) {
  DataType t = e.in_type(0).dtype;
  std::string lo = e.attrs().has("min") ? e.scalar("min", t, e.attrs().get_float("min")) : "";
  std::string hi = e.attrs().has("max") ? e.scalar("max", t, e.attrs().get_float("max")) : "";
  std::vector<std::string> ins{e.in(0), lo, hi};
  while (ins.back().empty()) ins.pop_back();
  e.add("Clip", ins, {e.out()});
}

// hard_swish (ONNX HardSwish is opset 14): x * HardSigmoid(x; 1/6, 1/2), the same formula.
void export_hard_swish(Exporter& e) {
  std::string s = e.tmp("hard_sigmoid");
  ::onnx::NodeProto* n = e.add("HardSigmoid", {e.in(0)}, {s}, "hard_sigmoid");
  set_float(n, "alpha", 1.0 / 6.0);
  set_float(n, "beta", 0.5);
  e.add("Mul", {e.in(0), s}, {e.out()});
}

// gelu (ONNX Gelu is opset 20): 0.5 x (1 + erf(x / sqrt 2)), or with approximate = "tanh"
// 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
void export_gelu(Exporter& e) {
  DataType t = e.in_type(0).dtype;
  const std::string x = e.in(0);
  std::string inner;
  if (e.attrs().get_string("approximate") == "tanh") {
    std::string x2 = e.tmp("x2"), x3 = e.tmp("x3"), c3 = e.tmp("cubic"), s = e.tmp("sum"),
                a = e.tmp("arg");
    e.add("Mul", {x, x}, {x2}, "x2");
    e.add("Mul", {x2, x}, {x3}, "x3");
    e.add("Mul", {x3, e.scalar("c", t, 0.044715)}, {c3}, "cubic");
    e.add("Add", {x, c3}, {s}, "sum");
    e.add("Mul", {s, e.scalar("sqrt_2_over_pi", t, std::sqrt(2.0 / std::numbers::pi))}, {a}, "arg");
    inner = e.tmp("tanh");
    e.add("Tanh", {a}, {inner}, "tanh");
  } else {
    std::string a = e.tmp("arg");
    e.add("Mul", {x, e.scalar("inv_sqrt2", t, 1.0 / std::sqrt(2.0))}, {a}, "arg");
    inner = e.tmp("erf");
    e.add("Erf", {a}, {inner}, "erf");
  }
  std::string p = e.tmp("one_plus"), h = e.tmp("half_x");
  e.add("Add", {inner, e.scalar("one", t, 1.0)}, {p}, "one_plus");
  e.add("Mul", {x, e.scalar("half", t, 0.5)}, {h}, "half_x");
  e.add("Mul", {h, p}, {e.out()});
}

void export_cast(Exporter& e) {
  DataType to = DataType::parse(e.attrs().get_string("to"));
  set_int(e.same("Cast"), "to", onnx_dtype(to, "attribute 'to'"));
}

void export_batch_norm(Exporter& e) {
  set_float(e.same("BatchNormalization"), "epsilon", e.attrs().get_float("epsilon"));
}

void export_instance_norm(Exporter& e) {
  set_float(e.same("InstanceNormalization"), "epsilon", e.attrs().get_float("epsilon"));
}

// layer_norm (ONNX LayerNormalization is opset 17): mean and variance over the axes from `axis`,
// (x - mean) / sqrt(var + eps) * scale (+ bias).
void export_layer_norm(Exporter& e) {
  int64_t r = rank(e.in_type(0));
  int64_t axis = e.attrs().get_int("axis");
  if (axis < 0) axis += r;
  ANVIL_CHECK(axis >= 0 && axis < r, "attribute 'axis' = ", e.attrs().get_int("axis"),
              " is out of range for rank ", r);
  Ints axes;
  for (int64_t d = axis; d < r; ++d) axes.push_back(d);
  DataType t = e.in_type(0).dtype;
  std::string mean = e.tmp("mean"), d = e.tmp("centered"), sq = e.tmp("squared"),
              var = e.tmp("variance"), ve = e.tmp("variance_eps"), sd = e.tmp("stddev"),
              nrm = e.tmp("normalized");
  auto reduce = [&](const std::string& x, const std::string& y, const std::string& part) {
    ::onnx::NodeProto* n = e.add("ReduceMean", {x}, {y}, part);
    set_ints(n, "axes", axes);
    set_int(n, "keepdims", 1);
  };
  reduce(e.in(0), mean, "mean");
  e.add("Sub", {e.in(0), mean}, {d}, "centered");
  e.add("Mul", {d, d}, {sq}, "squared");
  reduce(sq, var, "variance");
  e.add("Add", {var, e.scalar("epsilon", t, e.attrs().get_float("epsilon"))}, {ve}, "variance_eps");
  e.add("Sqrt", {ve}, {sd}, "stddev");
  e.add("Div", {d, sd}, {nrm}, "normalized");
  if (e.node().inputs.size() < 3) {
    e.add("Mul", {nrm, e.in(1)}, {e.out()});
    return;
  }
  std::string scaled = e.tmp("scaled");
  e.add("Mul", {nrm, e.in(1)}, {scaled}, "scaled");
  e.add("Add", {scaled, e.in(2)}, {e.out()});
}

// ReduceSum takes its axes as an input from opset 13, the other reductions as an attribute.
void export_reduce(Exporter& e, const std::string& op_type) {
  Ints axes = e.attrs().get_ints("axes");
  int64_t keep = e.attrs().get_int("keepdims");
  ::onnx::NodeProto* n;
  if (op_type == "ReduceSum") {
    std::vector<std::string> ins{e.in(0)};
    if (!axes.empty()) ins.push_back(e.ints("axes", axes));
    n = e.add(op_type, ins, {e.out()});
  } else {
    n = e.same(op_type);
    if (!axes.empty()) set_ints(n, "axes", axes);
  }
  set_int(n, "keepdims", keep);
}

void export_arg(Exporter& e, const std::string& op_type) {
  ::onnx::NodeProto* n = e.same(op_type);
  set_int(n, "axis", e.attrs().get_int("axis"));  // the op's defaults when absent
  set_int(n, "keepdims", e.attrs().get_int("keepdims"));
  set_int(n, "select_last_index", e.attrs().get_int("select_last_index"));
}

// reshape: the output's static shape (no -1 left to resolve; a 0 in it would copy the input's
// dimension in opset 13, which has no allowzero).
void export_reshape(Exporter& e) {
  const Ints& in = e.in_type(0).shape;
  const Ints& out = e.out_type().shape;
  for (size_t d = 0; d < out.size(); ++d) {
    ANVIL_CHECK(out[d] != 0 || (d < in.size() && in[d] == 0), "the empty output shape ",
                ops::list_str(out), " has no opset-13 Reshape form (a 0 copies the input's ",
                "dimension; allowzero is opset 14)");
  }
  e.add("Reshape", {e.in(0), e.ints("shape", e.out_type().shape)}, {e.out()});
}

void export_squeeze_like(Exporter& e, const std::string& op_type) {
  std::vector<std::string> ins{e.in(0)};
  if (e.attrs().has("axes")) ins.push_back(e.ints("axes", e.attrs().get_ints("axes")));
  e.add(op_type, ins, {e.out()});
}

// split: the sizes of the outputs, whether the node had 'split' or 'num_outputs'.
void export_split(Exporter& e) {
  int64_t r = rank(e.in_type(0));
  int64_t axis = e.attrs().get_int("axis", 0);
  if (axis < 0) axis += r;
  Ints sizes;
  for (size_t k = 0; k < e.node().outputs.size(); ++k)
    sizes.push_back(e.out_type(k).shape.at(static_cast<size_t>(axis)));
  std::vector<std::string> outs;
  for (size_t k = 0; k < e.node().outputs.size(); ++k) outs.push_back(e.out(k));
  ::onnx::NodeProto* n = e.add("Split", {e.in(0), e.ints("split", sizes)}, outs);
  set_int(n, "axis", axis);
}

void export_slice(Exporter& e) {
  std::vector<std::string> ins{e.in(0), e.ints("starts", e.attrs().get_ints("starts")),
                               e.ints("ends", e.attrs().get_ints("ends"))};
  bool steps = e.attrs().has("steps");
  if (e.attrs().has("axes") || steps) {
    Ints axes;
    if (e.attrs().has("axes")) {
      axes = e.attrs().get_ints("axes");
    } else {
      for (size_t d = 0; d < e.attrs().get_ints("starts").size(); ++d)
        axes.push_back(static_cast<int64_t>(d));
    }
    ins.push_back(e.ints("axes", axes));
  }
  if (steps) ins.push_back(e.ints("steps", e.attrs().get_ints("steps")));
  e.add("Slice", ins, {e.out()});
}

void export_pad(Exporter& e) {
  std::string mode = e.attrs().get_string("mode", "constant");
  std::vector<std::string> ins{e.in(0), e.ints("pads", e.attrs().get_ints("pads"))};
  double value = e.attrs().get_float("value", 0.0);
  if (mode == "constant" && value != 0) ins.push_back(e.scalar("value", e.in_type(0).dtype, value));
  set_string(e.add("Pad", ins, {e.out()}), "mode", mode);
}

void export_repeat(Exporter& e, const std::string& op_type, const char* attr) {
  e.add(op_type, {e.in(0), e.ints(attr, e.attrs().get_ints(attr))}, {e.out()});
}

// resize: scales (as [1, 1, sh, sw]) when the node has them, else the output's sizes.
void export_resize(Exporter& e) {
  std::string scales, sizes;
  if (e.attrs().has("scales")) {
    std::vector<double> s;
    const ops::AttrValue& v = e.attrs().values().at("scales");
    if (const auto* d = std::get_if<std::vector<double>>(&v)) {
      s = *d;
    } else {
      for (int64_t x : e.attrs().get_ints("scales")) s.push_back(static_cast<double>(x));
    }
    if (s.size() == 2) s.insert(s.begin(), {1.0, 1.0});
    runtime::NDArray a = runtime::NDArray::empty({static_cast<int64_t>(s.size())},
                                                 ops::to_dlpack(DataType::Float32()));
    for (size_t k = 0; k < s.size(); ++k) a.data_as<float>()[k] = static_cast<float>(s[k]);
    scales = e.initializer(e.tmp("scales"), a);
  } else {
    sizes = e.ints("sizes", e.out_type().shape);
  }
  std::vector<std::string> ins{e.in(0), "", scales};
  if (!sizes.empty()) ins.push_back(sizes);
  ::onnx::NodeProto* n = e.add("Resize", ins, {e.out()});
  set_string(n, "mode", e.attrs().get_string("mode", "nearest"));
  set_string(n, "coordinate_transformation_mode",
             e.attrs().get_string("coordinate_transformation_mode", "half_pixel"));
  set_string(n, "nearest_mode", e.attrs().get_string("nearest_mode", "round_prefer_floor"));
}

// lstm / gru: the library's ops have ONNX's semantics (gate orders i, o, f, c and z, r, h;
// layout 0); attribute 'present' says which of ONNX's positional inputs the node's inputs are.
void export_rnn(Exporter& e, bool lstm) {
  ANVIL_CHECK(e.attrs().get_int("packed_weights", 0) == 0,
              "attribute 'packed_weights' has no ONNX form: ONNX's LSTM takes W and R unpacked");
  size_t positions = lstm ? 8 : 6;
  Ints present = e.attrs().get_ints("present", {});
  if (!e.attrs().has("present")) present.assign(e.node().inputs.size(), 1);
  std::vector<std::string> ins;
  size_t next = 0;
  for (size_t i = 0; i < positions && i < present.size(); ++i)
    ins.push_back(present[i] ? e.in(next++) : std::string());
  while (!ins.empty() && ins.back().empty()) ins.pop_back();
  std::vector<std::string> outs;
  for (size_t k = 0; k < e.node().outputs.size(); ++k) outs.push_back(e.out(k));
  ::onnx::NodeProto* n = e.add(lstm ? "LSTM" : "GRU", ins, outs);
  set_int(n, "hidden_size", e.attrs().get_int("hidden_size"));
  set_string(n, "direction", e.attrs().get_string("direction", "forward"));
  copy_float(e, n, {"clip"});
  copy_int(e, n, {lstm ? "input_forget" : "linear_before_reset"});
  if (e.attrs().has("activations")) {
    // ONNX spells the activation functions with a capital ("Sigmoid", "Tanh").
    std::vector<std::string> acts;
    std::stringstream ss(e.attrs().get_string("activations"));
    for (std::string a; std::getline(ss, a, ',');) {
      std::string s;
      for (char c : a)
        if (c != ' ') s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
      acts.push_back(s);
    }
    set_strings(n, "activations", acts);
  }
}

const std::map<std::string, ExportFn>& op_table() {
  static const std::map<std::string, ExportFn> table = [] {
    std::map<std::string, ExportFn> t;
    for (const auto& [op, onnx_op] : std::vector<std::pair<const char*, const char*>>{
             {"relu", "Relu"},
             {"neg", "Neg"},
             {"abs", "Abs"},
             {"sigmoid", "Sigmoid"},
             {"tanh", "Tanh"},
             {"exp", "Exp"},
             {"log", "Log"},
             {"sqrt", "Sqrt"},
             {"reciprocal", "Reciprocal"},
             {"erf", "Erf"},
             {"floor", "Floor"},
             {"ceil", "Ceil"},
             {"logical_not", "Not"},
             {"add", "Add"},
             {"sub", "Sub"},
             {"mul", "Mul"},
             {"div", "Div"},
             {"pow", "Pow"},
             {"maximum", "Max"},
             {"minimum", "Min"},
             {"prelu", "PRelu"},
             {"equal", "Equal"},
             {"less", "Less"},
             {"less_equal", "LessOrEqual"},
             {"greater", "Greater"},
             {"greater_equal", "GreaterOrEqual"},
             {"logical_and", "And"},
             {"logical_or", "Or"},
             {"logical_xor", "Xor"},
             {"where", "Where"},
             {"global_avg_pool2d", "GlobalAveragePool"},
             {"global_max_pool2d", "GlobalMaxPool"},
             {"gather", "Gather"},
             {"concat", "Concat"},
             {"transpose", "Transpose"},
             {"flatten", "Flatten"},
             {"softmax", "Softmax"},
             {"log_softmax", "LogSoftmax"},
         }) {
      t[op] = [onnx_op = std::string(onnx_op)](Exporter& e) {
        ::onnx::NodeProto* n = e.same(onnx_op);
        copy_int(e, n, {"axis"});
        copy_ints(e, n, {"perm"});
      };
    }
    t["leaky_relu"] = [](Exporter& e) {
      set_float(e.same("LeakyRelu"), "alpha", e.attrs().get_float("alpha"));
    };
    t["elu"] = [](Exporter& e) { set_float(e.same("Elu"), "alpha", e.attrs().get_float("alpha")); };
    t["hard_sigmoid"] = [](Exporter& e) {
      ::onnx::NodeProto* n = e.same("HardSigmoid");
      set_float(n, "alpha", e.attrs().get_float("alpha"));  // the op's defaults when absent
      set_float(n, "beta", e.attrs().get_float("beta"));
    };
    t["hard_swish"] = export_hard_swish;
    t["gelu"] = export_gelu;
    t["clip"] = export_clip;
    t["cast"] = export_cast;
    t["conv1d"] = [](Exporter& e) { export_conv(e, "Conv"); };
    t["conv2d"] = [](Exporter& e) { export_conv(e, "Conv"); };
    t["conv2d_transpose"] = [](Exporter& e) { export_conv(e, "ConvTranspose"); };
    t["dense"] = [](Exporter& e) { set_int(e.same("Gemm"), "transB", 1); };
    t["matmul"] = export_matmul;
    t["batch_matmul"] = export_matmul;
    t["batch_norm"] = export_batch_norm;
    t["instance_norm"] = export_instance_norm;
    t["layer_norm"] = export_layer_norm;
    t["max_pool2d"] = [](Exporter& e) { export_pool(e, false); };
    t["avg_pool2d"] = [](Exporter& e) { export_pool(e, true); };
    // The reference-only ops of window_nd.cc (any spatial rank, MaxPool's indices).
    t["conv3d"] = [](Exporter& e) { export_conv(e, "Conv"); };
    t["conv1d_transpose"] = [](Exporter& e) { export_conv(e, "ConvTranspose"); };
    t["conv3d_transpose"] = [](Exporter& e) { export_conv(e, "ConvTranspose"); };
    t["max_pool3d"] = [](Exporter& e) { export_pool(e, false); };
    t["avg_pool3d"] = [](Exporter& e) { export_pool(e, true); };
    t["max_pool2d_with_indices"] = [](Exporter& e) { export_pool(e, false); };
    t["reduce_sum"] = [](Exporter& e) { export_reduce(e, "ReduceSum"); };
    t["reduce_mean"] = [](Exporter& e) { export_reduce(e, "ReduceMean"); };
    t["reduce_max"] = [](Exporter& e) { export_reduce(e, "ReduceMax"); };
    t["reduce_min"] = [](Exporter& e) { export_reduce(e, "ReduceMin"); };
    t["reduce_prod"] = [](Exporter& e) { export_reduce(e, "ReduceProd"); };
    t["argmax"] = [](Exporter& e) { export_arg(e, "ArgMax"); };
    t["argmin"] = [](Exporter& e) { export_arg(e, "ArgMin"); };
    t["reshape"] = export_reshape;
    t["squeeze"] = [](Exporter& e) { export_squeeze_like(e, "Squeeze"); };
    t["unsqueeze"] = [](Exporter& e) { export_squeeze_like(e, "Unsqueeze"); };
    t["split"] = export_split;
    t["slice"] = export_slice;
    t["pad"] = export_pad;
    t["expand"] = [](Exporter& e) { export_repeat(e, "Expand", "shape"); };
    t["tile"] = [](Exporter& e) { export_repeat(e, "Tile", "repeats"); };
    t["resize"] = export_resize;
    t["lstm"] = [](Exporter& e) { export_rnn(e, true); };
    t["gru"] = [](Exporter& e) { export_rnn(e, false); };
    return t;
  }();
  return table;
}

void set_type(::onnx::ValueInfoProto* vi, const std::string& name, const ops::TensorType& t) {
  vi->set_name(name);
  ::onnx::TypeProto::Tensor* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx_dtype(t.dtype, "value '" + name + "'"));
  ::onnx::TensorShapeProto* shape = tt->mutable_shape();
  for (int64_t d : t.shape) shape->add_dim()->set_dim_value(d);
}

::onnx::ModelProto to_model(const graph::Graph& g, const std::string& model_name) {
  // Every op without an ONNX form, with the nodes using it, in one error.
  const std::map<std::string, ExportFn>& table = op_table();
  std::map<std::string, std::vector<std::string>> missing;
  for (const graph::Node& n : g.nodes())
    if (!table.count(n.op)) missing[n.op].push_back(n.name);
  if (!missing.empty()) {
    throw Error(str("ONNX export of '", model_name, "': operators without an ONNX form (",
                    missing.size(),
                    "; the NCHW[x]c ops come from graph passes: export the graph before them):",
                    onnx_detail::nodes_by_op(missing)));
  }

  ::onnx::ModelProto model;
  model.set_ir_version(kIrVersion);
  model.set_producer_name("anvil");
  model.set_producer_version("0.1");
  ::onnx::OperatorSetIdProto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOpset);
  ::onnx::GraphProto* gp = model.mutable_graph();
  gp->set_name(model_name);

  Exporter e(g, gp);
  // Every value's name is reserved first (inputs first, so that they keep theirs exactly), so
  // the helpers' names never take one.
  for (ValueId v : g.inputs()) set_type(gp->add_input(), e.name(v), g.value(v).type);
  // Then the output names, so that they too are kept exactly: an output named otherwise than its
  // value (a value returned twice, an input passed through) is an Identity of it.
  std::vector<std::string> output_names;
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    ValueId v = g.outputs()[i];
    const std::string& name = g.output_names()[i];
    output_names.push_back(name == g.value(v).name ? e.name(v) : e.fresh(name));
  }
  for (ValueId v = 0; v < static_cast<ValueId>(g.num_values()); ++v) e.name(v);
  std::set<ValueId> outputs(g.outputs().begin(), g.outputs().end());
  for (ValueId v = 0; v < static_cast<ValueId>(g.num_values()); ++v) {
    const graph::Value& val = g.value(v);
    if (val.kind == graph::ValueKind::kConstant) e.initializer(e.name(v), val.data);
  }
  for (const graph::Node& n : g.nodes()) {
    e.begin(&n);
    try {
      table.at(n.op)(e);
    } catch (const InternalError&) {
      throw;
    } catch (const Error& err) {
      throw Error(
          str("ONNX export of '", model_name, "': node '", n.name, "' (", n.op, "): ", err.what()));
    }
    for (ValueId v : n.outputs)
      if (!outputs.count(v)) set_type(gp->add_value_info(), e.name(v), g.value(v).type);
  }
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    ValueId v = g.outputs()[i];
    if (output_names[i] != e.name(v)) {
      ::onnx::NodeProto* n = gp->add_node();
      n->set_op_type("Identity");
      n->set_name(e.fresh_node(output_names[i]));
      n->add_input(e.name(v));
      n->add_output(output_names[i]);
    }
    set_type(gp->add_output(), output_names[i], g.value(v).type);
  }
  return model;
}

}  // namespace

std::string export_onnx_bytes(const graph::Graph& g, const std::string& model_name) {
  std::string bytes;
  ANVIL_CHECK(to_model(g, model_name).SerializeToString(&bytes), "ONNX export of '", model_name,
              "': the model does not serialize (over protobuf's 2 GB limit?)");
  return bytes;
}

void export_onnx(const graph::Graph& g, const std::string& path, const std::string& model_name) {
  std::string bytes = export_onnx_bytes(g, model_name);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  ANVIL_CHECK(f.good(), path, ": cannot open the file for writing");
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  f.close();
  ANVIL_CHECK(f.good(), path, ": writing ", bytes.size(), " bytes failed");
}

}  // namespace anvil::frontend
