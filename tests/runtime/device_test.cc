// The GPU device layer on the devices this machine has: OpenCL on PoCL's CPU device (always
// installed, see scripts/setup.sh), CUDA where a driver and a GPU are present. Hand-written OpenCL
// C kernels stand in for generated ones, with the kernel ABI's parameters (per array a buffer and
// its byte offset), launched through the C entry point a generated host function calls.
#include "anvil/runtime/device_api.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "anvil/runtime/c_runtime_api.h"
#include "anvil/runtime/module.h"
#include "anvil/support/temp_dir.h"

namespace {

namespace fs = std::filesystem;
using anvil::runtime::Device;
using anvil::runtime::DeviceContext;
using anvil::runtime::DeviceModule;
using anvil::runtime::Module;

constexpr int64_t kN = 1000;  // the elements the kernels below handle

// c = a + b over kN elements, and c *= 2. The global index is linearized over all three
// dimensions, so any launch of at least kN threads covers the arrays; the threads past kN (the
// tail of the last block) do nothing.
constexpr const char* kProgram = R"(
#define N 1000
#define AT(T, p, off) ((__global T*)((__global char*)(p) + (off)))

size_t linear_id(void) {
  return get_global_id(0) +
         get_global_size(0) * (get_global_id(1) + get_global_size(1) * get_global_id(2));
}

__kernel void add(__global float* a, ulong a_off, __global float* b, ulong b_off,
                  __global float* c, ulong c_off) {
  size_t i = linear_id();
  if (i < N) AT(float, c, c_off)[i] = AT(float, a, a_off)[i] + AT(float, b, b_off)[i];
}

__kernel void twice(__global float* c, ulong c_off) {
  size_t i = linear_id();
  if (i < N) AT(float, c, c_off)[i] *= 2.0f;
}
)";

// The message of the std::runtime_error `f` throws.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  ADD_FAILURE() << "nothing was thrown";
  return "";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A 1-D float32 device array of n elements, `offset` bytes into a buffer of its own.
class DeviceArray {
 public:
  DeviceArray(Device& device, int64_t n, uint64_t offset = 0)
      : device_(device), shape_{n}, offset_(offset) {
    tensor_.data = device.alloc(offset + n * sizeof(float));
    tensor_.device = device.dl_device();
    tensor_.ndim = 1;
    tensor_.dtype = DLDataType{kDLFloat, 32, 1};
    tensor_.shape = shape_.data();
    tensor_.byte_offset = offset;
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  ~DeviceArray() { device_.free(tensor_.data); }

  const DLTensor* get() const { return &tensor_; }
  void write(const std::vector<float>& values) {
    device_.copy_to_device(tensor_.data, offset_, values.data(), values.size() * sizeof(float));
  }
  std::vector<float> read() const {
    std::vector<float> values(shape_[0]);
    device_.copy_from_device(values.data(), tensor_.data, offset_, values.size() * sizeof(float));
    return values;
  }

 private:
  Device& device_;
  std::vector<int64_t> shape_;
  uint64_t offset_;
  DLTensor tensor_{};
};

std::vector<float> iota(int64_t n, float start, float step) {
  std::vector<float> values(n);
  for (int64_t i = 0; i < n; ++i) values[i] = start + step * static_cast<float>(i);
  return values;
}

// The program above loaded on the OpenCL device, and the arrays of one add.
class OpenCL : public ::testing::Test {
 protected:
  // PoCL compiles each program with LLVM: build it once for all the tests.
  static void SetUpTestSuite() {
    std::string why;
    ASSERT_TRUE(Device::available(kDLOpenCL, &why)) << why;
    program = Device::get(kDLOpenCL).load_module(kProgram).release();
  }
  static void TearDownTestSuite() {
    delete program;
    program = nullptr;
  }

  void SetUp() override {
    ASSERT_NE(program, nullptr);
    context = DeviceContext{&device, program};
  }

