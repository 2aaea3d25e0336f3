// Schedule building blocks shared by the operator families.
#pragma once

#include "anvil/target/target.h"
#include "anvil/te/schedule.h"

namespace anvil::ops {

// The default schedule of an injective (elementwise, broadcast, data movement) stage on x86: its
// loops fused into one, split by the vector width (vectorized inner part) and by a block for the
// threads (parallel outer part) when there is enough work. Shared by every injective operator and
// by fused injective epilogues.
void schedule_injective_x86(te::Schedule& s, const te::Tensor& out, const Target& target);

// An injective stage whose innermost index needs arithmetic the flat form would repeat for every
// axis (resize's source coordinates): the outer axes fused and in parallel, the innermost one
// split by the vector width and vectorized, so only its own arithmetic runs per lane. Falls back
// to schedule_injective_x86 for a rank below 2 or an innermost axis shorter than a vector.
void schedule_injective_rows_x86(te::Schedule& s, const te::Tensor& out, const Target& target);

}  // namespace anvil::ops
