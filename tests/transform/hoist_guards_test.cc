#include "anvil/transform/hoist_guards.h"

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

// A fused parallel index f over 4 groups of 4 rows of which 3 exist, as a split of 3 rows by 4
// leaves it: every statement of the reduction carries the guard floormod(f, 4) < 3, which reads
// only f. B[r] and C[r] accumulate A[r, k] through a local tile T.
struct FusedTail {
  Buffer a = Buffer::make("A", DataType::Float32(), {16 * 5});
  Buffer b = Buffer::make("B", DataType::Float32(), {16});
  Buffer c = Buffer::make("C", DataType::Float32(), {16});
  Buffer t = Buffer::make("T", DataType::Float32(), {2});
  Var f{"f"}, k{"k"};
  Expr guard = floormod(f, 4) < 3;
  Stmt s;
  FusedTail() {
    Expr x = Load::make(a, {f * 5 + k});
    auto guarded = [&](Stmt st) { return IfThenElse::make(guard, std::move(st)); };
    Stmt init = Seq::make(guarded(Store::make(t, 0.0f, {0})), guarded(Store::make(t, 0.0f, {1})));
    Stmt body = loop(k, 5,
                     Seq::make(guarded(Store::make(t, Load::make(t, {0}) + x, {0})),
                               guarded(Store::make(t, Load::make(t, {1}) + x * 2.0f, {1}))));
    Stmt out = Seq::make(guarded(Store::make(b, Load::make(t, {0}), {f})),
                         guarded(Store::make(c, Load::make(t, {1}), {f})));
    s = loop(f, 16, Allocate::make(t, Seq::make({init, body, out})), ForKind::kParallel);
  }
};

TEST(HoistGuards, AGuardOnOuterLoopsIsTestedOncePerIteration) {
  FusedTail p;
  Stmt r = hoist_guards(p.s);
  const For* f = r.as<For>();
  ASSERT_NE(f, nullptr) << r;
  EXPECT_EQ(f->kind, ForKind::kParallel);
  const IfThenElse* g = f->body.as<IfThenElse>();
  ASSERT_NE(g, nullptr) << r;
  EXPECT_EQ(to_string(g->condition), to_string(p.guard));
  EXPECT_NE(g->then_case.as<Allocate>(), nullptr) << r;
  EXPECT_EQ(count<IfThenElse>(r), 1) << r;
  EXPECT_TRUE(same_behavior(p.s, r, {p.a, p.b, p.c}));
}

TEST(HoistGuards, AGuardOnTheLoopsOwnVariableStays) {
  Buffer a = Buffer::make("A", DataType::Float32(), {8});
  Var i("i");
  Stmt s = loop(i, 8, IfThenElse::make(i < 5, Store::make(a, 1.0f, {i})));
  EXPECT_TRUE(hoist_guards(s).same_as(s));
}

TEST(HoistGuards, DifferentConditionsAndElseArmsAreKept) {
  Buffer a = Buffer::make("A", DataType::Float32(), {8});
  Var i("i"), j("j");
  // Two conditions: not merged, so neither is the loop's whole body.
  Stmt two = loop(j, 4,
                  Seq::make(IfThenElse::make(i < 5, Store::make(a, 1.0f, {j})),
                            IfThenElse::make(i < 6, Store::make(a, 2.0f, {j + 4}))));
  Stmt s = loop(i, 8, two);
  Stmt r = hoist_guards(s);
  EXPECT_TRUE(r.same_as(s)) << r;
  // An else arm runs when the guard fails: the branch is not a guard.
  Stmt with_else = loop(
      i, 8,
      loop(j, 4, IfThenElse::make(i < 5, Store::make(a, 1.0f, {j}), Store::make(a, 2.0f, {j}))));
  EXPECT_TRUE(hoist_guards(with_else).same_as(with_else));
}

TEST(HoistGuards, AConditionThatReadsMemoryStaysInside) {
  // The loop writes what the condition reads: testing it once before the loop would be wrong.
  Buffer a = Buffer::make("A", DataType::Int32(), {8});
  Var j("j");
  Stmt s = loop(j, 8, IfThenElse::make(Load::make(a, {0}) < 3, Store::make(a, j, {0})));
  Stmt r = hoist_guards(s);
  EXPECT_TRUE(r.same_as(s)) << r;
  EXPECT_TRUE(same_behavior(s, r, {a}));
}

TEST(HoistGuards, ALetTheConditionReadsStaysOutside) {
  Buffer a = Buffer::make("A", DataType::Float32(), {8});
  Var i("i"), n("n"), j("j");
  Stmt inner = loop(j, 2, IfThenElse::make(n < 7, Store::make(a, 1.0f, {i})));
  Stmt s = loop(i, 8, LetStmt::make(n, i + 1, inner));
  Stmt r = hoist_guards(s);
  // Out of the j loop, not out of the let that binds n.
  const LetStmt* let = r.as<For>()->body.as<LetStmt>();
  ASSERT_NE(let, nullptr) << r;
  EXPECT_NE(let->body.as<IfThenElse>(), nullptr) << r;
  EXPECT_TRUE(same_behavior(s, r, {a}));
}

TEST(HoistGuards, KernelsWithThreadBoundLoopsAreLeftAsTheyAre) {
  // A guard around a loop would also guard the barriers inserted into it later.
  Buffer a = Buffer::make("A", DataType::Float32(), {64});
  Var tx("threadIdx.x"), j("j");
  Stmt s = For::make(tx, 0, 32, ForKind::kThreadBinding,
                     loop(j, 2, IfThenElse::make(tx < 30, Store::make(a, 1.0f, {tx * 2 + j}))),
                     "threadIdx.x");
  EXPECT_TRUE(hoist_guards(s).same_as(s));
}

}  // namespace
}  // namespace anvil::transform
