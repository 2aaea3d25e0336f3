// CUDA through the driver API, resolved from libcuda.so.1 at run time: the runtime builds without
// the CUDA toolkit and loads on machines without the driver. The few driver types are declared
// here as cuda.h declares them (the ABI is the driver's, stable across CUDA versions).
//
// One context, the device's primary context (the one the CUDA runtime and frameworks share), made
// current on the calling thread before every driver call: the calls may come from any thread.
// Work without a stream goes to the legacy default stream; a stream is a CUstream of this context
// (create_stream, or the caller's).
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "anvil/runtime/device_api.h"

namespace anvil::runtime {

std::unique_ptr<Device> open_cuda_device(int ordinal);

namespace {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUgraph = struct CUgraph_st*;
using CUgraphExec = struct CUgraphExec_st*;

constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
constexpr CUresult CUDA_ERROR_NOT_FOUND = 500;
// CUdevice_attribute.
constexpr int CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1;
constexpr int CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8;
constexpr int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
// CUstreamCaptureMode: relaxed lets this thread allocate while another stream captures.
constexpr int CU_STREAM_CAPTURE_MODE_RELAXED = 2;
// CUjit_option: where the PTX compiler writes its errors.
constexpr int CU_JIT_ERROR_LOG_BUFFER = 5;
constexpr int CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;

constexpr const char* kLibrary = "libcuda.so.1";

// The driver entry points used. The _v2 names are the 64-bit-size versions cuda.h maps the plain
// names to.
struct Driver {
  CUresult (*cuInit)(unsigned flags);
  CUresult (*cuDriverGetVersion)(int* version);
  CUresult (*cuDeviceGetCount)(int* count);
  CUresult (*cuDeviceTotalMem_v2)(size_t* bytes, CUdevice device);
  CUresult (*cuMemGetInfo_v2)(size_t* free, size_t* total);
  CUresult (*cuMemcpyDtoDAsync_v2)(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream);
  CUresult (*cuStreamBeginCapture_v2)(CUstream stream, int mode);
  CUresult (*cuStreamEndCapture)(CUstream stream, CUgraph* graph);
  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec* exec, CUgraph graph,
                                          unsigned long long flags);
  CUresult (*cuGraphLaunch)(CUgraphExec exec, CUstream stream);
  CUresult (*cuGraphExecDestroy)(CUgraphExec exec);
  CUresult (*cuGraphDestroy)(CUgraph graph);
  CUresult (*cuDeviceGet)(CUdevice* device, int ordinal);
  CUresult (*cuDeviceGetName)(char* name, int length, CUdevice device);
  CUresult (*cuDeviceGetAttribute)(int* value, int attribute, CUdevice device);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext* context, CUdevice device);
  CUresult (*cuCtxSetCurrent)(CUcontext context);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuMemAlloc_v2)(CUdeviceptr* pointer, size_t bytes);
  CUresult (*cuMemFree_v2)(CUdeviceptr pointer);
  CUresult (*cuMemcpyHtoD_v2)(CUdeviceptr dst, const void* src, size_t bytes);
  CUresult (*cuMemcpyDtoH_v2)(void* dst, CUdeviceptr src, size_t bytes);
  CUresult (*cuMemcpyHtoDAsync_v2)(CUdeviceptr dst, const void* src, size_t bytes, CUstream stream);
  CUresult (*cuMemcpyDtoHAsync_v2)(void* dst, CUdeviceptr src, size_t bytes, CUstream stream);
  CUresult (*cuMemAllocHost_v2)(void** pointer, size_t bytes);
  CUresult (*cuMemFreeHost)(void* pointer);
  CUresult (*cuStreamCreate)(CUstream* stream, unsigned flags);
  CUresult (*cuStreamDestroy_v2)(CUstream stream);
  CUresult (*cuStreamSynchronize)(CUstream stream);
  CUresult (*cuModuleLoadDataEx)(CUmodule* module, const void* image, unsigned num_options,
                                 int* options, void** option_values);
  CUresult (*cuModuleUnload)(CUmodule module);
  CUresult (*cuModuleGetFunction)(CUfunction* function, CUmodule module, const char* name);
  CUresult (*cuLaunchKernel)(CUfunction function, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                             unsigned block_x, unsigned block_y, unsigned block_z,
                             unsigned shared_bytes, CUstream stream, void** params, void** extra);
  CUresult (*cuGetErrorName)(CUresult error, const char** name);
  CUresult (*cuGetErrorString)(CUresult error, const char** text);
};

