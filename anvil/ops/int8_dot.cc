#include "anvil/ops/int8_dot.h"

#include <algorithm>
#include <string>
#include <vector>

#include "anvil/codegen/llvm/codegen_llvm.h"

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

te::ValueRange int8_values_read(const te::Tensor& t) {
  if (!t.is_compute()) return te::value_range(t);
  return {t->dtype.min_value(), t->dtype.max_value()};
}

}  // namespace anvil::ops
