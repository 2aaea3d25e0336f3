#include "anvil/transform/split_host_device.h"

#include <algorithm>
#include <climits>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "anvil/ir/op.h"
#include "anvil/ir/printer.h"
#include "anvil/ir/substitute.h"
#include "anvil/ir/visitor.h"
#include "anvil/support/error.h"
#include "anvil/transform/remove_no_op.h"

namespace anvil::transform {

using namespace ir;

namespace {

// The most loop iterations a statement outside every bound loop may run on a single thread.
constexpr int64_t kMaxSingleThreadIterations = 1 << 16;

// Position of a thread tag in a launch's (grid, block) dimensions.
struct TagSlot {
  bool block_index;  // blockIdx (grid) or threadIdx (block)
  int dim;
};

TagSlot tag_slot(const std::string& tag) {
  return {tag.rfind("blockIdx.", 0) == 0, tag.back() - 'x'};
}

// A loop bound to blockIdx or threadIdx (not a virtual thread).
bool is_real_thread(const For* op) {
  return op->kind == ForKind::kThreadBinding && op->thread_tag.rfind("vthread", 0) != 0;
}

int64_t constant_bytes(const Buffer& b, const std::string& context) {
  int64_t bytes = int64_t{b->dtype.bytes()} * b->dtype.lanes();
  for (const Expr& e : b->shape) {
    std::optional<int64_t> n = as_const_int(e);
    ANVIL_CHECK(n && *n >= 0, context, "allocation '", b->name, "' has the extent ", e,
                ", which is not a constant: GPU kernels need static sizes");
    bytes *= *n;
  }
  return bytes;
}

// The thread-bound loops of one kernel: the largest extent bound to each index.
class ThreadExtents : public IRVisitor {
 public:
  explicit ThreadExtents(std::string context) : context_(std::move(context)) {}
  using IRVisitor::visit;
  std::map<std::string, int64_t> extent;
  std::map<std::string, DataType> type;

  void visit(const For* op) override {
    if (is_real_thread(op)) {
      std::optional<int64_t> n = as_const_int(op->extent);
      ANVIL_CHECK(n && is_zero(op->min), context_, "loop '", op->var->name, "' is bound to ",
                  op->thread_tag, " over ", op->extent,
                  ", which is not a constant extent from 0: GPU launches need static shapes");
      int64_t& e = extent[op->thread_tag];
      e = std::max(e, *n);
      type.emplace(op->thread_tag, op->var.type());
    } else if (op->kind == ForKind::kParallel) {
      ANVIL_FAIL(context_, "loop '", op->var->name,
                 "' is a CPU parallel loop; inside a GPU kernel, bind it to threadIdx instead");
    }
    IRVisitor::visit(op);
  }

 private:
  std::string context_;
};

// Replaces each thread-bound loop by the kernel's index variable, guarded when the loop's extent
// is smaller than the launch's; a virtual thread's loop becomes an unrolled loop of each thread.
class BindThreads : public IRMutator {
 public:
  BindThreads(const std::map<std::string, Var>& vars, const std::map<std::string, int64_t>& extent)
      : vars_(vars), extent_(extent) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Stmt visit(const For* op) override {
    if (op->kind == ForKind::kThreadBinding && !is_real_thread(op)) {
      return For::make(op->var, op->min, op->extent, ForKind::kUnrolled, mutate(op->body));
    }
    if (op->kind != ForKind::kThreadBinding) return IRMutator::visit(op);
    const Var& index = vars_.at(op->thread_tag);
    Expr value = index.type() == op->var.type() ? Expr(index) : Cast::make(op->var.type(), index);
    Stmt body = substitute(mutate(op->body), VarMap{{op->var.get(), value}});
    int64_t n = *as_const_int(op->extent);
    if (n < extent_.at(op->thread_tag)) body = IfThenElse::make(index < static_cast<int>(n), body);
    return body;
  }

 private:
  const std::map<std::string, Var>& vars_;
  const std::map<std::string, int64_t>& extent_;
};

// Buffers a kernel accesses by their data variable, and the shared memory it allocates.
class KernelUses : public IRVisitor {
 public:
  using IRVisitor::visit;
  std::unordered_map<const Variable*, Buffer> accessed;
  std::unordered_set<const Variable*> allocated;
  std::vector<Buffer> shared;

  void visit(const Load* op) override {
    accessed.emplace(op->buffer->data.get(), op->buffer);
    IRVisitor::visit(op);
  }
  void visit(const Store* op) override {
    accessed.emplace(op->buffer->data.get(), op->buffer);
    IRVisitor::visit(op);
  }
  void visit(const Allocate* op) override {
    allocated.insert(op->buffer->data.get());
    if (op->buffer->scope == MemoryScope::kShared) shared.push_back(op->buffer);
    IRVisitor::visit(op);
  }
};

class Splitter {
 public:
  Splitter(const LoweredFunc& f, const Target& target) : f_(f), target_(target) {
    result_.name = f.name;
    result_.args = f.args;
  }

  DeviceFunc run() {
    host(f_.body);
    return std::move(result_);
  }

 private:
  std::string context() const { return str("GPU function '", f_.name, "': "); }

