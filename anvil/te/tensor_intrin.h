// Tensor intrinsics: a hardware instruction (or a short sequence of them) declared by what it
// computes, so that Stage::tensorize can put it in place of the loops that compute the same.
//
// The declaration is a tensor expression: `output` reduces over placeholders (`inputs`), e.g.
// c[i] = sum over k of int32(a[k]) * int32(b[i, k]). Tensorizing a stage at a loop checks that
// the loops from there inward have the output's axes and then its reduction axes (same extents,
// same order), that the stage's body there is the declaration's body with each placeholder read
// from one tensor, and that each such tensor holds the placeholder's elements as one contiguous
// row-major block, and that the values those tensors may hold (te::value_range) are ones the
// code computes the declaration for; otherwise it refuses, naming what differs. The loops are
// then replaced by
// `emit` of the regions found, which adds the declaration's result into the output region (the
// stage's init stays a loop nest of its own).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "anvil/ir/stmt.h"
#include "anvil/te/tensor.h"

namespace anvil::te {

// Where a placeholder's elements lie in the tensor bound to it: `buffer` with element
// (0, ..., 0) of the placeholder at `min`. The block is contiguous, so an access of n elements
// from there is a Ramp of n lanes in the last dimension (running into the rows after it).
struct TensorRegion {
  ir::Buffer buffer;
  std::vector<Expr> min;

  // The `lanes` elements from the region's start (one element: a scalar load).
  Expr load(int lanes) const;
  ir::Stmt store(const Expr& value) const;  // as many elements as value has lanes
};

struct TensorIntrin {
  std::string name;
  Tensor output;               // a compute over `inputs`: one reduction of the placeholders
  std::vector<Tensor> inputs;  // placeholders, in the order emit receives their regions
  // Adds the declaration's result into `output` (the inputs' regions in `inputs` order).
  std::function<ir::Stmt(const std::vector<TensorRegion>& inputs, const TensorRegion& output)> emit;
  // When the code equals the declaration only for some input values: given the values each
  // input's tensor may hold (in `inputs` order), empty if it does, else why not. Unset: always.
  std::function<std::string(const std::vector<ValueRange>& inputs)> check_ranges;
};

// c[i] += sum over k < 4 of a[k] * b[i, k] for i < lanes: a uint8[4] (broadcast to every
// output), b int8[lanes, 4], c int32[lanes]; one dot_u8s8 call (ir/expr.h), which the LLVM back
// end emits as vpdpbusd where the CPU has AVX-512 VNNI or AVX-VNNI of that width.
TensorIntrin dot_u8s8_intrin(int lanes);

// The same declaration as AVX2 code: one dot_u8s8_sat16 call (vpmaddubsw, vpmaddwd, vpaddd),
// whose pairs of products saturate to int16. It computes the declaration only where no pair can
// leave int16, which the value ranges must show: activations of 7 bits ([0, 127]) with any
// int8, or any uint8 with weights in [-64, 64], say.
TensorIntrin dot_u8s8_sat16_intrin(int lanes);

}  // namespace anvil::te
