#include "anvil/ir/equal.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "anvil/ir/op.h"
#include "anvil/ir/printer.h"

namespace anvil::ir {
namespace {

int sign(int x) {
  return (x > 0) - (x < 0);
}

Expr reduce_sum(const Buffer& a, const Var& k, int extent) {
  IterVar axis = IterVar::make(k, Range::make(0, extent), IterKind::kReduce);
  return Reduce::make(CommReducer::sum(DataType::Int32()), Load::make(a, {k}), {axis});
}

// for (i = 0; i < 16; ++i) for (j = 0; j < 8; ++j) out[i * 8 + j] = in[i * 8 + j] + 1, with fresh
// loop variables on every call.
Stmt copy_loop(const Buffer& in, const Buffer& out) {
  Var i("i"), j("j");
  Expr index = i * 8 + j;
  Stmt store = Store::make(out, Load::make(in, {index}) + 1, {index});
  Stmt inner = For::make(j, 0, 8, ForKind::kSerial, store);
  return For::make(i, 0, 16, ForKind::kParallel, inner);
}

// ---------------------------------------------------------------------------------------------
// Equality: binders

TEST(StructuralEqual, LetIsEqualUpToRenaming) {
  Var x("x"), z("z"), y("y");
  Expr a = Let::make(x, 1, x + y);
  Expr b = Let::make(z, 1, z + y);
  EXPECT_TRUE(structural_equal(a, b));
  EXPECT_EQ(structural_hash(a), structural_hash(b));
}

TEST(StructuralEqual, LetValueIsOutsideTheBindersScope) {
  // let x = x + 1 in x: the value's x is the free x, not the bound one.
  Var x("x"), z("z");
  EXPECT_TRUE(structural_equal(Let::make(x, x + 1, x), Let::make(z, x + 1, z)));
  EXPECT_FALSE(structural_equal(Let::make(x, x + 1, x), Let::make(z, z + 1, z)));
}

TEST(StructuralEqual, LetBoundVariableDoesNotMatchAFreeOne) {
  // The body's second operand is free in `a` but bound in `b`, though it is the same node.
  Var x("x"), y("y");
  EXPECT_FALSE(structural_equal(Let::make(x, 1, x + y), Let::make(y, 1, y + y)));
  EXPECT_FALSE(structural_equal(Let::make(y, 1, y + y), Let::make(x, 1, x + y)));
}

TEST(StructuralEqual, LetShadowingResolvesToTheInnermostBinder) {
  Var x("x"), a("a"), b("b");
  Expr shadowed = Let::make(x, 1, Let::make(x, 2, x));
  EXPECT_TRUE(structural_equal(shadowed, Let::make(a, 1, Let::make(b, 2, b))));
  EXPECT_FALSE(structural_equal(shadowed, Let::make(a, 1, Let::make(b, 2, a))));
}

TEST(StructuralEqual, SharedSubtreeUnderSwappedBindersIsNotEqual) {
  // One body node, reached under binders that bind x and y in opposite orders.
  Var x("x"), y("y");
  Expr body = x - y;
  Expr a = Let::make(x, 1, Let::make(y, 2, body));
  Expr b = Let::make(y, 1, Let::make(x, 2, body));
  EXPECT_FALSE(structural_equal(a, b));
  EXPECT_TRUE(structural_equal(a, a));
}

TEST(StructuralEqual, LetStmtIsEqualUpToRenaming) {
  Var x("x"), z("z"), n("n");
  Stmt a = LetStmt::make(x, n * 2, Evaluate::make(x + 1));
  Stmt b = LetStmt::make(z, n * 2, Evaluate::make(z + 1));
  EXPECT_TRUE(structural_equal(a, b));
  EXPECT_EQ(structural_hash(a), structural_hash(b));
  EXPECT_FALSE(structural_equal(a, LetStmt::make(z, n * 2, Evaluate::make(x + 1))));
}

TEST(StructuralEqual, ForIsEqualUpToTheLoopVariable) {
  Buffer in = Buffer::make("in", DataType::Int32(), {128});
  Buffer out = Buffer::make("out", DataType::Int32(), {128});
  Stmt a = copy_loop(in, out);
  Stmt b = copy_loop(in, out);
  EXPECT_TRUE(structural_equal(a, b));
  EXPECT_EQ(structural_hash(a), structural_hash(b));
}

TEST(StructuralEqual, ForDiffersInExtentKindAndBuffers) {
  Buffer in = Buffer::make("in", DataType::Int32(), {128});
  Buffer out = Buffer::make("out", DataType::Int32(), {128});
  Var i("i"), j("j");
  Stmt body_i = Store::make(out, Load::make(in, {i}), {i});
  Stmt body_j = Store::make(out, Load::make(in, {j}), {j});
  Stmt a = For::make(i, 0, 16, ForKind::kSerial, body_i);
  EXPECT_TRUE(structural_equal(a, For::make(j, 0, 16, ForKind::kSerial, body_j)));
  EXPECT_FALSE(structural_equal(a, For::make(j, 0, 17, ForKind::kSerial, body_j)));
  EXPECT_FALSE(structural_equal(a, For::make(j, 0, 16, ForKind::kUnrolled, body_j)));
  EXPECT_FALSE(structural_equal(
      a, For::make(j, 0, 16, ForKind::kSerial, Store::make(in, Load::make(out, {j}), {j}))));
}

TEST(StructuralEqual, ReduceIsEqualUpToAxisAndCombinerVariables) {
  // CommReducer::sum makes fresh lhs/rhs variables on each call.
  Buffer a = Buffer::make("a", DataType::Int32(), {64});
  Var k("k"), r("r");
  Expr x = reduce_sum(a, k, 64);
  Expr y = reduce_sum(a, r, 64);
  EXPECT_TRUE(structural_equal(x, y));
  EXPECT_EQ(structural_hash(x), structural_hash(y));
  EXPECT_FALSE(structural_equal(x, reduce_sum(a, r, 32)));
}

TEST(StructuralEqual, ReduceCombinersAreCompared) {
  Buffer a = Buffer::make("a", DataType::Int32(), {64});
  Var k("k");
  IterVar axis = IterVar::make(k, Range::make(0, 64), IterKind::kReduce);
  Expr sum = Reduce::make(CommReducer::sum(DataType::Int32()), Load::make(a, {k}), {axis});
  Expr max = Reduce::make(CommReducer::max(DataType::Int32()), Load::make(a, {k}), {axis});
  EXPECT_FALSE(structural_equal(sum, max));
  // lhs - rhs against rhs - lhs: the combiner's variables are matched by position.
  Var p("p"), q("q");
  CommReducer forward = CommReducer::make(p, q, p - q, 0);
  CommReducer backward = CommReducer::make(p, q, q - p, 0);
  EXPECT_FALSE(structural_equal(Reduce::make(forward, Load::make(a, {k}), {axis}),
                                Reduce::make(backward, Load::make(a, {k}), {axis})));
}

TEST(StructuralEqual, AllocateBindsItsBuffer) {
  Buffer t = Buffer::make("t", DataType::Float32(), {16}, {}, MemoryScope::kShared);
  Buffer u = Buffer::make("u", DataType::Float32(), {16}, {}, MemoryScope::kShared);
  Stmt a = Allocate::make(t, Store::make(t, Load::make(t, {1}), {0}));
  Stmt b = Allocate::make(u, Store::make(u, Load::make(u, {1}), {0}));
  EXPECT_TRUE(structural_equal(a, b));
  EXPECT_EQ(structural_hash(a), structural_hash(b));
  // The body uses the allocated buffer in one tree and another (free) one in the other.
  EXPECT_FALSE(structural_equal(a, Allocate::make(u, Store::make(t, Load::make(t, {1}), {0}))));
}

TEST(StructuralEqual, AllocateComparesLayout) {
  auto alloc = [](DataType t, std::vector<Expr> shape, MemoryScope scope) {
    Buffer b = Buffer::make("b", t, std::move(shape), {}, scope);
    return Allocate::make(b, Evaluate::make(0));
  };
  Stmt a = alloc(DataType::Float32(), {16}, MemoryScope::kShared);
  EXPECT_TRUE(structural_equal(a, alloc(DataType::Float32(), {16}, MemoryScope::kShared)));
  EXPECT_FALSE(structural_equal(a, alloc(DataType::Int32(), {16}, MemoryScope::kShared)));
  EXPECT_FALSE(structural_equal(a, alloc(DataType::Float32(), {32}, MemoryScope::kShared)));
  EXPECT_FALSE(structural_equal(a, alloc(DataType::Float32(), {16}, MemoryScope::kLocal)));
}

// ---------------------------------------------------------------------------------------------
// Equality: free variables, buffers, types and leaves

TEST(StructuralEqual, FreeVariablesEqualOnlyThemselves) {
  Var x("x"), y("y");
  EXPECT_TRUE(structural_equal(x + 1, x + 1));
  EXPECT_FALSE(structural_equal(x + 1, y + 1));
}

TEST(StructuralEqual, SameNameDifferentVariablesAreNotEqual) {
  Var x1("x"), x2("x");
  EXPECT_FALSE(structural_equal(x1, x2));
  EXPECT_FALSE(structural_equal(x1 * 2, x2 * 2));
}

TEST(StructuralEqual, FreeBuffersEqualOnlyThemselves) {
  Buffer a1 = Buffer::make("a", DataType::Int32(), {8});
  Buffer a2 = Buffer::make("a", DataType::Int32(), {8});
  EXPECT_TRUE(structural_equal(Load::make(a1, {3}), Load::make(a1, {3})));
  EXPECT_FALSE(structural_equal(Load::make(a1, {3}), Load::make(a2, {3})));
}

TEST(StructuralEqual, TypesDistinguishImmediates) {
  Expr i32 = IntImm::make(DataType::Int32(), 1);
  Expr i64 = IntImm::make(DataType::Int64(), 1);
  EXPECT_FALSE(structural_equal(i32, i64));
  EXPECT_NE(structural_compare(i32, i64), 0);
  EXPECT_NE(structural_hash(i32), structural_hash(i64));
  EXPECT_TRUE(structural_equal(i32, IntImm::make(DataType::Int32(), 1)));
}

TEST(StructuralEqual, FloatsCompareBitwise) {
  double nan = std::numeric_limits<double>::quiet_NaN();
  Expr a = FloatImm::make(DataType::Float32(), nan);
  EXPECT_TRUE(structural_equal(a, FloatImm::make(DataType::Float32(), nan)));
  EXPECT_EQ(structural_compare(a, FloatImm::make(DataType::Float32(), nan)), 0);
  EXPECT_FALSE(structural_equal(Expr(0.0f), Expr(-0.0f)));
  EXPECT_LT(structural_compare(Expr(-0.0f), Expr(0.0f)), 0);
}

TEST(StructuralEqual, UndefinedEqualsOnlyUndefined) {
  EXPECT_TRUE(structural_equal(Expr(), Expr()));
  EXPECT_TRUE(structural_equal(Stmt(), Stmt()));
  EXPECT_FALSE(structural_equal(Expr(), Expr(0)));
  EXPECT_FALSE(structural_equal(Expr(0), Expr()));
  EXPECT_EQ(structural_hash(Expr()), structural_hash(Expr()));
  Var c("c", DataType::Bool());
  Stmt then_only = IfThenElse::make(c, Evaluate::make(1));
  EXPECT_FALSE(structural_equal(
      then_only, IfThenElse::make(c, Evaluate::make(1), Barrier::make(MemoryScope::kShared))));
  EXPECT_TRUE(structural_equal(then_only, IfThenElse::make(c, Evaluate::make(1))));
}

// ---------------------------------------------------------------------------------------------
// Hashing

// Pairwise different trees, several differing only in a type, an operand order or a variable.
std::vector<Expr> different_exprs() {
  static const Var x("x"), y("y"), x2("x");
  static const Buffer a = Buffer::make("a", DataType::Int32(), {8});
  static const Buffer b = Buffer::make("b", DataType::Int32(), {8});
  Var k("k");
  return {
      x,
      y,
      x2,
      Expr(1),
      IntImm::make(DataType::Int64(), 1),
      Expr(2),
      Expr(1.0f),
      x + y,
      y + x,
      x - y,
      x * y,
      min(x, y),
      max(x, y),
      x + 1,
      x + 2,
      x2 + 1,
      floordiv(x, 2),
      floormod(x, 2),
      truncdiv(x, 2),
      x < y,
      x <= y,
      x == y,
      !(x < y),
      select(x < y, x, y),
      select(x < y, y, x),
      cast(DataType::Int64(), x),
      Broadcast::make(x, 4),
      Broadcast::make(x, 8),
      Ramp::make(x, 1, 4),
      Load::make(a, {x}),
      Load::make(b, {x}),
      Let::make(k, 1, k + x),
      Let::make(k, 1, x + k),
      Let::make(k, 2, k + x),
      reduce_sum(a, k, 8),
      reduce_sum(b, k, 8),
  };
}

TEST(StructuralHash, EqualTreesHashEqually) {
  std::vector<Expr> first = different_exprs();
  std::vector<Expr> second = different_exprs();  // fresh binders in Let and Reduce
  ASSERT_EQ(first.size(), second.size());
  for (size_t i = 0; i < first.size(); ++i) {
    ASSERT_TRUE(structural_equal(first[i], second[i])) << first[i];
    EXPECT_EQ(structural_hash(first[i]), structural_hash(second[i])) << first[i];
  }
}

TEST(StructuralHash, DifferentTreesHashDifferently) {
  std::vector<Expr> exprs = different_exprs();
  for (size_t i = 0; i < exprs.size(); ++i) {
    for (size_t j = i + 1; j < exprs.size(); ++j) {
      ASSERT_FALSE(structural_equal(exprs[i], exprs[j])) << exprs[i] << " vs " << exprs[j];
      EXPECT_NE(structural_hash(exprs[i]), structural_hash(exprs[j]))
          << exprs[i] << " vs " << exprs[j];
    }
  }
}

TEST(StructuralHash, BoundAndFreeOccurrencesHashDifferently) {
  // The Let binds y in one tree only; the body is the same node in both.
  Var x("x"), y("y");
  EXPECT_NE(structural_hash(Let::make(x, 1, x + y)), structural_hash(Let::make(y, 1, y + y)));
}

// ---------------------------------------------------------------------------------------------
// Ordering

TEST(StructuralCompare, OrdersByNodeTypeThenTypeThenFields) {
  Var x("x"), y("y");                            // x created first
  EXPECT_LT(structural_compare(Expr(5), x), 0);  // IntImm before Variable
  EXPECT_LT(structural_compare(x, y), 0);
  EXPECT_GT(structural_compare(y, x), 0);
  EXPECT_LT(structural_compare(Expr(-5), Expr(3)), 0);
  EXPECT_LT(structural_compare(Expr(1), IntImm::make(DataType::Int64(), 0)), 0);
  EXPECT_LT(structural_compare(x + 7, y + 1), 0);
  EXPECT_LT(structural_compare(Expr(1.5f), Expr(2.5f)), 0);
}

TEST(StructuralCompare, DoesNotRename) {
  Var x("x"), z("z");
  Expr a = Let::make(x, 1, x);
  Expr b = Let::make(z, 1, z);
  EXPECT_TRUE(structural_equal(a, b));
  EXPECT_NE(structural_compare(a, b), 0);
  EXPECT_EQ(sign(structural_compare(a, b)), -sign(structural_compare(b, a)));
}

TEST(StructuralCompare, LoadsOrderByBufferName) {
  // By name first (b is created before a), then by creation order.
  Buffer b = Buffer::make("b", DataType::Int32(), {8});
  Buffer a = Buffer::make("a", DataType::Int32(), {8});
  Buffer a_twin = Buffer::make("a", DataType::Int32(), {8});
  EXPECT_LT(structural_compare(Load::make(a, {0}), Load::make(b, {0})), 0);
  EXPECT_LT(structural_compare(Load::make(a, {0}), Load::make(a_twin, {0})), 0);
  EXPECT_EQ(structural_compare(Load::make(a, {0}), Load::make(a, {0})), 0);
}

// Random small expressions over a fixed pool of leaves. `key` spells out a tree completely
// (node, type, variable identity, value), independently of the code under test.
class RandomExprs {
 public:
  explicit RandomExprs(uint32_t seed) : rng_(seed) {}

