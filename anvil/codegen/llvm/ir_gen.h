// IRGen: lowered functions to LLVM IR. Internal to the LLVM back end (codegen_llvm.h is the
// public face). One IRGen fills one llvm::Module; its work is split by job:
//   ir_gen_entry.cc  kernel entry and ABI: argument checks, shape binding, runtime calls, types
//   ir_gen_expr.cc   expressions, loads and stores
//   ir_gen_stmt.cc   statements: loops (serial and parallel), branches, allocation, asserts
//   ir_gen_math.cc   intrinsic calls and the fast polynomial approximations
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "anvil/arith/bound.h"
#include "anvil/arith/modular.h"
#include "anvil/ir/function.h"

namespace anvil::codegen::llvm_backend {

// Stack allocations up to this size (constant sizes only) live in the kernel's frame; larger or
// symbolic ones come from AnvilWorkspaceAlloc.
constexpr uint64_t kMaxStackAllocBytes = 64 * 1024;
// Every buffer a kernel touches is aligned to this (arguments are checked, allocations made so).
constexpr uint64_t kBufferAlignment = 64;  // the kernel's own stack buffers
// What AnvilCheckTensor guarantees of an argument (ANVIL_ARG_ALIGNMENT), and so all that a load or
// store may assume of any buffer.
constexpr uint64_t kArgumentAlignment = 16;

// The runtime entry points generated code calls (anvil/runtime/c_runtime_api.h).
enum class RuntimeFn {
  kCheckArgCount,
  kCheckTensor,
  kCheckDim,
  kSetLastError,
  kParallelFor,
  kWorkspaceAlloc,
  kWorkspaceFree,
};

struct CodegenOptions {
  std::string cpu;       // the "target-cpu" attribute of every function
  std::string features;  // the "target-features" attribute
  // The vpdpbusd widths the CPU has (dot_u8s8): 128- and 256-bit with AVX-VNNI or AVX-512 VNNI
  // and VL, 512-bit with AVX-512 VNNI. Other widths, and CPUs without, get exact generic code.
  bool vnni_256 = false;
  bool vnni_512 = false;
  // vpmaddubsw + vpmaddwd (dot_u8s8_sat16): 128-bit with SSSE3, 256 with AVX2, 512 with AVX-512 BW.
  bool pmadd_128 = false;
  bool pmadd_256 = false;
  bool pmadd_512 = false;
  // Float32 vmaxps / vminps: 128-bit with SSE, 256 with AVX, 512 with AVX-512 F.
  bool minmax_128 = false;
  bool minmax_256 = false;
  bool minmax_512 = false;
};

class IRGen {
 public:
  IRGen(llvm::Module& module, CodegenOptions options);

  // Adds the kernel `int32_t name(const DLTensor* const* args, int32_t nargs, void* ctx)`.
  // Throws anvil::Error naming the kernel and the node it cannot compile.
  void add_kernel(const ir::LoweredFunc& func);
  // Defines `const int32_t anvil_module_version = version;` (what runtime::Module::load checks).
  void add_module_version(int32_t version);

 private:
  // Where code goes now: the function being filled, its entry block (for allocas) and the
  // workspace allocations live at the insertion point, freed by every failure exit.
  struct FunctionState {
    llvm::Function* function = nullptr;
    llvm::BasicBlock* entry = nullptr;
    std::vector<llvm::Value*> workspaces;
  };
  // Scoped-noalias metadata of one buffer: its own scope, and the scopes of all the others.
  struct AliasInfo {
    llvm::MDNode* scope = nullptr;
    llvm::MDNode* noalias = nullptr;
  };

  // ---- ir_gen_entry.cc: types, runtime calls, the entry ----
  [[noreturn]] void fail(const std::string& message) const;
  llvm::Type* type_of(ir::DataType t);          // values: bool is i1
  llvm::Type* storage_type_of(ir::DataType t);  // memory: bool is i8
  llvm::Constant* string_constant(const std::string& text);
  llvm::FunctionCallee runtime_function(RuntimeFn fn);
  llvm::CallInst* call_runtime(RuntimeFn fn, std::vector<llvm::Value*> args);
  llvm::Function* new_function(const std::string& name, llvm::FunctionType* type,
                               llvm::GlobalValue::LinkageTypes linkage);
  llvm::AllocaInst* entry_alloca(llvm::Type* type, uint64_t align, const std::string& name);
  // Continues when `ok` holds; otherwise runs `on_failure` (which sets the error), frees the live
  // workspaces and returns -1.
  void emit_check(llvm::Value* ok, const std::function<void()>& on_failure = {});
  void emit_set_error(const std::string& message);
  void emit_return_failure();
  void emit_argument_checks(const ir::LoweredFunc& func, llvm::Value* args, llvm::Value* nargs);
  void bind_arguments(const ir::LoweredFunc& func, llvm::Value* args);
  void create_alias_scopes(const ir::LoweredFunc& func);
  llvm::Value* i32(int64_t v) { return b_.getInt32(static_cast<uint32_t>(v)); }
  llvm::Value* i64(int64_t v) { return b_.getInt64(static_cast<uint64_t>(v)); }
  // An integer value of IR type `from` converted to `to` (extension follows from's signedness).
  llvm::Value* int_cast(llvm::Value* v, ir::DataType from, llvm::Type* to);

