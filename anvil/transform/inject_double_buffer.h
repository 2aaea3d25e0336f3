// Double buffering of shared-memory stages computed inside a loop (te::Stage::double_buffer).
//
// A loop whose body fetches a double-buffered tile and then uses it,
//
//   for (ko) { allocate B { fetch B(ko); use B } }
//
// becomes one that fetches the next tile into the other half of a buffer twice the size while
// this iteration's half is read:
//
//   allocate B2[2 x B] { fetch B2[half 0](ko = min); barrier
//     for (ko) { if (ko + 1 < end) fetch B2[half (ko + 1) % 2](ko + 1); use B2[half ko % 2];
//     barrier } }
//
// The fetches of every double-buffered buffer of the loop (the statements at the start of its
// body that write only such buffers) move together; the loop's other allocations stay inside it.
// The pass places B2's barriers itself and marks B2 ("double_buffer_synced") so that barrier
// insertion leaves it alone. A double-buffered buffer that is not fetched at the start of a
// serial loop's body is left single-buffered.
#pragma once

#include "anvil/ir/stmt.h"

namespace anvil::transform {

ir::Stmt inject_double_buffer(const ir::Stmt& s);

}  // namespace anvil::transform
