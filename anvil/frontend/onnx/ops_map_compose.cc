// ONNX ops that are a few library ops: CastLike (cast), DepthToSpace and SpaceToDepth (reshape,
// transpose, reshape), Hardmax (argmax compared with the positions along the axis) and OneHot
// (the indices compared with the positions along the new axis, then a where between the values),
// Range (a constant), Compress (a gather of the slices its condition keeps), ReverseSequence (a
// gather_elements) and MaxUnpool (a scatter_elements into zeros).
#include <algorithm>
#include <cmath>
#include <cstring>

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
  std::vector<int64_t> shape(rank, 1), at(static_cast<size_t>(n));
  shape[axis] = n;
  for (int64_t i = 0; i < n; ++i) at[static_cast<size_t>(i)] = i;
  return int64_constant(c, "positions", shape, at);
}

ValueId int64_scalar(Ctx& c, const std::string& base, int64_t v) {
  return int64_constant(c, base, {}, {v});
}

}  // namespace

ValueId int64_constant(Ctx& c, const std::string& base, std::vector<int64_t> shape,
                       const std::vector<int64_t>& values) {
  runtime::NDArray a =
      runtime::NDArray::empty(std::move(shape), ops::to_dlpack(ir::DataType::Int64()));
  std::copy(values.begin(), values.end(), a.data_as<int64_t>());
  return c.constant(base, a);
}

