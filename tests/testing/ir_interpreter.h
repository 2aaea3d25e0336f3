// An interpreter of loop-level IR for tests: runs a statement over named buffers so that a pass
// can be checked by running a program before and after it on the same inputs.
//
// Memory is keyed by a buffer's `data` variable, so a multi-dimensional buffer and its flattened
// view (which keeps the data variable) share storage. A multi-dimensional access is laid out
// row-major, or by the buffer's explicit strides, and each index is checked against its
// dimension; every access is checked against the storage. Memory an Allocate creates is poisoned:
// reading an element that was never written throws.
//
// Values are doubles, one per lane: integers and bools exactly (an integer result past 2^53
// throws; types narrower than 64 bits wrap like the hardware), float32 rounded to float after every
// operation. floordiv/floormod round toward -inf, truncdiv/truncmod toward zero; division by zero
// throws. Loops of every kind run serially; a masked-off lane of a predicated load reads 0 and
// touches no memory; a masked-off lane of a predicated store writes nothing. A failed
// AssertStmt throws AssertionFailure with its message; anything the interpreter cannot run
// (a Reduce, a buffer of vector elements, an out-of-bounds access) throws InterpreterError.
//
// Written without reference to anvil/arith, so that it is an independent oracle for passes that
// use the simplifier.
#pragma once

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "anvil/ir/printer.h"
#include "anvil/ir/stmt.h"

namespace anvil::testing {

class InterpreterError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class AssertionFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class IRInterpreter {
 public:
  using Lanes = std::vector<double>;

  // Gives `buffer` (by its data variable) the memory `data`.
  void bind(const ir::Buffer& buffer, std::vector<double> data) {
    memory_[buffer->data.get()] = std::move(data);
  }
  // The memory of `buffer` (by its data variable).
  std::vector<double>& memory(const ir::Buffer& buffer) {
    auto it = memory_.find(buffer->data.get());
    if (it == memory_.end()) fail("no memory for buffer '", buffer->name, "'");
    return it->second;
  }
  // Binds a free scalar variable (a symbolic shape, a parameter).
  void set(const ir::Var& var, double value) { env_[var.get()] = {value}; }

  // Executed Store lanes and Load lanes (masked-off lanes do not count).
  int64_t stores() const { return stores_; }
  int64_t loads() const { return loads_; }

  // The number of elements `buffer` spans: the product of its shape, or its strided footprint.
  int64_t footprint(const ir::Buffer& buffer) {
    const ir::BufferNode& b = *buffer;
    int64_t size = 1;
    if (b.strides.empty()) {
      for (const ir::Expr& e : b.shape) size *= scalar_int(e);
      return size;
    }
    for (size_t d = 0; d < b.shape.size(); ++d) {
      int64_t n = scalar_int(b.shape[d]);
      if (n == 0) return 0;
      size += (n - 1) * scalar_int(b.strides[d]);
    }
    return size;
  }

  void run(const ir::Stmt& s) { exec(s); }

