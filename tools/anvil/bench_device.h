// Anvil's side of `anvil bench` on a GPU: the model run on device arrays (Model::run_device), as
// the baselines' timed runs keep their tensors on the device, with the inputs uploaded once and
// the outputs checked once against a host run.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "anvil/runtime/device_api.h"
#include "anvil/runtime/model.h"

namespace anvil::cli {

class DeviceRuns {
 public:
  // Uploads `inputs` to `model`'s device and makes its output arrays there. Throws
  // std::runtime_error when the model runs on the CPU or the device refuses.
  DeviceRuns(const runtime::Model& model, const std::vector<runtime::NDArray>& inputs);

  // Runs on the device arrays, outputs read back after each: "" when they equal `want` (a run
  // through Model::run) within 1e-5 of the largest magnitude, else which run and what differs.
  // Three runs: kernel by kernel, recording and replay where the device has graphs.
  std::string check(const std::vector<runtime::NDArray>& want) const;
  // Times `n` runs, each until its outputs are written, appending milliseconds to `ms`.
  void time(int n, std::vector<double>* ms) const;

 private:
  std::string check_once(const std::vector<runtime::NDArray>& want) const;

  const runtime::Model* model_;
  runtime::Device* device_;
  std::unique_ptr<runtime::DeviceArrays> inputs_, outputs_;
  std::vector<runtime::NDArray> output_shapes_;  // host arrays of the outputs' shapes
};

// Anvil on its device against itself, in alternating blocks of `block` runs after `warmup` of
// each, until each has `runs`: on device arrays replaying a recorded graph (the default), on
// device arrays launching kernel by kernel (graphs off), and through the host (Model::run: the
// inputs copied in and the outputs back on every run).
struct DeviceModeTimes {
  std::vector<double> graph_ms, kernel_by_kernel_ms, host_copies_ms;
};
DeviceModeTimes time_device_modes(const runtime::Model& model,
                                  const std::vector<runtime::NDArray>& inputs, int warmup, int runs,
                                  int block);

}  // namespace anvil::cli
