#include "anvil/transform/fresh_binders.h"

#include <gtest/gtest.h>

#include "anvil/ir/equal.h"
#include "anvil/ir/op.h"
#include "anvil/transform/flatten_storage.h"
#include "testing/ir_interpreter.h"
#include "transform/ir_queries.h"

namespace anvil::transform {
namespace {

using namespace ir;
using testing::collect;

TEST(FreshBinders, EveryBinderIsNewAndTheCopyIsEqualUpToRenaming) {
  Buffer a = Buffer::make("A", DataType::Int32(), {4, 3});
  Buffer t = Buffer::make("T", DataType::Int32(), {3});
  Var n("n"), i("i"), j("j"), x("x"), y("y");
  Stmt s = For::make(
      i, 0, 4, ForKind::kSerial,
      Allocate::make(
          t, Seq::make(For::make(j, 0, 3, ForKind::kSerial,
                                 LetStmt::make(x, Load::make(a, {i, j}) + n,
                                               Store::make(t, Let::make(y, x * 2, y + 1), {j}))),
                       Store::make(a, Load::make(t, {2}), {i, 0}))));
  Stmt copy = with_fresh_binders(s);
  EXPECT_TRUE(structural_equal(s, copy));
  EXPECT_FALSE(collect<For>(copy)[0]->var.same_as(i));
  EXPECT_FALSE(collect<For>(copy)[1]->var.same_as(j));
  EXPECT_FALSE(collect<LetStmt>(copy)[0]->var.same_as(x));
  EXPECT_FALSE(collect<Let>(copy)[0]->var.same_as(y));
  const Allocate* alloc = collect<Allocate>(copy)[0];
  EXPECT_FALSE(alloc->buffer->data.same_as(t->data));
  for (const Store* st : collect<Store>(copy)) {
    // The free buffer stays; the allocated one is the copy's.
    EXPECT_TRUE(st->buffer.same_as(a) || st->buffer.same_as(alloc->buffer));
  }
  // The free variable n is still n.
  bool uses_n = false;
  for (const Variable* v : collect<Variable>(copy)) uses_n |= v == n.get();
  EXPECT_TRUE(uses_n);
  EXPECT_TRUE(testing::same_behavior(s, copy, {a}, {{n, 3}}));
}

TEST(FreshBinders, FlatViewsOfAnAllocationFollowIt) {
  Buffer out = Buffer::make("Out", DataType::Int32(), {6});
  Buffer t = Buffer::make("T", DataType::Int32(), {2, 3});
  Var i("i");
  Stmt s = flatten_storage(Allocate::make(
      t, Seq::make(
             For::make(i, 0, 6, ForKind::kSerial, Store::make(Buffer::make_flat(t, 6), i * i, {i})),
             Store::make(out, Load::make(t, {1, 2}), {0}))));
  Stmt copy = with_fresh_binders(s);
  const Allocate* alloc = collect<Allocate>(copy)[0];
  for (const Store* st : collect<Store>(copy)) {
    if (st->buffer->name == "T") {
      EXPECT_TRUE(st->buffer->data.same_as(alloc->buffer->data));
    }
  }
  for (const Load* ld : collect<Load>(copy))
    EXPECT_TRUE(ld->buffer->data.same_as(alloc->buffer->data));
  EXPECT_TRUE(testing::same_behavior(s, copy, {out}));
}

}  // namespace
}  // namespace anvil::transform
