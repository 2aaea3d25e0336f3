#include "anvil/transform/flatten_storage.h"

#include <algorithm>
#include <unordered_map>

#include "anvil/arith/simplify.h"
#include "anvil/ir/op.h"
#include "anvil/ir/visitor.h"

namespace anvil::transform {

using namespace ir;

namespace {

// A one-dimensional buffer without explicit strides needs no view.
bool is_flat(const Buffer& b) {
  return b.ndim() == 1 && b->strides.empty();
}

// The integer type the offset arithmetic of `b` is done in: int64 when an index, extent or
// stride is 64 bits wide, int32 otherwise.
DataType offset_type(const Buffer& b, const std::vector<Expr>& indices) {
  bool wide = false;
  for (const Expr& e : indices) wide |= e.type().bits() > 32;
  for (const Expr& e : b->shape) wide |= e.type().bits() > 32;
  for (const Expr& e : b->strides) wide |= e.type().bits() > 32;
  return wide ? DataType::Int64() : DataType::Int32();
}

// e in the integer type t (keeping its lanes). A Ramp or Broadcast is widened inside, so that
// the offset still simplifies to a Ramp (no overflow: index arithmetic never overflows).
Expr as_type(const Expr& e, DataType t) {
  if (e.type().element_of() == t) return e;
  if (const Ramp* r = e.as<Ramp>())
    return Ramp::make(cast(t, r->base), cast(t, r->stride), r->lanes);
  if (const Broadcast* b = e.as<Broadcast>()) return Broadcast::make(cast(t, b->value), b->lanes);
  return cast(t.with_lanes(e.type().lanes()), e);
}

// The strides of b's dimensions in elements, in type t.
std::vector<Expr> strides_of(const Buffer& b, DataType t) {
  int nd = b.ndim();
  std::vector<Expr> strides(nd);
  if (!b->strides.empty()) {
    for (int d = 0; d < nd; ++d) strides[d] = as_type(b->strides[d], t);
    return strides;
  }
  Expr s = make_one(t);
  for (int d = nd - 1; d >= 0; --d) {
    strides[d] = s;
    if (d > 0) s = arith::simplify(s * as_type(b->shape[d], t));
  }
  return strides;
}

class FlattenStorage : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Expr visit(const Load* op) override {
    bool changed = false;
    std::vector<Expr> indices = mutate_all(op->indices, &changed);
    Expr predicate = mutate(op->predicate);
    if (is_flat(op->buffer)) {
      if (!changed && predicate.same_as(op->predicate)) return op;
      return Load::make(op->buffer, std::move(indices), predicate);
    }
    return Load::make(flat(op->buffer), {flatten_index(op->buffer, indices)}, predicate);
  }

  Stmt visit(const Store* op) override {
    bool changed = false;
    Expr value = mutate(op->value);
    std::vector<Expr> indices = mutate_all(op->indices, &changed);
    Expr predicate = mutate(op->predicate);
    if (is_flat(op->buffer)) {
      if (!changed && value.same_as(op->value) && predicate.same_as(op->predicate)) return op;
      return Store::make(op->buffer, value, std::move(indices), predicate);
    }
    return Store::make(flat(op->buffer), value, {flatten_index(op->buffer, indices)}, predicate);
  }

  Stmt visit(const Allocate* op) override {
    Buffer b = flat(op->buffer);
    Stmt body = mutate(op->body);
    if (b.same_as(op->buffer) && body.same_as(op->body)) return op;
    return Allocate::make(b, body);
  }

 private:
  // One view per buffer, so an Allocate and the accesses in its body share one buffer node.
  Buffer flat(const Buffer& b) {
    Buffer& view = views_[b.get()];
    if (!view.defined()) view = flatten_buffer(b);
    return view;
  }

  std::unordered_map<const BufferNode*, Buffer> views_;
};

}  // namespace

Buffer flatten_buffer(const Buffer& buffer) {
  if (is_flat(buffer)) return buffer;
  DataType t = offset_type(buffer, {});
  Expr size;
  if (buffer->strides.empty()) {
    size = make_one(t);
    for (const Expr& n : buffer->shape) size = size * as_type(n, t);
  } else {
    // 1 + sum((n_d - 1) * stride_d), or 0 when a dimension is empty.
    size = make_one(t);
    Expr empty = make_bool(false);
    for (int d = 0; d < buffer.ndim(); ++d) {
      Expr n = as_type(buffer->shape[d], t);
      size = size + (n - 1) * as_type(buffer->strides[d], t);
      empty = empty || n == 0;
    }
    size = select(empty, make_zero(t), size);
  }
  return Buffer::make_flat(buffer, arith::simplify(size));
}

Expr flatten_index(const Buffer& buffer, const std::vector<Expr>& indices) {
  DataType t = offset_type(buffer, indices);
  std::vector<Expr> strides = strides_of(buffer, t);
  int lanes = 1;
  for (const Expr& i : indices) lanes = std::max(lanes, i.type().lanes());
  auto widen = [&](const Expr& e) {
    return lanes > 1 && e.type().is_scalar() ? Broadcast::make(e, lanes) : e;
  };
  Expr offset;
  for (size_t d = 0; d < indices.size(); ++d) {
    Expr term = widen(as_type(indices[d], t)) * widen(strides[d]);
    offset = offset.defined() ? offset + term : term;
  }
  if (!offset.defined()) return make_zero(t);  // a zero-dimensional buffer
  return arith::simplify(offset);
}

Stmt flatten_storage(const Stmt& s) {
  return FlattenStorage().mutate(s);
}

LoweredFunc flatten_storage(const LoweredFunc& f) {
  LoweredFunc out = f;
  out.body = flatten_storage(f.body);
  return out;
}

}  // namespace anvil::transform
