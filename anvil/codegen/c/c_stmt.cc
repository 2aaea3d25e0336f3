// Statements of the C code generator: loops (parallel ones outlined into a function the runtime
// calls), branches, stores, allocations, assertions.
#include <algorithm>
#include <map>

#include "anvil/codegen/c/c_emitter.h"
#include "anvil/ir/equal.h"
#include "anvil/ir/op.h"
#include "anvil/ir/printer.h"
#include "anvil/ir/substitute.h"

namespace anvil::codegen::c {

using namespace ir;

namespace {

// Allocations of a constant size up to this many bytes live on the stack; larger or symbolic
// ones come from the runtime's workspace.
constexpr int64_t kMaxStackBytes = 4096;

class FreeVariables : public IRVisitor {
 public:
  using IRVisitor::visit;
  std::map<uint64_t, const Variable*> free;  // by creation order

  void visit(const Variable* op) override { use(op); }
  void visit(const Load* op) override {
    use(op->buffer->data.get());
    IRVisitor::visit(op);
  }
  void visit(const Store* op) override {
    use(op->buffer->data.get());
    IRVisitor::visit(op);
  }
  // An unused binding is never emitted, so what its value uses does not count.
  void visit(const Let* op) override {
    if (uses_var(op->body, op->var.get())) visit(op->value);
    scoped(op->var.get(), [&] { visit(op->body); });
  }
  void visit(const LetStmt* op) override {
    if (uses_var(op->body, op->var.get())) visit(op->value);
    scoped(op->var.get(), [&] { visit(op->body); });
  }
  void visit(const For* op) override {
    visit(op->min);
    visit(op->extent);
    scoped(op->var.get(), [&] { visit(op->body); });
  }
  void visit(const Allocate* op) override {
    for (const Expr& e : op->buffer->shape) visit(e);
    scoped(op->buffer->data.get(), [&] { visit(op->body); });
  }

 private:
  void use(const Variable* v) {
    if (!bound_[v]) free.emplace(v->id, v);
  }
  template <typename F>
  void scoped(const Variable* v, F&& f) {
    ++bound_[v];
    f();
    --bound_[v];
  }
  std::unordered_map<const Variable*, int> bound_;
};

// The data variables of the buffers stored to.
class StoredBuffers : public IRVisitor {
 public:
  using IRVisitor::visit;
  std::unordered_set<const Variable*> stored;
  void visit(const Store* op) override {
    stored.insert(op->buffer->data.get());
    IRVisitor::visit(op);
  }
};

template <typename T>
std::vector<const Variable*> free_of(const T& node) {
  FreeVariables fv;
  fv.visit(node);
  std::vector<const Variable*> out;
  for (const auto& [id, v] : fv.free) out.push_back(v);
  return out;
}

// The loads of one buffer (by data variable) in an expression.
class LoadsOf : public IRVisitor {
 public:
  explicit LoadsOf(const Variable* data) : data_(data) {}
  using IRVisitor::visit;
  std::vector<const Load*> loads;
  bool any_let = false;
  void visit(const Load* op) override {
    if (op->buffer->data.get() == data_) loads.push_back(op);
    IRVisitor::visit(op);
  }
  void visit(const Let* op) override {
    any_let = true;
    IRVisitor::visit(op);
  }

 private:
  const Variable* data_;
};

class HasNode : public IRVisitor {
 public:
  explicit HasNode(IRNodeType type) : type_(type) {}
  using IRVisitor::visit;
  bool found = false;
  void visit(const Expr& e) override {
    if (found || !e.defined()) return;
    if (e.node_type() == type_) {
      found = true;
      return;
    }
    IRVisitor::visit(e);
  }

