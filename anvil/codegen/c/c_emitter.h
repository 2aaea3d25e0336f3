// Internals of the C code generator (codegen_c.h), shared by its source files.
//
// Scalars map to C scalars. Vectors are scalarized lane by lane: a vector expression is printed
// as the scalar C expression of one lane, `lane`, and the statement that consumes it (a vector
// Store, a vector let) wraps it in `for (int32_t lane = 0; lane < n; ++lane)`. A Ramp's lane is
// base + stride * lane, a Broadcast's lane is its scalar, a vector variable is an array indexed
// by the lane. The C compiler vectorizes these short loops again.
//
// Expressions in C cannot bind variables, so a Let inside an expression is hoisted: its binding
// becomes a declaration in the statement's "prelude", printed just before the statement. IR
// expressions are pure, so evaluating the binding first changes nothing.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "anvil/ir/function.h"
#include "anvil/ir/visitor.h"
#include "anvil/support/error.h"

namespace anvil::codegen::c {

// C operator precedence; higher binds tighter.
enum Prec : int {
  kTernary = 3,
  kBitOr = 6,
  kBitAnd = 8,
  kEquality = 9,
  kRelational = 10,
  kAdditive = 12,
  kMultiplicative = 13,
  kUnary = 14,
  kPostfix = 16,
};

// A C expression and how tightly its outermost operator binds.
struct CExpr {
  std::string text;
  int prec = kPostfix;
};

// The text of `e`, parenthesized when it binds looser than `min_prec`.
std::string paren(const CExpr& e, int min_prec);

// ---- C spelling of types, names and literals (c_names.cc)

// C type of a scalar value of `t`'s element type (`_Bool` for bool, `void*` for handles).
// Throws anvil::Error naming `what` for float16 and bfloat16.
std::string c_type(ir::DataType t, std::string_view what);
// C type of one element in memory: as c_type, but bool is stored as one byte (uint8_t).
std::string c_storage_type(ir::DataType t, std::string_view what);
// Suffix naming a scalar type in helper names: i32, u8, f32, f64.
std::string type_suffix(ir::DataType t);
// True for integer types narrower than C's int, whose arithmetic C performs in int.
bool is_narrow_int(ir::DataType t);

// A C string literal holding `s`.
std::string c_string(std::string_view s);
// `s` made safe inside a C block comment.
std::string c_comment(std::string_view s);

// Names that generated code must not use for its own variables (keywords, standard types,
// functions and macros it calls or includes, runtime and helper names).
bool is_reserved_name(const std::string& name);
// A valid C identifier: [A-Za-z_][A-Za-z0-9_]*.
bool is_c_identifier(std::string_view name);

// Unique, C-safe local names for one kernel and its outlined parallel bodies.
class NameTable {
 public:
  explicit NameTable(const std::set<std::string>& taken) : used_(taken.begin(), taken.end()) {}
  // `hint` sanitized into an identifier, made distinct from every name given out before.
  std::string fresh(std::string_view hint);
  // As fresh, and distinct from `globals` too; adds the name to them.
  std::string fresh_global(std::string_view hint, std::set<std::string>& globals);

 private:
  std::unordered_set<std::string> used_;
};

// ---- the module being generated

// The language emitted: C for the CPU, or a GPU kernel language (c_gpu.cc), whose kernels are
// the same C statements and expressions in a kernel function.
enum class Dialect { kC, kCUDA, kOpenCL };

struct ModuleContext {
  Dialect dialect = Dialect::kC;
  std::map<std::string, std::string> helpers;  // name -> definition, printed in name order
  std::set<std::string> runtime;               // runtime functions called (declared up front)
  std::set<std::string> globals;               // kernel and outlined function names
  std::string functions;                       // definitions, outlined bodies before their user
};

// Emits one LoweredFunc: the kernel entry, its argument checks, its body, and a static function
// for every parallel loop in it.
class FunctionEmitter : public ir::IRVisitor {
 public:
  FunctionEmitter(ModuleContext& module, const ir::LoweredFunc& func);
  void emit();  // appends the definitions to module.functions

  // ---- GPU targets (c_gpu.cc)
  // A device kernel in module.dialect (CUDA or OpenCL); `func_` holds its name, parameters and
  // body.
  void emit_device_kernel(const ir::DeviceKernel& kernel);
  // The host entry of a GPU function (C): argument checks for device tensors of `device_type`,
  // device memory for the temporaries, the launches in order.
  void emit_host_launcher(const ir::DeviceFunc& f, int device_type);

  using ir::IRVisitor::visit;

 protected:
  void visit(const ir::LetStmt* op) override;
  void visit(const ir::AttrStmt* op) override;
  void visit(const ir::AssertStmt* op) override;
  void visit(const ir::Store* op) override;
  void visit(const ir::Allocate* op) override;
  void visit(const ir::For* op) override;
  void visit(const ir::IfThenElse* op) override;
  void visit(const ir::Seq* op) override;
  void visit(const ir::Evaluate* op) override;
  void visit(const ir::Barrier* op) override;

 private:
  struct BufferInfo {
    std::string name;        // the C pointer or array
    ir::DataType dtype;      // element type (may have lanes)
    std::string pointer;     // C type of a pointer to it: "float*", "const float*"
    std::string what;        // "argument 'A'", "allocation 'T'"
    bool aligned16 = false;  // GPU: its base is 16-byte aligned (a kernel argument, shared memory)
  };
  struct SavedName {
    const ir::Variable* var;
    bool had;
    std::string previous;
  };

  template <typename... Args>
  [[noreturn]] void fail(const Args&... parts) const;

