// OpenCL through the ICD loader, resolved from libOpenCL.so.1 at run time: the runtime links no
// OpenCL library and loads where none is installed. <CL/cl.h> gives the types, constants and
// (through decltype) the exact signature of every entry point; none is called directly.
//
// Device 0 is the first GPU of the first platform that has one, else the first device of any
// kind (PoCL's CPU device on a machine without a GPU). One context and one in-order command
// queue: kernels and copies run in the order they are issued.
//
// Graphs: where the device offers cl_khr_command_buffer at the revision whose entry points have
// the signatures below (0.9.0, PoCL 3.1's; later revisions changed some of them), a capture records
// the kernels and device copies issued to a queue into a command buffer (each waiting for the one
// before, as the queue would run them), and launch_graph enqueues it whole. Elsewhere
// supports_graphs() is false and every run launches kernel by kernel.
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "anvil/runtime/device_api.h"

namespace anvil::runtime {

std::unique_ptr<Device> open_opencl_device(int ordinal);

namespace {

constexpr const char* kLibrary = "libOpenCL.so.1";
// cl_khr_icd's "no platform" (cl_ext.h), what the ICD loader returns when no driver is installed.
constexpr cl_int kPlatformNotFoundKhr = -1001;

// clang-format off
#define ANVIL_OPENCL_FUNCTIONS(X) \
  X(clGetPlatformIDs)             \
  X(clGetDeviceIDs)               \
  X(clGetDeviceInfo)              \
  X(clCreateContext)              \
  X(clReleaseContext)             \
  X(clCreateCommandQueue)         \
  X(clReleaseCommandQueue)        \
  X(clFinish)                     \
  X(clCreateBuffer)               \
  X(clReleaseMemObject)           \
  X(clEnqueueWriteBuffer)         \
  X(clEnqueueReadBuffer)          \
  X(clEnqueueCopyBuffer)          \
  X(clCreateProgramWithSource)    \
  X(clBuildProgram)               \
  X(clGetProgramBuildInfo)        \
  X(clReleaseProgram)             \
  X(clCreateKernel)               \
  X(clGetKernelInfo)              \
  X(clReleaseKernel)              \
  X(clSetKernelArg)               \
  X(clEnqueueNDRangeKernel)       \
  X(clGetExtensionFunctionAddressForPlatform)
// clang-format on

// The entry points used, each with its declared type.
struct Api {
#define ANVIL_DECLARE(name) decltype(&::name) name = nullptr;
  ANVIL_OPENCL_FUNCTIONS(ANVIL_DECLARE)
#undef ANVIL_DECLARE
};

Api load_api(void* library) {
  Api api;
#define ANVIL_RESOLVE(name)                                                 \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(library, #name));   \
  if (api.name == nullptr)                                                  \
    throw std::runtime_error(std::string("no OpenCL device: ") + kLibrary + \
                             " does not export " #name);
  ANVIL_OPENCL_FUNCTIONS(ANVIL_RESOLVE)
#undef ANVIL_RESOLVE
  return api;
}

#undef ANVIL_OPENCL_FUNCTIONS

const char* error_name(cl_int code) {
  switch (code) {
#define ANVIL_CASE(name) \
  case name:             \
    return #name;
    ANVIL_CASE(CL_DEVICE_NOT_FOUND)
    ANVIL_CASE(CL_DEVICE_NOT_AVAILABLE)
    ANVIL_CASE(CL_COMPILER_NOT_AVAILABLE)
    ANVIL_CASE(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    ANVIL_CASE(CL_OUT_OF_RESOURCES)
    ANVIL_CASE(CL_OUT_OF_HOST_MEMORY)
    ANVIL_CASE(CL_BUILD_PROGRAM_FAILURE)
    ANVIL_CASE(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    ANVIL_CASE(CL_INVALID_VALUE)
    ANVIL_CASE(CL_INVALID_DEVICE_TYPE)
    ANVIL_CASE(CL_INVALID_PLATFORM)
    ANVIL_CASE(CL_INVALID_DEVICE)
    ANVIL_CASE(CL_INVALID_CONTEXT)
    ANVIL_CASE(CL_INVALID_COMMAND_QUEUE)
    ANVIL_CASE(CL_INVALID_HOST_PTR)
    ANVIL_CASE(CL_INVALID_MEM_OBJECT)
    ANVIL_CASE(CL_INVALID_BINARY)
    ANVIL_CASE(CL_INVALID_BUILD_OPTIONS)
    ANVIL_CASE(CL_INVALID_PROGRAM)
    ANVIL_CASE(CL_INVALID_PROGRAM_EXECUTABLE)
    ANVIL_CASE(CL_INVALID_KERNEL_NAME)
    ANVIL_CASE(CL_INVALID_KERNEL_DEFINITION)
    ANVIL_CASE(CL_INVALID_KERNEL)
    ANVIL_CASE(CL_INVALID_ARG_INDEX)
    ANVIL_CASE(CL_INVALID_ARG_VALUE)
    ANVIL_CASE(CL_INVALID_ARG_SIZE)
    ANVIL_CASE(CL_INVALID_KERNEL_ARGS)
    ANVIL_CASE(CL_INVALID_WORK_DIMENSION)
    ANVIL_CASE(CL_INVALID_WORK_GROUP_SIZE)
    ANVIL_CASE(CL_INVALID_WORK_ITEM_SIZE)
    ANVIL_CASE(CL_INVALID_GLOBAL_OFFSET)
    ANVIL_CASE(CL_INVALID_EVENT_WAIT_LIST)
    ANVIL_CASE(CL_INVALID_OPERATION)
    ANVIL_CASE(CL_INVALID_BUFFER_SIZE)
    ANVIL_CASE(CL_INVALID_GLOBAL_WORK_SIZE)
#undef ANVIL_CASE
    case kPlatformNotFoundKhr:
      return "CL_PLATFORM_NOT_FOUND_KHR";
    default:
      return "OpenCL error";
  }
}

// "clBuildProgram failed with CL_BUILD_PROGRAM_FAILURE (-11)".
std::string failed(const char* call, cl_int code) {
  return std::string(call) + " failed with " + error_name(code) + " (" + std::to_string(code) + ")";
}

cl_mem buffer_of(const void* data) {
  return static_cast<cl_mem>(const_cast<void*>(data));
}

// cl_khr_command_buffer, revision 0.9.0 (declared here: the headers' declarations follow
// whichever revision they were cut from).
using cl_command_buffer_khr = struct _cl_command_buffer_khr*;
using cl_sync_point_khr = cl_uint;
constexpr cl_device_info kDeviceExtensionsWithVersion =
    0x1060;           // CL_DEVICE_EXTENSIONS_WITH_VERSION
struct NameVersion {  // cl_name_version
  cl_uint version;
  char name[64];
};
struct CommandBufferApi {
  cl_command_buffer_khr(CL_API_CALL* create)(cl_uint num_queues, const cl_command_queue* queues,
                                             const cl_ulong* properties, cl_int* err) = nullptr;
  cl_int(CL_API_CALL* finalize)(cl_command_buffer_khr buffer) = nullptr;
  cl_int(CL_API_CALL* release)(cl_command_buffer_khr buffer) = nullptr;
  cl_int(CL_API_CALL* enqueue)(cl_uint num_queues, cl_command_queue* queues,
                               cl_command_buffer_khr buffer, cl_uint num_events,
                               const cl_event* events, cl_event* event) = nullptr;
  cl_int(CL_API_CALL* ndrange)(cl_command_buffer_khr buffer, cl_command_queue queue,
                               const cl_ulong* properties, cl_kernel kernel, cl_uint work_dim,
                               const size_t* offset, const size_t* global, const size_t* local,
                               cl_uint num_waits, const cl_sync_point_khr* waits,
                               cl_sync_point_khr* sync_point, void** mutable_handle) = nullptr;
  cl_int(CL_API_CALL* copy)(cl_command_buffer_khr buffer, cl_command_queue queue, cl_mem src,
                            cl_mem dst, size_t src_offset, size_t dst_offset, size_t bytes,
                            cl_uint num_waits, const cl_sync_point_khr* waits,
                            cl_sync_point_khr* sync_point, void** mutable_handle) = nullptr;
};

// A recorded command buffer and the queue it was recorded for (a DeviceGraph).
struct CommandGraph {
  cl_command_buffer_khr buffer;
  cl_command_queue queue;
};

class OpenCLDevice final : public Device {
 public:
  explicit OpenCLDevice(const Api& api) : api_(api) {}
  // Only a device whose open() failed is destroyed (Device::get keeps an open one for the
  // process): release what it had made.
  ~OpenCLDevice() override {
    if (queue_) api_.clReleaseCommandQueue(queue_);
    if (context_) api_.clReleaseContext(context_);
  }

  void open(int ordinal) {
    auto fail = [](const std::string& why) {
      return std::runtime_error(std::string("no OpenCL device: ") + kLibrary + ": " + why);
    };
    cl_uint count = 0;
    cl_int err = api_.clGetPlatformIDs(0, nullptr, &count);
    if (err == kPlatformNotFoundKhr || (err == CL_SUCCESS && count == 0))
      throw fail("no OpenCL platform is installed (the ICD loader found no driver)");
    if (err != CL_SUCCESS) throw fail(failed("clGetPlatformIDs", err));
    std::vector<cl_platform_id> platforms(count);
    err = api_.clGetPlatformIDs(count, platforms.data(), nullptr);
    if (err != CL_SUCCESS) throw fail(failed("clGetPlatformIDs", err));

    // A GPU anywhere first; a platform without a device of the type asked for answers
    // CL_DEVICE_NOT_FOUND.
    cl_platform_id platform = nullptr;
    cl_uint devices = 0;
    for (cl_device_type type :
         {cl_device_type{CL_DEVICE_TYPE_GPU}, cl_device_type{CL_DEVICE_TYPE_ALL}}) {
      for (cl_platform_id p : platforms) {
        if (api_.clGetDeviceIDs(p, type, 0, nullptr, &devices) == CL_SUCCESS && devices > 0) {
          if (static_cast<cl_uint>(ordinal) >= devices)
            throw fail("device " + std::to_string(ordinal) + " was asked for; the platform has " +
                       std::to_string(devices) + " (numbered from 0)");
          std::vector<cl_device_id> ids(devices);
          err = api_.clGetDeviceIDs(p, type, devices, ids.data(), nullptr);
          if (err != CL_SUCCESS) throw fail(failed("clGetDeviceIDs", err));
          device_ = ids[static_cast<size_t>(ordinal)];
          platform = p;
          break;
        }
      }
      if (platform) break;
    }
    if (platform == nullptr)
      throw fail(std::to_string(count) + (count == 1 ? " platform" : " platforms") +
                 ", none with a device");
    ordinal_ = ordinal;

    name_ = info_string(CL_DEVICE_NAME);
    max_threads_ = static_cast<int64_t>(info<size_t>(CL_DEVICE_MAX_WORK_GROUP_SIZE));
    max_local_ = static_cast<int64_t>(info<cl_ulong>(CL_DEVICE_LOCAL_MEM_SIZE));

    cl_context_properties properties[] = {CL_CONTEXT_PLATFORM,
                                          reinterpret_cast<cl_context_properties>(platform), 0};
    context_ = api_.clCreateContext(properties, 1, &device_, nullptr, nullptr, &err);
    if (err != CL_SUCCESS) throw fail("device '" + name_ + "': " + failed("clCreateContext", err));
    queue_ = api_.clCreateCommandQueue(context_, device_, 0, &err);
    if (err != CL_SUCCESS)
      throw fail("device '" + name_ + "': " + failed("clCreateCommandQueue", err));
    load_command_buffers(platform);
  }

  // Graphs through command buffers (see the top of this file).
  bool supports_graphs() const override { return commands_.create != nullptr; }
  void begin_capture(Stream stream) override {
    if (!supports_graphs()) return Device::begin_capture(stream);
    cl_command_queue q = queue(stream);
    std::lock_guard<std::mutex> lock(capture_mutex_);
    if (recordings_.count(q))
      throw std::runtime_error(prefix() + "this queue is being recorded already");
    cl_int err = CL_SUCCESS;
    cl_command_buffer_khr buffer = commands_.create(1, &q, nullptr, &err);
    if (err != CL_SUCCESS)
      throw error("cannot record a command buffer", "clCreateCommandBufferKHR", err);
    recordings_[q] = Recording{buffer, 0, false};
  }
  DeviceGraph end_capture(Stream stream) override {
    if (!supports_graphs()) return Device::end_capture(stream);
    cl_command_queue q = queue(stream);
    Recording r;
    {
      std::lock_guard<std::mutex> lock(capture_mutex_);
      auto it = recordings_.find(q);
      if (it == recordings_.end())
        throw std::runtime_error(prefix() + "end_capture on a queue that is not being recorded");
      r = it->second;
      recordings_.erase(it);
    }
    cl_int err = commands_.finalize(r.buffer);
    if (err != CL_SUCCESS) {
      commands_.release(r.buffer);
      throw error("cannot finish a command buffer", "clFinalizeCommandBufferKHR", err);
    }
    return new CommandGraph{r.buffer, q};
  }
  void launch_graph(DeviceGraph graph, Stream stream) override {
    if (!supports_graphs()) return Device::launch_graph(graph, stream);
    const CommandGraph& g = *static_cast<const CommandGraph*>(graph);
    if (g.queue != queue(stream))
      throw std::runtime_error(prefix() + "a command buffer runs on the queue it was recorded for");
    cl_int err = commands_.enqueue(0, nullptr, g.buffer, 0, nullptr, nullptr);
    if (err != CL_SUCCESS)
      throw error("cannot run a command buffer", "clEnqueueCommandBufferKHR", err);
  }
  void destroy_graph(DeviceGraph graph) override {
    if (graph == nullptr || !supports_graphs()) return;
    auto* g = static_cast<CommandGraph*>(graph);
    commands_.release(g->buffer);
    delete g;
  }

  // While queue `q` is recorded: records `kernel` (its arguments as set now) into its command
  // buffer and returns true; false when q is not being recorded.
  bool record_kernel(cl_command_queue q, cl_kernel kernel, const size_t* global,
                     const size_t* local) {
    return record(q, [&](cl_command_buffer_khr b, cl_uint n, const cl_sync_point_khr* w,
                         cl_sync_point_khr* sp) {
      cl_int err = commands_.ndrange(b, nullptr, nullptr, kernel, 3, nullptr, global, local, n, w,
                                     sp, nullptr);
      if (err != CL_SUCCESS) throw std::runtime_error(failed("clCommandNDRangeKernelKHR", err));
    });
  }

  DLDevice dl_device() const override { return DLDevice{kDLOpenCL, ordinal_}; }
  std::string name() const override { return name_; }
  int64_t max_threads_per_block() const override { return max_threads_; }
  int64_t max_shared_memory_per_block() const override { return max_local_; }

  void* alloc(size_t bytes) override {
    cl_int err = CL_SUCCESS;
    // Never a zero-byte buffer (CL_INVALID_BUFFER_SIZE): an empty array still gets a handle.
    cl_mem buffer =
        api_.clCreateBuffer(context_, CL_MEM_READ_WRITE, std::max<size_t>(bytes, 1), nullptr, &err);
    if (err != CL_SUCCESS)
      throw error("cannot allocate " + std::to_string(bytes) + " bytes", "clCreateBuffer", err);
    return buffer;
  }

  void free(void* data) override {
    if (data == nullptr) return;
    // Released by the driver once the kernels already enqueued on it are done.
    cl_int err = api_.clReleaseMemObject(buffer_of(data));
    if (err != CL_SUCCESS) throw error("cannot free device memory", "clReleaseMemObject", err);
  }

  void copy_to_device(void* data, uint64_t offset, const void* src, size_t bytes,
                      Stream stream) override {
    if (bytes == 0) return;
    refuse_while_recording(stream, "a copy from host memory");
    cl_int err = api_.clEnqueueWriteBuffer(queue(stream), buffer_of(data), CL_TRUE, offset, bytes,
                                           src, 0, nullptr, nullptr);
    if (err != CL_SUCCESS) throw error(copy_what("to", bytes, offset), "clEnqueueWriteBuffer", err);
  }

  void copy_from_device(void* dst, const void* data, uint64_t offset, size_t bytes,
                        Stream stream) override {
    if (bytes == 0) return;
    refuse_while_recording(stream, "a copy to host memory");
    cl_int err = api_.clEnqueueReadBuffer(queue(stream), buffer_of(data), CL_TRUE, offset, bytes,
                                          dst, 0, nullptr, nullptr);
    if (err != CL_SUCCESS)
      throw error(copy_what("from", bytes, offset), "clEnqueueReadBuffer", err);
  }

  void synchronize(Stream stream) override {
    refuse_while_recording(stream, "a wait");
    cl_int err = api_.clFinish(queue(stream));
    if (err != CL_SUCCESS) throw error("waiting for its kernels", "clFinish", err);
  }

  Stream create_stream() override {
    cl_int err = CL_SUCCESS;
    cl_command_queue q = api_.clCreateCommandQueue(context_, device_, 0, &err);
    if (err != CL_SUCCESS)
      throw error("cannot create a command queue", "clCreateCommandQueue", err);
    return q;
  }

  void destroy_stream(Stream stream) override {
    if (stream == nullptr) return;
    cl_int err = api_.clReleaseCommandQueue(static_cast<cl_command_queue>(stream));
    if (err != CL_SUCCESS)
      throw error("cannot release a command queue", "clReleaseCommandQueue", err);
  }

  void copy_on_device(void* dst, uint64_t dst_offset, const void* src, uint64_t src_offset,
                      size_t bytes, Stream stream) override {
    if (bytes == 0) return;
    if (record(queue(stream), [&](cl_command_buffer_khr b, cl_uint n, const cl_sync_point_khr* w,
                                  cl_sync_point_khr* sp) {
          cl_int err = commands_.copy(b, nullptr, buffer_of(src), buffer_of(dst), src_offset,
                                      dst_offset, bytes, n, w, sp, nullptr);
          if (err != CL_SUCCESS)
            throw error("recording a copy of " + std::to_string(bytes) + " bytes",
                        "clCommandCopyBufferKHR", err);
        }))
      return;
    cl_int err = api_.clEnqueueCopyBuffer(queue(stream), buffer_of(src), buffer_of(dst), src_offset,
                                          dst_offset, bytes, 0, nullptr, nullptr);
    if (err != CL_SUCCESS)
      throw error("copying " + std::to_string(bytes) + " bytes within device memory",
                  "clEnqueueCopyBuffer", err);
  }

  // OpenCL C only: there is no machine code to try first.
  std::unique_ptr<DeviceModule> load_module(std::string_view code,
                                            std::string_view binary) override;

  std::runtime_error error(const std::string& what, const char* call, cl_int code) const {
    return std::runtime_error(prefix() + what + ": " + failed(call, code));
  }
  std::string prefix() const { return "OpenCL device '" + name_ + "': "; }

  const Api& api() const { return api_; }
  // The queue of `stream`: the device's own for the null stream.
  cl_command_queue queue(Stream stream) const {
    return stream ? static_cast<cl_command_queue>(stream) : queue_;
  }

 private:
  template <typename T>
  T info(cl_device_info what) const {
    T value{};
    cl_int err = api_.clGetDeviceInfo(device_, what, sizeof value, &value, nullptr);
    if (err != CL_SUCCESS)
      throw std::runtime_error(std::string("no OpenCL device: ") + kLibrary + ": " +
                               failed("clGetDeviceInfo", err));
    return value;
  }

  std::string info_string(cl_device_info what) const {
    size_t size = 0;
    cl_int err = api_.clGetDeviceInfo(device_, what, 0, nullptr, &size);
    std::string value(size, '\0');
    if (err == CL_SUCCESS) err = api_.clGetDeviceInfo(device_, what, size, value.data(), nullptr);
    if (err != CL_SUCCESS)
      throw std::runtime_error(std::string("no OpenCL device: ") + kLibrary + ": " +
                               failed("clGetDeviceInfo", err));
    value.resize(value.find('\0') == std::string::npos ? size : value.find('\0'));
    return value;
  }

  // Command buffers where the device has a revision of cl_khr_command_buffer this file speaks.
  void load_command_buffers(cl_platform_id platform) {
    size_t size = 0;
    if (api_.clGetDeviceInfo(device_, kDeviceExtensionsWithVersion, 0, nullptr, &size) !=
        CL_SUCCESS)
      return;  // an OpenCL 1.2 or 2.x device: no versions, so none is trusted
    std::vector<NameVersion> extensions(size / sizeof(NameVersion));
    if (api_.clGetDeviceInfo(device_, kDeviceExtensionsWithVersion, size, extensions.data(),
                             nullptr) != CL_SUCCESS)
      return;
    bool usable = std::any_of(extensions.begin(), extensions.end(), [](const NameVersion& e) {
      // CL_MAKE_VERSION: major 10 bits, minor 10 bits, patch 12 bits.
      cl_uint major = e.version >> 22, minor = (e.version >> 12) & 0x3ff, patch = e.version & 0xfff;
      return std::string(e.name, strnlen(e.name, sizeof e.name)) == "cl_khr_command_buffer" &&
             major == 0 && minor == 9 && patch == 0;
    });
    if (!usable) return;
    CommandBufferApi c;
    auto get = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
          api_.clGetExtensionFunctionAddressForPlatform(platform, name));
      return fn != nullptr;
    };
    if (get(c.create, "clCreateCommandBufferKHR") &&
        get(c.finalize, "clFinalizeCommandBufferKHR") &&
        get(c.release, "clReleaseCommandBufferKHR") &&
        get(c.enqueue, "clEnqueueCommandBufferKHR") &&
        get(c.ndrange, "clCommandNDRangeKernelKHR") && get(c.copy, "clCommandCopyBufferKHR"))
      commands_ = c;
  }

  // Host copies and waits run when issued: on a queue being recorded they would run out of order.
  void refuse_while_recording(Stream stream, const char* what) {
    if (!supports_graphs()) return;
    std::lock_guard<std::mutex> lock(capture_mutex_);
    if (recordings_.count(queue(stream)))
      throw std::runtime_error(prefix() + what + " cannot be recorded in a command buffer");
  }

  // Calls record_one(buffer, waits, wait list, &sync point) when queue q is being recorded, each
  // command waiting for the one recorded before it; returns whether it was.
  template <typename F>
  bool record(cl_command_queue q, F&& record_one) {
    std::lock_guard<std::mutex> lock(capture_mutex_);
    auto it = recordings_.find(q);
    if (it == recordings_.end()) return false;
    Recording& r = it->second;
    cl_sync_point_khr next = 0;
    record_one(r.buffer, r.any ? 1u : 0u, r.any ? &r.last : nullptr, &next);
    r.last = next;
    r.any = true;
    return true;
  }

  static std::string copy_what(const char* direction, size_t bytes, uint64_t offset) {
    return "copying " + std::to_string(bytes) + " bytes " + direction +
           " device memory at offset " + std::to_string(offset);
  }

  Api api_;
  cl_device_id device_ = nullptr;
  int ordinal_ = 0;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  std::string name_;
  int64_t max_threads_ = 0, max_local_ = 0;
  CommandBufferApi commands_;  // all null without usable command buffers
  struct Recording {
    cl_command_buffer_khr buffer;
    cl_sync_point_khr last;  // the last command recorded, which the next waits for
    bool any;
  };
  std::mutex capture_mutex_;  // guards recordings_
  std::unordered_map<cl_command_queue, Recording> recordings_;
};

class OpenCLModule final : public DeviceModule {
 public:
  OpenCLModule(OpenCLDevice& device, cl_program program) : device_(device), program_(program) {}
  ~OpenCLModule() override {
    // Kernels still enqueued keep what they need alive in the driver.
    for (auto& [name, kernel] : kernels_) device_.api().clReleaseKernel(kernel->handle);
    device_.api().clReleaseProgram(program_);
  }

  int32_t launch(const char* name, const AnvilLaunchDims& dims, int32_t nargs,
                 const DLTensor* const* args, Stream stream) override {
    try {
      Kernel& kernel = get_kernel(name);
      // Dynamic local memory would be one more (__local) parameter, which generated kernels do
      // not take: their local arrays are static.
      if (dims.shared_bytes != 0)
        throw std::runtime_error("OpenCL kernels take no dynamic local memory, got " +
                                 std::to_string(dims.shared_bytes) + " shared bytes");
      if (kernel.num_args != 2 * static_cast<cl_uint>(nargs))
        throw std::runtime_error("it takes " + std::to_string(kernel.num_args) +
                                 " parameters (a buffer and its offset per array), got " +
                                 std::to_string(nargs) + (nargs == 1 ? " array" : " arrays"));
      size_t global[3], local[3];
      for (int d = 0; d < 3; ++d) {
        local[d] = dims.block[d];
        global[d] = size_t{dims.grid[d]} * dims.block[d];
      }
      const Api& api = device_.api();
      // A cl_kernel holds its arguments until the next launch sets them: setting them and
      // enqueueing is one step per kernel.
      std::lock_guard<std::mutex> lock(kernel.mutex);
      for (int32_t i = 0; i < nargs; ++i) {
        cl_mem buffer = buffer_of(args[i]->data);
        cl_ulong offset = args[i]->byte_offset;
        cl_int err = api.clSetKernelArg(kernel.handle, 2 * i, sizeof buffer, &buffer);
        if (err == CL_SUCCESS)
          err = api.clSetKernelArg(kernel.handle, 2 * i + 1, sizeof offset, &offset);
        if (err != CL_SUCCESS)
          throw std::runtime_error("argument " + std::to_string(i) + ": " +
                                   failed("clSetKernelArg", err));
      }
      if (device_.record_kernel(device_.queue(stream), kernel.handle, global, local)) return 0;
      cl_int err = api.clEnqueueNDRangeKernel(device_.queue(stream), kernel.handle, 3, nullptr,
                                              global, local, 0, nullptr, nullptr);
      if (err != CL_SUCCESS)
        throw std::runtime_error(failed("clEnqueueNDRangeKernel", err) + " (global " +
                                 std::to_string(global[0]) + "x" + std::to_string(global[1]) + "x" +
                                 std::to_string(global[2]) + ", local " + std::to_string(local[0]) +
                                 "x" + std::to_string(local[1]) + "x" + std::to_string(local[2]) +
                                 ")");
      return 0;
    } catch (const std::exception& e) {
      std::string message = device_.prefix() + "kernel '" + name + "': " + e.what();
      AnvilSetLastError(message.c_str());
      return -1;
    }
  }

 private:
  struct Kernel {
    cl_kernel handle = nullptr;
    cl_uint num_args = 0;
    std::mutex mutex;  // guards the arguments set on handle
  };

  // The kernel `name`, created once.
  Kernel& get_kernel(const char* name) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = kernels_.find(name);
    if (it != kernels_.end()) return *it->second;
    const Api& api = device_.api();
    cl_int err = CL_SUCCESS;
    auto kernel = std::make_unique<Kernel>();
    kernel->handle = api.clCreateKernel(program_, name, &err);
    if (err == CL_INVALID_KERNEL_NAME)
      throw std::runtime_error("the device program has no such kernel");
    if (err != CL_SUCCESS) throw std::runtime_error(failed("clCreateKernel", err));
    err = api.clGetKernelInfo(kernel->handle, CL_KERNEL_NUM_ARGS, sizeof kernel->num_args,
                              &kernel->num_args, nullptr);
    if (err != CL_SUCCESS) {
      api.clReleaseKernel(kernel->handle);
      throw std::runtime_error(failed("clGetKernelInfo", err));
    }
    return *kernels_.emplace(name, std::move(kernel)).first->second;
  }

  OpenCLDevice& device_;
  cl_program program_;
  std::mutex mutex_;  // guards kernels_
  std::unordered_map<std::string, std::unique_ptr<Kernel>> kernels_;
};

std::unique_ptr<DeviceModule> OpenCLDevice::load_module(std::string_view code, std::string_view) {
  const char* source = code.data();
  size_t length = code.size();
  cl_int err = CL_SUCCESS;
  cl_program program = api_.clCreateProgramWithSource(context_, 1, &source, &length, &err);
  if (err != CL_SUCCESS)
    throw error("cannot load the device program", "clCreateProgramWithSource", err);
  err = api_.clBuildProgram(program, 1, &device_, "-cl-std=CL1.2", nullptr, nullptr);
  if (err != CL_SUCCESS) {
    std::string message =
        prefix() + "cannot build the device program: " + failed("clBuildProgram", err);
    size_t size = 0;
    if (api_.clGetProgramBuildInfo(program, device_, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size) ==
            CL_SUCCESS &&
        size > 1) {
      std::string log(size, '\0');
      if (api_.clGetProgramBuildInfo(program, device_, CL_PROGRAM_BUILD_LOG, size, log.data(),
                                     nullptr) == CL_SUCCESS) {
        size_t end = log.find_last_not_of(std::string("\0 \n", 3));  // its NUL and blank tail
        if (end != std::string::npos) message += "\n" + log.substr(0, end + 1);
      }
    }
    api_.clReleaseProgram(program);
    throw std::runtime_error(message);
  }
  return std::make_unique<OpenCLModule>(*this, program);
}

}  // namespace

std::unique_ptr<Device> open_opencl_device(int ordinal) {
  // Kept loaded even when opening fails: the loader may have loaded drivers with threads and exit
  // handlers of their own.
  void* library = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = dlerror();
    throw std::runtime_error(std::string("no OpenCL device: cannot load ") + kLibrary +
                             " (the OpenCL ICD loader): " + (why ? why : "unknown error"));
  }
  auto device = std::make_unique<OpenCLDevice>(load_api(library));
  device->open(ordinal);
  return device;
}

}  // namespace anvil::runtime
