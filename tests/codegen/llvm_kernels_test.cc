// Kernels compiled by the LLVM back end and run in process: vector and scalar loops, loop nests,
// parallel loops, argument checks, symbolic shapes, allocation, asserts, and the errors of IR
// the CPU cannot run.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "codegen/llvm_testing.h"

namespace anvil {
namespace {

using ir::Buffer;
using ir::DataType;
using ir::Expr;
using ir::Stmt;
using ir::Var;
using llvm_testing::array;
using llvm_testing::call;
using llvm_testing::compile;
using llvm_testing::flat;
using llvm_testing::func;
using llvm_testing::loop;
using llvm_testing::read;
using llvm_testing::write;
using runtime::NDArray;
using ::testing::HasSubstr;

const DataType f32 = DataType::Float32();

std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -10, float hi = 10) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

NDArray random_array(std::vector<int64_t> shape, uint32_t seed) {
  NDArray a = array(shape);
  write(a, random_floats(static_cast<size_t>(a.numel()), seed));
  return a;
}

Expr load(const Buffer& b, Expr index, Expr predicate = Expr()) {
  return ir::Load::make(b, {std::move(index)}, std::move(predicate));
}

Stmt store(const Buffer& b, Expr index, Expr value, Expr predicate = Expr()) {
  return ir::Store::make(b, std::move(value), {std::move(index)}, std::move(predicate));
}

TEST(LLVMKernels, VectorAddWithRamps) {
  const int n = 1024;
  Buffer A = Buffer::make("A", f32, {n}), B = Buffer::make("B", f32, {n}),
         C = Buffer::make("C", f32, {n});
  Var i("i");
  Expr idx = ir::Ramp::make(i * 8, 1, 8);
  Stmt body = loop(i, n / 8, store(C, idx, load(A, idx) + load(B, idx)));
  auto m = compile({func("vadd", {A, B, C}, body)});
  NDArray a = random_array({n}, 1), b = random_array({n}, 2), c = array({n});
  ANVIL_EXPECT_RUNS(m->get_function("vadd"), a, b, c);
  std::vector<float> av = read<float>(a), bv = read<float>(b), cv = read<float>(c);
  for (int k = 0; k < n; ++k) ASSERT_EQ(cv[k], av[k] + bv[k]) << k;
  // Contiguous vector loads whose base is a multiple of 8 floats: as aligned as an argument is
  // (16 bytes, ANVIL_ARG_ALIGNMENT).
  std::string ir = m->llvm_ir("vadd");
  EXPECT_THAT(ir, ::testing::ContainsRegex("load <[0-9]+ x float>, ptr %[^,]+, align 16"));
}

TEST(LLVMKernels, MatmulLoopNestWithReduction) {
  const int M = 37, N = 29, K = 53;
  Buffer A = Buffer::make("A", f32, {M, K}), B = Buffer::make("B", f32, {K, N}),
         C = Buffer::make("C", f32, {M, N});
  Buffer Af = flat(A), Bf = flat(B), Cf = flat(C);
  Var i("i"), j("j"), k("k");
  Expr c_index = i * N + j;
  Stmt init = store(Cf, c_index, Expr(0.0f));
  Stmt update = store(Cf, c_index, load(Cf, c_index) + load(Af, i * K + k) * load(Bf, k * N + j));
  Stmt body = loop(i, M, loop(j, N, ir::Seq::make(init, loop(k, K, update))));
  auto m = compile({func("matmul", {A, B, C}, body)});
  NDArray a = random_array({M, K}, 3), b = random_array({K, N}, 4), c = array({M, N});
  ANVIL_EXPECT_RUNS(m->get_function("matmul"), a, b, c);
  std::vector<float> av = read<float>(a), bv = read<float>(b), cv = read<float>(c);
  for (int x = 0; x < M; ++x) {
    for (int y = 0; y < N; ++y) {
      double ref = 0, mag = 0;
      for (int z = 0; z < K; ++z) {
        ref += double(av[x * K + z]) * bv[z * N + y];
        mag += std::abs(double(av[x * K + z]) * bv[z * N + y]);
      }
      ASSERT_NEAR(cv[x * N + y], ref, 1e-5 * mag) << x << ", " << y;
    }
  }
}

TEST(LLVMKernels, ParallelLoopCapturesVariables) {
  Var n("n");
  Buffer A = Buffer::make("A", f32, {n}), B = Buffer::make("B", f32, {n});
  Var i("i"), scale("scale", f32);
  // scale is bound outside the parallel loop and used inside it.
  Stmt body = ir::LetStmt::make(
      scale, Expr(2.0f) + ir::cast(f32, n),
      loop(i, n, store(B, i, load(A, i) * scale + ir::cast(f32, i)), ir::ForKind::kParallel));
  auto m = compile({func("par", {A, B}, body)});
  EXPECT_THAT(m->llvm_ir("par"), HasSubstr("AnvilParallelFor"));
  AnvilSetNumThreads(4);
  for (int size : {0, 1, 3, 1000, 4099}) {
    NDArray a = random_array({size}, 5), b = array({size});
    ANVIL_EXPECT_RUNS(m->get_function("par"), a, b);
    std::vector<float> av = read<float>(a), bv = read<float>(b);
    for (int k = 0; k < size; ++k) {
      // Contraction may fuse the multiply-add: one rounding instead of two.
      double ref = double(av[k]) * (2.0 + size) + k;
      ASSERT_NEAR(bv[k], ref, 1e-6 * (std::abs(double(av[k]) * (2.0 + size)) + k))
          << size << " " << k;
    }
  }
  AnvilSetNumThreads(0);
}

TEST(LLVMKernels, NestedParallelLoopsWithOffsetMin) {
  const int rows = 17, cols = 33;
  Buffer A = Buffer::make("A", f32, {rows, cols});
  Buffer Af = flat(A);
  Var i("i"), j("j");
  // for i in [2, rows): for j in [0, cols): A[i, j] = i * 100 + j, both parallel.
  Stmt inner =
      loop(j, cols, store(Af, i * cols + j, ir::cast(f32, i * 100 + j)), ir::ForKind::kParallel);
  Stmt body = ir::For::make(i, 2, rows - 2, ir::ForKind::kParallel, inner);
  auto m = compile({func("nested", {A}, body)});
  AnvilSetNumThreads(3);
  NDArray a = array({rows, cols});
  ANVIL_EXPECT_RUNS(m->get_function("nested"), a);
  AnvilSetNumThreads(0);
  std::vector<float> av = read<float>(a);
  for (int x = 0; x < rows; ++x) {
    for (int y = 0; y < cols; ++y) {
      ASSERT_EQ(av[x * cols + y], x < 2 ? 0.0f : float(x * 100 + y)) << x << ", " << y;
    }
  }
}

TEST(LLVMKernels, AssertInsideParallelLoopFailsTheKernel) {
  const int n = 64;
  Buffer A = Buffer::make("A", f32, {n}), B = Buffer::make("B", f32, {n});
  Var i("i");
  Stmt body = loop(i, n,
                   ir::AssertStmt::make(load(A, i) < Expr(100.0f), "A holds a value >= 100",
                                        store(B, i, load(A, i))),
                   ir::ForKind::kParallel);
  auto m = compile({func("guarded", {A, B}, body)});
  NDArray a = random_array({n}, 6), b = array({n});
  ANVIL_EXPECT_RUNS(m->get_function("guarded"), a, b);
  a.data_as<float>()[37] = 500.0f;
  AnvilSetNumThreads(4);
  EXPECT_EQ(call(m->get_function("guarded"), {a, b}), -1);
  AnvilSetNumThreads(0);
  EXPECT_STREQ(AnvilGetLastError(), "guarded: A holds a value >= 100");
}

// A kernel with three arguments of different types, for the argument checks.
class LLVMArgumentChecks : public ::testing::Test {
 protected:
  void SetUp() override {
    Buffer A = Buffer::make("A", f32, {4, 8});
    Buffer B = Buffer::make("B", DataType::Int32(), {8});
    Buffer C = Buffer::make("C", f32, {4, 8});
    Var i("i");
    Stmt body = loop(
        i, 32, store(flat(C), i, load(flat(A), i) + ir::cast(f32, load(B, ir::floormod(i, 8)))));
    module_ = compile({func("checked", {A, B, C}, body)});
    kernel_ = module_->get_function("checked");
    a_ = random_array({4, 8}, 7);
    b_ = array({8}, DataType::Int32());
    c_ = array({4, 8});
    std::vector<float> sentinel(32, 42.0f);
    write(c_, sentinel);
  }
  // Expects the call to fail with a message containing `what`, leaving C untouched.
  void expect_failure(const std::vector<const DLTensor*>& args, const std::string& what) {
    EXPECT_EQ(call(kernel_, args), -1);
    EXPECT_THAT(AnvilGetLastError(), HasSubstr(what));
    for (float v : read<float>(c_)) ASSERT_EQ(v, 42.0f) << "the output was written";
  }
  std::unique_ptr<codegen::LLVMModule> module_;
  AnvilKernel kernel_ = nullptr;
  NDArray a_, b_, c_;
};

TEST_F(LLVMArgumentChecks, ValidArgumentsRun) {
  EXPECT_EQ(call(kernel_, {a_, b_, c_}), 0) << AnvilGetLastError();
  EXPECT_EQ(read<float>(c_)[5], read<float>(a_)[5]);
}

TEST_F(LLVMArgumentChecks, WrongArgumentCount) {
  expect_failure({a_.get(), b_.get()}, "checked: expected 3 arguments, got 2");
}

TEST_F(LLVMArgumentChecks, WrongDtype) {
  NDArray wrong = array({8});
  expect_failure({a_.get(), wrong.get(), c_.get()},
                 "checked: argument 1 ('B'): expected dtype int32");
}

TEST_F(LLVMArgumentChecks, WrongShape) {
  NDArray wrong = array({4, 9});
  expect_failure({wrong.get(), b_.get(), c_.get()},
                 "checked: argument 0 ('A'): expected shape[1] = 8, got 9");
}

TEST_F(LLVMArgumentChecks, WrongRank) {
  NDArray wrong = array({32});
  expect_failure({a_.get(), b_.get(), wrong.get()}, "argument 2 ('C'): expected 2 dimensions");
}

TEST_F(LLVMArgumentChecks, NullTensor) {
  expect_failure({a_.get(), nullptr, c_.get()}, "argument 1 ('B')");
}

TEST_F(LLVMArgumentChecks, Misaligned) {
  NDArray big = array({40});
  DLTensor t = *big.get();
  t.ndim = 2;
  int64_t shape[2] = {4, 8};
  t.shape = shape;
  t.byte_offset = 4;
  expect_failure({&t, b_.get(), c_.get()}, "aligned");
}

TEST(LLVMKernels, SymbolicShapesBindAndCheck) {
  Var n("n");
  Buffer A = Buffer::make("A", f32, {n}), B = Buffer::make("B", f32, {n}),
         D = Buffer::make("D", f32, {n * 2});
  Var i("i");
  Stmt body = loop(i, n,
                   ir::Seq::make({store(B, i, load(A, i) + Expr(1.0f)), store(D, i * 2, load(A, i)),
                                  store(D, i * 2 + 1, -load(A, i))}));
  auto m = compile({func("sym", {A, B, D}, body)});
  AnvilKernel k = m->get_function("sym");
  for (int size : {1, 7, 100}) {
    NDArray a = random_array({size}, 8), b = array({size}), d = array({size * 2});
    ANVIL_EXPECT_RUNS(k, a, b, d);
    std::vector<float> av = read<float>(a), bv = read<float>(b), dv = read<float>(d);
    for (int x = 0; x < size; ++x) {
      ASSERT_EQ(bv[x], av[x] + 1.0f);
      ASSERT_EQ(dv[2 * x], av[x]);
      ASSERT_EQ(dv[2 * x + 1], -av[x]);
    }
  }
  NDArray a = array({7}), b = array({8}), d = array({14}), d_wrong = array({15});
  EXPECT_EQ(call(k, {a, b, d}), -1);
  EXPECT_THAT(AnvilGetLastError(),
              HasSubstr("sym: argument 1 ('B'): expected shape[0] = n = 7, got 8"));
  NDArray b7 = array({7});
  EXPECT_EQ(call(k, {a, b7, d_wrong}), -1);
  EXPECT_THAT(AnvilGetLastError(),
              HasSubstr("argument 2 ('D'): expected shape[0] = n*2 = 14, got 15"));
}

TEST(LLVMKernels, ShapeTooLargeForItsVariable) {
  Var n("n");  // int32
  Buffer A = Buffer::make("A", f32, {n});
  Var i("i");
  auto m = compile({func("narrow", {A}, loop(i, n, store(A, i, Expr(0.0f))))});
  NDArray a = array({4});
  DLTensor t = *a.get();
  int64_t shape = (int64_t{1} << 32) + 4;  // truncates to 4
  t.shape = &shape;
  EXPECT_EQ(call(m->get_function("narrow"), std::vector<const DLTensor*>{&t}), -1);
  EXPECT_THAT(AnvilGetLastError(), HasSubstr("does not fit the int32 variable 'n'"));
}

TEST(LLVMKernels, AllocateOnTheStack) {
  const int n = 16;
  Buffer A = Buffer::make("A", f32, {n}), B = Buffer::make("B", f32, {n});
  Buffer T = Buffer::make("T", f32, {n}, {}, ir::MemoryScope::kLocal);
  Var i("i"), j("j");
  Stmt body = ir::Allocate::make(T, ir::Seq::make(loop(i, n, store(T, i, load(A, i) * Expr(2.0f))),
                                                  loop(j, n, store(B, j, load(T, n - 1 - j)))));
  auto m = compile({func("stack", {A, B}, body)});
  NDArray a = random_array({n}, 9), b = array({n});
  ANVIL_EXPECT_RUNS(m->get_function("stack"), a, b);
  std::vector<float> av = read<float>(a), bv = read<float>(b);
  for (int x = 0; x < n; ++x) ASSERT_EQ(bv[x], av[n - 1 - x] * 2.0f);
  std::string ir = m->llvm_ir("stack");
  EXPECT_THAT(ir, ::testing::Not(HasSubstr("AnvilWorkspaceAlloc")));
}

TEST(LLVMKernels, AllocateFromTheWorkspace) {
  Var n("n");
  const int big = 1 << 16;  // 256 KiB of floats: too large for the stack
  Buffer A = Buffer::make("A", f32, {n}), B = Buffer::make("B", f32, {n});
  Buffer T = Buffer::make("T", f32, {n});
  Buffer U = Buffer::make("U", f32, {big});
  Var i("i"), j("j"), k("k");
  Stmt body = ir::Allocate::make(
      T,
      ir::Allocate::make(
          U, ir::Seq::make(
                 {loop(i, n, store(T, i, load(A, i) + Expr(1.0f))),
                  loop(k, big, store(U, k, ir::cast(f32, k))),
                  loop(j, n, store(B, j, load(T, n - 1 - j) + load(U, ir::floormod(j, big))))})));
  auto m = compile({func("workspace", {A, B}, body)});
  std::string ir = m->llvm_ir("workspace");
  EXPECT_THAT(ir, HasSubstr("AnvilWorkspaceAlloc"));
  EXPECT_THAT(ir, HasSubstr("AnvilWorkspaceFree"));
  for (int size : {0, 5, 300}) {
    NDArray a = random_array({size}, 10), b = array({size});
    ANVIL_EXPECT_RUNS(m->get_function("workspace"), a, b);
    std::vector<float> av = read<float>(a), bv = read<float>(b);
    for (int x = 0; x < size; ++x) ASSERT_EQ(bv[x], av[size - 1 - x] + 1.0f + float(x));
  }
}

TEST(LLVMKernels, FailedWorkspaceAllocationIsReported) {
  Var n("n", DataType::Int64());
  Buffer A = Buffer::make("A", f32, {n});
  Buffer T = Buffer::make("T", f32, {n});
  Var i("i", DataType::Int64());
  Stmt body = ir::Allocate::make(
      T, ir::Seq::make(loop(i, n, store(T, i, load(A, i))), loop(i, n, store(A, i, load(T, i)))));
  auto m = compile({func("huge", {A}, body)});
  NDArray a = array({4});
  DLTensor t = *a.get();
  int64_t shape = int64_t{1} << 61;  // 2^63 bytes: the allocation fails before any access
  t.shape = &shape;
  EXPECT_EQ(call(m->get_function("huge"), std::vector<const DLTensor*>{&t}), -1);
  EXPECT_STREQ(
      AnvilGetLastError(),
      "huge: cannot allocate workspace memory for buffer 'T' (AnvilWorkspaceAlloc failed)");
}

TEST(LLVMKernels, AssertFreesLiveWorkspaces) {
  Var n("n");
  Buffer A = Buffer::make("A", f32, {n});
  Buffer T = Buffer::make("T", f32, {n});
  Var i("i");
  Stmt body =
      ir::Allocate::make(T, loop(i, n,
                                 ir::AssertStmt::make(load(A, i) >= Expr(0.0f), "negative input",
                                                      store(T, i, load(A, i)))));
  auto m = compile({func("asserting", {A}, body)});
  NDArray a = array({10});
  ANVIL_EXPECT_RUNS(m->get_function("asserting"), a);
  a.data_as<float>()[3] = -1.0f;
  EXPECT_EQ(call(m->get_function("asserting"), {a}), -1);
  EXPECT_STREQ(AnvilGetLastError(), "asserting: negative input");
  // The failure path frees T: the sanitizer build reports a leak otherwise.
  std::string ir = m->llvm_ir("asserting");
  size_t frees = 0;
  for (size_t p = ir.find("call void @AnvilWorkspaceFree"); p != std::string::npos;
       p = ir.find("call void @AnvilWorkspaceFree", p + 1)) {
    ++frees;
  }
  EXPECT_GE(frees, 2u);
}

TEST(LLVMKernels, PredicatedVectorLoadsAndStores) {
  const int n = 13, padded = 16;
  Buffer A = Buffer::make("A", f32, {padded}), B = Buffer::make("B", f32, {padded});
  Var i("i");
  Expr idx = ir::Ramp::make(i * 8, 1, 8);
  Expr inside = idx < ir::Broadcast::make(n, 8);
  Stmt body =
      loop(i, 2, store(B, idx, load(A, idx, inside) + ir::Broadcast::make(1.0f, 8), inside));
  auto m = compile({func("masked", {A, B}, body)});
  NDArray a = random_array({padded}, 11), b = array({padded});
  write(b, std::vector<float>(padded, -7.0f));
  ANVIL_EXPECT_RUNS(m->get_function("masked"), a, b);
  std::vector<float> av = read<float>(a), bv = read<float>(b);
  for (int x = 0; x < padded; ++x) ASSERT_EQ(bv[x], x < n ? av[x] + 1.0f : -7.0f) << x;
  EXPECT_THAT(m->llvm_ir("masked"), HasSubstr("llvm.masked."));
}

TEST(LLVMKernels, GatherScatterAndBroadcastIndices) {
  Buffer A = Buffer::make("A", f32, {16}), B = Buffer::make("B", f32, {16}),
         C = Buffer::make("C", f32, {8});
  Expr evens = ir::Ramp::make(0, 2, 8), odds = ir::Ramp::make(1, 2, 8),
       first = ir::Ramp::make(0, 1, 8);
  // B[odd k] = A[even k]; B[even k] = A[3]; C[k] = A[15 - k] (stride -1).
  Stmt body = ir::Seq::make({store(B, odds, load(A, evens)),
                             store(B, evens, load(A, ir::Broadcast::make(3, 8))),
                             store(C, first, load(A, ir::Ramp::make(15, -1, 8)))});
  auto m = compile({func("gather", {A, B, C}, body)});
  NDArray a = random_array({16}, 12), b = array({16}), c = array({8});
  ANVIL_EXPECT_RUNS(m->get_function("gather"), a, b, c);
  std::vector<float> av = read<float>(a), bv = read<float>(b), cv = read<float>(c);
  for (int k = 0; k < 8; ++k) {
    ASSERT_EQ(bv[2 * k + 1], av[2 * k]);
    ASSERT_EQ(bv[2 * k], av[3]);
    ASSERT_EQ(cv[k], av[15 - k]);
  }
}

TEST(LLVMKernels, BoolBuffersAreBytes) {
  const int n = 24;
  Buffer A = Buffer::make("A", f32, {n}), M = Buffer::make("M", DataType::Bool(), {n}),
         B = Buffer::make("B", f32, {n});
  Var i("i"), j("j");
  Expr idx = ir::Ramp::make(j * 8, 1, 8);
  Stmt body = ir::Seq::make(
      loop(i, n, store(M, i, load(A, i) > Expr(0.0f))),
      loop(j, n / 8,
           store(B, idx, ir::select(load(M, idx), load(A, idx), ir::Broadcast::make(0.0f, 8)))));
  auto m = compile({func("mask", {A, M, B}, body)});
  NDArray a = random_array({n}, 13), mask = array({n}, DataType::Bool()), b = array({n});
  ANVIL_EXPECT_RUNS(m->get_function("mask"), a, mask, b);
  std::vector<float> av = read<float>(a), bv = read<float>(b);
  std::vector<uint8_t> mv = read<uint8_t>(mask);
  for (int x = 0; x < n; ++x) {
    ASSERT_EQ(mv[x], av[x] > 0 ? 1 : 0);
    ASSERT_EQ(bv[x], av[x] > 0 ? av[x] : 0.0f);
  }
}

TEST(LLVMKernels, LetsBranchesAndUnrolledLoops) {
  const int n = 16;
  Buffer A = Buffer::make("A", f32, {n}), B = Buffer::make("B", f32, {n});
  Var i("i"), x("x", f32), y("y", f32);
  Stmt body = loop(
      i, n,
      ir::LetStmt::make(x, load(A, i) * Expr(2.0f),
                        ir::IfThenElse::make(x > Expr(3.0f), store(B, i, x),
                                             store(B, i, ir::Let::make(y, x - Expr(1.0f), y * y)))),
      ir::ForKind::kUnrolled);
  body = ir::Seq::make(ir::Evaluate::make(0), body);
  auto m = compile({func("branches", {A, B}, body)});
  NDArray a = random_array({n}, 14), b = array({n});
  ANVIL_EXPECT_RUNS(m->get_function("branches"), a, b);
  std::vector<float> av = read<float>(a), bv = read<float>(b);
  for (int k = 0; k < n; ++k) {
    float v = av[k] * 2.0f;
    ASSERT_EQ(bv[k], v > 3.0f ? v : (v - 1.0f) * (v - 1.0f)) << k;
  }
}

TEST(LLVMKernels, Float16ArithmeticAndMath) {
  const int n = 64;
  DataType f16 = DataType::Float(16);
  Buffer A = Buffer::make("A", f32, {n}), B = Buffer::make("B", f32, {n});
  Var i("i");
  Expr h = ir::cast(f16, load(A, i));
  Expr v = ir::Call::make(ir::Intrinsic::kExp, {h * ir::make_const(f16, 0.25)}) + h;
  auto m = compile({func("half", {A, B}, loop(i, n, store(B, i, ir::cast(f32, v))))});
  NDArray a = random_array({n}, 15), b = array({n});
  ANVIL_EXPECT_RUNS(m->get_function("half"), a, b);
  std::vector<float> av = read<float>(a), bv = read<float>(b);
  for (int k = 0; k < n; ++k) {
    double ref = std::exp(av[k] * 0.25) + av[k];
    ASSERT_NEAR(bv[k], ref, 4e-3 * (std::abs(ref) + 1)) << av[k];
  }
}

TEST(LLVMKernels, SeveralKernelsInOneModule) {
  Buffer A = Buffer::make("A", f32, {8}), B = Buffer::make("B", f32, {8});
  Var i("i"), j("j");
  auto m = compile({func("twice", {A, B}, loop(i, 8, store(B, i, load(A, i) * Expr(2.0f)))),
                    func("thrice", {A, B}, loop(j, 8, store(B, j, load(A, j) * Expr(3.0f))))});
  NDArray a = random_array({8}, 16), b = array({8});
  ANVIL_EXPECT_RUNS(m->get_function("thrice"), a, b);
  EXPECT_EQ(read<float>(b)[5], read<float>(a)[5] * 3.0f);
  ANVIL_EXPECT_RUNS(m->get_function("twice"), a, b);
  EXPECT_EQ(read<float>(b)[5], read<float>(a)[5] * 2.0f);
  EXPECT_THAT(anvil::testing::user_error([&] { m->get_function("four"); }),
              HasSubstr("no kernel named 'four' (it has: twice, thrice)"));
}

// ---------------------------------------------------------------------------------------------
// IR the CPU back end refuses, with messages that name the kernel and the node.

std::string compile_error(Stmt body, std::vector<Buffer> args, std::string name = "bad") {
  return anvil::testing::user_error(
      [&] { compile({func(name, std::move(args), std::move(body))}); });
}

TEST(LLVMKernelErrors, VectorizedLoopMustBeGone) {
  Buffer A = Buffer::make("A", f32, {8});
  Var i("i");
  std::string e = compile_error(loop(i, 8, store(A, i, Expr(1.0f)), ir::ForKind::kVectorized), {A});
  EXPECT_THAT(e, HasSubstr("kernel 'bad'"));
  EXPECT_THAT(e, HasSubstr("loop 'i' is still marked vectorized"));
}

TEST(LLVMKernelErrors, ThreadBindingAndBarrier) {
  Buffer A = Buffer::make("A", f32, {8});
  Var t("t");
  Stmt bound =
      ir::For::make(t, 0, 8, ir::ForKind::kThreadBinding, store(A, t, Expr(1.0f)), "threadIdx.x");
  EXPECT_THAT(compile_error(bound, {A}), HasSubstr("bound to GPU thread 'threadIdx.x'"));
  EXPECT_THAT(compile_error(ir::Barrier::make(ir::MemoryScope::kShared), {A}),
              HasSubstr("Barrier (shared)"));
}

TEST(LLVMKernelErrors, UnloweredReduce) {
  Buffer A = Buffer::make("A", f32, {8});
  Var k("k");
  ir::IterVar axis = ir::IterVar::make(k, ir::Range::make(0, 8), ir::IterKind::kReduce);
  Expr sum = ir::Reduce::make(ir::CommReducer::sum(f32), load(A, k), {axis});
  EXPECT_THAT(compile_error(store(A, 0, sum), {A}), HasSubstr("must be lowered to loops"));
}

TEST(LLVMKernelErrors, Bfloat16) {
  Buffer A = Buffer::make("A", DataType::BFloat16(), {8});
  Var i("i");
  Stmt body = loop(i, 8, store(A, i, load(A, i) + load(A, i)));
  EXPECT_THAT(compile_error(body, {A}), HasSubstr("bfloat16"));
}

TEST(LLVMKernelErrors, UnboundVariableAndUnflattenedAccess) {
  Buffer A = Buffer::make("A", f32, {8, 8});
  Var free_var("m");
  EXPECT_THAT(compile_error(ir::Store::make(A, Expr(1.0f), {free_var, 0}), {A}),
              HasSubstr("flatten storage"));
  EXPECT_THAT(compile_error(store(flat(A), free_var, Expr(1.0f)), {A}),
              HasSubstr("variable 'm' is used but not bound"));
  Buffer stray = Buffer::make("stray", f32, {8});
  EXPECT_THAT(compile_error(store(stray, 0, Expr(1.0f)), {A}),
              HasSubstr("store of 'stray': the buffer is neither an argument nor allocated"));
}

TEST(LLVMKernelErrors, KernelNames) {
  Buffer A = Buffer::make("A", f32, {8});
  Stmt body = store(A, 0, Expr(1.0f));
  EXPECT_THAT(compile_error(body, {A}, "not an identifier"), HasSubstr("must be a C identifier"));
  EXPECT_THAT(anvil::testing::user_error([&] {
                compile({func("k", {A}, body), func("k", {A}, body)});
              }),
              HasSubstr("already defines"));
}

}  // namespace
}  // namespace anvil
