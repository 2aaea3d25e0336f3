// Kernels through the C backend: vector element-wise code, reductions, parallel loops,
// predicated stores, symbolic shapes, allocations, and the statements around them.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "codegen/c_testing.h"

namespace anvil::testing {
namespace {

using namespace ir;

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(CKernels, ElementwiseAddAsEightLaneVectors) {
  Var n("n"), i("i");
  Buffer a = Buffer::make("A", DataType::Float32(), {n});
  Buffer b = Buffer::make("B", DataType::Float32(), {n});
  Buffer c = Buffer::make("C", DataType::Float32(), {n});
  Expr index = Ramp::make(i * 8, 1, 8);
  Stmt body = For::make(i, 0, floordiv(n, 8), ForKind::kSerial,
                        Store::make(c, Load::make(a, {index}) + Load::make(b, {index}), {index}));
  runtime::Module m = build({func("add", {a, b, c}, body)});
  EXPECT_TRUE(contains(source_of(m), "for (int32_t lane = 0; lane < 8; ++lane)"));

  runtime::NDArray x = array({1024}), y = array({1024}), z = array({1024});
  std::vector<float> xv = random_floats(1024, 1), yv = random_floats(1024, 2);
  write(x, xv);
  write(y, yv);
  ANVIL_EXPECT_RUNS(m.get_function("add"), tensors({x, y, z}));
  std::vector<float> zv = read<float>(z);
  for (int k = 0; k < 1024; ++k) ASSERT_EQ(zv[k], xv[k] + yv[k]) << "at " << k;
}

TEST(CKernels, MatmulReducesOverK) {
  const int M = 17, N = 11, K = 13;
  Buffer a = Buffer::make("A", DataType::Float32(), {M, K});
  Buffer b = Buffer::make("B", DataType::Float32(), {K, N});
  Buffer c = Buffer::make("C", DataType::Float32(), {M, N});
  Buffer af = Buffer::make_flat(a, M * K), bf = Buffer::make_flat(b, K * N);
  Buffer cf = Buffer::make_flat(c, M * N);
  Var i("i"), j("j"), k("k");
  Expr out = i * N + j;
  Stmt update = Store::make(
      cf, Load::make(cf, {out}) + Load::make(af, {i * K + k}) * Load::make(bf, {k * N + j}), {out});
  Stmt body = For::make(i, 0, M, ForKind::kSerial,
                        For::make(j, 0, N, ForKind::kSerial,
                                  Seq::make(Store::make(cf, Expr(0.0f), {out}),
                                            For::make(k, 0, K, ForKind::kSerial, update))));
  runtime::Module m = build({func("matmul", {a, b, c}, body)});

  runtime::NDArray x = array({M, K}), y = array({K, N}), z = array({M, N});
  std::vector<float> xv = random_floats(M * K, 3), yv = random_floats(K * N, 4);
  write(x, xv);
  write(y, yv);
  ANVIL_EXPECT_RUNS(m.get_function("matmul"), tensors({x, y, z}));
  std::vector<float> zv = read<float>(z);
  for (int r = 0; r < M; ++r) {
    for (int s = 0; s < N; ++s) {
      double ref = 0;
      for (int t = 0; t < K; ++t) ref += double(xv[r * K + t]) * yv[t * N + s];
      ASSERT_NEAR(zv[r * N + s], ref, 1e-4) << "at " << r << ", " << s;
    }
  }
}

TEST(CKernels, ParallelLoopCapturesWhatItUses) {
  // let s = 2 in parallel for i in [0, n): for j in [0, 16): B[i, j] = A[i, j] * s + i
  Var n("n"), i("i"), j("j"), s("s", DataType::Float32());
  Buffer a = Buffer::make("A", DataType::Float32(), {n, 16});
  Buffer b = Buffer::make("B", DataType::Float32(), {n, 16});
  Buffer af = Buffer::make_flat(a, n * 16), bf = Buffer::make_flat(b, n * 16);
  Expr at = i * 16 + j;
  Stmt body = LetStmt::make(
      s, 2.0f,
      For::make(i, 0, n, ForKind::kParallel,
                For::make(j, 0, 16, ForKind::kSerial,
                          Store::make(bf, Load::make(af, {at}) * s + cast(DataType::Float32(), i),
                                      {at}))));
  runtime::Module m = build({func("scale", {a, b}, body)});
  std::string src = source_of(m);
  EXPECT_TRUE(
      contains(src, "static int32_t scale_parallel(int64_t begin, int64_t end, void* closure)"))
      << src;
  EXPECT_TRUE(contains(src, "struct scale_parallel_closure scale_parallel_data = {s, A, B};"))
      << src;

  const int rows = 37;
  runtime::NDArray x = array({rows, 16}), y = array({rows, 16});
  std::vector<float> xv = random_floats(rows * 16, 5);
  write(x, xv);
  ANVIL_EXPECT_RUNS(m.get_function("scale"), tensors({x, y}));
  std::vector<float> yv = read<float>(y);
  for (int k = 0; k < rows * 16; ++k) ASSERT_EQ(yv[k], xv[k] * 2.0f + float(k / 16)) << k;
}

TEST(CKernels, ParallelLoopWithOffsetNestingAndVectorCapture) {
  // parallel for i in [3, 3 + m): let v = ramp(i*4, 1, 4) in
  //   parallel for j in [1, 2): B[ramp(i*4, 1, 4)] = float(v) + float(j)
  Var n("n"), i("i"), j("j"), v("v", DataType::Int32(4));
  Buffer b = Buffer::make("B", DataType::Float32(), {n});
  Expr index = Ramp::make(i * 4, 1, 4);
  Stmt inner = For::make(
      j, 1, 1, ForKind::kParallel,
      Store::make(b,
                  cast(DataType::Float32(4), v) + Broadcast::make(cast(DataType::Float32(), j), 4),
                  {index}));
  Stmt body =
      For::make(i, Expr(3), floordiv(n, 4) - 3, ForKind::kParallel, LetStmt::make(v, index, inner));
  runtime::Module mod = build({func("offset", {b}, body)});
  std::string src = source_of(mod);
  EXPECT_TRUE(contains(src, "(int32_t)begin + 3")) << src;
  EXPECT_TRUE(contains(src, "const int32_t* v = captured->v;")) << src;

  runtime::NDArray y = array({40});
  write(y, std::vector<float>(40, -1.0f));
  ANVIL_EXPECT_RUNS(mod.get_function("offset"), tensors({y}));
  std::vector<float> yv = read<float>(y);
  for (int k = 0; k < 40; ++k) ASSERT_EQ(yv[k], k < 12 ? -1.0f : float(k) + 1.0f) << k;
}

TEST(CKernels, PredicatedVectorStoreLeavesTheTailAlone) {
  // for i in [0, (n + 7) / 8): C[ramp] = A[ramp] * 2 where ramp < n (load and store masked)
  Var n("n"), i("i");
  Buffer a = Buffer::make("A", DataType::Float32(), {n});
  Buffer c = Buffer::make("C", DataType::Float32(), {n});
  Expr index = Ramp::make(i * 8, 1, 8);
  Expr mask = index < Broadcast::make(n, 8);
  Stmt body = For::make(
      i, 0, floordiv(n + 7, 8), ForKind::kSerial,
      Store::make(c, Load::make(a, {index}, mask) * Broadcast::make(Expr(2.0f), 8), {index}, mask));
  runtime::Module m = build({func("twice", {a, c}, body)});

  // 13 elements in tensors backed by 64: everything past 13 must stay as it was.
  runtime::NDArray x = array({64}), y = array({64});
  std::vector<float> xv = random_floats(64, 6);
  write(x, xv);
  write(y, std::vector<float>(64, 7.0f));
  int64_t shape[1] = {13};
  DLTensor xt = *x.get(), yt = *y.get();
  xt.shape = yt.shape = shape;
  ANVIL_EXPECT_RUNS(m.get_function("twice"), {&xt, &yt});
  std::vector<float> yv = read<float>(y);
  for (int k = 0; k < 64; ++k) ASSERT_EQ(yv[k], k < 13 ? xv[k] * 2.0f : 7.0f) << k;
}

TEST(CKernels, VectorStoreReadingItsOwnBufferSeesTheOldValues) {
  // A[ramp(1, 1, 8)] = A[ramp(0, 1, 8)]: every lane reads before any lane writes.
  Buffer a = Buffer::make("A", DataType::Int32(), {16});
  Stmt shift = Store::make(a, Load::make(a, {Ramp::make(0, 1, 8)}), {Ramp::make(1, 1, 8)});
  // B[ramp(0, 1, 8)] += 1: reads what each lane writes, so no copy is needed.
  Buffer b = Buffer::make("B", DataType::Int32(), {8});
  Expr r = Ramp::make(0, 1, 8);
  Stmt bump = Store::make(b, Load::make(b, {r}) + Broadcast::make(1, 8), {r});
  runtime::Module m = build({func("shift", {a}, shift), func("bump", {b}, bump)});
  std::string src = source_of(m);
  EXPECT_TRUE(contains(src, "int32_t A_value[8];")) << src;
  EXPECT_FALSE(contains(src, "B_value")) << src;

  runtime::NDArray x = array({16}, DataType::Int32()), y = array({8}, DataType::Int32());
  std::vector<int32_t> xv(16);
  for (int k = 0; k < 16; ++k) xv[k] = k * 10;
  write(x, xv);
  ANVIL_EXPECT_RUNS(m.get_function("shift"), tensors({x}));
  std::vector<int32_t> got = read<int32_t>(x);
  for (int k = 0; k < 16; ++k) EXPECT_EQ(got[k], k >= 1 && k <= 8 ? (k - 1) * 10 : k * 10) << k;
  ANVIL_EXPECT_RUNS(m.get_function("bump"), tensors({y}));
  EXPECT_EQ(read<int32_t>(y), std::vector<int32_t>(8, 1));
}

TEST(CKernels, BuffersOfVectorElements) {
  // A and C hold float32x4 elements: C[ramp(2i, 1, 2)] = A[ramp(2i, 1, 2)] * lane-index, and
  // D[i] = A[i] + 1 with a scalar index.
  Buffer a = Buffer::make("A", DataType::Float32(4), {4});
  Buffer c = Buffer::make("C", DataType::Float32(4), {4});
  Buffer d = Buffer::make("D", DataType::Float32(4), {4});
  Var i("i");
  Expr r = Ramp::make(i * 2, 1, 2);
  Expr weights = cast(DataType::Float32(8), Ramp::make(0, 1, 8));
  Stmt body = Seq::make(
      For::make(i, 0, 2, ForKind::kSerial, Store::make(c, Load::make(a, {r}) * weights, {r})),
      For::make(i, 0, 4, ForKind::kSerial,
                Store::make(d, Load::make(a, {i}) + Broadcast::make(Expr(1.0f), 4), {i})));
  runtime::Module m = build({func("vec", {a, c, d}, body)});
  runtime::NDArray x = array({4}, DataType::Float32(4)), y = array({4}, DataType::Float32(4));
  runtime::NDArray z = array({4}, DataType::Float32(4));
  std::vector<float> xv = random_floats(16, 7);
  write(x, xv);
  ANVIL_EXPECT_RUNS(m.get_function("vec"), tensors({x, y, z}));
  std::vector<float> yv = read<float>(y), zv = read<float>(z);
  for (int k = 0; k < 16; ++k) {
    EXPECT_EQ(yv[k], xv[k] * float(k % 8)) << k;
    EXPECT_EQ(zv[k], xv[k] + 1.0f) << k;
  }
}

TEST(CKernels, SymbolicShapesBindOnceAndDerivedOnesAreChecked) {
  // B[m, n] = transpose(A[n, m]); C[2n] = concat(A[:, 0], A[:, 0])
  Var n("n"), m("m"), i("i"), j("j");
  Buffer a = Buffer::make("A", DataType::Float32(), {n, m});
  Buffer b = Buffer::make("B", DataType::Float32(), {m, n});
  Buffer c = Buffer::make("C", DataType::Float32(), {n * 2});
  Buffer af = Buffer::make_flat(a, n * m), bf = Buffer::make_flat(b, m * n);
  Stmt body =
      Seq::make(For::make(i, 0, n, ForKind::kSerial,
                          For::make(j, 0, m, ForKind::kSerial,
                                    Store::make(bf, Load::make(af, {i * m + j}), {j * n + i}))),
                For::make(i, 0, n * 2, ForKind::kSerial,
                          Store::make(c, Load::make(af, {floormod(i, n) * m}), {i})));
  runtime::Module mod = build({func("shapes", {a, b, c}, body)});
  std::string src = source_of(mod);
  EXPECT_TRUE(contains(src, "const int32_t n = (int32_t)args[0]->shape[0];")) << src;
  EXPECT_TRUE(contains(src, "const int32_t m = (int32_t)args[0]->shape[1];")) << src;

  runtime::NDArray x = array({3, 5}), y = array({5, 3}), z = array({6});
  std::vector<float> xv = random_floats(15, 8);
  write(x, xv);
  AnvilKernel k = mod.get_function("shapes");
  ANVIL_EXPECT_RUNS(k, tensors({x, y, z}));
  std::vector<float> yv = read<float>(y), zv = read<float>(z);
  for (int r = 0; r < 3; ++r)
    for (int s = 0; s < 5; ++s) EXPECT_EQ(yv[s * 3 + r], xv[r * 5 + s]);
  for (int r = 0; r < 6; ++r) EXPECT_EQ(zv[r], xv[(r % 3) * 5]);

  runtime::NDArray wrong_b = array({5, 4}), wrong_c = array({7});
  EXPECT_EQ(call(k, tensors({x, wrong_b, z})), -1);
  EXPECT_STREQ(AnvilGetLastError(), "shapes: argument 1 ('B'): expected shape[1] = n = 3, got 4");
  EXPECT_EQ(call(k, tensors({x, y, wrong_c})), -1);
  EXPECT_STREQ(AnvilGetLastError(), "shapes: argument 2 ('C'): expected shape[0] = n*2 = 6, got 7");
}

TEST(CKernels, DimensionTooLargeForItsVariableIsRejected) {
  Var n("n"), i("i");
  Buffer a = Buffer::make("A", DataType::Float32(), {n});
  Stmt body = For::make(i, 0, n, ForKind::kSerial, Store::make(a, Expr(0.0f), {i}));
  runtime::Module m = build({func("huge", {a}, body)});
  runtime::NDArray x = array({1});
  DLTensor t = *x.get();
  int64_t shape[1] = {int64_t{1} << 32};
  t.shape = shape;
  EXPECT_EQ(call(m.get_function("huge"), {&t}), -1);
  EXPECT_STREQ(AnvilGetLastError(),
               "huge: argument 0 ('A'): expected shape[0] = n (int32) = 0, got 4294967296");
}

TEST(CKernels, SmallAllocationsLiveOnTheStackOthersInTheWorkspace) {
  // for i in [0, n/16): T[16] (stack) reverses a row of A; W[n] (workspace) and U[2048]
  // (workspace: 8 KiB) stage B = reverse(A) * 2.
  Var n("n"), i("i"), j("j");
  Buffer a = Buffer::make("A", DataType::Float32(), {n});
  Buffer b = Buffer::make("B", DataType::Float32(), {n});
  Buffer t = Buffer::make("T", DataType::Float32(), {16});
  Buffer w = Buffer::make("W", DataType::Float32(), {n});
  Buffer u = Buffer::make("U", DataType::Float32(), {2048});
  Stmt rows = For::make(
      i, 0, floordiv(n, 16), ForKind::kSerial,
      Allocate::make(t, Seq::make(For::make(j, 0, 16, ForKind::kSerial,
                                            Store::make(t, Load::make(a, {i * 16 + j}), {15 - j})),
                                  For::make(j, 0, 16, ForKind::kSerial,
                                            Store::make(w, Load::make(t, {j}), {i * 16 + j})))));
  Stmt body = Allocate::make(
      w,
      Allocate::make(
          u, Seq::make(
                 rows,
                 For::make(i, 0, n, ForKind::kSerial,
                           Seq::make(Store::make(u, Load::make(w, {i}) * 2.0f, {floormod(i, 2048)}),
                                     Store::make(b, Load::make(u, {floormod(i, 2048)}), {i}))))));
  runtime::Module m = build({func("stage", {a, b}, body)});
  std::string src = source_of(m);
  EXPECT_TRUE(contains(src, "float T[16] __attribute__((aligned(64)));")) << src;
  EXPECT_TRUE(contains(src, "float* restrict W = (float*)AnvilWorkspaceAlloc((uint64_t)n * 4u);"))
      << src;
  EXPECT_TRUE(contains(src, "float* restrict U = (float*)AnvilWorkspaceAlloc(8192u);")) << src;
  EXPECT_TRUE(contains(src, "AnvilWorkspaceFree(W);")) << src;

  runtime::NDArray x = array({64}), y = array({64});
  std::vector<float> xv = random_floats(64, 9);
  write(x, xv);
  ANVIL_EXPECT_RUNS(m.get_function("stage"), tensors({x, y}));
  std::vector<float> yv = read<float>(y);
  for (int k = 0; k < 64; ++k) ASSERT_EQ(yv[k], xv[(k / 16) * 16 + 15 - k % 16] * 2.0f) << k;
}

TEST(CKernels, FailedAssertionFreesWorkspaceAndReportsItsMessage) {
  // W[n] from the workspace, then assert n % 8 == 0 inside a parallel loop and outside it.
  Var n("n"), i("i");
  Buffer a = Buffer::make("A", DataType::Float32(), {n});
  Buffer w = Buffer::make("W", DataType::Float32(), {n});
  Stmt inner = AssertStmt::make(floormod(n, 8) == 0, "n must be a multiple of 8",
                                Store::make(w, Expr(1.0f), {i}));
  Stmt body = Allocate::make(
      w, Seq::make(For::make(i, 0, n, ForKind::kParallel, inner),
                   AssertStmt::make(n < 100, "n must be below 100",
                                    For::make(i, 0, n, ForKind::kSerial,
                                              Store::make(a, Load::make(w, {i}), {i})))));
  runtime::Module m = build({func("check", {a}, body)});
  AnvilKernel k = m.get_function("check");
  runtime::NDArray ok = array({16}), odd = array({12}), big = array({104});
  ANVIL_EXPECT_RUNS(k, tensors({ok}));
  EXPECT_EQ(read<float>(ok), std::vector<float>(16, 1.0f));
  EXPECT_EQ(call(k, tensors({odd})), -1);
  EXPECT_STREQ(AnvilGetLastError(), "check: n must be a multiple of 8");
  EXPECT_EQ(call(k, tensors({big})), -1);
  EXPECT_STREQ(AnvilGetLastError(), "check: n must be below 100");
  EXPECT_EQ(read<float>(big), std::vector<float>(104, 0.0f));
}

TEST(CKernels, LetsBranchesAndLoopKinds) {
  // for i in [0, 32) unrolled-by-4 tiles, if/else-if/else on i, lets in expressions and
  // statements (scalar and vector), an int64 loop, a vectorized-kind loop and attributes.
  Var i("i"), j("j"), x("x"), y("y", DataType::Float32(4)), unused("unused");
  Var k("k", DataType::Int64());
  Buffer a = Buffer::make("A", DataType::Float32(), {32});
  Buffer b = Buffer::make("B", DataType::Float32(), {32});
  Expr ai = Load::make(a, {i});
  Expr let_value = Let::make(x, i * 2, cast(DataType::Float32(), x + x));  // 4i
  Stmt branches = IfThenElse::make(
      i < 8, Store::make(b, ai + let_value, {i}),
      IfThenElse::make(i < 16, Store::make(b, ai * 2.0f, {i}),
                       IfThenElse::make(i < 24, Store::make(b, Expr(-1.0f), {i}),
                                        LetStmt::make(unused, i, Store::make(b, ai, {i})))));
  Expr r = Ramp::make(j * 4, 1, 4);
  Stmt vector_part = For::make(
      j, 0, 8, ForKind::kUnrolled,
      LetStmt::make(y, Load::make(b, {r}),
                    Store::make(b, Select::make(Broadcast::make(j < 2, 4), y * y, y), {r})));
  Stmt int64_loop = For::make(k, Expr(IntImm::make(DataType::Int64(), 0)),
                              Expr(IntImm::make(DataType::Int64(), 2)), ForKind::kVectorized,
                              Store::make(b, Load::make(b, {cast(DataType::Int32(), k)}) + 0.5f,
                                          {cast(DataType::Int32(), k)}));
  Stmt body =
      Seq::make({For::make(i, 0, 32, ForKind::kSerial, branches),
                 AttrStmt::make("pragma_note", i, 1, vector_part), int64_loop, Evaluate::make(0)});
  runtime::Module m = build({func("mixed", {a, b}, body)});
  std::string src = source_of(m);
  EXPECT_TRUE(contains(src, "} else if (i < 16) {")) << src;
  EXPECT_TRUE(contains(src, "#pragma GCC unroll 8")) << src;
  EXPECT_TRUE(contains(src, "/* pragma_note on i = 1 */")) << src;
  EXPECT_FALSE(contains(src, "unused")) << src;

  runtime::NDArray av = array({32}), bv = array({32});
  std::vector<float> in = random_floats(32, 10);
  write(av, in);
  ANVIL_EXPECT_RUNS(m.get_function("mixed"), tensors({av, bv}));
  std::vector<float> out = read<float>(bv);
  for (int q = 0; q < 32; ++q) {
    float e = q < 8 ? in[q] + 4.0f * q : q < 16 ? in[q] * 2.0f : q < 24 ? -1.0f : in[q];
    if (q < 8) e = e * e;
    if (q < 2) e += 0.5f;
    EXPECT_EQ(out[q], e) << q;
  }
}

TEST(CKernels, NamesAndMessagesAreMadeSafe) {
  // Arguments, variables and a message that C would choke on if printed as they are.
  Var n("n"), lane("lane"), same("i"), other("i"), e("exp"), dotted("i.j");
  Buffer in = Buffer::make("in put", DataType::Float32(), {n});
  Buffer out = Buffer::make("float", DataType::Float32(), {n});
  const std::string message = "say \"hi\" ?\?= \\ */ \n caf\xc3\xa9";
  Stmt body = For::make(
      lane, 0, n, ForKind::kSerial,
      LetStmt::make(e, lane * 2,
                    AttrStmt::make(
                        "note */ /* x", Expr(), 0,
                        AssertStmt::make(
                            lane < 3, message,
                            Store::make(out,
                                        Load::make(in, {lane}) +
                                            cast(DataType::Float32(), Let::make(dotted, e, dotted)),
                                        {lane})))));
  Stmt loops =
      Seq::make(body, For::make(same, 0, 1, ForKind::kSerial,
                                For::make(other, 0, 1, ForKind::kSerial, Evaluate::make(0))));
  runtime::Module m = build({func("odd", {in, out}, loops)});
  std::string src = source_of(m);
  EXPECT_TRUE(contains(src, "for (int32_t lane_ = 0; lane_ < n; ++lane_)")) << src;
  EXPECT_TRUE(contains(src, "const int32_t exp_ = lane_ * 2;")) << src;
  EXPECT_TRUE(contains(src, "float* restrict float_ =")) << src;
  EXPECT_TRUE(contains(src, "const float* restrict in_put =")) << src;
  EXPECT_TRUE(contains(src, "for (int32_t i_1 = 0; i_1 < 1; ++i_1)")) << src;

  runtime::NDArray x = array({3}), y = array({3}), z = array({5}), w = array({5});
  write(x, std::vector<float>{1, 2, 3});
  AnvilKernel k = m.get_function("odd");
  ANVIL_EXPECT_RUNS(k, tensors({x, y}));
  EXPECT_EQ(read<float>(y), (std::vector<float>{1, 4, 7}));
  EXPECT_EQ(call(k, tensors({z, w})), -1);  // n = 5 fails the assertion at lane = 3
  EXPECT_EQ(AnvilGetLastError(), "odd: " + message);
}

TEST(CKernels, GeneratedCodeCompilesWithoutWarnings) {
  // The kernels above, built with -Wall -Wextra -Werror on top of the usual flags.
  Var n("n"), i("i"), x("x");
  Buffer a = Buffer::make("A", DataType::Float32(), {n});
  Buffer b = Buffer::make("B", DataType::UInt(8), {n});
  Buffer c = Buffer::make("C", DataType::Bool(), {n});
  Expr index = Ramp::make(i * 4, 1, 4);
  Expr mask = index < Broadcast::make(n, 4);
  Stmt body = Seq::make(
      For::make(i, 0, floordiv(n + 3, 4), ForKind::kParallel,
                Store::make(a,
                            Let::make(x, i,
                                      Load::make(a, {index}, mask) +
                                          Broadcast::make(cast(DataType::Float32(), x), 4)),
                            {index}, mask)),
      For::make(i, 0, n, ForKind::kSerial,
                Seq::make(Store::make(b, Load::make(b, {i}) * Load::make(b, {i}), {i}),
                          Store::make(c,
                                      (Load::make(a, {i}) < 1.0f) || !Load::make(c, {i}) ||
                                          (max(i, 3) == min(i, 2) && floormod(i, 3) > 0),
                                      {i}))));
  setenv("CC", "cc -Wall -Wextra -Werror", 1);
  std::string error;
  try {
    build({func("strict", {a, b, c}, body)});
  } catch (const anvil::Error& e) {
    error = e.what();
  }
  unsetenv("CC");
  EXPECT_EQ(error, "");
}

}  // namespace
}  // namespace anvil::testing
