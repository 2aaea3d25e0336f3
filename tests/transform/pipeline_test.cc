// The loop-level passes in the order lowering runs them, on programs shaped like what the
// schedule produces (multi-dimensional buffers, split tails, reductions, intermediate tensors):
// after every pass the program must still compute what the original did.
#include <gtest/gtest.h>

#include "anvil/arith/simplify.h"
#include "anvil/ir/op.h"
#include "anvil/ir/printer.h"
#include "anvil/transform/flatten_storage.h"
#include "anvil/transform/partition_loops.h"
#include "anvil/transform/remove_no_op.h"
#include "anvil/transform/storage_rewrite.h"
#include "anvil/transform/unroll_loops.h"
#include "anvil/transform/vectorize_loops.h"
#include "testing/ir_interpreter.h"
#include "transform/ir_queries.h"

namespace anvil::transform {
namespace {

using namespace ir;
using testing::collect;
using testing::count;
using testing::loops_of_kind;
using testing::same_behavior;

Stmt loop(const Var& v, Expr extent, Stmt body, ForKind kind = ForKind::kSerial) {
  return For::make(v, 0, std::move(extent), kind, std::move(body));
}

// Runs the passes in lowering order, checking the program after each against the original.
Stmt lower_and_check(const Stmt& original, const std::vector<Buffer>& args) {
  struct Pass {
    const char* name;
    Stmt (*run)(const Stmt&);
  };
  const Pass passes[] = {
      {"flatten_storage", [](const Stmt& s) { return flatten_storage(s); }},
      {"simplify", [](const Stmt& s) { return arith::simplify(s); }},
      {"partition_loops", partition_loops},
      {"vectorize_loops", vectorize_loops},
      {"unroll_loops", unroll_loops},
      {"simplify", [](const Stmt& s) { return arith::simplify(s); }},
      {"storage_rewrite", storage_rewrite},
      {"remove_no_op", remove_no_op},
  };
  Stmt s = original;
  for (const Pass& pass : passes) {
    s = pass.run(s);
    EXPECT_TRUE(same_behavior(original, s, args)) << "after " << pass.name;
  }
  EXPECT_TRUE(loops_of_kind(s, ForKind::kVectorized).empty()) << s;
  EXPECT_TRUE(loops_of_kind(s, ForKind::kUnrolled).empty()) << s;
  for (const Load* op : collect<Load>(s)) EXPECT_EQ(op->buffer.ndim(), 1);
  for (const Store* op : collect<Store>(s)) EXPECT_EQ(op->buffer.ndim(), 1);
  return s;
}

// B[i, j] = A[i, j]*2 + C[j] over (rows, cols), j split by `factor` with a tail guard.
TEST(Pipeline, ElementwiseWithSplitTailsUnderEveryLoopKind) {
  const ForKind inner_kinds[] = {ForKind::kSerial, ForKind::kVectorized, ForKind::kUnrolled};
  const ForKind outer_kinds[] = {ForKind::kSerial, ForKind::kParallel, ForKind::kUnrolled};
  for (int cols : {7, 16, 100}) {
    for (int factor : {3, 4, 8}) {
      for (ForKind inner : inner_kinds) {
        for (ForKind outer : outer_kinds) {
          const int rows = 3;
          Buffer a = Buffer::make("A", DataType::Float32(), {rows, cols});
          Buffer c = Buffer::make("C", DataType::Float32(), {cols});
          Buffer b = Buffer::make("B", DataType::Float32(), {rows, cols});
          Var i("i"), jo("jo"), ji("ji");
          Expr j = jo * factor + ji;
          Stmt store = Store::make(b, Load::make(a, {i, j}) * 2.0f + Load::make(c, {j}), {i, j});
          Stmt s = loop(i, rows,
                        loop(jo, (cols + factor - 1) / factor,
                             loop(ji, factor, IfThenElse::make(j < cols, store), inner)),
                        outer);
          SCOPED_TRACE(::testing::Message()
                       << cols << " split by " << factor << ", inner " << for_kind_name(inner)
                       << ", outer " << for_kind_name(outer));
          Stmt r = lower_and_check(s, {a, c, b});
          if (inner == ForKind::kVectorized) {
            EXPECT_GT(count<Ramp>(r), 0) << r;
            if (cols % factor == 0) {
              EXPECT_EQ(count<IfThenElse>(r), 0) << r;
            }
          }
          // Partitioning leaves no guard behind in these loops.
          for (const Store* st : collect<Store>(r)) {
            if (st->predicate.defined()) ADD_FAILURE() << "a predicated store remains:\n" << r;
          }
        }
      }
    }
  }
}

// C[i, j] = sum_k A[i, k]*B[k, j]: j split by 4 (vectorized, tail), k split by 3 (unrolled,
// tail).
TEST(Pipeline, MatmulWithReductionTails) {
  const int n = 5, m = 10, kk = 7;
  Buffer a = Buffer::make("A", DataType::Float32(), {n, kk});
  Buffer b = Buffer::make("B", DataType::Float32(), {kk, m});
  Buffer c = Buffer::make("C", DataType::Float32(), {n, m});
  Var i("i"), jo("jo"), ji("ji"), ji2("ji"), ko("ko"), ki("ki");
  Expr j = jo * 4 + ji, j2 = jo * 4 + ji2, k = ko * 3 + ki;
  Stmt init =
      loop(ji, 4, IfThenElse::make(j < m, Store::make(c, 0.0f, {i, j})), ForKind::kVectorized);
  Stmt update = loop(
      ko, 3,
      loop(ki, 3,
           loop(ji2, 4,
                IfThenElse::make(
                    j2 < m && k < kk,
                    Store::make(
                        c, Load::make(c, {i, j2}) + Load::make(a, {i, k}) * Load::make(b, {k, j2}),
                        {i, j2})),
                ForKind::kVectorized),
           ForKind::kUnrolled));
  Stmt s = loop(i, n, loop(jo, 3, Seq::make(init, update)), ForKind::kParallel);
  Stmt r = lower_and_check(s, {a, b, c});
  EXPECT_GT(count<Ramp>(r), 0) << r;
}

// Two intermediate tensors in sequence (their lifetimes do not overlap) and a 2-D transpose.
TEST(Pipeline, IntermediateTensorsShareMemory) {
  Buffer in = Buffer::make("In", DataType::Int32(), {4, 6});
  Buffer out = Buffer::make("Out", DataType::Int32(), {4, 6});
  Buffer t = Buffer::make("T", DataType::Int32(), {4, 6});
  Buffer u = Buffer::make("U", DataType::Int32(), {6, 4});
  Var i("i"), j("j"), i2("i"), j2("j"), i3("i"), j3("j"), i4("i"), j4("j");
  Stmt first = Allocate::make(
      t,
      Seq::make(loop(i, 4,
                     loop(j, 6, Store::make(t, Load::make(in, {i, j}) * 3, {i, j}),
                          ForKind::kVectorized)),
                loop(i2, 4, loop(j2, 6, Store::make(out, Load::make(t, {i2, 5 - j2}), {i2, j2})))));
  Stmt second = Allocate::make(
      u,
      Seq::make(loop(i3, 6, loop(j3, 4, Store::make(u, Load::make(out, {j3, i3}) + 1, {i3, j3}))),
                loop(i4, 4,
                     loop(j4, 6, Store::make(out, Load::make(u, {j4, i4}) - i4, {i4, j4}),
                          ForKind::kUnrolled))));
  Stmt s = Seq::make(first, second);
  Stmt r = lower_and_check(s, {in, out});
  EXPECT_EQ(count<Allocate>(r), 1) << r;
}

// Zero padding as lowering writes it: guards on both ends of the loop.
TEST(Pipeline, PaddingGuardsOnBothEnds) {
  Buffer a = Buffer::make("A", DataType::Float32(), {3, 9});
  Buffer b = Buffer::make("B", DataType::Float32(), {3, 13});
  Var i("i"), x("x");
  Stmt s = loop(
      i, 3,
      loop(x, 13,
           IfThenElse::make(x >= 2 && x < 11, Store::make(b, Load::make(a, {i, x - 2}), {i, x}),
                            Store::make(b, 0.0f, {i, x}))));
  Stmt r = lower_and_check(s, {a, b});
  EXPECT_EQ(count<IfThenElse>(r), 0) << r;
}

}  // namespace
}  // namespace anvil::transform
