// Graph passes. Each takes a graph and returns a new one (or an analysis of it); run_passes
// applies a list in order and can print the graph after any of them.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "anvil/graph/graph.h"
#include "anvil/ops/op.h"
#include "anvil/target/target.h"

namespace anvil::graph {

// A configuration chosen per operator instance (its op, input types and attributes), as tuning
// records supply them (anvil/autotune/records.h); nullopt: the default rule.
using ConfigFn = std::function<std::optional<ops::Config>(
    const std::string& op, const std::vector<ops::TensorType>& inputs, const ops::Attrs& attrs)>;

// Inference simplification: batch_norm (and scalar mul/add scales) folded into the preceding
// conv2d / dense weights and bias; dropout and identity removed; convolution taps that read only
// padding cut; the GELU exporters spell out (0.5 x (1 + erf(x / sqrt 2))) made one gelu.
Graph simplify_inference(const Graph& g);
// float16 computed in float32 by the ops that declare float16_via_float32 (convolutions, dense,
// pooling, normalization, reductions): each such op reads float32 casts of its float16 inputs
// (float16 constants converted here) and its outputs are cast back to float16, so the float32
// kernels, layouts and packed weights serve it and the casts fuse into neighbouring kernels.
// Runs first: the passes after it see float32 weights.
Graph widen_float16(const Graph& g);
// Dilated convolutions whose taps mostly read padding (a dilation about as large as the map) cut
// into bands of outputs that read the same taps, where the target's balance of multiplies and
// weight streaming says the bands cost less (CPU targets).
Graph cut_conv_bands(const Graph& g, const Target& target);
// Nodes whose inputs are all constants evaluated (with the operators' references) and replaced
// by constants.
Graph fold_constants(const Graph& g);
// Nodes whose outputs reach no graph output removed.
Graph eliminate_dead_code(const Graph& g);
// Identical nodes (same op, attributes and inputs) merged.
Graph eliminate_common_subexpressions(const Graph& g);
// Convolution chains moved to NCHW[x]c (anvil/ops/nchwc.h), the block chosen per layer, with
// layout_transform nodes only at the boundaries and weights packed by constant folding. For a
// GPU target the layout stays NCHW and only 3x3 convolutions move to Winograd (conv2d_winograd,
// ops::prefer_winograd_gpu), their weights transformed by constant folding, and lstm and gru
// take their GPU form (gpu_form). On a CPU, `algorithm_for` (when given) may override the default
// rule's algorithm of a conv2d with a point of ops::conv2d_algorithm_space (direct or a Winograd
// tile); asked only for the convolutions where that space is not empty.
Graph alter_layout(const Graph& g, const Target& target, const ConfigFn& algorithm_for = {});

// Fusion (the TVM paper's rules): every node in exactly one group, groups in topological order.
struct FusedGroup {
  std::vector<NodeId> nodes;     // in topological order; the last computes the group's output(s)
  NodeId anchor = -1;            // the complex-out-fusable or reduction node whose schedule the
                                 // group uses; -1 for a purely injective group
  std::vector<ValueId> inputs;   // values read from outside the group (graph inputs, constants,
                                 // other groups' outputs), in first-use order
  std::vector<ValueId> outputs;  // values used outside the group or graph outputs
};
// With `enabled` false every node is its own group (the ablation switch).
std::vector<FusedGroup> fuse(const Graph& g, bool enabled = true);

// Static memory planning over the fused groups' intermediate values (not graph inputs, outputs
// or constants): values whose lifetimes do not overlap share storage.
struct MemoryPlan {
  std::vector<int64_t> offset;  // per value id: byte offset in the arena, -1 when not planned
  int64_t planned_bytes = 0;    // the arena's size
  int64_t unplanned_bytes = 0;  // the sum of the planned values' sizes (one buffer each)
};
MemoryPlan plan_memory(const Graph& g, const std::vector<FusedGroup>& groups);

// A named pass for run_passes.
struct Pass {
  std::string name;
  std::function<Graph(const Graph&)> run;
};
// Applies `passes` in order; prints the graph (Graph::str) to stderr after each pass named in
// `print_after` ("all" prints after every pass).
Graph run_passes(const Graph& g, const std::vector<Pass>& passes,
                 const std::vector<std::string>& print_after = {});

}  // namespace anvil::graph
