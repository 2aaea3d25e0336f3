// The machinery the elementwise operators share (elementwise.cc: arithmetic, comparisons, logic,
// where, cast; elementwise_math.cc: the float functions): one registration path from a dtype
// rule, a scalar compute on the loaded operands and a scalar reference on host values, with NumPy
// broadcasting of the inputs.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "anvil/ir/expr.h"
#include "anvil/ops/op.h"

namespace anvil::ops::elementwise {

// The dtypes an op accepts.
enum class TypeSet { kFloat, kNumeric, kNumericOrBool, kBool };

bool in_set(ir::DataType t, TypeSet set);

// Checks that inputs [first, in.size()) all have one dtype from `set`; returns it.
ir::DataType common_type(const std::string& op, const std::vector<TensorType>& in, TypeSet set,
                         size_t first = 0);

// One element in a reference: a double for float tensors, an int64 for integer and bool ones
// (uint64 keeps its bit pattern, `u` set).
struct Value {
  bool is_float = false;
  double f = 0;
  int64_t i = 0;
  bool u = false;  // an unsigned 64-bit integer
};
Value fval(double f);
Value ival(int64_t i, bool u = false);
Value bval(bool b);

// What an elementwise op declares besides its functions: its name, its attributes (none by
// default: any given is an error) and whether it keeps the blocked layout (OpDef).
struct Decl {
  Decl(const char* name) : name(name) {}             // NOLINT: most ops declare only a name
  Decl(std::string name) : name(std::move(name)) {}  // NOLINT
  Decl(const char* name, std::vector<AttrSpec> attrs, bool keeps_blocked_layout = false)
      : name(name), attrs(std::move(attrs)), keeps_blocked_layout(keeps_blocked_layout) {}
  std::string name;
  std::vector<AttrSpec> attrs;
  bool keeps_blocked_layout = false;
};
constexpr bool kKeepsBlocked = true;

// A float attribute that must not be NaN, with its default.
AttrSpec float_attr(const char* name, double fallback, const char* doc);

// Validates the input dtypes and the attributes; returns the output dtype.
using TypeRule =
    std::function<ir::DataType(const std::string&, const std::vector<TensorType>&, const Attrs&)>;
// The output element from the loaded input elements.
using ComputeFn = std::function<ir::Expr(const std::vector<ir::Expr>&, const Attrs&)>;
// The same on host values.
using RefFn = std::function<Value(const std::vector<Value>&, const Attrs&)>;

// Registers an elementwise op of `arity` inputs, broadcast together. With `first_shape`, the
// other inputs must broadcast to the first one's shape (prelu's slope).
void register_elementwise(const Decl& decl, size_t arity, TypeRule type_rule, ComputeFn f,
                          RefFn ref, bool first_shape = false);

// Type rules: every input of one type from `set`; the output of that type, or bool.
TypeRule same_type(TypeSet set);
TypeRule to_bool(TypeSet set);

ir::Expr call(ir::Intrinsic op, ir::Expr x);

using UnaryF = std::function<ir::Expr(ir::Expr, const Attrs&)>;
using UnaryRef = std::function<double(double, const Attrs&)>;
// A unary float op (its schema validates the attributes).
void unary_float(const Decl& decl, UnaryF f, UnaryRef ref);

}  // namespace anvil::ops::elementwise
