// Every schedule primitive on randomized shapes, including extents that the split factors do
// not divide, compared element-wise with a naive reference; the LLVM and C backends run the
// same lowered function and must both agree with it.
#include <gtest/gtest.h>

#include <random>

#include "anvil/ir/equal.h"
#include "anvil/ir/op.h"
#include "anvil/ir/printer.h"
#include "te_testing.h"
#include "testing/errors.h"

namespace anvil::te {
namespace {

using namespace ir;
using te_testing::check_both;
using te_testing::random_values;

class ScheduleTest : public ::testing::Test {
 protected:
  std::mt19937 rng{20261130};
  int draw(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }
};

// C = A + B over a 2-D shape.
struct Add2D {
  int m, n;
  Tensor A, B, C;
  Add2D(int m_, int n_) : m(m_), n(n_) {
    A = placeholder({m, n}, DataType::Float32(), "A");
    B = placeholder({m, n}, DataType::Float32(), "B");
    C = compute(
        {m, n}, [&](Var i, Var j) { return A(i, j) + B(i, j) * 2.0f; }, "C");
  }
  std::vector<float> reference(const te_testing::Values& v) const {
    std::vector<float> c(static_cast<size_t>(m * n));
    for (size_t i = 0; i < c.size(); ++i) c[i] = v[0][i] + v[1][i] * 2.0f;
    return c;
  }
};

// C = A · B with C[m, n] = sum_k A[m, k] * B[k, n].
struct MatMul {
  int m, n, k;
  Tensor A, B, C;
  IterVar r;
  MatMul(int m_, int n_, int k_) : m(m_), n(n_), k(k_) {
    A = placeholder({m, k}, DataType::Float32(), "A");
    B = placeholder({k, n}, DataType::Float32(), "B");
    r = reduce_axis(k, "k");
    C = compute(
        {m, n}, [&](Var i, Var j) { return sum(A(i, r->var) * B(r->var, j), {r}); }, "C");
  }
  std::vector<float> reference(const te_testing::Values& v) const {
    std::vector<float> c(static_cast<size_t>(m * n), 0.0f);
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j)
        for (int x = 0; x < k; ++x) c[i * n + j] += v[0][i * k + x] * v[1][x * n + j];
    return c;
  }
};

TEST_F(ScheduleTest, SplitWithTailsVectorizeUnrollParallel) {
  for (int trial = 0; trial < 6; ++trial) {
    Add2D p(draw(1, 37), draw(1, 45));
    Schedule s({p.C});
    auto [io, ii] = s[p.C].split(s[p.C].axis()[0], draw(1, 9));
    auto [jo, ji] = s[p.C].split(s[p.C].axis()[1], draw(1, 9));
    s[p.C].reorder({io, jo, ii, ji});
    s[p.C].vectorize(ji);
    s[p.C].unroll(ii);
    s[p.C].parallel(io);
    auto v = random_values({p.A, p.B, p.C}, trial);
    SCOPED_TRACE(::testing::Message() << "shape " << p.m << "x" << p.n);
    check_both(s, {p.A, p.B, p.C}, v, 2, p.reference(v));
  }
}

TEST_F(ScheduleTest, SplitNpartsAndFuse) {
  for (int trial = 0; trial < 4; ++trial) {
    Add2D p(draw(1, 30), draw(1, 30));
    Schedule s({p.C});
    IterVar f = s[p.C].fuse(s[p.C].axis()[0], s[p.C].axis()[1]);
    auto [o, i] = s[p.C].split_nparts(f, draw(1, 7));
    s[p.C].parallel(o);
    s[p.C].vectorize(i);
    auto v = random_values({p.A, p.B, p.C}, 100 + trial);
    SCOPED_TRACE(::testing::Message() << "shape " << p.m << "x" << p.n);
    check_both(s, {p.A, p.B, p.C}, v, 2, p.reference(v));
  }
}

TEST_F(ScheduleTest, TiledMatMulWithCacheWriteAndComputeAt) {
  for (int trial = 0; trial < 5; ++trial) {
    MatMul p(draw(1, 29), draw(1, 33), draw(1, 21));
    Schedule s({p.C});
    Tensor CC = s.cache_write(p.C, MemoryScope::kLocal);
    int bm = draw(1, 6), bn = draw(1, 8), kf = draw(1, 5);
    std::vector<IterVar> t = s[p.C].tile(s[p.C].axis()[0], s[p.C].axis()[1], bm, bn);
    s[p.C].vectorize(t[3]);
    s[CC].compute_at(s[p.C], t[1]);
    auto [ko, ki] = s[CC].split(p.r, kf);
    s[CC].reorder({ko, ki, s[CC].axis()[0], s[CC].axis()[1]});
    s[CC].unroll(ki);
    s[CC].vectorize(s[CC].axis()[1]);
    s[p.C].parallel(t[0]);
    auto v = random_values({p.A, p.B, p.C}, 200 + trial);
    SCOPED_TRACE(::testing::Message()
                 << p.m << "x" << p.n << "x" << p.k << " tile " << bm << "x" << bn << " k/" << kf);
    check_both(s, {p.A, p.B, p.C}, v, 2, p.reference(v));
  }
}

TEST_F(ScheduleTest, ComputeInlineAndComputeRoot) {
  int m = draw(2, 20), n = draw(2, 20);
  Tensor A = placeholder({m, n}, DataType::Float32(), "A");
  Tensor B = compute(
      {m, n}, [&](Var i, Var j) { return A(i, j) * 3.0f; }, "B");
  Tensor C = compute(
      {m, n}, [&](Var i, Var j) { return max(B(i, j) - 0.5f, 0.0f); }, "C");
  Tensor D = compute(
      {m, n}, [&](Var i, Var j) { return C(i, j) + B(i, j); }, "D");
  Schedule s({D});
  s[C].compute_inline();
  s[B].compute_at(s[D], s[D].axis()[0]);
  s[B].compute_root();  // back to the top level
  auto v = random_values({A, D}, 7);
  std::vector<float> ref(static_cast<size_t>(m * n));
  for (size_t i = 0; i < ref.size(); ++i) {
    float b = v[0][i] * 3.0f;
    ref[i] = std::max(b - 0.5f, 0.0f) + b;
  }
  check_both(s, {A, D}, v, 1, ref);
  ir::LoweredFunc f = lower(s, {A, D}, "k");
  EXPECT_EQ(to_string(f.body).find("C["), std::string::npos) << "C was not inlined:\n" << f.body;
}

TEST_F(ScheduleTest, CacheReadAttachedInsideTheConsumer) {
  for (int trial = 0; trial < 4; ++trial) {
    MatMul p(draw(1, 24), draw(1, 24), draw(1, 17));
    Schedule s({p.C});
    Tensor AL = s.cache_read(p.A, MemoryScope::kLocal, {p.C});
    auto [io, ii] = s[p.C].split(s[p.C].axis()[0], draw(1, 5));
    s[AL].compute_at(s[p.C], io);
    auto v = random_values({p.A, p.B, p.C}, 300 + trial);
    SCOPED_TRACE(::testing::Message() << p.m << "x" << p.n << "x" << p.k);
    check_both(s, {p.A, p.B, p.C}, v, 2, p.reference(v));
    (void)ii;
  }
}

TEST_F(ScheduleTest, ComputedRegionIsWhatTheConsumerReads) {
  MatMul p(24, 20, 16);
  Schedule s({p.C});
  Tensor AL = s.cache_read(p.A, MemoryScope::kLocal, {p.C});
  Tensor BL = s.cache_read(p.B, MemoryScope::kLocal, {p.C});
  auto [io, ii] = s[p.C].split(s[p.C].axis()[0], 4);
  (void)ii;
  s[AL].compute_at(s[p.C], io);
  // AL: the 4 rows of A that one iteration of io reads, every column.
  std::vector<Range> a = computed_region(s, AL);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(as_const_int(a[0].extent), 4);
  EXPECT_TRUE(structural_equal(a[0].min, io->var * 4)) << a[0].min;
  EXPECT_EQ(as_const_int(a[1].extent), 16);
  EXPECT_EQ(as_const_int(a[1].min), 0);
  // A root stage computes its whole shape; an inlined one and a placeholder have no region.
  std::vector<Range> b = computed_region(s, BL);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(as_const_int(b[0].extent), 16);
  EXPECT_EQ(as_const_int(b[1].extent), 20);
  s[BL].compute_inline();
  EXPECT_TRUE(computed_region(s, BL).empty());
  EXPECT_TRUE(computed_region(s, p.A).empty());
}

TEST_F(ScheduleTest, RfactorSum) {
  for (int trial = 0; trial < 4; ++trial) {
    int m = draw(1, 12), n = draw(1, 100);
    Tensor A = placeholder({m, n}, DataType::Float32(), "A");
    IterVar r = reduce_axis(n, "r");
    Tensor S = compute(
        {m}, [&](Var i) { return sum(A(i, r->var), {r}); }, "S");
    Schedule s({S});
    auto [ro, ri] = s[S].split(r, draw(1, 8));
    Tensor RF = s.rfactor(S, ri);
    s[RF].vectorize(s[RF].axis()[1]);
    auto v = random_values({A, S}, 400 + trial);
    std::vector<float> ref(static_cast<size_t>(m), 0.0f);
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) ref[i] += v[0][i * n + j];
    SCOPED_TRACE(::testing::Message() << m << "x" << n);
    check_both(s, {A, S}, v, 1, ref);
    (void)ro;
  }
}

