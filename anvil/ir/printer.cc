#include "anvil/ir/printer.h"

#include <charconv>
#include <cmath>
#include <iomanip>
#include <iterator>
#include <limits>
#include <sstream>

#include "anvil/ir/visitor.h"

namespace anvil::ir {

namespace {

// Binding strength of infix operators; higher binds tighter.
enum Precedence : int {
  kLowest = 0,
  kOr = 1,
  kAnd = 2,
  kCompare = 3,
  kSum = 4,
  kProduct = 5,
  kUnary = 6,
  kAtom = 7
};

class Printer : public IRVisitor {
 public:
  explicit Printer(std::ostream& os) : os_(os) {}
  using IRVisitor::visit;

  void print(const Expr& e, int context = kLowest) {
    if (!e.defined()) {
      os_ << "<undefined>";
      return;
    }
    int saved = context_;
    context_ = context;
    visit(e);
    context_ = saved;
  }

  void print(const Stmt& s) {
    if (!s.defined()) {
      indent();
      os_ << "<undefined>\n";
      return;
    }
    visit(s);
  }

  // ---- expressions

  void visit(const IntImm* op) override {
    DataType t = op->type;
    if (t.is_bool()) {
      os_ << (op->value ? "true" : "false");
    } else if (t == DataType::Int32()) {
      os_ << op->value;
    } else {
      os_ << op->value << (t.is_int() ? "i" : "u") << t.bits();
    }
  }

  void visit(const FloatImm* op) override {
    // The shortest text that reads back as the same value: of the float for float32 (so 0.1f
    // prints as 0.1f), of the double otherwise (so distinct float64 values print distinctly).
    bool finite = std::isfinite(op->value);
    bool as_float = op->type == DataType::Float32() &&
                    (!finite || std::fabs(op->value) <= std::numeric_limits<float>::max());
    char buffer[64];
    std::to_chars_result r =
        as_float ? std::to_chars(buffer, std::end(buffer), static_cast<float>(op->value))
                 : std::to_chars(buffer, std::end(buffer), op->value);
    std::string s(buffer, r.ptr);
    if (finite && s.find_first_of(".e") == std::string::npos) s += ".0";
    if (finite && op->type == DataType::Float32()) {
      os_ << s << "f";
    } else if (finite && op->type == DataType::Float(64)) {
      os_ << s;
    } else {
      os_ << op->type << "(" << s << ")";  // other widths, and inf and nan of every width
    }
  }

  void visit(const Variable* op) override { os_ << op->name; }

  void visit(const Cast* op) override {
    os_ << op->type << "(";
    print(op->value);
    os_ << ")";
  }

  void visit(const Add* op) override { infix(op->a, " + ", op->b, kSum); }
  void visit(const Sub* op) override { infix(op->a, " - ", op->b, kSum); }
  void visit(const Mul* op) override { infix(op->a, "*", op->b, kProduct); }
  void visit(const Div* op) override { infix(op->a, "/", op->b, kProduct); }
  void visit(const FloorDiv* op) override { call("floordiv", {op->a, op->b}); }
  void visit(const FloorMod* op) override { call("floormod", {op->a, op->b}); }
  void visit(const TruncDiv* op) override { call("truncdiv", {op->a, op->b}); }
  void visit(const TruncMod* op) override { call("truncmod", {op->a, op->b}); }
  void visit(const Min* op) override { call("min", {op->a, op->b}); }
  void visit(const Max* op) override { call("max", {op->a, op->b}); }
  void visit(const EQ* op) override { infix(op->a, " == ", op->b, kCompare); }
  void visit(const NE* op) override { infix(op->a, " != ", op->b, kCompare); }
  void visit(const LT* op) override { infix(op->a, " < ", op->b, kCompare); }
  void visit(const LE* op) override { infix(op->a, " <= ", op->b, kCompare); }
  void visit(const GT* op) override { infix(op->a, " > ", op->b, kCompare); }
  void visit(const GE* op) override { infix(op->a, " >= ", op->b, kCompare); }
  void visit(const And* op) override { infix(op->a, " && ", op->b, kAnd); }
  void visit(const Or* op) override { infix(op->a, " || ", op->b, kOr); }

  void visit(const Not* op) override {
    os_ << "!";
    print(op->a, kUnary);
  }

  void visit(const Select* op) override {
    call("select", {op->condition, op->true_value, op->false_value});
  }

  void visit(const Ramp* op) override {
    os_ << "ramp(";
    print(op->base);
    os_ << ", ";
    print(op->stride);
    os_ << ", " << op->lanes << ")";
  }

  void visit(const Broadcast* op) override {
    os_ << "x" << op->lanes << "(";
    print(op->value);
    os_ << ")";
  }

  void visit(const Load* op) override {
    // "A[i] if p" is not an atom: as an operand it needs parentheses, or `(A[i] if p)*2` would
    // read as a load predicated on p*2.
    bool parens = op->predicate.defined() && context_ > kLowest;
    if (parens) os_ << "(";
    os_ << op->buffer->name;
    indices(op->indices);
    if (op->predicate.defined()) {
      os_ << " if ";
      print(op->predicate, kAtom);
    }
    if (parens) os_ << ")";
  }

  void visit(const Let* op) override {
    os_ << "(let " << op->var.name() << " = ";
    print(op->value);
    os_ << " in ";
    print(op->body);
    os_ << ")";
  }

  void visit(const Call* op) override { call(intrinsic_name(op->op), op->args); }

