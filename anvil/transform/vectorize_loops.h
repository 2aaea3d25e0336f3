// Vectorization: a kVectorized loop of constant extent n becomes its body computed on n-lane
// vectors. The loop variable becomes Ramp(min, 1, n); expressions that depend on it widen
// (scalar operands are broadcast where they meet vectors), loads and stores take vector
// indices, and lets bind vector variables (a let whose value became a Ramp is substituted, so
// that an index through it stays a Ramp).
//
// A branch whose condition differs across lanes becomes a lane mask: the stores under it are
// predicated Stores, and the loads under it predicated Loads, so masked-off lanes neither write
// nor read memory (the then-branch runs under the mask, then the else-branch under its
// complement). A loop that cannot be vectorized stays a serial loop: a non-constant extent, an
// inner loop whose bounds depend on the vectorized variable, an allocation, an assertion or a
// barrier in the body, a store to an address that is the same for every lane (a reduction
// over the vectorized axis), or a body that already holds vectors (an inner loop vectorized
// first). As for any schedule, the loop's iterations are assumed independent.
#pragma once

#include "anvil/ir/stmt.h"

namespace anvil::transform {

ir::Stmt vectorize_loops(const ir::Stmt& s);

}  // namespace anvil::transform
