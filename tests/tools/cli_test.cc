// The `anvil` command line: its parsing helpers, then the built executable run in a temporary
// directory, checking exit codes (main.cc documents them) and that every message names what was
// wrong. The end-to-end part compiles zoo:dqn, runs it on a .npy input and compares the output
// with the reference interpreter.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "anvil/autotune/records.h"
#include "anvil/autotune/task.h"
#include "anvil/frontend/onnx/importer.h"
#include "anvil/graph/interpreter.h"
#include "anvil/models/models.h"
#include "anvil/ops/op.h"
#include "anvil/runtime/device_api.h"
#include "anvil/runtime/host_cpu.h"
#include "anvil/runtime/model.h"
#include "anvil/runtime/npy.h"
#include "frontend/onnx_model_builder.h"
#include "tools/anvil/args.h"
#include "tools/cli_fixture.h"

namespace anvil::cli {
namespace {

// ---- the parsing helpers

template <typename F>
std::string usage_message(F&& fn) {
  try {
    fn();
  } catch (const CliError& e) {
    EXPECT_EQ(e.code(), kUsage) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected a usage error";
  return "";
}

TEST(CliArgs, ParsesDims) {
  EXPECT_EQ(parse_dims("1x3x224x224", "--opt"), (std::vector<int64_t>{1, 3, 224, 224}));
  EXPECT_EQ(parse_dims("7", "--opt"), (std::vector<int64_t>{7}));
  EXPECT_EQ(parse_dims("0x5", "--opt"), (std::vector<int64_t>{0, 5}));
  EXPECT_EQ(parse_dims("", "--opt"), (std::vector<int64_t>{}));
  for (const char* bad : {"1x", "x1", "1xx2", "1x-3", "1x+3", "1x3.5", "abc", "1X3", "1x3 ",
                          "99999999999999999999"}) {
    std::string m = usage_message([&] { parse_dims(bad, "--opt"); });
    EXPECT_NE(m.find(std::string("--opt: '") + bad + "' is not a shape"), std::string::npos) << m;
  }
  std::string m = usage_message([&] { parse_dims("1x3xfoo", "--input-shape data"); });
  EXPECT_NE(m.find("dimension 2 is 'foo'"), std::string::npos) << m;
}

TEST(CliArgs, ParsesBindings) {
  EXPECT_EQ(parse_binding("x=in.npy", "--input", "NAME=FILE"),
            (std::pair<std::string, std::string>{"x", "in.npy"}));
  EXPECT_EQ(parse_binding("a=b=c.npy", "--input", "NAME=FILE").first, "a=b");
  // A worker's command may set variables through env: it splits at the first '='.
  EXPECT_EQ(
      parse_binding("w=env A=1 anvil bench-worker", "--worker", "NAME=COMMAND", Split::kAtFirst),
      (std::pair<std::string, std::string>{"w", "env A=1 anvil bench-worker"}));
  for (const char* bad : {"x", "=in.npy", "x=", ""}) {
    std::string m = usage_message([&] { parse_binding(bad, "--input", "NAME=FILE.npy"); });
    EXPECT_NE(m.find(std::string("--input: '") + bad + "' is not of the form NAME=FILE.npy"),
              std::string::npos)
        << m;
  }
  auto [name, dims] = parse_shape_binding("data=1x3x8x8");
  EXPECT_EQ(name, "data");
  EXPECT_EQ(dims, (std::vector<int64_t>{1, 3, 8, 8}));
  std::string m = usage_message([] { parse_shape_binding("data=1x3xN"); });
  EXPECT_NE(m.find("--input-shape data: '1x3xN' is not a shape"), std::string::npos) << m;
  m = usage_message([] { parse_shape_binding("1x3x8x8"); });
  EXPECT_NE(m.find("--input-shape: '1x3x8x8' is not of the form NAME=DIMS"), std::string::npos)
      << m;
}

TEST(CliArgs, OutputFilesStayInTheirDirectory) {
  EXPECT_EQ(output_file(".", "logits"), "./logits.npy");
  EXPECT_EQ(output_file("out/", "q_values"), "out/q_values.npy");
  EXPECT_EQ(output_file("out", "a/b"), "out/a_b.npy");
  EXPECT_EQ(output_file("out", "../x"), "out/_._x.npy");
  EXPECT_EQ(output_file("out", "y:0"), "out/y:0.npy");
}

TEST(CliArgs, LatencyStatsAndSizes) {
  LatencyStats s = latency_stats({5, 1, 3});
  EXPECT_EQ(s.median_ms, 3);
  EXPECT_EQ(s.min_ms, 1);
  EXPECT_EQ(s.max_ms, 5);
  EXPECT_EQ(latency_stats({4, 1, 2, 10}).median_ms, 3);
  EXPECT_THROW(latency_stats({}), std::invalid_argument);
  EXPECT_EQ(bytes_string(64), "64 B");
  EXPECT_EQ(bytes_string(1536), "1.5 KiB");
  EXPECT_EQ(bytes_string(3 << 20), "3.0 MiB");
}

TEST(CliArgs, WithExitCodeKeepsTheCodeOfTheFirstFailure) {
  try {
    with_exit_code(kCompile, "compiling m", [] { throw std::runtime_error("bad group"); });
    FAIL();
  } catch (const CliError& e) {
    EXPECT_EQ(e.code(), kCompile);
    EXPECT_STREQ(e.what(), "compiling m: bad group");
  }
  try {
    with_exit_code(kRuntime, "x", [] { usage_error("--opt: bad"); });
    FAIL();
  } catch (const CliError& e) {
    EXPECT_EQ(e.code(), kUsage);
    EXPECT_STREQ(e.what(), "--opt: bad");
  }
}

// The profile table: slowest first, shares of the total, GFLOP/s and the fraction of the peak of
// all threads, "-" where a kernel counts no FLOPs.
TEST(CliArgs, ProfileTable) {
  std::vector<runtime::KernelProfile> kernels = {
      {"fused_0_layout_transform", "'t' (layout_transform)", 1e-3, 0},
      {"fused_1_conv2d_nchwc", "'c' (conv2d_nchwc), 'r' (relu)", 3e-3, 6e6}};
  PeakFlops peak{1.0, 8, "avx2+fma"};
  std::string table = profile_table(kernels, 7, 2, peak);
  std::istringstream in(table);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 6u) << table;
  EXPECT_EQ(lines[0], "profile: median of 7 runs after 1 warm-up, 2 threads");
  for (const char* column : {"time (ms)", "share", "GFLOP/s", "of peak", "kernel", "nodes"})
    EXPECT_NE(lines[1].find(column), std::string::npos) << lines[1];
  // 6 MFLOP in 3 ms: 2 GFLOP/s, all of 2 threads x 1 GFLOP/s.
  EXPECT_NE(lines[2].find("3.000    75.0%       2.0   100.0%  fused_1_conv2d_nchwc"),
            std::string::npos)
      << lines[2];
  EXPECT_NE(lines[2].find("'c' (conv2d_nchwc), 'r' (relu)"), std::string::npos) << lines[2];
  EXPECT_NE(lines[3].find("1.000    25.0%         -        -  fused_0_layout_transform"),
            std::string::npos)
      << lines[3];
  // The total: 6 MFLOP in 4 ms.
  EXPECT_NE(lines[4].find("4.000   100.0%       1.5    75.0%  total"), std::string::npos)
      << lines[4];
  EXPECT_NE(lines[4].find("(2 kernels)"), std::string::npos) << lines[4];
  EXPECT_EQ(lines[5],
            "peak: 1.0 GFLOP/s per core x 2 threads (measured: avx2+fma fused multiply-adds)");
}

// A GPU model's profile (threads 0): no thread count, no peak, no fraction of one.
TEST(CliArgs, ProfileTableOnTheGpu) {
  std::vector<runtime::KernelProfile> kernels = {{"fused_0_conv2d", "'c' (conv2d)", 2e-3, 8e9},
                                                 {"fused_1_flatten", "'f' (flatten)", 1e-3, 0}};
  std::string table = profile_table(kernels, 5, 0, PeakFlops{});
  std::istringstream in(table);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 5u) << table;
  EXPECT_EQ(lines[0],
            "profile: median of 5 runs after 1 warm-up, on the GPU (each call waited for alone)");
  // 8 GFLOP in 2 ms: 4000 GFLOP/s, with no fraction of a peak.
  EXPECT_NE(lines[2].find("2.000    66.7%    4000.0        -  fused_0_conv2d"), std::string::npos)
      << lines[2];
  EXPECT_NE(lines[4].find("3.000   100.0%    2666.7        -  total"), std::string::npos)
      << lines[4];
  EXPECT_EQ(table.find("peak:"), std::string::npos) << table;
}

// ---- the executable

TEST_F(Cli, HelpSucceeds) {
  Result r = anvil("--help");
  EXPECT_EQ(r.code, 0) << r.err;
  for (const char* cmd : {"compile", "run", "zoo"}) EXPECT_NE(r.out.find(cmd), std::string::npos);
  EXPECT_NE(r.out.find("inspect"), std::string::npos) << r.out;
  r = anvil("compile --help");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("--input-shape"), std::string::npos) << r.out;
  // Every command's help ends with an example of it.
  for (const std::string cmd : {"", "compile", "run", "inspect", "bench", "tune", "ops", "quantize",
                                "zoo", "zoo list", "zoo export"}) {
    r = anvil(cmd + " --help");
    EXPECT_EQ(r.code, 0) << cmd << ": " << r.err;
    EXPECT_NE(r.out.find("Example"), std::string::npos) << cmd << ": " << r.out;
    EXPECT_NE(r.out.find("  anvil " + (cmd.empty() ? std::string("compile") : cmd)),
              std::string::npos)
        << cmd << ": " << r.out;
  }
  r = anvil("run --help");
  EXPECT_NE(r.out.find("--profile"), std::string::npos) << r.out;
  r = anvil("inspect --help");
  for (const char* stage : {"graph", "optimized", "fused", "lowered", "llvm", "asm"})
    EXPECT_NE(r.out.find(stage), std::string::npos) << r.out;
}

