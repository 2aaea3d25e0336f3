// Memory reuse: allocations whose lifetimes do not overlap share one allocation.
//
// The pass looks at each straight-line region: a statement together with the allocations and
// sequences nested in it, down to the first statement of any other kind (a loop, a branch, a
// let, a store...), which is one step of the region and a region of its own inside. A buffer is
// live from the first to the last step that uses it. Two one-dimensional allocations of
// constant size, the same element type and the same scope whose live steps do not overlap share
// one allocation of the larger size (greedily, in order of first use): the accesses of the later
// one move to the earlier one's buffer, whose Allocate is hoisted to the top of the region.
// Nothing else moves. Run it after storage flattening; multi-dimensional allocations, and
// buffers whose data variable is used other than by loads and stores, are left alone.
#pragma once

#include "anvil/ir/stmt.h"

namespace anvil::transform {

ir::Stmt storage_rewrite(const ir::Stmt& s);

}  // namespace anvil::transform
