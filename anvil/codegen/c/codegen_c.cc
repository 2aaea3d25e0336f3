// C code generation: the module around the kernels, each kernel's entry (argument checks,
// symbolic shapes, data pointers), and building the source into a loadable library.
#include "anvil/codegen/c/codegen_c.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "anvil/codegen/c/c_emitter.h"
#include "anvil/ir/op.h"
#include "anvil/ir/printer.h"

namespace anvil::codegen {

namespace c {

using namespace ir;

namespace {

// Declarations of the runtime functions (anvil/runtime/c_runtime_api.h), so that the generated
// file needs no Anvil header.
const std::pair<const char*, const char*> kRuntimeDeclarations[] = {
    {"AnvilSetLastError", "void AnvilSetLastError(const char* message);"},
    {"AnvilCheckArgCount",
     "int32_t AnvilCheckArgCount(const char* kernel, int32_t nargs, int32_t expected);"},
    {"AnvilCheckTensor",
     "int32_t AnvilCheckTensor(const char* kernel, const DLTensor* const* args, int32_t index,\n"
     "                         const char* name, int32_t ndim, const int64_t* expected_shape,\n"
     "                         uint8_t dtype_code, uint8_t dtype_bits, uint16_t dtype_lanes);"},
    {"AnvilCheckDeviceTensor",
     "int32_t AnvilCheckDeviceTensor(const char* kernel, const DLTensor* const* args,\n"
     "                               int32_t index, const char* name, int32_t ndim,\n"
     "                               const int64_t* expected_shape, uint8_t dtype_code,\n"
     "                               uint8_t dtype_bits, uint16_t dtype_lanes,\n"
     "                               int32_t device_type);"},
    {"AnvilDeviceLaunch",
     "typedef struct {\n  uint32_t grid[3];\n  uint32_t block[3];\n  uint32_t shared_bytes;\n"
     "} AnvilLaunchDims;\n"
     "int32_t AnvilDeviceLaunch(void* ctx, const char* name, const AnvilLaunchDims* dims,\n"
     "                          int32_t nargs, const DLTensor* const* args);"},
    {"AnvilDeviceWorkspaceAlloc", "void* AnvilDeviceWorkspaceAlloc(void* ctx, uint64_t nbytes);"},
    {"AnvilDeviceWorkspaceFree", "void AnvilDeviceWorkspaceFree(void* ctx, void* data);"},
    {"AnvilCheckDim",
     "int32_t AnvilCheckDim(const char* kernel, int32_t index, const char* name, int32_t dim,\n"
     "                      const char* var, int64_t got, int64_t expected);"},
    {"AnvilParallelFor",
     "int32_t AnvilParallelFor(int64_t extent, int32_t (*body)(int64_t, int64_t, void*),\n"
     "                         void* closure);"},
    {"AnvilWorkspaceAlloc", "void* AnvilWorkspaceAlloc(uint64_t nbytes);"},
    {"AnvilWorkspaceFree", "void AnvilWorkspaceFree(void* ptr);"},
};

// The part of DLPack's ABI (dlpack.h) the generated code uses, declared in it so that the source
// compiles with nothing but the C library: a GPU machine's host compiler need not have DLPack's
// header. The layout is DLPack's (stable since its version 0.2); the runtime passes its own
// DLTensors through.
const char kDLPackDeclarations[] =
    "/* DLPack's tensor (dlpack.h), as the Anvil runtime passes it. */\n"
    "typedef enum { kDLCPU = 1, kDLCUDA = 2, kDLOpenCL = 4 } DLDeviceType;\n"
    "typedef enum { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4 } DLDataTypeCode;\n"
    "typedef struct {\n  DLDeviceType device_type;\n  int32_t device_id;\n} DLDevice;\n"
    "typedef struct {\n  uint8_t code;\n  uint8_t bits;\n  uint16_t lanes;\n} DLDataType;\n"
    "typedef struct {\n  void* data;\n  DLDevice device;\n  int32_t ndim;\n  DLDataType dtype;\n"
    "  int64_t* shape;\n  int64_t* strides;\n  uint64_t byte_offset;\n} DLTensor;\n\n";

// The DLPack type code by its name in dlpack.h (whose version here predates kDLBool).
std::string dl_code(DataType t) {
  switch (t.code()) {
    case DataType::Code::kInt:
      return "kDLInt";
    case DataType::Code::kUInt:
      return "kDLUInt";
    case DataType::Code::kFloat:
      return "kDLFloat";
    case DataType::Code::kBFloat:
      return "kDLBfloat";
    case DataType::Code::kBool:
      return "6 /* bool */";
    case DataType::Code::kHandle:
      break;
  }
  return std::to_string(static_cast<int>(t.code()));
}

std::string signature(const LoweredFunc& f) {
  std::string s = f.name + "(";
  for (size_t i = 0; i < f.args.size(); ++i) {
    const Buffer& b = f.args[i];
    s += (i ? ", " : "") + b->name + ": " + b->dtype.to_string() + "[";
    for (size_t d = 0; d < b->shape.size(); ++d) s += (d ? ", " : "") + to_string(b->shape[d]);
    s += "]";
  }
  return s + ")";
}

}  // namespace

FunctionEmitter::FunctionEmitter(ModuleContext& module, const LoweredFunc& func)
    : module_(module), func_(func), names_(module.globals) {}

void FunctionEmitter::emit() {
  ANVIL_CHECK(func_.body.defined(), kernel_context(func_.name), "the body is undefined");
  std::string text;
  out_ = &text;
  line("/* " + c_comment(signature(func_)) + " */");
  open("ANVIL_EXPORT int32_t " + func_.name +
       "(const DLTensor* const* args, int32_t nargs, void* ctx)");
  line("(void)ctx;");
  emit_entry_checks();
  line("");
  visit(func_.body);
  line("return 0;");
  close();
  line("");
  module_.functions += text;
}

void FunctionEmitter::emit_entry_checks() {
  const std::vector<Buffer>& args = func_.args;
  const std::string kernel = c_string(func_.name);
  module_.runtime.insert("AnvilCheckArgCount");
  line("if (AnvilCheckArgCount(" + kernel + ", nargs, " + std::to_string(args.size()) +
       ") != 0) return -1;");

  std::vector<const Variable*> used_list = free_variables(func_.body);
  std::unordered_set<const Variable*> used(used_list.begin(), used_list.end());
  std::unordered_set<const Variable*> stored = stored_buffers(func_.body);

  // Pointer names first: the arguments are what a reader looks for.
  std::vector<std::string> pointer_names(args.size());
  std::unordered_set<const Variable*> seen_data;
  for (size_t i = 0; i < args.size(); ++i) {
    ANVIL_CHECK(args[i].defined(), kernel_context(func_.name), "argument ", i, " is undefined");
    ANVIL_CHECK(seen_data.insert(args[i]->data.get()).second, kernel_context(func_.name),
                "argument ", i, " ('", args[i]->name, "') is passed twice");
    if (used.count(args[i]->data.get())) pointer_names[i] = names_.fresh(args[i]->name);
  }

  // The tensor checks, and where each symbolic dimension occurs.
  struct Dim {
    size_t arg;
    size_t dim;
  };
  std::vector<const Variable*> dim_vars;
  std::unordered_map<const Variable*, std::vector<Dim>> occurrences;
  std::vector<std::pair<Dim, Expr>> derived;  // dimensions that are expressions of variables
  std::unordered_set<const Variable*> needed;
  for (size_t i = 0; i < args.size(); ++i) {
    const Buffer& b = args[i];
    std::string what = kernel_context(func_.name) + "argument '" + b->name + "'";
    c_storage_type(b->dtype, what);
    std::string shape;
    for (size_t d = 0; d < b->shape.size(); ++d) {
      const Expr& e = b->shape[d];
      int64_t expected = -1;
      if (std::optional<int64_t> c = as_const_int(e)) {
        ANVIL_CHECK(*c >= 0, what, " has a negative extent ", *c, " in dimension ", d);
        expected = *c;
      } else if (const Variable* v = e.as<Variable>()) {
        if (!occurrences.count(v)) dim_vars.push_back(v);
        occurrences[v].push_back({i, d});
      } else {
        derived.push_back({{i, d}, e});
        for (const Variable* v : free_variables(e)) needed.insert(v);
      }
      shape += (d ? ", " : "") + std::to_string(expected);
    }
    DataType t = b->dtype;
    std::string shape_arg = b->shape.empty() ? "NULL" : "(const int64_t[]){" + shape + "}";
    std::string check = device_type_ ? "AnvilCheckDeviceTensor" : "AnvilCheckTensor";
    module_.runtime.insert(check);
    line("if (" + check + "(" + kernel + ", args, " + std::to_string(i) + ", " + c_string(b->name) +
         ", " + std::to_string(b->shape.size()) + ", " + shape_arg + ", " + dl_code(t) + ", " +
         std::to_string(t.bytes() * 8) + ", " + std::to_string(t.lanes()) +
         (device_type_ ? ", " + std::to_string(device_type_) : "") + ") != 0) return -1;");
  }

  // Symbolic dimensions: the first occurrence binds the variable, later ones must agree.
  auto shape_of = [](const Dim& at) {
    return "args[" + std::to_string(at.arg) + "]->shape[" + std::to_string(at.dim) + "]";
  };
  auto check_dim = [&](const Dim& at, const std::string& label, const std::string& expected) {
    module_.runtime.insert("AnvilCheckDim");
    line("if (AnvilCheckDim(" + kernel + ", " + std::to_string(at.arg) + ", " +
         c_string(args[at.arg]->name) + ", " + std::to_string(at.dim) + ", " + c_string(label) +
         ", " + shape_of(at) + ", " + expected + ") != 0) return -1;");
  };
  for (const Variable* v : dim_vars) {
    const std::vector<Dim>& at = occurrences[v];
    if (!used.count(v) && !needed.count(v) && at.size() == 1) continue;
    std::string name = names_.fresh(v->name);
    bind(v, name);
    DataType t = v->type;
    std::string ty = c_type(t, "dimension variable '" + v->name + "'");
    std::string as_int64 = name;
    if (t.bits() == 64) {
      line("const " + ty + " " + name + " = " + (t.is_int() ? "" : "(uint64_t)") + shape_of(at[0]) +
           ";");
      if (t.is_uint()) as_int64 = "(int64_t)" + name;
    } else {
      // A narrower variable must hold the extent exactly.
      line("const " + ty + " " + name + " = (" + ty + ")" + shape_of(at[0]) + ";");
      as_int64 = "(int64_t)" + name;
      check_dim(at[0], v->name + " (" + t.to_string() + ")", as_int64);
    }
    for (size_t k = 1; k < at.size(); ++k) check_dim(at[k], v->name, as_int64);
  }
  for (const auto& [at, e] : derived) {
    for (const Variable* v : free_variables(e)) {
      ANVIL_CHECK(vars_.count(v), kernel_context(func_.name), "dimension ", at.dim,
                  " of argument '", args[at.arg]->name, "' is ", e, ", but '", v->name,
                  "' is not by itself the extent of any argument dimension, so no argument ",
                  "binds it");
    }
    CExpr value = expr(e);
    flush_prelude();
    check_dim(at, to_string(e), "(int64_t)" + paren(value, kUnary));
  }

  // Data pointers of the arguments the body accesses; read-only ones are const.
  for (size_t i = 0; i < args.size(); ++i) {
    if (pointer_names[i].empty()) continue;
    const Buffer& b = args[i];
    bool read_only = !stored.count(b->data.get());
    std::string ty = (read_only ? "const " : "") + c_storage_type(b->dtype, b->name) + "*";
    std::string index = std::to_string(i);
    line(ty + " restrict " + pointer_names[i] + " = (" + ty + ")((" +
         (read_only ? "const char*" : "char*") + ")args[" + index + "]->data + args[" + index +
         "]->byte_offset);");
    buffers_[b->data.get()] =
        BufferInfo{pointer_names[i], b->dtype, ty, "argument '" + b->name + "'"};
  }
}

}  // namespace c

namespace c {

void declare_kernel_names(ModuleContext& module, const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    ANVIL_CHECK(is_c_identifier(name) && !is_reserved_name(name),
                "C code generation: kernel name '", name, "' cannot be a C function name ",
                "(it must be an identifier that C, its headers and Anvil do not reserve)");
    ANVIL_CHECK(module.globals.insert(name).second, "C code generation: two kernels are named '",
                name, "'");
  }
}

std::string assemble_module(const ModuleContext& module, const std::string& preamble,
                            const std::string& globals) {
  std::ostringstream os;
  os << preamble;
  if (!module.runtime.empty()) {
    os << "/* The Anvil runtime (anvil/runtime/c_runtime_api.h). */\n";
    for (const auto& [name, declaration] : kRuntimeDeclarations) {
      if (module.runtime.count(name)) os << declaration << "\n";
    }
    os << "\n";
  }
  os << globals;
  for (const auto& [name, definition] : module.helpers) os << definition << "\n";
  os << module.functions;
  std::string text = os.str();
  while (text.size() > 1 && text[text.size() - 2] == '\n') text.pop_back();  // one final newline
  return text;
}

std::string c_preamble(const std::vector<std::string>& kernels, bool with_math) {
  std::string s = "/* Generated by Anvil's C code generator. Kernels:";
  for (const std::string& k : kernels) s += " " + k;
  s += ". */\n";
  if (with_math) s += "#include <math.h>\n";
  s += "#include <stddef.h>\n#include <stdint.h>\n\n";
  s += kDLPackDeclarations;
  s += "#define ANVIL_EXPORT __attribute__((visibility(\"default\")))\n\n";
  return s;
}

std::string c_module_version() {
  return "ANVIL_EXPORT const int32_t anvil_module_version = " +
         std::to_string(runtime::kModuleVersion) + ";\n\n";
}

}  // namespace c

