// The graph IR: operator nodes over typed tensor values, in topological order.
//
// A Graph owns its values (graph inputs, constants it holds, node outputs) and its nodes. Values
// and nodes are named by dense integer ids; every node's inputs are values defined before it, so
// the node list is always a topological order. Nodes name a registered operator (anvil/ops/op.h),
// which gives each node its output types (shape inference at add_node, errors naming the node),
// its fusion pattern, its compute and schedules and its reference implementation.
//
// Passes do not edit a graph in place: they build a new one (GraphRewriter copies what a pass
// leaves alone), which keeps every graph valid and printable between passes.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "anvil/ops/op.h"
#include "anvil/runtime/ndarray.h"

namespace anvil::graph {

using ValueId = int32_t;
using NodeId = int32_t;

enum class ValueKind { kInput, kConstant, kNodeOutput };

struct Value {
  std::string name;  // unique in the graph
  ops::TensorType type;
  ValueKind kind = ValueKind::kNodeOutput;
  NodeId node = -1;       // kNodeOutput: the producing node
  int32_t output = 0;     // kNodeOutput: which of its outputs
  runtime::NDArray data;  // kConstant: the contents (shape and dtype equal `type`)
};

class Graph;

struct Node {
  std::string name;  // unique in the graph (the ONNX node name, or generated); used in errors
  std::string op;    // a registered operator
  ops::Attrs attrs;
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
  // Control flow (if, loop, scan: control_flow.h): the bodies, graphs of their own whose inputs
  // are the values the node passes them (outer values they read included). Shared and immutable:
  // a pass that copies the node keeps them; each body is optimized when it is compiled.
  std::vector<std::shared_ptr<const Graph>> bodies;
};

class Graph {
 public:
  // A graph input of the given type. Names must be unique among values.
  ValueId add_input(const std::string& name, ops::TensorType type);
  // A constant the graph holds (weights, folded values).
  ValueId add_constant(const std::string& name, runtime::NDArray data);
  // A node applying `op` to `inputs`; its outputs' types come from the op's shape rule (an error
  // names the node, the op and the input types when it rejects them). Output values are named
  // `output_names[i]` when given, else "<node name>:<i>" (":0" dropped for single outputs).
  // A control-flow op takes its `bodies`, from which its output types come.
  std::vector<ValueId> add_node(const std::string& name, const std::string& op, ops::Attrs attrs,
                                const std::vector<ValueId>& inputs,
                                const std::vector<std::string>& output_names = {},
                                std::vector<std::shared_ptr<const Graph>> bodies = {});
  // Single-output convenience.
  ValueId add(const std::string& name, const std::string& op, ops::Attrs attrs,
              const std::vector<ValueId>& inputs);
  // Marks a value as a graph output (in order), named `name` in the model's interface (empty:
  // the value's name). Output names are unique; one value may be several outputs (an ONNX graph
  // that returns the same tensor twice, or an input passed through `Identity`), each with its own
  // name, which passes keep even when they rename or replace the value.
  void add_output(ValueId v, const std::string& name = "");

  const Value& value(ValueId v) const;
  const Node& node(NodeId n) const;
  size_t num_values() const { return values_.size(); }
  size_t num_nodes() const { return nodes_.size(); }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<ValueId>& inputs() const { return inputs_; }
  const std::vector<ValueId>& outputs() const { return outputs_; }
  const std::vector<std::string>& output_names() const { return output_names_; }
  // The value named `name`, or -1.
  ValueId find(const std::string& name) const;
  // The nodes reading each value (computed on demand).
  std::vector<std::vector<NodeId>> users() const;
  // A name not yet used by any value or node, from `base` ("base", "base_1", ...).
  std::string unique_name(const std::string& base) const;

  // Readable text: one line per input, constant (type only), node and output.
  std::string str() const;

 private:
  ValueId new_value(Value v);

  std::vector<Value> values_;
  std::vector<Node> nodes_;
  std::vector<ValueId> inputs_, outputs_;
  std::vector<std::string> output_names_;  // one per output
  std::map<std::string, ValueId> value_names_;
  std::map<std::string, NodeId> node_names_;
  // unique_name's first suffix worth trying per base: names are never removed, so every smaller
  // one is taken (keeps a graph of n nodes named alike linear to build, not quadratic).
  mutable std::map<std::string, int> next_suffix_;
};

// The type of a host array, a copy of one, and the check every runner of a graph makes of its
// inputs (one per graph input, in order; errors name the input and what was expected and start
// with `caller`).
ops::TensorType type_of(const runtime::NDArray& a);
runtime::NDArray copy_of(const runtime::NDArray& a);
void check_inputs(const Graph& g, const std::vector<runtime::NDArray>& inputs, const char* caller);

// Helps a pass build a new graph from an old one: map() gives the new value for an old one;
// copy_node() re-adds an old node on the mapped inputs; copy_inputs/outputs carry the graph's
// interface over. A pass replaces a node by calling out().add(...) and set()ting the old outputs
// to the new values.
class GraphRewriter {
 public:
  explicit GraphRewriter(const Graph& old);
  const Graph& old() const { return old_; }
  Graph& out() { return out_; }
  // The new value of an old one: inputs are carried over at construction, constants on first
  // use (so unused ones disappear), node outputs once their node was copied or set(); an internal
  // error otherwise.
  ValueId map(ValueId old_value);
  bool mapped(ValueId old_value) const;
  void set(ValueId old_value, ValueId new_value);
  // Re-adds an old node, unchanged, on the mapped inputs.
  void copy_node(NodeId n);
  // Adds the old graph's outputs (mapped) to the new graph and returns it.
  Graph finish();

 private:
  const Graph& old_;
  Graph out_;
  std::vector<ValueId> map_;
};

}  // namespace anvil::graph
