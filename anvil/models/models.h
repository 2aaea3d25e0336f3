// The built-in models ("the zoo"): the TVM paper's workloads built with the graph API from seeded
// random weights, so that every part of Anvil can be run and compared on real network shapes
// without downloading anything.
//
// Common conventions: batch 1, NCHW, float32 (the LSTM's token ids are int64). Weights are
// deterministic functions of the seed (a fixed generator, not the standard library's
// distributions, so the same seed gives the same weights with any compiler):
//   - convolutions and dense layers: He-normal, std sqrt(2 / fan_in) (fan_in = input channels per
//     group x kernel area; for a transposed convolution the inputs that reach one output,
//     C x KH x KW / (stride_h x stride_w)); biases uniform in [-0.05, 0.05];
//   - batch_norm: gamma uniform in [0.9, 1.1], beta uniform in [-0.05, 0.05], running mean
//     uniform in [-0.05, 0.05], running variance uniform in [0.9, 1.1], epsilon 1e-5, so each
//     batch norm is close to the identity and activations keep the scale He initialization gives;
//   - embedding: uniform in [-0.1, 0.1]; LSTM weights and biases uniform in [-1/sqrt(H), 1/sqrt(H)]
//     (PyTorch's initialization).
// Convolutions followed by a batch norm have no bias input (as in torchvision); every other
// convolution and every dense layer has one. Node names follow PyTorch's module names
// ("layer1.0.conv1", "features.3.conv.0"); a node's weights are the constants
// "<node>.weight", "<node>.bias", and for batch norms also "<node>.running_mean" and
// "<node>.running_var".
//
// Interfaces (graph input -> graph output):
//   resnet18      "data" float32[1, 3, 224, 224]   -> "logits" float32[1, 1000]
//   mobilenet_v1  "data" float32[1, 3, 224, 224]   -> "logits" float32[1, 1000]  (width 1.0,
//                 relu6 as clip(0, 6))
//   mobilenet_v2  "data" float32[1, 3, 224, 224]   -> "logits" float32[1, 1000]  (width 1.0)
//   lstm_lm       "tokens" int64[35, 1]            -> "logits" float32[35, 10000]
//                 (35 steps, batch 1; embedding 650 -> lstm 650 -> lstm 650 -> dense 10000; the
//                 states start at zero; each lstm's Y [35, 1, 1, 650] is reshaped to
//                 [35, 1, 650] for the next one and to [35, 650] for the decoder)
//   dqn           "state" float32[1, 4, 84, 84]    -> "q_values" float32[1, 18]
//   dcgan         "z" float32[1, 100]              -> "image" float32[1, 3, 64, 64]  (generator;
//                 values in (-1, 1) from the final tanh)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "anvil/graph/graph.h"

namespace anvil::models {

graph::Graph resnet18(uint32_t seed = 0);
graph::Graph mobilenet_v1(uint32_t seed = 0);
graph::Graph mobilenet_v2(uint32_t seed = 0);
graph::Graph lstm_lm(uint32_t seed = 0);
graph::Graph dqn(uint32_t seed = 0);
graph::Graph dcgan(uint32_t seed = 0);

// The zoo's names, in the order above: resnet18, mobilenet_v1, mobilenet_v2, lstm_lm, dqn, dcgan.
std::vector<std::string> model_names();
// The model called `name` (one of model_names()); an error lists the known names otherwise.
graph::Graph build_model(const std::string& name, uint32_t seed = 0);

// Deterministic inputs for any graph (one per graph input, of its type): float inputs standard
// normal (an ImageNet image after normalization, a DCGAN code), integer inputs uniform in
// [0, index_bound) (token ids: the default suits lstm_lm's vocabulary).
std::vector<runtime::NDArray> example_inputs(const graph::Graph& g, uint32_t seed = 0,
                                             int64_t index_bound = 10000);

}  // namespace anvil::models
