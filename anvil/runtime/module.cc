#include "anvil/runtime/module.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <stdexcept>

namespace anvil::runtime {

struct Module::State {
  std::string path;
  void* handle = nullptr;
  int fd = -1;  // load_from_memory's file: open while loaded, so its name is never reused
  ~State() {
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

Module Module::open(std::shared_ptr<State> state, const std::string& file) {
  const std::string& path = state->path;
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

}  // namespace anvil::runtime
