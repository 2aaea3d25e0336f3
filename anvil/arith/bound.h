// Integer bound analysis: the closed interval an integer expression can take, given intervals
// for its free variables.
#pragma once

#include <cstdint>
#include <limits>
#include <ostream>
#include <unordered_map>

#include "anvil/ir/expr.h"

namespace anvil::arith {

// A closed interval [min, max] of int64. The extreme int64 values stand for -inf and +inf, and
// arithmetic on bounds saturates there, so an unknown end stays unknown instead of wrapping.
struct IntBounds {
  static constexpr int64_t kNegInf = std::numeric_limits<int64_t>::min();
  static constexpr int64_t kPosInf = std::numeric_limits<int64_t>::max();

  int64_t min = kNegInf;
  int64_t max = kPosInf;

  static IntBounds everything() { return {}; }
  static IntBounds single(int64_t v) { return {v, v}; }
  // [min, min + extent - 1], the values of a loop variable.
  static IntBounds from_range(int64_t min, int64_t extent) { return {min, min + extent - 1}; }

  bool has_lower() const { return min != kNegInf; }
  bool has_upper() const { return max != kPosInf; }
  bool is_single() const { return min == max && has_lower(); }
  bool contains(int64_t v) const { return min <= v && v <= max; }

  friend bool operator==(const IntBounds& a, const IntBounds& b) = default;
};

std::ostream& operator<<(std::ostream& os, const IntBounds& b);

// Known intervals of variables. A variable absent from the map ranges over its whole type.
using VarBounds = std::unordered_map<const ir::Variable*, IntBounds>;

// The interval of an integer or bool expression (over all lanes of a vector). Loads and calls
// range over their type; a Let's variable takes its value's interval; float and handle
// expressions get everything. A comparison or logic node is {0}, {1} or [0, 1].
//
// Overflow: int32 and int64 arithmetic is assumed never to overflow (as in Halide and TVM), so
// its interval is the mathematical one, cut to the type's range. Unsigned and narrower signed
// arithmetic wraps, so a result that may leave its type's range gets the whole range. A cast
// keeps its operand's interval when that fits the target type, and the target's range otherwise.
IntBounds bounds_of(const ir::Expr& e, const VarBounds& vars = {});

}  // namespace anvil::arith
