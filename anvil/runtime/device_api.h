// GPU devices for the runtime: CUDA through the driver API and OpenCL through the ICD loader,
// both opened with dlopen on first use, so that libanvil_runtime builds and runs on machines
// without either and says clearly, when a device is asked for, which library or device is
// missing.
//
// A device array is a DLTensor whose `data` is the device's handle: a CUdeviceptr for CUDA, a
// cl_mem for OpenCL, with `byte_offset` into it (the graph executor's arena slices one
// allocation). Work goes to a stream (CUDA: a CUstream; OpenCL: an in-order cl_command_queue of
// the device's context) and runs in the order it is issued there; the null stream is the
// device's own queue (CUDA: the legacy default stream; OpenCL: the queue opened with the device).
#pragma once

#include <dlpack/dlpack.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "anvil/runtime/c_runtime_api.h"
#include "anvil/runtime/ndarray.h"

namespace anvil::runtime {

// A queue of device work: a CUstream or a cl_command_queue; nullptr is the device's own.
using Stream = void*;

// The kernels of one device program: PTX for CUDA, OpenCL C source for OpenCL.
class DeviceModule {
 public:
  virtual ~DeviceModule() = default;
  // Enqueues kernel `name` over dims.grid x dims.block with args[i] as its i-th parameter (each a
  // device array: CUDA passes data + byte_offset as one pointer, OpenCL passes the cl_mem and
  // then byte_offset as a ulong, so an OpenCL kernel takes `__global T* p, ulong p_offset` per
  // array). Returns 0, or -1 after AnvilSetLastError with a message naming the device, the kernel
  // and the driver's error. Safe to call from several threads at once. AnvilDeviceLaunch checks
  // what is common to both drivers (the arguments' device, the block, an empty grid) first.
  virtual int32_t launch(const char* name, const AnvilLaunchDims& dims, int32_t nargs,
                         const DLTensor* const* args, Stream stream = nullptr) = 0;
};

// A recorded sequence of device work (a CUDA graph, instantiated), replayed by launch_graph.
using DeviceGraph = void*;

// A device a program needs cannot be opened on this machine (no driver, no device, a driver
// error while opening it): the machine's state, not a fault of the program.
class DeviceUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Device {
 public:
  virtual ~Device() = default;

  // The process-wide device of `type` (kDLCUDA or kDLOpenCL; device 0), opened on first use
  // (thread-safe) and kept until the process exits. Throws DeviceUnavailable naming the library
  // tried (libcuda.so.1, libOpenCL.so.1) and why it failed: no library, no platform or device, a
  // driver error with its code. A failed open is not retried: later calls throw its message.
  static Device& get(DLDeviceType type);
  // Whether get(type) would succeed; when not, *why (if given) holds get's message.
  static bool available(DLDeviceType type, std::string* why = nullptr);

  virtual DLDevice dl_device() const = 0;
  // A human-readable name ("NVIDIA H200", "pthread-skylake-avx512-AMD EPYC").
  virtual std::string name() const = 0;
  // The name with what a report wants beside it (CUDA: ordinal, architecture, multiprocessors,
  // memory, the driver's version).
  virtual std::string description() const { return name(); }
  virtual int64_t max_threads_per_block() const = 0;
  virtual int64_t max_shared_memory_per_block() const = 0;

  // Device memory; `data` handles as described above (never NULL, even for 0 bytes). alloc throws
  // std::runtime_error naming the size when the device is out of memory; free throws with the
  // driver's error (CUDA: after a kernel fault the context is unusable); free(nullptr) does
  // nothing. Memory freed while kernels using it are queued stays valid until they are done.
  virtual void* alloc(size_t bytes) = 0;
  virtual void free(void* data) = 0;
  // Copies between host memory and device memory at `offset` bytes into `data`. They wait for
  // the kernels launched before them. Throw std::runtime_error with the driver's error.
  // On `stream`, they return when the copy is done, after the work issued before it there.
  virtual void copy_to_device(void* data, uint64_t offset, const void* src, size_t bytes,
                              Stream stream = nullptr) = 0;
  virtual void copy_from_device(void* dst, const void* data, uint64_t offset, size_t bytes,
                                Stream stream = nullptr) = 0;
  // Waits for everything issued to `stream` (the null stream: to the device's own queue; CUDA:
  // to the whole context); throws with the driver's error (a kernel fault).
  virtual void synchronize(Stream stream = nullptr) = 0;
  // A new stream of this device, and its release (after the work on it is done). Throw
  // std::runtime_error with the driver's error.
  virtual Stream create_stream() = 0;
  virtual void destroy_stream(Stream stream) = 0;

  // Host memory for staging copies: page-locked where the device has it (CUDA: cuMemAllocHost),
  // so that copies from and to it go without the driver's own staging, need not wait, and a
  // graph records them; ordinary host memory elsewhere (pins_host_memory() false). alloc_host
  // throws std::runtime_error naming the size; free_host(nullptr) does nothing.
  virtual bool pins_host_memory() const { return false; }
  virtual void* alloc_host(size_t bytes);
  virtual void free_host(void* data);
  // Copies between host memory from alloc_host and device memory on `stream`, in order with the
  // work there; where the host memory is pinned they return without waiting (a graph records
  // them), elsewhere they are copy_to_device and copy_from_device.
  virtual void copy_to_device_async(void* data, uint64_t offset, const void* src, size_t bytes,
                                    Stream stream) {
    copy_to_device(data, offset, src, bytes, stream);
  }
  virtual void copy_from_device_async(void* dst, const void* data, uint64_t offset, size_t bytes,
                                      Stream stream) {
    copy_from_device(dst, data, offset, bytes, stream);
  }

