// Storage flattening: every multi-dimensional Load, Store and Allocate becomes one-dimensional.
//
// A buffer of shape (n0, ..., nk) becomes a one-dimensional view with the same `data` variable
// (so code generation and the runtime see the same memory), and the element at (i0, ..., ik)
// is at sum(i_d * stride_d): compact row-major strides, or the buffer's explicit strides
// (storage_align padding). A vector access, a Ramp in one dimension and Broadcasts in the
// others, flattens to a Ramp.
#pragma once

#include <vector>

#include "anvil/ir/function.h"

namespace anvil::transform {

// The one-dimensional view of `buffer`: same name, element type, scope and data variable, and
// as many elements as its layout spans (the product of its shape; with explicit strides, the
// footprint 1 + sum((n_d - 1) * stride_d)). A one-dimensional compact buffer is its own view.
ir::Buffer flatten_buffer(const ir::Buffer& buffer);

// The offset in flatten_buffer(buffer) of the element at `indices` (simplified; a Ramp when
// the access is a vector along one dimension).
ir::Expr flatten_index(const ir::Buffer& buffer, const std::vector<ir::Expr>& indices);

// `s` with every access and allocation of a multi-dimensional (or strided) buffer rewritten to
// its one-dimensional view. Free buffers (function arguments) are flattened too: their accesses
// use a view that keeps the argument's data variable.
ir::Stmt flatten_storage(const ir::Stmt& s);

// `f` with its body flattened. The arguments keep their logical shapes, which the generated
// entry checks; the body's loads and stores of args[i] use a one-dimensional buffer whose data
// variable is args[i]->data.
ir::LoweredFunc flatten_storage(const ir::LoweredFunc& f);

}  // namespace anvil::transform
