// BatchNormalization in training mode (opset 14+: training_mode = 1, or the running statistics
// requested as outputs 1 and 2), composed from the library's operators: the batch statistics are
// reduce_means over every axis but the channels, Y is the inference batch_norm on them, and the
// running statistics are input * momentum + batch * (1 - momentum). The variance is the
// population variance (divided by the element count), as ONNX's reference has it.
// MeanVarianceNormalization likewise: (X - mean) / sqrt(variance + 1e-9) over `axes`, the
// statistics reduce_means, as ONNX's function body defines it.
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

}  // namespace anvil::frontend::onnx_detail
