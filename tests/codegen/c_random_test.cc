// Random integer expressions (lets, selects, comparisons, logic, floor and truncating division)
// through the C backend, as scalars and widened to 8-lane vectors, against the independent
// int64 evaluator of tests/testing.
#include <gtest/gtest.h>

#include <random>

#include "anvil/ir/substitute.h"
#include "anvil/ir/visitor.h"
#include "codegen/c_testing.h"
#include "testing/random_int_expr.h"

namespace anvil::testing {
namespace {

using namespace ir;

constexpr int kN = 64;
constexpr int kLanes = 8;

// e with its variables replaced by vectors, constants broadcast, and lets rebound to vector
// variables: the expression a vectorizer would produce for 8 consecutive iterations.
class Widen : public IRMutator {
 public:
  Widen(VarMap vars, int lanes) : vars_(std::move(vars)), lanes_(lanes) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Expr visit(const IntImm* op) override { return Broadcast::make(op, lanes_); }
  Expr visit(const Variable* op) override { return vars_.at(op); }
  Expr visit(const Let* op) override {
    Expr value = mutate(op->value);
    Var widened(op->var->name, value.type());
    vars_[op->var.get()] = widened;
    return Let::make(widened, value, mutate(op->body));
  }

 private:
  VarMap vars_;
  int lanes_;
};

TEST(CRandom, IntegerExpressionsMatchTheEvaluatorAsScalarsAndVectors) {
  Var x("x"), y("y");
  RandomIntExprs gen(2024, {x, y});
  std::mt19937 rng(5);
  std::vector<int32_t> xs(kN), ys(kN);
  for (int k = 0; k < kN; ++k) {
    xs[k] = std::uniform_int_distribution<int32_t>(-50, 50)(rng);
    ys[k] = std::uniform_int_distribution<int32_t>(-50, 50)(rng);
  }

  const int count = 150;
  std::vector<Expr> exprs;
  std::vector<LoweredFunc> funcs;
  for (int e = 0; e < count; ++e) {
    Expr expr = gen.expr(3);
    exprs.push_back(expr);
    Buffer a = Buffer::make("X", DataType::Int32(), {kN});
    Buffer b = Buffer::make("Y", DataType::Int32(), {kN});
    Buffer out = Buffer::make("O", DataType::Int32(), {kN});
    Var i("i");
    Expr scalar = substitute(expr, {{x.get(), Load::make(a, {i})}, {y.get(), Load::make(b, {i})}});
    funcs.push_back(func("scalar" + std::to_string(e), {a, b, out},
                         For::make(i, 0, kN, ForKind::kSerial, Store::make(out, scalar, {i}))));
    Expr r = Ramp::make(i * kLanes, 1, kLanes);
    Expr vector =
        Widen({{x.get(), Load::make(a, {r})}, {y.get(), Load::make(b, {r})}}, kLanes).mutate(expr);
    funcs.push_back(
        func("vector" + std::to_string(e), {a, b, out},
             For::make(i, 0, kN / kLanes, ForKind::kSerial, Store::make(out, vector, {r}))));
  }
  runtime::Module m = build(funcs);

  runtime::NDArray X = array({kN}, DataType::Int32()), Y = array({kN}, DataType::Int32());
  write(X, xs);
  write(Y, ys);
  for (int e = 0; e < count; ++e) {
    std::vector<int64_t> want(kN);
    for (int k = 0; k < kN; ++k) {
      Env env{{x.get(), xs[k]}, {y.get(), ys[k]}};
      want[k] = eval_int(exprs[e], env);
      ASSERT_EQ(want[k], int32_t(want[k])) << "overflows int32: " << exprs[e];
    }
    for (const char* form : {"scalar", "vector"}) {
      runtime::NDArray out = array({kN}, DataType::Int32());
      ANVIL_EXPECT_RUNS(m.get_function(form + std::to_string(e)), tensors({X, Y, out}));
      std::vector<int32_t> got = read<int32_t>(out);
      for (int k = 0; k < kN; ++k) {
        ASSERT_EQ(got[k], want[k])
            << form << " " << exprs[e] << " at x = " << xs[k] << ", y = " << ys[k];
      }
    }
  }
}

}  // namespace
}  // namespace anvil::testing
