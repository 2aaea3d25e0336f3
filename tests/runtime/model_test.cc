// The artifact (model.so) and the runtime's graph executor: compiled graphs saved, loaded with
// runtime::Model (and the C API), run and compared with the reference interpreter; every kind of
// damaged file refused before anything in it is trusted; input errors; concurrent runs; the C
// example program.
#include "anvil/runtime/model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "anvil/graph/build.h"
#include "anvil/graph/interpreter.h"
#include "anvil/models/models.h"
#include "anvil/runtime/artifact.h"
#include "anvil/runtime/c_model_api.h"
#include "anvil/runtime/graph_executor.h"
#include "anvil/runtime/host_cpu.h"
#include "anvil/support/error.h"
#include "graph/passes_testing.h"

namespace anvil::runtime {
namespace {

namespace fs = std::filesystem;
using graph::CompiledGraph;
using graph::Graph;
using graph::ValueId;
using graph::pt::f32;
using graph::pt::random_array;
using ops::Attrs;
using ::testing::HasSubstr;

// Every file the tests write lies under one directory, removed when they end.
fs::path root_dir() {
  return fs::temp_directory_path() / ("anvil-model-test-" + std::to_string(::getpid()));
}

struct RemoveRoot : ::testing::Environment {
  void TearDown() override { fs::remove_all(root_dir()); }
};
const auto* const remove_root = ::testing::AddGlobalTestEnvironment(new RemoveRoot);

// A fresh directory per test.
fs::path temp_dir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  fs::path d = root_dir() / info->name();
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string read(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Max |got - want| <= tol * max |want| for every output.
void expect_close(const std::vector<NDArray>& got, const std::vector<NDArray>& want,
                  const std::string& what, double tol = 1e-4) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t o = 0; o < want.size(); ++o) {
    ASSERT_EQ(got[o].shape(), want[o].shape()) << what;
    double max_want = 0, max_err = 0;
    for (int64_t i = 0; i < want[o].numel(); ++i) {
      double w = want[o].data_as<float>()[i], g = got[o].data_as<float>()[i];
      max_want = std::max(max_want, std::abs(w));
      max_err = std::max(max_err, std::isnan(g) ? INFINITY : std::abs(g - w));
    }
    EXPECT_LE(max_err, tol * max_want) << what << " output " << o;
  }
}

// conv -> bias -> relu -> conv, and a second output straight from the input: small enough to
// compile in a moment, with parameters, arena values and an output that is a graph input. Its
// weights are drawn from `seed`.
Graph small_graph(uint64_t seed = 1) {
  Graph g;
  ValueId x = g.add_input("x", {{1, 4, 8, 8}, f32});
  ValueId w = g.add_constant("w", random_array({8, 4, 3, 3}, seed));
  ValueId b = g.add_constant("b", random_array({1, 8, 1, 1}, seed + 1));
  ValueId w2 = g.add_constant("w2", random_array({4, 8, 1, 1}, seed + 2));
  Attrs pads("conv2d", {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  ValueId c = g.add("conv", "conv2d", pads, {x, w});
  ValueId r = g.add("relu", "relu", Attrs(), {g.add("bias", "add", Attrs(), {c, b})});
  g.add_output(g.add("conv2", "conv2d", Attrs(), {r, w2}));
  g.add_output(g.add("neg", "neg", Attrs(), {x}));
  return g;
}

struct Saved {
  fs::path dir, path;
  Graph graph;
  std::vector<NDArray> inputs, want;
};

Saved save_small(const graph::SaveOptions& options = {}) {
  Saved s;
  s.dir = temp_dir();
  s.path = s.dir / "small.so";
  s.graph = small_graph();
  s.inputs = {random_array({1, 4, 8, 8}, 7)};
  s.want = graph::interpret(s.graph, s.inputs);
  CompiledGraph::build(s.graph, Target::host(), graph::BuildOptions())
      .save(s.path.string(), options);
  return s;
}

// dqn compiled once and saved, shared by the tests that need a real model.
const fs::path& dqn_artifact() {
  static const fs::path path = [] {
    fs::path dir = root_dir() / "shared";
    fs::create_directories(dir);
    CompiledGraph::build(models::build_model("dqn"), Target::host(), graph::BuildOptions())
        .save((dir / "dqn.so").string());
    return dir / "dqn.so";
  }();
  return path;
}

// The message of the ArtifactError Model::load(path) throws.
std::string load_error(const fs::path& path) {
  try {
    Model::load(path.string());
  } catch (const ArtifactError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected an ArtifactError, got: " << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected an ArtifactError for " << path;
  return "";
}

TEST(Model, SaveLoadRunSmallGraph) {
  Saved s = save_small();
  Model m = Model::load(s.path.string());
  ASSERT_EQ(m.inputs().size(), 1u);
  EXPECT_EQ(m.inputs()[0].name, "x");
  EXPECT_EQ(m.inputs()[0].shape, (std::vector<int64_t>{1, 4, 8, 8}));
  ASSERT_EQ(m.outputs().size(), 2u);
  EXPECT_EQ(m.outputs()[0].shape, (std::vector<int64_t>{1, 4, 8, 8}));
  EXPECT_EQ(m.target(), Target::host().str());
  expect_close(m.run(s.inputs), s.want, "loaded");
  expect_close(m.run({{"x", s.inputs[0]}}), s.want, "by name");
}

// A caller's memory, 16-byte aligned but not 64 (as NumPy's is), read and written in place.
TEST(Model, RunsOnTheCallersMemory) {
  Saved s = save_small();
  Model m = Model::load(s.path.string());
  std::vector<NDArray> want = m.run(s.inputs);
  NDArray memory = NDArray::empty({3 * 4096 + 64}, DLDataType{kDLUInt, 8, 1});
  auto block = std::make_shared<NDArray>(memory);
  char* base = memory.data_as<char>() + 16;  // 16 past a 64-byte boundary
  NDArray x = NDArray::view(block, base, s.inputs[0].shape(), s.inputs[0].dtype());
  std::vector<NDArray> out = {
      NDArray::view(block, base + 4096, m.outputs()[0].shape, m.outputs()[0].dtype),
      NDArray::view(block, base + 2 * 4096, m.outputs()[1].shape, m.outputs()[1].dtype)};
  ASSERT_LE(x.nbytes(), 4096u);
  ASSERT_LE(std::max(out[0].nbytes(), out[1].nbytes()), 4096u);
  std::memcpy(base, s.inputs[0].data(), x.nbytes());
  m.run({x}, out);
  expect_close(out, want, "into the caller's arrays", 0);
  EXPECT_EQ(out[0].data(), base + 4096);  // the arrays given, not others
  expect_close(m.run({x}), want, "a 16-byte aligned input", 0);

  auto error = [&](const std::vector<NDArray>& outputs) {
    try {
      m.run({x}, outputs);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(error({out[0]}), HasSubstr("2 output(s), given 1"));
  NDArray flat = NDArray::view(block, base + 4096, {256}, out[0].dtype());
  EXPECT_THAT(error({flat, out[1]}), HasSubstr("expected float32[1, 4, 8, 8], got float32[256]"));
  EXPECT_THAT(error({x, out[1]}), HasSubstr("overlaps input 'x'"));
  EXPECT_THAT(error({out[0], out[0]}), HasSubstr("overlaps output"));
  // A view needs 16-byte alignment, what kernels assume of their arguments.
  EXPECT_THROW(NDArray::view(block, base + 4, {4}, x.dtype()), std::invalid_argument);
}

TEST(Model, BuiltInModelsRoundTrip) {
  fs::path dir = temp_dir();
  Graph g = models::build_model("dcgan");
  std::vector<NDArray> inputs = models::example_inputs(g);
  CompiledGraph cg = CompiledGraph::build(g, Target::host(), graph::BuildOptions());
  cg.save((dir / "dcgan.so").string());
  Model m = Model::load((dir / "dcgan.so").string());
  EXPECT_EQ(m.num_kernels(), cg.num_kernels());
  EXPECT_EQ(m.arena_bytes(), cg.memory_plan().planned_bytes);
  expect_close(m.run(inputs), graph::interpret(g, inputs), "dcgan");

  Graph dqn = models::build_model("dqn");
  inputs = models::example_inputs(dqn);
  expect_close(Model::load(dqn_artifact().string()).run(inputs), graph::interpret(dqn, inputs),
               "dqn");
}

TEST(Model, SeparateParameters) {
  uintmax_t embedded_size = fs::file_size(save_small().path);
  Saved s = save_small({.separate_params = true});
  fs::path params = s.dir / "small.safetensors";
  ASSERT_TRUE(fs::exists(params));
  // The artifact itself no longer holds the weights.
  EXPECT_LT(fs::file_size(s.path) + fs::file_size(params) / 2, embedded_size);
  expect_close(Model::load(s.path.string()).run(s.inputs), s.want, "separate");

  std::string bytes = read(params);
  bytes[bytes.size() - 3] ^= 0x10;  // a weight changes
  write(params, bytes);
  EXPECT_THAT(load_error(s.path), HasSubstr("does not match"));
  fs::remove(params);
  EXPECT_THAT(load_error(s.path), HasSubstr("cannot open parameter file"));
}

TEST(Model, DamagedParameterFilesAreRefusedSayingHow) {
  Saved s = save_small({.separate_params = true});
  const fs::path params = s.dir / "small.safetensors";
  const std::string good = read(params);
  auto error_with = [&](const std::string& bytes) {
    write(params, bytes);
    return load_error(s.path);
  };
  // Cut short anywhere: in the header length, in the header, in the data.
  for (size_t keep : {size_t{4}, size_t{20}, good.size() / 2, good.size() - 1}) {
    EXPECT_THAT(error_with(good.substr(0, keep)),
                HasSubstr("truncated (" + std::to_string(keep) + " bytes, the artifact expects " +
                          std::to_string(good.size()) + ")"))
        << keep;
  }
  // Foreign: not safetensors at all, and a safetensors file that Anvil did not write.
  EXPECT_THAT(error_with(std::string(good.size(), 'x')),
              HasSubstr("not a parameter file Anvil wrote (its header length runs past the end)"));
  const std::string json = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  std::string foreign(8, '\0');
  foreign[0] = static_cast<char>(json.size());
  foreign += json + std::string(8, '\0');
  EXPECT_THAT(error_with(foreign),
              HasSubstr("not a parameter file Anvil wrote (a safetensors file without Anvil's "
                        "metadata: another tool's, or an older Anvil's)"));
  // Another format version.
  std::string v2 = good;
  size_t at = v2.find("\"version\":\"1\"");
  ASSERT_NE(at, std::string::npos);
  v2[at + 11] = '2';
  EXPECT_THAT(error_with(v2),
              HasSubstr("of parameter format version '2'; this runtime reads version 1"));
  // Another compilation of the model with other weights (the same size), another model's smaller
  // file, and one changed byte of a weight.
  const fs::path other = s.dir / "other";
  fs::create_directories(other);
  CompiledGraph::build(small_graph(11), Target::host(), graph::BuildOptions())
      .save((other / "small.so").string(), {.separate_params = true});
  Graph tiny;
  ValueId x = tiny.add_input("x", {{3}, f32});
  tiny.add_output(
      tiny.add("sum", "add", Attrs(), {x, tiny.add_constant("c", random_array({3}, 4))}));
  CompiledGraph::build(tiny, Target::host(), graph::BuildOptions())
      .save((other / "tiny.so").string(), {.separate_params = true});
  std::string flipped = good;
  flipped[good.size() - 3] ^= 0x10;
  for (const std::string& bytes :
       {read(other / "small.safetensors"), read(other / "tiny.safetensors"), flipped}) {
    EXPECT_THAT(error_with(bytes), HasSubstr("another model's parameters, or modified"));
  }
  // None of this touched the artifact: with its own file back, it loads and runs.
  write(params, good);
  expect_close(Model::load(s.path.string()).run(s.inputs), s.want, "restored");
}

TEST(Safetensors, HugeShapesAreRefusedBeforeAnythingIsAllocated) {
  auto parse_error = [](const std::string& shape) {
    std::string json = R"({"w":{"dtype":"F32","shape":)" + shape + R"(,"data_offsets":[0,8]}})";
    std::string bytes(8, '\0');
    bytes[0] = static_cast<char>(json.size());
    bytes += json + std::string(8, '\0');
    try {
      parse_safetensors(bytes, "huge.safetensors");
    } catch (const ArtifactError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(parse_error("[1099511627776]"),
              HasSubstr("tensor 'w' (F32[1099511627776], 4398046511104 bytes) has data_offsets "
                        "outside the 8 data bytes"));
  EXPECT_THAT(parse_error("[1099511627776, 1099511627776]"), HasSubstr("over 2^64 bytes"));
  EXPECT_THAT(parse_error("[2]"), HasSubstr("no error"));
}

TEST(Model, CTargetArtifact) {
  fs::path dir = temp_dir();
  Graph g = small_graph();
  std::vector<NDArray> inputs = {random_array({1, 4, 8, 8}, 9)};
  CompiledGraph cg = CompiledGraph::build(g, Target::parse("c"), graph::BuildOptions());
  expect_close(cg.run(inputs), graph::interpret(g, inputs), "c in process");
  cg.save((dir / "small_c.so").string());
  Model m = Model::load((dir / "small_c.so").string());
  EXPECT_EQ(m.target().substr(0, 2), "c ") << m.target();
  expect_close(m.run(inputs), graph::interpret(g, inputs), "c loaded");
}

// A C artifact for an older CPU than this one: compiled with the system compiler for it, loads
// and runs here.
TEST(Model, CTargetArtifactForANamedCpu) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "x86-64 levels only";
#endif
  fs::path dir = temp_dir();
  Graph g = small_graph();
  std::vector<NDArray> inputs = {random_array({1, 4, 8, 8}, 9)};
  CompiledGraph::build(g, Target::parse("c -mcpu=x86-64-v2"), graph::BuildOptions())
      .save((dir / "v2.so").string());
  Model m = Model::load((dir / "v2.so").string());
  expect_close(m.run(inputs), graph::interpret(g, inputs), "c -mcpu=x86-64-v2");
}

// Code for extensions this CPU lacks would die of SIGILL: the artifact is refused before any of
// it loads, naming what is missing.
TEST(Model, ArtifactForExtensionsThisCpuLacksIsRefused) {
  std::string lacking;  // every x86 CPU lacks AMD's sse4a or Intel's amx-tile
  for (const char* f : {"sse4a", "amx-tile", "xop", "avx512fp16"})
    if (lacking.empty() && !host_cpu().has(f)) lacking = f;
  if (lacking.empty() || checkable_cpu_features().empty())
    GTEST_SKIP() << "no extension this CPU lacks can be checked here";
  fs::path dir = temp_dir();
  CompiledGraph::build(small_graph(), Target::parse("llvm -mattr=+" + lacking),
                       graph::BuildOptions())
      .save((dir / "other.so").string());
  std::string message = load_error(dir / "other.so");
  EXPECT_THAT(message, HasSubstr("'" + (dir / "other.so").string() + "' was compiled for"));
  EXPECT_THAT(message, HasSubstr("may use " + lacking + ", which this CPU"));
  EXPECT_THAT(message, HasSubstr(host_cpu().id()));
  EXPECT_THAT(message, HasSubstr("--target 'llvm -mcpu=x86-64-v"));
}

TEST(Model, CorruptFilesAreRefused) {
  Saved s = save_small();
  std::string good = read(s.path);
  ArtifactTrailer t = decode_trailer(good, "good");
  fs::path bad = s.dir / "bad.so";
  // One flipped byte anywhere: in the library, the program, the parameters, the trailer.
  for (uint64_t at : {uint64_t{100}, t.library_bytes + t.program_bytes / 2,
                      t.library_bytes + t.program_bytes + t.params_bytes - 5,
                      good.size() - kTrailerBytes + 20, good.size() - kTrailerBytes + 2}) {
    std::string b = good;
    b[at] ^= 0x01;
    write(bad, b);
    std::string e = load_error(bad);
    EXPECT_THAT(e, HasSubstr("bad.so")) << "byte " << at;
    EXPECT_THAT(e, ::testing::AnyOf(HasSubstr("corrupt"), HasSubstr("magic"))) << "byte " << at;
  }
  write(bad, good.substr(0, good.size() - 10));
  EXPECT_THAT(load_error(bad), HasSubstr("magic"));
  write(bad, good.substr(0, good.size() / 2) + good.substr(good.size() - kTrailerBytes));
  EXPECT_THAT(load_error(bad), HasSubstr("do not add up"));
  write(bad, "");
  EXPECT_THAT(load_error(bad), HasSubstr("shorter than the 64-byte trailer"));
  write(bad, "not an artifact at all, just some text that is long enough to hold a trailer....");
  EXPECT_THAT(load_error(bad), HasSubstr("magic"));
  EXPECT_THAT(load_error(s.dir / "missing.so"), HasSubstr("cannot open model"));

  // A well-formed trailer of another format version.
  ArtifactTrailer other = t;
  other.version = kArtifactVersion + 1;
  write(bad, good.substr(0, good.size() - kTrailerBytes) + encode_trailer(other));
  EXPECT_THAT(load_error(bad), HasSubstr("format version " + std::to_string(kArtifactVersion + 1)));
  // Format version 1 (kernels that assumed 64-byte aligned arguments) is refused too.
  other.version = 1;
  write(bad, good.substr(0, good.size() - kTrailerBytes) + encode_trailer(other));
  EXPECT_THAT(load_error(bad), HasSubstr("format version 1"));

  // A program that is not what the runtime expects, behind valid checksums.
  for (const std::string& program : {std::string("{not json"), std::string("{\"format\": 7}"),
                                     std::string("{\"format\": \"anvil-graph-program\", "
                                                 "\"version\": 1, \"target\": \"llvm\"}")}) {
    std::string body = good.substr(0, t.library_bytes) + program +
                       good.substr(t.library_bytes + t.program_bytes, t.params_bytes);
    ArtifactTrailer x = t;
    x.program_bytes = program.size();
    x.checksum = artifact_checksum(body.data(), body.size());
    write(bad, body + encode_trailer(x));
    EXPECT_THAT(load_error(bad), HasSubstr("malformed")) << program;
  }
  // A program whose slots point outside the arena.
  std::string program = good.substr(t.library_bytes, t.program_bytes);
  size_t at = program.find("\"arena_bytes\": ");
  ASSERT_NE(at, std::string::npos) << program;
  size_t end = program.find(',', at);
  program = program.substr(0, at) + "\"arena_bytes\": 0" + program.substr(end);
  std::string body = good.substr(0, t.library_bytes) + program +
                     good.substr(t.library_bytes + t.program_bytes, t.params_bytes);
  ArtifactTrailer x = t;
  x.program_bytes = program.size();
  x.checksum = artifact_checksum(body.data(), body.size());
  write(bad, body + encode_trailer(x));
  EXPECT_THAT(load_error(bad), HasSubstr("inside the arena"));
  // The good file is untouched by all of this and still loads.
  expect_close(Model::load(s.path.string()).run(s.inputs), s.want, "good after");
}

TEST(Model, SaveReplacesAnExistingFileWhole) {
  Saved s = save_small();
  Model first = Model::load(s.path.string());
  // Saving another model over the path: the loaded one keeps running, the new one loads.
  Graph g;
  ValueId x = g.add_input("y", {{3}, f32});
  g.add_output(g.add("e", "exp", Attrs(), {x}));
  CompiledGraph::build(g, Target::host(), graph::BuildOptions()).save(s.path.string());
  expect_close(first.run(s.inputs), s.want, "old model");
  Model second = Model::load(s.path.string());
  EXPECT_EQ(second.inputs()[0].name, "y");
  // Saving to a directory that does not exist fails naming it.
  EXPECT_THROW(CompiledGraph::build(g, Target::host(), graph::BuildOptions())
                   .save((s.dir / "no" / "such" / "dir.so").string()),
               anvil::Error);
}

TEST(Model, InputErrors) {
  Saved s = save_small();
  Model m = Model::load(s.path.string());
  auto input_error = [&](auto&& inputs) {
    try {
      m.run(inputs);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    ADD_FAILURE() << "expected an InputError";
    return std::string();
  };
  EXPECT_THAT(input_error(std::vector<NDArray>{random_array({1, 4, 8, 9}, 1)}),
              HasSubstr("input 'x': expected float32[1, 4, 8, 8], got float32[1, 4, 8, 9]"));
  EXPECT_THAT(input_error(std::vector<NDArray>{NDArray::empty({1, 4, 8, 8}, dl_int32())}),
              HasSubstr("expected float32[1, 4, 8, 8], got int32[1, 4, 8, 8]"));
  EXPECT_THAT(input_error(std::vector<NDArray>{}), HasSubstr("takes 1 input(s) ('x'), got 0"));
  EXPECT_THAT(input_error(std::map<std::string, NDArray>{{"z", s.inputs[0]}}),
              HasSubstr("input 'x' (float32[1, 4, 8, 8]) is not given"));
  EXPECT_THAT(input_error(std::map<std::string, NDArray>{{"x", s.inputs[0]}, {"z", s.inputs[0]}}),
              HasSubstr("no input 'z' (its inputs: 'x')"));
}

TEST(Model, ConcurrentRuns) {
  Graph g = models::build_model("dqn");
  Model m = Model::load(dqn_artifact().string());
  std::vector<std::vector<NDArray>> inputs, want, got(4);
  for (uint32_t i = 0; i < got.size(); ++i) {
    inputs.push_back(models::example_inputs(g, i));
    want.push_back(graph::interpret(g, inputs.back()));
  }
  std::vector<std::thread> threads;
  for (size_t i = 0; i < got.size(); ++i)
    threads.emplace_back([&, i] {
      for (int r = 0; r < 3; ++r) got[i] = m.run(inputs[i]);
    });
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < got.size(); ++i) expect_close(got[i], want[i], "thread");
}

// Every kernel timed, in program order, with the FLOPs the compiler counted carried through the
// artifact: the fused conv + bias + relu of small_graph is 2 * (8*8*8 outputs) * (4*3*3 taps),
// plus one per output for the bias and one for the relu.
TEST(Model, ProfileTimesEveryKernel) {
  Saved s = save_small();
  Model m = Model::load(s.path.string());
  std::vector<KernelProfile> p = m.profile(s.inputs, 3);
  ASSERT_EQ(p.size(), m.num_kernels());
  const double conv_kernel = 2.0 * 512 * 36 + 512 + 512;
  int conv_kernels = 0;
  double total = 0;
  for (const KernelProfile& k : p) {
    EXPECT_GT(k.median_seconds, 0) << k.kernel;
    EXPECT_LT(k.median_seconds, 1) << k.kernel;
    EXPECT_EQ(k.kernel.rfind("fused_", 0), 0u) << k.kernel;
    EXPECT_FALSE(k.nodes.empty()) << k.kernel;
    if (k.nodes.find("'conv' (") != std::string::npos) {
      ++conv_kernels;
      EXPECT_EQ(k.flops, conv_kernel) << k.kernel << ": " << k.nodes;
    }
    total += k.flops;
  }
  EXPECT_EQ(conv_kernels, 1);
  // The second conv is 1x1, 8 -> 4 channels (2 * 256 * 8); neg is one per element.
  EXPECT_EQ(total, conv_kernel + 2.0 * 256 * 8 + 256);

  EXPECT_THROW(m.profile(s.inputs, 0), std::invalid_argument);
  EXPECT_THROW(m.profile({random_array({1, 4, 8, 9}, 1)}, 1), InputError);
  // The in-process model profiles the same kernels.
  CompiledGraph cg = CompiledGraph::build(s.graph, Target::host(), graph::BuildOptions());
  std::vector<KernelProfile> q = cg.model().profile(s.inputs, 1);
  ASSERT_EQ(q.size(), p.size());
  for (size_t i = 0; i < q.size(); ++i) {
    EXPECT_EQ(q[i].kernel, p[i].kernel);
    EXPECT_EQ(q[i].flops, p[i].flops);
  }
}

// The FLOP count is an optional field of a call: written when known, absent (and read as 0) when
// not, as in artifacts from before it existed; any other type is refused.
TEST(Model, ProgramFlopsFieldIsOptional) {
  GraphProgram p;
  p.target = "llvm";
  GraphProgram::Call c;
  c.kernel = "fused_0_relu";
  c.nodes = "'r' (relu)";
  c.flops = 1234;
  p.calls.push_back(c);
  std::string json = program_to_json(p, {});
  EXPECT_EQ(program_from_json(json, "with", nullptr).calls.at(0).flops, 1234);
  std::string malformed =
      std::regex_replace(json, std::regex("\"flops\": [0-9.e+]+"), "\"flops\": \"many\"");
  ASSERT_NE(malformed, json);
  try {
    program_from_json(malformed, "bad.so", nullptr);
    ADD_FAILURE() << "expected an ArtifactError";
  } catch (const ArtifactError& e) {
    EXPECT_THAT(e.what(), HasSubstr("calls[0].flops"));
    EXPECT_THAT(e.what(), HasSubstr("bad.so"));
  }
  p.calls[0].flops = 0;
  json = program_to_json(p, {});
  EXPECT_EQ(json.find("flops"), std::string::npos) << json;
  EXPECT_EQ(program_from_json(json, "without", nullptr).calls.at(0).flops, 0);
}

TEST(Model, ProgramCpuFieldIsOptional) {
  GraphProgram p;
  p.target = "llvm -mcpu=znver3";
  p.cpu = "znver3";
  p.cpu_features = {"avx2", "fma"};
  std::string json = program_to_json(p, {});
  GraphProgram back = program_from_json(json, "with", nullptr);
  EXPECT_EQ(back.cpu, "znver3");
  EXPECT_EQ(back.cpu_features, p.cpu_features);
  p.cpu.clear();
  p.cpu_features.clear();
  json = program_to_json(p, {});
  EXPECT_EQ(json.find("\"cpu\""), std::string::npos) << json;
  EXPECT_TRUE(program_from_json(json, "without", nullptr).cpu_features.empty());
}

// Rank-0 tensors through the C API: y = s * v and t = s + s for a scalar s, a scalar output with
// ndim 0 and no shape array.
TEST(Model, CApiScalars) {
  graph::Graph g;
  graph::ValueId sv = g.add_input("s", {{}, ir::DataType::Float32()});
  graph::ValueId v = g.add_input("v", {{3}, ir::DataType::Float32()});
  g.add_output(g.add("y", "mul", ops::Attrs(), {sv, v}));
  g.add_output(g.add("t", "add", ops::Attrs(), {sv, sv}));
  fs::path path = temp_dir() / "scalars.so";
  CompiledGraph::build(g, Target::host(), graph::BuildOptions()).save(path.string());
  AnvilModelHandle m = nullptr;
  ASSERT_EQ(AnvilModelLoad(path.c_str(), &m), 0) << AnvilGetLastError();
  int32_t ndim = -1;
  const int64_t* shape = nullptr;
  ASSERT_EQ(AnvilModelInputInfo(m, 0, nullptr, &ndim, &shape, nullptr), 0);
  EXPECT_EQ(ndim, 0);
  ASSERT_EQ(AnvilModelOutputInfo(m, 1, nullptr, &ndim, &shape, nullptr), 0);
  EXPECT_EQ(ndim, 0);
  float s = 1.5f, vec[3] = {1, -2, 4}, y[3] = {}, t = 0;
  int64_t three = 3;
  DLTensor s_in{&s, {kDLCPU, 0}, 0, {kDLFloat, 32, 1}, nullptr, nullptr, 0};
  DLTensor v_in{vec, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, &three, nullptr, 0};
  DLTensor y_out{y, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, &three, nullptr, 0};
  DLTensor t_out{&t, {kDLCPU, 0}, 0, {kDLFloat, 32, 1}, nullptr, nullptr, 0};
  const DLTensor* ins[] = {&s_in, &v_in};
  DLTensor* outs[] = {&y_out, &t_out};
  ASSERT_EQ(AnvilModelRun(m, ins, 2, outs, 2), 0) << AnvilGetLastError();
  EXPECT_EQ(std::vector<float>(y, y + 3), (std::vector<float>{1.5f, -3, 6}));
  EXPECT_EQ(t, 3.0f);
  AnvilModelFree(m);
}

TEST(Model, CApi) {
  Saved s = save_small();
  AnvilModelHandle m = nullptr;
  EXPECT_EQ(AnvilModelLoad((s.dir / "missing.so").c_str(), &m), -1);
  EXPECT_THAT(AnvilGetLastError(), HasSubstr("missing.so"));
  ASSERT_EQ(AnvilModelLoad(s.path.c_str(), &m), 0) << AnvilGetLastError();
  EXPECT_EQ(AnvilModelNumInputs(m), 1);
  EXPECT_EQ(AnvilModelNumOutputs(m), 2);
  const char* name;
  int32_t ndim;
  const int64_t* shape;
  DLDataType dtype;
  ASSERT_EQ(AnvilModelInputInfo(m, 0, &name, &ndim, &shape, &dtype), 0);
  EXPECT_STREQ(name, "x");
  EXPECT_EQ(ndim, 4);
  EXPECT_EQ(shape[1], 4);
  EXPECT_EQ(AnvilModelOutputInfo(m, 2, &name, nullptr, nullptr, nullptr), -1);
  EXPECT_THAT(AnvilGetLastError(), HasSubstr("index 2 is out of range"));

  // An input at an unaligned address: the runtime copies it.
  std::vector<float> in_buf(4 * 8 * 8 + 1), out0(4 * 8 * 8), out1(4 * 8 * 8);
  std::memcpy(in_buf.data() + 1, s.inputs[0].data(), s.inputs[0].nbytes());
  std::vector<int64_t> shp = {1, 4, 8, 8};
  DLTensor in{in_buf.data() + 1, {kDLCPU, 0}, 4, {kDLFloat, 32, 1}, shp.data(), nullptr, 0};
  DLTensor o0{out0.data(), {kDLCPU, 0}, 4, {kDLFloat, 32, 1}, shp.data(), nullptr, 0};
  DLTensor o1{out1.data(), {kDLCPU, 0}, 4, {kDLFloat, 32, 1}, shp.data(), nullptr, 0};
  const DLTensor* ins[] = {&in};
  DLTensor* outs[] = {&o0, &o1};
  ASSERT_EQ(AnvilModelRun(m, ins, 1, outs, 2), 0) << AnvilGetLastError();
  NDArray got0 = NDArray::empty(shp, dl_float32()), got1 = NDArray::empty(shp, dl_float32());
  std::memcpy(got0.data(), out0.data(), got0.nbytes());
  std::memcpy(got1.data(), out1.data(), got1.nbytes());
  expect_close({got0, got1}, s.want, "C API");

  // Aligned arrays, read and written in place; and an output that is also an input, which takes
  // the copying path (its result is the same).
  NDArray x16 = NDArray::empty(shp, dl_float32()), y0 = NDArray::empty(shp, dl_float32()),
          y1 = NDArray::empty(shp, dl_float32());
  std::memcpy(x16.data(), s.inputs[0].data(), x16.nbytes());
  const DLTensor* aligned_ins[] = {x16.get()};
  DLTensor* aligned_outs[] = {y0.get(), y1.get()};
  ASSERT_EQ(AnvilModelRun(m, aligned_ins, 1, aligned_outs, 2), 0) << AnvilGetLastError();
  expect_close({y0, y1}, s.want, "C API, in place");
  NDArray shared = NDArray::empty(shp, dl_float32());
  std::memcpy(shared.data(), s.inputs[0].data(), shared.nbytes());
  const DLTensor* shared_ins[] = {shared.get()};
  DLTensor* shared_outs[] = {y0.get(), shared.get()};
  ASSERT_EQ(AnvilModelRun(m, shared_ins, 1, shared_outs, 2), 0) << AnvilGetLastError();
  expect_close({y0, shared}, s.want, "C API, an output over its input");

  std::vector<int64_t> wrong = {1, 4, 8, 7};
  DLTensor bad{in_buf.data(), {kDLCPU, 0}, 4, {kDLFloat, 32, 1}, wrong.data(), nullptr, 0};
  const DLTensor* bad_ins[] = {&bad};
  EXPECT_EQ(AnvilModelRun(m, bad_ins, 1, outs, 2), -1);
  EXPECT_THAT(AnvilGetLastError(),
              HasSubstr("input 'x': expected float32[1, 4, 8, 8], got float32[1, 4, 8, 7]"));
  EXPECT_EQ(AnvilModelRun(m, ins, 1, outs, 1), -1);
  EXPECT_THAT(AnvilGetLastError(), HasSubstr("1 inputs and 2 outputs, got 1 and 1"));
  int not_a_stream = 0;
  EXPECT_EQ(AnvilModelRunOnStream(m, ins, 1, outs, 2, &not_a_stream), -1);
  EXPECT_THAT(AnvilGetLastError(), HasSubstr("runs on the CPU"));
  AnvilModelFree(m);
}

TEST(Model, CApiRefusesBadTensorsAndKeepsWorking) {
  Saved s = save_small();
  AnvilModelHandle m = nullptr;
  ASSERT_EQ(AnvilModelLoad(s.path.c_str(), &m), 0) << AnvilGetLastError();
  std::vector<int64_t> shp = {1, 4, 8, 8};
  // Inputs and outputs at odd addresses (one float past an aligned allocation): copied, not
  // refused.
  std::vector<float> in_buf(4 * 8 * 8 + 1), out0(4 * 8 * 8 + 1), out1(4 * 8 * 8 + 1);
  std::memcpy(in_buf.data() + 1, s.inputs[0].data(), s.inputs[0].nbytes());
  DLTensor in{in_buf.data() + 1, {kDLCPU, 0}, 4, {kDLFloat, 32, 1}, shp.data(), nullptr, 0};
  DLTensor o0{out0.data() + 1, {kDLCPU, 0}, 4, {kDLFloat, 32, 1}, shp.data(), nullptr, 0};
  DLTensor o1{out1.data() + 1, {kDLCPU, 0}, 4, {kDLFloat, 32, 1}, shp.data(), nullptr, 0};
  DLTensor* outs[] = {&o0, &o1};
  auto run_error = [&](const DLTensor& x) {
    const DLTensor* ins[] = {&x};
    EXPECT_EQ(AnvilModelRun(m, ins, 1, outs, 2), -1);
    return std::string(AnvilGetLastError());
  };
  DLTensor bad = in;
  bad.data = nullptr;
  EXPECT_THAT(run_error(bad), HasSubstr("input 'x' has NULL data"));
  bad = in;
  bad.dtype = {kDLFloat, 64, 1};
  EXPECT_THAT(run_error(bad), HasSubstr("input 'x': expected float32[1, 4, 8, 8], got float64["));
  bad = in;
  bad.shape = nullptr;
  EXPECT_THAT(run_error(bad), HasSubstr("input 'x': expected float32[1, 4, 8, 8], got float32[]"));
  bad = in;
  bad.device = {kDLCUDA, 0};
  EXPECT_THAT(run_error(bad), HasSubstr("input 'x' is on cuda:0, expected cpu"));
  std::vector<int64_t> transposed = {256, 1, 32, 4};
  bad = in;
  bad.strides = transposed.data();
  EXPECT_THAT(run_error(bad), HasSubstr("input 'x' is not compact row-major (strides)"));
  const DLTensor* null_entry[] = {nullptr};
  EXPECT_EQ(AnvilModelRun(m, null_entry, 1, outs, 2), -1);
  EXPECT_THAT(AnvilGetLastError(), HasSubstr("input 'x' is NULL"));
  EXPECT_EQ(AnvilModelRun(m, nullptr, 1, outs, 2), -1);
  EXPECT_THAT(AnvilGetLastError(), HasSubstr("NULL input or output array"));
  EXPECT_EQ(AnvilModelRun(nullptr, null_entry, 1, outs, 2), -1);
  EXPECT_THAT(AnvilGetLastError(), HasSubstr("NULL model"));
  DLTensor bad_out = o1;
  bad_out.data = nullptr;
  DLTensor* bad_outs[] = {&o0, &bad_out};
  const DLTensor* ins[] = {&in};
  EXPECT_EQ(AnvilModelRun(m, ins, 1, bad_outs, 2), -1);
  EXPECT_THAT(AnvilGetLastError(), HasSubstr("output 'neg' has NULL data"));

  // After every refusal the same model still runs, into unaligned outputs, correctly.
  ASSERT_EQ(AnvilModelRun(m, ins, 1, outs, 2), 0) << AnvilGetLastError();
  NDArray got0 = NDArray::empty(shp, dl_float32()), got1 = NDArray::empty(shp, dl_float32());
  std::memcpy(got0.data(), out0.data() + 1, got0.nbytes());
  std::memcpy(got1.data(), out1.data() + 1, got1.nbytes());
  expect_close({got0, got1}, s.want, "C API after errors");
  AnvilModelFree(m);
}

// The example program links only libanvil_runtime; its printed sum matches the C++ API's run on
// the same inputs.
TEST(Model, ExampleProgram) {
  fs::path dir = temp_dir();
  std::string command = std::string(RUN_MODEL_PATH) + " " + dqn_artifact().string() + " 2>&1";
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  ASSERT_EQ(::pclose(pipe), 0) << out;

  Model m = Model::load(dqn_artifact().string());
  NDArray x = NDArray::empty(m.inputs()[0].shape, dl_float32());
  for (int64_t k = 0; k < x.numel(); ++k)
    x.data_as<float>()[k] = static_cast<float>(std::sin(0.01 * static_cast<double>(k)));
  NDArray y = m.run({x})[0];
  double sum = 0;
  for (int64_t k = 0; k < y.numel(); ++k) sum += y.data_as<float>()[k];
  size_t at = out.find(" sum ");
  ASSERT_NE(at, std::string::npos) << out;
  EXPECT_THAT(out, HasSubstr("q_values [1, 18]"));
  EXPECT_NEAR(std::stod(out.substr(at + 5)), sum, 1e-5 * (1 + std::abs(sum))) << out;

  std::string missing = std::string(RUN_MODEL_PATH) + " " + (dir / "none.so").string() + " 2>&1";
  pipe = ::popen(missing.c_str(), "r");
  out.clear();
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  EXPECT_NE(::pclose(pipe), 0);
  EXPECT_THAT(out, HasSubstr("none.so"));
}

}  // namespace
}  // namespace anvil::runtime
