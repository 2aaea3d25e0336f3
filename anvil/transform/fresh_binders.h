// Copies of a statement that bind fresh variables: a pass that duplicates code (unrolling,
// loop partitioning) gives each copy its own loop variables, let variables and allocations, so
// that every binder in the program still binds a variable of its own.
#pragma once

#include "anvil/ir/stmt.h"

namespace anvil::transform {

// `s` with every variable it binds (For, LetStmt, Let, and the buffer of an Allocate) replaced
// by a new variable of the same name and type; an allocated buffer gets a new Buffer, and the
// loads and stores of it use that one. Free variables and free buffers are kept.
ir::Stmt with_fresh_binders(const ir::Stmt& s);

}  // namespace anvil::transform