// The factored axis first (split-K): the partial results are [parts, m], the outer part of the
// split reduction; a split that does not divide the axis guards its tail.
TEST_F(ScheduleTest, RfactorFirstAxis) {
  for (int trial = 0; trial < 4; ++trial) {
    int m = draw(1, 12), n = draw(1, 100), parts = draw(1, 6);
    Tensor A = placeholder({m, n}, DataType::Float32(), "A");
    IterVar r = reduce_axis(n, "r");
    Tensor S = compute(
        {m}, [&](Var i) { return sum(A(i, r->var), {r}); }, "S");
    Schedule s({S});
    auto [ro, ri] = s[S].split_nparts(r, parts);
    Tensor RF = s.rfactor(S, ro, Schedule::FactorAt::kFirst);
    int64_t got_parts = *ir::as_const_int(RF->shape[0]);
    EXPECT_EQ(got_parts, (n + (n + parts - 1) / parts - 1) / ((n + parts - 1) / parts));
    EXPECT_EQ(*ir::as_const_int(RF->shape[1]), m);
    auto v = random_values({A, S}, 500 + trial);
    std::vector<float> ref(static_cast<size_t>(m), 0.0f);
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) ref[i] += v[0][i * n + j];
    SCOPED_TRACE(::testing::Message() << m << "x" << n << " in " << parts);
    check_both(s, {A, S}, v, 1, ref);
    (void)ri;
  }
}

