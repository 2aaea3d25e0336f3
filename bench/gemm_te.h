// The single-precision matrix multiply of bench_gemm, written as a tensor expression and a
// schedule alone (no intrinsics, no calls into other libraries). Shared with its correctness
// test (tests/te/gemm_test.cc).
//
//   packedB[no, k, ni] = B[k, no*bn + ni]           (B in panels of bn columns, zero-padded)
//   C[m, n] = sum_k A[m, k] * packedB[n/bn, k, n%bn]
//
// Schedule: C is tiled into bm x bn blocks; each block accumulates in a local bm x bn tile
// (cache_write) whose rows are unrolled and whose columns are one vector per register, so the
// k loop is bm*bn/lanes independent FMA chains fed by one broadcast of A per row and bn/lanes
// vector loads of the packed panel.
#pragma once

#include <vector>

#include "anvil/ir/op.h"
#include "anvil/target/target.h"
#include "anvil/te/schedule.h"

namespace anvil::bench {

struct GemmConfig {
  int bm = 6;       // rows of the register tile
  int bn = 16;      // columns of the register tile: two vector registers (see for_target)
  int kunroll = 4;  // k iterations unrolled in the micro-kernel
  bool parallel = true;
  bool rows_outer = false;  // block loop order: m blocks outside n blocks, or the reverse
};

// Two vectors of columns per tile row: 16 with AVX2, 32 with AVX-512 (6 rows x 2 vectors are 12
// accumulators, enough independent FMA chains to hide the FMA latency on both pipes).
inline GemmConfig for_target(const Target& target, GemmConfig cfg = {}) {
  cfg.bn = 2 * target.vector_lanes_f32();
  return cfg;
}

struct GemmKernel {
  te::Schedule schedule;
  std::vector<te::Tensor> args;  // A, B, C
};

inline GemmKernel gemm(int M, int N, int K, const GemmConfig& cfg = {}) {
  using namespace ir;
  te::Tensor A = te::placeholder({M, K}, DataType::Float32(), "A");
  te::Tensor B = te::placeholder({K, N}, DataType::Float32(), "B");
  int panels = (N + cfg.bn - 1) / cfg.bn;
  te::Tensor P = te::compute(
      {panels, K, cfg.bn},
      [&](Var no, Var k, Var ni) {
        Expr n = no * cfg.bn + ni;
        return select(n < N, B(k, min(n, N - 1)), 0.0f);
      },
      "packedB");
  IterVar k = te::reduce_axis(K, "k");
  te::Tensor C = te::compute(
      {M, N},
      [&](Var m, Var n) {
        return te::sum(A(m, k->var) * P(floordiv(n, cfg.bn), k->var, floormod(n, cfg.bn)), {k});
      },
      "C");

  te::Schedule s({C});
  te::Tensor CC = s.cache_write(C, MemoryScope::kLocal);
  std::vector<IterVar> t = s[C].tile(s[C].axis()[0], s[C].axis()[1], cfg.bm, cfg.bn);
  IterVar mo = t[0], no = t[1], mi = t[2], ni = t[3];
  if (!cfg.rows_outer) s[C].reorder({no, mo});
  IterVar outer = cfg.rows_outer ? mo : no, inner = cfg.rows_outer ? no : mo;
  s[C].vectorize(ni);
  if (cfg.parallel) s[C].parallel(outer);

  s[CC].compute_at(s[C], inner);
  IterVar mc = s[CC].axis()[0], nc = s[CC].axis()[1];
  auto [ko, ki] = s[CC].split(k, cfg.kunroll);
  s[CC].reorder({ko, ki, mc, nc});
  s[CC].unroll(ki);
  s[CC].unroll(mc);
  s[CC].vectorize(nc);

  IterVar pno = s[P].axis()[0], pni = s[P].axis()[2];
  s[P].vectorize(pni);
  if (cfg.parallel) s[P].parallel(pno);
  return {s, {A, B, C}};
}

}  // namespace anvil::bench
