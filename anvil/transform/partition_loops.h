// Loop partitioning: removes tail guards from the main part of a loop.
//
// For a loop `for (v, min, extent)` (constant bounds) whose body holds an IfThenElse with a
// comparison of loop variables among the conjuncts of its condition, the pass finds, by binary
// search with arith::can_prove (using the ranges of the enclosing loops and of the loops between
// v and the branch), the largest prefix [min, k) of the loop on which the comparison holds on
// every iteration, and emits the loop over [min, k) with the comparison removed, then the loop
// over [k, end) with it kept. Where no prefix works but a suffix does (a guard on the first
// iterations, as padding makes), the guarded prefix comes first and the suffix loses the guard.
// The split tail of `for xo: for xi in 8: if (xo*8 + xi < 100)` becomes a guard-free loop over
// the whole blocks and a tail, whose inner loop is partitioned again (the part where the guard
// is always false disappears).
//
// In each part, guards that hold (or fail) on every iteration are resolved. A loop is split only
// when both parts are non-empty; loops bound to threads are never split. A parallel loop is split
// the same way, but its parts become the branches of one parallel loop (if (v < k1) first part
// else if (v < k2) ...), so that a tail runs in parallel with the rest instead of after it.
#pragma once

#include "anvil/ir/stmt.h"

namespace anvil::transform {

ir::Stmt partition_loops(const ir::Stmt& s);

}  // namespace anvil::transform
