// Winograd's minimal filtering F(m x m, 3 x 3) on NCHW[x]c: the transform matrices and the
// default rules of winograd.cc, exposed for the graph compiler and the tests.
#pragma once

#include <cstdint>
#include <vector>

#include "anvil/ops/op.h"
#include "anvil/target/target.h"
#include "anvil/te/schedule.h"

namespace anvil::ops {

// y = A^T [(G g) .* (B^T d)] computes the correlation y[j] = sum_k g[k] d[j + k] of an a-long
// input d with an r-long filter g (a = m + r - 1), by the Toom-Cook construction over the points
// 0, +-1 (m = 2) or 0, +-1, +-1/2 (m = 4), and infinity.
struct WinogradMatrices {
  int64_t m = 0, r = 3, a = 0;
  std::vector<std::vector<double>> AT;  // m x a
  std::vector<std::vector<double>> G;   // a x r
  std::vector<std::vector<double>> BT;  // a x a
};
// m: 2 or 4 (anything else throws).
const WinogradMatrices& winograd_matrices(int64_t m);

// The rule for the output tile m (the pack op's attribute "tile") of a convolution with these
// channel counts and output size (one image), see winograd.cc. A graph compiler lowering a conv2d
// for which prefer_winograd holds packs its weight with conv2d_winograd_nchwc_pack_weight
// (in_block: the input activation's block, out_block: nchwc_block(O), tile: this rule) and runs
// conv2d_winograd_nchwc with the conv's pads.
int64_t winograd_tile(int64_t channels_in, int64_t channels_out, int64_t out_height,
                      int64_t out_width, const Target& target);

// The GPU rule: conv2d_winograd (NCHW) for a 3x3, stride-1, undilated, ungrouped convolution
// with at least 16 input and 16 output channels (fewer: the transforms cost more than the GEMM
// saves), with the output tile winograd_tile_gpu. Unmeasured on a GPU so far (see winograd_gpu.cc).
bool prefer_winograd_gpu(int64_t channels_in, int64_t channels_out, int64_t group,
                         const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                         const std::vector<int64_t>& dilations);
// F(2x2) unless F(4x4) does less GEMM work (a^2 x tiles), for an output of this size.
int64_t winograd_tile_gpu(int64_t out_height, int64_t out_width);

// The stages of a Winograd convolution (either op) among the producers of `outs`; the output
// transform and the epilogue after it are inlined into outs[0] (their loops are the output's).
struct WinogradStages {
  te::Tensor pad, bd, v, mm, am, y;
};
WinogradStages winograd_stages(te::Schedule& s, const std::vector<te::Tensor>& outs);

// conv2d_winograd's GPU schedule and its knobs (winograd_gpu.cc): a is the transform's size
// (m + 2), P the tiles, O and C the channels.
void winograd_schedule_gpu(te::Schedule& s, const std::vector<te::Tensor>& outs, const Attrs& attrs,
                           const Target& target, const Config& config);
ConfigSpace winograd_space_gpu(int64_t a, int64_t P, int64_t O, int64_t C, const Target& target);

}  // namespace anvil::ops
