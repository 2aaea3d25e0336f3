// QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear: small ONNX models compiled for the
// host and interpreted, each checked against the formulas of the ONNX spec evaluated here element
// by element (round halves to even, saturate). Scales and zero points come as initializers or at
// run time, per tensor or along an axis; bad ones are errors naming the node.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "anvil/frontend/onnx/importer.h"
#include "anvil/graph/build.h"
#include "anvil/graph/interpreter.h"
#include "anvil/runtime/npy.h"
#include "anvil/target/target.h"
#include "frontend/onnx_model_builder.h"
#include "testing/errors.h"

namespace anvil {
namespace {

using anvil::testing::OnnxModel;
using runtime::NDArray;
using V = std::vector<int64_t>;

constexpr int kF32 = ::onnx::TensorProto::FLOAT;
constexpr int kU8 = ::onnx::TensorProto::UINT8;
constexpr int kI8 = ::onnx::TensorProto::INT8;
constexpr int kI32 = ::onnx::TensorProto::INT32;

NDArray floats(const V& shape, const std::vector<float>& v) {
  NDArray a = NDArray::empty(shape, runtime::dl_float32());
  std::copy(v.begin(), v.end(), a.data_as<float>());
  return a;
}

template <typename T>
NDArray ints(const V& shape, const std::vector<int>& v) {
  DLDataType t{std::is_signed_v<T> ? uint8_t{kDLInt} : uint8_t{kDLUInt}, sizeof(T) * 8, 1};
  NDArray a = NDArray::empty(shape, t);
  for (size_t i = 0; i < v.size(); ++i) a.data_as<T>()[i] = static_cast<T>(v[i]);
  return a;
}

void init_ints(OnnxModel& m, const std::string& name, const V& dims, int type,
               const std::vector<int>& v) {
  ::onnx::TensorProto* t = m.graph().add_initializer();
  t->set_name(name);
  t->set_data_type(type);
  for (int64_t d : dims) t->add_dims(d);
  for (int x : v) t->add_int32_data(x);
}

// The outputs compiled for the host and interpreted.
std::vector<std::pair<const char*, std::vector<NDArray>>> run_both(const OnnxModel& m,
                                                                   const std::vector<NDArray>& in) {
  graph::Graph g = frontend::import_onnx_bytes(m.bytes());
  graph::CompiledGraph cg = graph::CompiledGraph::build(g, Target::host(), {});
  return {{"compiled", cg.run(in)}, {"interpreted", graph::interpret(g, in)}};
}

int quantize(float x, float scale, int zp, int lo, int hi) {
  float q = std::nearbyint(x / scale) + static_cast<float>(zp);  // halves to even
  return static_cast<int>(std::clamp(q, static_cast<float>(lo), static_cast<float>(hi)));
}

template <typename T>
std::vector<int> values_of(const NDArray& a) {
  std::vector<int> v;
  for (int64_t i = 0; i < a.numel(); ++i) v.push_back(a.data_as<T>()[i]);
  return v;
}

// Per tensor, with halves that round to even and values that saturate both ways.
TEST(QuantizeLinear, PerTensorRoundsHalvesToEvenAndSaturates) {
  const std::vector<float> x = {0.0f, 1.0f, 2.5f, 3.5f, -2.5f, -3.5f, 1000.0f, -1000.0f, 0.49f};
  for (int type : {kU8, kI8}) {
    SCOPED_TRACE(type == kU8 ? "uint8" : "int8");
    int zp = type == kU8 ? 128 : -3, lo = type == kU8 ? 0 : -128, hi = type == kU8 ? 255 : 127;
    OnnxModel m;
    m.input("x", {9});
    m.init_floats("scale", {}, {0.5f});
    init_ints(m, "zp", {}, type, {zp});
    m.output("y");
    m.node("QuantizeLinear", {"x", "scale", "zp"}, {"y"}, "q");
    for (const auto& [what, out] : run_both(m, {floats({9}, x)})) {
      SCOPED_TRACE(what);
      std::vector<int> got =
          type == kU8 ? values_of<uint8_t>(out.at(0)) : values_of<int8_t>(out.at(0));
      for (size_t i = 0; i < x.size(); ++i)
        EXPECT_EQ(got[i], quantize(x[i], 0.5f, zp, lo, hi)) << "x = " << x[i];
    }
  }
}

// Along axis 1 (given as -3 of rank 4), the scale and zero point given at run time; no zero
// point means uint8 with zero point 0.
TEST(QuantizeLinear, PerAxisAtRunTime) {
  const V shape = {2, 3, 2, 2};
  std::vector<float> x;
  for (int i = 0; i < 24; ++i) x.push_back(static_cast<float>(i * 7 % 23) - 9.25f);
  const std::vector<float> scale = {0.5f, 0.25f, 2.0f};
  const std::vector<int> zp = {-4, 0, 100};
  OnnxModel m;
  m.input("x", shape);
  m.input("scale", {3});
  m.input("zp", {3}, kI8);
  m.output("y");
  OnnxModel::attr(m.node("QuantizeLinear", {"x", "scale", "zp"}, {"y"}, "q"), "axis", -3);
  for (const auto& [what, out] :
       run_both(m, {floats(shape, x), floats({3}, scale), ints<int8_t>({3}, zp)})) {
    SCOPED_TRACE(what);
    std::vector<int> got = values_of<int8_t>(out.at(0));
    for (size_t i = 0; i < x.size(); ++i) {
      size_t c = i / 4 % 3;
      EXPECT_EQ(got[i], quantize(x[i], scale[c], zp[c], -128, 127)) << "element " << i;
    }
  }
  OnnxModel no_zp;
  no_zp.input("x", {4});
  no_zp.input("scale", {});
  no_zp.output("y");
  no_zp.node("QuantizeLinear", {"x", "scale"}, {"y"}, "q");
  const std::vector<float> xs = {-1.0f, 0.6f, 3.0f, 400.0f};
  for (const auto& [what, out] : run_both(no_zp, {floats({4}, xs), floats({}, {1.0f})})) {
    ASSERT_EQ(out.at(0).dtype().code, kDLUInt) << what;
    EXPECT_EQ(values_of<uint8_t>(out.at(0)), (std::vector<int>{0, 1, 3, 255})) << what;
  }
}

TEST(DequantizeLinear, PerTensorPerAxisAndInt32) {
  const V shape = {1, 3, 2};
  const std::vector<int> x = {0, 255, 7, 128, 200, 1};
  OnnxModel m;
  m.input("x", shape, kU8);
  m.init_floats("scale", {3}, {0.5f, 0.125f, 3.0f});
  init_ints(m, "zp", {3}, kU8, {0, 128, 255});
  m.output("y");
  m.node("DequantizeLinear", {"x", "scale", "zp"}, {"y"}, "dq");  // axis 1 by default
  const float scale[] = {0.5f, 0.125f, 3.0f};
  const int zp[] = {0, 128, 255};
  for (const auto& [what, out] : run_both(m, {ints<uint8_t>(shape, x)})) {
    for (size_t i = 0; i < x.size(); ++i)
      EXPECT_EQ(out.at(0).data_as<float>()[i], static_cast<float>(x[i] - zp[i / 2]) * scale[i / 2])
          << what << " element " << i;
  }
  OnnxModel wide;
  wide.input("x", {3}, kI32);
  wide.input("scale", {});
  wide.output("y");
  wide.node("DequantizeLinear", {"x", "scale"}, {"y"}, "dq");
  NDArray xi = NDArray::empty({3}, DLDataType{kDLInt, 32, 1});
  const int32_t xv[] = {-100000, 0, 123456};
  std::copy(std::begin(xv), std::end(xv), xi.data_as<int32_t>());
  for (const auto& [what, out] : run_both(wide, {xi, floats({}, {0.25f})})) {
    for (int i = 0; i < 3; ++i)
      EXPECT_EQ(out.at(0).data_as<float>()[i], static_cast<float>(xv[i]) * 0.25f) << what;
  }
}

// The scale and zero point from the range of x widened to include 0, then x quantized with them;
// a quantize-dequantize round trip lands within half a step of x.
TEST(DynamicQuantizeLinear, RangeScaleZeroPointAndRoundTrip) {
  for (const std::vector<float>& x :
       {std::vector<float>{-1.0f, 0.3f, 2.5f, 7.0f, -0.75f, 1.0f},
        std::vector<float>{1.0f, 2.0f, 3.5f, 0.25f, 4.0f, 9.0f},  // all positive: the range from 0
        std::vector<float>{-5.0f, -2.0f, -0.5f, -3.0f, -4.5f, -1.0f}}) {
    float lo = std::min(0.0f, *std::min_element(x.begin(), x.end()));
    float hi = std::max(0.0f, *std::max_element(x.begin(), x.end()));
    float scale = (hi - lo) / 255.0f;
    int zp = static_cast<int>(std::clamp(std::nearbyint(-lo / scale), 0.0f, 255.0f));
    OnnxModel m(11);
    m.input("x", {6});
    m.output("y");
    m.output("scale");
    m.output("zp");
    m.output("back");
    m.node("DynamicQuantizeLinear", {"x"}, {"y", "scale", "zp"}, "dq");
    m.node("DequantizeLinear", {"y", "scale", "zp"}, {"back"}, "back");
    for (const auto& [what, out] : run_both(m, {floats({6}, x)})) {
      SCOPED_TRACE(what);
      ASSERT_EQ(out.size(), 4u);
      EXPECT_EQ(out[1].shape(), V{});
      EXPECT_EQ(out[1].data_as<float>()[0], scale);
      EXPECT_EQ(values_of<uint8_t>(out[2]), std::vector<int>{zp});
      std::vector<int> y = values_of<uint8_t>(out[0]);
      for (size_t i = 0; i < x.size(); ++i) {
        EXPECT_EQ(y[i], quantize(x[i], scale, zp, 0, 255)) << "x = " << x[i];
        EXPECT_NEAR(out[3].data_as<float>()[i], x[i], scale * 0.5f + 1e-6f) << "x = " << x[i];
      }
    }
  }
}

TEST(QuantizeLinear, BadScalesAndZeroPointsNameTheNode) {
  auto error = [](const V& scale_shape, int zp_type, const std::string& op = "QuantizeLinear") {
    OnnxModel m;
    m.input("x", {2, 3});
    m.input("scale", scale_shape);
    m.input("zp", scale_shape, zp_type);
    m.output("y");
    m.node(op, {op == "QuantizeLinear" ? "x" : "zp", "scale", "zp"}, {"y"}, "node7");
    return anvil::testing::user_error([&] { frontend::import_onnx_bytes(m.bytes()); });
  };
  std::string e = error({4}, kU8);
  EXPECT_NE(e.find("node7"), std::string::npos) << e;
  EXPECT_NE(e.find("one value per slice of axis 1"), std::string::npos) << e;
  e = error({3}, kI32);
  EXPECT_NE(e.find("uint8 or int8"), std::string::npos) << e;
  e = error({3}, kF32, "DequantizeLinear");
  EXPECT_NE(e.find("node7"), std::string::npos) << e;
}

// ---- integer products

template <typename T>
NDArray random_ints(const V& shape, int lo, int hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<int> v(static_cast<size_t>(
      std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>())));
  for (int& x : v) x = dist(rng);
  return ints<T>(shape, v);
}

template <typename T>
int at(const NDArray& a, int64_t i) {
  return a.data_as<T>()[i];
}

// A [2, 3, 40] uint8 times B [40, 4] int8 with a zero point per row of A and per column of B:
// exact int32 sums (up to 40 * 255 * 255), also from MatMulInteger's and QLinearMatMul's view.
TEST(IntegerProducts, MatMulIntegerAndQLinearMatMul) {
  NDArray a = random_ints<uint8_t>({2, 3, 40}, 0, 255, 1),
          b = random_ints<int8_t>({40, 4}, -128, 127, 2);
  NDArray azp = random_ints<uint8_t>({3}, 0, 255, 3), bzp = random_ints<int8_t>({4}, -128, 127, 4);
  std::vector<int64_t> acc(24);
  for (int64_t bt = 0; bt < 2; ++bt)
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 4; ++j) {
        int64_t sum = 0;
        for (int64_t k = 0; k < 40; ++k)
          sum += int64_t{at<uint8_t>(a, (bt * 3 + i) * 40 + k) - at<uint8_t>(azp, i)} *
                 (at<int8_t>(b, k * 4 + j) - at<int8_t>(bzp, j));
        acc[static_cast<size_t>((bt * 3 + i) * 4 + j)] = sum;
      }
  OnnxModel m(10);
  m.input("a", {2, 3, 40}, kU8);
  m.input("b", {40, 4}, kI8);
  m.input("azp", {3}, kU8);
  m.input("bzp", {4}, kI8);
  m.output("y");
  m.node("MatMulInteger", {"a", "b", "azp", "bzp"}, {"y"}, "mm");
  for (const auto& [what, out] : run_both(m, {a, b, azp, bzp})) {
    ASSERT_EQ(out.at(0).shape(), (V{2, 3, 4})) << what;
    for (size_t i = 0; i < acc.size(); ++i)
      ASSERT_EQ(out.at(0).data_as<int32_t>()[i], acc[i]) << what << " element " << i;
  }
  // The same product requantized: per-tensor zero points this time, a per-column scale of B.
  const float sa = 0.02f, sy = 3.5f;
  const std::vector<float> sb = {0.01f, 0.5f, 0.003f, 0.1f};
  OnnxModel q(10);
  q.input("a", {2, 3, 40}, kU8);
  q.init_floats("sa", {}, {sa});
  init_ints(q, "azp", {}, kU8, {100});
  q.input("b", {40, 4}, kI8);
  q.init_floats("sb", {4}, sb);
  init_ints(q, "bzp", {}, kI8, {-5});
  q.init_floats("sy", {}, {sy});
  init_ints(q, "yzp", {}, kU8, {128});
  q.output("y");
  q.node("QLinearMatMul", {"a", "sa", "azp", "b", "sb", "bzp", "sy", "yzp"}, {"y"}, "qmm");
  for (const auto& [what, out] : run_both(q, {a, b})) {
    for (int64_t r = 0; r < 6; ++r)
      for (int64_t j = 0; j < 4; ++j) {
        int64_t sum = 0;
        for (int64_t k = 0; k < 40; ++k)
          sum += int64_t{at<uint8_t>(a, r * 40 + k) - 100} * (at<int8_t>(b, k * 4 + j) + 5);
        float real = static_cast<float>(sum) * (sa * sb[static_cast<size_t>(j)] / sy);
        ASSERT_EQ(at<uint8_t>(out.at(0), r * 4 + j), quantize(real, 1.0f, 128, 0, 255))
            << what << " row " << r << " column " << j;
      }
  }
}

