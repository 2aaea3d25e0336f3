// Stage::tensorize with the int8 dot-product intrinsic: an int8 matrix product whose inner loops
// become dot_u8s8 calls, run through LLVM and C against naive loops over the full uint8 and
// int8 ranges; vpdpbusd in the assembly for CPUs with VNNI and not for AVX2-only ones; and the
// refusals, each naming what does not match.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "anvil/codegen/c/codegen_c.h"
#include "anvil/codegen/llvm/codegen_llvm.h"
#include "anvil/ir/op.h"
#include "anvil/ir/printer.h"
#include "anvil/lower/lower.h"
#include "anvil/te/schedule.h"
#include "te_testing.h"
#include "testing/errors.h"

namespace anvil::te {
namespace {

using namespace ir;

// C[m, n] = sum_k A[m, k] * W[n / L, k / 4, n % L, k % 4] (uint8 times int8 into int32): the
// weight packed the way dot_u8s8 reads it, L output columns of 4 bytes each.
struct Int8MatMul {
  int M, N, K, L;
  Tensor A, W, C;
  IterVar k;
  ValueRange a_values, w_values;
  Int8MatMul(int m, int n, int kk, int lanes, ValueRange a = {0, 255}, ValueRange w = {-128, 127})
      : M(m), N(n), K(kk), L(lanes), a_values(a), w_values(w) {
    A = placeholder({M, K}, DataType::UInt(8), "A", a);
    W = placeholder({(N + L - 1) / L, (K + 3) / 4, L, 4}, DataType::Int(8), "W", w);
    k = reduce_axis(K, "k");
    C = compute(
        {M, N},
        [&](Var i, Var j) {
          Expr w = W(floordiv(j, L), floordiv(k->var, 4), floormod(j, L), floormod(k->var, 4));
          return sum(cast(DataType::Int32(), A(i, k->var)) * cast(DataType::Int32(), w), {k});
        },
        "C");
  }
};

// The schedule the intrinsic wants: m, n / L, k / 4, then (n % L, k % 4) tensorized.
Schedule dot_schedule(const Int8MatMul& mm, const TensorIntrin& intrin) {
  Schedule s({mm.C});
  Stage c = s[mm.C];
  auto [no, ni] = c.split(c.axis()[1], mm.L);
  auto [ko, ki] = c.split(c.reduce_axis()[0], 4);
  c.reorder({c.axis()[0], no, ko, ni, ki});
  c.tensorize(ni, intrin);
  return s;
}

struct Arrays {
  std::vector<runtime::NDArray> arrays;
  std::vector<const DLTensor*> ptrs;
};

// Inputs drawn from their declared values, including both ends; the output is garbage.
Arrays make_arrays(const Int8MatMul& mm, uint32_t seed) {
  std::mt19937 rng(seed);
  const ValueRange values[] = {mm.a_values, mm.w_values, {0, 255}};
  Arrays a;
  const DLDataType types[] = {{kDLUInt, 8, 1}, {kDLInt, 8, 1}, {kDLInt, 32, 1}};
  const Tensor tensors[] = {mm.A, mm.W, mm.C};
  for (int t = 0; t < 3; ++t) {
    std::vector<int64_t> shape;
    for (const Expr& d : tensors[t]->shape) shape.push_back(*as_const_int(d));
    a.arrays.push_back(runtime::NDArray::empty(shape, types[t]));
    auto* bytes = static_cast<uint8_t*>(a.arrays.back().data());
    const size_t n = static_cast<size_t>(a.arrays.back().numel()) * (types[t].bits / 8);
    std::uniform_int_distribution<int64_t> draw(values[t].min, values[t].max);
    for (size_t i = 0; i < n; ++i) {
      const int64_t v = i % 7 == 0 ? values[t].min : i % 7 == 1 ? values[t].max : draw(rng);
      bytes[i] = static_cast<uint8_t>(v);
    }
    a.ptrs.push_back(a.arrays.back().get());
  }
  return a;
}

// The naive loops, in int64.
std::vector<int32_t> reference(const Int8MatMul& mm, const Arrays& a) {
  const auto* A = static_cast<const uint8_t*>(a.arrays[0].data());
  const auto* W = static_cast<const int8_t*>(a.arrays[1].data());
  const int K4 = (mm.K + 3) / 4;
  std::vector<int32_t> c(static_cast<size_t>(mm.M * mm.N));
  for (int m = 0; m < mm.M; ++m)
    for (int n = 0; n < mm.N; ++n) {
      int64_t s = 0;
      for (int k = 0; k < mm.K; ++k)
        s += int64_t{A[m * mm.K + k]} * W[((n / mm.L * K4 + k / 4) * mm.L + n % mm.L) * 4 + k % 4];
      c[static_cast<size_t>(m * mm.N + n)] = static_cast<int32_t>(s);
    }
  return c;
}

void expect_matches(const Int8MatMul& mm, AnvilKernel kernel, const char* backend) {
  Arrays a = make_arrays(mm, 7);
  ASSERT_EQ(kernel(a.ptrs.data(), 3, nullptr), 0) << AnvilGetLastError();
  std::vector<int32_t> want = reference(mm, a);
  const auto* got = static_cast<const int32_t*>(a.arrays[2].data());
  for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], want[i]) << backend << " at " << i;
}

