// The operator library's common ground. Each operator lives in one place (anvil/ops/<family>.cc)
// and registers an OpDef: its attributes' validation and shape rule, its tensor-expression
// compute, its naive reference (the tests' oracle, never called by compiled code), its default
// x86 schedule, its tunable knobs and its fusion pattern.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "anvil/ir/type.h"
#include "anvil/runtime/ndarray.h"
#include "anvil/target/target.h"
#include "anvil/te/schedule.h"

namespace anvil::ops {

// How an operator fuses with its neighbours (the TVM paper's four patterns).
enum class Pattern {
  kInjective,          // each output element depends on one input element (elementwise,
                       // broadcast, reshape, transpose, ...): fuses freely
  kReduction,          // reduces input dimensions (sum, max, softmax, ...): absorbs injective
                       // producers
  kComplexOutFusable,  // conv2d, dense, ...: absorbs the elementwise ops on its output
  kOpaque,             // fuses with nothing
};
const char* pattern_name(Pattern p);

// An attribute value: an integer, a float, lists of them, or a string.
using AttrValue =
    std::variant<int64_t, double, std::vector<int64_t>, std::vector<double>, std::string>;

// Named attributes of one operator instance. Accessors throw anvil::Error naming the operator and
// the attribute when it is missing or has the wrong kind.
class Attrs {
 public:
  Attrs() = default;
  Attrs(std::string op, std::map<std::string, AttrValue> values)
      : op_(std::move(op)), values_(std::move(values)) {}

  bool has(const std::string& name) const { return values_.count(name) != 0; }
  int64_t get_int(const std::string& name) const;
  int64_t get_int(const std::string& name, int64_t fallback) const;
  double get_float(const std::string& name) const;  // an integer value converts
  double get_float(const std::string& name, double fallback) const;
  std::vector<int64_t> get_ints(const std::string& name) const;
  std::vector<int64_t> get_ints(const std::string& name, std::vector<int64_t> fallback) const;
  std::string get_string(const std::string& name) const;
  std::string get_string(const std::string& name, std::string fallback) const;
  void set(const std::string& name, AttrValue value) { values_[name] = std::move(value); }

  const std::string& op() const { return op_; }
  const std::map<std::string, AttrValue>& values() const { return values_; }

 private:
  std::string op_;
  std::map<std::string, AttrValue> values_;
};

// The static type of a tensor.
struct TensorType {
  std::vector<int64_t> shape;
  ir::DataType dtype = ir::DataType::Float32();
  friend bool operator==(const TensorType&, const TensorType&) = default;
};
std::string to_string(const TensorType& t);  // "float32[1, 64, 56, 56]"

// A knob of a tunable template: a name and its candidate values (the first is the default the
// rule picked). The tuner searches the product of all knobs.
struct Knob {
  std::string name;
  std::vector<int64_t> values;
};
using ConfigSpace = std::vector<Knob>;
// One point of a space: knob name -> value. Missing knobs take their default.
using Config = std::map<std::string, int64_t>;

struct OpDef {
  std::string name;
  Pattern pattern = Pattern::kOpaque;
  // Output types from input types; rejects invalid attributes and shapes with an error naming
  // the op and the attribute or input.
  std::function<std::vector<TensorType>(const std::vector<TensorType>&, const Attrs&)> infer;
  // The tensor-expression definition of the outputs.
  std::function<std::vector<te::Tensor>(const std::vector<te::Tensor>&, const Attrs&)> compute;
  // Naive loops over host tensors: the tests' oracle.
  std::function<std::vector<runtime::NDArray>(const std::vector<runtime::NDArray>&, const Attrs&)>
      reference;
  // The default x86 schedule of `outs` (the op's outputs, computed by `compute`) in `s`, with
  // `config` overriding knobs of `space` (empty: the documented default rule).
  std::function<void(te::Schedule& s, const std::vector<te::Tensor>& outs, const Target& target,
                     const Config& config)>
      schedule_x86;
  // The knobs the tuner may search for these input types (empty when there is nothing to tune).
  std::function<ConfigSpace(const std::vector<TensorType>&, const Attrs&, const Target&)> space;
  // Optional: the operator's own GPU schedule and its knobs, as schedule_x86 and space are for
  // the CPU (absent: schedule_gpu_default, tuned when space_gpu is gpu_default_space, else not
  // at all). The schedule also gets the op's attributes.
  std::function<void(te::Schedule& s, const std::vector<te::Tensor>& outs, const Attrs& attrs,
                     const Target& target, const Config& config)>
      schedule_gpu;
  std::function<ConfigSpace(const std::vector<TensorType>&, const Attrs&, const Target&)> space_gpu;
  // Optional: inputs of these types on which the op is defined, when uniform random values are
  // not (Winograd's transformed weight must be the transform of a 3x3 one); the tuner checks its
  // candidates on them. `random(shape)` gives an array of uniform floats.
  std::function<std::vector<runtime::NDArray>(
      const std::vector<TensorType>&, const Attrs&,
      const std::function<runtime::NDArray(const std::vector<int64_t>&)>& random)>
      sample_inputs;
};

// The registry. register_op is called by each family's registration function (see ops.cc);
// lookup throws anvil::Error naming the operator when it is unknown.
void register_op(OpDef def);
const OpDef& lookup(const std::string& name);
std::vector<std::string> registered_ops();

// The knobs of `def` for these inputs on `target`: space, or space_gpu on a GPU target (empty
// when the op has none there).
ConfigSpace space_for(const OpDef& def, const std::vector<TensorType>& inputs, const Attrs& attrs,
                      const Target& target);
// Schedules `outs` in `s` for `target` with `config`: schedule_x86, or on a GPU target the op's
// schedule_gpu (schedule_gpu_default when it has none).
void schedule_for(const OpDef& def, te::Schedule& s, const std::vector<te::Tensor>& outs,
                  const Attrs& attrs, const Target& target, const Config& config);

// Helpers shared by the families.
std::vector<ir::Expr> to_exprs(const std::vector<int64_t>& shape);
std::vector<int64_t> shape_of(const te::Tensor& t);
TensorType type_of(const te::Tensor& t);
// The value of knob `name` in `config`, or `fallback`.
int64_t knob(const Config& config, const std::string& name, int64_t fallback);
// Between IR scalar types and DLPack's (bool is stored as one byte, code 6, as DLPack 0.8 has
// it; DLPack 0.6's header has no kDLBool).
DLDataType to_dlpack(ir::DataType t);
ir::DataType from_dlpack(DLDataType t);
// "[1, 2, 3]": lists in error messages.
std::string list_str(const std::vector<int64_t>& v);
// Integer-list attribute `name` of operator `op`: exactly n values, each at least min_value (`what`
// names that rule in the error, e.g. "positive"); n copies of `fallback` when absent, or an error
// when `required`.
std::vector<int64_t> ints_attr(const std::string& op, const Attrs& attrs, const std::string& name,
                               size_t n, int64_t fallback, int64_t min_value, const char* what,
                               bool required = false);

}  // namespace anvil::ops