template <typename F>
void resolve(void* library, const char* name, F*& function) {
  function = reinterpret_cast<F*>(dlsym(library, name));
  if (function == nullptr)
    throw std::runtime_error(std::string("no CUDA device: ") + kLibrary + " does not export " +
                             name + " (the NVIDIA driver is too old)");
}

Driver load_driver(void* library) {
  Driver d{};
#define ANVIL_RESOLVE(name) resolve(library, #name, d.name)
  ANVIL_RESOLVE(cuInit);
  ANVIL_RESOLVE(cuDriverGetVersion);
  ANVIL_RESOLVE(cuDeviceGetCount);
  ANVIL_RESOLVE(cuDeviceTotalMem_v2);
  ANVIL_RESOLVE(cuMemGetInfo_v2);
  ANVIL_RESOLVE(cuMemcpyDtoDAsync_v2);
  ANVIL_RESOLVE(cuStreamBeginCapture_v2);
  ANVIL_RESOLVE(cuStreamEndCapture);
  ANVIL_RESOLVE(cuGraphInstantiateWithFlags);
  ANVIL_RESOLVE(cuGraphLaunch);
  ANVIL_RESOLVE(cuGraphExecDestroy);
  ANVIL_RESOLVE(cuGraphDestroy);
  ANVIL_RESOLVE(cuDeviceGet);
  ANVIL_RESOLVE(cuDeviceGetName);
  ANVIL_RESOLVE(cuDeviceGetAttribute);
  ANVIL_RESOLVE(cuDevicePrimaryCtxRetain);
  ANVIL_RESOLVE(cuCtxSetCurrent);
  ANVIL_RESOLVE(cuCtxSynchronize);
  ANVIL_RESOLVE(cuMemAlloc_v2);
  ANVIL_RESOLVE(cuMemFree_v2);
  ANVIL_RESOLVE(cuMemcpyHtoD_v2);
  ANVIL_RESOLVE(cuMemcpyDtoH_v2);
  ANVIL_RESOLVE(cuMemcpyHtoDAsync_v2);
  ANVIL_RESOLVE(cuMemcpyDtoHAsync_v2);
  ANVIL_RESOLVE(cuMemAllocHost_v2);
  ANVIL_RESOLVE(cuMemFreeHost);
  ANVIL_RESOLVE(cuStreamCreate);
  ANVIL_RESOLVE(cuStreamDestroy_v2);
  ANVIL_RESOLVE(cuStreamSynchronize);
  ANVIL_RESOLVE(cuModuleLoadDataEx);
  ANVIL_RESOLVE(cuModuleUnload);
  ANVIL_RESOLVE(cuModuleGetFunction);
  ANVIL_RESOLVE(cuLaunchKernel);
  ANVIL_RESOLVE(cuGetErrorName);
  ANVIL_RESOLVE(cuGetErrorString);
#undef ANVIL_RESOLVE
  return d;
}

CUdeviceptr device_pointer(const void* data) {
  return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(data));
}

class CudaDevice final : public Device {
 public:
  explicit CudaDevice(const Driver& driver) : d_(driver) {}

