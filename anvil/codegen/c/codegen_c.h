// C code generation: the same lowered functions as portable C99, compiled by the system C
// compiler into a shared library. It is the second opinion whenever the LLVM path is in doubt,
// and the route to micro-controllers later.
//
// The source includes only <math.h>, <stddef.h> and <stdint.h>, declares DLPack's tensor and the
// runtime functions it calls, and uses two GNU extensions (visibility and alignment
// attributes). Vectors are scalarized: each vector store or vector let becomes a short loop over
// its lanes, which the C compiler vectorizes again. Parallel loops become static functions called
// through AnvilParallelFor with a struct of what they capture. Argument data pointers are
// `restrict`: a kernel's arguments must not overlap.
#pragma once

#include <string>
#include <vector>

#include "anvil/ir/function.h"
#include "anvil/runtime/module.h"
#include "anvil/target/target.h"

namespace anvil::codegen {

// The C source of a module holding `funcs` (kernel ABI of anvil/runtime/c_runtime_api.h).
// Throws anvil::Error naming the kernel and the node for what C code generation cannot express
// (float16/bfloat16, GPU thread bindings and barriers, unflattened accesses, Reduce nodes,
// unbound variables, kernel names C cannot use).
std::string generate_c(const std::vector<ir::LoweredFunc>& funcs);

// The C compiler's flags for the CPU of `target` (a c target): -march=native for the host,
// -march=NAME for -mcpu=NAME, and -mFEATURE / -mno-FEATURE for each of -mattr's +FEATURE /
// -FEATURE. Throws anvil::Error for -mtriple: the system compiler builds for this machine only.
std::string c_cpu_flags(const Target& target);

// The C compiler the builds run: $CC when set (it may carry flags), else the first of cc, gcc
// and clang on PATH.
std::string c_compiler();

// Writes the source next to `library_path` (same name, .c), compiles it with
// `CC -O3 -std=c99 -shared -fPIC CPU_FLAGS -fno-math-errno -ffp-contract=fast` (CC: c_compiler()),
// and loads the library. Throws anvil::Error with the source path and the compiler's output when
// compilation fails, and when loading fails.
runtime::Module build_c(const std::vector<ir::LoweredFunc>& funcs, const std::string& library_path,
                        const std::string& cpu_flags = "-march=native");
// As build_c, for C source generated elsewhere (a GPU target's host code); compile_c_library
// stops before loading.
runtime::Module build_c_source(const std::string& source, const std::string& library_path);
void compile_c_library(const std::string& source, const std::string& library_path,
                       const std::string& cpu_flags = "-march=native");

}  // namespace anvil::codegen
