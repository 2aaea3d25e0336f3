// Layout alteration (passes.h): convolutions move to NCHW[x]c (anvil/ops/nchwc.h), constant
// dense weights to packed panels. (For a GPU target, alter_for_gpu at the end of this file only
// moves 3x3 convolutions to Winograd in NCHW and puts recurrent ops in their GPU form.)
//
// Every old value has up to two forms in the new graph: its NCHW form (the value as the old graph
// has it) and a blocked form (NCHW[b]c, with its block b and its true channel count). Both are
// created on demand and cached, so a value is converted at most once in each direction, and a
// chain conv -> relu -> conv never leaves the blocked layout (no NCHW16c -> NCHW -> NCHW16c pairs
// appear: the blocked form is reused).
//   * conv2d (group 1) -> conv2d_nchwc, or conv2d_winograd_nchwc when ops::prefer_winograd (or
//     the algorithm the build's algorithm_for gives, ops::conv2d_algorithm_space);
//     grouped conv2d whose groups fill whole blocks of at least 4 -> conv2d_nchwc with its group,
//     groups narrower than a vector merged into vector-wide block-diagonal ones;
//     depthwise conv2d (group = C = O) -> depthwise_conv2d_nchwc; conv2d_transpose (group 1)
//     -> conv2d_transpose_nchwc (with input_innermost where ops::transpose_input_innermost: few
//     output channels). The input block is nchwc_block(C), the output block nchwc_block(O),
//     chosen per layer. The constant weight is packed by the family's
//     *_pack_weight node (fold_constants turns it into a packed constant), the bias becomes an
//     add of a [1, O'/ob, 1, 1, ob] constant (zero in the padded channels). Convolutions whose
//     weight or bias is not a constant stay in NCHW.
//   * conv2d_int8 and depthwise_conv2d_int8 (any channels) -> the same op with blocked = 1: uint8
//     NCHW16c in, int32 NCHW16c out (anvil/ops/conv_int8.cc). Casts between float32 and integer
//     types keep the blocked layout like the element-wise ops below (the rescaling and
//     requantization around them), and their per-channel constants may be of any type.
//   * dense with a constant float32 weight -> dense_packed over dense_pack_weight (panels of
//     ops::kDefaultPanel columns), which fold_constants packs once; so does matmul of any rank
//     against a constant float32 [K, N] (its transpose packed); lstm with constant W and R
//     -> lstm with packed_weights = 1 over dense_pack_weight of each.
//   * Element-wise ops whose inputs all have blocked forms of one block and one (old) shape run
//     blocked when their OpDef says so (keeps_blocked_layout: relu, clip, sigmoid, tanh, add, sub,
//     mul, maximum, minimum, ...). Padded channels hold
//     whatever these compute from zeros (finite: none of them makes an infinity or NaN out of
//     finite inputs), and no consumer reads them: packed weights are zero there, and
//     layout_transform's `channels` drops them.
//   * Pools (max_pool2d, avg_pool2d, global_max_pool2d, global_avg_pool2d: the ops whose OpDef
//     names a blocked_form) of a float32 value that has a blocked form run on it as their *_nchwc
//     forms (pooling is per channel; padded
//     channels pool to finite values no consumer reads), so a conv -> relu -> max pool -> conv
//     stem stays blocked. A pool whose input exists only in NCHW stays NCHW.
//   * Element-wise ops also take constants that broadcast as scalars or per channel (blocked
//     here), and blocked inputs that broadcast over N, H and W (squeeze-and-excitation).
//   * A channel concat whose first input is blocked runs blocked, each input written to its
//     slice of blocks (all but the last fill whole blocks).
//   * Otherwise a channel concat of a blocked value, a channel slice of one, and a channel shuffle
//     (reshape to [N, g, C/g, H, W], transpose [0, 2, 1, 3, 4], reshape back) run as
//     select_channels_nchwc (anvil/ops/select_channels.h), each input in its own block; a
//     selection read by nothing else is folded into its reader.
//   * reduce_mean and reduce_max over H and W of a blocked value run as its global pool.
//   * A transpose from NHWC to NCHW also gets a blocked form (ConvNeXt's residual adds).
//   * A pad of the spatial axes runs on the blocked form, and so do slices of H and W and concats
//     along them.
//   * Every other node reads NCHW forms (a layout_transform back, channels = C, where only a
//     blocked form exists) and produces NCHW; graph outputs are NCHW with their old names.

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>

#include "anvil/graph/passes.h"
#include "anvil/ops/int8_dot.h"
#include "anvil/ops/nchwc.h"
#include "anvil/ops/recurrent_dense.h"
#include "anvil/ops/select_channels.h"
#include "anvil/ops/window.h"
#include "anvil/ops/winograd.h"
#include "anvil/support/error.h"

namespace anvil::graph {

namespace {

struct Blocked {
  ValueId value = -1;
  int64_t block = 0, channels = 0;
};

// The window of a conv2d or conv2d_transpose node (its attributes were validated when it was
// added).
ops::Window conv_window(const Node& n) {
  unsigned parts = ops::kWindowGroup;
  if (n.op == "conv2d_transpose") parts |= ops::kWindowOutputPadding;
  return ops::parse_window(n.attrs, 2, parts);
}

// The most groups merged into one vector-wide group (merge times the multiplies).
constexpr int64_t kMaxGroupMerge = 4;

std::string layout_name(int64_t block) {
  return "NCHW" + std::to_string(block) + "c";
}

class LayoutRewriter {
 public:
  LayoutRewriter(const Graph& g, const Target& target, const ConfigFn& algorithm_for)
      : g_(g),
        target_(target),
        algorithm_for_(algorithm_for),
        rw_(g),
        nchw_(g.num_values(), -1),
        blocked_(g.num_values()),
        users_(g.users()),
        handled_(g.num_nodes(), false) {
    for (ValueId v : g.inputs()) nchw_[v] = rw_.map(v);
  }

