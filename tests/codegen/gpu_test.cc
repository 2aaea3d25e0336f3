// GPU schedules (bind, shared and local memory, cooperative fetching, barriers) lowered for
// OpenCL and run on the CPU through PoCL, against naive loops; and lowered for CUDA and compiled
// to PTX.
#include <gmock/gmock.h>

#include <functional>

#include "anvil/ir/op.h"
#include "anvil/ir/printer.h"
#include "anvil/ir/visitor.h"
#include "anvil/te/schedule.h"
#include "codegen/gpu_testing.h"

namespace anvil {
namespace {

using namespace te;
using namespace ir;
using gpu_testing::check_gpu;
using gpu_testing::random_values;
using gpu_testing::Values;
using ir::DataType;
using ir::MemoryScope;
using ir::Var;

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
  std::vector<float> reference(const Values& v) const {
    std::vector<float> c(static_cast<size_t>(m * n), 0.0f);
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j)
        for (int x = 0; x < k; ++x) c[i * n + j] += v[0][i * k + x] * v[1][x * n + j];
    return c;
  }
};

// How many barriers a thread passes through `s` (loops of constant extent; both branches of an if).
int64_t barriers_executed(const ir::Stmt& s) {
  struct Count : ir::IRVisitor {
    using ir::IRVisitor::visit;
    int64_t n = 0, scale = 1;
    void visit(const ir::Barrier*) override { n += scale; }
    void visit(const ir::For* op) override {
      int64_t outer = scale;
      scale *= *ir::as_const_int(op->extent);
      ir::IRVisitor::visit(op);
      scale = outer;
    }
  } count;
  count.visit(s);
  return count.n;
}

TEST(Gpu, ElementwiseWithTail) {
  int n = 1000;  // not a multiple of the block: the last block's threads past n do nothing
  Tensor A = placeholder({n}, DataType::Float32(), "A");
  Tensor B = placeholder({n}, DataType::Float32(), "B");
  Tensor C = compute(
      {n}, [&](Var i) { return A(i) * 2.0f + B(i); }, "C");
  Schedule s({C});
  auto [bx, tx] = s[C].split(s[C].axis()[0], 64);
  s[C].bind(bx, "blockIdx.x");
  s[C].bind(tx, "threadIdx.x");
  Values v = random_values({A, B, C}, 1);
  std::vector<float> ref(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) ref[static_cast<size_t>(i)] = v[0][i] * 2.0f + v[1][i];
  check_gpu(s, {A, B, C}, v, 2, ref);
}

TEST(Gpu, TwoDimensionalGridAndBlock) {
  int m = 37, n = 45;
  Tensor A = placeholder({m, n}, DataType::Float32(), "A");
  Tensor C = compute(
      {m, n}, [&](Var i, Var j) { return max(A(i, j), 0.0f); }, "C");
  Schedule s({C});
  std::vector<IterVar> t = s[C].tile(s[C].axis()[0], s[C].axis()[1], 8, 16);
  s[C].bind(t[0], "blockIdx.y");
  s[C].bind(t[1], "blockIdx.x");
  s[C].bind(t[2], "threadIdx.y");
  s[C].bind(t[3], "threadIdx.x");
  Values v = random_values({A, C}, 2);
  std::vector<float> ref(v[0].size());
  for (size_t i = 0; i < ref.size(); ++i) ref[i] = std::max(v[0][i], 0.0f);
  check_gpu(s, {A, C}, v, 1, ref);
}

// Each thread reduces a row serially.
TEST(Gpu, RowReduction) {
  int m = 70, k = 33;
  Tensor A = placeholder({m, k}, DataType::Float32(), "A");
  IterVar r = reduce_axis(k, "k");
  Tensor S = compute(
      {m}, [&](Var i) { return sum(A(i, r->var), {r}); }, "S");
  Schedule s({S});
  auto [bx, tx] = s[S].split(s[S].axis()[0], 32);
  s[S].bind(bx, "blockIdx.x");
  s[S].bind(tx, "threadIdx.x");
  Values v = random_values({A, S}, 3);
  std::vector<float> ref(static_cast<size_t>(m), 0.0f);
  for (int i = 0; i < m; ++i)
    for (int x = 0; x < k; ++x) ref[static_cast<size_t>(i)] += v[0][i * k + x];
  check_gpu(s, {A, S}, v, 1, ref);
}

