// C code generation: the same lowered functions as portable C99, compiled by the system C
// compiler into a shared library. It is the second opinion whenever the LLVM path is in doubt,
// and the route to micro-controllers later.
#pragma once

#include <string>
#include <vector>

#include "anvil/ir/function.h"
#include "anvil/runtime/module.h"

namespace anvil::codegen {

// The C source of a module holding `funcs` (kernel ABI of anvil/runtime/c_runtime_api.h).
std::string generate_c(const std::vector<ir::LoweredFunc>& funcs);

// Writes the source next to `library_path` (same name, .c), compiles it with `cc -O3 -shared
// -fPIC -march=native` (the C compiler from $CC when set), and loads the library. Throws
// anvil::Error with the compiler's output when compilation fails.
runtime::Module build_c(const std::vector<ir::LoweredFunc>& funcs, const std::string& library_path);

}  // namespace anvil::codegen
