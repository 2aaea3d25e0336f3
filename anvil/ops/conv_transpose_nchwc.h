// Internal to the conv2d_transpose_nchwc family (conv_transpose_nchwc.cc and
// conv_transpose_nchwc_schedule.cc): the phase (sub-pixel) decomposition of one spatial dimension
// and the parsed attributes. See conv_transpose_nchwc.cc for the layouts and the math.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "anvil/ir/expr.h"
#include "anvil/ops/op.h"

namespace anvil::ops::deconv {

// One spatial dimension of a transposed convolution with stride s, dilation d and kernel K: the
// output position y (u = y + pad_lo) receives tap k from input i when i*s + k*d == u. With
// g = gcd(s, d), s' = s/g, d' = d/g, phase R = u mod s has taps only when g divides R, namely
// k_j = k0(R) + s'*j with k0(R) = (R/g * inv(d' mod s')) mod s', read from input rows
// i = base(u) - j*d'. Every phase gets `taps` slots (the most any phase has); missing ones are
// zero in the packed weight.
struct Phase {
  int64_t s = 1, d = 1, K = 1;
  int64_t g = 1, sp = 1, dp = 1, inv = 0;
  int64_t taps = 1;

  static Phase make(int64_t stride, int64_t dilation, int64_t kernel);
  // The first tap of phase R, or -1 when the phase has none.
  int64_t k0(int64_t R) const;
  // base(u) on the host and as an expression of u (floor arithmetic, so negative u works).
  int64_t base(int64_t u) const;
  ir::Expr base(const ir::Expr& u) const;
  // The (phase, slot) that holds kernel tap k.
  int64_t phase_of_tap(int64_t k) const { return (k * d) % s; }
  int64_t slot_of_tap(int64_t k) const { return k / sp; }
};

struct Params {
  std::string op;
  int64_t N = 0, Cb = 0, ib = 0, H = 0, W = 0;  // x [N, Cb, H, W, ib]
  int64_t Ob = 0, ob = 0;                       // output [N, Ob, OH, OW, ob]
  int64_t OH = 0, OW = 0;
  std::vector<int64_t> strides, dilations, pad_lo, pad_hi, output_padding, kernel;
  Phase py, px;
  // The zero rows and columns the source needs around x so that every read is in range.
  int64_t src_top = 0, src_bottom = 0, src_left = 0, src_right = 0;
  // Attribute input_innermost: the packed weight is [O/ob, C/ib, TY, TX, SY, SX, ob, ib].
  bool input_innermost = false;
};

// The packed weight's shape: [O/ob, C/ib, TY, TX, ib, SY, SX, ob], or with input_innermost
// [O/ob, C/ib, TY, TX, SY, SX, ob, ib]; and the position of a packed element in it.
std::vector<int64_t> packed_shape(int64_t Ob, int64_t Cb, int64_t ty, int64_t tx, int64_t ib,
                                  int64_t sy, int64_t sx, int64_t ob, bool input_innermost);
template <typename T>
std::vector<T> packed_index(T ob_i, T cb, T jy, T jx, T i, T ry, T rx, T o, bool input_innermost) {
  if (input_innermost) return {ob_i, cb, jy, jx, ry, rx, o, i};
  return {ob_i, cb, jy, jx, i, ry, rx, o};
}

// The reduction stage's name with attribute input_innermost (its schedule is chosen by it).
inline constexpr const char* kInputInnermostStage = "conv2d_transpose_nchwc.input_innermost";
// The attribute itself (the operator's and the weight packing's).
AttrSpec input_innermost_attr();

// Parses and checks attributes and input types of conv2d_transpose_nchwc.
Params parse(const std::vector<TensorType>& in, const Attrs& attrs);

// The default schedule and its knobs (conv_transpose_nchwc_schedule.cc).
struct Knobs {
  int64_t tile_oc = 1;  // output channel blocks per register tile
  int64_t tile_oh = 1;  // output rows per register tile
  int64_t tile_ow = 1;  // output columns per register tile
  int64_t unroll_ib = 1, unroll_kw = 1;
  int64_t ic_chunk = 0;  // input channel blocks per reduction chunk (0: the whole reduction)
  int64_t parallel = 1;  // 0: the whole convolution on the calling thread
};
// Cb input channel blocks, each ic_bytes of weights per output channel block.
Knobs default_knobs(int64_t Ob, int64_t ob, int64_t OH, int64_t OW, int64_t sy, int64_t sx,
                    int64_t Cb, int64_t ic_bytes, const Target& target);
ConfigSpace space(const std::vector<TensorType>& in, const Attrs& attrs, const Target& target);
void schedule(te::Schedule& s, const std::vector<te::Tensor>& outs, const Target& target,
              const Config& config);
// Output columns per tile of the input_innermost schedule.
int64_t default_input_innermost_tile(int64_t ob, int64_t OW, int64_t sx, const Target& target);

}  // namespace anvil::ops::deconv
