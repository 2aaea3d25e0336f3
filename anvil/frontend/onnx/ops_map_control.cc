// ONNX If, Loop and Scan: their bodies become graphs of their own (graph/control_flow.h says how
// a control-flow node and its bodies correspond). A body reads values of the graphs around it by
// name: a constant is copied into the body (so that it folds there), anything else becomes one
// more body input, and the node passes the outer value (a capture).
#include <algorithm>
#include <memory>
#include <optional>
#include <utility>

#include "anvil/frontend/onnx/importer_internal.h"
#include "anvil/graph/control_flow.h"
#include "anvil/support/error.h"

namespace anvil::frontend::onnx_detail {

namespace {

using ir::DataType;
using Vals = std::vector<ValueId>;

struct Body {
  std::shared_ptr<const graph::Graph> graph;
  Vals captures;  // values of the enclosing graph, passed after the formal inputs
};

// Converts the graph attribute `attr` of the node being converted into a body whose formal inputs
// have the types `formal` (the node's operands decide them, whatever the body declares).
Body convert_body(Ctx& c, const char* attr, const std::vector<ops::TensorType>& formal) {
  const ::onnx::AttributeProto* a = c.attr(attr);
  ANVIL_CHECK(a && a->has_g(), "attribute '", attr, "' (a graph) is missing");
  const ::onnx::GraphProto& gp = a->g();
  ANVIL_CHECK(static_cast<size_t>(gp.input_size()) == formal.size(), "the body '", attr,
              "' declares ", gp.input_size(), " inputs, the node passes it ", formal.size());
  Ctx b(c.origin() + ", " + attr + " of node '" + c.name() + "'", c.opset(), c.memory_cap());
  for (int k = 0; k < gp.input_size(); ++k) {
    const std::string& name = gp.input(k).name();
    ANVIL_CHECK(!b.env.count(name), "the body '", attr, "' has two inputs named '", name, "'");
    b.env[name] = b.g.add_input(b.g.unique_name(name), formal[static_cast<size_t>(k)]);
  }
  for (const ::onnx::TensorProto& t : gp.initializer()) {
    std::string what = "initializer '" + t.name() + "'";
    b.check_size(what, declared_type(t, what), true);
    b.env[t.name()] = b.g.add_constant(b.g.unique_name(t.name()), to_ndarray(t, what));
  }
  Body body;
  const graph::Graph& outer_graph = c.g;
  b.outer = [&b, &c, &outer_graph, &body](const std::string& name) -> ValueId {
    ValueId v = c.lookup(name);
    if (v < 0) return -1;
    const graph::Value& val = outer_graph.value(v);
    ValueId here = val.kind == graph::ValueKind::kConstant
                       ? b.g.add_constant(b.g.unique_name(name), val.data)
                       : b.g.add_input(b.g.unique_name(name), val.type);
    if (val.kind != graph::ValueKind::kConstant) body.captures.push_back(v);
    b.env[name] = here;
    return here;
  };
  convert_nodes(b, gp);
  for (const ::onnx::ValueInfoProto& o : gp.output()) {
    ValueId v = b.lookup(o.name());
    ANVIL_CHECK(v >= 0, "the body '", attr, "' never computes its output '", o.name(), "'");
    b.g.add_output(v, o.name());
  }
  body.graph = std::make_shared<const graph::Graph>(std::move(b.g));
  return body;
}

// The graph names of the node's outputs.
std::vector<std::string> output_names(Ctx& c, size_t count) {
  std::vector<std::string> names;
  for (size_t k = 0; k < count; ++k) {
    std::string o = static_cast<int>(k) < c.node().output_size() ? c.node().output(k) : "";
    names.push_back(c.g.unique_name(o.empty() ? c.name() + ":" + std::to_string(k) : o));
  }
  return names;
}

size_t num_outputs(const Body& b) {
  return b.graph->outputs().size();
}

// The If of a condition known at compile time: the taken branch's nodes, inlined.
Vals inline_if(Ctx& c, bool taken) {
  const char* attr = taken ? "then_branch" : "else_branch";
  const ::onnx::AttributeProto* br = c.attr(attr);
  ANVIL_CHECK(br && br->has_g(), "attribute '", attr, "' is missing");
  const ::onnx::GraphProto& g = br->g();
  const ::onnx::NodeProto* node = &c.node();
  std::string name = c.name();
  for (const ::onnx::TensorProto& t : g.initializer()) {
    std::string what = "initializer '" + t.name() + "'";
    c.check_size(what, declared_type(t, what), true);
    c.env[t.name()] = c.g.add_constant(c.g.unique_name(t.name()), to_ndarray(t, what));
  }
  convert_nodes(c, g);
  c.begin(node, name);
  Vals outs;
  for (const ::onnx::ValueInfoProto& o : g.output()) {
    ValueId v = c.lookup(o.name());
    ANVIL_CHECK(v >= 0, "branch output '", o.name(), "' is never computed");
    outs.push_back(v);
  }
  return outs;
}

// Normalizes negative axes against ranks.
std::vector<int64_t> normalized(std::vector<int64_t> axes, const std::vector<int64_t>& ranks,
                                const char* what) {
  for (size_t k = 0; k < axes.size(); ++k) {
    int64_t r = k < ranks.size() ? ranks[k] : 0;
    ANVIL_CHECK(axes[k] >= -r && axes[k] < r, what, "[", k, "] = ", axes[k],
                " is out of range for rank ", r);
    if (axes[k] < 0) axes[k] += r;
  }
  return axes;
}

// A scan of opset 9 or later on these states and scan inputs (the node's own attributes).
Vals scan9(Ctx& c, const Vals& states, const Vals& scans, const std::string& node_name,
           const std::vector<std::string>& names) {
  size_t n = states.size(), m = scans.size();
  std::vector<int64_t> in_ranks;
  for (ValueId x : scans) in_ranks.push_back(static_cast<int64_t>(c.g.value(x).type.shape.size()));
  std::vector<int64_t> in_axes = c.attr_ints("scan_input_axes");
  in_axes = normalized(in_axes.empty() ? std::vector<int64_t>(m, 0) : in_axes, in_ranks,
                       "scan_input_axes");
  ANVIL_CHECK(in_axes.size() == m, "scan_input_axes has ", in_axes.size(), " entries for ", m,
              " scan inputs");
  std::vector<ops::TensorType> formal;
  for (ValueId v : states) formal.push_back(c.g.value(v).type);
  for (size_t k = 0; k < m; ++k) {
    ops::TensorType t = c.g.value(scans[k]).type;
    t.shape.erase(t.shape.begin() + in_axes[k]);
    formal.push_back(t);
  }
  Body body = convert_body(c, "body", formal);
  size_t k_out = num_outputs(body) - std::min(num_outputs(body), n);
  std::vector<int64_t> out_ranks;
  for (size_t k = 0; k < k_out; ++k)
    out_ranks.push_back(
        static_cast<int64_t>(body.graph->value(body.graph->outputs()[n + k]).type.shape.size()) +
        1);
  std::vector<int64_t> out_axes = c.attr_ints("scan_output_axes");
  out_axes = normalized(out_axes.empty() ? std::vector<int64_t>(k_out, 0) : out_axes, out_ranks,
                        "scan_output_axes");
  std::vector<int64_t> in_dirs = c.attr_ints("scan_input_directions");
  std::vector<int64_t> out_dirs = c.attr_ints("scan_output_directions");
  Vals ins = states;
  ins.insert(ins.end(), scans.begin(), scans.end());
  ins.insert(ins.end(), body.captures.begin(), body.captures.end());
  ops::Attrs attrs("scan", {{"num_carried", static_cast<int64_t>(n)},
                            {"num_scan_inputs", static_cast<int64_t>(m)},
                            {"scan_input_axes", in_axes},
                            {"scan_input_directions", in_dirs},
                            {"scan_output_axes", out_axes},
                            {"scan_output_directions", out_dirs}});
  Vals outs = c.g.add_node(c.g.unique_name(node_name), "scan", attrs, ins, names, {body.graph});
  for (size_t k = n; k < outs.size(); ++k)  // the steps times the body's output
    c.check_size(str("scan output ", k - n), c.g.value(outs[k]).type, false);
  return outs;
}

// A run-time integer value as base + offset, seen through the ops that keep a single integer
// (unsqueeze, squeeze, reshape, identity) and additions or subtractions of a constant: equal
// bases tell how far apart two run-time values are at compile time.
std::pair<ValueId, int64_t> affine_form(const graph::Graph& g, ValueId v) {
  int64_t offset = 0;
  for (;;) {
    const graph::Value& val = g.value(v);
    if (val.kind != graph::ValueKind::kNodeOutput) break;
    const graph::Node& n = g.node(val.node);
    auto scalar_const = [&](ValueId u) -> std::optional<int64_t> {
      const graph::Value& w = g.value(u);
      if (w.kind != graph::ValueKind::kConstant || w.data.numel() != 1) return std::nullopt;
      DataType t = ops::from_dlpack(w.data.dtype());
      if (t == DataType::Int64()) return w.data.data_as<int64_t>()[0];
      if (t == DataType::Int32()) return w.data.data_as<int32_t>()[0];
      return std::nullopt;
    };
    if (n.op == "unsqueeze" || n.op == "squeeze" || n.op == "reshape" || n.op == "identity") {
      v = n.inputs[0];
    } else if (n.op == "add" && scalar_const(n.inputs[1]) &&
               !__builtin_add_overflow(offset, *scalar_const(n.inputs[1]), &offset)) {
      v = n.inputs[0];
    } else if (n.op == "add" && scalar_const(n.inputs[0]) &&
               !__builtin_add_overflow(offset, *scalar_const(n.inputs[0]), &offset)) {
      v = n.inputs[1];
    } else if (n.op == "sub" && scalar_const(n.inputs[1]) &&
               !__builtin_sub_overflow(offset, *scalar_const(n.inputs[1]), &offset)) {
      v = n.inputs[0];
    } else {
      break;
    }
  }
  return {v, offset};
}

}  // namespace

// Whether Slice's start is computed at run time, on one axis, and its end is that start plus a
// constant (x[i : i + k], as exporters write a loop's i-th row): map_dynamic_slice takes it.
bool is_dynamic_slice(const Ctx& c) {
  if (c.opset() < 10 || !c.has_in(1) || !c.has_in(2)) return false;
  ValueId starts = c.in(1), ends = c.in(2);
  if (c.is_const(starts) && c.is_const(ends)) return false;
  auto single = [&](ValueId v) {
    const ops::TensorType& t = c.g.value(v).type;
    return t.shape.size() == 1 && t.shape[0] == 1;
  };
  return single(starts) && single(ends) &&
         affine_form(c.g, starts).first == affine_form(c.g, ends).first;
}

// The slice is_dynamic_slice accepts: a gather of the k indices start, start + step, ... . Its
// length is known; where it would run past the axis (a shorter result in ONNX), the indices are
// clamped to the axis before the gather.
Vals map_dynamic_slice(Ctx& c) {
  ValueId starts = c.in(1), ends = c.in(2);
  int64_t so = affine_form(c.g, starts).second, eo = affine_form(c.g, ends).second;
  std::vector<int64_t> axes = c.has_in(3) ? c.ints_in(3, "axes") : std::vector<int64_t>{0};
  std::vector<int64_t> steps = c.has_in(4) ? c.ints_in(4, "steps") : std::vector<int64_t>{1};
  ANVIL_CHECK(axes.size() == 1 && steps.size() == 1, "axes and steps must name the one axis of ",
              "the run-time start, got ", axes.size(), " and ", steps.size(), " values");
  int64_t axis = axes[0], step = steps[0];
  const std::vector<int64_t>& shape = c.type(0).shape;
  int64_t rank = static_cast<int64_t>(shape.size());
  ANVIL_CHECK(axis >= -rank && axis < rank, "axis ", axis, " is out of range for rank ", rank);
  if (axis < 0) axis += rank;
  ANVIL_CHECK(step > 0, "a run-time start with step ", step, " is not supported (only positive)");
  int64_t delta = 0;  // end - start, clamped to the axis (an overflow is past it)
  int64_t dim = shape[static_cast<size_t>(axis)];
  if (__builtin_sub_overflow(eo, so, &delta)) delta = eo > so ? dim : 0;
  delta = std::clamp<int64_t>(delta, 0, dim);
  int64_t length = std::min(dim, (delta + step - 1) / step);
  DataType it = c.g.value(starts).type.dtype;
  runtime::NDArray offsets = runtime::NDArray::empty({length}, ops::to_dlpack(it));
  for (int64_t k = 0; k < length; ++k) {
    if (it == DataType::Int64())
      offsets.data_as<int64_t>()[k] = k * step;
    else
      offsets.data_as<int32_t>()[k] = static_cast<int32_t>(k * step);
  }
  ValueId indices =
      c.emit1("add", ops::Attrs("add", {}), {starts, c.constant(c.name() + "_offsets", offsets)});
  // Clamped into [-dim, dim - 1] here: gather refuses an index outside it at run time.
  auto bound = [&](const char* which, int64_t v) {
    runtime::NDArray b = runtime::NDArray::empty({1}, ops::to_dlpack(it));
    if (it == DataType::Int64())
      b.data_as<int64_t>()[0] = v;
    else
      b.data_as<int32_t>()[0] = static_cast<int32_t>(v);
    return c.constant(c.name() + which, b);
  };
  indices = c.emit1("maximum", ops::Attrs("maximum", {}), {indices, bound("_low", -dim)});
  indices = c.emit1("minimum", ops::Attrs("minimum", {}), {indices, bound("_high", dim - 1)});
  return {c.emit1("gather", ops::Attrs("gather", {{"axis", axis}}), {c.in(0), indices}, true)};
}

Vals map_if(Ctx& c) {
  ValueId cond = c.in(0);
  if (c.is_const(cond)) {
    const runtime::NDArray& v = c.g.value(cond).data;
    ANVIL_CHECK(v.numel() == 1, "input 'cond' must hold one element, got shape ",
                ops::list_str(v.shape()));
    return inline_if(c, runtime::truth_of(v));
  }
  Body then_body = convert_body(c, "then_branch", {});
  Body else_body = convert_body(c, "else_branch", {});
  Vals ins = {cond};
  ins.insert(ins.end(), then_body.captures.begin(), then_body.captures.end());
  ins.insert(ins.end(), else_body.captures.begin(), else_body.captures.end());
  ops::Attrs attrs("if", {{"then_inputs", static_cast<int64_t>(then_body.captures.size())}});
  return c.g.add_node(c.g.unique_name(c.name()), "if", attrs, ins,
                      output_names(c, num_outputs(then_body)), {then_body.graph, else_body.graph});
}

Vals map_loop(Ctx& c) {
  bool has_trip = c.has_in(0), has_cond = c.has_in(1);
  Vals carried;
  for (int i = 2; i < c.num_in(); ++i) carried.push_back(c.in(i));
  std::vector<ops::TensorType> formal = {{{}, ir::DataType::Int64()}, {{}, ir::DataType::Bool()}};
  for (ValueId v : carried) formal.push_back(c.g.value(v).type);
  Body body = convert_body(c, "body", formal);
  size_t n = carried.size();
  ANVIL_CHECK(num_outputs(body) >= 1 + n, "the body gives ", num_outputs(body),
              " outputs, fewer than cond and ", n, " loop-carried values");
  size_t k_out = num_outputs(body) - 1 - n;
  int64_t bound = -1;
  if (k_out > 0) {
    // A scan output holds one value per iteration: its length, the trip count, must be known.
    ANVIL_CHECK(has_trip, "its ", k_out,
                " scan output(s) hold one value per iteration, but the loop has no trip count "
                "(input M), so their length is known only at run time, which is not supported");
    bound = std::max<int64_t>(
        0, c.int_scalar_in(0, "M, the trip count, which is the length of the scan outputs"));
  }
  Vals ins;
  if (has_trip) ins.push_back(c.in(0));
  if (has_cond) ins.push_back(c.in(1));
  ins.insert(ins.end(), carried.begin(), carried.end());
  ins.insert(ins.end(), body.captures.begin(), body.captures.end());
  ops::Attrs attrs("loop", {{"has_trip_count", int64_t{has_trip}},
                            {"has_cond", int64_t{has_cond}},
                            {"num_carried", static_cast<int64_t>(n)},
                            {"trip_bound", bound}});
  Vals outs = c.g.add_node(c.g.unique_name(c.name()), "loop", attrs, ins,
                           output_names(c, n + k_out), {body.graph});
  for (size_t k = n; k < outs.size(); ++k)  // the trip count times the body's output
    c.check_size(str("scan output ", k - n), c.g.value(outs[k]).type, false);
  return outs;
}

Vals map_scan(Ctx& c) {
  int64_t m = c.attr_int("num_scan_inputs", -1);
  ANVIL_CHECK(m > 0, "attribute 'num_scan_inputs' must be positive, got ", m);
  if (c.opset() >= 9) {
    ANVIL_CHECK(c.num_in() >= m, "the node has ", c.num_in(), " inputs, fewer than its ", m,
                " scan inputs");
    Vals states, scans;
    for (int i = 0; i < c.num_in(); ++i) (i < c.num_in() - m ? states : scans).push_back(c.in(i));
    size_t outs = static_cast<size_t>(c.node().output_size());
    return scan9(c, states, scans, c.name(), output_names(c, outs));
  }
  // Opset 8: an optional sequence_lens, then states and scan inputs with a leading batch axis
  // (the scan axis is 1). Each batch entry is a scan of its own; their results are stacked.
  ANVIL_CHECK(!c.has_in(0), "input 'sequence_lens' (opset 8) is not supported");
  ANVIL_CHECK(!c.has_attr("directions") ||
                  c.attr_ints("directions") == std::vector<int64_t>(static_cast<size_t>(m), 0),
              "attribute 'directions' (opset 8) other than forward is not supported");
  Vals states, scans;
  for (int i = 1; i < c.num_in(); ++i) (i < c.num_in() - m ? states : scans).push_back(c.in(i));
  Vals all = states;
  all.insert(all.end(), scans.begin(), scans.end());
  ANVIL_CHECK(!all.empty() && !c.g.value(all[0]).type.shape.empty(),
              "the inputs need a batch axis");
  int64_t batch = c.g.value(all[0]).type.shape[0];
  // One scan per batch entry: a larger batch is a model no one writes, and would take as
  // many bodies.
  constexpr int64_t kMaxBatch = 64;
  ANVIL_CHECK(batch <= kMaxBatch, "a batch of ", batch, " (opset 8) is more than the ", kMaxBatch,
              " scans it would become");
  for (ValueId v : all)
    ANVIL_CHECK(!c.g.value(v).type.shape.empty() && c.g.value(v).type.shape[0] == batch, "input '",
                c.g.value(v).name, "' does not have the batch size ", batch);
  // Per batch entry: the entry's states and scan inputs (the batch axis dropped), scanned along
  // axis 0, and each output given its batch axis back.
  size_t outs = static_cast<size_t>(c.node().output_size());
  std::vector<Vals> per_output(outs);
  auto take = [&](ValueId v, int64_t b) {
    ValueId s = c.emit1("slice",
                        ops::Attrs("slice", {{"starts", std::vector<int64_t>{b}},
                                             {"ends", std::vector<int64_t>{b + 1}},
                                             {"axes", std::vector<int64_t>{0}}}),
                        {v});
    return c.emit1("squeeze", ops::Attrs("squeeze", {{"axes", std::vector<int64_t>{0}}}), {s});
  };
  for (int64_t b = 0; b < batch; ++b) {
    Vals st, sc;
    for (ValueId v : states) st.push_back(take(v, b));
    for (ValueId v : scans) sc.push_back(take(v, b));
    std::vector<std::string> names;
    for (size_t k = 0; k < outs; ++k)
      names.push_back(
          c.g.unique_name(c.name() + "_batch" + std::to_string(b) + ":" + std::to_string(k)));
    Vals r = scan9(c, st, sc, c.name() + "_batch" + std::to_string(b), names);
    for (size_t k = 0; k < r.size(); ++k)
      per_output[k].push_back(c.emit1(
          "unsqueeze", ops::Attrs("unsqueeze", {{"axes", std::vector<int64_t>{0}}}), {r[k]}));
  }
  Vals results;
  for (size_t k = 0; k < outs; ++k)
    results.push_back(
        per_output[k].size() == 1
            ? per_output[k][0]
            : c.emit1("concat", ops::Attrs("concat", {{"axis", int64_t{0}}}), per_output[k]));
  return results;
}

}  // namespace anvil::frontend::onnx_detail