TEST_F(Cli, UsageErrorsExitWith1) {
  expect_error("", 1, {});
  expect_error("frobnicate", 1,
               {"unknown command 'frobnicate'",
                "compile, run, inspect, bench, tune, env, ops, quantize, zoo"});
  expect_error("zoo frobnicate", 1, {"unknown command 'frobnicate'", "list, export"});
  expect_error("compile zoo:dqn", 1, {"--output"});
  expect_error("compile zoo:dqn -o m.so --bogus", 1, {"--bogus"});
  expect_error("compile zoo:dqn -o m.so --print-after nope", 1, {"--print-after", "nope"});
  expect_error("compile zoo:dqn -o m.so --no-layout --print-after alter_layout", 1,
               {"--print-after alter_layout", "--no-layout"});
  expect_error("compile zoo:dqn -o m.so --target 'llvm -mfoo=1'", 1, {"--target 'llvm -mfoo=1'"});
  expect_error("compile zoo:dqn -o no/such/dir/m.so", 1, {"-o no/such/dir/m.so", "no/such/dir"});
  expect_error("run m.so --repeat 0", 1, {"--repeat"});
  expect_error("run m.so --threads -2", 1, {"--threads"});
  expect_error("run m.so --input state", 1, {"--input: 'state' is not of the form NAME=FILE.npy"});
  expect_error("run m.so --input a=x.npy --input a=y.npy", 1, {"input 'a' is given twice"});
  expect_error("run m.so --output-dir no/where", 1, {"--output-dir no/where"});
  expect_error("zoo", 1, {});
  expect_error("zoo export", 1, {"NAME"});
  expect_error("inspect zoo:dqn", 1, {"--stage"});
  expect_error("inspect zoo:dqn --stage nope", 1, {"--stage", "nope"});
  expect_error("inspect zoo:dqn --stage graph --kernel fused_0", 1,
               {"--kernel fused_0", "--stage graph", "lowered, llvm and asm"});
  expect_error("inspect zoo:dqn --stage asm --target c", 1,
               {"--stage asm", "target 'c", "--stage c"});
  expect_error("inspect zoo:resnet99 --stage graph", 1, {"unknown zoo model 'resnet99'"});
  expect_error("inspect missing.onnx --stage graph", 2, {"missing.onnx", "cannot open"});
}

