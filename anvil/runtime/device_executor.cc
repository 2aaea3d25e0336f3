#include "anvil/runtime/device_executor.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

namespace anvil::runtime {

namespace {

std::atomic<int>& graphs_setting() {
  // -1: not read from the environment yet.
  static std::atomic<int> setting{-1};
  return setting;
}

// Device memory from a pool, back to it when it goes.
class PooledBuffer {
 public:
  PooledBuffer() = default;
  PooledBuffer(WorkspacePool& pool, size_t bytes) : pool_(&pool), data_(pool.alloc(bytes)) {}
  PooledBuffer(PooledBuffer&& o) noexcept : pool_(o.pool_), data_(o.data_) { o.data_ = nullptr; }
  PooledBuffer& operator=(PooledBuffer&& o) noexcept {
    std::swap(pool_, o.pool_);
    std::swap(data_, o.data_);
    return *this;
  }
  ~PooledBuffer() {
    try {
      if (data_) pool_->release(data_);
    } catch (...) {
    }
  }
  void* data() const { return data_; }

 private:
  WorkspacePool* pool_ = nullptr;
  void* data_ = nullptr;
};

// Where a device array is: the graph reads and writes these addresses.
struct Place {
  const void* data = nullptr;
  uint64_t offset = 0;
  bool operator==(const Place& o) const { return data == o.data && offset == o.offset; }
};

// One run's device arrays: every slot's view and the buffers it owns.
struct RunState {
  std::vector<DLTensor> views;
  std::vector<PooledBuffer> owned;
  std::vector<bool> ready;

  explicit RunState(size_t slots) : views(slots), owned(slots), ready(slots, false) {}

  void place(const GraphProgram& p, Device& device, size_t s, const void* data, uint64_t offset) {
    views[s] = slot_view(p.slots[s], const_cast<void*>(data));
    views[s].device = device.dl_device();
    views[s].byte_offset = offset;
    ready[s] = true;
  }
};

// Places the parameters and the arena; the inputs are the caller's to place.
void place_fixed(const GraphProgram& p, Device& device, void* arena, RunState& run) {
  for (size_t s = 0; s < p.slots.size(); ++s) {
    const GraphProgram::Slot& slot = p.slots[s];
    if (slot.storage == GraphProgram::Storage::kParam)
      run.place(p, device, s, (*p.device_params)[slot.offset].data(), 0);
    else if (slot.storage == GraphProgram::Storage::kArena)
      run.place(p, device, s, arena, static_cast<uint64_t>(slot.offset));
  }
}

// Launches every call of `p` on context.stream, in order: owned slots from `pool` on first use,
// back to it after their last. With `call_seconds`, waits for each call and times it.
void launch_calls(const GraphProgram& p, Device& device, DeviceContext& context,
                  WorkspacePool& pool, RunState& run, std::vector<double>* call_seconds) {
  using clock = std::chrono::steady_clock;
  const DLTensor* inline_args[64];
  std::vector<const DLTensor*> heap_args;
  for (size_t i = 0; i < p.calls.size(); ++i) {
    const GraphProgram::Call& c = p.calls[i];
    if (c.is_control())
      throw std::runtime_error(c.kernel + ": control-flow steps run on the CPU only");
    const DLTensor** args = inline_args;
    if (c.args.size() > std::size(inline_args)) {
      heap_args.resize(c.args.size());
      args = heap_args.data();
    }
    for (size_t k = 0; k < c.args.size(); ++k) {
      const int32_t a = c.args[k];
      if (!run.ready[a]) {
        run.owned[a] =
            PooledBuffer(pool, static_cast<size_t>(std::max<int64_t>(
                                   tensor_bytes(p.slots[a].shape, p.slots[a].dtype), 1)));
        run.place(p, device, a, run.owned[a].data(), 0);
      }
      args[k] = &run.views[a];
    }
    clock::time_point start;
    if (call_seconds) start = clock::now();
    if (c.fn(args, static_cast<int32_t>(c.args.size()), &context) != 0)
      throw std::runtime_error("kernel " + c.kernel + " (" + c.nodes +
                               ") failed: " + AnvilGetLastError());
    if (call_seconds) {
      device.synchronize(context.stream);  // launches are asynchronous: a call's time is its own
      (*call_seconds)[i] = std::chrono::duration<double>(clock::now() - start).count();
    }
    for (int32_t r : c.release) {
      run.owned[r] = PooledBuffer();
      run.ready[r] = false;
    }
  }
}

void check_outputs_ready(const GraphProgram& p, const RunState& run) {
  for (int32_t o : p.outputs)
    if (!run.ready[o])
      throw std::runtime_error("output '" + p.slots[o].name + "' was never computed");
}

// Copies output i's slot into the caller's device array `to`, on `stream`.
void copy_output(const GraphProgram& p, Device& device, const RunState& run, size_t i,
                 const DLTensor& to, Stream stream) {
  const DLTensor& from = run.views[p.outputs[i]];
  int64_t bytes = tensor_bytes(p.slots[p.outputs[i]].shape, p.slots[p.outputs[i]].dtype);
  device.copy_on_device(to.data, to.byte_offset, from.data, from.byte_offset,
                        static_cast<size_t>(bytes), stream);
}

}  // namespace

// A program's run on one stream recorded as a graph (device_executor.h), with the memory the
// graph's addresses point into.
struct Replay {
  std::mutex mutex;
  Device* device = nullptr;
  Stream stream = nullptr;  // where its work goes: the caller's, else its own
  Stream own_stream = nullptr;
  std::unique_ptr<WorkspacePool> pool;  // its own: nothing else hands these buffers out
  std::unique_ptr<RunState> run;        // the recorded run's arrays, kept for the graph
  PooledBuffer arena;
  std::vector<PooledBuffer> input_buffers;  // for host inputs, one per p.inputs
  // Host arrays through a device that pins host memory: staged in page-locked buffers of the
  // replay's own, one per input and output, whose copies the recording holds with the kernels.
  bool staged = false;
  bool unfinished = false;  // a staged run's copies may still be queued (it did not return)
  std::vector<HostBuffer> host_inputs, host_outputs;
  std::vector<size_t> input_bytes, output_bytes;
  std::vector<Place> bound, wanted;  // inputs, then outputs: as recorded, as asked now
  DeviceGraph graph = nullptr;
  bool recording_failed = false;  // launch kernel by kernel from then on
  DeviceRunCounts counts;