  // Launches `kernel` through the C entry point, as a host function does.
  int32_t launch(const char* kernel, AnvilLaunchDims dims, std::vector<const DLTensor*> args,
                 void* ctx = nullptr) {
    return AnvilDeviceLaunch(ctx ? ctx : &context, kernel, &dims, static_cast<int32_t>(args.size()),
                             args.data());
  }

  // Runs add over a, b (written here) into c, with c's elements first set to -1 so that a write
  // past kN would show; returns c.
  std::vector<float> run_add(AnvilLaunchDims dims) {
    a.write(iota(kN, 1.0f, 0.5f));
    b.write(iota(kN, -3.0f, 2.0f));
    c.write(std::vector<float>(kN, -1.0f));
    EXPECT_EQ(launch("add", dims, {a.get(), b.get(), c.get()}), 0) << AnvilGetLastError();
    return c.read();
  }

  static void expect_sum(const std::vector<float>& c) {
    std::vector<float> x = iota(kN, 1.0f, 0.5f), y = iota(kN, -3.0f, 2.0f);
    ASSERT_EQ(c.size(), static_cast<size_t>(kN));
    for (int64_t i = 0; i < kN; ++i) ASSERT_EQ(c[i], x[i] + y[i]) << i;
  }

  static DeviceModule* program;
  Device& device = Device::get(kDLOpenCL);
  DeviceContext context;
  // Different offsets into buffers of their own, each a multiple of ANVIL_ALIGNMENT.
  DeviceArray a{device, kN}, b{device, kN, 128}, c{device, kN, 64};
};

DeviceModule* OpenCL::program = nullptr;

TEST_F(OpenCL, Device) {
  EXPECT_EQ(device.dl_device().device_type, kDLOpenCL);
  EXPECT_EQ(device.dl_device().device_id, 0);
  EXPECT_FALSE(device.name().empty());
  EXPECT_GT(device.max_threads_per_block(), 0);
  EXPECT_GT(device.max_shared_memory_per_block(), 0);
  EXPECT_EQ(&Device::get(kDLOpenCL), &device);  // one per process
}

// Work on a stream of its own (an OpenCL command queue): copies and launches on it run in order,
// and synchronize(stream) waits for them.
TEST_F(OpenCL, StreamsRunTheirOwnWorkInOrder) {
  anvil::runtime::Stream stream = device.create_stream();
  ASSERT_NE(stream, nullptr);
  DeviceContext on_stream{&device, program, stream};
  std::vector<float> x = iota(kN, 1.0f, 0.5f), y = iota(kN, -3.0f, 2.0f);
  device.copy_to_device(a.get()->data, a.get()->byte_offset, x.data(), kN * sizeof(float), stream);
  device.copy_to_device(b.get()->data, b.get()->byte_offset, y.data(), kN * sizeof(float), stream);
  AnvilLaunchDims dims{{4, 1, 1}, {256, 1, 1}, 0};
  ASSERT_EQ(launch("add", dims, {a.get(), b.get(), c.get()}, &on_stream), 0) << AnvilGetLastError();
  ASSERT_EQ(launch("twice", dims, {c.get()}, &on_stream), 0) << AnvilGetLastError();
  device.synchronize(stream);
  std::vector<float> got(kN);
  device.copy_from_device(got.data(), c.get()->data, c.get()->byte_offset, kN * sizeof(float),
                          stream);
  for (int64_t i = 0; i < kN; ++i) ASSERT_EQ(got[i], 2 * (x[i] + y[i])) << i;
  device.destroy_stream(stream);
}

// A pool hands a released buffer out again for requests up to its size (and at least half of
// it), and allocates anew otherwise; host functions' temporaries come from a context's pool.
TEST_F(OpenCL, WorkspacePoolReusesReleasedBuffers) {
  anvil::runtime::WorkspacePool pool(device);
  void* p100 = pool.alloc(100);
  pool.release(p100);
  EXPECT_EQ(pool.alloc(80), p100);
  void* p300 = pool.alloc(300);
  EXPECT_NE(p300, p100);
  EXPECT_EQ(pool.held_bytes(), 400u);
  pool.release(p100);
  void* p30 = pool.alloc(30);  // 100 bytes is more than twice 30: a new buffer
  EXPECT_NE(p30, p100);
  EXPECT_EQ(pool.held_bytes(), 430u);
  int local = 0;
  EXPECT_TRUE(contains(error_of([&] { pool.release(&local); }), "did not hand out"));

  DeviceContext pooled{&device, program, nullptr, &pool};
  void* t = AnvilDeviceWorkspaceAlloc(&pooled, 90);
  EXPECT_EQ(t, p100);
  AnvilDeviceWorkspaceFree(&pooled, t);
  EXPECT_EQ(AnvilDeviceWorkspaceAlloc(&pooled, 60), p100);
  EXPECT_EQ(pool.held_bytes(), 430u);
}

TEST_F(OpenCL, CopyRoundTripWithOffset) {
  constexpr uint64_t offset = 192;
  void* data = device.alloc(offset + kN * sizeof(float));
  std::vector<float> values = iota(kN, 0.25f, 1.0f), back(kN, 0.0f);
  device.copy_to_device(data, offset, values.data(), kN * sizeof(float));
  device.copy_from_device(back.data(), data, offset, kN * sizeof(float));
  EXPECT_EQ(back, values);
  // The offset is the array's start: a part read from further in is the same part of the values.
  std::vector<float> part(10);
  device.copy_from_device(part.data(), data, offset + 100 * sizeof(float), 10 * sizeof(float));
  EXPECT_EQ(part, std::vector<float>(values.begin() + 100, values.begin() + 110));
  device.synchronize();
  device.free(data);
  device.free(nullptr);
}

TEST_F(OpenCL, CopyOutOfBoundsNamesTheCopy) {
  void* data = device.alloc(64);
  std::vector<float> values(32);
  std::string error =
      error_of([&] { device.copy_to_device(data, 64, values.data(), values.size() * 4); });
  EXPECT_TRUE(contains(error, "OpenCL device '" + device.name() +
                                  "': copying 128 bytes to device memory at offset 64: "
                                  "clEnqueueWriteBuffer failed with CL_INVALID_VALUE (-30)"))
      << error;
  device.free(data);
}

TEST_F(OpenCL, AddInOneBlock) {
  expect_sum(run_add({{1, 1, 1}, {kN, 1, 1}, 0}));
}

TEST_F(OpenCL, AddOverBlocksWithATail) {
  // 16 blocks of 64: 1024 threads, the last 24 past the end.
  std::vector<float> c = run_add({{16, 1, 1}, {64, 1, 1}, 0});
  expect_sum(c);
  // Three dimensions of grid and block: 4x4x2 blocks of 8x4x1 threads, 1024 again.
  expect_sum(run_add({{4, 4, 2}, {8, 4, 1}, 0}));
}

TEST_F(OpenCL, KernelsRunInLaunchOrder) {
  a.write(iota(kN, 1.0f, 0.5f));
  b.write(iota(kN, -3.0f, 2.0f));
  AnvilLaunchDims dims{{16, 1, 1}, {64, 1, 1}, 0};
  ASSERT_EQ(launch("add", dims, {a.get(), b.get(), c.get()}), 0) << AnvilGetLastError();
  ASSERT_EQ(launch("twice", dims, {c.get()}), 0) << AnvilGetLastError();
  std::vector<float> x = iota(kN, 1.0f, 0.5f), y = iota(kN, -3.0f, 2.0f), z = c.read();
  for (int64_t i = 0; i < kN; ++i) ASSERT_EQ(z[i], 2.0f * (x[i] + y[i])) << i;
}

TEST_F(OpenCL, LaunchesFromSeveralThreads) {
  // Each thread launches on arrays of its own; the shared cl_kernel's arguments must not mix.
  constexpr int kThreads = 4, kLaunches = 10;
  std::vector<std::unique_ptr<DeviceArray>> outputs;
  for (int t = 0; t < kThreads; ++t) outputs.push_back(std::make_unique<DeviceArray>(device, kN));
  a.write(iota(kN, 1.0f, 0.5f));
  b.write(iota(kN, -3.0f, 2.0f));
  std::vector<int32_t> results(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      AnvilLaunchDims dims{{16, 1, 1}, {64, 1, 1}, 0};
      const DLTensor* args[] = {a.get(), b.get(), outputs[t]->get()};
      for (int i = 0; i < kLaunches && results[t] == 0; ++i)
        results[t] = AnvilDeviceLaunch(&context, "add", &dims, 3, args);
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(results[t], 0) << t;
    expect_sum(outputs[t]->read());
  }
}

TEST_F(OpenCL, EmptyGridLaunchesNothing) {
  c.write(std::vector<float>(kN, -1.0f));
  EXPECT_EQ(launch("add", {{0, 1, 1}, {64, 1, 1}, 0}, {a.get(), b.get(), c.get()}), 0)
      << AnvilGetLastError();
  EXPECT_EQ(c.read(), std::vector<float>(kN, -1.0f));
}

TEST_F(OpenCL, UnknownKernel) {
  EXPECT_EQ(launch("sub", {{1, 1, 1}, {64, 1, 1}, 0}, {a.get(), b.get(), c.get()}), -1);
  EXPECT_EQ(
      std::string(AnvilGetLastError()),
      "OpenCL device '" + device.name() + "': kernel 'sub': the device program has no such kernel");
}

TEST_F(OpenCL, WrongArgumentCount) {
  EXPECT_EQ(launch("add", {{1, 1, 1}, {64, 1, 1}, 0}, {a.get(), b.get()}), -1);
  EXPECT_EQ(std::string(AnvilGetLastError()),
            "OpenCL device '" + device.name() +
                "': kernel 'add': it takes 6 parameters (a buffer and its offset per array), got "
                "2 arrays");
}

TEST_F(OpenCL, BadLaunches) {
  // A block the device cannot run: the driver's error, with the shape.
  int64_t too_many = device.max_threads_per_block() + 1;
  EXPECT_EQ(launch("add", {{1, 1, 1}, {static_cast<uint32_t>(too_many), 1, 1}, 0},
                   {a.get(), b.get(), c.get()}),
            -1);
  std::string error = AnvilGetLastError();
  EXPECT_TRUE(contains(error, "kernel 'add': clEnqueueNDRangeKernel failed with CL_INVALID_"))
      << error;
  EXPECT_TRUE(contains(error, "(global " + std::to_string(too_many) + "x1x1, local " +
                                  std::to_string(too_many) + "x1x1)"))
      << error;

  EXPECT_EQ(launch("add", {{1, 1, 1}, {64, 0, 1}, 0}, {a.get(), b.get(), c.get()}), -1);
  EXPECT_STREQ(AnvilGetLastError(), "kernel 'add': block extent 1 is 0");

  EXPECT_EQ(launch("add", {{1, 1, 1}, {64, 1, 1}, 256}, {a.get(), b.get(), c.get()}), -1);
  EXPECT_EQ(std::string(AnvilGetLastError()),
            "OpenCL device '" + device.name() +
                "': kernel 'add': OpenCL kernels take no dynamic local memory, got 256 shared "
                "bytes");

  EXPECT_EQ(AnvilDeviceLaunch(&context, "add", nullptr, 0, nullptr), -1);
  EXPECT_STREQ(AnvilGetLastError(), "kernel 'add': the launch dimensions are NULL");

  AnvilLaunchDims one{{1, 1, 1}, {64, 1, 1}, 0};
  EXPECT_EQ(AnvilDeviceLaunch(&context, "add", &one, 3, nullptr), -1);
  EXPECT_STREQ(AnvilGetLastError(), "kernel 'add': the argument array is NULL");
  EXPECT_EQ(AnvilDeviceLaunch(&context, "add", &one, -1, nullptr), -1);
  EXPECT_STREQ(AnvilGetLastError(), "kernel 'add': negative argument count -1");

  const DLTensor* with_null[] = {a.get(), nullptr, c.get()};
  AnvilLaunchDims dims{{1, 1, 1}, {64, 1, 1}, 0};
  EXPECT_EQ(AnvilDeviceLaunch(&context, "add", &dims, 3, with_null), -1);
  EXPECT_STREQ(AnvilGetLastError(), "kernel 'add': argument 1 is NULL");
}

TEST_F(OpenCL, RefusesAHostArray) {
  std::vector<float> host(kN);
  int64_t shape[] = {kN};
  DLTensor cpu{host.data(), {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, nullptr, 0};
  EXPECT_EQ(launch("add", {{1, 1, 1}, {64, 1, 1}, 0}, {a.get(), &cpu, c.get()}), -1);
  EXPECT_STREQ(AnvilGetLastError(),
               "kernel 'add': argument 1 is on cpu, the kernel runs on "
               "opencl:0");
}

TEST_F(OpenCL, NullContext) {
  AnvilLaunchDims dims{{1, 1, 1}, {64, 1, 1}, 0};
  const DLTensor* args[] = {a.get(), b.get(), c.get()};
  EXPECT_EQ(AnvilDeviceLaunch(nullptr, "add", &dims, 3, args), -1);
  EXPECT_STREQ(AnvilGetLastError(),
               "kernel 'add': no GPU device context (ctx is NULL): the kernel was compiled for a "
               "GPU target and must be run with its module's device context (Module::context())");
  DeviceContext no_program{&device, nullptr};
  EXPECT_EQ(AnvilDeviceLaunch(&no_program, "add", &dims, 3, args), -1);
  EXPECT_TRUE(contains(AnvilGetLastError(), "(ctx has no device program)"));

  EXPECT_EQ(AnvilDeviceWorkspaceAlloc(nullptr, 64), nullptr);
  EXPECT_TRUE(contains(AnvilGetLastError(),
                       "device workspace: no GPU device context (ctx is "
                       "NULL)"));
}

TEST_F(OpenCL, Workspace) {
  void* data = AnvilDeviceWorkspaceAlloc(&context, kN * sizeof(float));
  ASSERT_NE(data, nullptr) << AnvilGetLastError();
  std::vector<float> values = iota(kN, 2.0f, 3.0f), back(kN);
  device.copy_to_device(data, 0, values.data(), kN * sizeof(float));
  device.copy_from_device(back.data(), data, 0, kN * sizeof(float));
  EXPECT_EQ(back, values);
  AnvilDeviceWorkspaceFree(&context, data);
  AnvilDeviceWorkspaceFree(&context, nullptr);
  // Even an empty workspace is a handle, since the checks require non-NULL data.
  void* empty = AnvilDeviceWorkspaceAlloc(&context, 0);
  EXPECT_NE(empty, nullptr) << AnvilGetLastError();
  AnvilDeviceWorkspaceFree(&context, empty);
}

TEST_F(OpenCL, ProgramThatDoesNotCompile) {
  std::string error = error_of([&] {
    device.load_module(
        "__kernel void broken(__global float* p, ulong p_off) { p[0] = no_such_name; }");
  });
  EXPECT_TRUE(contains(error, "OpenCL device '" + device.name() +
                                  "': cannot build the device program: clBuildProgram failed "
                                  "with CL_BUILD_PROGRAM_FAILURE (-11)\n"))
      << error;
  EXPECT_TRUE(contains(error, "no_such_name")) << error;  // the build log
}

// ---- AnvilCheckDeviceTensor: what a GPU host function checks before launching.

class CheckDeviceTensor : public ::testing::Test {
 protected:
  void SetUp() override {
    // A device handle, never dereferenced: its value need not be aligned.
    tensor.data = reinterpret_cast<void*>(uintptr_t{0x1234});
    tensor.device = DLDevice{kDLOpenCL, 0};
    tensor.ndim = 2;
    tensor.dtype = DLDataType{kDLFloat, 32, 1};
    tensor.shape = shape;
  }
  int32_t check(int32_t device_type = kDLOpenCL) {
    const DLTensor* args[] = {&tensor};
    return AnvilCheckDeviceTensor("matmul", args, 0, "A", 2, expected, kDLFloat, 32, 1,
                                  device_type);
  }
  std::string failure(int32_t device_type = kDLOpenCL) {
    EXPECT_EQ(check(device_type), -1);
    return AnvilGetLastError();
  }

  int64_t shape[2] = {32, 64};
  int64_t expected[2] = {-1, 64};
  DLTensor tensor{};
};

TEST_F(CheckDeviceTensor, AcceptsAMatchingTensor) {
  AnvilSetLastError("earlier");
  EXPECT_EQ(check(), 0);
  tensor.byte_offset = 3 * ANVIL_ALIGNMENT;
  EXPECT_EQ(check(), 0);
  tensor.device = DLDevice{kDLCUDA, 0};
  tensor.data = reinterpret_cast<void*>(uintptr_t{0x1230});  // a CUDA address, 16-byte aligned
  EXPECT_EQ(check(kDLCUDA), 0);
  EXPECT_STREQ(AnvilGetLastError(), "earlier");
}

TEST_F(CheckDeviceTensor, Device) {
  tensor.device = DLDevice{kDLCPU, 0};
  EXPECT_EQ(failure(), "matmul: argument 0 ('A'): expected device opencl, got cpu");
  tensor.device = DLDevice{kDLOpenCL, 0};
  EXPECT_EQ(failure(kDLCUDA), "matmul: argument 0 ('A'): expected device cuda, got opencl:0");
}

TEST_F(CheckDeviceTensor, Alignment) {
  tensor.byte_offset = 4;
  EXPECT_EQ(failure(), "matmul: argument 0 ('A'): byte_offset 4 is not a multiple of 64");
  tensor.byte_offset = 0;
  // A CUDA array's data is its address, which kernels read 16 bytes at a time; an OpenCL one's
  // is a buffer handle (0x1234 above).
  tensor.device = DLDevice{kDLCUDA, 0};
  EXPECT_EQ(failure(kDLCUDA),
            "matmul: argument 0 ('A'): device address 0x1234 is not 16-byte aligned");
  tensor.device = DLDevice{kDLOpenCL, 0};
  tensor.data = nullptr;
  EXPECT_EQ(failure(), "matmul: argument 0 ('A'): expected a data pointer, got NULL");
}

TEST_F(CheckDeviceTensor, SharesTheOtherChecks) {
  shape[1] = 65;
  EXPECT_EQ(failure(), "matmul: argument 0 ('A'): expected shape[1] = 64, got 65");
  shape[1] = 64;
  tensor.dtype = DLDataType{kDLInt, 32, 1};
  EXPECT_EQ(failure(), "matmul: argument 0 ('A'): expected dtype float32, got int32");
}

// ---- CUDA: the driver is looked for at run time.

TEST(Cuda, AvailableOrSaysWhyNot) {
  std::string why;
  if (!Device::available(kDLCUDA, &why)) {
    // No driver library here, or one without a GPU: either way the message names the library.
    EXPECT_TRUE(contains(why, "libcuda.so.1")) << why;
    // The failed open is remembered, with the same message.
    std::string again;
    EXPECT_FALSE(Device::available(kDLCUDA, &again));
    EXPECT_EQ(again, why);
    EXPECT_EQ(error_of([] { Device::get(kDLCUDA); }), why);
    return;
  }
  Device& device = Device::get(kDLCUDA);
  EXPECT_EQ(device.dl_device().device_type, kDLCUDA);
  EXPECT_FALSE(device.name().empty());
  EXPECT_GT(device.max_threads_per_block(), 0);
  EXPECT_GT(device.max_shared_memory_per_block(), 0);
  constexpr uint64_t offset = 256;
  void* data = device.alloc(offset + kN * sizeof(float));
  std::vector<float> values = iota(kN, 0.25f, 1.0f), back(kN, 0.0f);
  device.copy_to_device(data, offset, values.data(), kN * sizeof(float));
  device.copy_from_device(back.data(), data, offset, kN * sizeof(float));
  EXPECT_EQ(back, values);
  device.synchronize();
  device.free(data);
}

TEST(Device, NoLayerForOtherTypes) {
  std::string why;
  EXPECT_FALSE(Device::available(kDLCPU, &why));
  EXPECT_EQ(why,
            "no GPU device layer for device type cpu: Anvil runs device kernels on cuda and "
            "opencl");
}

// ---- Module: a library compiled for a GPU target carries its device program.

// `text` as a C string literal.
std::string c_literal(const std::string& text) {
  std::string out = "\"";
  for (char ch : text) {
    if (ch == '\n')
      out += "\\n\"\n\"";
    else if (ch == '"' || ch == '\\')
      out += std::string("\\") + ch;
    else
      out += ch;
  }
  return out + "\"";
}

// A GPU library as a generated one looks: the device program and a host function that checks its
// device arrays and launches `add` through its ctx.
std::string gpu_library(int32_t device_type, const std::string& program) {
  return R"(#include "anvil/runtime/c_runtime_api.h"

const int32_t anvil_module_version = 1;
const int32_t anvil_device_type = )" +
         std::to_string(device_type) + R"(;
const char anvil_device_code[] = )" +
         c_literal(program) + R"(;
const uint64_t anvil_device_code_size = sizeof anvil_device_code - 1;

int32_t f(const DLTensor* const* args, int32_t nargs, void* ctx) {
  static const int64_t shape[1] = {1000};
  static const char* names[3] = {"A", "B", "C"};
  AnvilLaunchDims dims = {{16, 1, 1}, {64, 1, 1}, 0};
  int32_t i;
  if (AnvilCheckArgCount("f", nargs, 3)) return -1;
  for (i = 0; i < 3; ++i)
    if (AnvilCheckDeviceTensor("f", args, i, names[i], 1, shape, kDLFloat, 32, 1, kDLOpenCL))
      return -1;
  return AnvilDeviceLaunch(ctx, "add", &dims, 3, args);
}
)";
}