TEST_F(Cli, UnknownZooModelsAreUsageErrorsListingTheKnownOnes) {
  expect_error("compile zoo:resnet99 -o m.so", 1, {"unknown zoo model 'resnet99'", "dqn", "dcgan"});
  expect_error("zoo export resnet99", 1, {"unknown zoo model 'resnet99'", "resnet18"});
}

TEST_F(Cli, BadInputShapesAreUsageErrors) {
  expect_error("compile zoo:dqn -o m.so --input-shape state", 1,
               {"--input-shape: 'state' is not of the form NAME=DIMS"});
  expect_error("compile zoo:dqn -o m.so --input-shape state=1x4xNx84", 1,
               {"--input-shape state: '1x4xNx84' is not a shape", "dimension 2 is 'N'"});
  expect_error("compile zoo:dqn -o m.so --input-shape state=1x4 --input-shape state=1x4", 1,
               {"input 'state' is bound twice"});
  // Well-formed, but the zoo model's static shape disagrees: a bad input (2).
  expect_error(
      "compile zoo:dqn -o m.so --input-shape state=1x4x80x80", 2,
      {"input shape state=[1, 4, 80, 80]", "fixes input 'state' to float32[1, 4, 84, 84]"});
  expect_error("compile zoo:dqn -o m.so --input-shape image=1x4", 2,
               {"has no input 'image'", "state float32[1, 4, 84, 84]"});
}

TEST_F(Cli, BadOnnxFilesExitWith2NamingTheFile) {
  expect_error("compile missing.onnx -o m.so", 2, {"missing.onnx", "cannot open"});
  write(path("garbage.onnx"), "\xff\xfe this is not protobuf \x01\x02\x03");
  expect_error("compile garbage.onnx -o m.so", 2, {"garbage.onnx"});

  anvil::testing::OnnxModel m(13);
  m.input("x", {2, 2});
  m.init_floats("w", {2, 2}, {1, 2, 3, 4});
  m.node("MatMul", {"x", "w"}, {"y"}, "mm");
  m.output("y");
  std::string bytes = m.bytes();
  write(path("truncated.onnx"), bytes.substr(0, bytes.size() - 7));
  expect_error("compile truncated.onnx -o m.so", 2, {"truncated.onnx"});
  write(path("empty.onnx"), "");
  expect_error("compile empty.onnx -o m.so", 2, {"empty.onnx"});
}

TEST_F(Cli, UnsupportedOpsExitWith2ListingEveryOne) {
  anvil::testing::OnnxModel m(13);
  m.input("x", {1, 4});
  m.node("Relu", {"x"}, {"a"}, "relu");
  m.node("NoSuchOp", {"a"}, {"b"}, "first_missing");
  m.node("NoSuchOp", {"b"}, {"c"}, "second_missing");
  m.node("AnotherOp", {"c"}, {"y"}, "third_missing");
  m.output("y");
  write(path("unsupported.onnx"), m.bytes());
  expect_error("compile unsupported.onnx -o m.so", 2,
               {"unsupported.onnx", "NoSuchOp", "first_missing", "second_missing", "AnotherOp",
                "third_missing"});
}

TEST_F(Cli, UnboundSymbolicDimensionsExitWith2) {
  anvil::testing::OnnxModel m(13);
  m.input("x", {-1, 4});
  m.node("Relu", {"x"}, {"y"}, "relu");
  m.output("y");
  write(path("symbolic.onnx"), m.bytes());
  expect_error("compile symbolic.onnx -o m.so", 2, {"symbolic.onnx", "--input-shape x=DIMS"});
  expect_error("compile symbolic.onnx -o m.so --input-shape z=2x4", 2, {"--input-shape names 'z'"});
}

TEST_F(Cli, ZooListNamesEveryModelWithItsInputsAndOutputs) {
  Result r = anvil("zoo list");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const std::string& name : models::model_names())
    EXPECT_NE(r.out.find(name), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("state float32[1, 4, 84, 84] -> q_values float32[1, 18]"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("tokens int64[35, 1] -> logits float32[35, 10000]"), std::string::npos)
      << r.out;
}

