#include "anvil/ops/elementwise_common.h"

#include <algorithm>
#include <cmath>

#include "anvil/ir/op.h"
#include "anvil/ops/host_value.h"
#include "anvil/ops/schedule_gpu.h"
#include "anvil/ops/schedule_util.h"
#include "anvil/support/error.h"

namespace anvil::ops::elementwise {

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

}  // namespace

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

// Checks that inputs [first, in.size()) all have one dtype from `set`; returns it.
DataType common_type(const std::string& op, const std::vector<TensorType>& in, TypeSet set,
                     size_t first) {
  DataType t = in[first].dtype;
  for (size_t i = first; i < in.size(); ++i) {
    ANVIL_CHECK(in_set(in[i].dtype, set), op, ": input ", i, " is ", to_string(in[i]),
                ", expected ", set_name(set));
    ANVIL_CHECK(in[i].dtype == t, op, ": input types differ: ", to_string(in[first]), " and ",
                to_string(in[i]));
  }
  return t;
}

Value fval(double f) {
  return {true, f, 0, false};
}
Value ival(int64_t i, bool u) {
  return {false, 0, i, u};
}
Value bval(bool b) {
  return {false, 0, b ? 1 : 0, false};
}

// A float attribute that must not be NaN, with its default.
AttrSpec float_attr(const char* name, double fallback, const char* doc) {
  return {name, AttrType::kFloat, fallback, {not_nan()}, doc};
}

// Registers an elementwise op of `arity` inputs, broadcast together. With `first_shape`, the
// other inputs must broadcast to the first one's shape (prelu's slope).
void register_elementwise(const Decl& decl, size_t arity, TypeRule type_rule, ComputeFn f,
                          RefFn ref, bool first_shape) {
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

}  // namespace anvil::ops::elementwise