  void host(const Stmt& s) {
    if (is_no_op(s)) return;
    if (const Seq* seq = s.as<Seq>()) {
      for (const Stmt& c : seq->stmts) host(c);
    } else if (const Allocate* a = s.as<Allocate>()) {
      ANVIL_CHECK(a->buffer->scope == MemoryScope::kGlobal, context(), "'", a->buffer->name,
                  "' is in ", memory_scope_name(a->buffer->scope),
                  " memory but outside every GPU kernel; compute it at a loop bound to blockIdx");
      constant_bytes(a->buffer, context());
      result_.temps.push_back(a->buffer);
      host(a->body);
    } else if (const AttrStmt* attr = s.as<AttrStmt>()) {
      host(attr->body);
    } else if (const For* loop = s.as<For>(); loop && is_real_thread(loop)) {
      kernel(s, loop->var->name);
    } else if (serial_iterations(s) <= kMaxSingleThreadIterations) {
      // A little work outside every bound loop (a scalar, a short loop) runs on one thread.
      kernel(s, "a single thread");
    } else if (const For* unbound = s.as<For>()) {
      ANVIL_FAIL(context(), "loop '", unbound->var->name, "' over ", unbound->extent,
                 " is not bound to GPU threads; bind it (or split it and bind the parts) to "
                 "blockIdx and threadIdx");
    } else {
      ANVIL_FAIL(context(),
                 "this statement is outside every loop bound to GPU threads and too "
                 "much work for one thread:\n",
                 s);
    }
  }

  // How many loop iterations `s` runs (INT64_MAX when an extent is not constant).
  static int64_t serial_iterations(const Stmt& s) {
    struct Count : IRVisitor {
      using IRVisitor::visit;
      int64_t total = 0, scale = 1;
      void visit(const For* op) override {
        std::optional<int64_t> n = as_const_int(op->extent);
        int64_t outer = scale;
        scale = n && !__builtin_mul_overflow(scale, std::max<int64_t>(*n, 1), &scale)
                    ? scale
                    : INT64_MAX / 2;
        if (__builtin_add_overflow(total, scale, &total)) total = INT64_MAX / 2;
        IRVisitor::visit(op);
        scale = outer;
      }
    } count;
    count.visit(s);
    return count.total;
  }

  void kernel(const Stmt& nest, const std::string& loop) {
    DeviceKernel k;
    k.name = f_.name + "_kernel" + std::to_string(result_.kernels.size());
    std::string where = str(context(), "kernel '", k.name, "' (loop '", loop, "'): ");
    ThreadExtents extents(where);
    extents.visit(nest);

    std::map<std::string, Var> vars;
    for (const auto& [tag, n] : extents.extent) {
      Var v(tag, extents.type.at(tag));
      vars.emplace(tag, v);
      k.thread_vars.emplace_back(v, tag);
      TagSlot slot = tag_slot(tag);
      (slot.block_index ? k.grid : k.block)[static_cast<size_t>(slot.dim)] = n;
    }
    int64_t threads = k.block[0] * k.block[1] * k.block[2];
    ANVIL_CHECK(threads <= target_.max_threads_per_block, where, threads,
                " threads per block (threadIdx x, y, z: ", k.block[0], ", ", k.block[1], ", ",
                k.block[2], ") exceed the target's limit of ", target_.max_threads_per_block);
    k.body = BindThreads(vars, extents.extent).mutate(nest);

    KernelUses uses;
    uses.visit(k.body);
    std::string shared_list;
    for (const Buffer& b : uses.shared) {
      int64_t bytes = constant_bytes(b, where);
      k.shared_bytes += bytes;
      shared_list += str(shared_list.empty() ? "" : ", ", b->name, " ", bytes);
    }
    ANVIL_CHECK(k.shared_bytes <= target_.max_shared_memory, where, "its shared memory, ",
                k.shared_bytes, " bytes (", shared_list, "), exceeds the target's limit of ",
                target_.max_shared_memory, " bytes per block");

    // Parameters: the function's arguments, then its temporaries, that the kernel touches.
    std::unordered_set<const Variable*> known(uses.allocated);
    auto add_param = [&](const Buffer& b) {
      auto it = uses.accessed.find(b->data.get());
      known.insert(b->data.get());
      if (it != uses.accessed.end()) k.params.push_back(it->second);
    };
    for (const Buffer& b : f_.args) add_param(b);
    for (const Buffer& b : result_.temps) add_param(b);
    for (const auto& [v, tag] : k.thread_vars) known.insert(v.get());
    for (const auto& [data, b] : uses.accessed) {
      ANVIL_CHECK(known.count(data), where, "'", b->name, "' is accessed but is no argument, ",
                  "temporary or allocation of the kernel");
    }
    check_free_variables(k, known, where);
    k.body = insert_barriers(k);
    result_.kernels.push_back(std::move(k));
  }

  // Scalars a kernel would need from the host (symbolic shapes) are not passed yet.
  static void check_free_variables(const DeviceKernel& k,
                                   const std::unordered_set<const Variable*>& known,
                                   const std::string& where) {
    struct Free : IRVisitor {
      using IRVisitor::visit;
      std::unordered_set<const Variable*> bound;
      std::vector<const Variable*> free;
      void visit(const Variable* op) override {
        if (!bound.count(op)) free.push_back(op);
      }
      void visit(const For* op) override {
        bound.insert(op->var.get());
        IRVisitor::visit(op);
      }
      void visit(const LetStmt* op) override {
        bound.insert(op->var.get());
        IRVisitor::visit(op);
      }
      void visit(const Let* op) override {
        bound.insert(op->var.get());
        IRVisitor::visit(op);
      }
    } free;
    free.bound = known;
    free.visit(k.body);
    for (const Variable* v : free.free) {
      ANVIL_CHECK(known.count(v), where, "it uses '", v->name,
                  "', which only the host knows (GPU kernels need static shapes)");
    }
  }

  const LoweredFunc& f_;
  const Target& target_;
  DeviceFunc result_;
};

}  // namespace

DeviceFunc split_host_device(const LoweredFunc& f, const Target& target) {
  ANVIL_CHECK(target.is_gpu(), "split_host_device: target '", target.str(), "' is not a GPU");
  return Splitter(f, target).run();
}

}  // namespace anvil::transform
