#include "anvil/te/tensorize.h"

#include <optional>

#include "anvil/arith/simplify.h"
#include "anvil/ir/equal.h"
#include "anvil/ir/op.h"
#include "anvil/ir/printer.h"
#include "anvil/ir/substitute.h"
#include "anvil/ir/visitor.h"
#include "anvil/support/error.h"

namespace anvil::te {

namespace {

using ir::Load;
using ir::VarMap;

// The loads of an expression in visit order, not looking into their indices.
class CollectLoads : public ir::IRVisitor {
 public:
  using ir::IRVisitor::visit;
  void visit(const Load* op) override { loads.push_back(op); }
  std::vector<const Load*> loads;
};

// The k-th load (in the same order) replaced by replacements[k].
class ReplaceLoads : public ir::IRMutator {
 public:
  explicit ReplaceLoads(const std::vector<Expr>& replacements) : replacements_(replacements) {}
  using ir::IRMutator::mutate;

 protected:
  using ir::IRMutator::visit;
  Expr visit(const Load*) override { return replacements_.at(next_++); }

 private:
  const std::vector<Expr>& replacements_;
  size_t next_ = 0;
};

std::vector<const Load*> loads_of(const Expr& e) {
  CollectLoads c;
  c.visit(e);
  return c.loads;
}

class Matcher {
 public:
  Matcher(const std::string& stage, const TensorIntrin& intrin, const std::vector<IterVar>& loops,
          const std::vector<Expr>& extents, const arith::VarBounds& bounds)
      : stage_(stage), intrin_(intrin), loops_(loops), bounds_(bounds) {
    for (size_t i = 0; i < loops.size(); ++i) {
      if (std::optional<int64_t> n = ir::as_const_int(extents[i]); n && *n > 0)
        bounds_[loops[i]->var.get()] = arith::IntBounds::from_range(0, *n);
    }
  }

  template <typename... Args>
  [[noreturn]] void fail(const Args&... args) const {
    ANVIL_FAIL("tensorize of stage '", stage_, "' with ", intrin_.name, ": ", args...);
  }

  bool uses_loops(const Expr& e) const {
    for (const IterVar& l : loops_) {
      if (ir::uses_var(e, l->var.get())) return true;
    }
    return false;
  }

  // Where placeholder p (read or written at p_indices, in the loops' variables) lies in buffer
  // b (read or written at b_indices): p's dimensions are b's last ones, shifted by amounts that
  // do not change inside the loops, and b holds p's rows one after another.
  TensorRegion relate(const Buffer& b, const std::vector<Expr>& b_indices, const Tensor& p,
                      const std::vector<Expr>& p_indices) const {
    const size_t n = b_indices.size(), r = p_indices.size();
    if (n < r) fail("'", b->name, "' has ", n, " dimensions, fewer than ", p.name(), "'s ", r);
    TensorRegion region{b, {}};
    for (size_t d = 0; d < n; ++d) {
      Expr min = arith::simplify(d < n - r ? b_indices[d] : b_indices[d] - p_indices[d - (n - r)],
                                 bounds_);
      if (uses_loops(min)) {
        fail("'", b->name, "' is read at ", b_indices[d], " in dimension ", d, ", which ",
             d < n - r ? "changes inside the tensorized loops"
                       : "does not move with " + p.name() + "'s index " +
                             ir::to_string(p_indices[d - (n - r)]));
      }
      region.min.push_back(min);
    }
    if (!b->strides.empty()) fail("'", b->name, "' has padded strides; ", p.name(), " needs rows");
    for (size_t d = n - r + 1; d < n; ++d) {
      std::optional<int64_t> have = ir::as_const_int(b->shape[d]);
      std::optional<int64_t> want = ir::as_const_int(p->shape[d - (n - r)]);
      if (!have || have != want) {
        fail("dimension ", d, " of '", b->name, "' has extent ", b->shape[d], ", but ", p.name(),
             " needs its rows of ", p->shape[d - (n - r)], " elements one after another");
      }
    }
    return region;
  }

