// A lowered function: what code generation consumes. Its arguments are buffers passed as
// DLTensor pointers (the kernel ABI in anvil/runtime/c_runtime_api.h); its body is loop-level IR
// after storage flattening, so every Load and Store indexes a one-dimensional buffer.
#pragma once

#include <string>
#include <vector>

#include "anvil/ir/stmt.h"

namespace anvil::ir {

struct LoweredFunc {
  std::string name;
  // The arguments in call order, with their logical (multi-dimensional) shapes: the generated
  // entry checks each DLTensor against these. A shape entry that is a Variable binds that
  // variable from the tensor's shape (the first occurrence binds, later ones are checked).
  std::vector<Buffer> args;
  // The flattened body. Loads and stores of argument i use a one-dimensional buffer whose `data`
  // variable is args[i]->data, so code generation maps it to that tensor's data pointer.
  Stmt body;
};

}  // namespace anvil::ir