// A constant int8 weight without a zero point takes the int8 kernels (dense_int8): uint8 and
// int8 activations, with and without a zero point, rows of rank 3, K and N past the kernels'
// groups and blocks; also behind DynamicQuantizeLinear, as PyTorch exports a dynamically
// quantized Linear layer. Checked against the formula, compiled and interpreted.
TEST(IntegerProducts, ConstantInt8WeightsTakeTheInt8Kernels) {
  const int64_t K = 45, N = 21;
  NDArray b = random_ints<int8_t>({K, N}, -128, 127, 7);
  std::vector<int> bv = values_of<int8_t>(b);
  struct Case {
    int a_type;
    bool has_zero_point;
    int zero_point;
  };
  for (const Case& cs :
       {Case{kU8, false, 0}, Case{kU8, true, 37}, Case{kI8, false, 0}, Case{kI8, true, -20}}) {
    SCOPED_TRACE(::testing::Message() << "a type " << cs.a_type << " zero point " << cs.zero_point);
    const bool s = cs.a_type == kI8;
    NDArray a = s ? random_ints<int8_t>({2, 3, K}, -128, 127, 8)
                  : random_ints<uint8_t>({2, 3, K}, 0, 255, 8);
    OnnxModel m(10);
    m.input("a", {2, 3, K}, cs.a_type);
    init_ints(m, "b", {K, N}, kI8, bv);
    std::vector<std::string> ins = {"a", "b"};
    if (cs.has_zero_point) {
      init_ints(m, "azp", {}, cs.a_type, {cs.zero_point});
      ins.push_back("azp");
    }
    m.output("y");
    m.node("MatMulInteger", ins, {"y"}, "mm");
    const int zp = cs.zero_point;
    graph::Graph g = frontend::import_onnx_bytes(m.bytes());
    graph::CompiledGraph cg = graph::CompiledGraph::build(g, Target::host(), {});
    EXPECT_NE(cg.summary().find("dense_int8"), std::string::npos) << cg.summary();
    for (const auto& [what, out] : run_both(m, {a})) {
      for (int64_t r = 0; r < 6; ++r)
        for (int64_t j = 0; j < N; ++j) {
          int64_t sum = 0;
          for (int64_t k = 0; k < K; ++k) {
            int av = s ? at<int8_t>(a, r * K + k) : at<uint8_t>(a, r * K + k);
            sum += int64_t{av - zp} * bv[static_cast<size_t>(k * N + j)];
          }
          ASSERT_EQ(out.at(0).data_as<int32_t>()[r * N + j], sum)
              << what << " row " << r << " column " << j;
        }
    }
  }
  // QLinearMatMul on the same weight, zero point 0 given explicitly, requantized.
  {
    NDArray a = random_ints<uint8_t>({5, K}, 0, 255, 9);
    const float sa = 0.02f, sb = 0.01f, sy = 0.7f;
    OnnxModel q(10);
    q.input("a", {5, K}, kU8);
    q.init_floats("sa", {}, {sa});
    init_ints(q, "azp", {}, kU8, {90});
    init_ints(q, "b", {K, N}, kI8, bv);
    q.init_floats("sb", {}, {sb});
    init_ints(q, "bzp", {}, kI8, {0});
    q.init_floats("sy", {}, {sy});
    init_ints(q, "yzp", {}, kU8, {100});
    q.output("y");
    q.node("QLinearMatMul", {"a", "sa", "azp", "b", "sb", "bzp", "sy", "yzp"}, {"y"}, "qmm");
    graph::CompiledGraph cg =
        graph::CompiledGraph::build(frontend::import_onnx_bytes(q.bytes()), Target::host(), {});
    EXPECT_NE(cg.summary().find("dense_int8"), std::string::npos) << cg.summary();
    for (const auto& [what, out] : run_both(q, {a})) {
      for (int64_t r = 0; r < 5; ++r)
        for (int64_t j = 0; j < N; ++j) {
          int64_t sum = 0;
          for (int64_t k = 0; k < K; ++k)
            sum += int64_t{at<uint8_t>(a, r * K + k) - 90} * bv[static_cast<size_t>(k * N + j)];
          float real = static_cast<float>(sum) * (sa * sb / sy);
          ASSERT_EQ(at<uint8_t>(out.at(0), r * N + j), quantize(real, 1.0f, 100, 0, 255))
              << what << " row " << r << " column " << j;
        }
    }
  }
  // DynamicQuantizeLinear, then the product with the run-time zero point.
  OnnxModel d(11);
  d.input("x", {4, K}, kF32);
  init_ints(d, "b", {K, N}, kI8, bv);
  d.output("y");
  d.output("q");
  d.output("zp");
  d.node("DynamicQuantizeLinear", {"x"}, {"q", "scale", "zp"}, "dq");
  d.node("MatMulInteger", {"q", "b", "zp"}, {"y"}, "mm");
  std::vector<float> xv(4 * K);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = std::sin(0.37f * static_cast<float>(i)) * 3 - 1;
  for (const auto& [what, out] : run_both(d, {floats({4, K}, xv)})) {
    const int zp = at<uint8_t>(out.at(2), 0);
    for (int64_t r = 0; r < 4; ++r)
      for (int64_t j = 0; j < N; ++j) {
        int64_t sum = 0;
        for (int64_t k = 0; k < K; ++k)
          sum +=
              int64_t{at<uint8_t>(out.at(1), r * K + k) - zp} * bv[static_cast<size_t>(k * N + j)];
        ASSERT_EQ(out.at(0).data_as<int32_t>()[r * N + j], sum) << what << " row " << r;
      }
  }
}

