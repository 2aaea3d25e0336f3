#include "anvil/models/builder.h"

#include <cmath>
#include <functional>
#include <numbers>

#include "anvil/support/error.h"

namespace anvil::models::detail {

using graph::ValueId;
using ops::Attrs;

uint64_t Rng::next() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double Rng::uniform() {
  return static_cast<double>(next() >> 11) * 0x1.0p-53;
}

double Rng::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  double u1 = 1.0 - uniform();  // in (0, 1]: log is finite
  double u2 = uniform();
  double r = std::sqrt(-2.0 * std::log(u1));
  double t = 2.0 * std::numbers::pi * u2;
  spare_ = r * std::sin(t);
  has_spare_ = true;
  return r * std::cos(t);
}

namespace {

uint64_t salted(const std::string& model, uint32_t seed) {
  // FNV-1a of the model name, mixed with the seed.
  uint64_t h = 0xCBF29CE484222325ull;
  for (char c : model) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001B3ull;
  return h ^ (static_cast<uint64_t>(seed) * 0x9E3779B97F4A7C15ull);
}

runtime::NDArray filled(std::vector<int64_t> shape, const std::function<double()>& f) {
  runtime::NDArray a = runtime::NDArray::empty(std::move(shape), runtime::dl_float32());
  float* p = a.data_as<float>();
  for (int64_t i = 0; i < a.numel(); ++i) p[i] = static_cast<float>(f());
  return a;
}

}  // namespace

Builder::Builder(const std::string& model, uint32_t seed) : rng_(salted(model, seed)) {}

ValueId Builder::normal(const std::string& name, std::vector<int64_t> shape, double std) {
  return g_.add_constant(name, filled(std::move(shape), [&] { return std * rng_.normal(); }));
}

ValueId Builder::uniform(const std::string& name, std::vector<int64_t> shape, double lo,
                         double hi) {
  return g_.add_constant(name, filled(std::move(shape), [&] { return rng_.uniform(lo, hi); }));
}

ValueId Builder::conv_like(const std::string& op, const std::string& name, ValueId x,
                           const ConvSpec& c) {
  int64_t in = channels(x);
  ANVIL_ICHECK(in % c.group == 0 && c.out_channels % c.group == 0, "model layer '", name, "': ", in,
               " -> ", c.out_channels, " channels with group ", c.group);
  bool transpose = op == "conv2d_transpose";
  int64_t area = c.kernel * c.kernel;
  // He-normal over the inputs that reach one output.
  double fan_in = transpose
                      ? static_cast<double>(in * area) / static_cast<double>(c.stride * c.stride)
                      : static_cast<double>(in / c.group * area);
  std::vector<int64_t> wshape =
      transpose ? std::vector<int64_t>{in, c.out_channels / c.group, c.kernel, c.kernel}
                : std::vector<int64_t>{c.out_channels, in / c.group, c.kernel, c.kernel};
  std::vector<ValueId> inputs = {x, normal(name + ".weight", wshape, std::sqrt(2.0 / fan_in))};
  if (c.bias) inputs.push_back(uniform(name + ".bias", {c.out_channels}, -0.05, 0.05));
  Attrs attrs(op, {{"strides", std::vector<int64_t>{c.stride, c.stride}},
                   {"pads", std::vector<int64_t>{c.pad, c.pad, c.pad, c.pad}}});
  if (c.group != 1) attrs.set("group", c.group);
  return g_.add(name, op, attrs, inputs);
}

ValueId Builder::conv(const std::string& name, ValueId x, const ConvSpec& c) {
  return conv_like("conv2d", name, x, c);
}

ValueId Builder::conv_transpose(const std::string& name, ValueId x, const ConvSpec& c) {
  return conv_like("conv2d_transpose", name, x, c);
}

ValueId Builder::batch_norm(const std::string& name, ValueId x) {
  int64_t c = channels(x);
  ValueId gamma = uniform(name + ".weight", {c}, 0.9, 1.1);
  ValueId beta = uniform(name + ".bias", {c}, -0.05, 0.05);
  ValueId mean = uniform(name + ".running_mean", {c}, -0.05, 0.05);
  ValueId var = uniform(name + ".running_var", {c}, 0.9, 1.1);
  return g_.add(name, "batch_norm", Attrs("batch_norm", {{"epsilon", 1e-5}}),
                {x, gamma, beta, mean, var});
}

ValueId Builder::dense(const std::string& name, ValueId x, int64_t units,
                       const std::string& out_name) {
  int64_t k = type(x).shape.back();
  ValueId w = normal(name + ".weight", {units, k}, std::sqrt(2.0 / static_cast<double>(k)));
  ValueId b = uniform(name + ".bias", {units}, -0.05, 0.05);
  return node(name, "dense", Attrs(), {x, w, b}, out_name);
}

ValueId Builder::relu(const std::string& name, ValueId x) {
  return g_.add(name, "relu", Attrs(), {x});
}

ValueId Builder::relu6(const std::string& name, ValueId x) {
  return g_.add(name, "clip", Attrs("clip", {{"min", 0.0}, {"max", 6.0}}), {x});
}

ValueId Builder::add(const std::string& name, ValueId a, ValueId b) {
  return g_.add(name, "add", Attrs(), {a, b});
}

ValueId Builder::max_pool(const std::string& name, ValueId x, int64_t kernel, int64_t stride,
                          int64_t pad) {
  return g_.add(name, "max_pool2d",
                Attrs("max_pool2d", {{"kernel_shape", std::vector<int64_t>{kernel, kernel}},
                                     {"strides", std::vector<int64_t>{stride, stride}},
                                     {"pads", std::vector<int64_t>{pad, pad, pad, pad}}}),
                {x});
}

ValueId Builder::global_avg_pool(const std::string& name, ValueId x) {
  return g_.add(name, "global_avg_pool2d", Attrs(), {x});
}

ValueId Builder::flatten(const std::string& name, ValueId x) {
  return g_.add(name, "flatten", Attrs("flatten", {{"axis", int64_t{1}}}), {x});
}

ValueId Builder::reshape(const std::string& name, ValueId x, std::vector<int64_t> shape) {
  return g_.add(name, "reshape", Attrs("reshape", {{"shape", std::move(shape)}}), {x});
}

ValueId Builder::node(const std::string& name, const std::string& op, Attrs attrs,
                      const std::vector<ValueId>& inputs, const std::string& out_name) {
  std::vector<std::string> names;
  if (!out_name.empty()) names.push_back(out_name);
  std::vector<ValueId> outs = g_.add_node(name, op, std::move(attrs), inputs, names);
  ANVIL_ICHECK(outs.size() == 1, "model node '", name, "' (", op, ") has ", outs.size(),
               " outputs");
  return outs[0];
}

}  // namespace anvil::models::detail
