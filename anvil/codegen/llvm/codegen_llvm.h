// LLVM code generation for the CPU (x86-64 with host feature detection, aarch64 by
// cross-compilation). Compiles lowered functions to machine code, either in process (ORC JIT) or
// into an object file / shared library that runtime::Module loads.
//
// What the generated code promises:
// - Arguments are checked (count, rank, shape, dtype, alignment) before any memory is touched;
//   a failure returns -1 with the runtime's message. Symbolic extents bind from the first
//   argument shape that names them.
// - Argument buffers never alias one another (each is its own alias scope) and are 64-byte
//   aligned; a kernel must not be passed the same tensor twice.
// - Floating point may be contracted, reassociated and use approximate functions (contract,
//   reassoc, afn); NaN and infinities propagate (no nnan, ninf). Min and Max return NaN when
//   either operand is NaN. round() takes halfway cases to even.
// - float32 exp, tanh, sigmoid and erf are inline polynomial approximations that vectorize:
//   exp within 1 ulp (denormal results included), the others within 2e-7 absolute.
// - Parallel loops run through AnvilParallelFor; large or symbolic allocations come from
//   AnvilWorkspaceAlloc and are freed on every exit.
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
  // Generates and optimizes (O3) `funcs` for `target`; the first get_function JIT-compiles the
  // module, so one that is only saved never pays for it. Each function becomes a kernel with the
  // ABI of anvil/runtime/c_runtime_api.h. Throws anvil::Error naming the function and the node it
  // cannot compile. A target of another architecture compiles without a JIT: its module emits
  // IR, assembly and objects, and get_function throws.
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

// The CPU `target` (an llvm or c target for a CPU) compiles for, as LLVM names it ("znver4" for
// the host, the -mcpu given, "generic" for another architecture without one; a host CPU this LLVM
// does not know by its brand and CPUID identity), and the extensions
// that CPU and -mattr enable among those the runtime can check (runtime/host_cpu.h; none for
// another architecture), sorted: what the code may use, which the artifact records so that a CPU
// without them refuses it.
struct TargetCpu {
  std::string name;
  std::vector<std::string> features;
};
TargetCpu target_cpu(const Target& target);

}  // namespace anvil::codegen
