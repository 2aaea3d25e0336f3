// Expressions, loads and stores.
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>

#include <bit>
#include <numeric>

#include "anvil/codegen/llvm/ir_gen.h"
#include "anvil/ir/op.h"
#include "anvil/ir/printer.h"
#include "anvil/support/error.h"

namespace anvil::codegen::llvm_backend {

using ir::DataType;

namespace {

// Signed int32 and int64 arithmetic never overflows (the assumption every analysis makes);
// unsigned and narrower signed arithmetic wraps.
bool no_signed_wrap(DataType t) {
  return t.is_int() && t.bits() >= 32;
}

bool is_true(const ir::Expr& e) {
  return !e.defined() || ir::is_one(e);
}

}  // namespace

llvm::Value* IRGen::emit(const ir::Expr& e) {
  ANVIL_ICHECK(e.defined(), "undefined expression in kernel '", kernel_, "'");
  switch (e.node_type()) {
#define ANVIL_IRGEN_EXPR_CASE(name) \
  case ir::IRNodeType::name:        \
    return visit(static_cast<const ir::name*>(e.get()));
    ANVIL_FOR_EACH_EXPR_NODE(ANVIL_IRGEN_EXPR_CASE)
#undef ANVIL_IRGEN_EXPR_CASE
    default:
      break;
  }
  ANVIL_UNREACHABLE("a statement where an expression was expected");
}

llvm::Value* IRGen::vector_of(llvm::Value* v, int lanes) {
  if (v->getType()->isVectorTy()) return v;
  return b_.CreateVectorSplat(lanes, v);
}

// ---------------------------------------------------------------------------------------------
// Immediates, variables, casts

llvm::Value* IRGen::visit(const ir::IntImm* op) {
  return llvm::ConstantInt::get(type_of(op->type), static_cast<uint64_t>(op->value), true);
}

llvm::Value* IRGen::visit(const ir::FloatImm* op) {
  return llvm::ConstantFP::get(type_of(op->type), op->value);
}

llvm::Value* IRGen::visit(const ir::Variable* op) {
  auto it = vars_.find(op);
  if (it == vars_.end()) {
    fail(str("variable '", op->name, "' is used but not bound (it is no loop variable, let, ",
             "allocation or argument shape in scope)"));
  }
  return it->second;
}

llvm::Value* IRGen::visit(const ir::Cast* op) {
  DataType from = op->value.type();
  DataType to = op->type;
  llvm::Value* v = emit(op->value);
  llvm::Type* t = type_of(to);
  if (from == to) return v;
  if (to.is_bool()) {
    if (from.is_float()) return b_.CreateFCmpUNE(v, llvm::Constant::getNullValue(v->getType()));
    return b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
  }
  if (from.is_bool()) return to.is_float() ? b_.CreateUIToFP(v, t) : b_.CreateZExt(v, t);
  if (from.is_int_or_uint() && to.is_int_or_uint()) return int_cast(v, from, t);
  if (from.is_int_or_uint()) return from.is_int() ? b_.CreateSIToFP(v, t) : b_.CreateUIToFP(v, t);
  if (to.is_int_or_uint()) return to.is_int() ? b_.CreateFPToSI(v, t) : b_.CreateFPToUI(v, t);
  return b_.CreateFPCast(v, t);
}

// ---------------------------------------------------------------------------------------------
// Arithmetic

llvm::Value* IRGen::visit(const ir::Add* op) {
  llvm::Value* a = emit(op->a);
  llvm::Value* b = emit(op->b);
  if (op->type.is_float()) return b_.CreateFAdd(a, b);
  return b_.CreateAdd(a, b, "", false, no_signed_wrap(op->type));
}

llvm::Value* IRGen::visit(const ir::Sub* op) {
  llvm::Value* a = emit(op->a);
  llvm::Value* b = emit(op->b);
  if (op->type.is_float()) return b_.CreateFSub(a, b);
  return b_.CreateSub(a, b, "", false, no_signed_wrap(op->type));
}

llvm::Value* IRGen::visit(const ir::Mul* op) {
  llvm::Value* a = emit(op->a);
  llvm::Value* b = emit(op->b);
  if (op->type.is_float()) return b_.CreateFMul(a, b);
  return b_.CreateMul(a, b, "", false, no_signed_wrap(op->type));
}

llvm::Value* IRGen::visit(const ir::Div* op) {
  return b_.CreateFDiv(emit(op->a), emit(op->b));
}

llvm::Value* IRGen::visit(const ir::TruncDiv* op) {
  llvm::Value* a = emit(op->a);
  llvm::Value* b = emit(op->b);
  return op->type.is_int() ? b_.CreateSDiv(a, b) : b_.CreateUDiv(a, b);
}

llvm::Value* IRGen::visit(const ir::TruncMod* op) {
  llvm::Value* a = emit(op->a);
  llvm::Value* b = emit(op->b);
  return op->type.is_int() ? b_.CreateSRem(a, b) : b_.CreateURem(a, b);
}

llvm::Value* IRGen::visit(const ir::FloorDiv* op) {
  return emit_floor_div_mod(op->a, op->b, false);
}

llvm::Value* IRGen::visit(const ir::FloorMod* op) {
  return emit_floor_div_mod(op->a, op->b, true);
}

// Division rounding toward -inf, and the remainder with the divisor's sign. Cheap forms when the
// divisor is a positive power of two (shift and mask) or both operands are known non-negative
// (plain unsigned division); otherwise truncating division corrected by one where the
// remainder's sign differs from the divisor's.
llvm::Value* IRGen::emit_floor_div_mod(const ir::Expr& a_expr, const ir::Expr& b_expr,
                                       bool is_mod) {
  DataType t = a_expr.type();
  llvm::Value* a = emit(a_expr);
  llvm::Value* b = emit(b_expr);
  if (t.is_uint()) return is_mod ? b_.CreateURem(a, b) : b_.CreateUDiv(a, b);
  llvm::Type* ty = a->getType();
  std::optional<int64_t> divisor = ir::as_const_int(b_expr);
  if (divisor && *divisor > 0 && std::has_single_bit(static_cast<uint64_t>(*divisor))) {
    if (is_mod) return b_.CreateAnd(a, llvm::ConstantInt::get(ty, *divisor - 1));
    return b_.CreateAShr(a, llvm::ConstantInt::get(ty, std::countr_zero(uint64_t(*divisor))));
  }
  arith::IntBounds a_bounds = arith::bounds_of(a_expr, bounds_);
  bool b_positive = divisor ? *divisor > 0 : arith::bounds_of(b_expr, bounds_).min > 0;
  if (b_positive && a_bounds.min >= 0) {
    return is_mod ? b_.CreateURem(a, b) : b_.CreateUDiv(a, b);
  }
  llvm::Value* q = b_.CreateSDiv(a, b);
  llvm::Value* r = b_.CreateSRem(a, b);
  llvm::Value* zero = llvm::Constant::getNullValue(ty);
  llvm::Value* adjust;
  if (b_positive) {
    adjust = b_.CreateICmpSLT(r, zero);
  } else {
    // r != 0 and sign(r) != sign(b)
    adjust = b_.CreateAnd(b_.CreateICmpNE(r, zero), b_.CreateICmpSLT(b_.CreateXor(r, b), zero));
  }
  if (is_mod) return b_.CreateAdd(r, b_.CreateSelect(adjust, b, zero));
  return b_.CreateAdd(q, b_.CreateSExt(adjust, ty));
}

namespace {

// A constant (scalar or splat) that is not NaN: a clip's bound, a ReLU's zero.
bool constant_not_nan(llvm::Value* v) {
  auto* c = llvm::dyn_cast<llvm::Constant>(v);
  if (c && c->getType()->isVectorTy()) c = c->getSplatValue();
  auto* f = llvm::dyn_cast_or_null<llvm::ConstantFP>(c);
  return f && !f->isNaN();
}

}  // namespace

// ONNX Min/Max: NaN in either operand gives NaN.
llvm::Value* IRGen::emit_float_min_max(llvm::Value* a, llvm::Value* b, bool is_max) {
  // Against a constant b that is not NaN (a clip's bounds, a ReLU's zero), "a wins or a is NaN"
  // is one unordered comparison; on x86 vectors of float32 it is one vmaxps / vminps with b
  // first, which returns its second operand, a, when either is NaN (and on ties, equal but for
  // the sign of a zero). LLVM does not select that from the compare itself, for the zero's sign.
  if (constant_not_nan(b)) {
    auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(a->getType());
    if (vt && vt->getElementType()->isFloatTy()) {
      const unsigned bits = vt->getNumElements() * 32;
      if (bits == 512 && options_.minmax_512) {
        return b_.CreateIntrinsic(
            is_max ? llvm::Intrinsic::x86_avx512_max_ps_512
                   : llvm::Intrinsic::x86_avx512_min_ps_512,
            {}, {b, a, b_.getInt32(4)});  // 4: the current rounding, no suppression
      }
      if (bits == 256 && options_.minmax_256) {
        return b_.CreateIntrinsic(
            is_max ? llvm::Intrinsic::x86_avx_max_ps_256 : llvm::Intrinsic::x86_avx_min_ps_256, {},
            {b, a});
      }
      if (bits == 128 && options_.minmax_128) {
        return b_.CreateIntrinsic(
            is_max ? llvm::Intrinsic::x86_sse_max_ps : llvm::Intrinsic::x86_sse_min_ps, {}, {b, a});
      }
    }
    return b_.CreateSelect(is_max ? b_.CreateFCmpUGT(a, b) : b_.CreateFCmpULT(a, b), a, b);
  }
  llvm::Value* a_wins = is_max ? b_.CreateFCmpOGT(a, b) : b_.CreateFCmpOLT(a, b);
  llvm::Value* a_nan = b_.CreateFCmpUNO(a, a);
  return b_.CreateSelect(b_.CreateOr(a_wins, a_nan), a, b);
}

llvm::Value* IRGen::visit(const ir::Min* op) {
  llvm::Value* a = emit(op->a);
  llvm::Value* b = emit(op->b);
  if (op->type.is_float()) return emit_float_min_max(a, b, false);
  return b_.CreateBinaryIntrinsic(op->type.is_int() ? llvm::Intrinsic::smin : llvm::Intrinsic::umin,
                                  a, b);
}

llvm::Value* IRGen::visit(const ir::Max* op) {
  llvm::Value* a = emit(op->a);
  llvm::Value* b = emit(op->b);
  if (op->type.is_float()) return emit_float_min_max(a, b, true);
  return b_.CreateBinaryIntrinsic(op->type.is_int() ? llvm::Intrinsic::smax : llvm::Intrinsic::umax,
                                  a, b);
}

// ---------------------------------------------------------------------------------------------
// Comparisons and logic. Float comparisons are ordered (false on NaN) except !=, which is true
// on NaN, as in C.

llvm::Value* IRGen::visit(const ir::EQ* op) {
  llvm::Value* a = emit(op->a);
  llvm::Value* b = emit(op->b);
  return op->a.type().is_float() ? b_.CreateFCmpOEQ(a, b) : b_.CreateICmpEQ(a, b);
}

llvm::Value* IRGen::visit(const ir::NE* op) {
  llvm::Value* a = emit(op->a);
  llvm::Value* b = emit(op->b);
  return op->a.type().is_float() ? b_.CreateFCmpUNE(a, b) : b_.CreateICmpNE(a, b);
}

#define ANVIL_IRGEN_COMPARE(Node, fpred, spred, upred)                                    \
  llvm::Value* IRGen::visit(const ir::Node* op) {                                         \
    llvm::Value* a = emit(op->a);                                                         \
    llvm::Value* b = emit(op->b);                                                         \
    DataType t = op->a.type();                                                            \
    if (t.is_float()) return b_.CreateFCmp(llvm::CmpInst::fpred, a, b);                   \
    return b_.CreateICmp(t.is_int() ? llvm::CmpInst::spred : llvm::CmpInst::upred, a, b); \
  }
ANVIL_IRGEN_COMPARE(LT, FCMP_OLT, ICMP_SLT, ICMP_ULT)
ANVIL_IRGEN_COMPARE(LE, FCMP_OLE, ICMP_SLE, ICMP_ULE)
ANVIL_IRGEN_COMPARE(GT, FCMP_OGT, ICMP_SGT, ICMP_UGT)
ANVIL_IRGEN_COMPARE(GE, FCMP_OGE, ICMP_SGE, ICMP_UGE)
#undef ANVIL_IRGEN_COMPARE

llvm::Value* IRGen::visit(const ir::And* op) {
  return b_.CreateAnd(emit(op->a), emit(op->b));
}

llvm::Value* IRGen::visit(const ir::Or* op) {
  return b_.CreateOr(emit(op->a), emit(op->b));
}

llvm::Value* IRGen::visit(const ir::Not* op) {
  return b_.CreateNot(emit(op->a));
}

llvm::Value* IRGen::visit(const ir::Select* op) {
  llvm::Value* c = emit(op->condition);
  llvm::Value* t = emit(op->true_value);
  llvm::Value* f = emit(op->false_value);
  return b_.CreateSelect(c, t, f);
}

// ---------------------------------------------------------------------------------------------
// Vectors

llvm::Value* IRGen::visit(const ir::Ramp* op) {
  DataType t = op->base.type();
  llvm::Type* scalar = type_of(t);
  std::optional<int64_t> base = ir::as_const_int(op->base);
  std::optional<int64_t> stride = ir::as_const_int(op->stride);
  std::vector<llvm::Constant*> lanes;
  for (int i = 0; i < op->lanes; ++i) {
    // Wrapping arithmetic: lanes of a narrow type wrap as its additions would.
    uint64_t s = static_cast<uint64_t>(stride.value_or(1));
    uint64_t v = static_cast<uint64_t>(base.value_or(0)) + s * static_cast<uint64_t>(i);
    lanes.push_back(llvm::ConstantInt::get(scalar, v, t.is_int()));
  }
  llvm::Value* offsets = llvm::ConstantVector::get(lanes);
  if (base && stride) return offsets;
  bool nsw = no_signed_wrap(t);
  if (!stride) {
    offsets = b_.CreateMul(vector_of(emit(op->stride), op->lanes), offsets, "", false, nsw);
  }
  if (base && *base == 0) return offsets;
  return b_.CreateAdd(vector_of(emit(op->base), op->lanes), offsets, "", false, nsw);
}

llvm::Value* IRGen::visit(const ir::Broadcast* op) {
  return b_.CreateVectorSplat(op->lanes, emit(op->value));
}

// ---------------------------------------------------------------------------------------------
// Binding and calls

llvm::Value* IRGen::visit(const ir::Let* op) {
  bind(op->var, emit(op->value), op->value);
  llvm::Value* body = emit(op->body);
  unbind(op->var);
  return body;
}

llvm::Value* IRGen::visit(const ir::Call* op) {
  return emit_call(op);
}

llvm::Value* IRGen::visit(const ir::Reduce* op) {
  fail(str("Reduce ", ir::Expr(op), " must be lowered to loops before code generation"));
}

// ---------------------------------------------------------------------------------------------
// Memory

llvm::Align IRGen::alignment_of(const ir::Expr& index, int elem_bytes) const {
  // A known multiple of the index (in elements) times the element size, capped by the buffer's
  // own alignment.
  arith::ModularSet m = arith::modular_set_of(index, modular_);
  // base may be negative only for a single value; negate it in unsigned arithmetic.
  uint64_t base = static_cast<uint64_t>(m.base);
  if (m.base < 0) base = ~base + 1;
  uint64_t g = std::gcd(static_cast<uint64_t>(m.coeff), base);
  auto lowest_bit = [](uint64_t v) { return v & (~v + 1); };
  uint64_t index_align = g == 0 ? kArgumentAlignment : std::min(lowest_bit(g), kArgumentAlignment);
  uint64_t elem_align = lowest_bit(static_cast<uint64_t>(elem_bytes));
  return llvm::Align(std::min(index_align * elem_align, kArgumentAlignment));
}

void IRGen::annotate_alias(llvm::Instruction* inst, const ir::Variable* data) {
  auto it = alias_.find(data);
  if (it == alias_.end()) return;
  inst->setMetadata(llvm::LLVMContext::MD_alias_scope, it->second.scope);
  if (it->second.noalias) inst->setMetadata(llvm::LLVMContext::MD_noalias, it->second.noalias);
}

llvm::Value* IRGen::to_storage(llvm::Value* v, DataType t) {
  return t.is_bool() ? b_.CreateZExt(v, storage_type_of(t)) : v;
}

llvm::Value* IRGen::from_storage(llvm::Value* v, DataType t) {
  return t.is_bool() ? b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType())) : v;
}