  ~Replay() {
    try {
      if (graph) device->destroy_graph(graph);
      if (stream) device->synchronize(stream);
      run.reset();
      input_buffers.clear();
      host_inputs.clear();
      host_outputs.clear();
      arena = PooledBuffer();
      if (own_stream) device->destroy_stream(own_stream);
    } catch (...) {
    }
  }
};

struct StreamPools {
  std::mutex mutex;
  std::map<Stream, std::unique_ptr<WorkspacePool>> by_stream;
  // Keyed by stream and by whether the inputs and outputs are the caller's device arrays (else
  // the replay's own buffers, copied to and from the host): runs of either kind do not record
  // over each other's graph.
  std::map<std::pair<Stream, bool>, std::unique_ptr<Replay>> replays;

  WorkspacePool& get(Device& device, Stream stream) {
    std::lock_guard<std::mutex> lock(mutex);
    std::unique_ptr<WorkspacePool>& pool = by_stream[stream];
    if (!pool) pool = std::make_unique<WorkspacePool>(device);
    return *pool;
  }

  Replay& replay(const GraphProgram& p, Stream stream, bool device_arrays) {
    std::lock_guard<std::mutex> lock(mutex);
    auto found = replays.find({stream, device_arrays});
    if (found != replays.end()) return *found->second;
    // Made whole before it is kept: a failure (no stream, out of device memory) keeps nothing.
    auto made = std::make_unique<Replay>();
    made->device = p.device;
    // Graphs are recorded from a stream of one's own: never the device's legacy queue.
    if (stream == nullptr) made->own_stream = p.device->create_stream();
    made->stream = stream ? stream : made->own_stream;
    made->pool = std::make_unique<WorkspacePool>(*p.device);
    if (p.arena_bytes > 0)
      made->arena = PooledBuffer(*made->pool, static_cast<size_t>(p.arena_bytes));
    auto bytes = [&](int32_t s) {
      return static_cast<size_t>(
          std::max<int64_t>(tensor_bytes(p.slots[s].shape, p.slots[s].dtype), 0));
    };
    if (!device_arrays) {  // the caller's arrays are read where they are
      for (int32_t in : p.inputs) {
        made->input_bytes.push_back(bytes(in));
        made->input_buffers.emplace_back(*made->pool, std::max<size_t>(bytes(in), 1));
      }
      for (int32_t out : p.outputs) made->output_bytes.push_back(bytes(out));
      // Page-locked memory is a limited resource: where it cannot be had, copies wait as before.
      try {
        if (p.device->pins_host_memory()) {
          for (size_t n : made->input_bytes) made->host_inputs.emplace_back(*p.device, n);
          for (size_t n : made->output_bytes) made->host_outputs.emplace_back(*p.device, n);
          made->staged = true;
        }
      } catch (const std::runtime_error&) {
        made->host_inputs.clear();
        made->host_outputs.clear();
      }
    }
    made->wanted.resize(p.inputs.size() + p.outputs.size());
    return *replays.emplace(std::make_pair(stream, device_arrays), std::move(made)).first->second;
  }
};

int64_t tensor_bytes(const std::vector<int64_t>& shape, DLDataType dtype) {
  int64_t n = (dtype.bits * dtype.lanes + 7) / 8;
  for (int64_t d : shape) {
    if (d < 0 || (d > 0 && n > INT64_MAX / d)) return -1;
    n *= d;
  }
  return n;
}

DLTensor slot_view(const GraphProgram::Slot& slot, void* data) {
  DLTensor t{};
  t.data = data;
  t.device = DLDevice{kDLCPU, 0};
  t.ndim = static_cast<int32_t>(slot.shape.size());
  t.dtype = slot.dtype;
  t.shape = const_cast<int64_t*>(slot.shape.data());
  return t;
}

bool device_graphs_enabled() {
  int v = graphs_setting();
  if (v < 0) {
    const char* env = std::getenv("ANVIL_DEVICE_GRAPHS");
    v = env && std::strcmp(env, "0") == 0 ? 0 : 1;
    graphs_setting() = v;
  }
  return v == 1;
}

void set_device_graphs(bool enabled) {
  graphs_setting() = enabled ? 1 : 0;
}

size_t device_bytes_held(const GraphProgram& p) {
  if (!p.pools) return 0;
  std::lock_guard<std::mutex> lock(p.pools->mutex);
  size_t total = 0;
  for (const auto& entry : p.pools->by_stream) total += entry.second->held_bytes();
  for (const auto& entry : p.pools->replays) total += entry.second->pool->held_bytes();
  return total;
}

DeviceRunCounts device_run_counts(const GraphProgram& p) {
  DeviceRunCounts total;
  if (!p.pools) return total;
  std::lock_guard<std::mutex> lock(p.pools->mutex);
  for (const auto& entry : p.pools->replays) {
    std::lock_guard<std::mutex> replay_lock(entry.second->mutex);
    total.eager_runs += entry.second->counts.eager_runs;
    total.captures += entry.second->counts.captures;
    total.graph_launches += entry.second->counts.graph_launches;
  }
  return total;
}

void attach_device(GraphProgram& p, Device& device, void* context) {
  auto params = std::make_shared<std::vector<DeviceBuffer>>();
  for (const NDArray& a : p.params) {
    params->emplace_back(device, a.nbytes());
    if (a.nbytes() > 0) device.copy_to_device(params->back().data(), 0, a.data(), a.nbytes());
  }
  p.device = &device;
  p.context = context;
  p.device_params = std::move(params);
  p.pools = std::make_shared<StreamPools>();
}

void attach_device(GraphProgram& p, const Module& module) {
  if (module.device_type() == kDLCPU) return;
  attach_device(p, Device::get(static_cast<DLDeviceType>(module.device_type())), module.context());
}

namespace {

// A run launched kernel by kernel on `stream` with memory from that stream's pool: the arena (in
// `arena`) and the parameters placed, then the inputs by `place_inputs`; returns with every
// kernel queued and `run` holding the arrays.
void launch_eagerly(const GraphProgram& p, Stream stream, RunState& run, PooledBuffer& arena,
                    std::vector<double>* call_seconds,
                    const std::function<void(WorkspacePool&)>& place_inputs) {
  Device& device = *p.device;
  WorkspacePool& pool = p.pools->get(device, stream);
  // The kernels' context: their module's, on this stream, temporaries from this pool.
  DeviceContext context = *static_cast<const DeviceContext*>(p.context);
  context.stream = stream;
  context.workspaces = &pool;
  if (p.arena_bytes > 0) arena = PooledBuffer(pool, static_cast<size_t>(p.arena_bytes));
  place_fixed(p, device, arena.data(), run);
  place_inputs(pool);
  launch_calls(p, device, context, pool, run, call_seconds);
  check_outputs_ready(p, run);
}

bool replays(const GraphProgram& p) {
  if (!device_graphs_enabled() || !p.device->supports_graphs()) return false;
  return std::none_of(p.calls.begin(), p.calls.end(),
                      [](const GraphProgram::Call& c) { return c.is_control(); });
}

// One run through `r`: the inputs are placed as r.wanted says (host inputs already copied into
// r.input_buffers); device outputs (`outputs` not null) are copied into place by the run. The
// first run launches kernel by kernel, a run whose arrays differ from the recorded ones records
// (again), every other one replays. Returns with the work queued on r.stream.
void run_replay(const GraphProgram& p, Replay& r, const std::vector<const DLTensor*>* outputs) {
  Device& device = *p.device;
  if (r.graph && !r.recording_failed && r.bound == r.wanted) {
    device.launch_graph(r.graph, r.stream);
    ++r.counts.graph_launches;
    return;
  }
  if (r.graph) {
    device.destroy_graph(r.graph);
    r.graph = nullptr;
  }
  DeviceContext context = *static_cast<const DeviceContext*>(p.context);
  context.stream = r.stream;
  context.workspaces = r.pool.get();
  // Every run before this one is done: the buffers the last run used may be handed out again.
  device.synchronize(r.stream);
  r.run.reset();
  r.run = std::make_unique<RunState>(p.slots.size());
  place_fixed(p, device, r.arena.data(), *r.run);
  for (size_t i = 0; i < p.inputs.size(); ++i)
    r.run->place(p, device, static_cast<size_t>(p.inputs[i]), r.wanted[i].data, r.wanted[i].offset);
  auto launch = [&] {
    if (r.staged)
      for (size_t i = 0; i < p.inputs.size(); ++i)
        device.copy_to_device_async(r.input_buffers[i].data(), 0, r.host_inputs[i].data(),
                                    r.input_bytes[i], r.stream);
    launch_calls(p, device, context, *r.pool, *r.run, nullptr);
    check_outputs_ready(p, *r.run);
    if (outputs)
      for (size_t i = 0; i < outputs->size(); ++i)
        copy_output(p, device, *r.run, i, *(*outputs)[i], r.stream);
    if (r.staged)
      for (size_t i = 0; i < p.outputs.size(); ++i) {
        const DLTensor& from = r.run->views[p.outputs[i]];
        device.copy_from_device_async(r.host_outputs[i].data(), from.data, from.byte_offset,
                                      r.output_bytes[i], r.stream);
      }
  };
  if (r.counts.eager_runs == 0 || r.recording_failed) {
    try {
      launch();
    } catch (...) {
      r.run.reset();
      throw;
    }
    ++r.counts.eager_runs;  // nothing recorded: the next run records, unless recording failed
    return;
  }
  // A recording that fails (a stream the driver cannot record, a graph it cannot instantiate)
  // leaves this replay launching kernel by kernel from then on, starting with this run: a
  // kernel's own error then surfaces from that run.
  try {
    device.begin_capture(r.stream);
    try {
      launch();
    } catch (...) {
      device.destroy_graph(device.end_capture(r.stream));
      throw;
    }
    r.graph = device.end_capture(r.stream);
  } catch (...) {
    r.graph = nullptr;
    r.recording_failed = true;
    return run_replay(p, r, outputs);
  }
  r.bound = r.wanted;
  ++r.counts.captures;
  device.launch_graph(r.graph, r.stream);
  ++r.counts.graph_launches;
}

}  // namespace

std::vector<NDArray> execute_on_device(const GraphProgram& p, const std::vector<NDArray>& inputs,
                                       std::vector<double>* call_seconds, Stream stream) {
  Device& device = *p.device;
  if (!call_seconds && replays(p)) {
    Replay& r = p.pools->replay(p, stream, /*device_arrays=*/false);
    std::lock_guard<std::mutex> lock(r.mutex);
    // Staged: the inputs into the pinned buffers, the copies on from there in the run itself; a
    // run that failed may have left its copies queued, so after one the stream is waited for
    // first. Else copied to the device before the run.
    if (r.unfinished) device.synchronize(r.stream);
    r.unfinished = r.staged;
    for (size_t i = 0; i < p.inputs.size(); ++i) {
      const NDArray& in = inputs[p.slots[p.inputs[i]].offset];
      if (r.staged && in.nbytes() > 0) {
        std::memcpy(r.host_inputs[i].data(), in.data(), in.nbytes());
      } else if (in.nbytes() > 0) {
        device.copy_to_device(r.input_buffers[i].data(), 0, in.data(), in.nbytes(), r.stream);
      }
      r.wanted[i] = Place{r.input_buffers[i].data(), 0};
    }
    for (size_t i = p.inputs.size(); i < r.wanted.size(); ++i) r.wanted[i] = Place{};
    run_replay(p, r, nullptr);
    std::vector<NDArray> results;
    for (size_t i = 0; i < p.outputs.size(); ++i) {
      const GraphProgram::Slot& slot = p.slots[p.outputs[i]];
      NDArray c = NDArray::empty(slot.shape, slot.dtype);
      // The last run's arrays (a replay writes the recorded addresses).
      const DLTensor& from = r.run->views[p.outputs[i]];
      if (!r.staged && c.nbytes() > 0)
        device.copy_from_device(c.data(), from.data, from.byte_offset, c.nbytes(), r.stream);
      results.push_back(c);
    }
    device.synchronize(r.stream);
    r.unfinished = false;
    if (r.staged)
      for (size_t i = 0; i < p.outputs.size(); ++i)
        if (results[i].nbytes() > 0)
          std::memcpy(results[i].data(), r.host_outputs[i].data(), results[i].nbytes());
    return results;
  }

  RunState run(p.slots.size());
  PooledBuffer arena;
  launch_eagerly(p, stream, run, arena, call_seconds, [&](WorkspacePool& pool) {
    for (int32_t s : p.inputs) {
      const NDArray& in = inputs[p.slots[s].offset];
      run.owned[s] = PooledBuffer(pool, in.nbytes());
      if (in.nbytes() > 0)
        device.copy_to_device(run.owned[s].data(), 0, in.data(), in.nbytes(), stream);
      run.place(p, device, static_cast<size_t>(s), run.owned[s].data(), 0);
    }
  });
  std::vector<NDArray> results;
  for (int32_t o : p.outputs) {
    const GraphProgram::Slot& slot = p.slots[o];
    NDArray c = NDArray::empty(slot.shape, slot.dtype);
    if (c.nbytes() > 0)
      device.copy_from_device(c.data(), run.views[o].data, run.views[o].byte_offset, c.nbytes(),
                              stream);
    results.push_back(c);
  }
  device.synchronize(stream);  // a kernel's fault surfaces here rather than in the next run
  return results;
}

void execute_on_device_arrays(const GraphProgram& p, const std::vector<const DLTensor*>& inputs,
                              const std::vector<const DLTensor*>& outputs, Stream stream) {
  if (!p.device) throw std::runtime_error("execute_on_device_arrays: the program runs on the CPU");
  Device& device = *p.device;
  if (replays(p)) {
    Replay& r = p.pools->replay(p, stream, /*device_arrays=*/true);
    std::lock_guard<std::mutex> lock(r.mutex);
    for (size_t i = 0; i < p.inputs.size(); ++i) {
      const DLTensor& in = *inputs[p.slots[p.inputs[i]].offset];
      r.wanted[i] = Place{in.data, in.byte_offset};
    }
    for (size_t i = 0; i < outputs.size(); ++i)
      r.wanted[p.inputs.size() + i] = Place{outputs[i]->data, outputs[i]->byte_offset};
    run_replay(p, r, &outputs);
    device.synchronize(r.stream);
    return;
  }
  RunState run(p.slots.size());
  PooledBuffer arena;
  launch_eagerly(p, stream, run, arena, nullptr, [&](WorkspacePool&) {
    for (int32_t s : p.inputs) {
      const DLTensor& in = *inputs[p.slots[s].offset];
      run.place(p, device, static_cast<size_t>(s), in.data, in.byte_offset);
    }
  });
  for (size_t i = 0; i < outputs.size(); ++i) copy_output(p, device, run, i, *outputs[i], stream);
  device.synchronize(stream);
}

}  // namespace anvil::runtime