// Every mapped ONNX op with the opsets of its versions (from ONNX's schemas), every library op.
TEST_F(Cli, OpsListsTheMappedOnnxOperatorsAndTheLibrary) {
  Result r = anvil("ops");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const std::string& op : frontend::mapped_onnx_ops())
    EXPECT_NE(r.out.find("\n  " + op + " "), std::string::npos) << op;
  for (const std::string& op : ops::registered_ops())
    EXPECT_NE(r.out.find("\n  " + op + " "), std::string::npos) << op;
  // Versions from ONNX's schemas: Mod came in opset 10 and changed in 13; Trilu is opset 14's.
  EXPECT_NE(r.out.find("  Mod                         10, 13\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  Trilu                       14\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  gather_elements             injective  (axis)\n"), std::string::npos)
      << r.out;
}

TEST_F(Cli, RunRefusesAMissingArtifact) {
  expect_error("run missing.so", 2, {"missing.so"});
}

// ---- compile and run, end to end

// max |a - ref| <= 1e-4 * max |ref| (the bar for compiled models).
void expect_close(const runtime::NDArray& a, const runtime::NDArray& ref, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(a.shape(), ref.shape());
  ASSERT_EQ(runtime::to_string(a.dtype()), "float32");
  ASSERT_EQ(runtime::to_string(ref.dtype()), "float32");
  double max_ref = 0, max_err = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    max_ref = std::max(max_ref, std::abs(static_cast<double>(ref.data_as<float>()[i])));
    max_err = std::max(
        max_err, std::abs(static_cast<double>(a.data_as<float>()[i]) - ref.data_as<float>()[i]));
  }
  EXPECT_GT(max_ref, 0);
  EXPECT_LE(max_err, 1e-4 * max_ref) << "max |ref| = " << max_ref;
}

// zoo:dqn's input and reference output, shared by the suite. Each test compiles what it runs (ctest
// runs every test in its own process, so a compile shared through the suite would be repeated).
class CliDqn : public Cli {
 protected:
  static void SetUpTestSuite() {
    Cli::SetUpTestSuite();
    graph::Graph g = models::build_model("dqn");
    std::vector<runtime::NDArray> inputs = models::example_inputs(g, 7);
    runtime::save_npy(path("state.npy"), inputs.at(0));
    reference_ = new runtime::NDArray(graph::interpret(g, inputs).at(0));
  }
  static void TearDownTestSuite() {
    delete reference_;
    Cli::TearDownTestSuite();
  }
  static runtime::NDArray* reference_;
};
runtime::NDArray* CliDqn::reference_ = nullptr;

