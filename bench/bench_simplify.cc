// Throughput of the simplifier on index arithmetic of the shape lowering produces: a split
// loop's flattened index, its guard, and the div/mod that recovers the original coordinates.
#include <benchmark/benchmark.h>

#include "anvil/arith/simplify.h"
#include "anvil/ir/op.h"

namespace {

using namespace anvil::ir;
using anvil::arith::IntBounds;
using anvil::arith::VarBounds;

void BM_SimplifySplitIndex(benchmark::State& state) {
  Var i("i"), j("j"), k("k");
  VarBounds bounds{{i.get(), IntBounds::from_range(0, 56)},
                   {j.get(), IntBounds::from_range(0, 8)},
                   {k.get(), IntBounds::from_range(0, 64)}};
  Expr fused = (i * 8 + j) * 64 + k;
  Expr e = floordiv(fused, 64) * 64 + floormod(fused, 64) + select(i * 8 + j < 448, 0, 1);
  int64_t nodes = 0;
  for (auto _ : state) {
    Expr s = anvil::arith::simplify(e, bounds);
    nodes += node_count(s);
    benchmark::DoNotOptimize(s);
  }
  state.counters["nodes_in"] = static_cast<double>(node_count(e));
  state.counters["nodes_out"] =
      static_cast<double>(nodes) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_SimplifySplitIndex);

}  // namespace

BENCHMARK_MAIN();
