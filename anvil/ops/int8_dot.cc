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

namespace {

bool has_vnni(const std::vector<std::string>& f, int64_t lanes) {
  auto has = [&](const char* name) { return std::find(f.begin(), f.end(), name) != f.end(); };
  return lanes == 16 ? has("avx512vnni") : has("avxvnni") || (has("avx512vnni") && has("avx512vl"));
}

}  // namespace

bool int8_exact_form_is_slow(const Target& target) {
  const std::vector<std::string> f = codegen::target_cpu(target).features;
  return std::find(f.begin(), f.end(), "avx2") != f.end() && !has_vnni(f, int8_dot_lanes(target));
}

te::TensorIntrin pick_int8_dot(const Target& target, int64_t lanes, te::ValueRange a,
                               te::ValueRange b) {
  const std::vector<std::string> f = codegen::target_cpu(target).features;
  auto has = [&](const char* name) { return std::find(f.begin(), f.end(), name) != f.end(); };
  const int l = static_cast<int>(lanes);
  if (has_vnni(f, lanes)) return te::dot_u8s8_intrin(l);
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

void check_int8_conv_inputs(const std::string& op, const std::vector<TensorType>& in,
                            bool blocked_x) {
  ANVIL_CHECK(in.size() == 2 || in.size() == 3, op,
              ": expects 2 or 3 inputs (x, packed[, pad_value]), got ", in.size());
  const ir::DataType u8 = ir::DataType::UInt(8);
  if (blocked_x) {
    ANVIL_CHECK(in[0].dtype == u8 && in[0].shape.size() == 5 && in[0].shape[4] == kInt8ChannelBlock,
                op, ": input 'x' must be uint8 [N, C/16, H, W, 16] (blocked = 1), got ",
                to_string(in[0]));
  } else {
    ANVIL_CHECK(in[0].dtype == u8 && in[0].shape.size() == 4, op,
                ": input 'x' must be uint8 [N, C, H, W], got ", to_string(in[0]));
  }
  if (in.size() == 3) {
    ANVIL_CHECK(in[2].dtype == u8 && in[2].shape.empty(), op,
                ": input 'pad_value' must be a uint8 scalar, got ", to_string(in[2]));
  }
}

te::Tensor int8_padded_blocked(const te::Tensor& x, const Window& win,
                               const std::function<ir::Expr()>& fill, const std::string& name) {
  const std::vector<int64_t> xs = shape_of(x);
  const int H = static_cast<int>(xs[2]), W = static_cast<int>(xs[3]);
  const int pt = static_cast<int>(win.pad_lo[0]), pl = static_cast<int>(win.pad_lo[1]);
  const int64_t HP = xs[2] + win.pad_lo[0] + win.pad_hi[0];
  const int64_t WP = xs[3] + win.pad_lo[1] + win.pad_hi[1];
  return te::compute(
      to_exprs({xs[0], xs[1], HP, WP, xs[4]}),
      [&](const std::vector<ir::Var>& v) {
        ir::Expr y = v[2] - pt, xx = v[3] - pl;
        ir::Expr inside = y >= 0 && y < H && xx >= 0 && xx < W;
        return select(inside, x(v[0], v[1], max(min(y, H - 1), 0), max(min(xx, W - 1), 0), v[4]),
                      fill());
      },
      name);
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
