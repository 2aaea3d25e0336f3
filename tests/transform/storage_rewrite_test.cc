#include "anvil/transform/storage_rewrite.h"

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

Stmt loop(const Var& v, Expr extent, Stmt body) {
  return For::make(v, 0, std::move(extent), ForKind::kSerial, std::move(body));
}

// dst[i] = src[i] * m + c for i in [0, n).
Stmt stage(const Buffer& dst, const Buffer& src, int n, int m, int c) {
  Var i("i");
  return loop(i, n, Store::make(dst, Load::make(src, {i}) * m + c, {i}));
}

Buffer flat(const char* name, int n, DataType t = DataType::Int32(),
            MemoryScope scope = MemoryScope::kGlobal) {
  return Buffer::make(name, t, {n}, {}, scope);
}

// The sizes of the allocations of s, in order.
std::vector<int64_t> allocation_sizes(const Stmt& s) {
  std::vector<int64_t> out;
  for (const Allocate* a : collect<Allocate>(s)) out.push_back(*as_const_int(a->buffer->shape[0]));
  return out;
}

TEST(StorageRewrite, ChainOfStagesReusesTheFirstBufferForTheThird) {
  // in -> T1 -> T2 -> T3 -> out, allocations nested as the schedule attaches them.
  Buffer in = flat("In", 16), out = flat("Out", 16);
  Buffer t1 = flat("T1", 16), t2 = flat("T2", 16), t3 = flat("T3", 12);
  Stmt s = Allocate::make(
      t1, Seq::make(stage(t1, in, 16, 2, 1),
                    Allocate::make(
                        t2, Seq::make(stage(t2, t1, 16, 3, 0),
                                      Allocate::make(t3, Seq::make(stage(t3, t2, 12, 1, 5),
                                                                   stage(out, t3, 12, 2, 0)))))));
  Stmt r = storage_rewrite(s);
  EXPECT_EQ(count<Allocate>(r), 2) << r;
  std::set<const Variable*> data;
  for (const Store* st : collect<Store>(r)) data.insert(st->buffer->data.get());
  EXPECT_EQ(data.size(), 3u) << r;  // T1 (shared with T3), T2, Out
  EXPECT_TRUE(same_behavior(s, r, {in, out}));
}

TEST(StorageRewrite, SiblingAllocationsShareTheLargerSize) {
  Buffer in = flat("In", 20), out = flat("Out", 20);
  Buffer a = flat("A", 8), b = flat("B", 20);
  Stmt s = Seq::make(Allocate::make(a, Seq::make(stage(a, in, 8, 2, 0), stage(out, a, 8, 1, 1))),
                     Allocate::make(b, Seq::make(stage(b, in, 20, 3, 0), stage(out, b, 20, 1, 2))));
  Stmt r = storage_rewrite(s);
  EXPECT_EQ(allocation_sizes(r), std::vector<int64_t>{20}) << r;
  EXPECT_TRUE(same_behavior(s, r, {in, out}));
}

TEST(StorageRewrite, DifferentElementTypesOrScopesDoNotShare) {
  Buffer in = flat("In", 8), out = flat("Out", 8);
  Buffer a = flat("A", 8), b = flat("B", 8, DataType::Int(16));
  Buffer c = flat("C", 8, DataType::Int32(), MemoryScope::kLocal);
  Stmt s = Seq::make(
      {Allocate::make(a, Seq::make(stage(a, in, 8, 2, 0), stage(out, a, 8, 1, 1))),
       Allocate::make(
           b, Seq::make(Store::make(b, cast(DataType::Int(16), Load::make(in, {1})), {0}),
                        Store::make(out, cast(DataType::Int32(), Load::make(b, {0})), {0}))),
       Allocate::make(c, Seq::make(stage(c, in, 8, 3, 0), stage(out, c, 8, 1, 1)))});
  Stmt r = storage_rewrite(s);
  EXPECT_TRUE(r.same_as(s)) << r;
  EXPECT_TRUE(same_behavior(s, r, {in, out}));
}

