// Intrinsic calls, and fast vectorizable approximations of exp, tanh, sigmoid and erf for
// float32, emitted as straight-line LLVM IR (no calls, so loops around them vectorize).
//
// The coefficients are our own: weighted minimax (Remez exchange) fits computed in long double
// for exactly the reduced arguments used below, then rounded to float. Measured maximum errors
// over every float input class are in tests/codegen/llvm_math_test.cc.
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>

#include <cmath>

#include "anvil/codegen/llvm/ir_gen.h"
#include "anvil/ir/printer.h"
#include "anvil/support/error.h"

namespace anvil::codegen::llvm_backend {

using ir::DataType;
using ir::Intrinsic;

namespace {

// exp(r) = 1 + r + r^2 q(r) on |r| <= ln2/2; q minimizes the relative error of exp (3.1e-9).
const std::vector<double> kExpQ = {4.999999404e-01, 1.666651964e-01, 4.166840762e-02,
                                   8.368914016e-03, 1.381419133e-03};
// tanh(x) = x + x^3 q(x^2) on |x| < 0.625; relative error of the fit 4.4e-9.
const std::vector<double> kTanhQ = {-3.333328068e-01, 1.333144158e-01, -5.373971537e-02,
                                    2.063908800e-02, -5.704987328e-03};
// erf(x) = x q(x^2) on |x| < 1; relative error of the fit 1.2e-9.
const std::vector<double> kErfSmallQ = {1.128379107e+00,  -3.761262596e-01, 1.128358841e-01,
                                        -2.685391717e-02, 5.188500509e-03,  -8.011561004e-04,
                                        7.858032041e-05};
// erfc(x) exp(x^2) = R(x - 2.5) on 1 <= x <= 4, weighted by exp(-x^2) so that
// erf(x) = 1 - exp(-x^2) R has absolute error 1.3e-8 from the fit.
const std::vector<double> kErfcxR = {2.108065486e-01,  -7.429970801e-02, 2.515780181e-02,
                                     -7.804340217e-03, 1.966092270e-03,  -1.962322742e-03,
                                     -8.003474213e-04, -3.888842184e-04};

// Cody-Waite split of ln 2: kLn2Hi has few significant bits, so n * kLn2Hi is exact for the
// |n| <= 150 that occur.
constexpr double kLog2e = 1.44269504088896341;
constexpr double kLn2Hi = 0.693359375;
constexpr double kLn2Lo = -2.12194440e-4;
// Adding 1.5 * 2^23 rounds a float of magnitude < 2^22 to an integer, which then sits in the
// low mantissa bits.
constexpr double kRoundMagic = 12582912.0;
constexpr int32_t kRoundMagicBits = 0x4B400000;
// exp(x) overflows above this float and rounds to zero below the other.
constexpr double kExpMax = 88.72283172607422;
constexpr double kExpMin = -103.97208;

}  // namespace

llvm::Value* IRGen::fconst(llvm::Type* t, double v) {
  return llvm::ConstantFP::get(t, v);
}

llvm::Value* IRGen::iconst(llvm::Type* t, int64_t v) {
  return llvm::ConstantInt::get(t, static_cast<uint64_t>(v), true);
}

llvm::Value* IRGen::call_intrinsic(llvm::Intrinsic::ID id, std::vector<llvm::Value*> args) {
  return b_.CreateIntrinsic(id, {args[0]->getType()}, args);
}

llvm::Value* IRGen::call_libm(const char* name, llvm::Value* x) {
  llvm::Type* scalar = x->getType()->getScalarType();
  std::string fn_name = name;
  if (scalar->isFloatTy()) fn_name += "f";
  llvm::FunctionCallee fn =
      module_.getOrInsertFunction(fn_name, llvm::FunctionType::get(scalar, {scalar}, false));
  if (auto* f = llvm::dyn_cast<llvm::Function>(fn.getCallee())) {
    f->addFnAttr(llvm::Attribute::NoUnwind);
    f->addFnAttr(llvm::Attribute::WillReturn);
    f->setDoesNotAccessMemory();
  }
  auto* vec = llvm::dyn_cast<llvm::FixedVectorType>(x->getType());
  if (!vec) return b_.CreateCall(fn, {x});
  llvm::Value* result = llvm::PoisonValue::get(vec);
  for (unsigned i = 0; i < vec->getNumElements(); ++i) {
    llvm::Value* lane = b_.CreateCall(fn, {b_.CreateExtractElement(x, i)});
    result = b_.CreateInsertElement(result, lane, i);
  }
  return result;
}

llvm::Value* IRGen::horner(llvm::Value* x, const std::vector<double>& coeffs) {
  llvm::Type* t = x->getType();
  llvm::Value* acc = fconst(t, coeffs.back());
  for (size_t k = coeffs.size() - 1; k-- > 0;) {
    acc = call_intrinsic(llvm::Intrinsic::fmuladd, {acc, x, fconst(t, coeffs[k])});
  }
  return acc;
}

// exp(x) = 2^n exp(r), n = round(x log2 e), r = x - n ln2 in two steps. 2^n enters by an integer
// add to the exponent bits; results below the normal range take a second, exact scaling, so
// denormal results are correctly rounded too. x > kExpMax gives +inf, x < kExpMin gives 0, NaN
// stays NaN. Maximum error 1 ulp.
llvm::Value* IRGen::fast_exp_f32(llvm::Value* x) {
  // The reduction depends on the order of operations: no reassociation here.
  llvm::IRBuilderBase::FastMathFlagGuard guard(b_);
  b_.clearFastMathFlags();
  llvm::Type* t = x->getType();
  llvm::Type* it = b_.getInt32Ty();
  if (auto* vec = llvm::dyn_cast<llvm::VectorType>(t)) it = llvm::VectorType::getInteger(vec);
  llvm::Value* hi = fconst(t, kExpMax);
  llvm::Value* lo = fconst(t, kExpMin);
  llvm::Value* too_big = b_.CreateFCmpOGT(x, hi);
  llvm::Value* too_small = b_.CreateFCmpOLT(x, lo);
  llvm::Value* xc = b_.CreateSelect(too_small, lo, b_.CreateSelect(too_big, hi, x));

  llvm::Value* magic = fconst(t, kRoundMagic);
  llvm::Value* shifted = call_intrinsic(llvm::Intrinsic::fmuladd, {xc, fconst(t, kLog2e), magic});
  llvm::Value* n = b_.CreateFSub(shifted, magic);
  llvm::Value* ni = b_.CreateSub(b_.CreateBitCast(shifted, it), iconst(it, kRoundMagicBits));
  llvm::Value* r = call_intrinsic(llvm::Intrinsic::fmuladd, {n, fconst(t, -kLn2Hi), xc});
  r = call_intrinsic(llvm::Intrinsic::fmuladd, {n, fconst(t, -kLn2Lo), r});

  llvm::Value* q = horner(r, kExpQ);
  llvm::Value* p = call_intrinsic(llvm::Intrinsic::fmuladd, {q, b_.CreateFMul(r, r), r});
  p = b_.CreateFAdd(p, fconst(t, 1.0));  // exp(r), in [0.7, 1.42]

  // Normal results: add n to the exponent field.
  llvm::Value* normal =
      b_.CreateBitCast(b_.CreateAdd(b_.CreateBitCast(p, it), b_.CreateShl(ni, 23)), t);
  // n < -125: scale by 2^(n + 125), exact and normal, then by 2^-125, rounding once.
  llvm::Value* partial =
      b_.CreateBitCast(b_.CreateShl(b_.CreateAdd(ni, iconst(it, 125 + 127)), 23), t);
  llvm::Value* tiny = b_.CreateFMul(b_.CreateFMul(p, partial), fconst(t, std::ldexp(1.0, -125)));
  llvm::Value* result = b_.CreateSelect(b_.CreateICmpSLT(ni, iconst(it, -125)), tiny, normal);

  result = b_.CreateSelect(too_big, fconst(t, INFINITY), result);
  result = b_.CreateSelect(too_small, fconst(t, 0.0), result);
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, result);
}