IRGen::Access IRGen::access_of(const char* what, const ir::Buffer& buffer,
                               const std::vector<ir::Expr>& indices, const ir::Expr& predicate) {
  if (indices.size() != 1) {
    fail(str(what, " of '", buffer->name, "' has ", indices.size(),
             " indices; flatten storage to one dimension before code generation"));
  }
  Access acc;
  acc.data = buffer->data.get();
  auto it = vars_.find(acc.data);
  if (it == vars_.end()) {
    fail(str(what, " of '", buffer->name, "': the buffer is neither an argument nor allocated ",
             "in scope"));
  }
  acc.base = it->second;
  acc.elem_type = buffer->dtype.element_of();
  acc.elem = storage_type_of(acc.elem_type);
  acc.index = indices[0];
  int elem_lanes = buffer->dtype.lanes();
  if (elem_lanes > 1) {
    // A buffer of vectors: address its scalars.
    if (!is_true(predicate))
      fail(str("predicated ", what, " of vector buffer '", buffer->name, "'"));
    ir::Expr width = ir::make_const(acc.index.type().element_of(), elem_lanes);
    if (acc.index.type().is_scalar()) {
      acc.index = ir::Ramp::make(acc.index * width, ir::make_one(width.type()), elem_lanes);
    } else if (const ir::Ramp* ramp = acc.index.as<ir::Ramp>(); ramp && ir::is_one(ramp->stride)) {
      acc.index = ir::Ramp::make(ramp->base * width, ramp->stride, ramp->lanes * elem_lanes);
    } else {
      fail(str(what, " of vector buffer '", buffer->name, "' (", buffer->dtype,
               ") at a non-contiguous vector index ", acc.index));
    }
  }
  acc.lanes = acc.index.type().lanes();
  if (!is_true(predicate)) acc.mask = emit(predicate);
  return acc;
}

