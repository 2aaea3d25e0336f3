#include "anvil/arith/bound.h"

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

constexpr int64_t kNegInf = IntBounds::kNegInf;
constexpr int64_t kPosInf = IntBounds::kPosInf;

IntBounds range(int64_t min, int64_t max) {
  return {min, max};
}

// ---------------------------------------------------------------------------------------------
// Leaves

TEST(BoundsOf, IntImmIsSingle) {
  EXPECT_EQ(bounds_of(Expr(7)), IntBounds::single(7));
  EXPECT_EQ(bounds_of(ir::make_bool(true)), IntBounds::single(1));
}

TEST(BoundsOf, VariableTakesItsIntervalFromTheMap) {
  Var x("x");
  EXPECT_EQ(bounds_of(x, {{x.get(), range(-3, 9)}}), range(-3, 9));
}

TEST(BoundsOf, VariableAbsentFromTheMapRangesOverItsType) {
  EXPECT_EQ(bounds_of(Var("x")), range(INT32_MIN, INT32_MAX));
  EXPECT_EQ(bounds_of(Var("u", DataType::UInt(8))), range(0, 255));
  EXPECT_EQ(bounds_of(Var("b", DataType::Bool())), range(0, 1));
  EXPECT_EQ(bounds_of(Var("w", DataType::Int64())), IntBounds::everything());
}

TEST(BoundsOf, Int64ExtremeConstantsAreNotReadAsInfinities) {
  // INT64_MAX is the +inf sentinel; as a constant it must still bound from below soundly.
  Expr big = ir::IntImm::make(DataType::Int64(), kPosInf);
  IntBounds b = bounds_of(big - ir::make_const(DataType::Int64(), int64_t{1}));
  EXPECT_TRUE(b.contains(kPosInf - 1)) << b;
  EXPECT_TRUE(bounds_of(big).contains(kPosInf));
}

// ---------------------------------------------------------------------------------------------
// Arithmetic

TEST(BoundsOf, AffineIndexIsExact) {
  Var i("i"), j("j");
  VarBounds vars{{i.get(), IntBounds::from_range(0, 16)}, {j.get(), IntBounds::from_range(0, 4)}};
  EXPECT_EQ(bounds_of(i * 4 + j, vars), range(0, 63));
}

TEST(BoundsOf, SubtractionPairsOppositeEnds) {
  Var x("x"), y("y");
  EXPECT_EQ(bounds_of(x - y, {{x.get(), range(0, 10)}, {y.get(), range(2, 5)}}), range(-5, 8));
}

TEST(BoundsOf, MultiplicationTakesAllFourCorners) {
  Var x("x"), y("y");
  // Corners: 15, -12, -10, 8.
  EXPECT_EQ(bounds_of(x * y, {{x.get(), range(-3, 2)}, {y.get(), range(-5, 4)}}), range(-12, 15));
}

TEST(BoundsOf, UnboundedSquareSaturatesWithoutOverflow) {
  Var x("x", DataType::Int64());
  EXPECT_EQ(bounds_of(x * x), IntBounds::everything());
  EXPECT_EQ(bounds_of(x * x, {{x.get(), IntBounds::everything()}}), IntBounds::everything());
}

TEST(BoundsOf, OverflowingUpperEndBecomesPlusInfinity) {
  Var x("x", DataType::Int64());
  IntBounds b = bounds_of(x * ir::make_const(DataType::Int64(), int64_t{4}),
                          {{x.get(), range(1, int64_t{1} << 62)}});
  EXPECT_EQ(b.min, 4);
  EXPECT_FALSE(b.has_upper());
}

TEST(BoundsOf, OverflowingLowerEndStaysFinite) {
  // Both ends exceed INT64_MAX: the lower end must not claim +inf (it would be unsound), and
  // the interval must still hold INT64_MAX - 1.
  Var x("x", DataType::Int64());
  IntBounds b = bounds_of(x + ir::make_const(DataType::Int64(), int64_t{100}),
                          {{x.get(), range(kPosInf - 10, kPosInf - 1)}});
  EXPECT_TRUE(b.has_lower());
  EXPECT_FALSE(b.has_upper());
  EXPECT_TRUE(b.contains(kPosInf - 1));
}

TEST(BoundsOf, Int32ArithmeticIsCutToTheTypeRange) {
  Var x("x");
  EXPECT_EQ(bounds_of(x + 1, {{x.get(), range(0, kPosInf)}}), range(1, INT32_MAX));
}

