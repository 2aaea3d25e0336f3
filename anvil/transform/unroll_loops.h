// Unrolling: a kUnrolled loop of constant extent becomes its body repeated once per iteration,
// each copy with the loop variable replaced by its value and then simplified. A loop under
// AttrStmt("pragma_unroll", var, v) with v nonzero is unrolled the same way (the annotation is
// consumed). A kUnrolled loop whose extent is not constant becomes a serial loop.
//
// Every copy after the first binds fresh variables (loops, lets and allocations inside), so a
// variable is still bound at one place only.
#pragma once

#include "anvil/ir/stmt.h"

namespace anvil::transform {

ir::Stmt unroll_loops(const ir::Stmt& s);

}  // namespace anvil::transform