// tanh(x): an odd polynomial below 0.625, where 1 - 2/(exp(2|x|) + 1) would cancel; that form
// of |x| above, with |x| clamped to 10 (tanh(10) rounds to 1), and the sign of x copied on.
llvm::Value* IRGen::fast_tanh_f32(llvm::Value* x) {
  llvm::IRBuilderBase::FastMathFlagGuard guard(b_);
  b_.clearFastMathFlags();
  llvm::Type* t = x->getType();
  llvm::Value* a = call_intrinsic(llvm::Intrinsic::fabs, {x});
  llvm::Value* u = b_.CreateFMul(x, x);
  llvm::Value* small =
      call_intrinsic(llvm::Intrinsic::fmuladd, {horner(u, kTanhQ), b_.CreateFMul(u, x), x});
  llvm::Value* ten = fconst(t, 10.0);
  llvm::Value* ac = b_.CreateSelect(b_.CreateFCmpOGT(a, ten), ten, a);
  llvm::Value* e = fast_exp_f32(b_.CreateFAdd(ac, ac));
  llvm::Value* large = b_.CreateFSub(
      fconst(t, 1.0), b_.CreateFDiv(fconst(t, 2.0), b_.CreateFAdd(e, fconst(t, 1.0))));
  // Both branches have the sign of x; copying it also keeps tanh(-0) = -0.
  llvm::Value* result = b_.CreateSelect(b_.CreateFCmpOLT(a, fconst(t, 0.625)), small, large);
  return call_intrinsic(llvm::Intrinsic::copysign, {result, x});
}