TEST(BoundsOf, UnsignedArithmeticThatMayWrapRangesOverTheType) {
  Var x("x", DataType::UInt(32));
  Expr one = ir::make_const(DataType::UInt(32), int64_t{1});
  EXPECT_EQ(bounds_of(x - one, {{x.get(), range(0, 10)}}), range(0, UINT32_MAX));
  EXPECT_EQ(bounds_of(x - one, {{x.get(), range(1, 10)}}), range(0, 9));
}

TEST(BoundsOf, Uint64OpenAboveMayWrap) {
  Var x("x", DataType::UInt(64));
  Expr one = ir::make_const(DataType::UInt(64), int64_t{1});
  EXPECT_EQ(bounds_of(x + one, {{x.get(), range(5, kPosInf)}}), range(0, kPosInf));
  EXPECT_EQ(bounds_of(x + one, {{x.get(), range(5, 9)}}), range(6, 10));
}

TEST(BoundsOf, Int8ArithmeticWraps) {
  Var x("x", DataType::Int(8));
  EXPECT_EQ(bounds_of(x + 1, {{x.get(), range(0, 127)}}), range(-128, 127));
  EXPECT_EQ(bounds_of(x + 1, {{x.get(), range(0, 100)}}), range(1, 101));
}

// ---------------------------------------------------------------------------------------------
// Division and modulo

TEST(BoundsOf, FloorDivByPositiveConstant) {
  Var x("x");
  EXPECT_EQ(bounds_of(floordiv(x, 4), {{x.get(), range(-7, 9)}}), range(-2, 2));
}

TEST(BoundsOf, FloorDivByNegativeConstant) {
  Var x("x");
  // floor(-7 / -4) = 1, floor(9 / -4) = -3.
  EXPECT_EQ(bounds_of(floordiv(x, -4), {{x.get(), range(-7, 9)}}), range(-3, 1));
}

TEST(BoundsOf, FloorDivByPositiveInterval) {
  Var x("x"), y("y");
  EXPECT_EQ(bounds_of(floordiv(x, y), {{x.get(), range(-10, 20)}, {y.get(), range(2, 5)}}),
            range(-5, 10));
}

TEST(BoundsOf, FloorDivByUnboundedPositiveDivisor) {
  Var x("x", DataType::Int64()), y("y", DataType::Int64());
  EXPECT_EQ(bounds_of(floordiv(x, y), {{x.get(), range(-10, 20)}, {y.get(), range(2, kPosInf)}}),
            range(-5, 10));
}

TEST(BoundsOf, DivisionByDivisorThatMayBeZeroKnowsNothing) {
  Var x("x"), y("y");
  VarBounds vars{{x.get(), range(0, 10)}, {y.get(), range(-1, 3)}};
  EXPECT_EQ(bounds_of(floordiv(x, y), vars), range(INT32_MIN, INT32_MAX));
  EXPECT_EQ(bounds_of(floormod(x, y), vars), range(INT32_MIN, INT32_MAX));
  EXPECT_EQ(bounds_of(truncdiv(x, y), vars), range(INT32_MIN, INT32_MAX));
  EXPECT_EQ(bounds_of(truncmod(x, y), vars), range(INT32_MIN, INT32_MAX));
}

TEST(BoundsOf, FloorModByPositiveConstantIsBelowIt) {
  Var x("x");
  EXPECT_EQ(bounds_of(floormod(x, 8), {{x.get(), range(-100, 100)}}), range(0, 7));
}

TEST(BoundsOf, FloorModWithinOnePeriodIsExact) {
  Var x("x");
  EXPECT_EQ(bounds_of(floormod(x, 8), {{x.get(), range(9, 12)}}), range(1, 4));
  EXPECT_EQ(bounds_of(floormod(x, 8), {{x.get(), range(-7, -5)}}), range(1, 3));
}

TEST(BoundsOf, FloorModOfSmallerDividendIsTheDividend) {
  Var x("x"), y("y");
  EXPECT_EQ(bounds_of(floormod(x, y), {{x.get(), range(0, 5)}, {y.get(), range(8, 10)}}),
            range(0, 5));
}

TEST(BoundsOf, FloorModByNegativeConstantTakesItsSign) {
  Var x("x");
  EXPECT_EQ(bounds_of(floormod(x, -8), {{x.get(), range(-100, 100)}}), range(-7, 0));
}

TEST(BoundsOf, TruncDivRoundsTowardZero) {
  Var x("x");
  EXPECT_EQ(bounds_of(truncdiv(x, 4), {{x.get(), range(-7, 9)}}), range(-1, 2));
  EXPECT_EQ(bounds_of(truncdiv(x, -4), {{x.get(), range(-7, 9)}}), range(-2, 1));
}

