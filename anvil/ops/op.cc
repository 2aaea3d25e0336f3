#include "anvil/ops/op.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <sstream>

#include "anvil/ir/op.h"
#include "anvil/ops/families.h"
#include "anvil/ops/host_value.h"
#include "anvil/ops/schedule_gpu.h"
#include "anvil/support/error.h"

namespace anvil::ops {

const char* pattern_name(Pattern p) {
  switch (p) {
    case Pattern::kInjective:
      return "injective";
    case Pattern::kReduction:
      return "reduction";
    case Pattern::kComplexOutFusable:
      return "complex-out-fusable";
    case Pattern::kOpaque:
      return "opaque";
  }
  return "?";
}

namespace {

const OpDef* find_op(const std::string& name);

template <typename T>
const T* as_kind(const AttrValue* v, const std::string& op, const std::string& name,
                 const char* kind) {
  if (!v) return nullptr;
  const T* t = std::get_if<T>(v);
  ANVIL_CHECK(t, op, ": attribute '", name, "' must be ", kind);
  return t;
}

double to_float(const AttrValue* v, const std::string& op, const std::string& name) {
  if (const int64_t* i = std::get_if<int64_t>(v)) return static_cast<double>(*i);
  const double* d = std::get_if<double>(v);
  ANVIL_CHECK(d, op, ": attribute '", name, "' must be a number");
  return *d;
}

std::vector<int64_t> to_ints(const AttrValue* v, const std::string& op, const std::string& name) {
  if (const int64_t* i = std::get_if<int64_t>(v)) return {*i};
  const std::vector<int64_t>* l = std::get_if<std::vector<int64_t>>(v);
  ANVIL_CHECK(l, op, ": attribute '", name, "' must be a list of integers");
  return *l;
}

}  // namespace

const AttrValue* Attrs::find(const std::string& name) const {
  auto it = values_.find(name);
  if (it != values_.end()) return &it->second;
  const OpDef* def = find_op(op_);
  if (!def) return nullptr;
  for (const AttrSpec& spec : def->attrs) {
    if (spec.name == name) return spec.fallback ? &*spec.fallback : nullptr;
  }
  return nullptr;
}

int64_t Attrs::get_int(const std::string& name) const {
  const int64_t* v = as_kind<int64_t>(find(name), op_, name, "an integer");
  ANVIL_CHECK(v, op_, ": missing attribute '", name, "'");
  return *v;
}

int64_t Attrs::get_int(const std::string& name, int64_t fallback) const {
  const int64_t* v = as_kind<int64_t>(find(name), op_, name, "an integer");
  return v ? *v : fallback;
}

double Attrs::get_float(const std::string& name) const {
  const AttrValue* v = find(name);
  ANVIL_CHECK(v, op_, ": missing attribute '", name, "'");
  return to_float(v, op_, name);
}

double Attrs::get_float(const std::string& name, double fallback) const {
  const AttrValue* v = find(name);
  return v ? to_float(v, op_, name) : fallback;
}

std::vector<int64_t> Attrs::get_ints(const std::string& name) const {
  const AttrValue* v = find(name);
  ANVIL_CHECK(v, op_, ": missing attribute '", name, "'");
  return to_ints(v, op_, name);
}

std::vector<int64_t> Attrs::get_ints(const std::string& name, std::vector<int64_t> fallback) const {
  const AttrValue* v = find(name);
  return v ? to_ints(v, op_, name) : fallback;
}

std::string Attrs::get_string(const std::string& name) const {
  const std::string* v = as_kind<std::string>(find(name), op_, name, "a string");
  ANVIL_CHECK(v, op_, ": missing attribute '", name, "'");
  return *v;
}

std::string Attrs::get_string(const std::string& name, std::string fallback) const {
  const std::string* v = as_kind<std::string>(find(name), op_, name, "a string");
  return v ? *v : fallback;
}

std::string attr_str(const AttrValue& v) {
  std::ostringstream os;
  if (const int64_t* i = std::get_if<int64_t>(&v)) {
    os << *i;
  } else if (const double* d = std::get_if<double>(&v)) {
    if (std::isnan(*d)) {
      os << "NaN";
    } else {
      os << *d;
    }
  } else if (const auto* l = std::get_if<std::vector<int64_t>>(&v)) {
    os << list_str(*l);
  } else if (const auto* f = std::get_if<std::vector<double>>(&v)) {
    os << "[";
    for (size_t k = 0; k < f->size(); ++k) os << (k ? ", " : "") << (*f)[k];
    os << "]";
  } else {
    os << "'" << std::get<std::string>(v) << "'";
  }
  return os.str();
}

const char* attr_type_name(AttrType t) {
  switch (t) {
    case AttrType::kInt:
      return "an integer";
    case AttrType::kFloat:
      return "a number";
    case AttrType::kInts:
      return "a list of integers";
    case AttrType::kFloats:
      return "a list of numbers";
    case AttrType::kString:
      return "a string";
  }
  return "?";
}

namespace {

// The integers of an int or int-list value (empty for other kinds).
std::vector<int64_t> ints_of(const AttrValue& v) {
  if (const int64_t* i = std::get_if<int64_t>(&v)) return {*i};
  if (const auto* l = std::get_if<std::vector<int64_t>>(&v)) return *l;
  return {};
}

bool has_type(const AttrValue& v, AttrType t) {
  switch (t) {
    case AttrType::kInt:
      return std::holds_alternative<int64_t>(v);
    case AttrType::kFloat:
      return std::holds_alternative<double>(v) || std::holds_alternative<int64_t>(v);
    case AttrType::kInts:  // a single integer reads as a list of one (Attrs::get_ints)
      return std::holds_alternative<std::vector<int64_t>>(v) || std::holds_alternative<int64_t>(v);
    case AttrType::kFloats:
      return std::holds_alternative<std::vector<double>>(v) ||
             std::holds_alternative<std::vector<int64_t>>(v);
    case AttrType::kString:
      return std::holds_alternative<std::string>(v);
  }
  return false;
}

}  // namespace

AttrCheck positive() {
  return {"be positive", [](const AttrValue& v) {
            std::vector<int64_t> x = ints_of(v);
            return std::all_of(x.begin(), x.end(), [](int64_t i) { return i > 0; });
          }};
}

AttrCheck non_negative() {
  return {"be non-negative", [](const AttrValue& v) {
            std::vector<int64_t> x = ints_of(v);
            return std::all_of(x.begin(), x.end(), [](int64_t i) { return i >= 0; });
          }};
}

AttrCheck length(size_t n) {
  return {str("have ", n, " values"), [n](const AttrValue& v) {
            if (const auto* l = std::get_if<std::vector<int64_t>>(&v)) return l->size() == n;
            if (const auto* f = std::get_if<std::vector<double>>(&v)) return f->size() == n;
            return std::holds_alternative<int64_t>(v) && n == 1;
          }};
}

AttrCheck one_of(std::vector<int64_t> values) {
  std::string what = "be ";
  for (size_t k = 0; k < values.size(); ++k)
    what += (k == 0 ? "" : k + 1 == values.size() ? " or " : ", ") + std::to_string(values[k]);
  return {what, [values](const AttrValue& v) {
            const int64_t* i = std::get_if<int64_t>(&v);
            return i && std::find(values.begin(), values.end(), *i) != values.end();
          }};
}

AttrCheck one_of(std::vector<std::string> values) {
  std::string what = "be ";
  for (size_t k = 0; k < values.size(); ++k)
    what += (k == 0 ? "'" : k + 1 == values.size() ? " or '" : ", '") + values[k] + "'";
  return {what, [values](const AttrValue& v) {
            const std::string* s = std::get_if<std::string>(&v);
            return s && std::find(values.begin(), values.end(), *s) != values.end();
          }};
}

AttrCheck not_nan() {
  return {"be a number", [](const AttrValue& v) {
            const double* d = std::get_if<double>(&v);
            return !d || !std::isnan(*d);
          }};
}

void check_attrs(const OpDef& def, const Attrs& attrs) {
  const std::vector<AttrSpec>& specs = def.attrs;
  for (const auto& entry : attrs.values()) {
    // Named, not a structured binding: clang 14 cannot capture those in a lambda.
    const std::string& name = entry.first;
    const AttrValue& value = entry.second;
    auto spec =
        std::find_if(specs.begin(), specs.end(), [&](const AttrSpec& s) { return s.name == name; });
    if (spec == specs.end()) {
      std::string known;
      for (const AttrSpec& s : specs) known += (known.empty() ? "'" : ", '") + s.name + "'";
      ANVIL_FAIL(def.name, ": unknown attribute '", name, "' (= ", attr_str(value), "); ",
                 known.empty() ? std::string("it takes none") : "it takes " + known);
    }
    ANVIL_CHECK(has_type(value, spec->type), def.name, ": attribute '", name, "' must be ",
                attr_type_name(spec->type), ", got ", attr_str(value));
    for (const AttrCheck& check : spec->checks) {
      ANVIL_CHECK(check.ok(value), def.name, ": attribute '", name, "' must ", check.what, ", got ",
                  attr_str(value));
    }
  }
  for (const AttrSpec& spec : specs) {
    ANVIL_CHECK(!spec.required || attrs.has(spec.name), def.name, ": missing attribute '",
                spec.name, "' (required: ", spec.doc, ")");
  }
}

std::string to_string(const TensorType& t) {
  std::ostringstream os;
  os << t.dtype << "[";
  for (size_t i = 0; i < t.shape.size(); ++i) os << (i ? ", " : "") << t.shape[i];
  os << "]";
  return os.str();
}

namespace {

std::map<std::string, OpDef>& registry() {
  static std::map<std::string, OpDef> ops;
  return ops;
}

// Each family's registration (families.h).
void register_all() {
  register_elementwise_ops();
  register_elementwise_math_ops();
  register_indexing_ops();
  register_scatter_scan_ops();
  register_grid_sample_ops();
  register_dense_ops();
  register_dense_int8_ops();
  register_conv_ops();
  register_conv_int8_ops();
  register_depthwise_int8_ops();
  register_pool_norm_ops();
  register_transform_ops();
  register_reduce_ops();
  register_conv_nchwc_ops();
  register_conv_transpose_nchwc_ops();
  register_winograd_ops();
  register_recurrent_ops();
  register_window_nd_ops();
  register_control_ops();
}

void ensure_registered() {
  static std::once_flag once;
  std::call_once(once, register_all);
}

}  // namespace

namespace {

// `attrs` naming `op` (a copy only when it names none or another: tests and passes build Attrs
// without the op's name), so that reads find the schema's defaults and errors name the op.
class Named {
 public:
  Named(const std::string& op, const Attrs& attrs) : attrs_(&attrs) {
    if (attrs.op() != op) attrs_ = &(copy_ = Attrs(op, attrs.values()));
  }
  Named(const Named&) = delete;  // attrs_ may point into copy_
  operator const Attrs&() const { return *attrs_; }