  Graph run() {
    for (NodeId id = 0; id < static_cast<NodeId>(g_.num_nodes()); ++id) {
      const Node& n = g_.node(id);
      if (handled_[id] || try_int8_conv(n) || try_conv(n) || try_dense(n) || try_matmul(n) ||
          try_lstm(n) || try_elementwise(n) || try_select(n) || try_concat(n) || try_spatial(n) ||
          try_pad(n) || try_pool(n) || try_global_reduce(n))
        continue;
      std::vector<ValueId> ins;
      for (ValueId v : n.inputs) ins.push_back(nchw(v));
      std::vector<std::string> names;
      for (ValueId v : n.outputs) names.push_back(out().unique_name(g_.value(v).name));
      std::vector<ValueId> outs =
          out().add_node(out().unique_name(n.name), n.op, n.attrs, ins, names, n.bodies);
      for (size_t i = 0; i < outs.size(); ++i) set_nchw(n.outputs[i], outs[i]);
      if (transposes_to_nchw(n)) {
        blocked(n.outputs[0], ops::nchwc_block(g_.value(n.outputs[0]).type.shape[1], target_));
      }
    }
    for (ValueId v : g_.outputs()) nchw(v);
    return rw_.finish();
  }

 private:
  Graph& out() { return rw_.out(); }

  void set_nchw(ValueId old, ValueId v) {
    nchw_[old] = v;
    rw_.set(old, v);
  }

  // The NCHW form of an old value.
  ValueId nchw(ValueId old) {
    if (nchw_[old] >= 0) return nchw_[old];
    const Value& val = g_.value(old);
    if (val.kind == ValueKind::kConstant) return nchw_[old] = rw_.map(old);
    const Blocked& b = blocked_[old];
    ANVIL_ICHECK(b.value >= 0, "alter_layout: value '", val.name, "' has no form yet");
    // The old name when no value has it (node names may: a node and its output share one).
    std::string name = out().find(val.name) < 0 ? val.name : out().unique_name(val.name);
    ValueId v = to_nchw(b, val.name + "_to_nchw", name);
    set_nchw(old, v);
    return v;
  }

  // A layout_transform node from blocked form b back to NCHW.
  ValueId to_nchw(const Blocked& b, const std::string& node, const std::string& value) {
    ops::Attrs a("layout_transform", {{"src_layout", layout_name(b.block)},
                                      {"dst_layout", std::string("NCHW")},
                                      {"channels", b.channels}});
    return out().add_node(out().unique_name(node), "layout_transform", a, {b.value}, {value})[0];
  }

  // The form of an old 4-d value blocked by `block` (converting from its NCHW form or from its
  // blocked form with another block).
  ValueId blocked(ValueId old, int64_t block) {
    Blocked& b = blocked_[old];
    if (b.value >= 0 && b.block == block) return b.value;
    const Value& val = g_.value(old);
    int64_t channels = val.type.shape[1];
    ValueId src = b.value >= 0 ? b.value : nchw(old);
    std::string src_layout = b.value >= 0 ? layout_name(b.block) : "NCHW";
    ops::Attrs a(
        "layout_transform",
        {{"src_layout", src_layout}, {"dst_layout", layout_name(block)}, {"channels", channels}});
    std::string base = val.name + "_" + layout_name(block);
    ValueId v = out().add_node(out().unique_name(base), "layout_transform", a, {src},
                               {out().unique_name(base)})[0];
    // The newest blocked form replaces the older one (ops ask for the block they need).
    b = {v, block, channels};
    return v;
  }

  void set_blocked(ValueId old, ValueId v, int64_t block, int64_t channels) {
    blocked_[old] = {v, block, channels};
  }

  ValueId constant(const std::string& base, runtime::NDArray data) {
    return out().add_constant(out().unique_name(base), std::move(data));
  }

  // A [1, C'/block, 1, 1, block] constant from a per-channel one (a bias [C], a scale [C, 1, 1]
  // or [1, C, 1, 1], of any type; zero past C).
  ValueId per_channel_constant(const Value& c, int64_t block) {
    int64_t C = static_cast<int64_t>(ops::numel(c.type));
    int64_t padded = ops::nchwc_channels(C, block);
    runtime::NDArray d =
        runtime::NDArray::empty({1, padded / block, 1, 1, block}, c.data.dtype(), true);
    const size_t bytes = static_cast<size_t>(c.type.dtype.bytes());
    std::memcpy(d.data(), c.data.data(), static_cast<size_t>(C) * bytes);
    return constant(c.name + "_" + layout_name(block), d);
  }

  // An int8 convolution (conv2d_int8, depthwise_conv2d_int8) runs in its blocked form, uint8
  // NCHW16c in and int32 NCHW16c out (ops/conv_int8.cc), whatever its channels: its epilogue (the
  // rescaling and the next activation's quantization) then stores whole vectors, and the next
  // int8 layer reads the result in place.
  bool try_int8_conv(const Node& n) {
    if ((n.op != "conv2d_int8" && n.op != "depthwise_conv2d_int8") || n.outputs.size() != 1 ||
        n.attrs.get_int("blocked", 0) != 0 || g_.value(n.inputs[0]).type.shape.size() != 4)
      return false;
    // An input of fewer channels than a block (an image's 3) stays NCHW unless it is blocked
    // already: blocking it would copy mostly padding, which the convolution would copy again.
    const ValueId x = n.inputs[0];
    const bool narrow = g_.value(x).type.shape[1] < ops::kInt8ChannelBlock &&
                        n.op == "conv2d_int8" && blocked_[x].value < 0;
    std::vector<ValueId> ins = {narrow ? nchw(x) : blocked(x, ops::kInt8ChannelBlock)};
    for (size_t i = 1; i < n.inputs.size(); ++i) ins.push_back(nchw(n.inputs[i]));
    ops::Attrs attrs = n.attrs;
    attrs.set("blocked", int64_t{1});
    const Value& y = g_.value(n.outputs[0]);
    std::string name = out().unique_name(y.name + "_" + layout_name(ops::kInt8ChannelBlock));
    ValueId v = out().add_node(out().unique_name(n.name), n.op, attrs, ins, {name})[0];
    set_blocked(n.outputs[0], v, ops::kInt8ChannelBlock, y.type.shape[1]);
    return true;
  }

