// A tuning task: one tunable operator instance (op, input types, attributes) for one target, the
// unit that tuning records are keyed by; and the tasks of a model.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "anvil/graph/build.h"
#include "anvil/ir/function.h"
#include "anvil/lower/lower.h"
#include "anvil/ops/op.h"
#include "anvil/target/target.h"

namespace anvil::autotune {

struct Task {
  std::string op;
  std::vector<ops::TensorType> inputs;
  ops::Attrs attrs;
  std::string target;  // Target::str()
  // What is chosen: "" the kernel's schedule (OpDef::space); "algorithm" the algorithm the layout
  // pass gives a conv2d (ops::conv2d_algorithm_space), judged only inside the model.
  std::string choice = {};

  // The record's "task" object: {"op", "shapes", "dtype" (of the first input), "attrs"}, and
  // "choice" when there is one.
  nlohmann::json to_json() const;
  // One string per task (the JSON above with sorted keys, a space, the target): equal keys,
  // equal tasks.
  std::string key() const;
  // "conv2d_nchwc [1, 4, 56, 56, 16] x [4, 4, 3, 3, 16, 16]" ("... (algorithm)" for a choice).
  std::string str() const;
  // The operator's knobs for these inputs (empty: nothing to tune), or the choice's.
  ops::ConfigSpace space() const;

  // The task a record's "task" object and target describe. Throws anvil::Error naming the field
  // that is missing or malformed.
  static Task from_json(const nlohmann::json& task, const std::string& target);
};

// The key of a record's "task" object and target, as Task::key makes it.
std::string task_key(const nlohmann::json& task, const std::string& target);

// The candidate of `config` for `task`: placeholders for its inputs, the op's compute and its
// schedule for `target` (schedule_for) with `config`, lowered (with `options`) as the function
// "candidate". `out_types`, when given, receives the output types. Throws anvil::Error when the op
// refuses the inputs or the configuration.
ir::LoweredFunc lower_candidate(const Task& task, const Target& target, const ops::Config& config,
                                std::vector<ops::TensorType>* out_types = nullptr,
                                const LowerOptions& options = {});
// The same for a GPU target: the op's GPU schedule, split into host and device (lower_gpu).
ir::DeviceFunc lower_candidate_gpu(const Task& task, const Target& target,
                                   const ops::Config& config,
                                   std::vector<ops::TensorType>* out_types = nullptr);

// A task of a model, with how much of the model it is.
struct ModelTask {
  Task task;
  int count = 0;                     // kernels that are this task
  double flops = 0;                  // their FLOPs together
  double share = 0;                  // of the model's FLOPs
  std::vector<std::string> kernels;  // their names (fused_3_conv2d_nchwc, ...)
};

// The distinct tunable tasks of `g` as CompiledGraph::build would compile it for `target`: the
// kernels graph::plan_kernels plans (the build's own), each tunable one's scheduling node with its
// input types and attributes, named and counted as the build names them; largest share first.
std::vector<ModelTask> extract_tasks(const graph::Graph& g, const Target& target,
                                     const graph::BuildOptions& options);

// The conv2d nodes of `g` whose algorithm the layout pass chooses for `target` (a non-empty
// ops::conv2d_algorithm_space), as tasks with choice "algorithm", each with the count and share of
// the model's FLOPs of its nodes (counted as direct convolutions); largest share first. Empty
// with options.alter_layout off. `options.algorithm_for`, when given, is still applied (a task's
// count does not depend on it).
std::vector<ModelTask> extract_algorithm_tasks(const graph::Graph& g, const Target& target,
                                               const graph::BuildOptions& options);

// The number of points of `space` (the product of its knobs' value counts; 1 when empty).
int64_t space_size(const ops::ConfigSpace& space);
// Point `index` of `space` (0 <= index < space_size): mixed radix, the first knob fastest.
// Point 0 is the default rule's configuration.
ops::Config config_at(const ops::ConfigSpace& space, int64_t index);
// The index of `config` in `space`, or -1 when a knob is unknown or a value is not one of its
// knob's values (knobs `config` does not name take their default).
int64_t index_of(const ops::ConfigSpace& space, const ops::Config& config);

}  // namespace anvil::autotune