  // Initializes the driver and takes device `ordinal`'s primary context. Never released: the
  // device lives as long as the process (Device::get).
  void open(int ordinal) {
    auto check = [&](CUresult r, const char* call) {
      if (r != CUDA_SUCCESS)
        throw std::runtime_error(std::string("no CUDA device: ") + kLibrary + ": " +
                                 failed(call, r));
    };
    check(d_.cuInit(0), "cuInit");
    int count = 0;
    check(d_.cuDeviceGetCount(&count), "cuDeviceGetCount");
    if (ordinal >= count)
      throw std::runtime_error("no CUDA device " + std::to_string(ordinal) + ": the driver sees " +
                               std::to_string(count) + " (numbered from 0)");
    ordinal_ = ordinal;
    check(d_.cuDeviceGet(&device_, ordinal), "cuDeviceGet");
    char name[256] = {};
    check(d_.cuDeviceGetName(name, sizeof name - 1, device_), "cuDeviceGetName");
    name_ = name;
    int threads = 0, shared = 0;
    check(d_.cuDeviceGetAttribute(&threads, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, device_),
          "cuDeviceGetAttribute(MAX_THREADS_PER_BLOCK)");
    check(
        d_.cuDeviceGetAttribute(&shared, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, device_),
        "cuDeviceGetAttribute(MAX_SHARED_MEMORY_PER_BLOCK)");
    max_threads_ = threads;
    max_shared_ = shared;
    int major = 0, minor = 0, sms = 0, driver = 0;
    size_t memory = 0;
    d_.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device_);
    d_.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device_);
    d_.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device_);
    d_.cuDriverGetVersion(&driver);
    d_.cuDeviceTotalMem_v2(&memory, device_);
    description_ = name_ + " (CUDA device " + std::to_string(ordinal) + ", sm_" +
                   std::to_string(major) + std::to_string(minor) + ", " + std::to_string(sms) +
                   " multiprocessors, " + std::to_string(memory >> 20) + " MiB; driver API " +
                   std::to_string(driver / 1000) + "." + std::to_string(driver % 1000 / 10) + ")";
    check(d_.cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain");
  }

  std::string description() const override { return description_; }

  DLDevice dl_device() const override { return DLDevice{kDLCUDA, ordinal_}; }
  std::string name() const override { return name_; }
  int64_t max_threads_per_block() const override { return max_threads_; }
  int64_t max_shared_memory_per_block() const override { return max_shared_; }

  void* alloc(size_t bytes) override {
    bind();
    CUdeviceptr pointer = 0;
    // Never a zero-byte request (the driver rejects it): an empty array still gets a handle.
    CUresult r = d_.cuMemAlloc_v2(&pointer, bytes ? bytes : 1);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
      size_t free = 0, total = 0;
      d_.cuMemGetInfo_v2(&free, &total);
      throw std::runtime_error(prefix() + "out of device memory: " + std::to_string(bytes) +
                               " bytes asked for, " + std::to_string(free >> 20) + " MiB free of " +
                               std::to_string(total >> 20) +
                               " MiB (other processes on this GPU hold the rest)");
    }
    if (r != CUDA_SUCCESS)
      throw error("cannot allocate " + std::to_string(bytes) + " bytes", "cuMemAlloc_v2", r);
    return reinterpret_cast<void*>(static_cast<uintptr_t>(pointer));
  }

  void free(void* data) override {
    if (data == nullptr) return;
    bind();
    CUresult r = d_.cuMemFree_v2(device_pointer(data));
    if (r != CUDA_SUCCESS) throw error("cannot free device memory", "cuMemFree_v2", r);
  }

  void copy_to_device(void* data, uint64_t offset, const void* src, size_t bytes,
                      Stream stream) override {
    if (bytes == 0) return;
    bind();
    if (stream == nullptr) {
      CUresult r = d_.cuMemcpyHtoD_v2(device_pointer(data) + offset, src, bytes);
      if (r != CUDA_SUCCESS) throw error(copy_what("to", bytes, offset), "cuMemcpyHtoD_v2", r);
      return;
    }
    CUresult r = d_.cuMemcpyHtoDAsync_v2(device_pointer(data) + offset, src, bytes,
                                         static_cast<CUstream>(stream));
    if (r != CUDA_SUCCESS) throw error(copy_what("to", bytes, offset), "cuMemcpyHtoDAsync_v2", r);
    synchronize(stream);
  }

  void copy_from_device(void* dst, const void* data, uint64_t offset, size_t bytes,
                        Stream stream) override {
    if (bytes == 0) return;
    bind();
    if (stream == nullptr) {
      CUresult r = d_.cuMemcpyDtoH_v2(dst, device_pointer(data) + offset, bytes);
      if (r != CUDA_SUCCESS) throw error(copy_what("from", bytes, offset), "cuMemcpyDtoH_v2", r);
      return;
    }
    CUresult r = d_.cuMemcpyDtoHAsync_v2(dst, device_pointer(data) + offset, bytes,
                                         static_cast<CUstream>(stream));
    if (r != CUDA_SUCCESS) throw error(copy_what("from", bytes, offset), "cuMemcpyDtoHAsync_v2", r);
    synchronize(stream);
  }

  bool pins_host_memory() const override { return true; }
  void* alloc_host(size_t bytes) override {
    bind();
    void* p = nullptr;
    CUresult r = d_.cuMemAllocHost_v2(&p, bytes ? bytes : 1);
    if (r != CUDA_SUCCESS)
      throw error("cannot allocate " + std::to_string(bytes) + " bytes of page-locked host memory",
                  "cuMemAllocHost_v2", r);
    return p;
  }
  void free_host(void* data) override {
    if (data == nullptr) return;
    bind();
    CUresult r = d_.cuMemFreeHost(data);
    if (r != CUDA_SUCCESS) throw error("cannot free page-locked host memory", "cuMemFreeHost", r);
  }
  void copy_to_device_async(void* data, uint64_t offset, const void* src, size_t bytes,
                            Stream stream) override {
    if (bytes == 0) return;
    bind();
    CUresult r = d_.cuMemcpyHtoDAsync_v2(device_pointer(data) + offset, src, bytes,
                                         static_cast<CUstream>(stream));
    if (r != CUDA_SUCCESS) throw error(copy_what("to", bytes, offset), "cuMemcpyHtoDAsync_v2", r);
  }
  void copy_from_device_async(void* dst, const void* data, uint64_t offset, size_t bytes,
                              Stream stream) override {
    if (bytes == 0) return;
    bind();
    CUresult r = d_.cuMemcpyDtoHAsync_v2(dst, device_pointer(data) + offset, bytes,
                                         static_cast<CUstream>(stream));
    if (r != CUDA_SUCCESS) throw error(copy_what("from", bytes, offset), "cuMemcpyDtoHAsync_v2", r);
  }

  void synchronize(Stream stream) override {
    bind();
    CUresult r =
        stream ? d_.cuStreamSynchronize(static_cast<CUstream>(stream)) : d_.cuCtxSynchronize();
    if (r != CUDA_SUCCESS)
      throw error("waiting for its kernels (one of them failed)",
                  stream ? "cuStreamSynchronize" : "cuCtxSynchronize", r);
  }

  Stream create_stream() override {
    bind();
    CUstream stream = nullptr;
    CUresult r = d_.cuStreamCreate(&stream, 0);
    if (r != CUDA_SUCCESS) throw error("cannot create a stream", "cuStreamCreate", r);
    return stream;
  }

  void destroy_stream(Stream stream) override {
    if (stream == nullptr) return;
    bind();
    CUresult r = d_.cuStreamDestroy_v2(static_cast<CUstream>(stream));
    if (r != CUDA_SUCCESS) throw error("cannot destroy a stream", "cuStreamDestroy_v2", r);
  }

  void copy_on_device(void* dst, uint64_t dst_offset, const void* src, uint64_t src_offset,
                      size_t bytes, Stream stream) override {
    if (bytes == 0) return;
    bind();
    CUresult r =
        d_.cuMemcpyDtoDAsync_v2(device_pointer(dst) + dst_offset, device_pointer(src) + src_offset,
                                bytes, static_cast<CUstream>(stream));
    if (r != CUDA_SUCCESS)
      throw error("copying " + std::to_string(bytes) + " bytes within device memory",
                  "cuMemcpyDtoDAsync_v2", r);
  }

  std::unique_ptr<DeviceModule> load_module(std::string_view code,
                                            std::string_view binary) override;

  bool supports_graphs() const override { return true; }

  void begin_capture(Stream stream) override {
    bind();
    CUresult r =
        d_.cuStreamBeginCapture_v2(static_cast<CUstream>(stream), CU_STREAM_CAPTURE_MODE_RELAXED);
    if (r != CUDA_SUCCESS) throw error("cannot capture a stream", "cuStreamBeginCapture_v2", r);
  }

  DeviceGraph end_capture(Stream stream) override {
    bind();
    CUgraph graph = nullptr;
    CUresult r = d_.cuStreamEndCapture(static_cast<CUstream>(stream), &graph);
    if (r != CUDA_SUCCESS) throw error("cannot end a stream capture", "cuStreamEndCapture", r);
    CUgraphExec exec = nullptr;
    r = d_.cuGraphInstantiateWithFlags(&exec, graph, 0);
    d_.cuGraphDestroy(graph);  // the executable graph is a copy
    if (r != CUDA_SUCCESS)
      throw error("cannot instantiate a captured graph", "cuGraphInstantiateWithFlags", r);
    return exec;
  }

  void launch_graph(DeviceGraph graph, Stream stream) override {
    bind();
    CUresult r = d_.cuGraphLaunch(static_cast<CUgraphExec>(graph), static_cast<CUstream>(stream));
    if (r != CUDA_SUCCESS) throw error("cannot launch a graph", "cuGraphLaunch", r);
  }

  void destroy_graph(DeviceGraph graph) override {
    if (graph == nullptr) return;
    bind();
    d_.cuGraphExecDestroy(static_cast<CUgraphExec>(graph));
  }

  // Makes the primary context current on this thread: every entry point calls it first, since a
  // host function may run on any thread (and another library may have switched contexts).
  void bind() {
    CUresult r = d_.cuCtxSetCurrent(context_);
    if (r != CUDA_SUCCESS) throw error("cannot make its context current", "cuCtxSetCurrent", r);
  }

  // "cuLaunchKernel failed with CUDA_ERROR_INVALID_VALUE (1): invalid argument".
  std::string failed(const char* call, CUresult r) const {
    const char* name = nullptr;
    const char* text = nullptr;
    if (d_.cuGetErrorName(r, &name) != CUDA_SUCCESS || name == nullptr) name = "unknown CUresult";
    if (d_.cuGetErrorString(r, &text) != CUDA_SUCCESS || text == nullptr) text = "";
    std::string message =
        std::string(call) + " failed with " + name + " (" + std::to_string(r) + ")";
    if (*text) message += std::string(": ") + text;
    return message;
  }

  // "CUDA device 0 (NVIDIA H200): <what>: <call> failed with ...".
  std::runtime_error error(const std::string& what, const char* call, CUresult r) const {
    return std::runtime_error(prefix() + what + ": " + failed(call, r));
  }

  std::string prefix() const {
    return "CUDA device " + std::to_string(ordinal_) + " (" + name_ + "): ";
  }

  const Driver& driver() const { return d_; }

 private:
  static std::string copy_what(const char* direction, size_t bytes, uint64_t offset) {
    return "copying " + std::to_string(bytes) + " bytes " + direction +
           " device memory at offset " + std::to_string(offset);
  }

  Driver d_;
  CUdevice device_ = 0;
  int ordinal_ = 0;
  CUcontext context_ = nullptr;
  std::string name_, description_;
  int64_t max_threads_ = 0, max_shared_ = 0;
};