  bool try_conv(const Node& n) {
    bool transpose = n.op == "conv2d_transpose";
    if (n.op != "conv2d" && !transpose) return false;
    if (n.inputs.size() < 2 || n.outputs.size() != 1) return false;
    const Value& x = g_.value(n.inputs[0]);
    const Value& w = g_.value(n.inputs[1]);
    const Value& y = g_.value(n.outputs[0]);
    // The blocked kernels are float32 (float64 stays in NCHW, on the plain schedules).
    if (x.type.shape.size() != 4 || x.type.dtype != ir::DataType::Float32() ||
        w.kind != ValueKind::kConstant)
      return false;
    if (n.inputs.size() > 2 && g_.value(n.inputs[2]).kind != ValueKind::kConstant) return false;
    ops::Window win = conv_window(n);
    int64_t group = win.group;
    int64_t C = x.type.shape[1], O = y.type.shape[1];
    int64_t KH = w.type.shape[2], KW = w.type.shape[3];
    const std::vector<int64_t>&strides = win.strides, &dil = win.dilations;
    std::vector<int64_t> pads = win.pads();
    bool depthwise = !transpose && group > 1 && group == C && O == C && w.type.shape[1] == 1;
    int64_t ib = ops::nchwc_block(C, target_), ob = ops::nchwc_block(O, target_);
    // An input that already has a blocked form is read in it: the input block is only the
    // reduction's inner step, and a conversion would be a kernel that only moves data.
    int64_t have = blocked_[n.inputs[0]].value >= 0 ? blocked_[n.inputs[0]].block : 0;
    if (have > 0 && !transpose) ib = have;
    if (depthwise) ob = ib;
    // A grouped convolution runs blocked when one block of at least 4 channels divides every
    // group on both sides (ResNeXt's 4 to 32 channels per group, RegNet's 8 to 16): then each
    // output block reads whole input blocks of its own group.
    // Groups narrower than a vector (ResNeXt's 4 channels, RegNet-Y's 8) merge instead: `merge`
    // groups become one block-diagonal group of a whole vector, zeros between them, so the
    // convolution runs on full vectors (merge times the multiplies, at up to four times the rate
    // of vectors of the group's width) and its neighbours keep their block.
    bool grouped = group != 1 && !depthwise;
    int64_t merge = 1;
    if (grouped) {
      if (transpose || C % group != 0 || O % group != 0) return false;
      int64_t lanes = target_.vector_lanes_f32();
      int64_t cg = C / group;
      auto fits = [&](int64_t b) { return cg % b == 0 && (O / group) % b == 0; };
      if (!fits(lanes) && cg == O / group && lanes % cg == 0 && lanes / cg <= kMaxGroupMerge &&
          w.type.dtype == ir::DataType::Float32()) {
        merge = lanes / cg;
        ib = ob = lanes;
      } else {
        int64_t b = lanes;
        while (b >= 4 && !fits(b)) b /= 2;
        if (b < 4) return false;
        ib = ob = have >= 4 && fits(have) ? have : b;
      }
    }
    ValueId xb = blocked(n.inputs[0], ib);
    ValueId wc = rw_.map(n.inputs[1]);
    std::string op, pack;
    ops::Attrs pack_attrs, conv_attrs;
    if (depthwise) {
      op = "depthwise_conv2d_nchwc";
      pack = "depthwise_conv2d_nchwc_pack_weight";
      pack_attrs.set("block", ob);
      conv_attrs = ops::Attrs(op, {{"strides", strides}, {"pads", pads}, {"dilations", dil}});
    } else if (transpose) {
      op = "conv2d_transpose_nchwc";
      pack = "conv2d_transpose_nchwc_pack_weight";
      pack_attrs = ops::Attrs(
          pack, {{"in_block", ib}, {"out_block", ob}, {"strides", strides}, {"dilations", dil}});
      conv_attrs = ops::Attrs(op, {{"kernel_shape", std::vector<int64_t>{KH, KW}},
                                   {"strides", strides},
                                   {"pads", pads},
                                   {"dilations", dil},
                                   {"output_padding", win.output_padding}});
      if (ops::transpose_input_innermost(ib, ob, target_)) {
        pack_attrs.set("input_innermost", int64_t{1});
        conv_attrs.set("input_innermost", int64_t{1});
      }
    } else if (int64_t tile = grouped ? 0 : winograd_tile_of(n); tile > 0) {
      op = "conv2d_winograd_nchwc";
      pack = "conv2d_winograd_nchwc_pack_weight";
      pack_attrs = ops::Attrs(pack, {{"in_block", ib}, {"out_block", ob}, {"tile", tile}});
      conv_attrs = ops::Attrs(op, {{"pads", pads}, {"tile", tile}});
    } else {
      op = "conv2d_nchwc";
      pack = "conv2d_nchwc_pack_weight";
      pack_attrs = ops::Attrs(pack, {{"in_block", ib}, {"out_block", ob}});
      if (merge > 1) {
        pack_attrs.set("group", group);
        pack_attrs.set("merge", merge);
      }
      conv_attrs = ops::Attrs(op, {{"strides", strides},
                                   {"pads", pads},
                                   {"dilations", dil},
                                   {"group", (group + merge - 1) / merge}});
    }
    ValueId wp = out().add(out().unique_name(n.name + "_pack_weight"), pack, pack_attrs, {wc});
    std::string yname = y.name + "_" + layout_name(ob);
    ValueId v =
        out().add_node(out().unique_name(n.name), op, conv_attrs, {xb, wp},
                       {out().unique_name(n.inputs.size() > 2 ? yname + "_nobias" : yname)})[0];
    if (n.inputs.size() > 2) {
      ValueId bias = per_channel_constant(g_.value(n.inputs[2]), ob);
      v = out().add_node(out().unique_name(n.name + "_bias"), "add", ops::Attrs("add", {}),
                         {v, bias}, {out().unique_name(yname)})[0];
    }
    set_blocked(n.outputs[0], v, ob, O);
    return true;
  }

