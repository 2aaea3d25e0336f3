// Products on the int8 kernels (dense_int8, conv2d_int8, depthwise_conv2d_int8), for the integer
// operators (MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv: ops_map_quantize.cc) and for
// the QDQ form, where a float Conv, MatMul or Gemm reads DequantizeLinear outputs: its activation
// from an 8-bit tensor, its weight from a constant int8 one. Quantization tools write models so
// (ONNX Runtime's default format), meaning "an integer product, rescaled"; here it becomes one.
//
// Both need a weight that is a constant int8 tensor without zero point (symmetric, as the tools
// make weights) and an activation of uint8 or int8 with one zero point. With int8 activations
// x + 128 goes in as uint8; the zero point z (on that scale) is accounted for by subtracting
// z * (the weights' sums over the reduction), a constant per output column or filter; a
// convolution's padding holds z, so that the correction is the same at every output.
#include <algorithm>

#include "anvil/frontend/onnx/importer_internal.h"
#include "anvil/ops/int8_dot.h"
#include "anvil/support/error.h"

namespace anvil::frontend::onnx_detail {

namespace {

using ir::DataType;
using AttrMap = std::map<std::string, ops::AttrValue>;

ops::Attrs A(AttrMap m = {}) {
  return ops::Attrs("", std::move(m));
}

ValueId int32_scalar(Ctx& c, int32_t v) {
  runtime::NDArray a = runtime::NDArray::empty({}, runtime::dl_int32());
  *a.data_as<int32_t>() = v;
  return c.constant("int8_shift", a);
}

int64_t count(const ops::TensorType& t) {
  int64_t n = 1;
  for (int64_t d : t.shape) n *= d;
  return n;
}

bool is_8bit(DataType t) {
  return t == DataType::UInt(8) || t == DataType::Int(8);
}

// A constant int8 weight whose zero point is absent or all zeros.
bool symmetric_int8_weight(const Ctx& c, ValueId w, ValueId w_zp) {
  if (c.g.value(w).type.dtype != DataType::Int(8) || !c.is_const(w)) return false;
  if (w_zp < 0) return true;
  const graph::Value& z = c.g.value(w_zp);
  if (z.type.dtype != DataType::Int(8) || !c.is_const(w_zp)) return false;
  const int8_t* zp = z.data.data_as<int8_t>();
  return std::none_of(zp, zp + z.data.numel(), [](int8_t v) { return v != 0; });
}

// An activation of 8 bits with no zero point or one.
bool activation(const Ctx& c, ValueId x, ValueId x_zp) {
  const ops::TensorType& t = c.g.value(x).type;
  if (!is_8bit(t.dtype)) return false;
  return x_zp < 0 || (count(c.g.value(x_zp).type) == 1 && c.g.value(x_zp).type.dtype == t.dtype);
}

// x as uint8 (int8 + 128), and its zero point on that scale as an int32 scalar (-1: none).
std::pair<ValueId, ValueId> as_uint8(Ctx& c, ValueId x, ValueId x_zp) {
  const bool s = c.g.value(x).type.dtype == DataType::Int(8);
  if (s) {
    x = cast(c, c.emit1("add", A(), {cast(c, x, DataType::Int(32)), int32_scalar(c, 128)}),
             DataType::UInt(8));
  }
  ValueId zp = -1;
  if (x_zp >= 0) {
    zp = cast(c, c.emit1("reshape", A({{"shape", std::vector<int64_t>{}}}), {x_zp}),
              DataType::Int(32));
    if (s) zp = c.emit1("add", A(), {zp, int32_scalar(c, 128)});
  } else if (s) {
    zp = int32_scalar(c, 128);
  }
  return {x, zp};
}

}  // namespace

ValueId int8_product(Ctx& c, ValueId a, ValueId a_zp, ValueId b, ValueId b_zp) {
  // Copies: emitting nodes below grows the graph's values.
  const ops::TensorType at = c.g.value(a).type;
  const ops::TensorType bt = c.g.value(b).type;
  if (!activation(c, a, a_zp) || !symmetric_int8_weight(c, b, b_zp) || at.shape.size() < 2 ||
      bt.shape.size() != 2 || at.shape.back() != bt.shape[0])
    return -1;
  auto [x, zp] = as_uint8(c, a, a_zp);
  ValueId packed = c.emit1("dense_int8_pack_weight", A(), {b});
  ValueId acc = c.emit1("dense_int8", A({{"units", bt.shape[1]}}), {x, packed});
  if (zp < 0) return acc;
  ValueId column_sums =
      c.emit1("reduce_sum", A({{"axes", std::vector<int64_t>{0}}, {"keepdims", int64_t{0}}}),
              {cast(c, b, DataType::Int(32))});
  return c.emit1("sub", A(), {acc, c.emit1("mul", A(), {zp, column_sums})});
}

ValueId int8_convolution(Ctx& c, ValueId x, ValueId x_zp, ValueId w, ValueId w_zp) {
  const ops::TensorType xt = c.g.value(x).type;
  const ops::TensorType wt = c.g.value(w).type;
  if (!activation(c, x, x_zp) || !symmetric_int8_weight(c, w, w_zp) || xt.shape.size() != 4 ||
      wt.shape.size() != 4)
    return -1;
  // Groups whose channels the int8 blocks take (conv2d_int8; one group included), or one input
  // and one output channel per group (depthwise).
  const int64_t group = c.attr_int("group", 1);
  const bool depthwise = group > 1 && group == xt.shape[1] && wt.shape[0] == group;
  if (wt.shape[1] * group != xt.shape[1] ||
      !(depthwise || ops::conv_int8_takes_groups(xt.shape[1], wt.shape[0], group)))
    return -1;
  const std::vector<int64_t> in(xt.shape.begin() + 2, xt.shape.end());
  const std::vector<int64_t> kernel(wt.shape.begin() + 2, wt.shape.end());
  const std::vector<int64_t> strides = c.attr_ints("strides", {1, 1});
  const std::vector<int64_t> dil = c.attr_ints("dilations", {1, 1});
  const std::vector<int64_t> pads =
      window_pads(c, in, "kernel (w's spatial dimensions)", kernel, strides, dil);
  auto [xu, zp] = as_uint8(c, x, x_zp);
  const std::string op = depthwise ? "depthwise_conv2d_int8" : "conv2d_int8";
  // conv2d_int8 and its packing both take the groups.
  AttrMap grouped;
  if (!depthwise && group > 1) grouped["group"] = group;
  std::vector<ValueId> args = {xu, c.emit1(op + "_pack_weight", A(grouped), {w})};
  if (zp >= 0) args.push_back(cast(c, zp, DataType::UInt(8)));
  AttrMap attrs = grouped;
  attrs.insert({{"strides", strides}, {"dilations", dil}, {"pads", pads}});
  if (!depthwise) attrs["channels"] = wt.shape[0];
  ValueId acc = c.emit1(op, A(std::move(attrs)), args);
  if (zp < 0) return acc;
  ValueId filter_sums = c.emit1(
      "reshape", A({{"shape", std::vector<int64_t>{wt.shape[0], 1, 1}}}),
      {c.emit1("reduce_sum", A({{"axes", std::vector<int64_t>{1, 2, 3}}, {"keepdims", int64_t{0}}}),
               {cast(c, w, DataType::Int(32))})});
  return c.emit1("sub", A(), {acc, c.emit1("mul", A(), {zp, filter_sums})});
}

namespace {

// What DequantizeLinear made input i from, when the QDQ rewrite can use it; nullptr otherwise.
const Dequantized* dequantized(const Ctx& c, int i) {
  if (!c.has_in(i)) return nullptr;
  auto it = c.dequantized.find(c.in(i));
  return it == c.dequantized.end() ? nullptr : &it->second;
}

// The float scale of a product: the activation's (one value) times the weight's, one value or
// one per output shaped `per_output` (a constant when both are).
ValueId product_scale(Ctx& c, const Dequantized& x, const Dequantized& w,
                      const std::vector<int64_t>& per_output) {
  auto scalar = [&](ValueId v) {
    return c.emit1("reshape", A({{"shape", std::vector<int64_t>{}}}), {v});
  };
  const bool one = count(c.g.value(w.scale).type) == 1;
  ValueId ws = one ? scalar(w.scale) : c.emit1("reshape", A({{"shape", per_output}}), {w.scale});
  return c.emit1("mul", A(), {scalar(x.scale), ws});
}

bool scale_fits(const Ctx& c, const Dequantized& x, const Dequantized& w, int64_t n,
                int64_t w_axis) {
  if (count(c.g.value(x.scale).type) != 1) return false;
  const int64_t k = count(c.g.value(w.scale).type);
  return k == 1 || (k == n && c.g.value(w.scale).type.shape.size() == 1 && w.axis == w_axis);
}

}  // namespace

ValueId qdq_conv(Ctx& c, ValueId bias) {
  const Dequantized* x = dequantized(c, 0);
  const Dequantized* w = dequantized(c, 1);
  if (!x || !w) return -1;
  const ops::TensorType wt = c.g.value(w->q).type;
  if (wt.shape.size() != 4 || !scale_fits(c, *x, *w, wt.shape[0], 0)) return -1;
  ValueId acc = int8_convolution(c, x->q, x->zero_point, w->q, w->zero_point);
  if (acc < 0) return -1;
  const std::vector<int64_t> per_output = {wt.shape[0], 1, 1};
  ValueId y =
      c.emit1("mul", A(), {cast(c, acc, DataType::Float32()), product_scale(c, *x, *w, per_output)},
              bias < 0);
  if (bias < 0) return y;
  return c.emit1("add", A(), {y, c.emit1("reshape", A({{"shape", per_output}}), {bias})}, true);
}

ValueId qdq_matmul(Ctx& c, bool transpose_b, ValueId bias) {
  const Dequantized* a = dequantized(c, 0);
  const Dequantized* b = dequantized(c, 1);
  if (!a || !b) return -1;
  const ops::TensorType bt = c.g.value(b->q).type;
  if (bt.shape.size() != 2) return -1;
  const int64_t n = bt.shape[transpose_b ? 0 : 1];
  if (!scale_fits(c, *a, *b, n, transpose_b ? 0 : 1)) return -1;
  ValueId bq = b->q;
  if (transpose_b) {
    if (!c.is_const(bq)) return -1;
    bq = c.emit1("transpose", A({{"perm", std::vector<int64_t>{1, 0}}}), {bq});
  }
  ValueId acc = int8_product(c, a->q, a->zero_point, bq, b->zero_point);
  if (acc < 0) return -1;
  ValueId y = c.emit1("mul", A(),
                      {cast(c, acc, DataType::Float32()), product_scale(c, *a, *b, {n})}, bias < 0);
  if (bias < 0) return y;
  return c.emit1("add", A(), {y, bias}, true);
}

}  // namespace anvil::frontend::onnx_detail
