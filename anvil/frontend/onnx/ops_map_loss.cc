// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss, composed from the library's operators.
// With input [N, C, d...] and target [N, d...]:
//   mask   = target != ignore_index              (all true without ignore_index)
//   t      = where(mask, target, 0)              (an ignored target may be any value)
//   picked = gather_elements(input, t[:, None], axis 1)[:, 0]
//   w      = weight[t] * mask                    (weight absent: mask)
//   loss   = -picked * w
// then reduction 'none' (loss), 'sum' (its sum) or 'mean' (its sum over the sum of w, as ONNX's
// reference divides by the weights of the targets that count). SoftmaxCrossEntropyLoss applies
// this to log_softmax(scores) over axis 1, which is its optional second output.
#include "anvil/frontend/onnx/importer_internal.h"
#include "anvil/support/error.h"

namespace anvil::frontend::onnx_detail {

namespace {

using AttrMap = std::map<std::string, ops::AttrValue>;

ops::Attrs A(AttrMap m = {}) {
  return ops::Attrs("", std::move(m));
}

// The loss of log-probabilities `logp` [N, C, d...] at targets input `target_in`, weights input
// `weight_in` (-1: none); named after the node's output 0.
ValueId nll(Ctx& c, ValueId logp, int target_in, int weight_in) {
  std::string reduction = c.attr_string("reduction", "mean");
  ANVIL_CHECK(reduction == "none" || reduction == "sum" || reduction == "mean",
              "attribute 'reduction' is '", reduction, "', expected 'none', 'sum' or 'mean'");
  std::vector<int64_t> xs = c.g.value(logp).type.shape;
  ops::TensorType tt = c.type(target_in);
  ANVIL_CHECK(xs.size() >= 2, "input ", ops::to_string(c.g.value(logp).type),
              " needs a class axis (rank 2 or more)");
  ANVIL_CHECK(tt.dtype.is_int(), "target ", ops::to_string(tt), " must be int32 or int64");
  std::vector<int64_t> want = xs;
  want.erase(want.begin() + 1);
  ANVIL_CHECK(tt.shape == want, "target ", ops::to_string(tt), " must have the shape ",
              ops::to_string(ops::TensorType{want, tt.dtype}), " (input without its class axis)");
  ValueId target = c.in(target_in);
  ValueId mask = -1;
  if (c.has_attr("ignore_index")) {
    runtime::NDArray ii = runtime::NDArray::empty({}, ops::to_dlpack(tt.dtype));
    runtime::NDArray zero = runtime::NDArray::empty({}, ops::to_dlpack(tt.dtype));
    int64_t v = c.attr_int("ignore_index", 0);
    if (tt.dtype.bits() == 32) {
      ii.data_as<int32_t>()[0] = static_cast<int32_t>(v);
      zero.data_as<int32_t>()[0] = 0;
    } else {
      ii.data_as<int64_t>()[0] = v;
      zero.data_as<int64_t>()[0] = 0;
    }
    ValueId ignored = c.emit1("equal", A(), {target, c.constant("ignore_index", ii)});
    mask = c.emit1("logical_not", A(), {ignored});
    target = c.emit1("where", A(), {mask, target, c.constant("zero", zero)});
  }
  ir::DataType ft = c.g.value(logp).type.dtype;
  ValueId t1 = c.emit1("unsqueeze", A({{"axes", std::vector<int64_t>{1}}}), {target});
  ValueId picked = c.emit1("gather_elements", A({{"axis", int64_t{1}}}), {logp, t1});
  picked = c.emit1("squeeze", A({{"axes", std::vector<int64_t>{1}}}), {picked});
  ValueId w = -1;
  if (weight_in >= 0 && c.has_in(weight_in)) {
    w = c.emit1("gather", A({{"axis", int64_t{0}}}), {c.in(weight_in), target});
  }
  if (mask >= 0) {
    ValueId m = c.emit1("cast", A({{"to", ft.to_string()}}), {mask});
    w = w >= 0 ? c.emit1("mul", A(), {w, m}) : m;
  }
  // The last op emitted takes the node's output name.
  bool none = reduction == "none";
  ValueId loss = c.emit1("neg", A(), {picked}, none && w < 0);
  if (w >= 0) loss = c.emit1("mul", A(), {loss, w}, none);
  if (none) return loss;
  AttrMap all{{"keepdims", int64_t{0}}};
  if (reduction == "sum") return c.emit1("reduce_sum", A(all), {loss}, true);
  if (w < 0) return c.emit1("reduce_mean", A(all), {loss}, true);  // the mean over the elements
  ValueId sum = c.emit1("reduce_sum", A(all), {loss});
  ValueId total = c.emit1("reduce_sum", A(all), {w});
  return c.emit1("div", A(), {sum, total}, true);
}

}  // namespace

std::vector<ValueId> map_nll_loss(Ctx& c) {
  ANVIL_CHECK(c.num_in() >= 2, "needs inputs input and target, got ", c.num_in());
  return {nll(c, c.in(0), 1, 2)};
}

std::vector<ValueId> map_softmax_cross_entropy_loss(Ctx& c) {
  ANVIL_CHECK(c.num_in() >= 2, "needs inputs scores and labels, got ", c.num_in());
  ValueId logp = c.emit1("log_softmax", A({{"axis", int64_t{1}}}), {c.in(0)});
  return {nll(c, logp, 1, 2), logp};
}

}  // namespace anvil::frontend::onnx_detail