  // dense(x, W[, b]) with a constant float32 weight -> dense_packed(x, dense_pack_weight(W)[, b]):
  // the weight's panels are packed once, by fold_constants, instead of on every call.
  bool try_dense(const Node& n) {
    if (n.op != "dense" || n.inputs.size() < 2 || n.outputs.size() != 1) return false;
    const Value& x = g_.value(n.inputs[0]);
    const Value& w = g_.value(n.inputs[1]);
    if (w.kind != ValueKind::kConstant || w.type.dtype != ir::DataType::Float32() ||
        x.type.dtype != ir::DataType::Float32() || x.type.shape.size() != 2)
      return false;
    ValueId wp = out().add(out().unique_name(n.name + "_pack_weight"), "dense_pack_weight",
                           ops::Attrs("dense_pack_weight", {{"block", ops::kDefaultPanel}}),
                           {rw_.map(n.inputs[1])});
    std::vector<ValueId> ins = {nchw(n.inputs[0]), wp};
    if (n.inputs.size() > 2) ins.push_back(nchw(n.inputs[2]));
    const Value& y = g_.value(n.outputs[0]);
    ValueId v = out().add_node(out().unique_name(n.name), "dense_packed",
                               ops::Attrs("dense_packed", {{"units", w.type.shape[0]}}), ins,
                               {out().unique_name(y.name)})[0];
    set_nchw(n.outputs[0], v);
    return true;
  }

  // matmul(A [batch.., M, K], B) with a constant float32 B [K, N] (or [1.., K, N] of no higher
  // rank than A): a Linear layer over a sequence (transformer projections and MLPs) is
  // dense_packed(A, dense_pack_weight(B^T)): one weight for every batch, packed once by
  // fold_constants (the reshape and transpose of B fold with it).
  bool try_matmul(const Node& n) {
    if (n.op != "matmul" || n.inputs.size() != 2 || n.outputs.size() != 1) return false;
    const Value& a = g_.value(n.inputs[0]);
    const Value& b = g_.value(n.inputs[1]);
    const std::vector<int64_t>& bs = b.type.shape;
    if (b.kind != ValueKind::kConstant || b.type.dtype != ir::DataType::Float32() ||
        a.type.dtype != ir::DataType::Float32() || n.attrs.get_int("trans_a") != 0 ||
        bs.size() > a.type.shape.size())
      return false;
    for (size_t d = 0; d + 2 < bs.size(); ++d)
      if (bs[d] != 1) return false;
    bool trans_b = n.attrs.get_int("trans_b") != 0;
    int64_t N = trans_b ? bs[bs.size() - 2] : bs.back();
    int64_t K = trans_b ? bs.back() : bs[bs.size() - 2];
    ValueId w = rw_.map(n.inputs[1]);
    if (bs.size() > 2) {
      std::vector<int64_t> shape = {bs[bs.size() - 2], bs.back()};
      w = out().add(out().unique_name(n.name + "_weight_2d"), "reshape",
                    ops::Attrs("reshape", {{"shape", shape}}), {w});
    }
    if (!trans_b) {
      w = out().add(out().unique_name(n.name + "_weight_t"), "transpose",
                    ops::Attrs("transpose", {{"perm", std::vector<int64_t>{1, 0}}}), {w});
    }
    ANVIL_ICHECK(out().value(w).type.shape == (std::vector<int64_t>{N, K}),
                 "alter_layout: matmul '", n.name, "': weight is not [N, K]");
    ValueId wp = out().add(out().unique_name(n.name + "_pack_weight"), "dense_pack_weight",
                           ops::Attrs("dense_pack_weight", {{"block", ops::kDefaultPanel}}), {w});
    const Value& y = g_.value(n.outputs[0]);
    ValueId v = out().add_node(out().unique_name(n.name), "dense_packed",
                               ops::Attrs("dense_packed", {{"units", N}}), {nchw(n.inputs[0]), wp},
                               {out().unique_name(y.name)})[0];
    set_nchw(n.outputs[0], v);
    return true;
  }

  // lstm with constant W and R: both packed into panels (packed_weights = 1), once, by
  // fold_constants, instead of on every call.
  bool try_lstm(const Node& n) {
    if (n.op != "lstm" || n.attrs.get_int("packed_weights", 0) != 0 || n.inputs.size() < 3)
      return false;
    // Inputs X, W, R are the first three whatever 'present' says (they are required).
    for (int i : {1, 2})
      if (g_.value(n.inputs[i]).kind != ValueKind::kConstant) return false;
    std::vector<ValueId> ins;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (i != 1 && i != 2) {
        ins.push_back(nchw(n.inputs[i]));
        continue;
      }
      ins.push_back(out().add(out().unique_name(n.name + (i == 1 ? "_pack_W" : "_pack_R")),
                              "dense_pack_weight",
                              ops::Attrs("dense_pack_weight", {{"block", ops::kDefaultPanel}}),
                              {rw_.map(n.inputs[i])}));
    }
    ops::Attrs attrs = n.attrs;
    attrs.set("packed_weights", int64_t{1});
    std::vector<std::string> names;
    for (ValueId v : n.outputs) names.push_back(out().unique_name(g_.value(v).name));
    std::vector<ValueId> outs =
        out().add_node(out().unique_name(n.name), "lstm", attrs, ins, names);
    for (size_t i = 0; i < outs.size(); ++i) set_nchw(n.outputs[i], outs[i]);
    return true;
  }