  void visit(const Reduce* op) override {
    const CommReducerNode& r = *op->combiner;
    os_ << "reduce(" << r.lhs.name() << ", " << r.rhs.name() << " -> ";
    print(r.result);
    os_ << ", init ";
    print(r.identity);
    os_ << "; ";
    print(op->source);
    os_ << "; over ";
    for (size_t i = 0; i < op->axis.size(); ++i) {
      if (i) os_ << ", ";
      os_ << op->axis[i]->var.name() << " in " << op->axis[i]->dom;
    }
    if (!is_true(op->condition)) {
      os_ << " where ";
      print(op->condition);
    }
    os_ << ")";
  }

  // ---- statements

  void visit(const LetStmt* op) override {
    indent();
    os_ << "let " << op->var.name() << " = ";
    print(op->value);
    os_ << "\n";
    print(op->body);
  }

  void visit(const AttrStmt* op) override {
    indent();
    os_ << "attr " << op->key;
    if (op->node.defined()) {
      os_ << " [";
      print(op->node);
      os_ << "]";
    }
    os_ << " = ";
    print(op->value);
    os_ << "\n";
    print(op->body);
  }

  void visit(const AssertStmt* op) override {
    indent();
    os_ << "assert(";
    print(op->condition);
    os_ << ", " << std::quoted(op->message) << ")\n";
    print(op->body);
  }

  void visit(const Store* op) override {
    indent();
    os_ << op->buffer->name;
    indices(op->indices);
    if (op->predicate.defined()) {
      os_ << " if ";
      print(op->predicate, kAtom);
    }
    os_ << " = ";
    print(op->value);
    os_ << "\n";
  }

  void visit(const Allocate* op) override {
    const BufferNode& b = *op->buffer;
    indent();
    os_ << "allocate " << b.name << "[" << b.dtype;
    for (const Expr& e : b.shape) {
      os_ << " * ";
      print(e, kProduct + 1);
    }
    os_ << "]";
    if (b.scope != MemoryScope::kGlobal) os_ << " in " << memory_scope_name(b.scope);
    os_ << "\n";
    print(op->body);
  }

  void visit(const For* op) override {
    indent();
    switch (op->kind) {
      case ForKind::kSerial:
        os_ << "for (";
        break;
      case ForKind::kThreadBinding:
        os_ << "for " << op->thread_tag << " (";
        break;
      default:
        os_ << for_kind_name(op->kind) << " for (";
        break;
    }
    os_ << op->var.name() << ", ";
    print(op->min);
    os_ << ", ";
    print(op->extent);
    os_ << ") {\n";
    block(op->body);
    indent();
    os_ << "}\n";
  }

  void visit(const IfThenElse* op) override {
    indent();
    os_ << "if (";
    print(op->condition);
    os_ << ") {\n";
    block(op->then_case);
    Stmt rest = op->else_case;
    // else-if chains print flat.
    while (const IfThenElse* next = rest.as<IfThenElse>()) {
      indent();
      os_ << "} else if (";
      print(next->condition);
      os_ << ") {\n";
      block(next->then_case);
      rest = next->else_case;
    }
    if (rest.defined()) {
      indent();
      os_ << "} else {\n";
      block(rest);
    }
    indent();
    os_ << "}\n";
  }

  void visit(const Seq* op) override {
    for (const Stmt& s : op->stmts) print(s);
  }

  void visit(const Evaluate* op) override {
    indent();
    print(op->value);
    os_ << "\n";
  }

  void visit(const Barrier* op) override {
    indent();
    os_ << "barrier(" << memory_scope_name(op->scope) << ")\n";
  }

  void print_range(const Range& r) {
    os_ << "[";
    print(r.min);
    os_ << ", ";
    if (r.min.defined() && r.extent.defined() && as_int(r.min) == 0) {
      print(r.extent);
    } else {
      print(r.min, kSum);
      os_ << " + ";
      print(r.extent, kSum + 1);
    }
    os_ << ")";
  }

 private:
  static bool is_true(const Expr& e) {
    const IntImm* imm = e.as<IntImm>();
    return imm && imm->value == 1;
  }
  static int64_t as_int(const Expr& e) {
    const IntImm* imm = e.as<IntImm>();
    return imm ? imm->value : -1;
  }

  // Left-associative infix: the right operand needs parentheses at equal precedence.
  void infix(const Expr& a, const char* op, const Expr& b, int precedence) {
    bool parens = precedence < context_;
    if (parens) os_ << "(";
    print(a, precedence);
    os_ << op;
    print(b, precedence + 1);
    if (parens) os_ << ")";
  }

  void call(const char* name, const std::vector<Expr>& args) {
    os_ << name << "(";
    for (size_t i = 0; i < args.size(); ++i) {
      if (i) os_ << ", ";
      print(args[i]);
    }
    os_ << ")";
  }

  void indices(const std::vector<Expr>& idx) {
    os_ << "[";
    for (size_t i = 0; i < idx.size(); ++i) {
      if (i) os_ << ", ";
      print(idx[i]);
    }
    os_ << "]";
  }

  void indent() {
    for (int i = 0; i < depth_; ++i) os_ << "  ";
  }

  void block(const Stmt& s) {
    ++depth_;
    print(s);
    --depth_;
  }

  std::ostream& os_;
  int context_ = kLowest;
  int depth_ = 0;
};

}  // namespace

std::ostream& operator<<(std::ostream& os, const Expr& e) {
  Printer(os).print(e);
  return os;
}

std::ostream& operator<<(std::ostream& os, const Stmt& s) {
  Printer(os).print(s);
  return os;
}

std::ostream& operator<<(std::ostream& os, const Range& r) {
  Printer(os).print_range(r);
  return os;
}

std::string to_string(const Expr& e) {
  std::ostringstream os;
  os << e;
  return os.str();
}

std::string to_string(const Stmt& s) {
  std::ostringstream os;
  os << s;
  return os.str();
}

}  // namespace anvil::ir
