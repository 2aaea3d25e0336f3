// The blocked channel layout NCHW[x]c and the operators that compute on it.
//
// Activations in NCHW[x]c are [N, C/x, H, W, x]: channel c lives at (c / x, c % x). A channel
// count that the block does not divide is padded up with zero channels (layout_transform's
// "channels" attribute drops them again). The graph compiler picks one block per tensor with
// nchwc_block; an operator on NCHW[x]c accepts any input block and chooses its output block.
//
// Operators (each in its own family file):
//   conv2d_nchwc            x [N, C/ib, H, W, ib], weight [O/ob, C/ib, KH, KW, ib, ob]
//                           -> [N, O/ob, OH, OW, ob]; attrs strides, pads, dilations (ONNX's);
//                           conv_nchwc.cc
//   depthwise_conv2d_nchwc  x [N, C/b, H, W, b], weight [C/b, 1, KH, KW, 1, b]
//                           -> [N, C/b, OH, OW, b]; conv_nchwc.cc
//   conv2d_transpose_nchwc  x [N, C/ib, H, W, ib], weight split into output phases
//                           [O/ob, C/ib, TY, TX, ib, SY, SX, ob] -> [N, O/ob, OH, OW, ob]; needs
//                           the attribute kernel_shape (the packed shape does not determine it);
//                           with input_innermost the weight is [O/ob, C/ib, TY, TX, SY, SX, ob,
//                           ib] (few output channels: vectors over input channels);
//                           conv_transpose_nchwc.cc
//   conv2d_winograd_nchwc   3x3 stride-1 convolutions by Winograd's minimal filtering, on a
//                           weight transformed once by its own weight op; winograd.cc
//   max_pool2d_nchwc, avg_pool2d_nchwc       x [N, C/b, H, W, b] -> [N, C/b, OH, OW, b]
//   global_max_pool2d_nchwc, global_avg_pool2d_nchwc   -> [N, C/b, 1, 1, b]
//                           the pools with their NCHW forms' attributes and semantics (pooling
//                           is per channel); pool_norm.cc
// Each family also registers the injective weight-packing operator that turns the ONNX weight
// (OIHW, or CO(HW) for the transpose) into its layout, so that constant folding packs weights
// once at compile time. None of these take a bias: a bias, batch-norm scale, relu or residual add
// is an elementwise op on the output that the schedule fuses as an epilogue (the op's schedule
// accepts as `outs` the last of a chain of injective stages over the convolution).
#pragma once

#include <cstdint>
#include <vector>

#include "anvil/ops/op.h"
#include "anvil/target/target.h"

namespace anvil::ops {

// The channel block of a tensor with `channels` channels on `target`: the power of two from 4
// to the vector width (or the channel count itself, below 4) whose padded
// channels cost the least at the rate the target's FMA pipes retire vectors of that width
// (conv_nchwc.cc). Channels the block does not divide are padded (see nchwc_channels).
int64_t nchwc_block(int64_t channels, const Target& target);
// Whether conv2d_transpose_nchwc with these blocks takes attribute input_innermost: an output
// block of at most half a vector fills full vectors only across input channels.
bool transpose_input_innermost(int64_t ib, int64_t ob, const Target& target);
// The channel count padded up to a multiple of `block`.
inline int64_t nchwc_channels(int64_t channels, int64_t block) {
  return (channels + block - 1) / block * block;
}

// Whether the default rule computes a convolution with Winograd rather than directly: 3x3 kernel,
// stride 1, no dilation, no groups, and the shape is one where it measured faster (winograd.cc
// documents the rule). height and width are the output's.
bool prefer_winograd(int64_t channels_in, int64_t channels_out, int64_t height, int64_t width,
                     int64_t kernel_h, int64_t kernel_w, int64_t stride_h, int64_t stride_w,
                     int64_t dilation_h, int64_t dilation_w, const Target& target);

// The algorithms a conv2d (its NCHW inputs and attributes) may run as on `target`, as the one knob
// "winograd_tile": 0 computes it directly, 2 and 4 by Winograd F(2x2, 3x3) and F(4x4, 3x3); the
// default rule's choice (prefer_winograd, winograd_tile) first. The layout pass takes another
// point when graph::BuildOptions::algorithm_for gives one (the tuner's in-model verdict). Empty
// where Winograd does not apply (not a float32, ungrouped, 3x3, stride-1, undilated conv2d).
ConfigSpace conv2d_algorithm_space(const std::vector<TensorType>& inputs, const Attrs& attrs,
                                   const Target& target);

}  // namespace anvil::ops