  // An element-wise op that keeps the blocked layout runs blocked when its output is 4-d and
  // every input is one of: a value with a blocked form and the output's channels (N, H and W may
  // broadcast: a squeeze-and-excitation scale [1, C, 1, 1]), in the largest one's block;
  // a constant of one element (broadcasts in any layout); a constant per channel ([C, 1, 1] or
  // [1, C, 1, 1]: blocked here, zero past C). At least one input must be blocked.
  // A cast between float32 and an integer type keeps the blocked layout too (the int8
  // convolutions' epilogues: int32 results to float32, float32 to uint8 activations and back);
  // casts from and to float16 do not (widen_float16 puts them around the float32 kernels).
  static bool int_float32_cast(const Graph& g, const Node& n) {
    if (n.op != "cast" || n.inputs.size() != 1) return false;
    const ir::DataType from = g.value(n.inputs[0]).type.dtype,
                       to = g.value(n.outputs[0]).type.dtype;
    return (from == ir::DataType::Float32() && to.is_int_or_uint()) ||
           (from.is_int_or_uint() && to == ir::DataType::Float32());
  }

  bool try_elementwise(const Node& n) {
    if ((!ops::lookup(n.op).keeps_blocked_layout && !int_float32_cast(g_, n)) ||
        n.outputs.size() != 1 || n.inputs.empty())
      return false;
    const Value& y = g_.value(n.outputs[0]);
    const std::vector<int64_t>& ys = y.type.shape;
    if (ys.size() != 4) return false;
    // The block of the largest blocked input; smaller ones blocked otherwise are converted (a
    // squeeze-and-excitation scale of a few channels, not the activation it scales).
    int64_t block = -1;
    double largest = 0;
    for (ValueId v : n.inputs) {
      double size = ops::numel(g_.value(v).type);
      if (blocked_[v].value >= 0 && size > largest) {
        block = blocked_[v].block;
        largest = size;
      }
    }
    if (block < 0) return false;
    enum class Form { kBlocked, kScalar, kPerChannel };
    std::vector<Form> forms;
    for (ValueId v : n.inputs) {
      const Value& x = g_.value(v);
      const std::vector<int64_t>& xs = x.type.shape;
      if (blocked_[v].value >= 0) {
        bool broadcasts = xs.size() == 4 && xs[1] == ys[1] &&
                          (blocked_[v].block == block || ops::numel(x.type) < largest);
        for (int d : {0, 2, 3}) broadcasts = broadcasts && (xs[d] == ys[d] || xs[d] == 1);
        if (!broadcasts) return false;
        forms.push_back(Form::kBlocked);
      } else if (x.kind == ValueKind::kConstant && xs.size() <= 4 && ops::numel(x.type) == 1) {
        forms.push_back(Form::kScalar);
      } else if (x.kind == ValueKind::kConstant && (xs == std::vector<int64_t>{ys[1], 1, 1} ||
                                                    xs == std::vector<int64_t>{1, ys[1], 1, 1})) {
        forms.push_back(Form::kPerChannel);
      } else {
        return false;
      }
    }
    std::vector<ValueId> ins;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      ValueId v = n.inputs[i];
      if (forms[i] == Form::kBlocked) {
        ins.push_back(blocked(v, block));
      } else if (forms[i] == Form::kScalar) {
        ins.push_back(rw_.map(v));
      } else {
        ins.push_back(per_channel_constant(g_.value(v), block));
      }
    }
    std::string name = out().unique_name(y.name + "_" + layout_name(block));
    ValueId v = out().add_node(out().unique_name(n.name), n.op, n.attrs, ins, {name})[0];
    set_blocked(n.outputs[0], v, block, ys[1]);
    return true;
  }

  // A channel concat of 4-d values runs blocked when the first input has a blocked form: every
  // input takes that block (converted if needed) and all but the last fill whole blocks, so the
  // blocked inputs laid end to end are the blocked output (DenseNet, Inception, SqueezeNet).
  bool try_concat(const Node& n) {
    if (n.op != "concat" || n.outputs.size() != 1 || n.inputs.empty()) return false;
    const Value& y = g_.value(n.outputs[0]);
    int64_t axis = n.attrs.get_int("axis");
    if (y.type.shape.size() != 4 || (axis != 1 && axis != -3) ||
        y.type.dtype != ir::DataType::Float32())
      return false;
    const Blocked& first = blocked_[n.inputs[0]];
    if (first.value < 0) return false;
    int64_t block = first.block;
    for (size_t i = 0; i + 1 < n.inputs.size(); ++i)
      if (g_.value(n.inputs[i]).type.shape[1] % block != 0) return false;
    std::vector<ValueId> ins;
    for (ValueId v : n.inputs) ins.push_back(blocked(v, block));
    std::string name = out().unique_name(y.name + "_" + layout_name(block));
    ValueId v = out().add_node(out().unique_name(n.name), "concat",
                               ops::Attrs("concat", {{"axis", int64_t{1}}}), ins, {name})[0];
    set_blocked(n.outputs[0], v, block, y.type.shape[1]);
    return true;
  }