// Two root stages are two kernels; the intermediate tensor lives in device memory the host entry
// allocates.
TEST(Gpu, TwoKernelsWithATemporary) {
  int n = 300;
  Tensor A = placeholder({n}, DataType::Float32(), "A");
  Tensor B = compute(
      {n}, [&](Var i) { return A(i) + 1.0f; }, "B");
  Tensor C = compute(
      {n}, [&](Var i) { return B(n - 1 - i) * B(i); }, "C");
  Schedule s({C});
  for (const Tensor& t : {B, C}) {
    auto [bx, tx] = s[t].split(s[t].axis()[0], 128);
    s[t].bind(bx, "blockIdx.x");
    s[t].bind(tx, "threadIdx.x");
  }
  ir::DeviceFunc f = lower_gpu(s, {A, C}, "kernel", Target::parse("opencl"));
  EXPECT_EQ(f.kernels.size(), 2u);
  EXPECT_EQ(f.temps.size(), 1u);
  Values v = random_values({A, C}, 4);
  std::vector<float> ref(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) ref[static_cast<size_t>(i)] = (v[0][n - 1 - i] + 1) * (v[0][i] + 1);
  check_gpu(s, {A, C}, v, 1, ref);
}

// The paper's GPU matmul: a block computes a tile of C; per step of the reduction its threads
// fetch tiles of A and B into shared memory cooperatively (each thread a few elements), then each
// accumulates its own 2x2 outputs in registers (local memory).
TEST(Gpu, MatMulSharedTilesCooperativeFetchLocalAccumulators) {
  for (auto [m, n, k] : {std::tuple{64, 64, 32}, std::tuple{50, 70, 45}}) {
    MatMul p(m, n, k);
    Schedule s({p.C});
    Tensor CL = s.cache_write(p.C, MemoryScope::kLocal);
    Tensor AA = s.cache_read(p.A, MemoryScope::kShared, {CL});
    Tensor BB = s.cache_read(p.B, MemoryScope::kShared, {CL});
    // C: 16x16 blocks of 8x8 threads, each thread 2x2 outputs.
    std::vector<IterVar> t = s[p.C].tile(s[p.C].axis()[0], s[p.C].axis()[1], 16, 16);
    auto [ty, yi] = s[p.C].split(t[2], 2);
    auto [tx, xi] = s[p.C].split(t[3], 2);
    s[p.C].reorder({t[0], t[1], ty, tx, yi, xi});
    s[p.C].bind(t[0], "blockIdx.y");
    s[p.C].bind(t[1], "blockIdx.x");
    s[p.C].bind(ty, "threadIdx.y");
    s[p.C].bind(tx, "threadIdx.x");
    s[CL].compute_at(s[p.C], tx);
    auto [ko, ki] = s[CL].split(s[CL].reduce_axis()[0], 8);
    s[CL].reorder({ko, ki, s[CL].axis()[0], s[CL].axis()[1]});
    // Tiles of 16x8 (A) and 8x16 (B): 128 elements over 64 threads, two each.
    for (const Tensor& shared : {AA, BB}) {
      s[shared].compute_at(s[CL], ko);
      IterVar fused = s[shared].fuse(s[shared].axis()[0], s[shared].axis()[1]);
      auto [outer, inner] = s[shared].split(fused, 64);
      auto [y, x] = s[shared].split(inner, 8);
      s[shared].bind(y, "threadIdx.y");
      s[shared].bind(x, "threadIdx.x");
      (void)outer;
    }
    ir::DeviceFunc f = lower_gpu(s, {p.A, p.B, p.C}, "kernel", Target::parse("opencl"));
    ASSERT_EQ(f.kernels.size(), 1u);
    EXPECT_EQ(f.kernels[0].block, (std::array<int64_t, 3>{8, 8, 1}));
    // Where k is not a multiple of 8, loop partitioning gives the last step copies of its own.
    if (k % 8 == 0) {
      EXPECT_EQ(f.kernels[0].shared_bytes, (16 * 8 + 8 * 16) * 4);
    }
    EXPECT_THAT(codegen::generate_opencl({f}),
                ::testing::HasSubstr("barrier(CLK_LOCAL_MEM_FENCE)"));
    Values v = random_values({p.A, p.B, p.C}, 5);
    SCOPED_TRACE(::testing::Message() << m << "x" << n << "x" << k);
    check_gpu(s, {p.A, p.B, p.C}, v, 2, p.reference(v));
  }
}

