// Shared by the importer's files (and the exporter): the conversion context of one model and the
// op-mapping table. Includes ONNX's generated classes; only anvil/frontend/onnx/*.cc include this
// header.
#pragma once

#include <onnx/onnx_pb.h>  // onnx-ml.pb.h with ONNX_ML=1 (Debian ships no onnx.pb.h)

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "anvil/graph/graph.h"

namespace anvil::frontend::onnx_detail {

using graph::ValueId;

// A TensorProto as an NDArray (float16/32/64, int8-64, uint8-64, bool; raw_data or the typed
// fields). `what` names the tensor in errors.
runtime::NDArray to_ndarray(const ::onnx::TensorProto& t, const std::string& what);
// "\n  Op: 'node1', 'node2', ..." per op type (at most 8 names each): the body of the importer's
// and the exporter's unsupported-operator errors.
std::string nodes_by_op(const std::map<std::string, std::vector<std::string>>& nodes);

// ONNX's element type code as ours; an error naming `what` for unsupported ones.
ir::DataType onnx_dtype(int32_t code, const std::string& what);

// What DequantizeLinear made a float value of: the 8-bit tensor, its scale, its zero point (-1:
// none) and the axis a 1-D scale applies along. The QDQ rewrite (ops_map_int8.cc) reads it.
struct Dequantized {
  ValueId q = -1, scale = -1, zero_point = -1;
  int64_t axis = 1;
};

// Conversion state: the graph being built, ONNX value names -> graph values, the opset.
class Ctx {
 public:
  Ctx(std::string origin, int64_t opset, int64_t memory_cap)
      : origin_(std::move(origin)), opset_(opset), memory_cap_(memory_cap) {}

  graph::Graph g;
  std::map<std::string, ValueId> env;
  // The float values DequantizeLinear made of 8-bit ones (the QDQ form), by value.
  std::map<ValueId, Dequantized> dequantized;
  // In a body (If, Loop, Scan): makes a value of the enclosing graphs named `name` available in
  // this one and returns it (-1: no such value). Set by convert_body.
  std::function<ValueId(const std::string&)> outer;
  const std::string& origin() const { return origin_; }
  int64_t opset() const { return opset_; }
  int64_t memory_cap() const { return memory_cap_; }
  // The value named `name` here or, in a body, in the graphs around it; -1 when there is none.
  ValueId lookup(const std::string& name) const;

  // ---- the node being converted
  void begin(const ::onnx::NodeProto* node, std::string name) {
    node_ = node;
    name_ = std::move(name);
  }
  const ::onnx::NodeProto& node() const { return *node_; }
  const std::string& name() const { return name_; }
  // Input i is given (present and not the empty name).
  bool has_in(int i) const;
  int num_in() const { return node_->input_size(); }
  ValueId in(int i) const;
  const ops::TensorType& type(int i) const { return g.value(in(i)).type; }
  // Input i as a compile-time constant; an error naming `what` when it is computed at run time.
  const runtime::NDArray& const_in(int i, const char* what) const;
  std::vector<int64_t> ints_in(int i, const char* what) const;
  std::vector<double> floats_in(int i, const char* what) const;
  // The one value of input i; an error naming `what` when it holds another number of values.
  int64_t int_scalar_in(int i, const char* what) const;
  double float_scalar_in(int i, const char* what) const;
  bool is_const(ValueId v) const { return g.value(v).kind == graph::ValueKind::kConstant; }

  // ---- attributes of the node
  const ::onnx::AttributeProto* attr(const std::string& n) const;
  bool has_attr(const std::string& n) const { return attr(n) != nullptr; }
  int64_t attr_int(const std::string& n, int64_t fallback) const;
  double attr_float(const std::string& n, double fallback) const;
  std::vector<int64_t> attr_ints(const std::string& n, std::vector<int64_t> fallback = {}) const;
  std::vector<double> attr_floats(const std::string& n) const;
  std::string attr_string(const std::string& n, std::string fallback) const;

  // Adds `op` on `inputs` (folded into constants when every input is a constant). With `last`,
  // the outputs take the ONNX node's output names.
  std::vector<ValueId> emit(const std::string& op, ops::Attrs attrs,
                            const std::vector<ValueId>& inputs, bool last = false);
  ValueId emit1(const std::string& op, ops::Attrs attrs, const std::vector<ValueId>& inputs,
                bool last = false) {
    return emit(op, std::move(attrs), inputs, last).at(0);
  }
  ValueId constant(const std::string& base, runtime::NDArray data);
  ValueId scalar_f32(const std::string& base, float v);

  // Refuses a tensor of type `t`, named by `what`, that would take more than the memory cap
  // (ImportOptions::memory_cap); a `held` one (an input or a constant) also when the inputs and
  // constants would then take more together. Called before the tensor is allocated.
  void check_size(const std::string& what, const ops::TensorType& t, bool held);