TEST(BoundsOf, TruncModTakesTheDividendsSign) {
  Var x("x");
  EXPECT_EQ(bounds_of(truncmod(x, 4), {{x.get(), range(-7, 9)}}), range(-3, 3));
  EXPECT_EQ(bounds_of(truncmod(x, -4), {{x.get(), range(0, 9)}}), range(0, 3));
  EXPECT_EQ(bounds_of(truncmod(x, 4), {{x.get(), range(-100, -1)}}), range(-3, 0));
}

// ---------------------------------------------------------------------------------------------
// Min, max, select, comparisons, logic

TEST(BoundsOf, MinAndMax) {
  Var x("x"), y("y");
  VarBounds vars{{x.get(), range(0, 10)}, {y.get(), range(5, 20)}};
  EXPECT_EQ(bounds_of(min(x, y), vars), range(0, 10));
  EXPECT_EQ(bounds_of(max(x, y), vars), range(5, 20));
}

TEST(BoundsOf, SelectUnitesBothSides) {
  Var x("x"), c("c", DataType::Bool());
  EXPECT_EQ(bounds_of(select(c, x, x + 100), {{x.get(), range(0, 10)}}), range(0, 110));
}

TEST(BoundsOf, SelectWithDecidedConditionTakesOneSide) {
  Var x("x");
  VarBounds vars{{x.get(), range(0, 10)}};
  EXPECT_EQ(bounds_of(select(x < 20, x, x + 100), vars), range(0, 10));
  EXPECT_EQ(bounds_of(select(x > 20, x, x + 100), vars), range(100, 110));
}

TEST(BoundsOf, ComparisonsDecidedByDisjointIntervals) {
  Var x("x"), y("y");
  VarBounds vars{{x.get(), range(0, 4)}, {y.get(), range(5, 9)}};
  EXPECT_EQ(bounds_of(x < y, vars), IntBounds::single(1));
  EXPECT_EQ(bounds_of(x <= y, vars), IntBounds::single(1));
  EXPECT_EQ(bounds_of(x > y, vars), IntBounds::single(0));
  EXPECT_EQ(bounds_of(x >= y, vars), IntBounds::single(0));
  EXPECT_EQ(bounds_of(x == y, vars), IntBounds::single(0));
  EXPECT_EQ(bounds_of(x != y, vars), IntBounds::single(1));
}

TEST(BoundsOf, ComparisonsOfTouchingIntervals) {
  Var x("x"), y("y");
  VarBounds vars{{x.get(), range(0, 5)}, {y.get(), range(5, 9)}};
  EXPECT_EQ(bounds_of(x < y, vars), range(0, 1));
  EXPECT_EQ(bounds_of(x <= y, vars), IntBounds::single(1));
  EXPECT_EQ(bounds_of(x > y, vars), IntBounds::single(0));
  EXPECT_EQ(bounds_of(x >= y, vars), range(0, 1));
}

TEST(BoundsOf, EqualityOfOneValueIsTrue) {
  Var x("x");
  VarBounds vars{{x.get(), range(3, 3)}};
  EXPECT_EQ(bounds_of(x == 3, vars), IntBounds::single(1));
  EXPECT_EQ(bounds_of(x != 3, vars), IntBounds::single(0));
}

TEST(BoundsOf, FloatComparisonIsUndecided) {
  Var f("f", DataType::Float32());
  EXPECT_EQ(bounds_of(f < f + 1.0f), range(0, 1));
}

TEST(BoundsOf, Logic) {
  Var x("x"), c("c", DataType::Bool());
  VarBounds vars{{x.get(), range(0, 4)}};
  Expr yes = x<10, no = x> 10;
  EXPECT_EQ(bounds_of(yes && no, vars), IntBounds::single(0));
  EXPECT_EQ(bounds_of(yes || no, vars), IntBounds::single(1));
  EXPECT_EQ(bounds_of(!no, vars), IntBounds::single(1));
  EXPECT_EQ(bounds_of(c && yes, vars), range(0, 1));
  EXPECT_EQ(bounds_of(c || yes, vars), IntBounds::single(1));
  EXPECT_EQ(bounds_of(!c, vars), range(0, 1));
}

// ---------------------------------------------------------------------------------------------
// Casts