// Lowers `s`, checks that `call` is in it, and runs it through LLVM and C.
void check_both(const Int8MatMul& mm, const Schedule& s, const std::string& call = "dot_u8s8(") {
  ir::LoweredFunc f = lower(s, {mm.A, mm.W, mm.C}, "kernel");
  EXPECT_NE(to_string(f.body).find(call), std::string::npos) << f.body;
  auto llvm = codegen::LLVMModule::compile({f}, Target::host());
  expect_matches(mm, llvm->get_function("kernel"), "llvm");
  runtime::Module c = codegen::build_c({f}, te_testing::library_path());
  expect_matches(mm, c.get_function("kernel"), "c");
}

TEST(Tensorize, DotU8S8MatMulMatchesNaiveLoops) {
  for (int lanes : {4, 8, 16}) {
    SCOPED_TRACE(lanes);
    Int8MatMul mm(3, 2 * lanes, 12, lanes);
    check_both(mm, dot_schedule(mm, dot_u8s8_intrin(lanes)));
  }
}

// The AVX2 form where the values keep every pair of products inside int16: 7-bit activations
// with any int8 weights, or any uint8 activations with weights in [-64, 64].
TEST(Tensorize, DotU8S8Sat16WhereTheValuesCannotSaturate) {
  for (int lanes : {4, 8, 16}) {
    SCOPED_TRACE(lanes);
    Int8MatMul seven_bit(3, 2 * lanes, 12, lanes, {0, 127}, {-128, 127});
    check_both(seven_bit, dot_schedule(seven_bit, dot_u8s8_sat16_intrin(lanes)), "dot_u8s8_sat16(");
    Int8MatMul small_weights(3, 2 * lanes, 12, lanes, {0, 255}, {-64, 64});
    check_both(small_weights, dot_schedule(small_weights, dot_u8s8_sat16_intrin(lanes)),
               "dot_u8s8_sat16(");
  }
}

TEST(Tensorize, RefusesTheSat16FormWhereAPairCanSaturate) {
  Int8MatMul full(2, 16, 8, 8);
  std::string msg = testing::user_error([&] {
    lower(dot_schedule(full, dot_u8s8_sat16_intrin(8)), {full.A, full.W, full.C}, "k");
  });
  testing::expect_has(msg, "tensorize of stage 'C' with dot_u8s8_sat16x8: the values of A, W");
  testing::expect_has(msg, "a in [0, 255] and b in [-128, 127] reaches [-65280, 64770]");
  Int8MatMul almost(2, 16, 8, 8, {0, 128}, {-128, 127});  // 128 * -128 * 2 = -32768 fits; 128 *
  EXPECT_NO_THROW(                                        // 127 * 2 = 32512 fits too
      lower(dot_schedule(almost, dot_u8s8_sat16_intrin(8)), {almost.A, almost.W, almost.C}, "k"));
  Int8MatMul over(2, 16, 8, 8, {0, 129}, {-128, 127});
  testing::expect_has(
      testing::user_error([&] {
        lower(dot_schedule(over, dot_u8s8_sat16_intrin(8)), {over.A, over.W, over.C}, "k");
      }),
      "reaches [-33024, 32766]");
}

