#include "anvil/te/tensor_intrin.h"

#include <algorithm>

#include "anvil/ir/op.h"
#include "anvil/support/error.h"

namespace anvil::te {

namespace {

std::vector<Expr> vector_indices(const TensorRegion& r, int lanes) {
  std::vector<Expr> indices = r.min;
  ANVIL_CHECK(!indices.empty(), "tensor region of '", r.buffer->name, "': no dimensions");
  if (lanes > 1) indices.back() = ir::Ramp::make(indices.back(), 1, lanes);
  return indices;
}

}  // namespace

Expr TensorRegion::load(int lanes) const {
  return ir::Load::make(buffer, vector_indices(*this, lanes));
}

ir::Stmt TensorRegion::store(const Expr& value) const {
  return ir::Store::make(buffer, value, vector_indices(*this, value.type().lanes()));
}

namespace {

// c[i] += sum over k < 4 of a[k] * b[i, k], emitted as one call of `op`.
TensorIntrin int8_dot(ir::Intrinsic op, int lanes) {
  ANVIL_CHECK(lanes >= 1, ir::intrinsic_name(op), " intrinsic: ", lanes, " lanes");
  Tensor a = placeholder({4}, ir::DataType::UInt(8), "a");
  Tensor b = placeholder({lanes, 4}, ir::DataType::Int(8), "b");
  IterVar k = reduce_axis(4, "k");
  Tensor c = compute(
      {lanes},
      [&](Var i) {
        return sum(ir::cast(ir::DataType::Int32(), a(k->var)) *
                       ir::cast(ir::DataType::Int32(), b(i, k->var)),
                   {k});
      },
      "c");
  TensorIntrin intrin;
  intrin.name = std::string(ir::intrinsic_name(op)) + "x" + std::to_string(lanes);
  intrin.output = c;
  intrin.inputs = {a, b};
  intrin.emit = [op, lanes](const std::vector<TensorRegion>& in, const TensorRegion& out) {
    Expr dot = ir::Call::make(op, {out.load(lanes), in[0].load(4), in[1].load(4 * lanes)});
    return out.store(dot);
  };
  return intrin;
}

}  // namespace

TensorIntrin dot_u8s8_intrin(int lanes) {
  return int8_dot(ir::Intrinsic::kDotU8S8, lanes);
}

TensorIntrin dot_u8s8_sat16_intrin(int lanes) {
  TensorIntrin intrin = int8_dot(ir::Intrinsic::kDotU8S8Sat16, lanes);
  intrin.check_ranges = [](const std::vector<ValueRange>& in) -> std::string {
    const ValueRange& a = in[0];
    const ValueRange& b = in[1];
    int64_t lo = 0, hi = 0;
    for (int64_t x : {a.min, a.max}) {
      for (int64_t y : {b.min, b.max}) {
        lo = std::min(lo, x * y);
        hi = std::max(hi, x * y);
      }
    }
    if (2 * lo >= -32768 && 2 * hi <= 32767) return "";
    return "a pair of products of a in [" + std::to_string(a.min) + ", " + std::to_string(a.max) +
           "] and b in [" + std::to_string(b.min) + ", " + std::to_string(b.max) + "] reaches [" +
           std::to_string(2 * lo) + ", " + std::to_string(2 * hi) +
           "], beyond int16, where vpmaddubsw saturates (7-bit activations or weights in "
           "[-64, 64] stay inside)";
  };
  return intrin;
}

}  // namespace anvil::te
