// The canonical form of affine integer arithmetic: a sum of scaled atoms plus a constant,
// c0 + c1*t1 + ... + cn*tn, where an atom is any expression that is not itself a sum, a
// difference or a product by a constant (a variable, a floordiv, a min, a product of two
// non-constants, ...). Atoms are kept sorted and unique, so two affine expressions that are
// equal as polynomials have the same LinearSum, and x - x or (a + b) - b cancel.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "anvil/ir/expr.h"

namespace anvil::arith {

struct LinearTerm {
  ir::Expr atom;
  int64_t coeff;
};

struct LinearSum {
  ir::DataType type;
  std::vector<LinearTerm> terms;  // sorted by structural_compare of atom, no zero coefficients
  int64_t constant = 0;

  bool is_constant() const { return terms.empty(); }

  // this + scale * other; nullopt on int64 overflow.
  static std::optional<LinearSum> combine(const LinearSum& a, const LinearSum& b, int64_t scale);
};

// The linear form of a scalar signed-integer expression; nullopt when the type is not a scalar
// signed integer or a coefficient overflows int64.
std::optional<LinearSum> linearize(const ir::Expr& e);

// Rebuilds an expression. Atoms with the same absolute coefficient share one multiplication,
// (x + y)*3 rather than x*3 + y*3; a negative constant is subtracted. Returns an undefined Expr
// when a coefficient does not fit in the type.
ir::Expr rebuild(const LinearSum& sum);

// The greatest common divisor of the coefficients of the terms (0 when there are none).
int64_t coeff_gcd(const LinearSum& sum);

}  // namespace anvil::arith
