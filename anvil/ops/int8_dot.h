// The int8 dot product the integer kernels (dense_int8.cc, conv_int8.cc) tensorize their
// innermost vector with, chosen from the target and the values the operands may hold.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "anvil/ops/op.h"
#include "anvil/ops/window.h"
#include "anvil/target/target.h"
#include "anvil/te/schedule.h"
#include "anvil/te/tensor_intrin.h"

namespace anvil::ops {

// The channel block of the int8 convolutions' blocked form (attribute blocked = 1): uint8
// activations and int32 results in NCHW16c, one 512-bit vector of accumulators per pixel.
constexpr int64_t kInt8ChannelBlock = 16;

// Lanes of int32 accumulators per vector: 16 with AVX-512, 8 with AVX2, 4 with 128-bit vectors.
int64_t int8_dot_lanes(const Target& target);

// For vectors of `lanes` accumulators on `target`, reading activations that may hold `a` and
// weights that may hold `b`: vpdpbusd's exact form where the CPU has VNNI at that width; else
// AVX2's vpmaddubsw form where no pair of products can leave int16 (7-bit weights, say); else the
// exact form (which the LLVM back end computes with vpmaddwd on int16).
te::TensorIntrin pick_int8_dot(const Target& target, int64_t lanes, te::ValueRange a,
                               te::ValueRange b);

// Whether `target` is an AVX2 CPU without an int8 dot-product instruction (VNNI) at the width of
// int8_dot_lanes: there products of full-range weights take the exact form, which is slower than
// float32 (7-bit weights take vpmaddubsw).
bool int8_exact_form_is_slow(const Target& target);

// The vector registers a kernel's accumulator tile is sized from: the target's, else 32 with
// 512-bit vectors and 16 otherwise.
int64_t int8_tile_registers(const Target& target);

// The product stage of an integer kernel's output `out` (the one reduction), with its operands
// (the product's inputs, in the order it reads them); every other computed stage between them and
// `out` (the op's own copy, an epilogue's injective stages) is inlined into `out`. Throws
// anvil::Error naming `op` when `out` computes no product.
struct Int8Product {
  te::Tensor product, activation, weight;
};
Int8Product inline_around_product(te::Schedule& s, const te::Tensor& out, const char* op);

// What the two int8 convolutions (conv_int8.cc, depthwise_int8.cc) share: a window's output
// extent along spatial axis d of an input of n positions for a kernel of k taps (throws
// anvil::Error naming `op` and `x` when the padded input is smaller than the dilated kernel),
// whether the window pads at all, and the op's output stage from its accumulators acc [N, OB, OH,
// OW, 16]: acc itself when `blocked` (NCHW16c), else [N, channels, OH, OW].
int64_t int8_window_extent(const std::string& op, const TensorType& x, const Window& win, size_t d,
                           int64_t n, int64_t k);
bool int8_window_pads(const Window& win);
// Their inputs' checks but the packed weight's (in[1]): 2 or 3 inputs, x uint8 [N, C, H, W] or,
// `blocked_x`, [N, C/16, H, W, 16], and the optional pad_value a uint8 scalar.
void check_int8_conv_inputs(const std::string& op, const std::vector<TensorType>& in,
                            bool blocked_x);
// A blocked x [N, CB, H, W, 16] padded by `win`'s pads with `fill()` (called inside the stage's
// body, which records what it reads).
te::Tensor int8_padded_blocked(const te::Tensor& x, const Window& win,
                               const std::function<ir::Expr()>& fill, const std::string& name);
te::Tensor int8_conv_output(const te::Tensor& acc, bool blocked, int64_t channels,
                            const std::string& name);

// Whether conv2d_int8 (attribute group) takes `group` groups of `channels` input channels and
// `filters` output channels (conv_int8.cc: input channels per group a multiple of 4; output
// channels per group a multiple of 16, or dividing 16 with all of them a multiple of 16).
bool conv_int8_takes_groups(int64_t channels, int64_t filters, int64_t group);

// What the two weight-packing ops share: injective (a constant weight is packed once, at compile
// time), no FLOPs, the default injective schedule and nothing to tune.
void set_int8_packing_defaults(OpDef& pack);

// What a kernel may assume an 8-bit operand holds: a placeholder's declared values (a constant's,
// te::value_range), the whole type's range for anything computed.
te::ValueRange int8_values_read(const te::Tensor& t);

}  // namespace anvil::ops
