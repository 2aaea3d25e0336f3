// Integer matrix products on int8 weights (MatMulInteger, QLinearMatMul and the quantized
// Linear layers the importer maps to them):
//
//   dense_int8_pack_weight  w int8 [K, N] -> [ceil(N/16), ceil(K/4), 16, 4] (zero past N and K),
//                 attribute block = 16: each output column's weights in groups of 4 bytes along
//                 k, 16 columns side by side, the operand a dot-product instruction reads whole
//   dense_int8    x uint8 [.., K], packed int8 [ceil(N/16), ceil(K/4), 16, 4], attribute
//                 units = N                                           -> int32 [.., N]
//     acc[r, n] = sum over k of x[r, k] * packed[n/16, k/4, n%16, k%4]  (r: x's rows, flattened;
//     n up to the packed columns; k up to a multiple of 4, x read through a zero-padded copy
//     when K is not one), then out[.., m, n] = acc[r, n] for n < N. Exact int32 arithmetic.
//
// Default x86 schedule: the output in tiles of tile_m rows by tile_n columns (a multiple of 16
// that divides the packed columns, so that no tile reaches past the packed weight), the tiles in
// parallel when the work pays for the threads; per tile an accumulator tile in registers (the acc
// stage computed at the tile loop), k in steps of 4 outside the tile's rows and vectors, and each
// step's vector of output columns tensorized (te/tensor_intrin.h): vpdpbusd where the CPU has it
// at the vector's width; else AVX2's vpmaddubsw + vpmaddwd where the values cannot saturate a
// pair (7-bit activations, or weights in [-64, 64]: the constants' values decide); else the exact
// dot product, which the LLVM back end computes with vpmaddwd on int16. The epilogue (a zero point
// correction, a requantization) runs on the output tile, vectorized.
//
// The default rule: vector registers hold the tile; with 16 (AVX2) at most 12 accumulators and
// 2 to 4 columns vectors, with 32 (AVX-512) at most 24; one row (a matrix-vector product, the
// batch-1 case) widens the tile to up to 8 vectors, for independent chains.
#include <algorithm>
#include <numeric>

#include "anvil/ir/op.h"
#include "anvil/ops/families.h"
#include "anvil/ops/int8_dot.h"
#include "anvil/ops/op.h"
#include "anvil/ops/schedule_util.h"
#include "anvil/support/error.h"
#include "anvil/support/int_math.h"