TEST(StorageRewrite, OverlappingLifetimesDoNotShare) {
  Buffer in = flat("In", 8), out = flat("Out", 8);
  Buffer a = flat("A", 8), b = flat("B", 8);
  Var i("i");
  // A is still read after B is written.
  Stmt s = Allocate::make(
      a, Allocate::make(
             b, Seq::make(
                    {stage(a, in, 8, 2, 0), stage(b, in, 8, 3, 0),
                     loop(i, 8, Store::make(out, Load::make(a, {i}) + Load::make(b, {i}), {i}))})));
  Stmt r = storage_rewrite(s);
  EXPECT_TRUE(r.same_as(s)) << r;
  EXPECT_TRUE(same_behavior(s, r, {in, out}));
}

TEST(StorageRewrite, RegionsInsideLoopsStayInsideTheirLoop) {
  // Per row: two temporaries in sequence share one allocation, inside the row loop.
  Buffer in = flat("In", 24), out = flat("Out", 24);
  Buffer a = flat("A", 6), b = flat("B", 6);
  Var r_("row"), i("i"), j("j"), k("k"), l("l");
  Stmt row = Seq::make(
      Allocate::make(a,
                     Seq::make(loop(i, 6, Store::make(a, Load::make(in, {r_ * 6 + i}) * 2, {i})),
                               loop(j, 6, Store::make(out, Load::make(a, {5 - j}), {r_ * 6 + j})))),
      Allocate::make(
          b, Seq::make(loop(k, 6, Store::make(b, Load::make(out, {r_ * 6 + k}) + 1, {k})),
                       loop(l, 6, Store::make(out, Load::make(b, {l}) * 3, {r_ * 6 + l})))));
  Stmt s = loop(r_, 4, row);
  Stmt r = storage_rewrite(s);
  const For* f = r.as<For>();
  ASSERT_NE(f, nullptr) << r;
  EXPECT_NE(f->body.as<Allocate>(), nullptr) << r;
  EXPECT_EQ(count<Allocate>(r), 1) << r;
  EXPECT_TRUE(same_behavior(s, r, {in, out}));
}

TEST(StorageRewrite, MultiDimensionalAndSymbolicAllocationsAreLeftAlone) {
  Buffer in = flat("In", 8), out = flat("Out", 8);
  Var n("n"), i("i"), j("j");
  Buffer a = Buffer::make("A", DataType::Int32(), {2, 4});
  Buffer b = Buffer::make("B", DataType::Int32(), {n});
  Stmt s = Seq::make(
      Allocate::make(a, Seq::make(Store::make(a, Load::make(in, {0}), {1, 3}),
                                  Store::make(out, Load::make(a, {1, 3}), {0}))),
      Allocate::make(b, Seq::make(loop(i, n, Store::make(b, Load::make(in, {i}), {i})),
                                  loop(j, n, Store::make(out, Load::make(b, {j}) + 1, {j})))));
  Stmt r = storage_rewrite(s);
  EXPECT_TRUE(r.same_as(s)) << r;
}

TEST(StorageRewrite, GreedyReuseAcrossManyStages) {
  // Six stages in a row, each reading the previous one: two buffers are enough.
  Buffer in = flat("In", 10), out = flat("Out", 10);
  std::vector<Buffer> t;
  for (int k = 0; k < 6; ++k) t.push_back(flat(("T" + std::to_string(k)).c_str(), 10));
  Stmt body = stage(out, t[5], 10, 1, 0);
  for (int k = 5; k >= 0; --k) {
    body = Allocate::make(t[k], Seq::make(stage(t[k], k == 0 ? in : t[k - 1], 10, 1, k), body));
  }
  Stmt r = storage_rewrite(body);
  EXPECT_EQ(count<Allocate>(r), 2) << r;
  EXPECT_TRUE(same_behavior(body, r, {in, out}));
}

TEST(StorageRewrite, ProgramWithoutAllocationsIsUnchanged) {
  Buffer in = flat("In", 8), out = flat("Out", 8);
  Stmt s = Seq::make(stage(out, in, 8, 2, 0), stage(out, out, 8, 1, 1));
  EXPECT_TRUE(storage_rewrite(s).same_as(s));
}

}  // namespace
}  // namespace anvil::transform