// ConvInteger and QLinearConv on [1, 2, 6, 5] uint8 with int8 weights [3, 2, 3, 3], zero points
// per tensor (x) and per output channel (w), padding 1, stride 2; QLinearConv with an int32 bias
// and a scale per output channel.
TEST(IntegerProducts, ConvIntegerAndQLinearConv) {
  const V xs = {1, 2, 6, 5}, ws = {3, 2, 3, 3};
  NDArray x = random_ints<uint8_t>(xs, 0, 255, 5), w = random_ints<int8_t>(ws, -128, 127, 6);
  const int xzp = 17;
  const std::vector<int> wzp = {-3, 0, 9};
  const int64_t OH = 3, OW = 3;
  auto conv_at = [&](int64_t o, int64_t y, int64_t xx) {
    int64_t sum = 0;
    for (int64_t c = 0; c < 2; ++c)
      for (int64_t ky = 0; ky < 3; ++ky)
        for (int64_t kx = 0; kx < 3; ++kx) {
          int64_t iy = y * 2 + ky - 1, ix = xx * 2 + kx - 1;
          if (iy < 0 || iy >= 6 || ix < 0 || ix >= 5) continue;  // padding: (x - zp) is 0 there
          sum += int64_t{at<uint8_t>(x, (c * 6 + iy) * 5 + ix) - xzp} *
                 (at<int8_t>(w, ((o * 2 + c) * 3 + ky) * 3 + kx) - wzp[static_cast<size_t>(o)]);
        }
    return sum;
  };
  auto window = [](::onnx::NodeProto& n) {
    OnnxModel::attr(n, "pads", V{1, 1, 1, 1});
    OnnxModel::attr(n, "strides", V{2, 2});
  };
  OnnxModel m(10);
  m.input("x", xs, kU8);
  m.input("w", ws, kI8);
  init_ints(m, "xzp", {}, kU8, {xzp});
  init_ints(m, "wzp", {3}, kI8, wzp);
  m.output("y");
  window(m.node("ConvInteger", {"x", "w", "xzp", "wzp"}, {"y"}, "conv"));
  for (const auto& [what, out] : run_both(m, {x, w})) {
    ASSERT_EQ(out.at(0).shape(), (V{1, 3, OH, OW})) << what;
    for (int64_t o = 0; o < 3; ++o)
      for (int64_t y = 0; y < OH; ++y)
        for (int64_t xx = 0; xx < OW; ++xx)
          ASSERT_EQ(out.at(0).data_as<int32_t>()[(o * OH + y) * OW + xx], conv_at(o, y, xx))
              << what << " at " << o << ", " << y << ", " << xx;
  }
  const float sx = 0.05f, sy = 2.0f;
  const std::vector<float> sw = {0.02f, 0.01f, 0.04f};
  const std::vector<int> bias = {-700, 0, 1234};
  OnnxModel q(10);
  q.input("x", xs, kU8);
  q.init_floats("sx", {}, {sx});
  init_ints(q, "xzp", {}, kU8, {xzp});
  q.input("w", ws, kI8);
  q.init_floats("sw", {3}, sw);
  init_ints(q, "wzp", {3}, kI8, wzp);
  q.init_floats("sy", {}, {sy});
  init_ints(q, "yzp", {}, kI8, {-10});
  init_ints(q, "bias", {3}, kI32, bias);
  q.output("y");
  window(q.node("QLinearConv", {"x", "sx", "xzp", "w", "sw", "wzp", "sy", "yzp", "bias"}, {"y"},
                "qconv"));
  for (const auto& [what, out] : run_both(q, {x, w})) {
    for (int64_t o = 0; o < 3; ++o)
      for (int64_t p = 0; p < OH * OW; ++p) {
        int64_t acc = conv_at(o, p / OW, p % OW) + bias[static_cast<size_t>(o)];
        float real = static_cast<float>(acc) * (sx * sw[static_cast<size_t>(o)] / sy);
        ASSERT_EQ(at<int8_t>(out.at(0), o * OH * OW + p), quantize(real, 1.0f, -10, -128, 127))
            << what << " channel " << o << " position " << p;
      }
  }
}

