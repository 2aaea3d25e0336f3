#include "anvil/transform/partition_loops.h"

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
using testing::same_behavior;

Stmt loop(const Var& v, Expr min, Expr extent, Stmt body, ForKind kind = ForKind::kSerial) {
  return For::make(v, std::move(min), std::move(extent), kind, std::move(body));
}

// B[x] = A[x]*2 + 1 for x in [0, n), x split by `factor` with a tail guard.
struct SplitCopy {
  Buffer a, b;
  Var xo{"xo"}, xi{"xi"};
  Stmt s;
  SplitCopy(int n, int factor, ForKind inner = ForKind::kSerial) {
    a = Buffer::make("A", DataType::Float32(), {n});
    b = Buffer::make("B", DataType::Float32(), {n});
    Expr x = xo * factor + xi;
    Stmt store = Store::make(b, Load::make(a, {x}) * 2.0f + 1.0f, {x});
    s = loop(xo, 0, (n + factor - 1) / factor,
             loop(xi, 0, factor, IfThenElse::make(x < n, store), inner));
  }
};

// The top-level statements of s.
std::vector<Stmt> top(const Stmt& s) {
  if (const Seq* seq = s.as<Seq>()) return seq->stmts;
  return {s};
}

TEST(PartitionLoops, SplitTailOfOneHundredByEight) {
  SplitCopy p(100, 8);
  Stmt r = partition_loops(p.s);
  std::vector<Stmt> parts = top(r);
  ASSERT_EQ(parts.size(), 2u) << r;
  const For* main = parts[0].as<For>();
  const For* tail = parts[1].as<For>();
  ASSERT_TRUE(main && tail) << r;
  EXPECT_TRUE(main->var.same_as(p.xo));
  EXPECT_TRUE(is_const_int(main->min, 0));
  EXPECT_TRUE(is_const_int(main->extent, 12));
  EXPECT_EQ(count<IfThenElse>(parts[0]), 0) << r;
  EXPECT_FALSE(tail->var.same_as(p.xo));  // the copy binds its own variables
  EXPECT_TRUE(is_const_int(tail->min, 12));
  EXPECT_TRUE(is_const_int(tail->extent, 1));
  // The tail's inner loop is partitioned too: 4 elements remain and need no guard.
  const For* inner = tail->body.as<For>();
  ASSERT_NE(inner, nullptr) << r;
  EXPECT_TRUE(is_const_int(inner->extent, 4)) << r;
  EXPECT_EQ(count<IfThenElse>(r), 0) << r;
  EXPECT_TRUE(same_behavior(p.s, r, {p.a, p.b}));
}

// A parallel loop is not cut in two: its iterations choose between the guard-free body and the
// tail's, so the tail tile runs beside the others.
TEST(PartitionLoops, ParallelLoopPicksItsPartPerIteration) {
  SplitCopy p(100, 8);
  p.s = loop(p.xo, 0, 13, p.s.as<For>()->body, ForKind::kParallel);
  Stmt r = partition_loops(p.s);
  const For* f = r.as<For>();
  ASSERT_NE(f, nullptr) << r;
  EXPECT_EQ(f->kind, ForKind::kParallel);
  EXPECT_TRUE(is_const_int(f->extent, 13));
  const IfThenElse* pick = f->body.as<IfThenElse>();
  ASSERT_NE(pick, nullptr) << r;
  EXPECT_EQ(count<IfThenElse>(pick->then_case), 0) << r;  // whole blocks: no guard
  EXPECT_EQ(count<IfThenElse>(pick->else_case), 0) << r;  // the tail: 4 elements, no guard
  EXPECT_TRUE(same_behavior(p.s, r, {p.a, p.b})) << r;
}

TEST(PartitionLoops, SplitTailOfSevenByThree) {
  SplitCopy p(7, 3);
  Stmt r = partition_loops(p.s);
  std::vector<Stmt> parts = top(r);
  ASSERT_EQ(parts.size(), 2u) << r;
  EXPECT_TRUE(is_const_int(parts[0].as<For>()->extent, 2));
  EXPECT_EQ(count<IfThenElse>(r), 0) << r;
  EXPECT_TRUE(same_behavior(p.s, r, {p.a, p.b}));
}

TEST(PartitionLoops, VectorizedInnerLoopKeepsItsKindInEveryPart) {
  SplitCopy p(100, 8, ForKind::kVectorized);
  Stmt r = partition_loops(p.s);
  int vectorized = 0;
  for (const For* f : collect<For>(r)) vectorized += f->kind == ForKind::kVectorized;
  EXPECT_EQ(vectorized, 2) << r;
  EXPECT_TRUE(same_behavior(p.s, r, {p.a, p.b}));
}