// sigmoid(x) = 1 / (1 + exp(-x)): exp(-x) overflows to +inf exactly where the result rounds
// to 0, and the relative error of exp carries over.
llvm::Value* IRGen::fast_sigmoid_f32(llvm::Value* x) {
  llvm::IRBuilderBase::FastMathFlagGuard guard(b_);
  b_.clearFastMathFlags();
  llvm::Type* t = x->getType();
  llvm::Value* e = fast_exp_f32(b_.CreateFNeg(x));
  return b_.CreateFDiv(fconst(t, 1.0), b_.CreateFAdd(fconst(t, 1.0), e));
}

// erf(x): x q(x^2) below 1; 1 - exp(-x^2) R(|x|) from 1 to 4 (erf(4) rounds to 1), with the
// sign copied back.
llvm::Value* IRGen::fast_erf_f32(llvm::Value* x) {
  llvm::IRBuilderBase::FastMathFlagGuard guard(b_);
  b_.clearFastMathFlags();
  llvm::Type* t = x->getType();
  llvm::Value* a = call_intrinsic(llvm::Intrinsic::fabs, {x});
  llvm::Value* small = b_.CreateFMul(x, horner(b_.CreateFMul(x, x), kErfSmallQ));
  llvm::Value* four = fconst(t, 4.0);
  llvm::Value* ac = b_.CreateSelect(b_.CreateFCmpOGT(a, four), four, a);
  llvm::Value* r = horner(b_.CreateFSub(ac, fconst(t, 2.5)), kErfcxR);
  llvm::Value* e = fast_exp_f32(b_.CreateFNeg(b_.CreateFMul(ac, ac)));
  llvm::Value* large =
      call_intrinsic(llvm::Intrinsic::fmuladd, {b_.CreateFNeg(e), r, fconst(t, 1.0)});
  large = call_intrinsic(llvm::Intrinsic::copysign, {large, x});
  return b_.CreateSelect(b_.CreateFCmpOLT(a, fconst(t, 1.0)), small, large);
}