  // A slice of H and W, or a concat along H or W, of blocked values runs blocked: the spatial axes
  // are the same in both layouts (a dilated convolution cut into bands: cut_conv_bands).
  bool try_spatial(const Node& n) {
    if ((n.op != "slice" && n.op != "concat") || n.outputs.size() != 1 || n.inputs.empty())
      return false;
    const Value& y = g_.value(n.outputs[0]);
    if (y.type.shape.size() != 4 || y.type.dtype != ir::DataType::Float32()) return false;
    const Blocked& first = blocked_[n.inputs[0]];
    if (first.value < 0) return false;
    auto spatial = [](int64_t axis) { return axis == 2 || axis == 3 || axis == -1 || axis == -2; };
    ops::Attrs attrs = n.attrs;
    if (n.op == "concat") {
      int64_t axis = n.attrs.get_int("axis");
      if (!spatial(axis)) return false;
      attrs.set("axis", axis < 0 ? axis + 4 : axis);
    } else {
      if (n.inputs.size() != 1 || !n.attrs.has("axes")) return false;
      std::vector<int64_t> axes = n.attrs.get_ints("axes");
      for (int64_t& a : axes) {
        if (!spatial(a)) return false;
        if (a < 0) a += 4;
      }
      attrs.set("axes", axes);
    }
    std::vector<ValueId> ins;
    for (ValueId v : n.inputs) ins.push_back(blocked(v, first.block));
    std::string name = out().unique_name(y.name + "_" + layout_name(first.block));
    ValueId v = out().add_node(out().unique_name(n.name), n.op, attrs, ins, {name})[0];
    set_blocked(n.outputs[0], v, first.block, y.type.shape[1]);
    return true;
  }

  // The only node reading old value v, when v is not a graph output; else -1.
  NodeId sole_user(ValueId v) const {
    const std::vector<NodeId>& u = users_[v];
    if (u.size() != 1) return -1;
    for (ValueId o : g_.outputs())
      if (o == v) return -1;
    return u[0];
  }

