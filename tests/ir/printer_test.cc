// The IR printer: exact text for expressions (precedence, immediates, every node kind) and for
// statements (blocks, indentation, else-if chains).
#include "anvil/ir/printer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>

#include "anvil/ir/op.h"

namespace anvil::ir {
namespace {

const DataType i32 = DataType::Int32();
const DataType i64 = DataType::Int64();
const DataType f32 = DataType::Float32();
const DataType f64 = DataType::Float(64);
const DataType b1 = DataType::Bool();

class PrinterTest : public ::testing::Test {
 protected:
  Var a{"a"}, b{"b"}, c{"c"}, d{"d"}, i{"i"}, j{"j"}, n{"n"};
  Var x{"x", f32}, y{"y", f32};
  Var p{"p", b1}, q{"q", b1}, r{"r", b1};
  Buffer A = Buffer::make("A", f32, {64});
  Buffer M = Buffer::make("M", f32, {16, 16});
  Stmt nop = Evaluate::make(0);
};

// ---------------------------------------------------------------------------------------------
// Immediates

TEST_F(PrinterTest, IntegerImmediatesCarryTheirTypeUnlessInt32) {
  EXPECT_EQ(to_string(Expr(42)), "42");
  EXPECT_EQ(to_string(Expr(-7)), "-7");
  EXPECT_EQ(to_string(Expr(0)), "0");
  EXPECT_EQ(to_string(IntImm::make(i64, 5)), "5i64");
  EXPECT_EQ(to_string(IntImm::make(i64, -5)), "-5i64");
  EXPECT_EQ(to_string(IntImm::make(i64, std::numeric_limits<int64_t>::min())),
            "-9223372036854775808i64");
  EXPECT_EQ(to_string(IntImm::make(DataType::Int(8), -128)), "-128i8");
  EXPECT_EQ(to_string(IntImm::make(DataType::Int(16), 300)), "300i16");
  EXPECT_EQ(to_string(IntImm::make(DataType::UInt(8), 255)), "255u8");
  EXPECT_EQ(to_string(IntImm::make(DataType::UInt(32), 7)), "7u32");
  EXPECT_EQ(to_string(IntImm::make(DataType::UInt(64), 1)), "1u64");
}

TEST_F(PrinterTest, BoolImmediates) {
  EXPECT_EQ(to_string(make_bool(true)), "true");
  EXPECT_EQ(to_string(make_bool(false)), "false");
}

TEST_F(PrinterTest, Float32ImmediatesEndInF) {
  EXPECT_EQ(to_string(Expr(1.5f)), "1.5f");
  EXPECT_EQ(to_string(Expr(2.0f)), "2.0f");
  EXPECT_EQ(to_string(Expr(0.0f)), "0.0f");
  EXPECT_EQ(to_string(Expr(-0.25f)), "-0.25f");
  EXPECT_EQ(to_string(Expr(100.0f)), "100.0f");
  // The shortest text that reads back as the same float, not its double expansion.
  EXPECT_EQ(to_string(Expr(0.1f)), "0.1f");
  EXPECT_EQ(to_string(Expr(1e10f)), "1e+10f");
  EXPECT_EQ(to_string(Expr(1e-7f)), "1e-07f");
  EXPECT_EQ(to_string(FloatImm::make(f32, 0.1)), "0.1f");
}

TEST_F(PrinterTest, Float64ImmediatesHaveNoSuffix) {
  EXPECT_EQ(to_string(FloatImm::make(f64, 2.0)), "2.0");
  EXPECT_EQ(to_string(FloatImm::make(f64, 0.1)), "0.1");
  EXPECT_EQ(to_string(FloatImm::make(f64, -3.75)), "-3.75");
  EXPECT_EQ(to_string(FloatImm::make(f64, 1e300)), "1e+300");
  // Every digit a double needs: distinct values print distinctly.
  EXPECT_EQ(to_string(FloatImm::make(f64, 1.0 / 3.0)), "0.3333333333333333");
  EXPECT_NE(to_string(FloatImm::make(f64, 0.1)), to_string(FloatImm::make(f64, 0.1 + 1e-12)));
  EXPECT_EQ(to_string(FloatImm::make(f64, 0.1f)), "0.10000000149011612");
}

TEST_F(PrinterTest, OtherFloatWidthsNameTheirType) {
  EXPECT_EQ(to_string(FloatImm::make(DataType::Float(16), 1.5)), "float16(1.5)");
  EXPECT_EQ(to_string(FloatImm::make(DataType::BFloat16(), 2.0)), "bfloat16(2.0)");
}

TEST_F(PrinterTest, NonFiniteFloatsNameTheirType) {
  EXPECT_EQ(to_string(FloatImm::make(f32, INFINITY)), "float32(inf)");
  EXPECT_EQ(to_string(FloatImm::make(f32, -INFINITY)), "float32(-inf)");
  EXPECT_EQ(to_string(FloatImm::make(f64, INFINITY)), "float64(inf)");
  EXPECT_EQ(to_string(FloatImm::make(f32, NAN)), "float32(nan)");
  EXPECT_EQ(to_string(FloatImm::make(DataType::Float(16), -INFINITY)), "float16(-inf)");
}

// ---------------------------------------------------------------------------------------------
// Precedence

TEST_F(PrinterTest, ProductsBindTighterThanSums) {
  EXPECT_EQ(to_string((a + b) * c), "(a + b)*c");
  EXPECT_EQ(to_string(c * (a + b)), "c*(a + b)");
  EXPECT_EQ(to_string(a + b * c), "a + b*c");
  EXPECT_EQ(to_string(a * b + c), "a*b + c");
  EXPECT_EQ(to_string(a * b + c * d), "a*b + c*d");
  EXPECT_EQ(to_string((a + b) * (c - d)), "(a + b)*(c - d)");
  EXPECT_EQ(to_string(i * 4 + 1), "i*4 + 1");
}

TEST_F(PrinterTest, LeftAssociativeOperatorsKeepRightParentheses) {
  EXPECT_EQ(to_string(a - (b - c)), "a - (b - c)");
  EXPECT_EQ(to_string((a - b) - c), "a - b - c");
  EXPECT_EQ(to_string(a + (b + c)), "a + (b + c)");
  EXPECT_EQ(to_string((a + b) + c), "a + b + c");
  EXPECT_EQ(to_string(a - (b + c)), "a - (b + c)");
  EXPECT_EQ(to_string(a * (b * c)), "a*(b*c)");
  EXPECT_EQ(to_string(x / (y / x)), "x/(y/x)");
  EXPECT_EQ(to_string(x / y / x), "x/y/x");
  EXPECT_EQ(to_string(x * y / x), "x*y/x");
  EXPECT_EQ(to_string(x / (y * x)), "x/(y*x)");
}

TEST_F(PrinterTest, ComparisonsAndLogic) {
  EXPECT_EQ(to_string(a + 1 < b * 2), "a + 1 < b*2");
  EXPECT_EQ(to_string(a == b), "a == b");
  EXPECT_EQ(to_string(a != b), "a != b");
  EXPECT_EQ(to_string(a <= b), "a <= b");
  EXPECT_EQ(to_string(a > b), "a > b");
  EXPECT_EQ(to_string(a >= b), "a >= b");
  EXPECT_EQ(to_string(a < b && c < d), "a < b && c < d");
  EXPECT_EQ(to_string((p && q) || r), "p && q || r");
  EXPECT_EQ(to_string(p && (q || r)), "p && (q || r)");
  EXPECT_EQ(to_string((p || q) && r), "(p || q) && r");
  EXPECT_EQ(to_string(p || (q || r)), "p || (q || r)");
  EXPECT_EQ(to_string((a < b) == (c < d)), "a < b == (c < d)");
}

TEST_F(PrinterTest, NotBindsTightest) {
  EXPECT_EQ(to_string(!p), "!p");
  EXPECT_EQ(to_string(!(a < b)), "!(a < b)");
  EXPECT_EQ(to_string(!(p && q)), "!(p && q)");
  EXPECT_EQ(to_string(!p && q), "!p && q");
  EXPECT_EQ(to_string(!!p), "!!p");
}

TEST_F(PrinterTest, NegativeConstantsAndNegation) {
  EXPECT_EQ(to_string(a - -3), "a - -3");
  EXPECT_EQ(to_string(-a), "0 - a");
  EXPECT_EQ(to_string(-(a + b)), "0 - (a + b)");
  EXPECT_EQ(to_string(-Expr(2.5f) * x), "-2.5f*x");
}

TEST_F(PrinterTest, CallLikeNodesResetPrecedence) {
  EXPECT_EQ(to_string(floordiv(a + b, 4)), "floordiv(a + b, 4)");
  EXPECT_EQ(to_string(floormod(a, b * 2)), "floormod(a, b*2)");
  EXPECT_EQ(to_string(truncdiv(a, b)), "truncdiv(a, b)");
  EXPECT_EQ(to_string(truncmod(a, b)), "truncmod(a, b)");
  EXPECT_EQ(to_string(min(a, b) + max(c, d)), "min(a, b) + max(c, d)");
  EXPECT_EQ(to_string(floordiv(a, 4) * 4), "floordiv(a, 4)*4");
  EXPECT_EQ(to_string(select(a < b, a, b + 1)), "select(a < b, a, b + 1)");
  EXPECT_EQ(to_string(cast(f32, a + b) * x), "float32(a + b)*x");
  EXPECT_EQ(to_string(cast(i64, a)), "int64(a)");
  EXPECT_EQ(to_string(Call::make(Intrinsic::kExp, {x * y})), "exp(x*y)");
  EXPECT_EQ(to_string(Call::make(Intrinsic::kPow, {x, 2.0f})), "pow(x, 2.0f)");
  EXPECT_EQ(to_string(Call::make(Intrinsic::kFma, {x, y, x + y})), "fma(x, y, x + y)");
  EXPECT_EQ(to_string(Call::make(Intrinsic::kSigmoid, {x}) * 2.0f), "sigmoid(x)*2.0f");
}

// ---------------------------------------------------------------------------------------------
// Vectors, memory, binding, reductions

TEST_F(PrinterTest, RampAndBroadcast) {
  EXPECT_EQ(to_string(Ramp::make(i * 4, 1, 4)), "ramp(i*4, 1, 4)");
  EXPECT_EQ(to_string(Broadcast::make(x + y, 8)), "x8(x + y)");
  EXPECT_EQ(to_string(Ramp::make(0, 1, 4) + 1), "ramp(0, 1, 4) + x4(1)");
  EXPECT_EQ(to_string(make_bool(true, 4)), "x4(true)");
  EXPECT_EQ(to_string(Ramp::make(IntImm::make(i64, 0), IntImm::make(i64, 2), 2)),
            "ramp(0i64, 2i64, 2)");
}

TEST_F(PrinterTest, Loads) {
  EXPECT_EQ(to_string(Load::make(A, {i})), "A[i]");
  EXPECT_EQ(to_string(Load::make(M, {i, j * 2 + 1})), "M[i, j*2 + 1]");
  EXPECT_EQ(to_string(Load::make(A, {i}) * 2.0f + x), "A[i]*2.0f + x");
  EXPECT_EQ(to_string(Load::make(A, {Ramp::make(i, 1, 4)})), "A[ramp(i, 1, 4)]");
  EXPECT_EQ(to_string(Load::make(A, {i}, p)), "A[i] if p");
  // A compound predicate is parenthesized.
  Expr ramp = Ramp::make(i, 1, 4);
  EXPECT_EQ(to_string(Load::make(A, {ramp}, ramp < Broadcast::make(n, 4))),
            "A[ramp(i, 1, 4)] if (ramp(i, 1, 4) < x4(n))");
  EXPECT_EQ(to_string(Load::make(Buffer::make("S", i32, {}), {})), "S[]");
}

TEST_F(PrinterTest, PredicatedLoadsAreParenthesizedAsOperands) {
  Expr load = Load::make(A, {i}, p);
  EXPECT_EQ(to_string(load * 2.0f), "(A[i] if p)*2.0f");
  EXPECT_EQ(to_string(load + x), "(A[i] if p) + x");
  EXPECT_EQ(to_string(x - load), "x - (A[i] if p)");
  EXPECT_EQ(to_string(load < x), "(A[i] if p) < x");
  // Where it is delimited anyway, it is not.
  EXPECT_EQ(to_string(cast(i32, load)), "int32(A[i] if p)");
  EXPECT_EQ(to_string(min(load, x)), "min(A[i] if p, x)");
  EXPECT_EQ(to_string(Store::make(A, load, {i + 1})), "A[i + 1] = A[i] if p\n");
  EXPECT_EQ(to_string(Store::make(A, load + x, {i + 1})), "A[i + 1] = (A[i] if p) + x\n");
}

TEST_F(PrinterTest, Let) {
  EXPECT_EQ(to_string(Let::make(a, b + 1, a * a)), "(let a = b + 1 in a*a)");
  EXPECT_EQ(to_string(Let::make(a, 1, a) * 2), "(let a = 1 in a)*2");
  EXPECT_EQ(to_string(Let::make(a, 1, Let::make(b, a, a + b))),
            "(let a = 1 in (let b = a in a + b))");
}

TEST_F(PrinterTest, Reduce) {
  Var k("k");
  IterVar axis = IterVar::make(k, Range::make(0, 16), IterKind::kReduce);
  Expr sum = Reduce::make(CommReducer::sum(f32), Load::make(M, {i, k}), {axis});
  EXPECT_EQ(to_string(sum), "reduce(x, y -> x + y, init 0.0f; M[i, k]; over k in [0, 16))");

  Var u("u"), v("v");
  CommReducer prod = CommReducer::make(u, v, u * v, 1);
  Var kk("kk");
  IterVar outer = IterVar::make(kk, Range::make(2, n), IterKind::kReduce);
  Expr where = Reduce::make(prod, k + kk, {axis, outer}, k < kk);
  EXPECT_EQ(
      to_string(where),
      "reduce(u, v -> u*v, init 1; k + kk; over k in [0, 16), kk in [2, 2 + n) where k < kk)");

  Expr mx = Reduce::make(CommReducer::max(f32), x, {axis});
  EXPECT_EQ(to_string(mx), "reduce(x, y -> max(x, y), init float32(-inf); x; over k in [0, 16))");
}

TEST_F(PrinterTest, Ranges) {
  std::ostringstream os;
  os << Range::make(0, n) << " " << Range::make(a, n) << " " << Range::make(a + 1, n * 2) << " "
     << Range::make(a, b - c);
  EXPECT_EQ(os.str(), "[0, n) [a, a + n) [a + 1, a + 1 + n*2) [a, a + (b - c))");
}

TEST_F(PrinterTest, StreamOperatorMatchesToString) {
  Expr e = (a + b) * c;
  std::ostringstream os;
  os << e;
  EXPECT_EQ(os.str(), to_string(e));
}

TEST_F(PrinterTest, UndefinedHandles) {
  EXPECT_EQ(to_string(Expr()), "<undefined>");
  EXPECT_EQ(to_string(Stmt()), "<undefined>\n");
}

// ---------------------------------------------------------------------------------------------
// Statements

TEST_F(PrinterTest, StoreAndEvaluate) {
  EXPECT_EQ(to_string(Store::make(A, x + 1.0f, {i})), "A[i] = x + 1.0f\n");
  EXPECT_EQ(to_string(Store::make(M, Load::make(M, {j, i}), {i, j})), "M[i, j] = M[j, i]\n");
  EXPECT_EQ(to_string(Evaluate::make(a + 1)), "a + 1\n");
}

TEST_F(PrinterTest, StoreWithPredicate) {
  Expr ramp = Ramp::make(i * 4, 1, 4);
  Stmt s = Store::make(A, Broadcast::make(x, 4), {ramp}, ramp < Broadcast::make(n, 4));
  EXPECT_EQ(to_string(s), "A[ramp(i*4, 1, 4)] if (ramp(i*4, 1, 4) < x4(n)) = x4(x)\n");
  EXPECT_EQ(to_string(Store::make(A, x, {i}, p)), "A[i] if p = x\n");
}

TEST_F(PrinterTest, NestedLoopsOfEveryKind) {
  Stmt body = Store::make(M, 0.0f, {i, j});
  Stmt s = For::make(i, 0, 16, ForKind::kParallel, For::make(j, 0, n, ForKind::kVectorized, body));
  EXPECT_EQ(to_string(s),
            "parallel for (i, 0, 16) {\n"
            "  vectorized for (j, 0, n) {\n"
            "    M[i, j] = 0.0f\n"
            "  }\n"
            "}\n");
  Var tx("tx"), bx("bx"), k("k");
  Stmt gpu = For::make(
      bx, 0, 8, ForKind::kThreadBinding,
      For::make(tx, 0, 32, ForKind::kThreadBinding,
                For::make(k, 0, 4, ForKind::kUnrolled,
                          For::make(a, 1, n - 1, ForKind::kSerial, Evaluate::make(a + k))),
                "threadIdx.x"),
      "blockIdx.x");
  EXPECT_EQ(to_string(gpu),
            "for blockIdx.x (bx, 0, 8) {\n"
            "  for threadIdx.x (tx, 0, 32) {\n"
            "    unrolled for (k, 0, 4) {\n"
            "      for (a, 1, n - 1) {\n"
            "        a + k\n"
            "      }\n"
            "    }\n"
            "  }\n"
            "}\n");
}

TEST_F(PrinterTest, SequencesInsideBlocks) {
  Stmt s = For::make(i, 0, 4, ForKind::kSerial,
                     Seq::make({Store::make(A, 0.0f, {i}), Barrier::make(MemoryScope::kShared),
                                Store::make(A, 1.0f, {i + 1})}));
  EXPECT_EQ(to_string(Seq::make(s, Evaluate::make(0))),
            "for (i, 0, 4) {\n"
            "  A[i] = 0.0f\n"
            "  barrier(shared)\n"
            "  A[i + 1] = 1.0f\n"
            "}\n"
            "0\n");
}

TEST_F(PrinterTest, IfWithoutElse) {
  EXPECT_EQ(to_string(IfThenElse::make(a < b, Evaluate::make(a))),
            "if (a < b) {\n"
            "  a\n"
            "}\n");
}

TEST_F(PrinterTest, IfElse) {
  EXPECT_EQ(to_string(IfThenElse::make(p, Evaluate::make(1), Evaluate::make(2))),
            "if (p) {\n"
            "  1\n"
            "} else {\n"
            "  2\n"
            "}\n");
}

TEST_F(PrinterTest, ElseIfChainsPrintFlat) {
  Stmt chain = IfThenElse::make(
      a < 0, Evaluate::make(1),
      IfThenElse::make(a == 0, Evaluate::make(2),
                       IfThenElse::make(a < 10, Evaluate::make(3), Evaluate::make(4))));
  EXPECT_EQ(to_string(chain),
            "if (a < 0) {\n"
            "  1\n"
            "} else if (a == 0) {\n"
            "  2\n"
            "} else if (a < 10) {\n"
            "  3\n"
            "} else {\n"
            "  4\n"
            "}\n");
  Stmt no_else = IfThenElse::make(p, Evaluate::make(1), IfThenElse::make(q, Evaluate::make(2)));
  EXPECT_EQ(to_string(no_else),
            "if (p) {\n"
            "  1\n"
            "} else if (q) {\n"
            "  2\n"
            "}\n");
}

TEST_F(PrinterTest, IfInsideALoopIsIndented) {
  Stmt s = For::make(i, 0, 8, ForKind::kSerial,
                     IfThenElse::make(i < n, Store::make(A, x, {i}), Store::make(A, y, {i})));
  EXPECT_EQ(to_string(s),
            "for (i, 0, 8) {\n"
            "  if (i < n) {\n"
            "    A[i] = x\n"
            "  } else {\n"
            "    A[i] = y\n"
            "  }\n"
            "}\n");
}

TEST_F(PrinterTest, Allocate) {
  Buffer t = Buffer::make("T", f32, {16, n + 1});
  EXPECT_EQ(to_string(Allocate::make(t, Store::make(t, 0.0f, {0, 0}))),
            "allocate T[float32 * 16 * (n + 1)]\n"
            "T[0, 0] = 0.0f\n");
  Buffer s = Buffer::make("S", DataType::Float(16), {32}, {}, MemoryScope::kShared);
  EXPECT_EQ(to_string(Allocate::make(s, nop)),
            "allocate S[float16 * 32] in shared\n"
            "0\n");
  Buffer l = Buffer::make("L", i32, {n * 4}, {}, MemoryScope::kLocal);
  EXPECT_EQ(to_string(Allocate::make(l, nop)),
            "allocate L[int32 * (n*4)] in local\n"
            "0\n");
}

TEST_F(PrinterTest, LetStmt) {
  EXPECT_EQ(to_string(LetStmt::make(a, b * 2, Store::make(A, cast(f32, a), {a}))),
            "let a = b*2\n"
            "A[a] = float32(a)\n");
}

TEST_F(PrinterTest, AttrStmt) {
  EXPECT_EQ(to_string(AttrStmt::make("pragma_unroll", Expr(), 4, nop)),
            "attr pragma_unroll = 4\n"
            "0\n");
  EXPECT_EQ(to_string(AttrStmt::make("thread_extent", i, 32, nop)),
            "attr thread_extent [i] = 32\n"
            "0\n");
}

TEST_F(PrinterTest, AssertStmtQuotesItsMessage) {
  EXPECT_EQ(to_string(AssertStmt::make(n > 0, "n must be \"positive\"", nop)),
            "assert(n > 0, \"n must be \\\"positive\\\"\")\n"
            "0\n");
}

TEST_F(PrinterTest, Barriers) {
  EXPECT_EQ(to_string(Barrier::make(MemoryScope::kShared)), "barrier(shared)\n");
  EXPECT_EQ(to_string(Barrier::make(MemoryScope::kGlobal)), "barrier(global)\n");
  EXPECT_EQ(to_string(Barrier::make(MemoryScope::kLocal)), "barrier(local)\n");
}

TEST_F(PrinterTest, AWholeKernel) {
  Var tx("tx");
  Buffer s = Buffer::make("S", f32, {32}, {}, MemoryScope::kShared);
  Stmt kernel = For::make(
      tx, 0, 32, ForKind::kThreadBinding,
      Allocate::make(
          s,
          Seq::make(
              {Store::make(s, Load::make(A, {tx}), {tx}), Barrier::make(MemoryScope::kShared),
               LetStmt::make(a, 31 - tx,
                             IfThenElse::make(a >= 0, Store::make(A, Load::make(s, {a}), {tx})))})),
      "threadIdx.x");
  EXPECT_EQ(to_string(kernel),
            "for threadIdx.x (tx, 0, 32) {\n"
            "  allocate S[float32 * 32] in shared\n"
            "  S[tx] = A[tx]\n"
            "  barrier(shared)\n"
            "  let a = 31 - tx\n"
            "  if (a >= 0) {\n"
            "    A[tx] = S[a]\n"
            "  }\n"
            "}\n");
}

}  // namespace
}  // namespace anvil::ir