 private:
  const Attrs* attrs_;
  Attrs copy_;
};

template <typename T>
decltype(auto) name_attrs(const std::string&, T&& x) {
  return std::forward<T>(x);
}
Named name_attrs(const std::string& op, const Attrs& attrs) {
  return Named(op, attrs);
}

// Wraps f so that its Attrs argument names the op.
template <typename R, typename... Args>
void wrap(std::function<R(Args...)>& f, const std::string& op) {
  if (!f) return;
  f = [inner = std::move(f), op](Args... args) -> R {
    return inner(name_attrs(op, std::forward<Args>(args))...);
  };
}

}  // namespace

namespace {

// float16_via_float32: float16 types made float32; whether there was one.
bool widen_types(std::vector<TensorType>& types) {
  bool any = false;
  for (TensorType& t : types) {
    if (t.dtype != ir::DataType::Float(16)) continue;
    t.dtype = ir::DataType::Float32();
    any = true;
  }
  return any;
}

// infer and reference of a float16_via_float32 op: with a float16 input, the float32 rule on
// float32 inputs, its float32 outputs float16.
void via_float32(OpDef& def) {
  if (def.infer) {
    def.infer = [inner = std::move(def.infer)](const std::vector<TensorType>& in,
                                               const Attrs& attrs) {
      std::vector<TensorType> wide = in;
      if (!widen_types(wide)) return inner(in, attrs);
      std::vector<TensorType> out = inner(wide, attrs);
      for (TensorType& t : out)
        if (t.dtype == ir::DataType::Float32()) t.dtype = ir::DataType::Float(16);
      return out;
    };
  }
  if (def.reference) {
    def.reference = [inner = std::move(def.reference)](const std::vector<runtime::NDArray>& in,
                                                       const Attrs& attrs) {
      const ir::DataType f16 = ir::DataType::Float(16), f32 = ir::DataType::Float32();
      std::vector<runtime::NDArray> wide = in;
      bool any = false;
      for (runtime::NDArray& a : wide) {
        if (from_dlpack(a.dtype()) != f16) continue;
        a = host::float_converted(a, f32);
        any = true;
      }
      if (!any) return inner(in, attrs);
      std::vector<runtime::NDArray> out = inner(wide, attrs);
      for (runtime::NDArray& a : out)
        if (from_dlpack(a.dtype()) == f32) a = host::float_converted(a, f16);
      return out;
    };
  }
}

}  // namespace

void register_op(OpDef def) {
  ANVIL_ICHECK(!def.name.empty() && !registry().count(def.name), "operator '", def.name,
               "' registered twice");
  const std::string& op = def.name;
  if (def.float16_via_float32) via_float32(def);
  if (def.infer) {
    // The schema first: the shape rule may rely on what it checks.
    OpDef schema;
    schema.name = def.name;
    schema.attrs = def.attrs;
    def.infer = [inner = std::move(def.infer), schema](const std::vector<TensorType>& in,
                                                       const Attrs& attrs) {
      Named named(schema.name, attrs);
      check_attrs(schema, named);
      return inner(in, named);
    };
  }
  wrap(def.compute, op);
  wrap(def.reference, op);
  wrap(def.flops, op);
  wrap(def.space, op);
  wrap(def.space_gpu, op);
  wrap(def.schedule_gpu, op);
  wrap(def.sample_inputs, op);
  std::string name = def.name;
  registry().emplace(std::move(name), std::move(def));
}

namespace {

const OpDef* find_op(const std::string& name) {
  if (name.empty()) return nullptr;
  ensure_registered();
  auto it = registry().find(name);
  return it == registry().end() ? nullptr : &it->second;
}

}  // namespace

const OpDef& lookup(const std::string& name) {
  ensure_registered();
  auto it = registry().find(name);
  ANVIL_CHECK(it != registry().end(), "unknown operator '", name, "'");
  return it->second;
}

std::vector<std::string> registered_ops() {
  ensure_registered();
  std::vector<std::string> names;
  for (const auto& [name, _] : registry()) names.push_back(name);
  return names;
}

ConfigSpace space_for(const OpDef& def, const std::vector<TensorType>& inputs, const Attrs& attrs,
                      const Target& target) {
  if (target.is_gpu()) return def.space_gpu ? def.space_gpu(inputs, attrs, target) : ConfigSpace{};
  return def.space ? def.space(inputs, attrs, target) : ConfigSpace{};
}

void schedule_for(const OpDef& def, te::Schedule& s, const std::vector<te::Tensor>& outs,
                  const Attrs& attrs, const Target& target, const Config& config) {
  if (target.is_gpu()) {
    if (def.schedule_gpu) {
      def.schedule_gpu(s, outs, attrs, target, config);
    } else {
      schedule_gpu_default(s, outs, target, config);
    }
    return;
  }
  ANVIL_CHECK(def.schedule_x86, "operator '", def.name, "' has no x86 schedule");
  def.schedule_x86(s, outs, target, config);
}

std::vector<ir::Expr> to_exprs(const std::vector<int64_t>& shape) {
  std::vector<ir::Expr> out;
  for (int64_t d : shape) {
    ANVIL_CHECK(d > 0 && d <= INT32_MAX, "dimension ", d, " is out of range");
    out.push_back(static_cast<int>(d));
  }
  return out;
}

std::vector<int64_t> shape_of(const te::Tensor& t) {
  std::vector<int64_t> out;
  for (const ir::Expr& d : t->shape) {
    std::optional<int64_t> v = ir::as_const_int(d);
    ANVIL_CHECK(v, "tensor '", t.name(), "' has a symbolic shape");
    out.push_back(*v);
  }
  return out;
}

TensorType type_of(const te::Tensor& t) {
  return {shape_of(t), t->dtype};
}

int64_t knob(const Config& config, const std::string& name, int64_t fallback) {
  auto it = config.find(name);
  return it == config.end() ? fallback : it->second;
}

DLDataType to_dlpack(ir::DataType t) {
  return DLDataType{static_cast<uint8_t>(t.code()), static_cast<uint8_t>(t.bytes() * 8),
                    static_cast<uint16_t>(t.lanes())};
}

ir::DataType from_dlpack(DLDataType t) {
  auto code = static_cast<ir::DataType::Code>(t.code);
  if (code == ir::DataType::Code::kBool) return ir::DataType::Bool(t.lanes);
  return ir::DataType(code, t.bits, t.lanes);
}

std::string list_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

double numel(const TensorType& t) {
  double n = 1;
  for (int64_t d : t.shape) n *= static_cast<double>(d);
  return n;
}

const std::vector<int64_t>& flops_operand(const std::string& op, const std::vector<TensorType>& v,
                                          bool is_input, size_t i, size_t min_rank) {
  ANVIL_CHECK(i < v.size() && v[i].shape.size() >= min_rank, "flops: operator '", op, "' needs ",
              is_input ? "input " : "output ", i, " of rank at least ", min_rank, ", got ",
              i < v.size() ? to_string(v[i]) : std::string("none"));
  return v[i].shape;
}

FlopsFn flops_none() {
  return [](const std::vector<TensorType>&, const std::vector<TensorType>&, const Attrs&) {
    return 0.0;
  };
}

FlopsFn flops_per_output(double per) {
  return [per](const std::vector<TensorType>&, const std::vector<TensorType>& out, const Attrs&) {
    double n = 0;
    for (const TensorType& t : out) n += numel(t);
    return per * n;
  };
}

FlopsFn flops_per_input(double per) {
  return
      [per](const std::vector<TensorType>& in, const std::vector<TensorType>&, const Attrs& attrs) {
        return per * numel(TensorType{flops_operand(attrs.op(), in, true, 0, 0), {}});
      };
}

}  // namespace anvil::ops
