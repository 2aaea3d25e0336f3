// Floating-point operation counts of graph nodes: with the measured peak (anvil/target/peak.h), the
// two halves of "GFLOP/s and fraction of peak" in `anvil run --profile` and the benchmarks.
//
// The count is the arithmetic the operator defines, from its input and output types and
// attributes, never what a particular kernel happens to execute:
//   - convolutions count the direct convolution, 2 FLOP (multiply and add) per tap:
//       conv1d/2d/3d            2 * |out| * C/group * prod(kernel)
//       conv*_transpose         2 * |x| * O/group * prod(kernel) (every input element scattered)
//       conv2d_nchwc            2 * |out| * C * KH * KW       (C = the blocked, padded channels)
//       depthwise_conv2d_nchwc  2 * |out| * KH * KW
//       conv2d_winograd_nchwc   2 * |out| * C * 9: the direct count, as everyone reports it, so a
//                               Winograd kernel can run above the machine's "peak"
//       conv2d_transpose_nchwc  2 * |x| * O * KH * KW (O = the blocked output channels)
//     plus one per output element for a bias input;
//   - matrix products: 2 * |out| * K (dense, dense_packed, matmul, batch_matmul), plus the bias;
//   - lstm / gru: every gate's products, input and recurrent, for every step and direction:
//     2 * seq * batch * (|W| + |R|) (the gate nonlinearities are not counted);
//   - pools: one per window element per output element (global pools: one per input element);
//     reductions and arg-reductions one per input element; softmax 4 per element (max, exp, sum,
//     scale); batch_norm 2 per element (scale, shift), layer_norm and instance_norm 8 (mean,
//     variance, normalize, scale and shift);
//   - every other injective operator one per output element, except data movement (reshape,
//     transpose, concat, slice, pad, gather, layout transforms, weight packing, cast, ...): 0.
// Each rule is its operator's OpDef::flops, beside its compute in anvil/ops/; every op with a
// compute has one (tests/ops/schema_test.cc), and op_flops refuses an op without one rather than
// guess.
#pragma once

#include <string>
#include <vector>

#include "anvil/graph/graph.h"
#include "anvil/ops/op.h"

namespace anvil::graph {

// FLOPs of one application of `op` to inputs of these types giving outputs of these types.
// Throws anvil::Error naming the op when the types do not have the ranks the op requires, or when
// the op has no FLOP rule.
double op_flops(const std::string& op, const std::vector<ops::TensorType>& inputs,
                const std::vector<ops::TensorType>& outputs, const ops::Attrs& attrs);
// FLOPs of node `n` of `g` (its error names the node).
double node_flops(const Graph& g, NodeId n);
// The sum over every node.
double graph_flops(const Graph& g);

}  // namespace anvil::graph