// Virtual threads: each thread computes 2x2 outputs strided by the block's width (8), so that
// neighbouring threads touch neighbouring elements; the shared tiles cover every virtual thread.
TEST(Gpu, MatMulWithVirtualThreads) {
  for (auto [m, n, k] : {std::tuple{32, 32, 16}, std::tuple{45, 40, 21}}) {
    MatMul p(m, n, k);
    Schedule s({p.C});
    Tensor CL = s.cache_write(p.C, MemoryScope::kLocal);
    Tensor AA = s.cache_read(p.A, MemoryScope::kShared, {CL});
    std::vector<IterVar> t = s[p.C].tile(s[p.C].axis()[0], s[p.C].axis()[1], 16, 16);
    auto [vy, ty] = s[p.C].split_nparts(t[2], 2);
    auto [vx, tx] = s[p.C].split_nparts(t[3], 2);
    s[p.C].reorder({t[0], t[1], vy, vx, ty, tx});
    s[p.C].bind(t[0], "blockIdx.y");
    s[p.C].bind(t[1], "blockIdx.x");
    s[p.C].bind(vy, "vthread.y");
    s[p.C].bind(vx, "vthread.x");
    s[p.C].bind(ty, "threadIdx.y");
    s[p.C].bind(tx, "threadIdx.x");
    s[CL].compute_at(s[p.C], tx);
    auto [ko, ki] = s[CL].split(s[CL].reduce_axis()[0], 4);
    (void)ki;
    s[AA].compute_at(s[CL], ko);
    IterVar fused = s[AA].fuse(s[AA].axis()[0], s[AA].axis()[1]);
    auto [outer, inner] = s[AA].split(fused, 64);
    auto [y, x] = s[AA].split(inner, 8);
    s[AA].bind(y, "threadIdx.y");
    s[AA].bind(x, "threadIdx.x");
    (void)outer;
    ir::DeviceFunc f = lower_gpu(s, {p.A, p.B, p.C}, "kernel", Target::parse("opencl"));
    ASSERT_EQ(f.kernels.size(), 1u);
    EXPECT_EQ(f.kernels[0].block, (std::array<int64_t, 3>{8, 8, 1}));
    if (m % 16 == 0 && k % 4 == 0) {
      EXPECT_EQ(f.kernels[0].shared_bytes, 16 * 4 * 4);  // the 16 rows of all virtual threads
    }
    Values v = random_values({p.A, p.B, p.C}, 6);
    SCOPED_TRACE(::testing::Message() << m << "x" << n << "x" << k);
    check_gpu(s, {p.A, p.B, p.C}, v, 2, p.reference(v));
  }
}