  // ---- output
  void line(const std::string& text);
  void open(const std::string& head);  // `head {` and indent
  void close();                        // dedent and `}`
  // Prints the hoisted bindings collected while printing the current statement's expressions.
  void flush_prelude();
  // Frees the live workspace allocations and returns -1.
  void fail_return();

  // ---- variables and buffers
  SavedName bind(const ir::Variable* var, const std::string& name);
  void restore(const SavedName& saved);
  const std::string& var_name(const ir::Variable* var) const;
  const BufferInfo& buffer(const ir::Buffer& b, const char* access) const;

  // ---- expressions (c_expr.cc). `lane` is the lane a vector expression is printed for.
  CExpr expr(const ir::Expr& e, const CExpr* lane = nullptr);
  CExpr int_literal(ir::DataType t, int64_t value) const;
  CExpr float_literal(ir::DataType t, double value) const;
  CExpr arith(const ir::Expr& e, const char* op, int prec, const CExpr* lane);
  CExpr compare(const ir::Expr& e, const char* op, int prec, const CExpr* lane);
  CExpr helper_call(const std::string& helper, const ir::Expr& a, const ir::Expr& b,
                    const CExpr* lane);
  CExpr division(const ir::Expr& e, bool floor, bool mod, const CExpr* lane);
  CExpr ramp(const ir::Ramp* op, const CExpr& lane);
  CExpr load(const ir::Load* op, const CExpr* lane);
  CExpr let(const ir::Let* op, const CExpr* lane);
  CExpr call(const ir::Call* op, const CExpr* lane);
  // Declares `name` holding `value` in the prelude (an array filled lane by lane for vectors).
  void hoist(const std::string& name, const ir::Expr& value);

  // ---- vector memory access on GPUs (c_gpu.cc)
  // The address `p + base` of a `lanes`-wide access to `info` that one vector load or store can
  // make (CUDA: float4 through a pointer cast; OpenCL: vload4/vstore4): 2 or 4 lanes of 32-bit
  // elements, at a dense index (a Ramp of stride 1) whose base is a multiple of the lanes, in a
  // 16-byte-aligned buffer. Empty otherwise, and always for C.
  std::optional<std::string> vector_address(const BufferInfo& info, const ir::Expr& index,
                                            int lanes);
  // Declares in the prelude an array `name` of `lanes` elements of type `t`, loaded at `address`
  // (from vector_address) with one vector load.
  void hoist_vector_load(const std::string& name, ir::DataType t, const std::string& address);
  // The statement storing the array `values` (of `lanes` elements of type `t`) at `address`
  // with one vector store.
  std::string vector_store(ir::DataType t, const std::string& address, const std::string& values);
  // The lane of an access's index for result lane `lane` of an access with `lanes` lanes per
  // element, and the element offset within it (empty for scalar elements).
  std::pair<CExpr, std::string> element_lane(int elem_lanes, const CExpr& lane) const;

  // ---- statements (c_stmt.cc)
  void emit_loop(const ir::For* op);
  void emit_parallel(const ir::For* op);
  void emit_vector_store(const ir::Store* op, const BufferInfo& info);
  // An allocation inside a GPU kernel: shared ones were declared at its top (OpenCL allows
  // local memory only at kernel scope), others are per-thread arrays.
  void visit_device_allocate(const ir::Allocate* op);
  bool store_needs_copy(const ir::Store* op) const;

  // ---- entry (codegen_c.cc)
  void emit_entry_checks();
  int device_type_ = 0;  // non-zero: the arguments are tensors on this DLPack device type

  ModuleContext& module_;
  const ir::LoweredFunc& func_;
  NameTable names_;
  std::unordered_map<const ir::Variable*, std::string> vars_;
  std::unordered_map<const ir::Variable*, BufferInfo> buffers_;
  std::string* out_ = nullptr;
  int indent_ = 0;
  std::vector<std::string> prelude_;
  // Above zero while printing what C evaluates only under a condition (a Select's values, a
  // masked load's address, a masked store's value and address): loads there stay in place
  // rather than hoisted into the prelude.
  int conditional_ = 0;
  std::vector<std::string> workspaces_;  // live AnvilWorkspaceAlloc pointers, innermost last
  std::unordered_map<const ir::Variable*, std::string> shared_names_;  // a kernel's shared arrays
};

// ---- the module around the functions (codegen_c.cc)

// Checks that the names can be C functions, distinct from each other, and reserves them.
void declare_kernel_names(ModuleContext& module, const std::vector<std::string>& names);
// `preamble`, the runtime declarations the functions use, `globals`, the helpers, the functions.
std::string assemble_module(const ModuleContext& module, const std::string& preamble,
                            const std::string& globals = "");
// A C library's preamble (the C library's headers, math.h only `with_math`; DLPack's types; the
// export macro) and its anvil_module_version. The source needs no header beyond the C library's.
std::string c_preamble(const std::vector<std::string>& kernels, bool with_math = true);
std::string c_module_version();

// Prefix of a helper function's definition in `dialect` ("static inline ..." for C).
std::string helper_prefix(Dialect dialect);

// The kernel's error context: "C code generation of kernel 'f': ".
std::string kernel_context(const std::string& kernel);

template <typename... Args>
[[noreturn]] void FunctionEmitter::fail(const Args&... parts) const {
  ANVIL_FAIL(kernel_context(func_.name), parts...);
}

// Variables used but not bound inside `s` (including buffer data variables of its loads and
// stores), ordered by creation.
std::vector<const ir::Variable*> free_variables(const ir::Stmt& s);
std::vector<const ir::Variable*> free_variables(const ir::Expr& e);
// The data variables of the buffers `s` stores to.
std::unordered_set<const ir::Variable*> stored_buffers(const ir::Stmt& s);
// True when `e` loads from memory.
bool has_load(const ir::Expr& e);

}  // namespace anvil::codegen::c
