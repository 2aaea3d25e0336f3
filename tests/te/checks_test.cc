// Run-time checks of a compute (te::Check): each runs once over what it reads, before the root
// stage that holds its compute, through inlined producers; a failing one makes the kernel return
// an error carrying its message, in LLVM and in C; GPU lowering drops them.
#include <gtest/gtest.h>

#include <cstring>

#include "anvil/ir/op.h"
#include "anvil/ir/printer.h"
#include "te_testing.h"
#include "testing/errors.h"

namespace anvil::te {
namespace {

using namespace ir;
using te_testing::Values;

// Runs `f` through LLVM and C on `values` (float32 arguments); returns each back end's status,
// with its error message when it failed.
std::vector<std::pair<int32_t, std::string>> run_both(const LoweredFunc& f,
                                                      const std::vector<Tensor>& args,
                                                      const Values& values) {
  auto llvm = codegen::LLVMModule::compile({f}, Target::host());
  runtime::Module c = codegen::build_c({f}, te_testing::library_path());
  std::vector<std::pair<int32_t, std::string>> results;
  for (AnvilKernel kernel : {llvm->get_function(f.name), c.get_function(f.name)}) {
    std::vector<runtime::NDArray> arrays;
    std::vector<const DLTensor*> ptrs;
    for (size_t i = 0; i < args.size(); ++i) {
      std::vector<int64_t> shape;
      for (const Expr& d : args[i]->shape) shape.push_back(*as_const_int(d));
      arrays.push_back(runtime::NDArray::empty(shape, runtime::dl_float32()));
      std::memcpy(arrays.back().data(), values[i].data(), values[i].size() * sizeof(float));
      ptrs.push_back(arrays.back().get());
    }
    AnvilSetLastError("");
    int32_t status = kernel(ptrs.data(), static_cast<int32_t>(ptrs.size()), nullptr);
    results.emplace_back(status, status == 0 ? "" : AnvilGetLastError());
  }
  return results;
}

int count(const std::string& text, const std::string& part) {
  int n = 0;
  for (size_t p = text.find(part); p != std::string::npos; p = text.find(part, p + 1)) ++n;
  return n;
}

// B[i] = A2[i] * 3 where A2 = A * 2 is inlined; the check (every A2 element is at most 10) reads
// the inlined stage, so it must become a condition on A itself.
TEST(Checks, ReadThroughAnInlinedProducerAndRunOnceBeforeTheLoop) {
  Tensor A = placeholder({8}, DataType::Float32(), "A");
  Tensor A2 = compute(
      {8}, [&](Var i) { return A(i) * 2.0f; }, "A2");
  Check small = check_all(
      {8}, [&](const std::vector<Var>& i) { return A2(i[0]) <= 10.0f; }, "A2 exceeds 10");
  Tensor B = compute({8}, [&](const std::vector<Var>& i) { return A2(i[0]) * 3.0f; }, "B", {small});
  ASSERT_EQ(B->checks.size(), 1u);
  Schedule s({B});
  s[A2].compute_inline();
  IterVar io = s[B].split(s[B].axis()[0], 4).first;
  s[B].parallel(io);
  LoweredFunc f = lower(s, {A, B}, "checked");
  std::string ir = to_string(f.body);
  EXPECT_EQ(count(ir, "assert("), 1) << ir;
  EXPECT_LT(ir.find("assert("), ir.find("parallel")) << ir;  // outside the hot loop
  EXPECT_EQ(count(ir, "A2["), 0) << ir;                      // inlined into the check too

  Values ok = {{0, 1, 2, 3, 4, 5, -6, 5}, std::vector<float>(8, 0.0f)};
  for (const auto& [status, message] : run_both(f, {A, B}, ok)) EXPECT_EQ(status, 0) << message;
  Values bad = ok;
  bad[0][6] = 5.5f;  // 11 after doubling
  for (const auto& [status, message] : run_both(f, {A, B}, bad)) {
    EXPECT_NE(status, 0);
    EXPECT_NE(message.find("checked: A2 exceeds 10"), std::string::npos) << message;
  }
}

// A check on a reduction computed in the same kernel runs after that reduction, not before.
TEST(Checks, WaitForTheRootStagesTheyRead) {
  Tensor A = placeholder({6}, DataType::Float32(), "A");
  IterVar r = reduce_axis(6, "r");
  Tensor S = compute(
      {1}, [&](Var) { return sum(A(r->var), {r}); }, "S");
  Check positive = check_all(
      {1}, [&](const std::vector<Var>& i) { return S(i[0]) > 0.0f; }, "the sum is not positive");
  Tensor B =
      compute({6}, [&](const std::vector<Var>& i) { return A(i[0]) / S(0); }, "B", {positive});
  Schedule s({B});
  LoweredFunc f = lower(s, {A, B}, "normalize");
  std::string ir = to_string(f.body);
  EXPECT_LT(ir.find("S[0] = "), ir.find("assert(")) << ir;
  Values ok = {{1, 2, 3, -1, 0, 1}, std::vector<float>(6, 0.0f)};
  for (const auto& [status, message] : run_both(f, {A, B}, ok)) EXPECT_EQ(status, 0) << message;
  Values bad = {{1, 2, 3, -9, 0, 1}, std::vector<float>(6, 0.0f)};
  for (const auto& [status, message] : run_both(f, {A, B}, bad)) {
    EXPECT_NE(status, 0);
    EXPECT_NE(message.find("the sum is not positive"), std::string::npos) << message;
  }
}

// A check cannot read a stage computed inside another stage's loops: it runs before them.
TEST(Checks, RefuseAProducerComputedInsideALoop) {
  Tensor A = placeholder({4, 4}, DataType::Float32(), "A");
  Tensor P = compute(
      {4, 4}, [&](Var i, Var j) { return A(i, j) + 1.0f; }, "P");
  Check c = check_all(
      {4, 4}, [&](const std::vector<Var>& i) { return P(i[0], i[1]) > 0.0f; }, "P is positive");
  Tensor B =
      compute({4, 4}, [&](const std::vector<Var>& i) { return P(i[0], i[1]) * 2.0f; }, "B", {c});
  Schedule s({B});
  s[P].compute_at(s[B], s[B].axis()[0]);
  std::string msg = testing::user_error([&] { lower(s, {A, B}, "k"); });
  EXPECT_NE(msg.find("the check 'P is positive' of 'B' reads 'P', which is not computed before "
                     "it at the top level"),
            std::string::npos)
      << msg;
}

TEST(Checks, ConditionMustBeBool) {
  Tensor A = placeholder({4}, DataType::Float32(), "A");
  std::string msg = testing::user_error([&] {
    check_all(
        {4}, [&](const std::vector<Var>& i) { return A(i[0]); }, "not a bool");
  });
  EXPECT_NE(msg.find("check 'not a bool': the condition must be a bool"), std::string::npos) << msg;
}

// GPU kernels cannot report an error: lower_gpu leaves the checks out.
TEST(Checks, GpuLoweringDropsThem) {
  Tensor A = placeholder({64}, DataType::Float32(), "A");
  Check c = check_all(
      {64}, [&](const std::vector<Var>& i) { return A(i[0]) >= 0.0f; }, "A is negative");
  Tensor B = compute({64}, [&](const std::vector<Var>& i) { return A(i[0]) + 1.0f; }, "B", {c});
  Schedule s({B});
  auto [bo, bi] = s[B].split(s[B].axis()[0], 32);
  s[B].bind(bo, "blockIdx.x");
  s[B].bind(bi, "threadIdx.x");
  EXPECT_EQ(count(to_string(lower(s, {A, B}, "k").body), "assert("), 1);
  DeviceFunc f = lower_gpu(s, {A, B}, "k", Target::parse("cuda"));
  ASSERT_EQ(f.kernels.size(), 1u);
  EXPECT_EQ(count(to_string(f.kernels[0].body), "assert("), 0) << f.kernels[0].body;
}

}  // namespace
}  // namespace anvil::te
