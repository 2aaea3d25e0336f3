// Dense / matmul / batch_matmul against their double-precision references: random shapes (fixed
// seeds) including M = 1 and sizes the tiles do not divide, every transpose combination, bias and
// no bias, broadcast batch dimensions, every point of a small config space, and the errors.
//
// Tolerance: inputs are uniform in [-1, 1], so an output is a sum of K products whose typical
// magnitude is sqrt(K)/3; float32 accumulation in any order stays well within
// |got - want| <= 1e-4 * sqrt(K) * (1 + |want|).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>

#include "ops_testing.h"
#include "testing/errors.h"

namespace anvil::ops {
namespace {

using ir::DataType;
using ops_testing::check_op;
using ops_testing::CheckOptions;

const DataType f32 = DataType::Float32();

CheckOptions opts(int64_t K, uint32_t seed = 1, Config config = {}) {
  CheckOptions o;
  o.tol = 1e-4 * std::sqrt(static_cast<double>(K));
  o.seed = seed;
  o.config = std::move(config);
  return o;
}

Attrs mm_attrs(const std::string& op, int ta, int tb) {
  return Attrs(op, {{"trans_a", int64_t{ta}}, {"trans_b", int64_t{tb}}});
}

// A [.., M, K] (or [.., K, M]) for matmul-style operands.
std::vector<int64_t> mat(std::vector<int64_t> batch, int64_t rows, int64_t cols, bool trans) {
  if (trans) std::swap(rows, cols);
  batch.push_back(rows);
  batch.push_back(cols);
  return batch;
}

TEST(Dense, RandomShapesWithAndWithoutBias) {
  std::mt19937 rng(7);
  std::vector<std::array<int64_t, 3>> shapes = {{1, 1, 1},   {1, 64, 128}, {1, 37, 19}, {7, 13, 5},
                                                {6, 32, 16}, {13, 50, 31}, {64, 96, 64}};
  std::uniform_int_distribution<int64_t> d(1, 70);
  for (int i = 0; i < 4; ++i) shapes.push_back({d(rng), d(rng), d(rng)});
  uint32_t seed = 1;
  for (auto [M, N, K] : shapes) {
    SCOPED_TRACE(::testing::Message() << "M=" << M << " N=" << N << " K=" << K);
    check_op("dense", {{{M, K}, f32}, {{N, K}, f32}}, Attrs("dense", {}), opts(K, seed++));
    check_op("dense", {{{M, K}, f32}, {{N, K}, f32}, {{N}, f32}}, Attrs("dense", {}),
             opts(K, seed++));
  }
}

TEST(Dense, LstmMatrixVector) {
  // The LSTM language model's gate product: one row, wide N.
  check_op("dense", {{{1, 200}, f32}, {{800, 200}, f32}, {{800}, f32}}, Attrs("dense", {}),
           opts(200));
}

TEST(Matmul, EveryTransposeCombination) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int64_t> d(1, 45);
  uint32_t seed = 1;
  for (int round = 0; round < 3; ++round) {
    int64_t M = round == 0 ? 1 : d(rng), N = d(rng), K = d(rng);
    for (int ta = 0; ta < 2; ++ta) {
      for (int tb = 0; tb < 2; ++tb) {
        SCOPED_TRACE(::testing::Message()
                     << "M=" << M << " N=" << N << " K=" << K << " ta=" << ta << " tb=" << tb);
        check_op("matmul", {{mat({}, M, K, ta), f32}, {mat({}, K, N, tb), f32}},
                 mm_attrs("matmul", ta, tb), opts(K, seed++));
        check_op("batch_matmul", {{mat({3}, M, K, ta), f32}, {mat({3}, K, N, tb), f32}},
                 mm_attrs("batch_matmul", ta, tb), opts(K, seed++));
      }
    }
  }
}

// Attention's products at batch > 1 with N not a multiple of the column tile (ViT's [12, 197, 64]
// by [12, 64, 197]): the batches are not fused with the column blocks (a tail), and the result
// still agrees, also with a second batch dimension and with the tail in M as well.
TEST(Matmul, BatchesWithAColumnTail) {
  uint32_t seed = 40;
  for (auto [batch, M, K, N] :
       std::vector<std::array<int64_t, 4>>{{12, 19, 8, 37}, {3, 8, 16, 33}, {2, 13, 5, 21}}) {
    SCOPED_TRACE(::testing::Message()
                 << "batch=" << batch << " M=" << M << " K=" << K << " N=" << N);
    check_op("matmul", {{mat({batch}, M, K, 0), f32}, {mat({batch}, K, N, 0), f32}},
             mm_attrs("matmul", 0, 0), opts(K, seed++));
    check_op("matmul", {{mat({2, batch}, M, K, 0), f32}, {mat({2, batch}, K, N, 0), f32}},
             mm_attrs("matmul", 0, 0), opts(K, seed++));
  }
}

TEST(Matmul, BatchBroadcasting) {
  struct Case {
    std::vector<int64_t> a, b;
  };
  std::vector<Case> cases = {
      {{2, 3, 5, 7}, {7, 9}},         // B without batch dims
      {{5, 7}, {4, 7, 9}},            // A without batch dims
      {{2, 1, 5, 7}, {3, 7, 9}},      // 1 broadcasts against 3, missing leading dim
      {{1, 4, 1, 7}, {2, 1, 7, 17}},  // both broadcast, M = 1
  };
  uint32_t seed = 1;
  for (const Case& c : cases) {
    check_op("matmul", {{c.a, f32}, {c.b, f32}}, mm_attrs("matmul", 0, 0), opts(7, seed++));
  }
  // The packed path (M >= 8) and the dot path (small M, transposed B) with broadcast batches.
  check_op("matmul", {{{2, 1, 9, 7}, f32}, {{3, 7, 17}, f32}}, mm_attrs("matmul", 0, 0),
           opts(7, seed++));
  check_op("matmul", {{{2, 1, 3, 20}, f32}, {{3, 9, 20}, f32}}, mm_attrs("matmul", 0, 1),
           opts(20, seed++));
  check_op("matmul", {{{2, 1, 20, 3}, f32}, {{3, 9, 20}, f32}}, mm_attrs("matmul", 1, 1),
           opts(20, seed++));
  EXPECT_EQ(lookup("matmul")
                .infer({{{2, 1, 5, 7}, f32}, {{3, 7, 9}, f32}}, mm_attrs("matmul", 0, 0))[0]
                .shape,
            (std::vector<int64_t>{2, 3, 5, 9}));
  check_op("batch_matmul", {{{1, 5, 7}, f32}, {{3, 7, 9}, f32}}, mm_attrs("batch_matmul", 0, 0),
           opts(7));
}

TEST(Matmul, EveryConfigOfTheSpaceAgrees) {
  Target target = Target::host();
  std::vector<TensorType> types = {{{2, 13, 21}, f32}, {{2, 21, 37}, f32}};
  Attrs attrs = mm_attrs("batch_matmul", 0, 1);
  types[1].shape = {2, 37, 21};
  ConfigSpace space = lookup("batch_matmul").space(types, attrs, target);
  ASSERT_EQ(space.size(), 4u);
  EXPECT_EQ(space[0].name, "tile_m");
  EXPECT_EQ(space[1].name, "tile_n");
  EXPECT_EQ(space[2].name, "k_unroll");
  EXPECT_EQ(space[3].name, "parallel");
  // A small grid: two values of each knob (the default and one other).
  int points = 0;
  for (int64_t tm : {space[0].values[0], space[0].values.back()}) {
    for (int64_t tn : {space[1].values[0], space[1].values.back()}) {
      for (int64_t ku : {space[2].values[0], space[2].values.back()}) {
        for (int64_t par : space[3].values) {
          Config c = {{"tile_m", tm}, {"tile_n", tn}, {"k_unroll", ku}, {"parallel", par}};
          SCOPED_TRACE(::testing::Message() << "tile_m=" << tm << " tile_n=" << tn
                                            << " k_unroll=" << ku << " parallel=" << par);
          check_op("batch_matmul", types, attrs, opts(21, 3, c));
          ++points;
        }
      }
    }
  }
  EXPECT_EQ(points, 16);
}

TEST(Dense, SpaceDefaultsFollowTheRule) {
  // Enough rows: over packed panels, the register tile with the fewest loads per FMA within 3/4
  // of the registers. With AVX-512's 32: 6 rows x 4 vectors (10 loads for 24 FMAs; 12 x 2 takes
  // 14 for 24, 8 x 3 11 for 24). With AVX2's 16: 6 x 2 (4 x 4 would need fewer than 6 rows).
  const std::vector<TensorType> square = {{{256, 256}, f32}, {{256, 256}, f32}};
  ConfigSpace big = lookup("dense").space(square, Attrs("dense", {}),
                                          Target::parse("llvm -mcpu=znver5 -vector-bits=512"));
  EXPECT_EQ(big[0].values[0], 6);
  EXPECT_EQ(big[1].values[0], 64);
  EXPECT_EQ(big[2].values[0], 4);
  EXPECT_EQ(big[3].values[0], 1);
  big = lookup("dense").space(square, Attrs("dense", {}),
                              Target::parse("llvm -mcpu=znver3 -vector-bits=256"));
  EXPECT_EQ(big[0].values[0], 6);
  EXPECT_EQ(big[1].values[0], 16);
  // The LSTM language model's decoder, 35 rows: 6 x 4 vectors (five tiles of 6, one of 5).
  big = lookup("dense").space({{{35, 650}, f32}, {{10000, 650}, f32}}, Attrs("dense", {}),
                              Target::parse("llvm -mcpu=znver5 -vector-bits=512"));
  EXPECT_EQ(big[0].values[0], 6);
  EXPECT_EQ(big[1].values[0], 64);
  // M = 1 against B [K, N]: vectors over N, k outer, the tile widened to 8 accumulator chains
  // within the registers: 8 with AVX-512's 32, with AVX2's 16 as many as leave room for the
  // loads (2 x 6 + 1 of 15: 48 columns). Checked for both, whatever this host is.
  for (const char* cpu : {"llvm -mcpu=znver4 -vector-bits=512", "llvm -mcpu=znver3"}) {
    SCOPED_TRACE(cpu);
    const Target t = Target::parse(cpu);
    const int64_t l = t.vector_lanes_f32();
    ConfigSpace row =
        lookup("matmul").space({{{1, 30}, f32}, {{30, 800}, f32}}, mm_attrs("matmul", 0, 0), t);
    EXPECT_EQ(row[0].values[0], 1);
    EXPECT_EQ(row[1].values[0], l >= 16 ? 8 * l : 6 * l);
    EXPECT_EQ(row[2].values[0], 2);  // 30 is not a multiple of 4
    EXPECT_EQ(row[3].values[0], 0);  // too little work for threads
    // M = 1 against a weight [N, K]: dot products vectorized over K, lanes / 2 rows per block.
    ConfigSpace dot =
        lookup("dense").space({{{1, 30}, f32}, {{800, 30}, f32}}, Attrs("dense", {}), t);
    EXPECT_EQ(dot[0].values[0], 1);
    EXPECT_EQ(dot[1].values[0], std::max<int64_t>(l / 2, 1));
    EXPECT_EQ(dot[2].values[0], 1);
  }
}

TEST(Dense, EveryConfigOfSmallRowSpacesAgrees) {
  Target target = Target::host();
  struct Case {
    std::string op;
    std::vector<TensorType> types;
    Attrs attrs;
    int64_t K;
  };
  std::vector<Case> cases = {
      {"dense", {{{3, 37}, f32}, {{21, 37}, f32}, {{21}, f32}}, Attrs("dense", {}), 37},
      {"dense", {{{1, 64}, f32}, {{19, 64}, f32}}, Attrs("dense", {}), 64},
      {"matmul", {{{2, 33}, f32}, {{33, 45}, f32}}, mm_attrs("matmul", 0, 0), 33},
  };
  for (const Case& c : cases) {
    ConfigSpace space = lookup(c.op).space(c.types, c.attrs, target);
    ASSERT_EQ(space.size(), 4u);
    for (int64_t tn : space[1].values) {
      for (int64_t ku : space[2].values) {
        for (int64_t par : space[3].values) {
          Config cfg = {
              {"tile_m", space[0].values[0]}, {"tile_n", tn}, {"k_unroll", ku}, {"parallel", par}};
          SCOPED_TRACE(::testing::Message()
                       << c.op << " tile_n=" << tn << " k_unroll=" << ku << " parallel=" << par);
          check_op(c.op, c.types, c.attrs, opts(c.K, 5, cfg));
        }
      }
    }
  }
}

TEST(DenseErrors, MismatchedInnerDimension) {
  std::string msg = testing::user_error([] {
    lookup("dense").infer({{{4, 8}, f32}, {{5, 9}, f32}}, Attrs("dense", {}));
  });
  EXPECT_NE(msg.find("dense: inner dimensions differ: input 'x' [4, 8] has K = 8 but input "
                     "'weight' [5, 9] (transposed) has K = 9"),
            std::string::npos)
      << msg;
  msg = testing::user_error([] {
    lookup("matmul").infer({{{3, 4, 8}, f32}, {{9, 5}, f32}}, mm_attrs("matmul", 0, 0));
  });
  EXPECT_NE(msg.find("matmul: inner dimensions differ: input 'A' [3, 4, 8] has K = 8 but input "
                     "'B' [9, 5] has K = 9"),
            std::string::npos)
      << msg;
}

TEST(DenseErrors, BadRanksAndShapes) {
  auto expect = [](const std::string& op, const std::vector<TensorType>& in, const Attrs& a,
                   const std::string& want) {
    std::string msg = testing::user_error([&] { lookup(op).infer(in, a); });
    EXPECT_NE(msg.find(want), std::string::npos) << msg;
  };
  expect("dense", {{{2, 3, 4}, f32}, {{5, 4}, f32}}, Attrs("dense", {}),
         "dense: input 'x' must have rank 2 [M, K], got [2, 3, 4]");
  expect("dense", {{{3, 4}, f32}, {{4}, f32}}, Attrs("dense", {}),
         "dense: input 'weight' must have rank 2 [N, K], got [4]");
  expect("dense", {{{3, 4}, f32}, {{5, 4}, f32}, {{4}, f32}}, Attrs("dense", {}),
         "dense: input 'bias' must have shape [5]");
  expect("matmul", {{{4}, f32}, {{4, 5}, f32}}, mm_attrs("matmul", 0, 0),
         "matmul: input 'A' must have rank >= 2, got [4]");
  expect("batch_matmul", {{{4, 5}, f32}, {{2, 5, 5}, f32}}, mm_attrs("batch_matmul", 0, 0),
         "batch_matmul: input 'A' must have rank 3, got [4, 5]");
  expect("batch_matmul", {{{2, 4, 5}, f32}, {{3, 5, 5}, f32}}, mm_attrs("batch_matmul", 0, 0),
         "batch_matmul: batch dimensions of input 'A' [2, 4, 5] and input 'B' [3, 5, 5] do not "
         "broadcast");
  expect("matmul", {{{3, 4}, f32}, {{4, 5}, f32}}, mm_attrs("matmul", 2, 0),
         "matmul: attribute 'trans_a' must be 0 or 1, got 2");
  expect("matmul", {{{3, 4}, f32}}, mm_attrs("matmul", 0, 0), "matmul: expects 2 inputs");
}

TEST(Dense, Pattern) {
  for (const char* op : {"dense", "matmul", "batch_matmul"}) {
    EXPECT_EQ(lookup(op).pattern, Pattern::kComplexOutFusable) << op;
  }
}

// dense_packed against its reference on the weight packed by dense_pack_weight (checked against
// its own reference first), and against dense's reference on the unpacked weight.
void check_packed(int64_t M, int64_t N, int64_t K, int64_t nb, bool bias, uint32_t seed,
                  Config config = {}, std::vector<int64_t> batch = {}) {
  SCOPED_TRACE(::testing::Message() << "M=" << M << " N=" << N << " K=" << K << " nb=" << nb
                                    << " bias=" << bias << " batch dims=" << batch.size());
  std::mt19937 rng(seed);
  std::vector<int64_t> xshape = batch;
  xshape.insert(xshape.end(), {M, K});
  runtime::NDArray x = ops_testing::random_array({xshape, f32}, rng);
  runtime::NDArray w = ops_testing::random_array({{N, K}, f32}, rng);
  runtime::NDArray b = ops_testing::random_array({{N}, f32}, rng);
  Attrs pack_attrs("dense_pack_weight", {{"block", nb}});
  CheckOptions po;
  po.tol = 0;
  po.inputs = {w};
  check_op("dense_pack_weight", {{{N, K}, f32}}, pack_attrs, po);
  runtime::NDArray packed = lookup("dense_pack_weight").reference({w}, pack_attrs)[0];
  std::vector<TensorType> types = {{xshape, f32}, {packed.shape(), f32}};
  std::vector<runtime::NDArray> ins = {x, packed};
  if (bias) {
    types.push_back({{N}, f32});
    ins.push_back(b);
  }
  Attrs attrs("dense_packed", {{"units", N}});
  CheckOptions o = opts(K, seed, std::move(config));
  o.inputs = ins;
  check_op("dense_packed", types, attrs, o);
  // The packed reference agrees with dense's on the unpacked weight (batch dimensions are rows
  // of one product: x flattened to [rows, K]).
  int64_t rows = x.numel() / K;
  runtime::NDArray x2 = runtime::NDArray::empty({rows, K}, runtime::dl_float32());
  std::copy_n(x.data_as<float>(), x.numel(), x2.data_as<float>());
  std::vector<runtime::NDArray> dense_in = {x2, w};
  if (bias) dense_in.push_back(b);
  runtime::NDArray want = lookup("dense").reference(dense_in, Attrs("dense", {}))[0];
  runtime::NDArray got = lookup("dense_packed").reference(ins, attrs)[0];
  for (int64_t i = 0; i < want.numel(); ++i)
    ASSERT_NEAR(got.data_as<float>()[i], want.data_as<float>()[i], 1e-5) << i;
}

TEST(DensePacked, RandomShapes) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int64_t> dn(1, 90), dk(1, 40);
  uint32_t seed = 1;
  for (int64_t M : {1, 3, 8, 37}) {
    int64_t N = dn(rng), K = dk(rng) | 1;  // K odd
    check_packed(M, N, K, 16, seed % 2 == 0, seed);
    ++seed;
  }
  check_packed(1, 33, 17, 16, true, seed++);  // N not a multiple of nb
  check_packed(3, 45, 9, 8, false, seed++);   // half a vector per panel
  check_packed(8, 23, 5, 5, true, seed++);    // panels that are not vectors
  check_packed(1, 1, 1, 16, true, seed++);
}

