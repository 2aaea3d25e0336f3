// The process-wide devices and the C entry points GPU host functions call (AnvilDeviceLaunch, the
// device workspace). The drivers themselves are in cuda_device.cc and opencl_device.cc.
#include "anvil/runtime/device_api.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>

#include "anvil/runtime/ndarray.h"

namespace anvil::runtime {

// Defined in cuda_device.cc and opencl_device.cc: open device `ordinal` of their driver or throw
// std::runtime_error saying why not.
std::unique_ptr<Device> open_cuda_device(int ordinal);
std::unique_ptr<Device> open_opencl_device(int ordinal);

namespace {

std::string device_name(int32_t type) {
  DLDevice device{kDLCPU, 0};
  std::memcpy(&device.device_type, &type, sizeof type);
  std::string name = to_string(device);
  return name.substr(0, name.rfind(':'));
}

// One device of one type: opened once, by the first get(); a failure is kept and rethrown, so
// that a missing driver is looked for once and every caller reads the same message.
struct Slot {
  std::once_flag once;
  std::atomic<int> ordinal{0};
  std::atomic<bool> opened{false};
  Device* device = nullptr;
  Device* for_testing = nullptr;
  std::string error;
};

Slot& slot_of(DLDeviceType type) {
  static Slot cuda, opencl;
  switch (type) {
    case kDLCUDA:
      return cuda;
    case kDLOpenCL:
      return opencl;
    default:
      throw DeviceUnavailable("no GPU device layer for device type " + device_name(type) +
                              ": Anvil runs device kernels on cuda and opencl");
  }
}

}  // namespace

Device& Device::get(DLDeviceType type) {
  Slot& slot = slot_of(type);
  if (slot.for_testing) return *slot.for_testing;
  std::call_once(slot.once, [&] {
    slot.opened = true;
    try {
      // Never destroyed: a Module held in a static may unload its program during exit, after
      // any static device would be gone, and the drivers tear their contexts down themselves.
      const int ordinal = slot.ordinal;
      slot.device =
          (type == kDLCUDA ? open_cuda_device(ordinal) : open_opencl_device(ordinal)).release();
    } catch (const std::exception& e) {
      slot.error = e.what();
    }
  });
  if (slot.device == nullptr) throw DeviceUnavailable(slot.error);
  return *slot.device;
}

void Device::select(DLDeviceType type, int ordinal) {
  if (ordinal < 0)
    throw std::invalid_argument("device " + std::to_string(ordinal) + ": no such device number");
  Slot& slot = slot_of(type);
  if (slot.opened && slot.ordinal != ordinal)
    throw std::logic_error(device_name(type) + " device " + std::to_string(ordinal) +
                           " chosen after device " + std::to_string(slot.ordinal) +
                           " was opened: choose it before the first model is loaded");
  slot.ordinal = ordinal;
}

int Device::selected(DLDeviceType type) {
  return slot_of(type).ordinal;
}

void Device::set_for_testing(DLDeviceType type, Device* device) {
  slot_of(type).for_testing = device;
}

void Device::reset_for_testing(DLDeviceType type) {
  slot_of(type).for_testing = nullptr;
}

void* Device::alloc_host(size_t bytes) {
  void* p = std::aligned_alloc(64, (std::max<size_t>(bytes, 1) + 63) / 64 * 64);
  if (p == nullptr)
    throw std::runtime_error(name() + ": cannot allocate " + std::to_string(bytes) +
                             " bytes of host memory");
  return p;
}
void Device::free_host(void* data) {
  std::free(data);
}

void Device::begin_capture(Stream) {
  throw std::runtime_error(name() + ": this device has no graphs");
}
DeviceGraph Device::end_capture(Stream) {
  throw std::runtime_error(name() + ": this device has no graphs");
}
void Device::launch_graph(DeviceGraph, Stream) {
  throw std::runtime_error(name() + ": this device has no graphs");
}
void Device::destroy_graph(DeviceGraph) {}

bool Device::available(DLDeviceType type, std::string* why) {
  try {
    get(type);
    return true;
  } catch (const std::runtime_error& e) {
    if (why) *why = e.what();
    return false;
  }
}

DeviceArrays::DeviceArrays(Device& device, const std::vector<const NDArray*>& arrays)
    : device_(&device) {
  views_.reserve(arrays.size());
  for (const NDArray* a : arrays) {
    buffers_.emplace_back(device, std::max<size_t>(a->nbytes(), 1));
    if (a->nbytes() > 0) device.copy_to_device(buffers_.back().data(), 0, a->data(), a->nbytes());
    DLTensor t = *a->get();
    t.data = buffers_.back().data();
    t.device = device.dl_device();
    t.byte_offset = 0;
    views_.push_back(t);
  }
  for (const DLTensor& t : views_) args_.push_back(&t);
}

void DeviceArrays::read(size_t i, NDArray& into) const {
  if (into.nbytes() > 0)
    device_->copy_from_device(into.data(), buffers_.at(i).data(), 0, into.nbytes());
}

WorkspacePool::~WorkspacePool() {
  for (const auto& [data, bytes] : sizes_) {
    (void)bytes;
    try {
      device_->free(data);
    } catch (...) {
    }
  }
}

void* WorkspacePool::alloc(size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_.lower_bound(bytes);
    if (it != free_.end() && it->first <= 2 * std::max<size_t>(bytes, 1)) {
      void* data = it->second;
      free_.erase(it);
      return data;
    }
  }
  void* data = device_->alloc(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  sizes_[data] = bytes;
  return data;
}

void WorkspacePool::release(void* data) {
  if (data == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = sizes_.find(data);
  if (it == sizes_.end())
    throw std::runtime_error("device workspace: a buffer the pool did not hand out was released");
  free_.emplace(it->second, data);
}

size_t WorkspacePool::held_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t total = 0;
  for (const auto& [data, bytes] : sizes_) {
    (void)data;
    total += bytes;
  }
  return total;
}

}  // namespace anvil::runtime

