// The pieces of dense.cc that the recurrent operators (recurrent.cc) reuse: packing a weight into
// panels of columns, and the packed path's schedule of a product over such panels.
#pragma once

#include <cstdint>
#include <string>

#include "anvil/ops/op.h"

namespace anvil::ops {

// Columns per panel when nothing else is said: one AVX-512 vector of float32 (two AVX2 vectors),
// so a panel row is one 64-byte cache line.
constexpr int64_t kDefaultPanel = 16;

// w [batch.., N, K] (rows rows0 .. rows0 + rows of its N) packed into panels of nb rows, each
// contiguous along k:  out[batch.., no, k, ni] = w[batch.., row0 + no*nb + ni, k]  (zero past the
// rows).
te::Tensor pack_panels(const te::Tensor& w, int64_t nb, int64_t row0, int64_t rows,
                       const std::string& name);

// Schedules a pack_panels stage: vectorized over the panel's columns, its panel loop (fused with
// the batch) parallel when `parallel`.
void schedule_pack_panels_x86(te::Schedule& s, const te::Tensor& packed, const Target& target,
                              bool parallel);

// Schedules `out`, a product acc[batch.., m, n] = sum_k a(.., m, k) * packed(.., n/nb, k, n%nb)
// (or out = acc + an elementwise epilogue), as dense's packed path: a register tile of
// tile_m x tile_n accumulators (the GEMV form for few rows: broadcast a[m, k], FMA into panel
// vectors, k outer and unrolled), its block loop parallel. `config` may override the knobs of
// panel_product_space. A packing stage the product reads is left to its owner.
void schedule_panel_product_x86(const std::string& op, te::Schedule& s, const te::Tensor& out,
                                int64_t nb, const Target& target, const Config& config);

// The knobs (tile_m, tile_n, k_unroll, parallel) of that schedule, the rule's values first.
ConfigSpace panel_product_space(int64_t batches, int64_t M, int64_t N, int64_t K, int64_t nb,
                                const Target& target);

}  // namespace anvil::ops
