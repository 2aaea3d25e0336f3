// Placeholder: the family is being written.
#include "anvil/ops/families.h"

namespace anvil::ops {

void register_conv_transpose_nchwc_ops() {}

}  // namespace anvil::ops
