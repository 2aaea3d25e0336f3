// Two builds of one model timed against each other in one process: the judge of the in-model
// check (session.h) and of `anvil bench`'s tuned-against-untuned row.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "anvil/runtime/model.h"
#include "anvil/runtime/ndarray.h"

namespace anvil::autotune {

// `copies` loads each of two artifacts, interleaved (a, b, then b, a, ...) so that neither side
// always gets the earlier memory. Where a load's weights and buffers land moves the model's time
// by a few percent for the life of that load (measured: four loads of one ResNet-18 artifact in
// one process ran at 19.3 to 20.3 ms, each the same in both halves of the run), so two builds are
// compared over several loads of each. The loads coexist, so each has memory of its own. Throws
// runtime::ArtifactError naming the file that does not load.
std::pair<std::vector<runtime::Model>, std::vector<runtime::Model>> load_copies(
    const std::string& a, const std::string& b, int copies);

struct AbOptions {
  int runs = 50;                       // timed runs per side, at least (whole blocks)
  int block = 10;                      // runs per block
  int warmup = 5;                      // untimed runs of every load first
  std::function<void()> before_block;  // e.g. waiting for idle cores; may be empty
};

// Milliseconds of every timed run of each side.
struct AbTimes {
  std::vector<double> a_ms, b_ms;
};

// Times loads `a` and `b` (as many of each, at least one) on `inputs` in alternating blocks at
// the current thread count. Which side goes first alternates too (ABBA): whatever the first block
// after a pause pays (the other build's weights in the caches, clocks ramping up) falls on both
// equally; each round takes the next load of each.
AbTimes time_ab(const std::vector<runtime::Model>& a, const std::vector<runtime::Model>& b,
                const std::vector<runtime::NDArray>& inputs, const AbOptions& options);

// An input of type `t` filled per `mode`: "zeros", "ones", or "random" (floats uniform in
// [-1, 1), integers in [0, 10), from a fixed seed, so every process draws the same). Throws
// std::invalid_argument for another mode, or a dtype other than float32/64 and int32/64.
runtime::NDArray filled_input(const runtime::TensorInfo& t, const std::string& mode,
                              uint32_t seed = 0);

// The median (the mean of the two middle values for an even count); infinity for none.
double median(std::vector<double> values);

// Calls `run` `n` times one by one, appending each call's wall time in ms.
void time_calls(int n, const std::function<void()>& run, std::vector<double>* ms);

// Times `n` calls of `model` one by one, appending each in ms.
void time_runs(const runtime::Model& model, const std::vector<runtime::NDArray>& inputs, int n,
               std::vector<double>* ms);

}  // namespace anvil::autotune