// The sums and products of signed int32 that make up an index are computed in 64 bits (equal,
// as they never overflow: no_signed_wrap). Extended after the arithmetic instead, every constant
// offset stayed an add and a sign extension per access after LLVM's reassociation dropped the
// no-wrap flags (a 1x1 convolution's broadcasts on AVX2: lea + movslq before each one), where in
// 64 bits it folds into the addressing mode.
llvm::Value* IRGen::emit_offset(const ir::Expr& index) {
  llvm::Type* i64_ty = b_.getInt64Ty();
  DataType t = index.type();
  if (!no_signed_wrap(t) || !t.is_scalar()) return int_cast(emit(index), t, i64_ty);
  if (const ir::IntImm* imm = index.as<ir::IntImm>()) return i64(imm->value);
  if (const ir::Add* op = index.as<ir::Add>())
    return b_.CreateAdd(emit_offset(op->a), emit_offset(op->b), "", false, true);
  if (const ir::Sub* op = index.as<ir::Sub>())
    return b_.CreateSub(emit_offset(op->a), emit_offset(op->b), "", false, true);
  if (const ir::Mul* op = index.as<ir::Mul>())
    return b_.CreateMul(emit_offset(op->a), emit_offset(op->b), "", false, true);
  return int_cast(emit(index), t, i64_ty);
}

