#include "anvil/graph/graph.h"

#include <cstring>
#include <sstream>

#include "anvil/graph/control_flow.h"
#include "anvil/support/error.h"

namespace anvil::graph {

namespace {

std::string attr_str(const ops::AttrValue& v) {
  std::ostringstream os;
  if (auto* i = std::get_if<int64_t>(&v)) {
    os << *i;
  } else if (auto* d = std::get_if<double>(&v)) {
    os << *d;
  } else if (auto* is = std::get_if<std::vector<int64_t>>(&v)) {
    os << ops::list_str(*is);
  } else if (auto* ds = std::get_if<std::vector<double>>(&v)) {
    os << "[";
    for (size_t k = 0; k < ds->size(); ++k) os << (k ? ", " : "") << (*ds)[k];
    os << "]";
  } else {
    os << '"' << std::get<std::string>(v) << '"';
  }
  return os.str();
}

std::string input_names(const Graph& g) {
  std::string s;
  for (size_t i = 0; i < g.inputs().size(); ++i)
    s += (i ? ", " : "") + ("'" + g.value(g.inputs()[i]).name + "'");
  return s;
}
}  // namespace

ops::TensorType type_of(const runtime::NDArray& a) {
  return {a.shape(), ops::from_dlpack(a.dtype())};
}

runtime::NDArray copy_of(const runtime::NDArray& a) {
  runtime::NDArray c = runtime::NDArray::empty(a.shape(), a.dtype());
  if (a.nbytes() > 0) std::memcpy(c.data(), a.data(), a.nbytes());
  return c;
}

void check_inputs(const Graph& g, const std::vector<runtime::NDArray>& inputs, const char* caller) {
  ANVIL_CHECK(inputs.size() == g.inputs().size(), caller, ": the graph has ", g.inputs().size(),
              " input(s) (", input_names(g), "), but ", inputs.size(), " were given");
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value& v = g.value(g.inputs()[i]);
    ANVIL_CHECK(inputs[i].defined(), "input '", v.name, "': expected ", ops::to_string(v.type),
                ", got an undefined array");
    ops::TensorType got = type_of(inputs[i]);
    ANVIL_CHECK(got == v.type, "input '", v.name, "': expected ", ops::to_string(v.type), ", got ",
                ops::to_string(got));
  }
}

ValueId Graph::new_value(Value v) {
  ANVIL_CHECK(!v.name.empty(), "graph: a value needs a name");
  ANVIL_CHECK(!value_names_.count(v.name), "graph: value name '", v.name, "' is already used");
  ValueId id = static_cast<ValueId>(values_.size());
  value_names_[v.name] = id;
  values_.push_back(std::move(v));
  return id;
}

ValueId Graph::add_input(const std::string& name, ops::TensorType type) {
  Value v;
  v.name = name;
  v.type = std::move(type);
  v.kind = ValueKind::kInput;
  ValueId id = new_value(std::move(v));
  inputs_.push_back(id);
  return id;
}

ValueId Graph::add_constant(const std::string& name, runtime::NDArray data) {
  ANVIL_CHECK(data.defined(), "graph: constant '", name, "' has no data");
  Value v;
  v.name = name;
  v.type = {data.shape(), ops::from_dlpack(data.dtype())};
  v.kind = ValueKind::kConstant;
  v.data = std::move(data);
  return new_value(std::move(v));
}