// A constant int8 filter bank without a zero point takes the int8 convolution (conv2d_int8):
// uint8 and int8 inputs, with and without a zero point (the padding then holds it), stride 2 and
// asymmetric padding, channels that the kernel's groups of 4 and blocks of 16 do not divide; and
// QLinearConv with a bias. Checked against the formula, compiled and interpreted.
TEST(IntegerProducts, ConstantInt8FiltersTakeTheInt8Convolution) {
  const int64_t C = 5, O = 19, H = 8, W = 7, OH = 4, OW = 4;
  NDArray w = random_ints<int8_t>({O, C, 3, 3}, -128, 127, 11);
  std::vector<int> wv = values_of<int8_t>(w);
  auto window = [](::onnx::NodeProto& n) {
    OnnxModel::attr(n, "pads", V{1, 0, 1, 2});
    OnnxModel::attr(n, "strides", V{2, 2});
  };
  auto conv_at = [&](const NDArray& x, bool s, int zp, int64_t o, int64_t y, int64_t xx) {
    int64_t sum = 0;
    for (int64_t c = 0; c < C; ++c)
      for (int64_t ky = 0; ky < 3; ++ky)
        for (int64_t kx = 0; kx < 3; ++kx) {
          int64_t iy = y * 2 + ky - 1, ix = xx * 2 + kx;
          if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;  // padding: (x - zp) is 0
          const int64_t i = (c * H + iy) * W + ix;
          sum += int64_t{(s ? at<int8_t>(x, i) : at<uint8_t>(x, i)) - zp} *
                 wv[static_cast<size_t>(((o * C + c) * 3 + ky) * 3 + kx)];
        }
    return sum;
  };
  struct Case {
    int x_type;
    bool has_zero_point;
    int zero_point;
  };
  for (const Case& cs :
       {Case{kU8, false, 0}, Case{kU8, true, 100}, Case{kI8, false, 0}, Case{kI8, true, -7}}) {
    SCOPED_TRACE(::testing::Message() << "x type " << cs.x_type << " zero point " << cs.zero_point);
    const bool s = cs.x_type == kI8;
    NDArray x = s ? random_ints<int8_t>({1, C, H, W}, -128, 127, 12)
                  : random_ints<uint8_t>({1, C, H, W}, 0, 255, 12);
    OnnxModel m(10);
    m.input("x", {1, C, H, W}, cs.x_type);
    init_ints(m, "w", {O, C, 3, 3}, kI8, wv);
    std::vector<std::string> ins = {"x", "w"};
    if (cs.has_zero_point) {
      init_ints(m, "xzp", {}, cs.x_type, {cs.zero_point});
      ins.push_back("xzp");
    }
    m.output("y");
    window(m.node("ConvInteger", ins, {"y"}, "conv"));
    graph::CompiledGraph cg =
        graph::CompiledGraph::build(frontend::import_onnx_bytes(m.bytes()), Target::host(), {});
    EXPECT_NE(cg.summary().find("conv2d_int8"), std::string::npos) << cg.summary();
    for (const auto& [what, out] : run_both(m, {x})) {
      ASSERT_EQ(out.at(0).shape(), (V{1, O, OH, OW})) << what;
      for (int64_t o = 0; o < O; ++o)
        for (int64_t p = 0; p < OH * OW; ++p)
          ASSERT_EQ(out.at(0).data_as<int32_t>()[o * OH * OW + p],
                    conv_at(x, s, cs.zero_point, o, p / OW, p % OW))
              << what << " channel " << o << " position " << p;
    }
  }
  // QLinearConv: uint8 in with a zero point, the bias, per-channel scales, uint8 out.
  NDArray x = random_ints<uint8_t>({1, C, H, W}, 0, 255, 13);
  const float sx = 0.05f, sy = 3.0f;
  std::vector<float> sw(O);
  std::vector<int> bias(O), zeros(O, 0);
  for (int64_t o = 0; o < O; ++o) {
    sw[static_cast<size_t>(o)] = 0.01f + 0.002f * static_cast<float>(o);
    bias[static_cast<size_t>(o)] = static_cast<int>(o * 97) - 900;
  }
  OnnxModel q(10);
  q.input("x", {1, C, H, W}, kU8);
  q.init_floats("sx", {}, {sx});
  init_ints(q, "xzp", {}, kU8, {60});
  init_ints(q, "w", {O, C, 3, 3}, kI8, wv);
  q.init_floats("sw", {O}, sw);
  init_ints(q, "wzp", {O}, kI8, zeros);
  q.init_floats("sy", {}, {sy});
  init_ints(q, "yzp", {}, kU8, {128});
  init_ints(q, "bias", {O}, kI32, bias);
  q.output("y");
  window(q.node("QLinearConv", {"x", "sx", "xzp", "w", "sw", "wzp", "sy", "yzp", "bias"}, {"y"},
                "qconv"));
  for (const auto& [what, out] : run_both(q, {x})) {
    for (int64_t o = 0; o < O; ++o)
      for (int64_t p = 0; p < OH * OW; ++p) {
        int64_t acc = conv_at(x, false, 60, o, p / OW, p % OW) + bias[static_cast<size_t>(o)];
        float real = static_cast<float>(acc) * (sx * sw[static_cast<size_t>(o)] / sy);
        ASSERT_EQ(at<uint8_t>(out.at(0), o * OH * OW + p), quantize(real, 1.0f, 128, 0, 255))
            << what << " channel " << o << " position " << p;
      }
  }
}

