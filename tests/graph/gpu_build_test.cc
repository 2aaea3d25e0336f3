// Whole models compiled for GPU targets: run through OpenCL on the CPU (PoCL) and compared with
// the reference interpreter; compiled for CUDA (every kernel through NVRTC to PTX) and saved as
// artifacts, which this machine, without an NVIDIA GPU, cannot run.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "anvil/graph/build.h"
#include "anvil/graph/interpreter.h"
#include "anvil/models/models.h"
#include "anvil/runtime/c_model_api.h"
#include "anvil/runtime/device_api.h"
#include "anvil/runtime/model.h"
#include "anvil/support/temp_dir.h"
#include "graph/passes_testing.h"
#include "testing/errors.h"

namespace anvil::graph {
namespace {

using pt::expect_close;

// Compiles the model for OpenCL, runs it in process and from its saved artifact, and compares
// both with the interpreter.
// Returns the device program's OpenCL C source.
std::string check_opencl(const std::string& name, const std::string& target = "opencl") {
  Graph g = models::build_model(name);
  std::vector<runtime::NDArray> inputs = models::example_inputs(g);
  std::vector<runtime::NDArray> want = interpret(g, inputs);
  CompiledGraph cg = CompiledGraph::build(g, Target::parse(target), BuildOptions());
  expect_close(cg.run(inputs), want, name + " (opencl, in process)\n" + cg.summary());
  TempDir dir("anvil_gpu_build", "the OpenCL artifact");
  std::string path = dir.path() + "/" + name + ".so";
  cg.save(path);
  runtime::Model m = runtime::Model::load(path);
  EXPECT_EQ(m.target(), Target::parse(target).str());
  expect_close(m.run(inputs), want, name + " (opencl, artifact)");
  return cg.c_source();
}

TEST(GpuBuild, DqnOnOpenCL) {
  check_opencl("dqn");
}

// DQN compiled for OpenCL and loaded from its artifact, with its example inputs and the
// interpreter's outputs.
struct DqnOnOpenCL {
  Graph g = models::build_model("dqn");
  std::vector<runtime::NDArray> inputs = models::example_inputs(g);
  std::vector<runtime::NDArray> want = interpret(g, inputs);
  TempDir dir{"anvil_gpu_build", "the OpenCL artifact"};
  runtime::Model model = load();