  std::pair<Expr, std::string> make(int depth) {
    int choice = pick(depth == 0 ? 3 : 9);
    switch (choice) {
      case 0: {
        int v = pick(3) - 1;
        return {v, "i32:" + std::to_string(v)};
      }
      case 1: {
        int64_t v = pick(2);
        return {IntImm::make(DataType::Int64(), v), "i64:" + std::to_string(v)};
      }
      case 2: {
        int i = pick(3);
        return {vars_[i], "var" + std::to_string(i)};
      }
      default:
        break;
    }
    auto [a, ka] = make(depth - 1);
    auto [b, kb] = make(depth - 1);
    if (a.type() != b.type()) {
      b = cast(a.type(), b);
      kb = "cast(" + kb + ")";
    }
    std::string k = "(" + ka + "," + kb + ")";
    switch (choice) {
      case 3:
        return {a + b, "add" + k};
      case 4:
        return {a - b, "sub" + k};
      case 5:
        return {a * b, "mul" + k};
      case 6:
        return {min(a, b), "min" + k};
      case 7:
        return {max(a, b), "max" + k};
      default:
        return {select(a < b, a, b), "sel" + k};
    }
  }

 private:
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }

  std::mt19937 rng_;
  // Two share a name: only identity tells them apart.
  Var vars_[3] = {Var("x"), Var("y"), Var("x")};
};

struct Sample {
  std::vector<Expr> exprs;
  std::vector<std::string> keys;
};

Sample random_sample() {
  RandomExprs gen(20240611);
  Sample s;
  for (int i = 0; i < 80; ++i) {
    auto [e, key] = gen.make(i % 3);
    s.exprs.push_back(e);
    s.keys.push_back(key);
  }
  return s;
}

TEST(StructuralCompare, ZeroExactlyWhenIdentical) {
  Sample s = random_sample();
  int identical_pairs = 0;
  for (size_t i = 0; i < s.exprs.size(); ++i) {
    for (size_t j = 0; j < s.exprs.size(); ++j) {
      bool identical = s.keys[i] == s.keys[j];
      identical_pairs += identical && i != j;
      EXPECT_EQ(structural_compare(s.exprs[i], s.exprs[j]) == 0, identical)
          << s.keys[i] << " vs " << s.keys[j];
      EXPECT_EQ(structural_equal(s.exprs[i], s.exprs[j]), identical)
          << s.keys[i] << " vs " << s.keys[j];
    }
  }
  EXPECT_GT(identical_pairs, 0);  // the sample exercises separately built identical trees
}

TEST(StructuralCompare, IsAntisymmetric) {
  Sample s = random_sample();
  for (const Expr& a : s.exprs) {
    for (const Expr& b : s.exprs) {
      ASSERT_EQ(sign(structural_compare(a, b)), -sign(structural_compare(b, a)))
          << a << " vs " << b;
    }
  }
}

TEST(StructuralCompare, IsTransitive) {
  Sample s = random_sample();
  size_t n = s.exprs.size();
  std::vector<int> c(n * n);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) c[i * n + j] = sign(structural_compare(s.exprs[i], s.exprs[j]));
  }
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) {
      for (size_t k = 0; k < n; ++k) {
        int ij = c[i * n + j], jk = c[j * n + k];
        if (ij > 0 || jk > 0) continue;
        // a <= b <= c gives a <= c, and a < c when either step is strict.
        ASSERT_EQ(c[i * n + k], std::min(ij, jk))
            << s.exprs[i] << ", " << s.exprs[j] << ", " << s.exprs[k];
      }
    }
  }
}

}  // namespace
}  // namespace anvil::ir
