// Code generation for GPU targets (`cuda`, `opencl`): device kernels in CUDA C++ (compiled to
// PTX by NVRTC) or OpenCL C (built by the OpenCL driver when the library is loaded), and a host
// library whose entries have the kernel ABI of anvil/runtime/c_runtime_api.h: each checks its
// arguments as device tensors, allocates its temporaries in device memory and launches its
// kernels through its `ctx` (a runtime::DeviceContext). The device program is embedded in the
// host library (anvil_device_type, anvil_device_code), which runtime::Module loads onto the
// device.
#pragma once

#include <string>
#include <vector>

#include "anvil/ir/function.h"
#include "anvil/runtime/module.h"
#include "anvil/target/target.h"

namespace anvil::codegen {

// The kernels of `funcs` as one CUDA C++ or OpenCL C program. Throws anvil::Error naming the
// kernel and the node it cannot express.
std::string generate_cuda(const std::vector<ir::DeviceFunc>& funcs);
std::string generate_opencl(const std::vector<ir::DeviceFunc>& funcs);

// What the host library embeds for `target`: for cuda, the PTX and the machine code for
// target.arch (NVRTC; the runtime loads the machine code where the GPU is of that architecture,
// else the PTX) and ptxas's report of each kernel's registers, spills and shared memory
// (format_cuda_resources); for opencl, the OpenCL C source.
struct DeviceProgram {
  std::string code;       // PTX or OpenCL C
  std::string binary;     // cubin for target.arch; empty for opencl
  std::string resources;  // empty for opencl
};
DeviceProgram device_program(const std::vector<ir::DeviceFunc>& funcs, const Target& target);

// The host library's C source, embedding `program` (anvil_device_code and, when there is one,
// anvil_device_binary).
std::string generate_gpu_host(const std::vector<ir::DeviceFunc>& funcs, const Target& target,
                              const DeviceProgram& program);

// Generates, compiles (NVRTC for CUDA, the system C compiler for the host) and loads the library
// at `library_path`; loading builds the device program on the device, so it needs one (the
// runtime's error says which is missing). save_gpu_library stops before loading.
runtime::Module build_gpu(const std::vector<ir::DeviceFunc>& funcs, const Target& target,
                          const std::string& library_path);
// save_gpu_library sets *resources (if given) to DeviceProgram::resources.
void save_gpu_library(const std::vector<ir::DeviceFunc>& funcs, const Target& target,
                      const std::string& library_path, std::string* resources = nullptr);

}  // namespace anvil::codegen
