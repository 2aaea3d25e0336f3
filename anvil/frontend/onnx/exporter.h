// The ONNX exporter: a graph::Graph (a built-in model, or any graph over the operator library's
// ops in the NCHW layout) written as an ONNX model, so that other runtimes (ONNX Runtime, PyTorch)
// run exactly the same model as Anvil. Constants become initializers (float32, int32, int64,
// bool); graph inputs and outputs keep their names, shapes and dtypes.
//
// The model uses opset 13 of the default domain. import_onnx(export_onnx(g)) computes what g
// computes (the round trip is tested on every built-in model). A graph with ops that have no ONNX
// form (the NCHW[x]c layout ops the passes introduce, for one) is refused with one error that lists
// every such op with the nodes using it.
//
// This header is free of protobuf, like the importer's.
#pragma once

#include <string>

#include "anvil/graph/graph.h"

namespace anvil::frontend {

// The serialized ModelProto of `g`; `model_name` names the graph (producer_name is "anvil").
std::string export_onnx_bytes(const graph::Graph& g, const std::string& model_name = "anvil");
// Writes it to `path`; throws anvil::Error naming the path when it cannot be written.
void export_onnx(const graph::Graph& g, const std::string& path,
                 const std::string& model_name = "anvil");

}  // namespace anvil::frontend
