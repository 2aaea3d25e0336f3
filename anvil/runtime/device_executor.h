// The graph executor's GPU half (graph_executor.h is the whole interface; this is what its two
// files share): a program's run on its device, with host or device arrays in and out, and the
// run recorded once as a device graph and replayed after that.
//
// Replay: on a device with graphs (CUDA), the first run of a program on a stream launches its
// kernels one by one; the second records the same launches into a graph (stream capture), and
// every later run is one graph launch. The recorded run's memory (arena, inputs, intermediates,
// the kernels' temporaries) is held by the replay for its life, so the addresses baked into the
// graph stay valid; a run whose device inputs or outputs are other arrays than the recorded
// ones records again. A run that times its calls (profile) launches them one by one. A recording
// that fails (a stream the driver cannot record, a graph it cannot instantiate) leaves that
// stream's runs launching kernel by kernel. While a run records (the second on a stream), CUDA
// refuses work on the legacy default stream and context-wide waits from other threads of the
// process: a program that runs a model from several threads gives each thread a stream of its
// own (Model::run(inputs, stream)).
//
// Host arrays (Model::run) on a device that pins host memory (CUDA) are staged in page-locked
// buffers of the replay's own: the caller's inputs are copied into them on the host, and the
// copies to the device and back are issued on the stream with the kernels, so the recording
// holds them and a replayed run is one graph launch and one wait.
#pragma once

#include <cstdint>
#include <vector>

#include "anvil/runtime/graph_executor.h"

namespace anvil::runtime {

// Bytes of a compact tensor of `shape` and `dtype`, or -1 when it overflows.
int64_t tensor_bytes(const std::vector<int64_t>& shape, DLDataType dtype);

// A DLTensor viewing `data` as `slot` (the shape vector outlives the view), on the CPU.
DLTensor slot_view(const GraphProgram::Slot& slot, void* data);

// execute() for a program on a GPU: inputs copied to the device, outputs back.
std::vector<NDArray> execute_on_device(const GraphProgram& p, const std::vector<NDArray>& inputs,
                                       std::vector<double>* call_seconds, Stream stream);

}  // namespace anvil::runtime
