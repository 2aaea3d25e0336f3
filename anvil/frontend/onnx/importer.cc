// The ONNX importer's frame: parsing, tensors, inputs and initializers, the node loop and the
// unsupported-op report. The op mappings are in ops_map.cc.
#include "anvil/frontend/onnx/importer.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <onnx/defs/schema.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "anvil/frontend/onnx/external_data.h"
#include "anvil/frontend/onnx/importer_internal.h"
#include "anvil/ops/host_value.h"
#include "anvil/support/error.h"

namespace anvil::frontend {

namespace onnx_detail {

using ir::DataType;

ir::DataType onnx_dtype(int32_t code, const std::string& what) {
  switch (code) {
    case ::onnx::TensorProto::FLOAT:
      return DataType::Float32();
    case ::onnx::TensorProto::DOUBLE:
      return DataType::Float(64);
    case ::onnx::TensorProto::FLOAT16:
      return DataType::Float(16);
    case ::onnx::TensorProto::INT8:
      return DataType::Int(8);
    case ::onnx::TensorProto::INT16:
      return DataType::Int(16);
    case ::onnx::TensorProto::INT32:
      return DataType::Int32();
    case ::onnx::TensorProto::INT64:
      return DataType::Int64();
    case ::onnx::TensorProto::UINT8:
      return DataType::UInt(8);
    case ::onnx::TensorProto::UINT16:
      return DataType::UInt(16);
    case ::onnx::TensorProto::UINT32:
      return DataType::UInt(32);
    case ::onnx::TensorProto::UINT64:
      return DataType::UInt(64);
    case ::onnx::TensorProto::BOOL:
      return DataType::Bool();
    default:
      break;
  }
  std::string name =
      ::onnx::TensorProto::DataType_IsValid(code)
          ? ::onnx::TensorProto::DataType_Name(static_cast<::onnx::TensorProto::DataType>(code))
          : std::to_string(code);
  throw Error(str(what, " has element type ", name,
                  ", which is not supported (float16/32/64, int8/16/32/64, uint8/16/32/64 and "
                  "bool are)"));
}

runtime::NDArray to_ndarray(const ::onnx::TensorProto& t, const std::string& what) {
  DataType dt = onnx_dtype(t.data_type(), what);
  ANVIL_CHECK(t.data_location() != ::onnx::TensorProto::EXTERNAL, what,
              " keeps its data in an external file, which only a model imported from its file "
              "(beside that data) can read");
  std::vector<int64_t> shape(t.dims().begin(), t.dims().end());
  int64_t n = 1;
  for (int64_t d : shape) {
    ANVIL_CHECK(d >= 0, what, " has a negative dimension ", ops::list_str(shape));
    ANVIL_CHECK(d == 0 || n <= INT64_MAX / d, what, " has too many elements ",
                ops::list_str(shape));
    n *= d;
  }
  size_t elem = dt.is_bool() ? 1 : static_cast<size_t>(dt.bits() / 8);
  // The count the data holds, checked before allocating (a file that is not a TensorProto can
  // parse as one with absurd dimensions).
  int64_t typed = dt == DataType::Float32()                              ? t.float_data_size()
                  : dt == DataType::Float(64)                            ? t.double_data_size()
                  : dt == DataType::Int64()                              ? t.int64_data_size()
                  : dt == DataType::UInt(64) || dt == DataType::UInt(32) ? t.uint64_data_size()
                                                                         : t.int32_data_size();
  if (t.has_raw_data()) {
    ANVIL_CHECK(n <= INT64_MAX / static_cast<int64_t>(elem) &&
                    t.raw_data().size() == static_cast<size_t>(n) * elem,
                what, " has ", t.raw_data().size(), " bytes of raw data, but ",
                ops::list_str(shape), " ", dt, " needs ", static_cast<size_t>(n) * elem);
  } else {
    ANVIL_CHECK(typed == n, what, " has ", typed, " values, but its shape ", ops::list_str(shape),
                " holds ", n);
  }
  runtime::NDArray a = runtime::NDArray::empty(shape, ops::to_dlpack(dt), true);
  if (t.has_raw_data()) {
    if (n > 0) std::memcpy(a.data(), t.raw_data().data(), t.raw_data().size());
    return a;
  }
  // The typed fields: float_data, double_data, int64_data, uint64_data (uint32 and uint64), and
  // int32_data for the rest (narrow integers, bool, and float16 as its bit pattern).
  if (dt == DataType::Float32()) {
    for (int64_t i = 0; i < n; ++i) a.data_as<float>()[i] = t.float_data(static_cast<int>(i));
  } else if (dt == DataType::Float(64)) {
    for (int64_t i = 0; i < n; ++i) a.data_as<double>()[i] = t.double_data(static_cast<int>(i));
  } else if (dt == DataType::Int64()) {
    for (int64_t i = 0; i < n; ++i) a.data_as<int64_t>()[i] = t.int64_data(static_cast<int>(i));
  } else if (dt == DataType::UInt(64)) {
    for (int64_t i = 0; i < n; ++i) a.data_as<uint64_t>()[i] = t.uint64_data(static_cast<int>(i));
  } else if (dt == DataType::UInt(32)) {
    for (int64_t i = 0; i < n; ++i)
      a.data_as<uint32_t>()[i] = static_cast<uint32_t>(t.uint64_data(static_cast<int>(i)));
  } else {
    for (int64_t i = 0; i < n; ++i) {
      int32_t v = t.int32_data(static_cast<int>(i));
      if (dt.is_bool()) {
        a.data_as<uint8_t>()[i] = v != 0;
      } else if (elem == 1) {
        a.data_as<uint8_t>()[i] = static_cast<uint8_t>(v);  // int8 and uint8 wrap alike
      } else if (elem == 2) {
        a.data_as<uint16_t>()[i] = static_cast<uint16_t>(v);  // int16, uint16, float16 bits
      } else {
        a.data_as<int32_t>()[i] = v;
      }
    }
  }
  return a;
}

// ---- Ctx

bool Ctx::has_in(int i) const {
  return i < node_->input_size() && !node_->input(i).empty();
}

ValueId Ctx::lookup(const std::string& name) const {
  auto it = env.find(name);
  if (it != env.end()) return it->second;
  return outer ? outer(name) : -1;
}

ValueId Ctx::in(int i) const {
  ANVIL_CHECK(has_in(i), "input ", i, " is missing");
  ValueId v = lookup(node_->input(i));
  ANVIL_CHECK(v >= 0, "input ", i, " '", node_->input(i),
              "' is not defined by an earlier node, an initializer or a graph input");
  return v;
}

namespace {

// The graph inputs that value `v` of `g` is computed from, by name.
std::vector<std::string> inputs_behind(const graph::Graph& g, ValueId v) {
  std::vector<bool> seen(g.num_values(), false);
  std::vector<ValueId> todo = {v};
  std::vector<std::string> names;
  while (!todo.empty()) {
    ValueId u = todo.back();
    todo.pop_back();
    if (seen[static_cast<size_t>(u)]) continue;
    seen[static_cast<size_t>(u)] = true;
    const graph::Value& val = g.value(u);
    if (val.kind == graph::ValueKind::kInput) names.push_back(val.name);
    if (val.kind == graph::ValueKind::kNodeOutput)
      for (ValueId w : g.node(val.node).inputs) todo.push_back(w);
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

const runtime::NDArray& Ctx::const_in(int i, const char* what) const {
  ValueId v = in(i);
  if (!is_const(v)) {
    // The way out: bind the graph inputs it comes from at compile time.
    std::vector<std::string> from = inputs_behind(g, v);
    std::string names, bind;
    for (const std::string& n : from) {
      names += (names.empty() ? "'" : ", '") + n + "'";
      bind += " --input-value " + n + "=FILE.npy";
    }
    throw Error(str("input ", i, " (", what, ") '", node_->input(i),
                    "' must be known at compile time (it decides a shape or attribute of the "
                    "node's output), but it is computed at run time",
                    from.empty() ? std::string()
                                 : str(" from graph input", from.size() > 1 ? "s " : " ", names,
                                       ": bind ", from.size() > 1 ? "their values" : "its value",
                                       " when compiling, anvil compile", bind,
                                       " (C++: ImportOptions::constant_inputs)")));
  }
  return g.value(v).data;
}

std::string nodes_by_op(const std::map<std::string, std::vector<std::string>>& nodes) {
  std::string s;
  for (const auto& [op, names] : nodes) {
    s += "\n  " + op + ": ";
    for (size_t i = 0; i < names.size(); ++i) {
      if (i == 8) {
        s += str(", ... (", names.size(), " nodes)");
        break;
      }
      s += (i ? ", '" : "'") + names[i] + "'";
    }
  }
  return s;
}

std::vector<int64_t> Ctx::ints_in(int i, const char* what) const {
  const runtime::NDArray& a = const_in(i, what);
  DataType dt = ops::from_dlpack(a.dtype());
  ANVIL_CHECK(dt.is_int_or_uint() || dt.is_bool(), "input ", i, " (", what,
              ") must be an integer or bool tensor, not ", dt);
  std::vector<int64_t> v(static_cast<size_t>(a.numel()));
  for (int64_t k = 0; k < a.numel(); ++k) v[static_cast<size_t>(k)] = ops::host::read_i64(a, k);
  return v;
}

std::vector<double> Ctx::floats_in(int i, const char* what) const {
  const runtime::NDArray& a = const_in(i, what);
  DataType dt = ops::from_dlpack(a.dtype());
  if (!dt.is_float()) {
    std::vector<int64_t> v = ints_in(i, what);
    return std::vector<double>(v.begin(), v.end());
  }
  ANVIL_CHECK(dt == DataType::Float32() || dt == DataType::Float(64), "input ", i, " (", what,
              ") must be float32 or float64 when it is a float, not ", dt);
  std::vector<double> v(static_cast<size_t>(a.numel()));
  for (int64_t k = 0; k < a.numel(); ++k)
    v[static_cast<size_t>(k)] = dt.bits() == 64 ? a.data_as<double>()[k] : a.data_as<float>()[k];
  return v;
}

const ::onnx::AttributeProto* Ctx::attr(const std::string& n) const {
  for (const ::onnx::AttributeProto& a : node_->attribute())
    if (a.name() == n) return &a;
  return nullptr;
}

int64_t Ctx::attr_int(const std::string& n, int64_t fallback) const {
  const ::onnx::AttributeProto* a = attr(n);
  return a ? a->i() : fallback;
}

int64_t Ctx::int_scalar_in(int i, const char* what) const {
  std::vector<int64_t> v = ints_in(i, what);
  ANVIL_CHECK(v.size() == 1, "input ", i, " (", what, ") must hold one value, not ", v.size());
  return v[0];
}

double Ctx::float_scalar_in(int i, const char* what) const {
  std::vector<double> v = floats_in(i, what);
  ANVIL_CHECK(v.size() == 1, "input ", i, " (", what, ") must hold one value, not ", v.size());
  return v[0];
}

double Ctx::attr_float(const std::string& n, double fallback) const {
  const ::onnx::AttributeProto* a = attr(n);
  return a ? a->f() : fallback;
}

std::vector<int64_t> Ctx::attr_ints(const std::string& n, std::vector<int64_t> fallback) const {
  const ::onnx::AttributeProto* a = attr(n);
  if (!a) return fallback;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

std::vector<double> Ctx::attr_floats(const std::string& n) const {
  const ::onnx::AttributeProto* a = attr(n);
  if (!a) return {};
  return std::vector<double>(a->floats().begin(), a->floats().end());
}

std::string Ctx::attr_string(const std::string& n, std::string fallback) const {
  const ::onnx::AttributeProto* a = attr(n);
  return a ? a->s() : fallback;
}

std::vector<ValueId> Ctx::emit(const std::string& op, ops::Attrs attrs,
                               const std::vector<ValueId>& inputs, bool last) {
  ops::Attrs full(op, attrs.values());
  std::vector<std::string> names;
  if (last) {
    for (const std::string& o : node_->output()) names.push_back(o.empty() ? "" : g.unique_name(o));
  }
  bool all_const = true;
  for (ValueId v : inputs) all_const = all_const && is_const(v);
  if (all_const) {
    // Evaluated now with the reference (its shape rule first: it validates the attributes).
    const ops::OpDef& def = ops::lookup(op);
    std::vector<ops::TensorType> types;
    std::vector<runtime::NDArray> args;
    for (ValueId v : inputs) {
      types.push_back(g.value(v).type);
      args.push_back(g.value(v).data);
    }
    std::vector<ops::TensorType> out_types = def.infer(types, full);
    for (size_t k = 0; k < out_types.size(); ++k)
      check_size(str("output ", k, " (folded at import)"), out_types[k], true);
    std::vector<runtime::NDArray> outs = def.reference(args, full);
    ANVIL_CHECK(outs.size() == out_types.size(), "folding ", op, ": the reference gave ",
                outs.size(), " outputs, its shape rule ", out_types.size());
    std::vector<ValueId> vals;
    for (size_t k = 0; k < outs.size(); ++k) {
      std::string base =
          k < names.size() && !names[k].empty() ? names[k] : name_ + ":" + std::to_string(k);
      vals.push_back(g.add_constant(g.unique_name(base), outs[k]));
    }
    return vals;
  }
  std::string node_name = g.unique_name(name_);
  if (names.size() > 0) {
    // The op's output count may differ from the ONNX node's (unused trailing outputs).
    std::vector<ops::TensorType> types;
    for (ValueId v : inputs) types.push_back(g.value(v).type);
    size_t n = ops::lookup(op).infer(types, full).size();
    names.resize(n);
    for (size_t k = 0; k < n; ++k)
      if (names[k].empty()) names[k] = g.unique_name(node_name + ":" + std::to_string(k));
  }
  std::vector<ValueId> outs = g.add_node(node_name, op, full, inputs, names);
  for (size_t k = 0; k < outs.size(); ++k)
    check_size(str("output ", k), g.value(outs[k]).type, false);
  return outs;
}

ValueId Ctx::constant(const std::string& base, runtime::NDArray data) {
  check_size("constant '" + base + "'", {data.shape(), ops::from_dlpack(data.dtype())}, true);
  return g.add_constant(g.unique_name(name_ + "/" + base), std::move(data));
}

namespace {

// The bytes a tensor of type `t` takes, INT64_MAX when that does not fit in an int64_t.
int64_t bytes_of(const ops::TensorType& t) {
  int64_t n = t.dtype.is_bool() ? 1 : std::max(1, t.dtype.bits() / 8);
  for (int64_t d : t.shape) {
    if (d == 0) return 0;
    if (n > INT64_MAX / d) return INT64_MAX;
    n *= d;
  }
  return n;
}

}  // namespace

ops::TensorType declared_type(const ::onnx::TensorProto& t, const std::string& what) {
  return {std::vector<int64_t>(t.dims().begin(), t.dims().end()), onnx_dtype(t.data_type(), what)};
}

void Ctx::check_size(const std::string& what, const ops::TensorType& t, bool held) {
  for (int64_t d : t.shape)
    ANVIL_CHECK(d >= 0, what, " has a negative dimension ", ops::list_str(t.shape));
  int64_t bytes = bytes_of(t);
  ANVIL_CHECK(bytes <= memory_cap_, what, " ", ops::to_string(t), " would take ",
              bytes == INT64_MAX ? std::string("more than 2^63") : std::to_string(bytes),
              " bytes, over the memory cap of ", memory_cap_, " bytes");
  // An empty tensor's other dimensions count too: shape arithmetic multiplies them.
  if (bytes == 0) {
    ops::TensorType span = t;
    for (int64_t& d : span.shape) d = std::max<int64_t>(d, 1);
    int64_t span_bytes = bytes_of(span);
    ANVIL_CHECK(
        span_bytes <= memory_cap_, what, " ", ops::to_string(t),
        " is empty, but its other dimensions would take ",
        span_bytes == INT64_MAX ? std::string("more than 2^63") : std::to_string(span_bytes),
        " bytes, over the memory cap of ", memory_cap_, " bytes");
  }
  if (!held) return;
  held_bytes_ = bytes > INT64_MAX - held_bytes_ ? INT64_MAX : held_bytes_ + bytes;
  ANVIL_CHECK(held_bytes_ <= memory_cap_, what, " ", ops::to_string(t), " (", bytes,
              " bytes) brings the model's inputs and constants to ", held_bytes_,
              " bytes, over the memory cap of ", memory_cap_, " bytes");
}

ValueId Ctx::scalar_f32(const std::string& base, float v) {
  runtime::NDArray a = runtime::NDArray::empty({}, ops::to_dlpack(DataType::Float32()));
  a.data_as<float>()[0] = v;
  return constant(base, a);
}

// ---- the node loop

void convert_nodes(Ctx& ctx, const ::onnx::GraphProto& gp) {
  const std::map<std::string, MapFn>& table = op_table();
  for (int k = 0; k < gp.node_size(); ++k) {
    const ::onnx::NodeProto& node = gp.node(k);
    std::string name = node.name().empty() ? node.op_type() + "_" + std::to_string(k) : node.name();
    ctx.begin(&node, name);
    std::vector<ValueId> outs;
    try {
      ANVIL_CHECK(node.output_size() > 0, "the node has no outputs");
      // In a body, the values of the graphs around it that the node reads become this graph's
      // (captures) now, not while it is mapped: a capture adds a value, which would move the
      // values a mapping holds references to.
      for (const std::string& in : node.input())
        if (!in.empty()) ctx.lookup(in);
      outs = table.at(node.op_type())(ctx);
      for (int o = 0; o < node.output_size(); ++o) {
        if (node.output(o).empty()) continue;
        ValueId v = static_cast<size_t>(o) < outs.size() ? outs[static_cast<size_t>(o)] : -1;
        ANVIL_CHECK(v >= 0, "output ", o, " '", node.output(o), "' is not supported");
        ctx.env[node.output(o)] = v;
      }
    } catch (const InternalError&) {
      throw;
    } catch (const Error& e) {
      throw Error(str(ctx.origin(), ": node '", name, "' (", node.op_type(), "): ", e.what()));
    } catch (const std::bad_alloc&) {
      throw;  // out of memory: not a bug in the mapping
    } catch (const std::exception& e) {
      // A check missing from a mapping or a shape rule: a bug, reported as one, with the node.
      throw InternalError(str(ctx.origin(), ": node '", name, "' (", node.op_type(),
                              "): internal error while converting it: ", e.what()));
    }
  }
}

namespace {

// Subgraphs (If branches) nested deeper than this are refused: the importer converts them
// recursively.
constexpr int kMaxSubgraphDepth = 64;

// Every node of `g` and of its subgraphs whose op type is not mapped: op type -> node names.
// Refuses subgraphs nested more than kMaxSubgraphDepth deep.
void find_unsupported(const std::string& origin, const ::onnx::GraphProto& g,
                      std::map<std::string, std::vector<std::string>>& missing, int depth = 0) {
  const std::map<std::string, MapFn>& table = op_table();
  for (int k = 0; k < g.node_size(); ++k) {
    const ::onnx::NodeProto& n = g.node(k);
    bool default_domain = n.domain().empty() || n.domain() == "ai.onnx";
    std::string type = default_domain ? n.op_type() : n.domain() + "." + n.op_type();
    if (!default_domain || table.count(n.op_type()) == 0)
      missing[type].push_back(n.name().empty() ? n.op_type() + "_" + std::to_string(k) : n.name());
    bool nests = false;
    for (const ::onnx::AttributeProto& a : n.attribute()) nests |= a.has_g() || a.graphs_size() > 0;
    ANVIL_CHECK(!nests || depth < kMaxSubgraphDepth, origin, ": node '",
                n.name().empty() ? n.op_type() + "_" + std::to_string(k) : n.name(), "' (",
                n.op_type(), ") nests subgraphs more than ", kMaxSubgraphDepth, " deep");
    for (const ::onnx::AttributeProto& a : n.attribute()) {
      if (a.has_g()) find_unsupported(origin, a.g(), missing, depth + 1);
      for (const ::onnx::GraphProto& sub : a.graphs())
        find_unsupported(origin, sub, missing, depth + 1);
    }
  }
}

std::string dims_str(const std::vector<int64_t>& d) {
  std::string s;
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "x" : "") + std::to_string(d[i]);
  return s;
}

// The static type of graph input `vi`, with symbolic dimensions bound from the options.
ops::TensorType input_type(const std::string& origin, const ::onnx::ValueInfoProto& vi,
                           const ImportOptions& options) {
  const std::string what = str(origin, ": input '", vi.name(), "'");
  ANVIL_CHECK(vi.type().has_tensor_type(), what, " is not a tensor");
  const ::onnx::TypeProto::Tensor& tt = vi.type().tensor_type();
  ops::TensorType t;
  t.dtype = onnx_dtype(tt.elem_type(), what);
  auto bound = options.input_shapes.find(vi.name());
  ANVIL_CHECK(tt.has_shape() || bound != options.input_shapes.end(), what,
              " has no shape in the model; bind it with --input-shape ", vi.name(), "=DIMS");
  if (!tt.has_shape()) {
    t.shape = bound->second;
    return t;
  }
  const ::onnx::TensorShapeProto& sp = tt.shape();
  if (bound != options.input_shapes.end()) {
    ANVIL_CHECK(static_cast<int>(bound->second.size()) == sp.dim_size(), what, " has rank ",
                sp.dim_size(), ", but its bound shape ", dims_str(bound->second), " has rank ",
                bound->second.size());
  }
  for (int d = 0; d < sp.dim_size(); ++d) {
    const ::onnx::TensorShapeProto::Dimension& dim = sp.dim(d);
    if (bound != options.input_shapes.end()) {
      int64_t b = bound->second[static_cast<size_t>(d)];
      ANVIL_CHECK(b >= 0, what, ": bound dimension ", d, " is negative (", b, ")");
      ANVIL_CHECK(!dim.has_dim_value() || dim.dim_value() == b, what, ": dimension ", d, " is ",
                  dim.dim_value(), " in the model, but bound to ", b);
      t.shape.push_back(b);
    } else {
      std::string sym = dim.has_dim_param() ? "'" + dim.dim_param() + "'" : "unknown";
      ANVIL_CHECK(dim.has_dim_value(), what, ": dimension ", d, " (", sym,
                  ") is symbolic; bind the input's shape with --input-shape ", vi.name(),
                  "=DIMS (ImportOptions::input_shapes)");
      t.shape.push_back(dim.dim_value());
    }
  }
  return t;
}

graph::Graph convert(const ::onnx::ModelProto& model, const ImportOptions& options,
                     const std::string& origin) {
  ANVIL_CHECK(model.has_graph(), origin, ": the model has no graph");
  int64_t opset = 0;
  for (const ::onnx::OperatorSetIdProto& o : model.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  }
  if (opset == 0) opset = 1;  // IR version 2 models have no opset_import: opset 1
  // Opsets 7 through 17 (and 18's axes-as-inputs). Older models are read on a best-effort basis:
  // the differences that matter for the mapped ops are the binary ops' legacy broadcast
  // attributes, PRelu's per-channel slope and Concat's default axis (all handled) and
  // BatchNormalization's 'spatial' (checked).
  ANVIL_CHECK(opset >= 1 && opset <= 18, origin, ": opset ", opset,
              " is not supported (opsets 1 through 18 are; 7 through 17 are the target)");
  const ::onnx::GraphProto& gp = model.graph();

  std::map<std::string, std::vector<std::string>> missing;
  find_unsupported(origin, gp, missing);
  if (!missing.empty()) {
    throw Error(
        str(origin, ": unsupported operators (", missing.size(), "):", nodes_by_op(missing)));
  }

  Ctx ctx(origin, opset, options.memory_cap);
  std::map<std::string, const ::onnx::TensorProto*> inits;
  for (const ::onnx::TensorProto& t : gp.initializer()) inits[t.name()] = &t;
  for (const auto& [name, dims] : options.input_shapes) {
    bool known = false;
    for (const ::onnx::ValueInfoProto& vi : gp.input()) known = known || vi.name() == name;
    ANVIL_CHECK(known, origin, ": --input-shape names '", name, "', which is not an input");
  }
  for (const auto& [name, value] : options.constant_inputs) {
    bool known = false;
    for (const ::onnx::ValueInfoProto& vi : gp.input())
      known = known || (vi.name() == name && !inits.count(name));
    ANVIL_CHECK(known, origin, ": --input-value names '", name, "', which is not an input");
  }
  for (const ::onnx::ValueInfoProto& vi : gp.input()) {
    if (inits.count(vi.name())) continue;  // IR < 4 lists initializers as inputs too
    auto frozen = options.constant_inputs.find(vi.name());
    if (frozen != options.constant_inputs.end()) {
      const std::string what = str(origin, ": input '", vi.name(), "'");
      ir::DataType want = onnx_dtype(vi.type().tensor_type().elem_type(), what);
      ANVIL_CHECK(ops::from_dlpack(frozen->second.dtype()) == want, what, " is ", want,
                  ", but its constant value is ", ops::from_dlpack(frozen->second.dtype()));
      ctx.check_size(what, {frozen->second.shape(), want}, true);
      ctx.env[vi.name()] = ctx.g.add_constant(vi.name(), frozen->second);
      continue;
    }
    ops::TensorType type = input_type(origin, vi, options);
    ctx.check_size(str(origin, ": input '", vi.name(), "'"), type, true);
    ctx.env[vi.name()] = ctx.g.add_input(vi.name(), type);
  }
  for (const auto& [name, t] : inits) {
    std::string what = str(origin, ": initializer '", name, "'");
    ctx.check_size(what, declared_type(*t, what), true);
    ctx.env[name] = ctx.g.add_constant(ctx.g.unique_name(name), to_ndarray(*t, what));
  }
  convert_nodes(ctx, gp);
  for (const ::onnx::ValueInfoProto& vi : gp.output()) {
    auto it = ctx.env.find(vi.name());
    ANVIL_CHECK(it != ctx.env.end(), origin, ": graph output '", vi.name(), "' is never computed");
    ctx.g.add_output(it->second, vi.name());
  }
  return std::move(ctx.g);
}

}  // namespace
}  // namespace onnx_detail

// Protobuf messages nested deeper than this do not parse (three levels per If branch).
constexpr int kMaxProtoDepth = 600;

namespace {

::onnx::ModelProto parse_model(const std::string& bytes, const std::string& origin) {
  ::onnx::ModelProto model;
  ANVIL_CHECK(!bytes.empty(), origin, ": the file is empty, not an ONNX model");
  // ELF's magic: 0x7f, then "ELF".
  const bool elf = bytes.size() >= 4 && bytes[0] == '\x7f' && bytes.compare(1, 3, "ELF") == 0;
  ANVIL_CHECK(!elf, origin,
              ": a shared library (an artifact 'anvil compile' wrote?), not an ONNX model: run an "
              "artifact with 'anvil run', describe it with 'anvil inspect'");
  // Protobuf reads at most 2 GiB; larger models keep their weights in external data files.
  ANVIL_CHECK(bytes.size() < (size_t{1} << 31), origin, ": ", bytes.size(),
              " bytes, over protobuf's 2 GiB: save the model with its weights as external data "
              "(onnx.save_model(..., save_as_external_data=True))");
  // Protobuf's own nesting limit (100 levels, about 32 If branches within each other) raised, so
  // that a deep model meets find_unsupported's clearer limit first.
  google::protobuf::io::ArrayInputStream raw(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::CodedInputStream in(&raw);
  in.SetRecursionLimit(kMaxProtoDepth);
  ANVIL_CHECK(model.ParseFromCodedStream(&in) && in.ConsumedEntireMessage(), origin,
              ": not a valid ONNX model (the protobuf does not parse: truncated, not ONNX, or "
              "nested more than ",
              kMaxProtoDepth, " messages deep)");
  return model;
}

}  // namespace

graph::Graph import_onnx_bytes(const std::string& bytes, const ImportOptions& options,
                               const std::string& origin) {
  return onnx_detail::convert(parse_model(bytes, origin), options, origin);
}

graph::Graph import_onnx(const std::string& path, const ImportOptions& options) {
  std::error_code ec;
  ANVIL_CHECK(!std::filesystem::is_directory(path, ec), path,
              ": a directory, not an ONNX file (name the .onnx file in it)");
  std::ifstream f(path, std::ios::binary);
  ANVIL_CHECK(f.good(), path, ": cannot open the file");
  std::stringstream ss;
  ss << f.rdbuf();
  ::onnx::ModelProto model = parse_model(ss.str(), path);
  onnx_detail::load_external_data(model, path, options.memory_cap);
  return onnx_detail::convert(model, options, path);
}

std::vector<std::string> mapped_onnx_ops() {
  std::vector<std::string> v;
  for (const auto& [name, fn] : onnx_detail::op_table()) v.push_back(name);
  return v;
}

std::vector<OnnxOpSupport> onnx_op_support() {
  std::vector<OnnxOpSupport> out;
  for (const std::string& op : mapped_onnx_ops()) {
    OnnxOpSupport s{op, {}};
    for (int v = 18; v >= 1;) {
      const ::onnx::OpSchema* schema = ::onnx::OpSchemaRegistry::Schema(op, v, "");
      if (!schema) break;
      s.versions.insert(s.versions.begin(), schema->since_version());
      v = schema->since_version() - 1;
    }
    out.push_back(std::move(s));
  }
  return out;
}

runtime::NDArray load_onnx_tensor(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  ANVIL_CHECK(f.good(), path, ": cannot open the file");
  std::stringstream ss;
  ss << f.rdbuf();
  ::onnx::TensorProto t;
  ANVIL_CHECK(t.ParseFromString(ss.str()), path, ": not a valid TensorProto");
  return onnx_detail::to_ndarray(t, path);
}

}  // namespace anvil::frontend
