// Statements: loops (serial, unrolled, parallel by outlining), branches, allocation, asserts.
#include <llvm/IR/Intrinsics.h>

#include <set>

#include "anvil/codegen/llvm/ir_gen.h"
#include "anvil/ir/op.h"
#include "anvil/ir/printer.h"
#include "anvil/ir/visitor.h"
#include "anvil/support/error.h"

namespace anvil::codegen::llvm_backend {

using ir::DataType;

namespace {

struct ById {
  bool operator()(const ir::Variable* a, const ir::Variable* b) const { return a->id < b->id; }
};

// Every variable a statement uses, buffers' data variables included, in creation order.
class UsedVariables : public ir::IRVisitor {
 public:
  using ir::IRVisitor::visit;
  std::set<const ir::Variable*, ById> vars;
  void visit(const ir::Variable* op) override { vars.insert(op); }
  void visit(const ir::Load* op) override {
    vars.insert(op->buffer->data.get());
    ir::IRVisitor::visit(op);
  }
  void visit(const ir::Store* op) override {
    vars.insert(op->buffer->data.get());
    ir::IRVisitor::visit(op);
  }
};

int64_t saturating_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    return b > 0 ? arith::IntBounds::kPosInf : arith::IntBounds::kNegInf;
  return r;
}

}  // namespace

void IRGen::emit(const ir::Stmt& s) {
  ANVIL_ICHECK(s.defined(), "undefined statement in kernel '", kernel_, "'");
  switch (s.node_type()) {
    case ir::IRNodeType::LetStmt: {
      const auto* op = s.as<ir::LetStmt>();
      bind(op->var, emit(op->value), op->value);
      emit(op->body);
      unbind(op->var);
      return;
    }
    case ir::IRNodeType::AttrStmt:
      emit(s.as<ir::AttrStmt>()->body);
      return;
    case ir::IRNodeType::AssertStmt: {
      const auto* op = s.as<ir::AssertStmt>();
      emit_check(emit(op->condition), [&] { emit_set_error(str(kernel_, ": ", op->message)); });
      emit(op->body);
      return;
    }
    case ir::IRNodeType::Store:
      emit_store(s.as<ir::Store>());
      return;
    case ir::IRNodeType::Allocate:
      emit_allocate(s.as<ir::Allocate>());
      return;
    case ir::IRNodeType::For: {
      const auto* op = s.as<ir::For>();
      switch (op->kind) {
        case ir::ForKind::kSerial:
        case ir::ForKind::kUnrolled: {
          llvm::Value* begin = emit(op->min);
          llvm::Value* end = b_.CreateAdd(begin, emit(op->extent), "", false,
                                          op->var.type().is_int() && op->var.type().bits() >= 32);
          bounds_[op->var.get()] = loop_bounds(op->min, op->extent);
          emit_loop(op->var, begin, end, op->body,
                    op->kind == ir::ForKind::kUnrolled ? loop_metadata("llvm.loop.unroll.full")
                                                       : nullptr);
          bounds_.erase(op->var.get());
          return;
        }
        case ir::ForKind::kParallel:
          emit_parallel_for(op);
          return;
        case ir::ForKind::kVectorized:
          fail(str("loop '", op->var.name(), "' is still marked vectorized; the vectorize pass ",
                   "must rewrite it into vector operations before code generation"));
        case ir::ForKind::kThreadBinding:
          fail(str("loop '", op->var.name(), "' is bound to GPU thread '", op->thread_tag,
                   "', which the CPU does not have"));
      }
      return;
    }
    case ir::IRNodeType::IfThenElse: {
      const auto* op = s.as<ir::IfThenElse>();
      std::function<void()> else_case;
      if (op->else_case.defined()) else_case = [&] { emit(op->else_case); };
      emit_if(
          emit(op->condition), [&] { emit(op->then_case); }, else_case);
      return;
    }
    case ir::IRNodeType::Seq:
      for (const ir::Stmt& stmt : s.as<ir::Seq>()->stmts) emit(stmt);
      return;
    case ir::IRNodeType::Evaluate: {
      const ir::Expr& value = s.as<ir::Evaluate>()->value;
      if (!ir::is_const(value)) emit(value);
      return;
    }
    case ir::IRNodeType::Barrier:
      fail(str("Barrier (", ir::memory_scope_name(s.as<ir::Barrier>()->scope),
               ") synchronizes GPU threads; the CPU has none"));
    default:
      break;
  }
  ANVIL_UNREACHABLE("an expression where a statement was expected");
}

arith::IntBounds IRGen::loop_bounds(const ir::Expr& min, const ir::Expr& extent) const {
  arith::IntBounds lo = arith::bounds_of(min, bounds_);
  arith::IntBounds n = arith::bounds_of(extent, bounds_);
  arith::IntBounds result{lo.min, arith::IntBounds::kPosInf};
  if (lo.has_upper() && n.has_upper()) {
    result.max = saturating_add(lo.max, saturating_add(n.max, -1));
  }
  // An extent that may be below one: where the loop runs at all, its variable is at least min.
  if (result.max < result.min) result.max = result.min;
  return result;
}

