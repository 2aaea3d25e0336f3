// Control-flow nodes (if, loop, scan) in the graph: their output types from their bodies, their
// step description for the executor, and their evaluation by the reference interpreter. What the
// steps do is runtime/control_flow.h's; the ops' attributes are declared in ops/control.cc.
//
// A node's inputs and its bodies' inputs correspond one to one after the formal operands:
//   if:   cond, then's inputs (attribute then_inputs of them), else's inputs;
//   loop: [M], [cond], carried values, then the values the body reads from outside (captures);
//         the body's inputs: iteration number (int64 scalar), cond (bool scalar), carried values,
//         captures; its outputs: cond, carried values, scan outputs;
//   scan: states, scan inputs, captures; the body's inputs: states, one slice of each scan input,
//         captures; its outputs: states, scan outputs.
// Shapes are static: carried values and states keep their type from one iteration to the next,
// both branches of an if give the same types, and a loop's scan outputs hold trip_bound
// iterations (the trip count, known at compile time).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "anvil/graph/graph.h"
#include "anvil/runtime/control_flow.h"

namespace anvil::graph {

bool is_control_flow(const std::string& op);

// The output types of control-flow node `attrs.op()` on inputs of `inputs` types with `bodies`.
// Throws anvil::Error naming what disagrees (a body's input or output count or type).
std::vector<ops::TensorType> control_output_types(
    const ops::Attrs& attrs, const std::vector<ops::TensorType>& inputs,
    const std::vector<std::shared_ptr<const Graph>>& bodies);

// The executor's description of node `n`'s step.
runtime::ControlFlow control_step(const Node& n);

// Node `n` of `g` evaluated on `args` with its bodies run by the reference interpreter; an error
// names the node.
std::vector<runtime::NDArray> interpret_control(const Graph& g, const Node& n,
                                                const std::vector<runtime::NDArray>& args);

}  // namespace anvil::graph