llvm::Value* IRGen::visit(const ir::Load* op) {
  Access acc = access_of("load", op->buffer, op->indices, op->predicate);
  int esize = acc.elem_type.bytes();
  llvm::Type* i64_ty = b_.getInt64Ty();
  DataType index_type = acc.index.type().element_of();
  if (acc.lanes == 1) {
    llvm::Value* ptr = b_.CreateInBoundsGEP(acc.elem, acc.base, emit_offset(acc.index));
    llvm::Align align = alignment_of(acc.index, esize);
    if (!acc.mask) {
      llvm::LoadInst* load = b_.CreateAlignedLoad(acc.elem, ptr, align);
      annotate_alias(load, acc.data);
      return from_storage(load, acc.elem_type);
    }
    // A predicated scalar load: zero where the predicate is false.
    llvm::BasicBlock* before = b_.GetInsertBlock();
    llvm::BasicBlock* load_bb = llvm::BasicBlock::Create(ctx_, "pred_load", fs_.function);
    llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, "pred_load_end", fs_.function);
    b_.CreateCondBr(acc.mask, load_bb, done);
    b_.SetInsertPoint(load_bb);
    llvm::LoadInst* load = b_.CreateAlignedLoad(acc.elem, ptr, align);
    annotate_alias(load, acc.data);
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
    llvm::PHINode* phi = b_.CreatePHI(acc.elem, 2);
    phi->addIncoming(load, load_bb);
    phi->addIncoming(llvm::Constant::getNullValue(acc.elem), before);
    return from_storage(phi, acc.elem_type);
  }
  auto* vec_ty = llvm::FixedVectorType::get(acc.elem, acc.lanes);
  llvm::Value* zero = llvm::Constant::getNullValue(vec_ty);
  llvm::Instruction* inst = nullptr;
  const ir::Ramp* ramp = acc.index.as<ir::Ramp>();
  const ir::Broadcast* splat = acc.index.as<ir::Broadcast>();
  if (ramp && ir::is_one(ramp->stride)) {
    // Contiguous: one vector load at the alignment the base provably has.
    llvm::Value* ptr = b_.CreateInBoundsGEP(acc.elem, acc.base, emit_offset(ramp->base));
    llvm::Align align = alignment_of(ramp->base, esize);
    if (acc.mask) {
      inst = b_.CreateMaskedLoad(vec_ty, ptr, align, acc.mask, zero);
    } else {
      inst = b_.CreateAlignedLoad(vec_ty, ptr, align);
    }
  } else if (splat && !acc.mask) {
    llvm::Value* ptr = b_.CreateInBoundsGEP(acc.elem, acc.base, emit_offset(splat->value));
    llvm::LoadInst* load = b_.CreateAlignedLoad(acc.elem, ptr, alignment_of(splat->value, esize));
    annotate_alias(load, acc.data);
    return from_storage(b_.CreateVectorSplat(acc.lanes, load), acc.elem_type.with_lanes(acc.lanes));
  } else {
    llvm::Value* index =
        int_cast(emit(acc.index), index_type, llvm::FixedVectorType::get(i64_ty, acc.lanes));
    llvm::Value* ptrs = b_.CreateInBoundsGEP(acc.elem, acc.base, index);
    llvm::Value* mask = acc.mask ? acc.mask : b_.CreateVectorSplat(acc.lanes, b_.getTrue());
    inst = b_.CreateMaskedGather(vec_ty, ptrs, llvm::Align(esize), mask, zero);
  }
  annotate_alias(inst, acc.data);
  return from_storage(inst, acc.elem_type.with_lanes(acc.lanes));
}

