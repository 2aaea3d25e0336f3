// What recurrent.cc (attributes, shapes, reference, registration) and recurrent_compute.cc
// (tensor expressions and schedule) share: the parsed form of an lstm or gru node.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "anvil/ops/op.h"

namespace anvil::ops::recurrent {

// ONNX input positions; attribute 'present' says which of them the node's inputs are.
enum Input : int { kX = 0, kW, kR, kB, kSequenceLens, kInitialH, kInitialC, kP, kNumInputs };

struct Rnn {
  std::string op;  // "lstm" or "gru"
  bool lstm = true;
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, dirs = 1;
  int64_t gates = 4;  // 4 (lstm: i, o, f, c) or 3 (gru: z, r, h)
  std::string direction = "forward";
  // Position in the node's inputs of each ONNX input, -1 when absent.
  int index[kNumInputs] = {-1, -1, -1, -1, -1, -1, -1, -1};
  std::optional<double> clip;
  bool input_forget = false;         // lstm
  bool linear_before_reset = false;  // gru
  // lstm attribute packed_weights = 1: W and R arrive packed into panels of 16 gate rows,
  // [dirs, ceil(G/16), I or H, 16] (dense_pack_weight), as alter_layout packs constant weights.
  bool packed = false;
  // Attribute gpu_form = 1: products as plain reductions over the unpacked weights, an lstm
  // step's cell and hidden states as one stage (see recurrent_compute.cc); alter_layout sets it
  // for GPU targets.
  bool gpu_form = false;
  bool has(Input i) const { return index[i] >= 0; }
  bool reversed(int64_t d) const { return direction == "reverse" || d == 1; }
};

// Validates attributes and input types; messages name the op and the attribute or input.
Rnn analyze(const std::string& op, const std::vector<TensorType>& in, const Attrs& attrs);

std::vector<te::Tensor> rnn_compute(const Rnn& r, const std::vector<te::Tensor>& in);
// `config` overrides knobs of rnn_space.
void rnn_schedule_x86(const std::string& op, te::Schedule& s, const Target& target,
                      const Config& config);
// The GPU schedule (recurrent_gpu.cc): the default one, each lstm step with a previous state in
// one kernel; `config` overrides knobs of rnn_space_gpu (gpu_default_space's, and for an lstm in
// the GPU form "step_units" and "step_lanes").
void rnn_schedule_gpu(const std::string& op, te::Schedule& s, const std::vector<te::Tensor>& outs,
                      const Target& target, const Config& config);
ConfigSpace rnn_space_gpu(const Rnn& r, const std::vector<TensorType>& in, const Attrs& attrs,
                          const Target& target);
// The role of stage `t` of op `op`: its name without the "<op>_" prefix and the "_d<d>_t<t>"
// suffix ("state", "gemvsum", "Y"); empty for a tensor that is not one of the op's stages.
std::string stage_role(const std::string& op, const te::Tensor& t);

// The knobs of the two products, each dense's panel-product knobs (tile_m, tile_n, k_unroll,
// parallel; the rule's values first) under a prefix: "xw_" for the input projection of every
// step, "step_" for the recurrent products of each step (one configuration for all of them).
// Only products on the packed path have knobs; none in the GPU form.
ConfigSpace rnn_space(const Rnn& r, const Target& target);

}  // namespace anvil::ops::recurrent