// A depthwise ConvInteger (group = C = O, the filter [C, 1, KH, KW]) takes the int8 depthwise
// convolution: uint8 and int8 inputs with a zero point (the padding holds it), stride 2 and
// asymmetric padding, channels that its blocks of 16 do not divide. Checked against the formula,
// compiled and interpreted.
TEST(IntegerProducts, DepthwiseInt8FiltersTakeTheInt8DepthwiseConvolution) {
  const int64_t C = 21, H = 9, W = 8, OH = 5, OW = 4;
  NDArray w = random_ints<int8_t>({C, 1, 3, 3}, -128, 127, 21);
  std::vector<int> wv = values_of<int8_t>(w);
  auto conv_at = [&](const NDArray& x, bool s, int zp, int64_t c, int64_t y, int64_t xx) {
    int64_t sum = 0;
    for (int64_t ky = 0; ky < 3; ++ky)
      for (int64_t kx = 0; kx < 3; ++kx) {
        int64_t iy = y * 2 + ky - 1, ix = xx * 2 + kx;
        if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;  // padding: (x - zp) is 0
        const int64_t i = (c * H + iy) * W + ix;
        sum += int64_t{(s ? at<int8_t>(x, i) : at<uint8_t>(x, i)) - zp} *
               wv[static_cast<size_t>((c * 3 + ky) * 3 + kx)];
      }
    return sum;
  };
  for (const auto& [x_type, zero_point] : {std::pair{kU8, 77}, std::pair{kI8, -5}}) {
    SCOPED_TRACE(::testing::Message() << "x type " << x_type << " zero point " << zero_point);
    const bool s = x_type == kI8;
    NDArray x = s ? random_ints<int8_t>({1, C, H, W}, -128, 127, 22)
                  : random_ints<uint8_t>({1, C, H, W}, 0, 255, 22);
    OnnxModel m(10);
    m.input("x", {1, C, H, W}, x_type);
    init_ints(m, "w", {C, 1, 3, 3}, kI8, wv);
    init_ints(m, "xzp", {}, x_type, {zero_point});
    m.output("y");
    ::onnx::NodeProto& n = m.node("ConvInteger", {"x", "w", "xzp"}, {"y"}, "conv");
    OnnxModel::attr(n, "pads", V{1, 0, 1, 2});
    OnnxModel::attr(n, "strides", V{2, 2});
    OnnxModel::attr(n, "group", C);
    graph::CompiledGraph cg =
        graph::CompiledGraph::build(frontend::import_onnx_bytes(m.bytes()), Target::host(), {});
    EXPECT_NE(cg.summary().find("depthwise_conv2d_int8"), std::string::npos) << cg.summary();
    for (const auto& [what, out] : run_both(m, {x})) {
      ASSERT_EQ(out.at(0).shape(), (V{1, C, OH, OW})) << what;
      for (int64_t c = 0; c < C; ++c)
        for (int64_t p = 0; p < OH * OW; ++p)
          ASSERT_EQ(out.at(0).data_as<int32_t>()[c * OH * OW + p],
                    conv_at(x, s, zero_point, c, p / OW, p % OW))
              << what << " channel " << c << " position " << p;
    }
  }
}

