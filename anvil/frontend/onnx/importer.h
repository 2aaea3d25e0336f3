// The ONNX importer: an ONNX model file (protobuf, opsets 7 through 17) becomes a graph::Graph
// over the operator library's ops.
//
// What happens at import:
//   - initializers and Constant nodes become graph constants. Element types: float16/32/64,
//     int8/16/32/64, uint8/16/32/64 and bool (not bfloat16 or string). Compiled code takes
//     float32, int32, int64 and bool; the others, 3-D convolutions and pools, 1-D/3-D transposed
//     convolutions, cubic resize, MaxPool's indices and empty tensors run in graph::interpret
//     only (the compiled path refuses them with an error naming the op);
//   - every node whose inputs are all constants is evaluated at once with its operators'
//     reference implementations, so shape plumbing (Shape, Gather on shapes, ConstantOfShape,
//     Concat/Unsqueeze/Squeeze/Slice of constant shapes, Reshape with -1 and 0) disappears;
//   - If nodes with a constant condition are replaced by the taken branch;
//   - symbolic input dimensions are bound from ImportOptions::input_shapes;
//   - tensors kept as external data (files beside the model) are read from there (import_onnx
//     only: import_onnx_bytes has no directory to read them from).
// An unsupported model is refused with one error that lists every unsupported op type and the
// nodes using it. Every error names the file (and the node, value or input involved).
//
// This header is free of protobuf: only importer .cc files include ONNX's generated classes.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "anvil/graph/graph.h"
#include "anvil/runtime/ndarray.h"

namespace anvil::frontend {

struct ImportOptions {
  // Input shapes bound by the user (`--input-shape x=1x3x224x224`): name -> dims. Required for
  // every input with a symbolic (or unknown) dimension; when given for an input with a static
  // shape, it must agree with it.
  std::map<std::string, std::vector<int64_t>> input_shapes;
  // Inputs frozen to values known at compile time (they become graph constants, which lets
  // shape-like inputs such as Reshape's target shape fold). dtype must match the model's.
  std::map<std::string, runtime::NDArray> constant_inputs;
  // The memory cap, in bytes: no one tensor of the model (an input, an initializer, a constant
  // folded at import, a value a node computes) may take more, nor the inputs and constants
  // together. A model that declares more is refused, naming the tensor, before anything that
  // size is allocated.
  int64_t memory_cap = int64_t{16} << 30;
};

// Imports the model in file `path`.
graph::Graph import_onnx(const std::string& path, const ImportOptions& options = {});
// Imports a serialized ModelProto; `origin` names it in errors.
graph::Graph import_onnx_bytes(const std::string& bytes, const ImportOptions& options = {},
                               const std::string& origin = "<memory>");

// The ONNX op types (default domain) the importer maps.
std::vector<std::string> mapped_onnx_ops();

// One mapped ONNX op and the opsets in which ONNX defines a version of it, up to the newest the
// importer reads (18): `versions` are those versions' first opsets, oldest first (the ONNX
// library's schemas). Opsets 7 through 17 are the importer's target; older ones are read on a
// best-effort basis.
struct OnnxOpSupport {
  std::string op;
  std::vector<int> versions;
};
std::vector<OnnxOpSupport> onnx_op_support();

// A serialized TensorProto (the conformance data's input_*.pb / output_*.pb) as an NDArray.
runtime::NDArray load_onnx_tensor(const std::string& path);

}  // namespace anvil::frontend
