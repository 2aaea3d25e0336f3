// anvil::lower: from a schedule to a lowered function, the whole pipeline in one function
// (lower.cc) that reads top to bottom.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "anvil/ir/function.h"
#include "anvil/target/target.h"
#include "anvil/te/schedule.h"

namespace anvil {

struct LowerOptions {
  // Print the IR after these passes ("all" for every one) to `dump_to`. Pass names are those in
  // lower.cc: loops, flatten, simplify, double_buffer, partition, vectorize, unroll,
  // hoist_guards, storage, no_op.
  std::vector<std::string> print_after;
  std::ostream* dump_to = nullptr;  // std::cerr when null
  // When set, lowering stops after this pass (a name above; "simplify" is its first run) and
  // returns the function as it stands then: the tuner's features read the loop nest before
  // vectorize and unroll replace the annotated loops. Empty: the whole pipeline.
  std::string stop_after;
};

// The function `name(args...)` computing the schedule's outputs. `args` lists every tensor the
// function reads or writes (placeholders and outputs), in call order. Throws anvil::Error when a
// tensor the schedule reads is not among the arguments, naming it, or when `stop_after` names no
// pass.
ir::LoweredFunc lower(const te::Schedule& schedule, const std::vector<te::Tensor>& args,
                      const std::string& name, const LowerOptions& options = {});

// For a GPU target: lower(), then the function split into its host part and its kernels, each
// kernel's threads synchronized on shared memory (transform/split_host_device.h; its errors name
// what cannot run on the GPU). Prints "split" after the split with print_after.
ir::DeviceFunc lower_gpu(const te::Schedule& schedule, const std::vector<te::Tensor>& args,
                         const std::string& name, const Target& target,
                         const LowerOptions& options = {});

}  // namespace anvil