  Lanes eval(const ir::Expr& e) {
    using namespace ir;
    DataType t = e.type();
    switch (e.node_type()) {
      case IRNodeType::IntImm:
        return {static_cast<double>(e.as<IntImm>()->value)};
      case IRNodeType::FloatImm:
        return {normalize(t, e.as<FloatImm>()->value)};
      case IRNodeType::Variable: {
        auto it = env_.find(e.as<Variable>());
        if (it == env_.end()) fail("unbound variable '", e.as<Variable>()->name, "'");
        return it->second;
      }
      case IRNodeType::Cast: {
        const Cast* op = e.as<Cast>();
        Lanes v = eval(op->value);
        DataType from = op->value.type();
        for (double& x : v) {
          if (from.is_float() && (t.is_int_or_uint())) {
            if (!std::isfinite(x)) fail("cast of ", x, " to ", t);
            x = std::trunc(x);
          }
          x = normalize(t, x);
        }
        return v;
      }
      case IRNodeType::Add:
        return arith(e, [](double a, double b) { return a + b; });
      case IRNodeType::Sub:
        return arith(e, [](double a, double b) { return a - b; });
      case IRNodeType::Mul:
        return arith(e, [](double a, double b) { return a * b; });
      case IRNodeType::Div:
        return arith(e, [](double a, double b) { return a / b; });
      case IRNodeType::FloorDiv:
        return arith(e, [](double a, double b) { return int_div(a, b, true); });
      case IRNodeType::FloorMod:
        return arith(e, [](double a, double b) { return int_mod(a, b, true); });
      case IRNodeType::TruncDiv:
        return arith(e, [](double a, double b) { return int_div(a, b, false); });
      case IRNodeType::TruncMod:
        return arith(e, [](double a, double b) { return int_mod(a, b, false); });
      case IRNodeType::Min:
        return arith(e, [](double a, double b) { return std::fmin(a, b); });
      case IRNodeType::Max:
        return arith(e, [](double a, double b) { return std::fmax(a, b); });
      case IRNodeType::EQ:
        return arith(e, [](double a, double b) { return (a == b) ? 1.0 : 0.0; });
      case IRNodeType::NE:
        return arith(e, [](double a, double b) { return (a != b) ? 1.0 : 0.0; });
      case IRNodeType::LT:
        return arith(e, [](double a, double b) { return (a < b) ? 1.0 : 0.0; });
      case IRNodeType::LE:
        return arith(e, [](double a, double b) { return (a <= b) ? 1.0 : 0.0; });
      case IRNodeType::GT:
        return arith(e, [](double a, double b) { return (a > b) ? 1.0 : 0.0; });
      case IRNodeType::GE:
        return arith(e, [](double a, double b) { return (a >= b) ? 1.0 : 0.0; });
      case IRNodeType::And:
        return arith(e, [](double a, double b) { return (a != 0 && b != 0) ? 1.0 : 0.0; });
      case IRNodeType::Or:
        return arith(e, [](double a, double b) { return (a != 0 || b != 0) ? 1.0 : 0.0; });
      case IRNodeType::Not: {
        Lanes v = eval(e.as<Not>()->a);
        for (double& x : v) x = x == 0;
        return v;
      }
      case IRNodeType::Select: {
        const Select* op = e.as<Select>();
        Lanes c = eval(op->condition), a = eval(op->true_value), b = eval(op->false_value);
        for (size_t i = 0; i < a.size(); ++i) {
          if (lane(c, i) == 0) a[i] = b[i];
        }
        return a;
      }
      case IRNodeType::Ramp: {
        const Ramp* op = e.as<Ramp>();
        double base = eval(op->base)[0], stride = eval(op->stride)[0];
        Lanes v(op->lanes);
        for (int i = 0; i < op->lanes; ++i) v[i] = normalize(t, base + i * stride);
        return v;
      }
      case IRNodeType::Broadcast: {
        const Broadcast* op = e.as<Broadcast>();
        return Lanes(op->lanes, eval(op->value)[0]);
      }
      case IRNodeType::Load:
        return load(e.as<Load>());
      case IRNodeType::Let: {
        const Let* op = e.as<Let>();
        Binding bound(env_, op->var.get(), eval(op->value));
        return eval(op->body);
      }
      case IRNodeType::Call:
        return call(e.as<Call>());
      case IRNodeType::Reduce:
        fail("cannot interpret a Reduce: ", e);
      default:
        fail("not an expression node");
    }
  }

 private:
  // Binds a variable for one scope, restoring what it had before.
  class Binding {
   public:
    Binding(std::unordered_map<const ir::Variable*, Lanes>& env, const ir::Variable* var,
            Lanes value)
        : env_(env), var_(var) {
      if (auto it = env_.find(var); it != env_.end()) saved_ = it->second;
      env_[var] = std::move(value);
    }
    ~Binding() {
      if (saved_) {
        env_[var_] = *saved_;
      } else {
        env_.erase(var_);
      }
    }
    Binding(const Binding&) = delete;
    Binding& operator=(const Binding&) = delete;

