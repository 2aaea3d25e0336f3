// The oneDNN side of bench_ops: one layer as oneDNN's primitive on the layouts it prefers
// (format_tag::any), inference, f32, no bias; 3x3 stride-1 convolutions take the faster of
// oneDNN's direct and Winograd algorithms. Source and weights are reordered into those layouts
// once, when the layer is prepared; run() is the primitive alone.
//
// Debian's libdnnl 2.6 runs on GNU OpenMP (DNNL_CPU_RUNTIME == OMP, libgomp), so its thread count
// is omp_set_num_threads. Its JIT kernels fix their work split for the thread count at primitive
// creation, so one OnednnLayer serves one thread count: it sets that count when created and before
// each run.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ops_layers.h"

namespace anvil::bench {

class OnednnLayer {
 public:
  // x: the input in NCHW ([1, c, h, w]; dense [1, c]). weight: ONNX's layout, OIHW for
  // convolutions ([c, 1, kh, kw] depthwise), [c, o, kh, kw] transposed, [o, c] dense.
  OnednnLayer(const Layer& layer, int threads, const std::vector<float>& x,
              const std::vector<float>& weight);
  ~OnednnLayer();
  OnednnLayer(const OnednnLayer&) = delete;
  OnednnLayer& operator=(const OnednnLayer&) = delete;

  void run();
  // The last run's output in NCHW ([1, o, oh, ow]; dense [1, o]).
  std::vector<float> output() const;
  // The implementation oneDNN chose ("brgconv:avx512_core", "jit:avx512_core", ...).
  std::string implementation() const;
  int threads() const { return threads_; }

 private:
  double median_ms();  // of a few runs: picks between oneDNN's algorithms

  struct State;
  std::unique_ptr<State> state_;
  int threads_;
};

std::string onednn_version();

}  // namespace anvil::bench
