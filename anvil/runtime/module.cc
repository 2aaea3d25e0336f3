#include "anvil/runtime/module.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <stdexcept>

#include "anvil/runtime/c_runtime_api.h"
#include "anvil/runtime/device_api.h"

namespace anvil::runtime {

struct Module::State {
  std::string path;
  void* handle = nullptr;
  int fd = -1;  // load_from_memory's file: open while loaded, so its name is never reused
  int32_t device_type = kDLCPU;
  std::unique_ptr<DeviceModule> device_module;  // the library's device program, if any
  DeviceContext context;                        // what its kernels get as ctx
  ~State() {
    device_module.reset();  // the program first, then the library that carried it
    if (handle) dlclose(handle);
    if (fd >= 0) ::close(fd);
  }
};

namespace {

const char* dl_error() {
  const char* e = dlerror();
  return e ? e : "unknown error";
}

}  // namespace

Module Module::load(const std::string& path) {
  // Without a slash dlopen searches the library path instead of opening the file named.
  std::string file = path.find('/') == std::string::npos ? "./" + path : path;
  auto state = std::make_shared<State>();
  state->path = path;
  return open(std::move(state), file);
}

Module Module::load_from_memory(std::string_view bytes, const std::string& origin) {
  auto state = std::make_shared<State>();
  state->path = origin;
  state->fd = ::memfd_create("anvil-module", MFD_CLOEXEC);
  if (state->fd < 0)
    throw std::runtime_error("cannot load Anvil module '" + origin +
                             "': memfd_create failed: " + std::strerror(errno));
  for (size_t done = 0; done < bytes.size();) {
    ssize_t n = ::write(state->fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw std::runtime_error("cannot load Anvil module '" + origin +
                               "': writing its code to memory failed: " + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  std::string file = "/proc/self/fd/" + std::to_string(state->fd);
  return open(std::move(state), file);
}

namespace {

// A library's kernels call the runtime (AnvilCheckTensor, AnvilParallelFor) by name: the runtime's
// symbols must be global in the process. They are in a program linked against it; a host that
// loads it itself as a local library (Python loads the package's native module, and so the
// runtime, with RTLD_LOCAL) needs it reopened as global, once.
void make_runtime_global() {
  static const bool done = [] {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&AnvilGetLastError), &info) == 0 || !info.dli_fname)
      return false;
    return dlopen(info.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD) != nullptr;
  }();
  (void)done;
}

}  // namespace

Module Module::open(std::shared_ptr<State> state, const std::string& file) {
  const std::string& path = state->path;
  make_runtime_global();
  state->handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (state->handle == nullptr)
    throw std::runtime_error("cannot load Anvil module '" + path + "': " + dl_error());

  dlerror();
  const void* version = dlsym(state->handle, "anvil_module_version");
  if (version == nullptr)
    throw std::runtime_error("'" + path +
                             "' is not an Anvil module: it does not define anvil_module_version");
  int32_t v = *static_cast<const int32_t*>(version);
  if (v != kModuleVersion)
    throw std::runtime_error("'" + path + "' is an Anvil module of version " + std::to_string(v) +
                             ", expected " + std::to_string(kModuleVersion) +
                             " (rebuild it with this Anvil)");

  // A GPU library's device program (module.h), loaded now so that a missing device or a program
  // the driver rejects is an error of the load, naming the library.
  const void* device_type = dlsym(state->handle, "anvil_device_type");
  if (device_type != nullptr) {
    const void* code = dlsym(state->handle, "anvil_device_code");
    const void* size = dlsym(state->handle, "anvil_device_code_size");
    if (code == nullptr || size == nullptr)
      throw std::runtime_error("cannot load Anvil module '" + path +
                               "': it defines anvil_device_type but not anvil_device_code and "
                               "anvil_device_code_size");
    int32_t type = *static_cast<const int32_t*>(device_type);
    if (type != kDLCUDA && type != kDLOpenCL)
      throw std::runtime_error("cannot load Anvil module '" + path +
                               "': its device program is for device type " + std::to_string(type) +
                               ", expected cuda (" + std::to_string(kDLCUDA) + ") or opencl (" +
                               std::to_string(kDLOpenCL) + ")");
    try {
      Device& device = Device::get(static_cast<DLDeviceType>(type));
      std::string_view program(static_cast<const char*>(code), *static_cast<const uint64_t*>(size));
      // Machine code for one GPU, when the library carries it (CUDA: a cubin beside the PTX).
      std::string_view binary;
      const void* binary_code = dlsym(state->handle, "anvil_device_binary");
      const void* binary_size = dlsym(state->handle, "anvil_device_binary_size");
      if (binary_code != nullptr && binary_size != nullptr)
        binary = std::string_view(static_cast<const char*>(binary_code),
                                  *static_cast<const uint64_t*>(binary_size));
      state->device_module = device.load_module(program, binary);
      state->context = DeviceContext{&device, state->device_module.get()};
      state->device_type = type;
    } catch (const std::runtime_error& e) {
      std::string what = "cannot load Anvil module '" + path + "': its " +
                         (type == kDLCUDA ? "cuda" : "opencl") + " device program: " + e.what();
      if (dynamic_cast<const DeviceUnavailable*>(&e)) throw DeviceUnavailable(what);
      throw std::runtime_error(what);
    }
  }

  Module module;
  module.state_ = std::move(state);
  return module;
}

bool Module::has_function(const std::string& name) const {
  if (!state_) throw std::logic_error("Module::has_function('" + name + "'): no module is loaded");
  dlerror();
  return dlsym(state_->handle, name.c_str()) != nullptr;
}

AnvilKernel Module::get_function(const std::string& name) const {
  if (!state_) throw std::logic_error("Module::get_function('" + name + "'): no module is loaded");
  dlerror();
  void* symbol = dlsym(state_->handle, name.c_str());
  if (symbol == nullptr)
    throw std::runtime_error("Anvil module '" + state_->path + "' has no kernel '" + name + "'");
  return reinterpret_cast<AnvilKernel>(symbol);
}

const std::string& Module::path() const {
  if (!state_) throw std::logic_error("Module::path: no module is loaded");
  return state_->path;
}

void* Module::context() const {
  if (!state_) throw std::logic_error("Module::context: no module is loaded");
  return state_->device_module ? &state_->context : nullptr;
}

int32_t Module::device_type() const {
  if (!state_) throw std::logic_error("Module::device_type: no module is loaded");
  return state_->device_type;
}

}  // namespace anvil::runtime
