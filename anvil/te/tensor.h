// Tensor expressions: an operator is written once as a function from output coordinates to a
// value, independent of any loop structure (te::compute), over inputs declared by
// te::placeholder. A tensor read `A(i, k)` is a Load of A's buffer, so compute bodies are plain
// loop-level IR.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "anvil/ir/expr.h"

namespace anvil::te {

using ir::Buffer;
using ir::DataType;
using ir::Expr;
using ir::IterVar;
using ir::Var;

// A run-time precondition of a compute: `condition` holds at every point of `axis`'s domain, or
// the kernel fails with `message` before computing anything. It reads only the compute's inputs,
// so it runs once over them (e.g. over a gather's indices, not over every output element).
struct TensorNode;
struct Check {
  std::vector<IterVar> axis;
  Expr condition;
  std::string message;
  std::vector<ir::Ref<TensorNode>> inputs;  // the tensors the condition reads
};

// What an integer tensor is known to hold: every element in [min, max].
struct ValueRange {
  int64_t min = 0, max = 0;
};

// A tensor is the single output of its operation: a placeholder (an input) or a compute.
struct TensorNode final : ir::RefCounted {
  enum class Kind { kPlaceholder, kCompute };
  Kind kind;
  std::string name;
  DataType dtype;
  std::vector<Expr> shape;
  Buffer buffer;  // the storage reads and writes go through
  // Compute only: one data-parallel axis per output dimension, the reduction axes of a
  // top-level Reduce body, the body, and the tensors the body reads (in first-read order).
  std::vector<IterVar> axis;
  std::vector<IterVar> reduce_axis;
  Expr body;
  std::vector<ir::Ref<TensorNode>> inputs;
  std::vector<Check> checks;  // compute only: preconditions on its inputs
  // Placeholders of integers: the values declared when the caller knows them (constant weights
  // quantized to 7 bits, say); tensorize's intrinsics may need them (te/tensor_intrin.h).
  std::optional<ValueRange> values;
};

class Tensor : public ir::Ref<TensorNode> {
 public:
  using Ref::Ref;
  // The element at `indices` (one per dimension): a Load of this tensor's buffer. Integer
  // literals are int32; index expressions of other integer types are accepted as they are.
  Expr operator()(std::vector<Expr> indices) const;
  template <typename... Args>
  Expr operator()(Args... indices) const {
    return (*this)(std::vector<Expr>{Expr(indices)...});
  }
  int ndim() const { return static_cast<int>(get()->shape.size()); }
  const std::string& name() const { return get()->name; }
  bool is_compute() const { return get()->kind == TensorNode::Kind::kCompute; }
};

// An input of the given shape and element type; an integer one may declare the values it holds.
Tensor placeholder(std::vector<Expr> shape, DataType dtype, std::string name,
                   std::optional<ValueRange> values = std::nullopt);
// The values an integer tensor may hold: those declared, else all of its element type's.
ValueRange value_range(const Tensor& t);

// The tensor whose element at (i0, i1, ...) is fcompute({i0, i1, ...}). The body may be a
// Reduce (te::sum, te::max, te::min) at the top level. Throws anvil::Error naming the tensor when
// the body reads a tensor outside this library or has the wrong shape of indices.
Tensor compute(std::vector<Expr> shape,
               const std::function<Expr(const std::vector<Var>&)>& fcompute, std::string name);
// A compute with run-time preconditions on its inputs (see Check). A tensor a check reads becomes
// an input of the compute.
Tensor compute(std::vector<Expr> shape,
               const std::function<Expr(const std::vector<Var>&)>& fcompute, std::string name,
               std::vector<Check> checks);
// The check that fcondition({i0, i1, ...}) holds for every point of `shape`.
Check check_all(std::vector<Expr> shape,
                const std::function<Expr(const std::vector<Var>&)>& fcondition,
                std::string message);
// Conveniences for 1-, 2-, 3- and 4-dimensional computes.
Tensor compute(std::vector<Expr> shape, const std::function<Expr(Var)>& f, std::string name);
Tensor compute(std::vector<Expr> shape, const std::function<Expr(Var, Var)>& f, std::string name);
Tensor compute(std::vector<Expr> shape, const std::function<Expr(Var, Var, Var)>& f,
               std::string name);
Tensor compute(std::vector<Expr> shape, const std::function<Expr(Var, Var, Var, Var)>& f,
               std::string name);

// A reduction axis over [min, min + extent).
IterVar reduce_axis(Expr min, Expr extent, std::string name);
inline IterVar reduce_axis(Expr extent, std::string name) {
  return reduce_axis(0, std::move(extent), std::move(name));
}

// Commutative reductions of `source` over `axis` (where `condition` holds, when given).
Expr sum(Expr source, std::vector<IterVar> axis, Expr condition = Expr());
Expr max(Expr source, std::vector<IterVar> axis, Expr condition = Expr());
Expr min(Expr source, std::vector<IterVar> axis, Expr condition = Expr());
// A user-defined reduction.
Expr reduce(ir::CommReducer combiner, Expr source, std::vector<IterVar> axis,
            Expr condition = Expr());

// A compute tensor from parts already built (used by schedule transformations): `axis` are its
// data-parallel iteration variables, `body` is written over them, `inputs` are the tensors the
// body reads.
Tensor make_compute(std::string name, std::vector<Expr> shape, std::vector<IterVar> axis, Expr body,
                    std::vector<Tensor> inputs);

// True when `body` loads from `buffer`.
bool reads_buffer(const Expr& body, const ir::BufferNode* buffer);

// Every tensor `outputs` depend on, producers before consumers.
std::vector<Tensor> topological_order(const std::vector<Tensor>& outputs);

}  // namespace anvil::te