  // Channel concats that try_concat leaves (inputs not filling whole blocks), channel slices and
  // channel shuffles (reshape [N, C, H, W] -> [N, g, C/g, H, W], transpose [0, 2, 1, 3, 4],
  // reshape back) of blocked values run blocked as select_channels_nchwc (ShuffleNet's split,
  // concat and shuffle), folded into the selections they read.
  bool try_select(const Node& n) {
    if (n.outputs.size() != 1 || n.inputs.empty()) return false;
    const Value& x = g_.value(n.inputs[0]);
    if (x.type.shape.size() != 4 || x.type.dtype != ir::DataType::Float32()) return false;
    if (n.op == "concat") {
      int64_t axis = n.attrs.get_int("axis");
      if (axis != 1 && axis != -3) return false;
      // Inputs in one block, all but the last filling whole blocks, are try_concat's
      // (contiguous vectors, no conversion), unless one is a selection to fold.
      bool any = false, aligned = true, foldable = false;
      std::vector<int64_t> channels;
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        const Blocked& b = blocked_[n.inputs[k]];
        channels.push_back(g_.value(n.inputs[k]).type.shape[1]);
        any = any || b.value >= 0;
        aligned = aligned && b.value >= 0 && b.block == blocked_[n.inputs[0]].block &&
                  (k + 1 == n.inputs.size() || channels[k] % b.block == 0);
        foldable =
            foldable || (b.value >= 0 && selections_.count(b.value) && sole_user(n.inputs[k]) >= 0);
      }
      if (!any || (aligned && !foldable)) return false;
      std::vector<ValueId> ins;
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        const Blocked& b = blocked_[n.inputs[k]];
        ins.push_back(b.value >= 0 ? b.value
                                   : blocked(n.inputs[k], ops::nchwc_block(channels[k], target_)));
      }
      select(n, n.outputs[0], ins, ops::concat_runs(channels));
      return true;
    }
    const Blocked& b = blocked_[n.inputs[0]];
    if (b.value < 0) return false;
    if (n.op == "slice") {
      std::optional<ops::ChannelRun> run = ops::slice_run(x.type.shape, n.attrs);
      if (!run) return false;
      select(n, n.outputs[0], {b.value}, {*run});
      return true;
    }
    // The shuffle: three nodes, each the sole reader of the one before.
    if (n.op != "reshape") return false;
    const std::vector<int64_t>& xs = x.type.shape;
    const std::vector<int64_t>& split = g_.value(n.outputs[0]).type.shape;
    if (split.size() != 5 || split[0] != xs[0] || split[1] * split[2] != xs[1] ||
        split[3] != xs[2] || split[4] != xs[3])
      return false;
    NodeId t = sole_user(n.outputs[0]);
    if (t < 0 || g_.node(t).op != "transpose" ||
        g_.node(t).attrs.get_ints("perm", {}) != std::vector<int64_t>{0, 2, 1, 3, 4})
      return false;
    NodeId back = sole_user(g_.node(t).outputs[0]);
    if (back < 0 || g_.node(back).op != "reshape" ||
        g_.value(g_.node(back).outputs[0]).type.shape != xs)
      return false;
    handled_[t] = handled_[back] = true;
    select(n, g_.node(back).outputs[0], {b.value}, ops::shuffle_runs(xs[1], split[1]));
    return true;
  }

  // Old value `old` as select_channels_nchwc over new values `ins`. A selection it reads that
  // nothing else reads is folded in (its own inputs read directly: one kernel instead of two); one
  // that others read too is read as it is (folding would add its runs, each a gather per vector,
  // to every reader, and runs would multiply along ShuffleNet's chain of blocks). Inputs no run
  // reads are dropped.
  void select(const Node& n, ValueId old, std::vector<ValueId> ins,
              std::vector<ops::ChannelRun> runs) {
    for (size_t k = 0; k < ins.size(); ++k) {
      auto it = selections_.find(ins[k]);
      if (it == selections_.end() || sole_user(it->second.old) < 0) continue;
      std::optional<std::vector<ops::ChannelRun>> folded = ops::compose_runs(
          runs, static_cast<int64_t>(k), it->second.runs, static_cast<int64_t>(ins.size()));
      if (!folded) continue;
      runs = *folded;
      ins.insert(ins.end(), it->second.inputs.begin(), it->second.inputs.end());
    }
    std::vector<ValueId> used;
    std::vector<int64_t> index(ins.size(), -1);
    for (ops::ChannelRun& r : runs) {
      size_t k = static_cast<size_t>(r.input);
      if (index[k] < 0) {
        index[k] = static_cast<int64_t>(used.size());
        used.push_back(ins[k]);
      }
      r.input = index[k];
    }
    const Value& y = g_.value(old);
    int64_t channels = y.type.shape[1], block = ops::nchwc_block(channels, target_);
    std::string name = out().unique_name(y.name + "_" + layout_name(block));
    ValueId v = out().add_node(out().unique_name(n.name), "select_channels_nchwc",
                               ops::select_channels_attrs(runs, channels, block), used, {name})[0];
    selections_[v] = {old, used, runs};
    set_blocked(old, v, block, channels);
  }

  // A pad of the spatial axes of a blocked value pads the blocked form's spatial axes (Inception's
  // average pools with padding, which PyTorch exports as a pad before the pool).
  bool try_pad(const Node& n) {
    if (n.op != "pad" || n.inputs.size() != 1 || n.outputs.size() != 1) return false;
    const Blocked& b = blocked_[n.inputs[0]];
    std::vector<int64_t> pads = n.attrs.get_ints("pads");
    if (b.value < 0 || pads.size() != 8 || pads[0] != 0 || pads[1] != 0 || pads[4] != 0 ||
        pads[5] != 0)
      return false;
    ops::Attrs attrs = n.attrs;
    attrs.set("pads", std::vector<int64_t>{0, 0, pads[2], pads[3], 0, 0, 0, pads[6], pads[7], 0});
    const Value& y = g_.value(n.outputs[0]);
    std::string name = out().unique_name(y.name + "_" + layout_name(b.block));
    ValueId v = out().add_node(out().unique_name(n.name), "pad", attrs, {b.value}, {name})[0];
    set_blocked(n.outputs[0], v, b.block, y.type.shape[1]);
    return true;
  }

  bool try_pool(const Node& n) {
    const std::string& op = ops::lookup(n.op).blocked_form;
    if (op.empty() || n.inputs.size() != 1 || n.outputs.size() != 1) return false;
    const Blocked& b = blocked_[n.inputs[0]];
    const Value& x = g_.value(n.inputs[0]);
    const Value& y = g_.value(n.outputs[0]);
    if (b.value < 0 || x.type.dtype != ir::DataType::Float32() || x.type.shape.size() != 4)
      return false;
    std::string name = out().unique_name(y.name + "_" + layout_name(b.block));
    ValueId v = out().add_node(out().unique_name(n.name), op, ops::Attrs(op, n.attrs.values()),
                               {b.value}, {name})[0];
    set_blocked(n.outputs[0], v, b.block, y.type.shape[1]);
    return true;
  }

  // reduce_mean or reduce_max over H and W of a blocked value is its global pool on the blocked
  // form (a mean over [2, 3]: ShuffleNet's head, Keras' global pooling); with keepdims 0 the
  // [N, C] result is the pool's NCHW form reshaped.
  bool try_global_reduce(const Node& n) {
    const char* pool = n.op == "reduce_mean"  ? "global_avg_pool2d_nchwc"
                       : n.op == "reduce_max" ? "global_max_pool2d_nchwc"
                                              : nullptr;
    if (!pool || n.inputs.size() != 1 || n.outputs.size() != 1) return false;
    const Blocked& b = blocked_[n.inputs[0]];
    const Value& x = g_.value(n.inputs[0]);
    if (b.value < 0 || x.type.shape.size() != 4 || x.type.dtype != ir::DataType::Float32())
      return false;
    std::vector<int64_t> axes = n.attrs.get_ints("axes");
    for (int64_t& a : axes) a = a < 0 ? a + 4 : a;
    std::sort(axes.begin(), axes.end());
    if (axes != std::vector<int64_t>{2, 3}) return false;
    const Value& y = g_.value(n.outputs[0]);
    int64_t C = x.type.shape[1];
    ValueId v = out().add(out().unique_name(n.name + "_" + layout_name(b.block)), pool,
                          ops::Attrs(pool, {}), {b.value});
    if (n.attrs.get_int("keepdims") == 1) {
      set_blocked(n.outputs[0], v, b.block, C);
      return true;
    }
    v = to_nchw({v, b.block, C}, n.name + "_to_nchw", out().unique_name(n.name + "_to_nchw"));
    set_nchw(n.outputs[0], out().add_node(out().unique_name(n.name), "reshape",
                                          ops::Attrs("reshape", {{"shape", y.type.shape}}), {v},
                                          {out().unique_name(y.name)})[0]);
    return true;
  }

  // A transpose from NHWC to NCHW (ConvNeXt's permute back after its channels-last MLP) gets a
  // blocked form at once, in the output's own block: the residual add after it then runs blocked
  // and its reads of the NHWC tensor are whole vectors of channels (in NCHW they were gathers
  // along W); a blocked form nothing reads is removed with the dead code.
  bool transposes_to_nchw(const Node& n) const {
    return n.op == "transpose" && n.outputs.size() == 1 &&
           g_.value(n.outputs[0]).type.shape.size() == 4 &&
           g_.value(n.outputs[0]).type.dtype == ir::DataType::Float32() &&
           n.attrs.get_ints("perm", {}) == std::vector<int64_t>{0, 3, 1, 2};
  }

  // The Winograd output tile of ungrouped conv2d `n`, 0 for the direct convolution: the default
  // rule's, or algorithm_for_'s point of the op's algorithm space.
  int64_t winograd_tile_of(const Node& n) const {
    std::vector<ops::TensorType> inputs;
    for (ValueId v : n.inputs) inputs.push_back(g_.value(v).type);
    const ops::ConfigSpace space = ops::conv2d_algorithm_space(inputs, n.attrs, target_);
    if (space.empty()) return 0;
    const std::vector<int64_t>& tiles = space[0].values;
    std::optional<ops::Config> c;
    if (algorithm_for_) c = algorithm_for_(n.op, inputs, n.attrs);
    if (!c) return tiles[0];
    const std::string& knob = space[0].name;
    const int64_t tile = c->count(knob) ? c->at(knob) : tiles[0];
    if (c->size() > c->count(knob) || std::find(tiles.begin(), tiles.end(), tile) == tiles.end()) {
      std::string values;
      for (int64_t t : tiles) values += (values.empty() ? "" : ", ") + std::to_string(t);
      ANVIL_FAIL("alter_layout: conv2d '", n.name, "': the algorithm given for it is not a point",
                 " of its space (one knob, ", knob, ", in {", values, "})");
    }
    return tile;
  }

  const Graph& g_;
  const Target& target_;
  const ConfigFn& algorithm_for_;
  GraphRewriter rw_;
  std::vector<ValueId> nchw_;
  std::vector<Blocked> blocked_;
  std::vector<std::vector<NodeId>> users_;  // of the old graph's values
  std::vector<bool> handled_;               // old nodes a pattern already rewrote
  struct Selection {
    ValueId old;  // the old value it computes
    std::vector<ValueId> inputs;
    std::vector<ops::ChannelRun> runs;
  };
  std::map<ValueId, Selection> selections_;  // the select_channels_nchwc nodes made, by output
};

