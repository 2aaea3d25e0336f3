// The layers bench_ops times, Anvil against oneDNN: ResNet-18's convolutions, MobileNet v1's
// depthwise and pointwise convolutions, the DQN's convolutions, DCGAN's transposed convolutions
// and the LSTM language model's gate matrix multiply, all at batch 1, each also "perturbed" (8
// more channels, 3 more rows and columns) so that a kernel tuned to round shapes shows it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace anvil::bench {

enum class LayerKind {
  kConv,       // dense 2-d convolution, ONNX Conv with group 1
  kDepthwise,  // group = channels, one filter per channel (c == o)
  kDeconv,     // ONNX ConvTranspose, weight [c, o, kh, kw]
  kDense,      // out[1, o] = x[1, c] W[o, c]^T
};
const char* kind_name(LayerKind k);

struct Layer {
  std::string name;  // "resnet18_c2", "resnet18_c2_perturbed"
  LayerKind kind = LayerKind::kConv;
  int64_t c = 0, o = 0;         // input and output channels (dense: K and N)
  int64_t h = 1, w = 1;         // input rows and columns
  int64_t kh = 1, kw = 1;       // kernel
  int64_t stride = 1, pad = 0;  // the same along both axes and on both sides

  int64_t out_h() const;
  int64_t out_w() const;
  // 2 * multiply-adds of the useful computation (transposed: 2*C*O*H*W*KH*KW).
  double flops() const;
  // Identical layers (MobileNet's dw7..dw11) share one measurement; this is what makes them equal.
  std::string key() const;
  // "conv 56x56 64->64 k3 p1 s1"
  std::string describe() const;
};

// The layers, in model order; with `perturbed` each is followed by its perturbed twin.
std::vector<Layer> all_layers(bool perturbed);
Layer perturb(const Layer& l);

}  // namespace anvil::bench
