// Conveniences for building expressions: operators that match a literal to the type of the
// other operand (so `i * 4 + 1` works for any integer i), constant makers and tests.
#pragma once

#include <cstdint>
#include <optional>

#include "anvil/ir/expr.h"

namespace anvil::ir {

// A constant of type t (a Broadcast when t is a vector). Throws when t cannot hold it.
Expr make_const(DataType t, int64_t value);
Expr make_const(DataType t, double value);
inline Expr make_const(DataType t, int value) {
  return make_const(t, int64_t{value});
}
Expr make_zero(DataType t);
Expr make_one(DataType t);
Expr make_bool(bool value, int lanes = 1);

// The value of an integer or bool constant, looking through Broadcast.
std::optional<int64_t> as_const_int(const Expr& e);
std::optional<double> as_const_float(const Expr& e);
bool is_const_int(const Expr& e, int64_t value);
inline bool is_zero(const Expr& e) {
  return is_const_int(e, 0);
}
inline bool is_one(const Expr& e) {
  return is_const_int(e, 1);
}
// Any integer, bool or float immediate (or a Broadcast of one).
bool is_const(const Expr& e);

// Makes a and b the same type when one of them is a literal: the literal takes the other's type
// (and lanes). Two non-literals of different types are left for make() to reject.
void match_types(Expr& a, Expr& b);

Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
Expr operator/(Expr a, Expr b);  // true division (floats)
Expr operator-(Expr a);
Expr operator<(Expr a, Expr b);
Expr operator<=(Expr a, Expr b);
Expr operator>(Expr a, Expr b);
Expr operator>=(Expr a, Expr b);
Expr operator==(Expr a, Expr b);
Expr operator!=(Expr a, Expr b);
Expr operator&&(Expr a, Expr b);
Expr operator||(Expr a, Expr b);
Expr operator!(Expr a);

Expr floordiv(Expr a, Expr b);
Expr floormod(Expr a, Expr b);
Expr truncdiv(Expr a, Expr b);
Expr truncmod(Expr a, Expr b);
Expr min(Expr a, Expr b);
Expr max(Expr a, Expr b);
Expr select(Expr condition, Expr true_value, Expr false_value);
Expr cast(DataType t, Expr value);

// The number of nodes in an expression tree (the simplifier never makes it grow).
int64_t node_count(const Expr& e);

}  // namespace anvil::ir
