// Reading ONNX external data into the model's tensors (importer-internal: includes protobuf
// types).
#pragma once

#include <cstdint>
#include <string>

namespace onnx {
class ModelProto;
}

namespace anvil::frontend::onnx_detail {

// Replaces every tensor of `model` (initializers, Constant values and other tensor attributes,
// in subgraphs too) that keeps its data in an external file by the same tensor with the file's
// bytes as raw_data. Files are read relative to the directory of `model_path`; a location outside
// it, a missing or short file, or more than `memory_cap` bytes for one tensor is an error naming
// the model, the tensor and the file.
void load_external_data(::onnx::ModelProto& model, const std::string& model_path,
                        int64_t memory_cap);

}  // namespace anvil::frontend::onnx_detail
