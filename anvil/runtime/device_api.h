// GPU devices for the runtime: CUDA through the driver API and OpenCL through the ICD loader,
// both opened with dlopen on first use, so that libanvil_runtime builds and runs on machines
// without either and says clearly, when a device is asked for, which library or device is
// missing.
//
// A device array is a DLTensor whose `data` is the device's handle: a CUdeviceptr for CUDA, a
// cl_mem for OpenCL, with `byte_offset` into it (the graph executor's arena slices one
// allocation). Kernels run on the device's one queue (CUDA: the context's default stream;
// OpenCL: one in-order command queue), in the order they are launched.
#pragma once

#include <dlpack/dlpack.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "anvil/runtime/c_runtime_api.h"

namespace anvil::runtime {

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
                         const DLTensor* const* args) = 0;
};

class Device {
 public:
  virtual ~Device() = default;

  // The process-wide device of `type` (kDLCUDA or kDLOpenCL; device 0), opened on first use
  // (thread-safe) and kept until the process exits. Throws std::runtime_error naming the library
  // tried (libcuda.so.1, libOpenCL.so.1) and why it failed: no library, no platform or device, a
  // driver error with its code. A failed open is not retried: later calls throw its message.
  static Device& get(DLDeviceType type);
  // Whether get(type) would succeed; when not, *why (if given) holds get's message.
  static bool available(DLDeviceType type, std::string* why = nullptr);

  virtual DLDevice dl_device() const = 0;
  // A human-readable name ("NVIDIA H200", "pthread-skylake-avx512-AMD EPYC").
  virtual std::string name() const = 0;
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
  virtual void copy_to_device(void* data, uint64_t offset, const void* src, size_t bytes) = 0;
  virtual void copy_from_device(void* dst, const void* data, uint64_t offset, size_t bytes) = 0;
  // Waits for everything launched so far; throws with the driver's error (a kernel fault).
  virtual void synchronize() = 0;

  // Loads a device program. Throws std::runtime_error with the driver's error and, for OpenCL,
  // the build log.
  virtual std::unique_ptr<DeviceModule> load_module(std::string_view code) = 0;
};

// Device memory owned by one object: freed (errors ignored) when it goes.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(Device& device, size_t bytes) : device_(&device), data_(device.alloc(bytes)) {}
  DeviceBuffer(DeviceBuffer&& o) noexcept : device_(o.device_), data_(o.data_) {
    o.data_ = nullptr;
  }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(device_, o.device_);
    std::swap(data_, o.data_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    try {
      if (data_) device_->free(data_);
    } catch (...) {
    }
  }
  void* data() const { return data_; }

 private:
  Device* device_ = nullptr;
  void* data_ = nullptr;
};

// What a GPU host function (the kernel ABI's entry for a GPU target) receives as its `ctx`: the
// device, and the program its kernels live in. Module::load makes one for a library that carries
// a device program.
struct DeviceContext {
  Device* device = nullptr;
  DeviceModule* module = nullptr;
};

}  // namespace anvil::runtime