 private:
  std::string origin_;
  int64_t opset_;
  int64_t memory_cap_;
  int64_t held_bytes_ = 0;
  const ::onnx::NodeProto* node_ = nullptr;
  std::string name_;
};

// Maps one node: returns the values of its outputs (in order; -1 for outputs it does not give).
using MapFn = std::function<std::vector<ValueId>(Ctx&)>;
const std::map<std::string, MapFn>& op_table();
// The elementwise ops of op_table (ops_map_elementwise.cc).
void add_elementwise_ops(std::map<std::string, MapFn>& table);
// The explicit pads (begin..., end...) of a convolution or pooling window from the node's
// auto_pad and pads (ops_map.cc); `kernel_name` names the kernel in errors.
std::vector<int64_t> window_pads(const Ctx& c, const std::vector<int64_t>& in,
                                 const char* kernel_name, const std::vector<int64_t>& kernel,
                                 const std::vector<int64_t>& strides,
                                 const std::vector<int64_t>& dilations);
// An int64 constant of `shape` holding `values` (ops_map_compose.cc).
ValueId int64_constant(Ctx& c, const std::string& base, std::vector<int64_t> shape,
                       const std::vector<int64_t>& values);
// Attribute 'axis' as an index into `rank` dimensions (negative counts from the end); an error
// when it is out of range (ops_map_compose.cc).
int64_t normalized_axis(int64_t axis, int64_t rank);
// QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear and the integer products MatMulInteger,
// ConvInteger, QLinearMatMul and QLinearConv (ops_map_quantize.cc).
void add_quantize_ops(std::map<std::string, MapFn>& table);
// v as type `to`: v itself when it has that type, unless `last` (the node's output) asks for a
// node of its own (ops_map_quantize.cc).
ValueId cast(Ctx& c, ValueId v, ir::DataType to, bool last = false);
// Products on the int8 kernels (ops_map_int8.cc), each -1 where its operands do not allow it:
// the int32 (a - a_zero_point) . b for a constant int8 b [K, N] without zero point (dense_int8),
// and the int32 convolution (x - x_zero_point) * w with the node's window attributes for a
// constant int8 w [O, C, KH, KW] without zero point, group 1 (conv2d_int8) or one channel per
// group (depthwise_conv2d_int8); zero points -1
// when absent. And the QDQ form of the node being converted (Conv; MatMul or Gemm, B transposed
// or not) when its inputs 0 and 1 come from DequantizeLinear: the same float result, the product
// computed in integers, then scaled by scale_x * scale_w and `bias` (-1: none) added; the last
// op takes the node's output name.
ValueId int8_product(Ctx& c, ValueId a, ValueId a_zp, ValueId b, ValueId b_zp);
ValueId int8_convolution(Ctx& c, ValueId x, ValueId x_zp, ValueId w, ValueId w_zp);
ValueId qdq_conv(Ctx& c, ValueId bias);
ValueId qdq_matmul(Ctx& c, bool transpose_b, ValueId bias);

// BatchNormalization in training mode (ops_map_norm.cc): Y and the running mean and variance.
std::vector<ValueId> map_batch_norm_training(Ctx& c);
// MeanVarianceNormalization (ops_map_norm.cc).
std::vector<ValueId> map_mean_variance_normalization(Ctx& c);
// LRN (ops_map_norm.cc).
std::vector<ValueId> map_lrn(Ctx& c);
// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (ops_map_loss.cc): the loss, and for the
// latter the log-probabilities.
std::vector<ValueId> map_nll_loss(Ctx& c);
std::vector<ValueId> map_softmax_cross_entropy_loss(Ctx& c);
// CastLike, DepthToSpace, SpaceToDepth, Hardmax and OneHot (ops_map_compose.cc).
std::vector<ValueId> map_cast_like(Ctx& c);
std::vector<ValueId> map_depth_to_space(Ctx& c);
std::vector<ValueId> map_space_to_depth(Ctx& c);
std::vector<ValueId> map_hardmax(Ctx& c);
std::vector<ValueId> map_one_hot(Ctx& c);
// Range (ops_map_compose.cc): a constant; its inputs must be known at compile time.
std::vector<ValueId> map_range(Ctx& c);
// Compress (ops_map_compose.cc): a gather of the slices whose condition (known at compile time)
// is true.
std::vector<ValueId> map_compress(Ctx& c);
// ReverseSequence (ops_map_compose.cc): a gather_elements along the time axis.
std::vector<ValueId> map_reverse_sequence(Ctx& c);
// MaxUnpool (ops_map_compose.cc): a scatter_elements into zeros.
std::vector<ValueId> map_max_unpool(Ctx& c);
// DFT, STFT (products with constant cosine and sine matrices), RNN (the steps unrolled) and Det
// (the Leibniz expansion, up to 5 x 5) (ops_map_signal.cc).
std::vector<ValueId> map_dft(Ctx& c);
std::vector<ValueId> map_stft(Ctx& c);
std::vector<ValueId> map_rnn_simple(Ctx& c);
std::vector<ValueId> map_det(Ctx& c);
// Einsum (ops_map_einsum.cc): a batched matmul where two operands contract, else products and a
// sum over every label.
std::vector<ValueId> map_einsum(Ctx& c);

// The type a TensorProto declares (its dims and element type), before its data is read.
ops::TensorType declared_type(const ::onnx::TensorProto& t, const std::string& what);

// Converts the nodes of `g` (the main graph, or a taken If branch) into ctx.
void convert_nodes(Ctx& ctx, const ::onnx::GraphProto& g);

// If, Loop and Scan, and what loop bodies index with (ops_map_control.cc). An If whose condition is
// a compile-time constant is inlined (its taken branch); otherwise each body becomes a graph of its
// own.
std::vector<ValueId> map_if(Ctx& c);
std::vector<ValueId> map_loop(Ctx& c);
std::vector<ValueId> map_scan(Ctx& c);
// Slice whose start is computed at run time on one axis and whose end is that start plus a
// constant (a loop's x[i : i + k]): a gather of k indices from the start (ops_map_control.cc).
bool is_dynamic_slice(const Ctx& c);
std::vector<ValueId> map_dynamic_slice(Ctx& c);

}  // namespace anvil::frontend::onnx_detail