// One test, so that the model is compiled once: the compile, a run checked against the reference
// interpreter, then every way a run can be given wrong inputs or a damaged artifact.
TEST_F(CliDqn, CompilesRunsAndRefusesBadInputsAndArtifacts) {
  Result c = anvil("compile zoo:dqn -o dqn.so --verbose --print-after eliminate_dead_code");
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.out.find("compiled zoo:dqn for 'llvm"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find(" kernels; intermediate memory "), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("wrote dqn.so"), std::string::npos) << c.out;
  EXPECT_NE(c.err.find("// after eliminate_dead_code"), std::string::npos) << c.err;

  // --output-dir is created when missing.
  Result r = anvil("run dqn.so --input state=state.npy --output-dir out --repeat 3 --threads 1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("latency: median "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(3 runs after 1 warm-up, 1 thread)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("wrote out/q_values.npy (float32[1, 18])"), std::string::npos) << r.out;
  expect_close(runtime::load_npy(path("out/q_values.npy")), *reference_, "dqn");

  // --fill-mode fills the inputs not given: ones, checked against the interpreter on ones.
  r = anvil("run dqn.so --fill-mode ones --output-dir ones");
  ASSERT_EQ(r.code, 0) << r.err;
  {
    graph::Graph g = models::build_model("dqn");
    runtime::NDArray ones = runtime::NDArray::empty({1, 4, 84, 84}, runtime::dl_float32());
    std::fill_n(ones.data_as<float>(), ones.numel(), 1.0f);
    expect_close(runtime::load_npy(path("ones/q_values.npy")), graph::interpret(g, {ones}).at(0),
                 "dqn on ones");
  }
  expect_error("run dqn.so --fill-mode twos", 1, {"--fill-mode"});

  // --top 3: the indices of the three largest q-values of the reference, in order.
  r = anvil("run dqn.so --input state=state.npy --output-dir top --top 3");
  ASSERT_EQ(r.code, 0) << r.err;
  {
    const float* q = reference_->data_as<float>();
    std::vector<int> order(18);
    for (int i = 0; i < 18; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](int a, int b) { return q[a] > q[b]; });
    const std::string want = "top 3 of 'q_values': [0, " + std::to_string(order[0]) + "] ";
    size_t at = r.out.find(want);
    ASSERT_NE(at, std::string::npos) << want << "\n" << r.out;
    const std::string line = r.out.substr(at, r.out.find('\n', at) - at);
    for (int i = 1; i < 3; ++i)
      EXPECT_NE(line.find(", [0, " + std::to_string(order[i]) + "] "), std::string::npos) << line;
  }
  expect_error("run dqn.so --fill-mode ones --top 0", 1, {"--top"});

  // --profile: a row per kernel with its nodes, the total and the measured peak.
  r = anvil(
      "run dqn.so --input state=state.npy --output-dir prof --profile --repeat 3 --threads 1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("profile: median of 3 runs after 1 warm-up, 1 thread\n"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("GFLOP/s per core x 1 thread (measured"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("wrote prof/q_values.npy"), std::string::npos) << r.out;
  expect_close(runtime::load_npy(path("prof/q_values.npy")), *reference_, "dqn profiled");
  {
    runtime::Model m = runtime::Model::load(path("dqn.so"));
    std::vector<runtime::KernelProfile> kernels =
        m.profile({runtime::load_npy(path("state.npy"))}, 1);
    EXPECT_NE(r.out.find("  total "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("(" + std::to_string(kernels.size()) + " kernels)"), std::string::npos)
        << r.out;
    for (const runtime::KernelProfile& k : kernels) {
      size_t at = r.out.find("  " + k.kernel + " ");
      ASSERT_NE(at, std::string::npos) << k.kernel << "\n" << r.out;
      std::string line = r.out.substr(r.out.rfind('\n', at) + 1);
      line = line.substr(0, line.find('\n'));
      EXPECT_NE(line.find(k.nodes), std::string::npos) << line;
      // Convolutions and dense layers have a rate and a fraction of the peak.
      if (k.kernel.find("conv") != std::string::npos ||
          k.kernel.find("dense") != std::string::npos) {
        EXPECT_NE(line.find("%"), line.rfind("%")) << line;
      }
    }
  }

  // Wrong inputs: each names the option, the input and what the model expects.
  expect_error("run dqn.so --input image=state.npy", 2,
               {"--input image=state.npy", "no input 'image'", "'state' float32[1, 4, 84, 84]"});
  expect_error("run dqn.so", 2, {"'state' float32[1, 4, 84, 84] is not given", "--fill-mode"});
  runtime::save_npy(path("small.npy"),
                    runtime::NDArray::empty({1, 4, 84, 83}, runtime::dl_float32(), true));
  expect_error("run dqn.so --input state=small.npy", 2,
               {"--input state=small.npy", "float32[1, 4, 84, 83]", "'state'",
                "expects float32[1, 4, 84, 84]"});
  runtime::save_npy(path("ints.npy"),
                    runtime::NDArray::empty({1, 4, 84, 84}, runtime::dl_int32(), true));
  expect_error("run dqn.so --input state=ints.npy", 2, {"int32[1, 4, 84, 84]", "expects float32"});
  write(path("bad.npy"), "not an array");
  expect_error("run dqn.so --input state=bad.npy", 2,
               {"--input state=bad.npy", "bad.npy", "not a .npy file"});
  expect_error("run dqn.so --input state=none.npy", 2, {"none.npy", "No such file"});

  // Damaged artifacts: one flipped byte, a truncated file, something else entirely.
  std::string bytes = read(path("dqn.so"));
  ASSERT_GT(bytes.size(), 1000u);
  std::string flipped = bytes;
  flipped[flipped.size() / 2] = static_cast<char>(flipped[flipped.size() / 2] ^ 0x40);
  write(path("flipped.so"), flipped);
  expect_error("run flipped.so --input state=state.npy", 2, {"flipped.so"});
  write(path("truncated.so"), bytes.substr(0, bytes.size() - 100));
  expect_error("run truncated.so --input state=state.npy", 2, {"truncated.so"});
  write(path("garbage.so"), "definitely not a shared library");
  expect_error("run garbage.so --input state=state.npy", 2, {"garbage.so"});
}

// ---- inspect

// The kernels `inspect --stage fused` lists ("  fused_1_conv2d_nchwc: conv2d_nchwc, ...").
std::vector<std::string> kernel_names(const std::string& fused) {
  std::vector<std::string> names;
  std::istringstream in(fused);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("  fused_", 0) == 0) names.push_back(line.substr(2, line.find(':') - 2));
  return names;
}

TEST_F(Cli, InspectsTheGraphBeforeAndAfterThePasses) {
  Result r = anvil("inspect zoo:dqn --stage graph");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("input %state: float32[1, 4, 84, 84]\n", 0), 0u) << r.out;
  EXPECT_NE(r.out.find(" = conv2d(%state, "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" = dense("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("outputs %q_values"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("nchwc"), std::string::npos) << r.out;

  r = anvil("inspect zoo:dqn --stage optimized");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(" = layout_transform(%state)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("conv2d_nchwc("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("_pack_weight: float32["), std::string::npos) << r.out;
  r = anvil("inspect zoo:dqn --stage optimized --no-layout");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("nchwc"), std::string::npos) << r.out;
}

TEST_F(Cli, InspectsTheKernelsAndTheirLoopIr) {
  Result r = anvil("inspect zoo:dqn --stage fused");
  ASSERT_EQ(r.code, 0) << r.err;
  std::vector<std::string> names = kernel_names(r.out);
  ASSERT_GE(names.size(), 4u) << r.out;
  EXPECT_NE(r.out.find(std::to_string(names.size()) + " kernels\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("conv2d_nchwc schedule]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" MFLOP\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("memory: "), std::string::npos) << r.out;
  // No dqn kernel falls back to default loops: no warning, and --strict builds the same kernels.
  EXPECT_EQ(r.err.find("anvil: warning:"), std::string::npos) << r.err;
  Result strict = anvil("inspect zoo:dqn --stage fused --strict");
  ASSERT_EQ(strict.code, 0) << strict.err;
  EXPECT_EQ(strict.out, r.out);
  auto conv = std::find_if(names.begin(), names.end(), [](const std::string& n) {
    return n.find("conv2d_nchwc") != std::string::npos;
  });
  ASSERT_NE(conv, names.end()) << r.out;

  r = anvil("inspect zoo:dqn --stage lowered --kernel " + *conv);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("// " + *conv + ": 'conv", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("parallel for ("), std::string::npos) << r.out;
  for (const std::string& other : names)
    if (other != *conv) {
      EXPECT_EQ(r.out.find(other), std::string::npos) << other;
    }

  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  expect_error("inspect zoo:dqn --stage lowered --kernel fused_99_nothing", 1,
               {"--kernel fused_99_nothing", "no kernel of that name", list});
}

// The GPU targets: dqn compiled for OpenCL runs on PoCL (this machine's CPU as an OpenCL device)
// and matches the interpreter; compiled for CUDA it is an artifact that says, when run without
// the NVIDIA driver, which library is missing. inspect shows the kernels' GPU schedules and
// source, and refuses the CPU-only stages.
TEST_F(CliDqn, CompilesAndRunsForGpuTargets) {
  Result c = anvil("compile zoo:dqn --target opencl -o dqn_cl.so");
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.out.find("compiled zoo:dqn for 'opencl"), std::string::npos) << c.out;
  Result r = anvil("run dqn_cl.so --input state=state.npy --output-dir cl --repeat 2 --profile");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("fused_0_conv2d"), std::string::npos) << r.out;
  expect_close(runtime::load_npy(path("cl/q_values.npy")), *reference_, "dqn on opencl");

  c = anvil("compile zoo:dqn --target \"cuda -arch=sm_90\" -o dqn_cuda.so");
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.out.find("wrote dqn_cuda.so"), std::string::npos) << c.out;
  if (!runtime::Device::available(kDLCUDA))
    expect_error("run dqn_cuda.so --input state=state.npy", 4, {"libcuda.so.1"});

  r = anvil("inspect zoo:dqn --target opencl --stage fused");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("[conv2d GPU schedule]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[dense GPU schedule]"), std::string::npos) << r.out;
  r = anvil("inspect zoo:dqn --target \"cuda -arch=sm_90\" --stage c");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("__global__"), std::string::npos);
  EXPECT_NE(r.out.find("__shared__"), std::string::npos);
  EXPECT_NE(r.out.find("__syncthreads()"), std::string::npos);
  expect_error("inspect zoo:dqn --target opencl --stage asm", 1, {"asm"});
}

TEST_F(Cli, InspectsLlvmIrAndAssembly) {
  Result r = anvil("inspect zoo:dqn --stage llvm");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("target triple"), std::string::npos);
  EXPECT_NE(r.out.find("define "), std::string::npos);
  EXPECT_NE(r.out.find(" x float>"), std::string::npos);  // vectorized
  r = anvil("inspect zoo:dqn --stage asm --kernel fused_0_layout_transform");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("fused_0_layout_transform:\n", 0), 0u) << r.out.substr(0, 500);
  EXPECT_NE(r.out.find("AnvilCheckArgCount"), std::string::npos);
  EXPECT_EQ(r.out.find("fused_1_"), std::string::npos);
}

