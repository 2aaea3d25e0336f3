#include "anvil/ir/op.h"

#include <algorithm>
#include <cmath>

#include "anvil/ir/visitor.h"
#include "anvil/support/error.h"

namespace anvil::ir {

Expr make_const(DataType t, int64_t value) {
  if (t.is_float()) return make_const(t, static_cast<double>(value));
  Expr scalar = IntImm::make(t.element_of(), value);
  return t.is_vector() ? Broadcast::make(scalar, t.lanes()) : scalar;
}

Expr make_const(DataType t, double value) {
  Expr scalar;
  if (t.is_float()) {
    scalar = FloatImm::make(t.element_of(), value);
  } else {
    ANVIL_CHECK(value == std::trunc(value), "make_const: ", value, " is not an integer, so it ",
                "cannot be a constant of type ", t);
    // Converting a double outside int64's range is undefined: never let it wrap silently.
    ANVIL_CHECK(value >= -0x1p63 && value < 0x1p63, "make_const: ", value, " does not fit in ", t);
    scalar = IntImm::make(t.element_of(), static_cast<int64_t>(value));
  }
  return t.is_vector() ? Broadcast::make(scalar, t.lanes()) : scalar;
}

Expr make_zero(DataType t) {
  return make_const(t, int64_t{0});
}
Expr make_one(DataType t) {
  return make_const(t, int64_t{1});
}
Expr make_bool(bool value, int lanes) {
  return make_const(DataType::Bool(lanes), int64_t{value});
}

std::optional<int64_t> as_const_int(const Expr& e) {
  if (const Broadcast* b = e.as<Broadcast>()) return as_const_int(b->value);
  if (const IntImm* imm = e.as<IntImm>()) return imm->value;
  return std::nullopt;
}

std::optional<double> as_const_float(const Expr& e) {
  if (const Broadcast* b = e.as<Broadcast>()) return as_const_float(b->value);
  if (const FloatImm* imm = e.as<FloatImm>()) return imm->value;
  return std::nullopt;
}

bool is_const_int(const Expr& e, int64_t value) {
  std::optional<int64_t> v = as_const_int(e);
  return v && *v == value;
}

bool is_const(const Expr& e) {
  return e.defined() && (as_const_int(e).has_value() || as_const_float(e).has_value());
}

namespace {

// The literal `e` retyped to t, or e itself when it is not a literal.
Expr retype_literal(const Expr& e, DataType t) {
  if (t.is_handle()) return e;
  if (std::optional<int64_t> i = as_const_int(e)) {
    if (e.type().is_bool() && !t.is_bool()) return e;
    return make_const(t, *i);
  }
  if (std::optional<double> f = as_const_float(e)) {
    if (!t.is_float()) return e;  // a float literal never silently becomes an integer
    return make_const(t, *f);
  }
  return e;
}

}  // namespace

void match_types(Expr& a, Expr& b) {
  ANVIL_CHECK(a.defined() && b.defined(), "operand is undefined");
  if (a.type() == b.type()) return;
  // A literal takes the other side's element type but never loses lanes: a vector literal
  // against a scalar stays a vector, and the scalar is broadcast below.
  int lanes = std::max(a.type().lanes(), b.type().lanes());
  // Between two literals, the right one follows the left (make_zero(Int64()) + 1 is int64).
  if (is_const(b)) {
    b = retype_literal(b, a.type().with_lanes(lanes));
  } else if (is_const(a)) {
    a = retype_literal(a, b.type().with_lanes(lanes));
  }
  if (a.type().is_scalar() && b.type().is_vector() && a.type() == b.type().element_of()) {
    a = Broadcast::make(a, b.type().lanes());
  } else if (b.type().is_scalar() && a.type().is_vector() && b.type() == a.type().element_of()) {
    b = Broadcast::make(b, a.type().lanes());
  }
}

#define ANVIL_MATCHED(expr) \
  match_types(a, b);        \
  return expr

Expr operator+(Expr a, Expr b) {
  ANVIL_MATCHED(Add::make(a, b));
}
Expr operator-(Expr a, Expr b) {
  ANVIL_MATCHED(Sub::make(a, b));
}
Expr operator*(Expr a, Expr b) {
  ANVIL_MATCHED(Mul::make(a, b));
}
Expr operator/(Expr a, Expr b) {
  ANVIL_MATCHED(Div::make(a, b));
}
Expr operator<(Expr a, Expr b) {
  ANVIL_MATCHED(LT::make(a, b));
}
Expr operator<=(Expr a, Expr b) {
  ANVIL_MATCHED(LE::make(a, b));
}
Expr operator>(Expr a, Expr b) {
  ANVIL_MATCHED(GT::make(a, b));
}
Expr operator>=(Expr a, Expr b) {
  ANVIL_MATCHED(GE::make(a, b));
}
Expr operator==(Expr a, Expr b) {
  ANVIL_MATCHED(EQ::make(a, b));
}
Expr operator!=(Expr a, Expr b) {
  ANVIL_MATCHED(NE::make(a, b));
}
Expr operator&&(Expr a, Expr b) {
  ANVIL_MATCHED(And::make(a, b));
}
Expr operator||(Expr a, Expr b) {
  ANVIL_MATCHED(Or::make(a, b));
}
Expr floordiv(Expr a, Expr b) {
  ANVIL_MATCHED(FloorDiv::make(a, b));
}
Expr floormod(Expr a, Expr b) {
  ANVIL_MATCHED(FloorMod::make(a, b));
}
Expr truncdiv(Expr a, Expr b) {
  ANVIL_MATCHED(TruncDiv::make(a, b));
}
Expr truncmod(Expr a, Expr b) {
  ANVIL_MATCHED(TruncMod::make(a, b));
}
Expr min(Expr a, Expr b) {
  ANVIL_MATCHED(Min::make(a, b));
}
Expr max(Expr a, Expr b) {
  ANVIL_MATCHED(Max::make(a, b));
}
#undef ANVIL_MATCHED

Expr operator-(Expr a) {
  ANVIL_CHECK(a.defined(), "negation of an undefined expression");
  // A signed constant folds, except the type's minimum, whose negation does not fit (and for
  // int64 would overflow here). Unsigned constants wrap like variables: a subtraction.
  std::optional<int64_t> i = as_const_int(a);
  if (i && a.type().is_int() && *i > a.type().min_value()) return make_const(a.type(), -*i);
  if (std::optional<double> f = as_const_float(a)) return make_const(a.type(), -*f);
  return Sub::make(make_zero(a.type()), a);
}

Expr operator!(Expr a) {
  return Not::make(std::move(a));
}

Expr select(Expr condition, Expr true_value, Expr false_value) {
  match_types(true_value, false_value);
  return Select::make(std::move(condition), std::move(true_value), std::move(false_value));
}

Expr cast(DataType t, Expr value) {
  if (value.defined() && value.type() == t) return value;
  return Cast::make(t, std::move(value));
}

int64_t node_count(const Expr& e) {
  struct Counter : IRVisitor {
    using IRVisitor::visit;
    int64_t count = 0;
    void visit(const Expr& x) override {
      if (!x.defined()) return;
      ++count;
      IRVisitor::visit(x);
    }
  } counter;
  counter.visit(e);
  return counter.count;
}

}  // namespace anvil::ir