  // ---- ir_gen_expr.cc ----
  llvm::Value* emit(const ir::Expr& e);
  // A scalar element index as an i64 offset for a GEP.
  llvm::Value* emit_offset(const ir::Expr& index);
#define ANVIL_IRGEN_EXPR_VISIT(name) llvm::Value* visit(const ir::name* op);
  ANVIL_FOR_EACH_EXPR_NODE(ANVIL_IRGEN_EXPR_VISIT)
#undef ANVIL_IRGEN_EXPR_VISIT
  llvm::Value* emit_floor_div_mod(const ir::Expr& a, const ir::Expr& b, bool is_mod);
  llvm::Value* emit_float_min_max(llvm::Value* a, llvm::Value* b, bool is_max);
  llvm::Value* vector_of(llvm::Value* scalar_or_vector, int lanes);
  // Memory access
  struct Access {
    llvm::Value* base = nullptr;  // the buffer's data pointer
    llvm::Type* elem = nullptr;   // storage type of one scalar element
    ir::DataType elem_type;       // its IR type
    ir::Expr index;               // in scalar elements
    int lanes = 1;                // elements accessed
    const ir::Variable* data = nullptr;
    llvm::Value* mask = nullptr;  // null: every lane
  };
  Access access_of(const char* what, const ir::Buffer& buffer, const std::vector<ir::Expr>& indices,
                   const ir::Expr& predicate);
  llvm::Align alignment_of(const ir::Expr& index, int elem_bytes) const;
  void annotate_alias(llvm::Instruction* inst, const ir::Variable* data);
  llvm::Value* to_storage(llvm::Value* v, ir::DataType t);
  llvm::Value* from_storage(llvm::Value* v, ir::DataType t);
  void emit_store(const ir::Store* op);

  // ---- ir_gen_stmt.cc ----
  void emit(const ir::Stmt& s);
  void emit_loop(const ir::Var& var, llvm::Value* begin, llvm::Value* end, const ir::Stmt& body,
                 llvm::MDNode* loop_metadata);
  void emit_parallel_for(const ir::For* op);
  void emit_allocate(const ir::Allocate* op);
  void emit_if(llvm::Value* condition, const std::function<void()>& then_case,
               const std::function<void()>& else_case);
  arith::IntBounds loop_bounds(const ir::Expr& min, const ir::Expr& extent) const;

  // ---- ir_gen_math.cc ----
  llvm::Value* emit_call(const ir::Call* op);
  // `op` on values of type t (float32 or float64; float16 is computed in float32).
  llvm::Value* emit_math(ir::Intrinsic op, const std::vector<llvm::Value*>& args, ir::DataType t);
  llvm::Value* call_intrinsic(llvm::Intrinsic::ID id, std::vector<llvm::Value*> args);
  llvm::Value* emit_dot_u8s8(llvm::Value* acc, llvm::Value* a, llvm::Value* b, int lanes,
                             bool sat16);
  llvm::Value* call_libm(const char* name, llvm::Value* x);  // lane by lane for vectors
  llvm::Value* fconst(llvm::Type* t, double v);
  llvm::Value* iconst(llvm::Type* t, int64_t v);
  llvm::Value* horner(llvm::Value* x, const std::vector<double>& coeffs);
  llvm::Value* fast_exp_f32(llvm::Value* x);
  llvm::Value* fast_tanh_f32(llvm::Value* x);
  llvm::Value* fast_sigmoid_f32(llvm::Value* x);
  llvm::Value* fast_erf_f32(llvm::Value* x);

  // Variable bindings. An integer variable bound to `value_expr` also gets its bounds and
  // modular facts, for the division and alignment analyses.
  void bind(const ir::Var& var, llvm::Value* value, const ir::Expr& value_expr = ir::Expr());
  void unbind(const ir::Var& var);
  llvm::MDNode* loop_metadata(const char* property);

  llvm::LLVMContext& ctx_;
  llvm::Module& module_;
  CodegenOptions options_;
  llvm::IRBuilder<> b_;
  std::string kernel_;
  FunctionState fs_;
  std::unordered_map<const ir::Variable*, llvm::Value*> vars_;
  arith::VarBounds bounds_;
  arith::VarModular modular_;
  std::unordered_map<const ir::Variable*, AliasInfo> alias_;
  std::map<std::string, llvm::Constant*> strings_;
  int parallel_count_ = 0;
};

}  // namespace anvil::codegen::llvm_backend
