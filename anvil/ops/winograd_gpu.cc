// conv2d_winograd (NCHW, the weight transformed once at compile time) on GPUs: the rule for
// choosing it, and its schedule, three kernels:
//   input transform  one thread per (tile, input channel), the channel fastest so that the
//                    writes of V[a1, a2, p, c] coalesce; B^T d in the thread's registers, the
//                    padding inlined into its reads; the a x a transform coordinates unrolled, so
//                    the select chains fold to the matrices' nonzero entries;
//   batched GEMM     M[a1, a2, p, o] = sum_c U V: the tiled schedule of schedule_gpu.h over
//                    (tiles p, output channels o), the a^2 products fused into blockIdx.z, tiles
//                    of U and V copied into shared memory per k_tile input channels (knobs
//                    p_threads, p_inner, o_threads, o_inner, k_tile, double_buffer);
//   output transform one thread per (image, tile, output channel), the channel fastest so that
//                    its a^2 reads of M coalesce; A^T M in registers, the m x m outputs of the
//                    tile unrolled, bias and the fused epilogue inlined.
// Not yet measured on an NVIDIA GPU: the rule and the defaults are a starting point for tuning.
#include <algorithm>

#include "anvil/ir/op.h"
#include "anvil/ops/schedule_gpu.h"
#include "anvil/ops/winograd.h"
#include "anvil/support/error.h"

namespace anvil::ops {

namespace {

constexpr int64_t kMaxKTile = 8;
constexpr int64_t kMinChannels = 16;

// The GEMM's tiled axes, counted from the last of M [a, a, P, O].
const std::vector<GpuTileAxis>& gemm_axes() {
  static const std::vector<GpuTileAxis> axes = {{"p", 8, 2}, {"o", 16, 2}};
  return axes;
}

// A stage computed per thread at `at`'s axis `axis`, in registers, its loops unrolled.
void in_registers(te::Schedule& s, const te::Tensor& t, te::Stage at, const te::IterVar& axis) {
  te::Stage st = s[t];
  st.set_scope(ir::MemoryScope::kLocal);
  st.compute_at(at, axis);
  for (const te::IterVar& a : st.axis()) st.unroll(a);
}

}  // namespace

bool prefer_winograd_gpu(int64_t channels_in, int64_t channels_out, int64_t group,
                         const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                         const std::vector<int64_t>& dilations) {
  const std::vector<int64_t> ones = {1, 1};
  return kernel == std::vector<int64_t>{3, 3} && strides == ones && dilations == ones &&
         group == 1 && channels_in >= kMinChannels && channels_out >= kMinChannels;
}

int64_t winograd_tile_gpu(int64_t out_height, int64_t out_width) {
  auto tiles = [&](int64_t m) { return ((out_height + m - 1) / m) * ((out_width + m - 1) / m); };
  return 16 * tiles(2) <= 36 * tiles(4) ? 2 : 4;
}

ConfigSpace winograd_space_gpu(int64_t a, int64_t P, int64_t O, int64_t C, const Target& target) {
  return gpu_tiled_space({a, a, P, O}, C, gemm_axes(), kMaxKTile, target, false);
}

void winograd_schedule_gpu(te::Schedule& s, const std::vector<te::Tensor>& outs, const Attrs&,
                           const Target& target, const Config& config) {
  using ir::MemoryScope;
  const te::Tensor out = outs[0];
  WinogradStages w = winograd_stages(s, outs);
  int64_t threads = gpu_default_threads(target);
  int64_t m = shape_of(w.am)[0];
  // The transformed weight: the GEMM's other input.
  te::Tensor u;
  for (const auto& in : w.mm->inputs)
    if (in.get() != w.v.get()) u = te::Tensor(in.get());
  ANVIL_ICHECK(u.defined(), "conv2d_winograd GPU schedule: the GEMM reads no weight");
  // Fusion never puts the weight's producer (its transform) in this group: U is an input.
  ANVIL_CHECK(!u.is_compute(), "conv2d_winograd GPU schedule of '", out.name(),
              "': the transformed weight '", u.name(), "' must be an input of the kernel");

  // Input transform.
  s[w.pad].compute_inline();
  {
    te::Stage sv = s[w.v];
    std::vector<te::IterVar> ax = sv.axis();  // a1, a2, p, c
    sv.reorder({ax[2], ax[3], ax[0], ax[1]});
    te::IterVar thread = bind_threads(sv, {ax[2], ax[3]}, threads);
    sv.unroll(ax[0]);
    sv.unroll(ax[1]);
    in_registers(s, w.bd, sv, thread);
  }
  // Batched GEMM.
  {
    te::Tensor acc = s.cache_write(w.mm, MemoryScope::kLocal);
    std::vector<te::Tensor> shared = {s.cache_read(u, MemoryScope::kShared, {acc}),
                                      s.cache_read(w.v, MemoryScope::kShared, {acc})};
    tile_gpu(s, w.mm, acc, shared, gemm_axes(), kMaxKTile, config);
  }
  // Output transform.
  {
    te::Stage so = s[out];
    std::vector<te::IterVar> ax = so.axis();  // n, o, y, x
    ANVIL_ICHECK(ax.size() == 4, "conv2d_winograd GPU schedule: output '", out.name(),
                 "' has rank ", ax.size(), ", not 4");
    auto [yo, yi] = so.split(ax[2], m);
    auto [xo, xi] = so.split(ax[3], m);
    so.reorder({ax[0], yo, xo, ax[1], yi, xi});
    te::IterVar thread = bind_threads(so, {ax[0], yo, xo, ax[1]}, threads);
    so.unroll(yi);
    so.unroll(xi);
    in_registers(s, w.am, so, thread);
  }
}

}  // namespace anvil::ops