TEST_F(ScheduleTest, MaxReductionWithStorageAlignAndPragma) {
  int m = draw(3, 17), n = draw(3, 19);
  Tensor A = placeholder({m, n}, DataType::Float32(), "A");
  Tensor B = compute(
      {m, n}, [&](Var i, Var j) { return A(i, j) * A(i, j); }, "B");
  IterVar r = reduce_axis(n, "r");
  Tensor M = compute(
      {m}, [&](Var i) { return te::max(B(i, r->var), {r}); }, "M");
  Schedule s({M});
  s[B].storage_align(s[B].axis()[0], 8, 1);
  s[M].pragma(s[M].axis()[0], "auto_unroll_max_step", 16);
  auto v = random_values({A, M}, 9);
  std::vector<float> ref(static_cast<size_t>(m), -INFINITY);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) ref[i] = std::max(ref[i], v[0][i * n + j] * v[0][i * n + j]);
  check_both(s, {A, M}, v, 1, ref);
  ir::LoweredFunc f = lower(s, {A, M}, "k");
  EXPECT_NE(to_string(f.body).find("pragma_auto_unroll_max_step"), std::string::npos) << f.body;
}

// The example of README.md, at a smaller size.
TEST_F(ScheduleTest, ReadmeExample) {
  MatMul p(64, 64, 64);
  Schedule s({p.C});
  std::vector<IterVar> t = s[p.C].tile(s[p.C].axis()[0], s[p.C].axis()[1], 32, 32);
  s[p.C].parallel(t[0]);
  s[p.C].vectorize(t[3]);
  auto v = random_values({p.A, p.B, p.C}, 500);
  check_both(s, {p.A, p.B, p.C}, v, 2, p.reference(v));
}

TEST(Lower, PrintsTheIRAfterAPass) {
  Add2D p(8, 8);
  Schedule s({p.C});
  std::ostringstream os;
  LowerOptions options;
  options.print_after = {"loops", "vectorize"};
  options.dump_to = &os;
  lower(s, {p.A, p.B, p.C}, "k", options);
  EXPECT_NE(os.str().find("// after loops"), std::string::npos) << os.str();
  EXPECT_NE(os.str().find("// after vectorize"), std::string::npos) << os.str();
  EXPECT_EQ(os.str().find("// after unroll"), std::string::npos) << os.str();
}

TEST(Lower, MissingArgumentIsNamed) {
  Add2D p(4, 4);
  Schedule s({p.C});
  EXPECT_NE(testing::user_error([&] {
              lower(s, {p.A, p.C}, "k");
            }).find("lower 'k': input 'B' is read but is not among the arguments"),
            std::string::npos);
}

}  // namespace
}  // namespace anvil::te