// acc + the 4-byte dot products of `a` (broadcast) with each 4 bytes of `b`, exact or (sat16)
// with each pair of products saturated to int16: vpdpbusd, or vpmaddubsw + vpmaddwd, where the
// CPU has them at this width; otherwise widened to int32 and summed, with the same results.
llvm::Value* IRGen::emit_dot_u8s8(llvm::Value* acc, llvm::Value* a, llvm::Value* b, int lanes,
                                  bool sat16) {
  llvm::Type* i32 = b_.getInt32Ty();
  const unsigned n = static_cast<unsigned>(lanes);
  auto* words = llvm::FixedVectorType::get(i32, n);
  auto* bytes = llvm::FixedVectorType::get(b_.getInt8Ty(), 4 * n);
  auto a_broadcast = [&] { return b_.CreateVectorSplat(n, b_.CreateBitCast(a, i32)); };
  const bool vnni = ((n == 4 || n == 8) && options_.vnni_256) || (n == 16 && options_.vnni_512);
  if (!sat16 && vnni) {
    llvm::Intrinsic::ID id = n == 16  ? llvm::Intrinsic::x86_avx512_vpdpbusd_512
                             : n == 8 ? llvm::Intrinsic::x86_avx512_vpdpbusd_256
                                      : llvm::Intrinsic::x86_avx512_vpdpbusd_128;
    return b_.CreateIntrinsic(id, {}, {acc, a_broadcast(), b_.CreateBitCast(b, words)});
  }
  const bool pmadd = (n == 4 && options_.pmadd_128) || (n == 8 && options_.pmadd_256) ||
                     (n == 16 && options_.pmadd_512);
  if (sat16 && pmadd) {
    auto [ubsw, wd] = n == 16  ? std::pair{llvm::Intrinsic::x86_avx512_pmaddubs_w_512,
                                          llvm::Intrinsic::x86_avx512_pmaddw_d_512}
                      : n == 8 ? std::pair{llvm::Intrinsic::x86_avx2_pmadd_ub_sw,
                                           llvm::Intrinsic::x86_avx2_pmadd_wd}
                               : std::pair{llvm::Intrinsic::x86_ssse3_pmadd_ub_sw_128,
                                           llvm::Intrinsic::x86_sse2_pmadd_wd};
    llvm::Value* pairs = b_.CreateIntrinsic(ubsw, {}, {b_.CreateBitCast(a_broadcast(), bytes), b});
    llvm::Value* ones = llvm::ConstantInt::get(pairs->getType(), 1);
    return b_.CreateAdd(acc, b_.CreateIntrinsic(wd, {}, {pairs, ones}));
  }
  std::vector<int> repeat;
  for (unsigned k = 0; k < 4 * n; ++k) repeat.push_back(static_cast<int>(k % 4));
  if (!sat16 && pmadd) {
    // Exact with vpmaddwd on int16: each half of b's bytes widened, times a widened, summed in
    // pairs into int32 (|pair| <= 2 * 255 * 128), then the two pairs of each lane added.
    llvm::Type* i16 = b_.getInt16Ty();
    auto* halfwords = llvm::FixedVectorType::get(i16, 2 * n);
    std::vector<int> half_repeat(repeat.begin(), repeat.begin() + 2 * n);
    llvm::Value* a16 =
        b_.CreateShuffleVector(b_.CreateZExt(a, llvm::FixedVectorType::get(i16, 4)), half_repeat);
    llvm::Intrinsic::ID wd = n == 16  ? llvm::Intrinsic::x86_avx512_pmaddw_d_512
                             : n == 8 ? llvm::Intrinsic::x86_avx2_pmadd_wd
                                      : llvm::Intrinsic::x86_sse2_pmadd_wd;
    std::vector<llvm::Value*> pairs;
    for (unsigned h = 0; h < 2; ++h) {
      std::vector<int> part;
      for (unsigned k = 0; k < 2 * n; ++k) part.push_back(static_cast<int>(h * 2 * n + k));
      llvm::Value* b16 = b_.CreateSExt(b_.CreateShuffleVector(b, part), halfwords);
      pairs.push_back(b_.CreateIntrinsic(wd, {}, {a16, b16}));
    }
    std::vector<int> even, odd;
    for (unsigned i = 0; i < n; ++i) {
      even.push_back(static_cast<int>(2 * i));
      odd.push_back(static_cast<int>(2 * i + 1));
    }
    return b_.CreateAdd(acc, b_.CreateAdd(b_.CreateShuffleVector(pairs[0], pairs[1], even),
                                          b_.CreateShuffleVector(pairs[0], pairs[1], odd)));
  }
  auto* wide = llvm::FixedVectorType::get(i32, 4 * n);
  llvm::Value* a_wide =
      b_.CreateShuffleVector(b_.CreateZExt(a, llvm::FixedVectorType::get(i32, 4)), repeat);
  llvm::Value* products = b_.CreateMul(a_wide, b_.CreateSExt(b, wide));
  auto every_fourth = [&](int j) -> llvm::Value* {
    if (n == 1) return b_.CreateExtractElement(products, static_cast<uint64_t>(j));
    std::vector<int> pick;
    for (unsigned i = 0; i < n; ++i) pick.push_back(static_cast<int>(4 * i) + j);
    return b_.CreateShuffleVector(products, pick);
  };
  llvm::Value* sum = acc;
  for (int j = 0; j < 4; j += 2) {
    llvm::Value* pair = b_.CreateAdd(every_fourth(j), every_fourth(j + 1));
    if (sat16) {
      llvm::Type* t = pair->getType();
      pair = call_intrinsic(llvm::Intrinsic::smax, {pair, llvm::ConstantInt::get(t, -32768, true)});
      pair = call_intrinsic(llvm::Intrinsic::smin, {pair, llvm::ConstantInt::get(t, 32767, true)});
    }
    sum = b_.CreateAdd(sum, pair);
  }
  return sum;
}

