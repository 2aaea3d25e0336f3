// The expression nodes of the loop-level IR, one struct each. Every node is built through its
// static make(), which checks the typing rules and throws anvil::Error naming the offending
// types; a node that exists is well typed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "anvil/ir/node.h"

namespace anvil::ir {

// ---------------------------------------------------------------------------------------------
// Immediates and variables

// An integer, unsigned or bool constant (scalar; vectors are Broadcasts of it).
struct IntImm final : ExprNode<IntImm> {
  static constexpr IRNodeType kNodeType = IRNodeType::IntImm;
  int64_t value;
  static Expr make(DataType t, int64_t value);  // rejects values t cannot represent
};

struct FloatImm final : ExprNode<FloatImm> {
  static constexpr IRNodeType kNodeType = IRNodeType::FloatImm;
  double value;
  static Expr make(DataType t, double value);
};

// A named variable (a scalar, or a vector where vectorization binds a let). Identity is the node
// itself: two Variables with the same name are different variables. `id` orders variables
// deterministically (creation order).
struct Variable final : ExprNode<Variable> {
  static constexpr IRNodeType kNodeType = IRNodeType::Variable;
  std::string name;
  uint64_t id;
};

// The handle for variables: an Expr that is always a Variable.
class Var : public Expr {
 public:
  explicit Var(std::string name = "v", DataType t = DataType::Int32());
  explicit Var(const Variable* node) : Expr(node) {}
  const Variable* get() const { return static_cast<const Variable*>(Expr::get()); }
  const Variable* operator->() const { return get(); }
  const std::string& name() const { return get()->name; }
};

// ---------------------------------------------------------------------------------------------
// Arithmetic, comparison and logic

struct Cast final : ExprNode<Cast> {
  static constexpr IRNodeType kNodeType = IRNodeType::Cast;
  Expr value;
  static Expr make(DataType t, Expr value);  // lanes must agree
};

// Binary nodes share one layout; `kind` tells which operator.
template <typename T>
struct BinaryNode : ExprNode<T> {
  Expr a, b;
};

// Arithmetic on numbers: both operands the same numeric type.
#define ANVIL_DECLARE_BINARY(Name)                            \
  struct Name final : BinaryNode<Name> {                      \
    static constexpr IRNodeType kNodeType = IRNodeType::Name; \
    static Expr make(Expr a, Expr b);                         \
  };
ANVIL_DECLARE_BINARY(Add)
ANVIL_DECLARE_BINARY(Sub)
ANVIL_DECLARE_BINARY(Mul)
ANVIL_DECLARE_BINARY(Div)       // true division; floats only (integers use floordiv/truncdiv)
ANVIL_DECLARE_BINARY(FloorDiv)  // rounds toward -inf; integers only
ANVIL_DECLARE_BINARY(FloorMod)  // sign of the divisor; integers only
ANVIL_DECLARE_BINARY(TruncDiv)  // rounds toward zero (C semantics); integers only
ANVIL_DECLARE_BINARY(TruncMod)  // sign of the dividend (C semantics); integers only
ANVIL_DECLARE_BINARY(Min)
ANVIL_DECLARE_BINARY(Max)
// Comparisons: same-typed operands, a bool result with their lanes.
ANVIL_DECLARE_BINARY(EQ)
ANVIL_DECLARE_BINARY(NE)
ANVIL_DECLARE_BINARY(LT)
ANVIL_DECLARE_BINARY(LE)
ANVIL_DECLARE_BINARY(GT)
ANVIL_DECLARE_BINARY(GE)
// Logic on bools.
ANVIL_DECLARE_BINARY(And)
ANVIL_DECLARE_BINARY(Or)
#undef ANVIL_DECLARE_BINARY

struct Not final : ExprNode<Not> {
  static constexpr IRNodeType kNodeType = IRNodeType::Not;
  Expr a;
  static Expr make(Expr a);
};

// condition ? true_value : false_value, both sides evaluated (no short circuit).
struct Select final : ExprNode<Select> {
  static constexpr IRNodeType kNodeType = IRNodeType::Select;
  Expr condition, true_value, false_value;
  static Expr make(Expr condition, Expr true_value, Expr false_value);
};

// ---------------------------------------------------------------------------------------------
// Vectors

// The vector [base, base + stride, ..., base + (lanes-1)*stride].
struct Ramp final : ExprNode<Ramp> {
  static constexpr IRNodeType kNodeType = IRNodeType::Ramp;
  Expr base, stride;
  int lanes;
  static Expr make(Expr base, Expr stride, int lanes);
};

// A scalar repeated over `lanes` lanes.
struct Broadcast final : ExprNode<Broadcast> {
  static constexpr IRNodeType kNodeType = IRNodeType::Broadcast;
  Expr value;
  int lanes;
  static Expr make(Expr value, int lanes);
};

// ---------------------------------------------------------------------------------------------
// Memory, binding and calls

enum class MemoryScope : uint8_t { kGlobal, kShared, kLocal };
const char* memory_scope_name(MemoryScope scope);

// A region of memory: element type, shape, optional strides (empty = compact row-major), and
// the handle variable that holds its address. Identity is the node; `data` names it in the IR.
struct BufferNode final : RefCounted {
  std::string name;
  DataType dtype;
  std::vector<Expr> shape;
  std::vector<Expr> strides;
  Var data;
  MemoryScope scope;
};

class Buffer : public Ref<BufferNode> {
 public:
  using Ref::Ref;
  // Shape and stride entries must be scalar integers; a stride list, when given, has one entry
  // per dimension.
  static Buffer make(std::string name, DataType dtype, std::vector<Expr> shape,
                     std::vector<Expr> strides = {}, MemoryScope scope = MemoryScope::kGlobal);
  // A one-dimensional view of `buffer` with `size` elements and no strides: the same name,
  // element type, scope and `data` variable, so it names the same memory (storage flattening
  // rewrites accesses to it).
  static Buffer make_flat(const Buffer& buffer, Expr size);
  int ndim() const { return static_cast<int>(get()->shape.size()); }
};

// buffer[indices...]. A vector load has one index that is a vector (a Ramp, typically); the
// result has the buffer's element type with that many lanes. `predicate`, when defined, masks
// lanes off (a bool vector of the same lanes).
struct Load final : ExprNode<Load> {
  static constexpr IRNodeType kNodeType = IRNodeType::Load;
  Buffer buffer;
  std::vector<Expr> indices;
  Expr predicate;
  static Expr make(Buffer buffer, std::vector<Expr> indices, Expr predicate = Expr());
};

namespace detail {
// Checks the indices and predicate of a Load or Store of `buffer`; returns its lane count.
int check_access(const char* node, const Buffer& buffer, const std::vector<Expr>& indices,
                 const Expr& predicate);
}  // namespace detail

// let var = value in body.
struct Let final : ExprNode<Let> {
  static constexpr IRNodeType kNodeType = IRNodeType::Let;
  Var var;
  Expr value, body;
  static Expr make(Var var, Expr value, Expr body);
};

// Pure intrinsic functions. The table in expr.cc gives each one's name and arity. `round` rounds
// halves to even (as ONNX Round does).
enum class Intrinsic : uint8_t {
  kExp,
  kExp2,
  kLog,
  kLog2,
  kSqrt,
  kRsqrt,
  kTanh,
  kSigmoid,
  kErf,
  kPow,
  kFabs,
  kFloor,
  kCeil,
  kRound,
  kTrunc,
  kFma,
  kSin,
  kCos,
  // Computed by libm's functions (one call per lane) on every back end.
  kTan,
  kAsin,
  kAcos,
  kAtan,
  kSinh,
  kCosh,
  kAsinh,
  kAcosh,
  kAtanh,
  kFmod,  // C's fmod: the remainder with the dividend's sign, exact
  // dot_u8s8(acc, a, b): acc int32xN, a uint8x4, b int8x(4N); lane i is acc[i] plus the sum over
  // j < 4 of a[j] * b[4i + j], exactly (int32 wraps). What one VNNI vpdpbusd does for N lanes
  // with `a` broadcast; tensorize (te/tensor_intrin.h) is how it gets into a loop nest.
  kDotU8S8,
  // dot_u8s8_sat16(acc, a, b): the same types; lane i is acc[i] + sat16(a[0] * b[4i] + a[1] *
  // b[4i + 1]) + sat16(a[2] * b[4i + 2] + a[3] * b[4i + 3]), each pair sum saturated to int16:
  // what AVX2's vpmaddubsw and vpmaddwd do. Equal to dot_u8s8 where no pair sum leaves int16,
  // which tensorize proves from value ranges before it uses this.
  kDotU8S8Sat16,
};
// dot_u8s8 or dot_u8s8_sat16.
inline bool is_int8_dot(Intrinsic op) {
  return op == Intrinsic::kDotU8S8 || op == Intrinsic::kDotU8S8Sat16;
}
const char* intrinsic_name(Intrinsic op);
int intrinsic_arity(Intrinsic op);

// A call of a pure intrinsic: on floats, every argument has the result's type; dot_u8s8 has
// the types it names.
struct Call final : ExprNode<Call> {
  static constexpr IRNodeType kNodeType = IRNodeType::Call;
  Intrinsic op;
  std::vector<Expr> args;
  static Expr make(Intrinsic op, std::vector<Expr> args);
};

// [min, min + extent).
struct Range {
  Expr min, extent;
  static Range make(Expr min, Expr extent);  // both scalar integers of one type
};

// An iteration variable of a tensor expression: a data-parallel axis, a reduction axis, or an
// axis bound to a GPU thread index (thread_tag "blockIdx.x", "threadIdx.y", ...).
enum class IterKind : uint8_t { kDataPar, kReduce, kThread };

struct IterVarNode final : RefCounted {
  Var var;
  Range dom;
  IterKind kind;
  std::string thread_tag;
};

class IterVar : public Ref<IterVarNode> {
 public:
  using Ref::Ref;
  static IterVar make(Var var, Range dom, IterKind kind, std::string thread_tag = "");
};

// A commutative, associative reducer: result(lhs, rhs) combines two partial values and
// `identity` is its neutral element (sum: lhs + rhs and 0).
struct CommReducerNode final : RefCounted {
  Var lhs, rhs;
  Expr result, identity;
};

class CommReducer : public Ref<CommReducerNode> {
 public:
  using Ref::Ref;
  static CommReducer make(Var lhs, Var rhs, Expr result, Expr identity);
  static CommReducer sum(DataType t);
  static CommReducer max(DataType t);  // identity: the type's lowest value (-inf for floats)
  static CommReducer min(DataType t);
};

// The reduction of `source` over `axis`, combining only where `condition` holds.
struct Reduce final : ExprNode<Reduce> {
  static constexpr IRNodeType kNodeType = IRNodeType::Reduce;
  CommReducer combiner;
  Expr source;
  std::vector<IterVar> axis;
  Expr condition;
  static Expr make(CommReducer combiner, Expr source, std::vector<IterVar> axis,
                   Expr condition = Expr());  // condition defaults to true
};

}  // namespace anvil::ir
