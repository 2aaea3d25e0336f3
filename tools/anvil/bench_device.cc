#include "tools/anvil/bench_device.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "anvil/autotune/ab_timing.h"
#include "anvil/runtime/graph_executor.h"

namespace anvil::cli {

DeviceRuns::DeviceRuns(const runtime::Model& model, const std::vector<runtime::NDArray>& inputs)
    : model_(&model) {
  const DLDevice where = model.device();
  if (where.device_type == kDLCPU)
    throw std::runtime_error("DeviceRuns: the model runs on the CPU");
  device_ = &runtime::Device::get(static_cast<DLDeviceType>(where.device_type));
  std::vector<const runtime::NDArray*> in;
  for (const runtime::NDArray& a : inputs) in.push_back(&a);
  inputs_ = std::make_unique<runtime::DeviceArrays>(*device_, in);
  for (const runtime::TensorInfo& t : model.outputs())
    output_shapes_.push_back(runtime::NDArray::empty(t.shape, t.dtype));
  std::vector<const runtime::NDArray*> out;
  for (const runtime::NDArray& a : output_shapes_) out.push_back(&a);
  outputs_ = std::make_unique<runtime::DeviceArrays>(*device_, out);
}

std::string DeviceRuns::check(const std::vector<runtime::NDArray>& want) const {
  // Three runs: on a device with graphs the first launches kernel by kernel, the second records
  // and the third replays; each one's outputs are checked.
  for (int run = 0; run < 3; ++run) {
    std::string differs = check_once(want);
    if (!differs.empty()) return "run " + std::to_string(run + 1) + ": " + differs;
  }
  return "";
}

std::string DeviceRuns::check_once(const std::vector<runtime::NDArray>& want) const {
  model_->run_device(inputs_->args(), outputs_->args());
  for (size_t i = 0; i < want.size(); ++i) {
    runtime::NDArray got = runtime::NDArray::empty(want[i].shape(), want[i].dtype());
    outputs_->read(i, got);
    if (want[i].dtype().code != kDLFloat || want[i].dtype().bits != 32) {
      if (std::memcmp(got.data(), want[i].data(), got.nbytes()) != 0)
        return "output " + std::to_string(i) + " differs";
      continue;
    }
    const float* a = static_cast<const float*>(want[i].data());
    const float* b = static_cast<const float*>(got.data());
    const int64_t n = static_cast<int64_t>(got.nbytes() / sizeof(float));
    double largest = 0, worst = 0;
    for (int64_t k = 0; k < n; ++k) largest = std::max(largest, std::fabs(double(a[k])));
    for (int64_t k = 0; k < n; ++k) {
      double d = std::fabs(double(a[k]) - double(b[k]));
      if (!(d <= worst)) worst = d;  // NaN counts
    }
    if (!(worst <= 1e-5 * std::max(largest, 1e-30)))
      return "output " + std::to_string(i) + " differs by " + std::to_string(worst) +
             " (largest magnitude " + std::to_string(largest) + ")";
  }
  return "";
}

void DeviceRuns::time(int n, std::vector<double>* ms) const {
  autotune::time_calls(
      n, [&] { model_->run_device(inputs_->args(), outputs_->args()); }, ms);
}

DeviceModeTimes time_device_modes(const runtime::Model& model,
                                  const std::vector<runtime::NDArray>& inputs, int warmup, int runs,
                                  int block) {
  DeviceRuns device(model, inputs);
  DeviceModeTimes t;
  const bool graphs = runtime::device_graphs_enabled();
  // Restores the setting however this returns.
  struct Restore {
    bool graphs;
    ~Restore() { runtime::set_device_graphs(graphs); }
  } restore{graphs};
  auto host_runs = [&](int n, std::vector<double>* ms) {
    autotune::time_runs(model, inputs, n, ms);
  };
  std::vector<double> ignored;
  runtime::set_device_graphs(true);
  device.time(warmup, &ignored);
  host_runs(warmup, &ignored);
  runtime::set_device_graphs(false);
  device.time(warmup, &ignored);
  while (static_cast<int>(t.graph_ms.size()) < runs) {
    runtime::set_device_graphs(true);
    device.time(block, &t.graph_ms);
    host_runs(block, &t.host_copies_ms);
    runtime::set_device_graphs(false);
    device.time(block, &t.kernel_by_kernel_ms);
  }
  return t;
}

}  // namespace anvil::cli