// The two calls computed directly, with values that do saturate a pair: dot_u8s8 stays exact,
// dot_u8s8_sat16 saturates each pair, alike in LLVM (vpdpbusd, vpmaddubsw or generic code) and C.
TEST(Tensorize, DotCallsSaturateOnlyInTheSat16Form) {
  const int n = 8;
  Buffer A = Buffer::make("A", DataType::UInt(8), {4}),
         B = Buffer::make("B", DataType::Int(8), {4 * n});
  for (Intrinsic op : {Intrinsic::kDotU8S8, Intrinsic::kDotU8S8Sat16}) {
    SCOPED_TRACE(intrinsic_name(op));
    Buffer C = Buffer::make("C", DataType::Int32(), {n});
    Expr acc = Load::make(C, {Ramp::make(0, 1, n)});
    Expr dot = Call::make(
        op, {acc, Load::make(A, {Ramp::make(0, 1, 4)}), Load::make(B, {Ramp::make(0, 1, 4 * n)})});
    ir::LoweredFunc f{"kernel", {A, B, C}, Store::make(C, dot, {Ramp::make(0, 1, n)})};
    const uint8_t a[4] = {255, 255, 3, 200};
    int8_t b[4 * n];
    int32_t want[n];
    for (int i = 0; i < n; ++i) {
      const int8_t w[4] = {static_cast<int8_t>(i % 2 ? 127 : -128),
                           static_cast<int8_t>(i % 2 ? 127 : -128), static_cast<int8_t>(i - 4),
                           static_cast<int8_t>(-3 * i)};
      std::memcpy(b + 4 * i, w, 4);
      int64_t total = 1000 * i;
      for (int j = 0; j < 4; j += 2) {
        int64_t pair = a[j] * w[j] + a[j + 1] * w[j + 1];
        if (op == Intrinsic::kDotU8S8Sat16) pair = std::clamp<int64_t>(pair, -32768, 32767);
        total += pair;
      }
      want[i] = static_cast<int32_t>(total);
    }
    auto run = [&](AnvilKernel kernel, const char* backend) {
      std::vector<runtime::NDArray> arrays = {runtime::NDArray::empty({4}, {kDLUInt, 8, 1}),
                                              runtime::NDArray::empty({4 * n}, {kDLInt, 8, 1}),
                                              runtime::NDArray::empty({n}, {kDLInt, 32, 1})};
      std::memcpy(arrays[0].data(), a, sizeof a);
      std::memcpy(arrays[1].data(), b, sizeof b);
      auto* c = static_cast<int32_t*>(arrays[2].data());
      for (int i = 0; i < n; ++i) c[i] = 1000 * i;
      const DLTensor* ptrs[] = {arrays[0].get(), arrays[1].get(), arrays[2].get()};
      ASSERT_EQ(kernel(ptrs, 3, nullptr), 0) << AnvilGetLastError();
      for (int i = 0; i < n; ++i) EXPECT_EQ(c[i], want[i]) << backend << " lane " << i;
    };
    run(codegen::LLVMModule::compile({f}, Target::host())->get_function("kernel"), "llvm");
    run(codegen::build_c({f}, te_testing::library_path()).get_function("kernel"), "c");
  }
}

// The whole reduction inside the tensorized loops: the init nest goes inside the loops outside.
TEST(Tensorize, WholeReductionInsideTheIntrinsic) {
  Int8MatMul mm(5, 16, 4, 8);
  Schedule s({mm.C});
  Stage c = s[mm.C];
  auto [no, ni] = c.split(c.axis()[1], 8);
  c.parallel(c.axis()[0]);
  c.tensorize(ni, dot_u8s8_intrin(8));
  check_both(mm, s);
}

