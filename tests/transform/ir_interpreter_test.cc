// The interpreter the transform tests trust: its semantics, checked on small programs.
#include "testing/ir_interpreter.h"

#include <gtest/gtest.h>

#include "anvil/ir/op.h"

namespace anvil::testing {
namespace {

using namespace ir;

double scalar(IRInterpreter& in, const Expr& e) {
  IRInterpreter::Lanes v = in.eval(e);
  EXPECT_EQ(v.size(), 1u);
  return v[0];
}

TEST(IRInterpreter, IntegerDivisionRoundsAsItsNodeSays) {
  IRInterpreter in;
  EXPECT_EQ(scalar(in, floordiv(Expr(-7), 2)), -4);
  EXPECT_EQ(scalar(in, floormod(Expr(-7), 2)), 1);
  EXPECT_EQ(scalar(in, floormod(Expr(7), -2)), -1);
  EXPECT_EQ(scalar(in, truncdiv(Expr(-7), 2)), -3);
  EXPECT_EQ(scalar(in, truncmod(Expr(-7), 2)), -1);
  EXPECT_THROW(in.eval(floordiv(Expr(1), 0)), InterpreterError);
}

TEST(IRInterpreter, TypesRoundAndWrap) {
  IRInterpreter in;
  // float32 arithmetic rounds to float after each operation.
  Expr third = Expr(1.0f) / 3.0f;
  EXPECT_EQ(scalar(in, third), static_cast<double>(1.0f / 3.0f));
  // int8 wraps like the hardware.
  Expr big = make_const(DataType::Int(8), 100);
  EXPECT_EQ(scalar(in, big + big), -56);
  // Casts truncate floats toward zero and make bools of nonzero values.
  EXPECT_EQ(scalar(in, cast(DataType::Int32(), Expr(-2.75f))), -2);
  EXPECT_EQ(scalar(in, cast(DataType::Bool(), Expr(5))), 1);
  EXPECT_EQ(scalar(in, min(Expr(3), 4) + max(Expr(3), 4)), 7);
  EXPECT_EQ(scalar(in, select(Expr(2) < 3, Expr(10), Expr(20))), 10);
}

TEST(IRInterpreter, VectorsHaveLanes) {
  IRInterpreter in;
  EXPECT_EQ(in.eval(Ramp::make(3, 2, 4)), (IRInterpreter::Lanes{3, 5, 7, 9}));
  EXPECT_EQ(in.eval(Ramp::make(0, 1, 3) * Broadcast::make(Expr(4), 3)),
            (IRInterpreter::Lanes{0, 4, 8}));
  Expr mask = Ramp::make(0, 1, 4) < Broadcast::make(Expr(2), 4);
  EXPECT_EQ(in.eval(Select::make(mask, Broadcast::make(Expr(1), 4), Broadcast::make(Expr(0), 4))),
            (IRInterpreter::Lanes{1, 1, 0, 0}));
}

TEST(IRInterpreter, MultiDimensionalAndFlatViewsShareMemory) {
  Buffer a = Buffer::make("A", DataType::Int32(), {2, 3});
  Buffer flat = Buffer::make_flat(a, 6);
  IRInterpreter in;
  in.bind(a, {0, 1, 2, 3, 4, 5});
  EXPECT_EQ(scalar(in, Load::make(a, {1, 2})), 5);
  in.run(Store::make(flat, 42, {4}));
  EXPECT_EQ(scalar(in, Load::make(a, {1, 1})), 42);
  // Explicit strides: row stride 4.
  Buffer padded = Buffer::make("P", DataType::Int32(), {2, 3}, {4, 1});
  in.bind(padded, std::vector<double>(7, 0));
  EXPECT_EQ(in.footprint(padded), 7);
  in.run(Store::make(padded, 9, {1, 2}));
  EXPECT_EQ(in.memory(padded)[6], 9);
}

TEST(IRInterpreter, OutOfBoundsAccessesThrow) {
  Buffer a = Buffer::make("A", DataType::Int32(), {2, 3});
  IRInterpreter in;
  in.bind(a, std::vector<double>(6, 0));
  // (0, 3) is inside the memory but outside dimension 1.
  EXPECT_THROW(in.eval(Load::make(a, {0, 3})), InterpreterError);
  EXPECT_THROW(in.run(Store::make(a, 1, {2, 0})), InterpreterError);
}

TEST(IRInterpreter, PredicatedLanesNeitherReadNorWrite) {
  Buffer a = Buffer::make("A", DataType::Int32(), {4});
  IRInterpreter in;
  in.bind(a, {1, 2, 3, 4});
  Expr idx = Ramp::make(2, 1, 4);  // lanes 2..5: the last two are out of bounds
  Expr mask = idx < Broadcast::make(Expr(4), 4);
  EXPECT_EQ(in.eval(Load::make(a, {idx}, mask)), (IRInterpreter::Lanes{3, 4, 0, 0}));
  in.run(Store::make(a, Broadcast::make(Expr(7), 4), {idx}, mask));
  EXPECT_EQ(in.memory(a), (std::vector<double>{1, 2, 7, 7}));
  EXPECT_EQ(in.stores(), 2);
  EXPECT_THROW(in.eval(Load::make(a, {idx})), InterpreterError);
}

TEST(IRInterpreter, AllocationsArePoisonedAndScoped) {
  Buffer out = Buffer::make("Out", DataType::Int32(), {1});
  Buffer t = Buffer::make("T", DataType::Int32(), {2});
  IRInterpreter in;
  in.bind(out, {0});
  Stmt reads_unwritten = Allocate::make(t, Store::make(out, Load::make(t, {1}), {0}));
  EXPECT_THROW(in.run(reads_unwritten), InterpreterError);
  Stmt ok = Allocate::make(
      t, Seq::make(Store::make(t, 5, {1}), Store::make(out, Load::make(t, {1}), {0})));
  in.run(ok);
  EXPECT_EQ(in.memory(out)[0], 5);
  EXPECT_THROW(in.memory(t), InterpreterError);  // gone after its Allocate
}

TEST(IRInterpreter, LoopsLetsAndAssertions) {
  Buffer a = Buffer::make("A", DataType::Int32(), {5});
  Var i("i"), x("x"), n("n");
  IRInterpreter in;
  in.bind(a, std::vector<double>(5, 0));
  in.set(n, 5);
  for (ForKind kind :
       {ForKind::kSerial, ForKind::kParallel, ForKind::kVectorized, ForKind::kUnrolled}) {
    in.run(For::make(i, 0, n, kind,
                     LetStmt::make(x, i * i, Store::make(a, Load::make(a, {i}) + x, {i}))));
  }
  EXPECT_EQ(in.memory(a), (std::vector<double>{0, 4, 16, 36, 64}));
  EXPECT_EQ(scalar(in, Let::make(x, 3, x * x)), 9);
  try {
    in.run(AssertStmt::make(n < 3, "n is too large", Evaluate::make(0)));
    ADD_FAILURE() << "the assertion did not fail";
  } catch (const AssertionFailure& e) {
    EXPECT_STREQ(e.what(), "n is too large");
  }
}

TEST(IRInterpreter, SameBehaviorReportsTheFirstDifference) {
  Buffer a = Buffer::make("A", DataType::Int32(), {4});
  Var i("i");
  Stmt plus_one = For::make(i, 0, 4, ForKind::kSerial, Store::make(a, Load::make(a, {i}) + 1, {i}));
  Stmt plus_two = For::make(i, 0, 4, ForKind::kSerial, Store::make(a, Load::make(a, {i}) + 2, {i}));
  EXPECT_TRUE(same_behavior(plus_one, plus_one, {a}));
  ::testing::AssertionResult r = same_behavior(plus_one, plus_two, {a});
  EXPECT_FALSE(r);
  EXPECT_NE(std::string(r.message()).find("differs at element 0"), std::string::npos);
}

}  // namespace
}  // namespace anvil::testing
