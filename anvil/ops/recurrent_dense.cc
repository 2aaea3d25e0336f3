// Packing a weight into panels (recurrent_dense.h): shared by dense_pack_weight (dense.cc) and
// the recurrent layers (recurrent_compute.cc).
#include "anvil/ops/recurrent_dense.h"
#include "anvil/ir/op.h"

namespace anvil::ops {

using namespace ir;

te::Tensor pack_panels(const te::Tensor& w, int64_t nb, int64_t row0, int64_t rows,
                       const std::string& name) {
  std::vector<int64_t> shape = shape_of(w);
  size_t nbd = shape.size() - 2;
  int64_t K = shape[nbd + 1];
  std::vector<int64_t> pshape(shape.begin(), shape.end() - 2);
  pshape.insert(pshape.end(), {(rows + nb - 1) / nb, K, nb});
  return te::compute(
      to_exprs(pshape),
      [&](const std::vector<Var>& v) {
        std::vector<Expr> idx(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(nbd));
        Expr n = v[nbd] * static_cast<int>(nb) + v[nbd + 2];
        idx.push_back(min(n, static_cast<int>(rows - 1)) + static_cast<int>(row0));
        idx.push_back(v[nbd + 1]);
        return select(n < static_cast<int>(rows), w(idx), 0.0f);
      },
      name);
}

void schedule_pack_panels_x86(te::Schedule& s, const te::Tensor& packed, const Target& target,
                              bool parallel) {
  te::Stage sp = s[packed];
  std::vector<IterVar> ax = sp.axis();
  size_t pb = ax.size() - 3;
  auto [nio, nii] = sp.split(ax[pb + 2], target.vector_lanes_f32());
  sp.vectorize(nii);
  IterVar outer = ax[pb];
  for (size_t i = pb; i-- > 0;) outer = sp.fuse(ax[i], outer);
  if (parallel) sp.parallel(outer);
  (void)nio;
}

}  // namespace anvil::ops
