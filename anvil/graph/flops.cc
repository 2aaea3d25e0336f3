// FLOP counts of operators and the measured peak (flops.h).
#include "anvil/graph/flops.h"

#include <algorithm>
#include <set>

#include "anvil/support/error.h"
#include "anvil/target/target.h"

namespace anvil::graph {

namespace {

double numel(const std::vector<int64_t>& shape) {
  double n = 1;
  for (int64_t d : shape) n *= static_cast<double>(d);
  return n;
}

double numel(const ops::TensorType& t) {
  return numel(t.shape);
}

double product(const std::vector<int64_t>& v) {
  return numel(v);
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Operators that only move or convert data.
const std::set<std::string>& data_movement() {
  static const std::set<std::string> ops = {
      "reshape",  "flatten", "squeeze", "unsqueeze", "transpose",
      "concat",   "split",   "slice",   "pad",       "gather",
      "expand",   "tile",    "resize",  "cast",      "layout_transform",
      "identity", "dropout"};
  return ops;
}

}  // namespace

double op_flops(const std::string& op, const std::vector<ops::TensorType>& in,
                const std::vector<ops::TensorType>& out, const ops::Attrs& attrs) {
  // The rank each operand must have for its dimensions to be read below.
  auto need = [&](bool is_input, size_t i, size_t min_rank) -> const std::vector<int64_t>& {
    const std::vector<ops::TensorType>& v = is_input ? in : out;
    ANVIL_CHECK(i < v.size() && v[i].shape.size() >= min_rank, "flops: operator '", op, "' needs ",
                is_input ? "input " : "output ", i, " of rank at least ", min_rank, ", got ",
                i < v.size() ? ops::to_string(v[i]) : std::string("none"));
    return v[i].shape;
  };
  auto bias = [&](size_t index) { return in.size() > index ? numel(need(false, 0, 0)) : 0.0; };
  if (ends_with(op, "_pack_weight") || data_movement().count(op)) return 0;

  // Convolutions: 2 FLOP per tap of the direct convolution.
  if (op == "conv1d" || op == "conv2d" || op == "conv3d") {
    const std::vector<int64_t>& w = need(true, 1, 3);
    return 2 * numel(need(false, 0, 3)) * product(std::vector<int64_t>(w.begin() + 1, w.end())) +
           bias(2);
  }
  if (op == "conv1d_transpose" || op == "conv2d_transpose" || op == "conv3d_transpose") {
    const std::vector<int64_t>& w = need(true, 1, 3);
    return 2 * numel(need(true, 0, 3)) * product(std::vector<int64_t>(w.begin() + 1, w.end())) +
           bias(2);
  }
  if (op == "conv2d_nchwc") {
    const std::vector<int64_t>& w = need(true, 1, 6);  // [O/ob, C/ib, KH, KW, ib, ob]
    return 2 * numel(need(false, 0, 5)) * static_cast<double>(w[1] * w[4] * w[2] * w[3]);
  }
  if (op == "depthwise_conv2d_nchwc") {
    const std::vector<int64_t>& w = need(true, 1, 6);  // [C/b, 1, KH, KW, 1, b]
    return 2 * numel(need(false, 0, 5)) * static_cast<double>(w[2] * w[3]);
  }
  if (op == "conv2d_winograd_nchwc") {
    const std::vector<int64_t>& x = need(true, 0, 5);  // [N, C/ib, H, W, ib]
    return 2 * numel(need(false, 0, 5)) * static_cast<double>(x[1] * x[4]) * 9;
  }
  if (op == "conv2d_winograd") {
    const std::vector<int64_t>& x = need(true, 0, 4);  // [N, C, H, W]
    return 2 * numel(need(false, 0, 4)) * static_cast<double>(x[1]) * 9 + bias(2);
  }
  if (op == "conv2d_transpose_nchwc") {
    const std::vector<int64_t>& o = need(false, 0, 5);  // [N, O/ob, OH, OW, ob]
    std::vector<int64_t> k = attrs.get_ints("kernel_shape");
    return 2 * numel(need(true, 0, 5)) * static_cast<double>(o[1] * o[4]) * product(k);
  }

  // Matrix products: 2 FLOP per multiply-add of the reduction.
  if (op == "dense" || op == "dense_packed") {
    const std::vector<int64_t>& x = need(true, 0, 1);
    return 2 * numel(need(false, 0, 0)) * static_cast<double>(x.back()) + bias(2);
  }
  if (op == "matmul" || op == "batch_matmul") {
    const std::vector<int64_t>& a = need(true, 0, 1);
    bool trans_a = attrs.get_int("trans_a", 0) != 0 && a.size() >= 2;
    int64_t k = trans_a ? a[a.size() - 2] : a.back();
    return 2 * numel(need(false, 0, 0)) * static_cast<double>(k);
  }
  if (op == "lstm" || op == "gru") {
    // From X and Y: W and R may be packed into panels (alter_layout).
    const std::vector<int64_t>& x = need(true, 0, 3);   // [seq, batch, I]
    const std::vector<int64_t>& y = need(false, 0, 4);  // [seq, dirs, batch, H]
    const double dirs = static_cast<double>(y[1]), H = static_cast<double>(y[3]);
    const double G = (op == "lstm" ? 4 : 3) * H;
    return 2 * static_cast<double>(x[0] * x[1]) * dirs * G * (static_cast<double>(x[2]) + H);
  }

  // Windows and reductions.
  if (op.find("pool") != std::string::npos) {
    if (op.rfind("global_", 0) == 0) return numel(need(true, 0, 0));
    return numel(need(false, 0, 0)) * product(attrs.get_ints("kernel_shape"));
  }
  if (op.rfind("reduce_", 0) == 0 || op == "argmax" || op == "argmin")
    return numel(need(true, 0, 0));
  if (op == "softmax" || op == "log_softmax") return 4 * numel(need(true, 0, 0));
  if (op == "batch_norm") return 2 * numel(need(false, 0, 0));
  if (op == "layer_norm" || op == "instance_norm") return 8 * numel(need(false, 0, 0));

  // Everything else elementwise: one per output element; other opaque operators count nothing.
  if (ops::lookup(op).pattern != ops::Pattern::kInjective) return 0;
  double n = 0;
  for (const ops::TensorType& t : out) n += numel(t);
  return n;
}

double node_flops(const Graph& g, NodeId n) {
  const Node& node = g.node(n);
  std::vector<ops::TensorType> in, out;
  for (ValueId v : node.inputs) in.push_back(g.value(v).type);
  for (ValueId v : node.outputs) out.push_back(g.value(v).type);
  try {
    return op_flops(node.op, in, out, node.attrs);
  } catch (const InternalError&) {
    throw;
  } catch (const Error& e) {
    ANVIL_FAIL("node '", node.name, "' (", node.op, "): ", e.what());
  }
}

double graph_flops(const Graph& g) {
  double total = 0;
  for (size_t n = 0; n < g.num_nodes(); ++n) total += node_flops(g, static_cast<NodeId>(n));
  return total;
}

}  // namespace anvil::graph