// A grouped ConvInteger (ResNeXt's 4 channels per group: 8 groups, 4 per block of 16 filters)
// takes the int8 convolution with groups; one whose groups the blocks do not take (6 channels per
// group) stays on the float path. Both against the formula, compiled and interpreted.
TEST(IntegerProducts, GroupedInt8FiltersTakeTheGroupedInt8Convolution) {
  const int64_t H = 7, W = 6;
  for (const auto& [C, group, int8] : {std::tuple<int64_t, int64_t, bool>{32, 8, true},
                                       std::tuple<int64_t, int64_t, bool>{36, 6, false}}) {
    const int64_t O = C, Cg = C / group, Og = O / group;
    SCOPED_TRACE(::testing::Message() << "C=" << C << " group=" << group);
    NDArray w = random_ints<int8_t>({O, Cg, 3, 3}, -128, 127, 31);
    std::vector<int> wv = values_of<int8_t>(w);
    NDArray x = random_ints<uint8_t>({1, C, H, W}, 0, 255, 32);
    const int zp = 77;
    auto conv_at = [&](int64_t o, int64_t y, int64_t xx) {
      int64_t sum = 0;
      for (int64_t ci = 0; ci < Cg; ++ci)
        for (int64_t ky = 0; ky < 3; ++ky)
          for (int64_t kx = 0; kx < 3; ++kx) {
            int64_t iy = y + ky - 1, ix = xx + kx - 1;
            if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;  // padding: (x - zp) is 0
            const int64_t c = o / Og * Cg + ci;
            sum += int64_t{at<uint8_t>(x, (c * H + iy) * W + ix) - zp} *
                   wv[static_cast<size_t>(((o * Cg + ci) * 3 + ky) * 3 + kx)];
          }
      return sum;
    };
    OnnxModel m(10);
    m.input("x", {1, C, H, W}, kU8);
    init_ints(m, "w", {O, Cg, 3, 3}, kI8, wv);
    init_ints(m, "xzp", {}, kU8, {zp});
    m.output("y");
    ::onnx::NodeProto& n = m.node("ConvInteger", {"x", "w", "xzp"}, {"y"}, "conv");
    OnnxModel::attr(n, "pads", V{1, 1, 1, 1});
    OnnxModel::attr(n, "group", group);
    graph::CompiledGraph cg =
        graph::CompiledGraph::build(frontend::import_onnx_bytes(m.bytes()), Target::host(), {});
    EXPECT_EQ(cg.summary().find("conv2d_int8") != std::string::npos, int8) << cg.summary();
    for (const auto& [what, out] : run_both(m, {x})) {
      ASSERT_EQ(out.at(0).shape(), (V{1, O, H, W})) << what;
      for (int64_t o = 0; o < O; ++o)
        for (int64_t p = 0; p < H * W; ++p)
          ASSERT_EQ(out.at(0).data_as<int32_t>()[o * H * W + p], conv_at(o, p / W, p % W))
              << what << " channel " << o << " position " << p;
    }
  }
}

