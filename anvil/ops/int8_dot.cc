#include "anvil/ops/int8_dot.h"

#include <algorithm>
#include <string>
#include <vector>

#include "anvil/codegen/llvm/codegen_llvm.h"
#include "anvil/ir/op.h"
#include "anvil/ops/schedule_util.h"
#include "anvil/support/error.h"

namespace anvil::ops {

int64_t int8_dot_lanes(const Target& target) {
  return std::clamp<int64_t>(target.vector_lanes(32), 4, 16);
}

te::TensorIntrin pick_int8_dot(const Target& target, int64_t lanes, te::ValueRange a,
                               te::ValueRange b) {
  const std::vector<std::string> f = codegen::target_cpu(target).features;
  auto has = [&](const char* name) { return std::find(f.begin(), f.end(), name) != f.end(); };
  const int l = static_cast<int>(lanes);
  const bool vnni =
      lanes == 16 ? has("avx512vnni") : has("avxvnni") || (has("avx512vnni") && has("avx512vl"));
  if (vnni) return te::dot_u8s8_intrin(l);
  const bool pmadd = lanes == 16 ? has("avx512bw") : lanes == 8 ? has("avx2") : has("ssse3");
  te::TensorIntrin sat16 = te::dot_u8s8_sat16_intrin(l);
  if (pmadd && sat16.check_ranges({a, b}).empty()) return sat16;
  return te::dot_u8s8_intrin(l);
}

int64_t int8_tile_registers(const Target& target) {
  if (target.vector_registers > 0) return target.vector_registers;
  return target.vector_bits >= 512 ? 32 : 16;
}

Int8Product inline_around_product(te::Schedule& s, const te::Tensor& out, const char* op) {
  Int8Product p;
  const std::vector<te::Tensor> stages = te::topological_order({out});
  for (const te::Tensor& t : stages)
    if (t.is_compute() && t->body.as<ir::Reduce>()) p.product = t;
  ANVIL_CHECK(p.product.get(), op, " schedule: '", out.name(), "' computes no product");
  p.activation = te::Tensor(p.product->inputs.at(0).get());
  p.weight = te::Tensor(p.product->inputs.at(1).get());
  for (const te::Tensor& t : stages) {
    const te::TensorNode* n = t.get();
    if (t.is_compute() && n != out.get() && n != p.product.get() && n != p.activation.get() &&
        n != p.weight.get())
      s[t].compute_inline();
  }
  return p;
}

int64_t int8_window_extent(const std::string& op, const TensorType& x, const Window& win, size_t d,
                           int64_t n, int64_t k) {
  const int64_t eff = (k - 1) * win.dilations[d] + 1;
  const int64_t padded = n + win.pad_lo[d] + win.pad_hi[d];
  ANVIL_CHECK(padded >= eff, op, ": input x ", to_string(x), " padded to ", padded,
              " is smaller than the dilated kernel ", eff, " along spatial axis ", d);
  return (padded - eff) / win.strides[d] + 1;
}

bool int8_window_pads(const Window& win) {
  auto positive = [](int64_t v) { return v > 0; };
  return std::any_of(win.pad_lo.begin(), win.pad_lo.end(), positive) ||
         std::any_of(win.pad_hi.begin(), win.pad_hi.end(), positive);
}

te::Tensor int8_conv_output(const te::Tensor& acc, bool blocked, int64_t channels,
                            const std::string& name) {
  if (blocked) {
    return te::compute(
        acc->shape,
        [&](const std::vector<ir::Var>& v) { return acc(v[0], v[1], v[2], v[3], v[4]); }, name);
  }
  const std::vector<int64_t> a = shape_of(acc);
  const int block = static_cast<int>(a[4]);
  return te::compute(
      to_exprs({a[0], channels, a[2], a[3]}),
      [&](ir::Var n, ir::Var c, ir::Var y, ir::Var x) {
        return acc(n, floordiv(c, block), y, x, floormod(c, block));
      },
      name);
}

void set_int8_packing_defaults(OpDef& pack) {
  pack.pattern = Pattern::kInjective;
  pack.flops = flops_none();
  pack.schedule_x86 = [](te::Schedule& s, const std::vector<te::Tensor>& outs, const Target& target,
                         const Config&) { schedule_injective_x86(s, outs[0], target); };
  pack.space = [](const std::vector<TensorType>&, const Attrs&, const Target&) {
    return ConfigSpace{};
  };
}

te::ValueRange int8_values_read(const te::Tensor& t) {
  if (!t.is_compute()) return te::value_range(t);
  return {t->dtype.min_value(), t->dtype.max_value()};
}

}  // namespace anvil::ops
