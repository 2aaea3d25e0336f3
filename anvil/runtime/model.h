// Model: a compiled model loaded from its artifact (model.so, see artifact.h) and run by the graph
// executor. This is the C++ API a deployment uses; c_model_api.h is the same in C.
//
//   anvil::runtime::Model m = anvil::runtime::Model::load("model.so");
//   std::vector<anvil::runtime::NDArray> out = m.run({{"data", image}});
//
// load() verifies the artifact (magic, format version, checksum of the whole file and of a
// separate parameter file) before it trusts any of it, then loads the kernels. run() checks every
// input's name, shape and dtype against the model's and says what was expected. A Model is
// immutable once loaded: run() may be called from several threads at once (each run has its own
// intermediate buffers). Errors are std::runtime_error (the runtime does not link the compiler):
// ArtifactError for a file that is not a valid artifact, InputError for inputs that do not match,
// std::runtime_error for a kernel that fails while running.
#pragma once

#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "anvil/runtime/ndarray.h"

namespace anvil::runtime {

// The file is missing, truncated, corrupt, of another format version, or inconsistent.
class ArtifactError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The inputs given to run() do not match the model's (name, count, shape, dtype).
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Why a model refuses an input of another shape, and the way out: an artifact's shapes are bound
// when it is compiled. "; the shapes were bound when the model was compiled: compile it again with
// --input-shape x=4x3 to run it on this one".
std::string rebind_hint(const std::string& input, const std::vector<int64_t>& shape);

struct TensorInfo {
  std::string name;
  std::vector<int64_t> shape;
  DLDataType dtype;
};

struct GraphProgram;  // graph_executor.h

// One kernel's time in Model::profile.
struct KernelProfile {
  std::string kernel;  // the symbol ("fused_3_conv2d_nchwc")
  std::string nodes;   // the graph nodes it computes ("'conv1' (conv2d_nchwc), 'relu1' (relu)")
  double median_seconds = 0;
  double flops = 0;  // per call, as the compiler counted them (0: unknown)
};

// How a GPU model's runs went on a device with graphs (the first run on a stream launches kernel
// by kernel, the next records a graph, later ones replay it): runs launched kernel by kernel,
// graphs recorded, graph launches. All zero on the CPU and on devices without graphs.
struct DeviceRunCounts {
  int64_t eager_runs = 0, captures = 0, graph_launches = 0;
};

class Model {
 public:
  // Loads `path` (with its parameter file beside it when the artifact keeps them apart). Throws
  // ArtifactError for a file that is not a valid artifact, DeviceUnavailable (device_api.h) when
  // a GPU artifact's device cannot be opened here.
  static Model load(const std::string& path);
  // A model over an in-memory program (CompiledGraph runs through this; kernels JIT-compiled).
  // Throws ArtifactError when the program is inconsistent (GraphProgram::validate).
  explicit Model(GraphProgram program);
  Model() = default;

  const std::vector<TensorInfo>& inputs() const;
  const std::vector<TensorInfo>& outputs() const;
  // The target the kernels were compiled for ("llvm -mcpu=znver3", "c").
  const std::string& target() const;
  size_t num_kernels() const;
  // Bytes of the intermediate arena each run allocates.
  int64_t arena_bytes() const;
  // Device memory a GPU model's runs hold for reuse (arena, inputs, outputs, temporaries: per
  // stream, kept across runs); 0 on the CPU.
  size_t device_bytes_held() const;

  // Inputs in the order of inputs(); returns the outputs in the order of outputs() (fresh arrays).
  std::vector<NDArray> run(const std::vector<NDArray>& inputs) const;
  // The same into the caller's arrays, one per outputs(), each of its shape and dtype: the kernel
  // that computes an output writes it there directly where the program gives the output a buffer
  // of its own, otherwise it is copied in. A CPU model only. Throws InputError for outputs that
  // do not match (naming which and what was expected) or overlap an input.
  void run(const std::vector<NDArray>& inputs, const std::vector<NDArray>& outputs) const;
  // The same on `stream` of a GPU model's device (a CUstream or cl_command_queue; see execute in
  // graph_executor.h); std::runtime_error for a CPU model.
  std::vector<NDArray> run(const std::vector<NDArray>& inputs, void* stream) const;
  // A GPU model on device arrays of its device (DLTensors whose data is the device's handle, as
  // device_api.h describes): `inputs` in the order of inputs(), `outputs` in the order of
  // outputs(), each of its shape and dtype and compact, its byte_offset a multiple of
  // ANVIL_ALIGNMENT (a CUDA array's address ANVIL_ARG_ALIGNMENT-aligned, as cudaMalloc's and
  // PyTorch's allocations are; a view at another offset is refused); the outputs are written in
  // place and nothing passes through the host. Returns once they are written. On a device with
  // graphs the runs are recorded and replayed (graph_executor.h, device_run_counts); other arrays
  // than the last run's record again. Throws InputError for a CPU model or arrays that do not match
  // (naming which), std::runtime_error for a kernel that fails.
  void run_device(const std::vector<const DLTensor*>& inputs,
                  const std::vector<const DLTensor*>& outputs, void* stream = nullptr) const;
  DeviceRunCounts device_run_counts() const;
  // Where the kernels run: {kDLCPU, 0}, or the GPU (its type and number).
  DLDevice device() const;
  // Inputs by name: every input exactly once, no unknown names.
  std::vector<NDArray> run(const std::map<std::string, NDArray>& inputs) const;

  // Times every kernel: one untimed warm-up run, then `repeat` runs (at least 1) timing each
  // kernel call; returns one entry per kernel call in program order with the median of its times.
  // Inputs are checked as run() checks them; throws std::invalid_argument for repeat < 1.
  std::vector<KernelProfile> profile(const std::vector<NDArray>& inputs, int repeat) const;

  struct State;  // opaque: the program and its input and output descriptions

 private:
  std::shared_ptr<const State> state_;
};

}  // namespace anvil::runtime