// x with batch dimensions: [1, M, K] (a sequence at batch 1), [S, 1, K] (seq-first: the
// batch becomes the tile's rows), [2, 3, M, K].
TEST(DensePacked, BatchDimensionsShareTheWeight) {
  check_packed(37, 45, 19, 16, true, 21, {}, {1});
  check_packed(1, 40, 13, 16, true, 22, {}, {23});
  check_packed(1, 17, 8, 16, false, 23, {}, {2, 5});
  check_packed(4, 33, 11, 16, true, 24, {}, {2, 3});
}

TEST(DensePacked, SeqFirstRowsFoldIntoTheTile) {
  // [S, 1, K]: the rule tiles S rows like a [S, K] product (8 rows x 3 vectors with AVX-512, 6 x 2
  // with AVX2; not 1 row), and every tile_m of the space agrees with the reference.
  Target target = Target::host();
  std::vector<TensorType> types = {{{23, 1, 13}, f32}, {{3, 13, 16}, f32}};
  ConfigSpace space =
      lookup("dense_packed").space(types, Attrs("dense_packed", {{"units", int64_t{40}}}), target);
  EXPECT_EQ(space[0].values[0], target.vector_lanes_f32() >= 16 ? 8 : 6);
  for (int64_t tm : space[0].values) {
    Config c = {{"tile_m", tm},
                {"tile_n", space[1].values[0]},
                {"k_unroll", space[2].values[0]},
                {"parallel", space[3].values[0]}};
    check_packed(1, 40, 13, 16, true, 25, c, {23});
  }
}