// An ONNX model with a symbolic batch, bound on the command line, compiled without fusion or
// layout alteration and with its parameters beside the library.
TEST_F(Cli, CompilesAndRunsAnOnnxModelWithABoundInputShape) {
  anvil::testing::OnnxModel m(13);
  m.input("x", {-1, 3});
  m.init_floats("w", {3, 2}, {1, -2, 0.5f, 3, -1, 0.25f});
  m.node("MatMul", {"x", "w"}, {"xw"}, "matmul");
  m.node("Relu", {"xw"}, {"y"}, "relu");
  m.output("y");
  write(path("mm.onnx"), m.bytes());
  Result c =
      anvil("compile mm.onnx --input-shape x=2x3 --no-fuse --no-layout --separate-params -o mm.so");
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.out.find("(fusion off) (layout alteration off)"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("and mm.safetensors"), std::string::npos) << c.out;
  EXPECT_TRUE(fs::is_regular_file(path("mm.safetensors")));

  runtime::NDArray x = runtime::NDArray::empty({2, 3}, runtime::dl_float32());
  const float xv[] = {1, 2, 3, -4, 0.5f, 6};
  std::copy(xv, xv + 6, x.data_as<float>());
  runtime::save_npy(path("x.npy"), x);
  Result r = anvil("run mm.so --input x=x.npy");
  ASSERT_EQ(r.code, 0) << r.err;
  runtime::NDArray y = runtime::load_npy(path("y.npy"));
  ASSERT_EQ(y.shape(), (std::vector<int64_t>{2, 2}));
  const float w[3][2] = {{1, -2}, {0.5f, 3}, {-1, 0.25f}};
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      float acc = 0;
      for (int k = 0; k < 3; ++k) acc += xv[i * 3 + k] * w[k][j];
      EXPECT_NEAR(y.data_as<float>()[i * 2 + j], std::max(acc, 0.0f), 1e-5f) << i << "," << j;
    }
  // The bound shape is the model's now.
  runtime::save_npy(path("x4.npy"), runtime::NDArray::empty({4, 3}, runtime::dl_float32(), true));
  expect_error("run mm.so --input x=x4.npy", 2, {"float32[4, 3]", "expects float32[2, 3]"});
  // Without its parameter file the artifact is refused.
  fs::rename(path("mm.safetensors"), path("moved.safetensors"));
  expect_error("run mm.so --input x=x.npy", 2, {"mm.safetensors"});
}