   private:
    std::unordered_map<const ir::Variable*, Lanes>& env_;
    const ir::Variable* var_;
    std::optional<Lanes> saved_;
  };

  static constexpr uint64_t kPoisonBits = 0x7ffc0de00000deadull;

  template <typename... Args>
  [[noreturn]] static void fail(const Args&... args) {
    std::ostringstream os;
    (os << ... << args);
    throw InterpreterError(os.str());
  }

  static double lane(const Lanes& v, size_t i) { return v.size() == 1 ? v[0] : v[i]; }
  static double poison() { return std::bit_cast<double>(kPoisonBits); }
  static bool is_poison(double v) { return std::bit_cast<uint64_t>(v) == kPoisonBits; }

  // The value v as type t holds it.
  static double normalize(ir::DataType t, double v) {
    if (t.is_float()) return t.bits() == 64 ? v : static_cast<double>(static_cast<float>(v));
    if (t.is_bool()) return v != 0 ? 1 : 0;
    if (t.is_int_or_uint()) {
      if (!std::isfinite(v) || std::fabs(v) > 0x1p53) {
        fail("integer value ", v, " is outside the interpreter's exact range");
      }
      int64_t x = static_cast<int64_t>(v);
      if (t.bits() < 64) {
        uint64_t mask = (uint64_t{1} << t.bits()) - 1;
        uint64_t u = static_cast<uint64_t>(x) & mask;
        if (t.is_int() && (u >> (t.bits() - 1)) != 0) {
          x = static_cast<int64_t>(u) - static_cast<int64_t>(uint64_t{1} << t.bits());
        } else {
          x = static_cast<int64_t>(u);
        }
      }
      return static_cast<double>(x);
    }
    fail("values of type ", t, " are not supported");
  }

  int64_t scalar_int(const ir::Expr& e) {
    Lanes v = eval(e);
    if (v.size() != 1) fail("expected a scalar: ", e);
    return static_cast<int64_t>(v[0]);
  }

  // The operands of a binary node.
  static std::pair<ir::Expr, ir::Expr> operands(const ir::Expr& e) {
    using namespace ir;
    switch (e.node_type()) {
#define ANVIL_INTERP_BINARY(name) \
  case IRNodeType::name:          \
    return {e.as<name>()->a, e.as<name>()->b};
      ANVIL_INTERP_BINARY(Add)
      ANVIL_INTERP_BINARY(Sub)
      ANVIL_INTERP_BINARY(Mul)
      ANVIL_INTERP_BINARY(Div)
      ANVIL_INTERP_BINARY(FloorDiv)
      ANVIL_INTERP_BINARY(FloorMod)
      ANVIL_INTERP_BINARY(TruncDiv)
      ANVIL_INTERP_BINARY(TruncMod)
      ANVIL_INTERP_BINARY(Min)
      ANVIL_INTERP_BINARY(Max)
      ANVIL_INTERP_BINARY(EQ)
      ANVIL_INTERP_BINARY(NE)
      ANVIL_INTERP_BINARY(LT)
      ANVIL_INTERP_BINARY(LE)
      ANVIL_INTERP_BINARY(GT)
      ANVIL_INTERP_BINARY(GE)
      ANVIL_INTERP_BINARY(And)
      ANVIL_INTERP_BINARY(Or)
#undef ANVIL_INTERP_BINARY
      default:
        fail("not a binary node");
    }
  }

  // A lane-wise binary operation; the result is normalized to the node's type.
  template <typename F>
  Lanes arith(const ir::Expr& e, F fn) {
    auto [ea, eb] = operands(e);
    Lanes a = eval(ea), b = eval(eb);
    for (size_t i = 0; i < a.size(); ++i) a[i] = normalize(e.type(), fn(a[i], lane(b, i)));
    return a;
  }

