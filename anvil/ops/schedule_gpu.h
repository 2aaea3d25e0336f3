// The default GPU schedule shared by every operator: correct for any tensor-expression function,
// one thread per output element.
#pragma once

#include <vector>

#include "anvil/target/target.h"
#include "anvil/te/schedule.h"

namespace anvil::ops {

// Schedules every stage of `s` (the function computing `outputs`) for a GPU target: a stage
// without a reduction that one other stage reads is inlined into it; every other stage is a
// kernel of its own whose data-parallel loops are fused and split into blocks of
// min(256, the target's limit) threads (blockIdx.x, threadIdx.x), each thread computing one
// element (its reduction, if any, serially). A scalar stage runs on one thread.
void schedule_gpu_default(te::Schedule& s, const std::vector<te::Tensor>& outputs,
                          const Target& target);

}  // namespace anvil::ops