llvm::Value* IRGen::emit_call(const ir::Call* op) {
  std::vector<llvm::Value*> args;
  for (const ir::Expr& arg : op->args) args.push_back(emit(arg));
  DataType t = op->type;
  if (ir::is_int8_dot(op->op)) {
    return emit_dot_u8s8(args[0], args[1], args[2], t.lanes(), op->op == Intrinsic::kDotU8S8Sat16);
  }
  if (t.is_float() && t.bits() == 16) {
    // float16: compute in float32, round once at the end.
    DataType wide = DataType::Float32(t.lanes());
    for (llvm::Value*& arg : args) arg = b_.CreateFPExt(arg, type_of(wide));
    return b_.CreateFPTrunc(emit_math(op->op, args, wide), type_of(t));
  }
  return emit_math(op->op, args, t);
}

llvm::Value* IRGen::emit_math(Intrinsic op, const std::vector<llvm::Value*>& args, DataType t) {
  bool f32 = t.bits() == 32;
  llvm::Value* x = args[0];
  llvm::Type* ty = x->getType();
  switch (op) {
    case Intrinsic::kExp:
      return f32 ? fast_exp_f32(x) : call_intrinsic(llvm::Intrinsic::exp, args);
    case Intrinsic::kExp2:
      return call_intrinsic(llvm::Intrinsic::exp2, args);
    case Intrinsic::kLog:
      return call_intrinsic(llvm::Intrinsic::log, args);
    case Intrinsic::kLog2:
      return call_intrinsic(llvm::Intrinsic::log2, args);
    case Intrinsic::kSqrt:
      return call_intrinsic(llvm::Intrinsic::sqrt, args);
    case Intrinsic::kRsqrt:
      return b_.CreateFDiv(fconst(ty, 1.0), call_intrinsic(llvm::Intrinsic::sqrt, args));
    case Intrinsic::kTanh:
      return f32 ? fast_tanh_f32(x) : call_libm("tanh", x);
    case Intrinsic::kSigmoid:
      if (f32) return fast_sigmoid_f32(x);
      return b_.CreateFDiv(
          fconst(ty, 1.0),
          b_.CreateFAdd(fconst(ty, 1.0), call_intrinsic(llvm::Intrinsic::exp, {b_.CreateFNeg(x)})));
    case Intrinsic::kErf:
      return f32 ? fast_erf_f32(x) : call_libm("erf", x);
    case Intrinsic::kPow:
      return call_intrinsic(llvm::Intrinsic::pow, args);
    case Intrinsic::kFabs:
      return call_intrinsic(llvm::Intrinsic::fabs, args);
    case Intrinsic::kFloor:
      return call_intrinsic(llvm::Intrinsic::floor, args);
    case Intrinsic::kCeil:
      return call_intrinsic(llvm::Intrinsic::ceil, args);
    case Intrinsic::kRound:
      // Halfway cases to even, as ONNX Round and numpy.round.
      return call_intrinsic(llvm::Intrinsic::roundeven, args);
    case Intrinsic::kTrunc:
      return call_intrinsic(llvm::Intrinsic::trunc, args);
    case Intrinsic::kFma:
      return call_intrinsic(llvm::Intrinsic::fma, args);
    case Intrinsic::kSin:
      return call_intrinsic(llvm::Intrinsic::sin, args);
    case Intrinsic::kCos:
      return call_intrinsic(llvm::Intrinsic::cos, args);
    case Intrinsic::kTan:
    case Intrinsic::kAsin:
    case Intrinsic::kAcos:
    case Intrinsic::kAtan:
    case Intrinsic::kSinh:
    case Intrinsic::kCosh:
    case Intrinsic::kAsinh:
    case Intrinsic::kAcosh:
    case Intrinsic::kAtanh:
      return call_libm(ir::intrinsic_name(op), x);
    case Intrinsic::kFmod:
      return b_.CreateFRem(args[0], args[1]);
    case Intrinsic::kDotU8S8:
    case Intrinsic::kDotU8S8Sat16:
      break;  // emit_call
  }
  fail(str("no code for intrinsic ", ir::intrinsic_name(op)));
}

}  // namespace anvil::codegen::llvm_backend