namespace {

using anvil::runtime::DeviceContext;

int32_t fail(const std::string& message) {
  AnvilSetLastError(message.c_str());
  return -1;
}

bool usable(const DeviceContext* context) {
  return context != nullptr && context->device != nullptr && context->module != nullptr;
}

// The error of a host function given no usable context (the message begins with `what`). A NULL
// context means the caller ran a GPU kernel as a CPU one: a library compiled for a GPU target,
// called without its Module's context.
int32_t no_context(const std::string& what, const DeviceContext* context) {
  return fail(what + ": no GPU device context (" +
              (context ? "ctx has no device program" : "ctx is NULL") +
              "): the kernel was compiled for a GPU target and must be run with its module's "
              "device context (Module::context())");
}

}  // namespace

extern "C" {

int32_t AnvilDeviceLaunch(void* ctx, const char* name, const AnvilLaunchDims* dims, int32_t nargs,
                          const DLTensor* const* args) {
  // Messages are built on failure only: this runs once per kernel of every call.
  auto kernel = [&] { return "kernel '" + std::string(name ? name : "<unnamed>") + "'"; };
  auto* context = static_cast<DeviceContext*>(ctx);
  if (!usable(context)) return no_context(kernel(), context);
  if (name == nullptr) return fail("device launch: the kernel name is NULL");
  if (dims == nullptr) return fail(kernel() + ": the launch dimensions are NULL");
  if (nargs < 0) return fail(kernel() + ": negative argument count " + std::to_string(nargs));
  if (nargs > 0 && args == nullptr) return fail(kernel() + ": the argument array is NULL");
  // The host entry has checked its own arguments; these guard its temporaries and a hand-made
  // launch, since a host pointer or another device's handle would reach the driver as garbage.
  DLDevice device = context->device->dl_device();
  for (int32_t i = 0; i < nargs; ++i) {
    const DLTensor* t = args[i];
    if (t == nullptr) return fail(kernel() + ": argument " + std::to_string(i) + " is NULL");
    if (anvil::runtime::device_type_code(t->device) != anvil::runtime::device_type_code(device) ||
        t->device.device_id != device.device_id)
      return fail(kernel() + ": argument " + std::to_string(i) + " is on " +
                  anvil::runtime::to_string(t->device) + ", the kernel runs on " +
                  anvil::runtime::to_string(device));
  }
  for (int d = 0; d < 3; ++d) {
    if (dims->block[d] == 0)
      return fail(kernel() + ": block extent " + std::to_string(d) + " is 0");
  }
  // An empty grid (a tensor with no elements) has nothing to do; drivers reject it.
  if (dims->grid[0] == 0 || dims->grid[1] == 0 || dims->grid[2] == 0) return 0;
  try {
    return context->module->launch(name, *dims, nargs, args, context->stream);
  } catch (const std::exception& e) {
    return fail(kernel() + ": " + e.what());
  }
}

void* AnvilDeviceWorkspaceAlloc(void* ctx, uint64_t nbytes) {
  auto* context = static_cast<DeviceContext*>(ctx);
  if (!usable(context)) {
    no_context("device workspace", context);
    return nullptr;
  }
  try {
    if (context->workspaces) return context->workspaces->alloc(nbytes);
    return context->device->alloc(nbytes);
  } catch (const std::exception& e) {
    fail(std::string("device workspace: ") + e.what());
    return nullptr;
  }
}

void AnvilDeviceWorkspaceFree(void* ctx, void* data) {
  if (data == nullptr) return;
  auto* context = static_cast<DeviceContext*>(ctx);
  if (!usable(context)) {
    no_context("device workspace", context);
    return;
  }
  try {
    if (context->workspaces) {
      context->workspaces->release(data);
    } else {
      context->device->free(data);
    }
  } catch (const std::exception& e) {
    fail(std::string("device workspace: ") + e.what());
  }
}

}  // extern "C"
