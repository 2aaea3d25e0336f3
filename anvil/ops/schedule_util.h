// Schedule building blocks shared by the operator families.
#pragma once

#include <cstdint>
#include <vector>

#include "anvil/target/target.h"
#include "anvil/te/schedule.h"

namespace anvil::ops {

// Multiply-adds from which a product (dense, a convolution, a recurrent step's product) runs on
// the runtime's threads by default: below it, waking the other threads costs more than they save.
constexpr int64_t kParallelMultiplyAdds = int64_t{1} << 18;

// The default schedule of an injective (elementwise, broadcast, data movement) stage on x86: the
// row form below when the innermost axis holds whole vectors (or at least four), else its loops
// fused into one, split by the vector width (vectorized inner part) and by a block for the threads
// (parallel outer part) when there is enough work. Shared by every injective operator and by
// fused injective epilogues.
void schedule_injective_x86(te::Schedule& s, const te::Tensor& out, const Target& target);

// The row form: the outer axes fused and in parallel, the innermost one split by the vector width
// and vectorized, so that only its own index arithmetic runs per lane (resize's source
// coordinates, broadcasts, and the divisions a flat index needs per axis). The flat form for a
// rank below 2 or an innermost axis shorter than a vector.
void schedule_injective_rows_x86(te::Schedule& s, const te::Tensor& out, const Target& target);

// For a copy into NCHW[x]c ([N, C/x, H, W, x]) whose channels come from scattered places (a
// layout transform from NCHW, a channel shuffle): N, C/x and H fused and in parallel, W a loop,
// the block's channels unrolled rather than vectorized. A vector of them would be a gather (one
// cache line per lane from NCHW), several times slower than the scalar copies, whose per-channel
// index arithmetic folds once unrolled.
void schedule_blocked_copy_x86(te::Schedule& s, const te::Tensor& out, const Target& target);

// The plain schedule of ops computed as reductions without a tuned schedule of their own (cumsum,
// topk, the scatters, 3-D convolutions and pools): each reduction stage's data-parallel loops
// fused into one, in parallel when the work pays for the threads; injective outputs as
// schedule_injective_x86.
void schedule_reductions_x86(te::Schedule& s, const std::vector<te::Tensor>& outs,
                             const Target& target);

}  // namespace anvil::ops
