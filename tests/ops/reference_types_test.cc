// The references beyond what compiled code takes: float16/float64 and 8- to 64-bit integers
// (rounding and wrap-around as NumPy has them), the reference-only 3-D convolutions and pools and
// 1-D/3-D transposed convolutions (against independent direct loops here, and against the 2-D
// operators on a unit depth), cubic resize, and empty tensors. Compiled code must refuse what it
// does not handle with an error naming the op.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "anvil/ops/host_value.h"
#include "anvil/ops/op.h"
#include "anvil/te/tensor.h"
#include "testing/errors.h"
#include "testing/kernel_args.h"

namespace anvil::ops {
namespace {

using ir::DataType;
using NDArray = runtime::NDArray;

const DataType f32 = DataType::Float32();
const DataType f16 = DataType::Float(16);
const DataType f64 = DataType::Float(64);

void expect_has(const std::string& msg, const std::string& part) {
  EXPECT_NE(msg.find(part), std::string::npos) << "message: " << msg << "\nexpected: " << part;
}

NDArray run1(const std::string& op, const std::vector<NDArray>& in,
             std::map<std::string, AttrValue> attrs = {}) {
  return lookup(op).reference(in, Attrs(op, std::move(attrs))).at(0);
}

template <typename T>
NDArray make(std::vector<int64_t> shape, DataType t, const std::vector<T>& v) {
  NDArray a = testing::array(std::move(shape), t);
  EXPECT_EQ(a.nbytes(), v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(a.data(), v.data(), a.nbytes());
  return a;
}

NDArray random(std::vector<int64_t> shape, std::mt19937& rng, DataType t = f32) {
  NDArray a = testing::array(std::move(shape), t);
  std::uniform_real_distribution<double> d(-1, 1);
  for (int64_t i = 0; i < a.numel(); ++i) host::write_f64(a, i, d(rng));
  return a;
}

TEST(ReferenceTypes, Float16RoundsToNearestEven) {
  EXPECT_EQ(host::double_to_half(1.0), 0x3c00);
  EXPECT_EQ(host::double_to_half(-2.0), 0xc000);
  EXPECT_EQ(host::double_to_half(65504.0), 0x7bff);                     // the largest
  EXPECT_EQ(host::double_to_half(65519.99), 0x7bff);                    // below the midpoint
  EXPECT_EQ(host::double_to_half(65520.0), 0x7c00);                     // a tie rounds to inf
  EXPECT_EQ(host::double_to_half(std::ldexp(1.0, -24)), 0x0001);        // smallest subnormal
  EXPECT_EQ(host::double_to_half(std::ldexp(1.0, -25)), 0x0000);        // tie to even: zero
  EXPECT_EQ(host::double_to_half(std::ldexp(3.0, -25)), 0x0002);        // tie to even: 2
  EXPECT_EQ(host::double_to_half(1.0 + std::ldexp(1.0, -11)), 0x3c00);  // tie: even 1.0
  EXPECT_EQ(host::double_to_half(1.0 + std::ldexp(3.0, -11)), 0x3c02);  // tie: even 1+2^-9
  EXPECT_EQ(host::double_to_half(std::ldexp(1.0, -14) * (1 - std::ldexp(1.0, -12))),
            0x0400);  // rounds up into the smallest normal
  EXPECT_EQ(host::double_to_half(-INFINITY), 0xfc00);
  EXPECT_EQ(host::double_to_half(NAN) & 0x7e00, 0x7e00);
  for (uint32_t h = 0; h < 0x10000; ++h) {  // every finite half round-trips through a double
    auto b = static_cast<uint16_t>(h);
    double v = host::half_to_double(b);
    if (std::isnan(v)) continue;
    ASSERT_EQ(host::double_to_half(v), b) << "half 0x" << std::hex << h;
  }
}

TEST(ReferenceTypes, IntegerArithmeticWrapsAtItsWidth) {
  DataType u8 = DataType::UInt(8), i8 = DataType::Int(8), u16 = DataType::UInt(16);
  NDArray a = make<uint8_t>({3}, u8, {200, 3, 255}), b = make<uint8_t>({3}, u8, {100, 5, 2});
  EXPECT_EQ(testing::read<uint8_t>(run1("add", {a, b})), (std::vector<uint8_t>{44, 8, 1}));
  EXPECT_EQ(testing::read<uint8_t>(run1("sub", {a, b})), (std::vector<uint8_t>{100, 254, 253}));
  EXPECT_EQ(testing::read<uint8_t>(run1("mul", {a, b})), (std::vector<uint8_t>{32, 15, 254}));
  EXPECT_EQ(testing::read<uint8_t>(run1("div", {a, b})), (std::vector<uint8_t>{2, 0, 127}));
  NDArray c = make<int8_t>({2}, i8, {100, -128}), d = make<int8_t>({2}, i8, {3, -1});
  EXPECT_EQ(testing::read<int8_t>(run1("mul", {c, d})), (std::vector<int8_t>{44, -128}));
  EXPECT_EQ(testing::read<int8_t>(run1("div", {c, d})), (std::vector<int8_t>{33, -128}));
  EXPECT_EQ(testing::read<int8_t>(run1("neg", {c})), (std::vector<int8_t>{-100, -128}));
  EXPECT_EQ(testing::read<int8_t>(run1("clip", {c}, {{"min", -5.0}, {"max", 7.0}})),
            (std::vector<int8_t>{7, -5}));
  NDArray g = make<int32_t>({2}, DataType::Int32(), {-7, 5});  // signed 32-bit stays signed
  EXPECT_EQ(testing::read<int32_t>(run1("relu", {g})), (std::vector<int32_t>{0, 5}));
  EXPECT_EQ(testing::read<double>(run1("cast", {g}, {{"to", std::string("float64")}})),
            (std::vector<double>{-7, 5}));
  NDArray e = make<uint16_t>({2}, u16, {65535, 1}), f = make<uint16_t>({2}, u16, {1, 2});
  EXPECT_EQ(testing::read<uint16_t>(run1("add", {e, f})), (std::vector<uint16_t>{0, 3}));
}

TEST(ReferenceTypes, Uint64OrdersAboveInt64Max) {
  DataType u64 = DataType::UInt(64);
  uint64_t big = (uint64_t{1} << 63) + 5;
  NDArray a = make<uint64_t>({2}, u64, {big, 7}), b = make<uint64_t>({2}, u64, {3, big});
  EXPECT_EQ(testing::read<uint64_t>(run1("maximum", {a, b})), (std::vector<uint64_t>{big, big}));
  EXPECT_EQ(testing::read<uint64_t>(run1("minimum", {a, b})), (std::vector<uint64_t>{3, 7}));
  EXPECT_EQ(testing::read<uint8_t>(run1("greater", {a, b})), (std::vector<uint8_t>{1, 0}));
  EXPECT_EQ(testing::read<uint64_t>(run1("div", {a, b})), (std::vector<uint64_t>{big / 3, 0}));
  EXPECT_EQ(testing::read<float>(run1("cast", {a}, {{"to", std::string("float32")}}))[0],
            static_cast<float>(big));
}

TEST(ReferenceTypes, CastsBetweenFloatWidthsAndIntegers) {
  NDArray x = make<double>({4}, f64, {1.0 / 3, 70000.0, -2.75, 300.9});
  EXPECT_EQ(testing::read<uint16_t>(run1("cast", {x}, {{"to", std::string("float16")}})),
            (std::vector<uint16_t>{0x3555, 0x7c00, 0xc180, 0x5cb4}));
  EXPECT_EQ(testing::read<float>(run1("cast", {x}, {{"to", std::string("float32")}})),
            (std::vector<float>{1.0f / 3, 70000.0f, -2.75f, 300.9f}));
  // To integers: truncated toward zero, then wrapped to the width (300 -> 44 in uint8).
  EXPECT_EQ(testing::read<uint8_t>(run1("cast", {x}, {{"to", std::string("uint8")}})),
            (std::vector<uint8_t>{0, 112, 254, 44}));
  NDArray h = make<uint16_t>({2}, f16, {0x3c00, 0x0001});
  EXPECT_EQ(testing::read<double>(run1("cast", {h}, {{"to", std::string("float64")}})),
            (std::vector<double>{1.0, std::ldexp(1.0, -24)}));
}

TEST(ReferenceTypes, ReductionsKeepTheFloatWidth) {
  NDArray x = make<double>({2, 2}, f64, {0.1, 0.2, 2.0, 3.0});
  NDArray s = run1("reduce_sum", {x}, {{"axes", std::vector<int64_t>{1}}});
  EXPECT_EQ(s.dtype().bits, 64);
  EXPECT_EQ(testing::read<double>(s), (std::vector<double>{0.1 + 0.2, 5.0}));
}

// Compiled reductions take float32 and float64; float16 is the references' alone.
TEST(ReferenceTypes, CompiledCodeRefusesReferenceOnlyTypes) {
  te::Tensor d = te::placeholder(to_exprs({2, 3}), f16, "d");
  expect_has(
      testing::user_error([&] { lookup("reduce_sum").compute({d}, Attrs("reduce_sum", {})); }),
      "reduce_sum: input is float16, which compiled code does not take yet");
}

// ---- 3-D windows

// Direct 3-D convolution: out[n][o][z][y][x] = b[o] + sum w[o][c][k..] * x[n][g*Cg + c][...].
std::vector<double> direct_conv3d(const NDArray& x, const NDArray& w, const NDArray& b,
                                  std::vector<int64_t> s, std::vector<int64_t> d,
                                  std::vector<int64_t> p, int64_t group,
                                  std::vector<int64_t>& oshape) {
  auto X = x.shape(), W = w.shape();
  int64_t N = X[0], C = X[1], O = W[0], Cg = C / group, Og = O / group;
  std::vector<int64_t> out(3);
  for (int k = 0; k < 3; ++k)
    out[k] = (X[2 + k] + p[k] + p[3 + k] - (W[2 + k] - 1) * d[k] - 1) / s[k] + 1;
  oshape = {N, O, out[0], out[1], out[2]};
  std::vector<double> r;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t oz = 0; oz < out[0]; ++oz)
        for (int64_t oy = 0; oy < out[1]; ++oy)
          for (int64_t ox = 0; ox < out[2]; ++ox) {
            double acc = host::read_f64(b, o);
            for (int64_t c = 0; c < Cg; ++c)
              for (int64_t kz = 0; kz < W[2]; ++kz)
                for (int64_t ky = 0; ky < W[3]; ++ky)
                  for (int64_t kx = 0; kx < W[4]; ++kx) {
                    int64_t iz = oz * s[0] + kz * d[0] - p[0], iy = oy * s[1] + ky * d[1] - p[1],
                            ix = ox * s[2] + kx * d[2] - p[2];
                    if (iz < 0 || iy < 0 || ix < 0 || iz >= X[2] || iy >= X[3] || ix >= X[4])
                      continue;
                    int64_t ci = (o / Og) * Cg + c;
                    acc += host::read_f64(w, (((o * Cg + c) * W[2] + kz) * W[3] + ky) * W[4] + kx) *
                           host::read_f64(x, (((n * C + ci) * X[2] + iz) * X[3] + iy) * X[4] + ix);
                  }
            r.push_back(acc);
          }
  return r;
}

TEST(ReferenceTypes, Conv3dMatchesDirectLoops) {
  std::mt19937 rng(3);
  NDArray x = random({2, 4, 5, 4, 6}, rng), w = random({6, 2, 3, 2, 3}, rng), b = random({6}, rng);
  std::vector<int64_t> s = {2, 1, 2}, d = {1, 2, 1}, p = {1, 0, 2, 0, 1, 1};
  std::vector<int64_t> oshape;
  std::vector<double> want = direct_conv3d(x, w, b, s, d, p, 2, oshape);
  Attrs attrs("conv3d", {{"strides", s}, {"dilations", d}, {"pads", p}, {"group", int64_t{2}}});
  std::vector<TensorType> types = {{x.shape(), f32}, {w.shape(), f32}, {b.shape(), f32}};
  EXPECT_EQ(lookup("conv3d").infer(types, attrs).at(0), (TensorType{oshape, f32}));
  NDArray got = lookup("conv3d").reference({x, w, b}, attrs).at(0);
  ASSERT_EQ(got.shape(), oshape);
  for (int64_t i = 0; i < got.numel(); ++i)
    ASSERT_NEAR(got.data_as<float>()[i], want[static_cast<size_t>(i)], 1e-5) << "element " << i;
}

// The same operator with a unit leading spatial dimension against the 2-D one (conv.cc,
// pool_norm.cc: independent implementations).
NDArray unit_depth(const NDArray& a) {
  std::vector<int64_t> s = a.shape();
  s.insert(s.begin() + 2, 1);
  NDArray r = testing::array(s, f32);
  std::memcpy(r.data(), a.data(), a.nbytes());
  return r;
}

void expect_same(const NDArray& got3, const NDArray& want2, double tol) {
  ASSERT_EQ(got3.numel(), want2.numel());
  for (int64_t i = 0; i < got3.numel(); ++i)
    ASSERT_NEAR(got3.data_as<float>()[i], want2.data_as<float>()[i], tol) << "element " << i;
}

TEST(ReferenceTypes, TransposedConvolutionsMatchTheTwoDimensionalOne) {
  std::mt19937 rng(5);
  NDArray x = random({1, 4, 3, 5}, rng), w = random({4, 3, 3, 2}, rng), b = random({6}, rng);
  Attrs a2("conv2d_transpose", {{"strides", std::vector<int64_t>{2, 3}},
                                {"pads", std::vector<int64_t>{1, 0, 0, 1}},
                                {"output_padding", std::vector<int64_t>{1, 2}},
                                {"group", int64_t{2}}});
  NDArray want = lookup("conv2d_transpose").reference({x, w, b}, a2).at(0);
  Attrs a3("conv3d_transpose", {{"strides", std::vector<int64_t>{1, 2, 3}},
                                {"pads", std::vector<int64_t>{0, 1, 0, 0, 0, 1}},
                                {"output_padding", std::vector<int64_t>{0, 1, 2}},
                                {"group", int64_t{2}}});
  NDArray got = lookup("conv3d_transpose").reference({unit_depth(x), unit_depth(w), b}, a3).at(0);
  EXPECT_EQ(got.shape(), (std::vector<int64_t>{1, 6, 1, want.shape()[2], want.shape()[3]}));
  expect_same(got, want, 1e-5);
  // 1-D: a unit height in the 2-D operator.
  NDArray x1 = random({2, 2, 5}, rng), w1 = random({2, 3, 4}, rng);
  Attrs t1("conv1d_transpose", {{"strides", std::vector<int64_t>{2}},
                                {"dilations", std::vector<int64_t>{2}},
                                {"pads", std::vector<int64_t>{1, 2}}});
  Attrs t2("conv2d_transpose", {{"strides", std::vector<int64_t>{1, 2}},
                                {"dilations", std::vector<int64_t>{1, 2}},
                                {"pads", std::vector<int64_t>{0, 1, 0, 2}}});
  NDArray got1 = lookup("conv1d_transpose").reference({x1, w1}, t1).at(0);
  NDArray want1 = lookup("conv2d_transpose").reference({unit_depth(x1), unit_depth(w1)}, t2).at(0);
  expect_same(got1, want1, 1e-5);
}

TEST(ReferenceTypes, Pools3dMatchTheTwoDimensionalOnes) {
  std::mt19937 rng(9);
  NDArray x = random({2, 3, 7, 6}, rng);
  for (bool avg : {false, true}) {
    std::map<std::string, AttrValue> a2 = {{"kernel_shape", std::vector<int64_t>{3, 2}},
                                           {"strides", std::vector<int64_t>{2, 2}},
                                           {"pads", std::vector<int64_t>{1, 0, 1, 1}},
                                           {"ceil_mode", int64_t{1}}};
    std::map<std::string, AttrValue> a3 = {{"kernel_shape", std::vector<int64_t>{1, 3, 2}},
                                           {"strides", std::vector<int64_t>{1, 2, 2}},
                                           {"pads", std::vector<int64_t>{0, 1, 0, 0, 1, 1}},
                                           {"ceil_mode", int64_t{1}}};
    if (avg) a2["count_include_pad"] = a3["count_include_pad"] = int64_t{1};
    NDArray want = run1(avg ? "avg_pool2d" : "max_pool2d", {x}, a2);
    NDArray got = run1(avg ? "avg_pool3d" : "max_pool3d", {unit_depth(x)}, a3);
    expect_same(got, want, 1e-6);
  }
  // A real 3-D window: the max of a 2x2x2 cube of 0..7 is 7, its average 3.5.
  std::vector<float> v(8);
  for (int i = 0; i < 8; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i);
  NDArray cube = make<float>({1, 1, 2, 2, 2}, f32, v);
  std::map<std::string, AttrValue> k = {{"kernel_shape", std::vector<int64_t>{2, 2, 2}}};
  EXPECT_EQ(testing::read<float>(run1("max_pool3d", {cube}, k)), std::vector<float>{7});
  EXPECT_EQ(testing::read<float>(run1("avg_pool3d", {cube}, k)), std::vector<float>{3.5f});
}

TEST(ReferenceTypes, MaxPoolIndicesAreFlatInRowOrColumnMajorOrder) {
  NDArray x = make<float>({1, 1, 2, 3}, f32, {1, 5, 2, 7, 3, 9});
  for (int64_t order : {0, 1}) {
    std::vector<NDArray> out =
        lookup("max_pool2d_with_indices")
            .reference(
                {x}, Attrs("max_pool2d_with_indices", {{"kernel_shape", std::vector<int64_t>{2, 2}},
                                                       {"storage_order", order}}));
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(testing::read<float>(out[0]), (std::vector<float>{7, 9}));
    // The maxima sit at (h, w) = (1, 0) and (1, 2): h*W + w row-major, w*H + h column-major.
    EXPECT_EQ(testing::read<int64_t>(out[1]),
              order == 0 ? (std::vector<int64_t>{3, 5}) : (std::vector<int64_t>{1, 5}));
  }
}

TEST(ReferenceTypes, WindowsWithoutCompiledFormSaySo) {
  te::Tensor x = te::placeholder(to_exprs({1, 1, 4, 4}), f32, "x");
  expect_has(testing::user_error([&] {
               lookup("max_pool2d_with_indices")
                   .compute({x}, Attrs("max_pool2d_with_indices",
                                       {{"kernel_shape", std::vector<int64_t>{2, 2}}}));
             }),
             "max_pool2d_with_indices: has no compiled form yet (compiled code supports 1-D, 2-D "
             "and 3-D convolutions, transposed or not, and 2-D and 3-D pools, not pools with "
             "indices); input x is float32[1, 1, 4, 4]");
}

// ---- cubic resize, empty tensors

TEST(ReferenceTypes, CubicResizeOnARamp) {
  // Keys' cubic kernel sums to one; with A = -0.5 it also reproduces linear functions, so on a
  // ramp every output whose four taps lie inside the input is its source coordinate. With
  // A = -0.75 a ramp bends: at fraction 1/4 the taps' weights (w(1.25), w(0.25), w(0.75),
  // w(1.75)) = (-0.10546875, 0.87890625, 0.26171875, -0.03515625) give floor + 0.296875.
  std::vector<float> ramp(8);
  for (int i = 0; i < 8; ++i) ramp[static_cast<size_t>(i)] = static_cast<float>(i);
  NDArray x = make<float>({1, 1, 1, 8}, f32, ramp);
  auto resize = [&](double A) {
    return run1("resize", {x},
                {{"mode", std::string("cubic")},
                 {"scales", std::vector<double>{1, 1, 1, 2}},
                 {"cubic_coeff_a", A}});
  };
  NDArray y = resize(-0.5);
  ASSERT_EQ(y.shape(), (std::vector<int64_t>{1, 1, 1, 16}));
  for (int64_t o = 3; o < 13; ++o) {  // half_pixel: source (o + 0.5) / 2 - 0.5
    EXPECT_NEAR(y.data_as<float>()[o], (static_cast<double>(o) + 0.5) / 2 - 0.5, 1e-6)
        << "output " << o;
  }
  NDArray z = resize(-0.75);
  EXPECT_NEAR(z.data_as<float>()[3], 1.296875, 1e-6);  // source 1.25
  EXPECT_NEAR(z.data_as<float>()[4], 1.703125, 1e-6);  // source 1.75: the mirror image
  EXPECT_NEAR(z.data_as<float>()[5], 2.296875, 1e-6);  // source 2.25
}

TEST(ReferenceTypes, EmptyTensorsInTheReferencesOnly) {
  NDArray x = testing::array({2, 3}, f32);
  Attrs none("slice", {{"starts", std::vector<int64_t>{1000}},
                       {"ends", std::vector<int64_t>{1000}},
                       {"axes", std::vector<int64_t>{1}}});
  NDArray y = lookup("slice").reference({x}, none).at(0);
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{2, 0}));
  Attrs cat("concat", {{"axis", int64_t{1}}});
  EXPECT_EQ(lookup("concat").reference({y, x}, cat).at(0).shape(), (std::vector<int64_t>{2, 3}));
  te::Tensor t = te::placeholder(to_exprs({2, 3}), f32, "x");
  expect_has(testing::user_error([&] { lookup("slice").compute({t}, none); }),
             "slice: float32[2, 0] is an empty tensor, which compiled code does not support");
  Attrs zero("reshape", {{"shape", std::vector<int64_t>{3, 0}}, {"allowzero", int64_t{1}}});
  EXPECT_EQ(lookup("reshape").reference({y}, zero).at(0).shape(), (std::vector<int64_t>{3, 0}));
}

}  // namespace
}  // namespace anvil::ops
