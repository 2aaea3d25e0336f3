// The two small workloads of the TVM paper's evaluation.
//
// DQN (Mnih et al., 2015), the Atari network: "state" float32[1, 4, 84, 84] (four stacked
// frames) -> "conv1" 8x8 stride 4, 32 channels, relu -> "conv2" 4x4 stride 2, 64, relu -> "conv3"
// 3x3 stride 1, 64, relu -> "flatten" [1, 3136] -> "fc1" dense 512, relu -> "fc2" dense 18
// -> "q_values" float32[1, 18]. Convolutions have biases and no padding.
//
// DCGAN generator (Radford et al., 2016), 64x64 images: "z" float32[1, 100] -> "project" dense
// to 4*4*1024 -> "project.reshape" [1, 1024, 4, 4] -> "project.bn", relu -> three transposed
// convolutions "deconv1..3" (4x4, stride 2, pad 1: 1024 -> 512 -> 256 -> 128 channels, 8 -> 16
// -> 32 pixels), each with batch norm and relu -> "deconv4" (128 -> 3, 64x64, with a bias)
// -> "tanh" -> "image" float32[1, 3, 64, 64].
#include "anvil/models/builder.h"
#include "anvil/models/models.h"

namespace anvil::models {

using detail::Builder;
using detail::ConvSpec;
using graph::ValueId;

graph::Graph dqn(uint32_t seed) {
  Builder b("dqn", seed);
  ValueId x = b.input("state", {{1, 4, 84, 84}, ir::DataType::Float32()});
  x = b.relu("relu1", b.conv("conv1", x, ConvSpec{32, 8, 4, 0, 1, true}));
  x = b.relu("relu2", b.conv("conv2", x, ConvSpec{64, 4, 2, 0, 1, true}));
  x = b.relu("relu3", b.conv("conv3", x, ConvSpec{64, 3, 1, 0, 1, true}));
  x = b.flatten("flatten", x);
  x = b.relu("relu4", b.dense("fc1", x, 512));
  b.output(b.dense("fc2", x, 18, "q_values"));
  return b.finish();
}

graph::Graph dcgan(uint32_t seed) {
  Builder b("dcgan", seed);
  ValueId x = b.input("z", {{1, 100}, ir::DataType::Float32()});
  x = b.reshape("project.reshape", b.dense("project", x, 4 * 4 * 1024), {1, 1024, 4, 4});
  x = b.relu("project.relu", b.batch_norm("project.bn", x));
  const int64_t widths[3] = {512, 256, 128};
  for (int i = 0; i < 3; ++i) {
    std::string name = "deconv" + std::to_string(i + 1);
    x = b.conv_transpose(name, x, ConvSpec{widths[i], 4, 2, 1});
    x = b.relu(name + ".relu", b.batch_norm(name + ".bn", x));
  }
  x = b.conv_transpose("deconv4", x, ConvSpec{3, 4, 2, 1, 1, true});
  b.output(b.node("tanh", "tanh", ops::Attrs(), {x}, "image"));
  return b.finish();
}

}  // namespace anvil::models
