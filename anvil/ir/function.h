// A lowered function: what code generation consumes. Its arguments are buffers passed as
// DLTensor pointers (the kernel ABI in anvil/runtime/c_runtime_api.h); its body is loop-level IR
// after storage flattening, so every Load and Store indexes a one-dimensional buffer.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
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

// A GPU kernel split from a lowered function (transform::split_host_device): grid x block
// threads each run `body`, which reads its thread indices as the variables of `thread_vars`.
struct DeviceKernel {
  std::string name;
  // The global buffers it reads or writes (flattened, as the body uses them), in the order of
  // the function's arguments, then its temporaries.
  std::vector<Buffer> params;
  std::vector<std::pair<Var, std::string>> thread_vars;  // variable, "blockIdx.x" / "threadIdx.y"
  std::array<int64_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  int64_t shared_bytes = 0;  // static shared memory its allocations take
  Stmt body;
};

// A lowered function for a GPU target: its entry checks the arguments as a LoweredFunc's does
// (device tensors), allocates the temporaries in device memory and launches the kernels in
// order.
struct DeviceFunc {
  std::string name;
  std::vector<Buffer> args;   // as LoweredFunc::args
  std::vector<Buffer> temps;  // flattened, constant sizes; live for the whole call
  std::vector<DeviceKernel> kernels;
};

}  // namespace anvil::ir
