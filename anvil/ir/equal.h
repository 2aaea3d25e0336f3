// Structural equality, hashing and ordering of IR.
//
// Equality and hashing treat bound variables up to renaming: `let x = 1 in x + y` equals
// `let z = 1 in z + y`, and two loops that differ only in their loop variable are equal. Free
// variables are equal only to themselves. Variables are bound by Let, LetStmt, For, the axes of
// a Reduce, the lhs/rhs of a reducer, and the buffers of an Allocate. Two Allocates match when
// their buffers have the same element type, shape, strides and scope (names do not count), and
// the accesses in their bodies then match through that pairing; a buffer that no Allocate binds
// is equal only to itself.
//
// Immediates compare by type and value; floats by bit pattern, so a NaN equals the same NaN and
// -0.0 differs from 0.0. Two undefined handles are equal.
#pragma once

#include <cstddef>

#include "anvil/ir/stmt.h"

namespace anvil::ir {

bool structural_equal(const Expr& a, const Expr& b);
bool structural_equal(const Stmt& a, const Stmt& b);

// Consistent with structural_equal: equal trees hash equally.
size_t structural_hash(const Expr& e);
size_t structural_hash(const Stmt& s);

// A total order on expressions (negative, zero or positive, like strcmp), deterministic within
// a run: by node type, then type (code, bits, lanes), then fields; variables by creation order;
// immediates by value (floats: -inf < ... < -0.0 < 0.0 < ... < inf, NaNs at the ends); buffers
// by name, then creation order. An undefined handle comes first. Zero exactly when the trees are
// identical (no renaming). The simplifier sorts operands of commutative operators by it.
int structural_compare(const Expr& a, const Expr& b);

}  // namespace anvil::ir
