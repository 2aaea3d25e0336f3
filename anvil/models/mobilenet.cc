// MobileNet v1 (Howard et al., 2017) and v2 (Sandler et al., 2018), width 1.0, 224x224 ImageNet
// input, relu6 written as clip(0, 6) as ONNX exports it.
//
// v1: a 3x3 stride-2 convolution to 32 channels, then 13 depthwise-separable blocks (a 3x3
// depthwise convolution and a 1x1 pointwise one, each with batch norm and relu6), global average
// pooling and a 1000-way dense layer. Names: "conv0", "blocks.<i>.dw", "blocks.<i>.pw" (each with
// "_bn" and "_relu" after it), "avgpool", "flatten", "fc".
//
// v2: torchvision's layout and names. "features.0" is a 3x3 stride-2 convolution to 32 channels;
// "features.1" to "features.17" are inverted residual blocks (1x1 expansion by t unless t = 1,
// 3x3 depthwise, 1x1 linear projection, each with batch norm; relu6 after the first two; the input
// added back when the stride is 1 and the channels are equal); "features.18" a 1x1 convolution to
// 1280 channels; then global average pooling and "classifier.1", a 1000-way dense layer.
#include "anvil/models/builder.h"
#include "anvil/models/models.h"

namespace anvil::models {

using detail::Builder;
using detail::ConvSpec;
using graph::ValueId;

namespace {

const ops::TensorType kImage = {{1, 3, 224, 224}, ir::DataType::Float32()};

// conv, batch norm and (optionally) relu6, named "<name>.0", ".1", ".2" (torchvision's
// ConvBNActivation).
ValueId conv_bn(Builder& b, const std::string& name, ValueId x, const ConvSpec& c, bool act) {
  ValueId y = b.batch_norm(name + ".1", b.conv(name + ".0", x, c));
  return act ? b.relu6(name + ".2", y) : y;
}

ValueId inverted_residual(Builder& b, const std::string& name, ValueId x, int64_t expand,
                          int64_t out, int64_t stride) {
  int64_t in = b.channels(x);
  int64_t hidden = in * expand;
  ValueId y = x;
  int step = 0;
  auto part = [&] { return name + ".conv." + std::to_string(step++); };
  if (expand != 1) y = conv_bn(b, part(), y, ConvSpec{hidden, 1, 1, 0}, true);
  y = conv_bn(b, part(), y, ConvSpec{hidden, 3, stride, 1, hidden}, true);
  std::string proj = part();
  y = b.conv(proj, y, ConvSpec{out, 1, 1, 0});
  y = b.batch_norm(part(), y);
  if (stride == 1 && in == out) y = b.add(name + ".add", x, y);
  return y;
}

}  // namespace

graph::Graph mobilenet_v1(uint32_t seed) {
  Builder b("mobilenet_v1", seed);
  ValueId x = b.input("data", kImage);
  x = b.relu6("conv0_relu", b.batch_norm("conv0_bn", b.conv("conv0", x, ConvSpec{32, 3, 2, 1})));
  // (output channels, stride) of the 13 depthwise-separable blocks.
  const int64_t blocks[13][2] = {{64, 1},  {128, 2},  {128, 1}, {256, 2}, {256, 1},
                                 {512, 2}, {512, 1},  {512, 1}, {512, 1}, {512, 1},
                                 {512, 1}, {1024, 2}, {1024, 1}};
  for (int i = 0; i < 13; ++i) {
    std::string name = "blocks." + std::to_string(i);
    int64_t c = b.channels(x);
    x = b.conv(name + ".dw", x, ConvSpec{c, 3, blocks[i][1], 1, c});
    x = b.relu6(name + ".dw_relu", b.batch_norm(name + ".dw_bn", x));
    x = b.conv(name + ".pw", x, ConvSpec{blocks[i][0], 1, 1, 0});
    x = b.relu6(name + ".pw_relu", b.batch_norm(name + ".pw_bn", x));
  }
  x = b.flatten("flatten", b.global_avg_pool("avgpool", x));
  b.output(b.dense("fc", x, 1000, "logits"));
  return b.finish();
}

graph::Graph mobilenet_v2(uint32_t seed) {
  Builder b("mobilenet_v2", seed);
  ValueId x = b.input("data", kImage);
  x = conv_bn(b, "features.0", x, ConvSpec{32, 3, 2, 1}, true);
  // (expansion t, output channels c, repeats n, first stride s), as in the paper's Table 2.
  const int64_t settings[7][4] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                                  {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  int index = 1;
  for (const auto& s : settings) {
    for (int64_t r = 0; r < s[2]; ++r) {
      x = inverted_residual(b, "features." + std::to_string(index++), x, s[0], s[1],
                            r == 0 ? s[3] : 1);
    }
  }
  x = conv_bn(b, "features." + std::to_string(index), x, ConvSpec{1280, 1, 1, 0}, true);
  x = b.flatten("flatten", b.global_avg_pool("avgpool", x));
  b.output(b.dense("classifier.1", x, 1000, "logits"));
  return b.finish();
}

}  // namespace anvil::models
