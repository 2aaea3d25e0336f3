// Shared by the randomized arithmetic tests: an independent evaluator of integer IR (int64,
// floordiv/floormod with Python's semantics, written without reference to anvil/arith) and a
// seeded generator of random integer expressions.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <unordered_map>
#include <utility>
#include <vector>

#include "anvil/ir/op.h"
#include "anvil/ir/printer.h"

namespace anvil::testing {

using ir::Expr;
using ir::Var;

using Env = std::unordered_map<const ir::Variable*, int64_t>;

inline int64_t floordiv_ref(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
inline int64_t floormod_ref(int64_t a, int64_t b) {
  return a - floordiv_ref(a, b) * b;
}

inline int64_t eval_int(const Expr& e, Env& env) {
  auto binary = [&](const auto* op) {
    return std::pair{eval_int(op->a, env), eval_int(op->b, env)};
  };
  if (const auto* op = e.as<ir::IntImm>()) return op->value;
  if (const auto* op = e.as<ir::Variable>()) return env.at(op);
  if (const auto* op = e.as<ir::Add>()) {
    auto [a, b] = binary(op);
    return a + b;
  }
  if (const auto* op = e.as<ir::Sub>()) {
    auto [a, b] = binary(op);
    return a - b;
  }
  if (const auto* op = e.as<ir::Mul>()) {
    auto [a, b] = binary(op);
    return a * b;
  }
  if (const auto* op = e.as<ir::FloorDiv>()) {
    auto [a, b] = binary(op);
    return floordiv_ref(a, b);
  }
  if (const auto* op = e.as<ir::FloorMod>()) {
    auto [a, b] = binary(op);
    return floormod_ref(a, b);
  }
  if (const auto* op = e.as<ir::TruncDiv>()) {
    auto [a, b] = binary(op);
    return a / b;
  }
  if (const auto* op = e.as<ir::TruncMod>()) {
    auto [a, b] = binary(op);
    return a % b;
  }
  if (const auto* op = e.as<ir::Min>()) {
    auto [a, b] = binary(op);
    return std::min(a, b);
  }
  if (const auto* op = e.as<ir::Max>()) {
    auto [a, b] = binary(op);
    return std::max(a, b);
  }
  if (const auto* op = e.as<ir::EQ>()) {
    auto [a, b] = binary(op);
    return a == b;
  }
  if (const auto* op = e.as<ir::NE>()) {
    auto [a, b] = binary(op);
    return a != b;
  }
  if (const auto* op = e.as<ir::LT>()) {
    auto [a, b] = binary(op);
    return a < b;
  }
  if (const auto* op = e.as<ir::LE>()) {
    auto [a, b] = binary(op);
    return a <= b;
  }
  if (const auto* op = e.as<ir::GT>()) {
    auto [a, b] = binary(op);
    return a > b;
  }
  if (const auto* op = e.as<ir::GE>()) {
    auto [a, b] = binary(op);
    return a >= b;
  }
  if (const auto* op = e.as<ir::And>()) {
    auto [a, b] = binary(op);
    return a && b;
  }
  if (const auto* op = e.as<ir::Or>()) {
    auto [a, b] = binary(op);
    return a || b;
  }
  if (const auto* op = e.as<ir::Not>()) return !eval_int(op->a, env);
  if (const auto* op = e.as<ir::Select>()) {
    int64_t c = eval_int(op->condition, env), t = eval_int(op->true_value, env);
    int64_t f = eval_int(op->false_value, env);
    return c ? t : f;
  }
  if (const auto* op = e.as<ir::Let>()) {
    int64_t value = eval_int(op->value, env);
    env[op->var.get()] = value;
    int64_t body = eval_int(op->body, env);
    env.erase(op->var.get());
    return body;
  }
  ADD_FAILURE() << "the evaluator does not know " << e;
  return 0;
}

// A binary integer operation evaluated in 128 bits, so that the result of two int64 operands
// is exact (the tests skip results outside int64). The divisor of a division must not be zero.
inline __int128 eval_wide(ir::IRNodeType op, __int128 a, __int128 b) {
  switch (op) {
    case ir::IRNodeType::Add:
      return a + b;
    case ir::IRNodeType::Sub:
      return a - b;
    case ir::IRNodeType::Mul:
      return a * b;
    case ir::IRNodeType::FloorDiv:
    case ir::IRNodeType::FloorMod: {
      __int128 q = a / b;
      if (a % b != 0 && ((a < 0) != (b < 0))) --q;
      return op == ir::IRNodeType::FloorDiv ? q : a - q * b;
    }
    case ir::IRNodeType::TruncDiv:
      return a / b;
    case ir::IRNodeType::TruncMod:
      return a % b;
    case ir::IRNodeType::Min:
      return std::min(a, b);
    case ir::IRNodeType::Max:
      return std::max(a, b);
    default:
      ADD_FAILURE() << "eval_wide: not a binary integer operation";
      return 0;
  }
}

// What the generator draws from.
struct RandomIntOptions {
  int64_t max_scale = 4;                                    // x * c with |c| <= max_scale
  std::vector<int> divisors = {1, 2, 3, 4, 5, 6, 7, 8, 9};  // for floordiv, floormod, trunc*
  bool negative_divisors = true;                            // a quarter of divisors negated
};

// Random int32 expressions of + - * by small constants, products of variables, floordiv,
// floormod, truncdiv and truncmod by nonzero constants, min, max, select on comparisons and
// logic, and lets.
class RandomIntExprs {
 public:
  RandomIntExprs(uint64_t seed, std::vector<Var> vars, RandomIntOptions options = {})
      : rng_(seed), vars_(std::move(vars)), options_(std::move(options)) {}

  int64_t uniform(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }

  Expr expr(int depth) {
    if (depth == 0) return leaf();
    switch (uniform(0, 13)) {
      case 0:
      case 1:
        return expr(depth - 1) + expr(depth - 1);
      case 2:
        return expr(depth - 1) - expr(depth - 1);
      case 3:
        return expr(depth - 1) * constant(-options_.max_scale, options_.max_scale);
      case 4:
        return leaf() * leaf();
      case 5:
        return floordiv(expr(depth - 1), divisor());
      case 6:
        return floormod(expr(depth - 1), divisor());
      case 7:
        return truncdiv(expr(depth - 1), divisor());
      case 8:
        return truncmod(expr(depth - 1), divisor());
      case 9:
        return min(expr(depth - 1), expr(depth - 1));
      case 10:
        return max(expr(depth - 1), expr(depth - 1));
      case 11:
      case 12:
        return select(condition(depth - 1), expr(depth - 1), expr(depth - 1));
      default: {
        Var v("t");
        Expr value = expr(depth - 1);
        vars_.push_back(v);
        Expr body = expr(depth - 1);
        vars_.pop_back();
        return ir::Let::make(v, value, body);
      }
    }
  }

 private:
  Expr constant(int64_t lo, int64_t hi) { return Expr(static_cast<int>(uniform(lo, hi))); }
  Expr divisor() {
    int d = options_.divisors[uniform(0, static_cast<int64_t>(options_.divisors.size()) - 1)];
    return Expr(options_.negative_divisors && uniform(0, 3) == 0 ? -d : d);
  }
  Expr leaf() {
    if (uniform(0, 3) == 0) return constant(-9, 9);
    return vars_[uniform(0, static_cast<int64_t>(vars_.size()) - 1)];
  }
  Expr comparison(int depth) {
    Expr a = expr(depth), b = expr(depth);
    switch (uniform(0, 5)) {
      case 0:
        return a < b;
      case 1:
        return a <= b;
      case 2:
        return a > b;
      case 3:
        return a >= b;
      case 4:
        return a == b;
      default:
        return a != b;
    }
  }
  Expr condition(int depth) {
    switch (uniform(0, 5)) {
      case 0:
        return comparison(depth) && comparison(depth);
      case 1:
        return comparison(depth) || comparison(depth);
      case 2:
        return !comparison(depth);
      default:
        return comparison(depth);
    }
  }

  std::mt19937_64 rng_;
  std::vector<Var> vars_;
  RandomIntOptions options_;
};

}  // namespace anvil::testing
