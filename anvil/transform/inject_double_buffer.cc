#include "anvil/transform/inject_double_buffer.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "anvil/arith/simplify.h"
#include "anvil/ir/op.h"
#include "anvil/ir/substitute.h"
#include "anvil/ir/visitor.h"
#include "anvil/transform/fresh_binders.h"

namespace anvil::transform {

using namespace ir;

namespace {

using VarSet = std::unordered_set<const Variable*>;

// The buffers (data variables) a statement reads and writes.
struct Uses : IRVisitor {
  using IRVisitor::visit;
  VarSet reads, writes;
  void visit(const Load* op) override {
    reads.insert(op->buffer->data.get());
    IRVisitor::visit(op);
  }
  void visit(const Store* op) override {
    writes.insert(op->buffer->data.get());
    IRVisitor::visit(op);
  }
};

// Accesses of the double-buffered buffers redirected into one half of their doubled buffers.
class Redirect : public IRMutator {
 public:
  struct Target {
    Buffer doubled;
    Expr size;  // elements of one half
  };
  Redirect(const std::unordered_map<const Variable*, Target>& to, Expr half)
      : to_(to), half_(std::move(half)) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Expr visit(const Load* op) override {
    Expr e = IRMutator::visit(op);
    const Load* load = e.as<Load>();
    auto it = to_.find(load->buffer->data.get());
    if (it == to_.end()) return e;
    return Load::make(it->second.doubled, {shift(load->indices[0], it->second)}, load->predicate);
  }
  Stmt visit(const Store* op) override {
    Stmt s = IRMutator::visit(op);
    const Store* store = s.as<Store>();
    auto it = to_.find(store->buffer->data.get());
    if (it == to_.end()) return s;
    return Store::make(it->second.doubled, store->value, {shift(store->indices[0], it->second)},
                       store->predicate);
  }

 private:
  Expr shift(const Expr& index, const Target& t) const {
    Expr offset = half_ * t.size;
    if (index.type().is_vector()) offset = Broadcast::make(offset, index.type().lanes());
    return index + offset;
  }
  const std::unordered_map<const Variable*, Target>& to_;
  Expr half_;
};

class InjectDoubleBuffer : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Stmt visit(const For* op) override {
    Stmt inner = IRMutator::visit(op);
    const For* loop = inner.as<For>();
    if (loop->kind == ForKind::kThreadBinding || loop->kind == ForKind::kParallel) return inner;
    // The body's allocations (with the double-buffer marks) around its statements.
    std::vector<Buffer> allocs;
    VarSet marked;
    std::vector<Stmt> stmts;
    flatten(loop->body, allocs, marked, stmts);
    if (marked.empty()) return inner;
    // The fetches: the leading statements that write only marked buffers and read none.
    size_t fetched = 0;
    VarSet fetch_writes;
    for (; fetched < stmts.size(); ++fetched) {
      Uses u;
      u.visit(stmts[fetched]);
      bool fetch = !u.writes.empty() &&
                   std::all_of(u.writes.begin(), u.writes.end(),
                               [&](const Variable* v) { return marked.count(v) > 0; }) &&
                   std::none_of(u.reads.begin(), u.reads.end(),
                                [&](const Variable* v) { return marked.count(v) > 0; });
      if (!fetch) break;
      fetch_writes.insert(u.writes.begin(), u.writes.end());
    }
    if (fetched == 0 || fetched == stmts.size()) return inner;

    std::unordered_map<const Variable*, Redirect::Target> doubled;
    std::vector<Buffer> kept, doubled_buffers;
    for (const Buffer& b : allocs) {
      if (!marked.count(b->data.get()) || !fetch_writes.count(b->data.get())) {
        kept.push_back(b);
        continue;
      }
      Expr size = b->shape[0];
      for (size_t d = 1; d < b->shape.size(); ++d) size = size * b->shape[d];
      size = arith::simplify(size);
      Buffer d = Buffer::make(b->name, b->dtype, {arith::simplify(size * 2)}, {}, b->scope);
      doubled[b->data.get()] = {d, size};
      doubled_buffers.push_back(d);
    }
    const Var& ko = loop->var;
    Expr end = loop->min + loop->extent;
    auto seq = [](std::vector<Stmt> v) { return v.size() == 1 ? v[0] : Seq::make(std::move(v)); };
    auto split_at = stmts.begin() + static_cast<std::ptrdiff_t>(fetched);
    Stmt fetch = seq(std::vector<Stmt>(stmts.begin(), split_at));
    auto fetch_at = [&](const Expr& k, const Expr& half) {
      Stmt s = substitute(fetch, VarMap{{ko.get(), k}});
      return with_fresh_binders(Redirect(doubled, half).mutate(s));
    };
    Expr two = make_const(ko.type(), 2);
    Stmt prefetch = IfThenElse::make(ko + 1 < end, fetch_at(ko + 1, floormod(ko + 1, two)));
    Stmt use =
        Redirect(doubled, floormod(ko, two)).mutate(seq(std::vector<Stmt>(split_at, stmts.end())));
    Stmt body = Seq::make({prefetch, use, Barrier::make(MemoryScope::kShared)});
    for (auto it = kept.rbegin(); it != kept.rend(); ++it) body = Allocate::make(*it, body);
    Stmt result = Seq::make(
        {fetch_at(loop->min, floormod(loop->min, two)), Barrier::make(MemoryScope::kShared),
         For::make(ko, loop->min, loop->extent, loop->kind, body, loop->thread_tag)});
    for (auto it = doubled_buffers.rbegin(); it != doubled_buffers.rend(); ++it) {
      result =
          AttrStmt::make("double_buffer_synced", (*it)->data, Expr(1), Allocate::make(*it, result));
    }
    return result;
  }

 private:
  // The loop body as allocations around a sequence of statements (allocations and marks are
  // transparent: their buffers live for the whole body either way).
  void flatten(const Stmt& s, std::vector<Buffer>& allocs, VarSet& marked,
               std::vector<Stmt>& stmts) {
    if (const AttrStmt* attr = s.as<AttrStmt>(); attr && attr->key == "double_buffer") {
      if (const Variable* v = attr->node.as<Variable>()) marked.insert(v);
      return flatten(attr->body, allocs, marked, stmts);
    }
    if (const Allocate* a = s.as<Allocate>()) {
      allocs.push_back(a->buffer);
      return flatten(a->body, allocs, marked, stmts);
    }
    if (const Seq* seq = s.as<Seq>()) {
      for (const Stmt& c : seq->stmts) flatten(c, allocs, marked, stmts);
      return;
    }
    stmts.push_back(s);
  }
};

}  // namespace

Stmt inject_double_buffer(const Stmt& s) {
  // Marks the pass did not consume (no loop to apply them in) are dropped.
  struct StripMarks : IRMutator {
    using IRMutator::mutate;
    using IRMutator::visit;
    Stmt visit(const AttrStmt* op) override {
      if (op->key == "double_buffer") return mutate(op->body);
      return IRMutator::visit(op);
    }
  };
  return StripMarks().mutate(InjectDoubleBuffer().mutate(s));
}

}  // namespace anvil::transform