llvm::MDNode* IRGen::loop_metadata(const char* property) {
  llvm::Metadata* prop = llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, property)});
  llvm::MDNode* md = llvm::MDNode::getDistinct(ctx_, {nullptr, prop});
  md->replaceOperandWith(0, md);
  return md;
}

void IRGen::emit_loop(const ir::Var& var, llvm::Value* begin, llvm::Value* end,
                      const ir::Stmt& body, llvm::MDNode* metadata) {
  bool is_signed = var.type().is_int();
  const std::string& name = var.name();
  llvm::BasicBlock* preheader = b_.GetInsertBlock();
  llvm::BasicBlock* header = llvm::BasicBlock::Create(ctx_, "for_" + name, fs_.function);
  llvm::BasicBlock* body_bb = llvm::BasicBlock::Create(ctx_, "for_" + name + "_body", fs_.function);
  llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx_, "for_" + name + "_end", fs_.function);
  b_.CreateBr(header);

  b_.SetInsertPoint(header);
  llvm::PHINode* i = b_.CreatePHI(begin->getType(), 2, name);
  i->addIncoming(begin, preheader);
  llvm::Value* more = is_signed ? b_.CreateICmpSLT(i, end) : b_.CreateICmpULT(i, end);
  b_.CreateCondBr(more, body_bb, exit);

  b_.SetInsertPoint(body_bb);
  vars_[var.get()] = i;
  emit(body);
  vars_.erase(var.get());
  // i < end, so i + 1 cannot wrap.
  llvm::Value* next = b_.CreateAdd(i, llvm::ConstantInt::get(i->getType(), 1), name + ".next",
                                   !is_signed, is_signed);
  llvm::BranchInst* back = b_.CreateBr(header);
  if (metadata) back->setMetadata(llvm::LLVMContext::MD_loop, metadata);
  i->addIncoming(next, b_.GetInsertBlock());
  b_.SetInsertPoint(exit);
}

void IRGen::emit_if(llvm::Value* condition, const std::function<void()>& then_case,
                    const std::function<void()>& else_case) {
  llvm::BasicBlock* then_bb = llvm::BasicBlock::Create(ctx_, "then", fs_.function);
  llvm::BasicBlock* else_bb =
      else_case ? llvm::BasicBlock::Create(ctx_, "else", fs_.function) : nullptr;
  llvm::BasicBlock* end = llvm::BasicBlock::Create(ctx_, "endif", fs_.function);
  b_.CreateCondBr(condition, then_bb, else_bb ? else_bb : end);
  b_.SetInsertPoint(then_bb);
  then_case();
  b_.CreateBr(end);
  if (else_bb) {
    b_.SetInsertPoint(else_bb);
    else_case();
    b_.CreateBr(end);
  }
  b_.SetInsertPoint(end);
}

