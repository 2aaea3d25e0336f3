#include "anvil/te/tensor.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "anvil/ir/op.h"
#include "anvil/ir/printer.h"
#include "anvil/ir/visitor.h"
#include "anvil/support/error.h"

namespace anvil::te {

using namespace ir;

namespace {

// The tensors read while a compute body is being built, in first-read order.
thread_local std::vector<Tensor>* reads_in_progress = nullptr;

void check_shape(const std::vector<Expr>& shape, const std::string& name) {
  for (size_t d = 0; d < shape.size(); ++d) {
    ANVIL_CHECK(shape[d].defined() && shape[d].type().is_int() && shape[d].type().is_scalar(),
                "tensor '", name, "': dimension ", d, " must be a scalar signed integer");
    std::optional<int64_t> v = as_const_int(shape[d]);
    ANVIL_CHECK(!v || *v > 0, "tensor '", name, "': dimension ", d, " is ", *v,
                ", but extents must be positive");
  }
}

// Collects the buffers a body loads from.
class LoadedBuffers : public IRVisitor {
 public:
  using IRVisitor::visit;
  void visit(const Load* op) override {
    buffers.push_back(op->buffer);
    IRVisitor::visit(op);
  }
  std::vector<Buffer> buffers;
};

}  // namespace

Expr Tensor::operator()(std::vector<Expr> indices) const {
  const TensorNode& t = *get();
  ANVIL_CHECK(static_cast<int>(indices.size()) == ndim(), "tensor '", t.name, "' has ", ndim(),
              " dimensions but is read with ", indices.size(), " indices");
  for (size_t d = 0; d < indices.size(); ++d) {
    ANVIL_CHECK(indices[d].defined() && indices[d].type().is_int_or_uint(), "tensor '", t.name,
                "': index ", d, " must be an integer");
  }
  if (reads_in_progress) {
    bool seen = false;
    for (const Tensor& r : *reads_in_progress) seen |= r.same_as(*this);
    if (!seen) reads_in_progress->push_back(*this);
  }
  return Load::make(t.buffer, std::move(indices));
}

Tensor placeholder(std::vector<Expr> shape, DataType dtype, std::string name,
                   std::optional<ValueRange> values) {
  check_shape(shape, name);
  ANVIL_CHECK(dtype.is_scalar() && !dtype.is_handle(), "placeholder '", name,
              "': element type must be a scalar number or bool, not ", dtype);
  if (values) {
    ANVIL_CHECK(dtype.is_int_or_uint() && dtype.bits() <= 32, "placeholder '", name,
                "': values are declared for integers up to 32 bits, not ", dtype);
    ANVIL_CHECK(dtype.min_value() <= values->min && values->min <= values->max &&
                    values->max <= dtype.max_value(),
                "placeholder '", name, "': values [", values->min, ", ", values->max,
                "] are not a range of ", dtype);
  }
  TensorNode* node = new TensorNode();
  node->values = values;
  node->kind = TensorNode::Kind::kPlaceholder;
  node->name = name;
  node->dtype = dtype;
  node->shape = shape;
  node->buffer = Buffer::make(std::move(name), dtype, std::move(shape));
  return Tensor(node);
}

ValueRange value_range(const Tensor& t) {
  ANVIL_CHECK(t->dtype.is_int_or_uint() && t->dtype.bits() <= 32, "value_range of '", t.name(),
              "': ", t->dtype, " is not an integer type of up to 32 bits");
  if (t->values) return *t->values;
  return {t->dtype.min_value(), t->dtype.max_value()};
}

namespace {

// One data-parallel axis per dimension of `shape`, named i, j, k, l, i4, ...
std::vector<IterVar> data_axes(const std::vector<Expr>& shape) {
  static const char* const kAxisNames[] = {"i", "j", "k", "l"};
  std::vector<IterVar> axis;
  for (size_t d = 0; d < shape.size(); ++d) {
    std::string axis_name = d < 4 ? kAxisNames[d] : "i" + std::to_string(d);
    axis.push_back(IterVar::make(Var(axis_name, shape[d].type()),
                                 Range::make(make_zero(shape[d].type()), shape[d]),
                                 IterKind::kDataPar));
  }
  return axis;
}

std::vector<Var> vars_of(const std::vector<IterVar>& axis) {
  std::vector<Var> vars;
  for (const IterVar& iv : axis) vars.push_back(iv->var);
  return vars;
}

// f(), with the tensors it reads appended to `reads` (first-read order, no repeats).
template <typename F>
Expr recording_reads(std::vector<Tensor>* reads, const F& f) {
  std::vector<Tensor>* saved = reads_in_progress;
  reads_in_progress = reads;
  Expr e;
  try {
    e = f();
  } catch (...) {
    reads_in_progress = saved;
    throw;
  }
  reads_in_progress = saved;
  return e;
}

}  // namespace

Tensor compute(std::vector<Expr> shape,
               const std::function<Expr(const std::vector<Var>&)>& fcompute, std::string name) {
  return compute(std::move(shape), fcompute, std::move(name), {});
}

Check check_all(std::vector<Expr> shape,
                const std::function<Expr(const std::vector<Var>&)>& fcondition,
                std::string message) {
  check_shape(shape, "check");
  std::vector<IterVar> axis = data_axes(shape);
  std::vector<Var> vars = vars_of(axis);
  std::vector<Tensor> reads;
  Expr condition = recording_reads(&reads, [&] { return fcondition(vars); });
  ANVIL_CHECK(condition.defined() && condition.type() == DataType::Bool(), "check '", message,
              "': the condition must be a bool");
  Check c{std::move(axis), std::move(condition), std::move(message), {}};
  for (Tensor& t : reads) c.inputs.push_back(std::move(t));
  return c;
}

Tensor compute(std::vector<Expr> shape,
               const std::function<Expr(const std::vector<Var>&)>& fcompute, std::string name,
               std::vector<Check> checks) {
  check_shape(shape, name);
  std::vector<IterVar> axis = data_axes(shape);
  std::vector<Var> vars = vars_of(axis);
  std::vector<Tensor> reads;
  Expr body = recording_reads(&reads, [&] { return fcompute(vars); });
  ANVIL_CHECK(body.defined(), "compute '", name, "': the body is undefined");
  ANVIL_CHECK(body.type().is_scalar(), "compute '", name, "': the body must be a scalar, not ",
              body.type());

  // Reductions live only at the top of a body.
  std::vector<IterVar> reduce_axis;
  if (const Reduce* r = body.as<Reduce>()) reduce_axis = r->axis;
  class NestedReduce : public IRVisitor {
   public:
    using IRVisitor::visit;
    void visit(const Reduce*) override { found = true; }
    bool found = false;
  } nested;
  if (const Reduce* r = body.as<Reduce>()) {
    nested.visit(r->source);
    nested.visit(r->condition);
  } else {
    nested.visit(body);
  }
  ANVIL_CHECK(!nested.found, "compute '", name,
              "': a reduction may only be the whole body, not part of it: ", body);

  LoadedBuffers loaded;
  loaded.visit(body);
  for (const Buffer& b : loaded.buffers) {
    bool known = false;
    for (const Tensor& t : reads) known |= t->buffer.same_as(b);
    ANVIL_CHECK(known, "compute '", name, "' reads '", b->name,
                "', which was not read through a tensor inside this compute's body");
  }

  TensorNode* node = new TensorNode();
  node->kind = TensorNode::Kind::kCompute;
  node->name = name;
  node->dtype = body.type();
  node->shape = shape;
  node->buffer = Buffer::make(name, body.type(), std::move(shape));
  node->axis = std::move(axis);
  node->reduce_axis = std::move(reduce_axis);
  node->body = std::move(body);
  // A check's reads become inputs too: the check runs where they are ready.
  for (const Check& c : checks) {
    for (const auto& t : c.inputs) {
      bool known =
          std::any_of(reads.begin(), reads.end(), [&](const Tensor& r) { return r.same_as(t); });
      if (!known) reads.push_back(Tensor(t.get()));
    }
  }
  for (Tensor& t : reads) node->inputs.push_back(std::move(t));
  node->checks = std::move(checks);
  return Tensor(node);
}

namespace {

template <typename F, size_t... I>
Tensor compute_n(std::vector<Expr> shape, const F& f, std::string name, std::index_sequence<I...>) {
  constexpr size_t n = sizeof...(I);
  ANVIL_CHECK(shape.size() == n, "compute '", name, "': the shape has ", shape.size(),
              " dimensions but the body takes ", n, " indices");
  return compute(
      std::move(shape), [&](const std::vector<Var>& v) { return f(v[I]...); }, std::move(name));
}

}  // namespace

Tensor compute(std::vector<Expr> shape, const std::function<Expr(Var)>& f, std::string name) {
  return compute_n(std::move(shape), f, std::move(name), std::make_index_sequence<1>());
}
Tensor compute(std::vector<Expr> shape, const std::function<Expr(Var, Var)>& f, std::string name) {
  return compute_n(std::move(shape), f, std::move(name), std::make_index_sequence<2>());
}
Tensor compute(std::vector<Expr> shape, const std::function<Expr(Var, Var, Var)>& f,
               std::string name) {
  return compute_n(std::move(shape), f, std::move(name), std::make_index_sequence<3>());
}
Tensor compute(std::vector<Expr> shape, const std::function<Expr(Var, Var, Var, Var)>& f,
               std::string name) {
  return compute_n(std::move(shape), f, std::move(name), std::make_index_sequence<4>());
}

IterVar reduce_axis(Expr min, Expr extent, std::string name) {
  ANVIL_CHECK(min.defined() && extent.defined(), "reduce_axis '", name, "': undefined bound");
  Expr lo = min, n = extent;
  match_types(lo, n);
  if (std::optional<int64_t> e = as_const_int(n)) {
    ANVIL_CHECK(*e > 0, "reduce_axis '", name, "': extent is ", *e, ", but must be positive");
  }
  return IterVar::make(Var(std::move(name), n.type()), Range::make(lo, n), IterKind::kReduce);
}

Expr reduce(CommReducer combiner, Expr source, std::vector<IterVar> axis, Expr condition) {
  ANVIL_CHECK(!axis.empty(), "reduce: no reduction axis");
  return Reduce::make(std::move(combiner), std::move(source), std::move(axis),
                      std::move(condition));
}

Expr sum(Expr source, std::vector<IterVar> axis, Expr condition) {
  DataType t = source.type();
  return reduce(CommReducer::sum(t), std::move(source), std::move(axis), std::move(condition));
}

Expr max(Expr source, std::vector<IterVar> axis, Expr condition) {
  DataType t = source.type();
  return reduce(CommReducer::max(t), std::move(source), std::move(axis), std::move(condition));
}

Expr min(Expr source, std::vector<IterVar> axis, Expr condition) {
  DataType t = source.type();
  return reduce(CommReducer::min(t), std::move(source), std::move(axis), std::move(condition));
}

Tensor make_compute(std::string name, std::vector<Expr> shape, std::vector<IterVar> axis, Expr body,
                    std::vector<Tensor> inputs) {
  check_shape(shape, name);
  ANVIL_ICHECK(axis.size() == shape.size() && body.defined());
  TensorNode* node = new TensorNode();
  node->kind = TensorNode::Kind::kCompute;
  node->name = name;
  node->dtype = body.type();
  node->shape = shape;
  node->buffer = Buffer::make(std::move(name), body.type(), std::move(shape));
  node->axis = std::move(axis);
  if (const Reduce* r = body.as<Reduce>()) node->reduce_axis = r->axis;
  node->body = std::move(body);
  for (Tensor& t : inputs) node->inputs.push_back(std::move(t));
  return Tensor(node);
}

bool reads_buffer(const Expr& body, const BufferNode* buffer) {
  LoadedBuffers loaded;
  loaded.visit(body);
  return std::any_of(loaded.buffers.begin(), loaded.buffers.end(),
                     [&](const Buffer& b) { return b.get() == buffer; });
}

std::vector<Tensor> topological_order(const std::vector<Tensor>& outputs) {
  std::vector<Tensor> order;
  std::unordered_set<const TensorNode*> done;
  std::function<void(const Tensor&)> visit = [&](const Tensor& t) {
    if (!done.insert(t.get()).second) return;
    for (const auto& input : t->inputs) visit(Tensor(input.get()));
    order.push_back(t);
  };
  for (const Tensor& t : outputs) visit(t);
  return order;
}

}  // namespace anvil::te
