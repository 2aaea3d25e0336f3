// The code generators behind CompiledGraph, one per kind of target: llvm (one LLVM module,
// JIT-compiled in process), c (generated C through the system compiler, loaded from memory) and
// gpu (the CUDA or OpenCL device program with its C host library, loaded only where the device
// is). Each compiles a graph's lowered kernels, points the executor's calls at them, and gives
// the shared library the artifact embeds.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "anvil/ir/function.h"
#include "anvil/runtime/graph_executor.h"
#include "anvil/target/target.h"

namespace anvil::codegen {
class LLVMModule;
}

namespace anvil::graph {

// A graph's kernels after lowering, one per kernel in order: host functions for CPU targets,
// host and device functions (lower_gpu) for GPU ones.
struct LoweredKernels {
  std::vector<ir::LoweredFunc> funcs;
  std::vector<ir::DeviceFunc> device_funcs;
};

class Backend {
 public:
  // Compiles `kernels` with the backend of `target`'s kind. Throws anvil::Error naming what the
  // code generator or the system compiler refused.
  static std::shared_ptr<const Backend> compile(const Target& target,
                                                const LoweredKernels& kernels);
  virtual ~Backend() = default;

  // Points every call of `program` at its compiled kernel and sets the program's keep_alive (and,
  // for a GPU, its device). Returns false, with the reason in `why`, when the kernels cannot run
  // here (a GPU target whose device is missing); throws anvil::Error when they do not load.
  virtual bool load(runtime::GraphProgram& program, std::string* why) const = 0;
  // The kernels as a shared library's bytes (the artifact's first part). `scratch` is a path
  // prefix for temporary files (the artifact's path).
  virtual std::string library(const std::string& scratch) const = 0;
  // The kernels' source: C for CPU targets, CUDA or OpenCL for GPU ones.
  virtual std::string source(const LoweredKernels& kernels) const = 0;
  // For cuda: each device kernel's registers, spills and shared memory as ptxas reported them
  // (codegen::format_cuda_resources); empty for the other targets.
  virtual std::string device_resources() const { return ""; }
  // The LLVM module (target llvm; null for the others, which have none).
  virtual const codegen::LLVMModule* llvm_module() const { return nullptr; }
};

}  // namespace anvil::graph
