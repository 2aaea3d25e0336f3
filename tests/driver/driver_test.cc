// The public compile API (anvil/driver/driver.h): what goes in, what comes out, and whose fault
// each error says it is.
#include "anvil/driver/driver.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "anvil/graph/interpreter.h"
#include "anvil/support/temp_dir.h"

namespace anvil::driver {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// The kind and message of the driver::Error `fn` throws.
template <typename F>
std::pair<ErrorKind, std::string> error_of(F&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return {e.kind(), e.what()};
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected a driver::Error, got: " << e.what();
  }
  ADD_FAILURE() << "expected a driver::Error";
  return {ErrorKind::kRuntime, ""};
}

TEST(Driver, AZooModelCompilesAndRunsAsItsGraphDoes) {
  Compiled c = compile_model("zoo:dqn", "llvm", {});
  EXPECT_GT(c.graph.num_kernels(), 0u);
  EXPECT_TRUE(c.warnings.empty());
  graph::Graph g = load_model("zoo:dqn");
  runtime::NDArray state = runtime::NDArray::empty({1, 4, 84, 84}, runtime::dl_float32(), true);
  for (int64_t i = 0; i < state.numel(); ++i) state.data_as<float>()[i] = (i % 17) / 17.0f;
  runtime::NDArray got = c.graph.model().run({state})[0];
  runtime::NDArray want = graph::interpret(g, {state})[0];
  ASSERT_EQ(got.shape(), want.shape());
  for (int64_t i = 0; i < want.numel(); ++i)
    EXPECT_NEAR(got.data_as<float>()[i], want.data_as<float>()[i],
                1e-4 * (1 + std::abs(want.data_as<float>()[i])));
}

TEST(Driver, BadInputsSaySo) {
  auto [kind, message] = error_of([] { load_model("zoo:resnet99"); });
  EXPECT_EQ(kind, ErrorKind::kBadInput);
  EXPECT_THAT(message, AllOf(HasSubstr("unknown zoo model 'resnet99'"), HasSubstr("dqn")));

  std::tie(kind, message) = error_of([] { load_model_bytes("not a model", {}, "the bytes"); });
  EXPECT_EQ(kind, ErrorKind::kBadInput);
  EXPECT_THAT(message, HasSubstr("the bytes"));

  ModelInputs shapes;
  shapes.shapes["state"] = {1, 4, 80, 80};
  std::tie(kind, message) = error_of([&] { load_model("zoo:dqn", shapes); });
  EXPECT_EQ(kind, ErrorKind::kBadInput);
  EXPECT_THAT(message, HasSubstr("fixes input 'state' to float32[1, 4, 84, 84]"));
  shapes.shapes = {{"image", {1}}};
  std::tie(kind, message) = error_of([&] { load_model("zoo:dqn", shapes); });
  EXPECT_THAT(message, AllOf(HasSubstr("has no input 'image'"), HasSubstr("state float32")));

  ModelInputs values;
  values.values["state"] = runtime::NDArray::empty({1}, runtime::dl_float32(), true);
  std::tie(kind, message) = error_of([&] { load_model("zoo:dqn", values); });
  EXPECT_EQ(kind, ErrorKind::kBadInput);
  EXPECT_THAT(message, HasSubstr("is a built-in model"));

  std::tie(kind, message) = error_of([] { compile_model("zoo:dqn", "nosuchtarget", {}); });
  EXPECT_EQ(kind, ErrorKind::kBadInput);
  EXPECT_THAT(message, HasSubstr("target 'nosuchtarget'"));
}

TEST(Driver, TuningRecordFiles) {
  TempDir dir("anvil-driver-test-", "the test's records");
  auto [kind, message] = error_of([&] { read_tuning_records(dir.path() + "/none.json", false); });
  EXPECT_EQ(kind, ErrorKind::kBadInput);
  EXPECT_THAT(message, HasSubstr("none.json: no such file"));
  std::tie(kind, message) = error_of([&] { read_tuning_records(dir.path(), false); });
  EXPECT_THAT(message, HasSubstr("is a directory"));
  std::ofstream(dir.path() + "/bad.json") << "{\"not\": \"a record\"}\n{\"either\": 1}\n";
  std::tie(kind, message) = error_of([&] { read_tuning_records(dir.path() + "/bad.json", false); });
  EXPECT_EQ(kind, ErrorKind::kBadInput);
  EXPECT_THAT(message, HasSubstr("bad.json"));
}

TEST(Driver, OtherExceptionsTakeTheKindAndContextGiven) {
  auto [kind, message] = error_of([] {
    with_kind(ErrorKind::kCompile, "compiling x", []() -> int { throw std::runtime_error("no"); });
  });
  EXPECT_EQ(kind, ErrorKind::kCompile);
  EXPECT_EQ(message, "compiling x: no");
  // A driver::Error passes through unchanged.
  std::tie(kind, message) = error_of([] {
    with_kind(ErrorKind::kCompile, "outer",
              []() -> int { throw Error(ErrorKind::kRuntime, "inner"); });
  });
  EXPECT_EQ(kind, ErrorKind::kRuntime);
  EXPECT_EQ(message, "inner");
  EXPECT_STREQ(to_string(ErrorKind::kBadInput), "bad input");
}

}  // namespace
}  // namespace anvil::driver
