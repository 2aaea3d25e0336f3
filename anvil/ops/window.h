// The window attributes of every convolution and pool (conv.cc, conv_nchwc.cc,
// conv_transpose_nchwc.cc, winograd.cc, pool_norm.cc, window_nd.cc): one schema, one parser and
// one set of error messages, so each default is stated once. They are ONNX's with explicit pads
// (the importer resolves auto_pad): over `dims` spatial axes,
//   strides, dilations     `dims` positive values, default 1
//   pads                   2 * `dims` non-negative values, begins then ends, default 0
// and where the op takes them (WindowPart):
//   kernel_shape           `dims` positive values, required
//   group                  positive, default 1
//   output_padding         `dims` non-negative values, default 0 (transposed convolutions)
//   ceil_mode              0 or 1, default 0 (pools)
//   count_include_pad      0 or 1, default 0 (average pools)
#pragma once

#include <cstdint>
#include <vector>

#include "anvil/ops/op.h"

namespace anvil::ops {

enum WindowPart : unsigned {
  kWindowKernel = 1,
  kWindowGroup = 2,
  kWindowOutputPadding = 4,
  kWindowCeilMode = 8,
  kWindowCountIncludePad = 16,
};

struct Window {
  std::vector<int64_t> kernel;  // empty unless kWindowKernel
  std::vector<int64_t> strides, dilations, pad_lo, pad_hi;
  std::vector<int64_t> output_padding;  // empty unless kWindowOutputPadding
  int64_t group = 1;
  bool ceil_mode = false, count_include_pad = false;
  // The pads attribute: begins, then ends.
  std::vector<int64_t> pads() const {
    std::vector<int64_t> p = pad_lo;
    p.insert(p.end(), pad_hi.begin(), pad_hi.end());
    return p;
  }
};

// The schema entries of the window attributes (for OpDef::attrs).
std::vector<AttrSpec> window_attrs(size_t dims, unsigned parts);
// The window of an op that takes `parts`, validated against window_attrs(dims, parts) (errors:
// "conv2d: attribute 'strides' must be positive, got [0, 1]"), defaults from there. Attributes
// outside the window are left to the caller.
Window parse_window(const Attrs& attrs, size_t dims, unsigned parts);
// Each output padding below its stride or dilation (the compiled transposed convolutions; the
// reference-only ones of window_nd.cc take any, as the importer may widen it for output_shape).
void check_output_padding(const std::string& op, const Window& w);

// FLOP rules (anvil/graph/flops.h): the direct convolution, 2 per tap, from the weight
// [O, C/group, k...] (transposed: [C, O/group, k...], every input element scattered), plus one
// per output element for a bias input; a pool, one per window element per output element.
FlopsFn conv_flops(bool transpose);
FlopsFn pool_flops();

}  // namespace anvil::ops
