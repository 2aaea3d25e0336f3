// The registration function of each operator family (one file each under anvil/ops/). op.cc's
// register_all calls them all, once, before the first lookup.
#pragma once

namespace anvil::ops {

void register_elementwise_ops();  // elementwise.cc

}  // namespace anvil::ops