class CudaModule final : public DeviceModule {
 public:
  CudaModule(CudaDevice& device, CUmodule module) : device_(device), module_(module) {}
  ~CudaModule() override {
    // A failure here (the context is broken after a kernel fault) has already been reported by
    // the launch or synchronize that met it; a destructor has no one to tell.
    try {
      device_.bind();
      device_.driver().cuModuleUnload(module_);
    } catch (const std::exception&) {
    }
  }

  int32_t launch(const char* name, const AnvilLaunchDims& dims, int32_t nargs,
                 const DLTensor* const* args, Stream stream) override {
    try {
      device_.bind();
      CUfunction function = get_function(name);
      // Each parameter is a pointer, the array's handle plus its offset; the driver reads the
      // values through params[i] when the launch is issued, so these may live on the stack.
      // On the stack for the usual few arguments: a launch allocates nothing.
      constexpr int32_t kInline = 32;
      CUdeviceptr inline_values[kInline];
      void* inline_params[kInline];
      std::vector<CUdeviceptr> heap_values;
      std::vector<void*> heap_params;
      CUdeviceptr* values = inline_values;
      void** params = inline_params;
      if (nargs > kInline) {
        heap_values.resize(nargs);
        heap_params.resize(nargs);
        values = heap_values.data();
        params = heap_params.data();
      }
      for (int32_t i = 0; i < nargs; ++i) {
        values[i] = device_pointer(args[i]->data) + args[i]->byte_offset;
        params[i] = &values[i];
      }
      CUresult r = device_.driver().cuLaunchKernel(
          function, dims.grid[0], dims.grid[1], dims.grid[2], dims.block[0], dims.block[1],
          dims.block[2], dims.shared_bytes, static_cast<CUstream>(stream), params, nullptr);
      if (r != CUDA_SUCCESS) {
        char shape[128];
        std::snprintf(shape, sizeof shape, " (grid %ux%ux%u, block %ux%ux%u, %u shared bytes)",
                      dims.grid[0], dims.grid[1], dims.grid[2], dims.block[0], dims.block[1],
                      dims.block[2], dims.shared_bytes);
        throw std::runtime_error(device_.failed("cuLaunchKernel", r) + shape);
      }
      return 0;
    } catch (const std::exception& e) {
      std::string message = device_.prefix() + "kernel '" + name + "': " + e.what();
      AnvilSetLastError(message.c_str());
      return -1;
    }
  }

