// Expressions of the C code generator: one C expression per IR expression (per lane for
// vectors), with only the parentheses C's precedence needs.
#include <charconv>
#include <cmath>
#include <iterator>
#include <limits>

#include "anvil/codegen/c/c_emitter.h"
#include "anvil/ir/op.h"
#include "anvil/ir/printer.h"
#include "anvil/ir/substitute.h"

namespace anvil::codegen::c {

using namespace ir;

namespace {

// Helper functions whose C operators have other semantics (or none): floor division and
// modulus of signed integers, and min/max (for floats, NaN propagates, as in the IR; fminf
// would return the other operand).
std::string helper_definition(Dialect dialect, const std::string& kind, DataType t,
                              const std::string& name) {
  std::string ty = c_type(t, "helper");
  std::string s = helper_prefix(dialect) + ty + " " + name + "(" + ty + " a, " + ty + " b) {\n";
  if (kind == "floordiv") {
    s += "  " + ty + " q = a / b;\n";
    s += "  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;\n";
  } else if (kind == "floormod") {
    s += "  " + ty + " r = a % b;\n";
    s += "  return (r != 0 && (r < 0) != (b < 0)) ? r + b : r;\n";
  } else if (t.is_float()) {
    s += std::string("  return (a ") + (kind == "min" ? "<" : ">") + " b || a != a) ? a : b;\n";
  } else {
    s += std::string("  return a ") + (kind == "min" ? "<" : ">") + " b ? a : b;\n";
  }
  return s + "}\n";
}

}  // namespace

CExpr FunctionEmitter::int_literal(DataType t, int64_t value) const {
  std::string digits = std::to_string(value);
  int prec = value < 0 ? kUnary : kPostfix;
  if (t.is_bool()) return {value ? "1" : "0", kPostfix};
  if (t.bits() == 64) {
    // long long is at least 64 bits everywhere (long is not).
    if (value == std::numeric_limits<int64_t>::min())
      return {"(-9223372036854775807LL - 1)", kPostfix};
    return {digits + (t.is_int() ? "LL" : "ULL"), prec};
  }
  if (t.is_uint() && t.bits() == 32) return {digits + "u", kPostfix};
  if (t.bits() == 32 && value == std::numeric_limits<int32_t>::min())
    return {"(-2147483647 - 1)", kPostfix};
  return {digits, prec};  // int32, and narrower types (C computes in int anyway)
}

CExpr FunctionEmitter::float_literal(DataType t, double value) const {
  if (std::isnan(value)) return {"NAN", kPostfix};
  if (std::isinf(value))
    return {value > 0 ? "INFINITY" : "-INFINITY", value > 0 ? kPostfix : kUnary};
  char buffer[64];
  bool single = t.bits() == 32;
  std::to_chars_result r = single
                               ? std::to_chars(buffer, std::end(buffer), static_cast<float>(value))
                               : std::to_chars(buffer, std::end(buffer), value);
  std::string s(buffer, r.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  if (single) s += "f";
  return {s, s[0] == '-' ? kUnary : kPostfix};
}

CExpr FunctionEmitter::expr(const Expr& e, const CExpr* lane) {
  ANVIL_ICHECK(e.defined(), "undefined expression");
  DataType t = e.type();
  ANVIL_ICHECK(t.is_scalar() || lane != nullptr, "vector expression outside a lane loop: ", e);
  if (!t.is_handle()) c_type(t, kernel_context(func_.name) + "expression " + to_string(e));
  // Scalar subexpressions never depend on the lane.
  const CExpr* vlane = t.is_vector() ? lane : nullptr;
  switch (e.node_type()) {
    case IRNodeType::IntImm:
      return int_literal(t, e.as<IntImm>()->value);
    case IRNodeType::FloatImm:
      return float_literal(t, e.as<FloatImm>()->value);
    case IRNodeType::Variable: {
      const Variable* v = e.as<Variable>();
      if (auto it = buffers_.find(v); it != buffers_.end()) return {it->second.name, kPostfix};
      const std::string& name = var_name(v);
      return t.is_vector() ? CExpr{name + "[" + vlane->text + "]", kPostfix}
                           : CExpr{name, kPostfix};
    }
    case IRNodeType::Cast: {
      const Cast* op = e.as<Cast>();
      CExpr x = expr(op->value, vlane);
      if (op->value.type() == t) return x;
      if (t.is_bool()) return {paren(x, kEquality + 1) + " != 0", kEquality};
      return {"(" + c_type(t, "cast") + ")" + paren(x, kUnary), kUnary};
    }
#define ANVIL_C_ARITH(Node, op, prec) \
  case IRNodeType::Node:              \
    return arith(e, op, prec, vlane);
      ANVIL_C_ARITH(Add, "+", kAdditive)
      ANVIL_C_ARITH(Sub, "-", kAdditive)
      ANVIL_C_ARITH(Mul, "*", kMultiplicative)
      ANVIL_C_ARITH(Div, "/", kMultiplicative)
#undef ANVIL_C_ARITH
    case IRNodeType::FloorDiv:
      return division(e, true, false, vlane);
    case IRNodeType::FloorMod:
      return division(e, true, true, vlane);
    case IRNodeType::TruncDiv:
      return division(e, false, false, vlane);
    case IRNodeType::TruncMod:
      return division(e, false, true, vlane);
    case IRNodeType::Min:
      return helper_call("min", e.as<Min>()->a, e.as<Min>()->b, vlane);
    case IRNodeType::Max:
      return helper_call("max", e.as<Max>()->a, e.as<Max>()->b, vlane);
#define ANVIL_C_COMPARE(Node, op, prec) \
  case IRNodeType::Node:                \
    return compare(e, op, prec, vlane);
      ANVIL_C_COMPARE(EQ, "==", kEquality)
      ANVIL_C_COMPARE(NE, "!=", kEquality)
      ANVIL_C_COMPARE(LT, "<", kRelational)
      ANVIL_C_COMPARE(LE, "<=", kRelational)
      ANVIL_C_COMPARE(GT, ">", kRelational)
      ANVIL_C_COMPARE(GE, ">=", kRelational)
#undef ANVIL_C_COMPARE
    // And and Or evaluate both sides (IR expressions are pure) on values that are 0 or 1, so
    // C's & and | are exact. They are also what GCC 12 compiles correctly: it miscompiles
    // `b && x != y` inside the short lane loops at -O3 -march=x86-64-v3 and above.
    case IRNodeType::And:
    case IRNodeType::Or: {
      bool is_and = e.node_type() == IRNodeType::And;
      Expr ea = is_and ? e.as<And>()->a : e.as<Or>()->a;
      Expr eb = is_and ? e.as<And>()->b : e.as<Or>()->b;
      int prec = is_and ? kBitAnd : kBitOr;
      // Comparisons (and & inside |) in parentheses, as compilers ask.
      auto operand = [&](const CExpr& x, bool left) {
        bool bare = x.prec >= kAdditive || (left && x.prec == prec);
        return bare ? x.text : "(" + x.text + ")";
      };
      CExpr a = expr(ea, vlane), b = expr(eb, vlane);
      return {operand(a, true) + (is_and ? " & " : " | ") + operand(b, false), prec};
    }
    case IRNodeType::Not:
      return {"!" + paren(expr(e.as<Not>()->a, vlane), kUnary), kUnary};
    case IRNodeType::Select: {
      const Select* op = e.as<Select>();
      CExpr c = expr(op->condition, vlane);
      ++conditional_;
      CExpr a = expr(op->true_value, vlane), b = expr(op->false_value, vlane);
      --conditional_;
      // A condition that is not a comparison in parentheses (clang asks for them around &).
      return {paren(c, kEquality) + " ? " + paren(a, kTernary + 1) + " : " + paren(b, kTernary + 1),
              kTernary};
    }
    case IRNodeType::Ramp:
      return ramp(e.as<Ramp>(), *vlane);
    case IRNodeType::Broadcast:
      return expr(e.as<Broadcast>()->value);
    case IRNodeType::Load:
      return load(e.as<Load>(), vlane);
    case IRNodeType::Let:
      return let(e.as<Let>(), vlane);
    case IRNodeType::Call:
      return call(e.as<Call>(), vlane);
    case IRNodeType::Reduce:
      fail("Reduce ", e, " must be lowered to loops before code generation");
    default:
      break;
  }
  ANVIL_UNREACHABLE("statement node in an expression");
}

namespace {
template <typename T>
std::pair<Expr, Expr> operands(const Expr& e) {
  const T* op = e.as<T>();
  return {op->a, op->b};
}
std::pair<Expr, Expr> binary_operands(const Expr& e) {
  switch (e.node_type()) {
    case IRNodeType::Add:
      return operands<Add>(e);
    case IRNodeType::Sub:
      return operands<Sub>(e);
    case IRNodeType::Mul:
      return operands<Mul>(e);
    case IRNodeType::Div:
      return operands<Div>(e);
    case IRNodeType::FloorDiv:
      return operands<FloorDiv>(e);
    case IRNodeType::FloorMod:
      return operands<FloorMod>(e);
    case IRNodeType::TruncDiv:
      return operands<TruncDiv>(e);
    case IRNodeType::TruncMod:
      return operands<TruncMod>(e);
    case IRNodeType::EQ:
      return operands<EQ>(e);
    case IRNodeType::NE:
      return operands<NE>(e);
    case IRNodeType::LT:
      return operands<LT>(e);
    case IRNodeType::LE:
      return operands<LE>(e);
    case IRNodeType::GT:
      return operands<GT>(e);
    case IRNodeType::GE:
      return operands<GE>(e);
    default:
      ANVIL_UNREACHABLE("not a binary node: ", e);
  }
}
}  // namespace

CExpr FunctionEmitter::arith(const Expr& e, const char* op, int prec, const CExpr* lane) {
  auto [a, b] = binary_operands(e);
  DataType t = e.type();
  CExpr x = expr(a, lane), y = expr(b, lane);
  // uint16 * uint16 is computed in (signed) int by C and can overflow it.
  if (t.is_uint() && t.bits() == 16 && std::string(op) == "*") {
    return {
        "(uint16_t)((uint32_t)" + paren(x, kUnary) + " * " + paren(y, kMultiplicative + 1) + ")",
        kUnary};
  }
  std::string text = paren(x, prec) + " " + op + " " + paren(y, prec + 1);
  // C computes narrow integers in int: wrap the result back to the IR's type.
  if (is_narrow_int(t)) return {"(" + c_type(t, "") + ")(" + text + ")", kUnary};
  return {text, prec};
}

CExpr FunctionEmitter::compare(const Expr& e, const char* op, int prec, const CExpr* lane) {
  auto [a, b] = binary_operands(e);
  CExpr x = expr(a, lane), y = expr(b, lane);
  return {paren(x, kRelational + 1) + " " + op + " " + paren(y, kRelational + 1), prec};
}

CExpr FunctionEmitter::helper_call(const std::string& kind, const Expr& a, const Expr& b,
                                   const CExpr* lane) {
  DataType t = a.type().element_of();
  std::string name = "anvil_" + kind + "_" + type_suffix(t);
  if (!module_.helpers.count(name))
    module_.helpers[name] = helper_definition(module_.dialect, kind, t, name);
  CExpr x = expr(a, lane), y = expr(b, lane);
  return {name + "(" + x.text + ", " + y.text + ")", kPostfix};
}

CExpr FunctionEmitter::division(const Expr& e, bool floor, bool mod, const CExpr* lane) {
  auto [a, b] = binary_operands(e);
  // Unsigned division rounds down already; truncating division is C's own.
  if (floor && e.type().is_int()) return helper_call(mod ? "floormod" : "floordiv", a, b, lane);
  return arith(e, mod ? "%" : "/", kMultiplicative, lane);
}

CExpr FunctionEmitter::ramp(const Ramp* op, const CExpr& lane) {
  DataType t = op->type.element_of();
  CExpr base = expr(op->base), stride = expr(op->stride);
  if (is_zero(op->stride)) return base;
  CExpr offset =
      is_one(op->stride)
          ? lane
          : CExpr{paren(lane, kMultiplicative) + " * " + paren(stride, kMultiplicative + 1),
                  kMultiplicative};
  CExpr r;
  if (is_zero(op->base)) {
    // The lane counter is an int32_t; give the offset the ramp's type.
    r = t == DataType::Int32() || !is_one(op->stride)
            ? offset
            : CExpr{"(" + c_type(t, "ramp") + ")" + paren(offset, kUnary), kUnary};
  } else {
    r = {paren(base, kAdditive) + " + " + paren(offset, kAdditive + 1), kAdditive};
  }
  if (is_narrow_int(t)) return {"(" + c_type(t, "ramp") + ")(" + r.text + ")", kUnary};
  return r;
}

std::pair<CExpr, std::string> FunctionEmitter::element_lane(int elem_lanes,
                                                            const CExpr& lane) const {
  if (elem_lanes == 1) return {lane, ""};
  std::string n = std::to_string(elem_lanes);
  return {{paren(lane, kMultiplicative) + " / " + n, kMultiplicative},
          paren(lane, kMultiplicative) + " % " + n};
}

CExpr FunctionEmitter::load(const Load* op, const CExpr* lane) {
  const BufferInfo& info = buffer(op->buffer, "Load");
  int elem_lanes = info.dtype.lanes();
  const Expr& index = op->indices[0];
  if (lane && conditional_ == 0 && !op->predicate.defined()) {
    // One vector load before the statement (IR expressions are pure; the statement's C
    // evaluates this load unconditionally anyway).
    if (std::optional<std::string> address = vector_address(info, index, op->type.lanes())) {
      std::string name = names_.fresh(info.name + "_vec");
      hoist_vector_load(name, op->type, *address);
      return {name + "[" + lane->text + "]", kPostfix};
    }
  }
  // Under a mask, C reads the address only where the mask is set.
  if (op->predicate.defined()) ++conditional_;
  std::string address;
  CExpr index_lane;
  if (elem_lanes == 1) {
    address = expr(index, lane).text;
    if (lane) index_lane = *lane;
  } else {
    // Vector elements: lane L is scalar L % n of element index[L / n].
    auto [outer, sub] = element_lane(elem_lanes, *lane);
    index_lane = outer;
    CExpr i = expr(index, &index_lane);
    if (op->type.lanes() == elem_lanes) sub = lane->text;  // one element: lane < n
    address = paren(i, kMultiplicative) + " * " + std::to_string(elem_lanes) + " + " + sub;
  }
  CExpr value{info.name + "[" + address + "]", kPostfix};
  if (info.dtype.is_bool()) value = {value.text + " != 0", kEquality};
  if (!op->predicate.defined()) return value;
  --conditional_;
  // A masked-off lane reads no memory.
  CExpr p = expr(op->predicate, &index_lane);
  CExpr zero = op->type.is_float() ? float_literal(op->type, 0.0) : CExpr{"0", kPostfix};
  return {paren(p, kEquality) + " ? " + paren(value, kTernary + 1) + " : " + zero.text, kTernary};
}

void FunctionEmitter::hoist(const std::string& name, const Expr& value) {
  DataType t = value.type();
  if (t.is_handle()) {
    prelude_.push_back("void* const " + name + " = " + expr(value).text + ";");
  } else if (t.is_scalar()) {
    CExpr v = expr(value);
    prelude_.push_back("const " + c_type(t, name) + " " + name + " = " + v.text + ";");
  } else {
    CExpr lane{"lane", kPostfix};
    CExpr v = expr(value, &lane);
    std::string n = std::to_string(t.lanes());
    prelude_.push_back(c_type(t, name) + " " + name + "[" + n + "];");
    prelude_.push_back("for (int32_t lane = 0; lane < " + n + "; ++lane) " + name +
                       "[lane] = " + v.text + ";");
  }
}

CExpr FunctionEmitter::let(const Let* op, const CExpr* lane) {
  if (!uses_var(op->body, op->var.get())) return expr(op->body, lane);
  std::string name = names_.fresh(op->var->name);
  hoist(name, op->value);
  SavedName saved = bind(op->var.get(), name);
  CExpr body = expr(op->body, lane);
  restore(saved);
  return body;
}

CExpr FunctionEmitter::call(const Call* op, const CExpr* lane) {
  DataType t = op->type;
  if (is_int8_dot(op->op)) {
    // acc + a[0] * b[4 * lane] + ... + a[3] * b[4 * lane + 3], a pair at a time (each pair
    // saturated to int16 for dot_u8s8_sat16): the products fit int32, the sum wraps as in the
    // other back ends (unsigned, so that C does not call it undefined).
    CExpr first = lane ? *lane : CExpr{"0", kPostfix};
    auto product = [&](int j) {
      CExpr a_lane{std::to_string(j), kPostfix};
      CExpr b_lane{"4 * " + paren(first, kMultiplicative) + " + " + std::to_string(j), kAdditive};
      return "(int32_t)" + paren(expr(op->args[1], &a_lane), kUnary) + " * (int32_t)" +
             paren(expr(op->args[2], &b_lane), kUnary);
    };
    std::string text = "(uint32_t)" + paren(expr(op->args[0], lane), kUnary);
    for (int j = 0; j < 4; j += 2) {
      std::string pair = "(" + product(j) + " + " + product(j + 1) + ")";
      if (op->op == Intrinsic::kDotU8S8Sat16) {
        pair = "(" + pair + " < -32768 ? -32768 : " + pair + " > 32767 ? 32767 : " + pair + ")";
      }
      text += " + (uint32_t)" + pair;
    }
    return {"(int32_t)(" + text + ")", kUnary};
  }
  // OpenCL C's math functions are overloaded by type; C and CUDA name the float ones with an f.
  bool opencl = module_.dialect == Dialect::kOpenCL;
  std::string suffix = t.bits() == 32 && !opencl ? "f" : "";
  std::vector<CExpr> args;
  for (const Expr& a : op->args) args.push_back(expr(a, lane));
  auto fn = [&](const char* name) {
    std::string s = name + suffix + "(";
    for (size_t i = 0; i < args.size(); ++i) s += (i ? ", " : "") + args[i].text;
    return CExpr{s + ")", kPostfix};
  };
  std::string one = float_literal(t, 1.0).text;
  switch (op->op) {
    case Intrinsic::kRsqrt:
      return {one + " / " + fn("sqrt").text, kMultiplicative};
    case Intrinsic::kSigmoid:
      return {one + " / (" + one + " + exp" + suffix + "(-" + paren(args[0], kPostfix) + "))",
              kMultiplicative};
    case Intrinsic::kRound:
      // Halves to even, as ONNX Round and the LLVM backend (OpenCL's rint rounds so too).
      return fn(opencl ? "rint" : "nearbyint");
    default:
      return fn(intrinsic_name(op->op));
  }
}

}  // namespace anvil::codegen::c
