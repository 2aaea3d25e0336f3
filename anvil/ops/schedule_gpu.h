// GPU schedules shared by the operators: the default one (correct for any tensor-expression
// function, threads over the output elements) and the tiled one of the operators whose anchor is
// one reduction over a grid of outputs (convolutions, matrix products), with its knobs.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "anvil/ops/op.h"
#include "anvil/target/target.h"
#include "anvil/te/schedule.h"

namespace anvil::ops {

// Schedules every stage of `s` (the function computing `outputs`) for a GPU target: a stage
// without a reduction that one other stage reads is inlined into it; every other stage is a
// kernel of its own whose data-parallel loops are fused and split into blocks of
// min(256, the target's limit) threads (blockIdx.x, threadIdx.x), each thread computing one
// element (its reduction, if any, serially; a reduction with few outputs over a long axis is
// shared by the threads of a block per output instead). A scalar stage runs on one thread.
// Knobs (gpu_default_space): "threads" per block (also the cap on a cross-thread reduction's
// lanes) and "inner", the outputs each thread computes, a block's width apart (a stage that
// takes a cross-thread reduction, a block per output, ignores it). Stages for which `scheduled`
// returns true are left as they are: an op's own schedule made them.
void schedule_gpu_default(te::Schedule& s, const std::vector<te::Tensor>& outputs,
                          const Target& target, const Config& config = {},
                          const std::function<bool(const te::Tensor&)>& scheduled = nullptr);
// The threads per block of the default schedule's rule: min(256, the target's limit).
int64_t gpu_default_threads(const Target& target);
// The knobs of schedule_gpu_default, for the operators that take it as their tunable GPU
// schedule (pooling, reductions and softmax, element-wise ops, the recurrent ops).
ConfigSpace gpu_default_space(const std::vector<TensorType>& inputs, const Attrs& attrs,
                              const Target& target);

// `st`'s loops `axes` (outermost first, each directly inside the last) fused and split into
// blocks of `threads` threads (blockIdx.x, threadIdx.x), each thread computing `inner` of the
// fused iterations a block's width apart (so that a warp's accesses stay contiguous); returns the
// thread axis.
te::IterVar bind_threads(te::Stage st, const std::vector<te::IterVar>& axes, int64_t threads,
                         int64_t inner = 1);

// The largest divisor of n that is at most cap (1 when cap < 2).
int64_t largest_divisor(int64_t n, int64_t cap);

// One output axis of the tiled schedule, counted from the last: its knobs are
// "<name>_threads" (threads of a block along it, a divisor of the extent) and "<name>_inner" (at
// most this many outputs of a thread along it: the largest divisor of extent / threads up to it,
// so that every point of the space tiles exactly); the default rule takes the largest divisors
// up to these caps.
struct GpuTileAxis {
  std::string name;
  int64_t max_threads = 8;
  int64_t max_inner = 1;
};

// The tiled GPU schedule of a group whose only reduction `acc` has the output's shape (a
// convolution or a matrix product, with its fused bias and element-wise epilogue):
//   - the output's last axes (one per entry of `axes`, the last entry the last axis) are each
//     split into blocks x threads x inner; the last two axes' blocks are blockIdx.x and .y, the
//     remaining leading axes fused into blockIdx.z; threads are threadIdx.x, .y, .z likewise;
//   - each thread accumulates its inner outputs in registers (acc in local memory, computed at
//     the thread), the first reduction axis split by the knob "k_tile";
//   - every tensor acc reads is copied per k_tile step into shared memory by all threads of the
//     block together (cooperative fetching), its producers (padding, packing) inlined into the
//     copy; knob "double_buffer" (0/1) double-buffers those copies; knob "vector_fetch" (1/0)
//     gives each thread 4 or 2 consecutive elements of a copy's last dimension where the copy
//     reads a tensor in memory unchanged along it (one 16-byte load where aligned; default 1,
//     also for a configuration without the knob). Tensors for which `global` returns true are
//     read from global memory instead (inlined when computed).
//   - split-K (knob "k_split", parts of the first reduction axis): the tiling computes each
//     part's partial sums ([parts, out...], the parts fused into blockIdx.z with the leading
//     axes) into global memory, then a kernel of a thread per output adds the parts and applies
//     the epilogue. The rule splits when the tiling launches fewer blocks than the target has
//     multiprocessors: the fewest parts of 2, 4, 8, 16 (each at least 16 long) that reach it.
//     A k_tile that does not divide a part takes the largest divisor of the part below it. A
//     configuration with other knobs but no k_split (a record tuned before split-K) does not
//     split: records run as they were measured.
// Throws anvil::Error naming the knob when a thread count or k_split does not divide its axis,
// and when the function is not of this form.
void schedule_gpu_tiled(te::Schedule& s, const std::vector<te::Tensor>& outs,
                        const std::vector<GpuTileAxis>& axes, int64_t max_k_tile,
                        const Target& target, const Config& config,
                        const std::function<bool(const te::Tensor&)>& global = nullptr);

// The tiling of schedule_gpu_tiled on its own, for a schedule that makes the stages itself: `out`
// (a root stage) in blocks x threads x inner outputs, `acc` (the reduction computing its values,
// in local memory) at the thread, `shared` (cache_read copies of what acc reads) fetched
// cooperatively per k_tile step; same knobs and errors.
void tile_gpu(te::Schedule& s, const te::Tensor& out, const te::Tensor& acc,
              const std::vector<te::Tensor>& shared, const std::vector<GpuTileAxis>& axes,
              int64_t max_k_tile, const Config& config);

// The knobs of schedule_gpu_tiled for an output of shape `out` whose first reduction axis has
// extent `k`; each knob's first value is the default rule's. `split_k`: with "k_split" (when k
// allows a split), for schedule_gpu_tiled; tile_gpu alone has none.
ConfigSpace gpu_tiled_space(const std::vector<int64_t>& out, int64_t k,
                            const std::vector<GpuTileAxis>& axes, int64_t max_k_tile,
                            const Target& target, bool split_k = true);

}  // namespace anvil::ops