// --tuning-records: bad files are exit code 2 naming the file and the line; a record for one of
// the model's tasks is applied to its kernels and the others are listed as untuned.
TEST_F(Cli, TuningRecordsAreAppliedToTheirTasks) {
  Target target = Target::host();
  graph::Graph g = models::build_model("dqn");
  std::vector<autotune::ModelTask> tasks = autotune::extract_tasks(g, target, {});
  ASSERT_GE(tasks.size(), 2u);
  const autotune::Task& t = tasks[0].task;
  autotune::Record r{t.to_json(), t.target, autotune::config_at(t.space(), 1), {1e-6}, {}, ""};
  const std::string line = r.to_json().dump() + "\n";

  expect_error("compile zoo:dqn --tuning-records missing.json -o tr.so", 2,
               {"--tuning-records", "missing.json", "no such file"});
  write(path("bad.json"), line + "{\"op\": \n");
  expect_error("compile zoo:dqn --tuning-records bad.json -o tr.so", 2,
               {"bad.json", "line 2", "not JSON"});
  write(path("array.json"), line + "\n[1, 2]\n");
  expect_error("compile zoo:dqn --tuning-records array.json -o tr.so", 2,
               {"array.json", "line 3", "a record must be a JSON object"});
  EXPECT_FALSE(fs::exists(path("tr.so")));

  // The record, then a line cut off mid-way (a tuner killed while writing).
  write(path("records.json"), line + line.substr(0, 30));
  Result c = anvil("compile zoo:dqn --tuning-records records.json -o tr.so");
  ASSERT_EQ(c.code, 0) << c.err;
  size_t kernels = 0;
  for (const autotune::ModelTask& mt : tasks) kernels += mt.kernels.size();
  const std::string summary = "tuning records: 1 read (1 task, 1 cut-off last line skipped); " +
                              std::to_string(tasks[0].kernels.size()) + " of " +
                              std::to_string(kernels) + " tunable kernels tuned";
  EXPECT_NE(c.out.find(summary), std::string::npos) << summary << "\n" << c.out;
  EXPECT_NE(c.out.find("  untuned: " + tasks[1].task.str()), std::string::npos) << c.out;

  // The tuned artifact computes what the reference does.
  runtime::NDArray x = runtime::NDArray::empty({1, 4, 84, 84}, runtime::dl_float32());
  for (int64_t i = 0; i < x.numel(); ++i) x.data_as<float>()[i] = static_cast<float>(i % 7) - 3;
  runtime::save_npy(path("tr_state.npy"), x);
  Result r2 = anvil("run tr.so --input state=tr_state.npy --output-dir tr_out");
  ASSERT_EQ(r2.code, 0) << r2.err;
  expect_close(runtime::load_npy(path("tr_out/q_values.npy")), graph::interpret(g, {x}).at(0),
               "tuned dqn");

  // The same record from another CPU, and from before records named their CPU: reported, and
  // applied only with --records-any-cpu.
  autotune::Record elsewhere = r;
  elsewhere.cpu = "GenuineIntel family 6 model 143";
  nlohmann::json unnamed = r.to_json();
  unnamed.erase("cpu");
  write(path("other.json"), elsewhere.to_json().dump() + "\n" + unnamed.dump() + "\n");
  Result o = anvil("compile zoo:dqn --tuning-records other.json -o other.so");
  ASSERT_EQ(o.code, 0) << o.err;
  const std::string note =
      "tuning records: 2 of 2 were tuned on another CPU (naming no CPU: 1; "
      "GenuineIntel family 6 model 143: 1) and are not applied on this one (" +
      runtime::host_cpu().id() + ") (--records-any-cpu applies them)";
  EXPECT_NE(o.out.find(note), std::string::npos) << note << "\n" << o.out;
  EXPECT_NE(o.out.find("tuning records: 0 read (0 tasks); 0 of "), std::string::npos) << o.out;
  Result any = anvil("compile zoo:dqn --tuning-records other.json --records-any-cpu -o any.so");
  ASSERT_EQ(any.code, 0) << any.err;
  EXPECT_EQ(any.out.find("another CPU"), std::string::npos) << any.out;
  const std::string applied =
      "tuning records: 2 read (1 task); " + std::to_string(tasks[0].kernels.size()) + " of ";
  EXPECT_NE(any.out.find(applied), std::string::npos) << applied << "\n" << any.out;
}

// `zoo export` writes an ONNX file that compiles and runs to the zoo model's own output.
TEST_F(CliDqn, ExportedZooModelsCompileAndMatch) {
  Result e = anvil("zoo export dqn -o dqn.onnx");
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_NE(e.out.find("wrote dqn.onnx"), std::string::npos) << e.out;
  expect_error("zoo export dqn -o missing_dir/dqn.onnx", 1, {"missing_dir"});
  Result c = anvil("compile dqn.onnx -o dqn_onnx.so");
  ASSERT_EQ(c.code, 0) << c.err;
  fs::create_directories(path("onnx_out"));
  Result r = anvil("run dqn_onnx.so --input state=state.npy --output-dir onnx_out");
  ASSERT_EQ(r.code, 0) << r.err;
  expect_close(runtime::load_npy(path("onnx_out/q_values.npy")), *reference_, "dqn via ONNX");
}

