#include "anvil/ops/op.h"

#include <mutex>
#include <sstream>

#include "anvil/ir/op.h"
#include "anvil/ops/families.h"
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

template <typename T>
const T* find_as(const std::map<std::string, AttrValue>& values, const std::string& op,
                 const std::string& name, const char* kind) {
  auto it = values.find(name);
  if (it == values.end()) return nullptr;
  const T* v = std::get_if<T>(&it->second);
  ANVIL_CHECK(v, op, ": attribute '", name, "' must be ", kind);
  return v;
}

}  // namespace

int64_t Attrs::get_int(const std::string& name) const {
  const int64_t* v = find_as<int64_t>(values_, op_, name, "an integer");
  ANVIL_CHECK(v, op_, ": missing attribute '", name, "'");
  return *v;
}

int64_t Attrs::get_int(const std::string& name, int64_t fallback) const {
  const int64_t* v = find_as<int64_t>(values_, op_, name, "an integer");
  return v ? *v : fallback;
}

double Attrs::get_float(const std::string& name) const {
  ANVIL_CHECK(has(name), op_, ": missing attribute '", name, "'");
  return get_float(name, 0.0);
}

double Attrs::get_float(const std::string& name, double fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  if (const int64_t* i = std::get_if<int64_t>(&it->second)) return static_cast<double>(*i);
  const double* d = std::get_if<double>(&it->second);
  ANVIL_CHECK(d, op_, ": attribute '", name, "' must be a number");
  return *d;
}

std::vector<int64_t> Attrs::get_ints(const std::string& name) const {
  ANVIL_CHECK(has(name), op_, ": missing attribute '", name, "'");
  return get_ints(name, {});
}

std::vector<int64_t> Attrs::get_ints(const std::string& name, std::vector<int64_t> fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  if (const int64_t* i = std::get_if<int64_t>(&it->second)) return {*i};
  const std::vector<int64_t>* v = std::get_if<std::vector<int64_t>>(&it->second);
  ANVIL_CHECK(v, op_, ": attribute '", name, "' must be a list of integers");
  return *v;
}

std::string Attrs::get_string(const std::string& name) const {
  const std::string* v = find_as<std::string>(values_, op_, name, "a string");
  ANVIL_CHECK(v, op_, ": missing attribute '", name, "'");
  return *v;
}

std::string Attrs::get_string(const std::string& name, std::string fallback) const {
  const std::string* v = find_as<std::string>(values_, op_, name, "a string");
  return v ? *v : fallback;
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
  register_dense_ops();
  register_conv_ops();
  register_pool_norm_ops();
  register_transform_ops();
  register_reduce_ops();
  register_conv_nchwc_ops();
  register_conv_transpose_nchwc_ops();
  register_winograd_ops();
  register_recurrent_ops();
  register_window_nd_ops();
}

void ensure_registered() {
  static std::once_flag once;
  std::call_once(once, register_all);
}

}  // namespace

void register_op(OpDef def) {
  ANVIL_ICHECK(!def.name.empty() && !registry().count(def.name), "operator '", def.name,
               "' registered twice");
  std::string name = def.name;
  registry().emplace(std::move(name), std::move(def));
}

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

std::vector<int64_t> ints_attr(const std::string& op, const Attrs& attrs, const std::string& name,
                               size_t n, int64_t fallback, int64_t min_value, const char* what,
                               bool required) {
  ANVIL_CHECK(!required || attrs.has(name), op, ": attribute '", name, "' is required (", n,
              " values)");
  std::vector<int64_t> v = attrs.get_ints(name, std::vector<int64_t>(n, fallback));
  ANVIL_CHECK(v.size() == n, op, ": attribute '", name, "' must have ", n, " values, got ",
              list_str(v));
  for (int64_t x : v) {
    ANVIL_CHECK(x >= min_value, op, ": attribute '", name, "' must be ", what, ", got ",
                list_str(v));
  }
  return v;
}

}  // namespace anvil::ops
