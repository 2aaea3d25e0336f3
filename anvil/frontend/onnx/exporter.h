// The ONNX exporter: a graph::Graph (a built-in model, or any graph over the operator library's
// ops in the NCHW layout) written as an ONNX model, so that other runtimes (ONNX Runtime, PyTorch)
// run exactly the same model as Anvil. Constants become initializers (raw little-endian data;
// float32, int32, int64, bool and the other fixed-width types); graph inputs and outputs keep
// their names, shapes and dtypes (names made printable and unique: a character outside printable
// ASCII or a space becomes '_'); every node output gets a value_info with its static shape.
//
// The model uses opset 13 of the default domain, IR version 7 (ONNX Runtime 1.6 and later).
// Most ops map to one ONNX node of the same name and attributes (dense -> Gemm with transB = 1;
// matmul with trans_a/trans_b -> Transpose + MatMul; reshape -> Reshape to the output's static
// shape; split -> Split with the output sizes; lstm/gru -> LSTM/GRU, same gate order and input
// positions, which attribute 'present' gives). Opset 13 lacks three: hard_swish is written as
// x * HardSigmoid(x; 1/6, 1/2), gelu as its erf (or tanh) formula and layer_norm as
// ReduceMean/Sub/Mul/ReduceMean/Add/Sqrt/Div/Mul/Add, all mapped back by the importer.
// import_onnx(export_onnx(g)) computes what g computes (tested on every built-in model and on
// single ops). A graph with ops that have no ONNX form (the NCHW[x]c layout ops the passes
// introduce, the packed dense and winograd ops) is refused with one error that lists every such
// op with the nodes using it; an attribute opset 13 cannot express (avg_pool2d with dilations)
// is refused naming the node.
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
