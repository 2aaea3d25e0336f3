#include "anvil/codegen/cuda/nvrtc.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cctype>
#include <cstddef>
#include <cstdlib>
#include <iterator>
#include <string>
#include <type_traits>
#include <vector>

#include "anvil/support/error.h"

namespace anvil::codegen {
namespace {

// NVRTC's C API, declared here rather than included: the toolkit's nvrtc.h need not exist where
// libanvil is built. These signatures have been stable since CUDA 11.2.
using nvrtcResult = int;
struct NvrtcProgramImpl;
using nvrtcProgram = NvrtcProgramImpl*;
constexpr nvrtcResult kNvrtcSuccess = 0;
constexpr nvrtcResult kNvrtcInvalidOption = 5;

struct Nvrtc {
  std::string path;   // the library opened, as passed to dlopen
  std::string error;  // why no library could be opened; empty once one is
  std::string version;

  nvrtcResult (*CreateProgram)(nvrtcProgram*, const char*, const char*, int, const char* const*,
                               const char* const*) = nullptr;
  nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char* const*) = nullptr;
  nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*GetProgramLog)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*GetPTXSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*GetPTX)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*DestroyProgram)(nvrtcProgram*) = nullptr;
  const char* (*GetErrorString)(nvrtcResult) = nullptr;
  nvrtcResult (*Version)(int*, int*) = nullptr;
  // Optional (CUDA 11.2 and later): only used to list the architectures in an error.
  nvrtcResult (*GetNumSupportedArchs)(int*) = nullptr;
  nvrtcResult (*GetSupportedArchs)(int*) = nullptr;

  std::string error_string(nvrtcResult r) const {
    const char* s = GetErrorString(r);
    return str(s ? s : "unknown NVRTC error", " (", r, ")");
  }
};

const char* dl_error() {
  const char* e = dlerror();
  return e ? e : "unknown error";
}

// Opens `file` and resolves every required symbol into `lib`. Returns false with *why set when
// the file cannot be loaded or is not NVRTC.
bool try_open(const std::string& file, Nvrtc& lib, std::string* why) {
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    *why = dl_error();
    return false;
  }
  std::string missing;
  auto resolve = [&](auto& fn, const char* symbol, bool required = true) {
    dlerror();
    void* p = dlsym(handle, symbol);
    if (p == nullptr && required) missing += str(missing.empty() ? "" : ", ", symbol);
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
  };
  resolve(lib.CreateProgram, "nvrtcCreateProgram");
  resolve(lib.CompileProgram, "nvrtcCompileProgram");
  resolve(lib.GetProgramLogSize, "nvrtcGetProgramLogSize");
  resolve(lib.GetProgramLog, "nvrtcGetProgramLog");
  resolve(lib.GetPTXSize, "nvrtcGetPTXSize");
  resolve(lib.GetPTX, "nvrtcGetPTX");
  resolve(lib.DestroyProgram, "nvrtcDestroyProgram");
  resolve(lib.GetErrorString, "nvrtcGetErrorString");
  resolve(lib.Version, "nvrtcVersion");
  resolve(lib.GetNumSupportedArchs, "nvrtcGetNumSupportedArchs", false);
  resolve(lib.GetSupportedArchs, "nvrtcGetSupportedArchs", false);
  int major = 0, minor = 0;
  if (missing.empty() && lib.Version(&major, &minor) != kNvrtcSuccess)
    missing = "a working nvrtcVersion";
  if (!missing.empty()) {
    // Not NVRTC, or too old: never used, so not kept open.
    dlclose(handle);
    lib = Nvrtc{};
    *why = str("loaded, but it lacks ", missing);
    return false;
  }
  lib.path = file;
  lib.version = str(major, ".", minor);
  // The handle stays open for the life of the process: the function pointers point into it.
  return true;
}

Nvrtc open_nvrtc() {
  Nvrtc lib;
  std::vector<std::string> failures;  // informative failures only, not "no such file"

  // An explicit choice is never silently replaced by another NVRTC.
  if (const char* env = std::getenv("ANVIL_NVRTC"); env != nullptr && *env != '\0') {
    std::string why;
    if (!try_open(env, lib, &why))
      lib.error = str("NVRTC (libnvrtc, the CUDA runtime compiler) could not be opened from ",
                      "ANVIL_NVRTC=", env, ": ", why,
                      ". Set ANVIL_NVRTC to the full path of libnvrtc.so (part of the CUDA "
                      "toolkit), or unset it to search the usual places");
    return lib;
  }

  const std::vector<std::string> names = {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12",
                                          "libnvrtc.so.11.2"};
  for (const std::string& name : names) {
    std::string why;
    if (try_open(name, lib, &why)) return lib;
    // dlopen by name says only "cannot open shared object file" when the name is not found.
    if (why.find("cannot open shared object file") == std::string::npos)
      failures.push_back(str(name, ": ", why));
  }

  std::vector<std::string> dirs;
  if (const char* home = std::getenv("CUDA_HOME"); home != nullptr && *home != '\0')
    dirs.push_back(str(home, "/lib64"));
  for (const char* dir : {"/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib"})
    if (dirs.empty() || dirs.front() != dir) dirs.emplace_back(dir);
  for (const std::string& dir : dirs) {
    for (const std::string& name : names) {
      std::string file = str(dir, "/", name);
      if (::access(file.c_str(), F_OK) != 0) continue;
      std::string why;
      if (try_open(file, lib, &why)) return lib;
      failures.push_back(str(file, ": ", why));
    }
  }

  std::string names_list, dirs_list;
  for (const std::string& name : names) names_list += str(names_list.empty() ? "" : ", ", name);
  for (const std::string& dir : dirs) dirs_list += str(dirs_list.empty() ? "" : ", ", dir);
  lib.error = str("NVRTC (libnvrtc, the CUDA runtime compiler) was not found: tried ", names_list,
                  " by name (the loader's search path), then in ", dirs_list,
                  ". NVRTC is part of the CUDA toolkit: install it, or set ANVIL_NVRTC to the "
                  "full path of libnvrtc.so");
  for (const std::string& f : failures) lib.error += str("\n  ", f);
  return lib;
}

