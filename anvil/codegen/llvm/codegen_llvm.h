// LLVM code generation for the CPU (x86-64 with host feature detection, aarch64 by
// cross-compilation). Compiles lowered functions to machine code, either in process (ORC JIT) or
// into an object file / shared library that runtime::Module loads.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "anvil/ir/function.h"
#include "anvil/runtime/c_runtime_api.h"
#include "anvil/target/target.h"

namespace anvil::codegen {

class LLVMModule {
 public:
  // Generates, optimizes (O3) and JIT-compiles `funcs` for `target`. Each function becomes a
  // kernel with the ABI of anvil/runtime/c_runtime_api.h. Throws anvil::Error naming the
  // function and the node it cannot compile.
  static std::unique_ptr<LLVMModule> compile(const std::vector<ir::LoweredFunc>& funcs,
                                             const Target& target);
  virtual ~LLVMModule() = default;

  // The JIT-compiled kernel; throws anvil::Error when there is no function of that name.
  virtual AnvilKernel get_function(const std::string& name) = 0;
  // The optimized LLVM IR of the whole module, or of one function.
  virtual std::string llvm_ir(const std::string& function = "") const = 0;
  // The target assembly of the whole module.
  virtual std::string assembly() const = 0;
  // An object file, and a shared library linked from it with the system compiler driver (it
  // also defines `anvil_module_version`, so runtime::Module::load accepts it).
  virtual void save_object(const std::string& path) const = 0;
  virtual void save_shared_library(const std::string& path) const = 0;
};

}  // namespace anvil::codegen
