// Module: a shared library of compiled kernels, loaded with dlopen. Errors name the file and
// the symbol: a missing file, a library that is not an Anvil module (it lacks the
// `anvil_module_version` symbol every generated library exports), a missing kernel.
//
// A library compiled for a GPU target also carries its device program: it defines
// `const int32_t anvil_device_type` (kDLCUDA or kDLOpenCL), `const char anvil_device_code[]` (PTX
// or OpenCL C) and `const uint64_t anvil_device_code_size` (its length in bytes). Loading such a
// library loads the program on that device (Device::get), and its kernels are called with
// context() as their `ctx`.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "anvil/runtime/c_runtime_api.h"

namespace anvil::runtime {

// Every library Anvil generates defines `const int32_t anvil_module_version` with this value.
constexpr int32_t kModuleVersion = 1;

class Module {
 public:
  // Throws std::runtime_error with dlerror()'s text and the path when loading fails.
  static Module load(const std::string& path);
  // Loads a library from its bytes (an in-memory file, open while the module lives), so that
  // what runs is exactly what the caller checked, and a library saved later to the same path is
  // never confused with this one (dlopen reuses a loaded library of the same name). `origin`
  // names it in errors.
  static Module load_from_memory(std::string_view bytes, const std::string& origin);

  // The kernel `name`; throws std::runtime_error naming the module and the kernel when absent.
  AnvilKernel get_function(const std::string& name) const;
  bool has_function(const std::string& name) const;
  const std::string& path() const;
  // The `ctx` its kernels take: an anvil::runtime::DeviceContext* for a library with a device
  // program, nullptr for a CPU library. Valid while any copy of this Module lives.
  void* context() const;
  // The DLDeviceType its kernels' arrays live on: kDLCPU for a CPU library.
  int32_t device_type() const;

 private:
  struct State;
  // dlopens `file` into `state` (named state->path in errors), checks the module version and
  // loads the device program, if any.
  static Module open(std::shared_ptr<State> state, const std::string& file);
  std::shared_ptr<State> state_;
};

}  // namespace anvil::runtime