void IRGen::emit_store(const ir::Store* op) {
  Access acc = access_of("store", op->buffer, op->indices, op->predicate);
  llvm::Value* value = to_storage(emit(op->value), op->value.type());
  int esize = acc.elem_type.bytes();
  llvm::Type* i64_ty = b_.getInt64Ty();
  DataType index_type = acc.index.type().element_of();
  if (acc.lanes == 1) {
    llvm::Value* ptr = b_.CreateInBoundsGEP(acc.elem, acc.base, emit_offset(acc.index));
    llvm::Align align = alignment_of(acc.index, esize);
    auto store = [&] { annotate_alias(b_.CreateAlignedStore(value, ptr, align), acc.data); };
    if (acc.mask) {
      emit_if(acc.mask, store, {});
    } else {
      store();
    }
    return;
  }
  llvm::Instruction* inst = nullptr;
  const ir::Ramp* ramp = acc.index.as<ir::Ramp>();
  if (ramp && ir::is_one(ramp->stride)) {
    llvm::Value* ptr = b_.CreateInBoundsGEP(acc.elem, acc.base, emit_offset(ramp->base));
    llvm::Align align = alignment_of(ramp->base, esize);
    if (acc.mask) {
      inst = b_.CreateMaskedStore(value, ptr, align, acc.mask);
    } else {
      inst = b_.CreateAlignedStore(value, ptr, align);
    }
  } else {
    // Scatter: where lanes share an address, the highest lane's value lands last.
    llvm::Value* index =
        int_cast(emit(acc.index), index_type, llvm::FixedVectorType::get(i64_ty, acc.lanes));
    llvm::Value* ptrs = b_.CreateInBoundsGEP(acc.elem, acc.base, index);
    llvm::Value* mask = acc.mask ? acc.mask : b_.CreateVectorSplat(acc.lanes, b_.getTrue());
    inst = b_.CreateMaskedScatter(value, ptrs, llvm::Align(esize), mask);
  }
  annotate_alias(inst, acc.data);
}

}  // namespace anvil::codegen::llvm_backend