TEST(PartitionLoops, DivisibleSplitNeedsNoPartition) {
  // The guard holds everywhere: it is removed, the loop is not split.
  SplitCopy p(96, 8);
  Stmt r = partition_loops(p.s);
  ASSERT_NE(r.as<For>(), nullptr) << r;
  EXPECT_EQ(count<For>(r), 2);
  EXPECT_EQ(count<IfThenElse>(r), 0);
  EXPECT_TRUE(same_behavior(p.s, r, {p.a, p.b}));
}

TEST(PartitionLoops, RandomSplitsMatchTheOriginal) {
  for (int n = 1; n <= 40; ++n) {
    for (int factor = 1; factor <= 9; ++factor) {
      SplitCopy p(n, factor);
      Stmt r = partition_loops(p.s);
      EXPECT_EQ(count<IfThenElse>(r), 0) << "n = " << n << ", factor = " << factor << "\n" << r;
      ASSERT_TRUE(same_behavior(p.s, r, {p.a, p.b}, {}, n * 10 + factor))
          << "n = " << n << ", factor = " << factor;
    }
  }
}

TEST(PartitionLoops, GuardOnTheOuterLoopAroundAConstantInnerLoop) {
  // for xo: if (xo*8 + 7 < 100) { whole block } else { guarded block }.
  Buffer a = Buffer::make("A", DataType::Int32(), {100});
  Var xo("xo"), xi("xi"), xj("xj");
  Expr x = xo * 8 + xi, y = xo * 8 + xj;
  Stmt whole = loop(xi, 0, 8, Store::make(a, Load::make(a, {x}) + 1, {x}));
  Stmt guarded =
      loop(xj, 0, 8, IfThenElse::make(y < 100, Store::make(a, Load::make(a, {y}) + 1, {y})));
  Stmt s = loop(xo, 0, 13, IfThenElse::make(xo * 8 + 7 < 100, whole, guarded));
  Stmt r = partition_loops(s);
  std::vector<Stmt> parts = top(r);
  ASSERT_EQ(parts.size(), 2u) << r;
  EXPECT_EQ(count<IfThenElse>(parts[0]), 0) << r;
  EXPECT_TRUE(is_const_int(parts[0].as<For>()->extent, 12));
  EXPECT_EQ(count<IfThenElse>(r), 0) << r;
  EXPECT_TRUE(same_behavior(s, r, {a}));
}

TEST(PartitionLoops, PaddingGuardOnTheFirstIterationsSplitsOffTheSuffix) {
  // B[i] = i >= 3 ? A[i - 3] : 0, as padding lowers.
  Buffer a = Buffer::make("A", DataType::Int32(), {7});
  Buffer b = Buffer::make("B", DataType::Int32(), {10});
  Var i("i");
  Stmt s = loop(i, 0, 10,
                IfThenElse::make(i >= 3, Store::make(b, Load::make(a, {i - 3}), {i}),
                                 Store::make(b, 0, {i})));
  Stmt r = partition_loops(s);
  std::vector<Stmt> parts = top(r);
  ASSERT_EQ(parts.size(), 2u) << r;
  EXPECT_TRUE(is_const_int(parts[0].as<For>()->extent, 3));
  EXPECT_TRUE(is_const_int(parts[1].as<For>()->min, 3));
  EXPECT_EQ(count<IfThenElse>(r), 0) << r;
  EXPECT_TRUE(same_behavior(s, r, {a, b}));
}

TEST(PartitionLoops, TwoDimensionalTails) {
  // 10x11 split by 4x3: the main nest needs neither guard.
  Buffer a = Buffer::make("A", DataType::Float32(), {10, 11});
  Buffer b = Buffer::make("B", DataType::Float32(), {10, 11});
  Var yo("yo"), xo("xo"), yi("yi"), xi("xi");
  Expr y = yo * 4 + yi, x = xo * 3 + xi;
  Stmt body =
      IfThenElse::make(y < 10 && x < 11, Store::make(b, Load::make(a, {y, x}) - 1.0f, {y, x}));
  Stmt s = loop(yo, 0, 3, loop(xo, 0, 4, loop(yi, 0, 4, loop(xi, 0, 3, body))));
  Stmt r = partition_loops(s);
  std::vector<Stmt> parts = top(r);
  ASSERT_EQ(parts.size(), 2u) << r;
  const For* main_y = parts[0].as<For>();
  ASSERT_NE(main_y, nullptr);
  std::vector<Stmt> xs = top(main_y->body);
  ASSERT_EQ(xs.size(), 2u) << r;
  EXPECT_EQ(count<IfThenElse>(xs[0]), 0) << r;
  EXPECT_EQ(count<IfThenElse>(r), 0) << r;
  EXPECT_EQ(count<Evaluate>(r), 0) << r;  // parts where every guard fails are dropped
  EXPECT_EQ(count<Store>(r), 4) << r;     // main, x tail, y tail, corner
  EXPECT_TRUE(same_behavior(s, r, {a, b}));
}

