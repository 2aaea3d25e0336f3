// Randomized equivalence of the simplifier: random integer expressions over variables with
// known ranges are simplified, then evaluated before and after at random points in those ranges
// by an independent evaluator. The values must agree and the simplified form must never be
// larger. The generator and the evaluator are shared with the bound and modular tests
// (tests/testing/random_int_expr.h). Some expressions carry planted redundancies whose simplified
// size is known, and at least 90% of those must reach it.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>

#include "anvil/arith/simplify.h"
#include "anvil/ir/op.h"
#include "anvil/ir/printer.h"
#include "testing/random_int_expr.h"

namespace anvil::arith {
namespace {

using namespace ir;

TEST(SimplifyRandom, EquivalentAndNeverLarger) {
  Var x("x"), y("y"), z("z");
  struct VarRange {
    Var var;
    int64_t min, max;
  };
  std::vector<VarRange> vars = {{x, -8, 8}, {y, 0, 15}, {z, -20, 3}};
  VarBounds bounds;
  for (const VarRange& v : vars) bounds[v.var.get()] = {v.min, v.max};

  testing::RandomIntExprs gen(20261130, {x, y, z});
  testing::Env env;
  constexpr int kExprs = 12000;
  constexpr int kPoints = 16;
  int planted = 0, reached = 0, shrunk = 0, failures = 0;

  for (int n = 0; n < kExprs && failures < 10; ++n) {
    Expr e = gen.expr(n % 2 ? 3 : 4);
    // Every third expression carries a planted redundancy around e (and f); `expected` is the
    // node count it must reduce to.
    int64_t expected = -1;
    if (n % 3 == 0) {
      Expr f = gen.expr(2);
      int64_t size_e = node_count(simplify(e, bounds));
      switch (gen.uniform(0, 10)) {
        case 0:
          e = e - e, expected = 1;
          break;
        case 1:
          e = (e + f) - f, expected = size_e;
          break;
        case 2:
          e = e * 1, expected = size_e;
          break;
        case 3:
          e = floordiv(e * 4, 4), expected = size_e;
          break;
        case 4:
          e = floormod(e * 4, 4), expected = 1;
          break;
        case 5:
          e = max(e, e), expected = size_e;
          break;
        case 6:
          e = (f + e) - (e + f), expected = 1;
          break;
        case 7:
          e = e * 2 - e, expected = size_e;
          break;
        case 8:
          e = min(e, e + 1), expected = size_e;
          break;
        case 9:
          e = select(e < e + 1, e, f), expected = size_e;
          break;
        default:
          e = 0 + e, expected = size_e;
          break;
      }
    }
    Expr s = simplify(e, bounds);
    int64_t before = node_count(e), after = node_count(s);
    EXPECT_LE(after, before) << "simplification grew " << e << "\n  into " << s;
    if (after > before) ++failures;
    if (after < before) ++shrunk;
    if (expected >= 0) {
      ++planted;
      if (after <= expected) ++reached;
    }
    for (int p = 0; p < kPoints; ++p) {
      for (const VarRange& v : vars) env[v.var.get()] = gen.uniform(v.min, v.max);
      int64_t want = testing::eval_int(e, env), got = testing::eval_int(s, env);
      if (want != got) {
        ++failures;
        ADD_FAILURE() << "value differs: " << e << " = " << want << "\n  simplified " << s << " = "
                      << got;
        break;
      }
    }
  }
  double fraction = planted ? static_cast<double>(reached) / planted : 0.0;
  std::printf(
      "random simplifier test: %d expressions, %d shrunk, planted redundancies reached "
      "their canonical size in %d of %d (%.1f%%)\n",
      kExprs, shrunk, reached, planted, 100.0 * fraction);
  EXPECT_GE(fraction, 0.90);
  EXPECT_EQ(failures, 0);
}

}  // namespace
}  // namespace anvil::arith