  // Integer division of exact integers: rounding toward -inf (floor) or toward zero.
  static double int_div(double a, double b, bool floor) {
    if (b == 0) fail("integer division by zero");
    int64_t x = static_cast<int64_t>(a), y = static_cast<int64_t>(b);
    int64_t q = x / y;
    if (floor && x % y != 0 && ((x < 0) != (y < 0))) --q;
    return static_cast<double>(q);
  }
  static double int_mod(double a, double b, bool floor) {
    return a - int_div(a, b, floor) * b;
  }

  Lanes call(const ir::Call* op) {
    using ir::Intrinsic;
    std::vector<Lanes> args;
    for (const ir::Expr& a : op->args) args.push_back(eval(a));
    Lanes out(args[0].size());
    if (ir::is_int8_dot(op->op)) {
      const bool sat16 = op->op == Intrinsic::kDotU8S8Sat16;
      for (size_t i = 0; i < out.size(); ++i) {
        double r = args[0][i];
        for (size_t j = 0; j < 4; j += 2) {
          double pair = args[1][j] * args[2][4 * i + j] + args[1][j + 1] * args[2][4 * i + j + 1];
          r += sat16 ? std::clamp(pair, -32768.0, 32767.0) : pair;
        }
        out[i] = normalize(op->type, r);
      }
      return out;
    }
    for (size_t i = 0; i < out.size(); ++i) {
      double x = args[0][i];
      double r = 0;
      switch (op->op) {
        case Intrinsic::kExp:
          r = std::exp(x);
          break;
        case Intrinsic::kExp2:
          r = std::exp2(x);
          break;
        case Intrinsic::kLog:
          r = std::log(x);
          break;
        case Intrinsic::kLog2:
          r = std::log2(x);
          break;
        case Intrinsic::kSqrt:
          r = std::sqrt(x);
          break;
        case Intrinsic::kRsqrt:
          r = 1 / std::sqrt(x);
          break;
        case Intrinsic::kTanh:
          r = std::tanh(x);
          break;
        case Intrinsic::kSigmoid:
          r = 1 / (1 + std::exp(-x));
          break;
        case Intrinsic::kErf:
          r = std::erf(x);
          break;
        case Intrinsic::kPow:
          r = std::pow(x, args[1][i]);
          break;
        case Intrinsic::kFabs:
          r = std::fabs(x);
          break;
        case Intrinsic::kFloor:
          r = std::floor(x);
          break;
        case Intrinsic::kCeil:
          r = std::ceil(x);
          break;
        case Intrinsic::kRound:
          r = std::nearbyint(x);
          break;
        case Intrinsic::kTrunc:
          r = std::trunc(x);
          break;
        case Intrinsic::kFma:
          r = std::fma(x, args[1][i], args[2][i]);
          break;
        case Intrinsic::kSin:
          r = std::sin(x);
          break;
        case Intrinsic::kCos:
          r = std::cos(x);
          break;
        case Intrinsic::kTan:
          r = std::tan(x);
          break;
        case Intrinsic::kAsin:
          r = std::asin(x);
          break;
        case Intrinsic::kAcos:
          r = std::acos(x);
          break;
        case Intrinsic::kAtan:
          r = std::atan(x);
          break;
        case Intrinsic::kSinh:
          r = std::sinh(x);
          break;
        case Intrinsic::kCosh:
          r = std::cosh(x);
          break;
        case Intrinsic::kAsinh:
          r = std::asinh(x);
          break;
        case Intrinsic::kAcosh:
          r = std::acosh(x);
          break;
        case Intrinsic::kAtanh:
          r = std::atanh(x);
          break;
        case Intrinsic::kFmod:
          r = std::fmod(x, args[1][i]);
          break;
        case Intrinsic::kDotU8S8:
        case Intrinsic::kDotU8S8Sat16:
          break;  // above
      }
      out[i] = normalize(op->type, r);
    }
    return out;
  }

