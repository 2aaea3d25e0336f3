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

}  // namespace anvil::ops
