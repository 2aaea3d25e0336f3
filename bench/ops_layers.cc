#include "ops_layers.h"

#include <cstdio>

namespace anvil::bench {

const char* kind_name(LayerKind k) {
  switch (k) {
    case LayerKind::kConv:
      return "conv";
    case LayerKind::kDepthwise:
      return "depthwise";
    case LayerKind::kDeconv:
      return "deconv";
    case LayerKind::kDense:
      return "dense";
  }
  return "?";
}

int64_t Layer::out_h() const {
  if (kind == LayerKind::kDense) return 1;
  if (kind == LayerKind::kDeconv) return (h - 1) * stride - 2 * pad + kh;
  return (h + 2 * pad - kh) / stride + 1;
}

int64_t Layer::out_w() const {
  if (kind == LayerKind::kDense) return 1;
  if (kind == LayerKind::kDeconv) return (w - 1) * stride - 2 * pad + kw;
  return (w + 2 * pad - kw) / stride + 1;
}

double Layer::flops() const {
  switch (kind) {
    case LayerKind::kConv:
      return 2.0 * c * o * out_h() * out_w() * kh * kw;
    case LayerKind::kDepthwise:
      return 2.0 * c * out_h() * out_w() * kh * kw;
    case LayerKind::kDeconv:
      return 2.0 * c * o * h * w * kh * kw;
    case LayerKind::kDense:
      return 2.0 * c * o;
  }
  return 0.0;
}

std::string Layer::describe() const {
  char buf[160];
  if (kind == LayerKind::kDense) {
    std::snprintf(buf, sizeof buf, "dense [1, %ld] x [%ld, %ld]^T", static_cast<long>(c),
                  static_cast<long>(o), static_cast<long>(c));
  } else {
    std::snprintf(buf, sizeof buf, "%s %ldx%ld %ld->%ld k%ldx%ld p%ld s%ld", kind_name(kind),
                  static_cast<long>(h), static_cast<long>(w), static_cast<long>(c),
                  static_cast<long>(o), static_cast<long>(kh), static_cast<long>(kw),
                  static_cast<long>(pad), static_cast<long>(stride));
  }
  return buf;
}

std::string Layer::key() const {
  return describe();
}

Layer perturb(const Layer& l) {
  Layer p = l;
  p.name += "_perturbed";
  p.c += 8;
  p.o += 8;
  if (l.kind == LayerKind::kDense) {
    // The LSTM's hidden (and input) size grows by 8: K = input + hidden, N = 4 * hidden.
    p.c = l.c + 16;
    p.o = l.o + 32;
  } else {
    p.h += 3;
    p.w += 3;
  }
  return p;
}

namespace {

Layer conv(std::string name, int64_t size, int64_t c, int64_t o, int64_t k, int64_t pad,
           int64_t stride) {
  return {std::move(name), LayerKind::kConv, c, o, size, size, k, k, stride, pad};
}

Layer depthwise(std::string name, int64_t size, int64_t c, int64_t stride) {
  return {std::move(name), LayerKind::kDepthwise, c, c, size, size, 3, 3, stride, 1};
}

}  // namespace

std::vector<Layer> all_layers(bool perturbed) {
  std::vector<Layer> base = {
      conv("resnet18_c1", 224, 3, 64, 7, 3, 2),    conv("resnet18_c2", 56, 64, 64, 3, 1, 1),
      conv("resnet18_c3", 56, 64, 64, 1, 0, 1),    conv("resnet18_c4", 56, 64, 128, 3, 1, 2),
      conv("resnet18_c5", 56, 64, 128, 1, 0, 2),   conv("resnet18_c6", 28, 128, 128, 3, 1, 1),
      conv("resnet18_c7", 28, 128, 256, 3, 1, 2),  conv("resnet18_c8", 28, 128, 256, 1, 0, 2),
      conv("resnet18_c9", 14, 256, 256, 3, 1, 1),  conv("resnet18_c10", 14, 256, 512, 3, 1, 2),
      conv("resnet18_c11", 14, 256, 512, 1, 0, 2), conv("resnet18_c12", 7, 512, 512, 3, 1, 1),
  };
  // MobileNet v1: depthwise 3x3 (size, channels, stride) and pointwise 1x1 (size, C, O).
  const int64_t dw[13][3] = {{112, 32, 1}, {112, 64, 2}, {56, 128, 1}, {56, 128, 2}, {28, 256, 1},
                             {28, 256, 2}, {14, 512, 1}, {14, 512, 1}, {14, 512, 1}, {14, 512, 1},
                             {14, 512, 1}, {14, 512, 2}, {7, 1024, 1}};
  const int64_t pw[13][3] = {{112, 32, 64},  {56, 64, 128},  {56, 128, 128}, {28, 128, 256},
                             {28, 256, 256}, {14, 256, 512}, {14, 512, 512}, {14, 512, 512},
                             {14, 512, 512}, {14, 512, 512}, {14, 512, 512}, {7, 512, 1024},
                             {7, 1024, 1024}};
  for (int i = 0; i < 13; ++i) {
    base.push_back(
        depthwise("mobilenet_v1_dw" + std::to_string(i + 1), dw[i][0], dw[i][1], dw[i][2]));
  }
  for (int i = 0; i < 13; ++i) {
    base.push_back(
        conv("mobilenet_v1_pw" + std::to_string(i + 1), pw[i][0], pw[i][1], pw[i][2], 1, 0, 1));
  }
  base.push_back(conv("dqn_conv1", 84, 4, 32, 8, 0, 4));
  base.push_back(conv("dqn_conv2", 20, 32, 64, 4, 0, 2));
  base.push_back(conv("dqn_conv3", 9, 64, 64, 3, 0, 1));
  const int64_t dc[4][3] = {{4, 1024, 512}, {8, 512, 256}, {16, 256, 128}, {32, 128, 3}};
  for (int i = 0; i < 4; ++i) {
    base.push_back({"dcgan_deconv" + std::to_string(i + 1), LayerKind::kDeconv, dc[i][1], dc[i][2],
                    dc[i][0], dc[i][0], 4, 4, 2, 1});
  }
  // The LSTM gates at batch 1, hidden 650, input 650: [1, 1300] x W^T, W [2600, 1300].
  base.push_back({"lstm_gates", LayerKind::kDense, 1300, 2600, 1, 1, 1, 1, 1, 0});

  if (!perturbed) return base;
  std::vector<Layer> all;
  for (const Layer& l : base) {
    all.push_back(l);
    all.push_back(perturb(l));
  }
  return all;
}

}  // namespace anvil::bench