// ConvNeXt's last stages: a Linear layer over batches of 7 or 14 rows. With 32 registers the
// rule tiles 7 rows (one tile, not 6 + a one-row tail); with 16 it keeps 6. The weight, larger
// than the activations, is read with its column blocks outside the batches.
TEST(DensePacked, ShortBatchesTakeOneTileOfRows) {
  std::vector<TensorType> types = {{{1, 7, 7, 24}, f32}, {{4, 24, 16}, f32}};
  Attrs units("dense_packed", {{"units", int64_t{64}}});
  const OpDef& op = lookup("dense_packed");
  EXPECT_EQ(
      op.space(types, units, Target::parse("llvm -mcpu=znver5 -vector-bits=512"))[0].values[0], 7);
  EXPECT_EQ(
      op.space(types, units, Target::parse("llvm -mcpu=znver3 -vector-bits=256"))[0].values[0], 6);
  Config seven = {{"tile_m", 7}, {"tile_n", 32}, {"k_unroll", 4}, {"parallel", 1}};
  check_packed(7, 64, 24, 16, true, 27, seven, {1, 7});
  check_packed(14, 96, 13, 16, false, 28,
               {{"tile_m", 7}, {"tile_n", 32}, {"k_unroll", 1}, {"parallel", 0}}, {2, 2});
  check_packed(7, 64, 24, 16, true, 29, {}, {3});  // the host's rule
}

