#include "anvil/codegen/cuda/nvrtc.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdio>
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
  // Optional (CUDA 11.1 and later): the machine code for a real architecture.
  nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*GetCUBIN)(nvrtcProgram, char*) = nullptr;
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

// The names NVRTC is looked for by, newest first (nvrtc_candidates).
const char* const kNvrtcNames[] = {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12",
                                   "libnvrtc.so.11.2"};

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
  resolve(lib.GetCUBINSize, "nvrtcGetCUBINSize", false);
  resolve(lib.GetCUBIN, "nvrtcGetCUBIN", false);
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

// The site-packages directories of `python` (one per line of its answer), or none when it does
// not run.
std::vector<std::string> site_packages(const std::string& python) {
  // The interpreter's path single-quoted for the shell (a quote inside it closed and escaped).
  std::string quoted = "'";
  for (char ch : python) quoted += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  quoted += "'";
  std::string command = quoted +
                        " -c 'import site, sys; print(\"\\n\".join(site.getsitepackages() + "
                        "[site.getusersitepackages()] + sys.path))' 2>/dev/null";
  std::vector<std::string> dirs;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return dirs;
  std::string output;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, n);
  if (::pclose(pipe) != 0) return {};
  size_t begin = 0;
  while (begin < output.size()) {
    size_t end = output.find('\n', begin);
    if (end == std::string::npos) end = output.size();
    std::string dir = output.substr(begin, end - begin);
    if (!dir.empty() && dir.find("site-packages") != std::string::npos &&
        std::find(dirs.begin(), dirs.end(), dir) == dirs.end())
      dirs.push_back(dir);
    begin = end + 1;
  }
  return dirs;
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

  // By name first; the directories only when that fails (finding the wheels starts a Python).
  auto try_candidate = [&](const std::string& candidate) {
    bool by_name = candidate.find('/') == std::string::npos;
    if (!by_name && ::access(candidate.c_str(), F_OK) != 0) return false;
    std::string why;
    if (try_open(candidate, lib, &why)) return true;
    // dlopen by name says only "cannot open shared object file" when the name is not found.
    if (!by_name || why.find("cannot open shared object file") == std::string::npos)
      failures.push_back(str(candidate, ": ", why));
    return false;
  };
  for (const char* name : kNvrtcNames)
    if (try_candidate(name)) return lib;
  const std::vector<std::string> dirs = nvrtc_search_dirs();
  for (const std::string& dir : dirs)
    for (const char* name : kNvrtcNames)
      if (try_candidate(str(dir, "/", name))) return lib;

  std::string dirs_list;
  for (const std::string& dir : dirs) dirs_list += str(dirs_list.empty() ? "" : ", ", dir);
  lib.error = str("NVRTC (libnvrtc, the CUDA runtime compiler) was not found: tried libnvrtc.so, ",
                  "libnvrtc.so.13, libnvrtc.so.12 and libnvrtc.so.11.2 by name (the loader's ",
                  "search path), then in ", dirs_list.empty() ? "no directory" : dirs_list,
                  ". NVRTC is part of the CUDA toolkit and of the nvidia-cuda-nvrtc Python wheel: ",
                  "install one, or set ANVIL_NVRTC to the full path of libnvrtc.so");
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

// Destroys the program on every path out of compile_cuda.
struct ProgramGuard {
  const Nvrtc& lib;
  nvrtcProgram program = nullptr;
  ~ProgramGuard() {
    if (program) lib.DestroyProgram(&program);
  }
};

}  // namespace

std::vector<std::string> nvrtc_search_dirs() {
  std::vector<std::string> dirs;
  auto add = [&](const std::string& dir) {
    if (std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) dirs.push_back(dir);
  };
  if (const char* home = std::getenv("CUDA_HOME"); home != nullptr && *home != '\0')
    add(str(home, "/lib64"));
  add("/usr/local/cuda/lib64");
  add("/usr/local/cuda/targets/x86_64-linux/lib");
  // The wheels PyTorch installs with pip: nvidia/cu13/lib (CUDA 13), nvidia/cuda_nvrtc/lib
  // (CUDA 12), in the site-packages of the Python the bench uses, else python3's.
  const char* bench_python = std::getenv("ANVIL_BENCH_PYTHON");
  std::string python = bench_python && *bench_python ? bench_python : "python3";
  for (const std::string& site : site_packages(python)) {
    for (const char* sub : {"/nvidia/cu13/lib", "/nvidia/cuda_nvrtc/lib", "/nvidia/cu12/lib"}) {
      std::string dir = site + sub;
      if (::access(dir.c_str(), F_OK) == 0) add(dir);
    }
  }
  return dirs;
}

std::vector<std::string> nvrtc_candidates() {
  std::vector<std::string> candidates(std::begin(kNvrtcNames), std::end(kNvrtcNames));
  for (const std::string& dir : nvrtc_search_dirs())
    for (const char* name : kNvrtcNames) candidates.push_back(str(dir, "/", name));
  return candidates;
}

