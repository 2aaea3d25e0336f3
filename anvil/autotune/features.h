// Features of one configuration of a task for the cost model: statistics of the candidate's loop
// nest as lowered just before vectorization and unrolling turn its loop annotations into code,
// together with the knob values. Every vector has kNumFeatures entries whatever the operator, so
// that one model can learn from (and transfer between) tasks of different operators.
#pragma once

#include <string>
#include <vector>

#include "anvil/autotune/task.h"
#include "anvil/ir/stmt.h"

namespace anvil::autotune {

// The layout of a feature vector (features.cc documents each entry).
constexpr int kNumFeatures = 64;
// The name of entry i ("buf0.bytes_l1", "knob3", ...), for dumps and tests.
std::string feature_name(int i);

// The features of `config` (a point of task.space()). Throws anvil::Error naming the task when
// the candidate cannot be scheduled or lowered.
std::vector<float> extract_features(const Task& task, const ops::Config& config);

// The same from a lowered body (as lowering stands after its first simplify, loop kinds intact)
// and the configuration's knobs: what extract_features computes once it has lowered the candidate.
std::vector<float> loop_nest_features(const ir::Stmt& body, const ops::ConfigSpace& space,
                                      const ops::Config& config);

}  // namespace anvil::autotune