// Double buffering: the tiles of A and B for step ko + 1 are fetched into the other halves of
// their shared buffers while step ko's are read; one barrier per step (and one after the first
// fetch) instead of two.
TEST(Gpu, MatMulWithDoubleBufferedSharedTiles) {
  for (auto [m, n, k] : {std::tuple{32, 32, 32}, std::tuple{40, 35, 27}}) {
    MatMul p(m, n, k);
    Schedule s({p.C});
    Tensor CL = s.cache_write(p.C, MemoryScope::kLocal);
    Tensor AA = s.cache_read(p.A, MemoryScope::kShared, {CL});
    Tensor BB = s.cache_read(p.B, MemoryScope::kShared, {CL});
    std::vector<IterVar> t = s[p.C].tile(s[p.C].axis()[0], s[p.C].axis()[1], 16, 16);
    s[p.C].bind(t[0], "blockIdx.y");
    s[p.C].bind(t[1], "blockIdx.x");
    s[p.C].bind(t[2], "threadIdx.y");
    s[p.C].bind(t[3], "threadIdx.x");
    s[CL].compute_at(s[p.C], t[3]);
    auto [ko, ki] = s[CL].split(s[CL].reduce_axis()[0], 8);
    (void)ki;
    for (const Tensor& shared : {AA, BB}) {
      s[shared].compute_at(s[CL], ko);
      s[shared].double_buffer();
      IterVar fused = s[shared].fuse(s[shared].axis()[0], s[shared].axis()[1]);
      auto [outer, inner] = s[shared].split(fused, 256);
      auto [y, x] = s[shared].split(inner, 16);
      s[shared].bind(y, "threadIdx.y");
      s[shared].bind(x, "threadIdx.x");
      (void)outer;
    }
    ir::DeviceFunc f = lower_gpu(s, {p.A, p.B, p.C}, "kernel", Target::parse("opencl"));
    ASSERT_EQ(f.kernels.size(), 1u);
    EXPECT_EQ(f.kernels[0].shared_bytes, 2 * (16 * 8 + 8 * 16) * 4);  // two halves each
    // Barriers a thread passes: one after the first fetch, then one per step of 8.
    EXPECT_EQ(barriers_executed(f.kernels[0].body), 1 + (k + 7) / 8) << f.kernels[0].body;
    Values v = random_values({p.A, p.B, p.C}, 7);
    SCOPED_TRACE(::testing::Message() << m << "x" << n << "x" << k);
    check_gpu(s, {p.A, p.B, p.C}, v, 2, p.reference(v));
  }
}

// Vectors of 4 floats in a GPU kernel: a dense access whose start is a multiple of 4 is one vector
// load or store (OpenCL vload4/vstore4, CUDA float4 through a pointer cast); a shifted load, or
// one that C evaluates only under a condition (a select's value), stays lane by lane. Each runs
// on PoCL against naive loops (and compiles for sm_90, in check_gpu).
TEST(Gpu, AlignedDenseVectorsAreOneLoadOrStore) {
  const int n = 256;
  struct Case {
    const char* name;
    std::function<Expr(const Tensor&, Var)> body;
    std::function<float(const std::vector<float>&, int)> reference;
    int vector_loads;
  };
  std::vector<Case> cases = {
      {"aligned", [](const Tensor& A, Var i) { return A(i) * 2.0f; },
       [](const std::vector<float>& a, int i) { return a[i] * 2.0f; }, 1},
      {"shifted", [](const Tensor& A, Var i) { return A(i + 1) * 2.0f; },
       [](const std::vector<float>& a, int i) { return a[i + 1] * 2.0f; }, 0},
      {"selected",
       [](const Tensor& A, Var i) { return select(floormod(i, 8) < 3, A(i), Expr(0.0f)); },
       [](const std::vector<float>& a, int i) { return i % 8 < 3 ? a[i] : 0.0f; }, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Tensor A = placeholder({n + 4}, DataType::Float32(), "A");
    Tensor C = compute(
        {n}, [&](Var i) { return c.body(A, i); }, "C");
    Schedule s({C});
    auto [o, lane] = s[C].split(s[C].axis()[0], 4);
    auto [bx, tx] = s[C].split(o, 16);
    s[C].bind(bx, "blockIdx.x");
    s[C].bind(tx, "threadIdx.x");
    s[C].vectorize(lane);
    auto count = [](const std::string& text, const std::string& what) {
      size_t k = 0;
      for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++k;
      return static_cast<int>(k);
    };
    std::string opencl =
        codegen::generate_opencl({lower_gpu(s, {A, C}, "kernel", Target::parse("opencl"))});
    EXPECT_EQ(count(opencl, "vload4("), c.vector_loads) << opencl;
    EXPECT_EQ(count(opencl, "vstore4("), 1) << opencl;
    std::string cuda =
        codegen::generate_cuda({lower_gpu(s, {A, C}, "kernel", Target::parse("cuda -arch=sm_90"))});
    EXPECT_EQ(count(cuda, "*(const float4*)"), c.vector_loads) << cuda;
    EXPECT_EQ(count(cuda, "= make_float4("), 1) << cuda;
    Values v = random_values({A, C}, 11);
    std::vector<float> ref(n);
    for (int i = 0; i < n; ++i) ref[static_cast<size_t>(i)] = c.reference(v[0], i);
    check_gpu(s, {A, C}, v, 1, ref);
  }
}

}  // namespace
}  // namespace anvil