// The QDQ form, as quantization tools write it: a float Conv, MatMul or Gemm reading
// DequantizeLinear outputs (a uint8 activation, an int8 weight symmetric per channel) runs as an
// integer product on the int8 kernels, scaled and biased in float. The result is the float model
// of those integers: sum((xq - zx) * wq) * (sx * sw) + b, to float32 rounding. A weight with a
// zero point keeps the float path, with the same result.
TEST(Qdq, ConvMatMulAndGemmRunOnTheInt8Kernels) {
  const int64_t C = 6, O = 10, H = 6, W = 5, OH = 6, OW = 5, K = 12, N = 7;
  NDArray xq = random_ints<uint8_t>({1, C, H, W}, 0, 255, 21);
  NDArray wq = random_ints<int8_t>({O, C, 3, 3}, -127, 127, 22);
  NDArray bq = random_ints<int8_t>({K, N}, -127, 127, 23);
  std::vector<int> wv = values_of<int8_t>(wq), bv = values_of<int8_t>(bq);
  const float sx = 0.03f;
  const int zx = 110;
  std::vector<float> sw(O), bias(O), sb(N);
  for (int64_t o = 0; o < O; ++o) {
    sw[static_cast<size_t>(o)] = 0.002f * static_cast<float>(o + 1);
    bias[static_cast<size_t>(o)] = 0.25f * static_cast<float>(o) - 1.0f;
  }
  for (int64_t n = 0; n < N; ++n)
    sb[static_cast<size_t>(n)] = 0.01f + 0.001f * static_cast<float>(n);
  auto expect_close = [](float got, double want, const std::string& where) {
    ASSERT_NEAR(got, want, 1e-5 * (1 + std::abs(want))) << where;
  };
  for (bool zero_point_on_weight : {false, true}) {
    SCOPED_TRACE(zero_point_on_weight ? "weight zero point 1: float path" : "QDQ: int8 path");
    OnnxModel m(13);
    m.input("xq", {1, C, H, W}, kU8);
    m.init_floats("sx", {}, {sx});
    init_ints(m, "zx", {}, kU8, {zx});
    init_ints(m, "wq", {O, C, 3, 3}, kI8, wv);
    m.init_floats("sw", {O}, sw);
    init_ints(m, "zw", {O}, kI8, std::vector<int>(O, zero_point_on_weight ? 1 : 0));
    m.init_floats("b", {O}, bias);
    m.output("y");
    m.node("DequantizeLinear", {"xq", "sx", "zx"}, {"x"}, "dqx");
    OnnxModel::attr(m.node("DequantizeLinear", {"wq", "sw", "zw"}, {"w"}, "dqw"), "axis",
                    int64_t{0});
    ::onnx::NodeProto& conv = m.node("Conv", {"x", "w", "b"}, {"y"}, "conv");
    OnnxModel::attr(conv, "pads", V{1, 1, 1, 1});
    graph::CompiledGraph cg =
        graph::CompiledGraph::build(frontend::import_onnx_bytes(m.bytes()), Target::host(), {});
    EXPECT_EQ(cg.summary().find("conv2d_int8") != std::string::npos, !zero_point_on_weight)
        << cg.summary();
    // The summary counts the int8 products and names what stayed float: here nothing.
    EXPECT_EQ(cg.summary().find("int8: 1 products; left in float: none") != std::string::npos,
              !zero_point_on_weight)
        << cg.summary();
    const int wz = zero_point_on_weight ? 1 : 0;
    for (const auto& [what, out] : run_both(m, {xq})) {
      for (int64_t o = 0; o < O; ++o)
        for (int64_t p = 0; p < OH * OW; ++p) {
          int64_t sum = 0;
          for (int64_t c = 0; c < C; ++c)
            for (int64_t ky = 0; ky < 3; ++ky)
              for (int64_t kx = 0; kx < 3; ++kx) {
                int64_t iy = p / OW + ky - 1, ix = p % OW + kx - 1;
                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                sum += int64_t{at<uint8_t>(xq, (c * H + iy) * W + ix) - zx} *
                       (wv[static_cast<size_t>(((o * C + c) * 3 + ky) * 3 + kx)] - wz);
              }
          const double want = static_cast<double>(sum) * sx * sw[static_cast<size_t>(o)] +
                              bias[static_cast<size_t>(o)];
          expect_close(out.at(0).data_as<float>()[o * OH * OW + p], want,
                       std::string(what) + " conv channel " + std::to_string(o));
        }
    }
  }
  // MatMul (B [K, N], per-column scale along axis 1) and Gemm (B [N, K] transposed, axis 0).
  NDArray aq = random_ints<uint8_t>({3, K}, 0, 255, 24);
  for (bool gemm : {false, true}) {
    SCOPED_TRACE(gemm ? "Gemm" : "MatMul");
    std::vector<int> b_init = bv;
    if (gemm)
      for (int64_t k = 0; k < K; ++k)
        for (int64_t n = 0; n < N; ++n)
          b_init[static_cast<size_t>(n * K + k)] = bv[static_cast<size_t>(k * N + n)];
    OnnxModel m(13);
    m.input("aq", {3, K}, kU8);
    m.init_floats("sa", {}, {sx});
    init_ints(m, "za", {}, kU8, {zx});
    init_ints(m, "bq", gemm ? V{N, K} : V{K, N}, kI8, b_init);
    m.init_floats("sb", {N}, sb);
    m.output("y");
    m.node("DequantizeLinear", {"aq", "sa", "za"}, {"a"}, "dqa");
    OnnxModel::attr(m.node("DequantizeLinear", {"bq", "sb"}, {"b"}, "dqb"), "axis",
                    int64_t{gemm ? 0 : 1});
    if (gemm)
      OnnxModel::attr(m.node("Gemm", {"a", "b"}, {"y"}, "gemm"), "transB", int64_t{1});
    else
      m.node("MatMul", {"a", "b"}, {"y"}, "mm");
    graph::CompiledGraph cg =
        graph::CompiledGraph::build(frontend::import_onnx_bytes(m.bytes()), Target::host(), {});
    EXPECT_NE(cg.summary().find("dense_int8"), std::string::npos) << cg.summary();
    for (const auto& [what, out] : run_both(m, {aq})) {
      for (int64_t r = 0; r < 3; ++r)
        for (int64_t n = 0; n < N; ++n) {
          int64_t sum = 0;
          for (int64_t k = 0; k < K; ++k)
            sum += int64_t{at<uint8_t>(aq, r * K + k) - zx} * bv[static_cast<size_t>(k * N + n)];
          expect_close(out.at(0).data_as<float>()[r * N + n],
                       static_cast<double>(sum) * sx * sb[static_cast<size_t>(n)],
                       std::string(what) + " row " + std::to_string(r));
        }
    }
  }
}

