#include "anvil/transform/storage_rewrite.h"

#include <algorithm>
#include <climits>
#include <optional>
#include <unordered_map>
#include <vector>

#include "anvil/arith/simplify.h"
#include "anvil/ir/op.h"
#include "anvil/ir/visitor.h"

namespace anvil::transform {

using namespace ir;

namespace {

// How a step uses the data variables of the region's allocations.
class UseFinder : public IRVisitor {
 public:
  using IRVisitor::visit;

  void visit(const Load* op) override {
    access(op->buffer);
    IRVisitor::visit(op);
  }
  void visit(const Store* op) override {
    access(op->buffer);
    IRVisitor::visit(op);
  }
  void visit(const Variable* op) override { escaped.push_back(op); }

  std::vector<const Variable*> used;     // data variables of the buffers accessed
  std::vector<const Variable*> escaped;  // variables used as values (a data variable escapes)
  std::vector<const Variable*> strided;  // accessed through a multi-dimensional view

 private:
  void access(const Buffer& b) {
    used.push_back(b->data.get());
    if (b.ndim() != 1 || !b->strides.empty()) strided.push_back(b->data.get());
  }
};

// Accesses of the merged buffers rewritten to the allocation they share.
class Remap : public IRMutator {
 public:
  explicit Remap(const std::unordered_map<const Variable*, Buffer>& to) : to_(to) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Expr visit(const Load* op) override {
    Expr e = IRMutator::visit(op);
    auto it = to_.find(op->buffer->data.get());
    if (it == to_.end()) return e;
    const Load* load = e.as<Load>();
    return Load::make(it->second, load->indices, load->predicate);
  }

  Stmt visit(const Store* op) override {
    Stmt s = IRMutator::visit(op);
    auto it = to_.find(op->buffer->data.get());
    if (it == to_.end()) return s;
    const Store* store = s.as<Store>();
    return Store::make(it->second, store->value, store->indices, store->predicate);
  }

 private:
  const std::unordered_map<const Variable*, Buffer>& to_;
};

class StorageRewrite : public IRMutator {
 public:
  // Every statement the default visits reach is the root of a region.
  Stmt mutate(const Stmt& s) override { return region(s); }
  using IRMutator::mutate;

 private:
  struct Alloc {
    const Allocate* node;
    int first = -1, last = -1;  // live steps
    bool eligible = true;
    int64_t size = 0;
    int slot = -1;
  };
  struct Slot {
    std::vector<int> members;  // indices into allocs, in order of first use
    int last;
    int64_t size;
  };

  void gather(const Stmt& s, std::vector<Alloc>& allocs, std::vector<Stmt>& steps) {
    if (const Allocate* op = s.as<Allocate>()) {
      allocs.push_back({op});
      gather(op->body, allocs, steps);
    } else if (const Seq* op = s.as<Seq>()) {
      for (const Stmt& x : op->stmts) gather(x, allocs, steps);
    } else {
      steps.push_back(s);
    }
  }

  // The region's structure rebuilt around the new steps, without the merged Allocates.
  Stmt rebuild(const Stmt& s, const std::vector<Stmt>& steps, size_t& next,
               const std::unordered_map<const Variable*, Buffer>& merged) {
    if (const Allocate* op = s.as<Allocate>()) {
      Stmt body = rebuild(op->body, steps, next, merged);
      if (merged.count(op->buffer->data.get())) return body;
      if (body.same_as(op->body)) return op;
      return Allocate::make(op->buffer, body);
    }
    if (const Seq* op = s.as<Seq>()) {
      std::vector<Stmt> stmts;
      bool changed = false;
      for (const Stmt& x : op->stmts) {
        stmts.push_back(rebuild(x, steps, next, merged));
        changed |= !stmts.back().same_as(x);
      }
      return changed ? Seq::make(std::move(stmts)) : Stmt(op);
    }
    return steps[next++];
  }