std::vector<ValueId> Graph::add_node(const std::string& name, const std::string& op,
                                     ops::Attrs attrs, const std::vector<ValueId>& inputs,
                                     const std::vector<std::string>& output_names,
                                     std::vector<std::shared_ptr<const Graph>> bodies) {
  ANVIL_CHECK(!name.empty(), "graph: a node applying '", op, "' needs a name");
  ANVIL_CHECK(!node_names_.count(name), "graph: node name '", name, "' is already used");
  std::vector<ops::TensorType> in_types;
  for (ValueId v : inputs) {
    ANVIL_CHECK(v >= 0 && static_cast<size_t>(v) < values_.size(), "graph: node '", name,
                "' reads value ", v, ", which is not defined");
    in_types.push_back(values_[v].type);
  }
  const ops::OpDef& def = ops::lookup(op);
  ops::Attrs named(op, attrs.values());
  std::vector<ops::TensorType> out_types;
  try {
    if (is_control_flow(op)) {
      check_attrs(def, named);
      out_types = control_output_types(named, in_types, bodies);
    } else {
      ANVIL_CHECK(bodies.empty(), "only control-flow ops (if, loop, scan) take bodies");
      out_types = def.infer(in_types, named);
    }
  } catch (const Error& e) {
    std::string types;
    for (size_t i = 0; i < in_types.size(); ++i)
      types += (i ? ", " : "") + values_[inputs[i]].name + ": " + ops::to_string(in_types[i]);
    ANVIL_FAIL("node '", name, "' (", op, " of ", types, "): ", e.what());
  }
  ANVIL_CHECK(output_names.empty() || output_names.size() == out_types.size(), "graph: node '",
              name, "' (", op, ") has ", out_types.size(), " outputs but ", output_names.size(),
              " output names");
  NodeId id = static_cast<NodeId>(nodes_.size());
  Node n;
  n.name = name;
  n.op = op;
  n.attrs = std::move(named);
  n.inputs = inputs;
  n.bodies = std::move(bodies);
  for (size_t i = 0; i < out_types.size(); ++i) {
    Value v;
    v.name = !output_names.empty()   ? output_names[i]
             : out_types.size() == 1 ? name
                                     : name + ":" + std::to_string(i);
    v.type = out_types[i];
    v.kind = ValueKind::kNodeOutput;
    v.node = id;
    v.output = static_cast<int32_t>(i);
    n.outputs.push_back(new_value(std::move(v)));
  }
  node_names_[name] = id;
  nodes_.push_back(std::move(n));
  return nodes_.back().outputs;
}

ValueId Graph::add(const std::string& name, const std::string& op, ops::Attrs attrs,
                   const std::vector<ValueId>& inputs) {
  std::vector<ValueId> outs = add_node(name, op, std::move(attrs), inputs);
  ANVIL_CHECK(outs.size() == 1, "graph: node '", name, "' (", op, ") has ", outs.size(),
              " outputs; use add_node");
  return outs[0];
}

void Graph::add_output(ValueId v, const std::string& name) {
  ANVIL_CHECK(v >= 0 && static_cast<size_t>(v) < values_.size(), "graph: output value ", v,
              " is not defined");
  std::string n = name.empty() ? values_[v].name : name;
  for (const std::string& o : output_names_)
    ANVIL_CHECK(o != n, "graph: two outputs are named '", n, "'");
  outputs_.push_back(v);
  output_names_.push_back(std::move(n));
}

const Value& Graph::value(ValueId v) const {
  ANVIL_ICHECK(v >= 0 && static_cast<size_t>(v) < values_.size(), "graph: no value ", v);
  return values_[v];
}

const Node& Graph::node(NodeId n) const {
  ANVIL_ICHECK(n >= 0 && static_cast<size_t>(n) < nodes_.size(), "graph: no node ", n);
  return nodes_[n];
}

ValueId Graph::find(const std::string& name) const {
  auto it = value_names_.find(name);
  return it == value_names_.end() ? -1 : it->second;
}

std::vector<std::vector<NodeId>> Graph::users() const {
  std::vector<std::vector<NodeId>> u(values_.size());
  for (size_t n = 0; n < nodes_.size(); ++n)
    for (ValueId v : nodes_[n].inputs) u[v].push_back(static_cast<NodeId>(n));
  return u;
}

std::string Graph::unique_name(const std::string& base) const {
  auto used = [&](const std::string& s) { return value_names_.count(s) || node_names_.count(s); };
  if (!used(base)) return base;
  for (int& i = next_suffix_.try_emplace(base, 1).first->second;; ++i) {
    std::string s = base + "_" + std::to_string(i);
    if (!used(s)) return s;
  }
}

