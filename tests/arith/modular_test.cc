#include "anvil/arith/modular.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "anvil/ir/op.h"
#include "anvil/ir/printer.h"
#include "testing/random_int_expr.h"

namespace anvil::arith {
namespace {

using ir::Buffer;
using ir::DataType;
using ir::Expr;
using ir::Var;

constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

ModularSet set(int64_t coeff, int64_t base) {
  return ModularSet::make(coeff, base);
}

Expr i64(int64_t v) {
  return ir::make_const(DataType::Int64(), v);
}

// ---------------------------------------------------------------------------------------------
// ModularSet

TEST(ModularSet, MakeNormalizesSignAndResidue) {
  EXPECT_EQ(ModularSet::make(-8, 13), (ModularSet{8, 5}));
  EXPECT_EQ(ModularSet::make(8, -3), (ModularSet{8, 5}));
  EXPECT_EQ(ModularSet::make(1, 17), ModularSet::everything());
  EXPECT_EQ(ModularSet::make(0, -3), ModularSet::single(-3));
}

TEST(ModularSet, MakeWithInt64MinCoefficientStaysSound) {
  // 2^63 does not fit in int64; a divisor of it does.
  ModularSet m = ModularSet::make(kInt64Min, 5);
  EXPECT_GT(m.coeff, 0);
  EXPECT_EQ((uint64_t{1} << 63) % static_cast<uint64_t>(m.coeff), 0u);
  EXPECT_EQ(m.base, 5);
}

TEST(ModularSet, Printing) {
  std::ostringstream os;
  os << set(8, 4) << " " << ModularSet::single(-3) << " " << set(4, 0) << " "
     << ModularSet::everything();
  EXPECT_EQ(os.str(), "{8k + 4} {-3} {4k} {1k}");
}

// ---------------------------------------------------------------------------------------------
// Leaves

TEST(ModularSetOf, IntImmIsSingle) {
  EXPECT_EQ(modular_set_of(Expr(7)), ModularSet::single(7));
}

TEST(ModularSetOf, VariableTakesItsSetFromTheMap) {
  Var x("x");
  EXPECT_EQ(modular_set_of(x, {{x.get(), set(4, 1)}}), set(4, 1));
}

TEST(ModularSetOf, VariableAbsentFromTheMapIsUnconstrained) {
  EXPECT_EQ(modular_set_of(Var("x")), ModularSet::everything());
}

// ---------------------------------------------------------------------------------------------
// Arithmetic

TEST(ModularSetOf, ScaledAndShiftedVariable) {
  Var x("x");
  EXPECT_EQ(modular_set_of(x * 8 + 4), set(8, 4));
  EXPECT_EQ(modular_set_of(4 - x * 8), set(8, 4));
}

TEST(ModularSetOf, AddTakesTheCommonDivisor) {
  Var x("x"), y("y");
  // 6a + 1 + 4b + 3 = 2(3a + 2b + 2).
  EXPECT_EQ(modular_set_of(x * 6 + 1 + (y * 4 + 3)), set(2, 0));
}

TEST(ModularSetOf, SubtractionOfResidues) {
  Var x("x"), y("y");
  EXPECT_EQ(modular_set_of((x * 12 + 1) - (y * 8 + 7)), set(4, 2));
}

TEST(ModularSetOf, ConstantsFold) {
  EXPECT_EQ(modular_set_of(Expr(3) * 5 - 2), ModularSet::single(13));
}

TEST(ModularSetOf, MultiplicationOfTwoSets) {
  Var x("x"), y("y");
  // (4a + 1)(6b + 2) = 24ab + 8a + 6b + 2.
  EXPECT_EQ(modular_set_of((x * 4 + 1) * (y * 6 + 2)), set(2, 0));
  VarModular vars{{x.get(), set(4, 2)}, {y.get(), set(6, 3)}};
  // (4a + 2)(6b + 3) = 24ab + 12a + 12b + 6.
  EXPECT_EQ(modular_set_of(x * y, vars), set(12, 6));
}

TEST(ModularSetOf, OverflowingMultiplicationKnowsNothing) {
  Var x("x", DataType::Int64());
  Expr big = i64(int64_t{1} << 40);
  EXPECT_EQ(modular_set_of(x * big), set(int64_t{1} << 40, 0));
  EXPECT_EQ(modular_set_of(x * big * big), ModularSet::everything());
  EXPECT_EQ(modular_set_of(i64(kInt64Max) * i64(2)), ModularSet::everything());
}

TEST(ModularSetOf, OverflowingConstantSumKnowsNothing) {
  EXPECT_EQ(modular_set_of(i64(kInt64Max) + i64(1)), ModularSet::everything());
  EXPECT_EQ(modular_set_of(i64(kInt64Min) - i64(1)), ModularSet::everything());
}

// ---------------------------------------------------------------------------------------------
// Division and modulo

TEST(ModularSetOf, FloorDivByDivisorOfTheCoefficient) {
  Var x("x");
  EXPECT_EQ(modular_set_of(floordiv(x * 8 + 4, 4)), set(2, 1));
  EXPECT_EQ(modular_set_of(floordiv(x * 8 + 7, 4)), set(2, 1));
  EXPECT_EQ(modular_set_of(floordiv(x * 8 + 4, -4)), set(2, 1));  // -2x - 1
}

TEST(ModularSetOf, FloorDivByOtherConstantKnowsNothing) {
  Var x("x");
  EXPECT_EQ(modular_set_of(floordiv(x * 6 + 1, 4)), ModularSet::everything());
}

TEST(ModularSetOf, DivisionByNonConstantKnowsNothing) {
  Var x("x"), y("y");
  EXPECT_EQ(modular_set_of(floordiv(x * 8, y), {{y.get(), set(0, 4)}}), set(2, 0));
  EXPECT_EQ(modular_set_of(floordiv(x * 8, y)), ModularSet::everything());
  EXPECT_EQ(modular_set_of(floormod(x * 8, y)), ModularSet::everything());
}

TEST(ModularSetOf, DivisionByZeroKnowsNothing) {
  Var x("x");
  EXPECT_EQ(modular_set_of(floordiv(x * 8, 0)), ModularSet::everything());
  EXPECT_EQ(modular_set_of(floormod(x * 8, 0)), ModularSet::everything());
}

TEST(ModularSetOf, FloorModByDivisorOfTheCoefficientIsSingle) {
  Var x("x");
  EXPECT_EQ(modular_set_of(floormod(x * 8 + 3, 4)), ModularSet::single(3));
  EXPECT_EQ(modular_set_of(floormod(x * 8 + 3, -4)), ModularSet::single(-1));
}

TEST(ModularSetOf, FloorModKeepsTheCommonResidue) {
  Var x("x");
  EXPECT_EQ(modular_set_of(floormod(x * 6 + 1, 4)), set(2, 1));
  EXPECT_EQ(modular_set_of(floormod(x * 3 + 1, 4)), ModularSet::everything());
}

TEST(ModularSetOf, Int64MinDividedByMinusOneKnowsNothing) {
  EXPECT_EQ(modular_set_of(floordiv(i64(kInt64Min), i64(-1))), ModularSet::everything());
  EXPECT_EQ(modular_set_of(truncdiv(i64(kInt64Min), i64(-1))), ModularSet::everything());
  EXPECT_EQ(modular_set_of(floormod(i64(kInt64Min), i64(-1))), ModularSet::single(0));
  EXPECT_EQ(modular_set_of(truncmod(i64(kInt64Min), i64(-1))), ModularSet::single(0));
}

TEST(ModularSetOf, TruncDivIsExactOnMultiples) {
  Var x("x");
  EXPECT_EQ(modular_set_of(truncdiv(x * 8 + 4, 4)), set(2, 1));
  // (8x + 5) / 4 rounds up below zero and down above it.
  EXPECT_EQ(modular_set_of(truncdiv(x * 8 + 5, 4)), ModularSet::everything());
}

TEST(ModularSetOf, TruncModOfMultipleIsZero) {
  Var x("x");
  EXPECT_EQ(modular_set_of(truncmod(x * 8, 4)), ModularSet::single(0));
  // truncmod(8x + 3, 4) is 3 or -1.
  EXPECT_EQ(modular_set_of(truncmod(x * 8 + 3, 4)), set(4, 3));
  EXPECT_EQ(modular_set_of(truncmod(x * 6 + 1, 4)), set(2, 1));
}

// ---------------------------------------------------------------------------------------------
// Unions, vectors, lets

TEST(ModularSetOf, MinMaxSelectUniteBothSides) {
  Var x("x"), c("c", DataType::Bool());
  EXPECT_EQ(modular_set_of(select(c, x * 8 + 1, x * 4 + 5)), set(4, 1));
  EXPECT_EQ(modular_set_of(min(x * 8 + 1, x * 12 + 3)), set(2, 1));
  EXPECT_EQ(modular_set_of(max(x * 8 + 1, 9)), set(8, 1));
  EXPECT_EQ(modular_set_of(max(Expr(3), 3)), ModularSet::single(3));
}

TEST(ModularSetOf, SelectWithConstantConditionTakesOneSide) {
  Var x("x");
  EXPECT_EQ(modular_set_of(select(ir::make_bool(true), x * 8 + 1, x)), set(8, 1));
}

TEST(ModularSetOf, RampUnitesItsLanes) {
  Var x("x");
  EXPECT_EQ(modular_set_of(ir::Ramp::make(x * 8, 2, 4)), set(2, 0));
  EXPECT_EQ(modular_set_of(ir::Ramp::make(x * 8 + 4, 8, 4)), set(8, 4));
}

TEST(ModularSetOf, BroadcastIsItsValue) {
  Var x("x");
  EXPECT_EQ(modular_set_of(ir::Broadcast::make(x * 8 + 4, 4)), set(8, 4));
}

TEST(ModularSetOf, LetBindsItsVariable) {
  Var x("x"), v("v");
  EXPECT_EQ(modular_set_of(ir::Let::make(v, x * 4, v * 2 + 1)), set(8, 1));
}

TEST(ModularSetOf, LetBindingEndsWithItsBody) {
  Var v("v");
  VarModular vars{{v.get(), set(0, 100)}};
  EXPECT_EQ(modular_set_of(ir::Let::make(v, 1, v) + v, vars), ModularSet::single(101));
}

TEST(ModularSetOf, OtherExpressionsKnowNothing) {
  Buffer a = Buffer::make("A", DataType::Int32(), {16});
  Var x("x");
  EXPECT_EQ(modular_set_of(ir::Load::make(a, {Expr(0)})), ModularSet::everything());
  EXPECT_EQ(modular_set_of(x * 4 < 3), ModularSet::everything());
  EXPECT_EQ(modular_set_of(Var("f", DataType::Float32()) * 4.0f), ModularSet::everything());
}

// ---------------------------------------------------------------------------------------------
// Types

TEST(ModularSetOf, WrappingArithmeticKeepsPowersOfTwo) {
  Var u("u", DataType::UInt(8));
  Expr four = ir::make_const(DataType::UInt(8), int64_t{4});
  Expr three = ir::make_const(DataType::UInt(8), int64_t{3});
  EXPECT_EQ(modular_set_of(u * four), set(4, 0));
  EXPECT_EQ(modular_set_of(u * three), ModularSet::everything());  // 3 does not divide 256
  EXPECT_EQ(modular_set_of(u * ir::make_const(DataType::UInt(8), int64_t{12})), set(4, 0));
}

TEST(ModularSetOf, WrappingConstantsWrap) {
  Expr a = ir::make_const(DataType::UInt(8), int64_t{200});
  Expr b = ir::make_const(DataType::UInt(8), int64_t{100});
  EXPECT_EQ(modular_set_of(a + b), ModularSet::single(44));
  EXPECT_EQ(modular_set_of(b - a), ModularSet::single(156));
  Expr c = ir::make_const(DataType::Int(8), int64_t{100});
  EXPECT_EQ(modular_set_of(c + c), ModularSet::single(-56));
}

TEST(ModularSetOf, Uint64NegativeConstantIsNotKeptAsSingle) {
  // 1 - 2 in uint64 is 2^64 - 1, which int64 cannot hold.
  Expr one = ir::make_const(DataType::UInt(64), int64_t{1});
  Expr two = ir::make_const(DataType::UInt(64), int64_t{2});
  ModularSet m = modular_set_of(one - two);
  EXPECT_FALSE(m.is_single());
  EXPECT_EQ(m.base, m.coeff - 1);
}

TEST(ModularSetOf, WideningCastKeepsTheSet) {
  Var x("x");
  EXPECT_EQ(modular_set_of(cast(DataType::Int64(), x * 3 + 1)), set(3, 1));
  EXPECT_EQ(modular_set_of(cast(DataType::Int32(), ir::make_bool(true))), ModularSet::single(1));
}

TEST(ModularSetOf, NarrowingCastKeepsPowersOfTwo) {
  Var x("x", DataType::Int64());
  EXPECT_EQ(modular_set_of(cast(DataType::Int32(), x * i64(3))), ModularSet::everything());
  EXPECT_EQ(modular_set_of(cast(DataType::Int32(), x * i64(24) + i64(4))), set(8, 4));
  EXPECT_EQ(modular_set_of(cast(DataType::Int(16), i64(40000))), ModularSet::single(-25536));
  EXPECT_EQ(modular_set_of(cast(DataType::UInt(64), x * i64(3))), ModularSet::everything());
}

TEST(ModularSetOf, CastToBoolTestsForZero) {
  Var x("x");
  EXPECT_EQ(modular_set_of(cast(DataType::Bool(), x * 4 + 1)), ModularSet::single(1));
  EXPECT_EQ(modular_set_of(cast(DataType::Bool(), x * 4)), ModularSet::everything());
  EXPECT_EQ(modular_set_of(cast(DataType::Bool(), Expr(0))), ModularSet::single(0));
}

// ---------------------------------------------------------------------------------------------
// Randomized soundness: random expressions over three variables with known modular sets, each
// evaluated at many points of those sets; every value must lie in modular_set_of.

bool member(const ModularSet& m, __int128 v) {
  if (m.coeff == 0) return v == m.base;
  return (v - m.base) % m.coeff == 0;
}

using testing::Env;
using testing::RandomIntExprs;
using testing::RandomIntOptions;

TEST(ModularSetOf, RandomExpressionsStayInTheirSets) {
  Var x("x"), y("y"), z("z");
  VarModular vars{{x.get(), set(4, 1)}, {y.get(), set(6, 2)}, {z.get(), ModularSet::everything()}};
  RandomIntExprs gen(0x5eed, {x, y, z}, RandomIntOptions{6, {1, 2, 3, 4, 6, 8, 12, 16}, true});
  int known = 0;
  constexpr int kExprs = 4000;
  for (int n = 0; n < kExprs; ++n) {
    Expr e = gen.expr(static_cast<int>(gen.uniform(1, 4)));
    ModularSet m = modular_set_of(e, vars);
    known += !m.is_everything();
    for (int p = 0; p < 60; ++p) {
      Env env{{x.get(), 4 * gen.uniform(-6, 6) + 1},
              {y.get(), 6 * gen.uniform(-4, 4) + 2},
              {z.get(), gen.uniform(-25, 25)}};
      int64_t value = testing::eval_int(e, env);
      ASSERT_TRUE(member(m, value)) << e << " = " << value << " not in " << m;
    }
  }
  // Not a soundness requirement, but a guard against an analysis that quietly gives up.
  EXPECT_GT(known, kExprs / 4);
}

// Sets with coefficients and residues up to the int64 limits, combined by every rule: where
// the true result fits in int64, it must lie in the computed set.
TEST(ModularSetOf, SetsNearTheInt64LimitsStaySound) {
  const int64_t values[] = {0,
                            1,
                            2,
                            3,
                            4,
                            6,
                            12,
                            int64_t{1} << 31,
                            int64_t{3} << 40,
                            int64_t{1} << 62,
                            kInt64Max,
                            kInt64Min,
                            -7,
                            -(int64_t{1} << 62)};
  constexpr int kValues = sizeof(values) / sizeof(values[0]);
  std::mt19937_64 rng(11);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  Var x("x", DataType::Int64()), y("y", DataType::Int64());
  for (int n = 0; n < 10000; ++n) {
    ModularSet mx = set(values[pick(0, kValues - 1)], values[pick(0, kValues - 1)]);
    ModularSet my = set(values[pick(0, kValues - 1)], values[pick(0, kValues - 1)]);
    int64_t k = values[pick(0, kValues - 1)];
    if (k == 0) k = -1;
    std::vector<Expr> exprs = {x + y,
                               x - y,
                               x * y,
                               floordiv(x, i64(k)),
                               floormod(x, i64(k)),
                               truncdiv(x, i64(k)),
                               truncmod(x, i64(k)),
                               min(x, y)};
    VarModular vars{{x.get(), mx}, {y.get(), my}};
    for (size_t i = 0; i < exprs.size(); ++i) {
      ModularSet m = modular_set_of(exprs[i], vars);
      for (int p = 0; p < 10; ++p) {
        __int128 a = static_cast<__int128>(mx.coeff) * pick(-3, 3) + mx.base;
        __int128 b = static_cast<__int128>(my.coeff) * pick(-3, 3) + my.base;
        if (a < kInt64Min || a > kInt64Max || b < kInt64Min || b > kInt64Max) continue;
        // Divisions take the constant k as their divisor, the others y's value b.
        bool divides = i >= 3 && i <= 6;
        __int128 r = testing::eval_wide(exprs[i].node_type(), a, divides ? __int128{k} : b);
        if (r < kInt64Min || r > kInt64Max) continue;  // overflows int64: assumed not to happen
        ASSERT_TRUE(member(m, r)) << exprs[i] << " with x in " << mx << ", y in " << my
                                  << ", k = " << k << ": " << static_cast<int64_t>(a) << ", "
                                  << static_cast<int64_t>(b) << " gives " << static_cast<int64_t>(r)
                                  << ", not in " << m;
      }
    }
  }
}

}  // namespace
}  // namespace anvil::arith