// vpdpbusd where the CPU has it (256-bit AVX-VNNI or AVX-512 VNNI with VL, and 512-bit), plain
// vector code on an AVX2-only CPU, whatever the host. LLVM 15 does not know znver4: Zen 4's
// AVX-512 VNNI is named by its features on a Zen 3.
TEST(Tensorize, VpdpbusdOnlyWhereTheCpuHasIt) {
  const std::string zen4 = "llvm -mcpu=znver3 -mattr=+avx512f,+avx512bw,+avx512vl,+avx512vnni";
  struct Case {
    std::string target;
    int lanes;
    bool vnni;
  };
  for (const Case& t :
       {Case{zen4, 8, true}, Case{zen4, 16, true}, Case{"llvm -mcpu=icelake-server", 16, true},
        Case{"llvm -mcpu=alderlake", 8, true}, Case{"llvm -mcpu=znver3", 8, false},
        Case{"llvm -mcpu=alderlake", 16, false}}) {
    SCOPED_TRACE(t.target + " x" + std::to_string(t.lanes));
    Int8MatMul mm(2, 2 * t.lanes, 8, t.lanes);
    ir::LoweredFunc f =
        lower(dot_schedule(mm, dot_u8s8_intrin(t.lanes)), {mm.A, mm.W, mm.C}, "kernel");
    std::string code = codegen::LLVMModule::compile({f}, Target::parse(t.target))->assembly();
    EXPECT_EQ(code.find("vpdpbusd") != std::string::npos, t.vnni);
  }
}

// The AVX2 form: vpmaddubsw and vpmaddwd on any AVX2 CPU, 512-bit with AVX-512 BW.
TEST(Tensorize, VpmaddubswOnAvx2) {
  for (auto [target, lanes] :
       {std::pair{"llvm -mcpu=znver3", 8}, std::pair{"llvm -mcpu=haswell", 8},
        std::pair{"llvm -mcpu=skylake-avx512", 16}}) {
    SCOPED_TRACE(target);
    Int8MatMul mm(2, 2 * lanes, 8, lanes, {0, 127});
    ir::LoweredFunc f =
        lower(dot_schedule(mm, dot_u8s8_sat16_intrin(lanes)), {mm.A, mm.W, mm.C}, "kernel");
    std::string code = codegen::LLVMModule::compile({f}, Target::parse(target))->assembly();
    EXPECT_NE(code.find("vpmaddubsw"), std::string::npos);
    EXPECT_NE(code.find("vpmaddwd"), std::string::npos);
  }
}

std::string refusal(const Int8MatMul& mm, const Schedule& s) {
  return testing::user_error([&] { lower(s, {mm.A, mm.W, mm.C}, "kernel"); });
}

TEST(Tensorize, RefusesLoopsThatDifferFromTheDeclaration) {
  Int8MatMul mm(2, 16, 8, 8);
  {
    Schedule s({mm.C});  // k split by 2: the reduction loop inside has extent 2, not 4
    Stage c = s[mm.C];
    auto [no, ni] = c.split(c.axis()[1], 8);
    auto [ko, ki] = c.split(c.reduce_axis()[0], 2);
    c.reorder({c.axis()[0], no, ko, ni, ki});
    c.tensorize(ni, dot_u8s8_intrin(8));
    std::string msg = refusal(mm, s);
    testing::expect_has(msg, "tensorize of stage 'C' with dot_u8s8x8");
    testing::expect_has(msg, "the intrinsic needs (i: 8, k: 4)");
  }
  {
    Schedule s({mm.C});  // the reduction loop outside the output's: the order differs
    Stage c = s[mm.C];
    auto [no, ni] = c.split(c.axis()[1], 8);
    auto [ko, ki] = c.split(c.reduce_axis()[0], 4);
    c.reorder({c.axis()[0], no, ko, ki, ni});
    c.tensorize(ki, dot_u8s8_intrin(8));
    testing::expect_has(refusal(mm, s), "(its axes, then its reduction axes)");
  }
  {
    Int8MatMul odd(2, 12, 8, 8);  // 12 columns in tiles of 8: a tail inside the intrinsic
    Schedule s = dot_schedule(odd, dot_u8s8_intrin(8));
    testing::expect_has(refusal(odd, s), "has a tail");
  }
  {
    Schedule s = dot_schedule(mm, dot_u8s8_intrin(8));
    Stage c = s[mm.C];
    c.vectorize(c.leaf_axes()[3]);
    testing::expect_has(refusal(mm, s), "is inside the tensorized loops and cannot also be");
  }
}

