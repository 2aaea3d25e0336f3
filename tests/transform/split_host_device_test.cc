// The host/device split, its checks of what can run on a GPU, and barrier insertion.
#include "anvil/transform/split_host_device.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "anvil/ir/op.h"
#include "anvil/ir/printer.h"
#include "anvil/ir/visitor.h"
#include "anvil/lower/lower.h"
#include "testing/errors.h"

namespace anvil {
namespace {

using namespace te;
using namespace ir;
using ir::DataType;
using ir::MemoryScope;
using ir::Var;
using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::user_error;

Tensor vector_input(int n) {
  return placeholder({n}, DataType::Float32(), "A");
}

Tensor doubled(const Tensor& A, int n) {
  return compute(
      {n}, [&](Var i) { return A(i) * 2.0f; }, "B");
}

int count_barriers(const ir::Stmt& s) {
  struct Count : ir::IRVisitor {
    using ir::IRVisitor::visit;
    int n = 0;
    void visit(const ir::Barrier*) override { ++n; }
  } count;
  count.visit(s);
  return count.n;
}

TEST(SplitHostDevice, LaunchTakesTheBoundExtents) {
  Tensor A = vector_input(1000);
  Tensor B = doubled(A, 1000);
  Schedule s({B});
  auto [bx, tx] = s[B].split(s[B].axis()[0], 128);
  s[B].bind(bx, "blockIdx.x");
  s[B].bind(tx, "threadIdx.x");
  ir::DeviceFunc f = lower_gpu(s, {A, B}, "f", Target::parse("cuda"));
  ASSERT_EQ(f.kernels.size(), 1u);
  const ir::DeviceKernel& k = f.kernels[0];
  EXPECT_EQ(k.name, "f_kernel0");
  EXPECT_EQ(k.grid, (std::array<int64_t, 3>{8, 1, 1}));
  EXPECT_EQ(k.block, (std::array<int64_t, 3>{128, 1, 1}));
  ASSERT_EQ(k.params.size(), 2u);
  EXPECT_EQ(k.params[0]->name, "A");
  EXPECT_EQ(k.params[1]->name, "B");
  EXPECT_EQ(k.thread_vars.size(), 2u);
  EXPECT_TRUE(f.temps.empty());
  EXPECT_EQ(count_barriers(k.body), 0);
}

TEST(SplitHostDevice, UnboundLoopOverALargeExtentIsRefused) {
  Tensor A = vector_input(1 << 20);
  Tensor B = doubled(A, 1 << 20);
  Schedule s({B});
  EXPECT_THAT(user_error([&] {
                lower_gpu(s, {A, B}, "f", Target::parse("cuda"));
              }),
              AllOf(HasSubstr("GPU function 'f'"), HasSubstr("loop 'i'"), HasSubstr("1048576"),
                    HasSubstr("not bound to GPU threads")));
}

// A little unbound work (a scalar, a short loop) runs as a kernel of one thread.
TEST(SplitHostDevice, LittleUnboundWorkRunsOnOneThread) {
  Tensor A = vector_input(100);
  Tensor B = doubled(A, 100);
  Schedule s({B});
  ir::DeviceFunc f = lower_gpu(s, {A, B}, "f", Target::parse("cuda"));
  ASSERT_EQ(f.kernels.size(), 1u);
  EXPECT_EQ(f.kernels[0].grid, (std::array<int64_t, 3>{1, 1, 1}));
  EXPECT_EQ(f.kernels[0].block, (std::array<int64_t, 3>{1, 1, 1}));
  EXPECT_TRUE(f.kernels[0].thread_vars.empty());
}

TEST(SplitHostDevice, TooManyThreadsPerBlockIsRefused) {
  Tensor A = vector_input(4096);
  Tensor B = doubled(A, 4096);
  Schedule s({B});
  auto [bx, tx] = s[B].split(s[B].axis()[0], 2048);
  s[B].bind(bx, "blockIdx.x");
  s[B].bind(tx, "threadIdx.x");
  EXPECT_THAT(user_error([&] {
                lower_gpu(s, {A, B}, "f", Target::parse("cuda"));
              }),
              AllOf(HasSubstr("kernel 'f_kernel0'"), HasSubstr("2048 threads per block"),
                    HasSubstr("limit of 1024")));
  // The limit is the target's.
  EXPECT_NO_THROW(lower_gpu(s, {A, B}, "f", Target::parse("cuda -max-threads=2048")));
}

TEST(SplitHostDevice, SharedMemoryOverTheLimitIsRefused) {
  int n = 64 * 1024;
  Tensor A = vector_input(n);
  Tensor B = doubled(A, n);
  Schedule s({B});
  Tensor AA = s.cache_read(A, MemoryScope::kShared, {B});
  auto [bx, tx] = s[B].split(s[B].axis()[0], 16384);  // 64 KiB of A per block
  auto [to, ti] = s[B].split(tx, 16);
  s[B].bind(bx, "blockIdx.x");
  s[B].bind(ti, "threadIdx.x");
  s[AA].compute_at(s[B], bx);
  auto [ao, ai] = s[AA].split(s[AA].axis()[0], 16);
  s[AA].bind(ai, "threadIdx.x");
  (void)to;
  (void)ao;
  EXPECT_THAT(user_error([&] {
                lower_gpu(s, {A, B}, "f", Target::parse("cuda"));
              }),
              AllOf(HasSubstr("kernel 'f_kernel0'"), HasSubstr("65536 bytes (A.shared 65536)"),
                    HasSubstr("limit of 49152")));
}

TEST(SplitHostDevice, BindChecksItsArguments) {
  Tensor A = placeholder({8, 8}, DataType::Float32(), "A");
  IterVar r = reduce_axis(8, "k");
  Tensor S = compute(
      {8}, [&](Var i) { return sum(A(i, r->var), {r}); }, "S");
  Schedule s({S});
  EXPECT_THAT(user_error([&] { s[S].bind(s[S].axis()[0], "threadIdx.w"); }),
              HasSubstr("'threadIdx.w' on stage 'S' is not a GPU thread index"));
  EXPECT_THAT(user_error([&] { s[S].bind(r, "threadIdx.x"); }), HasSubstr("reduction axis"));
  EXPECT_THAT(user_error([&] { s[S].double_buffer(); }),
              HasSubstr("only a shared-memory stage (cache_read into shared) can be "
                        "double-buffered"));
  std::pair<IterVar, IterVar> parts = s[S].split(s[S].axis()[0], 4);
  s[S].bind(parts.first, "threadIdx.x");
  EXPECT_THAT(user_error([&] { s[S].bind(parts.second, "threadIdx.x"); }),
              HasSubstr("binds two loops"));
}

// A shared tile fetched by the block's threads, then read by all of them, inside a loop: one
// barrier between the fetch and the reads, one at the top of the loop so that the next fetch
// waits for this iteration's reads.
TEST(SplitHostDevice, BarriersAroundASharedTileInALoop) {
  int m = 64, k = 64;
  Tensor A = placeholder({m, k}, DataType::Float32(), "A");
  IterVar r = reduce_axis(k, "k");
  Tensor S = compute(
      {m}, [&](Var i) { return sum(A(i, r->var), {r}); }, "S");
  Schedule s({S});
  Tensor AA = s.cache_read(A, MemoryScope::kShared, {S});
  auto [bx, tx] = s[S].split(s[S].axis()[0], 16);
  s[S].bind(bx, "blockIdx.x");
  s[S].bind(tx, "threadIdx.x");
  auto [ko, ki] = s[S].split(r, 16);
  s[AA].compute_at(s[S], ko);
  IterVar fused = s[AA].fuse(s[AA].axis()[0], s[AA].axis()[1]);
  auto [o, t] = s[AA].split(fused, 16);
  s[AA].bind(t, "threadIdx.x");
  (void)ki;
  (void)o;
  ir::DeviceFunc f = lower_gpu(s, {A, S}, "f", Target::parse("opencl"));
  ASSERT_EQ(f.kernels.size(), 1u);
  EXPECT_EQ(count_barriers(f.kernels[0].body), 2) << f.kernels[0].body;
  EXPECT_EQ(f.kernels[0].shared_bytes, 16 * 16 * 4);
}

TEST(SplitHostDevice, TargetOptions) {
  Target cuda = Target::parse("cuda -arch=sm_80 -max-shared-memory=100000");
  EXPECT_EQ(cuda.kind, Target::Kind::kCUDA);
  EXPECT_EQ(cuda.arch, "sm_80");
  EXPECT_EQ(cuda.max_threads_per_block, 1024);
  EXPECT_EQ(cuda.max_shared_memory, 100000);
  EXPECT_EQ(Target::parse(cuda.str()), cuda);
  Target opencl = Target::parse("opencl");
  EXPECT_EQ(opencl.max_threads_per_block, 256);
  EXPECT_EQ(Target::parse(opencl.str()), opencl);
  EXPECT_THAT(user_error([] { Target::parse("cuda -arch=90"); }), HasSubstr("sm_<digits>"));
  EXPECT_THAT(user_error([] { Target::parse("opencl -arch=sm_90"); }),
              HasSubstr("unknown option '-arch'"));
  EXPECT_THAT(user_error([] { Target::parse("cuda -max-threads=0"); }),
              HasSubstr("-max-threads must be a positive integer"));
}

}  // namespace
}  // namespace anvil
