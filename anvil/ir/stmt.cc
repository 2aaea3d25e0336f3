#include "anvil/ir/stmt.h"

#include "anvil/ir/printer.h"
#include "anvil/support/error.h"

namespace anvil::ir {

namespace {

void check_body(const Stmt& body, const char* node) {
  ANVIL_CHECK(body.defined(), node, ": body is undefined");
}

}  // namespace

Stmt LetStmt::make(Var var, Expr value, Stmt body) {
  ANVIL_CHECK(var.defined() && value.defined(), "LetStmt: variable and value must be defined");
  ANVIL_CHECK(value.type() == var.type(), "LetStmt: '", var.name(), "' has type ", var.type(),
              " but its value ", value, " has type ", value.type());
  check_body(body, "LetStmt");
  LetStmt* node = new LetStmt();
  node->var = std::move(var);
  node->value = std::move(value);
  node->body = std::move(body);
  return node;
}

Stmt AttrStmt::make(std::string key, Expr node_ref, Expr value, Stmt body) {
  ANVIL_CHECK(!key.empty(), "AttrStmt: key is empty");
  ANVIL_CHECK(value.defined(), "AttrStmt '", key, "': value is undefined");
  check_body(body, "AttrStmt");
  AttrStmt* node = new AttrStmt();
  node->key = std::move(key);
  node->node = std::move(node_ref);
  node->value = std::move(value);
  node->body = std::move(body);
  return node;
}

Stmt AssertStmt::make(Expr condition, std::string message, Stmt body) {
  ANVIL_CHECK(condition.defined(), "AssertStmt: condition is undefined");
  ANVIL_CHECK(condition.type() == DataType::Bool(), "AssertStmt: condition must be a scalar bool, ",
              "not ", condition.type());
  check_body(body, "AssertStmt");
  AssertStmt* node = new AssertStmt();
  node->condition = std::move(condition);
  node->message = std::move(message);
  node->body = std::move(body);
  return node;
}

Stmt Store::make(Buffer buffer, Expr value, std::vector<Expr> indices, Expr predicate) {
  int lanes = detail::check_access("Store", buffer, indices, predicate);
  ANVIL_CHECK(value.defined(), "Store to '", buffer->name, "': value is undefined");
  DataType expected = buffer->dtype.with_lanes(buffer->dtype.lanes() * lanes);
  ANVIL_CHECK(value.type() == expected, "Store to '", buffer->name, "': value ", value,
              " has type ", value.type(), " but the buffer expects ", expected);
  Store* node = new Store();
  node->buffer = std::move(buffer);
  node->value = std::move(value);
  node->indices = std::move(indices);
  node->predicate = std::move(predicate);
  return node;
}

Stmt Allocate::make(Buffer buffer, Stmt body) {
  ANVIL_CHECK(buffer.defined(), "Allocate: buffer is undefined");
  check_body(body, "Allocate");
  Allocate* node = new Allocate();
  node->buffer = std::move(buffer);
  node->body = std::move(body);
  return node;
}

const char* for_kind_name(ForKind kind) {
  switch (kind) {
    case ForKind::kSerial:
      return "serial";
    case ForKind::kParallel:
      return "parallel";
    case ForKind::kVectorized:
      return "vectorized";
    case ForKind::kUnrolled:
      return "unrolled";
    case ForKind::kThreadBinding:
      return "thread_binding";
  }
  return "?";
}

Stmt For::make(Var var, Expr min, Expr extent, ForKind kind, Stmt body, std::string thread_tag) {
  ANVIL_CHECK(var.defined() && var.type().is_int_or_uint(),
              "For: loop variable must be an integer");
  ANVIL_CHECK(min.defined() && extent.defined(), "For '", var.name(), "': min and extent must be ",
              "defined");
  ANVIL_CHECK(min.type() == var.type() && extent.type() == var.type(), "For '", var.name(),
              "': variable is ", var.type(), " but min is ", min.type(), " and extent is ",
              extent.type());
  ANVIL_CHECK((kind == ForKind::kThreadBinding) == !thread_tag.empty(), "For '", var.name(),
              "': a thread tag is given exactly for thread-bound loops, but this ",
              for_kind_name(kind), " loop has ",
              thread_tag.empty() ? std::string("none") : "thread tag '" + thread_tag + "'");
  check_body(body, "For");
  For* node = new For();
  node->var = std::move(var);
  node->min = std::move(min);
  node->extent = std::move(extent);
  node->kind = kind;
  node->thread_tag = std::move(thread_tag);
  node->body = std::move(body);
  return node;
}

Stmt IfThenElse::make(Expr condition, Stmt then_case, Stmt else_case) {
  ANVIL_CHECK(condition.defined(), "IfThenElse: condition is undefined");
  ANVIL_CHECK(condition.type() == DataType::Bool(), "IfThenElse: condition must be a scalar bool, ",
              "not ", condition.type());
  ANVIL_CHECK(then_case.defined(), "IfThenElse: then branch is undefined");
  IfThenElse* node = new IfThenElse();
  node->condition = std::move(condition);
  node->then_case = std::move(then_case);
  node->else_case = std::move(else_case);
  return node;
}

Stmt Seq::make(std::vector<Stmt> stmts) {
  std::vector<Stmt> flat;
  for (Stmt& s : stmts) {
    ANVIL_CHECK(s.defined(), "Seq: statement is undefined");
    if (const Seq* inner = s.as<Seq>()) {
      flat.insert(flat.end(), inner->stmts.begin(), inner->stmts.end());
    } else {
      flat.push_back(std::move(s));
    }
  }
  ANVIL_CHECK(!flat.empty(), "Seq: no statements");
  if (flat.size() == 1) return flat[0];
  Seq* node = new Seq();
  node->stmts = std::move(flat);
  return node;
}

Stmt Evaluate::make(Expr value) {
  ANVIL_CHECK(value.defined(), "Evaluate: value is undefined");
  Evaluate* node = new Evaluate();
  node->value = std::move(value);
  return node;
}

Stmt Barrier::make(MemoryScope scope) {
  Barrier* node = new Barrier();
  node->scope = scope;
  return node;
}

}  // namespace anvil::ir