TEST(Tensorize, RefusesABodyThatComputesSomethingElse) {
  const int L = 8, K = 8;
  Tensor A = placeholder({2, K}, DataType::UInt(8), "A");
  Tensor W = placeholder({2, K / 4, L, 4}, DataType::Int(8), "W");
  Tensor Wt = placeholder({2 * L, K}, DataType::Int(8), "Wt");
  auto matmul = [&](const std::function<Expr(Var, Var, Var)>& term, const char* combiner) {
    IterVar k = reduce_axis(K, "k");
    Tensor C = compute(
        {2, 2 * L},
        [&](Var i, Var j) {
          Expr t = term(i, j, k->var);
          return std::string(combiner) == "max" ? te::max(t, {k}) : te::sum(t, {k});
        },
        "C");
    Schedule s({C});
    Stage c = s[C];
    auto [no, ni] = c.split(c.axis()[1], L);
    auto [ko, ki] = c.split(c.reduce_axis()[0], 4);
    c.reorder({c.axis()[0], no, ko, ni, ki});
    c.tensorize(ni, dot_u8s8_intrin(L));
    std::vector<Tensor> args = {A, C};
    for (const Tensor& in : {W, Wt})
      if (reads_buffer(C->body, in->buffer.get())) args.insert(args.begin() + 1, in);
    return testing::user_error([&] { lower(s, args, "kernel"); });
  };
  auto i32 = [](Expr e) { return cast(DataType::Int32(), std::move(e)); };
  auto packed = [&](Var j, Var k) {
    return W(floordiv(j, L), floordiv(k, 4), floormod(j, L), floormod(k, 4));
  };
  // A plus instead of a product.
  testing::expect_has(
      matmul([&](Var i, Var j, Var k) { return i32(A(i, k)) + i32(packed(j, k)); }, "sum"),
      "the stage computes");
  // The right product, reduced with max.
  testing::expect_has(
      matmul([&](Var i, Var j, Var k) { return i32(A(i, k)) * i32(packed(j, k)); }, "max"),
      "the stage combines with");
  // The activation read at a column that moves with the output column.
  testing::expect_has(
      matmul([&](Var i, Var j, Var k) { return i32(A(i, floormod(k + j, K))) * i32(packed(j, k)); },
             "sum"),
      "does not move with a's index");
  // Weights [N, K] unpacked: four bytes of a column are contiguous, but the columns are K apart.
  testing::expect_has(
      matmul([&](Var i, Var j, Var k) { return i32(A(i, k)) * i32(Wt(j, k)); }, "sum"),
      "needs its rows of 4 elements one after another");
}

// Declared values: integers only, inside the element type; otherwise the type's whole range.
TEST(Tensorize, DeclaredValueRanges) {
  Tensor seven = placeholder({4}, DataType::UInt(8), "seven", ValueRange{0, 127});
  EXPECT_EQ(value_range(seven).max, 127);
  Tensor plain = placeholder({4}, DataType::Int(8), "plain");
  EXPECT_EQ(value_range(plain).min, -128);
  EXPECT_EQ(value_range(plain).max, 127);
  testing::expect_has(testing::user_error([] {
                        placeholder({4}, DataType::UInt(8), "u", ValueRange{-1, 3});
                      }),
                      "placeholder 'u': values [-1, 3] are not a range of uint8");
  testing::expect_has(testing::user_error([] {
                        placeholder({4}, DataType::Float32(), "f", ValueRange{0, 1});
                      }),
                      "values are declared for integers up to 32 bits, not float32");
  testing::expect_has(
      testing::user_error([] { value_range(placeholder({4}, DataType::Float32(), "f")); }),
      "float32 is not an integer type");
}

}  // namespace
}  // namespace anvil::te
