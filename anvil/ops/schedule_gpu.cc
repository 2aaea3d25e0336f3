#include "anvil/ops/schedule_gpu.h"

#include <algorithm>
#include <unordered_map>

#include "anvil/support/error.h"

namespace anvil::ops {

namespace {

constexpr int64_t kThreadsPerBlock = 256;

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
    const std::vector<te::IterVar>& axes = st.axis();
    ANVIL_CHECK(!axes.empty(), "GPU schedule: stage '", t.name(),
                "' computes a scalar, which has no loop to bind to GPU threads");
    te::IterVar fused = axes[0];
    for (size_t d = 1; d < axes.size(); ++d) fused = st.fuse(fused, axes[d]);
    auto [block, thread] = st.split(fused, threads);
    st.bind(block, "blockIdx.x");
    st.bind(thread, "threadIdx.x");
  }
}

}  // namespace anvil::ops