TEST(DensePacked, LstmGateShape) {
  // The LSTM language model's gate product, scaled down: one row, wide N, bias.
  check_packed(1, 520, 260, 16, true, 3);
}

TEST(DensePacked, EveryConfigOfTheSpaceAgrees) {
  Target target = Target::host();
  std::vector<TensorType> types = {{{3, 21}, f32}, {{3, 21, 16}, f32}};
  ConfigSpace space =
      lookup("dense_packed").space(types, Attrs("dense_packed", {{"units", int64_t{37}}}), target);
  ASSERT_EQ(space.size(), 4u);
  for (int64_t tn : space[1].values) {
    for (int64_t ku : space[2].values) {
      Config c = {{"tile_m", space[0].values[0]},
                  {"tile_n", tn},
                  {"k_unroll", ku},
                  {"parallel", space[3].values[0]}};
      check_packed(3, 37, 21, 16, true, 9, c);
    }
  }
}

TEST(DensePacked, GemvRuleKeepsEightChains) {
  // M = 1: k outer, 8 accumulator vectors (panels) in flight with AVX-512's 32 registers, 6 with
  // AVX2's 16, k unrolled, panels parallel. Checked for both, whatever this host is.
  for (const char* cpu : {"llvm -mcpu=znver4 -vector-bits=512", "llvm -mcpu=znver3"}) {
    SCOPED_TRACE(cpu);
    const Target t = Target::parse(cpu);
    const int64_t lanes = t.vector_lanes_f32();
    ConfigSpace s = lookup("dense_packed")
                        .space({{{1, 1300}, f32}, {{163, 1300, 16}, f32}},
                               Attrs("dense_packed", {{"units", int64_t{2600}}}), t);
    EXPECT_EQ(s[0].values[0], 1);
    EXPECT_EQ(s[1].values[0], lanes >= 16 ? 8 * lanes : 6 * lanes);
    EXPECT_EQ(s[2].values[0], 4);
    EXPECT_EQ(s[3].values[0], 1);
  }
}

