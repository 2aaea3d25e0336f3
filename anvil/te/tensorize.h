// The matching half of Stage::tensorize, used by schedule_to_loops (internal to anvil/te).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "anvil/arith/bound.h"
#include "anvil/ir/stmt.h"
#include "anvil/te/tensor_intrin.h"

namespace anvil::te {

// `intrin`'s code in place of the update of stage `stage` over `loops` (the tensorized loops,
// outermost first, with their `extents`): `update` is the stage's Reduce in terms of its loop
// variables, stored into `out` at `out_indices`; `values_of` tells what an integer buffer the
// body reads may hold, `bounds` the ranges of the loops around (which simplify the indices). Throws
// anvil::Error naming the stage, the intrinsic and what differs when the loops, the body or the
// values do not match the declaration.
ir::Stmt tensorize_update(const std::string& stage, const TensorIntrin& intrin,
                          const std::vector<IterVar>& loops, const std::vector<Expr>& extents,
                          const ir::Reduce& update, const Buffer& out,
                          const std::vector<Expr>& out_indices,
                          const std::function<ValueRange(const Buffer&)>& values_of,
                          const arith::VarBounds& bounds);

}  // namespace anvil::te
