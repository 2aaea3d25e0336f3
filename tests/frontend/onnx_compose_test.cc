// ONNX operators the importer composes from library ops (LRN, ReverseSequence, MaxUnpool,
// Compress, DFT, STFT, RNN, Det): small models compiled for the host and interpreted, each checked
// against the ONNX formula evaluated here by plain loops; operands the output shape depends on must
// be known at compile time, and a missing one is an error that says how to bind it.
#include <gtest/gtest.h>

#include <algorithm>
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

// max |got - want| <= tol * max |want| over every element.
void expect_near_all(const NDArray& got, const std::vector<double>& want, double tol = 1e-4) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size()));
  double top = 0, err = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    top = std::max(top, std::abs(want[i]));
    err = std::max(err, std::abs(got.data_as<float>()[i] - want[i]));
  }
  EXPECT_GT(top, 0.0);
  EXPECT_LE(err, tol * top) << "max |want| " << top;
}

// The DFT of rows of x ([rows, n_in, parts], parts 1 real or 2 complex) over n points (cut or
// zero-padded), the first k frequencies: [rows, k, 2], in double precision.
std::vector<double> naive_dft(const NDArray& x, int64_t rows, int64_t n_in, int64_t parts,
                              int64_t n, int64_t k, bool inverse) {
  std::vector<double> y;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t f = 0; f < k; ++f) {
      double re = 0, im = 0;
      for (int64_t j = 0; j < std::min(n, n_in); ++j) {
        double t = (inverse ? 2 : -2) * M_PI * static_cast<double>(j * f) / static_cast<double>(n);
        const float* v = x.data_as<float>() + (r * n_in + j) * parts;
        double a = v[0], b = parts == 2 ? v[1] : 0.0;
        re += a * std::cos(t) - b * std::sin(t);
        im += a * std::sin(t) + b * std::cos(t);
      }
      y.push_back(inverse ? re / static_cast<double>(n) : re);
      y.push_back(inverse ? im / static_cast<double>(n) : im);
    }
  }
  return y;
}

// DFT on the signal axis of [rows, n, 1 or 2]: real and complex, forward and inverse, onesided,
// and a dft_length that pads with zeros or cuts.
TEST(OnnxCompose, DftMatchesTheSum) {
  struct Case {
    int64_t n_in, parts, length;  // length 0: the axis's
    bool inverse, onesided;
  };
  for (const Case& k : {Case{6, 1, 0, false, false}, Case{5, 2, 0, true, false},
                        Case{7, 1, 10, false, true}, Case{9, 2, 4, false, false}}) {
    SCOPED_TRACE("n " + std::to_string(k.n_in) + " parts " + std::to_string(k.parts) + " length " +
                 std::to_string(k.length));
    const V shape = {3, k.n_in, k.parts};
    OnnxModel m(17);
    m.input("x", shape);
    std::vector<std::string> ins = {"x"};
    if (k.length) {
      m.init_ints("len", {}, {k.length});
      ins.push_back("len");
    }
    m.output("y");
    ::onnx::NodeProto& n = m.node("DFT", ins, {"y"}, "dft");
    OnnxModel::attr(n, "inverse", int64_t{k.inverse});
    OnnxModel::attr(n, "onesided", int64_t{k.onesided});
    int64_t points = k.length ? k.length : k.n_in, freqs = k.onesided ? points / 2 + 1 : points;
    NDArray x = random_floats(shape, 7);
    std::vector<double> want = naive_dft(x, 3, k.n_in, k.parts, points, freqs, k.inverse);
    run_both(m, {x}, [&](const NDArray& y) {
      ASSERT_EQ(y.shape(), (V{3, freqs, 2}));
      expect_near_all(y, want);
    });
  }
}

// STFT: windowed frames every frame_step samples, each transformed (onesided).
TEST(OnnxCompose, StftTransformsWindowedFrames) {
  const int64_t length = 23, step = 4, frame = 8, frames = (length - frame) / step + 1;
  OnnxModel m(17);
  m.input("signal", {2, length, 1});
  m.init_ints("step", {}, {step});
  m.input("window", {frame});
  m.output("y");
  m.node("STFT", {"signal", "step", "window"}, {"y"}, "stft");
  NDArray x = random_floats({2, length, 1}, 8), w = random_floats({frame}, 9);
  NDArray framed = NDArray::empty({2 * frames, frame, 1}, runtime::dl_float32());
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t f = 0; f < frames; ++f)
      for (int64_t j = 0; j < frame; ++j)
        framed.data_as<float>()[(b * frames + f) * frame + j] =
            x.data_as<float>()[b * length + f * step + j] * w.data_as<float>()[j];
  std::vector<double> want = naive_dft(framed, 2 * frames, frame, 1, frame, frame / 2 + 1, false);
  run_both(m, {x, w}, [&](const NDArray& y) {
    ASSERT_EQ(y.shape(), (V{2, frames, frame / 2 + 1, 2}));
    expect_near_all(y, want);
  });
}

