// Integer division rounding toward negative infinity, and its remainder (the divisor's sign), as
// the IR's floordiv and floormod define them; for rules that compute with index arithmetic.
#pragma once

#include <cstdint>

namespace anvil {

// a / b rounded down; b != 0.
inline int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

// a - floor_div(a, b) * b: zero or of b's sign; b != 0.
inline int64_t floor_mod(int64_t a, int64_t b) {
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

// a / b rounded up; b != 0.
inline int64_t ceil_div(int64_t a, int64_t b) {
  return -floor_div(-a, b);
}

}  // namespace anvil