 private:
  // The kernel `name`, looked up once.
  CUfunction get_function(const char* name) {
    std::lock_guard<std::mutex> lock(mutex_);
    // The host code passes string literals: their address finds the kernel without a copy. A
    // caller's string may reuse an address for another name, so the name is compared too.
    if (auto hit = by_address_.find(name);
        hit != by_address_.end() && std::strcmp(hit->second.first->c_str(), name) == 0)
      return hit->second.second;
    auto it = functions_.find(name);
    if (it == functions_.end()) {
      CUfunction function = nullptr;
      CUresult r = device_.driver().cuModuleGetFunction(&function, module_, name);
      if (r == CUDA_ERROR_NOT_FOUND)
        throw std::runtime_error("the device program has no such kernel");
      if (r != CUDA_SUCCESS) throw std::runtime_error(device_.failed("cuModuleGetFunction", r));
      it = functions_.emplace(name, function).first;
    }
    // Elements of an unordered_map keep their address: the key's string outlives the entry.
    by_address_[name] = {&it->first, it->second};
    return it->second;
  }

  CudaDevice& device_;
  CUmodule module_;
  std::mutex mutex_;
  std::unordered_map<std::string, CUfunction> functions_;
  std::unordered_map<const char*, std::pair<const std::string*, CUfunction>> by_address_;
};

