// Placeholder: the family is being written.
#include "anvil/ops/families.h"

namespace anvil::ops {

void register_recurrent_ops() {}

}  // namespace anvil::ops
