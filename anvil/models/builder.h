// What the model builders share (internal to anvil/models/): a seeded generator and layer helpers
// that add a node with its weight constants, named as models.h describes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "anvil/graph/graph.h"

namespace anvil::models::detail {

// SplitMix64: a tiny generator whose output is fully specified, so weights do not depend on the
// standard library's distribution algorithms.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next();
  // Uniform in [0, 1), 53 random bits.
  double uniform();
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  // Standard normal (Box-Muller).
  double normal();

 private:
  uint64_t state_;
  bool has_spare_ = false;
  double spare_ = 0;
};

struct ConvSpec {
  int64_t out_channels = 0;
  int64_t kernel = 1;
  int64_t stride = 1;
  int64_t pad = 0;
  int64_t group = 1;
  bool bias = false;
};

class Builder {
 public:
  // `model` salts the seed, so two models built with the same seed do not share weights.
  Builder(const std::string& model, uint32_t seed);

  graph::Graph& graph() { return g_; }
  graph::Graph finish() { return std::move(g_); }
  const ops::TensorType& type(graph::ValueId v) const { return g_.value(v).type; }
  int64_t channels(graph::ValueId v) const { return type(v).shape.at(1); }

  graph::ValueId input(const std::string& name, ops::TensorType t) { return g_.add_input(name, t); }
  void output(graph::ValueId v) { g_.add_output(v); }

  // Constants.
  graph::ValueId normal(const std::string& name, std::vector<int64_t> shape, double std);
  graph::ValueId uniform(const std::string& name, std::vector<int64_t> shape, double lo, double hi);

  // Layers. `name` is the node's name; weights are "<name>.weight" etc.
  graph::ValueId conv(const std::string& name, graph::ValueId x, const ConvSpec& c);
  graph::ValueId conv_transpose(const std::string& name, graph::ValueId x, const ConvSpec& c);
  graph::ValueId batch_norm(const std::string& name, graph::ValueId x);
  graph::ValueId dense(const std::string& name, graph::ValueId x, int64_t units,
                       const std::string& out_name = "");
  graph::ValueId relu(const std::string& name, graph::ValueId x);
  graph::ValueId relu6(const std::string& name, graph::ValueId x);
  graph::ValueId add(const std::string& name, graph::ValueId a, graph::ValueId b);
  graph::ValueId max_pool(const std::string& name, graph::ValueId x, int64_t kernel, int64_t stride,
                          int64_t pad);
  graph::ValueId global_avg_pool(const std::string& name, graph::ValueId x);
  graph::ValueId flatten(const std::string& name, graph::ValueId x);
  graph::ValueId reshape(const std::string& name, graph::ValueId x, std::vector<int64_t> shape);
  // Any other single-output node.
  graph::ValueId node(const std::string& name, const std::string& op, ops::Attrs attrs,
                      const std::vector<graph::ValueId>& inputs, const std::string& out_name = "");

 private:
  graph::ValueId conv_like(const std::string& op, const std::string& name, graph::ValueId x,
                           const ConvSpec& c);

  graph::Graph g_;
  Rng rng_;
};

}  // namespace anvil::models::detail