// A network in ONNX Runtime's QDQ conventions (tests/frontend/data/qdq_ort_style/generate.py:
// uint8 asymmetric activations, int8 weights per channel, int32 biases through
// DequantizeLinear, a residual Add and a pool in float) runs its three products on the int8
// kernels and computes what numpy computes from ONNX's definitions, on three inputs.
TEST(Qdq, OnnxRuntimeStyleModelMatchesItsNumpyEvaluation) {
  const std::string dir = std::string(ANVIL_FRONTEND_DATA) + "/qdq_ort_style/";
  graph::CompiledGraph cg =
      graph::CompiledGraph::build(frontend::import_onnx(dir + "model.onnx"), Target::host(), {});
  EXPECT_NE(cg.summary().find("int8: 3 products; left in float: none"), std::string::npos)
      << cg.summary();
  for (int k = 0; k < 3; ++k) {
    NDArray x = runtime::load_npy(dir + "x" + std::to_string(k) + ".npy");
    NDArray want = runtime::load_npy(dir + "y" + std::to_string(k) + ".npy");
    NDArray got = cg.run({x})[0];
    ASSERT_EQ(got.shape(), want.shape());
    for (int64_t i = 0; i < want.numel(); ++i) {
      const float w = want.data_as<float>()[i];
      EXPECT_NEAR(got.data_as<float>()[i], w, 1e-5 * (1 + std::abs(w)))
          << "case " << k << ", " << i;
    }
  }
}

}  // namespace
}  // namespace anvil
