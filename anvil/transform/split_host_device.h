// Splits a lowered function for a GPU target into what the host does (check the arguments,
// allocate temporaries, launch) and the kernels the device runs.
//
// Every loop nest at the top level must be bound to GPU threads at its outermost loop: each such
// nest becomes one kernel. A top-level statement of little work (at most 65,536 loop iterations:
// a scalar, a short loop) that no loop binds becomes a kernel of one thread. Inside a kernel, every
// loop bound to an index becomes that index (the kernel's variable for it), guarded when its extent
// is smaller than the launch's: the launch takes, per index, the largest extent bound to it. So
// loops of different stages bound to the same index share it, as cooperative fetching wants.
#pragma once

#include "anvil/ir/function.h"
#include "anvil/target/target.h"

namespace anvil::transform {

// Throws anvil::Error naming the function, the kernel and the loop or buffer for what cannot
// run on `target` (a GPU target): a top-level loop not bound to GPU threads over more than that, a
// thread extent that is not constant, more threads per block or more shared memory than the target
// allows, a parallel loop inside a kernel, shared memory outside any kernel, a variable a kernel
// cannot know (a symbolic shape).
ir::DeviceFunc split_host_device(const ir::LoweredFunc& f, const Target& target);

// Inserts barriers into a kernel's body where threads of a block would otherwise race on shared
// memory: before a statement that reads what an earlier one wrote (or writes what an earlier one
// read) since the last barrier, and at the top of a loop whose iterations do so in turn. Throws
// anvil::Error naming the kernel and the buffer when such a barrier would have to sit in code
// that only some threads of the block run.
ir::Stmt insert_barriers(const ir::DeviceKernel& kernel);

}  // namespace anvil::transform
