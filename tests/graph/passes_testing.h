// What the graph-pass tests share: random tensors, a tiny node-by-node evaluator over the
// operators' reference implementations (independent of graph::interpret), and a before/after
// comparison.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "anvil/graph/graph.h"
#include "anvil/ops/host_value.h"

namespace anvil::graph::pt {

inline const ir::DataType f32 = ir::DataType::Float32();

inline runtime::NDArray random_array(std::vector<int64_t> shape, uint32_t seed, float lo = -1.0f,
                                     float hi = 1.0f) {
  runtime::NDArray a = runtime::NDArray::empty(std::move(shape), runtime::dl_float32());
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (int64_t i = 0; i < a.numel(); ++i) a.data_as<float>()[i] = dist(rng);
  return a;
}

// Runs g node by node with OpDef::reference.
inline std::vector<runtime::NDArray> evaluate(const Graph& g,
                                              const std::vector<runtime::NDArray>& inputs) {
  std::vector<runtime::NDArray> vals(g.num_values());
  for (size_t i = 0; i < g.inputs().size(); ++i) vals[g.inputs()[i]] = inputs.at(i);
  for (size_t v = 0; v < g.num_values(); ++v)
    if (g.value(static_cast<ValueId>(v)).kind == ValueKind::kConstant)
      vals[v] = g.value(static_cast<ValueId>(v)).data;
  for (const Node& n : g.nodes()) {
    std::vector<runtime::NDArray> args;
    for (ValueId v : n.inputs) args.push_back(vals[v]);
    std::vector<runtime::NDArray> res = ops::lookup(n.op).reference(args, n.attrs);
    for (size_t i = 0; i < n.outputs.size(); ++i) vals[n.outputs[i]] = res.at(i);
  }
  std::vector<runtime::NDArray> outs;
  for (ValueId v : g.outputs()) outs.push_back(vals[v]);
  return outs;
}

// Random inputs for g's inputs.
inline std::vector<runtime::NDArray> random_inputs(const Graph& g, uint32_t seed = 7) {
  std::vector<runtime::NDArray> in;
  for (ValueId v : g.inputs()) in.push_back(random_array(g.value(v).type.shape, seed++));
  return in;
}

// Both graphs on the same random inputs: outputs of equal shapes, max |a - b| <= tol * max |a|.
inline void expect_same_outputs(const Graph& before, const Graph& after, double tol = 1e-4) {
  ASSERT_EQ(before.inputs().size(), after.inputs().size());
  ASSERT_EQ(before.outputs().size(), after.outputs().size());
  std::vector<runtime::NDArray> in = random_inputs(before);
  std::vector<runtime::NDArray> a = evaluate(before, in), b = evaluate(after, in);
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].shape(), b[i].shape()) << "output " << i;
    double max_ref = 0, max_diff = 0;
    for (int64_t k = 0; k < a[i].numel(); ++k) {
      double x = a[i].data_as<float>()[k], y = b[i].data_as<float>()[k];
      max_ref = std::max(max_ref, std::fabs(x));
      max_diff = std::max(max_diff, std::fabs(x - y));
    }
    EXPECT_GT(max_ref, 0.0) << "output " << i << " is all zero: a weak test";
    EXPECT_LE(max_diff, tol * max_ref)
        << "output " << i << " (" << before.value(before.outputs()[i]).name << ")";
  }
}

// Max |got - want| <= tol * max |want| per output (and the same shapes and dtypes; any float
// type).
inline void expect_close(const std::vector<runtime::NDArray>& got,
                         const std::vector<runtime::NDArray>& want, const std::string& what,
                         double tol = 1e-4) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t o = 0; o < want.size(); ++o) {
    ASSERT_EQ(got[o].shape(), want[o].shape()) << what << " output " << o;
    ASSERT_EQ(got[o].numel(), want[o].numel());
    ASSERT_EQ(ops::from_dlpack(got[o].dtype()), ops::from_dlpack(want[o].dtype()))
        << what << " output " << o;
    double max_want = 0, max_err = 0;
    for (int64_t i = 0; i < want[o].numel(); ++i) {
      double w = ops::host::read_f64(want[o], i), g = ops::host::read_f64(got[o], i);
      max_want = std::max(max_want, std::abs(w));
      max_err = std::max(max_err, std::isnan(g) ? INFINITY : std::abs(g - w));
    }
    EXPECT_LE(max_err, tol * max_want)
        << what << " output " << o << " (max |want| " << max_want << ")";
  }
}

inline int count_op(const Graph& g, const std::string& op) {
  return static_cast<int>(
      std::count_if(g.nodes().begin(), g.nodes().end(), [&](const Node& n) { return n.op == op; }));
}

}  // namespace anvil::graph::pt