std::vector<CudaKernelResources> parse_ptxas_info(const std::string& log) {
  std::vector<CudaKernelResources> kernels;
  auto number_before = [](const std::string& line, const std::string& unit) -> int64_t {
    size_t at = line.find(unit);
    if (at == std::string::npos || at == 0) return -1;
    size_t end = at;
    while (end > 0 && line[end - 1] == ' ') --end;
    size_t begin = end;
    while (begin > 0 && std::isdigit(static_cast<unsigned char>(line[begin - 1]))) --begin;
    if (begin == end) return -1;
    return std::stoll(line.substr(begin, end - begin));
  };
  size_t begin = 0;
  while (begin < log.size()) {
    size_t end = log.find('\n', begin);
    if (end == std::string::npos) end = log.size();
    std::string line = log.substr(begin, end - begin);
    begin = end + 1;
    const std::string entry = "Compiling entry function '";
    if (size_t at = line.find(entry); at != std::string::npos) {
      size_t name_begin = at + entry.size();
      size_t name_end = line.find('\'', name_begin);
      if (name_end == std::string::npos) continue;
      kernels.push_back(CudaKernelResources{line.substr(name_begin, name_end - name_begin)});
      continue;
    }
    if (kernels.empty()) continue;
    CudaKernelResources& k = kernels.back();
    if (line.find("stack frame") != std::string::npos) {
      k.stack_frame_bytes = std::max<int64_t>(0, number_before(line, "bytes stack frame"));
      k.spill_store_bytes = std::max<int64_t>(0, number_before(line, "bytes spill stores"));
      k.spill_load_bytes = std::max<int64_t>(0, number_before(line, "bytes spill loads"));
    } else if (line.find("Used ") != std::string::npos &&
               line.find("registers") != std::string::npos) {
      k.registers = static_cast<int>(std::max<int64_t>(0, number_before(line, "registers")));
      k.shared_bytes = std::max<int64_t>(0, number_before(line, "bytes smem"));
    }
  }
  return kernels;
}

CudaBinary compile_cuda(const std::string& source, const std::string& name,
                        const std::string& arch) {
  ANVIL_CHECK(!virtual_arch(arch).empty(), "CUDA compilation of '", name,
              "': unknown architecture '", arch,
              "' (expected sm_<number>, such as sm_80 or sm_90)");
  const Nvrtc& lib = nvrtc_or_throw();

  ProgramGuard guard{lib};
  nvrtcResult r =
      lib.CreateProgram(&guard.program, source.c_str(), name.c_str(), 0, nullptr, nullptr);
  ANVIL_CHECK(r == kNvrtcSuccess, "CUDA compilation of '", name,
              "': nvrtcCreateProgram failed: ", lib.error_string(r));

  // For the real architecture: NVRTC then gives the PTX and the machine code, and ptxas reports
  // each kernel's registers, spills and shared memory (-v). No fast math: the code generator
  // decides on floating point itself; only contraction to FMA is allowed, as in the CPU backends.
  const std::string arch_option = "--gpu-architecture=" + arch;
  const char* options[] = {arch_option.c_str(), "-default-device", "--std=c++17", "--fmad=true",
                           "--ptxas-options=-v"};
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

  CudaBinary binary;
  binary.arch = arch;
  size_t ptx_size = 0;
  r = lib.GetPTXSize(guard.program, &ptx_size);
  ANVIL_CHECK(r == kNvrtcSuccess, "CUDA compilation of '", name,
              "': nvrtcGetPTXSize failed: ", lib.error_string(r));
  binary.ptx.assign(ptx_size, '\0');
  r = lib.GetPTX(guard.program, binary.ptx.data());
  ANVIL_CHECK(r == kNvrtcSuccess, "CUDA compilation of '", name,
              "': nvrtcGetPTX failed: ", lib.error_string(r));
  // The size counts the terminating NUL.
  while (!binary.ptx.empty() && binary.ptx.back() == '\0') binary.ptx.pop_back();

  size_t cubin_size = 0;
  if (lib.GetCUBINSize && lib.GetCUBIN &&
      lib.GetCUBINSize(guard.program, &cubin_size) == kNvrtcSuccess && cubin_size > 0) {
    binary.cubin.assign(cubin_size, '\0');
    if (lib.GetCUBIN(guard.program, binary.cubin.data()) != kNvrtcSuccess) binary.cubin.clear();
  }
  binary.kernels = parse_ptxas_info(log);
  return binary;
}

std::string compile_cuda_to_ptx(const std::string& source, const std::string& name,
                                const std::string& arch) {
  return compile_cuda(source, name, arch).ptx;
}

std::string nvrtc_path() {
  return nvrtc_or_throw().path;
}

std::string format_cuda_resources(const std::vector<CudaKernelResources>& kernels,
                                  const std::string& arch) {
  if (kernels.empty()) return "";
  int max_registers = 0;
  int64_t spilled = 0;
  for (const CudaKernelResources& k : kernels) {
    max_registers = std::max(max_registers, k.registers);
    if (k.spill_store_bytes > 0 || k.spill_load_bytes > 0) ++spilled;
  }
  std::string out =
      str("device code for ", arch, " (ptxas): ", kernels.size(), " kernels, at most ",
          max_registers, " registers, ", spilled, " with spills\n");
  for (const CudaKernelResources& k : kernels) {
    out += str("  ", k.name, ": ", k.registers, " registers, ", k.shared_bytes, " B shared");
    if (k.spill_store_bytes > 0 || k.spill_load_bytes > 0)
      out += str(", spills ", k.spill_store_bytes, " B stored / ", k.spill_load_bytes, " B loaded");
    if (k.stack_frame_bytes > 0) out += str(", ", k.stack_frame_bytes, " B stack");
    out += "\n";
  }
  return out;
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
