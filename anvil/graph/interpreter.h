// The reference interpreter: runs a graph node by node with the operators' naive reference
// implementations (OpDef::reference), without the kernel compiler. The independent oracle the
// compiled models are tested against; also what constant folding evaluates with.
#pragma once

#include <vector>

#include "anvil/graph/graph.h"

namespace anvil::graph {

// Runs `g` on `inputs` (one per graph input, in order; each checked against the input's name,
// shape and dtype, with an error naming the input and what was expected). Returns the outputs in
// order.
std::vector<runtime::NDArray> interpret(const Graph& g,
                                        const std::vector<runtime::NDArray>& inputs);

}  // namespace anvil::graph
