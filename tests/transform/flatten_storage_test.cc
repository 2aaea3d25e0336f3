#include "anvil/transform/flatten_storage.h"

#include <gtest/gtest.h>

#include "anvil/ir/equal.h"
#include "anvil/ir/op.h"
#include "anvil/ir/printer.h"
#include "testing/ir_interpreter.h"
#include "transform/ir_queries.h"

namespace anvil::transform {
namespace {

using namespace ir;
using testing::collect;
using testing::same_behavior;

Stmt loop(const Var& v, Expr extent, Stmt body, ForKind kind = ForKind::kSerial) {
  return For::make(v, 0, std::move(extent), kind, std::move(body));
}

// Every Load and Store of `s` indexes a one-dimensional buffer with one index.
void expect_flat(const Stmt& s) {
  for (const Load* op : collect<Load>(s)) {
    EXPECT_EQ(op->buffer.ndim(), 1) << op->buffer->name;
    EXPECT_TRUE(op->buffer->strides.empty()) << op->buffer->name;
  }
  for (const Store* op : collect<Store>(s)) {
    EXPECT_EQ(op->buffer.ndim(), 1) << op->buffer->name;
    EXPECT_TRUE(op->buffer->strides.empty()) << op->buffer->name;
  }
  for (const Allocate* op : collect<Allocate>(s)) EXPECT_EQ(op->buffer.ndim(), 1);
}

TEST(FlattenStorage, TwoDimensionalCopyIsRowMajor) {
  Buffer a = Buffer::make("A", DataType::Float32(), {4, 5});
  Buffer b = Buffer::make("B", DataType::Float32(), {4, 5});
  Var i("i"), j("j");
  Stmt s = loop(i, 4, loop(j, 5, Store::make(b, Load::make(a, {i, j}) * 2.0f + 1.0f, {i, j})));
  Stmt f = flatten_storage(s);
  expect_flat(f);
  const Store* store = collect<Store>(f)[0];
  EXPECT_EQ(to_string(store->indices[0]), "i*5 + j");
  EXPECT_TRUE(store->buffer->data.same_as(b->data));
  EXPECT_EQ(to_string(store->buffer->shape[0]), "20");
  EXPECT_TRUE(same_behavior(s, f, {a, b}));
}

TEST(FlattenStorage, AllocateAndItsAccessesShareOneFlatBuffer) {
  Buffer a = Buffer::make("A", DataType::Float32(), {3, 7});
  Buffer out = Buffer::make("Out", DataType::Float32(), {3, 7});
  Buffer t = Buffer::make("T", DataType::Float32(), {3, 7});
  Var i("i"), j("j"), i2("i"), j2("j");
  Stmt produce = loop(i, 3, loop(j, 7, Store::make(t, Load::make(a, {i, j}) + 1.0f, {i, j})));
  Stmt consume =
      loop(i2, 3, loop(j2, 7, Store::make(out, Load::make(t, {i2, 6 - j2}) * 3.0f, {i2, j2})));
  Stmt s = Allocate::make(t, Seq::make(produce, consume));
  Stmt f = flatten_storage(s);
  expect_flat(f);
  const Allocate* alloc = f.as<Allocate>();
  ASSERT_NE(alloc, nullptr);
  EXPECT_TRUE(alloc->buffer->data.same_as(t->data));
  EXPECT_EQ(to_string(alloc->buffer->shape[0]), "21");
  for (const Store* st : collect<Store>(f)) {
    if (st->buffer->data.same_as(t->data)) {
      EXPECT_TRUE(st->buffer.same_as(alloc->buffer));
    }
  }
  for (const Load* ld : collect<Load>(f)) {
    if (ld->buffer->data.same_as(t->data)) {
      EXPECT_TRUE(ld->buffer.same_as(alloc->buffer));
    }
  }
  EXPECT_TRUE(same_behavior(s, f, {a, out}));
}

TEST(FlattenStorage, ExplicitStridesGiveThePaddedLayout) {
  // storage_align: rows of 5 elements padded to 8.
  Buffer a = Buffer::make("A", DataType::Int32(), {4, 5});
  Buffer out = Buffer::make("Out", DataType::Int32(), {4, 5});
  Buffer t = Buffer::make("T", DataType::Int32(), {4, 5}, {8, 1});
  Var i("i"), j("j"), i2("i"), j2("j");
  Stmt s = Allocate::make(
      t, Seq::make(loop(i, 4, loop(j, 5, Store::make(t, Load::make(a, {i, j}) * 7, {i, j}))),
                   loop(i2, 4, loop(j2, 5, Store::make(out, Load::make(t, {i2, j2}), {i2, j2})))));
  Stmt f = flatten_storage(s);
  expect_flat(f);
  const Allocate* alloc = f.as<Allocate>();
  ASSERT_NE(alloc, nullptr);
  EXPECT_EQ(to_string(alloc->buffer->shape[0]), "29");  // 3*8 + 4*1 + 1
  EXPECT_EQ(to_string(collect<Store>(f)[0]->indices[0]), "i*8 + j");
  EXPECT_TRUE(same_behavior(s, f, {a, out}));
}

TEST(FlattenStorage, ExplicitStridesOnAFreeBuffer) {
  Buffer a = Buffer::make("A", DataType::Int32(), {3, 4}, {1, 3});  // column-major
  Buffer out = Buffer::make("Out", DataType::Int32(), {3, 4});
  Var i("i"), j("j");
  Stmt s = loop(i, 3, loop(j, 4, Store::make(out, Load::make(a, {i, j}), {i, j})));
  Stmt f = flatten_storage(s);
  expect_flat(f);
  EXPECT_EQ(to_string(collect<Load>(f)[0]->indices[0]), "i + j*3");
  EXPECT_TRUE(same_behavior(s, f, {a, out}));
}

TEST(FlattenStorage, VectorAccessAlongTheLastDimensionIsARamp) {
  Buffer a = Buffer::make("A", DataType::Float32(), {4, 8});
  Buffer b = Buffer::make("B", DataType::Float32(), {4, 8});
  Var i("i"), jo("jo");
  Expr row = Broadcast::make(i, 4);
  Expr cols = Ramp::make(jo * 4, 1, 4);
  Stmt s = loop(i, 4, loop(jo, 2, Store::make(b, Load::make(a, {row, cols}), {row, cols})));
  Stmt f = flatten_storage(s);
  expect_flat(f);
  const Store* store = collect<Store>(f)[0];
  const Ramp* ramp = store->indices[0].as<Ramp>();
  ASSERT_NE(ramp, nullptr) << store->indices[0];
  EXPECT_EQ(to_string(ramp->base), "i*8 + jo*4");
  EXPECT_TRUE(is_one(ramp->stride));
  ASSERT_NE(collect<Load>(f)[0]->indices[0].as<Ramp>(), nullptr);
  EXPECT_TRUE(same_behavior(s, f, {a, b}));
}

TEST(FlattenStorage, VectorAccessAlongTheFirstDimensionIsAStridedRamp) {
  Buffer a = Buffer::make("A", DataType::Float32(), {4, 5});
  Buffer b = Buffer::make("B", DataType::Float32(), {4, 5});
  Var j("j");
  Expr rows = Ramp::make(0, 1, 4);
  Stmt s = loop(j, 5, Store::make(b, Load::make(a, {rows, Broadcast::make(j, 4)}), {rows, j}));
  Stmt f = flatten_storage(s);
  const Ramp* ramp = collect<Store>(f)[0]->indices[0].as<Ramp>();
  ASSERT_NE(ramp, nullptr);
  EXPECT_EQ(to_string(ramp->base), "j");
  EXPECT_TRUE(is_const_int(ramp->stride, 5));
  EXPECT_TRUE(same_behavior(s, f, {a, b}));
}

TEST(FlattenStorage, PredicatedVectorAccessKeepsItsPredicate) {
  Buffer a = Buffer::make("A", DataType::Float32(), {2, 6});
  Buffer b = Buffer::make("B", DataType::Float32(), {2, 6});
  Var i("i");
  Expr cols = Ramp::make(4, 1, 4);
  Expr mask = cols < Broadcast::make(Expr(6), 4);
  Expr row = Broadcast::make(i, 4);
  Stmt s = loop(i, 2, Store::make(b, Load::make(a, {row, cols}, mask), {row, cols}, mask));
  Stmt f = flatten_storage(s);
  expect_flat(f);
  EXPECT_TRUE(collect<Store>(f)[0]->predicate.same_as(mask));
  EXPECT_TRUE(collect<Load>(f)[0]->predicate.same_as(mask));
  EXPECT_TRUE(same_behavior(s, f, {a, b}));
}

TEST(FlattenStorage, ZeroDimensionalBufferHasOneElement) {
  Buffer a = Buffer::make("A", DataType::Float32(), {6});
  Buffer acc = Buffer::make("acc", DataType::Float32(), {});
  Buffer out = Buffer::make("Out", DataType::Float32(), {});
  Var k("k");
  Stmt s = Allocate::make(
      acc, Seq::make({Store::make(acc, 0.0f, {}),
                      loop(k, 6, Store::make(acc, Load::make(acc, {}) + Load::make(a, {k}), {})),
                      Store::make(out, Load::make(acc, {}), {})}));
  Stmt f = flatten_storage(s);
  expect_flat(f);
  EXPECT_EQ(to_string(f.as<Allocate>()->buffer->shape[0]), "1");
  EXPECT_TRUE(same_behavior(s, f, {a, out}));
}

TEST(FlattenStorage, SymbolicShapes) {
  Var n("n"), m("m");
  Buffer a = Buffer::make("A", DataType::Int32(), {n, m});
  Buffer b = Buffer::make("B", DataType::Int32(), {m, n});
  Var i("i"), j("j");
  Stmt s = loop(i, n, loop(j, m, Store::make(b, Load::make(a, {i, j}) + i, {j, i})));
  Stmt f = flatten_storage(s);
  expect_flat(f);
  EXPECT_EQ(to_string(collect<Store>(f)[0]->indices[0]), "i + n*j");
  EXPECT_TRUE(same_behavior(s, f, {a, b}, {{n, 5}, {m, 3}}));
}

TEST(FlattenStorage, ThreeDimensionsWithInt64Extents) {
  DataType i64 = DataType::Int64();
  Buffer a = Buffer::make("A", DataType::Float32(),
                          {make_const(i64, 2), make_const(i64, 3), make_const(i64, 4)});
  Buffer b = Buffer::make("B", DataType::Float32(), {2, 3, 4});
  Var i("i"), j("j"), k("k");
  Stmt s = loop(
      i, 2, loop(j, 3, loop(k, 4, Store::make(b, Load::make(a, {i, 2 - j, k}), {i, j, 3 - k}))));
  Stmt f = flatten_storage(s);
  expect_flat(f);
  EXPECT_EQ(collect<Load>(f)[0]->indices[0].type(), i64);
  EXPECT_EQ(collect<Store>(f)[0]->indices[0].type(), DataType::Int32());
  EXPECT_TRUE(same_behavior(s, f, {a, b}));
}

TEST(FlattenStorage, VectorAccessOfAnInt64BufferIsAnInt64Ramp) {
  DataType i64 = DataType::Int64();
  Buffer a = Buffer::make("A", DataType::Float32(), {make_const(i64, 3), make_const(i64, 8)});
  Var i("i");
  Expr row = Broadcast::make(i, 8);
  Expr cols = Ramp::make(0, 1, 8);
  Stmt s = loop(i, 3, Store::make(a, Load::make(a, {row, cols}) + 1.0f, {row, cols}));
  Stmt f = flatten_storage(s);
  const Ramp* ramp = collect<Store>(f)[0]->indices[0].as<Ramp>();
  ASSERT_NE(ramp, nullptr) << f;
  EXPECT_EQ(ramp->type, DataType::Int64(8));
  EXPECT_TRUE(same_behavior(s, f, {a}));
}

TEST(FlattenStorage, FlatProgramIsReturnedUnchanged) {
  Buffer a = Buffer::make("A", DataType::Float32(), {16});
  Var i("i");
  Stmt s = loop(i, 16, Store::make(a, Load::make(a, {i}) + 1.0f, {i}));
  EXPECT_TRUE(flatten_storage(s).same_as(s));
}

TEST(FlattenStorage, LoweredFuncArgumentsKeepTheirShapesAndData) {
  Buffer a = Buffer::make("A", DataType::Float32(), {4, 6});
  Buffer b = Buffer::make("B", DataType::Float32(), {6, 4});
  Var i("i"), j("j");
  LoweredFunc fn{
      "transpose", {a, b}, loop(i, 4, loop(j, 6, Store::make(b, Load::make(a, {i, j}), {j, i})))};
  LoweredFunc flat = flatten_storage(fn);
  ASSERT_EQ(flat.args.size(), 2u);
  EXPECT_TRUE(flat.args[0].same_as(a));
  EXPECT_TRUE(flat.args[1].same_as(b));
  expect_flat(flat.body);
  const Load* load = collect<Load>(flat.body)[0];
  const Store* store = collect<Store>(flat.body)[0];
  EXPECT_TRUE(load->buffer->data.same_as(flat.args[0]->data));
  EXPECT_TRUE(store->buffer->data.same_as(flat.args[1]->data));
  EXPECT_EQ(to_string(load->buffer->shape[0]), "24");
  EXPECT_TRUE(same_behavior(fn.body, flat.body, {a, b}));
}

TEST(FlattenStorage, FlattenBufferKeepsNameTypeScopeAndData) {
  Buffer t = Buffer::make("T", DataType::Int(8), {2, 3}, {}, MemoryScope::kShared);
  Buffer f = flatten_buffer(t);
  EXPECT_EQ(f->name, "T");
  EXPECT_EQ(f->dtype, DataType::Int(8));
  EXPECT_EQ(f->scope, MemoryScope::kShared);
  EXPECT_TRUE(f->data.same_as(t->data));
  EXPECT_EQ(to_string(f->shape[0]), "6");
  Buffer one = Buffer::make("U", DataType::Int32(), {7});
  EXPECT_TRUE(flatten_buffer(one).same_as(one));
}

}  // namespace
}  // namespace anvil::transform
