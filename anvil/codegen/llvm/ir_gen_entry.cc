// The kernel entry and its ABI: types, runtime declarations, argument checks, shape binding,
// and the failure exits every check shares.
#include <dlpack/dlpack.h>
#include <llvm/IR/MDBuilder.h>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <set>

#include "anvil/codegen/llvm/ir_gen.h"
#include "anvil/ir/op.h"
#include "anvil/ir/printer.h"
#include "anvil/ir/visitor.h"
#include "anvil/support/error.h"

namespace anvil::codegen::llvm_backend {

using ir::DataType;

namespace {

// DLPack has no bool code in the version we build against; later versions use 6, as DataType
// does. A bool element occupies one byte.
constexpr uint8_t kBoolTypeCode = 6;

bool is_identifier(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

// The data variables of every buffer allocated inside a body.
class AllocationCollector : public ir::IRVisitor {
 public:
  using ir::IRVisitor::visit;
  std::vector<const ir::Variable*> data;
  std::vector<std::string> names;
  void visit(const ir::Allocate* op) override {
    data.push_back(op->buffer->data.get());
    names.push_back(op->buffer->name);
    ir::IRVisitor::visit(op);
  }
};

}  // namespace

IRGen::IRGen(llvm::Module& module, CodegenOptions options)
    : ctx_(module.getContext()), module_(module), options_(std::move(options)), b_(ctx_) {
  // DESIGN.md: contract, reassociate and approximate functions; never assume NaN or Inf away.
  llvm::FastMathFlags fmf;
  fmf.setAllowContract();
  fmf.setAllowReassoc();
  fmf.setApproxFunc();
  b_.setFastMathFlags(fmf);
}

void IRGen::fail(const std::string& message) const {
  ANVIL_FAIL("LLVM code generation of kernel '", kernel_, "': ", message);
}

llvm::Type* IRGen::type_of(DataType t) {
  llvm::Type* scalar = nullptr;
  switch (t.code()) {
    case DataType::Code::kInt:
    case DataType::Code::kUInt:
      scalar = b_.getIntNTy(t.bits());
      break;
    case DataType::Code::kBool:
      scalar = b_.getInt1Ty();
      break;
    case DataType::Code::kFloat:
      if (t.bits() == 16) scalar = b_.getHalfTy();
      if (t.bits() == 32) scalar = b_.getFloatTy();
      if (t.bits() == 64) scalar = b_.getDoubleTy();
      if (!scalar) fail(str("no LLVM type for ", t));
      break;
    case DataType::Code::kBFloat:
      fail(str("bfloat16 (", t, ") is not supported by the LLVM back end; cast to float32"));
    case DataType::Code::kHandle:
      scalar = b_.getPtrTy();
      break;
  }
  if (t.is_vector()) return llvm::FixedVectorType::get(scalar, t.lanes());
  return scalar;
}

llvm::Type* IRGen::storage_type_of(DataType t) {
  if (t.is_bool()) return type_of(DataType::UInt(8, t.lanes()));
  return type_of(t);
}

llvm::Value* IRGen::int_cast(llvm::Value* v, DataType from, llvm::Type* to) {
  return b_.CreateIntCast(v, to, from.is_int());
}

llvm::Constant* IRGen::string_constant(const std::string& text) {
  auto it = strings_.find(text);
  if (it != strings_.end()) return it->second;
  llvm::Constant* c = b_.CreateGlobalStringPtr(text, ".str", 0, &module_);
  strings_.emplace(text, c);
  return c;
}

llvm::FunctionCallee IRGen::runtime_function(RuntimeFn fn) {
  llvm::Type* ptr = b_.getPtrTy();
  llvm::Type* i8 = b_.getInt8Ty();
  llvm::Type* i16 = b_.getInt16Ty();
  llvm::Type* i32 = b_.getInt32Ty();
  llvm::Type* i64 = b_.getInt64Ty();
  llvm::Type* void_ty = b_.getVoidTy();
  const char* name = nullptr;
  llvm::FunctionType* type = nullptr;
  std::vector<unsigned> zext_params;
  switch (fn) {
    case RuntimeFn::kCheckArgCount:
      name = "AnvilCheckArgCount";
      type = llvm::FunctionType::get(i32, {ptr, i32, i32}, false);
      break;
    case RuntimeFn::kCheckTensor:
      name = "AnvilCheckTensor";
      type = llvm::FunctionType::get(i32, {ptr, ptr, i32, ptr, i32, ptr, i8, i8, i16}, false);
      zext_params = {6, 7, 8};
      break;
    case RuntimeFn::kCheckDim:
      name = "AnvilCheckDim";
      type = llvm::FunctionType::get(i32, {ptr, i32, ptr, i32, ptr, i64, i64}, false);
      break;
    case RuntimeFn::kSetLastError:
      name = "AnvilSetLastError";
      type = llvm::FunctionType::get(void_ty, {ptr}, false);
      break;
    case RuntimeFn::kParallelFor:
      name = "AnvilParallelFor";
      type = llvm::FunctionType::get(i32, {i64, ptr, ptr}, false);
      break;
    case RuntimeFn::kWorkspaceAlloc:
      name = "AnvilWorkspaceAlloc";
      type = llvm::FunctionType::get(ptr, {i64}, false);
      break;
    case RuntimeFn::kWorkspaceFree:
      name = "AnvilWorkspaceFree";
      type = llvm::FunctionType::get(void_ty, {ptr}, false);
      break;
  }
  llvm::FunctionCallee callee = module_.getOrInsertFunction(name, type);
  if (auto* f = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
    f->addFnAttr(llvm::Attribute::NoUnwind);
    // The C ABI extends narrow integer arguments; say so, as clang does.
    for (unsigned p : zext_params) f->addParamAttr(p, llvm::Attribute::ZExt);
  }
  return callee;
}

llvm::CallInst* IRGen::call_runtime(RuntimeFn fn, std::vector<llvm::Value*> args) {
  return b_.CreateCall(runtime_function(fn), args);
}

llvm::Function* IRGen::new_function(const std::string& name, llvm::FunctionType* type,
                                    llvm::GlobalValue::LinkageTypes linkage) {
  llvm::Function* f = llvm::Function::Create(type, linkage, name, module_);
  f->addFnAttr(llvm::Attribute::NoUnwind);
  if (!options_.cpu.empty()) f->addFnAttr("target-cpu", options_.cpu);
  if (!options_.features.empty()) f->addFnAttr("target-features", options_.features);
  return f;
}

llvm::AllocaInst* IRGen::entry_alloca(llvm::Type* type, uint64_t align, const std::string& name) {
  llvm::IRBuilder<> entry(fs_.entry, fs_.entry->getFirstInsertionPt());
  llvm::AllocaInst* a = entry.CreateAlloca(type, nullptr, name);
  a->setAlignment(llvm::Align(align));
  return a;
}

void IRGen::emit_set_error(const std::string& message) {
  call_runtime(RuntimeFn::kSetLastError, {string_constant(message)});
}

void IRGen::emit_return_failure() {
  for (auto it = fs_.workspaces.rbegin(); it != fs_.workspaces.rend(); ++it) {
    call_runtime(RuntimeFn::kWorkspaceFree, {*it});
  }
  b_.CreateRet(i32(-1));
}

void IRGen::emit_check(llvm::Value* ok, const std::function<void()>& on_failure) {
  llvm::BasicBlock* fail_bb = llvm::BasicBlock::Create(ctx_, "fail", fs_.function);
  llvm::BasicBlock* ok_bb = llvm::BasicBlock::Create(ctx_, "ok", fs_.function);
  b_.CreateCondBr(ok, ok_bb, fail_bb, llvm::MDBuilder(ctx_).createBranchWeights(1u << 20, 1));
  b_.SetInsertPoint(fail_bb);
  if (on_failure) on_failure();
  emit_return_failure();
  b_.SetInsertPoint(ok_bb);
}

void IRGen::bind(const ir::Var& var, llvm::Value* value, const ir::Expr& value_expr) {
  vars_[var.get()] = value;
  if (value_expr.defined() && var.type().is_int_or_uint() && var.type().is_scalar()) {
    bounds_[var.get()] = arith::bounds_of(value_expr, bounds_);
    modular_[var.get()] = arith::modular_set_of(value_expr, modular_);
  }
}

void IRGen::unbind(const ir::Var& var) {
  vars_.erase(var.get());
  bounds_.erase(var.get());
  modular_.erase(var.get());
}

void IRGen::create_alias_scopes(const ir::LoweredFunc& func) {
  std::vector<const ir::Variable*> data;
  std::vector<std::string> names;
  for (const ir::Buffer& arg : func.args) {
    data.push_back(arg->data.get());
    names.push_back(arg->name);
  }
  AllocationCollector allocations;
  allocations.visit(func.body);
  data.insert(data.end(), allocations.data.begin(), allocations.data.end());
  names.insert(names.end(), allocations.names.begin(), allocations.names.end());

  llvm::MDBuilder md(ctx_);
  llvm::MDNode* domain = md.createAnonymousAliasScopeDomain(kernel_);
  std::vector<llvm::MDNode*> scopes;
  for (const std::string& name : names)
    scopes.push_back(md.createAnonymousAliasScope(domain, name));
  for (size_t i = 0; i < data.size(); ++i) {
    std::vector<llvm::Metadata*> others;
    for (size_t j = 0; j < data.size(); ++j) {
      if (j != i) others.push_back(scopes[j]);
    }
    AliasInfo info;
    info.scope = llvm::MDNode::get(ctx_, {scopes[i]});
    if (!others.empty()) info.noalias = llvm::MDNode::get(ctx_, others);
    alias_[data[i]] = info;
  }
}

void IRGen::emit_argument_checks(const ir::LoweredFunc& func, llvm::Value* args,
                                 llvm::Value* nargs) {
  llvm::Value* name = string_constant(kernel_);
  int n = static_cast<int>(func.args.size());
  llvm::Value* rc = call_runtime(RuntimeFn::kCheckArgCount, {name, nargs, i32(n)});
  emit_check(b_.CreateICmpEQ(rc, i32(0)));
  for (int i = 0; i < n; ++i) {
    const ir::Buffer& buf = func.args[i];
    std::vector<llvm::Constant*> dims;
    for (const ir::Expr& dim : buf->shape) {
      std::optional<int64_t> c = ir::as_const_int(dim);
      if (c && *c < 0) fail(str("argument '", buf->name, "' has a negative dimension ", *c));
      dims.push_back(b_.getInt64(static_cast<uint64_t>(c ? *c : -1)));
    }
    llvm::Constant* shape = llvm::ConstantPointerNull::get(b_.getPtrTy());
    if (!dims.empty()) {
      auto* array_ty = llvm::ArrayType::get(b_.getInt64Ty(), dims.size());
      shape = new llvm::GlobalVariable(module_, array_ty, true, llvm::GlobalValue::PrivateLinkage,
                                       llvm::ConstantArray::get(array_ty, dims),
                                       kernel_ + "." + buf->name + ".shape");
    }
    DataType dt = buf->dtype;
    uint8_t code = dt.is_bool() ? kBoolTypeCode : static_cast<uint8_t>(dt.code());
    uint8_t bits = static_cast<uint8_t>(dt.is_bool() ? 8 : dt.bits());
    rc = call_runtime(RuntimeFn::kCheckTensor,
                      {name, args, i32(i), string_constant(buf->name), i32(buf.ndim()), shape,
                       b_.getInt8(code), b_.getInt8(bits), b_.getInt16(dt.lanes())});
    emit_check(b_.CreateICmpEQ(rc, i32(0)));
  }
}

void IRGen::bind_arguments(const ir::LoweredFunc& func, llvm::Value* args) {
  llvm::Type* ptr_ty = b_.getPtrTy();
  llvm::Type* i8 = b_.getInt8Ty();
  llvm::Type* i64_ty = b_.getInt64Ty();
  llvm::Value* name = string_constant(kernel_);
  struct Pending {
    int arg, dim;
    llvm::Value* got;
  };
  std::vector<Pending> composite;
  for (int i = 0; i < static_cast<int>(func.args.size()); ++i) {
    const ir::Buffer& buf = func.args[i];
    llvm::Value* tensor = b_.CreateLoad(ptr_ty, b_.CreateConstInBoundsGEP1_64(ptr_ty, args, i),
                                        buf->name + ".tensor");
    auto field = [&](size_t offset) { return b_.CreateConstInBoundsGEP1_64(i8, tensor, offset); };
    llvm::Value* data = b_.CreateLoad(ptr_ty, field(offsetof(DLTensor, data)));
    llvm::Value* offset = b_.CreateLoad(i64_ty, field(offsetof(DLTensor, byte_offset)));
    llvm::Value* base = b_.CreateInBoundsGEP(i8, data, offset, buf->name);
    // AnvilCheckTensor guarantees the alignment.
    b_.CreateAlignmentAssumption(module_.getDataLayout(), base, kArgumentAlignment);
    bind(buf->data, base);
    if (buf.ndim() == 0) continue;
    llvm::Value* shape = b_.CreateLoad(ptr_ty, field(offsetof(DLTensor, shape)));
    for (int d = 0; d < buf.ndim(); ++d) {
      const ir::Expr& dim = buf->shape[d];
      if (ir::is_const(dim)) continue;
      llvm::Value* got = b_.CreateLoad(i64_ty, b_.CreateConstInBoundsGEP1_64(i64_ty, shape, d));
      const ir::Variable* var = dim.as<ir::Variable>();
      if (!var) {
        composite.push_back({i, d, got});
        continue;
      }
      auto bound = vars_.find(var);
      if (bound != vars_.end()) {
        llvm::Value* expected = int_cast(bound->second, var->type, i64_ty);
        llvm::Value* rc =
            call_runtime(RuntimeFn::kCheckDim, {name, i32(i), string_constant(buf->name), i32(d),
                                                string_constant(var->name), got, expected});
        emit_check(b_.CreateICmpEQ(rc, i32(0)));
        continue;
      }
      // The first occurrence binds the variable; it must hold the extent exactly.
      llvm::Type* var_ty = type_of(var->type);
      llvm::Value* value = b_.CreateTrunc(got, var_ty, var->name);
      if (var->type.bits() < 64) {
        llvm::Value* fits = b_.CreateICmpEQ(int_cast(value, var->type, i64_ty), got);
        emit_check(fits, [&] {
          emit_set_error(str(kernel_, ": argument ", i, " ('", buf->name, "'): shape[", d,
                             "] does not fit the ", var->type, " variable '", var->name, "'"));
        });
      }
      bind(ir::Var(var), value);
      // Extents are never negative.
      bounds_[var] = {0, var->type.max_value()};
    }
  }
  // Shapes given by expressions of bound variables are checked once every variable is bound.
  for (const Pending& p : composite) {
    const ir::Buffer& buf = func.args[p.arg];
    const ir::Expr& dim = buf->shape[p.dim];
    llvm::Value* expected = int_cast(emit(dim), dim.type(), i64_ty);
    llvm::Value* rc = call_runtime(RuntimeFn::kCheckDim,
                                   {name, i32(p.arg), string_constant(buf->name), i32(p.dim),
                                    string_constant(str(dim)), p.got, expected});
    emit_check(b_.CreateICmpEQ(rc, i32(0)));
  }
}

void IRGen::add_kernel(const ir::LoweredFunc& func) {
  kernel_ = func.name;
  if (!is_identifier(func.name)) fail("the kernel name must be a C identifier");
  if (module_.getNamedValue(func.name)) fail("the module already defines this name");
  if (!func.body.defined()) fail("the body is undefined");
  std::set<const ir::Variable*> seen;
  for (const ir::Buffer& arg : func.args) {
    if (!arg.defined()) fail("an argument buffer is undefined");
    if (!seen.insert(arg->data.get()).second) {
      fail(str("argument '", arg->name, "' is passed twice"));
    }
  }

  llvm::Type* ptr = b_.getPtrTy();
  auto* type = llvm::FunctionType::get(b_.getInt32Ty(), {ptr, b_.getInt32Ty(), ptr}, false);
  llvm::Function* f = new_function(func.name, type, llvm::GlobalValue::ExternalLinkage);
  llvm::Argument* args = f->getArg(0);
  llvm::Argument* nargs = f->getArg(1);
  args->setName("args");
  nargs->setName("nargs");
  f->getArg(2)->setName("ctx");

  vars_.clear();
  bounds_.clear();
  modular_.clear();
  alias_.clear();
  parallel_count_ = 0;
  fs_ = FunctionState{f, llvm::BasicBlock::Create(ctx_, "entry", f), {}};
  b_.SetInsertPoint(fs_.entry);

  create_alias_scopes(func);
  emit_argument_checks(func, args, nargs);
  bind_arguments(func, args);
  emit(func.body);
  b_.CreateRet(i32(0));
  fs_ = FunctionState{};
  vars_.clear();
}

void IRGen::add_module_version(int32_t version) {
  auto* gv =
      new llvm::GlobalVariable(module_, b_.getInt32Ty(), true, llvm::GlobalValue::ExternalLinkage,
                               b_.getInt32(static_cast<uint32_t>(version)), "anvil_module_version");
  gv->setAlignment(llvm::Align(4));
}

}  // namespace anvil::codegen::llvm_backend