namespace anvil::ops {

namespace {

using ir::DataType;
using ir::Expr;
using ir::IterVar;
using ir::Var;

constexpr int kBlock = 16;  // packed columns per block
constexpr int kGroup = 4;   // bytes of k per column in one dot-product step

// ---- dense_int8_pack_weight

std::vector<TensorType> pack_infer(const std::vector<TensorType>& in, const Attrs& attrs) {
  const std::string op = "dense_int8_pack_weight";
  ANVIL_CHECK(in.size() == 1, op, ": expects 1 input (w), got ", in.size());
  ANVIL_CHECK(in[0].dtype == DataType::Int(8), op, ": input 'w' must be int8, not ", in[0].dtype);
  ANVIL_CHECK(in[0].shape.size() == 2, op, ": input 'w' must be a matrix [K, N], got ",
              list_str(in[0].shape));
  const int64_t nb = attrs.get_int("block");
  ANVIL_CHECK(nb == kBlock, op, ": attribute 'block' must be ", kBlock, ", got ", nb);
  const int64_t K = in[0].shape[0], N = in[0].shape[1];
  return {{{ceil_div(N, nb), ceil_div(K, kGroup), nb, kGroup}, DataType::Int(8)}};
}

// ---- dense_int8

struct Problem {
  std::vector<int64_t> rows;  // x's dimensions but the last
  int64_t R = 1, K = 0, N = 0, NB = 0, K4 = 0;
};

Problem analyze(const std::vector<TensorType>& in, const Attrs& attrs) {
  const std::string op = "dense_int8";
  ANVIL_CHECK(in.size() == 2, op, ": expects 2 inputs (x, packed), got ", in.size());
  ANVIL_CHECK(in[0].dtype == DataType::UInt(8), op, ": input 'x' must be uint8, not ", in[0].dtype);
  ANVIL_CHECK(in[1].dtype == DataType::Int(8), op, ": input 'packed' must be int8, not ",
              in[1].dtype);
  const std::vector<int64_t>& x = in[0].shape;
  const std::vector<int64_t>& w = in[1].shape;
  ANVIL_CHECK(x.size() >= 2, op, ": input 'x' must have rank 2 or more [.., K], got ", list_str(x));
  Problem p;
  p.rows.assign(x.begin(), x.end() - 1);
  for (int64_t d : p.rows) p.R *= d;
  p.K = x.back();
  p.N = attrs.get_int("units");
  p.NB = ceil_div(p.N, kBlock);
  p.K4 = ceil_div(p.K, kGroup);
  const std::vector<int64_t> want = {p.NB, p.K4, kBlock, kGroup};
  ANVIL_CHECK(w == want, op, ": input 'packed' ", list_str(w), " does not hold units = ", p.N,
              " columns of K = ", p.K, " (x ", list_str(x),
              ") packed by dense_int8_pack_weight: ", "expected ", list_str(want));
  return p;
}

std::vector<int64_t> out_shape(const Problem& p) {
  std::vector<int64_t> s = p.rows;
  s.push_back(p.N);
  return s;
}

// x's element at flat row r and column k.
Expr x_at(const te::Tensor& x, const Problem& p, Expr r, Expr k) {
  std::vector<Expr> idx(p.rows.size());
  for (size_t d = p.rows.size(); d-- > 0;) {
    int64_t n = p.rows[d];
    idx[d] = d == 0 ? r : floormod(r, static_cast<int>(n));
    if (d > 0) r = floordiv(r, static_cast<int>(n));
  }
  idx.push_back(k);
  return x(idx);
}

std::vector<te::Tensor> dense_int8_compute(const std::vector<te::Tensor>& in, const Attrs& attrs) {
  Problem p = analyze({type_of(in[0]), type_of(in[1])}, attrs);
  te::Tensor x = in[0], w = in[1];
  const int K = static_cast<int>(p.K);
  // x with k padded by zeros to a multiple of 4: the dot product reads whole groups.
  std::vector<int64_t> padded = p.rows;
  padded.push_back(p.K4 * kGroup);
  te::Tensor xp = x;
  if (p.K % kGroup != 0) {
    xp = te::compute(
        to_exprs(padded),
        [&](const std::vector<Var>& v) {
          std::vector<Expr> i(v.begin(), v.end());
          Expr k = i.back();
          i.back() = min(k, K - 1);
          return select(k < K, x(i), ir::make_zero(DataType::UInt(8)));
        },
        "dense_int8_x");
  }
  IterVar k = te::reduce_axis(static_cast<int>(p.K4 * kGroup), "k");
  te::Tensor acc = te::compute(
      to_exprs({p.R, p.NB * kBlock}),
      [&](Var r, Var n) {
        Expr wk = w(floordiv(n, kBlock), floordiv(k->var, kGroup), floormod(n, kBlock),
                    floormod(k->var, kGroup));
        return te::sum(
            cast(DataType::Int32(), x_at(xp, p, r, k->var)) * cast(DataType::Int32(), wk), {k});
      },
      "dense_int8_acc");
  te::Tensor out = te::compute(
      to_exprs(out_shape(p)),
      [&](const std::vector<Var>& v) {
        Expr r = ir::make_zero(DataType::Int32());
        for (size_t d = 0; d + 1 < v.size(); ++d) r = r * static_cast<int>(p.rows[d]) + v[d];
        return acc(r, v.back());
      },
      "dense_int8");
  return {out};
}

std::vector<runtime::NDArray> dense_int8_reference(const std::vector<runtime::NDArray>& in,
                                                   const Attrs& attrs) {
  Problem p =
      analyze({{in[0].shape(), DataType::UInt(8)}, {in[1].shape(), DataType::Int(8)}}, attrs);
  runtime::NDArray out = runtime::NDArray::empty(out_shape(p), runtime::dl_int32());
  const auto* x = in[0].data_as<uint8_t>();
  const auto* w = in[1].data_as<int8_t>();
  for (int64_t r = 0; r < p.R; ++r) {
    for (int64_t n = 0; n < p.N; ++n) {
      int64_t s = 0;
      for (int64_t k = 0; k < p.K; ++k) {
        s += int64_t{x[r * p.K + k]} *
             w[((n / kBlock * p.K4 + k / kGroup) * kBlock + n % kBlock) * kGroup + k % kGroup];
      }
      out.data_as<int32_t>()[r * p.N + n] = static_cast<int32_t>(s);
    }
  }
  return {out};
}

// ---- the schedule

struct Tiles {
  int64_t bm = 1, bn = kBlock, parallel = 0;
};

Tiles default_tiles(const Problem& p, const Target& target) {
  const int64_t lanes = int8_dot_lanes(target);
  const int64_t regs = int8_tile_registers(target);
  Tiles t;
  // Columns: vectors of the tile, in whole blocks that divide the packed columns.
  const int64_t want_vectors = p.R == 1 ? 8 : regs >= 32 ? 4 : 2;
  int64_t blocks = std::max<int64_t>(1, want_vectors * lanes / kBlock);
  while (p.NB % blocks != 0) --blocks;
  t.bn = blocks * kBlock;
  const int64_t vectors = t.bn / lanes;
  // Rows: as many as the accumulators allow (3/4 of the registers).
  t.bm = std::clamp<int64_t>(regs * 3 / 4 / vectors, 1, p.R);
  t.parallel = p.R * p.N * p.K >= kParallelMultiplyAdds ? 1 : 0;
  return t;
}

ConfigSpace dense_int8_space(const std::vector<TensorType>& in, const Attrs& attrs,
                             const Target& target) {
  Problem p = analyze(in, attrs);
  Tiles d = default_tiles(p, target);
  Knob m{"tile_m", {d.bm}}, n{"tile_n", {d.bn}}, par{"parallel", {d.parallel, 1 - d.parallel}};
  for (int64_t v : {1, 2, 3, 4, 6, 8})
    if (v <= p.R && v != d.bm) m.values.push_back(v);
  for (int64_t b : {1, 2, 3, 4, 6, 8})
    if (p.NB % b == 0 && b * kBlock != d.bn) n.values.push_back(b * kBlock);
  return {m, n, par};
}

void schedule_dense_int8_x86(te::Schedule& s, const std::vector<te::Tensor>& outs,
                             const Target& target, const Config& config) {
  const te::Tensor& out = outs[0];
  // The product and its operands; what lies between the product and the output is inlined.
  const auto [acc, x, w] = inline_around_product(s, out, "dense_int8");
  const te::Tensor xp = x.is_compute() ? x : te::Tensor();  // x padded to whole groups
  Problem p;
  p.R = ir::as_const_int(acc->shape[0]).value();
  p.NB = ir::as_const_int(acc->shape[1]).value() / kBlock;
  p.K = ir::as_const_int(acc->reduce_axis[0]->dom.extent).value();
  p.N = ir::as_const_int(out->shape.back()).value();
  Tiles d = default_tiles(p, target);
  const int64_t bm = knob(config, "tile_m", d.bm), bn = knob(config, "tile_n", d.bn);
  const int64_t par = knob(config, "parallel", d.parallel);
  const int64_t lanes = int8_dot_lanes(target);
  ANVIL_CHECK(bm >= 1, "dense_int8: knob tile_m must be positive, not ", bm);
  ANVIL_CHECK(bn % kBlock == 0 && bn > 0 && (p.NB * kBlock) % bn == 0,
              "dense_int8: knob tile_n must be a multiple of ", kBlock,
              " dividing the packed columns ", p.NB * kBlock, ", not ", bn);

  // The output: rows fused, in tiles; the tiles' loop in parallel.
  te::Stage so = s[out];
  std::vector<IterVar> ax = so.axis();
  IterVar row = ax[0];
  for (size_t i = 1; i + 1 < ax.size(); ++i) row = so.fuse(row, ax[i]);
  std::vector<IterVar> t = so.tile(row, ax.back(), bm, bn);
  IterVar outer = so.fuse(t[0], t[1]);
  auto [nvo, nvi] = so.split(t[3], lanes);
  so.unroll(nvo);
  so.vectorize(nvi);
  if (par) so.parallel(outer);

  // The accumulator tile at the tile loop, in registers; each k step's column vectors tensorized.
  te::Stage sa = s[acc];
  sa.set_scope(ir::MemoryScope::kLocal);
  sa.compute_at(so, outer);
  IterVar r = sa.axis()[0];
  auto [nbk, n16] = sa.split(sa.axis()[1], kBlock);
  IterVar nh, nl = n16;
  if (lanes < kBlock) std::tie(nh, nl) = sa.split(n16, lanes);
  auto [ko, ki] = sa.split(sa.reduce_axis()[0], kGroup);
  std::vector<IterVar> order = {ko, r, nbk};
  if (nh.get()) order.push_back(nh);
  order.insert(order.end(), {nl, ki});
  sa.reorder(order);
  sa.unroll(r);
  sa.unroll(nbk);
  if (nh.get()) sa.unroll(nh);
  sa.tensorize(nl, pick_int8_dot(target, lanes, int8_values_read(x), int8_values_read(w)));

  if (xp.get()) {
    te::Stage sx = s[xp];
    std::vector<IterVar> xa = sx.axis();
    IterVar xr = xa[0];
    for (size_t i = 1; i + 1 < xa.size(); ++i) xr = sx.fuse(xr, xa[i]);
    if (par) sx.parallel(xr);
  }
}

}  // namespace

void register_dense_int8_ops() {
  OpDef pack;
  set_int8_packing_defaults(pack);
  pack.name = "dense_int8_pack_weight";
  pack.attrs = std::vector<AttrSpec>{
      {"block", AttrType::kInt, kBlock, {positive()}, "columns per block (16)"}};
  pack.infer = pack_infer;
  pack.compute = [](const std::vector<te::Tensor>& in, const Attrs& attrs) {
    TensorType t = pack_infer({type_of(in[0])}, attrs)[0];
    const te::Tensor& w = in[0];
    const int K = static_cast<int>(shape_of(w)[0]), N = static_cast<int>(shape_of(w)[1]);
    return std::vector<te::Tensor>{te::compute(
        to_exprs(t.shape),
        [&](const std::vector<Var>& v) {
          Expr n = v[0] * static_cast<int>(kBlock) + v[2];
          Expr k = v[1] * static_cast<int>(kGroup) + v[3];
          return select(n < N && k < K, w(min(k, K - 1), min(n, N - 1)),
                        ir::make_zero(DataType::Int(8)));
        },
        "dense_int8_pack_weight")};
  };
  pack.reference = [](const std::vector<runtime::NDArray>& in, const Attrs& attrs) {
    TensorType t = pack_infer({{in[0].shape(), DataType::Int(8)}}, attrs)[0];
    const int64_t K = in[0].shape()[0], N = in[0].shape()[1];
    runtime::NDArray out = runtime::NDArray::empty(t.shape, to_dlpack(DataType::Int(8)));
    const auto* w = in[0].data_as<int8_t>();
    auto* o = out.data_as<int8_t>();
    for (int64_t no = 0; no < t.shape[0]; ++no)
      for (int64_t k4 = 0; k4 < t.shape[1]; ++k4)
        for (int64_t ni = 0; ni < kBlock; ++ni)
          for (int64_t kk = 0; kk < kGroup; ++kk) {
            const int64_t n = no * kBlock + ni, k = k4 * kGroup + kk;
            *o++ = n < N && k < K ? w[k * N + n] : int8_t{0};
          }
    return std::vector<runtime::NDArray>{out};
  };
  register_op(std::move(pack));

  OpDef def;
  def.name = "dense_int8";
  def.pattern = Pattern::kComplexOutFusable;
  def.attrs = std::vector<AttrSpec>{
      {"units", AttrType::kInt, std::nullopt, {positive()}, "N, the output columns", true}};
  def.flops = [](const std::vector<TensorType>& in, const std::vector<TensorType>&,
                 const Attrs& attrs) {
    Problem p = analyze(in, attrs);
    return 2.0 * static_cast<double>(p.R) * static_cast<double>(p.N) * static_cast<double>(p.K);
  };
  def.infer = [](const std::vector<TensorType>& in, const Attrs& attrs) {
    return std::vector<TensorType>{{out_shape(analyze(in, attrs)), DataType::Int32()}};
  };
  def.compute = dense_int8_compute;
  def.reference = dense_int8_reference;
  def.schedule_x86 = schedule_dense_int8_x86;
  def.space = dense_int8_space;
  register_op(std::move(def));
}

}  // namespace anvil::ops
