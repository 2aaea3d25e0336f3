// Loop-nest features for the cost model: a fixed layout, deterministic, moved by the knobs that
// change the loop structure as those knobs say, equal to hand-computed strides, touched bytes and
// reuse on small matmul schedules, and errors that name the task.
#include "anvil/autotune/features.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "anvil/ir/op.h"
#include "anvil/ir/visitor.h"
#include "anvil/lower/lower.h"
#include "anvil/models/models.h"
#include "anvil/support/error.h"

namespace anvil::autotune {

namespace {

using namespace ir;

float lg(double x) {
  return static_cast<float>(std::log2(1.0 + x));
}

int feature(const std::string& name) {
  for (int i = 0; i < kNumFeatures; ++i)
    if (feature_name(i) == name) return i;
  ADD_FAILURE() << "no feature named " << name;
  return 0;
}

// The value of the named feature.
float at(const std::vector<float>& f, const std::string& name) {
  return f[static_cast<size_t>(feature(name))];
}

// The conv2d_nchwc layer of the brief: 8 input blocks of 16 channels at 28x28 to 8 output blocks
// of 16, 3x3, padding 1.
Task conv_task() {
  Task t;
  t.op = "conv2d_nchwc";
  t.inputs = {{{1, 8, 28, 28, 16}, DataType::Float32()},
              {{8, 8, 3, 3, 16, 16}, DataType::Float32()}};
  t.attrs = ops::Attrs(
      t.op, {{"strides", std::vector<int64_t>{1, 1}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  t.target = Target::host().str();
  return t;
}

// Every knob named, so that only the one a test changes differs.
ops::Config conv_config(int64_t ow_block, int64_t oc_tile) {
  return {{"ow_block", ow_block}, {"oc_tile", oc_tile}, {"unroll_kw", 0},
          {"unroll_ib", 0},       {"oh_group", 0},      {"inline_pad", 0}};
}

TEST(Features, LayoutAndNames) {
  std::set<std::string> names;
  for (int i = 0; i < kNumFeatures; ++i) names.insert(feature_name(i));
  EXPECT_EQ(names.size(), static_cast<size_t>(kNumFeatures)) << "feature names must be unique";
  EXPECT_EQ(feature_name(0), "nest.depth");
  EXPECT_EQ(feature_name(16), "buf0.bytes_l1");
  EXPECT_EQ(feature_name(kNumFeatures - 8), "knob0");
  EXPECT_EQ(feature_name(kNumFeatures - 1), "knob7");
  EXPECT_THROW(feature_name(kNumFeatures), Error);
  EXPECT_THROW(feature_name(-1), Error);
}

TEST(Features, FixedLengthFiniteAndDeterministic) {
  Task t = conv_task();
  ops::ConfigSpace space = t.space();
  ASSERT_GE(space.size(), 4u);
  std::vector<float> a = extract_features(t, {});
  ASSERT_EQ(a.size(), static_cast<size_t>(kNumFeatures));
  for (int i = 0; i < kNumFeatures; ++i) EXPECT_TRUE(std::isfinite(a[i])) << feature_name(i);
  // The same point again, from a copy of the task: the very same vector.
  Task copy = t;
  EXPECT_EQ(extract_features(copy, {}), a);
  // The empty config is the default point (point 0 of the space).
  EXPECT_EQ(extract_features(t, config_at(space, 0)), a);
  // The knobs in the space's order, log2(1 + value); past the space's knobs, zeros.
  for (size_t k = 0; k < 8; ++k) {
    float want = k < space.size() ? lg(static_cast<double>(space[k].values[0])) : 0.0f;
    EXPECT_FLOAT_EQ(a[static_cast<size_t>(kNumFeatures - 8) + k], want) << "knob " << k;
  }
}

TEST(Features, MainNestOfTheConvolution) {
  // The reduction update is the main store: 2 float operations per iteration of 8 x 28 x 28 x
  // 16 outputs x 8 x 3 x 3 x 16 reduction steps, where ow_block 10 pads the 28 columns to 30,
  // guarded.
  std::vector<float> f = extract_features(conv_task(), conv_config(10, 2));
  const double outputs = 8.0 * 28 * 30 * 16, steps = 8.0 * 3 * 3 * 16;
  EXPECT_FLOAT_EQ(at(f, "nest.body_flops"), lg(2));
  EXPECT_FLOAT_EQ(at(f, "nest.iters"), lg(outputs * steps));
  EXPECT_FLOAT_EQ(at(f, "nest.total_flops"), lg(2 * outputs * steps));  // the rest copies
  EXPECT_EQ(at(f, "nest.guards"), 1.0f);
  EXPECT_FLOAT_EQ(at(f, "nest.vectorized"), lg(16));
  // n, the 4 channel tiles and the 28 rows fused into the parallel loop; 3 column blocks, the
  // reduction serial.
  EXPECT_FLOAT_EQ(at(f, "nest.parallel"), lg(4 * 28));
  EXPECT_FLOAT_EQ(at(f, "nest.serial"), lg(3 * steps));
  // The padded source (computed at the root, its rows in parallel) and the accumulator tile.
  EXPECT_EQ(at(f, "nest.allocs"), 2.0f);
  EXPECT_FLOAT_EQ(at(f, "nest.alloc_bytes"), lg((8.0 * 30 * 30 * 16 + 2 * 10 * 16) * 4));
}

TEST(Features, RegisterTileKnobsMoveTheInnermostLevels) {
  Task t = conv_task();
  std::vector<float> narrow = extract_features(t, conv_config(4, 2));
  std::vector<float> wide = extract_features(t, conv_config(14, 2));
  // Buffer 0 is the accumulator tile the main store writes: oc_tile x ow_block x 16 floats,
  // indexed by the three innermost loops (oc_tile and ow_block unrolled, the 16 lanes
  // vectorized) and reused across the reduction around them.
  for (int64_t ow : {4, 14}) {
    const std::vector<float>& f = ow == 4 ? narrow : wide;
    EXPECT_FLOAT_EQ(at(f, "buf0.bytes_l1"), lg(16 * 4)) << "ow_block " << ow;
    EXPECT_FLOAT_EQ(at(f, "buf0.bytes_l2"), lg(ow * 16 * 4)) << "ow_block " << ow;
    EXPECT_FLOAT_EQ(at(f, "buf0.bytes_l3"), lg(2 * ow * 16 * 4)) << "ow_block " << ow;
    EXPECT_FLOAT_EQ(at(f, "buf0.stride"), lg(1));
    EXPECT_FLOAT_EQ(at(f, "buf0.vector"), 1.0f);
    EXPECT_FLOAT_EQ(at(f, "nest.unrolled"), lg(2 * ow)) << "ow_block " << ow;
    EXPECT_FLOAT_EQ(at(f, "nest.inner_extent"), lg(16));
    // Both divide 28: no guard left around the update.
    EXPECT_EQ(at(f, "nest.guards"), 0.0f) << "ow_block " << ow;
    EXPECT_FLOAT_EQ(at(f, "knob0"), lg(static_cast<double>(ow)));
  }
  // The reduction (8 x 3 x 3 x 16 steps) is the same; the outer column blocks are fewer.
  EXPECT_FLOAT_EQ(at(narrow, "nest.iters"), at(wide, "nest.iters"));
  EXPECT_GT(at(narrow, "nest.serial"), at(wide, "nest.serial"));

  // oc_tile: the accumulator spans more channel blocks; the weight vectors of one step too.
  std::vector<float> one = extract_features(t, conv_config(7, 1));
  std::vector<float> four = extract_features(t, conv_config(7, 4));
  EXPECT_FLOAT_EQ(at(one, "buf0.bytes_l3"), lg(1 * 7 * 16 * 4));
  EXPECT_FLOAT_EQ(at(four, "buf0.bytes_l3"), lg(4 * 7 * 16 * 4));
  EXPECT_FLOAT_EQ(at(one, "nest.unrolled"), lg(7));
  EXPECT_FLOAT_EQ(at(four, "nest.unrolled"), lg(28));

  // Unrolling kw multiplies the unrolled extent by the kernel width.
  ops::Config kw = conv_config(7, 2);
  kw["unroll_kw"] = 1;
  EXPECT_FLOAT_EQ(at(extract_features(t, kw), "nest.unrolled"), lg(2 * 7 * 3));
  // Inlining the padding removes the padded source's allocation.
  ops::Config pad = conv_config(7, 2);
  std::vector<float> staged = extract_features(t, pad);
  pad["inline_pad"] = 1;
  std::vector<float> inlined = extract_features(t, pad);
  EXPECT_EQ(at(staged, "nest.allocs") - at(inlined, "nest.allocs"), 1.0f);
}

// C[i, j] = sum_k A[i, k] * B[k, j]: 16 x 32 from 16 x 24 and 24 x 32 floats.
struct MatMul {
  te::Tensor A = te::placeholder({16, 24}, DataType::Float32(), "A");
  te::Tensor B = te::placeholder({24, 32}, DataType::Float32(), "B");
  IterVar k = te::reduce_axis(24, "k");
  te::Tensor C = te::compute(
      {16, 32}, [&](Var i, Var j) { return te::sum(A(i, k->var) * B(k->var, j), {k}); }, "C");
  te::Schedule s{{C}};

  std::vector<float> features() const {
    LowerOptions o;
    o.stop_after = "simplify";
    return loop_nest_features(lower(s, {A, B, C}, "matmul", o).body, {}, {});
  }
};

TEST(Features, HandComputedMatmulWithAVectorizedSplit) {
  // for i in 16, jo in 4 { for k in 24 { vectorized ji in 8: C[i*32 + jo*8 + ji] += A[i*24 + k]
  // * B[k*32 + jo*8 + ji] } }
  MatMul m;
  te::Stage sc = m.s[m.C];
  auto [jo, ji] = sc.split(sc.axis()[1], 8);
  sc.reorder({sc.axis()[0], jo, m.k, ji});
  sc.vectorize(ji);
  std::vector<float> f = m.features();

  EXPECT_EQ(at(f, "nest.depth"), 4.0f);
  EXPECT_FLOAT_EQ(at(f, "nest.parallel"), 0.0f);
  EXPECT_FLOAT_EQ(at(f, "nest.vectorized"), lg(8));
  EXPECT_FLOAT_EQ(at(f, "nest.unrolled"), 0.0f);
  EXPECT_FLOAT_EQ(at(f, "nest.serial"), lg(16 * 4 * 24));
  EXPECT_FLOAT_EQ(at(f, "nest.iters"), lg(16 * 4 * 24 * 8));
  EXPECT_FLOAT_EQ(at(f, "nest.total_iters"), lg(16 * 4 * 24 * 8 + 16 * 32));  // + the init
  EXPECT_FLOAT_EQ(at(f, "nest.body_flops"), lg(2));
  EXPECT_FLOAT_EQ(at(f, "nest.total_flops"), lg(2 * 16 * 4 * 24 * 8));
  EXPECT_EQ(at(f, "nest.stores_inner"), 1.0f);
  EXPECT_EQ(at(f, "nest.allocs"), 0.0f);

  // Buffer 0: C, strides (i 32, jo 8, k 0, ji 1); the innermost levels ji, k, jo, i touch 8, 8,
  // 32, 512 floats; reused over k.
  EXPECT_FLOAT_EQ(at(f, "buf0.bytes_l1"), lg(8 * 4));
  EXPECT_FLOAT_EQ(at(f, "buf0.bytes_l2"), lg(8 * 4));
  EXPECT_FLOAT_EQ(at(f, "buf0.bytes_l3"), lg(32 * 4));
  EXPECT_FLOAT_EQ(at(f, "buf0.bytes_l4"), lg(512 * 4));
  EXPECT_FLOAT_EQ(at(f, "buf0.bytes_all"), lg(512 * 4));
  EXPECT_FLOAT_EQ(at(f, "buf0.reuse"), lg(24));
  EXPECT_FLOAT_EQ(at(f, "buf0.stride"), lg(1));
  EXPECT_FLOAT_EQ(at(f, "buf0.vector"), 1.0f);
  // Then the loads by footprint: B (768 floats) before A (384).
  // B: strides (i 0, jo 8, k 32, ji 1): 8, 8 x 24, 32 x 24, 32 x 24 floats; reused over i.
  EXPECT_FLOAT_EQ(at(f, "buf1.bytes_l1"), lg(8 * 4));
  EXPECT_FLOAT_EQ(at(f, "buf1.bytes_l2"), lg(8 * 24 * 4));
  EXPECT_FLOAT_EQ(at(f, "buf1.bytes_l3"), lg(32 * 24 * 4));
  EXPECT_FLOAT_EQ(at(f, "buf1.bytes_l4"), lg(32 * 24 * 4));
  EXPECT_FLOAT_EQ(at(f, "buf1.reuse"), lg(16));
  EXPECT_FLOAT_EQ(at(f, "buf1.stride"), lg(1));
  EXPECT_FLOAT_EQ(at(f, "buf1.vector"), 1.0f);
  // A: strides (i 24, jo 0, k 1, ji 0): one element per ji (a broadcast), 24 per k, 24 x 16.
  EXPECT_FLOAT_EQ(at(f, "buf2.bytes_l1"), lg(4));
  EXPECT_FLOAT_EQ(at(f, "buf2.bytes_l2"), lg(24 * 4));
  EXPECT_FLOAT_EQ(at(f, "buf2.bytes_l3"), lg(24 * 4));
  EXPECT_FLOAT_EQ(at(f, "buf2.bytes_l4"), lg(16 * 24 * 4));
  EXPECT_FLOAT_EQ(at(f, "buf2.reuse"), lg(8 * 4));
  EXPECT_FLOAT_EQ(at(f, "buf2.stride"), 0.0f);
  EXPECT_FLOAT_EQ(at(f, "buf2.vector"), 0.5f);
  // No further buffers; no knobs.
  for (int i = feature("buf3.bytes_l1"); i < kNumFeatures; ++i)
    EXPECT_EQ(f[static_cast<size_t>(i)], 0.0f) << feature_name(i);
}

TEST(Features, HandComputedMatmulWithTheReductionInnermost) {
  // parallel f in 64 (i, jo fused) { serial ji in 8 { unrolled k in 24: C[floordiv(f, 4)*32 +
  // floormod(f, 4)*8 + ji] += A[floordiv(f, 4)*24 + k] * B[k*32 + floormod(f, 4)*8 + ji] } }
  MatMul m;
  te::Stage sc = m.s[m.C];
  auto [jo, ji] = sc.split(sc.axis()[1], 8);
  sc.reorder({sc.axis()[0], jo, ji, m.k});
  IterVar fused = sc.fuse(sc.axis()[0], jo);
  sc.parallel(fused);
  sc.unroll(m.k);
  std::vector<float> f = m.features();

  EXPECT_FLOAT_EQ(at(f, "nest.parallel"), lg(64));
  EXPECT_FLOAT_EQ(at(f, "nest.unrolled"), lg(24));
  EXPECT_FLOAT_EQ(at(f, "nest.vectorized"), 0.0f);
  EXPECT_FLOAT_EQ(at(f, "nest.serial"), lg(8));
  // C: stride 0 along k; each fused value is one (row, column block) pair: 64 x 8 floats in all.
  EXPECT_FLOAT_EQ(at(f, "buf0.stride"), 0.0f);
  EXPECT_FLOAT_EQ(at(f, "buf0.bytes_l1"), lg(4));
  EXPECT_FLOAT_EQ(at(f, "buf0.bytes_l2"), lg(8 * 4));
  EXPECT_FLOAT_EQ(at(f, "buf0.bytes_all"), lg(512 * 4));
  EXPECT_FLOAT_EQ(at(f, "buf0.reuse"), lg(24));
  EXPECT_FLOAT_EQ(at(f, "buf0.vector"), 0.0f);
  // B (stride 32 along k): 24, 24 x 8 floats; the fused loop reaches it through floormod(f, 4)
  // only: 4 column blocks, the whole of B, each element read by the 16 rows.
  EXPECT_FLOAT_EQ(at(f, "buf1.stride"), lg(32));
  EXPECT_FLOAT_EQ(at(f, "buf1.bytes_l1"), lg(24 * 4));
  EXPECT_FLOAT_EQ(at(f, "buf1.bytes_l2"), lg(24 * 8 * 4));
  EXPECT_FLOAT_EQ(at(f, "buf1.bytes_all"), lg(24 * 32 * 4));
  EXPECT_FLOAT_EQ(at(f, "buf1.reuse"), lg(16));
  // A (stride 1 along k): 24 floats, the same for every ji; through floordiv(f, 4): 16 rows,
  // each read by 4 column blocks x 8 columns.
  EXPECT_FLOAT_EQ(at(f, "buf2.stride"), lg(1));
  EXPECT_FLOAT_EQ(at(f, "buf2.bytes_l1"), lg(24 * 4));
  EXPECT_FLOAT_EQ(at(f, "buf2.bytes_l2"), lg(24 * 4));
  EXPECT_FLOAT_EQ(at(f, "buf2.bytes_all"), lg(16 * 24 * 4));
  EXPECT_FLOAT_EQ(at(f, "buf2.reuse"), lg(8 * 4));
}

// Every tunable task of a model: a vector of finite features for several points, and points that
// differ in loop structure give different vectors.
TEST(Features, EveryTaskOfAModel) {
  std::vector<ModelTask> tasks = extract_tasks(models::build_model("dqn"), Target::host(), {});
  ASSERT_FALSE(tasks.empty());
  for (const ModelTask& mt : tasks) {
    ops::ConfigSpace space = mt.task.space();
    std::set<std::vector<float>> distinct;
    const int64_t n = std::min<int64_t>(space_size(space), 6);
    for (int64_t i = 0; i < n; ++i) {
      std::vector<float> f = extract_features(mt.task, config_at(space, i));
      ASSERT_EQ(f.size(), static_cast<size_t>(kNumFeatures));
      for (int j = 0; j < kNumFeatures; ++j)
        ASSERT_TRUE(std::isfinite(f[j])) << mt.task.str() << " " << feature_name(j);
      distinct.insert(f);
    }
    // The knob slots alone tell the points apart.
    EXPECT_EQ(distinct.size(), static_cast<size_t>(n)) << mt.task.str();
  }
}

TEST(Features, InvalidTasksThrowNamingThem) {
  Task t = conv_task();
  t.inputs[1].shape = {8, 4, 3, 3, 16, 16};  // 4 input blocks against the input's 8
  try {
    extract_features(t, {});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("conv2d_nchwc [1, 8, 28, 28, 16] x [8, 4, 3, 3, 16, 16]"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("channel blocks"), std::string::npos) << what;
  }
  Task unknown = conv_task();
  unknown.op = "no_such_op";
  try {
    extract_features(unknown, {});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_op"), std::string::npos) << e.what();
  }
}

// What lower's stop_after keeps: the annotated loops before vectorize and unroll remove them.
class CountLoops final : public IRVisitor {
 public:
  using IRVisitor::visit;
  int vectorized = 0, loops = 0;
  void visit(const For* op) override {
    ++loops;
    vectorized += op->kind == ForKind::kVectorized;
    IRVisitor::visit(op);
  }
};

TEST(Features, LowerStopsAfterTheNamedPass) {
  MatMul m;
  te::Stage sc = m.s[m.C];
  auto [jo, ji] = sc.split(sc.axis()[1], 8);
  sc.vectorize(ji);
  LowerOptions o;
  o.stop_after = "simplify";
  CountLoops before;
  before.visit(lower(m.s, {m.A, m.B, m.C}, "mm", o).body);
  EXPECT_GE(before.vectorized, 1);
  CountLoops after;
  after.visit(lower(m.s, {m.A, m.B, m.C}, "mm").body);
  EXPECT_EQ(after.vectorized, 0);
  EXPECT_LT(after.loops, before.loops);
  o.stop_after = "vectorise";
  try {
    lower(m.s, {m.A, m.B, m.C}, "mm", o);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'vectorise' is not a pass"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace anvil::autotune
