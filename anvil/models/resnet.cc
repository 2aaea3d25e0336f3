// ResNet-18 (He et al., 2016), ImageNet, as torchvision builds it: a 7x7 stride-2 stem with max
// pooling, four stages of two basic blocks (64, 128, 256, 512 channels; the first block of each
// later stage has stride 2 and a 1x1 stride-2 projection with batch norm on its shortcut), global
// average pooling and a 1000-way dense layer.
#include "anvil/models/builder.h"
#include "anvil/models/models.h"

namespace anvil::models {

using detail::Builder;
using detail::ConvSpec;
using graph::ValueId;

namespace {

// A basic block "layerS.B": conv1 bn1 relu1 conv2 bn2 (+ downsample.0/1) add relu2.
ValueId basic_block(Builder& b, const std::string& name, ValueId x, int64_t out, int64_t stride) {
  ValueId y = b.conv(name + ".conv1", x, ConvSpec{out, 3, stride, 1});
  y = b.relu(name + ".relu1", b.batch_norm(name + ".bn1", y));
  y = b.conv(name + ".conv2", y, ConvSpec{out, 3, 1, 1});
  y = b.batch_norm(name + ".bn2", y);
  ValueId shortcut = x;
  if (stride != 1 || b.channels(x) != out) {
    shortcut = b.conv(name + ".downsample.0", x, ConvSpec{out, 1, stride, 0});
    shortcut = b.batch_norm(name + ".downsample.1", shortcut);
  }
  return b.relu(name + ".relu2", b.add(name + ".add", y, shortcut));
}

}  // namespace

graph::Graph resnet18(uint32_t seed) {
  Builder b("resnet18", seed);
  ValueId x = b.input("data", {{1, 3, 224, 224}, ir::DataType::Float32()});
  x = b.conv("conv1", x, ConvSpec{64, 7, 2, 3});
  x = b.relu("relu", b.batch_norm("bn1", x));
  x = b.max_pool("maxpool", x, 3, 2, 1);
  const int64_t widths[4] = {64, 128, 256, 512};
  for (int stage = 0; stage < 4; ++stage) {
    for (int block = 0; block < 2; ++block) {
      std::string name = "layer" + std::to_string(stage + 1) + "." + std::to_string(block);
      x = basic_block(b, name, x, widths[stage], stage > 0 && block == 0 ? 2 : 1);
    }
  }
  x = b.flatten("flatten", b.global_avg_pool("avgpool", x));
  b.output(b.dense("fc", x, 1000, "logits"));
  return b.finish();
}

}  // namespace anvil::models
