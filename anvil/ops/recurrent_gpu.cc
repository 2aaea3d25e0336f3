// The GPU schedule of lstm and gru in their GPU form (see recurrent_compute.cc for the stages).
//
// Everything but the lstm's steps takes the default GPU schedule. An lstm step with a previous
// hidden state is one kernel: a block per `step_units` hidden units computes their 4 gate rows of
// the recurrent product and then their cell and hidden states. Before, the product was a kernel
// of its own (a block per gate row) and the states another, so a step paid two launches and a
// round trip of the gate sums through global memory; the states' kernel is the only one now.
//
// Inside the block, threadIdx.y is (unit, gate) and threadIdx.x `step_lanes` lanes along k:
//   part[b, j, q, lane]  shared: each thread sums every lanes-th product of one gate row
//                        (coalesced reads of R's row and of h_prev)
//   gemvsum[b, j, q]     shared: the lanes' partial sums, by the (unit, gate) threads
//   state[row, b, j]     the cell and hidden states of the block's units, threadIdx.y (unit, row)
// insert_barriers puts a barrier between each of the three.
#include <unordered_set>

#include "anvil/ir/op.h"
#include "anvil/ops/recurrent_common.h"
#include "anvil/ops/schedule_gpu.h"
#include "anvil/support/error.h"

namespace anvil::ops::recurrent {

namespace {

constexpr int64_t kStepLanes = 32;  // a warp along k
constexpr int64_t kStepUnits = 1;   // 4 gate rows x 32 lanes: 128 threads

// One lstm step in one kernel: `state` (the step's [2, batch, H] states) with the block's share
// of `acc` (its [batch, H, 4] recurrent product) computed inside it.
void fuse_step(te::Schedule& s, const te::Tensor& state, const te::Tensor& acc, int64_t units,
               int64_t lanes, std::unordered_set<const te::TensorNode*>& scheduled) {
  using ir::MemoryScope;
  te::Stage ss = s[state];
  std::vector<te::IterVar> ax = ss.axis();  // row, b, j
  auto [jo, ji] = ss.split(ax[2], units);
  ss.reorder({ax[1], jo, ji, ax[0]});
  te::IterVar block = ss.fuse(ax[1], jo);
  ss.bind(block, "blockIdx.x");
  ss.bind(ss.fuse(ji, ax[0]), "threadIdx.y");

  auto [ko, lane] = s[acc].split(s[acc].reduce_axis()[0], lanes);
  (void)ko;
  te::Tensor part = s.rfactor(acc, lane);
  // Each (unit, gate) sum adds its lanes' partial sums in registers, every lane alike (a sum
  // accumulated in shared memory by all lanes at once would race), then stores it in shared
  // memory for the states; the partial sums (shared, so covering the whole block's) are
  // computed before, a (unit, gate) per thread row and a lane per thread column.
  te::Tensor sum = s.cache_write(acc, MemoryScope::kLocal);
  te::Stage sa = s[acc];
  sa.set_scope(MemoryScope::kShared);
  sa.compute_at(ss, block);
  std::vector<te::IterVar> aax = sa.axis();  // b, j, q
  te::IterVar row = sa.fuse(sa.fuse(aax[0], aax[1]), aax[2]);
  sa.bind(row, "threadIdx.y");
  te::Stage sl = s[sum];
  sl.compute_at(sa, row);

  // A partial sum accumulates in a register too, and is stored once.
  te::Tensor part_sum = s.cache_write(part, MemoryScope::kLocal);
  te::Stage sp = s[part];
  sp.set_scope(MemoryScope::kShared);
  sp.compute_at(sl, sl.axis()[0]);
  std::vector<te::IterVar> pax = sp.axis();  // b, j, q, lane
  sp.bind(sp.fuse(sp.fuse(pax[0], pax[1]), pax[2]), "threadIdx.y");
  sp.bind(pax[3], "threadIdx.x");
  s[part_sum].compute_at(sp, pax[3]);
  for (const te::Tensor& t : {state, acc, sum, part, part_sum}) scheduled.insert(t.get());
}

}  // namespace

ConfigSpace rnn_space_gpu(const Rnn& r, const std::vector<TensorType>& in, const Attrs& attrs,
                          const Target& target) {
  ConfigSpace space = gpu_default_space(in, attrs, target);
  if (!r.lstm || !r.gpu_form) return space;
  std::vector<int64_t> units = {kStepUnits};
  for (int64_t u : {2, 4, 8})
    if (u <= r.hidden && 4 * u * kStepLanes <= target.max_threads_per_block) units.push_back(u);
  std::vector<int64_t> lanes = {kStepLanes};
  for (int64_t l : {16, 64})
    if (4 * l <= target.max_threads_per_block) lanes.push_back(l);
  space.push_back({"step_units", units});
  space.push_back({"step_lanes", lanes});
  return space;
}

void rnn_schedule_gpu(const std::string& op, te::Schedule& s, const std::vector<te::Tensor>& outs,
                      const Target& target, const Config& config) {
  int64_t units_cap = knob(config, "step_units", kStepUnits);
  int64_t lanes = knob(config, "step_lanes", kStepLanes);
  ANVIL_CHECK(units_cap >= 1 && lanes >= 1, op, " GPU schedule: step_units ", units_cap,
              " and step_lanes ", lanes, " must be positive");
  // The steps' (state, product) pairs, found before rfactor adds stages.
  std::vector<std::pair<te::Tensor, te::Tensor>> steps;
  for (const te::Stage& st : s.stages()) {
    const te::Tensor& t = st.tensor();
    if (!t.is_compute() || stage_role(op, t) != "state") continue;
    for (const auto& node : t->inputs) {
      te::Tensor in(node.get());
      if (stage_role(op, in) == "gemvsum") steps.emplace_back(t, in);
    }
  }
  // A block is 4 x units x lanes threads: step_units is at most this many (the largest divisor of
  // H within it and within the block), so that every point of the space fits.
  ANVIL_CHECK(4 * lanes <= target.max_threads_per_block, op, " GPU schedule: step_lanes ", lanes,
              " makes ", 4 * lanes,
              " threads per block for one unit's 4 gates, over the target's limit of ",
              target.max_threads_per_block);
  units_cap = std::min(units_cap, target.max_threads_per_block / (4 * lanes));
  std::unordered_set<const te::TensorNode*> scheduled;
  for (const auto& [state, acc] : steps) {
    std::vector<int64_t> shape = shape_of(state);  // [2, batch, H]
    fuse_step(s, state, acc, largest_divisor(shape[2], units_cap), lanes, scheduled);
  }
  schedule_gpu_default(s, outs, target, config,
                       [&](const te::Tensor& t) { return scheduled.count(t.get()) > 0; });
}

}  // namespace anvil::ops::recurrent