// `quantize` writes a QDQ model (calibrated on random inputs, or on a directory of .npy files)
// that compiles onto the int8 kernels and stays close to the float model; a calibration
// directory that does not exist is a usage error.
TEST_F(CliDqn, QuantizesAnExportedModel) {
  ASSERT_EQ(anvil("zoo export dqn -o dqn.onnx").code, 0);
  Result q = anvil("quantize dqn.onnx --calibration random --samples 2 -o dqn.int8.onnx");
  ASSERT_EQ(q.code, 0) << q.err;
  EXPECT_NE(q.out.find("quantized 5 nodes"), std::string::npos) << q.out;  // 3 Conv, 2 Gemm
  EXPECT_NE(q.out.find("cosine similarity at least 0.9"), std::string::npos) << q.out;
  fs::create_directories(path("calib"));
  fs::copy_file(path("state.npy"), path("calib/0.npy"));
  Result d = anvil("quantize dqn.onnx --calibration calib --reduce-range -o dqn.int8r.onnx");
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_NE(d.out.find("7 bits, uint8 activations per tensor, 1 calibration inputs"),
            std::string::npos)
      << d.out;
  expect_error("quantize dqn.onnx --calibration no_such_dir -o x.onnx", 1,
               {"--calibration no_such_dir: neither 'random' nor a directory"});
  Result c = anvil("compile dqn.int8r.onnx -o dqn_int8.so --verbose");
  ASSERT_EQ(c.code, 0) << c.err;
  fs::create_directories(path("int8_out"));
  Result r = anvil("run dqn_int8.so --input state=state.npy --output-dir int8_out");
  ASSERT_EQ(r.code, 0) << r.err;
  runtime::NDArray got = runtime::load_npy(path("int8_out/q_values.npy"));
  double dot = 0, gg = 0, ww = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double g = got.data_as<float>()[i], w = reference_->data_as<float>()[i];
    dot += g * w;
    gg += g * g;
    ww += w * w;
  }
  EXPECT_GT(dot / std::sqrt(gg * ww), 0.99) << "int8 DQN strays from the float one";
}

// --no-winograd computes every convolution directly (the ablation): no Winograd kernel in the
// artifact, the same outputs.
TEST_F(CliDqn, CompilesWithoutWinogradOnRequest) {
  Result c = anvil("compile zoo:dqn --no-winograd -o direct.so");
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.out.find("(no Winograd)"), std::string::npos) << c.out;
  Result i = anvil("inspect direct.so");
  ASSERT_EQ(i.code, 0) << i.err;
  EXPECT_NE(i.out.find("conv2d_nchwc"), std::string::npos) << i.out;
  EXPECT_EQ(i.out.find("winograd"), std::string::npos) << i.out;
  fs::create_directories(path("direct_out"));
  Result r = anvil("run direct.so --input state=state.npy --output-dir direct_out");
  ASSERT_EQ(r.code, 0) << r.err;
  expect_close(runtime::load_npy(path("direct_out/q_values.npy")), *reference_, "dqn direct");
}

// `anvil env`: what the target knows of the machine, the host's measured, a named CPU's from the
// table; a bad target is a usage error.
TEST_F(Cli, EnvDescribesTheMachine) {
  Result host = anvil("env");
  ASSERT_EQ(host.code, 0) << host.err;
  for (const char* part :
       {"CPU: ", "detected on this host", "L1d per core: ", "L2 per core: ", "cores: ",
        "FP32 peak per core: ", "(measured, ", "transparent huge pages: "})
    EXPECT_NE(host.out.find(part), std::string::npos) << part << "\n" << host.out;
  Result zen4 = anvil("env --target 'llvm -mcpu=znver4'");
  ASSERT_EQ(zen4.code, 0) << zen4.err;
  EXPECT_NE(zen4.out.find("L2 per core: 1 MiB"), std::string::npos) << zen4.out;
  EXPECT_NE(zen4.out.find("FMA units: 1"), std::string::npos) << zen4.out;
  // The host's identity and extensions, and what code for the target may use.
  EXPECT_NE(
      zen4.out.find("CPU: " + runtime::host_cpu().brand + " (" + runtime::host_cpu().id() + ")"),
      std::string::npos)
      << zen4.out;
#if defined(__x86_64__)
  Result zen3 = anvil("env --target 'llvm -mcpu=znver3'");
  ASSERT_EQ(zen3.code, 0) << zen3.err;
  const size_t line = zen3.out.find("code for znver3 may use: ");
  ASSERT_NE(line, std::string::npos) << zen3.out;
  const std::string uses = zen3.out.substr(line, zen3.out.find('\n', line) - line) + " ";
  EXPECT_NE(uses.find(" avx2 "), std::string::npos) << uses;
  EXPECT_EQ(uses.find(" avx512f "), std::string::npos) << uses;
#endif
  expect_error("env --target 'tpu'", 1, {"unknown kind 'tpu'"});
}

// What GPU builds would use here: the C compiler, NVRTC (the CI image has the CUDA toolkit), the
// devices (PoCL's OpenCL device; no NVIDIA driver); --device picks another, which this machine
// lacks, and a negative one is a usage error.
TEST_F(Cli, EnvNamesTheGpuToolsAndDevices) {
  Result r = anvil("env");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* part : {"C compiler (GPU host code, target c): ", "NVRTC: 1", "libnvrtc",
                           "CUDA device: ", "OpenCL device: "})
    EXPECT_NE(r.out.find(part), std::string::npos) << part << "\n" << r.out;
  Result other = anvil("--device 7 env");
  ASSERT_EQ(other.code, 0) << other.err;
  EXPECT_NE(other.out.find("OpenCL device: none: no OpenCL device: libOpenCL.so.1: device 7 was "
                           "asked for; the platform has "),
            std::string::npos)
      << other.out;
  expect_error("--device -1 env", 1, {"--device"});
}

}  // namespace
}  // namespace anvil::cli
