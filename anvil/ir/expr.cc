#include "anvil/ir/expr.h"

#include <cmath>

#include "anvil/ir/printer.h"
#include "anvil/support/error.h"

namespace anvil::ir {

const char* node_type_name(IRNodeType type) {
  switch (type) {
#define ANVIL_NAME_ENTRY(name) \
  case IRNodeType::name:       \
    return #name;
    ANVIL_FOR_EACH_EXPR_NODE(ANVIL_NAME_ENTRY)
    ANVIL_FOR_EACH_STMT_NODE(ANVIL_NAME_ENTRY)
#undef ANVIL_NAME_ENTRY
  }
  return "?";
}

namespace {

template <typename T>
T* new_node(DataType type) {
  T* node = new T();
  node->type = type;
  return node;
}

void check_defined(const Expr& e, const char* node, const char* operand) {
  ANVIL_CHECK(e.defined(), node, ": operand '", operand, "' is undefined");
}

void check_scalar_int(const Expr& e, const char* node, const char* operand) {
  check_defined(e, node, operand);
  ANVIL_CHECK(e.type().is_int_or_uint() && e.type().is_scalar(), node, ": '", operand,
              "' must be a scalar integer, but ", e, " has type ", e.type());
}

// Both operands defined and of one type.
void check_same_type(const char* node, const Expr& a, const Expr& b) {
  check_defined(a, node, "a");
  check_defined(b, node, "b");
  ANVIL_CHECK(a.type() == b.type(), node, ": operand types differ: ", a, " is ", a.type(), " but ",
              b, " is ", b.type());
}

template <typename T>
Expr make_binary(Expr a, Expr b, DataType result) {
  T* node = new_node<T>(result);
  node->a = std::move(a);
  node->b = std::move(b);
  return node;
}

template <typename T>
Expr make_arith(const char* name, Expr a, Expr b) {
  check_same_type(name, a, b);
  ANVIL_CHECK(a.type().is_numeric(), name, ": operands must be numbers, not ", a.type());
  DataType t = a.type();
  return make_binary<T>(std::move(a), std::move(b), t);
}

template <typename T>
Expr make_int_division(const char* name, Expr a, Expr b) {
  check_same_type(name, a, b);
  ANVIL_CHECK(a.type().is_int_or_uint(), name, ": operands must be integers, not ", a.type(),
              " (use Div for floats)");
  DataType t = a.type();
  return make_binary<T>(std::move(a), std::move(b), t);
}

template <typename T>
Expr make_compare(const char* name, Expr a, Expr b, bool allow_bool) {
  check_same_type(name, a, b);
  DataType t = a.type();
  ANVIL_CHECK(t.is_numeric() || (allow_bool && (t.is_bool() || t.is_handle())), name,
              ": cannot compare values of type ", t);
  return make_binary<T>(std::move(a), std::move(b), DataType::Bool(t.lanes()));
}

template <typename T>
Expr make_logic(const char* name, Expr a, Expr b) {
  check_same_type(name, a, b);
  ANVIL_CHECK(a.type().is_bool(), name, ": operands must be bool, not ", a.type());
  DataType t = a.type();
  return make_binary<T>(std::move(a), std::move(b), t);
}

}  // namespace

Expr::Expr(int value) : Expr(IntImm::make(DataType::Int32(), value)) {}
Expr::Expr(float value) : Expr(FloatImm::make(DataType::Float32(), value)) {}

Expr IntImm::make(DataType t, int64_t value) {
  ANVIL_CHECK(t.is_scalar() && (t.is_int_or_uint() || t.is_bool()),
              "IntImm: type must be a scalar integer or bool, not ", t);
  ANVIL_CHECK(value >= t.min_value() && value <= t.max_value(), "IntImm: value ", value,
              " does not fit in ", t);
  IntImm* node = new_node<IntImm>(t);
  node->value = value;
  return node;
}

Expr FloatImm::make(DataType t, double value) {
  ANVIL_CHECK(t.is_scalar() && t.is_float(), "FloatImm: type must be a scalar float, not ", t);
  FloatImm* node = new_node<FloatImm>(t);
  // A float32 constant holds exactly the value a float32 can: 0.1 becomes 0.1f.
  node->value = t.bits() == 32 ? static_cast<double>(static_cast<float>(value)) : value;
  return node;
}

Var::Var(std::string name, DataType t) {
  static std::atomic<uint64_t> next_id{0};
  Variable* node = new_node<Variable>(t);
  node->name = std::move(name);
  node->id = next_id.fetch_add(1, std::memory_order_relaxed);
  static_cast<Expr&>(*this) = Expr(node);
}

Expr Cast::make(DataType t, Expr value) {
  check_defined(value, "Cast", "value");
  ANVIL_CHECK(t.lanes() == value.type().lanes(), "Cast: cannot cast ", value.type(), " to ", t,
              " (lane counts differ)");
  ANVIL_CHECK(!t.is_handle() && !value.type().is_handle(), "Cast: cannot cast ", value.type(),
              " to ", t);
  Cast* node = new_node<Cast>(t);
  node->value = std::move(value);
  return node;
}

Expr Add::make(Expr a, Expr b) {
  return make_arith<Add>("Add", std::move(a), std::move(b));
}
Expr Sub::make(Expr a, Expr b) {
  return make_arith<Sub>("Sub", std::move(a), std::move(b));
}
Expr Mul::make(Expr a, Expr b) {
  return make_arith<Mul>("Mul", std::move(a), std::move(b));
}
Expr Min::make(Expr a, Expr b) {
  return make_arith<Min>("Min", std::move(a), std::move(b));
}
Expr Max::make(Expr a, Expr b) {
  return make_arith<Max>("Max", std::move(a), std::move(b));
}

Expr Div::make(Expr a, Expr b) {
  check_same_type("Div", a, b);
  ANVIL_CHECK(a.type().is_float(), "Div: true division is for floats, not ", a.type(),
              " (use FloorDiv or TruncDiv for integers)");
  DataType t = a.type();
  return make_binary<Div>(std::move(a), std::move(b), t);
}

Expr FloorDiv::make(Expr a, Expr b) {
  return make_int_division<FloorDiv>("FloorDiv", std::move(a), std::move(b));
}
Expr FloorMod::make(Expr a, Expr b) {
  return make_int_division<FloorMod>("FloorMod", std::move(a), std::move(b));
}
Expr TruncDiv::make(Expr a, Expr b) {
  return make_int_division<TruncDiv>("TruncDiv", std::move(a), std::move(b));
}
Expr TruncMod::make(Expr a, Expr b) {
  return make_int_division<TruncMod>("TruncMod", std::move(a), std::move(b));
}

Expr EQ::make(Expr a, Expr b) {
  return make_compare<EQ>("EQ", std::move(a), std::move(b), true);
}
Expr NE::make(Expr a, Expr b) {
  return make_compare<NE>("NE", std::move(a), std::move(b), true);
}
Expr LT::make(Expr a, Expr b) {
  return make_compare<LT>("LT", std::move(a), std::move(b), false);
}
Expr LE::make(Expr a, Expr b) {
  return make_compare<LE>("LE", std::move(a), std::move(b), false);
}
Expr GT::make(Expr a, Expr b) {
  return make_compare<GT>("GT", std::move(a), std::move(b), false);
}
Expr GE::make(Expr a, Expr b) {
  return make_compare<GE>("GE", std::move(a), std::move(b), false);
}

Expr And::make(Expr a, Expr b) {
  return make_logic<And>("And", std::move(a), std::move(b));
}
Expr Or::make(Expr a, Expr b) {
  return make_logic<Or>("Or", std::move(a), std::move(b));
}

Expr Not::make(Expr a) {
  check_defined(a, "Not", "a");
  ANVIL_CHECK(a.type().is_bool(), "Not: operand must be bool, not ", a.type());
  Not* node = new_node<Not>(a.type());
  node->a = std::move(a);
  return node;
}

Expr Select::make(Expr condition, Expr true_value, Expr false_value) {
  check_defined(condition, "Select", "condition");
  check_same_type("Select", true_value, false_value);
  DataType t = true_value.type();
  DataType c = condition.type();
  ANVIL_CHECK(c.is_bool() && (c.lanes() == 1 || c.lanes() == t.lanes()),
              "Select: condition must be ",
              t.is_scalar() ? "a scalar bool" : str("bool with 1 or ", t.lanes(), " lanes"),
              ", not ", c, " (the values are ", t, ")");
  Select* node = new_node<Select>(t);
  node->condition = std::move(condition);
  node->true_value = std::move(true_value);
  node->false_value = std::move(false_value);
  return node;
}

Expr Ramp::make(Expr base, Expr stride, int lanes) {
  check_scalar_int(base, "Ramp", "base");
  check_scalar_int(stride, "Ramp", "stride");
  ANVIL_CHECK(base.type() == stride.type(), "Ramp: base is ", base.type(), " but stride is ",
              stride.type());
  ANVIL_CHECK(lanes > 1 && lanes <= 65535, "Ramp: lanes must be in [2, 65535], not ", lanes);
  Ramp* node = new_node<Ramp>(base.type().with_lanes(lanes));
  node->base = std::move(base);
  node->stride = std::move(stride);
  node->lanes = lanes;
  return node;
}

Expr Broadcast::make(Expr value, int lanes) {
  check_defined(value, "Broadcast", "value");
  ANVIL_CHECK(value.type().is_scalar(), "Broadcast: value must be a scalar, not ", value.type());
  ANVIL_CHECK(lanes > 1 && lanes <= 65535, "Broadcast: lanes must be in [2, 65535], not ", lanes);
  Broadcast* node = new_node<Broadcast>(value.type().with_lanes(lanes));
  node->value = std::move(value);
  node->lanes = lanes;
  return node;
}

const char* memory_scope_name(MemoryScope scope) {
  switch (scope) {
    case MemoryScope::kGlobal:
      return "global";
    case MemoryScope::kShared:
      return "shared";
    case MemoryScope::kLocal:
      return "local";
  }
  return "?";
}

Buffer Buffer::make(std::string name, DataType dtype, std::vector<Expr> shape,
                    std::vector<Expr> strides, MemoryScope scope) {
  for (const Expr& e : shape) check_scalar_int(e, "Buffer", "shape");
  for (const Expr& e : strides) check_scalar_int(e, "Buffer", "strides");
  ANVIL_CHECK(strides.empty() || strides.size() == shape.size(), "Buffer '", name, "' has ",
              shape.size(), " dimensions but ", strides.size(), " strides");
  ANVIL_CHECK(!dtype.is_handle(), "Buffer '", name, "': elements cannot be handles");
  BufferNode* node = new BufferNode();
  node->data = Var(name, DataType::Handle());
  node->name = std::move(name);
  node->dtype = dtype;
  node->shape = std::move(shape);
  node->strides = std::move(strides);
  node->scope = scope;
  return Buffer(node);
}

Buffer Buffer::make_flat(const Buffer& buffer, Expr size) {
  ANVIL_CHECK(buffer.defined(), "Buffer::make_flat: buffer is undefined");
  check_scalar_int(size, "Buffer::make_flat", "size");
  BufferNode* node = new BufferNode();
  node->name = buffer->name;
  node->dtype = buffer->dtype;
  node->shape = {std::move(size)};
  node->data = buffer->data;
  node->scope = buffer->scope;
  return Buffer(node);
}

namespace {

// Lanes of an access: every index is a scalar integer or all vector indices share one lane
// count. Returns the access's lane count.
int access_lanes(const char* node, const Buffer& buffer, const std::vector<Expr>& indices,
                 const Expr& predicate) {
  ANVIL_CHECK(buffer.defined(), node, ": buffer is undefined");
  ANVIL_CHECK(static_cast<int>(indices.size()) == buffer.ndim(), node, " of '", buffer->name,
              "': ", indices.size(), " indices for a ", buffer.ndim(), "-dimensional buffer");
  int lanes = 1;
  for (const Expr& index : indices) {
    check_defined(index, node, "index");
    ANVIL_CHECK(index.type().is_int_or_uint(), node, " of '", buffer->name, "': index ", index,
                " has type ", index.type(), ", not an integer");
    int l = index.type().lanes();
    ANVIL_CHECK(l == 1 || lanes == 1 || l == lanes, node, " of '", buffer->name,
                "': indices have different lane counts (", lanes, " and ", l, ")");
    if (l > 1) lanes = l;
  }
  if (predicate.defined()) {
    ANVIL_CHECK(predicate.type() == DataType::Bool(lanes), node, " of '", buffer->name,
                "': predicate must be ", DataType::Bool(lanes), ", not ", predicate.type());
  }
  return lanes;
}

}  // namespace

Expr Load::make(Buffer buffer, std::vector<Expr> indices, Expr predicate) {
  int lanes = access_lanes("Load", buffer, indices, predicate);
  DataType t = buffer->dtype.with_lanes(buffer->dtype.lanes() * lanes);
  Load* node = new_node<Load>(t);
  node->buffer = std::move(buffer);
  node->indices = std::move(indices);
  node->predicate = std::move(predicate);
  return node;
}

namespace detail {
int check_access(const char* node, const Buffer& buffer, const std::vector<Expr>& indices,
                 const Expr& predicate) {
  return access_lanes(node, buffer, indices, predicate);
}
}  // namespace detail

Expr Let::make(Var var, Expr value, Expr body) {
  ANVIL_CHECK(var.defined(), "Let: variable is undefined");
  check_defined(value, "Let", "value");
  check_defined(body, "Let", "body");
  ANVIL_CHECK(value.type() == var.type(), "Let: '", var.name(), "' has type ", var.type(),
              " but its value ", value, " has type ", value.type());
  Let* node = new_node<Let>(body.type());
  node->var = std::move(var);
  node->value = std::move(value);
  node->body = std::move(body);
  return node;
}

namespace {

struct IntrinsicInfo {
  const char* name;
  int arity;
};

constexpr IntrinsicInfo kIntrinsics[] = {
    {"exp", 1},   {"exp2", 1},    {"log", 1},   {"log2", 1}, {"sqrt", 1},     {"rsqrt", 1},
    {"tanh", 1},  {"sigmoid", 1}, {"erf", 1},   {"pow", 2},  {"fabs", 1},     {"floor", 1},
    {"ceil", 1},  {"round", 1},   {"trunc", 1}, {"fma", 3},  {"sin", 1},      {"cos", 1},
    {"tan", 1},   {"asin", 1},    {"acos", 1},  {"atan", 1}, {"sinh", 1},     {"cosh", 1},
    {"asinh", 1}, {"acosh", 1},   {"atanh", 1}, {"fmod", 2}, {"dot_u8s8", 3}, {"dot_u8s8_sat16", 3},
};
static_assert(sizeof(kIntrinsics) / sizeof(kIntrinsics[0]) ==
              static_cast<size_t>(Intrinsic::kDotU8S8Sat16) + 1);

}  // namespace

const char* intrinsic_name(Intrinsic op) {
  return kIntrinsics[static_cast<int>(op)].name;
}
int intrinsic_arity(Intrinsic op) {
  return kIntrinsics[static_cast<int>(op)].arity;
}

Expr Call::make(Intrinsic op, std::vector<Expr> args) {
  const char* name = intrinsic_name(op);
  ANVIL_CHECK(static_cast<int>(args.size()) == intrinsic_arity(op), "Call ", name, ": expects ",
              intrinsic_arity(op), " arguments, got ", args.size());
  for (const Expr& arg : args) check_defined(arg, "Call", name);
  if (is_int8_dot(op)) {
    const DataType acc = args[0].type();
    ANVIL_CHECK(acc.element_of() == DataType::Int32(), "Call ", name, ": the accumulator ", args[0],
                " is ", acc, ", not int32");
    ANVIL_CHECK(args[1].type() == DataType::UInt(8, 4), "Call ", name, ": a ", args[1], " is ",
                args[1].type(), ", not uint8x4");
    ANVIL_CHECK(args[2].type() == DataType::Int(8, 4 * acc.lanes()), "Call ", name, ": b ", args[2],
                " is ", args[2].type(), ", not int8x", 4 * acc.lanes(),
                " (4 per accumulator lane)");
    Call* node = new_node<Call>(acc);
    node->op = op;
    node->args = std::move(args);
    return node;
  }
  for (const Expr& arg : args) {
    ANVIL_CHECK(arg.type().is_float(), "Call ", name, ": arguments must be floats, but ", arg,
                " is ", arg.type());
    ANVIL_CHECK(arg.type() == args[0].type(), "Call ", name,
                ": argument types differ: ", args[0].type(), " and ", arg.type());
  }
  Call* node = new_node<Call>(args[0].type());
  node->op = op;
  node->args = std::move(args);
  return node;
}

Range Range::make(Expr min, Expr extent) {
  check_scalar_int(min, "Range", "min");
  check_scalar_int(extent, "Range", "extent");
  ANVIL_CHECK(min.type() == extent.type(), "Range: min is ", min.type(), " but extent is ",
              extent.type());
  return Range{std::move(min), std::move(extent)};
}

IterVar IterVar::make(Var var, Range dom, IterKind kind, std::string thread_tag) {
  ANVIL_CHECK(var.defined() && var.type().is_int_or_uint(), "IterVar: variable must be an integer");
  for (const Expr& e : {dom.min, dom.extent}) {
    ANVIL_CHECK(!e.defined() || e.type() == var.type(), "IterVar '", var.name(), "' is ",
                var.type(), " but its domain is ", e.type());
  }
  ANVIL_CHECK((kind == IterKind::kThread) == !thread_tag.empty(), "IterVar '", var.name(),
              "': a thread tag is given exactly for thread axes");
  IterVarNode* node = new IterVarNode();
  node->var = std::move(var);
  node->dom = std::move(dom);
  node->kind = kind;
  node->thread_tag = std::move(thread_tag);
  return IterVar(node);
}

CommReducer CommReducer::make(Var lhs, Var rhs, Expr result, Expr identity) {
  ANVIL_CHECK(lhs.defined() && rhs.defined() && result.defined() && identity.defined(),
              "CommReducer: every part must be defined");
  ANVIL_CHECK(
      lhs.type() == rhs.type() && lhs.type() == result.type() && lhs.type() == identity.type(),
      "CommReducer: lhs (", lhs.type(), "), rhs (", rhs.type(), "), result (", result.type(),
      ") and identity (", identity.type(), ") must share one type");
  CommReducerNode* node = new CommReducerNode();
  node->lhs = std::move(lhs);
  node->rhs = std::move(rhs);
  node->result = std::move(result);
  node->identity = std::move(identity);
  return CommReducer(node);
}

namespace {

Expr scalar_const(DataType t, double value) {
  if (t.is_float()) return FloatImm::make(t, value);
  return IntImm::make(t, static_cast<int64_t>(value));
}

}  // namespace

CommReducer CommReducer::sum(DataType t) {
  Var x("x", t), y("y", t);
  return make(x, y, Add::make(x, y), scalar_const(t, 0));
}

CommReducer CommReducer::max(DataType t) {
  Var x("x", t), y("y", t);
  Expr lowest = t.is_float() ? FloatImm::make(t, -INFINITY) : IntImm::make(t, t.min_value());
  return make(x, y, Max::make(x, y), lowest);
}

CommReducer CommReducer::min(DataType t) {
  Var x("x", t), y("y", t);
  Expr highest = t.is_float() ? FloatImm::make(t, INFINITY) : IntImm::make(t, t.max_value());
  return make(x, y, Min::make(x, y), highest);
}

Expr Reduce::make(CommReducer combiner, Expr source, std::vector<IterVar> axis, Expr condition) {
  ANVIL_CHECK(combiner.defined(), "Reduce: combiner is undefined");
  check_defined(source, "Reduce", "source");
  ANVIL_CHECK(source.type() == combiner->result.type(), "Reduce: source is ", source.type(),
              " but the combiner reduces ", combiner->result.type());
  for (const IterVar& iv : axis) {
    ANVIL_CHECK(iv.defined() && iv->kind == IterKind::kReduce, "Reduce: every axis must be a ",
                "reduction axis");
  }
  if (!condition.defined()) condition = IntImm::make(DataType::Bool(), 1);
  ANVIL_CHECK(condition.type() == DataType::Bool(), "Reduce: condition must be bool, not ",
              condition.type());
  Reduce* node = new_node<Reduce>(source.type());
  node->combiner = std::move(combiner);
  node->source = std::move(source);
  node->axis = std::move(axis);
  node->condition = std::move(condition);
  return node;
}

}  // namespace anvil::ir
