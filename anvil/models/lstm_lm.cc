// The LSTM language model of the TVM paper's evaluation (Zaremba et al.'s medium model, as
// PyTorch's word_language_model builds it): vocabulary 10,000, embedding 650, two LSTM layers of
// 650 hidden units, 35 time steps, batch 1, and a dense decoder back to the vocabulary.
//
//   "tokens" int64[35, 1] -> "encoder" gather from "encoder.weight" [10000, 650] -> [35, 1, 650]
//   -> "rnn.0" lstm (W, R, B: "rnn.0.W" [1, 2600, 650], "rnn.0.R" [1, 2600, 650], "rnn.0.B"
//   [1, 5200]; zero initial states) -> Y [35, 1, 1, 650] -> "rnn.0.reshape" [35, 1, 650]
//   -> "rnn.1" lstm -> "rnn.1.reshape" [35, 650] -> "decoder" dense -> "logits" float32[35, 10000]
//
// Only Y of each lstm is used; its Y_h and Y_c outputs ("rnn.<i>:1", ":2") are left unused (dead
// code for the graph passes to remove).
#include <cmath>

#include "anvil/models/builder.h"
#include "anvil/models/models.h"

namespace anvil::models {

using detail::Builder;
using graph::ValueId;

namespace {

constexpr int64_t kSteps = 35, kVocab = 10000, kEmbed = 650, kHidden = 650;

// One forward lstm layer over x [steps, 1, input]; returns Y [steps, 1, 1, hidden].
ValueId lstm_layer(Builder& b, const std::string& name, ValueId x) {
  int64_t input = b.type(x).shape[2];
  double k = 1.0 / std::sqrt(static_cast<double>(kHidden));
  ValueId w = b.uniform(name + ".W", {1, 4 * kHidden, input}, -k, k);
  ValueId r = b.uniform(name + ".R", {1, 4 * kHidden, kHidden}, -k, k);
  ValueId bias = b.uniform(name + ".B", {1, 8 * kHidden}, -k, k);
  std::vector<ValueId> outs = b.graph().add_node(
      name, "lstm", ops::Attrs("lstm", {{"hidden_size", kHidden}}), {x, w, r, bias});
  return outs[0];
}

}  // namespace

graph::Graph lstm_lm(uint32_t seed) {
  Builder b("lstm_lm", seed);
  ValueId tokens = b.input("tokens", {{kSteps, 1}, ir::DataType::Int64()});
  ValueId table = b.uniform("encoder.weight", {kVocab, kEmbed}, -0.1, 0.1);
  ValueId x =
      b.node("encoder", "gather", ops::Attrs("gather", {{"axis", int64_t{0}}}), {table, tokens});
  x = b.reshape("rnn.0.reshape", lstm_layer(b, "rnn.0", x), {kSteps, 1, kHidden});
  x = b.reshape("rnn.1.reshape", lstm_layer(b, "rnn.1", x), {kSteps, kHidden});
  b.output(b.dense("decoder", x, kVocab, "logits"));
  return b.finish();
}

}  // namespace anvil::models
