// Placeholder: the family is being written.
#include "anvil/ops/families.h"
#include "anvil/ops/nchwc.h"

namespace anvil::ops {

void register_conv_nchwc_ops() {}

int64_t nchwc_block(int64_t channels, const Target& target) {
  int64_t lanes = target.vector_lanes_f32();
  for (int64_t b = lanes; b >= 4; b /= 2)
    if (channels % b == 0) return b;
  return channels < lanes ? channels : lanes;
}

}  // namespace anvil::ops
