// Moves a guard out of the loops and scopes that it does not depend on. A split whose factor does
// not divide the extent leaves `if (guard)` on every statement of the innermost loops; when the
// guard depends only on outer loops (a fused parallel index, say), partition_loops cannot peel
// it, and unrolling copies it onto every FMA. Here consecutive branches on the same condition
// merge, and a branch that is the whole body of a loop, an allocation or a let that its condition
// does not read moves outside it, so the guard is tested once per tile.
//
// Only for host code: on a GPU a guard that encloses a loop would enclose the barriers that
// insert_barriers puts into it, so a statement with thread-bound loops is left as it is.
#pragma once

#include "anvil/ir/stmt.h"

namespace anvil::transform {

ir::Stmt hoist_guards(const ir::Stmt& s);

}  // namespace anvil::transform
