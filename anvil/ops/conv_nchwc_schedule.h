// The x86 schedules of the NCHW[x]c convolutions (conv_nchwc.cc registers the operators; the rule
// and the measurements are documented in conv_nchwc_schedule.cc).
#pragma once

#include <cstdint>
#include <vector>

#include "anvil/ops/op.h"

namespace anvil::ops::conv_nchwc_detail {

// What the schedule rule needs to know about a convolution.
struct ConvShape {
  int64_t OB = 0;  // output channel blocks (O / ob)
  int64_t ob = 0;  // output channel block
  int64_t OH = 0, OW = 0;
  int64_t ic_blocks = 0, ib = 0;  // input channel blocks and block (1, 1 for depthwise)
  int64_t KH = 0, KW = 0;
  bool depthwise = false;
  int64_t IW = 0;  // the width of the input the convolution reads (0: unknown)
};

// The knobs of the space, with the default rule's values first.
ConfigSpace conv_nchwc_space(const ConvShape& c, const Target& target);

// Schedules `outs[0]`: the convolution itself or the last of a chain of injective stages over it.
void conv_nchwc_schedule(const std::string& op, te::Schedule& s,
                         const std::vector<te::Tensor>& outs, const Target& target,
                         const Config& config);

}  // namespace anvil::ops::conv_nchwc_detail