// A parallel loop becomes `int32_t body(int64_t begin, int64_t end, void* closure)` running
// iterations [begin, end), with every variable the loop uses from outside packed into a struct
// on the caller's stack; AnvilParallelFor runs it across the runtime's threads.
void IRGen::emit_parallel_for(const ir::For* op) {
  llvm::Type* i64_ty = b_.getInt64Ty();
  llvm::Value* min = emit(op->min);
  llvm::Value* extent = int_cast(emit(op->extent), op->extent.type(), i64_ty);

  UsedVariables used;
  used.visit(op->body);
  std::vector<const ir::Variable*> captured;
  std::vector<llvm::Type*> fields{min->getType()};
  for (const ir::Variable* v : used.vars) {
    auto it = vars_.find(v);
    if (it == vars_.end() || v == op->var.get()) continue;
    captured.push_back(v);
    fields.push_back(it->second->getType());
  }
  llvm::StructType* closure_ty = llvm::StructType::get(ctx_, fields);
  llvm::AllocaInst* closure = entry_alloca(closure_ty, 8, "closure");
  b_.CreateStore(min, b_.CreateStructGEP(closure_ty, closure, 0));
  for (size_t k = 0; k < captured.size(); ++k) {
    b_.CreateStore(vars_.at(captured[k]), b_.CreateStructGEP(closure_ty, closure, k + 1));
  }

  auto* body_ty = llvm::FunctionType::get(b_.getInt32Ty(), {i64_ty, i64_ty, b_.getPtrTy()}, false);
  llvm::Function* body = new_function(str(kernel_, ".parallel", parallel_count_++), body_ty,
                                      llvm::GlobalValue::InternalLinkage);
  body->getArg(0)->setName("begin");
  body->getArg(1)->setName("end");
  body->getArg(2)->setName("closure");

  // Fill the outlined function with the loop, then come back.
  FunctionState saved_fs = std::move(fs_);
  llvm::IRBuilderBase::InsertPoint saved_ip = b_.saveIP();
  std::unordered_map<const ir::Variable*, llvm::Value*> saved_vars = std::move(vars_);
  vars_.clear();
  fs_ = FunctionState{body, llvm::BasicBlock::Create(ctx_, "entry", body), {}};
  b_.SetInsertPoint(fs_.entry);
  llvm::Value* env = body->getArg(2);
  llvm::Value* inner_min = b_.CreateLoad(fields[0], b_.CreateStructGEP(closure_ty, env, 0));
  for (size_t k = 0; k < captured.size(); ++k) {
    vars_[captured[k]] =
        b_.CreateLoad(fields[k + 1], b_.CreateStructGEP(closure_ty, env, k + 1), captured[k]->name);
  }
  llvm::Type* var_ty = min->getType();
  bool nsw = op->var.type().is_int() && op->var.type().bits() >= 32;
  llvm::Value* begin =
      b_.CreateAdd(inner_min, b_.CreateTrunc(body->getArg(0), var_ty), "", false, nsw);
  llvm::Value* end =
      b_.CreateAdd(inner_min, b_.CreateTrunc(body->getArg(1), var_ty), "", false, nsw);
  bounds_[op->var.get()] = loop_bounds(op->min, op->extent);
  emit_loop(op->var, begin, end, op->body, nullptr);
  bounds_.erase(op->var.get());
  b_.CreateRet(i32(0));
  vars_ = std::move(saved_vars);
  fs_ = std::move(saved_fs);
  b_.restoreIP(saved_ip);

  llvm::Value* rc = call_runtime(RuntimeFn::kParallelFor, {extent, body, closure});
  // The failing chunk has set the error already.
  emit_check(b_.CreateICmpEQ(rc, i32(0)));
}

void IRGen::emit_allocate(const ir::Allocate* op) {
  const ir::Buffer& buffer = op->buffer;
  DataType dt = buffer->dtype;
  llvm::Type* scalar = storage_type_of(dt.element_of());
  uint64_t elem_bytes = static_cast<uint64_t>(dt.bytes()) * static_cast<uint64_t>(dt.lanes());
  // Constant size?
  bool constant = true;
  uint64_t count = 1;
  for (const ir::Expr& dim : buffer->shape) {
    std::optional<int64_t> c = ir::as_const_int(dim);
    if (c && *c < 0) fail(str("buffer '", buffer->name, "' has a negative extent ", *c));
    if (!c || __builtin_mul_overflow(count, static_cast<uint64_t>(*c), &count)) constant = false;
  }
  uint64_t bytes = 0;
  if (constant && __builtin_mul_overflow(count, elem_bytes, &bytes)) constant = false;

  if (constant && bytes <= kMaxStackAllocBytes) {
    uint64_t scalars = std::max<uint64_t>(count * static_cast<uint64_t>(dt.lanes()), 1);
    llvm::AllocaInst* mem =
        entry_alloca(llvm::ArrayType::get(scalar, scalars), kBufferAlignment, buffer->name);
    uint64_t size = module_.getDataLayout().getTypeAllocSize(mem->getAllocatedType());
    b_.CreateLifetimeStart(mem, b_.getInt64(size));
    bind(buffer->data, mem);
    emit(op->body);
    unbind(buffer->data);
    b_.CreateLifetimeEnd(mem, b_.getInt64(size));
    return;
  }

  // Workspace memory: the size in bytes, at least one so that a NULL result always means failure.
  llvm::Type* i64_ty = b_.getInt64Ty();
  llvm::Value* nbytes = b_.getInt64(elem_bytes);
  for (const ir::Expr& dim : buffer->shape) {
    nbytes = b_.CreateMul(nbytes, int_cast(emit(dim), dim.type(), i64_ty));
  }
  nbytes = b_.CreateBinaryIntrinsic(llvm::Intrinsic::umax, nbytes, b_.getInt64(1));
  llvm::Value* mem = call_runtime(RuntimeFn::kWorkspaceAlloc, {nbytes});
  mem->setName(buffer->name);
  emit_check(b_.CreateIsNotNull(mem), [&] {
    emit_set_error(str(kernel_, ": cannot allocate workspace memory for buffer '", buffer->name,
                       "' (AnvilWorkspaceAlloc failed)"));
  });
  fs_.workspaces.push_back(mem);
  bind(buffer->data, mem);
  emit(op->body);
  unbind(buffer->data);
  fs_.workspaces.pop_back();
  call_runtime(RuntimeFn::kWorkspaceFree, {mem});
}

}  // namespace anvil::codegen::llvm_backend
