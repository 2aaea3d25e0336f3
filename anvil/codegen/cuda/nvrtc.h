// NVRTC, the CUDA runtime compiler: CUDA C++ source to PTX. NVRTC is opened with dlopen on first
// use, so that libanvil builds and runs without the CUDA toolkit; only compiling for a CUDA
// target needs it.
//
// The library is $ANVIL_NVRTC (a full path) when that is set, and nothing else: an explicit choice
// that fails is an error, never replaced by another NVRTC. Otherwise it is searched for as
// libnvrtc.so, libnvrtc.so.13, libnvrtc.so.12 and libnvrtc.so.11.2 by name (the loader's search
// path), then the same names in $CUDA_HOME/lib64, /usr/local/cuda/lib64 and
// /usr/local/cuda/targets/x86_64-linux/lib. It is opened once per process; a failure is
// remembered and reported by every later call.
#pragma once

#include <string>

namespace anvil::codegen {

// PTX for `arch` ("sm_90", "sm_80", "sm_90a", ...) from CUDA C++ `source`, which is named `name`
// in NVRTC's messages. The PTX is for the virtual architecture (compute_90 for sm_90): the driver
// compiles it for the device when the module is loaded. Options: C++17, functions are __device__
// unless marked otherwise (-default-device), fused multiply-add allowed, no fast math (IEEE
// division and square root, denormals kept). NVRTC provides no standard headers: the source must
// declare what it uses. Safe to call from several threads at once.
// Throws anvil::Error when NVRTC is not found (naming the libraries and directories tried), when
// `arch` is not of the form sm_<number>[suffix] or NVRTC refuses it, and when compilation fails
// (with NVRTC's full log, whose lines read "name(line): error: ...").
std::string compile_cuda_to_ptx(const std::string& source, const std::string& name,
                                const std::string& arch);

// Whether NVRTC can be opened here; when not, *why (if given) says why, as compile_cuda_to_ptx
// would.
bool nvrtc_available(std::string* why = nullptr);

// NVRTC's version, "13.0"; throws anvil::Error as compile_cuda_to_ptx does when it is not found.
std::string nvrtc_version();

}  // namespace anvil::codegen
