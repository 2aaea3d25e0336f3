// ONNX operators onto the operator library: one function per ONNX op (or family), registered in
// op_table(). Each checks what the library cannot express and says so, naming the attribute or
// input (the caller prefixes the file, node name and op type).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "anvil/frontend/onnx/importer_internal.h"
#include "anvil/support/error.h"

namespace anvil::frontend::onnx_detail {

namespace {

using ir::DataType;
using Vals = std::vector<ValueId>;
using AttrMap = std::map<std::string, ops::AttrValue>;

ops::Attrs A(AttrMap m = {}) {
  return ops::Attrs("", std::move(m));
}

int64_t rank_of(const Ctx& c, ValueId v) {
  return static_cast<int64_t>(c.g.value(v).type.shape.size());
}

// Attribute `name` of a convolution or pooling window (or the spatial dimensions it slides over):
// `count` values from `lo` to 2^31 - 1, far from overflowing the window arithmetic.
void check_window_attr(const char* name, const std::vector<int64_t>& v, size_t count, int64_t lo) {
  ANVIL_CHECK(v.size() == count, name, " ", ops::list_str(v), " must have ", count, " values");
  for (int64_t x : v)
    ANVIL_CHECK(x >= lo && x < (int64_t{1} << 31), name, " ", ops::list_str(v),
                " must hold values from ", lo, " to 2^31 - 1");
}

}  // namespace

// The explicit pads (begin..., end...) of a convolution or pooling window from auto_pad.
std::vector<int64_t> window_pads(const Ctx& c, const std::vector<int64_t>& in,
                                 const char* kernel_name, const std::vector<int64_t>& kernel,
                                 const std::vector<int64_t>& strides,
                                 const std::vector<int64_t>& dilations) {
  size_t n = in.size();
  check_window_attr("X's spatial dimensions", in, n, 0);
  check_window_attr(kernel_name, kernel, n, 1);
  check_window_attr("attribute 'strides'", strides, n, 1);
  check_window_attr("attribute 'dilations'", dilations, n, 1);
  std::string mode = c.attr_string("auto_pad", "NOTSET");
  if (mode == "NOTSET") {
    std::vector<int64_t> pads = c.attr_ints("pads", std::vector<int64_t>(2 * n, 0));
    check_window_attr("attribute 'pads'", pads, 2 * n, 0);
    return pads;
  }
  if (mode == "VALID") return std::vector<int64_t>(2 * n, 0);
  ANVIL_CHECK(mode == "SAME_UPPER" || mode == "SAME_LOWER", "attribute 'auto_pad' = '", mode,
              "' is not NOTSET, VALID, SAME_UPPER or SAME_LOWER");
  std::vector<int64_t> pads(2 * n);
  for (size_t d = 0; d < n; ++d) {
    int64_t out = (in[d] + strides[d] - 1) / strides[d];
    int64_t total =
        std::max<int64_t>(0, (out - 1) * strides[d] + (kernel[d] - 1) * dilations[d] + 1 - in[d]);
    pads[d] = mode == "SAME_UPPER" ? total / 2 : total - total / 2;
    pads[d + n] = total - pads[d];
  }
  return pads;
}

namespace {

Vals map_conv(Ctx& c) {
  if (ValueId y = qdq_conv(c, c.has_in(2) ? c.in(2) : -1); y >= 0) return {y};
  const ops::TensorType& x = c.type(0);
  const ops::TensorType& w = c.type(1);
  size_t rank = x.shape.size();
  ANVIL_CHECK(rank >= 3 && rank <= 5,
              "only 1-D, 2-D and 3-D convolutions are supported; input X is ", ops::to_string(x));
  ANVIL_CHECK(w.shape.size() == rank, "weight W ", ops::to_string(w), " does not match X ",
              ops::to_string(x));
  size_t n = rank - 2;
  std::vector<int64_t> in(x.shape.begin() + 2, x.shape.end());
  std::vector<int64_t> kernel(w.shape.begin() + 2, w.shape.end());
  std::vector<int64_t> strides = c.attr_ints("strides", std::vector<int64_t>(n, 1));
  std::vector<int64_t> dil = c.attr_ints("dilations", std::vector<int64_t>(n, 1));
  AttrMap a{{"strides", strides},
            {"dilations", dil},
            {"pads", window_pads(c, in, "kernel (W's spatial dimensions)", kernel, strides, dil)},
            {"group", c.attr_int("group", 1)}};
  Vals ins{c.in(0), c.in(1)};
  if (c.has_in(2)) ins.push_back(c.in(2));
  // conv3d has a reference only (no compiled form).
  return {c.emit1(n == 1 ? "conv1d" : n == 2 ? "conv2d" : "conv3d", A(a), ins, true)};
}

Vals map_conv_transpose(Ctx& c) {
  const ops::TensorType& x = c.type(0);
  const ops::TensorType& w = c.type(1);
  size_t rank = x.shape.size();
  ANVIL_CHECK(rank >= 3 && rank <= 5 && w.shape.size() == rank,
              "only 1-D, 2-D and 3-D transposed convolutions are supported; input X is ",
              ops::to_string(x), ", weight W ", ops::to_string(w));
  size_t n = rank - 2;
  std::vector<int64_t> strides = c.attr_ints("strides", std::vector<int64_t>(n, 1));
  std::vector<int64_t> dil = c.attr_ints("dilations", std::vector<int64_t>(n, 1));
  std::vector<int64_t> opad = c.attr_ints("output_padding", std::vector<int64_t>(n, 0));
  std::vector<int64_t> pads = c.attr_ints("pads", std::vector<int64_t>(2 * n, 0));
  check_window_attr("attribute 'strides'", strides, n, 1);
  check_window_attr("attribute 'dilations'", dil, n, 1);
  check_window_attr("attribute 'output_padding'", opad, n, 0);
  check_window_attr("attribute 'pads'", pads, 2 * n, 0);
  check_window_attr("kernel (W's spatial dimensions)",
                    std::vector<int64_t>(w.shape.begin() + 2, w.shape.end()), n, 1);
  check_window_attr("X's spatial dimensions",
                    std::vector<int64_t>(x.shape.begin() + 2, x.shape.end()), n, 0);
  std::string mode = c.attr_string("auto_pad", "NOTSET");
  std::vector<int64_t> out_shape = c.attr_ints("output_shape");
  if (!out_shape.empty() || mode == "SAME_UPPER" || mode == "SAME_LOWER") {
    // output_shape: the spatial dimensions, or the whole shape.
    if (out_shape.size() == rank) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
    if (!out_shape.empty()) check_window_attr("attribute 'output_shape'", out_shape, n, 1);
    for (size_t d = 0; d < n; ++d) {
      int64_t in = x.shape[2 + d];
      int64_t want = out_shape.empty() ? in * strides[d] : out_shape[d];
      int64_t total = strides[d] * (in - 1) + opad[d] + (w.shape[2 + d] - 1) * dil[d] + 1 - want;
      if (total < 0) {  // a longer output than the kernel covers: extra output padding
        opad[d] -= total;
        total = 0;
      }
      bool upper = mode == "SAME_UPPER";
      pads[d] = upper ? total / 2 : total - total / 2;
      pads[d + n] = total - pads[d];
    }
  } else if (mode == "VALID") {
    pads.assign(2 * n, 0);
  }
  AttrMap a{{"strides", strides},
            {"dilations", dil},
            {"pads", pads},
            {"output_padding", opad},
            {"group", c.attr_int("group", 1)}};
  Vals ins{c.in(0), c.in(1)};
  if (c.has_in(2)) ins.push_back(c.in(2));
  // The 1-D and 3-D forms have a reference only (no compiled form).
  const char* op = n == 1 ? "conv1d_transpose" : n == 2 ? "conv2d_transpose" : "conv3d_transpose";
  return {c.emit1(op, A(a), ins, true)};
}

Vals map_gemm(Ctx& c) {
  int64_t ta = c.attr_int("transA", 0), tb = c.attr_int("transB", 0);
  double alpha = c.attr_float("alpha", 1.0), beta = c.attr_float("beta", 1.0);
  bool has_c = c.has_in(2);
  for (int i : {0, 1})
    ANVIL_CHECK(c.type(i).shape.size() == 2, "input ", i, " is ", ops::to_string(c.type(i)),
                "; Gemm takes 2-D A and B");
  int64_t N = c.type(1).shape[tb ? 0 : 1];
  const bool plain_bias = !has_c || (beta == 1.0 && c.type(2).shape == std::vector<int64_t>{N});
  if (!ta && alpha == 1.0 && plain_bias) {
    if (ValueId y = qdq_matmul(c, tb != 0, has_c ? c.in(2) : -1); y >= 0) return {y};
  }
  if (!ta && tb && alpha == 1.0 && plain_bias) {
    Vals ins{c.in(0), c.in(1)};
    if (has_c) ins.push_back(c.in(2));
    return {c.emit1("dense", A(), ins, true)};
  }
  bool last_mm = alpha == 1.0 && !has_c;
  ValueId y = c.emit1("matmul", A({{"trans_a", ta}, {"trans_b", tb}}), {c.in(0), c.in(1)}, last_mm);
  if (alpha != 1.0)
    y = c.emit1("mul", A(), {y, c.scalar_f32("alpha", static_cast<float>(alpha))}, !has_c);
  if (!has_c) return {y};
  ValueId bias = c.in(2);
  if (beta != 1.0)
    bias = c.emit1("mul", A(), {bias, c.scalar_f32("beta", static_cast<float>(beta))});
  return {c.emit1("add", A(), {y, bias}, true)};
}

Vals map_matmul(Ctx& c) {
  if (rank_of(c, c.in(0)) >= 2 && rank_of(c, c.in(1)) == 2) {
    if (ValueId y = qdq_matmul(c, false, -1); y >= 0) return {y};
  }
  ValueId a = c.in(0), b = c.in(1);
  bool a1 = rank_of(c, a) == 1, b1 = rank_of(c, b) == 1;
  if (a1) a = c.emit1("unsqueeze", A({{"axes", std::vector<int64_t>{0}}}), {a});
  if (b1) b = c.emit1("unsqueeze", A({{"axes", std::vector<int64_t>{1}}}), {b});
  ValueId y = c.emit1("matmul", A(), {a, b}, !a1 && !b1);
  if (!a1 && !b1) return {y};
  std::vector<int64_t> axes;
  if (a1) axes.push_back(-2);
  if (b1) axes.push_back(-1);
  return {c.emit1("squeeze", A({{"axes", axes}}), {y}, true)};
}

void only_first_output(const Ctx& c) {
  for (int o = 1; o < c.node().output_size(); ++o) {
    ANVIL_CHECK(c.node().output(o).empty(), "output ", o, " '", c.node().output(o),
                "' is not supported (inference only: the first output is)");
  }
}

Vals map_batch_norm(Ctx& c) {
  if (c.attr_int("training_mode", 0) == 1) return map_batch_norm_training(c);
  only_first_output(c);
  ANVIL_CHECK(c.attr_int("spatial", 1) == 1, "spatial = 0 (before opset 9) is not supported");
  return {c.emit1("batch_norm", A({{"epsilon", c.attr_float("epsilon", 1e-5)}}),
                  {c.in(0), c.in(1), c.in(2), c.in(3), c.in(4)}, true)};
}

// LayerNormalization; its optional outputs Mean and InvStdDev (over the normalized axes, kept
// as size-1 dimensions) are computed beside it.
Vals map_layer_norm(Ctx& c) {
  int64_t axis = c.attr_int("axis", -1);
  double eps = c.attr_float("epsilon", 1e-5);
  Vals ins{c.in(0), c.in(1)};
  if (c.has_in(2)) ins.push_back(c.in(2));
  bool stats = false;
  for (int o = 1; o < c.node().output_size(); ++o) stats = stats || !c.node().output(o).empty();
  ValueId y = c.emit1("layer_norm", A({{"axis", axis}, {"epsilon", eps}}), ins, !stats);
  if (!stats) return {y};
  int64_t r = rank_of(c, c.in(0));
  if (axis < 0) axis += r;
  std::vector<int64_t> axes;
  for (int64_t d = axis; d < r; ++d) axes.push_back(d);
  ops::Attrs red = A({{"axes", axes}, {"keepdims", int64_t{1}}});
  ValueId mean = c.emit1("reduce_mean", red, {c.in(0)});
  ValueId d = c.emit1("sub", A(), {c.in(0), mean});
  ValueId var = c.emit1("reduce_mean", red, {c.emit1("mul", A(), {d, d})});
  ValueId sd = c.emit1(
      "sqrt", A(), {c.emit1("add", A(), {var, c.scalar_f32("epsilon", static_cast<float>(eps))})});
  return {y, mean, c.emit1("reciprocal", A(), {sd})};
}

Vals map_instance_norm(Ctx& c) {
  return {c.emit1("instance_norm", A({{"epsilon", c.attr_float("epsilon", 1e-5)}}),
                  {c.in(0), c.in(1), c.in(2)}, true)};
}

// MaxPool / AveragePool: 2-D directly, 1-D as 2-D over a unit height, 3-D by the reference-only
// 3-D pools.
Vals map_pool(Ctx& c, const std::string& op, bool is_avg) {
  // MaxPool's Indices (output 1): the reference-only 2-D pool that gives them.
  bool indices = !is_avg && c.node().output_size() > 1 && !c.node().output(1).empty();
  if (!indices) only_first_output(c);
  ValueId x = c.in(0);
  std::vector<int64_t> xs = c.type(0).shape;
  ANVIL_CHECK(xs.size() >= 3 && xs.size() <= 5,
              "only 1-D, 2-D and 3-D pooling are supported; input X is ",
              ops::to_string(c.type(0)));
  size_t n = xs.size() - 2;
  std::vector<int64_t> in(xs.begin() + 2, xs.end());
  std::vector<int64_t> k = c.attr_ints("kernel_shape");
  ANVIL_CHECK(k.size() == n, "attribute 'kernel_shape' must have ", n, " values");
  std::vector<int64_t> s = c.attr_ints("strides", std::vector<int64_t>(n, 1));
  std::vector<int64_t> d = c.attr_ints("dilations", std::vector<int64_t>(n, 1));
  std::vector<int64_t> p = window_pads(c, in, "attribute 'kernel_shape'", k, s, d);
  if (n == 1) {
    x = c.emit1("unsqueeze", A({{"axes", std::vector<int64_t>{2}}}), {x});
    k.insert(k.begin(), 1), s.insert(s.begin(), 1), d.insert(d.begin(), 1);
    p = {0, p[0], 0, p[1]};
  }
  AttrMap a{{"kernel_shape", k},
            {"strides", s},
            {"pads", p},
            {"dilations", d},
            {"ceil_mode", c.attr_int("ceil_mode", 0)}};
  if (is_avg) a["count_include_pad"] = c.attr_int("count_include_pad", 0);
  if (indices) {
    ANVIL_CHECK(n == 2, "output 1 (Indices) is supported for 2-D pooling only; input X is ",
                ops::to_string(c.type(0)));
    a["storage_order"] = c.attr_int("storage_order", 0);
    return c.emit("max_pool2d_with_indices", A(a), {x}, true);
  }
  if (n == 3) return {c.emit1(is_avg ? "avg_pool3d" : "max_pool3d", A(a), {x}, true)};
  if (!is_avg && c.type(0).dtype != DataType::Float32()) {
    // Other types: max_pool3d over a unit depth (max_pool2d's schedules are float32).
    std::vector<int64_t> depth = {2};
    a["kernel_shape"] = std::vector<int64_t>{1, k[0], k[1]};
    a["strides"] = std::vector<int64_t>{1, s[0], s[1]};
    a["dilations"] = std::vector<int64_t>{1, d[0], d[1]};
    a["pads"] = std::vector<int64_t>{0, p[0], p[1], 0, p[2], p[3]};
    ValueId y = c.emit1("max_pool3d", A(a), {c.emit1("unsqueeze", A({{"axes", depth}}), {x})});
    if (n == 1) depth = {2, 3};  // the 1-D form's unit height too
    return {c.emit1("squeeze", A({{"axes", depth}}), {y}, true)};
  }
  ValueId y = c.emit1(op, A(a), {x}, n == 2);
  if (n == 2) return {y};
  return {c.emit1("squeeze", A({{"axes", std::vector<int64_t>{2}}}), {y}, true)};
}

Vals map_global_pool(Ctx& c, bool is_avg) {
  int64_t r = rank_of(c, c.in(0));
  if (r == 4)
    return {c.emit1(is_avg ? "global_avg_pool2d" : "global_max_pool2d", A(), {c.in(0)}, true)};
  std::vector<int64_t> axes;
  for (int64_t d = 2; d < r; ++d) axes.push_back(d);
  return {c.emit1(is_avg ? "reduce_mean" : "reduce_max",
                  A({{"axes", axes}, {"keepdims", int64_t{1}}}), {c.in(0)}, true)};
}

// The axes of a reduction: input 1 (ReduceSum from opset 13, all from 18) or attribute 'axes'.
Vals map_reduce(Ctx& c, const std::string& op, const std::string& pre, const std::string& post) {
  std::vector<int64_t> axes = c.has_in(1) ? c.ints_in(1, "axes") : c.attr_ints("axes");
  if (axes.empty() && c.attr_int("noop_with_empty_axes", 0) == 1) return {c.in(0)};
  AttrMap a{{"keepdims", c.attr_int("keepdims", 1)}};
  if (!axes.empty()) a["axes"] = axes;
  ValueId x = c.in(0);
  if (pre == "square")
    x = c.emit1("mul", A(), {x, x});
  else if (!pre.empty())
    x = c.emit1(pre, A(), {x});
  ValueId y = c.emit1(op, A(a), {x}, post.empty());
  if (post.empty()) return {y};
  return {c.emit1(post, A(), {y}, true)};
}

Vals map_arg(Ctx& c, const std::string& op) {
  return {c.emit1(op,
                  A({{"axis", c.attr_int("axis", 0)},
                     {"keepdims", c.attr_int("keepdims", 1)},
                     {"select_last_index", c.attr_int("select_last_index", 0)}}),
                  {c.in(0)}, true)};
}

// Softmax / LogSoftmax. Before opset 13 the input is flattened to 2-D at `axis` (default 1) and
// normalized over the whole second part: a reshape around a last-axis softmax.
Vals map_softmax(Ctx& c, const std::string& op) {
  std::vector<int64_t> shape = c.type(0).shape;
  int64_t r = static_cast<int64_t>(shape.size());
  if (c.opset() >= 13) return {c.emit1(op, A({{"axis", c.attr_int("axis", -1)}}), {c.in(0)}, true)};
  int64_t axis = c.attr_int("axis", 1);
  ANVIL_CHECK(axis >= -r && axis <= r, "attribute 'axis' = ", axis, " is out of range for rank ",
              r);
  if (axis < 0) axis += r;
  if (axis == r - 1) return {c.emit1(op, A({{"axis", int64_t{-1}}}), {c.in(0)}, true)};
  ValueId flat = c.emit1("flatten", A({{"axis", axis}}), {c.in(0)});
  ValueId y = c.emit1(op, A({{"axis", int64_t{1}}}), {flat});
  return {c.emit1("reshape", A({{"shape", shape}}), {y}, true)};
}

Vals map_reshape(Ctx& c) {
  std::vector<int64_t> shape = c.has_in(1) ? c.ints_in(1, "shape") : c.attr_ints("shape");
  AttrMap a{{"shape", shape}};
  // allowzero = 1: a 0 is an empty dimension (the reference handles empty tensors).
  if (c.attr_int("allowzero", 0) == 1) a["allowzero"] = int64_t{1};
  return {c.emit1("reshape", A(a), {c.in(0)}, true)};
}

Vals map_squeeze_like(Ctx& c, const std::string& op) {
  AttrMap a;
  if (c.has_in(1))
    a["axes"] = c.ints_in(1, "axes");
  else if (c.has_attr("axes"))
    a["axes"] = c.attr_ints("axes");
  return {c.emit1(op, A(a), {c.in(0)}, true)};
}

Vals map_split(Ctx& c) {
  AttrMap a{{"axis", c.attr_int("axis", 0)}};
  if (c.has_in(1))
    a["split"] = c.ints_in(1, "split");
  else if (c.has_attr("split"))
    a["split"] = c.attr_ints("split");
  else
    a["num_outputs"] = c.attr_int("num_outputs", c.node().output_size());
  return c.emit("split", A(a), {c.in(0)}, true);
}

Vals map_slice(Ctx& c) {
  if (is_dynamic_slice(c)) return map_dynamic_slice(c);
  AttrMap a;
  if (c.opset() < 10) {
    a["starts"] = c.attr_ints("starts");
    a["ends"] = c.attr_ints("ends");
    if (c.has_attr("axes")) a["axes"] = c.attr_ints("axes");
  } else {
    a["starts"] = c.ints_in(1, "starts");
    a["ends"] = c.ints_in(2, "ends");
    if (c.has_in(3)) a["axes"] = c.ints_in(3, "axes");
    if (c.has_in(4)) a["steps"] = c.ints_in(4, "steps");
  }
  return {c.emit1("slice", A(a), {c.in(0)}, true)};
}

Vals map_pad(Ctx& c) {
  std::string mode = c.attr_string("mode", "constant");
  std::vector<int64_t> pads;
  double value = 0;
  if (c.opset() < 11) {
    pads = c.attr_ints("pads");
    value = c.attr_float("value", 0.0);
  } else {
    pads = c.ints_in(1, "pads");
    if (c.has_in(2) && (mode != "constant" || c.is_const(c.in(2))))
      value = c.float_scalar_in(2, "constant_value");
    if (c.has_in(3)) {
      std::vector<int64_t> axes = c.ints_in(3, "axes");
      ANVIL_CHECK(pads.size() == 2 * axes.size(), "input 'pads' has ", pads.size(),
                  " values; with ", axes.size(), " axes it needs ", 2 * axes.size());
      int64_t r = rank_of(c, c.in(0));
      std::vector<int64_t> full(static_cast<size_t>(2 * r), 0);
      for (size_t k = 0; k < axes.size(); ++k) {
        int64_t d = axes[k] < 0 ? axes[k] + r : axes[k];
        ANVIL_CHECK(d >= 0 && d < r, "input 'axes' has ", axes[k], ", out of range for rank ", r);
        full[static_cast<size_t>(d)] = pads[k];
        full[static_cast<size_t>(d + r)] = pads[k + axes.size()];
      }
      pads = full;
    }
  }
  if (mode == "constant" && c.opset() >= 11 && c.has_in(2) && !c.is_const(c.in(2))) {
    // A fill value computed at run time: the padded positions (a mask, folded at import) take
    // it, the others the input.
    ValueId x = c.in(0);
    runtime::NDArray ones =
        runtime::NDArray::empty(c.g.value(x).type.shape, ops::to_dlpack(DataType::Float32()));
    std::fill_n(ones.data_as<float>(), ones.numel(), 1.0f);
    ValueId inside = c.emit1("cast", A({{"to", std::string("bool")}}),
                             {c.emit1("pad", A({{"pads", pads}, {"mode", mode}, {"value", 0.0}}),
                                      {c.constant("inside", ones)})});
    ValueId padded = c.emit1("pad", A({{"pads", pads}, {"mode", mode}, {"value", 0.0}}), {x});
    return {c.emit1("where", A(), {inside, padded, c.in(2)}, true)};
  }
  return {c.emit1("pad", A({{"pads", pads}, {"mode", mode}, {"value", value}}), {c.in(0)}, true)};
}

Vals map_gather(Ctx& c) {
  int64_t axis = c.attr_int("axis", 0);
  ValueId idx = c.in(1);
  if (c.is_const(idx)) {
    // Negative indices count from the end of the axis: normalized here, once.
    int64_t r = rank_of(c, c.in(0));
    ANVIL_CHECK(axis >= -r && axis < r, "attribute 'axis' = ", axis, " is outside [", -r, ", ", r,
                ") for input ", ops::to_string(c.type(0)));
    int64_t dim = c.type(0).shape[static_cast<size_t>(axis < 0 ? axis + r : axis)];
    runtime::NDArray a = c.g.value(idx).data;
    bool neg = false;
    std::vector<int64_t> v = c.ints_in(1, "indices");
    for (int64_t x : v) neg = neg || x < 0;
    if (neg) {
      runtime::NDArray b = runtime::NDArray::empty(a.shape(), ops::to_dlpack(DataType::Int64()));
      for (size_t k = 0; k < v.size(); ++k) b.data_as<int64_t>()[k] = v[k] < 0 ? v[k] + dim : v[k];
      idx = c.constant("indices", b);
    }
  }
  if (rank_of(c, c.in(0)) == 1 && rank_of(c, idx) == 0) {
    // A scalar result (an element of a shape, mostly): the library has no rank-0 outputs, so a
    // constant one is computed here; otherwise through indices [1] (then an error at squeeze).
    if (c.is_const(c.in(0)) && c.is_const(idx)) {
      const runtime::NDArray& data = c.g.value(c.in(0)).data;
      int64_t i = c.int_scalar_in(1, "indices");
      int64_t n = data.numel();
      if (i < 0) i += n;
      ANVIL_CHECK(i >= 0 && i < n, "index ", i, " is out of range for data of ", n, " elements");
      runtime::NDArray out = runtime::NDArray::empty({}, data.dtype());
      size_t elem = data.nbytes() / static_cast<size_t>(n);
      std::memcpy(out.data(), static_cast<const char*>(data.data()) + static_cast<size_t>(i) * elem,
                  elem);
      return {c.g.add_constant(c.g.unique_name(c.node().output(0)), out)};
    }
    ValueId one = c.emit1("unsqueeze", A({{"axes", std::vector<int64_t>{0}}}), {idx});
    ValueId y = c.emit1("gather", A({{"axis", int64_t{0}}}), {c.in(0), one});
    return {c.emit1("squeeze", A({{"axes", std::vector<int64_t>{0}}}), {y}, true)};
  }
  return {c.emit1("gather", A({{"axis", axis}}), {c.in(0), idx}, true)};
}

Vals map_resize(Ctx& c, bool upsample) {
  std::string mode = c.attr_string("mode", "nearest");
  AttrMap a{{"mode", mode}};
  std::vector<double> scales;
  bool old = upsample || c.opset() < 11;
  if (old) {
    a["coordinate_transformation_mode"] = std::string("asymmetric");
    a["nearest_mode"] = std::string("floor");
    scales = c.has_in(1) ? c.floats_in(1, "scales") : c.attr_floats("scales");
  } else {
    a["coordinate_transformation_mode"] =
        c.attr_string("coordinate_transformation_mode", "half_pixel");
    a["nearest_mode"] = c.attr_string("nearest_mode", "round_prefer_floor");
    if (c.has_in(2)) scales = c.floats_in(2, "scales");
    if (scales.empty()) {
      ANVIL_CHECK(c.has_in(3), "needs input 'scales' or 'sizes'");
      a["sizes"] = c.ints_in(3, "sizes");
    }
  }
  if (!scales.empty()) a["scales"] = scales;
  if (mode == "cubic") {
    a["cubic_coeff_a"] = c.attr_float("cubic_coeff_a", -0.75);
    a["exclude_outside"] = c.attr_int("exclude_outside", 0);
  }
  return {c.emit1("resize", A(a), {c.in(0)}, true)};
}

Vals map_cast(Ctx& c) {
  int64_t to = c.attr_int("to", 0);
  DataType t = onnx_dtype(static_cast<int32_t>(to), "attribute 'to'");
  return {c.emit1("cast", A({{"to", t.to_string()}}), {c.in(0)}, true)};
}

Vals map_rnn(Ctx& c, const std::string& op) {
  AttrMap a{{"hidden_size", c.attr_int("hidden_size", 0)},
            {"direction", c.attr_string("direction", "forward")},
            {"layout", int64_t{0}}};
  // layout = 1 (batch-major): transposed to the library's sequence-major form and back.
  bool batch_major = c.attr_int("layout", 0) == 1;
  auto swap01 = [&](ValueId v, bool last = false) {
    return c.emit1("transpose", A({{"perm", std::vector<int64_t>{1, 0, 2}}}), {v}, last);
  };
  if (c.has_attr("clip")) a["clip"] = c.attr_float("clip", 0);
  if (op == "lstm")
    a["input_forget"] = c.attr_int("input_forget", 0);
  else
    a["linear_before_reset"] = c.attr_int("linear_before_reset", 0);
  if (const ::onnx::AttributeProto* acts = c.attr("activations")) {
    std::string s;
    for (int i = 0; i < acts->strings_size(); ++i) s += (i ? "," : "") + acts->strings(i);
    a["activations"] = s;
  }
  for (const char* n : {"activation_alpha", "activation_beta"})
    ANVIL_CHECK(!c.has_attr(n), "attribute '", n, "' is not supported");
  std::vector<int64_t> present;
  Vals ins;
  for (int i = 0; i < c.num_in(); ++i) {
    bool has = c.has_in(i);
    if (has && i == 4) {  // sequence_lens: only the full length of X, which changes nothing
      ANVIL_CHECK(c.type(0).shape.size() == 3, "input X is ", ops::to_string(c.type(0)),
                  "; it must be 3-D [seq_length, batch_size, input_size]");
      int64_t seq = c.type(0).shape[0];
      for (int64_t l : c.ints_in(4, "sequence_lens"))
        ANVIL_CHECK(l == seq, "input 'sequence_lens' must equal the sequence length ", seq,
                    ", got ", l);
      has = false;
    }
    present.push_back(has ? 1 : 0);
    if (has) ins.push_back(batch_major && (i == 0 || i == 5 || i == 6) ? swap01(c.in(i)) : c.in(i));
  }
  a["present"] = present;
  if (!batch_major) return c.emit(op, A(a), ins, true);
  Vals outs = c.emit(op, A(a), ins);
  outs[0] = c.emit1("transpose", A({{"perm", std::vector<int64_t>{2, 0, 1, 3}}}), {outs[0]});
  for (size_t k = 1; k < outs.size(); ++k) outs[k] = swap01(outs[k]);
  return outs;
}

Vals map_constant(Ctx& c) {
  ValueId v = -1;
  const std::string out = c.node().output(0);
  auto add = [&](runtime::NDArray arr) { return c.g.add_constant(c.g.unique_name(out), arr); };
  auto from_ints = [&](const std::vector<int64_t>& x, bool scalar) {
    std::vector<int64_t> shape =
        scalar ? std::vector<int64_t>{} : std::vector<int64_t>{static_cast<int64_t>(x.size())};
    runtime::NDArray arr = runtime::NDArray::empty(shape, ops::to_dlpack(DataType::Int64()));
    std::copy(x.begin(), x.end(), arr.data_as<int64_t>());
    return add(arr);
  };
  auto from_floats = [&](const std::vector<double>& x, bool scalar) {
    std::vector<int64_t> shape =
        scalar ? std::vector<int64_t>{} : std::vector<int64_t>{static_cast<int64_t>(x.size())};
    runtime::NDArray arr = runtime::NDArray::empty(shape, ops::to_dlpack(DataType::Float32()));
    for (size_t k = 0; k < x.size(); ++k) arr.data_as<float>()[k] = static_cast<float>(x[k]);
    return add(arr);
  };
  if (const ::onnx::AttributeProto* t = c.attr("value")) {
    v = add(to_ndarray(t->t(), "attribute 'value'"));
  } else if (c.has_attr("value_int")) {
    v = from_ints({c.attr_int("value_int", 0)}, true);
  } else if (c.has_attr("value_ints")) {
    v = from_ints(c.attr_ints("value_ints"), false);
  } else if (c.has_attr("value_float")) {
    v = from_floats({c.attr_float("value_float", 0)}, true);
  } else if (c.has_attr("value_floats")) {
    v = from_floats(c.attr_floats("value_floats"), false);
  } else {
    throw Error("only the value, value_int(s) and value_float(s) attributes are supported");
  }
  return {v};
}

runtime::NDArray int64_vector(const std::vector<int64_t>& v) {
  runtime::NDArray a =
      runtime::NDArray::empty({static_cast<int64_t>(v.size())}, ops::to_dlpack(DataType::Int64()));
  std::copy(v.begin(), v.end(), a.data_as<int64_t>());
  return a;
}

Vals map_shape(Ctx& c) {
  std::vector<int64_t> s = c.type(0).shape;
  int64_t r = static_cast<int64_t>(s.size());
  int64_t b = c.attr_int("start", 0), e = c.attr_int("end", r);
  if (b < 0) b += r;
  if (e < 0) e += r;
  b = std::clamp<int64_t>(b, 0, r), e = std::clamp<int64_t>(e, b, r);
  std::vector<int64_t> part(s.begin() + b, s.begin() + e);
  return {c.g.add_constant(c.g.unique_name(c.node().output(0)), int64_vector(part))};
}

Vals map_size(Ctx& c) {
  int64_t n = 1;
  for (int64_t d : c.type(0).shape) n *= d;
  runtime::NDArray a = runtime::NDArray::empty({}, ops::to_dlpack(DataType::Int64()));
  a.data_as<int64_t>()[0] = n;
  return {c.g.add_constant(c.g.unique_name(c.node().output(0)), a)};
}

Vals map_constant_of_shape(Ctx& c) {
  std::vector<int64_t> shape = c.ints_in(0, "shape");
  runtime::NDArray fill;
  if (const ::onnx::AttributeProto* t = c.attr("value")) {
    fill = to_ndarray(t->t(), "attribute 'value'");
    ANVIL_CHECK(fill.numel() == 1, "attribute 'value' must hold one element, not ", fill.numel());
  } else {
    fill = runtime::NDArray::empty({1}, ops::to_dlpack(DataType::Float32()), true);
  }
  c.check_size("output 0", {shape, ops::from_dlpack(fill.dtype())}, true);
  runtime::NDArray out = runtime::NDArray::empty(shape, fill.dtype());
  size_t elem = fill.nbytes();
  for (int64_t k = 0; k < out.numel(); ++k)
    std::memcpy(static_cast<char*>(out.data()) + static_cast<size_t>(k) * elem, fill.data(), elem);
  return {c.g.add_constant(c.g.unique_name(c.node().output(0)), out)};
}

Vals map_dropout(Ctx& c) {
  if (c.has_in(2)) {
    std::vector<double> t = c.floats_in(2, "training_mode");
    // Training with ratio 0 drops nothing: still the identity.
    double ratio = c.has_in(1) ? c.float_scalar_in(1, "ratio") : 0.5;
    ANVIL_CHECK(t.empty() || t[0] == 0 || ratio == 0,
                "training_mode = true with a non-zero ratio is not supported");
  }
  if (c.node().output_size() < 2 || c.node().output(1).empty()) return {c.in(0)};
  // The mask of an inference-mode dropout keeps everything: all true.
  runtime::NDArray mask =
      runtime::NDArray::empty(c.type(0).shape, ops::to_dlpack(DataType::Bool()));
  std::memset(mask.data(), 1, mask.nbytes());
  return {c.in(0), c.g.add_constant(c.g.unique_name(c.node().output(1)), mask)};
}

}  // namespace

const std::map<std::string, MapFn>& op_table() {
  static const std::map<std::string, MapFn> table = [] {
    std::map<std::string, MapFn> t;
    add_elementwise_ops(t);
    add_quantize_ops(t);
    t["GatherElements"] = [](Ctx& c) {
      return Vals{c.emit1("gather_elements", A({{"axis", c.attr_int("axis", 0)}}),
                          {c.in(0), c.in(1)}, true)};
    };
    t["GatherND"] = [](Ctx& c) {
      return Vals{c.emit1("gather_nd", A({{"batch_dims", c.attr_int("batch_dims", 0)}}),
                          {c.in(0), c.in(1)}, true)};
    };
    auto scatter_elements = [](Ctx& c) {
      return Vals{c.emit1(
          "scatter_elements",
          A({{"axis", c.attr_int("axis", 0)}, {"reduction", c.attr_string("reduction", "none")}}),
          {c.in(0), c.in(1), c.in(2)}, true)};
    };
    t["ScatterElements"] = scatter_elements;
    t["Scatter"] = scatter_elements;  // opsets 9 and 10: ScatterElements before its rename
    t["ScatterND"] = [](Ctx& c) {
      return Vals{c.emit1("scatter_nd", A({{"reduction", c.attr_string("reduction", "none")}}),
                          {c.in(0), c.in(1), c.in(2)}, true)};
    };
    t["TopK"] = [](Ctx& c) {
      // K: an attribute before opset 10, then an input (one element); results always sorted.
      int64_t k = c.opset() < 10 ? c.attr_int("k", 0) : c.int_scalar_in(1, "K");
      return c.emit(
          "topk",
          A({{"k", k}, {"axis", c.attr_int("axis", -1)}, {"largest", c.attr_int("largest", 1)}}),
          {c.in(0)}, true);
    };
    t["GridSample"] = [](Ctx& c) {
      std::string mode = c.attr_string("mode", "bilinear");  // opset 20 says linear, cubic
      if (mode == "linear") mode = "bilinear";
      if (mode == "cubic") mode = "bicubic";
      return Vals{c.emit1("grid_sample",
                          A({{"mode", mode},
                             {"padding_mode", c.attr_string("padding_mode", "zeros")},
                             {"align_corners", c.attr_int("align_corners", 0)}}),
                          {c.in(0), c.in(1)}, true)};
    };
    t["CumSum"] = [](Ctx& c) {
      return Vals{c.emit1("cumsum",
                          A({{"axis", c.int_scalar_in(1, "axis")},
                             {"exclusive", c.attr_int("exclusive", 0)},
                             {"reverse", c.attr_int("reverse", 0)}}),
                          {c.in(0)}, true)};
    };
    t["Trilu"] = [](Ctx& c) {
      int64_t k = c.has_in(1) ? c.int_scalar_in(1, "k") : 0;
      return Vals{
          c.emit1("trilu", A({{"upper", c.attr_int("upper", 1)}, {"k", k}}), {c.in(0)}, true)};
    };
    t["CastLike"] = map_cast_like;
    t["DepthToSpace"] = map_depth_to_space;
    t["SpaceToDepth"] = map_space_to_depth;
    t["Hardmax"] = map_hardmax;
    t["OneHot"] = map_one_hot;
    t["Einsum"] = map_einsum;
    t["Range"] = map_range;
    t["Compress"] = map_compress;
    t["ReverseSequence"] = map_reverse_sequence;
    t["MaxUnpool"] = map_max_unpool;
    t["DFT"] = map_dft;
    t["STFT"] = map_stft;
    t["RNN"] = map_rnn_simple;
    t["Det"] = map_det;
    t["MeanVarianceNormalization"] = map_mean_variance_normalization;
    t["LRN"] = map_lrn;
    t["NegativeLogLikelihoodLoss"] = map_nll_loss;
    t["SoftmaxCrossEntropyLoss"] = map_softmax_cross_entropy_loss;
    t["Conv"] = map_conv;
    t["ConvTranspose"] = map_conv_transpose;
    t["Gemm"] = map_gemm;
    t["MatMul"] = map_matmul;
    t["BatchNormalization"] = map_batch_norm;
    t["LayerNormalization"] = map_layer_norm;
    t["InstanceNormalization"] = map_instance_norm;
    t["MaxPool"] = [](Ctx& c) { return map_pool(c, "max_pool2d", false); };
    t["AveragePool"] = [](Ctx& c) { return map_pool(c, "avg_pool2d", true); };
    t["GlobalAveragePool"] = [](Ctx& c) { return map_global_pool(c, true); };
    t["GlobalMaxPool"] = [](Ctx& c) { return map_global_pool(c, false); };
    t["ReduceSum"] = [](Ctx& c) { return map_reduce(c, "reduce_sum", "", ""); };
    t["ReduceMean"] = [](Ctx& c) { return map_reduce(c, "reduce_mean", "", ""); };
    t["ReduceMax"] = [](Ctx& c) { return map_reduce(c, "reduce_max", "", ""); };
    t["ReduceMin"] = [](Ctx& c) { return map_reduce(c, "reduce_min", "", ""); };
    t["ReduceProd"] = [](Ctx& c) { return map_reduce(c, "reduce_prod", "", ""); };
    t["ReduceSumSquare"] = [](Ctx& c) { return map_reduce(c, "reduce_sum", "square", ""); };
    t["ReduceL1"] = [](Ctx& c) { return map_reduce(c, "reduce_sum", "abs", ""); };
    t["ReduceL2"] = [](Ctx& c) { return map_reduce(c, "reduce_sum", "square", "sqrt"); };
    t["ReduceLogSum"] = [](Ctx& c) { return map_reduce(c, "reduce_sum", "", "log"); };
    t["ReduceLogSumExp"] = [](Ctx& c) { return map_reduce(c, "reduce_sum", "exp", "log"); };
    t["ArgMax"] = [](Ctx& c) { return map_arg(c, "argmax"); };
    t["ArgMin"] = [](Ctx& c) { return map_arg(c, "argmin"); };
    t["Softmax"] = [](Ctx& c) { return map_softmax(c, "softmax"); };
    t["LogSoftmax"] = [](Ctx& c) { return map_softmax(c, "log_softmax"); };
    t["Reshape"] = map_reshape;
    t["Flatten"] = [](Ctx& c) {
      return Vals{c.emit1("flatten", A({{"axis", c.attr_int("axis", 1)}}), {c.in(0)}, true)};
    };
    t["Squeeze"] = [](Ctx& c) { return map_squeeze_like(c, "squeeze"); };
    t["Unsqueeze"] = [](Ctx& c) { return map_squeeze_like(c, "unsqueeze"); };
    t["Transpose"] = [](Ctx& c) {
      AttrMap a;
      if (c.has_attr("perm")) a["perm"] = c.attr_ints("perm");
      return Vals{c.emit1("transpose", A(a), {c.in(0)}, true)};
    };
    t["Concat"] = [](Ctx& c) {
      Vals ins;
      for (int i = 0; i < c.num_in(); ++i) ins.push_back(c.in(i));
      int64_t axis = c.attr_int("axis", c.opset() < 4 ? 1 : 0);  // required from opset 4 on
      return Vals{c.emit1("concat", A({{"axis", axis}}), ins, true)};
    };
    t["Split"] = map_split;
    t["Slice"] = map_slice;
    t["Pad"] = map_pad;
    t["Gather"] = map_gather;
    t["Expand"] = [](Ctx& c) {
      return Vals{c.emit1("expand", A({{"shape", c.ints_in(1, "shape")}}), {c.in(0)}, true)};
    };
    t["Tile"] = [](Ctx& c) {
      return Vals{c.emit1("tile", A({{"repeats", c.ints_in(1, "repeats")}}), {c.in(0)}, true)};
    };
    t["Resize"] = [](Ctx& c) { return map_resize(c, false); };
    t["Upsample"] = [](Ctx& c) { return map_resize(c, true); };
    t["Cast"] = map_cast;
    t["LSTM"] = [](Ctx& c) { return map_rnn(c, "lstm"); };
    t["GRU"] = [](Ctx& c) { return map_rnn(c, "gru"); };
    t["Identity"] = [](Ctx& c) { return Vals{c.in(0)}; };
    t["Dropout"] = map_dropout;
    t["Constant"] = map_constant;
    t["Shape"] = map_shape;
    t["Size"] = map_size;
    t["ConstantOfShape"] = map_constant_of_shape;
    t["If"] = map_if;
    t["Loop"] = map_loop;
    t["Scan"] = map_scan;
    return t;
  }();
  return table;
}

}  // namespace anvil::frontend::onnx_detail