  // The element offset of lane `i` of an access, checked against the buffer's dimensions and
  // its memory.
  int64_t offset(const ir::Buffer& buffer, const std::vector<Lanes>& indices, size_t i,
                 size_t memory_size) {
    const ir::BufferNode& b = *buffer;
    int nd = static_cast<int>(b.shape.size());
    std::vector<int64_t> strides(nd);
    if (!b.strides.empty()) {
      for (int d = 0; d < nd; ++d) strides[d] = scalar_int(b.strides[d]);
    } else {
      int64_t s = 1;
      for (int d = nd - 1; d >= 0; --d) {
        strides[d] = s;
        s *= scalar_int(b.shape[d]);
      }
    }
    int64_t off = 0;
    for (int d = 0; d < nd; ++d) {
      int64_t x = static_cast<int64_t>(lane(indices[d], i));
      int64_t extent = scalar_int(b.shape[d]);
      if (x < 0 || x >= extent) {
        fail("index ", x, " of dimension ", d, " of '", b.name, "' is outside [0, ", extent, ")");
      }
      off += x * strides[d];
    }
    if (off < 0 || off >= static_cast<int64_t>(memory_size)) {
      fail("offset ", off, " of '", b.name, "' is outside its memory of ", memory_size,
           " elements");
    }
    return off;
  }

  void check_elements(const ir::Buffer& buffer) {
    if (buffer->dtype.is_vector()) fail("buffers of vector elements are not supported");
  }

  Lanes load(const ir::Load* op) {
    check_elements(op->buffer);
    std::vector<Lanes> indices;
    for (const ir::Expr& e : op->indices) indices.push_back(eval(e));
    Lanes pred = op->predicate.defined() ? eval(op->predicate) : Lanes{1};
    int lanes = op->type.lanes();
    std::vector<double>& mem = memory(op->buffer);
    Lanes out(lanes, 0);
    for (int i = 0; i < lanes; ++i) {
      if (lane(pred, i) == 0) continue;
      double v = mem[offset(op->buffer, indices, i, mem.size())];
      if (is_poison(v)) {
        fail("read of an element of '", op->buffer->name, "' that was never written");
      }
      out[i] = v;
      ++loads_;
    }
    return out;
  }

  void store(const ir::Store* op) {
    check_elements(op->buffer);
    Lanes value = eval(op->value);
    std::vector<Lanes> indices;
    for (const ir::Expr& e : op->indices) indices.push_back(eval(e));
    Lanes pred = op->predicate.defined() ? eval(op->predicate) : Lanes{1};
    std::vector<double>& mem = memory(op->buffer);
    for (size_t i = 0; i < value.size(); ++i) {
      if (lane(pred, i) == 0) continue;
      mem[offset(op->buffer, indices, i, mem.size())] = value[i];
      ++stores_;
    }
  }

  void exec(const ir::Stmt& s) {
    using namespace ir;
    if (!s.defined()) return;
    switch (s.node_type()) {
      case IRNodeType::LetStmt: {
        const LetStmt* op = s.as<LetStmt>();
        Binding bound(env_, op->var.get(), eval(op->value));
        exec(op->body);
        return;
      }
      case IRNodeType::AttrStmt:
        exec(s.as<AttrStmt>()->body);
        return;
      case IRNodeType::AssertStmt: {
        const AssertStmt* op = s.as<AssertStmt>();
        if (eval(op->condition)[0] == 0) throw AssertionFailure(op->message);
        exec(op->body);
        return;
      }
      case IRNodeType::Store:
        store(s.as<Store>());
        return;
      case IRNodeType::Allocate: {
        const Allocate* op = s.as<Allocate>();
        check_elements(op->buffer);
        // The memory lives for the body only, even when the body throws.
        struct Scope {
          std::unordered_map<const Variable*, std::vector<double>>& memory;
          const Variable* data;
          std::optional<std::vector<double>> saved;
          ~Scope() {
            if (saved) {
              memory[data] = std::move(*saved);
            } else {
              memory.erase(data);
            }
          }
        } scope{memory_, op->buffer->data.get(), std::nullopt};
        if (auto it = memory_.find(scope.data); it != memory_.end()) {
          scope.saved = std::move(it->second);
        }
        memory_[scope.data] = std::vector<double>(footprint(op->buffer), poison());
        exec(op->body);
        return;
      }
      case IRNodeType::For: {
        const For* op = s.as<For>();
        int64_t min = scalar_int(op->min), extent = scalar_int(op->extent);
        Binding bound(env_, op->var.get(), {0});
        for (int64_t i = min; i < min + extent; ++i) {
          env_[op->var.get()] = {static_cast<double>(i)};
          exec(op->body);
        }
        return;
      }
      case IRNodeType::IfThenElse: {
        const IfThenElse* op = s.as<IfThenElse>();
        if (eval(op->condition)[0] != 0) {
          exec(op->then_case);
        } else {
          exec(op->else_case);
        }
        return;
      }
      case IRNodeType::Seq:
        for (const Stmt& x : s.as<Seq>()->stmts) exec(x);
        return;
      case IRNodeType::Evaluate:
        eval(s.as<Evaluate>()->value);
        return;
      case IRNodeType::Barrier:
        return;
      default:
        fail("not a statement node");
    }
  }

