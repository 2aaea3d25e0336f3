// ONNX's linear quantization as library ops: QuantizeLinear (divide by the scale, round halves to
// even, add the zero point, saturate, cast), DequantizeLinear ((x - zero point) * scale) and
// DynamicQuantizeLinear (the scale and zero point from the tensor's range, then QuantizeLinear).
// Scales and zero points may be computed at run time; a 1-D scale applies along `axis`. The
// integer products (MatMulInteger, ConvInteger) and their requantized forms (QLinearMatMul,
// QLinearConv) accumulate exactly in int32.
#include "anvil/frontend/onnx/importer_internal.h"
#include "anvil/support/error.h"

namespace anvil::frontend::onnx_detail {

namespace {

using ir::DataType;
using AttrMap = std::map<std::string, ops::AttrValue>;

ops::Attrs A(AttrMap m = {}) {
  return ops::Attrs("", std::move(m));
}

// A scale or zero point made to broadcast against x (input 0): a scalar or one value is
// per-tensor; a 1-D tensor of x's extent along `axis` (default 1) applies per slice of that axis.
ValueId along_axis(Ctx& c, int i, const char* what) {
  const ops::TensorType& t = c.type(i);
  const std::vector<int64_t>& xs = c.type(0).shape;
  int64_t n = 1;
  for (int64_t d : t.shape) n *= d;
  if (t.shape.empty() || n == 1)
    return c.emit1("reshape", A({{"shape", std::vector<int64_t>{}}}), {c.in(i)});
  int64_t rank = static_cast<int64_t>(xs.size());
  int64_t axis = c.attr_int("axis", 1);
  ANVIL_CHECK(axis >= -rank && axis < rank, "attribute 'axis' = ", axis,
              " is out of range for input x ", ops::to_string(c.type(0)));
  if (axis < 0) axis += rank;
  ANVIL_CHECK(t.shape.size() == 1 && t.shape[0] == xs[static_cast<size_t>(axis)], what, " ",
              ops::to_string(t), " must be a scalar or hold one value per slice of axis ", axis,
              " of x ", ops::to_string(c.type(0)));
  std::vector<int64_t> shape(static_cast<size_t>(rank - axis), 1);
  shape[0] = t.shape[0];
  return c.emit1("reshape", A({{"shape", shape}}), {c.in(i)});
}

DataType quantized_type(Ctx& c, int zero_point) {
  DataType t = c.has_in(zero_point) ? c.type(zero_point).dtype : DataType::UInt(8);
  ANVIL_CHECK(t == DataType::UInt(8) || t == DataType::Int(8) ||
                  (t == DataType::Int(32) && c.node().op_type() == "DequantizeLinear"),
              "the zero point is ", t, "; quantized tensors are uint8 or int8");
  return t;
}

// round(x / scale) + zero_point, saturated to t (x, scale and zero point float32; no scale: x is
// already scaled, -1 no zero point).
ValueId quantize(Ctx& c, ValueId x, ValueId scale, ValueId zero_point, DataType t) {
  ValueId q = c.emit1("round", A(), {scale >= 0 ? c.emit1("div", A(), {x, scale}) : x});
  if (zero_point >= 0) q = c.emit1("add", A(), {q, zero_point});
  q = c.emit1(
      "clip",
      A({{"min", static_cast<double>(t.min_value())}, {"max", static_cast<double>(t.max_value())}}),
      {q});
  return cast(c, q, t, true);
}

std::vector<ValueId> map_quantize_linear(Ctx& c) {
  ANVIL_CHECK(c.num_in() >= 2, "needs inputs x and y_scale, got ", c.num_in());
  DataType t = quantized_type(c, 2);
  ANVIL_CHECK(c.type(1).dtype == DataType::Float32(), "y_scale ", ops::to_string(c.type(1)),
              " must be float32");
  ValueId x = cast(c, c.in(0), DataType::Float32());
  ValueId scale = along_axis(c, 1, "y_scale");
  ValueId zp = c.has_in(2) ? cast(c, along_axis(c, 2, "y_zero_point"), DataType::Float32()) : -1;
  return {quantize(c, x, scale, zp, t)};
}

std::vector<ValueId> map_dequantize_linear(Ctx& c) {
  ANVIL_CHECK(c.num_in() >= 2, "needs inputs x and x_scale, got ", c.num_in());
  quantized_type(c, 2);
  ANVIL_CHECK(c.type(1).dtype == DataType::Float32(), "x_scale ", ops::to_string(c.type(1)),
              " must be float32");
  ValueId x = cast(c, c.in(0), DataType::Float32());
  if (c.has_in(2))
    x = c.emit1("sub", A(), {x, cast(c, along_axis(c, 2, "x_zero_point"), DataType::Float32())});
  ValueId y = c.emit1("mul", A(), {x, along_axis(c, 1, "x_scale")}, true);
  const ops::TensorType& t = c.type(0);
  if (t.dtype == DataType::UInt(8) || t.dtype == DataType::Int(8)) {
    int64_t axis = c.attr_int("axis", 1);
    if (axis < 0) axis += static_cast<int64_t>(t.shape.size());
    c.dequantized[y] = {c.in(0), c.in(1), c.has_in(2) ? c.in(2) : -1, axis};
  }
  return {y};
}

// DynamicQuantizeLinear: the range [min(0, min x), max(0, max x)] onto uint8's [0, 255].
std::vector<ValueId> map_dynamic_quantize_linear(Ctx& c) {
  ANVIL_CHECK(c.type(0).dtype == DataType::Float32(), "x ", ops::to_string(c.type(0)),
              " must be float32");
  ValueId zero = c.scalar_f32("zero", 0.0f);
  AttrMap all{{"keepdims", int64_t{0}}};
  ValueId lo = c.emit1("minimum", A(), {c.emit1("reduce_min", A(all), {c.in(0)}), zero});
  ValueId hi = c.emit1("maximum", A(), {c.emit1("reduce_max", A(all), {c.in(0)}), zero});
  ValueId scale = c.emit1("div", A(), {c.emit1("sub", A(), {hi, lo}), c.scalar_f32("255", 255.0f)});
  // The zero point, rounded and saturated, is what x is quantized with.
  ValueId zp = c.emit1("round", A(), {c.emit1("div", A(), {c.emit1("neg", A(), {lo}), scale})});
  zp = c.emit1("clip", A({{"min", 0.0}, {"max", 255.0}}), {zp});
  ValueId y = quantize(c, c.in(0), scale, zp, DataType::UInt(8));
  return {y, scale, cast(c, zp, DataType::UInt(8))};
}

// ---- integer products: exact int32 accumulation of (x - zero point) products, as ONNX defines
// them. A product of uint8 or int8 activations with a constant int8 weight matrix runs on the
// int8 kernels (int8_product: dense_int8). Others are an int32 broadcast product summed (matmul),
// or the plain N-D convolution on int32 (conv3d, a 1-D or 2-D one with unit leading spatial
// dimensions): correct, not fast.

// int32 (input i - zero point input zp); a 1-D zero point of `n` values is reshaped to
// `per_value` (the axis it applies along), a single value applies to every element.
ValueId minus_zero_point(Ctx& c, int i, int zp, const char* what, int64_t n,
                         const std::vector<int64_t>& per_value) {
  ValueId x = cast(c, c.in(i), DataType::Int(32));
  if (!c.has_in(zp)) return x;
  const ops::TensorType& t = c.type(zp);
  int64_t count = 1;
  for (int64_t d : t.shape) count *= d;
  ANVIL_CHECK(t.dtype == c.type(i).dtype, what, " ", ops::to_string(t), " must have the type of ",
              "its input ", ops::to_string(c.type(i)));
  std::vector<int64_t> shape;
  if (count != 1) {
    ANVIL_CHECK(t.shape.size() == 1 && count == n, what, " ", ops::to_string(t),
                " must be a scalar or hold ", n, " values");
    shape = per_value;
  }
  ValueId z = c.emit1("reshape", A({{"shape", shape}}), {c.in(zp)});
  return c.emit1("sub", A(), {x, cast(c, z, DataType::Int(32))});
}

// The int32 matrix product of a [..., M, K] and b [..., K, N] (batch dimensions broadcast).
ValueId integer_matmul(Ctx& c, ValueId a, ValueId b) {
  std::vector<int64_t> as = c.g.value(a).type.shape, bs = c.g.value(b).type.shape;
  ANVIL_CHECK(as.size() >= 2 && bs.size() >= 2 && as.back() == bs[bs.size() - 2], "operands ",
              ops::to_string(c.g.value(a).type), " and ", ops::to_string(c.g.value(b).type),
              " are not matrices [..., M, K] and [..., K, N]");
  as.push_back(1);
  bs.insert(bs.end() - 2, 1);
  ValueId p = c.emit1(
      "mul", A(),
      {c.emit1("reshape", A({{"shape", as}}), {a}), c.emit1("reshape", A({{"shape", bs}}), {b})});
  return c.emit1("reduce_sum", A({{"axes", std::vector<int64_t>{-2}}, {"keepdims", int64_t{0}}}),
                 {p});
}

// The int32 convolution of x [N, C, D...] and w [M, C/group, K...] with the node's window
// attributes, through conv3d.
ValueId integer_conv(Ctx& c, ValueId x, ValueId w) {
  std::vector<int64_t> xs = c.g.value(x).type.shape, ws = c.g.value(w).type.shape;
  ANVIL_CHECK(xs.size() >= 3 && xs.size() <= 5 && ws.size() == xs.size(), "input x ",
              ops::to_string(c.g.value(x).type), " and weight ", ops::to_string(c.g.value(w).type),
              " are not a 1-D, 2-D or 3-D convolution's");
  size_t n = xs.size() - 2;
  std::vector<int64_t> in(xs.begin() + 2, xs.end()), kernel(ws.begin() + 2, ws.end());
  std::vector<int64_t> strides = c.attr_ints("strides", std::vector<int64_t>(n, 1));
  std::vector<int64_t> dil = c.attr_ints("dilations", std::vector<int64_t>(n, 1));
  std::vector<int64_t> pads =
      window_pads(c, in, "kernel (w's spatial dimensions)", kernel, strides, dil);
  // Unit spatial dimensions in front up to three (axes 2.. of x and w).
  std::vector<int64_t> lead;
  for (size_t d = n; d < 3; ++d) {
    lead.push_back(static_cast<int64_t>(2 + lead.size()));
    strides.insert(strides.begin(), 1);
    dil.insert(dil.begin(), 1);
    pads.insert(pads.begin() + static_cast<int64_t>(pads.size() / 2), 0);  // an end
    pads.insert(pads.begin(), 0);                                          // a begin
  }
  if (!lead.empty()) {
    x = c.emit1("unsqueeze", A({{"axes", lead}}), {x});
    w = c.emit1("unsqueeze", A({{"axes", lead}}), {w});
  }
  ValueId y = c.emit1("conv3d",
                      A({{"strides", strides},
                         {"dilations", dil},
                         {"pads", pads},
                         {"group", c.attr_int("group", 1)}}),
                      {x, w});
  if (lead.empty()) return y;
  return c.emit1("squeeze", A({{"axes", lead}}), {y});
}

int64_t dim(Ctx& c, int i, int from_end) {
  const std::vector<int64_t>& s = c.type(i).shape;
  ANVIL_CHECK(s.size() >= 2, "input ", i, " ", ops::to_string(c.type(i)),
              " must have rank 2 or more");
  return s[s.size() - static_cast<size_t>(from_end)];
}

std::vector<ValueId> map_matmul_integer(Ctx& c) {
  ANVIL_CHECK(c.num_in() >= 2, "needs inputs A and B, got ", c.num_in());
  if (ValueId y =
          int8_product(c, c.in(0), c.has_in(2) ? c.in(2) : -1, c.in(1), c.has_in(3) ? c.in(3) : -1);
      y >= 0)
    return {cast(c, y, DataType::Int(32), true)};
  int64_t m = dim(c, 0, 2), n = dim(c, 1, 1);
  ValueId a = minus_zero_point(c, 0, 2, "a_zero_point", m, {m, 1});
  ValueId b = minus_zero_point(c, 1, 3, "b_zero_point", n, {n});
  return {cast(c, integer_matmul(c, a, b), DataType::Int(32), true)};
}

std::vector<ValueId> map_conv_integer(Ctx& c) {
  ANVIL_CHECK(c.num_in() >= 2, "needs inputs x and w, got ", c.num_in());
  if (ValueId y = int8_convolution(c, c.in(0), c.has_in(2) ? c.in(2) : -1, c.in(1),
                                   c.has_in(3) ? c.in(3) : -1);
      y >= 0)
    return {cast(c, y, DataType::Int(32), true)};
  int64_t m = c.type(1).shape.empty() ? 0 : c.type(1).shape[0];
  ValueId x = minus_zero_point(c, 0, 2, "x_zero_point", 1, {});
  std::vector<int64_t> per_channel(c.type(1).shape.size(), 1);
  if (!per_channel.empty()) per_channel[0] = m;
  ValueId w = minus_zero_point(c, 1, 3, "w_zero_point", m, per_channel);
  return {cast(c, integer_conv(c, x, w), DataType::Int(32), true)};
}

// The float32 multiplier scale_a * scale_b / scale_y of a requantized product, shaped to
// broadcast along `per_value` when scale_b is 1-D.
ValueId multiplier(Ctx& c, int sa, int sb, int sy, int64_t n,
                   const std::vector<int64_t>& per_value) {
  for (int i : {sa, sb, sy})
    ANVIL_CHECK(c.type(i).dtype == DataType::Float32(), "scale input ", i, " ",
                ops::to_string(c.type(i)), " must be float32");
  auto scalar = [&](int i) {
    return c.emit1("reshape", A({{"shape", std::vector<int64_t>{}}}), {c.in(i)});
  };
  int64_t count = 1;
  for (int64_t d : c.type(sb).shape) count *= d;
  ValueId b = count == 1 ? scalar(sb) : c.emit1("reshape", A({{"shape", per_value}}), {c.in(sb)});
  ANVIL_CHECK(count == 1 || count == n, "scale input ", sb, " ", ops::to_string(c.type(sb)),
              " must be a scalar or hold ", n, " values");
  return c.emit1("div", A(), {c.emit1("mul", A(), {scalar(sa), b}), scalar(sy)});
}

// The int32 accumulator, scaled to the output's quantization and quantized with its zero point.
ValueId requantize(Ctx& c, ValueId acc, ValueId scale, int zp) {
  DataType t = quantized_type(c, zp);
  ValueId real = c.emit1("mul", A(), {cast(c, acc, DataType::Float32()), scale});
  ValueId z = c.has_in(zp)
                  ? cast(c, c.emit1("reshape", A({{"shape", std::vector<int64_t>{}}}), {c.in(zp)}),
                         DataType::Float32())
                  : -1;
  return quantize(c, real, -1, z, t);
}

// QLinearMatMul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point).
std::vector<ValueId> map_qlinear_matmul(Ctx& c) {
  ANVIL_CHECK(c.num_in() == 8, "needs 8 inputs, got ", c.num_in());
  int64_t m = dim(c, 0, 2), n = dim(c, 3, 1);
  ValueId acc =
      int8_product(c, c.in(0), c.has_in(2) ? c.in(2) : -1, c.in(3), c.has_in(5) ? c.in(5) : -1);
  if (acc < 0) {
    ValueId a = minus_zero_point(c, 0, 2, "a_zero_point", m, {m, 1});
    ValueId b = minus_zero_point(c, 3, 5, "b_zero_point", n, {n});
    acc = integer_matmul(c, a, b);
  }
  return {requantize(c, acc, multiplier(c, 1, 4, 6, n, {n}), 7)};
}

// QLinearConv(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B).
std::vector<ValueId> map_qlinear_conv(Ctx& c) {
  ANVIL_CHECK(c.num_in() == 8 || c.num_in() == 9, "needs 8 or 9 inputs, got ", c.num_in());
  std::vector<int64_t> ws = c.type(3).shape;
  ANVIL_CHECK(ws.size() >= 3, "weight w ", ops::to_string(c.type(3)), " must have rank 3 or more");
  int64_t m = ws[0];
  std::vector<int64_t> per_channel(ws.size(), 1), per_output(ws.size() - 1, 1);
  per_channel[0] = m;
  per_output[0] = m;
  ValueId acc =
      int8_convolution(c, c.in(0), c.has_in(2) ? c.in(2) : -1, c.in(3), c.has_in(5) ? c.in(5) : -1);
  if (acc < 0) {
    ValueId x = minus_zero_point(c, 0, 2, "x_zero_point", 1, {});
    ValueId w = minus_zero_point(c, 3, 5, "w_zero_point", m, per_channel);
    acc = integer_conv(c, x, w);
  }
  if (c.has_in(8)) {
    ANVIL_CHECK(c.type(8).dtype == DataType::Int(32) && c.type(8).shape == std::vector<int64_t>{m},
                "bias B ", ops::to_string(c.type(8)), " must be int32[", m, "]");
    acc = c.emit1("add", A(), {acc, c.emit1("reshape", A({{"shape", per_output}}), {c.in(8)})});
  }
  return {requantize(c, acc, multiplier(c, 1, 4, 6, m, per_output), 7)};
}

}  // namespace

ValueId cast(Ctx& c, ValueId v, ir::DataType to, bool last) {
  if (c.g.value(v).type.dtype == to && !last) return v;
  return c.emit1("cast", A({{"to", to.to_string()}}), {v}, last);
}

void add_quantize_ops(std::map<std::string, MapFn>& t) {
  t["QuantizeLinear"] = map_quantize_linear;
  t["DequantizeLinear"] = map_dequantize_linear;
  t["DynamicQuantizeLinear"] = map_dynamic_quantize_linear;
  t["MatMulInteger"] = map_matmul_integer;
  t["ConvInteger"] = map_conv_integer;
  t["QLinearMatMul"] = map_qlinear_matmul;
  t["QLinearConv"] = map_qlinear_conv;
}

}  // namespace anvil::frontend::onnx_detail
