#include "anvil/ops/schedule_gpu.h"

#include <algorithm>
#include <unordered_map>

#include "anvil/ir/op.h"
#include "anvil/support/error.h"

namespace anvil::ops {

namespace {

constexpr int64_t kThreadsPerBlock = 256;

// The data-parallel loops of `st` fused and split into blocks of `threads` threads.
void bind_blocks(te::Stage st, int64_t threads) {
  const std::vector<te::IterVar>& axes = st.axis();
  te::IterVar fused = axes[0];
  for (size_t d = 1; d < axes.size(); ++d) fused = st.fuse(fused, axes[d]);
  auto [block, thread] = st.split(fused, threads);
  st.bind(block, "blockIdx.x");
  st.bind(thread, "threadIdx.x");
}

// A reduction to a scalar over more than `threads` elements of its longest reduction axis:
// `threads` partial results, each reduced by a thread of its own, then reduced by one thread.
void scalar_reduction(te::Schedule& s, const te::Tensor& t, int64_t threads) {
  te::IterVar longest;
  int64_t extent = 0;
  for (const te::IterVar& r : t->reduce_axis) {
    std::optional<int64_t> n = ir::as_const_int(r->dom.extent);
    if (n && *n > extent) {
      extent = *n;
      longest = r;
    }
  }
  if (extent <= threads) return;
  auto [outer, inner] = s[t].split_nparts(longest, threads);
  (void)inner;
  te::Tensor partial = s.rfactor(t, outer);
  bind_blocks(s[partial], threads);
}

}  // namespace

void schedule_gpu_default(te::Schedule& s, const std::vector<te::Tensor>& outputs,
                          const Target& target) {
  std::vector<te::Stage> stages = s.stages();
  // How many stages read each tensor. Inlining a tensor into several readers would recompute it
  // in each (and a chain of them, as in a recurrent cell, in each reader of each), so only
  // single readers inline.
  std::unordered_map<const te::TensorNode*, int> readers;
  for (const te::Stage& st : stages) {
    for (const auto& in : st.tensor()->inputs) ++readers[in.get()];
  }
  auto is_output = [&](const te::Tensor& t) {
    return std::any_of(outputs.begin(), outputs.end(),
                       [&](const te::Tensor& o) { return o.same_as(t); });
  };
  int64_t threads = std::min<int64_t>(kThreadsPerBlock, target.max_threads_per_block);
  for (te::Stage& st : stages) {
    const te::Tensor& t = st.tensor();
    if (!t.is_compute()) continue;
    if (!is_output(t) && t->reduce_axis.empty() && readers[t.get()] == 1) {
      st.compute_inline();
      continue;
    }
    if (st.axis().empty()) {
      // A scalar runs on one thread (split_host_device); a large reduction to it is first
      // factored into partial results that many threads compute.
      if (!t->reduce_axis.empty()) scalar_reduction(s, t, threads);
      continue;
    }
    bind_blocks(st, threads);
  }
}

}  // namespace anvil::ops