std::string Graph::str() const {
  std::ostringstream os;
  for (ValueId v : inputs_)
    os << "input %" << values_[v].name << ": " << ops::to_string(values_[v].type) << "\n";
  for (const Value& v : values_)
    if (v.kind == ValueKind::kConstant)
      os << "const %" << v.name << ": " << ops::to_string(v.type) << "\n";
  for (const Node& n : nodes_) {
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      const Value& v = values_[n.outputs[i]];
      os << (i ? ", " : "") << "%" << v.name << ": " << ops::to_string(v.type);
    }
    os << " = " << n.op << "(";
    for (size_t i = 0; i < n.inputs.size(); ++i)
      os << (i ? ", " : "") << "%" << values_[n.inputs[i]].name;
    os << ")";
    if (!n.attrs.values().empty()) {
      os << " {";
      bool first = true;
      for (const auto& [k, a] : n.attrs.values()) {
        os << (first ? "" : ", ") << k << "=" << attr_str(a);
        first = false;
      }
      os << "}";
    }
    os << "  # " << n.name << "\n";
    // Bodies indented under their node.
    for (size_t b = 0; b < n.bodies.size(); ++b) {
      std::istringstream body(n.bodies[b]->str());
      os << "  body " << b << ":\n";
      for (std::string line; std::getline(body, line);) os << "    " << line << "\n";
    }
  }
  os << "outputs";
  for (size_t i = 0; i < outputs_.size(); ++i) {
    os << (i ? ", " : " ") << "%" << values_[outputs_[i]].name;
    if (output_names_[i] != values_[outputs_[i]].name) os << " as '" << output_names_[i] << "'";
  }
  os << "\n";
  return os.str();
}

GraphRewriter::GraphRewriter(const Graph& old) : old_(old), map_(old.num_values(), -1) {
  for (ValueId v : old.inputs()) map_[v] = out_.add_input(old.value(v).name, old.value(v).type);
}

ValueId GraphRewriter::map(ValueId old_value) {
  ANVIL_ICHECK(old_value >= 0 && static_cast<size_t>(old_value) < map_.size(),
               "graph rewrite: no value ", old_value);
  if (map_[old_value] < 0 && old_.value(old_value).kind == ValueKind::kConstant) {
    const Value& c = old_.value(old_value);
    map_[old_value] = out_.add_constant(out_.unique_name(c.name), c.data);
  }
  ANVIL_ICHECK(map_[old_value] >= 0, "graph rewrite: value '", old_.value(old_value).name,
               "' used before it was defined");
  return map_[old_value];
}

bool GraphRewriter::mapped(ValueId old_value) const {
  return old_value >= 0 && static_cast<size_t>(old_value) < map_.size() && map_[old_value] >= 0;
}

void GraphRewriter::set(ValueId old_value, ValueId new_value) {
  ANVIL_ICHECK(old_value >= 0 && static_cast<size_t>(old_value) < map_.size(),
               "graph rewrite: no value ", old_value);
  map_[old_value] = new_value;
}

void GraphRewriter::copy_node(NodeId n) {
  const Node& node = old_.node(n);
  std::vector<ValueId> ins;
  for (ValueId v : node.inputs) ins.push_back(map(v));
  std::vector<std::string> names;
  for (ValueId v : node.outputs) names.push_back(out_.unique_name(old_.value(v).name));
  std::vector<ValueId> outs =
      out_.add_node(out_.unique_name(node.name), node.op, node.attrs, ins, names, node.bodies);
  for (size_t i = 0; i < outs.size(); ++i) map_[node.outputs[i]] = outs[i];
}

Graph GraphRewriter::finish() {
  for (size_t i = 0; i < old_.outputs().size(); ++i)
    out_.add_output(map(old_.outputs()[i]), old_.output_names()[i]);
  return std::move(out_);
}

}  // namespace anvil::graph
