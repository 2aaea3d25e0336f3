#include "anvil/transform/unroll_loops.h"

#include <gtest/gtest.h>

#include <set>

#include "anvil/ir/op.h"
#include "anvil/ir/printer.h"
#include "testing/ir_interpreter.h"
#include "transform/ir_queries.h"

namespace anvil::transform {
namespace {

using namespace ir;
using testing::collect;
using testing::count;
using testing::same_behavior;

Stmt loop(const Var& v, Expr min, Expr extent, Stmt body, ForKind kind = ForKind::kSerial) {
  return For::make(v, std::move(min), std::move(extent), kind, std::move(body));
}

const ForKind kUnr = ForKind::kUnrolled;

TEST(UnrollLoops, ConstantExtentBecomesASequenceOfSimplifiedCopies) {
  Buffer a = Buffer::make("A", DataType::Int32(), {12});
  Var i("i"), j("j");
  Stmt s = loop(
      i, 0, 3,
      loop(j, 1, 4, Store::make(a, Load::make(a, {i * 4 + j - 1}) * 2 + j, {i * 4 + j - 1}), kUnr));
  Stmt u = unroll_loops(s);
  EXPECT_EQ(count<For>(u), 1);
  ASSERT_EQ(count<Store>(u), 4);
  EXPECT_EQ(to_string(collect<Store>(u)[0]->indices[0]), "i*4");
  EXPECT_EQ(to_string(collect<Store>(u)[3]->indices[0]), "i*4 + 3");
  EXPECT_TRUE(same_behavior(s, u, {a}));
}

TEST(UnrollLoops, NestedUnrolledLoopsUnrollFully) {
  Buffer a = Buffer::make("A", DataType::Int32(), {3, 2});
  Var i("i"), j("j");
  Stmt s = loop(i, 0, 3, loop(j, 0, 2, Store::make(a, Load::make(a, {i, j}) + i * j, {i, j}), kUnr),
                kUnr);
  Stmt u = unroll_loops(s);
  EXPECT_EQ(count<For>(u), 0);
  EXPECT_EQ(count<Store>(u), 6);
  EXPECT_TRUE(same_behavior(s, u, {a}));
}

TEST(UnrollLoops, CopiesBindFreshVariables) {
  // Each copy of the body has its own inner loop variable, let variable and allocation.
  Buffer a = Buffer::make("A", DataType::Int32(), {3, 4});
  Buffer t = Buffer::make("T", DataType::Int32(), {4});
  Var i("i"), k("k"), k2("k"), x("x");
  Stmt body = Allocate::make(
      t, Seq::make(
             loop(k, 0, 4, LetStmt::make(x, Load::make(a, {i, k}) + 1, Store::make(t, x * x, {k}))),
             loop(k2, 0, 4, Store::make(a, Load::make(t, {3 - k2}), {i, k2}))));
  Stmt s = loop(i, 0, 3, body, kUnr);
  Stmt u = unroll_loops(s);
  std::set<const Variable*> loop_vars, let_vars, data;
  for (const For* f : collect<For>(u)) EXPECT_TRUE(loop_vars.insert(f->var.get()).second);
  for (const LetStmt* l : collect<LetStmt>(u)) EXPECT_TRUE(let_vars.insert(l->var.get()).second);
  for (const Allocate* al : collect<Allocate>(u))
    EXPECT_TRUE(data.insert(al->buffer->data.get()).second);
  EXPECT_EQ(loop_vars.size(), 6u);
  EXPECT_EQ(let_vars.size(), 3u);
  EXPECT_EQ(data.size(), 3u);
  // The stores inside each copy use that copy's allocation.
  for (const Allocate* al : collect<Allocate>(u)) {
    for (const Store* st : collect<Store>(al->body)) {
      if (st->buffer->name == "T") {
        EXPECT_TRUE(st->buffer.same_as(al->buffer));
      }
    }
  }
  EXPECT_TRUE(same_behavior(s, u, {a}));
}

TEST(UnrollLoops, GuardsTheCopiesDecideAreSimplifiedAway) {
  // 7 split by 3 with the inner loop unrolled: the tail copies resolve their guards.
  Buffer a = Buffer::make("A", DataType::Int32(), {7});
  Var xi("xi");
  Stmt s = loop(xi, 0, 3,
                IfThenElse::make(6 + xi < 7, Store::make(a, Load::make(a, {6 + xi}) + 5, {6 + xi})),
                kUnr);
  Stmt u = unroll_loops(s);
  EXPECT_EQ(count<IfThenElse>(u), 0) << u;
  EXPECT_EQ(count<Store>(u), 1) << u;
  EXPECT_TRUE(same_behavior(s, u, {a}));
}

TEST(UnrollLoops, NonConstantExtentBecomesSerial) {
  Buffer a = Buffer::make("A", DataType::Int32(), {10});
  Var i("i"), n("n");
  Stmt s = loop(i, 0, n, Store::make(a, Load::make(a, {i}) + 1, {i}), kUnr);
  Stmt u = unroll_loops(s);
  ASSERT_NE(u.as<For>(), nullptr);
  EXPECT_EQ(u.as<For>()->kind, ForKind::kSerial);
  EXPECT_TRUE(same_behavior(s, u, {a}, {{n, 7}}));
}

TEST(UnrollLoops, ZeroExtentIsNothing) {
  Buffer a = Buffer::make("A", DataType::Int32(), {4});
  Var i("i");
  Stmt s = loop(i, 0, 0, Store::make(a, 1, {i}), kUnr);
  Stmt u = unroll_loops(s);
  EXPECT_EQ(count<Store>(u), 0);
  EXPECT_TRUE(same_behavior(s, u, {a}));
}

TEST(UnrollLoops, PragmaUnrollUnrollsASerialLoop) {
  Buffer a = Buffer::make("A", DataType::Float32(), {5});
  Var i("i");
  Stmt s = AttrStmt::make("pragma_unroll", i, 1,
                          loop(i, 0, 5, Store::make(a, Load::make(a, {i}) * 3.0f, {i})));
  Stmt u = unroll_loops(s);
  EXPECT_EQ(count<AttrStmt>(u), 0);
  EXPECT_EQ(count<For>(u), 0);
  EXPECT_EQ(count<Store>(u), 5);
  EXPECT_TRUE(same_behavior(s, u, {a}));
}

TEST(UnrollLoops, PragmaUnrollOfZeroOrOfAnotherLoopIsKept) {
  Buffer a = Buffer::make("A", DataType::Float32(), {5});
  Var i("i"), other("other");
  Stmt body = loop(i, 0, 5, Store::make(a, Load::make(a, {i}) * 3.0f, {i}));
  Stmt off = AttrStmt::make("pragma_unroll", i, 0, body);
  EXPECT_TRUE(unroll_loops(off).same_as(off));
  Stmt elsewhere = AttrStmt::make("pragma_unroll", other, 1, body);
  EXPECT_TRUE(unroll_loops(elsewhere).same_as(elsewhere));
}

TEST(UnrollLoops, OtherLoopsAreUnchanged) {
  Buffer a = Buffer::make("A", DataType::Int32(), {8});
  Var i("i");
  Stmt s = loop(i, 0, 8, Store::make(a, Load::make(a, {i}) + 1, {i}), ForKind::kParallel);
  EXPECT_TRUE(unroll_loops(s).same_as(s));
}

}  // namespace
}  // namespace anvil::transform
