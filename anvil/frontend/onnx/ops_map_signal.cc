// ONNX operators composed of library ops, for signals and small recurrences: DFT and STFT (products
// with constant cosine and sine matrices), RNN (its time steps unrolled, as the library's lstm and
// gru unroll theirs) and Det (the Leibniz expansion over the permutations of a small matrix).
#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>

#include "anvil/frontend/onnx/importer_internal.h"
#include "anvil/support/error.h"

namespace anvil::frontend::onnx_detail {

namespace {

using AttrMap = std::map<std::string, ops::AttrValue>;
using Vals = std::vector<ValueId>;

ops::Attrs A(AttrMap m = {}) {
  return ops::Attrs("", std::move(m));
}

std::vector<int64_t> ints(std::initializer_list<int64_t> v) {
  return v;
}

// A float32 constant of `shape` from `values`.
ValueId f32_constant(Ctx& c, const std::string& base, std::vector<int64_t> shape,
                     const std::vector<double>& values) {
  runtime::NDArray a = runtime::NDArray::empty(std::move(shape), runtime::dl_float32());
  for (size_t k = 0; k < values.size(); ++k) a.data_as<float>()[k] = static_cast<float>(values[k]);
  return c.constant(base, a);
}

ValueId slice(Ctx& c, ValueId x, int64_t axis, int64_t begin, int64_t end) {
  return c.emit1(
      "slice", A({{"starts", ints({begin})}, {"ends", ints({end})}, {"axes", ints({axis})}}), {x});
}

// The discrete Fourier transform of `x` along `axis`, x real ([..., 1]) or complex ([..., 2]) in
// its last dimension, over n points (the axis cut or zero-padded to n); the first k = n or
// n / 2 + 1 (onesided) frequencies, complex: [..., k, ..., 2]. Each output is a product with
// constant n x k matrices: X_k = sum_j x_j e^(-+2 pi i jk / n) (inverse: + and divided by n).
ValueId dft(Ctx& c, ValueId x, int64_t axis, int64_t n, bool inverse, bool onesided, bool last) {
  std::vector<int64_t> shape = c.g.value(x).type.shape;
  const auto rank = static_cast<int64_t>(shape.size());
  ANVIL_CHECK(rank >= 2 && (shape.back() == 1 || shape.back() == 2), "input ",
              ops::to_string(c.g.value(x).type),
              " must end in a dimension of 1 (real) or 2 (complex) values");
  ANVIL_CHECK(axis >= 0 && axis < rank - 1, "attribute 'axis' = ", axis,
              " must name a signal axis of input ", ops::to_string(c.g.value(x).type));
  ANVIL_CHECK(n >= 1, "the DFT length must be positive, got ", n);
  ANVIL_CHECK(!(onesided && shape.back() == 2), "a onesided DFT takes a real input, got ",
              ops::to_string(c.g.value(x).type));
  // The signal axis last: [..., len] per real and imaginary part.
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < rank - 1; ++d)
    if (d != axis) perm.push_back(d);
  perm.push_back(axis);
  perm.push_back(rank - 1);
  if (axis != rank - 2) x = c.emit1("transpose", A({{"perm", perm}}), {x});
  const int64_t len = shape[static_cast<size_t>(axis)];
  if (n < len) x = slice(c, x, rank - 2, 0, n);
  if (n > len) {
    std::vector<int64_t> pads(static_cast<size_t>(2 * rank), 0);
    pads[static_cast<size_t>(2 * rank - 2)] = n - len;
    x = c.emit1("pad", A({{"pads", pads}}), {x});
  }
  auto part = [&](int64_t p) {
    return c.emit1("squeeze", A({{"axes", ints({rank - 1})}}), {slice(c, x, rank - 1, p, p + 1)});
  };
  const bool complex = shape.back() == 2;
  ValueId re = part(0), im = complex ? part(1) : -1;
  const int64_t k = onesided ? n / 2 + 1 : n;
  // Before the host tables: n x k may be beyond any memory (a fuzzed length).
  c.check_size("DFT's cosine matrix", {{n, k}, ir::DataType::Float(64)}, false);
  // cos and sin of 2 pi (jf mod n) / n, exact at the quarter turns; sin signed for the direction
  // (forward e^-i: im gets -re sin) and both divided by n for the inverse.
  std::vector<double> cs(static_cast<size_t>(n * k)), sn(cs.size());
  const double sign = inverse ? -1.0 : 1.0, scale = inverse ? 1.0 / static_cast<double>(n) : 1.0;
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t f = 0; f < k; ++f) {
      int64_t m = j * f % n;
      double co, si;
      if (4 * m % n == 0) {
        static constexpr double kCos[] = {1, 0, -1, 0}, kSin[] = {0, 1, 0, -1};
        co = kCos[4 * m / n];
        si = kSin[4 * m / n];
      } else {
        double t = 2 * std::numbers::pi * static_cast<double>(m) / static_cast<double>(n);
        co = std::cos(t);
        si = std::sin(t);
      }
      cs[static_cast<size_t>(j * k + f)] = co * scale;
      sn[static_cast<size_t>(j * k + f)] = sign * si * scale;
    }
  }
  ValueId cm = f32_constant(c, "dft_cos", {n, k}, cs), sm = f32_constant(c, "dft_sin", {n, k}, sn);
  auto mm = [&](ValueId a, ValueId b) { return c.emit1("matmul", A(), {a, b}); };
  // Forward: re' = re cos + im sin, im' = im cos - re sin (sin carries the inverse's sign).
  ValueId yre = mm(re, cm), yim = c.emit1("neg", A(), {mm(re, sm)});
  if (complex) {
    yre = c.emit1("add", A(), {yre, mm(im, sm)});
    yim = c.emit1("add", A(), {yim, mm(im, cm)});
  }
  auto unsq = [&](ValueId v) { return c.emit1("unsqueeze", A({{"axes", ints({rank - 1})}}), {v}); };
  ValueId y =
      c.emit1("concat", A({{"axis", rank - 1}}), {unsq(yre), unsq(yim)}, last && axis == rank - 2);
  if (axis == rank - 2) return y;
  std::vector<int64_t> inv(perm.size());
  for (size_t d = 0; d < perm.size(); ++d)
    inv[static_cast<size_t>(perm[d])] = static_cast<int64_t>(d);
  return c.emit1("transpose", A({{"perm", inv}}), {y}, last);
}

}  // namespace

