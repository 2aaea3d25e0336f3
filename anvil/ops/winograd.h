// Winograd's minimal filtering F(m x m, 3 x 3) on NCHW[x]c: the transform matrices and the
// default rules of winograd.cc, exposed for the graph compiler and the tests.
#pragma once

#include <cstdint>
#include <vector>

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
                      int64_t out_width);

}  // namespace anvil::ops
