// The executor's graph replay (device_executor.h) on a fake device that runs its "kernels" on the
// host, records what it is asked to do while a stream is captured, and counts launches and
// allocations: the first run launches kernel by kernel, the second records, every later run is
// one graph launch with no allocation, device or heap; other device arrays record again; the
// results are right throughout (a replay that used stale addresses would compute wrong ones).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "anvil/runtime/c_runtime_api.h"
#include "anvil/runtime/device_api.h"
#include "anvil/runtime/graph_executor.h"

// Heap allocations while `g_counting`: the replay path must make none.
static std::atomic<bool> g_counting{false};
static std::atomic<int64_t> g_heap_allocations{0};

// Out of line, so that the compiler does not pair malloc with delete in its warnings.
__attribute__((noinline)) static void* heap_take(size_t n) {
  return std::malloc(n ? n : 1);
}
__attribute__((noinline)) static void heap_give(void* p) {
  std::free(p);
}

void* operator new(size_t n) {
  if (g_counting) ++g_heap_allocations;
  if (void* p = heap_take(n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  heap_give(p);
}
void operator delete(void* p, size_t) noexcept {
  heap_give(p);
}

namespace anvil::runtime {
namespace {

int64_t elements(const DLTensor& t) {
  int64_t n = 1;
  for (int32_t d = 0; d < t.ndim; ++d) n *= t.shape[d];
  return n;
}

float* floats(const DLTensor& t) {
  return reinterpret_cast<float*>(static_cast<char*>(t.data) + t.byte_offset);
}

// A device whose memory is host memory and whose kernels are three host functions by name:
// "add_one" (y = x + 1), "scale2" (y = 2x), "copy" (y = x). Work on a captured stream is recorded
// into the graph being built; launch_graph runs the recording.
class FakeDevice final : public Device {
 public:
  struct Op {
    std::string kernel;  // empty: a copy
    std::vector<float*> args;
    std::vector<int64_t> sizes;
    void* dst = nullptr;
    const void* src = nullptr;
    size_t bytes = 0;
  };

  FakeDevice(bool graphs, bool pins) : graphs_(graphs), pins_(pins) {}

  DLDevice dl_device() const override { return DLDevice{kDLCUDA, 0}; }
  std::string name() const override { return "fake"; }
  int64_t max_threads_per_block() const override { return 1024; }
  int64_t max_shared_memory_per_block() const override { return 49152; }

  void* alloc(size_t bytes) override {
    ++allocs;
    return std::calloc(bytes ? bytes : 1, 1);
  }
  void free(void* data) override { std::free(data); }
  void copy_to_device(void* data, uint64_t offset, const void* src, size_t bytes,
                      Stream stream) override {
    EXPECT_FALSE(capturing_ && stream == captured_) << "a host copy inside a recording";
    ++waiting_copies;
    std::memcpy(static_cast<char*>(data) + offset, src, bytes);
  }
  void copy_from_device(void* dst, const void* data, uint64_t offset, size_t bytes,
                        Stream stream) override {
    EXPECT_FALSE(capturing_ && stream == captured_) << "a host copy inside a recording";
    ++waiting_copies;
    std::memcpy(dst, static_cast<const char*>(data) + offset, bytes);
  }
  // Pinned host memory (when the device pins): plain host memory, counted; copies from and to it
  // are work on the stream, recorded like kernels.
  bool pins_host_memory() const override { return pins_; }
  void* alloc_host(size_t bytes) override {
    EXPECT_TRUE(pins_) << "staging buffers on a device that does not pin";
    ++host_allocs;
    return Device::alloc_host(bytes);
  }
  void copy_to_device_async(void* data, uint64_t offset, const void* src, size_t bytes,
                            Stream stream) override {
    Op op;
    op.dst = static_cast<char*>(data) + offset;
    op.src = src;
    op.bytes = bytes;
    issue(std::move(op), stream);
  }
  void copy_from_device_async(void* dst, const void* data, uint64_t offset, size_t bytes,
                              Stream stream) override {
    Op op;
    op.dst = dst;
    op.src = static_cast<const char*>(data) + offset;
    op.bytes = bytes;
    issue(std::move(op), stream);
  }
  void copy_on_device(void* dst, uint64_t dst_offset, const void* src, uint64_t src_offset,
                      size_t bytes, Stream stream) override {
    Op op;
    op.dst = static_cast<char*>(dst) + dst_offset;
    op.src = static_cast<const char*>(src) + src_offset;
    op.bytes = bytes;
    issue(std::move(op), stream);
  }
  void synchronize(Stream stream) override {
    EXPECT_FALSE(capturing_ && stream == captured_) << "a wait inside a recording";
  }
  Stream create_stream() override { return reinterpret_cast<Stream>(++streams_made); }
  void destroy_stream(Stream) override {}
  std::unique_ptr<DeviceModule> load_module(std::string_view, std::string_view) override {
    return nullptr;
  }

  bool supports_graphs() const override { return graphs_; }
  void begin_capture(Stream stream) override {
    if (refuse_recording) throw std::runtime_error("fake: this stream cannot be recorded");
    EXPECT_NE(stream, nullptr) << "recording the legacy stream";
    EXPECT_FALSE(capturing_);
    capturing_ = true;
    captured_ = stream;
    recording_.clear();
  }
  DeviceGraph end_capture(Stream stream) override {
    EXPECT_TRUE(capturing_ && stream == captured_);
    capturing_ = false;
    graphs_made.push_back(std::move(recording_));
    return reinterpret_cast<DeviceGraph>(graphs_made.size());
  }
  void launch_graph(DeviceGraph graph, Stream) override {
    ++graph_launches;
    for (const Op& op : graphs_made.at(reinterpret_cast<size_t>(graph) - 1)) run(op);
  }
  void destroy_graph(DeviceGraph) override {}

  // A launch through a DeviceContext's module.
  void launch(const char* kernel, const DLTensor* const* args, int32_t nargs, Stream stream) {
    Op op;
    op.kernel = kernel;
    for (int32_t i = 0; i < nargs; ++i) {
      op.args.push_back(floats(*args[i]));
      op.sizes.push_back(elements(*args[i]));
    }
    issue(std::move(op), stream);
  }

  bool refuse_recording = false;
  int64_t allocs = 0, direct_launches = 0, graph_launches = 0, waiting_copies = 0, host_allocs = 0;
  intptr_t streams_made = 0;
  std::vector<std::vector<Op>> graphs_made;

 private:
  void issue(Op op, Stream stream) {
    if (capturing_ && stream == captured_) {
      recording_.push_back(std::move(op));
      return;
    }
    if (!op.kernel.empty()) ++direct_launches;
    run(op);
  }
  static void run(const Op& op) {
    if (op.kernel.empty()) {
      std::memcpy(op.dst, op.src, op.bytes);
      return;
    }
    for (int64_t i = 0; i < op.sizes[0]; ++i) {
      float x = op.args[0][i];
      op.args[1][i] = op.kernel == "add_one" ? x + 1 : op.kernel == "scale2" ? 2 * x : x;
    }
  }

  bool graphs_, pins_;
  bool capturing_ = false;
  Stream captured_ = nullptr;
  std::vector<Op> recording_;
};

class FakeModule final : public DeviceModule {
 public:
  explicit FakeModule(FakeDevice& device) : device_(device) {}
  int32_t launch(const char* name, const AnvilLaunchDims&, int32_t nargs,
                 const DLTensor* const* args, Stream stream) override {
    device_.launch(name, args, nargs, stream);
    return 0;
  }

 private:
  FakeDevice& device_;
};

// The kernels' host functions, as generated host code is: launches through the context, a
// temporary from its workspace.
const AnvilLaunchDims kDims = {{1, 1, 1}, {4, 1, 1}, 0};

int32_t add_one(const DLTensor* const* args, int32_t, void* ctx) {
  return AnvilDeviceLaunch(ctx, "add_one", &kDims, 2, args);
}

int32_t scale2_through_temp(const DLTensor* const* args, int32_t, void* ctx) {
  DLTensor temp = *args[1];
  temp.data = AnvilDeviceWorkspaceAlloc(ctx, 16);
  temp.byte_offset = 0;
  if (temp.data == nullptr) return -1;
  const DLTensor* first[] = {args[0], &temp};
  const DLTensor* second[] = {&temp, args[1]};
  int32_t status = AnvilDeviceLaunch(ctx, "scale2", &kDims, 2, first);
  if (status == 0) status = AnvilDeviceLaunch(ctx, "copy", &kDims, 2, second);
  AnvilDeviceWorkspaceFree(ctx, temp.data);
  return status;
}

// y = 2 (x + 1) over float32[4]: x an input, x + 1 in the arena, y an owned array.
struct Program {
  FakeDevice device;
  FakeModule module{device};
  DeviceContext context{&device, &module};
  GraphProgram p;

  explicit Program(bool graphs, bool pins = false) : device(graphs, pins) {
    Device::set_for_testing(kDLCUDA, &device);
    auto slot = [](const char* name, GraphProgram::Storage storage, int64_t offset) {
      GraphProgram::Slot s;
      s.name = name;
      s.shape = {4};
      s.dtype = DLDataType{kDLFloat, 32, 1};
      s.storage = storage;
      s.offset = offset;
      return s;
    };
    p.target = "cuda";
    p.slots = {slot("x", GraphProgram::Storage::kInput, 0),
               slot("x1", GraphProgram::Storage::kArena, 0),
               slot("y", GraphProgram::Storage::kOwned, 0)};
    p.inputs = {0};
    p.outputs = {2};
    p.arena_bytes = 16;
    GraphProgram::Call c0, c1;
    c0.kernel = "add_one";
    c0.args = {0, 1};
    c0.fn = add_one;
    c1.kernel = "scale2_through_temp";
    c1.args = {1, 2};
    c1.fn = scale2_through_temp;
    p.calls = {c0, c1};
    attach_device(p, device, &context);
  }
  ~Program() { Device::reset_for_testing(kDLCUDA); }

  std::vector<float> run(std::vector<float> x) {
    NDArray in = NDArray::empty({4}, DLDataType{kDLFloat, 32, 1});
    std::memcpy(in.data(), x.data(), 16);
    std::vector<NDArray> out = execute(p, {in});
    const float* y = static_cast<const float*>(out.at(0).data());
    return std::vector<float>(y, y + 4);
  }
};

const std::vector<float> kX = {1, 2, 3, 4};
const std::vector<float> kY = {4, 6, 8, 10};

TEST(DeviceGraph, FirstRunLaunchesThenOneRecordingThenReplays) {
  Program prog(/*graphs=*/true);
  EXPECT_EQ(prog.run(kX), kY);
  DeviceRunCounts c = device_run_counts(prog.p);
  EXPECT_EQ(c.eager_runs, 1);
  EXPECT_EQ(c.captures, 0);
  EXPECT_EQ(prog.device.direct_launches, 3);

  EXPECT_EQ(prog.run({0, 0, 0, 0}), std::vector<float>({2, 2, 2, 2}));
  c = device_run_counts(prog.p);
  EXPECT_EQ(c.captures, 1);
  EXPECT_EQ(c.graph_launches, 1);
  ASSERT_EQ(prog.device.graphs_made.size(), 1u);
  EXPECT_EQ(prog.device.graphs_made[0].size(), 3u);  // three kernels, recorded
  EXPECT_EQ(prog.device.direct_launches, 3);         // none launched on their own
  const int64_t allocs = prog.device.allocs;

  for (float v : {5.0f, -1.0f, 0.5f}) {
    std::vector<float> y = prog.run({v, v, v, v});
    EXPECT_EQ(y, std::vector<float>(4, 2 * (v + 1))) << v;
  }
  c = device_run_counts(prog.p);
  EXPECT_EQ(c.eager_runs, 1);
  EXPECT_EQ(c.captures, 1);
  EXPECT_EQ(c.graph_launches, 4);
  EXPECT_EQ(prog.device.direct_launches, 3);
  EXPECT_EQ(prog.device.allocs, allocs);   // replays allocate no device memory
  EXPECT_EQ(prog.device.streams_made, 1);  // its own stream: the null stream cannot record
}

// A device that pins host memory: runs through the host stage their arrays in page-locked
// buffers of the replay's own (allocated once), and the copies from and to them are part of the
// recording, so that a replayed run is one graph launch and no copy that waits.
TEST(DeviceGraph, HostArraysAreStagedInPinnedBuffersAndRecorded) {
  Program prog(/*graphs=*/true, /*pins=*/true);
  EXPECT_EQ(prog.run(kX), kY);
  EXPECT_EQ(prog.device.host_allocs, 2);  // the input's and the output's
  EXPECT_EQ(prog.run({0, 0, 0, 0}), std::vector<float>({2, 2, 2, 2}));
  ASSERT_EQ(prog.device.graphs_made.size(), 1u);
  const std::vector<FakeDevice::Op>& g = prog.device.graphs_made[0];
  ASSERT_EQ(g.size(), 5u);  // the input's copy, three kernels, the output's copy
  EXPECT_TRUE(g.front().kernel.empty());
  EXPECT_TRUE(g.back().kernel.empty());
  const int64_t allocs = prog.device.allocs;
  for (float v : {5.0f, -1.0f, 0.5f}) {
    std::vector<float> y = prog.run({v, v, v, v});
    EXPECT_EQ(y, std::vector<float>(4, 2 * (v + 1))) << v;
  }
  DeviceRunCounts c = device_run_counts(prog.p);
  EXPECT_EQ(c.captures, 1);
  EXPECT_EQ(c.graph_launches, 4);
  EXPECT_EQ(prog.device.direct_launches, 3);  // the first run's
  EXPECT_EQ(prog.device.waiting_copies, 0);
  EXPECT_EQ(prog.device.host_allocs, 2);
  EXPECT_EQ(prog.device.allocs, allocs);
}

TEST(DeviceGraph, DeviceArraysReplayWithoutAllocatingAndRecordAgainWhenTheyChange) {
  Program prog(/*graphs=*/true);
  Device& d = prog.device;
  NDArray host_x = NDArray::empty({4}, DLDataType{kDLFloat, 32, 1});
  std::memcpy(host_x.data(), kX.data(), 16);
  NDArray host_y = NDArray::empty({4}, DLDataType{kDLFloat, 32, 1});
  DeviceArrays x(d, {&host_x}), y(d, {&host_y}), other_y(d, {&host_y});
  auto result = [&](const DeviceArrays& a) {
    NDArray h = NDArray::empty({4}, DLDataType{kDLFloat, 32, 1});
    a.read(0, h);
    const float* f = static_cast<const float*>(h.data());
    return std::vector<float>(f, f + 4);
  };

  execute_on_device_arrays(prog.p, x.args(), y.args());  // kernel by kernel
  EXPECT_EQ(result(y), kY);
  execute_on_device_arrays(prog.p, x.args(), y.args());  // recorded
  EXPECT_EQ(result(y), kY);
  EXPECT_EQ(device_run_counts(prog.p).captures, 1);
  const int64_t allocs = prog.device.allocs;

  // The inputs change in place between replays: the graph reads them where they are.
  const std::vector<float> x2 = {10, 20, 30, 40};
  d.copy_to_device(const_cast<void*>(x.args()[0]->data), 0, x2.data(), 16);
  g_heap_allocations = 0;
  g_counting = true;
  for (int i = 0; i < 5; ++i) execute_on_device_arrays(prog.p, x.args(), y.args());
  g_counting = false;
  EXPECT_EQ(g_heap_allocations, 0) << "the replay path allocated from the heap";
  EXPECT_EQ(prog.device.allocs, allocs);
  EXPECT_EQ(result(y), std::vector<float>({22, 42, 62, 82}));
  DeviceRunCounts c = device_run_counts(prog.p);
  EXPECT_EQ(c.graph_launches, 6);
  EXPECT_EQ(c.captures, 1);

  // Another output array: recorded again, written there.
  execute_on_device_arrays(prog.p, x.args(), other_y.args());
  EXPECT_EQ(result(other_y), std::vector<float>({22, 42, 62, 82}));
  EXPECT_EQ(device_run_counts(prog.p).captures, 2);
  execute_on_device_arrays(prog.p, x.args(), other_y.args());
  EXPECT_EQ(device_run_counts(prog.p).captures, 2);
  EXPECT_EQ(prog.device.direct_launches, 3);
}

// Runs through the host and runs on device arrays keep a recording each: alternating between them
// records each once.
TEST(DeviceGraph, HostAndDeviceArrayRunsKeepTheirOwnRecordings) {
  Program prog(/*graphs=*/true);
  NDArray host_x = NDArray::empty({4}, DLDataType{kDLFloat, 32, 1});
  std::memcpy(host_x.data(), kX.data(), 16);
  NDArray host_y = NDArray::empty({4}, DLDataType{kDLFloat, 32, 1});
  DeviceArrays x(prog.device, {&host_x}), y(prog.device, {&host_y});
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(prog.run(kX), kY);
    execute_on_device_arrays(prog.p, x.args(), y.args());
    y.read(0, host_y);
    EXPECT_EQ(std::vector<float>(static_cast<const float*>(host_y.data()),
                                 static_cast<const float*>(host_y.data()) + 4),
              kY);
  }
  DeviceRunCounts c = device_run_counts(prog.p);
  EXPECT_EQ(c.eager_runs, 2);
  EXPECT_EQ(c.captures, 2);
  EXPECT_EQ(c.graph_launches, 6);
}

// A device that cannot record the stream: the runs go on kernel by kernel, right, no error.
TEST(DeviceGraph, ARecordingThatFailsFallsBackToKernelByKernel) {
  Program prog(/*graphs=*/true);
  prog.device.refuse_recording = true;
  for (float v : {1.0f, 2.0f, 3.0f, 4.0f}) {
    std::vector<float> y = prog.run({v, v, v, v});
    EXPECT_EQ(y, std::vector<float>(4, 2 * (v + 1))) << v;
  }
  DeviceRunCounts c = device_run_counts(prog.p);
  EXPECT_EQ(c.eager_runs, 4);
  EXPECT_EQ(c.captures, 0);
  EXPECT_EQ(c.graph_launches, 0);
  EXPECT_EQ(prog.device.direct_launches, 3 * 4);
}

TEST(DeviceGraph, WithoutGraphsEveryRunLaunchesItsKernels) {
  for (bool device_has_graphs : {false, true}) {
    Program prog(device_has_graphs);
    set_device_graphs(false);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(prog.run(kX), kY);
    set_device_graphs(true);
    if (!device_has_graphs) {
      for (int i = 0; i < 2; ++i) EXPECT_EQ(prog.run(kX), kY);
    }
    const int runs = device_has_graphs ? 3 : 5;
    EXPECT_EQ(prog.device.direct_launches, 3 * runs) << device_has_graphs;
    EXPECT_EQ(prog.device.graph_launches, 0);
    EXPECT_EQ(device_run_counts(prog.p).captures, 0);
  }
}

TEST(DeviceGraph, ProfiledRunsLaunchKernelByKernel) {
  Program prog(/*graphs=*/true);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(prog.run(kX), kY);
  std::vector<double> seconds;
  NDArray in = NDArray::empty({4}, DLDataType{kDLFloat, 32, 1});
  std::memcpy(in.data(), kX.data(), 16);
  std::vector<NDArray> out = execute(prog.p, {in}, &seconds);
  ASSERT_EQ(seconds.size(), 2u);
  EXPECT_EQ(std::vector<float>(static_cast<const float*>(out[0].data()),
                               static_cast<const float*>(out[0].data()) + 4),
            kY);
  EXPECT_EQ(prog.device.direct_launches, 3 + 3);  // the first run's and the profiled run's
}

}  // namespace
}  // namespace anvil::runtime