  runtime::Model load() {
    CompiledGraph::build(g, Target::parse("opencl"), BuildOptions()).save(dir.path() + "/dqn.so");
    return runtime::Model::load(dir.path() + "/dqn.so");
  }
};

// A run on the caller's stream (an OpenCL command queue of its own) matches the interpreter, and
// a second run on it reuses the first one's device memory; a CPU model refuses a stream.
TEST(GpuBuild, RunsOnACallersStreamReusingDeviceMemory) {
  DqnOnOpenCL dqn;
  const Graph& g = dqn.g;
  const std::vector<runtime::NDArray>& inputs = dqn.inputs;
  const std::vector<runtime::NDArray>& want = dqn.want;
  const runtime::Model& m = dqn.model;
  const TempDir& dir = dqn.dir;
  runtime::Device& device = runtime::Device::get(kDLOpenCL);
  runtime::Stream stream = device.create_stream();
  EXPECT_EQ(m.device_bytes_held(), 0u);
  expect_close(m.run(inputs, stream), want, "dqn on a stream");
  size_t held = m.device_bytes_held();
  EXPECT_GE(held, static_cast<size_t>(m.arena_bytes()));
  expect_close(m.run(inputs, stream), want, "dqn on a stream, again");
  EXPECT_EQ(m.device_bytes_held(), held);
  expect_close(m.run(inputs), want, "dqn on the device's queue");

  // The C API on the stream.
  AnvilModelHandle handle = nullptr;
  ASSERT_EQ(AnvilModelLoad((dir.path() + "/dqn.so").c_str(), &handle), 0) << AnvilGetLastError();
  runtime::NDArray got = runtime::NDArray::empty(want[0].shape(), want[0].dtype());
  const DLTensor* ins[] = {inputs[0].get()};
  DLTensor* outs[] = {got.get()};
  ASSERT_EQ(AnvilModelRunOnStream(handle, ins, 1, outs, 1, stream), 0) << AnvilGetLastError();
  expect_close({got}, want, "dqn through the C API on a stream");
  AnvilModelFree(handle);
  device.destroy_stream(stream);

  CompiledGraph cpu = CompiledGraph::build(g, Target::host(), BuildOptions());
  try {
    cpu.model().run(inputs, stream);
    ADD_FAILURE() << "a CPU model ran on a stream";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("runs on the CPU"));
  }
}

// Inputs and outputs on the device (Model::run_device): the kernels read the caller's arrays and
// write the outputs in place, as a run through the host computes them; arrays that do not match
// are refused, naming which.
TEST(GpuBuild, RunsOnDeviceArrays) {
  DqnOnOpenCL dqn;
  const Graph& g = dqn.g;
  std::vector<runtime::NDArray> inputs = dqn.inputs;
  const std::vector<runtime::NDArray>& want = dqn.want;
  const runtime::Model& m = dqn.model;
  EXPECT_EQ(m.device().device_type, kDLOpenCL);
  runtime::Device& device = runtime::Device::get(kDLOpenCL);
  runtime::NDArray out = runtime::NDArray::empty(want[0].shape(), want[0].dtype());
  runtime::DeviceArrays in_device(device, {&inputs[0]}), out_device(device, {&out});
  for (int run = 0; run < 2; ++run) {
    m.run_device(in_device.args(), out_device.args());
    runtime::NDArray got = runtime::NDArray::empty(want[0].shape(), want[0].dtype());
    out_device.read(0, got);
    expect_close({got}, want, "dqn on device arrays, run " + std::to_string(run));
  }
  runtime::Stream stream = device.create_stream();
  m.run_device(in_device.args(), out_device.args(), stream);
  device.destroy_stream(stream);

  // The input where the output belongs: its shape is named.
  try {
    m.run_device(out_device.args(), out_device.args());
    ADD_FAILURE() << "an array of the wrong shape was taken";
  } catch (const runtime::InputError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("input 0"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("expected opencl:0 float32[1, 4, 84, 84]"));
  }
  // A view at an offset the kernels' vector accesses cannot take is refused, naming it.
  DLTensor shifted = *in_device.args()[0];
  shifted.byte_offset = 4;
  try {
    m.run_device({&shifted}, out_device.args());
    ADD_FAILURE() << "a misaligned view was taken";
  } catch (const runtime::InputError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("input 0 '"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("byte_offset 4 is not a multiple of 64"));
  }
  // Host arrays are not device arrays.
  const DLTensor* host_in[] = {inputs[0].get()};
  EXPECT_THROW(m.run_device({host_in[0]}, out_device.args()), runtime::InputError);
  EXPECT_THROW(m.run_device({}, out_device.args()), runtime::InputError);
  CompiledGraph cpu = CompiledGraph::build(g, Target::host(), BuildOptions());
  EXPECT_THROW(cpu.model().run_device(in_device.args(), out_device.args()), runtime::InputError);
}

// PoCL (3.1, Debian 12) offers cl_khr_command_buffer 0.9.0: runs are recorded into a command
// buffer on their second run and replayed after that, through the host and on device arrays
// alike, with the interpreter's results throughout; other device arrays record again. A driver
// without that revision records nothing: every run launches kernel by kernel, as right.
TEST(GpuBuild, OpenClCommandBuffersReplayRuns) {
  runtime::Device& device = runtime::Device::get(kDLOpenCL);
  const int64_t graphs = device.supports_graphs() ? 1 : 0;
  DqnOnOpenCL dqn;
  const runtime::Model& m = dqn.model;
  // Other inputs every run: a replay that launched nothing would leave the last run's outputs.
  for (int run = 0; run < 4; ++run) {
    std::vector<runtime::NDArray> in = {
        runtime::NDArray::empty(dqn.inputs[0].shape(), dqn.inputs[0].dtype())};
    const float* from = static_cast<const float*>(dqn.inputs[0].data());
    float* to = static_cast<float*>(in[0].data());
    for (int64_t i = 0; i < in[0].numel(); ++i) to[i] = from[i] * static_cast<float>(run + 1);
    expect_close(m.run(in), interpret(dqn.g, in),
                 "dqn through the host, run " + std::to_string(run));
  }
  runtime::DeviceRunCounts c = m.device_run_counts();
  EXPECT_EQ(c.eager_runs, graphs * 1);
  EXPECT_EQ(c.captures, graphs * 1);
  EXPECT_EQ(c.graph_launches, graphs * 3);

  std::vector<runtime::NDArray> inputs = dqn.inputs;
  runtime::NDArray out = runtime::NDArray::empty(dqn.want[0].shape(), dqn.want[0].dtype());
  runtime::DeviceArrays in_device(device, {&inputs[0]}), out_a(device, {&out}),
      out_b(device, {&out});
  for (int run = 0; run < 6; ++run) {
    const runtime::DeviceArrays& to = run < 4 ? out_a : out_b;
    m.run_device(in_device.args(), to.args());
    runtime::NDArray got = runtime::NDArray::empty(dqn.want[0].shape(), dqn.want[0].dtype());
    to.read(0, got);
    expect_close({got}, dqn.want, "dqn on device arrays, run " + std::to_string(run));
  }
  c = m.device_run_counts();
  EXPECT_EQ(c.eager_runs, graphs * 2);      // the first run of each kind
  EXPECT_EQ(c.captures, graphs * 3);        // the second, and once more for the other output
  EXPECT_EQ(c.graph_launches, graphs * 8);  // 3 through the host, 5 on device arrays
}

TEST(GpuBuild, DcganOnOpenCL) {
  check_opencl("dcgan");
}

// With an H200's 132 multiprocessors, as the CUDA target has them: the stride-2 and 1x1
// downsampling convolutions of layers 2 to 4 launch fewer blocks than that and split their input
// channels (split-K).
TEST(GpuBuild, Resnet18OnOpenCL) {
  std::string source = check_opencl("resnet18", "opencl -multiprocessors=132");
  // A split convolution is two kernels (the parts' partial sums, then their sum): six of them.
  int split = 0;
  for (size_t at = source.find("conv2d_kernel1("); at != std::string::npos;
       at = source.find("conv2d_kernel1(", at + 1))
    ++split;
  EXPECT_EQ(split, 6);
}

// The LSTM in its GPU form (gpu_form: plain products, each step's states in one stage).
TEST(GpuBuild, LstmLmOnOpenCL) {
  check_opencl("lstm_lm");
}

// The five workloads for CUDA: every kernel compiles to PTX for sm_90 and the artifact is saved;
// running needs the device, and says so.
TEST(GpuBuild, FiveWorkloadsCompileForCuda) {
  TempDir dir("anvil_gpu_build", "the CUDA artifacts");
  for (const char* name : {"resnet18", "mobilenet_v1", "lstm_lm", "dqn", "dcgan"}) {
    SCOPED_TRACE(name);
    Graph g = models::build_model(name);
    CompiledGraph cg = CompiledGraph::build(g, Target::parse("cuda -arch=sm_90"), BuildOptions());
    std::string path = dir.path() + "/" + name + ".so";
    cg.save(path);
    EXPECT_GT(std::filesystem::file_size(path), 0u);
    // The machine code for sm_90 was made here: ptxas's report of every kernel is in the summary.
    EXPECT_THAT(cg.summary(), ::testing::HasSubstr("device code for sm_90 (ptxas): "));
    if (!runtime::Device::available(kDLCUDA)) {
      EXPECT_THAT(testing::user_error([&] { cg.run(models::example_inputs(g)); }),
                  ::testing::HasSubstr("whose device is not available here"));
      EXPECT_THROW(runtime::Model::load(path), std::runtime_error);
    }
  }
}

}  // namespace
}  // namespace anvil::graph
