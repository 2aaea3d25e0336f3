// dense_int8 and its weight packing against their references (exact: int32 arithmetic) over
// the full uint8 and int8 ranges: one row and many, K and N that the groups and blocks do not
// divide, rows of rank 3, every config of the space; in a compiled graph, the AVX2 form where the
// constant weights are small enough and the exact form where they are not; and the errors.
#include <gtest/gtest.h>

#include <random>

#include "anvil/codegen/llvm/codegen_llvm.h"
#include "anvil/graph/build.h"
#include "anvil/graph/graph.h"
#include "ops_testing.h"
#include "testing/errors.h"

namespace anvil::ops {
namespace {

using ir::DataType;
using ops_testing::check_op;
using ops_testing::CheckOptions;
using ops_testing::random_bytes;

const DataType u8 = DataType::UInt(8), i8 = DataType::Int(8);

runtime::NDArray pack(const runtime::NDArray& w) {
  return lookup("dense_int8_pack_weight").reference({w}, Attrs("dense_int8_pack_weight", {}))[0];
}

Attrs units(int64_t n) {
  return Attrs("dense_int8", {{"units", n}});
}

// x uint8 rows [.., K] by w int8 [K, N], both over their whole ranges.
void check_product(std::vector<int64_t> rows, int64_t K, int64_t N, uint32_t seed,
                   Config config = {}) {
  std::vector<int64_t> xs = rows;
  xs.push_back(K);
  runtime::NDArray x = random_bytes(xs, u8, seed, 0, 255);
  runtime::NDArray packed = pack(random_bytes({K, N}, i8, seed + 1, -128, 127));
  CheckOptions o;
  o.inputs = {x, packed};
  o.config = std::move(config);
  o.gpu = false;
  check_op("dense_int8", {{xs, u8}, {packed.shape(), i8}}, units(N), o);
}

TEST(DenseInt8, MatchesTheReference) {
  uint32_t seed = 1;
  for (auto [rows, K, N] : std::vector<std::tuple<std::vector<int64_t>, int64_t, int64_t>>{
           {{1}, 4, 16},      // one group, one block
           {{1}, 650, 2600},  // the LSTM's gates at batch 1
           {{3}, 13, 37},     // K and N past a group and a block
           {{7}, 100, 64},    // rows past the default tile
           {{2, 5}, 64, 40},  // rows of rank 3
           {{13}, 96, 160}}) {
    SCOPED_TRACE(::testing::Message() << "rows " << list_str(rows) << " K=" << K << " N=" << N);
    check_product(rows, K, N, seed);
    seed += 2;
  }
}

TEST(DenseInt8, EveryConfigOfTheSpaceAgrees) {
  std::vector<TensorType> types = {{{9, 30}, u8}, {{6, 8, 16, 4}, i8}};
  ConfigSpace space = lookup("dense_int8").space(types, units(96), Target::host());
  ASSERT_EQ(space.size(), 3u);
  EXPECT_EQ(space[0].name, "tile_m");
  EXPECT_EQ(space[1].name, "tile_n");
  EXPECT_EQ(space[2].name, "parallel");
  for (int64_t bn : space[1].values) EXPECT_EQ(96 % bn, 0) << bn;  // whole blocks that divide
  for (int64_t bm : space[0].values) {
    for (int64_t bn : space[1].values) {
      SCOPED_TRACE(::testing::Message() << "tile_m=" << bm << " tile_n=" << bn);
      check_product({9}, 30, 96, 3, {{"tile_m", bm}, {"tile_n", bn}, {"parallel", 1}});
    }
  }
}

TEST(DenseInt8, PackWeight) {
  CheckOptions o;
  o.lo = -128;
  o.hi = 127;
  o.gpu = false;
  check_op("dense_int8_pack_weight", {{{13, 37}, i8}}, Attrs("dense_int8_pack_weight", {}), o);
  runtime::NDArray w = random_bytes({5, 3}, i8, 4, -128, 127);
  runtime::NDArray p = pack(w);
  EXPECT_EQ(p.shape(), (std::vector<int64_t>{1, 2, 16, 4}));
  // Column 2, k = 4 (the second group's first byte), then the zeros past K and N.
  EXPECT_EQ(p.data_as<int8_t>()[((0 * 2 + 1) * 16 + 2) * 4 + 0], w.data_as<int8_t>()[4 * 3 + 2]);
  EXPECT_EQ(p.data_as<int8_t>()[((0 * 2 + 1) * 16 + 2) * 4 + 1], 0);
  EXPECT_EQ(p.data_as<int8_t>()[((0 * 2 + 0) * 16 + 3) * 4 + 0], 0);
}

TEST(DenseInt8, Errors) {
  const OpDef& d = lookup("dense_int8");
  testing::expect_has(testing::user_error([&] {
                        d.infer({{{2, 8}, i8}, {{1, 2, 16, 4}, i8}}, units(16));
                      }),
                      "dense_int8: input 'x' must be uint8, not int8");
  testing::expect_has(testing::user_error([&] {
                        d.infer({{{2, 8}, u8}, {{2, 2, 16, 4}, i8}}, units(16));
                      }),
                      "does not hold units = 16 columns of K = 8");
  testing::expect_has(testing::user_error([&] {
                        lookup("dense_int8_pack_weight")
                            .infer({{{8, 16}, DataType::Float32()}},
                                   Attrs("dense_int8_pack_weight", {}));
                      }),
                      "input 'w' must be int8, not float32");
}

// In a compiled graph the packed weight is a constant whose values the kernel knows: weights in
// [-64, 64] take AVX2's vpmaddubsw form on a CPU without VNNI, full-range ones the exact form.
TEST(DenseInt8, CompiledGraphPicksTheFormFromTheWeights) {
  const std::vector<std::string> f = codegen::target_cpu(Target::host()).features;
  auto has = [&](const char* n) { return std::find(f.begin(), f.end(), n) != f.end(); };
  const int lanes = Target::host().vector_lanes(32);
  const bool vnni =
      lanes == 16 ? has("avx512vnni") : has("avxvnni") || (has("avx512vnni") && has("avx512vl"));
  const bool avx2_form = !vnni && (lanes == 16 ? has("avx512bw") : has("avx2"));
  for (int limit : {64, 127}) {
    SCOPED_TRACE(limit);
    graph::Graph g;
    const int64_t K = 96, N = 48;
    graph::ValueId x = g.add_input("x", {{2, K}, u8});
    graph::ValueId w =
        g.add_constant("w", pack(random_bytes({K, N}, i8, 5, limit == 64 ? -64 : -128, limit)));
    g.add_output(g.add("product", "dense_int8", units(N), {x, w}));
    graph::CompiledGraph cg = graph::CompiledGraph::build(g, Target::host(), {});
    std::string ir;
    for (const graph::CompiledGraph::Kernel& k : cg.kernels()) ir += cg.lowered_ir(k.name);
    const bool sat16 = ir.find("dot_u8s8_sat16(") != std::string::npos;
    EXPECT_EQ(sat16, avx2_form && limit == 64) << ir;
    EXPECT_TRUE(sat16 || ir.find("dot_u8s8(") != std::string::npos) << ir;
    runtime::NDArray xs = random_bytes({2, K}, u8, 6, 0, 255);
    runtime::NDArray got = cg.run({xs})[0];
    runtime::NDArray want = lookup("dense_int8").reference({xs, g.value(w).data}, units(N))[0];
    for (int64_t i = 0; i < want.numel(); ++i)
      ASSERT_EQ(got.data_as<int32_t>()[i], want.data_as<int32_t>()[i]) << i;
  }
}

}  // namespace
}  // namespace anvil::ops
