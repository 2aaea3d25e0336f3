// IRVisitor and IRMutator: the visitor reaches every node; the mutator is copy-on-write, so an
// identity pass returns the very same tree and a local rewrite rebuilds only the path to it.
#include "anvil/ir/visitor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "anvil/ir/op.h"
#include "anvil/ir/printer.h"
#include "anvil/support/error.h"

namespace anvil::ir {
namespace {

using ::testing::HasSubstr;

const DataType i32 = DataType::Int32();
const DataType f32 = DataType::Float32();
const DataType b1 = DataType::Bool();

// Counts the nodes a visitor reaches, by kind.
class CountingVisitor : public IRVisitor {
 public:
  using IRVisitor::visit;
  std::map<IRNodeType, int> counts;
  int total = 0;

  void visit(const Expr& e) override {
    if (e.defined()) ++counts[e.node_type()], ++total;
    IRVisitor::visit(e);
  }
  void visit(const Stmt& s) override {
    if (s.defined()) ++counts[s.node_type()], ++total;
    IRVisitor::visit(s);
  }
};

// A program that holds every node kind at least once. Each named part is kept so that tests can
// check which nodes a mutator rebuilt. No expression node is shared between two places, so the
// visitor meets each one exactly once.
struct Program {
  Var i{"i"}, j{"j"}, k{"k"}, n{"n"}, m{"m"}, v{"v"}, tx{"tx"};
  Var x{"x", f32}, w{"w", f32}, p{"p", b1};
  Buffer A = Buffer::make("A", f32, {n});
  Buffer B = Buffer::make("B", f32, {16, 16});
  Buffer S = Buffer::make("S", f32, {n}, {}, MemoryScope::kShared);
  IterVar kv = IterVar::make(k, Range::make(0, 16), IterKind::kReduce);

  // min((i*2 - j) + max(i, j), 4)-like arithmetic.
  Expr e1 = Add::make(Sub::make(Mul::make(i, 2), j), Min::make(Max::make(i, j), 4));
  Expr e2 = FloorDiv::make(FloorMod::make(i, 3), TruncDiv::make(TruncMod::make(j, 5), 2));
  Expr e3 = And::make(
      Or::make(EQ::make(i, j), NE::make(i, j)),
      Not::make(Or::make(LT::make(i, j),
                         And::make(LE::make(i, j), And::make(GT::make(i, j), GE::make(i, j))))));
  Expr e4 = Select::make(p, Div::make(x, Cast::make(f32, i)), FloatImm::make(f32, 1.5));
  Expr e5 = Let::make(v, i, Cast::make(f32, v));
  Expr e6 =
      Add::make(Load::make(A, {Ramp::make(i, 1, 4)}, Broadcast::make(p, 4)), Broadcast::make(x, 4));
  Expr e7 = Reduce::make(CommReducer::sum(f32), Load::make(B, {i, k}), {kv}, LT::make(k, n));
  Expr e8 = Call::make(Intrinsic::kExp, {w});  // the only use of w

  Stmt store1 = Store::make(A, Add::make(e4, e5), {i});
  Stmt store2 = Store::make(A, e6, {Ramp::make(i, 1, 4)}, Broadcast::make(p, 4));
  Stmt store3 = Store::make(B, e7, {i, e2});
  Stmt eval8 = Evaluate::make(e8);
  Stmt branch = IfThenElse::make(e3, store3, eval8);
  Stmt barrier = Barrier::make(MemoryScope::kShared);
  Stmt eval1 = Evaluate::make(e1);
  Stmt seq = Seq::make({store1, store2, branch, barrier, eval1});
  Stmt inner = For::make(tx, 0, 32, ForKind::kThreadBinding, seq, "threadIdx.x");
  Stmt outer = For::make(i, 0, n, ForKind::kParallel, inner);
  Stmt alloc = Allocate::make(S, outer);
  Stmt check = AssertStmt::make(GT::make(n, 0), "n must be positive", alloc);
  Stmt let = LetStmt::make(m, Mul::make(n, 2), check);
  Stmt root = AttrStmt::make("pragma_unroll", i, 1, let);

