// Elementwise operators: unary functions, binary operators, comparisons and logic with NumPy
// broadcasting, where (three-way broadcasting) and cast. All are kInjective and share one
// registration path: a dtype rule (which also validates the attributes), a scalar compute on the
// loaded operands, and a scalar reference on host values.
//
// Semantics follow ONNX:
// - Max/Min (maximum, minimum, relu, clip, hard_sigmoid) propagate NaN.
// - Integer div truncates toward zero (C semantics, ONNX Div on integers). Division by zero is
//   undefined in ONNX; here it gives 0 instead of trapping, and INT_MIN / -1 wraps.
// - Integer add/sub/mul wrap at the type's width in the reference (as NumPy does: uint8
//   200 + 100 = 44); in compiled code their overflow stays undefined, as in ONNX.
// Types: the references take float16/32/64, int8-64, uint8-64 and bool (host_value.h; float16
// results are rounded once from a double); compiled code takes float32, int32, int64 and bool,
// and its compute refuses the others naming the op.
// - clip with min > max gives max everywhere (Min(max, Max(x, min))).
// - cast from float to an integer truncates toward zero (out of range: undefined, as in ONNX);
//   to bool is x != 0 (NaN is true); int64 to int32 wraps.
// - Comparisons on NaN are false (equal, less, ...).
// Transcendentals use the IR intrinsics; the LLVM back end implements float32 exp, tanh, sigmoid
// and erf as polynomials (relative error about 2e-7).
#include <algorithm>
#include <cmath>
#include <numbers>
#include <utility>

#include "anvil/ir/op.h"
#include "anvil/ops/families.h"
#include "anvil/ops/host_value.h"
#include "anvil/ops/op.h"
#include "anvil/ops/schedule_gpu.h"
#include "anvil/ops/schedule_util.h"
#include "anvil/support/error.h"