TEST(PartitionLoops, ReductionWithATail) {
  // C[x] = sum_k A[x, k], x = 0..9 split by 4; the init and the update are both guarded.
  Buffer a = Buffer::make("A", DataType::Int32(), {10, 6});
  Buffer c = Buffer::make("C", DataType::Int32(), {10});
  Var xo("xo"), xi("xi"), k("k");
  Expr x = xo * 4 + xi;
  Stmt body =
      Seq::make(IfThenElse::make(x < 10, Store::make(c, 0, {x})),
                loop(k, 0, 6,
                     IfThenElse::make(
                         x < 10, Store::make(c, Load::make(c, {x}) + Load::make(a, {x, k}), {x}))));
  Stmt s = loop(xo, 0, 3, loop(xi, 0, 4, body));
  Stmt r = partition_loops(s);
  std::vector<Stmt> parts = top(r);
  ASSERT_EQ(parts.size(), 2u) << r;
  EXPECT_EQ(count<IfThenElse>(parts[0]), 0) << r;
  EXPECT_EQ(count<IfThenElse>(r), 0) << r;
  EXPECT_TRUE(same_behavior(s, r, {a, c}));
}

TEST(PartitionLoops, NonZeroMinAndAnEnclosingLoopsRange) {
  // for j in [0, 2): for i in [5, 5 + 9): if (i + j*2 < 12) ... — the bound depends on j.
  Buffer a = Buffer::make("A", DataType::Int32(), {2, 16});
  Var j("j"), i("i");
  Stmt s = loop(
      j, 0, 2,
      loop(i, 5, 9,
           IfThenElse::make(i + j * 2 < 12, Store::make(a, Load::make(a, {j, i}) + 1, {j, i}))));
  Stmt r = partition_loops(s);
  EXPECT_GT(count<For>(r), 2) << r;
  EXPECT_TRUE(same_behavior(s, r, {a}));
}

TEST(PartitionLoops, DataDependentGuardIsLeftAlone) {
  Buffer a = Buffer::make("A", DataType::Int32(), {8});
  Var i("i");
  Stmt s = loop(i, 0, 8, IfThenElse::make(Load::make(a, {i}) > 0, Store::make(a, 0, {i})));
  EXPECT_TRUE(partition_loops(s).same_as(s));
}

TEST(PartitionLoops, GuardThatNeverHoldsOnAPrefixIsNotSplit) {
  // i*i is not understood: nothing is proven, nothing changes.
  Buffer a = Buffer::make("A", DataType::Int32(), {8});
  Var i("i");
  Stmt s = loop(i, 0, 8, IfThenElse::make(i * i < 20, Store::make(a, 0, {i})));
  Stmt r = partition_loops(s);
  EXPECT_TRUE(same_behavior(s, r, {a}));
}

TEST(PartitionLoops, SymbolicExtentIsNotSplit) {
  Buffer a = Buffer::make("A", DataType::Int32(), {64});
  Var n("n"), xo("xo"), xi("xi");
  Expr x = xo * 8 + xi;
  Stmt s =
      loop(xo, 0, floordiv(n + 7, 8),
           loop(xi, 0, 8, IfThenElse::make(x < n, Store::make(a, Load::make(a, {x}) + 1, {x}))));
  Stmt r = partition_loops(s);
  EXPECT_TRUE(r.same_as(s)) << r;
  EXPECT_TRUE(same_behavior(s, r, {a}, {{n, 61}}));
}

TEST(PartitionLoops, ThreadBoundLoopsAreNotSplit) {
  Buffer a = Buffer::make("A", DataType::Int32(), {100});
  Var bx("blockIdx.x"), tx("threadIdx.x");
  Expr x = bx * 32 + tx;
  Stmt s =
      For::make(bx, 0, 4, ForKind::kThreadBinding,
                For::make(tx, 0, 32, ForKind::kThreadBinding,
                          IfThenElse::make(x < 100, Store::make(a, Load::make(a, {x}) + 1, {x})),
                          "threadIdx.x"),
                "blockIdx.x");
  EXPECT_TRUE(partition_loops(s).same_as(s));
}

TEST(PartitionLoops, LetBetweenTheLoopAndTheGuard) {
  Buffer a = Buffer::make("A", DataType::Int32(), {30});
  Var xo("xo"), xi("xi"), x("x");
  Stmt s = loop(
      xo, 0, 4,
      loop(xi, 0, 8,
           LetStmt::make(x, xo * 8 + xi,
                         IfThenElse::make(x < 30, Store::make(a, Load::make(a, {x}) * 3, {x})))));
  Stmt r = partition_loops(s);
  std::vector<Stmt> parts = top(r);
  ASSERT_EQ(parts.size(), 2u) << r;
  EXPECT_EQ(count<IfThenElse>(parts[0]), 0) << r;
  EXPECT_TRUE(same_behavior(s, r, {a}));
}

}  // namespace
}  // namespace anvil::transform