  // Every node of `root` by kind, counted by hand from the definitions above.
  std::map<IRNodeType, int> expected_counts() const {
    return {
        // Statements.
        {IRNodeType::AttrStmt, 1},
        {IRNodeType::LetStmt, 1},
        {IRNodeType::AssertStmt, 1},
        {IRNodeType::Allocate, 1},
        {IRNodeType::For, 2},
        {IRNodeType::Seq, 1},
        {IRNodeType::Store, 3},
        {IRNodeType::IfThenElse, 1},
        {IRNodeType::Evaluate, 2},
        {IRNodeType::Barrier, 1},
        // Expressions.
        {IRNodeType::IntImm, 15},
        {IRNodeType::FloatImm, 1},
        {IRNodeType::Variable, 40},
        {IRNodeType::Cast, 2},
        {IRNodeType::Add, 3},
        {IRNodeType::Sub, 1},
        {IRNodeType::Mul, 2},
        {IRNodeType::Div, 1},
        {IRNodeType::FloorDiv, 1},
        {IRNodeType::FloorMod, 1},
        {IRNodeType::TruncDiv, 1},
        {IRNodeType::TruncMod, 1},
        {IRNodeType::Min, 1},
        {IRNodeType::Max, 1},
        {IRNodeType::EQ, 1},
        {IRNodeType::NE, 1},
        {IRNodeType::LT, 2},
        {IRNodeType::LE, 1},
        {IRNodeType::GT, 2},
        {IRNodeType::GE, 1},
        {IRNodeType::And, 3},
        {IRNodeType::Or, 2},
        {IRNodeType::Not, 1},
        {IRNodeType::Select, 1},
        {IRNodeType::Ramp, 2},
        {IRNodeType::Broadcast, 3},
        {IRNodeType::Load, 2},
        {IRNodeType::Let, 1},
        {IRNodeType::Call, 1},
        {IRNodeType::Reduce, 1},
    };
  }
};

// Replaces expressions and statements chosen by the test; leaves the rest to IRMutator.
class Rewriter : public IRMutator {
 public:
  using IRMutator::mutate;
  std::function<Expr(const Expr&)> expr_rule;  // an undefined result means "no rewrite"
  std::function<Stmt(const Stmt&)> stmt_rule;

