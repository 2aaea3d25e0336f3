// C spelling of types, names and literals for the C code generator.
#include <cctype>
#include <string>

#include "anvil/codegen/c/c_emitter.h"
#include "anvil/support/error.h"

namespace anvil::codegen::c {

using ir::DataType;

std::string paren(const CExpr& e, int min_prec) {
  return e.prec < min_prec ? "(" + e.text + ")" : e.text;
}

std::string kernel_context(const std::string& kernel) {
  return "C code generation of kernel '" + kernel + "': ";
}

std::string c_type(DataType t, std::string_view what) {
  switch (t.code()) {
    case DataType::Code::kInt:
      return "int" + std::to_string(t.bits()) + "_t";
    case DataType::Code::kUInt:
      return "uint" + std::to_string(t.bits()) + "_t";
    case DataType::Code::kFloat:
      if (t.bits() == 32) return "float";
      if (t.bits() == 64) return "double";
      break;
    case DataType::Code::kBool:
      return "_Bool";
    case DataType::Code::kHandle:
      return "void*";
    case DataType::Code::kBFloat:
      break;
  }
  ANVIL_FAIL(what, " has type ", t, ", which C code generation does not support (float32 and ",
             "float64 only)");
}

std::string c_storage_type(DataType t, std::string_view what) {
  return t.is_bool() ? "uint8_t" : c_type(t, what);
}

std::string type_suffix(DataType t) {
  switch (t.code()) {
    case DataType::Code::kInt:
      return "i" + std::to_string(t.bits());
    case DataType::Code::kUInt:
      return "u" + std::to_string(t.bits());
    default:
      return "f" + std::to_string(t.bits());
  }
}

bool is_narrow_int(DataType t) {
  return t.is_int_or_uint() && t.bits() < 32;
}

std::string c_string(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size(); ++i) {
    char ch = s[i];
    unsigned char u = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (ch == '\n') {
      out += "\\n";
    } else if (ch == '?' && i > 0 && s[i - 1] == '?') {
      out += "\\?";  // no trigraph can form (-std=c99 enables them)
    } else if (u < 0x20 || u >= 0x7f) {
      out += '\\';
      out += static_cast<char>('0' + ((u >> 6) & 7));
      out += static_cast<char>('0' + ((u >> 3) & 7));
      out += static_cast<char>('0' + (u & 7));
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

std::string c_comment(std::string_view s) {
  // No line breaks, and no "*/" (which would end the comment) or "/*" (which compilers warn of).
  std::string out;
  for (char ch : s) {
    bool pair =
        !out.empty() && ((out.back() == '*' && ch == '/') || (out.back() == '/' && ch == '*'));
    if (pair) out += ' ';
    out += ch == '\n' ? ' ' : ch;
  }
  return out;
}

namespace {

// Keywords, the types, functions and macros the generated file declares, includes or calls.
const std::unordered_set<std::string>& reserved_names() {
  static const std::unordered_set<std::string> names = {
      // C99 keywords and GNU ones
      "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
      "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
      "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef",
      "union", "unsigned", "void", "volatile", "while", "asm", "typeof", "bool", "true", "false",
      // types and macros of the included headers
      "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t",
      "intptr_t", "uintptr_t", "size_t", "ptrdiff_t", "wchar_t", "max_align_t", "float_t",
      "double_t", "div_t", "ldiv_t", "lldiv_t", "NULL", "INFINITY", "NAN", "HUGE_VAL", "HUGE_VALF",
      "errno", "offsetof", "assert", "main",
      // math functions the generated code calls
      "exp", "expf", "exp2", "exp2f", "log", "logf", "log2", "log2f", "sqrt", "sqrtf", "tanh",
      "tanhf", "erf", "erff", "pow", "powf", "fabs", "fabsf", "floor", "floorf", "ceil", "ceilf",
      "round", "roundf", "nearbyint", "nearbyintf", "trunc", "truncf", "fma", "fmaf", "sin", "sinf",
      "cos", "cosf", "tan", "tanf", "asin", "asinf", "acos", "acosf", "atan", "atanf", "sinh",
      "sinhf", "cosh", "coshf", "asinh", "asinhf", "acosh", "acoshf", "atanh", "atanhf", "fmod",
      "fmodf", "isnan", "isinf", "signbit", "fmin", "fmax", "fminf", "fmaxf", "abs", "memcpy",
      "memset", "malloc", "free",
      // GPU vector types and the functions that load, store and make them
      "float2", "float4", "int2", "int4", "uint2", "uint4", "make_float2", "make_float4",
      "make_int2", "make_int4", "make_uint2", "make_uint4", "vload2", "vload4", "vstore2",
      "vstore4",
      // the kernel ABI
      "args", "nargs", "ctx", "lane", "begin", "end", "closure", "captured"};
  return names;
}

bool has_prefix(const std::string& s, std::string_view prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

bool is_reserved_name(const std::string& name) {
  if (reserved_names().count(name)) return true;
  // Our own helpers and runtime, DLPack, and the identifiers C reserves for the implementation.
  if (has_prefix(name, "anvil_") || has_prefix(name, "Anvil") || has_prefix(name, "ANVIL") ||
      has_prefix(name, "DL") || has_prefix(name, "kDL") || has_prefix(name, "__"))
    return true;
  if (name.size() >= 2 && name[0] == '_' && std::isupper(static_cast<unsigned char>(name[1])))
    return true;
  // Anything spelled like a macro (INT32_MAX, FP_NAN, M_PI): the headers define many.
  bool macro_like = true, has_upper = false;
  for (char ch : name) {
    if (std::islower(static_cast<unsigned char>(ch))) macro_like = false;
    if (std::isupper(static_cast<unsigned char>(ch))) has_upper = true;
  }
  return macro_like && has_upper && name.find('_') != std::string::npos;
}

bool is_c_identifier(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char ch : name) {
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_')) return false;
  }
  return true;
}

std::string NameTable::fresh(std::string_view hint) {
  std::string base;
  for (char ch : hint) {
    bool ok = std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
    base += ok ? ch : '_';
  }
  if (base.empty() || std::isdigit(static_cast<unsigned char>(base[0]))) base = "v" + base;
  if (is_reserved_name(base)) base += "_";
  std::string name = base;
  for (int k = 1; used_.count(name) || is_reserved_name(name); ++k) {
    name = base + "_" + std::to_string(k);
  }
  used_.insert(name);
  return name;
}

std::string NameTable::fresh_global(std::string_view hint, std::set<std::string>& globals) {
  std::string name = fresh(hint);
  while (globals.count(name)) name = fresh(hint);
  globals.insert(name);
  return name;
}

}  // namespace anvil::codegen::c