// DFT (opset 17): the length from input dft_length (known at compile time) or the axis.
std::vector<ValueId> map_dft(Ctx& c) {
  const int64_t rank = static_cast<int64_t>(c.type(0).shape.size());
  int64_t axis = normalized_axis(c.attr_int("axis", 1), rank);
  int64_t n =
      c.has_in(1) ? c.int_scalar_in(1, "dft_length") : c.type(0).shape[static_cast<size_t>(axis)];
  return {dft(c, c.in(0), axis, n, c.attr_int("inverse", 0) != 0, c.attr_int("onesided", 0) != 0,
              true)};
}

// STFT (opset 17): frames of the signal [batch, length, 1 or 2] every frame_step samples (a
// gather), times the window, each transformed: [batch, frames, k, 2].
std::vector<ValueId> map_stft(Ctx& c) {
  const ops::TensorType signal = c.type(0);
  ANVIL_CHECK(signal.shape.size() == 3, "input 'signal' ", ops::to_string(signal),
              " must be [batch, length, 1 or 2]");
  int64_t step = c.int_scalar_in(1, "frame_step");
  bool window = c.has_in(2);
  int64_t frame = 0;
  if (c.num_in() > 3 && c.has_in(3)) frame = c.int_scalar_in(3, "frame_length");
  if (window) {
    const ops::TensorType w = c.type(2);
    ANVIL_CHECK(w.shape.size() == 1 && (frame == 0 || w.shape[0] == frame), "input 'window' ",
                ops::to_string(w), " must be 1-D with frame_length (", frame, ") values");
    frame = w.shape[0];
  }
  ANVIL_CHECK(frame >= 1, "needs input 'frame_length' or 'window'");
  ANVIL_CHECK(step >= 1, "input 'frame_step' must be positive, got ", step);
  const int64_t length = signal.shape[1];
  ANVIL_CHECK(frame <= length, "frame_length ", frame, " is longer than the signal (", length, ")");
  const int64_t frames = (length - frame) / step + 1;
  c.check_size("STFT's frame positions", {{frames, frame}, ir::DataType::Int64()}, false);
  std::vector<int64_t> at(static_cast<size_t>(frames * frame));
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t j = 0; j < frame; ++j) at[static_cast<size_t>(f * frame + j)] = f * step + j;
  ValueId x = c.emit1("gather", A({{"axis", int64_t{1}}}),
                      {c.in(0), int64_constant(c, "frame_samples", {frames, frame}, at)});
  if (window) {
    ValueId w = c.emit1("reshape", A({{"shape", ints({1, 1, frame, 1})}}), {c.in(2)});
    x = c.emit1("mul", A(), {x, w});
  }
  return {dft(c, x, 2, frame, false, c.attr_int("onesided", 1) != 0, true)};
}

