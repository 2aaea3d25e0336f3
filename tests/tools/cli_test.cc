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
#include <string>
#include <vector>

#include "anvil/graph/interpreter.h"
#include "anvil/models/models.h"
#include "anvil/runtime/npy.h"
#include "frontend/onnx_model_builder.h"
#include "tools/anvil/args.h"

namespace anvil::cli {
namespace {

namespace fs = std::filesystem;

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

// ---- the executable

struct Result {
  int code = -1;
  std::string out, err;
};

class Cli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string pattern = (fs::temp_directory_path() / "anvil_cli_test_XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = new fs::path(pattern);
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }
  static std::string path(const std::string& name) { return (*dir_ / name).string(); }
  static std::string read(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  static void write(const std::string& p, const std::string& bytes) {
    std::ofstream(p, std::ios::binary) << bytes;
  }
  // Runs `anvil ARGS` in the temporary directory (ARGS as a shell would split them).
  static Result anvil(const std::string& args) {
    std::string cmd =
        "cd '" + dir_->string() + "' && '" + ANVIL_CLI_PATH + "' " + args + " > cli.out 2> cli.err";
    int status = std::system(cmd.c_str());
    Result r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = read(path("cli.out"));
    r.err = read(path("cli.err"));
    return r;
  }
  // Expects exit code `code` with an "anvil: error: " message holding every one of `parts`.
  static void expect_error(const std::string& args, int code,
                           const std::vector<std::string>& parts) {
    SCOPED_TRACE("anvil " + args);
    Result r = anvil(args);
    EXPECT_EQ(r.code, code) << r.err;
    EXPECT_EQ(r.err.rfind("anvil: error: ", 0), 0u) << r.err;
    for (const std::string& p : parts) EXPECT_NE(r.err.find(p), std::string::npos) << r.err;
  }

  static fs::path* dir_;
};
fs::path* Cli::dir_ = nullptr;

TEST_F(Cli, HelpSucceeds) {
  Result r = anvil("--help");
  EXPECT_EQ(r.code, 0) << r.err;
  for (const char* cmd : {"compile", "run", "zoo"}) EXPECT_NE(r.out.find(cmd), std::string::npos);
  r = anvil("compile --help");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("--input-shape"), std::string::npos) << r.out;
}

TEST_F(Cli, UsageErrorsExitWith1) {
  expect_error("", 1, {});
  expect_error("frobnicate", 1, {"unknown command 'frobnicate'", "compile, run, zoo"});
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
  expect_error("compile zoo:dqn -o m.so --input-shape state=1x4x80x80", 2,
               {"--input-shape state", "float32[1, 4, 84, 84]"});
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

}  // namespace
}  // namespace anvil::cli
