// NVRTC, the CUDA runtime compiler: CUDA C++ source to PTX. NVRTC is opened with dlopen on first
// use, so that libanvil builds and runs without the CUDA toolkit; only compiling for a CUDA
// target needs it.
//
// The library is $ANVIL_NVRTC (a full path) when that is set, and nothing else: an explicit choice
// that fails is an error, never replaced by another NVRTC. Otherwise it is the first of
// nvrtc_candidates() that opens. It is opened once per process; a failure is remembered and
// reported by every later call.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace anvil::codegen {

// One kernel's resources as ptxas reported them for the real architecture.
struct CudaKernelResources {
  std::string name;
  int registers = 0;  // per thread
  int64_t shared_bytes = 0, stack_frame_bytes = 0, spill_store_bytes = 0, spill_load_bytes = 0;
};

// A CUDA program compiled for one real architecture: its PTX (the driver compiles it for any
// later GPU), the machine code for `arch` (cubin; empty when this NVRTC cannot give it) and the
// kernels' resources.
struct CudaBinary {
  std::string arch;
  std::string ptx, cubin;
  std::vector<CudaKernelResources> kernels;
};

// Compiles CUDA C++ `source` (named `name` in NVRTC's messages) for `arch` ("sm_90", "sm_80",
// "sm_90a", ...). Options: C++17, functions are __device__ unless marked otherwise
// (-default-device), fused multiply-add allowed, no fast math (IEEE division and square root,
// denormals kept), ptxas verbose (the resources). NVRTC provides no standard headers: the source
// must declare what it uses. Safe to call from several threads at once.
// Throws anvil::Error when NVRTC is not found (naming the libraries and directories tried), when
// `arch` is not of the form sm_<number>[suffix] or NVRTC refuses it, and when compilation fails
// (with NVRTC's full log, whose lines read "name(line): error: ...").
CudaBinary compile_cuda(const std::string& source, const std::string& name,
                        const std::string& arch);
// compile_cuda(...).ptx.
std::string compile_cuda_to_ptx(const std::string& source, const std::string& name,
                                const std::string& arch);

// The kernels of ptxas's verbose log ("Compiling entry function 'k' for 'sm_90'", then its
// stack frame and spills, and "Used N registers, ... M bytes smem"), in the log's order.
std::vector<CudaKernelResources> parse_ptxas_info(const std::string& log);
// A table of `kernels` for a build's summary: a header line (how many, the most registers, how
// many spill), then one line per kernel. Empty for no kernels.
std::string format_cuda_resources(const std::vector<CudaKernelResources>& kernels,
                                  const std::string& arch);

// Where NVRTC is looked for, in order, when $ANVIL_NVRTC is not set: libnvrtc.so,
// libnvrtc.so.13, libnvrtc.so.12 and libnvrtc.so.11.2 by name (the loader's search path), then
// the same names in each of nvrtc_search_dirs().
std::vector<std::string> nvrtc_candidates();
// $CUDA_HOME/lib64, /usr/local/cuda/lib64, /usr/local/cuda/targets/x86_64-linux/lib, then the
// NVIDIA wheels' library directories (nvidia/cu13/lib, nvidia/cuda_nvrtc/lib, nvidia/cu12/lib)
// that exist in the site-packages of $ANVIL_BENCH_PYTHON (else python3), as that Python reports
// them.
std::vector<std::string> nvrtc_search_dirs();

// Whether NVRTC can be opened here; when not, *why (if given) says why, as compile_cuda_to_ptx
// would.
bool nvrtc_available(std::string* why = nullptr);

// NVRTC's version, "13.0", and the library opened (as passed to dlopen); both throw anvil::Error
// as compile_cuda does when it is not found.
std::string nvrtc_version();
std::string nvrtc_path();

}  // namespace anvil::codegen