  Expr mutate(const Expr& e) override {
    if (expr_rule && e.defined()) {
      if (Expr r = expr_rule(e); r.defined()) return r;
    }
    return IRMutator::mutate(e);
  }
  Stmt mutate(const Stmt& s) override {
    if (stmt_rule && s.defined()) {
      if (Stmt r = stmt_rule(s); r.defined()) return r;
    }
    return IRMutator::mutate(s);
  }
};

// Replaces one variable by an expression.
Rewriter substitute(const Var& from, Expr to) {
  Rewriter r;
  r.expr_rule = [from, to](const Expr& e) { return e.same_as(from) ? to : Expr(); };
  return r;
}

// ---------------------------------------------------------------------------------------------
// IRVisitor

TEST(IRVisitor, VisitsEveryNodeOfEveryKind) {
  Program prog;
  CountingVisitor counter;
  counter.visit(prog.root);
  std::map<IRNodeType, int> expected = prog.expected_counts();
  EXPECT_EQ(counter.counts, expected);
  int total = 0;
  for (const auto& [kind, count] : expected) total += count;
  EXPECT_EQ(counter.total, total);
  // The program really holds every kind there is.
#define ANVIL_EXPECT_KIND(name) \
  EXPECT_GT(counter.counts[IRNodeType::name], 0) << "no " #name " node was visited";
  ANVIL_FOR_EACH_EXPR_NODE(ANVIL_EXPECT_KIND)
  ANVIL_FOR_EACH_STMT_NODE(ANVIL_EXPECT_KIND)
#undef ANVIL_EXPECT_KIND
}

TEST(IRVisitor, CountsAgreeWithNodeCountOnExpressions) {
  Program prog;
  for (const Expr& e : {prog.e1, prog.e2, prog.e3, prog.e4, prog.e5, prog.e6, prog.e7, prog.e8}) {
    CountingVisitor counter;
    counter.visit(e);
    EXPECT_EQ(counter.total, node_count(e)) << e;
  }
  EXPECT_EQ(node_count(prog.e1), 11);
  EXPECT_EQ(node_count(prog.e2), 9);
  EXPECT_EQ(node_count(prog.e3), 24);
  EXPECT_EQ(node_count(prog.e4), 7);
  EXPECT_EQ(node_count(prog.e5), 4);  // the bound variable is not a child
  EXPECT_EQ(node_count(prog.e6), 9);
  EXPECT_EQ(node_count(prog.e7), 9);  // axis domain, source and condition
  EXPECT_EQ(node_count(prog.e8), 2);
}

TEST(IRVisitor, VisitsChildrenInOrder) {
  struct Names : IRVisitor {
    using IRVisitor::visit;
    std::vector<std::string> names;
    void visit(const Variable* op) override { names.push_back(op->name); }
  };
  Var a("a"), b("b"), c("c"), d("d");
  Names names;
  names.visit(Select::make(LT::make(a, b), c, d));
  EXPECT_EQ(names.names, (std::vector<std::string>{"a", "b", "c", "d"}));

  Buffer buf = Buffer::make("Q", i32, {4});
  Names store;
  store.visit(Store::make(buf, a, {b}, Var("p", b1)));
  EXPECT_EQ(store.names, (std::vector<std::string>{"a", "b", "p"}));  // value, indices, predicate
}

TEST(IRVisitor, SkipsUndefinedHandles) {
  CountingVisitor counter;
  counter.visit(Expr());
  counter.visit(Stmt());
  counter.visit(IfThenElse::make(make_bool(true), Evaluate::make(0)));  // no else
  counter.visit(AttrStmt::make("k", Expr(), 1, Evaluate::make(0)));     // no node
  Buffer buf = Buffer::make("Q", i32, {4});
  counter.visit(Load::make(buf, {0}));  // no predicate
  EXPECT_EQ(counter.total, 4 + 4 + 2);
}

TEST(IRVisitor, AnOverrideCanStopTheDescent) {
  // Not calling the base visit() prunes the subtree.
  struct SkipLoops : CountingVisitor {
    using CountingVisitor::visit;
    void visit(const For*) override {}
  };
  Program prog;
  SkipLoops counter;
  counter.visit(prog.root);
  EXPECT_EQ(counter.counts[IRNodeType::For], 1);  // the outer loop, reached but not entered
  EXPECT_EQ(counter.counts[IRNodeType::Store], 0);
  EXPECT_EQ(counter.counts[IRNodeType::Allocate], 1);
}

// ---------------------------------------------------------------------------------------------
// IRMutator: identity

TEST(IRMutator, IdentityReturnsTheSameTree) {
  Program prog;
  IRMutator identity;
  EXPECT_TRUE(identity.mutate(prog.root).same_as(prog.root));
  for (const Stmt& s : {prog.store1, prog.store2, prog.store3, prog.branch, prog.barrier, prog.seq,
                        prog.inner, prog.alloc, prog.check, prog.let}) {
    EXPECT_TRUE(identity.mutate(s).same_as(s)) << s;
  }
  for (const Expr& e : {prog.e1, prog.e2, prog.e3, prog.e4, prog.e5, prog.e6, prog.e7, prog.e8}) {
    EXPECT_TRUE(identity.mutate(e).same_as(e)) << e;
  }
}

TEST(IRMutator, UndefinedStaysUndefined) {
  IRMutator identity;
  EXPECT_FALSE(identity.mutate(Expr()).defined());
  EXPECT_FALSE(identity.mutate(Stmt()).defined());
}

TEST(IRMutator, RulesThatNeverFireReturnTheSameTree) {
  Program prog;
  Var unused("unused");
  Rewriter r = substitute(unused, 0);
  EXPECT_TRUE(r.mutate(prog.root).same_as(prog.root));
  // Even a rule that rebuilds every leaf into the same leaf changes nothing.
  Rewriter leaves;
  leaves.expr_rule = [](const Expr& e) {
    return e.as<Variable>() || e.as<IntImm>() || e.as<FloatImm>() ? e : Expr();
  };
  EXPECT_TRUE(leaves.mutate(prog.root).same_as(prog.root));
}

// ---------------------------------------------------------------------------------------------
// IRMutator: copy on write

TEST(IRMutator, RewritingOneVariableRebuildsOnlyThePathToIt) {
  Program prog;
  Var w2("w2", f32);
  Rewriter r = substitute(prog.w, w2);
  Stmt root = r.mutate(prog.root);

  // Every statement from the root down to the call of exp(w) is new...
  ASSERT_FALSE(root.same_as(prog.root));
  const AttrStmt* attr = root.as<AttrStmt>();
  const AttrStmt* attr0 = prog.root.as<AttrStmt>();
  ASSERT_NE(attr, nullptr);
  EXPECT_TRUE(attr->node.same_as(attr0->node));
  EXPECT_TRUE(attr->value.same_as(attr0->value));
  EXPECT_EQ(attr->key, "pragma_unroll");

  const LetStmt* let = attr->body.as<LetStmt>();
  ASSERT_NE(let, nullptr);
  EXPECT_FALSE(attr->body.same_as(prog.let));
  EXPECT_TRUE(let->var.same_as(prog.m));
  EXPECT_TRUE(let->value.same_as(prog.let.as<LetStmt>()->value));

  const AssertStmt* check = let->body.as<AssertStmt>();
  ASSERT_NE(check, nullptr);
  EXPECT_FALSE(let->body.same_as(prog.check));
  EXPECT_TRUE(check->condition.same_as(prog.check.as<AssertStmt>()->condition));
  EXPECT_EQ(check->message, "n must be positive");

  const Allocate* alloc = check->body.as<Allocate>();
  ASSERT_NE(alloc, nullptr);
  EXPECT_FALSE(check->body.same_as(prog.alloc));
  EXPECT_TRUE(alloc->buffer.same_as(prog.S));

  const For* outer = alloc->body.as<For>();
  const For* outer0 = prog.outer.as<For>();
  ASSERT_NE(outer, nullptr);
  EXPECT_FALSE(alloc->body.same_as(prog.outer));
  EXPECT_TRUE(outer->var.same_as(prog.i));
  EXPECT_TRUE(outer->min.same_as(outer0->min));
  EXPECT_TRUE(outer->extent.same_as(outer0->extent));
  EXPECT_EQ(outer->kind, ForKind::kParallel);

  const For* inner = outer->body.as<For>();
  ASSERT_NE(inner, nullptr);
  EXPECT_FALSE(outer->body.same_as(prog.inner));
  EXPECT_EQ(inner->kind, ForKind::kThreadBinding);
  EXPECT_EQ(inner->thread_tag, "threadIdx.x");

  const Seq* seq = inner->body.as<Seq>();
  ASSERT_NE(seq, nullptr);
  EXPECT_FALSE(inner->body.same_as(prog.seq));
  ASSERT_EQ(seq->stmts.size(), 5u);
  // ...while every statement beside the path is the original node.
  EXPECT_TRUE(seq->stmts[0].same_as(prog.store1));
  EXPECT_TRUE(seq->stmts[1].same_as(prog.store2));
  EXPECT_FALSE(seq->stmts[2].same_as(prog.branch));
  EXPECT_TRUE(seq->stmts[3].same_as(prog.barrier));
  EXPECT_TRUE(seq->stmts[4].same_as(prog.eval1));

  const IfThenElse* branch = seq->stmts[2].as<IfThenElse>();
  ASSERT_NE(branch, nullptr);
  EXPECT_TRUE(branch->condition.same_as(prog.e3));
  EXPECT_TRUE(branch->then_case.same_as(prog.store3));
  EXPECT_FALSE(branch->else_case.same_as(prog.eval8));

  const Evaluate* eval = branch->else_case.as<Evaluate>();
  ASSERT_NE(eval, nullptr);
  const Call* call = eval->value.as<Call>();
  ASSERT_NE(call, nullptr);
  EXPECT_FALSE(eval->value.same_as(prog.e8));
  EXPECT_EQ(call->op, Intrinsic::kExp);
  ASSERT_EQ(call->args.size(), 1u);
  EXPECT_TRUE(call->args[0].same_as(w2));

  // The original is untouched.
  EXPECT_TRUE(prog.e8.as<Call>()->args[0].same_as(prog.w));
}

TEST(IRMutator, RewritingInsideAnExpressionKeepsSiblingSubtrees) {
  Var a("a"), b("b"), c("c"), d("d"), b2("b2");
  Expr left = Mul::make(a, 2), right = Sub::make(c, d);
  Expr sum = Add::make(left, b);
  Expr e = Mul::make(sum, right);
  Rewriter r = substitute(b, b2);
  Expr out = r.mutate(e);
  ASSERT_FALSE(out.same_as(e));
  const Mul* mul = out.as<Mul>();
  ASSERT_NE(mul, nullptr);
  EXPECT_TRUE(mul->b.same_as(right));
  const Add* add = mul->a.as<Add>();
  ASSERT_NE(add, nullptr);
  EXPECT_FALSE(mul->a.same_as(sum));
  EXPECT_TRUE(add->a.same_as(left));
  EXPECT_TRUE(add->b.same_as(b2));
  EXPECT_EQ(to_string(out), "(a*2 + b2)*(c - d)");
}

TEST(IRMutator, RewritingAVariableUsedTwiceRebuildsBothPaths) {
  Program prog;
  Rewriter r = substitute(prog.k, Var("k2"));
  Expr out = r.mutate(prog.e7);
  const Reduce* red = out.as<Reduce>();
  const Reduce* red0 = prog.e7.as<Reduce>();
  ASSERT_NE(red, nullptr);
  EXPECT_FALSE(red->source.same_as(red0->source));
  EXPECT_FALSE(red->condition.same_as(red0->condition));
  EXPECT_TRUE(red->combiner.same_as(red0->combiner));
  ASSERT_EQ(red->axis.size(), 1u);
  EXPECT_TRUE(red->axis[0].same_as(red0->axis[0]));  // its domain did not change
  EXPECT_TRUE(red->source.as<Load>()->buffer.same_as(prog.B));
  EXPECT_TRUE(red->source.as<Load>()->indices[0].same_as(prog.i));
  EXPECT_TRUE(red->condition.as<LT>()->b.same_as(prog.n));
}

TEST(IRMutator, RewritingAReductionDomainMakesANewAxis) {
  Program prog;
  Rewriter r;
  r.expr_rule = [](const Expr& e) { return is_const_int(e, 16) ? Expr(32) : Expr(); };
  Expr out = r.mutate(prog.e7);
  const Reduce* red = out.as<Reduce>();
  const Reduce* red0 = prog.e7.as<Reduce>();
  ASSERT_NE(red, nullptr);
  ASSERT_FALSE(red->axis[0].same_as(red0->axis[0]));
  EXPECT_TRUE(red->axis[0]->var.same_as(prog.k));
  EXPECT_TRUE(red->axis[0]->dom.min.same_as(red0->axis[0]->dom.min));
  EXPECT_EQ(as_const_int(red->axis[0]->dom.extent), 32);
  EXPECT_EQ(red->axis[0]->kind, IterKind::kReduce);
  EXPECT_TRUE(red->source.same_as(red0->source));
  EXPECT_TRUE(red->condition.same_as(red0->condition));
  EXPECT_TRUE(red->combiner.same_as(red0->combiner));
}

TEST(IRMutator, RewritingOneStatementKeepsTheOthers) {
  Program prog;
  Rewriter r;
  r.stmt_rule = [&](const Stmt& s) { return s.same_as(prog.barrier) ? Evaluate::make(7) : Stmt(); };
  Stmt out = r.mutate(prog.seq);
  const Seq* seq = out.as<Seq>();
  ASSERT_NE(seq, nullptr);
  ASSERT_EQ(seq->stmts.size(), 5u);
  EXPECT_TRUE(seq->stmts[0].same_as(prog.store1));
  EXPECT_TRUE(seq->stmts[1].same_as(prog.store2));
  EXPECT_TRUE(seq->stmts[2].same_as(prog.branch));
  EXPECT_NE(seq->stmts[3].as<Evaluate>(), nullptr);
  EXPECT_TRUE(seq->stmts[4].same_as(prog.eval1));
}

TEST(IRMutator, ASequenceReturnedForAStatementIsFlattened) {
  Program prog;
  Rewriter r;
  r.stmt_rule = [&](const Stmt& s) {
    return s.same_as(prog.barrier) ? Seq::make(prog.barrier, prog.barrier) : Stmt();
  };
  Stmt out = r.mutate(prog.seq);
  const Seq* seq = out.as<Seq>();
  ASSERT_NE(seq, nullptr);
  ASSERT_EQ(seq->stmts.size(), 6u);
  EXPECT_TRUE(seq->stmts[3].same_as(prog.barrier));
  EXPECT_TRUE(seq->stmts[4].same_as(prog.barrier));
  EXPECT_TRUE(seq->stmts[5].same_as(prog.eval1));
}

TEST(IRMutator, RebuiltNodesAreTypeChecked) {
  // A rewrite that breaks the typing rules is caught when the parent is rebuilt.
  Var a("a"), b("b");
  Rewriter r = substitute(b, Var("f", f32));
  EXPECT_THROW(r.mutate(Add::make(a, b)), Error);
  try {
    r.mutate(Add::make(a, b));
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("Add: operand types differ: a is int32 but f is float32"));
  }
}

TEST(IRMutator, EveryNodeKindIsRebuiltWhenAChildChanges) {
  // Replace every integer 1 by 9: each node kind on a path to a 1 must rebuild into a node of the
  // same kind, with the new child.
  Var i("i"), n("n"), x("x", f32), p("p", b1);
  Buffer A = Buffer::make("A", f32, {64});
  Rewriter r;
  r.expr_rule = [](const Expr& e) {
    return is_const_int(e, 1) && e.type() == i32 ? Expr(9) : Expr();
  };
  auto rebuilt = [&](const Expr& e) {
    Expr out = r.mutate(e);
    EXPECT_FALSE(out.same_as(e)) << e;
    EXPECT_EQ(out.node_type(), e.node_type()) << e;
    EXPECT_EQ(out.type(), e.type()) << e;
    return to_string(out);
  };
  EXPECT_EQ(rebuilt(Cast::make(f32, Expr(1))), "float32(9)");
  EXPECT_EQ(rebuilt(floordiv(i, 1)), "floordiv(i, 9)");
  EXPECT_EQ(rebuilt(!(i < 1)), "!(i < 9)");
  EXPECT_EQ(rebuilt(Select::make(i < 1, x, x)), "select(i < 9, x, x)");
  EXPECT_EQ(rebuilt(Ramp::make(i, 1, 4)), "ramp(i, 9, 4)");
  EXPECT_EQ(rebuilt(Broadcast::make(Expr(1), 4)), "x4(9)");
  EXPECT_EQ(rebuilt(Load::make(A, {Expr(1)})), "A[9]");
  EXPECT_EQ(rebuilt(Load::make(A, {Expr(0)}, Expr(1) == i)), "A[0] if (9 == i)");
  EXPECT_EQ(rebuilt(Let::make(n, 1, n)), "(let n = 9 in n)");
  EXPECT_EQ(rebuilt(Call::make(Intrinsic::kExp, {Cast::make(f32, Expr(1))})), "exp(float32(9))");
  auto rebuilt_stmt = [&](const Stmt& s) {
    Stmt out = r.mutate(s);
    EXPECT_FALSE(out.same_as(s)) << s;
    EXPECT_EQ(out.node_type(), s.node_type()) << s;
    return to_string(out);
  };
  Stmt nop = Evaluate::make(0);
  EXPECT_EQ(rebuilt_stmt(LetStmt::make(n, 1, nop)), "let n = 9\n0\n");
  EXPECT_EQ(rebuilt_stmt(AttrStmt::make("k", Expr(1), 0, nop)), "attr k [9] = 0\n0\n");
  EXPECT_EQ(rebuilt_stmt(AssertStmt::make(i < 1, "m", nop)), "assert(i < 9, \"m\")\n0\n");
  EXPECT_EQ(rebuilt_stmt(Store::make(A, x, {Expr(1)})), "A[9] = x\n");
  EXPECT_EQ(rebuilt_stmt(Allocate::make(A, Evaluate::make(1))), "allocate A[float32 * 64]\n9\n");
  EXPECT_EQ(rebuilt_stmt(For::make(i, 1, n, ForKind::kUnrolled, nop)),
            "unrolled for (i, 9, n) {\n  0\n}\n");
  EXPECT_EQ(rebuilt_stmt(IfThenElse::make(p, nop, Evaluate::make(1))),
            "if (p) {\n  0\n} else {\n  9\n}\n");
  EXPECT_EQ(rebuilt_stmt(Seq::make(nop, Evaluate::make(1))), "0\n9\n");
  EXPECT_EQ(rebuilt_stmt(Evaluate::make(1)), "9\n");
}

}  // namespace
}  // namespace anvil::ir