namespace anvil::ops {

using namespace ir;

namespace {

const DataType kF32 = DataType::Float32();
const DataType kBool = DataType::Bool();

std::string shape_string(const std::vector<int64_t>& shape) {
  return to_string(TensorType{shape, kF32}).substr(7);  // drop "float32"
}

// ---- broadcasting

// The NumPy broadcast of two shapes; throws naming the op and both shapes when they disagree.
std::vector<int64_t> broadcast_shape(const std::string& op, const std::vector<int64_t>& a,
                                     const std::vector<int64_t>& b) {
  size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    ANVIL_CHECK(x == y || x == 1 || y == 1, op, ": shapes ", shape_string(a), " and ",
                shape_string(b), " do not broadcast (dimension ", i, ": ", x, " vs ", y, ")");
    out[i] = x == 1 ? y : x;  // an empty dimension broadcasts to empty
  }
  return out;
}

std::vector<int64_t> broadcast_shapes(const std::string& op,
                                      const std::vector<std::vector<int64_t>>& shapes) {
  std::vector<int64_t> out = shapes[0];
  for (size_t i = 1; i < shapes.size(); ++i) out = broadcast_shape(op, out, shapes[i]);
  return out;
}

// The indices into `t` (of lower or equal rank, broadcast) for output indices `idx`.
std::vector<Expr> broadcast_indices(const te::Tensor& t, const std::vector<Var>& idx) {
  std::vector<int64_t> shape = shape_of(t);
  std::vector<Expr> out;
  size_t offset = idx.size() - shape.size();
  for (size_t d = 0; d < shape.size(); ++d) {
    out.push_back(shape[d] == 1 ? Expr(0) : Expr(idx[offset + d]));
  }
  return out;
}

// Flat offset into a tensor of `shape` for output coordinates `coord` (broadcasting).
int64_t broadcast_offset(const std::vector<int64_t>& shape, const std::vector<int64_t>& coord) {
  int64_t off = 0;
  size_t lead = coord.size() - shape.size();
  for (size_t d = 0; d < shape.size(); ++d) {
    off = off * shape[d] + (shape[d] == 1 ? 0 : coord[lead + d]);
  }
  return off;
}

// ---- dtypes

enum class TypeSet { kFloat, kNumeric, kNumericOrBool, kBool };

bool in_set(DataType t, TypeSet set) {
  switch (set) {
    case TypeSet::kFloat:
      return host::reference_dtype(t) && t.is_float();
    case TypeSet::kNumeric:
      return host::reference_dtype(t) && !t.is_bool();
    case TypeSet::kNumericOrBool:
      return host::reference_dtype(t);
    case TypeSet::kBool:
      return t == kBool;
  }
  return false;
}

const char* set_name(TypeSet set) {
  switch (set) {
    case TypeSet::kFloat:
      return "float16, float32 or float64";
    case TypeSet::kNumeric:
      return "a float or integer type";
    case TypeSet::kNumericOrBool:
      return "a float, integer or bool type";
    case TypeSet::kBool:
      return "bool";
  }
  return "?";
}

// Checks that inputs [first, in.size()) all have one dtype from `set`; returns it.
DataType common_type(const std::string& op, const std::vector<TensorType>& in, TypeSet set,
                     size_t first = 0) {
  DataType t = in[first].dtype;
  for (size_t i = first; i < in.size(); ++i) {
    ANVIL_CHECK(in_set(in[i].dtype, set), op, ": input ", i, " is ", to_string(in[i]),
                ", expected ", set_name(set));
    ANVIL_CHECK(in[i].dtype == t, op, ": input types differ: ", to_string(in[first]), " and ",
                to_string(in[i]));
  }
  return t;
}

// The dtype named by cast's attribute 'to'.
DataType cast_target(const Attrs& attrs) {
  std::string to = attrs.get_string("to");
  DataType t = kBool;
  bool ok = true;
  try {
    t = DataType::parse(to);
  } catch (const Error&) {
    ok = false;
  }
  ANVIL_CHECK(ok && in_set(t, TypeSet::kNumericOrBool), attrs.op(), ": attribute 'to' is '", to,
              "', expected float16/32/64, int8/16/32/64, uint8/16/32/64 or bool");
  return t;
}

// ---- host values of the references

// One element in a reference: a double for float tensors, an int64 for integer and bool ones
// (uint64 keeps its bit pattern, `u` set).
struct Value {
  bool is_float = false;
  double f = 0;
  int64_t i = 0;
  bool u = false;  // an unsigned 64-bit integer
};
Value fval(double f) {
  return {true, f, 0, false};
}
Value ival(int64_t i, bool u = false) {
  return {false, 0, i, u};
}
Value bval(bool b) {
  return {false, 0, b ? 1 : 0, false};
}

Value read_value(const runtime::NDArray& a, int64_t k) {
  DataType t = from_dlpack(a.dtype());
  if (t.is_float()) return fval(host::read_f64(a, k));
  return ival(host::read_i64(a, k), t == DataType::UInt(64));
}

void write_value(const runtime::NDArray& a, int64_t k, DataType t, Value v) {
  if (t.is_bool()) {
    a.data_as<uint8_t>()[k] = v.is_float ? v.f != 0 : v.i != 0;  // NaN is true
  } else if (t.is_float()) {
    double d = v.is_float ? v.f
               : v.u      ? static_cast<double>(static_cast<uint64_t>(v.i))
                          : static_cast<double>(v.i);
    host::write_f64(a, k, d);
  } else {
    // Float to integer truncates toward zero; integers wrap to the target's width.
    host::write_i64(a, k, v.is_float ? host::f64_to_i64(v.f) : v.i);
  }
}

// The dtype of a host tensor among those the references handle.
DataType host_type(const std::string& op, const runtime::NDArray& a) {
  DataType t = from_dlpack(a.dtype());
  if (host::reference_dtype(t)) return t;
  throw Error(str(op, ": the reference has no implementation for ", runtime::to_string(a.dtype())));
}

DLDataType dl_type(DataType t) {
  return DLDataType{static_cast<uint8_t>(t.code()), static_cast<uint8_t>(t.bytes() * 8), 1};
}

// Integer arithmetic that wraps instead of overflowing (the reference must not be undefined).
int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t wrap_sub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
int64_t wrap_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

// ---- registration

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
AttrSpec float_attr(const char* name, double fallback, const char* doc) {
  return {name, AttrType::kFloat, fallback, {not_nan()}, doc};
}

// Validates the input dtypes and the attributes; returns the output dtype.
using TypeRule =
    std::function<DataType(const std::string&, const std::vector<TensorType>&, const Attrs&)>;
// The output element from the loaded input elements.
using ComputeFn = std::function<Expr(const std::vector<Expr>&, const Attrs&)>;
// The same on host values.
using RefFn = std::function<Value(const std::vector<Value>&, const Attrs&)>;

// Registers an elementwise op of `arity` inputs, broadcast together. With `first_shape`, the
// other inputs must broadcast to the first one's shape (prelu's slope).
void register_elementwise(const Decl& decl, size_t arity, TypeRule type_rule, ComputeFn f,
                          RefFn ref, bool first_shape = false) {
  const std::string& name = decl.name;
  OpDef def;
  def.name = name;
  def.pattern = Pattern::kInjective;
  def.attrs = decl.attrs;
  // One per output element; cast only converts (flops.h).
  def.flops = name == "cast" ? flops_none() : flops_per_output();
  def.keeps_blocked_layout = decl.keeps_blocked_layout;
  def.space_gpu = gpu_default_space;  // the default GPU schedule, tunable
  def.infer = [=](const std::vector<TensorType>& in, const Attrs& attrs) {
    ANVIL_CHECK(in.size() == arity, name, ": expects ", arity, arity == 1 ? " input" : " inputs",
                ", got ", in.size());
    DataType out_type = type_rule(name, in, attrs);
    std::vector<std::vector<int64_t>> shapes;
    for (const TensorType& t : in) shapes.push_back(t.shape);
    std::vector<int64_t> shape = broadcast_shapes(name, shapes);
    if (first_shape) {
      for (size_t i = 1; i < in.size(); ++i) {
        ANVIL_CHECK(broadcast_shape(name, in[0].shape, in[i].shape) == in[0].shape, name,
                    ": input ", i, " of shape ", shape_string(in[i].shape),
                    " does not broadcast to input 0's shape ", shape_string(in[0].shape));
      }
    }
    return std::vector<TensorType>{{shape, out_type}};
  };
  def.compute = [=](const std::vector<te::Tensor>& in, const Attrs& attrs) {
    std::vector<std::vector<int64_t>> shapes;
    for (const te::Tensor& t : in) {
      host::check_compiled_dtype(name, t->dtype, "an input");
      shapes.push_back(shape_of(t));
    }
    std::vector<int64_t> shape = broadcast_shapes(name, shapes);
    return std::vector<te::Tensor>{te::compute(
        to_exprs(shape),
        [&](const std::vector<Var>& i) {
          std::vector<Expr> args;
          for (const te::Tensor& t : in) args.push_back(t(broadcast_indices(t, i)));
          return f(args, attrs);
        },
        name)};
  };
  def.reference = [=](const std::vector<runtime::NDArray>& in, const Attrs& attrs) {
    std::vector<TensorType> types;
    std::vector<std::vector<int64_t>> shapes;
    for (const runtime::NDArray& a : in) {
      types.push_back({a.shape(), host_type(name, a)});
      shapes.push_back(a.shape());
    }
    DataType out_type = type_rule(name, types, attrs);
    std::vector<int64_t> shape = broadcast_shapes(name, shapes);
    runtime::NDArray out = runtime::NDArray::empty(shape, dl_type(out_type));
    std::vector<int64_t> coord(shape.size(), 0);
    std::vector<Value> args(in.size());
    for (int64_t k = 0; k < out.numel(); ++k) {
      for (size_t j = 0; j < in.size(); ++j) {
        args[j] = read_value(in[j], broadcast_offset(shapes[j], coord));
      }
      write_value(out, k, out_type, ref(args, attrs));
      for (size_t d = shape.size(); d-- > 0;) {
        if (++coord[d] < shape[d]) break;
        coord[d] = 0;
      }
    }
    return std::vector<runtime::NDArray>{out};
  };
  def.schedule_x86 = [](te::Schedule& s, const std::vector<te::Tensor>& outs, const Target& t,
                        const Config&) { schedule_injective_x86(s, outs[0], t); };
  register_op(std::move(def));
}

// Type rules.
TypeRule same_type(TypeSet set) {
  return [set](const std::string& op, const std::vector<TensorType>& in, const Attrs&) {
    return common_type(op, in, set);
  };
}
TypeRule to_bool(TypeSet set) {
  return [set](const std::string& op, const std::vector<TensorType>& in, const Attrs&) {
    common_type(op, in, set);
    return kBool;
  };
}

Expr call(Intrinsic op, Expr x) {
  return Call::make(op, {std::move(x)});
}

using UnaryF = std::function<Expr(Expr, const Attrs&)>;
using UnaryRef = std::function<double(double, const Attrs&)>;

// A unary float op (its schema validates the attributes).
void unary_float(const Decl& decl, UnaryF f, UnaryRef ref) {
  register_elementwise(
      decl, 1,
      [](const std::string& op, const std::vector<TensorType>& in, const Attrs&) {
        return common_type(op, in, TypeSet::kFloat);
      },
      [f](const std::vector<Expr>& x, const Attrs& attrs) { return f(x[0], attrs); },
      [ref](const std::vector<Value>& x, const Attrs& attrs) { return fval(ref(x[0].f, attrs)); });
}

using BinaryF = std::function<Expr(Expr, Expr)>;
using BinaryFloatRef = std::function<double(double, double)>;
using BinaryIntRef = std::function<int64_t(int64_t, int64_t)>;
using BinaryUIntRef = std::function<uint64_t(uint64_t, uint64_t)>;

// A binary arithmetic op on floats and integers (floats only without `int_ref`). Integers narrower
// than 64 bits are exact in an int64; uint64 takes `uint_ref` when its result depends on the
// signedness (division, max, min), else `int_ref` on the bit patterns (add, sub, mul wrap alike).
void binary_arith(const Decl& decl, BinaryF f, BinaryFloatRef float_ref,
                  BinaryIntRef int_ref = nullptr, BinaryUIntRef uint_ref = nullptr) {
  register_elementwise(
      decl, 2, same_type(int_ref ? TypeSet::kNumeric : TypeSet::kFloat),
      [f](const std::vector<Expr>& x, const Attrs&) { return f(x[0], x[1]); },
      [float_ref, int_ref, uint_ref](const std::vector<Value>& x, const Attrs&) {
        if (x[0].is_float) return fval(float_ref(x[0].f, x[1].f));
        if (x[0].u && uint_ref) {
          uint64_t r = uint_ref(static_cast<uint64_t>(x[0].i), static_cast<uint64_t>(x[1].i));
          return ival(static_cast<int64_t>(r), true);
        }
        return ival(int_ref(x[0].i, x[1].i), x[0].u);
      });
}

// uint64 bit patterns as int64s of the same order (the sign bit flipped).
int64_t unsigned_order(int64_t v) {
  return static_cast<int64_t>(static_cast<uint64_t>(v) ^ (uint64_t{1} << 63));
}

// A comparison: bool output.
void comparison(const std::string& name, TypeSet set, BinaryF f,
                std::function<bool(double, double)> float_ref,
                std::function<bool(int64_t, int64_t)> int_ref) {
  register_elementwise(
      name, 2, to_bool(set),
      [f](const std::vector<Expr>& x, const Attrs&) { return f(x[0], x[1]); },
      [float_ref, int_ref](const std::vector<Value>& x, const Attrs&) {
        if (x[0].is_float) return bval(float_ref(x[0].f, x[1].f));
        if (x[0].u) return bval(int_ref(unsigned_order(x[0].i), unsigned_order(x[1].i)));
        return bval(int_ref(x[0].i, x[1].i));
      });
}

// Integer division truncating toward zero that never traps: x / 0 is 0, INT_MIN / -1 wraps
// (unsigned: only the zero divisor needs care).
Expr int_div(Expr a, Expr b) {
  DataType t = a.type();
  Expr zero = make_zero(t), one = make_one(t);
  if (t.is_uint()) return select(b == zero, zero, truncdiv(a, select(b == zero, one, b)));
  Expr minus_one = make_const(t, -1);
  Expr safe = select(b == zero || b == minus_one, one, b);
  Expr q = truncdiv(a, safe);
  // -a through unsigned arithmetic, which wraps (signed overflow would be undefined).
  DataType ut = DataType::UInt(t.bits());
  Expr neg = cast(t, make_zero(ut) - cast(ut, a));
  return select(b == zero, zero, select(b == minus_one, neg, q));
}

int64_t int_div_ref(int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (b == -1) return wrap_sub(0, a);
  return a / b;  // C++ truncates toward zero
}

void register_unary_ops() {
  // relu, neg and abs also take integers.
  register_elementwise(
      {"relu", {}, kKeepsBlocked}, 1, same_type(TypeSet::kNumeric),
      [](const std::vector<Expr>& x, const Attrs&) { return max(x[0], make_zero(x[0].type())); },
      [](const std::vector<Value>& x, const Attrs&) {
        if (x[0].is_float) return fval(std::isnan(x[0].f) ? x[0].f : x[0].f < 0 ? 0.0 : x[0].f);
        if (x[0].u) return x[0];
        return ival(x[0].i < 0 ? 0 : x[0].i);
      });
  register_elementwise(
      "neg", 1, same_type(TypeSet::kNumeric),
      [](const std::vector<Expr>& x, const Attrs&) {
        return x[0].type().is_float() ? -x[0] : make_zero(x[0].type()) - x[0];
      },
      [](const std::vector<Value>& x, const Attrs&) {
        return x[0].is_float ? fval(-x[0].f) : ival(wrap_sub(0, x[0].i));
      });
  register_elementwise(
      "abs", 1, same_type(TypeSet::kNumeric),
      [](const std::vector<Expr>& x, const Attrs&) {
        if (x[0].type().is_float()) return call(Intrinsic::kFabs, x[0]);
        Expr zero = make_zero(x[0].type());
        return select(x[0] < zero, zero - x[0], x[0]);
      },
      [](const std::vector<Value>& x, const Attrs&) {
        if (x[0].u) return x[0];
        return x[0].is_float ? fval(std::fabs(x[0].f))
                             : ival(x[0].i < 0 ? wrap_sub(0, x[0].i) : x[0].i);
      });

  // clip(x; min, max): float32, int32 or int64; for integers the bounds must be integers in the
  // type's range (or infinite: no bound).
  register_elementwise(
      {"clip",
       {float_attr("min", -INFINITY, "the lower bound (-inf: none)"),
        float_attr("max", INFINITY, "the upper bound (inf: none)")},
       kKeepsBlocked},
      1,
      [](const std::string& op, const std::vector<TensorType>& in, const Attrs& attrs) {
        DataType t = common_type(op, in, TypeSet::kNumeric);
        for (const char* name : {"min", "max"}) {
          double v = attrs.get_float(name);
          if (t.is_float() || std::isinf(v)) continue;
          ANVIL_CHECK(v == std::floor(v), op, ": attribute '", name, "' is ", v,
                      ", but must be an integer for ", t, " input");
          // As a double, int64's maximum rounds up to 2^63: the upper test is strict.
          ANVIL_CHECK(
              v >= static_cast<double>(t.min_value()) && v < static_cast<double>(t.max_value()) + 1,
              op, ": attribute '", name, "' is ", v, ", outside the range of ", t);
        }
        return t;
      },
      [](const std::vector<Expr>& x, const Attrs& attrs) {
        DataType t = x[0].type();
        double lo = attrs.get_float("min"), hi = attrs.get_float("max");
        Expr y = x[0];
        if (t.is_float()) {
          if (lo != -INFINITY) y = max(y, make_const(t, lo));
          if (hi != INFINITY) y = min(y, make_const(t, hi));
          return y;
        }
        // Integers (bounds validated to lie in the type's range): a bound at the type's limit is
        // no bound.
        if (lo != -INFINITY && static_cast<int64_t>(lo) > t.min_value()) {
          y = max(y, make_const(t, static_cast<int64_t>(lo)));
        }
        if (hi != INFINITY && static_cast<int64_t>(hi) < t.max_value()) {
          y = min(y, make_const(t, static_cast<int64_t>(hi)));
        }
        return y;
      },
      [](const std::vector<Value>& x, const Attrs& attrs) {
        double lo = attrs.get_float("min"), hi = attrs.get_float("max");
        if (x[0].is_float) {
          double v = x[0].f;
          if (v < lo) v = lo;
          if (v > hi) v = hi;
          return fval(v);
        }
        int64_t v = x[0].i;
        double d = x[0].u ? static_cast<double>(static_cast<uint64_t>(v)) : static_cast<double>(v);
        if (d < lo) v = static_cast<int64_t>(lo);
        if (d > hi) v = host::f64_to_i64(hi);  // a uint64 bound may exceed INT64_MAX
        return ival(v, x[0].u);
      });

  unary_float(
      {"leaky_relu", {float_attr("alpha", 0.01, "the slope for x < 0")}, kKeepsBlocked},
      [](Expr x, const Attrs& a) {
        return select(x < 0.0f, x * static_cast<float>(a.get_float("alpha")), x);
      },
      [](double x, const Attrs& a) { return x < 0 ? a.get_float("alpha") * x : x; });
  // elu(x; alpha) = x for x > 0, else alpha * (exp(x) - 1) (ONNX Elu). Finite on the zeros of
  // padded channels, so it keeps the blocked layout.
  unary_float(
      {"elu", {float_attr("alpha", 1.0, "the scale of exp(x) - 1 for x <= 0")}, kKeepsBlocked},
      [](Expr x, const Attrs& a) {
        Expr neg = (call(Intrinsic::kExp, x) - 1.0f) * static_cast<float>(a.get_float("alpha"));
        return select(x > 0.0f, x, neg);
      },
      [](double x, const Attrs& a) {
        return x > 0 ? x : a.get_float("alpha") * (std::exp(x) - 1);
      });
  unary_float(
      {"sigmoid", {}, kKeepsBlocked},
      [](Expr x, const Attrs&) { return call(Intrinsic::kSigmoid, x); },
      [](double x, const Attrs&) { return 1.0 / (1.0 + std::exp(-x)); });
  unary_float(
      {"hard_sigmoid",
       {float_attr("alpha", 0.2, "the slope"), float_attr("beta", 0.5, "the offset")},
       kKeepsBlocked},
      [](Expr x, const Attrs& a) {
        float alpha = static_cast<float>(a.get_float("alpha"));
        float beta = static_cast<float>(a.get_float("beta"));
        return max(min(x * alpha + beta, 1.0f), 0.0f);
      },
      [](double x, const Attrs& a) {
        double y = a.get_float("alpha") * x + a.get_float("beta");
        return y < 0 ? 0.0 : y > 1 ? 1.0 : y;
      });
  unary_float(
      {"hard_swish", {}, kKeepsBlocked},
      [](Expr x, const Attrs&) { return x * max(min(x * (1.0f / 6.0f) + 0.5f, 1.0f), 0.0f); },
      [](double x, const Attrs&) {
        double y = x / 6 + 0.5;
        return x * (y < 0 ? 0.0 : y > 1 ? 1.0 : y);
      });
  unary_float(
      {"tanh", {}, kKeepsBlocked}, [](Expr x, const Attrs&) { return call(Intrinsic::kTanh, x); },
      [](double x, const Attrs&) { return std::tanh(x); });
  unary_float(
      "exp", [](Expr x, const Attrs&) { return call(Intrinsic::kExp, x); },
      [](double x, const Attrs&) { return std::exp(x); });
  unary_float(
      "log", [](Expr x, const Attrs&) { return call(Intrinsic::kLog, x); },
      [](double x, const Attrs&) { return std::log(x); });
  unary_float(
      "sqrt", [](Expr x, const Attrs&) { return call(Intrinsic::kSqrt, x); },
      [](double x, const Attrs&) { return std::sqrt(x); });
  unary_float(
      "reciprocal", [](Expr x, const Attrs&) { return Expr(1.0f) / x; },
      [](double x, const Attrs&) { return 1.0 / x; });
  unary_float(
      {"erf", {}, kKeepsBlocked}, [](Expr x, const Attrs&) { return call(Intrinsic::kErf, x); },
      [](double x, const Attrs&) { return std::erf(x); });
  // gelu: approximate = "none" (the exact erf form, default) or "tanh".
  unary_float(
      {"gelu",
       {{"approximate",
         AttrType::kString,
         std::string("none"),
         {one_of(std::vector<std::string>{"none", "tanh"})},
         "'none': the exact erf form; 'tanh': its tanh approximation"}},
       kKeepsBlocked},
      [](Expr x, const Attrs& a) {
        if (a.get_string("approximate") == "tanh") {
          Expr inner =
              (x + x * x * x * 0.044715f) * static_cast<float>(std::sqrt(2.0 / std::numbers::pi));
          return x * 0.5f * (call(Intrinsic::kTanh, inner) + 1.0f);
        }
        return x * 0.5f *
               (call(Intrinsic::kErf, x * static_cast<float>(1 / std::numbers::sqrt2)) + 1.0f);
      },
      [](double x, const Attrs& a) {
        if (a.get_string("approximate") == "tanh") {
          return 0.5 * x *
                 (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
        }
        return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
      });
  unary_float(
      "floor", [](Expr x, const Attrs&) { return call(Intrinsic::kFloor, x); },
      [](double x, const Attrs&) { return std::floor(x); });
  unary_float(
      "ceil", [](Expr x, const Attrs&) { return call(Intrinsic::kCeil, x); },
      [](double x, const Attrs&) { return std::ceil(x); });
}

void register_binary_ops() {
  binary_arith(
      {"add", {}, kKeepsBlocked}, [](Expr a, Expr b) { return a + b; },
      [](double a, double b) { return a + b; }, wrap_add);
  binary_arith(
      {"sub", {}, kKeepsBlocked}, [](Expr a, Expr b) { return a - b; },
      [](double a, double b) { return a - b; }, wrap_sub);
  binary_arith(
      {"mul", {}, kKeepsBlocked}, [](Expr a, Expr b) { return a * b; },
      [](double a, double b) { return a * b; }, wrap_mul);
  binary_arith(
      "div", [](Expr a, Expr b) { return a.type().is_float() ? a / b : int_div(a, b); },
      [](double a, double b) { return a / b; }, int_div_ref,
      [](uint64_t a, uint64_t b) { return b == 0 ? uint64_t{0} : a / b; });
  binary_arith(
      "pow",
      [](Expr a, Expr b) {
        return Call::make(Intrinsic::kPow, {a, b});
      },
      [](double a, double b) { return std::pow(a, b); });
  binary_arith(
      {"maximum", {}, kKeepsBlocked}, [](Expr a, Expr b) { return max(a, b); },
      [](double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN
                                      : a > b                        ? a
                                                                     : b; },
      [](int64_t a, int64_t b) { return a > b ? a : b; },
      [](uint64_t a, uint64_t b) { return a > b ? a : b; });
  binary_arith(
      {"minimum", {}, kKeepsBlocked}, [](Expr a, Expr b) { return min(a, b); },
      [](double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN
                                      : a < b                        ? a
                                                                     : b; },
      [](int64_t a, int64_t b) { return a < b ? a : b; },
      [](uint64_t a, uint64_t b) { return a < b ? a : b; });
  // prelu(x, slope): slope broadcasts to x's shape (ONNX unidirectional broadcasting).
  register_elementwise(
      {"prelu", {}, kKeepsBlocked}, 2, same_type(TypeSet::kFloat),
      [](const std::vector<Expr>& x, const Attrs&) {
        return select(x[0] < 0.0f, x[0] * x[1], x[0]);
      },
      [](const std::vector<Value>& x, const Attrs&) {
        return fval(x[0].f < 0 ? x[1].f * x[0].f : x[0].f);
      },
      /*first_shape=*/true);

  comparison(
      "equal", TypeSet::kNumericOrBool, [](Expr a, Expr b) { return a == b; },
      [](double a, double b) { return a == b; }, [](int64_t a, int64_t b) { return a == b; });
  comparison(
      "less", TypeSet::kNumeric, [](Expr a, Expr b) { return a < b; },
      [](double a, double b) { return a < b; }, [](int64_t a, int64_t b) { return a < b; });
  comparison(
      "less_equal", TypeSet::kNumeric, [](Expr a, Expr b) { return a <= b; },
      [](double a, double b) { return a <= b; }, [](int64_t a, int64_t b) { return a <= b; });
  comparison(
      "greater", TypeSet::kNumeric, [](Expr a, Expr b) { return a > b; },
      [](double a, double b) { return a > b; }, [](int64_t a, int64_t b) { return a > b; });
  comparison(
      "greater_equal", TypeSet::kNumeric, [](Expr a, Expr b) { return a >= b; },
      [](double a, double b) { return a >= b; }, [](int64_t a, int64_t b) { return a >= b; });

  auto logic_ref = [](std::function<bool(bool, bool)> f) {
    return [f](const std::vector<Value>& x, const Attrs&) { return bval(f(x[0].i, x[1].i)); };
  };
  register_elementwise(
      "logical_and", 2, same_type(TypeSet::kBool),
      [](const std::vector<Expr>& x, const Attrs&) { return x[0] && x[1]; },
      logic_ref([](bool a, bool b) { return a && b; }));
  register_elementwise(
      "logical_or", 2, same_type(TypeSet::kBool),
      [](const std::vector<Expr>& x, const Attrs&) { return x[0] || x[1]; },
      logic_ref([](bool a, bool b) { return a || b; }));
  register_elementwise(
      "logical_xor", 2, same_type(TypeSet::kBool),
      [](const std::vector<Expr>& x, const Attrs&) { return x[0] != x[1]; },
      logic_ref([](bool a, bool b) { return a != b; }));
  register_elementwise(
      "logical_not", 1, same_type(TypeSet::kBool),
      [](const std::vector<Expr>& x, const Attrs&) { return !x[0]; },
      [](const std::vector<Value>& x, const Attrs&) { return bval(x[0].i == 0); });
}

void register_other_ops() {
  // where(cond, x, y): cond bool, x and y of one type; all three broadcast.
  register_elementwise(
      "where", 3,
      [](const std::string& op, const std::vector<TensorType>& in, const Attrs&) {
        ANVIL_CHECK(in[0].dtype == kBool, op, ": input 0 (condition) is ", to_string(in[0]),
                    ", expected bool");
        return common_type(op, in, TypeSet::kNumericOrBool, 1);
      },
      [](const std::vector<Expr>& x, const Attrs&) { return select(x[0], x[1], x[2]); },
      [](const std::vector<Value>& x, const Attrs&) { return x[0].i != 0 ? x[1] : x[2]; });
  // cast(x; to).
  register_elementwise(
      {"cast",
       {{"to",
         AttrType::kString,
         std::nullopt,
         {},
         "the target type: float16/32/64, int8/16/32/64, uint8/16/32/64 or bool",
         /*required=*/true}}},
      1,
      [](const std::string& op, const std::vector<TensorType>& in, const Attrs& attrs) {
        common_type(op, in, TypeSet::kNumericOrBool);
        return cast_target(attrs);
      },
      [](const std::vector<Expr>& x, const Attrs& attrs) {
        DataType to = cast_target(attrs);
        host::check_compiled_dtype("cast", to, "the target type");
        return x[0].type() == to ? x[0] : Cast::make(to, x[0]);
      },
      [](const std::vector<Value>& x, const Attrs&) { return x[0]; });
}

}  // namespace

void register_elementwise_ops() {
  register_unary_ops();
  register_binary_ops();
  register_other_ops();
}

}  // namespace anvil::ops