int64_t normalized_axis(int64_t axis, int64_t rank) {
  ANVIL_CHECK(axis >= -rank && axis < rank, "attribute 'axis' = ", axis,
              " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

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

// Compress: the slices along `axis` (of the flattened input when there is none) whose condition
// is true. The output's length is the number of true conditions, so the condition must be known
// at compile time (a graph input is bound with --input-value); then the op is a gather.
std::vector<ValueId> map_compress(Ctx& c) {
  ANVIL_CHECK(c.num_in() == 2, "needs inputs input and condition, got ", c.num_in());
  std::vector<int64_t> condition = c.ints_in(1, "condition");
  ValueId x = c.in(0);
  std::vector<int64_t> shape = c.type(0).shape;
  int64_t axis = 0;
  if (c.has_attr("axis")) {
    axis = normalized_axis(c.attr_int("axis", 0), static_cast<int64_t>(shape.size()));
  } else {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    x = c.emit1("reshape", A({{"shape", std::vector<int64_t>{n}}}), {x});
    shape = {n};
  }
  int64_t length = shape[static_cast<size_t>(axis)];
  ANVIL_CHECK(static_cast<int64_t>(condition.size()) <= length, "condition has ", condition.size(),
              " values, more than the ", length, " slices of axis ", axis, " of input ",
              ops::to_string(c.type(0)));
  std::vector<int64_t> kept;
  for (size_t i = 0; i < condition.size(); ++i)
    if (condition[i]) kept.push_back(static_cast<int64_t>(i));
  ANVIL_CHECK(!kept.empty(),
              "the condition selects nothing: the output would be empty, which compiled code "
              "does not support");
  runtime::NDArray idx = runtime::NDArray::empty({static_cast<int64_t>(kept.size())},
                                                 ops::to_dlpack(ir::DataType::Int64()));
  std::copy(kept.begin(), kept.end(), idx.data_as<int64_t>());
  return {c.emit1("gather", A({{"axis", axis}}), {x, c.constant("kept", idx)}, true)};
}

// ReverseSequence: along time_axis, the first sequence_lens[b] elements of each batch entry b
// reversed and the rest kept: a gather_elements whose index is len - 1 - t where t < len, else t.
std::vector<ValueId> map_reverse_sequence(Ctx& c) {
  ANVIL_CHECK(c.num_in() == 2, "needs inputs input and sequence_lens, got ", c.num_in());
  std::vector<int64_t> shape = c.type(0).shape;
  int64_t rank = static_cast<int64_t>(shape.size());
  ANVIL_CHECK(rank >= 2, "input ", ops::to_string(c.type(0)), " must have rank 2 or more");
  int64_t batch_axis = normalized_axis(c.attr_int("batch_axis", 1), rank);
  int64_t time_axis = normalized_axis(c.attr_int("time_axis", 0), rank);
  ANVIL_CHECK(batch_axis != time_axis && batch_axis < 2 && time_axis < 2,
              "attributes 'batch_axis' and 'time_axis' must be 0 and 1 in some order, got ",
              batch_axis, " and ", time_axis);
  auto b = static_cast<size_t>(batch_axis), t = static_cast<size_t>(time_axis);
  const ops::TensorType lens = c.type(1);  // a copy: emitting grows the value table
  ANVIL_CHECK(lens.shape == std::vector<int64_t>{shape[b]} && lens.dtype.is_int(), "sequence_lens ",
              ops::to_string(lens), " must hold one integer per batch entry (", shape[b], ")");
  std::vector<int64_t> per_batch(shape.size(), 1);
  per_batch[b] = shape[b];
  ValueId len = c.emit1("reshape", A({{"shape", per_batch}}), {c.in(1)});
  if (lens.dtype != ir::DataType::Int64()) len = c.emit1("cast", A({{"to", "int64"}}), {len});
  ValueId pos = positions(c, shape[t], t, shape.size());
  ValueId last = c.emit1("sub", A(), {len, int64_scalar(c, "one", 1)});
  ValueId reversed = c.emit1("sub", A(), {last, pos});
  ValueId idx = c.emit1("where", A(), {c.emit1("less", A(), {pos, len}), reversed, pos});
  idx = c.emit1("expand", A({{"shape", shape}}), {idx});
  return {c.emit1("gather_elements", A({{"axis", time_axis}}), {c.in(0), idx}, true)};
}

// MaxUnpool: zeros of the output shape (from the kernel, strides and pads, or output_shape known
// at compile time) with X's values scattered to the positions of I, MaxPool's Indices: flat
// indices into the unpooled shape.
std::vector<ValueId> map_max_unpool(Ctx& c) {
  ANVIL_CHECK(c.num_in() >= 2, "needs inputs X and I, got ", c.num_in());
  std::vector<int64_t> xs = c.type(0).shape;
  ANVIL_CHECK(xs.size() >= 3 && c.type(1).shape == xs && c.type(1).dtype == ir::DataType::Int64(),
              "X ", ops::to_string(c.type(0)), " must be [N, C, D1, ...] and I ",
              ops::to_string(c.type(1)), " int64 of the same shape");
  size_t n = xs.size() - 2;
  // The unpooled shape from the kernel, strides and pads: I's flat indices count in it.
  std::vector<int64_t> k = c.attr_ints("kernel_shape");
  std::vector<int64_t> s = c.attr_ints("strides", std::vector<int64_t>(n, 1));
  std::vector<int64_t> p = c.attr_ints("pads", std::vector<int64_t>(2 * n, 0));
  ANVIL_CHECK(k.size() == n && s.size() == n && p.size() == 2 * n, "attributes 'kernel_shape' (",
              k.size(), " values), 'strides' (", s.size(), ") and 'pads' (", p.size(),
              ") do not fit ", n, " spatial axes");
  std::vector<int64_t> unpooled = {xs[0], xs[1]};
  for (size_t d = 0; d < n; ++d) {
    ANVIL_CHECK(k[d] >= 1 && s[d] >= 1 && p[d] >= 0 && p[d + n] >= 0, "attributes 'kernel_shape' ",
                ops::list_str(k), ", 'strides' ", ops::list_str(s), " and 'pads' ",
                ops::list_str(p), " must be positive (pads non-negative)");
    int64_t e = 0;
    bool overflow = __builtin_mul_overflow(xs[d + 2] - 1, s[d], &e) ||
                    __builtin_add_overflow(e, k[d], &e) || __builtin_sub_overflow(e, p[d], &e) ||
                    __builtin_sub_overflow(e, p[d + n], &e);
    ANVIL_CHECK(!overflow, "the unpooled extent of axis ", d + 2, " from X ",
                ops::to_string(c.type(0)), ", 'kernel_shape' ", ops::list_str(k), " and 'strides' ",
                ops::list_str(s), " does not fit in 64 bits");
    unpooled.push_back(e);
  }
  std::vector<int64_t> out = unpooled;
  if (c.has_in(2)) {
    out = c.ints_in(2, "output_shape");
    ANVIL_CHECK(out.size() == xs.size() && out[0] == xs[0] && out[1] == xs[1], "output_shape ",
                ops::list_str(out), " must keep N and C of X ", ops::to_string(c.type(0)));
    for (size_t d = 2; d < out.size(); ++d)
      ANVIL_CHECK(out[d] >= unpooled[d], "output_shape ", ops::list_str(out),
                  " is smaller than the unpooled shape ", ops::list_str(unpooled));
  }
  for (int64_t d : out)
    ANVIL_CHECK(d >= 1, "the output shape ", ops::list_str(out), " has an empty axis");
  ops::TensorType out_type{out, c.type(0).dtype};
  c.check_size("output", out_type, true);  // before multiplying: refuses what overflows
  int64_t total = 1, count = 1;
  for (int64_t d : out) total *= d;
  for (int64_t d : xs) count *= d;
  runtime::NDArray zeros = runtime::NDArray::empty({total}, ops::to_dlpack(c.type(0).dtype));
  std::memset(zeros.data(), 0, zeros.nbytes());
  auto flat = [&](ValueId v) {
    return c.emit1("reshape", A({{"shape", std::vector<int64_t>{count}}}), {v});
  };
  ValueId idx = flat(c.in(1));
  if (out != unpooled) {
    // A larger output_shape keeps each index's coordinates: the flat index in the unpooled shape
    // taken apart (innermost axis first) and put together again in the output's.
    ValueId rest = idx, moved = -1;
    int64_t stride = 1;
    for (size_t d = out.size(); d-- > 2;) {
      ValueId extent = int64_scalar(c, "extent", unpooled[d]);
      ValueId at = c.emit1("mod", A(), {rest, extent});
      rest = c.emit1("div", A(), {rest, extent});
      ValueId term = c.emit1("mul", A(), {at, int64_scalar(c, "stride", stride)});
      moved = moved < 0 ? term : c.emit1("add", A(), {moved, term});
      stride *= out[d];
    }
    idx =
        c.emit1("add", A(), {moved, c.emit1("mul", A(), {rest, int64_scalar(c, "plane", stride)})});
  }
  ValueId y = c.emit1("scatter_elements", A({{"axis", int64_t{0}}}),
                      {c.constant("zeros", zeros), idx, flat(c.in(0))});
  return {c.emit1("reshape", A({{"shape", out}}), {y}, true)};
}

}  // namespace anvil::frontend::onnx_detail