// RNN, bidirectional with biases, an initial state, clip and a Relu forward / Tanh reverse, in
// both layouts: Y and Y_h against the recurrence run here.
TEST(OnnxCompose, RnnBidirectionalMatchesTheRecurrence) {
  const int64_t T = 4, B = 2, I = 3, H = 5;
  const double clip = 1.5;
  NDArray x = random_floats({T, B, I}, 10), w = random_floats({2, H, I}, 11),
          r = random_floats({2, H, H}, 12), bias = random_floats({2, 2 * H}, 13),
          h0 = random_floats({2, B, H}, 14);
  auto f = [](const NDArray& a, int64_t i) { return static_cast<double>(a.data_as<float>()[i]); };
  // want_y [T, 2, B, H], want_h [2, B, H]
  std::vector<double> want_y(static_cast<size_t>(T * 2 * B * H)),
      want_h(static_cast<size_t>(2 * B * H));
  for (int64_t d = 0; d < 2; ++d) {
    std::vector<double> h(static_cast<size_t>(B * H));
    for (int64_t i = 0; i < B * H; ++i) h[static_cast<size_t>(i)] = f(h0, d * B * H + i);
    for (int64_t s = 0; s < T; ++s) {
      int64_t t = d == 0 ? s : T - 1 - s;
      std::vector<double> next(h.size());
      for (int64_t b = 0; b < B; ++b) {
        for (int64_t o = 0; o < H; ++o) {
          double v = f(bias, d * 2 * H + o) + f(bias, d * 2 * H + H + o);
          for (int64_t i = 0; i < I; ++i)
            v += f(x, (t * B + b) * I + i) * f(w, (d * H + o) * I + i);
          for (int64_t j = 0; j < H; ++j)
            v += h[static_cast<size_t>(b * H + j)] * f(r, (d * H + o) * H + j);
          v = std::clamp(v, -clip, clip);
          next[static_cast<size_t>(b * H + o)] = d == 0 ? std::max(v, 0.0) : std::tanh(v);
        }
      }
      h = next;
      for (int64_t i = 0; i < B * H; ++i)
        want_y[static_cast<size_t>((t * 2 + d) * B * H + i)] = h[static_cast<size_t>(i)];
    }
    for (int64_t i = 0; i < B * H; ++i)
      want_h[static_cast<size_t>(d * B * H + i)] = h[static_cast<size_t>(i)];
  }
  for (int64_t layout : {0, 1}) {
    SCOPED_TRACE("layout " + std::to_string(layout));
    auto batch_major = [&](const NDArray& a, V shape) {  // swaps axes 0 and 1 of a 3-D array
      NDArray b = NDArray::empty({shape[1], shape[0], shape[2]}, runtime::dl_float32());
      for (int64_t i = 0; i < shape[0]; ++i)
        for (int64_t j = 0; j < shape[1]; ++j)
          for (int64_t k = 0; k < shape[2]; ++k)
            b.data_as<float>()[(j * shape[0] + i) * shape[2] + k] =
                a.data_as<float>()[(i * shape[1] + j) * shape[2] + k];
      return b;
    };
    OnnxModel m(14);
    m.input("x", layout ? V{B, T, I} : V{T, B, I});
    m.input("w", {2, H, I});
    m.input("r", {2, H, H});
    m.input("b", {2, 2 * H});
    m.input("h0", layout ? V{B, 2, H} : V{2, B, H});
    m.output("y");
    m.output("yh");
    ::onnx::NodeProto& n = m.node("RNN", {"x", "w", "r", "b", "", "h0"}, {"y", "yh"}, "rnn");
    OnnxModel::attr(n, "hidden_size", H);
    OnnxModel::attr(n, "layout", layout);
    OnnxModel::attr_f(n, "clip", static_cast<float>(clip));
    auto* dir = n.add_attribute();
    dir->set_name("direction");
    dir->set_type(::onnx::AttributeProto::STRING);
    dir->set_s("bidirectional");
    auto* acts = n.add_attribute();
    acts->set_name("activations");
    acts->set_type(::onnx::AttributeProto::STRINGS);
    acts->add_strings("Relu");
    acts->add_strings("Tanh");
    std::vector<NDArray> in = {layout ? batch_major(x, {T, B, I}) : x, w, r, bias,
                               layout ? batch_major(h0, {2, B, H}) : h0};
    graph::Graph g = frontend::import_onnx_bytes(m.bytes());
    graph::CompiledGraph cg = graph::CompiledGraph::build(g, Target::host(), {});
    for (const auto& outs : {cg.run(in), graph::interpret(g, in)}) {
      ASSERT_EQ(outs.size(), 2u);
      if (layout == 0) {
        ASSERT_EQ(outs[0].shape(), (V{T, 2, B, H}));
        expect_near_all(outs[0], want_y);
        expect_near_all(outs[1], want_h);
        continue;
      }
      // Batch-major: Y [B, T, 2, H], Y_h [B, 2, H].
      ASSERT_EQ(outs[0].shape(), (V{B, T, 2, H}));
      std::vector<double> y(want_y.size()), yh(want_h.size());
      for (int64_t t = 0; t < T; ++t)
        for (int64_t d = 0; d < 2; ++d)
          for (int64_t b = 0; b < B; ++b)
            for (int64_t o = 0; o < H; ++o) {
              y[static_cast<size_t>(((b * T + t) * 2 + d) * H + o)] =
                  want_y[static_cast<size_t>(((t * 2 + d) * B + b) * H + o)];
              if (t == 0)
                yh[static_cast<size_t>((b * 2 + d) * H + o)] =
                    want_h[static_cast<size_t>((d * B + b) * H + o)];
            }
      expect_near_all(outs[0], y);
      expect_near_all(outs[1], yh);
    }
  }
}