  Stmt region(const Stmt& s) {
    if (!s.defined()) return s;
    std::vector<Alloc> allocs;
    std::vector<Stmt> steps;
    gather(s, allocs, steps);
    if (allocs.empty() && steps.size() == 1 && steps[0].same_as(s)) return IRMutator::mutate(s);

    // Inner regions first.
    std::vector<Stmt> new_steps;
    for (const Stmt& step : steps) new_steps.push_back(IRMutator::mutate(step));

    std::unordered_map<const Variable*, int> index;
    for (size_t a = 0; a < allocs.size(); ++a) {
      Alloc& alloc = allocs[a];
      const Buffer& b = alloc.node->buffer;
      index[b->data.get()] = static_cast<int>(a);
      std::optional<int64_t> size = b.ndim() == 1 && b->strides.empty()
                                        ? as_const_int(arith::simplify(b->shape[0]))
                                        : std::nullopt;
      alloc.eligible = size.has_value();
      alloc.size = size.value_or(0);
    }
    for (size_t t = 0; t < new_steps.size(); ++t) {
      UseFinder uses;
      uses.visit(new_steps[t]);
      for (const Variable* v : uses.used) {
        if (auto it = index.find(v); it != index.end()) {
          Alloc& alloc = allocs[it->second];
          if (alloc.first < 0) alloc.first = static_cast<int>(t);
          alloc.last = static_cast<int>(t);
        }
      }
      for (const auto* list : {&uses.escaped, &uses.strided}) {
        for (const Variable* v : *list) {
          if (auto it = index.find(v); it != index.end()) allocs[it->second].eligible = false;
        }
      }
    }

    // Greedy assignment in order of first use: a buffer joins a slot of its element type and
    // scope that is dead by then, preferring the smallest one that holds it.
    std::vector<int> order;
    for (size_t a = 0; a < allocs.size(); ++a) {
      if (allocs[a].eligible && allocs[a].first >= 0) order.push_back(static_cast<int>(a));
    }
    std::stable_sort(order.begin(), order.end(),
                     [&](int x, int y) { return allocs[x].first < allocs[y].first; });
    std::vector<Slot> slots;
    for (int a : order) {
      Alloc& alloc = allocs[a];
      const BufferNode& b = *alloc.node->buffer;
      int best = -1;
      for (size_t k = 0; k < slots.size(); ++k) {
        const BufferNode& owner = *allocs[slots[k].members[0]].node->buffer;
        if (owner.dtype != b.dtype || owner.scope != b.scope || slots[k].last >= alloc.first) {
          continue;
        }
        auto fits = [&](int j) { return slots[j].size >= alloc.size; };
        if (best < 0 || (fits(k) && (!fits(best) || slots[k].size < slots[best].size)) ||
            (!fits(k) && !fits(best) && slots[k].size > slots[best].size)) {
          best = static_cast<int>(k);
        }
      }
      if (best < 0) {
        slots.push_back({{a}, alloc.last, alloc.size});
      } else {
        slots[best].members.push_back(a);
        slots[best].last = alloc.last;
        slots[best].size = std::max(slots[best].size, alloc.size);
      }
    }

    std::unordered_map<const Variable*, Buffer> merged;
    std::vector<Buffer> hoisted;
    for (const Slot& slot : slots) {
      if (slot.members.size() < 2) continue;
      const Buffer& owner = allocs[slot.members[0]].node->buffer;
      DataType t = slot.size > INT32_MAX ? DataType::Int64() : owner->shape[0].type();
      Buffer shared = Buffer::make_flat(owner, make_const(t, slot.size));
      hoisted.push_back(shared);
      for (int a : slot.members) merged[allocs[a].node->buffer->data.get()] = shared;
    }
    if (!merged.empty()) {
      Remap remap(merged);
      for (Stmt& step : new_steps) step = remap.mutate(step);
    }
    size_t next = 0;
    Stmt out = rebuild(s, new_steps, next, merged);
    for (auto it = hoisted.rbegin(); it != hoisted.rend(); ++it) out = Allocate::make(*it, out);
    return out;
  }
};

}  // namespace

Stmt storage_rewrite(const Stmt& s) {
  return StorageRewrite().mutate(s);
}

}  // namespace anvil::transform