// RNN (opset 14): per direction, the input projection of every step at once, then the steps
// unrolled: h = f(x_t W^T + h R^T + Wb + Rb). Unrolling takes five nodes and a kernel or two per
// step, so sequences past kMaxUnrolledSteps (both directions counted) are refused rather than
// compiled for minutes.
constexpr int64_t kMaxUnrolledSteps = 4096;

std::vector<ValueId> map_rnn_simple(Ctx& c) {
  const bool batch_major = c.attr_int("layout", 0) == 1;
  ValueId x = c.in(0);
  if (batch_major) x = c.emit1("transpose", A({{"perm", ints({1, 0, 2})}}), {x});
  const std::vector<int64_t> xs = c.g.value(x).type.shape;
  ANVIL_CHECK(xs.size() == 3, "input X ", ops::to_string(c.type(0)), " must be 3-D");
  const int64_t seq = xs[0], hidden = c.attr_int("hidden_size", 0);
  const std::string direction = c.attr_string("direction", "forward");
  ANVIL_CHECK(direction == "forward" || direction == "reverse" || direction == "bidirectional",
              "attribute 'direction' must be forward, reverse or bidirectional, got '", direction,
              "'");
  const int64_t dirs = direction == "bidirectional" ? 2 : 1;
  ANVIL_CHECK(hidden >= 1, "attribute 'hidden_size' must be positive");
  ANVIL_CHECK(seq <= kMaxUnrolledSteps / dirs, "input X ", ops::to_string(c.type(0)), " has ", seq,
              " steps (", direction, "); RNN is unrolled step by step, up to ", kMaxUnrolledSteps,
              " steps over its directions");
  ANVIL_CHECK(c.type(1).shape == ints({dirs, hidden, xs[2]}), "input W ", ops::to_string(c.type(1)),
              " must be [", dirs, ", ", hidden, ", ", xs[2], "]");
  ANVIL_CHECK(c.type(2).shape == ints({dirs, hidden, hidden}), "input R ",
              ops::to_string(c.type(2)), " must be [", dirs, ", ", hidden, ", ", hidden, "]");
  if (c.num_in() > 4 && c.has_in(4)) {
    for (int64_t l : c.ints_in(4, "sequence_lens"))
      ANVIL_CHECK(l == seq, "input 'sequence_lens' must equal the sequence length ", seq, ", got ",
                  l);
  }
  std::vector<std::string> acts;
  if (const ::onnx::AttributeProto* a = c.attr("activations"))
    for (int i = 0; i < a->strings_size(); ++i) acts.push_back(a->strings(i));
  if (acts.empty()) acts.assign(static_cast<size_t>(dirs), "Tanh");
  ANVIL_CHECK(acts.size() == static_cast<size_t>(dirs), "attribute 'activations' needs ", dirs,
              " entries, got ", acts.size());
  for (const char* n : {"activation_alpha", "activation_beta"})
    ANVIL_CHECK(!c.has_attr(n), "attribute '", n, "' is not supported");
  const bool clip = c.has_attr("clip");
  const double bound = c.attr_float("clip", 0);
  Vals ys, finals;
  for (int64_t d = 0; d < dirs; ++d) {
    static const std::map<std::string, std::string> kActs = {
        {"Tanh", "tanh"}, {"Sigmoid", "sigmoid"}, {"Relu", "relu"}};
    auto act = kActs.find(acts[static_cast<size_t>(d)]);
    ANVIL_CHECK(act != kActs.end(), "activation '", acts[static_cast<size_t>(d)],
                "' is not supported (Tanh, Sigmoid and Relu are)");
    auto of_dir = [&](int i) {
      return c.emit1("squeeze", A({{"axes", ints({0})}}), {slice(c, c.in(i), 0, d, d + 1)});
    };
    auto transposed = [&](ValueId v) {
      return c.emit1("transpose", A({{"perm", ints({1, 0})}}), {v});
    };
    ValueId xw = c.emit1("matmul", A(), {x, transposed(of_dir(1))});  // [seq, batch, hidden]
    if (c.num_in() > 3 && c.has_in(3)) {
      ValueId b = of_dir(3);
      b = c.emit1("add", A(), {slice(c, b, 0, 0, hidden), slice(c, b, 0, hidden, 2 * hidden)});
      xw = c.emit1("add", A(), {xw, b});
    }
    ValueId rt = transposed(of_dir(2));
    ValueId h = -1;
    if (c.num_in() > 5 && c.has_in(5)) {
      ValueId h0 = c.in(5);
      if (batch_major) h0 = c.emit1("transpose", A({{"perm", ints({1, 0, 2})}}), {h0});
      h = c.emit1("squeeze", A({{"axes", ints({0})}}), {slice(c, h0, 0, d, d + 1)});
    }
    Vals steps(static_cast<size_t>(seq));
    const bool reverse = direction == "reverse" || d == 1;
    for (int64_t i = 0; i < seq; ++i) {
      int64_t t = reverse ? seq - 1 - i : i;
      ValueId pre = c.emit1("squeeze", A({{"axes", ints({0})}}), {slice(c, xw, 0, t, t + 1)});
      if (h >= 0) pre = c.emit1("add", A(), {pre, c.emit1("matmul", A(), {h, rt})});
      if (clip) {
        pre = c.emit1("clip", A({{"min", -bound}, {"max", bound}}), {pre});
      }
      h = c.emit1(act->second, A(), {pre});
      steps[static_cast<size_t>(t)] =
          c.emit1("unsqueeze", A({{"axes", ints({0, 1})}}), {h});  // [1, 1, batch, hidden]
    }
    ys.push_back(c.emit1("concat", A({{"axis", int64_t{0}}}), steps));
    finals.push_back(steps[static_cast<size_t>(reverse ? 0 : seq - 1)]);
  }
  ValueId y = dirs == 1 ? ys[0] : c.emit1("concat", A({{"axis", int64_t{1}}}), ys);
  ValueId yh =
      c.emit1("squeeze", A({{"axes", ints({0})}}),
              {dirs == 1 ? finals[0] : c.emit1("concat", A({{"axis", int64_t{1}}}), finals)});
  if (batch_major) {
    y = c.emit1("transpose", A({{"perm", ints({2, 0, 1, 3})}}), {y});
    yh = c.emit1("transpose", A({{"perm", ints({1, 0, 2})}}), {yh});
  }
  return {y, yh};
}

