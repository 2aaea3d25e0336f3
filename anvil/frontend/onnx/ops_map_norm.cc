// BatchNormalization in training mode (opset 14+: training_mode = 1, or the running statistics
// requested as outputs 1 and 2), composed from the library's operators: the batch statistics are
// reduce_means over every axis but the channels, Y is the inference batch_norm on them, and the
// running statistics are input * momentum + batch * (1 - momentum). The variance is the
// population variance (divided by the element count), as ONNX's reference has it.
// MeanVarianceNormalization likewise: (X - mean) / sqrt(variance + 1e-9) over `axes`, the
// statistics reduce_means, as ONNX's function body defines it. LRN: an average pool over the
// channels of X^2.
#include "anvil/frontend/onnx/importer_internal.h"
#include "anvil/support/error.h"

namespace anvil::frontend::onnx_detail {

std::vector<ValueId> map_batch_norm_training(Ctx& c) {
  using AttrMap = std::map<std::string, ops::AttrValue>;
  auto A = [](AttrMap m) { return ops::Attrs("", std::move(m)); };
  ANVIL_CHECK(c.num_in() == 5, "needs 5 inputs (X, scale, B, input_mean, input_var), got ",
              c.num_in());
  ANVIL_CHECK(c.node().output_size() <= 3,
              "outputs saved_mean and saved_inv_std (opsets before "
              "14) are not supported");
  std::vector<int64_t> xs = c.type(0).shape;  // a copy: emitting grows the value table
  ANVIL_CHECK(xs.size() >= 2, "input X ", ops::to_string(c.type(0)), " has no channel axis");
  std::vector<int64_t> axes = {0};
  for (int64_t d = 2; d < static_cast<int64_t>(xs.size()); ++d) axes.push_back(d);
  AttrMap over{{"axes", axes}, {"keepdims", int64_t{1}}};
  ValueId x = c.in(0);
  ValueId mean_k = c.emit1("reduce_mean", A(over), {x});
  ValueId dev = c.emit1("sub", A({}), {x, mean_k});
  ValueId var_k = c.emit1("reduce_mean", A(over), {c.emit1("mul", A({}), {dev, dev})});
  AttrMap per_channel{{"shape", std::vector<int64_t>{xs[1]}}};
  ValueId mean = c.emit1("reshape", A(per_channel), {mean_k});
  ValueId var = c.emit1("reshape", A(per_channel), {var_k});
  ValueId y = c.emit1("batch_norm", A({{"epsilon", c.attr_float("epsilon", 1e-5)}}),
                      {x, c.in(1), c.in(2), mean, var}, true);
  auto momentum = static_cast<float>(c.attr_float("momentum", 0.9));
  ValueId keep = c.scalar_f32("momentum", momentum);
  ValueId take = c.scalar_f32("one_minus_momentum", 1.0f - momentum);
  auto running = [&](int input, ValueId batch) {
    return c.emit1(
        "add", A({}),
        {c.emit1("mul", A({}), {c.in(input), keep}), c.emit1("mul", A({}), {batch, take})});
  };
  return {y, running(3, mean), running(4, var)};
}

std::vector<ValueId> map_mean_variance_normalization(Ctx& c) {
  using AttrMap = std::map<std::string, ops::AttrValue>;
  auto A = [](AttrMap m) { return ops::Attrs("", std::move(m)); };
  std::vector<int64_t> axes =
      c.has_attr("axes") ? c.attr_ints("axes") : std::vector<int64_t>{0, 2, 3};
  ANVIL_CHECK(c.type(0).dtype.is_float(), "input X is ", c.type(0).dtype, ", not a float type");
  AttrMap over{{"axes", axes}, {"keepdims", int64_t{1}}};
  ValueId x = c.in(0);
  ValueId dev = c.emit1("sub", A({}), {x, c.emit1("reduce_mean", A(over), {x})});
  ValueId var = c.emit1("reduce_mean", A(over), {c.emit1("mul", A({}), {dev, dev})});
  ValueId eps = c.scalar_f32("epsilon", 1e-9f);
  if (c.type(0).dtype != ir::DataType::Float32())
    eps = c.emit1("cast", A({{"to", c.type(0).dtype.to_string()}}), {eps});
  ValueId sd = c.emit1("sqrt", A({}), {c.emit1("add", A({}), {var, eps})});
  return {c.emit1("div", A({}), {dev, sd}, true)};
}

// LRN: X / (bias + alpha / size * (sum of X^2 over the `size` channels around each))^beta. The
// channel window's sum is an average pool (padding counted) over [N, 1, C, rest] times size.
std::vector<ValueId> map_lrn(Ctx& c) {
  using AttrMap = std::map<std::string, ops::AttrValue>;
  auto A = [](AttrMap m) { return ops::Attrs("", std::move(m)); };
  std::vector<int64_t> xs = c.type(0).shape;
  ANVIL_CHECK(xs.size() >= 3 && c.type(0).dtype == ir::DataType::Float32(), "input X ",
              ops::to_string(c.type(0)), " must be float32 [N, C, D1, ...]");
  int64_t size = c.attr_int("size", 0);
  ANVIL_CHECK(size >= 1 && size <= 2 * xs[1] + 1, "attribute 'size' = ", size,
              " must be in [1, 2C + 1] for ", xs[1], " channels");
  int64_t rest = 1;
  for (size_t d = 2; d < xs.size(); ++d) rest *= xs[d];
  ValueId x = c.in(0);
  ValueId sq = c.emit1("mul", A({}), {x, x});
  sq = c.emit1("reshape", A({{"shape", std::vector<int64_t>{xs[0], 1, xs[1], rest}}}), {sq});
  AttrMap pool{{"kernel_shape", std::vector<int64_t>{size, 1}},
               {"strides", std::vector<int64_t>{1, 1}},
               {"pads", std::vector<int64_t>{(size - 1) / 2, 0, size / 2, 0}},
               {"dilations", std::vector<int64_t>{1, 1}},
               {"ceil_mode", int64_t{0}},
               {"count_include_pad", int64_t{1}}};
  ValueId mean = c.emit1("avg_pool2d", A(pool), {sq});
  mean = c.emit1("reshape", A({{"shape", xs}}), {mean});
  // alpha / size * sum == alpha * mean.
  ValueId alpha = c.scalar_f32("alpha", static_cast<float>(c.attr_float("alpha", 1e-4)));
  ValueId bias = c.scalar_f32("bias", static_cast<float>(c.attr_float("bias", 1.0)));
  ValueId beta = c.scalar_f32("beta", static_cast<float>(c.attr_float("beta", 0.75)));
  ValueId base = c.emit1("add", A({}), {c.emit1("mul", A({}), {mean, alpha}), bias});
  return {c.emit1("div", A({}), {x, c.emit1("pow", A({}), {base, beta})}, true)};
}

}  // namespace anvil::frontend::onnx_detail