std::string generate_c(const std::vector<ir::LoweredFunc>& funcs) {
  c::ModuleContext module;
  std::vector<std::string> names;
  for (const ir::LoweredFunc& f : funcs) names.push_back(f.name);
  c::declare_kernel_names(module, names);
  for (const ir::LoweredFunc& f : funcs) c::FunctionEmitter(module, f).emit();
  return c::assemble_module(module, c::c_preamble(names), c::c_module_version());
}

namespace {

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

}  // namespace

std::string c_cpu_flags(const Target& target) {
  ANVIL_CHECK(target.triple.empty(), "target '", target.str(),
              "': the c target compiles with this machine's C compiler, for this machine; "
              "-mtriple is not supported (use an llvm target)");
  std::string flags = "-march=" + (target.mcpu.empty() ? std::string("native") : target.mcpu);
  for (const std::string& f : target.mattr) flags += (f[0] == '+' ? " -m" : " -mno-") + f.substr(1);
  return flags;
}

namespace {

runtime::Module load_c_library(const std::string& library_path) {
  try {
    return runtime::Module::load(library_path);
  } catch (const std::runtime_error& e) {
    ANVIL_FAIL("build_c: ", e.what());
  }
}

}  // namespace

std::string c_compiler() {
  if (const char* env = std::getenv("CC"); env != nullptr && *env != '\0') return env;
  // A machine set up for CUDA alone may have gcc without the cc alternative.
  const char* path = std::getenv("PATH");
  std::string dirs = path && *path ? path : "/usr/local/bin:/usr/bin:/bin";
  for (const char* name : {"cc", "gcc", "clang"}) {
    size_t begin = 0;
    while (begin <= dirs.size()) {
      size_t end = dirs.find(':', begin);
      if (end == std::string::npos) end = dirs.size();
      std::string dir = dirs.substr(begin, end - begin);
      std::string file = (dir.empty() ? std::string(".") : dir) + "/" + name;
      if (::access(file.c_str(), X_OK) == 0) return name;
      begin = end + 1;
    }
  }
  return "cc";  // none found: the compile fails naming it
}