// A float32 NCHW conv2d with a constant weight that ops::prefer_winograd_gpu picks.
bool takes_winograd_gpu(const Graph& g, const Node& n) {
  if (n.op != "conv2d" || n.inputs.size() < 2 || n.outputs.size() != 1) return false;
  const Value& x = g.value(n.inputs[0]);
  const Value& w = g.value(n.inputs[1]);
  if (x.type.shape.size() != 4 || w.type.shape.size() != 4 || w.kind != ValueKind::kConstant ||
      x.type.dtype != ir::DataType::Float32())
    return false;
  ops::Window win = conv_window(n);
  return ops::prefer_winograd_gpu(x.type.shape[1], w.type.shape[0], win.group,
                                  {w.type.shape[2], w.type.shape[3]}, win.strides, win.dilations);
}

// For a GPU target: the convolutions takes_winograd_gpu picks become conv2d_winograd (NCHW)
// over conv2d_winograd_nchwc_pack_weight (in_block = out_block = 1) of the constant weight,
// which fold_constants transforms once; the bias stays the op's third input. lstm and gru nodes
// take their GPU form (gpu_form = 1: plain products over the unpacked weights, an lstm step's
// states in one stage), conv2d_transpose its sub-pixel form (subpixel = 1: the taps of each
// output's phase only, where the stride allows).
Graph alter_for_gpu(const Graph& g) {
  GraphRewriter rw(g);
  Graph& out = rw.out();
  for (NodeId id = 0; id < static_cast<NodeId>(g.num_nodes()); ++id) {
    const Node& n = g.node(id);
    const bool recurrent =
        (n.op == "lstm" || n.op == "gru") && n.attrs.get_int("packed_weights", 0) == 0;
    if (recurrent || n.op == "conv2d_transpose") {
      ops::Attrs attrs = n.attrs;
      attrs.set(recurrent ? "gpu_form" : "subpixel", int64_t{1});
      std::vector<ValueId> ins;
      for (ValueId v : n.inputs) ins.push_back(rw.map(v));
      std::vector<std::string> names;
      for (ValueId v : n.outputs) names.push_back(out.unique_name(g.value(v).name));
      std::vector<ValueId> outs = out.add_node(out.unique_name(n.name), n.op, attrs, ins, names);
      for (size_t i = 0; i < outs.size(); ++i) rw.set(n.outputs[i], outs[i]);
      continue;
    }
    if (!takes_winograd_gpu(g, n)) {
      rw.copy_node(id);
      continue;
    }
    const Value& y = g.value(n.outputs[0]);
    int64_t tile = ops::winograd_tile_gpu(y.type.shape[2], y.type.shape[3]);
    const char* pack = "conv2d_winograd_nchwc_pack_weight";
    ValueId u = out.add(out.unique_name(n.name + "_winograd_weight"), pack,
                        ops::Attrs(pack, {{"in_block", 1}, {"out_block", 1}, {"tile", tile}}),
                        {rw.map(n.inputs[1])});
    std::vector<ValueId> ins = {rw.map(n.inputs[0]), u};
    if (n.inputs.size() > 2) ins.push_back(rw.map(n.inputs[2]));
    ops::Attrs attrs("conv2d_winograd", {{"pads", conv_window(n).pads()}, {"tile", tile}});
    rw.set(n.outputs[0], out.add_node(out.unique_name(n.name), "conv2d_winograd", attrs, ins,
                                      {out.unique_name(y.name)})[0]);
  }
  return rw.finish();
}

}  // namespace

Graph alter_layout(const Graph& g, const Target& target, const ConfigFn& algorithm_for) {
  if (target.is_gpu()) return alter_for_gpu(g);
  return LayoutRewriter(g, target, algorithm_for).run();
}

}  // namespace anvil::graph
