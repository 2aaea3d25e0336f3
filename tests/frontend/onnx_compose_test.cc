// ONNX operators the importer composes from library ops (LRN, ReverseSequence, MaxUnpool,
// Compress): small models compiled for the host and interpreted, each checked against the ONNX
// formula evaluated here by plain loops; operands the output shape depends on must be known at
// compile time, and a missing one is an error that says how to bind it.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "anvil/frontend/onnx/importer.h"
#include "anvil/graph/build.h"
#include "anvil/graph/interpreter.h"
#include "anvil/ops/op.h"
#include "anvil/target/target.h"
#include "frontend/onnx_model_builder.h"
#include "testing/errors.h"

namespace anvil {
namespace {

using anvil::testing::OnnxModel;
using runtime::NDArray;
using V = std::vector<int64_t>;

NDArray random_floats(const V& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2, 2);
  NDArray a = NDArray::empty(shape, runtime::dl_float32());
  for (int64_t i = 0; i < a.numel(); ++i) a.data_as<float>()[i] = dist(rng);
  return a;
}

NDArray int64s(const V& shape, const std::vector<int64_t>& v) {
  NDArray a = NDArray::empty(shape, DLDataType{kDLInt, 64, 1});
  std::copy(v.begin(), v.end(), a.data_as<int64_t>());
  return a;
}

// Output 0 of `m` compiled and interpreted on `in`, each passed to `check`.
template <typename F>
void run_both(const OnnxModel& m, const std::vector<NDArray>& in, F check,
              const frontend::ImportOptions& options = {}) {
  graph::Graph g = frontend::import_onnx_bytes(m.bytes(), options);
  graph::CompiledGraph cg = graph::CompiledGraph::build(g, Target::host(), {});
  {
    SCOPED_TRACE("compiled");
    check(cg.run(in).at(0));
  }
  {
    SCOPED_TRACE("interpreted");
    check(graph::interpret(g, in).at(0));
  }
}

// LRN on [N, C, H, W]: the squares summed over the size channels around each, clipped at the
// ends: floor((size - 1) / 2) before, ceil((size - 1) / 2) after.
TEST(OnnxCompose, LrnMatchesTheFormula) {
  const V shape = {2, 7, 3, 2};
  for (int64_t size : {1, 2, 3, 5}) {
    SCOPED_TRACE("size " + std::to_string(size));
    const float alpha = 0.3f, beta = 0.6f, bias = 1.5f;
    OnnxModel m;
    m.input("x", shape);
    m.output("y");
    ::onnx::NodeProto& n = m.node("LRN", {"x"}, {"y"}, "lrn");
    OnnxModel::attr(n, "size", size);
    OnnxModel::attr_f(n, "alpha", alpha);
    OnnxModel::attr_f(n, "beta", beta);
    OnnxModel::attr_f(n, "bias", bias);
    NDArray x = random_floats(shape, 3);
    const float* xv = x.data_as<float>();
    int64_t C = shape[1], plane = shape[2] * shape[3];
    run_both(m, {x}, [&](const NDArray& y) {
      ASSERT_EQ(y.shape(), shape);
      for (int64_t i = 0; i < x.numel(); ++i) {
        int64_t c = i / plane % C;
        double sum = 0;
        for (int64_t k = c - (size - 1) / 2; k <= c + size / 2; ++k)
          if (k >= 0 && k < C) sum += std::pow(xv[i + (k - c) * plane], 2);
        double want = xv[i] / std::pow(bias + alpha / static_cast<double>(size) * sum, beta);
        ASSERT_NEAR(y.data_as<float>()[i], want, 1e-5 * (1 + std::fabs(want))) << "element " << i;
      }
    });
  }
}

// ReverseSequence with batch on either axis: the first len[b] steps reversed, the rest kept.
TEST(OnnxCompose, ReverseSequenceBothLayouts) {
  for (int64_t batch_axis : {0, 1}) {
    SCOPED_TRACE("batch_axis " + std::to_string(batch_axis));
    int64_t T = 5, B = 4;
    V shape = batch_axis == 0 ? V{B, T, 3} : V{T, B, 3};
    OnnxModel m;
    m.input("x", shape);
    m.input("lens", {B}, ::onnx::TensorProto::INT64);
    m.output("y");
    ::onnx::NodeProto& n = m.node("ReverseSequence", {"x", "lens"}, {"y"}, "rev");
    OnnxModel::attr(n, "batch_axis", batch_axis);
    OnnxModel::attr(n, "time_axis", 1 - batch_axis);
    const std::vector<int64_t> lens = {1, 5, 3, 2};
    NDArray x = random_floats(shape, 4);
    run_both(m, {x, int64s({B}, lens)}, [&](const NDArray& y) {
      ASSERT_EQ(y.shape(), shape);
      for (int64_t b = 0; b < B; ++b) {
        for (int64_t t = 0; t < T; ++t) {
          int64_t from =
              t < lens[static_cast<size_t>(b)] ? lens[static_cast<size_t>(b)] - 1 - t : t;
          for (int64_t k = 0; k < 3; ++k) {
            auto at = [&](int64_t tt) {
              return batch_axis == 0 ? (b * T + tt) * 3 + k : (tt * B + b) * 3 + k;
            };
            ASSERT_EQ(y.data_as<float>()[at(t)], x.data_as<float>()[at(from)])
                << "b " << b << " t " << t;
          }
        }
      }
    });
  }
}

// MaxUnpool puts each value at its index's position in zeros of the unpooled shape (from the
// kernel and strides: 4x4 here); a larger output_shape known at compile time keeps the positions
// (an index's row and column in 4x4) in its larger planes.
TEST(OnnxCompose, MaxUnpoolScattersToTheIndices) {
  const V xs = {1, 2, 2, 2};
  NDArray x = random_floats(xs, 5);
  // Distinct positions in each 4x4 plane (the second plane's indices count from 16).
  const std::vector<int64_t> idx = {5, 2, 8, 15, 16 + 0, 16 + 7, 16 + 9, 16 + 14};
  for (int64_t side : {0, 4, 5}) {
    SCOPED_TRACE("output_shape side " + std::to_string(side));
    OnnxModel m(11);
    m.input("x", xs);
    m.input("i", xs, ::onnx::TensorProto::INT64);
    std::vector<std::string> ins = {"x", "i"};
    if (side > 0) {
      m.init_ints("shape", {4}, {1, 2, side, side});
      ins.push_back("shape");
    }
    int64_t plane = side == 5 ? 5 : 4;
    m.output("y");
    ::onnx::NodeProto& n = m.node("MaxUnpool", ins, {"y"}, "unpool");
    OnnxModel::attr(n, "kernel_shape", V{2, 2});
    OnnxModel::attr(n, "strides", V{2, 2});
    run_both(m, {x, int64s(xs, idx)}, [&](const NDArray& y) {
      ASSERT_EQ(y.shape(), (V{1, 2, plane, plane}));
      std::vector<float> want(static_cast<size_t>(2 * plane * plane), 0.0f);
      for (size_t k = 0; k < idx.size(); ++k) {
        int64_t c = idx[k] / 16, h = idx[k] % 16 / 4, w = idx[k] % 4;
        want[static_cast<size_t>((c * plane + h) * plane + w)] = x.data_as<float>()[k];
      }
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_EQ(y.data_as<float>()[i], want[i]) << "element " << i;
    });
  }
}

// Compress keeps the slices whose condition is true; the condition decides the output's length,
// so a run-time one is an error that names the flag to bind it, and a bound one works.
TEST(OnnxCompose, CompressNeedsItsConditionAtCompileTime) {
  OnnxModel m(11);
  m.input("x", {3, 4});
  m.input("cond", {4}, ::onnx::TensorProto::BOOL);
  m.output("y");
  OnnxModel::attr(m.node("Compress", {"x", "cond"}, {"y"}, "keep"), "axis", -1);
  std::string e = anvil::testing::user_error([&] { frontend::import_onnx_bytes(m.bytes()); });
  EXPECT_NE(e.find("node 'keep'"), std::string::npos) << e;
  EXPECT_NE(e.find("--input-value cond=FILE.npy"), std::string::npos) << e;

  NDArray cond = NDArray::empty({3}, ops::to_dlpack(ir::DataType::Bool()));
  const bool keep[] = {true, false, true};  // shorter than the axis: the rest dropped
  for (int i = 0; i < 3; ++i) cond.data_as<bool>()[i] = keep[i];
  frontend::ImportOptions options;
  options.constant_inputs["cond"] = cond;
  OnnxModel bound(11);
  bound.input("x", {3, 4});
  bound.input("cond", {3}, ::onnx::TensorProto::BOOL);
  bound.output("y");
  OnnxModel::attr(bound.node("Compress", {"x", "cond"}, {"y"}, "keep"), "axis", -1);
  NDArray x = random_floats({3, 4}, 6);
  run_both(
      bound, {x},
      [&](const NDArray& y) {
        ASSERT_EQ(y.shape(), (V{3, 2}));
        for (int64_t r = 0; r < 3; ++r) {
          EXPECT_EQ(y.data_as<float>()[r * 2], x.data_as<float>()[r * 4]);
          EXPECT_EQ(y.data_as<float>()[r * 2 + 1], x.data_as<float>()[r * 4 + 2]);
        }
      },
      options);
}

}  // namespace
}  // namespace anvil