std::unique_ptr<DeviceModule> CudaDevice::load_module(std::string_view code,
                                                      std::string_view binary) {
  bind();
  CUmodule module = nullptr;
  // The machine code first: it loads without compiling where the GPU is of its architecture.
  std::string binary_error;
  if (!binary.empty()) {
    std::string image(binary);
    CUresult r = d_.cuModuleLoadDataEx(&module, image.data(), 0, nullptr, nullptr);
    if (r == CUDA_SUCCESS) return std::make_unique<CudaModule>(*this, module);
    binary_error = failed("cuModuleLoadDataEx", r);
  }
  // PTX is read as a NUL-terminated string.
  std::string ptx(code);
  char log[8192] = {};
  int options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {log, reinterpret_cast<void*>(static_cast<uintptr_t>(sizeof log))};
  CUresult r = d_.cuModuleLoadDataEx(&module, ptx.c_str(), 2, options, values);
  if (r != CUDA_SUCCESS) {
    std::string message =
        prefix() + "cannot load the device program: " + failed("cuModuleLoadDataEx", r);
    if (!binary_error.empty()) message += " (its machine code: " + binary_error + ")";
    if (log[0]) message += "\n" + std::string(log);
    throw std::runtime_error(message);
  }
  return std::make_unique<CudaModule>(*this, module);
}

}  // namespace

std::unique_ptr<Device> open_cuda_device(int ordinal) {
  // Kept loaded even when opening fails: an initialized driver may have threads and exit
  // handlers of its own.
  void* library = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = dlerror();
    throw std::runtime_error(std::string("no CUDA device: cannot load ") + kLibrary +
                             " (the NVIDIA driver): " + (why ? why : "unknown error"));
  }
  auto device = std::make_unique<CudaDevice>(load_driver(library));
  device->open(ordinal);
  return device;
}

}  // namespace anvil::runtime