// The process's NVRTC, opened on first use (thread-safe: a function-local static).
const Nvrtc& nvrtc() {
  static const Nvrtc lib = open_nvrtc();
  return lib;
}

const Nvrtc& nvrtc_or_throw() {
  const Nvrtc& lib = nvrtc();
  if (!lib.error.empty()) ANVIL_FAIL(lib.error);
  return lib;
}

// "compute_90" for "sm_90" (and "compute_90a" for "sm_90a"); empty when `arch` is not
// sm_<digits> with an optional lower-case suffix.
std::string virtual_arch(const std::string& arch) {
  if (arch.rfind("sm_", 0) != 0) return "";
  size_t i = 3;
  while (i < arch.size() && std::isdigit(static_cast<unsigned char>(arch[i]))) ++i;
  if (i == 3) return "";
  while (i < arch.size() && std::islower(static_cast<unsigned char>(arch[i]))) ++i;
  if (i != arch.size()) return "";
  return "compute_" + arch.substr(3);
}

// "; it supports sm_75, sm_80, ..." when this NVRTC can say so.
std::string supported_archs(const Nvrtc& lib) {
  int n = 0;
  if (!lib.GetNumSupportedArchs || !lib.GetSupportedArchs ||
      lib.GetNumSupportedArchs(&n) != kNvrtcSuccess || n <= 0)
    return "";
  std::vector<int> archs(static_cast<size_t>(n));
  if (lib.GetSupportedArchs(archs.data()) != kNvrtcSuccess) return "";
  std::string list;
  for (int a : archs) list += str(list.empty() ? "" : ", ", "sm_", a);
  return str("; it supports ", list);
}

// Destroys the program on every path out of compile_cuda_to_ptx.
struct ProgramGuard {
  const Nvrtc& lib;
  nvrtcProgram program = nullptr;
  ~ProgramGuard() {
    if (program) lib.DestroyProgram(&program);
  }
};

}  // namespace

std::string compile_cuda_to_ptx(const std::string& source, const std::string& name,
                                const std::string& arch) {
  std::string compute = virtual_arch(arch);
  ANVIL_CHECK(!compute.empty(), "CUDA compilation of '", name, "': unknown architecture '", arch,
              "' (expected sm_<number>, such as sm_80 or sm_90)");
  const Nvrtc& lib = nvrtc_or_throw();

  ProgramGuard guard{lib};
  nvrtcResult r =
      lib.CreateProgram(&guard.program, source.c_str(), name.c_str(), 0, nullptr, nullptr);
  ANVIL_CHECK(r == kNvrtcSuccess, "CUDA compilation of '", name,
              "': nvrtcCreateProgram failed: ", lib.error_string(r));

  // No fast math: the code generator decides on floating point itself; only contraction to FMA
  // is allowed, as in the CPU backends.
  const std::string arch_option = "--gpu-architecture=" + compute;
  const char* options[] = {arch_option.c_str(), "-default-device", "--std=c++17", "--fmad=true"};
  nvrtcResult compiled =
      lib.CompileProgram(guard.program, static_cast<int>(std::size(options)), options);

  std::string log;
  size_t log_size = 0;
  if (lib.GetProgramLogSize(guard.program, &log_size) == kNvrtcSuccess && log_size > 1) {
    log.resize(log_size);
    if (lib.GetProgramLog(guard.program, log.data()) != kNvrtcSuccess) log.clear();
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  }

  if (compiled == kNvrtcInvalidOption)
    ANVIL_FAIL("CUDA compilation of '", name, "': NVRTC ", lib.version, " refuses architecture '",
               arch, "' (", arch_option, ")", supported_archs(lib), log.empty() ? "" : ":\n", log);
  ANVIL_CHECK(compiled == kNvrtcSuccess, "CUDA compilation of '", name, "' for ", arch,
              " failed (NVRTC ", lib.version, ", ", lib.error_string(compiled), ")",
              log.empty() ? "" : ":\n", log);

  size_t ptx_size = 0;
  r = lib.GetPTXSize(guard.program, &ptx_size);
  ANVIL_CHECK(r == kNvrtcSuccess, "CUDA compilation of '", name,
              "': nvrtcGetPTXSize failed: ", lib.error_string(r));
  std::string ptx(ptx_size, '\0');
  r = lib.GetPTX(guard.program, ptx.data());
  ANVIL_CHECK(r == kNvrtcSuccess, "CUDA compilation of '", name,
              "': nvrtcGetPTX failed: ", lib.error_string(r));
  // The size counts the terminating NUL.
  while (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
  return ptx;
}

bool nvrtc_available(std::string* why) {
  const Nvrtc& lib = nvrtc();
  if (why) *why = lib.error;
  return lib.error.empty();
}

std::string nvrtc_version() {
  return nvrtc_or_throw().version;
}

}  // namespace anvil::codegen