 private:
  IRNodeType type_;
};

bool has_node(const Expr& e, IRNodeType type) {
  HasNode h(type);
  h.visit(e);
  return h.found;
}

// Lanes of a vector store whose address is `index` touch distinct addresses.
bool distinct_lanes(const Expr& index, int elem_lanes) {
  if (index.type().is_scalar()) return elem_lanes > 1;
  const Ramp* r = index.as<Ramp>();
  return r && as_const_int(r->stride).has_value() && !is_zero(r->stride);
}

DataType binary_operand_type(const Expr& e) {
  if (const LT* op = e.as<LT>()) return op->a.type();
  if (const LE* op = e.as<LE>()) return op->a.type();
  if (const GT* op = e.as<GT>()) return op->a.type();
  if (const GE* op = e.as<GE>()) return op->a.type();
  return e.type();
}

std::string loop_head(int lanes) {
  return "for (int32_t lane = 0; lane < " + std::to_string(lanes) + "; ++lane)";
}

}  // namespace

std::unordered_set<const Variable*> stored_buffers(const Stmt& s) {
  StoredBuffers v;
  v.visit(s);
  return v.stored;
}

std::vector<const Variable*> free_variables(const Stmt& s) {
  return free_of(s);
}
std::vector<const Variable*> free_variables(const Expr& e) {
  return free_of(e);
}
bool has_load(const Expr& e) {
  return has_node(e, IRNodeType::Load);
}

// ---- output and bindings

void FunctionEmitter::line(const std::string& text) {
  if (!text.empty()) out_->append(2 * indent_, ' ');
  *out_ += text;
  *out_ += '\n';
}

void FunctionEmitter::open(const std::string& head) {
  line(head + " {");
  ++indent_;
}

void FunctionEmitter::close() {
  --indent_;
  line("}");
}

void FunctionEmitter::flush_prelude() {
  for (const std::string& l : prelude_) line(l);
  prelude_.clear();
}

void FunctionEmitter::fail_return() {
  for (auto it = workspaces_.rbegin(); it != workspaces_.rend(); ++it)
    line("AnvilWorkspaceFree(" + *it + ");");
  line("return -1;");
}

FunctionEmitter::SavedName FunctionEmitter::bind(const Variable* var, const std::string& name) {
  SavedName saved{var, false, ""};
  if (auto it = vars_.find(var); it != vars_.end()) {
    saved.had = true;
    saved.previous = it->second;
  }
  vars_[var] = name;
  return saved;
}

void FunctionEmitter::restore(const SavedName& saved) {
  if (saved.had) {
    vars_[saved.var] = saved.previous;
  } else {
    vars_.erase(saved.var);
  }
}

const std::string& FunctionEmitter::var_name(const Variable* var) const {
  auto it = vars_.find(var);
  if (it == vars_.end())
    fail("variable '", var->name, "' is used but never bound (it is not a loop variable, a let, ",
         "or a symbolic dimension of an argument)");
  return it->second;
}

const FunctionEmitter::BufferInfo& FunctionEmitter::buffer(const Buffer& b,
                                                           const char* access) const {
  auto it = buffers_.find(b->data.get());
  if (it == buffers_.end())
    fail(access, " of buffer '", b->name, "', which is neither an argument nor allocated");
  if (b.ndim() != 1)
    fail(access, " of '", b->name, "' has ", b.ndim(), " indices; C code generation expects ",
         "flattened storage (one index per access; run flatten_storage)");
  if (b->dtype != it->second.dtype)
    fail(access, " of '", b->name, "' as ", b->dtype, ", but ", it->second.what, " holds ",
         it->second.dtype);
  return it->second;
}

// ---- statements

void FunctionEmitter::visit(const LetStmt* op) {
  if (!uses_var(op->body, op->var.get())) return visit(op->body);  // values are pure
  std::string name = names_.fresh(op->var->name);
  hoist(name, op->value);
  flush_prelude();
  SavedName saved = bind(op->var.get(), name);
  visit(op->body);
  restore(saved);
}

void FunctionEmitter::visit(const AttrStmt* op) {
  std::string about = op->node.defined() ? " on " + to_string(op->node) : "";
  line("/* " + c_comment(op->key + about + " = " + to_string(op->value)) + " */");
  visit(op->body);
}

namespace {

// The negation of a comparison, where flipping the operator is exact (not for ordered float
// comparisons, which NaN makes false both ways).
Expr negated(const Expr& e) {
  if (const EQ* op = e.as<EQ>()) return NE::make(op->a, op->b);
  if (const NE* op = e.as<NE>()) return EQ::make(op->a, op->b);
  if (const Not* op = e.as<Not>()) return op->a;
  bool exact = e.node_type() >= IRNodeType::LT && e.node_type() <= IRNodeType::GE &&
               !binary_operand_type(e).is_float();
  if (!exact) return Expr();
  if (const LT* op = e.as<LT>()) return GE::make(op->a, op->b);
  if (const LE* op = e.as<LE>()) return GT::make(op->a, op->b);
  if (const GT* op = e.as<GT>()) return LE::make(op->a, op->b);
  if (const GE* op = e.as<GE>()) return LT::make(op->a, op->b);
  return Expr();
}

}  // namespace

void FunctionEmitter::visit(const AssertStmt* op) {
  Expr failed = negated(op->condition);
  std::string test =
      failed.defined() ? expr(failed).text : "!" + paren(expr(op->condition), kUnary);
  flush_prelude();
  module_.runtime.insert("AnvilSetLastError");
  open("if (" + test + ")");
  line("AnvilSetLastError(" + c_string(func_.name + ": " + op->message) + ");");
  fail_return();
  close();
  visit(op->body);
}

void FunctionEmitter::visit(const Store* op) {
  const BufferInfo& info = buffer(op->buffer, "Store");
  if (op->value.type().is_vector()) return emit_vector_store(op, info);
  CExpr index = expr(op->indices[0]);
  CExpr value = expr(op->value);
  std::string store = info.name + "[" + index.text + "] = " + value.text + ";";
  if (op->predicate.defined()) store = "if (" + expr(op->predicate).text + ") " + store;
  flush_prelude();
  line(store);
}

bool FunctionEmitter::store_needs_copy(const Store* op) const {
  // Lane by lane, lane k would read what lanes before it stored. That is harmless only when every
  // load of the stored buffer reads, in each lane, the address that lane stores to.
  LoadsOf in_value(op->buffer->data.get());
  in_value.visit(op->value);
  for (const Load* l : in_value.loads) {
    bool same = l->buffer->dtype == op->buffer->dtype &&
                structural_equal(l->indices[0], op->indices[0]) &&
                distinct_lanes(op->indices[0], op->buffer->dtype.lanes());
    if (!same) return true;
  }
  return false;
}

void FunctionEmitter::emit_vector_store(const Store* op, const BufferInfo& info) {
  DataType t = op->value.type();
  int lanes = t.lanes(), elem_lanes = info.dtype.lanes();
  CExpr lane{"lane", kPostfix};
  // (Not a structured binding: clang 14 cannot capture those in the lambda below.)
  std::pair<CExpr, std::string> split = element_lane(elem_lanes, lane);
  const CExpr elem_lane = split.first;
  std::string sub = split.second;
  const Expr& index = op->indices[0];
  const Expr& predicate = op->predicate;
  if (lanes == elem_lanes) sub = "lane";

  // A dense aligned store on a GPU: the lanes' values into an array, then one vector store.
  if (!predicate.defined() && elem_lanes == 1) {
    if (std::optional<std::string> address = vector_address(info, index, lanes)) {
      std::string values = names_.fresh(info.name + "_value");
      CExpr v = expr(op->value, &lane);
      flush_prelude();
      line(c_type(t, values) + " " + values + "[" + std::to_string(lanes) + "];");
      line(loop_head(lanes) + " " + values + "[lane] = " + v.text + ";");
      line(vector_store(t, *address, values));
      return;
    }
  }
  CExpr value;
  // Under a mask, the value and the address are formed only where it is set.
  if (predicate.defined()) ++conditional_;
  if (store_needs_copy(op)) {
    // Every lane's value first, then the stores.
    std::string copy = names_.fresh(info.name + "_value");
    value = expr(op->value, &lane);
    flush_prelude();
    line(c_type(t, copy) + " " + copy + "[" + std::to_string(lanes) + "];");
    line(loop_head(lanes) + " " + copy + "[lane] = " + value.text + ";");
    value = {copy + "[lane]", kPostfix};
  } else {
    value = expr(op->value, &lane);
  }
  // An index or predicate that reads the stored buffer is computed before any store, too.
  auto before_stores = [&](const Expr& e, const char* hint) {
    LoadsOf reads(op->buffer->data.get());
    reads.visit(e);
    if (reads.loads.empty() || e.type().is_scalar()) return expr(e, &elem_lane);
    std::string copy = names_.fresh(info.name + hint);
    hoist(copy, e);
    return CExpr{copy + "[" + elem_lane.text + "]", kPostfix};
  };
  CExpr i = before_stores(index, "_index");
  if (predicate.defined()) --conditional_;
  std::string address = elem_lanes == 1 ? i.text
                                        : paren(i, kMultiplicative) + " * " +
                                              std::to_string(elem_lanes) + " + " + sub;
  std::string store = info.name + "[" + address + "] = " + value.text + ";";
  if (predicate.defined()) store = "if (" + before_stores(predicate, "_mask").text + ") " + store;
  flush_prelude();
  open(loop_head(lanes));
  line(store);
  close();
}

void FunctionEmitter::visit(const Allocate* op) {
  if (module_.dialect != Dialect::kC) return visit_device_allocate(op);
  const Buffer& b = op->buffer;
  std::string what = "allocation '" + b->name + "'";
  std::string ty = c_storage_type(b->dtype, kernel_context(func_.name) + what);
  // The size: a constant number of bytes times the symbolic extents.
  int64_t bytes = int64_t{b->dtype.lanes()} * b->dtype.bytes();
  std::vector<std::string> factors;
  for (const Expr& e : b->shape) {
    if (std::optional<int64_t> c = as_const_int(e)) {
      if (*c < 0) fail(what, " has a negative extent ", *c);
      if (*c > 0 && bytes > (int64_t{1} << 56) / *c) fail(what, " is too large");
      bytes *= *c;
    } else {
      factors.push_back("(uint64_t)" + paren(expr(e), kUnary));
    }
  }
  std::string name = names_.fresh(b->name);
  const Variable* data = b->data.get();
  std::optional<BufferInfo> shadowed;
  if (auto it = buffers_.find(data); it != buffers_.end()) shadowed = it->second;
  buffers_[data] = BufferInfo{name, b->dtype, ty + "*", what};
  if (factors.empty() && bytes <= kMaxStackBytes) {
    int64_t elements = std::max<int64_t>(bytes / b->dtype.bytes(), 1);
    flush_prelude();
    line(ty + " " + name + "[" + std::to_string(elements) + "] __attribute__((aligned(64)));");
    visit(op->body);
  } else {
    factors.push_back(std::to_string(bytes) + "u");
    std::string size;
    for (size_t k = 0; k < factors.size(); ++k) size += (k ? " * " : "") + factors[k];
    flush_prelude();
    module_.runtime.insert("AnvilWorkspaceAlloc");
    module_.runtime.insert("AnvilWorkspaceFree");
    line(ty + "* restrict " + name + " = (" + ty + "*)AnvilWorkspaceAlloc(" + size + ");");
    if (workspaces_.empty()) {
      line("if (" + name + " == NULL) return -1;");
    } else {
      open("if (" + name + " == NULL)");
      fail_return();
      close();
    }
    workspaces_.push_back(name);
    visit(op->body);
    workspaces_.pop_back();
    line("AnvilWorkspaceFree(" + name + ");");
  }
  if (shadowed) {
    buffers_[data] = *shadowed;
  } else {
    buffers_.erase(data);
  }
}

void FunctionEmitter::visit(const For* op) {
  switch (op->kind) {
    case ForKind::kThreadBinding:
      fail("loop '", op->var->name, "' is bound to GPU thread '", op->thread_tag,
           "', which cannot run on the CPU");
    case ForKind::kParallel:
      if (module_.dialect != Dialect::kC)
        fail("loop '", op->var->name, "' is a CPU parallel loop inside a GPU kernel");
      return emit_parallel(op);
    default:
      return emit_loop(op);
  }
}

void FunctionEmitter::emit_loop(const For* op) {
  DataType t = op->var.type();
  std::string ty = c_type(t, "loop variable '" + op->var->name + "'");
  CExpr min = expr(op->min), extent = expr(op->extent);
  std::string name = names_.fresh(op->var->name);
  CExpr end = is_zero(op->min)
                  ? extent
                  : CExpr{paren(min, kAdditive) + " + " + paren(extent, kAdditive + 1), kAdditive};
  if (has_load(op->min) || has_load(op->extent)) {
    // The bounds are evaluated once, on entry, even if the body stores to what they read.
    std::string end_name = names_.fresh(name + "_end");
    prelude_.push_back("const " + ty + " " + end_name + " = " + end.text + ";");
    end = {end_name, kPostfix};
  }
  flush_prelude();
  std::optional<int64_t> trip = as_const_int(op->extent);
  if (op->kind == ForKind::kUnrolled && trip && *trip > 1) {
    line(std::string(module_.dialect == Dialect::kC ? "#pragma GCC unroll " : "#pragma unroll ") +
         std::to_string(std::min<int64_t>(*trip, 65534)));
  }
  SavedName saved = bind(op->var.get(), name);
  open("for (" + ty + " " + name + " = " + min.text + "; " + name + " < " +
       paren(end, kRelational + 1) + "; ++" + name + ")");
  visit(op->body);
  close();
  restore(saved);
}

void FunctionEmitter::emit_parallel(const For* op) {
  DataType t = op->var.type();
  std::string ty = c_type(t, "loop variable '" + op->var->name + "'");
  CExpr min = expr(op->min), extent = expr(op->extent);
  flush_prelude();

  // What the body uses from outside travels in a closure struct: values, buffer pointers, and
  // vector variables as pointers to their arrays (alive until AnvilParallelFor returns).
  struct Field {
    std::string type, name, init, local;
  };
  std::vector<Field> fields;
  for (const Variable* v : free_variables(op->body)) {
    if (v == op->var.get()) continue;
    if (auto it = buffers_.find(v); it != buffers_.end()) {
      const BufferInfo& b = it->second;
      fields.push_back({b.pointer, b.name, b.name, b.pointer + " restrict " + b.name});
    } else {
      const std::string& name = var_name(v);
      DataType vt = v->type;
      std::string field_type = vt.is_handle()   ? "void*"
                               : vt.is_vector() ? "const " + c_type(vt, name) + "*"
                                                : c_type(vt, name);
      std::string local = vt.is_scalar() && !vt.is_handle() ? "const " + field_type + " " + name
                                                            : field_type + " " + name;
      fields.push_back({field_type, name, name, local});
    }
  }
  std::string offset;  // the loop's min, inside the body
  if (!is_zero(op->min)) {
    if (is_const(op->min)) {
      offset = paren(min, kAdditive + 1);
    } else {
      offset = names_.fresh(op->var->name + "_min");
      fields.push_back({ty, offset, min.text, "const " + ty + " " + offset});
    }
  }
  std::string fn = names_.fresh_global(func_.name + "_parallel", module_.globals);
  std::string closure_type = "struct " + fn + "_closure";

  // The outlined body, printed on its own.
  std::string text;
  std::string* saved_out = std::exchange(out_, &text);
  int saved_indent = std::exchange(indent_, 0);
  std::vector<std::string> saved_workspaces = std::exchange(workspaces_, {});
  if (!fields.empty()) {
    open(closure_type);
    for (const Field& f : fields) line(f.type + " " + f.name + ";");
    --indent_;
    line("};");
    line("");
  }
  open("static int32_t " + fn + "(int64_t begin, int64_t end, void* closure)");
  if (fields.empty()) {
    line("(void)closure;");
  } else {
    line("const " + closure_type + "* captured = (const " + closure_type + "*)closure;");
    for (const Field& f : fields) line(f.local + " = captured->" + f.name + ";");
  }
  std::string var = names_.fresh(op->var->name);
  SavedName saved = bind(op->var.get(), var);
  std::string cast = t == DataType::Int64() ? "" : "(" + ty + ")";
  std::string plus = offset.empty() ? "" : " + " + offset;
  open("for (" + ty + " " + var + " = " + cast + "begin" + plus + "; " + var + " < " + cast +
       "end" + plus + "; ++" + var + ")");
  visit(op->body);
  close();
  restore(saved);
  line("return 0;");
  close();
  line("");
  module_.functions += text;
  out_ = saved_out;
  indent_ = saved_indent;
  workspaces_ = std::move(saved_workspaces);

  // The call.
  module_.runtime.insert("AnvilParallelFor");
  std::string closure = "NULL";
  if (!fields.empty()) {
    std::string data = names_.fresh(fn + "_data");
    std::string inits;
    for (size_t k = 0; k < fields.size(); ++k) inits += (k ? ", " : "") + fields[k].init;
    line(closure_type + " " + data + " = {" + inits + "};");
    closure = "&" + data;
  }
  std::string call = "AnvilParallelFor(" + extent.text + ", " + fn + ", " + closure + ") != 0";
  if (workspaces_.empty()) {
    line("if (" + call + ") return -1;");
  } else {
    open("if (" + call + ")");
    fail_return();
    close();
  }
}

void FunctionEmitter::visit(const IfThenElse* op) {
  CExpr c = expr(op->condition);
  flush_prelude();
  open("if (" + c.text + ")");
  visit(op->then_case);
  Stmt rest = op->else_case;
  // else-if chains, as long as no condition needs hoisted bindings before it.
  while (rest.defined()) {
    const IfThenElse* next = rest.as<IfThenElse>();
    if (!next || has_node(next->condition, IRNodeType::Let)) break;
    --indent_;
    line("} else if (" + expr(next->condition).text + ") {");
    ++indent_;
    visit(next->then_case);
    rest = next->else_case;
  }
  if (rest.defined()) {
    --indent_;
    line("} else {");
    ++indent_;
    visit(rest);
  }
  close();
}

void FunctionEmitter::visit(const Seq* op) {
  for (const Stmt& s : op->stmts) visit(s);
}

void FunctionEmitter::visit(const Evaluate* op) {
  // Expressions are pure: a constant (the usual no-op placeholder) or a vector needs no code.
  if (is_const(op->value) || op->value.type().is_vector()) return;
  CExpr v = expr(op->value);
  flush_prelude();
  line("(void)" + paren(v, kUnary) + ";");
}

void FunctionEmitter::visit(const Barrier*) {
  switch (module_.dialect) {
    case Dialect::kCUDA:
      return line("__syncthreads();");
    case Dialect::kOpenCL:
      return line("barrier(CLK_LOCAL_MEM_FENCE);");
    case Dialect::kC:
      break;
  }
  fail("Barrier is a GPU thread synchronization, which cannot run on the CPU");
}

}  // namespace anvil::codegen::c