  // Copies `bytes` between two device arrays on `stream`, in order with the work there, without
  // waiting for it (a graph records it). Throws std::runtime_error with the driver's error.
  virtual void copy_on_device(void* dst, uint64_t dst_offset, const void* src, uint64_t src_offset,
                              size_t bytes, Stream stream = nullptr) = 0;

  // Loads a device program: `code` (PTX or OpenCL C) and, when not empty, `binary`, machine code
  // for one GPU (a cubin), tried first; the code is the fallback where the binary does not load.
  // Throws std::runtime_error with the driver's error and, for OpenCL, the build log.
  virtual std::unique_ptr<DeviceModule> load_module(std::string_view code,
                                                    std::string_view binary = {}) = 0;

  // Graphs (CUDA graphs): the work issued to `stream` (never the null stream) between
  // begin_capture and end_capture is recorded instead of run; end_capture returns it ready to
  // launch, and launch_graph replays it on a stream in one call. Devices without them say false
  // and throw from the rest. All throw std::runtime_error with the driver's error.
  virtual bool supports_graphs() const { return false; }
  virtual void begin_capture(Stream stream);
  virtual DeviceGraph end_capture(Stream stream);
  virtual void launch_graph(DeviceGraph graph, Stream stream);
  virtual void destroy_graph(DeviceGraph graph);

  // Chooses the ordinal of the device that get(type) opens (CUDA: the driver's device number;
  // OpenCL: the index among the GPUs, else all devices, of the first platform that has one);
  // default 0. Throws std::logic_error once get(type) has opened a device of another ordinal.
  static void select(DLDeviceType type, int ordinal);
  static int selected(DLDeviceType type);

  // Puts `device` in place of the process's device of `type` until reset_for_testing: tests run
  // the executor on a device that counts what it is asked to do. Not thread-safe.
  static void set_for_testing(DLDeviceType type, Device* device);
  static void reset_for_testing(DLDeviceType type);
};

// Memory of a device owned by one object, freed (errors ignored) when it goes: device memory
// (DeviceBuffer, Device::alloc) or staging host memory (HostBuffer, Device::alloc_host).
template <bool kHost>
class OwnedBuffer {
 public:
  OwnedBuffer() = default;
  OwnedBuffer(Device& device, size_t bytes)
      : device_(&device), data_(kHost ? device.alloc_host(bytes) : device.alloc(bytes)) {}
  OwnedBuffer(OwnedBuffer&& o) noexcept : device_(o.device_), data_(o.data_) { o.data_ = nullptr; }
  OwnedBuffer& operator=(OwnedBuffer&& o) noexcept {
    std::swap(device_, o.device_);
    std::swap(data_, o.data_);
    return *this;
  }
  OwnedBuffer(const OwnedBuffer&) = delete;
  OwnedBuffer& operator=(const OwnedBuffer&) = delete;
  ~OwnedBuffer() {
    try {
      if constexpr (kHost) {
        if (data_) device_->free_host(data_);
      } else {
        if (data_) device_->free(data_);
      }
    } catch (...) {
    }
  }
  void* data() const { return data_; }

 private:
  Device* device_ = nullptr;
  void* data_ = nullptr;
};
using DeviceBuffer = OwnedBuffer<false>;
using HostBuffer = OwnedBuffer<true>;

// Host arrays copied into device memory of their own (an empty array still gets a handle), as the
// DLTensors a kernel's arguments are (data: the device's handle, byte_offset 0, the host array's
// shape, which must outlive this); read copies array i back into `into`, of the same size.
class DeviceArrays {
 public:
  DeviceArrays(Device& device, const std::vector<const NDArray*>& arrays);
  const std::vector<const DLTensor*>& args() const { return args_; }
  void read(size_t i, NDArray& into) const;

 private:
  Device* device_;
  std::vector<DeviceBuffer> buffers_;
  std::vector<DLTensor> views_;
  std::vector<const DLTensor*> args_;
};

// Device memory kept for reuse by the work of one stream: releasing memory to the driver waits for
// the device (CUDA's cuMemFree), and a model asks for the same sizes on every call. A buffer
// released here is handed out again only to work issued later to the same stream, which runs
// after the work that used it. Thread-safe; frees everything when it goes.
class WorkspacePool {
 public:
  explicit WorkspacePool(Device& device) : device_(&device) {}
  WorkspacePool(const WorkspacePool&) = delete;
  WorkspacePool& operator=(const WorkspacePool&) = delete;
  ~WorkspacePool();
  // A free buffer of at least `bytes` (and at most twice that), else a new one.
  void* alloc(size_t bytes);
  // Back to the pool; `data` must come from alloc. nullptr does nothing.
  void release(void* data);
  // Bytes held from the device, in use or free.
  size_t held_bytes() const;

 private:
  Device* device_;
  mutable std::mutex mutex_;
  std::multimap<size_t, void*> free_;  // by size
  std::map<void*, size_t> sizes_;      // every buffer held
};

// What a GPU host function (the kernel ABI's entry for a GPU target) receives as its `ctx`: the
// device, the program its kernels live in, the stream they are launched on and, when set, the
// pool its temporaries come from (else they are allocated and freed per call). Module::load
// makes one (the null stream, no pool) for a library that carries a device program; the graph
// executor passes its own for each run.
struct DeviceContext {
  Device* device = nullptr;
  DeviceModule* module = nullptr;
  Stream stream = nullptr;
  WorkspacePool* workspaces = nullptr;
};

}  // namespace anvil::runtime
