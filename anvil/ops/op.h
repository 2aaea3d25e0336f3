// The operator library's common ground. Each operator lives in one place (anvil/ops/<family>.cc)
// and registers an OpDef: its attribute schema and shape rule, its tensor-expression compute, its
// naive reference (the tests' oracle, never called by compiled code), its FLOP count, its default
// x86 schedule, its tunable knobs, its fusion pattern and how it meets the blocked layout.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
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

// Named attributes of one operator instance, as given (never with defaults filled in: tuning
// records key on these values). A read of an absent attribute takes the default its op's schema
// declares (OpDef::attrs), so each default is stated once; the overloads with a fallback serve
// defaults that depend on the inputs (a schema entry without a default). Accessors throw
// anvil::Error naming the operator and the attribute when it is missing or has the wrong kind.
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
  // The value of `name`, else the schema's default, else null.
  const AttrValue* find(const std::string& name) const;

  std::string op_;
  std::map<std::string, AttrValue> values_;
};

// "3", "0.5", "[1, 2]", "'tanh'": attribute values in error messages.
std::string attr_str(const AttrValue& v);

// ---- attribute schema

enum class AttrType { kInt, kFloat, kInts, kFloats, kString };
const char* attr_type_name(AttrType t);  // "an integer", "a number", ...

// A rule an attribute's value must satisfy; `what` says it in errors ("conv2d: attribute
// 'strides' must be positive, got [0, 1]").
struct AttrCheck {
  std::string what;
  std::function<bool(const AttrValue&)> ok;
};
AttrCheck positive();                               // every integer > 0
AttrCheck non_negative();                           // every integer >= 0
AttrCheck length(size_t n);                         // a list of n values
AttrCheck one_of(std::vector<int64_t> values);      // an integer among these
AttrCheck one_of(std::vector<std::string> values);  // a string among these
AttrCheck not_nan();                                // a number that is not NaN

// One attribute an op declares.
struct AttrSpec {
  std::string name;
  AttrType type = AttrType::kInt;
  // The value when absent. None: the attribute is `required`, or its default depends on the inputs
  // (e.g. strides: 1 per spatial axis; `doc` says so) and the op resolves it when it reads.
  std::optional<AttrValue> fallback;
  std::vector<AttrCheck> checks;
  std::string doc;  // one line
  bool required = false;
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

// FLOPs of one application to inputs and outputs of these types (anvil/graph/flops.h says what
// is counted).
using FlopsFn = std::function<double(const std::vector<TensorType>& inputs,
                                     const std::vector<TensorType>& outputs, const Attrs& attrs)>;

// Every function of an OpDef is called with Attrs that name the op (register_op sees to it), and
// `infer` validates them against `attrs` first.
struct OpDef {
  std::string name;
  Pattern pattern = Pattern::kOpaque;
  // The attributes the op takes (empty: none). infer rejects an unknown name, a wrong type, a
  // missing required attribute and a failed check (the error names op, attribute and value), and
  // reads take the defaults from here.
  std::vector<AttrSpec> attrs;
  // The FLOP count. Every op with a compute has one (ops_schema_test); data movement declares
  // flops_none().
  FlopsFn flops;
  // Layout (alter_layout): the op runs unchanged on inputs in the blocked layout NCHW[x]c with
  // one block (broadcasting over N, H and W) and on constants that broadcast as scalars or per
  // channel, its output in that layout. Only for elementwise ops that keep the padded channels
  // finite (their inputs there are finite values, or zeros, that no consumer reads).
  bool keeps_blocked_layout = false;
  // float16 through float32: an op whose kernels are float32 (and float64) declares that it
  // takes float16 wherever it takes float32, computed in float32 with each float16 output rounded
  // to nearest even. register_op makes infer and reference do so; for compiled code the graph
  // pass widen_float16 puts the op between casts (so that the float32 kernels, blocked layouts and
  // packed weights serve it), as CPUs without half-precision arithmetic run such models.
  bool float16_via_float32 = false;
  // Layout: the op computing this one on a float32 4-d input in NCHW[x]c (pools: their *_nchwc
  // forms, with the same attributes), or empty.
  std::string blocked_form;
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

// The registry. register_op (which wraps the functions as OpDef says) is called by each family's
// registration function (see ops.cc); lookup throws anvil::Error naming the operator when it is
// unknown.
void register_op(OpDef def);
const OpDef& lookup(const std::string& name);
std::vector<std::string> registered_ops();
// Validates `attrs` against def.attrs.
void check_attrs(const OpDef& def, const Attrs& attrs);

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

// FLOP rules' helpers.
double numel(const TensorType& t);
// The shape of input (or output) i, which must have at least `min_rank` dimensions (else an error
// naming the op: "flops: operator 'x' needs input 1 of rank at least 6, got ...").
const std::vector<int64_t>& flops_operand(const std::string& op, const std::vector<TensorType>& v,
                                          bool is_input, size_t i, size_t min_rank);
FlopsFn flops_none();                      // data movement, layout and weight packing: 0
FlopsFn flops_per_output(double per = 1);  // `per` for each element of every output
FlopsFn flops_per_input(double per = 1);   // `per` for each element of input 0

}  // namespace anvil::ops