// dense_pack_weight with batch dimensions (lstm's [dirs, G, K] weights): compiled against the
// reference, and the reference against the definition, packed[b, no, k, ni] = w[b, no*nb + ni, k]
// (zero past N).
TEST(DensePackWeight, BatchDimensions) {
  Attrs a("dense_pack_weight", {{"block", int64_t{16}}});
  check_op("dense_pack_weight", {{{2, 20, 7}, f32}}, a);
  std::mt19937 rng(5);
  runtime::NDArray w = ops_testing::random_array({{2, 20, 7}, f32}, rng);
  runtime::NDArray p = lookup("dense_pack_weight").reference({w}, a)[0];
  ASSERT_EQ(p.shape(), (std::vector<int64_t>{2, 2, 7, 16}));
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t n = 0; n < 32; ++n)
      for (int64_t k = 0; k < 7; ++k) {
        float want = n < 20 ? w.data_as<float>()[(b * 20 + n) * 7 + k] : 0.0f;
        ASSERT_EQ(p.data_as<float>()[((b * 2 + n / 16) * 7 + k) * 16 + n % 16], want);
      }
}

TEST(DensePackedErrors, ShapesAndAttributes) {
  auto expect = [](const std::string& op, const std::vector<TensorType>& in, const Attrs& a,
                   const std::string& want) {
    std::string msg = testing::user_error([&] { lookup(op).infer(in, a); });
    EXPECT_NE(msg.find(want), std::string::npos) << msg;
  };
  Attrs units("dense_packed", {{"units", int64_t{20}}});
  expect("dense_pack_weight", {{{6}, f32}}, Attrs("dense_pack_weight", {}),
         "dense_pack_weight: input 'weight' must have rank 2 or more [batch.., N, K], got [6]");
  expect("dense_pack_weight", {{{4, 5}, f32}}, Attrs("dense_pack_weight", {{"block", int64_t{0}}}),
         "dense_pack_weight: attribute 'block' must be positive, got 0");
  expect("dense_packed", {{{3, 7}, f32}, {{2, 8, 16}, f32}}, units,
         "dense_packed: inner dimensions differ: input 'x' [3, 7] has K = 7 but input 'packed' "
         "[2, 8, 16] has K = 8");
  expect("dense_packed", {{{3, 7}, f32}, {{3, 7, 16}, f32}}, units,
         "dense_packed: input 'packed' [3, 7, 16] does not hold units = 20 rows in panels of 16 "
         "(expected 2 panels)");
  expect("dense_packed", {{{3, 7}, f32}, {{2, 7, 16}, f32}, {{16}, f32}}, units,
         "dense_packed: input 'bias' must have shape [20]");
  expect("dense_packed", {{{7}, f32}, {{2, 7, 16}, f32}}, units,
         "dense_packed: input 'x' must have rank 2 or more [batch.., M, K], got [7]");
  expect("dense_packed", {{{3, 7}, f32}, {{2, 7}, f32}}, units,
         "dense_packed: input 'packed' must have rank 3 [N/nb, K, nb], got [2, 7]");
  expect("dense_packed", {{{3, 7}, f32}, {{2, 7, 16}, f32}}, Attrs("dense_packed", {}), "units");
  EXPECT_EQ(lookup("dense_pack_weight").pattern, Pattern::kInjective);
  EXPECT_EQ(lookup("dense_packed").pattern, Pattern::kComplexOutFusable);
}

}  // namespace
}  // namespace anvil::ops
