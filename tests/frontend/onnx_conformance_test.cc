// ONNX conformance: the backend tests Debian's libonnx-testdata installs (ONNX 1.12) under
// node/, pytorch-converted/, pytorch-operator/ and simple/. Each test is a model.onnx plus
// test_data_set_0/input_*.pb and output_*.pb (TensorProto).
//
// A test is "mapped" when every op type in its model (subgraphs included) is one the importer
// maps. Every mapped test is imported, run by the reference interpreter (graph::interpret) and
// compared with the expected outputs: same shape and dtype, and for floats
// |got - want| <= 1e-4 * |want| + 1e-5 (NaN matches NaN, infinities must be equal); integers and
// bools exactly. The backend's own default is rtol 1e-3, atol 1e-7; our references compute in
// double, so 1e-4 relative holds with room, and the 1e-5 absolute part covers values that
// cancel to near zero.
//
// tests/frontend/onnx_conformance_passing.txt lists the tests that pass (folder/name); the test
// fails when one of them stops passing. It prints the counts (mapped, passing, per folder), and
// the tests that pass but are not listed. ANVIL_ONNX_WRITE_PASSING=1 rewrites the list.
// No model is skipped for size: the largest is under 1 MB.
#include <onnx/onnx_pb.h>  // onnx-ml.pb.h with ONNX_ML=1 (Debian ships no onnx.pb.h)

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "anvil/frontend/onnx/importer.h"
#include "anvil/graph/build.h"
#include "anvil/graph/interpreter.h"
#include "anvil/support/error.h"
#include "frontend/onnx_test_data.h"