 private:
  const std::string& stage_;
  const TensorIntrin& intrin_;
  const std::vector<IterVar>& loops_;
  arith::VarBounds bounds_;  // the loops' ranges, the tensorized ones included
};

}  // namespace

ir::Stmt tensorize_update(const std::string& stage, const TensorIntrin& intrin,
                          const std::vector<IterVar>& loops, const std::vector<Expr>& extents,
                          const ir::Reduce& update, const Buffer& out,
                          const std::vector<Expr>& out_indices,
                          const std::function<ValueRange(const Buffer&)>& values_of,
                          const arith::VarBounds& bounds) {
  Matcher m(stage, intrin, loops, extents, bounds);
  const TensorNode& decl = *intrin.output;
  const ir::Reduce* want = decl.body.as<ir::Reduce>();
  ANVIL_CHECK(want, "tensor intrinsic ", intrin.name, ": its output is not a reduction");

  // The loops: the declaration's axes, then its reduction axes, with the same extents.
  std::vector<IterVar> axes = decl.axis;
  axes.insert(axes.end(), decl.reduce_axis.begin(), decl.reduce_axis.end());
  auto describe = [](const std::vector<IterVar>& ivs, const std::vector<Expr>& ext) {
    std::string s;
    for (size_t i = 0; i < ivs.size(); ++i)
      s += (i ? ", " : "") + ivs[i]->var.name() + ": " + ir::to_string(ext[i]);
    return "(" + s + ")";
  };
  std::vector<Expr> axis_extents;
  for (const IterVar& a : axes) axis_extents.push_back(a->dom.extent);
  bool same = loops.size() == axes.size();
  for (size_t i = 0; same && i < loops.size(); ++i) {
    same = ir::as_const_int(extents[i]) &&
           ir::as_const_int(extents[i]) == ir::as_const_int(axis_extents[i]) &&
           (loops[i]->kind == ir::IterKind::kReduce) == (axes[i]->kind == ir::IterKind::kReduce);
  }
  if (!same) {
    m.fail("the loops from there are ", describe(loops, extents), "; the intrinsic needs ",
           describe(axes, axis_extents), " (its axes, then its reduction axes)");
  }
  VarMap to_loops;
  for (size_t i = 0; i < axes.size(); ++i) to_loops[axes[i]->var.get()] = loops[i]->var;

  // The reduction: the same combiner, unconditional.
  const ir::CommReducerNode& have_r = *update.combiner;
  const ir::CommReducerNode& want_r = *want->combiner;
  Expr want_result = ir::substitute(
      want_r.result, VarMap{{want_r.lhs.get(), have_r.lhs}, {want_r.rhs.get(), have_r.rhs}});
  if (!ir::structural_equal(have_r.result, want_result) ||
      !ir::structural_equal(have_r.identity, want_r.identity)) {
    m.fail("the stage combines with ", have_r.result, ", the intrinsic with ", want_r.result);
  }
  if (!ir::is_one(update.condition) || !ir::is_one(want->condition))
    m.fail("a conditional reduction (", update.condition, ") cannot be tensorized");

  // The body: the declaration's, each placeholder read from one tensor.
  Expr want_source = ir::substitute(want->source, to_loops);
  std::vector<const Load*> have_loads = loads_of(update.source);
  std::vector<const Load*> want_loads = loads_of(want_source);
  std::vector<Expr> replaced;
  for (const Load* l : want_loads) replaced.push_back(l);
  if (have_loads.size() != want_loads.size() ||
      !ir::structural_equal(ReplaceLoads(replaced).mutate(update.source), want_source)) {
    m.fail("the stage computes ", update.source, ", the intrinsic ", want_source);
  }
  std::vector<std::optional<TensorRegion>> regions(intrin.inputs.size());
  for (size_t k = 0; k < want_loads.size(); ++k) {
    size_t p = 0;
    while (p < intrin.inputs.size() && !intrin.inputs[p]->buffer.same_as(want_loads[k]->buffer))
      ++p;
    ANVIL_CHECK(p < intrin.inputs.size(), "tensor intrinsic ", intrin.name, " reads '",
                want_loads[k]->buffer->name, "', which is not among its inputs");
    TensorRegion r = m.relate(have_loads[k]->buffer, have_loads[k]->indices, intrin.inputs[p],
                              want_loads[k]->indices);
    if (regions[p]) {
      bool agree = regions[p]->buffer.same_as(r.buffer);
      for (size_t d = 0; agree && d < r.min.size(); ++d)
        agree = arith::can_prove(regions[p]->min[d] == r.min[d]);
      if (!agree) m.fail(intrin.inputs[p].name(), " is read from two different places");
    }
    regions[p] = r;
  }
  std::vector<TensorRegion> inputs;
  std::vector<ValueRange> values;
  for (size_t p = 0; p < regions.size(); ++p) {
    if (!regions[p]) m.fail("the stage never reads ", intrin.inputs[p].name());
    inputs.push_back(*regions[p]);
    if (intrin.check_ranges) values.push_back(values_of(regions[p]->buffer));
  }
  if (intrin.check_ranges) {
    if (std::string why = intrin.check_ranges(values); !why.empty()) {
      std::string tensors;
      for (const TensorRegion& r : inputs)
        tensors += (tensors.empty() ? "" : ", ") + r.buffer->name;
      m.fail("the values of ", tensors, " rule it out: ", why);
    }
  }

  // The output: the declaration's, at its axes.
  if (out->dtype != decl.dtype)
    m.fail("the stage computes ", out->dtype, ", the intrinsic ", decl.dtype);
  std::vector<Expr> decl_indices;
  for (const IterVar& a : decl.axis) decl_indices.push_back(ir::substitute(a->var, to_loops));
  TensorRegion output = m.relate(out, out_indices, intrin.output, decl_indices);
  return intrin.emit(inputs, output);
}

}  // namespace anvil::te
