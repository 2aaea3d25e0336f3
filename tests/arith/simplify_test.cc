// The simplifier, one rule family per test: a table of identities that must reach a canonical
// form, decisions that need variable ranges, and statement-level simplification.
#include "anvil/arith/simplify.h"

#include <gtest/gtest.h>

#include <limits>

#include "anvil/ir/equal.h"
#include "anvil/ir/op.h"
#include "anvil/ir/printer.h"

namespace anvil::arith {
namespace {

using namespace ir;

struct Case {
  Expr input;
  Expr expected;
};

// Simplifies every input and compares it with its expected canonical form.
void check_table(const std::vector<Case>& cases, const VarBounds& bounds = {}) {
  for (const Case& c : cases) {
    Expr got = simplify(c.input, bounds);
    EXPECT_TRUE(structural_equal(got, c.expected))
        << "simplify(" << c.input << ")\n  got      " << got << "\n  expected " << c.expected;
    EXPECT_LE(node_count(got), node_count(c.input)) << c.input << " grew into " << got;
  }
}

class SimplifyTest : public ::testing::Test {
 protected:
  Var x{"x"}, y{"y"}, z{"z"};
  Var i{"i"}, j{"j"};
  // i in [0, 16), j in [0, 4): the loop variables of a 64-element loop split by 4.
  VarBounds loops{{i.get(), IntBounds::from_range(0, 16)}, {j.get(), IntBounds::from_range(0, 4)}};
};

TEST_F(SimplifyTest, ConstantFolding) {
  check_table({
      {Expr(2) + 3, 5},
      {Expr(7) - 10, -3},
      {Expr(6) * -7, -42},
      {floordiv(Expr(-7), 2), -4},
      {floormod(Expr(-7), 2), 1},
      {truncdiv(Expr(-7), 2), -3},
      {truncmod(Expr(-7), 2), -1},
      {min(Expr(3), 9), 3},
      {max(Expr(3), 9), 9},
      {Expr(2.5f) * 2.0f, 5.0f},
      {Expr(1.0f) / 4.0f, 0.25f},
      {cast(DataType::Float32(), 3), 3.0f},
      {cast(DataType::Int32(), 3.75f), 3},
      {cast(DataType::Int32(), -3.75f), -3},
  });
  // Unsigned arithmetic wraps; signed overflow is left unfolded.
  Expr a = make_const(DataType::UInt(8), int64_t{250}),
       b = make_const(DataType::UInt(8), int64_t{10});
  check_table({{a + b, make_const(DataType::UInt(8), int64_t{4})}});
  Expr big = make_const(DataType::Int32(), int64_t{2147483647});
  Expr sum = big + 1;
  EXPECT_TRUE(structural_equal(simplify(sum), sum)) << simplify(sum);
  // The most negative constant cannot be written as a subtraction of its negation: kept as is.
  Var w("w", DataType::Int64());
  Expr lowest = w + make_const(DataType::Int64(), std::numeric_limits<int64_t>::min());
  EXPECT_TRUE(structural_equal(simplify(lowest), lowest)) << simplify(lowest);
  // Division by a zero constant stays for the run time to report.
  Expr div0 = floordiv(x, 0);
  EXPECT_TRUE(structural_equal(simplify(div0), div0));
}

TEST_F(SimplifyTest, CanonicalAffineForm) {
  check_table({
      {x - x, 0},
      {(x + y) - y, x},
      {(y + x) - y, x},
      {x * 1, x},
      {x * 0, 0},
      {x + 0, x},
      {0 + x, x},
      {(x + 3) + (y - 3), x + y},
      {(y + 3) + (x - 3), x + y},
      {x * 3 + x * 5, x * 8},
      {(x + y) * 3 - y * 3, x * 3},
      {x * 2 - x, x},
      {(x + y) * 2 - (y + x), x + y},
      {x * 3 + y * 3, (x + y) * 3},
      {x - y * 3 - z * 3, x - (y + z) * 3},
      {0 - x * 3, x * -3},
      {5 - (x + 2), 3 - x},
      {(x - 4) + 1, x - 3},
      {(x + y) - (x + y), 0},
      {(x * y) - (y * x), 0},
  });
}

TEST_F(SimplifyTest, DivisionAndModulo) {
  check_table({
      {floordiv(x * 4 + 8, 4), x + 2},
      {floordiv(x * 4, 4), x},
      {floormod(x * 4, 4), 0},
      {floormod(x * 8 + 3, 4), 3},
      {floormod(x * 4 + 6, 4), 2},
      {floordiv(x * 8 + y * 4, 4), x * 2 + y},
      {floordiv(x, 1), x},
      {floormod(x, 1), 0},
      {floordiv(floordiv(x, 4), 8), floordiv(x, 32)},
      {floormod(floormod(x, 8), 4), floormod(x, 4)},
      {floordiv(x, 4) * 4 + floormod(x, 4), x},
      {floormod(x, 4) + floordiv(x, 4) * 4, x},
      {(floordiv(x + y, 8) * 8 + floormod(x + y, 8)) - y, x},
      {floormod(x * 6 + y * 4, 2), 0},
  });
}

TEST_F(SimplifyTest, DivisionUsesRanges) {
  check_table(
      {
          {floordiv(i * 4 + j, 4), i},
          {floormod(i * 4 + j, 4), j},
          {floordiv(j, 4), 0},
          {floormod(j, 8), j},
          {floormod(j + 4, 4), j},
          {floordiv(i * 4 + j + 4, 4), i + 1},
          {truncdiv(i * 4 + j, 4), i},
          {truncmod(i, 32), i},
          {floordiv(i * 4 + j, 4) * 4 + floormod(i * 4 + j, 4), i * 4 + j},
      },
      loops);
}

TEST_F(SimplifyTest, MinMax) {
  check_table({
      {min(x, x + 1), x},
      {max(x, x + 1), x + 1},
      {min(x + 1, x), x},
      {min(x, x), x},
      {max(x - 2, x), x},
      {min(3, x), min(x, 3)},
      {min(min(x, 5), 3), min(x, 3)},
      {max(max(x, 1), 7), max(x, 7)},
      {min(x, max(x, y)), x},
      {max(min(y, x), x), x},
      {min(y, x), min(x, y)},
  });
  check_table({{min(i, 20), i}, {max(i, 20), Expr(20)}, {min(i * 4 + j, 63), i * 4 + j}}, loops);
}

TEST_F(SimplifyTest, ComparisonsProvedFromRanges) {
  check_table({{i * 4 + j < 64, make_bool(true)},
               {i * 4 + j >= 64, make_bool(false)},
               {i * 4 + j <= 62, i * 4 + j <= 62},
               {i < 16, make_bool(true)},
               {j == 7, make_bool(false)},
               {i != -1, make_bool(true)}},
              loops);
  EXPECT_TRUE(can_prove(i * 4 + j < 64, loops));
  EXPECT_FALSE(can_prove(i * 4 + j < 63, loops));
  EXPECT_FALSE(can_prove(i * 4 + j < 64));  // without ranges nothing is known
}

TEST_F(SimplifyTest, ComparisonsCanonical) {
  check_table({
      {x < x + 1, make_bool(true)},
      {x + 1 <= x, make_bool(false)},
      {x == x, make_bool(true)},
      {x * 2 == x * 2 + 1, make_bool(false)},
      {x * 2 + 1 != y * 4, make_bool(true)},
      {x + 2 < y + 5, x < y + 3},
      {x * 4 < 8, x < 2},
      {x * 4 <= 9, x <= 2},
      {x * 4 < 9, x < 3},
      {x > y, y < x},
      {x >= y, y <= x},
      {x - y < 0, x < y},
      {x * 6 == 4, make_bool(false)},
      {x * 3 == 6, x == 2},
  });
}

TEST_F(SimplifyTest, FloatComparisonsAreNotDecidedSymbolically) {
  Var f("f", DataType::Float32());
  // NaN == NaN is false, so f == f must stay.
  Expr eq = f == f;
  EXPECT_TRUE(structural_equal(simplify(eq), eq));
  Expr lt = !(f < 1.0f);
  EXPECT_TRUE(structural_equal(simplify(lt), lt));
  check_table({{Expr(1.0f) < 2.0f, make_bool(true)}, {f * 1.0f, f}, {f - 0.0f, f}});
  Expr plus_zero = f + 0.0f;  // -0.0 + 0.0 is +0.0: not an identity
  EXPECT_TRUE(structural_equal(simplify(plus_zero), plus_zero));
}

TEST_F(SimplifyTest, Logic) {
  Var b("b", DataType::Bool()), c("c", DataType::Bool());
  check_table({
      {b && make_bool(true), b},
      {b && make_bool(false), make_bool(false)},
      {b || make_bool(true), make_bool(true)},
      {b || make_bool(false), b},
      {b && b, b},
      {b && !b, make_bool(false)},
      {!b || b, make_bool(true)},
      {!!b, b},
      {!(x < y), y <= x},
      {!(x <= y), y < x},
      {!(x == y), x != y},
      {(x < x + 1) && c, c},
  });
}

TEST_F(SimplifyTest, Select) {
  Var b("b", DataType::Bool());
  check_table({
      {select(make_bool(true), x, y), x},
      {select(make_bool(false), x, y), y},
      {select(b, x, x), x},
      {select(x < y, 1, 1), 1},
      {select(!b, x, y), select(b, y, x)},
      {select(b, make_bool(true), make_bool(false)), b},
      {select(x < x + 1, x + 0, y), x},
  });
  check_table({{select(i < 16, i, j), i}}, loops);
}

TEST_F(SimplifyTest, Let) {
  Var t("t");
  check_table({
      {Let::make(t, 3, t + x), x + 3},
      {Let::make(t, y, t - y), 0},
      {Let::make(t, x * y, x), x},
  });
  // The bound of a let variable comes from its value.
  Expr e = Let::make(t, j + 4, floordiv(t, 8));
  check_table({{e, 0}}, loops);
}

TEST_F(SimplifyTest, Vectors) {
  check_table({
      {Ramp::make(x, 1, 4) + Broadcast::make(2, 4), Ramp::make(x + 2, 1, 4)},
      {Broadcast::make(x, 4) * Broadcast::make(3, 4), Broadcast::make(x * 3, 4)},
      {Ramp::make(x, 1, 4) * Broadcast::make(4, 4), Ramp::make(x * 4, 4, 4)},
      {Ramp::make(x, 1, 4) - Ramp::make(x, 1, 4), Broadcast::make(0, 4)},
      {Ramp::make(x, 0, 8), Broadcast::make(x, 8)},
      {cast(DataType::Int64(4), Ramp::make(x, 2, 4)),
       Ramp::make(cast(DataType::Int64(), x), make_const(DataType::Int64(), 2), 4)},
  });
}

// A vector index into panels of 16 read 8 lanes at a time (AVX2's floats): each vector stays in
// one panel, so the division and remainder by 16 leave the ramp dense. A ramp that may cross a
// panel boundary (its base not known modulo 16, or its lanes straddling one) keeps them.
TEST_F(SimplifyTest, VectorDivisionInsideOneBlock) {
  auto b16 = Broadcast::make(16, 8);
  check_table({
      {floordiv(Ramp::make(8, 1, 8), b16), Broadcast::make(0, 8)},
      {floormod(Ramp::make(8, 1, 8), b16), Ramp::make(8, 1, 8)},
      {floordiv(Ramp::make(x * 32 + 8, 1, 8), b16), Broadcast::make(x * 2, 8)},
      {floormod(Ramp::make(x * 32 + 8, 1, 8), b16), Ramp::make(8, 1, 8)},
      {floordiv(Broadcast::make(x * 16 + 3, 8), b16), Broadcast::make(x, 8)},
      {floormod(Broadcast::make(x * 16 + 3, 8), b16), Broadcast::make(3, 8)},
      {floordiv(Ramp::make(x * 32 + 12, 1, 8), b16), floordiv(Ramp::make(x * 32 + 12, 1, 8), b16)},
      {floordiv(Ramp::make(x, 1, 8), b16), floordiv(Ramp::make(x, 1, 8), b16)},
      {floormod(Ramp::make(x * 16, 2, 8), b16), Ramp::make(0, 2, 8)},
      {floormod(Ramp::make(x * 16, 3, 8), b16), floormod(Ramp::make(x * 16, 3, 8), b16)},
  });
}

TEST_F(SimplifyTest, NeverLarger) {
  // Forms whose canonical rebuild would be larger than the input stay as they are.
  for (Expr e : {(x + y) * 3 + z, (x + 1) * 4, x * (y + z), floordiv(x + y, 3) * 2 + 1}) {
    Expr s = simplify(e);
    EXPECT_LE(node_count(s), node_count(e)) << e << " became " << s;
  }
}

TEST_F(SimplifyTest, MutatorReturnsSameNodeWhenNothingChanges) {
  // Already canonical (atoms in order): the very same node comes back, here and in a loop.
  Expr e = y + floordiv(x, 3);
  EXPECT_TRUE(simplify(e).same_as(e)) << simplify(e);
  Buffer a = Buffer::make("A", DataType::Int32(), {16});
  Stmt loop = For::make(i, 0, 16, ForKind::kSerial, Store::make(a, e, {i}));
  EXPECT_TRUE(simplify(loop).same_as(loop)) << simplify(loop);
}

// ---------------------------------------------------------------------------------------------
// Statements

TEST_F(SimplifyTest, LoopGuardRemovedByLoopRanges) {
  Buffer a = Buffer::make("A", DataType::Float32(), {64});
  Stmt store = Store::make(a, 1.0f, {i * 4 + j});
  Stmt nest =
      For::make(i, 0, 16, ForKind::kSerial,
                For::make(j, 0, 4, ForKind::kSerial, IfThenElse::make(i * 4 + j < 64, store)));
  Stmt expected =
      For::make(i, 0, 16, ForKind::kSerial, For::make(j, 0, 4, ForKind::kSerial, store));
  Stmt got = simplify(nest);
  EXPECT_TRUE(structural_equal(got, expected)) << got;
}

TEST_F(SimplifyTest, TrivialLoops) {
  Buffer a = Buffer::make("A", DataType::Int32(), {8});
  Stmt body = Store::make(a, i, {i});
  EXPECT_TRUE(
      structural_equal(simplify(For::make(i, 0, 0, ForKind::kSerial, body)), Evaluate::make(0)));
  EXPECT_TRUE(structural_equal(simplify(For::make(i, 3, 1, ForKind::kSerial, body)),
                               Store::make(a, 3, {3})));
}

TEST_F(SimplifyTest, BranchConditionNarrowsRanges) {
  Buffer a = Buffer::make("A", DataType::Int32(), {32});
  Stmt s =
      IfThenElse::make(x < 10, Store::make(a, min(x, 20), {0}), Store::make(a, max(x, 5), {0}));
  Stmt expected = IfThenElse::make(x < 10, Store::make(a, x, {0}), Store::make(a, x, {0}));
  Stmt got = simplify(s);
  EXPECT_TRUE(structural_equal(got, expected)) << got;
}

TEST_F(SimplifyTest, ConstantBranchesAndNoOps) {
  Buffer a = Buffer::make("A", DataType::Int32(), {4});
  Stmt store = Store::make(a, 1, {0});
  EXPECT_TRUE(structural_equal(simplify(IfThenElse::make(x < x + 1, store)), store));
  EXPECT_TRUE(structural_equal(simplify(IfThenElse::make(x < x, store)), Evaluate::make(0)));
  Stmt seq = Seq::make({Evaluate::make(0), store, Evaluate::make(1)});
  EXPECT_TRUE(structural_equal(simplify(seq), store));
  Stmt asserted = AssertStmt::make(x == x, "never fails", store);
  EXPECT_TRUE(structural_equal(simplify(asserted), store));
}

}  // namespace
}  // namespace anvil::arith