class GpuModule : public OpenCL {
 protected:
  void SetUp() override {
    OpenCL::SetUp();
    scratch = std::make_unique<anvil::TempDir>("anvil_device_test_", "the test's libraries");
    dir = scratch->path();
  }

  // Compiles C `source` into dir/name and returns the library's path. AnvilDeviceLaunch and the
  // checks stay undefined in it: dlopen binds them to the runtime this test links.
  std::string compile(const std::string& name, const std::string& source) {
    fs::path c_file = dir / (name + ".c"), library = dir / name;
    std::ofstream(c_file) << source;
    // The repository root, for the runtime's C header (this file is tests/runtime/device_test.cc).
    fs::path root = fs::path(__FILE__).parent_path().parent_path().parent_path();
    std::string command = "cc -std=c99 -Wall -Wextra -Werror -shared -fPIC -I'" + root.string() +
                          "' -o '" + library.string() + "' '" + c_file.string() + "' 2>&1";
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
    return library.string();
  }

  std::unique_ptr<anvil::TempDir> scratch;  // removed with everything in it
  fs::path dir;
};

TEST_F(GpuModule, LoadsTheProgramAndRunsAHostFunction) {
  Module module = Module::load(compile("add.so", gpu_library(kDLOpenCL, kProgram)));
  EXPECT_EQ(module.device_type(), kDLOpenCL);
  ASSERT_NE(module.context(), nullptr);
  auto* ctx = static_cast<DeviceContext*>(module.context());
  EXPECT_EQ(ctx->device, &device);
  AnvilKernel f = module.get_function("f");

  a.write(iota(kN, 1.0f, 0.5f));
  b.write(iota(kN, -3.0f, 2.0f));
  const DLTensor* args[] = {a.get(), b.get(), c.get()};
  // A copy keeps the program loaded: the context lives as long as any copy.
  Module copy = module;
  module = Module();
  ASSERT_EQ(f(args, 3, copy.context()), 0) << AnvilGetLastError();
  expect_sum(c.read());

  // Run as a CPU kernel, without the context, it says what it needs.
  EXPECT_EQ(f(args, 3, nullptr), -1);
  EXPECT_TRUE(contains(AnvilGetLastError(), "kernel 'add': no GPU device context (ctx is NULL)"));
  // Its checks use the device's messages.
  std::vector<float> host(kN);
  int64_t shape[] = {kN};
  DLTensor cpu{host.data(), {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, nullptr, 0};
  const DLTensor* bad[] = {a.get(), &cpu, c.get()};
  EXPECT_EQ(f(bad, 3, copy.context()), -1);
  EXPECT_STREQ(AnvilGetLastError(), "f: argument 1 ('B'): expected device opencl, got cpu");
}

TEST_F(GpuModule, LoadsFromMemory) {
  std::ifstream file(compile("add.so", gpu_library(kDLOpenCL, kProgram)), std::ios::binary);
  std::string bytes{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
  Module module = Module::load_from_memory(bytes, "add (in memory)");
  EXPECT_EQ(module.device_type(), kDLOpenCL);
  ASSERT_NE(module.context(), nullptr);
  a.write(iota(kN, 1.0f, 0.5f));
  b.write(iota(kN, -3.0f, 2.0f));
  const DLTensor* args[] = {a.get(), b.get(), c.get()};
  ASSERT_EQ(module.get_function("f")(args, 3, module.context()), 0) << AnvilGetLastError();
  expect_sum(c.read());
}

TEST_F(GpuModule, CpuLibraryHasNoContext) {
  Module module = Module::load(compile("cpu.so", "const int anvil_module_version = 1;\n"));
  EXPECT_EQ(module.context(), nullptr);
  EXPECT_EQ(module.device_type(), kDLCPU);
}

TEST_F(GpuModule, ProgramThatDoesNotCompile) {
  std::string path =
      compile("broken.so", gpu_library(kDLOpenCL, "__kernel void add() { no_such_name; }"));
  std::string error = error_of([&] { Module::load(path); });
  EXPECT_TRUE(contains(error, "cannot load Anvil module '" + path +
                                  "': its opencl device program: OpenCL device '" + device.name() +
                                  "': cannot build the device program: "))
      << error;
  EXPECT_TRUE(contains(error, "no_such_name")) << error;  // the build log
}

TEST_F(GpuModule, BadDeviceDeclarations) {
  std::string path = compile("type.so", gpu_library(99, kProgram));
  EXPECT_EQ(error_of([&] { Module::load(path); }),
            "cannot load Anvil module '" + path +
                "': its device program is for device type 99, expected cuda (2) or opencl (4)");
  path = compile("no_code.so",
                 "const int anvil_module_version = 1;\nconst int anvil_device_type = 4;\n");
  EXPECT_EQ(error_of([&] { Module::load(path); }),
            "cannot load Anvil module '" + path +
                "': it defines anvil_device_type but not anvil_device_code and "
                "anvil_device_code_size");
}

}  // namespace
