// insert_barriers (declared in split_host_device.h): the shared-memory synchronization of a
// kernel's threads.
//
// Walking the body in program order, `pending` holds the shared buffers read and written since
// the last barrier. A statement that reads a pending write, or writes a pending read, needs a
// barrier before it. Lets, annotations and allocations are transparent, so a barrier
// lands right before the statement that needs it however the allocations nest. A loop whose body
// writes shared memory that its end still reads (after its last barrier) gets a barrier at its
// top too, for the next iteration. Accesses of one statement to itself need nothing: a thread
// reads and writes its own element in order.
#include <algorithm>
#include <unordered_set>

#include "anvil/ir/op.h"
#include "anvil/ir/substitute.h"
#include "anvil/ir/visitor.h"
#include "anvil/support/error.h"
#include "anvil/transform/split_host_device.h"

namespace anvil::transform {

using namespace ir;

namespace {

using VarSet = std::unordered_set<const Variable*>;

struct Accesses {
  VarSet reads, writes;
  bool empty() const { return reads.empty() && writes.empty(); }
  void add(const Accesses& o) {
    reads.insert(o.reads.begin(), o.reads.end());
    writes.insert(o.writes.begin(), o.writes.end());
  }
};

bool intersects(const VarSet& a, const VarSet& b) {
  return std::any_of(a.begin(), a.end(), [&](const Variable* v) { return b.count(v) > 0; });
}

// The shared-memory accesses anywhere inside a statement or expression.
// Buffers a pass has synchronized itself (inject_double_buffer's) are left out.
class SharedAccesses : public IRVisitor {
 public:
  explicit SharedAccesses(const VarSet& synced) : synced_(synced) {}
  using IRVisitor::visit;
  Accesses acc;
  void visit(const Load* op) override {
    if (tracked(op->buffer)) acc.reads.insert(op->buffer->data.get());
    IRVisitor::visit(op);
  }
  void visit(const Store* op) override {
    if (tracked(op->buffer)) acc.writes.insert(op->buffer->data.get());
    IRVisitor::visit(op);
  }

 private:
  bool tracked(const Buffer& b) const {
    return b->scope == MemoryScope::kShared && !synced_.count(b->data.get());
  }
  const VarSet& synced_;
};

class BarrierInserter {
 public:
  BarrierInserter(const DeviceKernel& k) : kernel_(k) {
    for (const auto& [var, tag] : k.thread_vars) {
      if (tag.rfind("threadIdx", 0) == 0) thread_vars_.push_back(var.get());
    }
    struct Synced : IRVisitor {
      using IRVisitor::visit;
      VarSet vars;
      void visit(const AttrStmt* op) override {
        if (op->key == "double_buffer_synced") {
          if (const Variable* v = op->node.as<Variable>()) vars.insert(v);
        }
        IRVisitor::visit(op);
      }
    } synced;
    synced.visit(k.body);
    synced_ = synced.vars;
  }

  Stmt run() {
    Accesses pending;
    return sync(kernel_.body, pending, true);
  }

 private:
  bool varies_by_thread(const Expr& e) const {
    return std::any_of(thread_vars_.begin(), thread_vars_.end(),
                       [&](const Variable* v) { return uses_var(e, v); });
  }

  // Whether `acc` reads what is written, or writes what is read, since the last barrier. Two
  // writes need no order: threads writing one element would race with or without a barrier.
  static bool conflicts(const Accesses& pending, const Accesses& acc) {
    return intersects(acc.reads, pending.writes) || intersects(acc.writes, pending.reads);
  }

  // Whether a statement with accesses `acc` needs a barrier before it; if so, the barrier clears
  // `pending`. `uniform`: every thread of the block runs the statement.
  bool needs_barrier(Accesses& pending, const Accesses& acc, bool uniform) {
    if (!conflicts(pending, acc)) return false;
    std::string buffers;
    for (const Variable* v : pending.writes) buffers += (buffers.empty() ? "" : ", ") + v->name;
    ANVIL_CHECK(uniform, "GPU kernel '", kernel_.name,
                "': threads must synchronize on shared memory (", buffers,
                ") inside code that only some threads of the block run; bind the loops around it "
                "so that every thread reaches the barrier");
    pending = Accesses{};
    return true;
  }

