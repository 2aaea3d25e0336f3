// ONNX ops that are a few library ops: CastLike (cast), DepthToSpace and SpaceToDepth (reshape,
// transpose, reshape), Hardmax (argmax compared with the positions along the axis) and OneHot
// (the indices compared with the positions along the new axis, then a where between the values).
#include <cmath>

#include "anvil/frontend/onnx/importer_internal.h"
#include "anvil/ops/host_value.h"
#include "anvil/support/error.h"

namespace anvil::frontend::onnx_detail {

namespace {

using AttrMap = std::map<std::string, ops::AttrValue>;

ops::Attrs A(AttrMap m = {}) {
  return ops::Attrs("", std::move(m));
}

// The positions 0..n-1 along axis `axis` of a rank-`rank` int64 constant (1 elsewhere).
ValueId positions(Ctx& c, int64_t n, size_t axis, size_t rank) {
  std::vector<int64_t> shape(rank, 1);
  shape[axis] = n;
  runtime::NDArray a = runtime::NDArray::empty(shape, ops::to_dlpack(ir::DataType::Int64()));
  for (int64_t i = 0; i < n; ++i) a.data_as<int64_t>()[i] = i;
  return c.constant("positions", a);
}

int64_t normalized_axis(int64_t axis, int64_t rank) {
  ANVIL_CHECK(axis >= -rank && axis < rank, "attribute 'axis' = ", axis,
              " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

}  // namespace

std::vector<ValueId> map_cast_like(Ctx& c) {
  ANVIL_CHECK(c.num_in() == 2, "needs inputs input and target_type, got ", c.num_in());
  std::string to = c.type(1).dtype.to_string();
  return {c.emit1("cast", A({{"to", to}}), {c.in(0)}, true)};
}

// DepthToSpace (mode DCR: the depth splits as [b, b, C'], CRD: as [C', b, b]) and its inverse
// SpaceToDepth, on [N, C, H, W].
std::vector<ValueId> map_depth_to_space(Ctx& c) {
  std::vector<int64_t> s = c.type(0).shape;
  int64_t b = c.attr_int("blocksize", 0);
  ANVIL_CHECK(s.size() == 4, "input ", ops::to_string(c.type(0)), " must have rank 4");
  // b <= C / b first: the square of a huge blocksize would overflow.
  ANVIL_CHECK(b >= 1 && b <= s[1] / b && s[1] % (b * b) == 0, "attribute 'blocksize' = ", b,
              " must be positive and its square must divide the channels (", s[1], ")");
  std::string mode = c.attr_string("mode", "DCR");
  ANVIL_CHECK(mode == "DCR" || mode == "CRD", "attribute 'mode' is '", mode,
              "', expected 'DCR' or 'CRD'");
  int64_t n = s[0], cc = s[1] / (b * b), h = s[2], w = s[3];
  bool dcr = mode == "DCR";
  std::vector<int64_t> split =
      dcr ? std::vector<int64_t>{n, b, b, cc, h, w} : std::vector<int64_t>{n, cc, b, b, h, w};
  std::vector<int64_t> perm =
      dcr ? std::vector<int64_t>{0, 3, 4, 1, 5, 2} : std::vector<int64_t>{0, 1, 4, 2, 5, 3};
  ValueId x = c.emit1("reshape", A({{"shape", split}}), {c.in(0)});
  x = c.emit1("transpose", A({{"perm", perm}}), {x});
  return {c.emit1("reshape", A({{"shape", std::vector<int64_t>{n, cc, h * b, w * b}}}), {x}, true)};
}

std::vector<ValueId> map_space_to_depth(Ctx& c) {
  std::vector<int64_t> s = c.type(0).shape;
  int64_t b = c.attr_int("blocksize", 0);
  ANVIL_CHECK(s.size() == 4, "input ", ops::to_string(c.type(0)), " must have rank 4");
  ANVIL_CHECK(b >= 1 && b <= s[2] && b <= s[3] && s[2] % b == 0 && s[3] % b == 0,
              "attribute 'blocksize' = ", b, " must be positive and divide the height and width (",
              s[2], ", ", s[3], ")");
  int64_t n = s[0], ch = s[1], h = s[2] / b, w = s[3] / b;
  ValueId x =
      c.emit1("reshape", A({{"shape", std::vector<int64_t>{n, ch, h, b, w, b}}}), {c.in(0)});
  x = c.emit1("transpose", A({{"perm", std::vector<int64_t>{0, 3, 5, 1, 2, 4}}}), {x});
  return {c.emit1("reshape", A({{"shape", std::vector<int64_t>{n, ch * b * b, h, w}}}), {x}, true)};
}

// Hardmax: 1 at the first maximum along the axis, 0 elsewhere. Before opset 13 the input is
// flattened to 2-D at the axis (default 1) and the maximum taken over the second part.
std::vector<ValueId> map_hardmax(Ctx& c) {
  std::vector<int64_t> shape = c.type(0).shape;
  int64_t r = static_cast<int64_t>(shape.size());
  ir::DataType t = c.type(0).dtype;
  ValueId x = c.in(0);
  int64_t axis;
  bool flat = c.opset() < 13;
  if (flat) {
    axis = normalized_axis(c.attr_int("axis", 1), r + 1);
    x = c.emit1("flatten", A({{"axis", axis}}), {x});
    axis = 1;
  } else {
    axis = normalized_axis(c.attr_int("axis", -1), r);
  }
  std::vector<int64_t> xs = c.g.value(x).type.shape;
  ValueId arg = c.emit1("argmax", A({{"axis", axis}, {"keepdims", int64_t{1}}}), {x});
  ValueId pos = positions(c, xs[static_cast<size_t>(axis)], static_cast<size_t>(axis), xs.size());
  ValueId hit = c.emit1("equal", A(), {arg, pos});
  ValueId y = c.emit1("cast", A({{"to", t.to_string()}}), {hit}, !flat);
  if (!flat) return {y};
  return {c.emit1("reshape", A({{"shape", shape}}), {y}, true)};
}

// OneHot(indices, depth, values; axis): values[1] where the (non-negative, or counted from depth
// when negative) index equals the position along the new axis, values[0] elsewhere.
std::vector<ValueId> map_one_hot(Ctx& c) {
  ANVIL_CHECK(c.num_in() == 3, "needs inputs indices, depth and values, got ", c.num_in());
  double depth_value = c.float_scalar_in(1, "depth");
  ANVIL_CHECK(depth_value >= 1 && depth_value <= (1 << 30), "depth ", depth_value,
              " must be at least 1");
  int64_t depth = static_cast<int64_t>(depth_value);
  ops::TensorType vt = c.type(2);
  ANVIL_CHECK(vt.shape == std::vector<int64_t>{2}, "values ", ops::to_string(vt),
              " must hold two values (off, on)");
  size_t rank = c.type(0).shape.size() + 1;
  size_t axis =
      static_cast<size_t>(normalized_axis(c.attr_int("axis", -1), static_cast<int64_t>(rank)));
  ValueId idx = c.in(0);
  if (c.type(0).dtype != ir::DataType::Int64())
    idx = c.emit1("cast", A({{"to", std::string("int64")}}), {idx});
  runtime::NDArray d = runtime::NDArray::empty({}, ops::to_dlpack(ir::DataType::Int64()));
  d.data_as<int64_t>()[0] = depth;
  ValueId dc = c.constant("depth", d);
  runtime::NDArray zero = runtime::NDArray::empty({}, ops::to_dlpack(ir::DataType::Int64()));
  zero.data_as<int64_t>()[0] = 0;
  ValueId negative = c.emit1("less", A(), {idx, c.constant("zero", zero)});
  idx = c.emit1("where", A(), {negative, c.emit1("add", A(), {idx, dc}), idx});
  idx =
      c.emit1("unsqueeze", A({{"axes", std::vector<int64_t>{static_cast<int64_t>(axis)}}}), {idx});
  ValueId hit = c.emit1("equal", A(), {idx, positions(c, depth, axis, rank)});
  auto pick = [&](int64_t k) {
    return c.emit1("slice",
                   A({{"starts", std::vector<int64_t>{k}}, {"ends", std::vector<int64_t>{k + 1}}}),
                   {c.in(2)});
  };
  return {c.emit1("where", A(), {hit, pick(1), pick(0)}, true)};
}

// Range: its length depends on the values of its inputs, so they must be known at compile time
// (constants, or graph inputs bound with --input-value); the result is a constant.
std::vector<ValueId> map_range(Ctx& c) {
  ANVIL_CHECK(c.num_in() == 3, "needs inputs start, limit and delta, got ", c.num_in());
  const char* what[] = {"start", "limit", "delta"};
  double v[3];
  ir::DataType t = c.type(0).dtype;
  for (int i = 0; i < 3; ++i) {
    const runtime::NDArray& a = c.const_in(i, what[i]);
    ANVIL_CHECK(a.numel() == 1, "input '", what[i], "' must hold one value, got shape ",
                ops::list_str(a.shape()));
    ANVIL_CHECK(c.type(i).dtype == t, "input '", what[i], "' is ", c.type(i).dtype,
                ", input 'start' ", t);
    v[i] = ops::host::read_f64(a, 0);
  }
  ANVIL_CHECK(t.is_float() || t.is_int(), "inputs are ", t, ", not a number type");
  ANVIL_CHECK(v[2] != 0, "input 'delta' is 0");
  double n = std::max(std::ceil((v[1] - v[0]) / v[2]), 0.0);
  ANVIL_CHECK(n <= 1e9, "the range has ", n, " elements, more than 10^9");
  auto count = static_cast<int64_t>(n);
  runtime::NDArray out = runtime::NDArray::empty({count}, ops::to_dlpack(t));
  for (int64_t k = 0; k < count; ++k) {
    // Integers step exactly; floats as start + k * delta, ONNX's reference computes them the
    // same way up to rounding.
    if (t.is_int())
      ops::host::write_i64(out, k, static_cast<int64_t>(v[0]) + k * static_cast<int64_t>(v[2]));
    else
      ops::host::write_f64(out, k, v[0] + static_cast<double>(k) * v[2]);
  }
  return {c.constant(c.node().output(0), out)};
}

}  // namespace anvil::frontend::onnx_detail