// A sequence too long to unroll is refused, naming the input and the limit (65,536 steps once
// took the importer minutes).
TEST(OnnxCompose, RnnRefusesASequenceTooLongToUnroll) {
  OnnxModel m(14);
  m.input("x", {3, 65536, 2});
  m.input("w", {1, 4, 2});
  m.input("r", {1, 4, 4});
  m.output("y");
  ::onnx::NodeProto& n = m.node("RNN", {"x", "w", "r"}, {"y"}, "rnn");
  OnnxModel::attr(n, "hidden_size", 4);
  OnnxModel::attr(n, "layout", 1);
  std::string e = anvil::testing::user_error([&] { frontend::import_onnx_bytes(m.bytes()); });
  anvil::testing::expect_has(e, "node 'rnn'");
  anvil::testing::expect_has(e, "has 65536 steps");
  anvil::testing::expect_has(e, "up to 4096 steps over its directions");
}

// Det of a batch of 3x3 and of one 4x4 matrix against Gaussian elimination with partial pivoting;
// a 6x6 matrix is refused, naming the limit.
TEST(OnnxCompose, DetOfSmallMatrices) {
  for (const V& shape : {V{2, 3, 3}, V{4, 4}}) {
    SCOPED_TRACE("shape " + std::to_string(shape.size()));
    const int64_t n = shape.back(), count = shape.size() == 3 ? shape[0] : 1;
    OnnxModel m(11);
    m.input("x", shape);
    m.output("y");
    m.node("Det", {"x"}, {"y"}, "det");
    NDArray x = random_floats(shape, 15);
    std::vector<double> want;
    for (int64_t k = 0; k < count; ++k) {
      std::vector<double> a(static_cast<size_t>(n * n));
      for (int64_t i = 0; i < n * n; ++i)
        a[static_cast<size_t>(i)] = x.data_as<float>()[k * n * n + i];
      double det = 1;
      for (int64_t c = 0; c < n; ++c) {
        int64_t p = c;
        for (int64_t i = c + 1; i < n; ++i)
          if (std::abs(a[static_cast<size_t>(i * n + c)]) >
              std::abs(a[static_cast<size_t>(p * n + c)]))
            p = i;
        if (p != c) {
          for (int64_t j = 0; j < n; ++j)
            std::swap(a[static_cast<size_t>(p * n + j)], a[static_cast<size_t>(c * n + j)]);
          det = -det;
        }
        det *= a[static_cast<size_t>(c * n + c)];
        for (int64_t i = c + 1; i < n; ++i) {
          double l = a[static_cast<size_t>(i * n + c)] / a[static_cast<size_t>(c * n + c)];
          for (int64_t j = c; j < n; ++j)
            a[static_cast<size_t>(i * n + j)] -= l * a[static_cast<size_t>(c * n + j)];
        }
      }
      want.push_back(det);
    }
    run_both(m, {x}, [&](const NDArray& y) {
      ASSERT_EQ(y.shape(), shape.size() == 3 ? V{count} : V{});
      expect_near_all(y, want);
    });
  }
  OnnxModel big(11);
  big.input("x", {6, 6});
  big.output("y");
  big.node("Det", {"x"}, {"y"}, "det");
  std::string e = anvil::testing::user_error([&] { frontend::import_onnx_bytes(big.bytes()); });
  EXPECT_NE(e.find("node 'det'"), std::string::npos) << e;
  EXPECT_NE(e.find("up to 5 x 5"), std::string::npos) << e;
}

}  // namespace
}  // namespace anvil