  std::unordered_map<const ir::Variable*, Lanes> env_;
  std::unordered_map<const ir::Variable*, std::vector<double>> memory_;
  int64_t stores_ = 0, loads_ = 0;
};

// Random contents for a buffer of `dtype`: small integers for integer types (exactly
// representable, so sums stay exact), 0/1 for bools, float32-exact values for floats.
inline std::vector<double> random_contents(ir::DataType dtype, int64_t size, std::mt19937& rng) {
  std::vector<double> data(size);
  std::uniform_int_distribution<int> small(-20, 20);
  for (double& x : data) {
    if (dtype.is_bool()) {
      x = small(rng) > 0;
    } else if (dtype.is_uint()) {
      x = small(rng) + 20;
    } else if (dtype.is_int()) {
      x = small(rng);
    } else {
      x = small(rng) / 4.0;  // exact in float16/32/64
    }
  }
  return data;
}

// Scalar variables the programs read (symbolic shapes, parameters) and their values.
using VarValues = std::vector<std::pair<ir::Var, int64_t>>;

// Runs `before` and `after` from the same random contents of `buffers` (seeded) and checks that
// both finish and leave every buffer with the same contents, element by element (NaN equals
// NaN). A throw of either program, or of `before` alone, is a failure.
inline ::testing::AssertionResult same_behavior(const ir::Stmt& before, const ir::Stmt& after,
                                                const std::vector<ir::Buffer>& buffers,
                                                const VarValues& vars = {}, uint32_t seed = 1) {
  std::mt19937 rng(seed);
  IRInterpreter a, b;
  for (const auto& [var, value] : vars) {
    a.set(var, static_cast<double>(value));
    b.set(var, static_cast<double>(value));
  }
  for (const ir::Buffer& buf : buffers) {
    std::vector<double> data = random_contents(buf->dtype, a.footprint(buf), rng);
    a.bind(buf, data);
    b.bind(buf, data);
  }
  auto run = [](IRInterpreter& interp, const ir::Stmt& s, const char* which) -> std::string {
    try {
      interp.run(s);
    } catch (const std::exception& e) {
      return std::string(which) + " failed: " + e.what() + "\n" + ir::to_string(s);
    }
    return "";
  };
  if (std::string err = run(a, before, "the program before the pass"); !err.empty()) {
    return ::testing::AssertionFailure() << err;
  }
  if (std::string err = run(b, after, "the program after the pass"); !err.empty()) {
    return ::testing::AssertionFailure() << err << "\nbefore the pass:\n" << before;
  }
  for (const ir::Buffer& buf : buffers) {
    const std::vector<double>& x = a.memory(buf);
    const std::vector<double>& y = b.memory(buf);
    for (size_t i = 0; i < x.size(); ++i) {
      bool same = x[i] == y[i] || (std::isnan(x[i]) && std::isnan(y[i]));
      if (!same) {
        return ::testing::AssertionFailure()
               << "buffer '" << buf->name << "' differs at element " << i << ": " << x[i]
               << " before the pass, " << y[i] << " after\nbefore:\n"
               << before << "after:\n"
               << after;
      }
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace anvil::testing