TEST(BoundsOf, CastKeepsIntervalThatFits) {
  Var x("x");
  EXPECT_EQ(bounds_of(cast(DataType::UInt(8), x), {{x.get(), range(0, 200)}}), range(0, 200));
  EXPECT_EQ(bounds_of(cast(DataType::Int64(), x), {{x.get(), range(-5, 5)}}), range(-5, 5));
}

TEST(BoundsOf, CastThatMayWrapRangesOverTheTarget) {
  Var x("x");
  EXPECT_EQ(bounds_of(cast(DataType::UInt(8), x), {{x.get(), range(0, 300)}}), range(0, 255));
  EXPECT_EQ(bounds_of(cast(DataType::UInt(8), x), {{x.get(), range(-1, 3)}}), range(0, 255));
}

TEST(BoundsOf, CastOfUint64OpenAboveToInt64KnowsNothing) {
  Var u("u", DataType::UInt(64));
  EXPECT_EQ(bounds_of(cast(DataType::Int64(), u), {{u.get(), range(0, kPosInf)}}),
            IntBounds::everything());
}

TEST(BoundsOf, CastFromFloatRangesOverTheTarget) {
  Var f("f", DataType::Float32());
  EXPECT_EQ(bounds_of(cast(DataType::Int(16), f)), range(INT16_MIN, INT16_MAX));
}

TEST(BoundsOf, CastToBoolTestsForZero) {
  Var x("x");
  EXPECT_EQ(bounds_of(cast(DataType::Bool(), x), {{x.get(), range(1, 5)}}), IntBounds::single(1));
  EXPECT_EQ(bounds_of(cast(DataType::Bool(), x), {{x.get(), range(0, 0)}}), IntBounds::single(0));
  EXPECT_EQ(bounds_of(cast(DataType::Bool(), x), {{x.get(), range(-1, 1)}}), range(0, 1));
}

TEST(BoundsOf, CastFromBool) {
  Var c("c", DataType::Bool());
  EXPECT_EQ(bounds_of(cast(DataType::Int32(), c)), range(0, 1));
}

// ---------------------------------------------------------------------------------------------
// Vectors, lets, memory, floats

TEST(BoundsOf, RampCoversEveryLane) {
  Var x("x");
  EXPECT_EQ(bounds_of(ir::Ramp::make(x * 4, 1, 4), {{x.get(), range(0, 3)}}), range(0, 15));
  EXPECT_EQ(bounds_of(ir::Ramp::make(x, -2, 4), {{x.get(), range(0, 3)}}), range(-6, 3));
}

TEST(BoundsOf, BroadcastIsItsValue) {
  Var x("x");
  EXPECT_EQ(bounds_of(ir::Broadcast::make(x + 1, 8), {{x.get(), range(0, 3)}}), range(1, 4));
}

TEST(BoundsOf, LetBindsItsVariable) {
  Var x("x"), v("v");
  EXPECT_EQ(bounds_of(ir::Let::make(v, x + 1, v * 2), {{x.get(), range(0, 3)}}), range(2, 8));
}

TEST(BoundsOf, LetBindingEndsWithItsBody) {
  // The inner let shadows v only inside itself; afterwards v is the outer binding again.
  Var v("v");
  Expr inner = ir::Let::make(v, 5, v);
  EXPECT_EQ(bounds_of(ir::Let::make(v, 1, inner + v)), IntBounds::single(6));
}

TEST(BoundsOf, LetOverridesTheCallersMapOnlyInside) {
  Var v("v");
  VarBounds vars{{v.get(), range(100, 200)}};
  EXPECT_EQ(bounds_of(ir::Let::make(v, 1, v) + v, vars), range(101, 201));
}

TEST(BoundsOf, LoadRangesOverItsType) {
  Buffer a = Buffer::make("A", DataType::UInt(8), {16});
  EXPECT_EQ(bounds_of(ir::Load::make(a, {Expr(0)})), range(0, 255));
}

TEST(BoundsOf, FloatExpressionKnowsNothing) {
  Var f("f", DataType::Float32());
  EXPECT_EQ(bounds_of(f * 2.0f), IntBounds::everything());
  EXPECT_EQ(bounds_of(cast(DataType::Float32(), Var("x"))), IntBounds::everything());
}

TEST(BoundsOf, Printing) {
  std::ostringstream os;
  os << range(0, 63) << " " << IntBounds::everything() << " " << range(-2, kPosInf);
  EXPECT_EQ(os.str(), "[0, 63] [-inf, +inf] [-2, +inf]");
}

