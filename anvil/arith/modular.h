// Divisibility analysis: for an integer expression, a modulus and residue it always satisfies.
// `x*8 + 4` is {8k + 4}: 4 modulo 8.
#pragma once

#include <cstdint>
#include <ostream>
#include <unordered_map>

#include "anvil/ir/expr.h"

namespace anvil::arith {

// The set { coeff*k + base : k any integer }. Normalized: coeff >= 0, and 0 <= base < coeff when
// coeff > 0. coeff == 0 is the single value `base`; coeff == 1 (base 0) says nothing.
struct ModularSet {
  int64_t coeff = 1;
  int64_t base = 0;

  static ModularSet everything() { return {1, 0}; }
  static ModularSet single(int64_t v) { return {0, v}; }
  static ModularSet make(int64_t coeff, int64_t base);  // normalizes

  bool is_single() const { return coeff == 0; }
  bool is_everything() const { return coeff == 1; }

  friend bool operator==(const ModularSet& a, const ModularSet& b) = default;
};

std::ostream& operator<<(std::ostream& os, const ModularSet& m);

using VarModular = std::unordered_map<const ir::Variable*, ModularSet>;

// The modular set of an integer expression (its scalar value, or every lane of a Ramp or
// Broadcast). Variables absent from the map are unconstrained. Division and modulo are
// understood by nonzero constants only. As in bounds_of, int32 and int64 arithmetic is assumed
// never to overflow; unsigned and narrower signed arithmetic wraps modulo 2^bits, which keeps
// only the power-of-two part of a coefficient. When a product or sum of the analysis itself
// would overflow int64, the answer is everything.
ModularSet modular_set_of(const ir::Expr& e, const VarModular& vars = {});

}  // namespace anvil::arith
