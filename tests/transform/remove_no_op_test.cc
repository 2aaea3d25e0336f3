#include "anvil/transform/remove_no_op.h"

#include <gtest/gtest.h>

#include "anvil/ir/op.h"
#include "anvil/ir/printer.h"
#include "testing/ir_interpreter.h"
#include "transform/ir_queries.h"

namespace anvil::transform {
namespace {

using namespace ir;
using testing::count;
using testing::same_behavior;

Stmt loop(const Var& v, Expr extent, Stmt body, ForKind kind = ForKind::kSerial) {
  return For::make(v, 0, std::move(extent), kind, std::move(body));
}

Stmt nop() {
  return Evaluate::make(0);
}

TEST(RemoveNoOp, EvaluateOfAConstantInASequenceIsDropped) {
  Buffer a = Buffer::make("A", DataType::Int32(), {4});
  Stmt store = Store::make(a, 1, {0});
  Stmt s = Seq::make({nop(), store, Evaluate::make(1.0f), nop()});
  EXPECT_TRUE(remove_no_op(s).same_as(store));
}

TEST(RemoveNoOp, SequenceOfNothingIsNothing) {
  Stmt s = Seq::make(nop(), nop());
  EXPECT_TRUE(is_no_op(remove_no_op(s)));
}

TEST(RemoveNoOp, LoopsWithEmptyBodiesOrNoIterationsDisappear) {
  Buffer a = Buffer::make("A", DataType::Int32(), {4});
  Var i("i"), j("j"), k("k");
  EXPECT_TRUE(is_no_op(remove_no_op(loop(i, 8, loop(j, 4, nop())))));
  EXPECT_TRUE(is_no_op(remove_no_op(loop(k, 0, Store::make(a, 1, {k})))));
  Var t("threadIdx.x");
  EXPECT_TRUE(
      is_no_op(remove_no_op(For::make(t, 0, 32, ForKind::kThreadBinding, nop(), "threadIdx.x"))));
}

TEST(RemoveNoOp, BranchesWithEmptyArms) {
  Buffer a = Buffer::make("A", DataType::Int32(), {4});
  Var i("i");
  Stmt store = Store::make(a, 7, {i});
  // Both arms empty: nothing.
  EXPECT_TRUE(is_no_op(remove_no_op(IfThenElse::make(i < 2, nop(), nop()))));
  // Empty else: dropped.
  Stmt r = remove_no_op(IfThenElse::make(i < 2, store, nop()));
  ASSERT_NE(r.as<IfThenElse>(), nullptr);
  EXPECT_FALSE(r.as<IfThenElse>()->else_case.defined());
  // Empty then: the condition is negated.
  Stmt s = loop(i, 4, IfThenElse::make(i < 2, nop(), store));
  Stmt rs = remove_no_op(s);
  EXPECT_EQ(to_string(rs.as<For>()->body.as<IfThenElse>()->condition), "!(i < 2)");
  EXPECT_TRUE(same_behavior(s, rs, {a}));
}

TEST(RemoveNoOp, StoreOfTheValueJustLoadedFromThere) {
  Buffer a = Buffer::make("A", DataType::Float32(), {4, 4});
  Buffer flat = Buffer::make_flat(a, 16);
  Var i("i");
  EXPECT_TRUE(is_no_op(remove_no_op(Store::make(a, Load::make(a, {i, 2}), {i, 2}))));
  // Another element, or another buffer: kept.
  Stmt other = Store::make(a, Load::make(a, {i, 1}), {i, 2});
  EXPECT_TRUE(remove_no_op(other).same_as(other));
  Buffer b = Buffer::make("B", DataType::Float32(), {4, 4});
  Stmt copy = Store::make(b, Load::make(a, {i, 2}), {i, 2});
  EXPECT_TRUE(remove_no_op(copy).same_as(copy));
  // A one-dimensional view of the same memory with the same index: a no-op too.
  Buffer flat2 = Buffer::make_flat(a, 16);
  EXPECT_TRUE(is_no_op(remove_no_op(Store::make(flat, Load::make(flat2, {i}), {i}))));
  // A multi-dimensional view and a flat view do not index alike.
  Stmt mixed = Store::make(flat, Load::make(a, {0, i}), {i});
  EXPECT_TRUE(remove_no_op(mixed).same_as(mixed));
}

TEST(RemoveNoOp, PredicatedCopies) {
  Buffer a = Buffer::make("A", DataType::Float32(), {8});
  Expr idx = Ramp::make(0, 1, 4);
  Expr p = idx < Broadcast::make(Expr(3), 4);
  Expr q = idx < Broadcast::make(Expr(2), 4);
  // A predicated store of an unpredicated load, or with the same predicate: nothing changes.
  EXPECT_TRUE(is_no_op(remove_no_op(Store::make(a, Load::make(a, {idx}), {idx}, p))));
  EXPECT_TRUE(is_no_op(remove_no_op(Store::make(a, Load::make(a, {idx}, p), {idx}, p))));
  // A masked load stored unmasked writes what the masked lanes read: kept.
  Stmt masked_load = Store::make(a, Load::make(a, {idx}, p), {idx});
  EXPECT_TRUE(remove_no_op(masked_load).same_as(masked_load));
  Stmt different = Store::make(a, Load::make(a, {idx}, q), {idx}, p);
  EXPECT_TRUE(remove_no_op(different).same_as(different));
}

TEST(RemoveNoOp, WrappersAroundNothing) {
  Buffer t = Buffer::make("T", DataType::Int32(), {4});
  Var x("x"), i("i");
  EXPECT_TRUE(is_no_op(remove_no_op(LetStmt::make(x, 3, nop()))));
  EXPECT_TRUE(is_no_op(remove_no_op(AttrStmt::make("pragma_unroll", i, 1, nop()))));
  EXPECT_TRUE(is_no_op(remove_no_op(Allocate::make(t, loop(i, 4, nop())))));
  // An assertion still checks its condition.
  Stmt check = AssertStmt::make(x > 0, "x must be positive", nop());
  EXPECT_TRUE(remove_no_op(check).same_as(check));
}

TEST(RemoveNoOp, MixedProgramKeepsItsEffects) {
  Buffer a = Buffer::make("A", DataType::Int32(), {6});
  Buffer b = Buffer::make("B", DataType::Int32(), {6});
  Var i("i"), j("j");
  Stmt s = Seq::make(
      {loop(i, 6,
            Seq::make({Store::make(a, Load::make(a, {i}), {i}), nop(),
                       IfThenElse::make(i < 3, Store::make(b, Load::make(a, {i}) * 2, {i}), nop()),
                       loop(j, 3, Evaluate::make(0))})),
       Store::make(b, Load::make(b, {5}), {5})});
  Stmt r = remove_no_op(s);
  EXPECT_EQ(count<Store>(r), 1) << r;
  EXPECT_EQ(count<Evaluate>(r), 0) << r;
  EXPECT_EQ(count<For>(r), 1) << r;
  EXPECT_TRUE(same_behavior(s, r, {a, b}));
}

TEST(RemoveNoOp, ProgramWithoutNoOpsIsUnchanged) {
  Buffer a = Buffer::make("A", DataType::Int32(), {6});
  Var i("i");
  Stmt s = loop(i, 6, Store::make(a, Load::make(a, {i}) + 1, {i}));
  EXPECT_TRUE(remove_no_op(s).same_as(s));
}

}  // namespace
}  // namespace anvil::transform
