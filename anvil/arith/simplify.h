// The simplifier: constant folding, a canonical form for affine integer arithmetic, and rewrite
// rules for division, modulo, min/max, comparisons, select and logic, using what the ranges of
// loop variables prove. It never makes an expression larger (in node count).
#pragma once

#include "anvil/arith/bound.h"
#include "anvil/ir/stmt.h"

namespace anvil::arith {

// `bounds` gives known ranges of free variables; loops and lets inside the IR add their own.
ir::Expr simplify(const ir::Expr& e, const VarBounds& bounds = {});
ir::Stmt simplify(const ir::Stmt& s, const VarBounds& bounds = {});

// True when `condition` (a scalar bool) simplifies to true under `bounds`. False means "not
// proven", not "false".
bool can_prove(const ir::Expr& condition, const VarBounds& bounds = {});

}  // namespace anvil::arith
