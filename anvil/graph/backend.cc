// The code generators behind CompiledGraph (backend.h).
#include "anvil/graph/backend.h"

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "anvil/codegen/c/codegen_c.h"
#include "anvil/codegen/gpu/codegen_gpu.h"
#include "anvil/codegen/llvm/codegen_llvm.h"
#include "anvil/runtime/device_api.h"
#include "anvil/runtime/module.h"
#include "anvil/support/error.h"

namespace anvil::graph {

namespace {

namespace fs = std::filesystem;

std::string read_bytes(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  ANVIL_CHECK(f, "cannot read '", path.string(), "'");
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Runs `write` (which compiles a library to the path it is given) in a temporary directory and
// returns the library's bytes (the artifact embeds them; Module::load_from_memory loads them).
template <typename F>
std::string compile_library(F&& write) {
  static std::atomic<int> counter{0};
  fs::path dir = fs::temp_directory_path() /
                 ("anvil-c-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  fs::create_directories(dir);
  std::string bytes;
  try {
    write((dir / "kernels.so").string());
    bytes = read_bytes(dir / "kernels.so");
  } catch (...) {
    std::error_code ignored;
    fs::remove_all(dir, ignored);
    throw;
  }
  std::error_code ignored;
  fs::remove_all(dir, ignored);
  ANVIL_CHECK(!bytes.empty(), "build: the C compiler produced an empty library");
  return bytes;
}

// Loads a library's bytes and points every call at its function.
std::shared_ptr<runtime::Module> load_library(const std::string& bytes, const std::string& origin,
                                              runtime::GraphProgram& program) {
  try {
    auto module =
        std::make_shared<runtime::Module>(runtime::Module::load_from_memory(bytes, origin));
    runtime::bind_kernels(program, [&](const std::string& k) { return module->get_function(k); });
    program.keep_alive = module;
    return module;
  } catch (const std::runtime_error& e) {
    ANVIL_FAIL("build: ", e.what());
  }
}

// Target llvm: one module, JIT-compiled on the first get_function (a module only saved never
// pays for it), linked into a shared library when saved.
class LLVMBackend final : public Backend {
 public:
  LLVMBackend(const Target& target, const LoweredKernels& kernels)
      : module_(codegen::LLVMModule::compile(kernels.funcs, target)) {}

  bool load(runtime::GraphProgram& program, std::string*) const override {
    runtime::bind_kernels(program, [&](const std::string& k) { return module_->get_function(k); });
    program.keep_alive = module_;
    return true;
  }
  std::string library(const std::string& scratch) const override {
    static std::atomic<int> counter{0};
    fs::path tmp = scratch;
    tmp += ".lib" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    std::string bytes;
    try {
      module_->save_shared_library(tmp.string());
      bytes = read_bytes(tmp);
    } catch (...) {
      std::error_code ignored;
      fs::remove(tmp, ignored);
      throw;
    }
    fs::remove(tmp);
    return bytes;
  }
  std::string source(const LoweredKernels& kernels) const override {
    return codegen::generate_c(kernels.funcs);
  }
  const codegen::LLVMModule* llvm_module() const override { return module_.get(); }

 private:
  std::shared_ptr<codegen::LLVMModule> module_;
};

// Target c: the generated C compiled by the system compiler into a library kept as bytes.
class CBackend final : public Backend {
 public:
  CBackend(const Target& target, const LoweredKernels& kernels)
      : library_(compile_library([&](const std::string& path) {
          codegen::build_c(kernels.funcs, path, codegen::c_cpu_flags(target));
        })) {}

  bool load(runtime::GraphProgram& program, std::string*) const override {
    load_library(library_, "the C kernels", program);
    return true;
  }
  std::string library(const std::string&) const override { return library_; }
  std::string source(const LoweredKernels& kernels) const override {
    return codegen::generate_c(kernels.funcs);
  }

 private:
  std::string library_;
};

// Targets cuda and opencl: the device program and its C host library, compiled without a device
// (saving needs none); loading builds the device program, so only where the device is.
class GpuBackend final : public Backend {
 public:
  GpuBackend(const Target& target, const LoweredKernels& kernels)
      : target_(target), library_(compile_library([&](const std::string& path) {
          codegen::save_gpu_library(kernels.device_funcs, target, path, &resources_);
        })) {}

  bool load(runtime::GraphProgram& program, std::string* why) const override {
    DLDeviceType type = target_.kind == Target::Kind::kCUDA ? kDLCUDA : kDLOpenCL;
    if (!runtime::Device::available(type, why)) return false;
    std::shared_ptr<runtime::Module> module = load_library(library_, "the GPU kernels", program);
    try {
      runtime::attach_device(program, *module);
    } catch (const std::runtime_error& e) {
      ANVIL_FAIL("build: ", e.what());
    }
    return true;
  }
  std::string library(const std::string&) const override { return library_; }
  std::string source(const LoweredKernels& kernels) const override {
    return target_.kind == Target::Kind::kCUDA ? codegen::generate_cuda(kernels.device_funcs)
                                               : codegen::generate_opencl(kernels.device_funcs);
  }
  std::string device_resources() const override { return resources_; }

 private:
  Target target_;
  std::string resources_;  // set while library_ is compiled: declared first
  std::string library_;
};

}  // namespace

std::shared_ptr<const Backend> Backend::compile(const Target& target,
                                                const LoweredKernels& kernels) {
  if (target.is_gpu()) return std::make_shared<GpuBackend>(target, kernels);
  if (target.kind == Target::Kind::kC) return std::make_shared<CBackend>(target, kernels);
  return std::make_shared<LLVMBackend>(target, kernels);
}

}  // namespace anvil::graph