namespace anvil {
namespace {

namespace fs = std::filesystem;
using testing::compare;
using testing::numbered;
using testing::read;

void collect_ops(const ::onnx::GraphProto& g, std::set<std::string>& ops) {
  for (const ::onnx::NodeProto& n : g.node()) {
    bool std_domain = n.domain().empty() || n.domain() == "ai.onnx";
    ops.insert(std_domain ? n.op_type() : n.domain() + "." + n.op_type());
    for (const ::onnx::AttributeProto& a : n.attribute()) {
      if (a.has_g()) collect_ops(a.g(), ops);
      for (const ::onnx::GraphProto& s : a.graphs()) collect_ops(s, ops);
    }
  }
}

// The inputs a "must be known at compile time" error names: the operand itself, and the graph
// inputs it says to bind ("--input-value NAME=FILE.npy").
std::vector<std::string> non_constant_inputs(const std::string& msg) {
  size_t at = msg.find("' must be known at compile time");
  if (at == std::string::npos) return {};
  std::vector<std::string> names;
  size_t open = msg.rfind('\'', at - 1);
  if (open != std::string::npos) names.push_back(msg.substr(open + 1, at - open - 1));
  const std::string flag = "--input-value ";
  for (size_t p = msg.find(flag); p != std::string::npos; p = msg.find(flag, p + 1)) {
    size_t begin = p + flag.size(), end = msg.find('=', begin);
    if (end != std::string::npos) names.push_back(msg.substr(begin, end - begin));
  }
  return names;
}

// "" when the test passes, else why not. The node tests feed shape-like operands (Reshape's
// shape, Unsqueeze's axes, Resize's scales, ...) as graph inputs; an input the importer needs
// at compile time is frozen to its test value (ImportOptions::constant_inputs) and the import
// retried, as a user compiling such a model for fixed operands would.
std::string run_test(const fs::path& dir, bool compiled = false) {
  try {
    fs::path data = dir / "test_data_set_0";
    std::vector<fs::path> in_files = numbered(data, "input");
    ::onnx::ModelProto model;
    model.ParseFromString(read(dir / "model.onnx"));
    std::vector<std::string> in_names;  // graph inputs that are not initializers, in order
    std::set<std::string> inits;
    for (const auto& t : model.graph().initializer()) inits.insert(t.name());
    for (const auto& vi : model.graph().input())
      if (!inits.count(vi.name())) in_names.push_back(vi.name());
    std::vector<runtime::NDArray> all;
    for (const fs::path& p : in_files) all.push_back(frontend::load_onnx_tensor(p));
    if (all.size() != in_names.size())
      return str(all.size(), " input files for ", in_names.size(), " inputs");

    frontend::ImportOptions opt;
    std::optional<graph::Graph> g;
    for (int attempt = 0; !g; ++attempt) {
      try {
        g = frontend::import_onnx((dir / "model.onnx").string(), opt);
      } catch (const Error& e) {
        bool bound = false;
        for (const std::string& name : non_constant_inputs(e.what())) {
          auto it = std::find(in_names.begin(), in_names.end(), name);
          if (it == in_names.end() || opt.constant_inputs.count(name)) continue;
          opt.constant_inputs[name] = all[static_cast<size_t>(it - in_names.begin())];
          bound = true;
        }
        if (attempt > 8 || !bound) throw;
      }
    }
    std::vector<runtime::NDArray> inputs, want;
    for (size_t i = 0; i < in_names.size(); ++i)
      if (!opt.constant_inputs.count(in_names[i])) inputs.push_back(all[i]);
    for (const fs::path& p : numbered(data, "output"))
      want.push_back(frontend::load_onnx_tensor(p));
    std::vector<runtime::NDArray> got;
    if (compiled) {
      graph::CompiledGraph cg = graph::CompiledGraph::build(*g, Target::host(), {});
      // A model the importer folded into constants runs no generated code: not a pass.
      if (cg.num_kernels() == 0 && cg.steps().empty())
        return "no kernel: the model folds into constants at compile time";
      got = cg.run(inputs);
    } else {
      got = graph::interpret(*g, inputs);
    }
    if (got.size() != want.size()) return str(got.size(), " outputs, expected ", want.size());
    for (size_t k = 0; k < got.size(); ++k) {
      std::string why = compare(got[k], want[k], k);
      if (!why.empty()) return why;
    }
    return "";
  } catch (const std::exception& e) {
    std::string msg = e.what();
    return msg.empty() ? "error" : msg;
  }
}

TEST(OnnxConformance, MappedTestsPass) {
  const fs::path root = ANVIL_ONNX_TESTDATA;
  ASSERT_TRUE(fs::exists(root)) << root
                                << " is missing: install libonnx-testdata (scripts/setup.sh does)";
  std::vector<std::string> mapped_ops = frontend::mapped_onnx_ops();
  std::set<std::string> mapped(mapped_ops.begin(), mapped_ops.end());

  std::set<std::string> listed;
  {
    std::ifstream f(ANVIL_ONNX_PASSING_LIST);
    for (std::string line; std::getline(f, line);)
      if (!line.empty() && line[0] != '#') listed.insert(line);
  }
  std::vector<std::string> passing, failures;
  int total = 0, n_mapped = 0;
  for (const char* folder : {"node", "pytorch-converted", "pytorch-operator", "simple"}) {
    int f_total = 0, f_mapped = 0, f_pass = 0;
    std::vector<fs::path> dirs;
    for (const auto& e : fs::directory_iterator(root / folder))
      if (fs::exists(e.path() / "model.onnx")) dirs.push_back(e.path());
    std::sort(dirs.begin(), dirs.end());
    for (const fs::path& dir : dirs) {
      ++f_total;
      ::onnx::ModelProto model;
      if (!model.ParseFromString(read(dir / "model.onnx"))) continue;
      std::set<std::string> ops;
      collect_ops(model.graph(), ops);
      bool all = true;
      for (const std::string& op : ops) all = all && mapped.count(op);
      if (!all) continue;
      ++f_mapped;
      std::string name = std::string(folder) + "/" + dir.filename().string();
      std::string why = run_test(dir);
      if (why.empty()) {
        ++f_pass;
        passing.push_back(name);
      } else {
        failures.push_back(name + ": " + why.substr(0, 300));
        EXPECT_EQ(listed.count(name), 0u) << name << " is listed as passing but fails: " << why;
      }
    }
    std::printf("onnx conformance %-18s: %4d tests, %4d mapped, %4d pass\n", folder, f_total,
                f_mapped, f_pass);
    total += f_total;
    n_mapped += f_mapped;
  }
  std::printf("onnx conformance total             : %4d tests, %4d mapped, %4zu pass (%.1f%%)\n",
              total, n_mapped, passing.size(),
              n_mapped ? 100.0 * static_cast<double>(passing.size()) / n_mapped : 0.0);
  for (const std::string& f : failures) std::printf("  failing: %s\n", f.c_str());
  std::set<std::string> pass_set(passing.begin(), passing.end());
  for (const std::string& name : listed)
    EXPECT_TRUE(pass_set.count(name))
        << name << " is listed as passing but was not run (unmapped?)";
  for (const std::string& name : passing)
    if (!listed.count(name)) std::printf("  passing, not listed: %s\n", name.c_str());
  if (const char* w = std::getenv("ANVIL_ONNX_WRITE_PASSING"); w && std::string(w) == "1") {
    std::ofstream out(ANVIL_ONNX_PASSING_LIST);
    out << "# ONNX backend tests (libonnx-testdata, ONNX 1.12) that import and match; one per "
           "line.\n"
        << "# Regenerate: ANVIL_ONNX_WRITE_PASSING=1 build/bin/frontend_onnx_conformance_test\n";
    for (const std::string& name : passing) out << name << "\n";
  }
}

// A failure's reason without the file and node ("op: what"), or the ops an import refuses
// ("unsupported: Acos, Asin").
std::string failure_reason(const std::string& why) {
  const std::string unsupported = "unsupported operators";
  if (size_t at = why.find(unsupported); at != std::string::npos) {
    std::string ops;
    std::istringstream lines(why.substr(at));
    std::string line;
    std::getline(lines, line);
    while (std::getline(lines, line)) {
      size_t colon = line.find(':');
      size_t begin = line.find_first_not_of(' ');
      if (colon == std::string::npos || begin >= colon) continue;
      ops += (ops.empty() ? "" : ", ") + line.substr(begin, colon - begin);
    }
    return "unsupported: " + ops;
  }
  size_t at = why.rfind("): ");
  std::string reason = why.substr(at == std::string::npos ? 0 : at + 3);
  return reason.substr(0, reason.find('\n')).substr(0, 90);
}

// Every backend test with its data (all four folders, mapped or not) compiled for the host
// (strict: no kernel loses its schedule) and run by the executor, given only the model, its input
// shapes and the inputs the importer names as deciding a shape (run_test binds those, as a user
// would with --input-value). tests/frontend/onnx_conformance_compiled.txt lists the tests that
// pass; one that stops passing fails, and a test that compiles but whose outputs differ fails
// whether listed or not. The rest are counted with their reason (the op or type the compiled
// path refuses), as out of scope when their data are sequences, optionals or strings or the op
// trains. A test counts only when generated code runs (a model that folds into constants at
// compile time does not). About 20 s (a JIT build per test).
TEST(OnnxConformance, CompiledPath) {
  const fs::path root = ANVIL_ONNX_TESTDATA;
  ASSERT_TRUE(fs::exists(root)) << root
                                << " is missing: install libonnx-testdata (scripts/setup.sh does)";
  std::set<std::string> listed;
  {
    std::ifstream f(ANVIL_ONNX_COMPILED_LIST);
    for (std::string line; std::getline(f, line);)
      if (!line.empty() && line[0] != '#') listed.insert(line);
  }
  std::vector<std::string> passing;
  std::map<std::string, int> reasons;
  int total = 0;
  for (const char* folder : {"node", "pytorch-converted", "pytorch-operator", "simple"}) {
    std::vector<fs::path> dirs;
    for (const auto& e : fs::directory_iterator(root / folder))
      if (fs::exists(e.path() / "model.onnx")) dirs.push_back(e.path());
    std::sort(dirs.begin(), dirs.end());
    int f_pass = 0;
    for (const fs::path& dir : dirs) {
      ++total;
      std::string name = std::string(folder) + "/" + dir.filename().string();
      std::string why = run_test(dir, /*compiled=*/true);
      if (why.empty()) {
        ++f_pass;
        passing.push_back(name);
        continue;
      }
      if (why.find("output ") == 0 || why.find(" outputs, expected") != std::string::npos) {
        ADD_FAILURE() << name << ": compiled, the outputs differ: " << why;
      } else if (listed.count(name)) {
        ADD_FAILURE() << name
                      << " is listed as passing through the compiled path but fails: " << why;
      }
      if (const char* v = std::getenv("ANVIL_ONNX_VERBOSE"); v && std::string(v) == "1")
        std::printf("  %s: %s\n", name.c_str(), why.substr(0, 300).c_str());
      ++reasons[failure_reason(why)];
    }
    std::printf("onnx conformance compiled %-18s: %4zu tests, %4d pass\n", folder, dirs.size(),
                f_pass);
  }
  std::printf("onnx conformance compiled total: %d tests, %zu pass (%.1f%%)\n", total,
              passing.size(), total ? 100.0 * static_cast<double>(passing.size()) / total : 0.0);
  std::vector<std::pair<int, std::string>> by_count;
  for (const auto& [r, n] : reasons) by_count.push_back({-n, r});
  std::sort(by_count.begin(), by_count.end());
  for (const auto& [n, r] : by_count) std::printf("  %3d x %s\n", -n, r.c_str());
  std::set<std::string> pass_set(passing.begin(), passing.end());
  for (const std::string& name : passing)
    if (!listed.count(name)) std::printf("  passing, not listed: %s\n", name.c_str());
  if (const char* w = std::getenv("ANVIL_ONNX_WRITE_PASSING"); w && std::string(w) == "1") {
    std::ofstream out(ANVIL_ONNX_COMPILED_LIST);
    out << "# ONNX backend tests (libonnx-testdata, ONNX 1.12) that compile for the host and "
           "match; one per line.\n"
        << "# Regenerate: ANVIL_ONNX_WRITE_PASSING=1 build/bin/frontend_onnx_conformance_test\n";
    for (const std::string& name : passing) out << name << "\n";
  }
}

// Run-time control flow through the compiled path: If with a condition given at run time, Loop
// with a run-time condition and loop-carried values, Scan (opset 8 with its batch axis, and 9).
// (The Range function's expansion, a Loop whose trip count decides the output's length, has all
// its inputs bound at compile time and folds into a constant: it runs no generated code.)
TEST(OnnxConformance, ControlFlowCompiled) {
  for (const char* name : {"test_if", "test_loop11", "test_scan_sum", "test_scan9_sum"}) {
    fs::path dir = fs::path(ANVIL_ONNX_TESTDATA) / "node" / name;
    EXPECT_EQ(run_test(dir, /*compiled=*/true), "") << name;
    EXPECT_EQ(run_test(dir, /*compiled=*/false), "") << name << " (interpreted)";
  }
}

}  // namespace
}  // namespace anvil
