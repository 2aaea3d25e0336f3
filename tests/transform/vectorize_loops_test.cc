#include "anvil/transform/vectorize_loops.h"

#include <gtest/gtest.h>

#include "anvil/ir/op.h"
#include "anvil/ir/printer.h"
#include "testing/ir_interpreter.h"
#include "transform/ir_queries.h"

namespace anvil::transform {
namespace {

using namespace ir;
using testing::collect;
using testing::count;
using testing::loops_of_kind;
using testing::same_behavior;

Stmt loop(const Var& v, Expr min, Expr extent, Stmt body, ForKind kind = ForKind::kSerial) {
  return For::make(v, std::move(min), std::move(extent), kind, std::move(body));
}

const ForKind kVec = ForKind::kVectorized;

// The Stores of `s` whose (last) index is a Ramp.
int ramp_stores(const Stmt& s) {
  int n = 0;
  for (const Store* st : collect<Store>(s)) n += st->indices.back().as<Ramp>() != nullptr;
  return n;
}

TEST(VectorizeLoops, ElementwiseLoopBecomesRampAccesses) {
  Buffer a = Buffer::make("A", DataType::Float32(), {64});
  Buffer b = Buffer::make("B", DataType::Float32(), {64});
  Var xo("xo"), xi("xi");
  Expr x = xo * 8 + xi;
  Stmt s =
      loop(xo, 0, 8, loop(xi, 0, 8, Store::make(b, Load::make(a, {x}) * 2.0f + 1.0f, {x}), kVec));
  Stmt v = vectorize_loops(s);
  EXPECT_TRUE(loops_of_kind(v, kVec).empty());
  ASSERT_EQ(ramp_stores(v), 1) << v;
  const Store* st = collect<Store>(v)[0];
  EXPECT_EQ(to_string(st->indices[0]), "ramp(xo*8, 1, 8)");
  EXPECT_EQ(st->value.type(), DataType::Float32(8));
  EXPECT_EQ(to_string(st->value), "A[ramp(xo*8, 1, 8)]*x8(2.0f) + x8(1.0f)");
  EXPECT_TRUE(same_behavior(s, v, {a, b}));
}

TEST(VectorizeLoops, NonZeroMinAndStridedAccess) {
  Buffer a = Buffer::make("A", DataType::Int32(), {40});
  Buffer b = Buffer::make("B", DataType::Int32(), {20});
  Var i("i");
  Stmt s = loop(i, 3, 5, Store::make(b, Load::make(a, {i * 3 + 1}) - i, {19 - i}), kVec);
  Stmt v = vectorize_loops(s);
  EXPECT_TRUE(loops_of_kind(v, kVec).empty());
  const Store* st = collect<Store>(v)[0];
  const Ramp* r = st->indices[0].as<Ramp>();
  ASSERT_NE(r, nullptr) << v;
  EXPECT_TRUE(is_const_int(r->base, 16));
  EXPECT_TRUE(is_const_int(r->stride, -1));
  const Ramp* lr = collect<Load>(v)[0]->indices[0].as<Ramp>();
  ASSERT_NE(lr, nullptr);
  EXPECT_TRUE(is_const_int(lr->base, 10));
  EXPECT_TRUE(is_const_int(lr->stride, 3));
  EXPECT_TRUE(same_behavior(s, v, {a, b}));
}

TEST(VectorizeLoops, InvariantOperandsAreBroadcastAndScalarLoadsStayScalar) {
  Buffer a = Buffer::make("A", DataType::Float32(), {4, 16});
  Buffer bias = Buffer::make("bias", DataType::Float32(), {4});
  Buffer b = Buffer::make("B", DataType::Float32(), {4, 16});
  Var i("i"), j("j");
  Stmt s = loop(
      i, 0, 4,
      loop(j, 0, 16,
           Store::make(b, max(Load::make(a, {i, j}) + Load::make(bias, {i}), 0.0f), {i, j}), kVec));
  Stmt v = vectorize_loops(s);
  EXPECT_TRUE(loops_of_kind(v, kVec).empty());
  for (const Load* ld : collect<Load>(v)) {
    if (ld->buffer.same_as(bias)) {
      EXPECT_EQ(ld->type, DataType::Float32());
    }
  }
  EXPECT_EQ(count<Broadcast>(v), 2) << v;  // bias[i] and 0.0f
  EXPECT_TRUE(same_behavior(s, v, {a, bias, b}));
}

TEST(VectorizeLoops, LetBindsAVectorVariable) {
  Buffer a = Buffer::make("A", DataType::Float32(), {16});
  Buffer b = Buffer::make("B", DataType::Float32(), {16});
  Var i("i"), x("x", DataType::Float32()), k("k", DataType::Float32());
  Stmt body =
      LetStmt::make(x, Load::make(a, {i}),
                    Store::make(b, Let::make(k, Expr(3.0f), x * x + k), {i}));  // k stays scalar
  Stmt s = loop(i, 0, 16, body, kVec);
  Stmt v = vectorize_loops(s);
  const LetStmt* let = v.as<LetStmt>();
  ASSERT_NE(let, nullptr) << v;
  EXPECT_EQ(let->var.type(), DataType::Float32(16));
  EXPECT_FALSE(let->var.same_as(x));
  const Let* inner = collect<Let>(v)[0];
  EXPECT_EQ(inner->var.type(), DataType::Float32());
  EXPECT_TRUE(same_behavior(s, v, {a, b}));
}

TEST(VectorizeLoops, LetOfAnIndexIsReplacedByItsRamp) {
  Buffer a = Buffer::make("A", DataType::Int32(), {40});
  Var i("i"), x("x");
  Stmt s =
      loop(i, 0, 8, LetStmt::make(x, i * 2 + 1, Store::make(a, Load::make(a, {x}) + x, {x})), kVec);
  Stmt v = vectorize_loops(s);
  EXPECT_EQ(count<LetStmt>(v), 0) << v;
  ASSERT_EQ(ramp_stores(v), 1) << v;
  EXPECT_EQ(to_string(collect<Store>(v)[0]->indices[0]), "ramp(1, 2, 8)");
  EXPECT_TRUE(same_behavior(s, v, {a}));
}

TEST(VectorizeLoops, IndexWidenedToInt64StaysARamp) {
  Buffer a = Buffer::make("A", DataType::Float32(), {make_const(DataType::Int64(), 16)});
  Var i("i");
  Expr x = cast(DataType::Int64(), i) + make_const(DataType::Int64(), 4);
  Stmt s = loop(i, 0, 8, Store::make(a, Load::make(a, {x}) * 2.0f, {x}), kVec);
  Stmt v = vectorize_loops(s);
  ASSERT_EQ(ramp_stores(v), 1) << v;
  EXPECT_EQ(collect<Store>(v)[0]->indices[0].type(), DataType::Int64(8));
  EXPECT_TRUE(same_behavior(s, v, {a}));
}

TEST(VectorizeLoops, CastsSelectsCallsAndIntegerDivision) {
  Buffer a = Buffer::make("A", DataType::Int32(), {32});
  Buffer b = Buffer::make("B", DataType::Float32(), {32});
  Var i("i");
  Expr ai = Load::make(a, {i});
  Expr value = select(floormod(ai, 3) == 0, cast(DataType::Float32(), floordiv(ai, 2)),
                      Call::make(Intrinsic::kFabs, {cast(DataType::Float32(), ai - i)}));
  Stmt s = loop(i, 0, 32, Store::make(b, value, {i}), kVec);
  Stmt v = vectorize_loops(s);
  EXPECT_TRUE(loops_of_kind(v, kVec).empty());
  EXPECT_EQ(collect<Store>(v)[0]->value.type(), DataType::Float32(32));
  EXPECT_TRUE(same_behavior(s, v, {a, b}));
}

TEST(VectorizeLoops, ReductionInitAndUpdateOverAnInnerSerialLoop) {
  // C[i] = 0; for k: C[i] += A[i, k] * B[k], with i vectorized.
  Buffer a = Buffer::make("A", DataType::Float32(), {8, 5});
  Buffer bv = Buffer::make("B", DataType::Float32(), {5});
  Buffer c = Buffer::make("C", DataType::Float32(), {8});
  Var i("i"), k("k");
  Stmt s =
      loop(i, 0, 8,
           Seq::make(
               Store::make(c, 0.0f, {i}),
               loop(k, 0, 5,
                    Store::make(c, Load::make(c, {i}) + Load::make(a, {i, k}) * Load::make(bv, {k}),
                                {i}))),
           kVec);
  Stmt v = vectorize_loops(s);
  EXPECT_TRUE(loops_of_kind(v, kVec).empty());
  EXPECT_EQ(loops_of_kind(v, ForKind::kSerial).size(), 1u);
  EXPECT_EQ(ramp_stores(v), 2) << v;
  EXPECT_TRUE(same_behavior(s, v, {a, bv, c}));
}

TEST(VectorizeLoops, ReductionOverTheVectorizedAxisStaysSerial) {
  Buffer a = Buffer::make("A", DataType::Float32(), {8});
  Buffer c = Buffer::make("C", DataType::Float32(), {1});
  Var k("k");
  Stmt s = loop(k, 0, 8, Store::make(c, Load::make(c, {0}) + Load::make(a, {k}), {0}), kVec);
  Stmt v = vectorize_loops(s);
  const For* f = v.as<For>();
  ASSERT_NE(f, nullptr) << v;
  EXPECT_EQ(f->kind, ForKind::kSerial);
  EXPECT_EQ(count<Ramp>(v), 0);
  EXPECT_TRUE(same_behavior(s, v, {a, c}));
}

TEST(VectorizeLoops, TailGuardBecomesPredicatedStoreAndLoads) {
  // 100 split by 8: the guard varies across the lanes of xi.
  Buffer a = Buffer::make("A", DataType::Float32(), {100});
  Buffer b = Buffer::make("B", DataType::Float32(), {100});
  Var xo("xo"), xi("xi");
  Expr x = xo * 8 + xi;
  Stmt s =
      loop(xo, 0, 13,
           loop(xi, 0, 8, IfThenElse::make(x < 100, Store::make(b, Load::make(a, {x}) + 1.0f, {x})),
                kVec));
  Stmt v = vectorize_loops(s);
  EXPECT_TRUE(loops_of_kind(v, kVec).empty());
  EXPECT_EQ(count<IfThenElse>(v), 0) << v;
  const Store* st = collect<Store>(v)[0];
  ASSERT_TRUE(st->predicate.defined());
  EXPECT_EQ(st->predicate.type(), DataType::Bool(8));
  ASSERT_NE(st->indices[0].as<Ramp>(), nullptr);
  for (const Load* ld : collect<Load>(v)) EXPECT_TRUE(ld->predicate.defined());
  EXPECT_TRUE(same_behavior(s, v, {a, b}));
}

TEST(VectorizeLoops, GuardWithElseAndInvariantLoadUnderTheMask) {
  // 7 split by 3; the else branch writes elsewhere; an invariant load sits under the mask.
  Buffer a = Buffer::make("A", DataType::Int32(), {7});
  Buffer s0 = Buffer::make("S", DataType::Int32(), {3});
  Buffer b = Buffer::make("B", DataType::Int32(), {9});
  Var xo("xo"), xi("xi");
  Expr x = xo * 3 + xi;
  Stmt guarded =
      IfThenElse::make(x < 7, Store::make(b, Load::make(a, {x}) * Load::make(s0, {xo}), {x}),
                       Store::make(b, -1, {x}));
  Stmt s = loop(xo, 0, 3, loop(xi, 0, 3, guarded, kVec));
  Stmt v = vectorize_loops(s);
  EXPECT_TRUE(loops_of_kind(v, kVec).empty());
  EXPECT_EQ(count<IfThenElse>(v), 0) << v;
  for (const Store* st : collect<Store>(v)) EXPECT_TRUE(st->predicate.defined());
  for (const Load* ld : collect<Load>(v)) {
    EXPECT_TRUE(ld->predicate.defined());
    EXPECT_EQ(ld->type.lanes(), 3);
  }
  EXPECT_TRUE(same_behavior(s, v, {a, s0, b}));
}

TEST(VectorizeLoops, InvariantConditionStaysABranch) {
  Buffer a = Buffer::make("A", DataType::Float32(), {4, 8});
  Buffer b = Buffer::make("B", DataType::Float32(), {4, 8});
  Var i("i"), j("j");
  Stmt s = loop(i, 0, 4,
                loop(j, 0, 8,
                     IfThenElse::make(i < 2, Store::make(b, Load::make(a, {i, j}), {i, j}),
                                      Store::make(b, 0.0f, {i, j})),
                     kVec));
  Stmt v = vectorize_loops(s);
  EXPECT_EQ(count<IfThenElse>(v), 1);
  EXPECT_EQ(ramp_stores(v), 2) << v;
  EXPECT_TRUE(same_behavior(s, v, {a, b}));
}

TEST(VectorizeLoops, GuardAroundAnInnerLoopMasksEveryStoreInIt) {
  Buffer a = Buffer::make("A", DataType::Int32(), {5, 4});
  Buffer c = Buffer::make("C", DataType::Int32(), {5});
  Var xo("xo"), xi("xi"), k("k");
  Expr x = xo * 4 + xi;
  Stmt body = IfThenElse::make(
      x < 5,
      Seq::make(Store::make(c, 0, {x}),
                loop(k, 0, 4, Store::make(c, Load::make(c, {x}) + Load::make(a, {x, k}), {x}))));
  Stmt s = loop(xo, 0, 2, loop(xi, 0, 4, body, kVec));
  Stmt v = vectorize_loops(s);
  EXPECT_TRUE(loops_of_kind(v, kVec).empty()) << v;
  for (const Store* st : collect<Store>(v)) EXPECT_TRUE(st->predicate.defined());
  EXPECT_TRUE(same_behavior(s, v, {a, c}));
}

TEST(VectorizeLoops, InnerLoopDependingOnTheVariableFallsBackToSerial) {
  Buffer c = Buffer::make("C", DataType::Int32(), {8});
  Var i("i"), k("k");
  Stmt s = loop(
      i, 0, 8,
      Seq::make(Store::make(c, 0, {i}), loop(k, 0, i, Store::make(c, Load::make(c, {i}) + k, {i}))),
      kVec);
  Stmt v = vectorize_loops(s);
  EXPECT_EQ(loops_of_kind(v, ForKind::kSerial).size(), 2u) << v;
  EXPECT_EQ(count<Ramp>(v), 0);
  EXPECT_TRUE(same_behavior(s, v, {c}));
}

TEST(VectorizeLoops, AllocateInsideFallsBackToSerial) {
  Buffer a = Buffer::make("A", DataType::Int32(), {8});
  Buffer t = Buffer::make("T", DataType::Int32(), {1});
  Var i("i");
  Stmt s = loop(i, 0, 8,
                Allocate::make(t, Seq::make(Store::make(t, Load::make(a, {i}) * 2, {0}),
                                            Store::make(a, Load::make(t, {0}) + 1, {i}))),
                kVec);
  Stmt v = vectorize_loops(s);
  ASSERT_NE(v.as<For>(), nullptr);
  EXPECT_EQ(v.as<For>()->kind, ForKind::kSerial);
  EXPECT_TRUE(same_behavior(s, v, {a}));
}

TEST(VectorizeLoops, NonConstantExtentFallsBackToSerial) {
  Buffer a = Buffer::make("A", DataType::Int32(), {8});
  Var i("i"), n("n");
  Stmt s = loop(i, 0, n, Store::make(a, Load::make(a, {i}) + 1, {i}), kVec);
  Stmt v = vectorize_loops(s);
  ASSERT_NE(v.as<For>(), nullptr);
  EXPECT_EQ(v.as<For>()->kind, ForKind::kSerial);
  EXPECT_TRUE(same_behavior(s, v, {a}, {{n, 6}}));
}

TEST(VectorizeLoops, NestedVectorizedLoopsVectorizeTheInnerOne) {
  Buffer a = Buffer::make("A", DataType::Float32(), {4, 4});
  Var i("i"), j("j");
  Stmt s = loop(i, 0, 4, loop(j, 0, 4, Store::make(a, Load::make(a, {i, j}) + 1.0f, {i, j}), kVec),
                kVec);
  Stmt v = vectorize_loops(s);
  EXPECT_TRUE(loops_of_kind(v, kVec).empty());
  EXPECT_EQ(loops_of_kind(v, ForKind::kSerial).size(), 1u) << v;
  EXPECT_EQ(ramp_stores(v), 1);
  EXPECT_TRUE(same_behavior(s, v, {a}));
}

TEST(VectorizeLoops, ExtentOneBindsTheVariable) {
  Buffer a = Buffer::make("A", DataType::Int32(), {8});
  Var i("i");
  Stmt s = loop(i, 5, 1, Store::make(a, Load::make(a, {i}) + i, {i}), kVec);
  Stmt v = vectorize_loops(s);
  EXPECT_EQ(count<For>(v), 0);
  EXPECT_TRUE(same_behavior(s, v, {a}));
}

TEST(VectorizeLoops, MultiDimensionalAccessKeepsScalarIndices) {
  Buffer a = Buffer::make("A", DataType::Float32(), {3, 8});
  Buffer b = Buffer::make("B", DataType::Float32(), {8, 3});
  Var i("i"), j("j");
  Stmt s = loop(i, 0, 3, loop(j, 0, 8, Store::make(b, Load::make(a, {i, j}), {j, i}), kVec));
  Stmt v = vectorize_loops(s);
  const Store* st = collect<Store>(v)[0];
  EXPECT_NE(st->indices[0].as<Ramp>(), nullptr);
  EXPECT_EQ(st->indices[1].type(), DataType::Int32());
  EXPECT_TRUE(same_behavior(s, v, {a, b}));
}

TEST(VectorizeLoops, ProgramWithoutVectorizedLoopsIsUnchanged) {
  Buffer a = Buffer::make("A", DataType::Int32(), {8});
  Var i("i");
  Stmt s = loop(i, 0, 8, Store::make(a, Load::make(a, {i}) + 1, {i}));
  EXPECT_TRUE(vectorize_loops(s).same_as(s));
}

}  // namespace
}  // namespace anvil::transform