// ---------------------------------------------------------------------------------------------
// Randomized soundness: random expressions over three variables with small known ranges, each
// evaluated at many points by a naive evaluator; every value must lie within bounds_of.

using testing::Env;
using testing::RandomIntExprs;

TEST(BoundsOf, RandomExpressionsStayWithinTheirBounds) {
  Var x("x"), y("y"), z("z");
  VarBounds vars{{x.get(), range(0, 15)}, {y.get(), range(-7, 3)}, {z.get(), range(-20, -10)}};
  RandomIntExprs gen(0x5eed, {x, y, z});
  int exact = 0;
  constexpr int kExprs = 4000;
  for (int n = 0; n < kExprs; ++n) {
    Expr e = gen.expr(static_cast<int>(gen.uniform(1, 4)));
    IntBounds b = bounds_of(e, vars);
    // Every variable is bounded and every divisor is a constant, so the analysis never has to
    // give up: the interval stays narrow.
    ASSERT_LT(b.max - b.min, 100000) << e << " has bounds " << b;
    int64_t seen_min = kPosInf, seen_max = kNegInf;
    for (int p = 0; p < 60; ++p) {
      Env env;
      const Var* box[] = {&x, &y, &z};
      for (int k = 0; k < 3; ++k) {
        IntBounds r = vars.at(box[k]->get());
        // The first 8 points are the corners of the box, the rest uniform inside it.
        env[box[k]->get()] = p < 8 ? ((p >> k) & 1 ? r.max : r.min) : gen.uniform(r.min, r.max);
      }
      int64_t value = testing::eval_int(e, env);
      ASSERT_TRUE(b.contains(value)) << e << " = " << value << " outside " << b;
      seen_min = std::min(seen_min, value);
      seen_max = std::max(seen_max, value);
    }
    exact += seen_min == b.min && seen_max == b.max;
  }
  // Not a soundness requirement, but a guard against an analysis that quietly gives up.
  EXPECT_GT(exact, kExprs / 2);
}

// Every interval whose ends come from a list of awkward values (the sentinels, their
// neighbours, values whose squares overflow), against every other: where the true result of an
// operation fits in int64, it must lie within the saturated bounds.
TEST(BoundsOf, SaturatedBoundsAreSoundNearTheInt64Limits) {
  const int64_t ends[] = {
      kNegInf, kNegInf + 1, -(int64_t{1} << 62), -(int64_t{1} << 32), -3,          -1,     0,
      1,       2,           3037000500,          int64_t{1} << 62,    kPosInf - 1, kPosInf};
  std::vector<IntBounds> intervals;
  for (int64_t lo : ends) {
    for (int64_t hi : ends) {
      if (lo <= hi && lo != kPosInf && hi != kNegInf) intervals.push_back({lo, hi});
    }
  }
  std::mt19937_64 rng(7);
  // Values of an interval to evaluate at: its ends, the values around zero, two random ones.
  auto samples = [&](const IntBounds& r) {
    std::vector<int64_t> v = {r.min, r.max};
    for (int64_t near : {-2, -1, 0, 1, 2}) v.push_back(std::clamp(near, r.min, r.max));
    for (int n = 0; n < 2; ++n)
      v.push_back(std::uniform_int_distribution<int64_t>(r.min, r.max)(rng));
    return v;
  };
  Var x("x", DataType::Int64()), y("y", DataType::Int64());
  std::vector<Expr> exprs = {x + y,          x - y,          x * y,
                             floordiv(x, y), floormod(x, y), truncdiv(x, y),
                             truncmod(x, y), min(x, y),      max(x, y)};
  for (const IntBounds& bx : intervals) {
    for (const IntBounds& by : intervals) {
      VarBounds vars{{x.get(), bx}, {y.get(), by}};
      std::vector<int64_t> xs = samples(bx), ys = samples(by);
      for (size_t k = 0; k < exprs.size(); ++k) {
        IntBounds b = bounds_of(exprs[k], vars);
        for (__int128 a : xs) {
          for (__int128 c : ys) {
            if (k >= 3 && k <= 6 && c == 0) continue;
            __int128 r = testing::eval_wide(exprs[k].node_type(), a, c);
            if (r < kNegInf || r > kPosInf) continue;  // overflows int64: assumed not to happen
            ASSERT_TRUE(b.contains(static_cast<int64_t>(r)))
                << exprs[k] << " with x in " << bx << ", y in " << by << ": "
                << static_cast<int64_t>(a) << ", " << static_cast<int64_t>(c) << " gives "
                << static_cast<int64_t>(r) << " outside " << b;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace anvil::arith