// Det: sum over the permutations s of sign(s) prod_i x[i, s(i)], for matrices up to 5 x 5 (120
// products of 5): one gather of every product's factors, a product and a signed sum.
std::vector<ValueId> map_det(Ctx& c) {
  const ops::TensorType t = c.type(0);
  const size_t rank = t.shape.size();
  ANVIL_CHECK(rank >= 2 && t.shape[rank - 1] == t.shape[rank - 2], "input ", ops::to_string(t),
              " must end in a square matrix");
  const int64_t n = t.shape[rank - 1];
  ANVIL_CHECK(n >= 1 && n <= 5, "input ", ops::to_string(t),
              ": matrices up to 5 x 5 are "
              "supported (the Leibniz expansion), not ",
              n, " x ", n);
  std::vector<int64_t> perm(static_cast<size_t>(n)), at;
  std::vector<double> sign;
  std::iota(perm.begin(), perm.end(), 0);
  do {
    int64_t inversions = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = i + 1; j < n; ++j)
        inversions += perm[static_cast<size_t>(i)] > perm[static_cast<size_t>(j)];
    sign.push_back(inversions % 2 ? -1.0 : 1.0);
    for (int64_t i = 0; i < n; ++i) at.push_back(i * n + perm[static_cast<size_t>(i)]);
  } while (std::next_permutation(perm.begin(), perm.end()));
  const auto terms = static_cast<int64_t>(sign.size());
  std::vector<int64_t> flat(t.shape.begin(), t.shape.end() - 2);
  flat.push_back(n * n);
  ValueId x = c.emit1("reshape", A({{"shape", flat}}), {c.in(0)});
  const auto last = static_cast<int64_t>(flat.size()) - 1;
  ValueId factors =
      c.emit1("gather", A({{"axis", last}}), {x, int64_constant(c, "det_factors", {terms, n}, at)});
  ValueId products =
      c.emit1("reduce_prod", A({{"axes", ints({last + 1})}, {"keepdims", int64_t{0}}}), {factors});
  ValueId signs = f32_constant(c, "det_signs", {terms}, sign);
  if (t.dtype != ir::DataType::Float32())
    signs = c.emit1("cast", A({{"to", t.dtype.to_string()}}), {signs});
  return {c.emit1("reduce_sum", A({{"axes", ints({last})}, {"keepdims", int64_t{0}}}),
                  {c.emit1("mul", A(), {products, signs})}, true)};
}

}  // namespace anvil::frontend::onnx_detail
