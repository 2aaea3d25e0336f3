// Every schedule primitive refuses bad arguments with an error that names the stage and axis.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "anvil/ir/op.h"
#include "anvil/te/schedule.h"
#include "testing/errors.h"

namespace anvil::te {
namespace {

using namespace ir;
using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::user_error;

class ScheduleErrors : public ::testing::Test {
 protected:
  Tensor A = placeholder({32, 16}, DataType::Float32(), "A");
  Tensor B = placeholder({16, 8}, DataType::Float32(), "B");
  IterVar k = reduce_axis(16, "k");
  Tensor C = compute(
      {32, 8}, [&](Var i, Var j) { return sum(A(i, k->var) * B(k->var, j), {k}); }, "C");
  Tensor D = compute(
      {32, 8}, [&](Var i, Var j) { return C(i, j) + 1.0f; }, "D");
  Schedule s{{D}};
};

TEST_F(ScheduleErrors, SplitOfAnotherStagesAxis) {
  IterVar i = s[C].axis()[0];
  EXPECT_THAT(user_error([&] { s[D].split(i, 4); }),
              AllOf(HasSubstr("split"), HasSubstr("'i'"), HasSubstr("stage 'D'")));
}

TEST_F(ScheduleErrors, SplitFactorMustBePositive) {
  EXPECT_THAT(user_error([&] { s[D].split(s[D].axis()[0], 0); }),
              AllOf(HasSubstr("stage 'D'"), HasSubstr("positive")));
  EXPECT_THAT(user_error([&] { s[D].split_nparts(s[D].axis()[0], -2); }),
              HasSubstr("positive, not -2"));
}

TEST_F(ScheduleErrors, SplitAxisAlreadySplit) {
  IterVar i = s[D].axis()[0];
  s[D].split(i, 4);
  EXPECT_THAT(user_error([&] { s[D].split(i, 2); }),
              AllOf(HasSubstr("'i'"), HasSubstr("i.outer, i.inner, j")));
}

TEST_F(ScheduleErrors, FuseNeedsAdjacentLoops) {
  IterVar io = s[D].split(s[D].axis()[0], 4).first;
  EXPECT_THAT(user_error([&] { s[D].fuse(io, s[D].axis()[1]); }),
              AllOf(HasSubstr("fuse in stage 'D'"), HasSubstr("must immediately enclose")));
}

TEST_F(ScheduleErrors, FuseReductionWithDataParallel) {
  EXPECT_THAT(user_error([&] { s[C].fuse(s[C].axis()[1], k); }),
              HasSubstr("cannot fuse a reduction axis with a data-parallel one"));
}

TEST_F(ScheduleErrors, ReorderTwice) {
  IterVar i = s[D].axis()[0];
  EXPECT_THAT(user_error([&] { s[D].reorder({i, i}); }), HasSubstr("'i' appears twice"));
}

TEST_F(ScheduleErrors, ComputeAtNeedsAConsumer) {
  Tensor E = compute(
      {32, 8}, [&](Var i, Var j) { return D(i, j) * 2.0f; }, "E");
  Schedule s2({E, C});
  EXPECT_THAT(user_error([&] { s2[D].compute_at(s2[C], s2[C].axis()[0]); }),
              AllOf(HasSubstr("compute_at"), HasSubstr("'C' does not read it")));
  EXPECT_THAT(user_error([&] { s2[D].compute_at(s2[E], s2[D].axis()[0]); }),
              HasSubstr("is not a loop of stage 'E'"));
}

TEST_F(ScheduleErrors, OutputsStayAtTheRoot) {
  Tensor E = compute(
      {32, 8}, [&](Var i, Var j) { return D(i, j) * 2.0f; }, "E");
  Schedule s2({E, D});
  EXPECT_THAT(user_error([&] { s2[D].compute_at(s2[E], s2[E].axis()[0]); }),
              HasSubstr("'D' is an output"));
  EXPECT_THAT(user_error([&] { s2[D].compute_inline(); }), HasSubstr("'D' is an output"));
}

TEST_F(ScheduleErrors, ReductionsAreNotInlined) {
  EXPECT_THAT(user_error([&] { s[C].compute_inline(); }),
              HasSubstr("'C' is a reduction and cannot be inlined"));
  EXPECT_THAT(user_error([&] { s[A].compute_inline(); }), HasSubstr("'A' is a placeholder"));
}

TEST_F(ScheduleErrors, ParallelReductionRaces) {
  EXPECT_THAT(user_error([&] { s[C].parallel(k); }),
              AllOf(HasSubstr("'k'"), HasSubstr("stage 'C'"), HasSubstr("reduction axis")));
}

TEST_F(ScheduleErrors, StorageAlignArguments) {
  EXPECT_THAT(user_error([&] { s[C].storage_align(k, 8, 1); }),
              HasSubstr("'k' is not a data-parallel axis of stage 'C'"));
  EXPECT_THAT(user_error([&] { s[C].storage_align(s[C].axis()[0], 8, 8); }),
              HasSubstr("0 <= offset < factor"));
}

TEST_F(ScheduleErrors, CacheReadNeedsReaders) {
  EXPECT_THAT(user_error([&] { s.cache_read(A, MemoryScope::kLocal, {D}); }),
              HasSubstr("'D' does not read 'A'"));
  Tensor other = placeholder({4}, DataType::Float32(), "other");
  EXPECT_THAT(user_error([&] { s[other]; }),
              HasSubstr("tensor 'other' is not part of this schedule"));
}

TEST_F(ScheduleErrors, CacheWriteBeforeSplitting) {
  s[C].split(s[C].axis()[0], 4);
  EXPECT_THAT(user_error([&] { s.cache_write(C, MemoryScope::kLocal); }),
              HasSubstr("before its stage is split"));
}

TEST(TensorErrors, WrongIndexCountAndBadShapes) {
  Tensor A = placeholder({4, 4}, DataType::Float32(), "A");
  EXPECT_THAT(user_error([&] { A(1); }),
              HasSubstr("tensor 'A' has 2 dimensions but is read with 1 indices"));
  EXPECT_THAT(user_error([&] {
                placeholder({4, 0}, DataType::Float32(), "Z");
              }),
              HasSubstr("tensor 'Z': dimension 1 is 0"));
  EXPECT_THAT(user_error([&] {
                compute(
                    {4}, [&](Var i) { return A(i, i) + sum(A(i, i), {reduce_axis(4, "r")}); },
                    "bad");
              }),
              HasSubstr("a reduction may only be the whole body"));
}

}  // namespace
}  // namespace anvil::te

namespace anvil::te {
namespace {

// A stage handle names its tensor, so stages inserted before it do not redirect it.
TEST(StageHandle, SurvivesInsertedStages) {
  Tensor A = placeholder({8, 64}, ir::DataType::Float32(), "A");
  ir::IterVar r = reduce_axis(64, "r");
  Tensor S = compute(
      {8}, [&](ir::Var i) { return sum(A(i, r->var), {r}); }, "S");
  Schedule s({S});
  Stage before = s[S];
  auto [ro, ri] = s[S].split(r, 8);
  Tensor RF = s.rfactor(S, ri);
  Tensor AL = s.cache_read(A, ir::MemoryScope::kLocal, {RF});
  EXPECT_EQ(before.name(), "S");
  EXPECT_EQ(before.index(), s[S].index());
  before.parallel(before.axis()[0]);  // still S's own axis
  (void)ro;
  (void)AL;
}

}  // namespace
}  // namespace anvil::te
