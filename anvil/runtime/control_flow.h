// Run-time control flow: what ONNX's If, Loop and Scan do with their bodies, once, for the graph
// executor (bodies as subprograms) and the reference interpreter (bodies as graphs). Each body
// is a function from its inputs to its outputs; the step decides which body runs how often, on
// what, and assembles the step's outputs.
//
//   if:   inputs  cond, then's captures, else's captures
//         body 0 (then) or 1 (else) on its captures; outputs: the body's.
//   loop: inputs  [trip count M], [cond], carried v_1..v_N, captures
//         while i < M and cond: body(i, cond, v..., captures) -> (cond, v..., s_1..s_K)
//         outputs: v_1..v_N after the last iteration, then s_1..s_K stacked along a new first
//         axis, whose length (the outputs' shape, bound at compile time) the iterations must fill.
//   scan: inputs  states v_1..v_N, scan inputs x_1..x_M, captures
//         for t over the scan axis of each x (reversed where asked):
//           body(v..., x_1[t]..., captures) -> (v..., y_1..y_K)
//         outputs: v_1..v_N after the last step, then y_1..y_K stacked along their scan axes.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "anvil/runtime/ndarray.h"

namespace anvil::runtime {

struct ControlFlow {
  std::string op;  // "if", "loop" or "scan"
  // if: the number of inputs after cond that are the then-body's captures (the rest: else's).
  int64_t then_inputs = 0;
  // loop: which optional inputs are present; loop and scan: carried values / states.
  bool has_trip_count = false, has_cond = false;
  int64_t num_carried = 0;
  // scan: the scan inputs, and per scan input and per scan output its axis and direction
  // (1: from the end).
  int64_t num_scan_inputs = 0;
  std::vector<int64_t> input_axes, input_reverse, output_axes, output_reverse;
};

// The shape and dtype of one of the step's outputs.
struct OutputInfo {
  std::vector<int64_t> shape;
  DLDataType dtype{};
};

// Runs body `body` (0, or 1 for if's else) on its inputs; returns its outputs.
using RunBody = std::function<std::vector<NDArray>(size_t body, const std::vector<NDArray>&)>;

// Runs one control-flow step on `inputs`; returns one array per `outputs` (fresh, of that shape
// and dtype). Throws std::runtime_error naming what is wrong: a body output of another shape than
// the step declares, a loop whose iterations do not fill its scan outputs.
std::vector<NDArray> run_control(const ControlFlow& cf, const std::vector<NDArray>& inputs,
                                 const std::vector<OutputInfo>& outputs, const RunBody& run_body);

// Whether a tensor's single element is nonzero (a condition: bool, integers, floats).
bool truth_of(const NDArray& a);

}  // namespace anvil::runtime
