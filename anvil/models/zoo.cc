// The zoo's table: model names to builders.
#include <utility>

#include "anvil/models/builder.h"
#include "anvil/models/models.h"
#include "anvil/support/error.h"

namespace anvil::models {

namespace {

using BuildFn = graph::Graph (*)(uint32_t);

const std::vector<std::pair<std::string, BuildFn>>& table() {
  static const std::vector<std::pair<std::string, BuildFn>> models = {
      {"resnet18", resnet18},
      {"mobilenet_v1", mobilenet_v1},
      {"mobilenet_v2", mobilenet_v2},
      {"lstm_lm", lstm_lm},
      {"dqn", dqn},
      {"dcgan", dcgan},
  };
  return models;
}

}  // namespace

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const auto& [name, fn] : table()) names.push_back(name);
  return names;
}

graph::Graph build_model(const std::string& name, uint32_t seed) {
  for (const auto& [known, fn] : table())
    if (known == name) return fn(seed);
  std::string names;
  for (const auto& [known, fn] : table()) names += (names.empty() ? "" : ", ") + known;
  ANVIL_FAIL("unknown model '", name, "'; the built-in models are: ", names);
}

std::vector<runtime::NDArray> example_inputs(const graph::Graph& g, uint32_t seed,
                                             int64_t index_bound) {
  ANVIL_CHECK(index_bound >= 1, "example_inputs: index_bound must be positive, got ", index_bound);
  detail::Rng rng(0x5EEDu + seed);
  std::vector<runtime::NDArray> inputs;
  for (graph::ValueId v : g.inputs()) {
    const graph::Value& in = g.value(v);
    runtime::NDArray a = runtime::NDArray::empty(in.type.shape, ops::to_dlpack(in.type.dtype));
    ir::DataType t = in.type.dtype;
    for (int64_t i = 0; i < a.numel(); ++i) {
      int64_t id = static_cast<int64_t>(rng.next() % static_cast<uint64_t>(index_bound));
      if (t == ir::DataType::Float32()) {
        a.data_as<float>()[i] = static_cast<float>(rng.normal());
      } else if (t == ir::DataType::Int64()) {
        a.data_as<int64_t>()[i] = id;
      } else if (t == ir::DataType::Int32()) {
        a.data_as<int32_t>()[i] = static_cast<int32_t>(id);
      } else {
        ANVIL_FAIL("example_inputs: input '", in.name, "' has type ", ops::to_string(in.type),
                   "; only float32, int32 and int64 inputs are generated");
      }
    }
    inputs.push_back(std::move(a));
  }
  return inputs;
}

}  // namespace anvil::models
