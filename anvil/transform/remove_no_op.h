// Removes statements that do nothing: Evaluate of a constant, a store of the value just loaded
// from the same element, loops of no iterations or of empty bodies, branches with empty arms,
// and lets, annotations and allocations around nothing. What remains of a statement that does
// nothing at all is Evaluate(0).
#pragma once

#include "anvil/ir/stmt.h"

namespace anvil::transform {

ir::Stmt remove_no_op(const ir::Stmt& s);

// True for Evaluate of a constant (the canonical empty statement) and undefined statements.
bool is_no_op(const ir::Stmt& s);

}  // namespace anvil::transform
