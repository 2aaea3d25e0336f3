// NaN and infinities in inputs, through the importer, the reference interpreter and the compiled
// code. Each case of tests/frontend/nan_inf/ is one ONNX node over inputs that hold NaN, +inf and
// -inf beside ordinary values, with outputs that make_cases.py computed by the formulas of the ONNX
// backend tests (np.clip for Relu, np.maximum for Max, ...). The interpreter and the build for the
// host must both give them: NaN where NaN, each infinity with its sign, the rest within the
// conformance tolerance.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <vector>

#include "anvil/frontend/onnx/importer.h"
#include "anvil/graph/build.h"
#include "anvil/graph/interpreter.h"
#include "frontend/onnx_test_data.h"

namespace anvil {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> case_dirs() {
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(ANVIL_NAN_INF_CASES))
    if (fs::exists(e.path() / "model.onnx")) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

std::vector<runtime::NDArray> load_all(const std::vector<fs::path>& files) {
  std::vector<runtime::NDArray> v;
  for (const fs::path& f : files) v.push_back(frontend::load_onnx_tensor(f.string()));
  return v;
}

class OnnxNanInf : public ::testing::TestWithParam<fs::path> {};

TEST_P(OnnxNanInf, InterpreterAndCompiledCodeGiveTheExpectedOutputs) {
  const fs::path dir = GetParam();
  graph::Graph g = frontend::import_onnx((dir / "model.onnx").string());
  const fs::path data = dir / "test_data_set_0";
  std::vector<runtime::NDArray> inputs = load_all(testing::numbered(data, "input"));
  std::vector<runtime::NDArray> want = load_all(testing::numbered(data, "output"));
  ASSERT_FALSE(want.empty());
  auto check = [&](const std::vector<runtime::NDArray>& got, const std::string& by) {
    ASSERT_EQ(got.size(), want.size()) << by;
    for (size_t k = 0; k < got.size(); ++k)
      EXPECT_EQ(testing::compare(got[k], want[k], k), "") << by;
  };
  check(graph::interpret(g, inputs), "interpreter");
  graph::CompiledGraph cg = graph::CompiledGraph::build(g, Target::host(), {});
  check(cg.run(inputs), "compiled\n" + cg.summary());
}

INSTANTIATE_TEST_SUITE_P(Cases, OnnxNanInf, ::testing::ValuesIn(case_dirs()),
                         [](const ::testing::TestParamInfo<fs::path>& info) {
                           return info.param.filename().string();
                         });

TEST(OnnxNanInfCases, AreAllThere) {
  // make_cases.py writes 40; a lost folder would otherwise shrink the suite silently.
  EXPECT_EQ(case_dirs().size(), 40u);
}

}  // namespace
}  // namespace anvil