  static Stmt with_barrier(Stmt s) { return Seq::make(Barrier::make(MemoryScope::kShared), s); }

  Stmt sync(const Stmt& s, Accesses& pending, bool uniform) {
    if (const Seq* seq = s.as<Seq>()) {
      std::vector<Stmt> out;
      for (const Stmt& c : seq->stmts) out.push_back(sync(c, pending, uniform));
      return Seq::make(out);
    }
    if (const Allocate* a = s.as<Allocate>()) {
      return Allocate::make(a->buffer, sync(a->body, pending, uniform));
    }
    if (const LetStmt* let = s.as<LetStmt>()) {
      bool u = uniform && !varies_by_thread(let->value);
      if (!u) thread_vars_.push_back(let->var.get());
      return LetStmt::make(let->var, let->value, sync(let->body, pending, u));
    }
    if (const AttrStmt* attr = s.as<AttrStmt>()) {
      return AttrStmt::make(attr->key, attr->node, attr->value, sync(attr->body, pending, uniform));
    }
    if (s.as<Barrier>()) {  // placed by an earlier pass: everything before it is visible
      if (uniform) pending = Accesses{};
      return s;
    }
    Accesses acc = accesses_of(s);
    if (acc.empty()) return s;
    if (const For* loop = s.as<For>()) return sync_loop(loop, pending, acc, uniform);
    if (const IfThenElse* branch = s.as<IfThenElse>()) {
      bool u = uniform && !varies_by_thread(branch->condition);
      if (!u) {
        // Only some threads enter: what it needs from before is synchronized before it.
        bool barrier = needs_barrier(pending, acc, uniform);
        Accesses inner_then, inner_else;
        Stmt then_case = sync(branch->then_case, inner_then, false);
        Stmt else_case;
        if (branch->else_case.defined()) else_case = sync(branch->else_case, inner_else, false);
        pending.add(acc);
        Stmt out = IfThenElse::make(branch->condition, then_case, else_case);
        return barrier ? with_barrier(out) : out;
      }
      Accesses after_else = pending;
      Stmt then_case = sync(branch->then_case, pending, u);
      Stmt else_case;
      if (branch->else_case.defined()) else_case = sync(branch->else_case, after_else, u);
      pending.add(after_else);
      return IfThenElse::make(branch->condition, then_case, else_case);
    }
    // A leaf: a store, an evaluation.
    bool barrier = needs_barrier(pending, acc, uniform);
    pending.add(acc);
    return barrier ? with_barrier(s) : s;
  }

  Stmt sync_loop(const For* loop, Accesses& pending, const Accesses& acc, bool uniform) {
    bool u = uniform && !varies_by_thread(loop->min) && !varies_by_thread(loop->extent);
    Accesses inner;
    Stmt body = sync(loop->body, inner, u);
    std::optional<int64_t> trips = as_const_int(loop->extent);
    // The next iteration's accesses against this one's since its last barrier.
    if ((!trips || *trips > 1) && conflicts(inner, acc)) {
      ANVIL_CHECK(u, "GPU kernel '", kernel_.name, "': loop '", loop->var->name,
                  "' must synchronize its threads between iterations, but only some threads "
                  "run it");
      body = with_barrier(body);
    }
    Stmt out = For::make(loop->var, loop->min, loop->extent, loop->kind, body, loop->thread_tag);
    // Its first accesses may be any of its accesses: against what precedes the loop.
    bool barrier = needs_barrier(pending, acc, uniform);
    pending.add(acc);
    return barrier ? with_barrier(out) : out;
  }

  Accesses accesses_of(const Stmt& s) const {
    SharedAccesses v(synced_);
    v.visit(s);
    return v.acc;
  }

  const DeviceKernel& kernel_;
  std::vector<const Variable*> thread_vars_;
  VarSet synced_;
};

}  // namespace

Stmt insert_barriers(const DeviceKernel& kernel) {
  return BarrierInserter(kernel).run();
}

}  // namespace anvil::transform
