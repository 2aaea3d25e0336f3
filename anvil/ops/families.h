// The registration function of each operator family (one file each under anvil/ops/). op.cc's
// register_all calls them all, once, before the first lookup.
#pragma once

namespace anvil::ops {

void register_elementwise_ops();           // elementwise.cc
void register_elementwise_math_ops();      // elementwise_math.cc
void register_indexing_ops();              // indexing.cc
void register_scatter_scan_ops();          // scatter_scan.cc
void register_grid_sample_ops();           // grid_sample.cc
void register_dense_ops();                 // dense.cc
void register_dense_int8_ops();            // dense_int8.cc
void register_conv_ops();                  // conv.cc
void register_conv_int8_ops();             // conv_int8.cc
void register_depthwise_int8_ops();        // depthwise_int8.cc
void register_pool_norm_ops();             // pool_norm.cc
void register_transform_ops();             // transform.cc
void register_reduce_ops();                // reduce.cc
void register_conv_nchwc_ops();            // conv_nchwc.cc
void register_conv_transpose_nchwc_ops();  // conv_transpose_nchwc.cc
void register_winograd_ops();              // winograd.cc
void register_recurrent_ops();             // recurrent.cc
void register_window_nd_ops();             // window_nd.cc (reference only)
void register_control_ops();               // control.cc (if, loop, scan: executor steps)

}  // namespace anvil::ops
