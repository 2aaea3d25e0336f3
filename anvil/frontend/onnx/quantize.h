// Static post-training quantization of an ONNX model into the standard QDQ form (`anvil
// quantize`), which Anvil runs on its int8 kernels and ONNX Runtime runs as well.
//
// First each Conv followed only by an inference BatchNormalization with constant parameters takes
// it into its weight and bias. Then every Conv, MatMul and Gemm whose weight (input 1) is a
// float32 initializer is quantized:
//   - the weight becomes int8, symmetric, one scale per output channel (Conv: axis 0; MatMul's
//     [K, N]: axis 1; Gemm: axis 0 with transB, else 1), max |w| onto 127 (63 with reduce_range,
//     for CPUs whose int8 instruction saturates pairs of products beyond int16: AVX2), read
//     through DequantizeLinear;
//   - its activation (input 0) and its output become uint8, asymmetric, per tensor, from the
//     range the calibration inputs give them (min-max, or the percentile of the values), through
//     a QuantizeLinear + DequantizeLinear pair (one pair per tensor: an output that a quantized
//     node reads is that node's activation);
//   - biases and everything else stay float.
// The calibration runs the float model compiled for the host, with those activations as extra
// outputs. The report gives the largest difference of the quantized model's outputs from the
// float model's on the calibration inputs (both run by Anvil).
//
// This header is free of protobuf, like the importer's.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "anvil/runtime/ndarray.h"

namespace anvil::frontend {

struct QuantizeOptions {
  // One map per calibration sample: the model's inputs by name.
  std::vector<std::map<std::string, runtime::NDArray>> calibration;
  // 100: min-max; below, the activation range covers that percentile of |values| on each side.
  double percentile = 100.0;
  bool reduce_range = false;  // 7-bit weights
};

struct QuantizeReport {
  int folded_batch_norms = 0;           // BatchNormalizations folded into their Conv first
  std::vector<std::string> quantized;   // the nodes quantized, by name (or op and index)
  std::vector<std::string> left_float;  // Conv, MatMul, Gemm nodes not quantized, and why
  // Over the calibration inputs and every output: the largest |quantized - float| and the
  // largest |float|, and the smallest cosine similarity of an output with the float one.
  double max_abs_difference = 0, max_abs_float = 0, min_cosine = 1;
};

// Writes `out_path`, the QDQ model of `in_path`; throws anvil::Error naming the model and the
// problem (an opset below 13, which lacks per-axis quantization; no calibration input; a
// calibration input that does not fit the model).
QuantizeReport quantize_onnx(const std::string& in_path, const std::string& out_path,
                             const QuantizeOptions& options);

}  // namespace anvil::frontend