runtime::Module build_c(const std::vector<ir::LoweredFunc>& funcs, const std::string& library_path,
                        const std::string& cpu_flags) {
  compile_c_library(generate_c(funcs), library_path, cpu_flags);
  return load_c_library(library_path);
}

runtime::Module build_c_source(const std::string& source, const std::string& library_path) {
  compile_c_library(source, library_path);
  return load_c_library(library_path);
}

void compile_c_library(const std::string& source, const std::string& library_path,
                       const std::string& cpu_flags) {
  namespace fs = std::filesystem;
  fs::path library(library_path);
  fs::path source_path = fs::path(library).replace_extension(".c");
  if (source_path == library) source_path += ".c";
  {
    std::ofstream out(source_path, std::ios::binary);
    out << source;
    out.close();
    ANVIL_CHECK(out.good(), "build_c: cannot write the C source to '", source_path.string(), "'");
  }

  // Compiled beside the library and renamed over it, so a reader never sees half a library and
  // a library loaded earlier from the same path keeps its file.
  fs::path partial = library;
  partial += ".tmp" + std::to_string(::getpid());
  std::string cc = c_compiler();
  std::string command = cc + " -O3 -std=c99 -shared -fPIC " + cpu_flags +
                        " -fno-math-errno -ffp-contract=fast -o " + shell_quote(partial.string()) +
                        " " + shell_quote(source_path.string());
  std::string output;
  int status = -1;
  if (FILE* pipe = ::popen((command + " 2>&1").c_str(), "r")) {
    char buffer[4096];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, n);
    status = ::pclose(pipe);
  }
  if (status != 0) {
    std::error_code ignored;
    fs::remove(partial, ignored);
    ANVIL_FAIL("build_c: compiling '", source_path.string(), "' failed (", command, "):\n",
               output.empty() ? "(no compiler output)" : output);
  }
  std::error_code error;
  fs::rename(partial, library, error);
  ANVIL_CHECK(!error, "build_c: cannot move the compiled library to '", library_path,
              "': ", error.message());
}

}  // namespace anvil::codegen
