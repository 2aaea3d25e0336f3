// Dense / matrix-multiply operators:
//
//   dense         x [M, K], weight [N, K] (ONNX Gemm with transB = 1, PyTorch Linear), optional
//                 bias [N]                                           -> [M, N]
//   matmul        A [.., M, K] . B [.., K, N] (attrs trans_a, trans_b: the last two dimensions
//                 of that operand are swapped), batch dimensions broadcast as numpy.matmul
//                                                                    -> [batch.., M, N]
//   batch_matmul  A [B, M, K] . B [B, K, N] (trans_a, trans_b), batch sizes equal or 1
//                                                                    -> [B, M, N]
//   dense_pack_weight  weight [batch.., N, K] -> [batch.., ceil(N/nb), K, nb] (zero past N),
//                 attribute block = nb
//                 (default 16: one AVX-512 vector of float32, two AVX2 vectors, a 64-byte cache
//                 line per panel row), pattern injective: a constant weight is packed once, ahead
//   dense_packed  x [batch.., M, K], packed [ceil(N/nb), K, nb] (nb read from the shape), optional
//                 bias [N], attribute units = N                      -> [batch.., M, N]
//     acc[b.., m, n] = sum_k x[b.., m, k] * packed[n/nb, k, n%nb]: the packed path without its
//     packing stage, scheduled by the same rule (panel = nb; tile columns in steps of lcm(nb,
//     lanes)). For M = 1 (and small M) that is the GEMV form: broadcast x[m, k], FMA into
//     tile_n/lanes panel vectors (8 accumulator chains), k outer and unrolled, column blocks in
//     parallel. Measured on this machine (L3-resident [1, 1300] x [2600, 1300]^T, 13.5 MB): 73 GB/s
//     on one thread, 170 GB/s on two, a few % above the dot path; twice the dot path's bandwidth
//     once the weight is out of the L3 (54 MB: 30 vs 15 GB/s).
//
// All three share one compute, in one of three forms chosen from the shapes alone (the compute
// does not depend on the target):
//
//   packed path (M >= 8, kPackMinRows): B is packed into panels of 16 columns (kPanel: one
//   AVX-512 vector, two AVX2 vectors), contiguous along k:
//     packed[bb.., no, k, ni] = B[bb.., k, no*16 + ni]     (zero past N)
//     acc[b.., m, n]          = sum_k A[ab.., m, k] * packed[bb.., n/16, k, n%16]
//   row path (M < 8, B not transposed): packing would cost as much as the product, so
//     acc[b.., m, n]          = sum_k A[ab.., m, k] * B[bb.., k, n]
//   dot path (M < 8, B transposed: dense with M = 1 is the LSTM's matrix-vector product): rows
//   of B are contiguous along K, so the product is dot products vectorized over K:
//     part[b.., m, n, kv]     = sum_ko A[.., m, ko*16 + kv] * B[.., n, ko*16 + kv]  (k < K)
//     acc[b.., m, n]          = sum_kv part[b.., m, n, kv]
//   and for dense with a bias: out[m, n] = acc[m, n] + bias[n].
//
// Default x86 schedule, packed and row paths (the recipe of bench/gemm_te.h): out is tiled into
// bm x bn blocks (bn a multiple of 16 and of the vector width); each block accumulates in a
// bm x bn local tile computed at the block loop (cache_write, or the acc stage under a bias),
// k split by k_unroll (inner part unrolled) and outside the tile loops, tile rows unrolled, tile
// columns split into vectors (unrolled) of `lanes` floats (vectorized); the packing is vectorized
// over its 16 columns; the outermost block loop (batch and column blocks fused) and the packing's
// panel loop are parallel when there is enough work. A weight shared by the batches and larger
// than the activations puts its column blocks outside the batches (read once, not per batch).
// Dot path: tile_n outputs per block (the block loop, with batch and rows fused, is parallel);
// per block the partial-sum vectors accumulate with k outer and the tile_n rows unrolled
// (tile_n independent FMA chains), ko unrolled by k_unroll; the K tail is a guarded last step.
//
// The default rule (default_tiles):
//   * registers: 32 vector registers with 512-bit vectors (AVX-512), else 16 (AVX2, SSE);
//   * bn = 2 vectors of columns rounded up to a multiple of 16, bm = 6 rows when M >= 6
//     (6 x 2 vectors = 12 accumulators: enough independent FMA chains to hide the FMA latency
//     on two pipes, and 12 + 2 B vectors + 1 broadcast fit in 16 registers);
//   * M > 6: bm >= 6 rows and v of 2-4 vectors, at most 3/4 of the registers as accumulators,
//     the pair with the fewest loads per FMA (bm broadcasts and v vectors per bm * v FMAs, the
//     last row tile with its own rows): 6 x 4 vectors with 32 registers for many rows, 7 x 3 for
//     ConvNeXt's 7-row batches (one tile, not 6 and a 1-row tail), 6 x 2 with 16 registers;
//   * M < 6: bm = M, and the tile widens over N by 16 columns at a time (vectors over N, k
//     outer) until it has 8 accumulator vectors, or bm*v + v + 1 (accumulators, B vectors, the
//     broadcast; v = bn / lanes) would exceed registers - 1, or bn would pass N rounded up to 16;
//   * k_unroll: 4, or the largest of 2, 1 that divides K when 4 does not (no tail guard in the
//     micro-kernel);
//   * dot path: tile_n = lanes / 2 rows (8 vector chains: 16 / lanes vectors per row),
//     k_unroll = 1 (the rows already give the chains), tile_m = M (not tiled);
//   * parallel: when batch * M * N * K >= 2^18 multiply-adds and there are at least two blocks.
//
// The tunable space (space): tile_m, tile_n, k_unroll, parallel, each with the rule's value
// first. schedule_x86 honours a given config and rejects knob values it cannot use, naming the op.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "anvil/ir/op.h"
#include "anvil/ir/visitor.h"
#include "anvil/ops/families.h"
#include "anvil/ops/host_value.h"
#include "anvil/ops/op.h"
#include "anvil/ops/recurrent_dense.h"
#include "anvil/ops/schedule_gpu.h"
#include "anvil/ops/schedule_util.h"
#include "anvil/support/error.h"

namespace anvil::ops {

using namespace ir;

namespace {

constexpr int64_t kPanel = 16;  // columns per packed panel of B
// B is packed only when A has at least this many rows: packing moves N*K elements once, which
// the register tile earns back over M rows; for fewer rows (M = 1: a matrix-vector product,
// memory bound) the product reads B where it is (row or dot path).
constexpr int64_t kPackMinRows = 8;
// Partial sums per dot product on the dot path (one AVX-512 vector, two AVX2 vectors).
constexpr int64_t kDotLanes = 16;

std::string shape_str(const std::vector<int64_t>& shape) {
  return to_string(TensorType{shape, DataType::Float32()}).substr(7);
}

// The parsed form of a matrix product: A [a_batch.., M, K] (stored [.., K, M] when trans_a),
// B [b_batch.., K, N] (stored [.., N, K] when trans_b), out [batch.., M, N].
struct Problem {
  std::vector<int64_t> a_batch, b_batch, batch;
  int64_t M = 0, N = 0, K = 0;
  bool trans_a = false, trans_b = false;
  bool bias = false;
  int64_t panel = kPanel;  // columns per panel of the packed B (dense_packed: its block nb)
  DataType dtype = DataType::Float32();  // of every operand and the output
};

bool flag(const Attrs& attrs, const std::string&, const std::string& name) {
  return attrs.get_int(name) == 1;  // 0 or 1: the schema checks it
}

// The schema of matmul and batch_matmul (dense takes none: its weight is always transposed).
std::vector<AttrSpec> matmul_attrs(const std::string& op) {
  if (op == "dense") return {};
  std::vector<AttrSpec> specs;
  for (const char* name : {"trans_a", "trans_b"}) {
    specs.push_back({name,
                     AttrType::kInt,
                     int64_t{0},
                     {one_of(std::vector<int64_t>{0, 1})},
                     name[6] == 'a' ? "1: A's last two dimensions are swapped"
                                    : "1: B's last two dimensions are swapped"});
  }
  return specs;
}

// Validates the operand types of `op` and returns the problem. Every message names the op and
// the inputs involved.
Problem analyze(const std::string& op, const std::vector<TensorType>& in, const Attrs& attrs) {
  Problem p;
  std::string a_name = op == "dense" ? "x" : "A", b_name = op == "dense" ? "weight" : "B";
  if (op == "dense") {
    ANVIL_CHECK(in.size() == 2 || in.size() == 3, op,
                ": expects 2 or 3 inputs (x, weight[, bias]), got ", in.size());
  } else {
    ANVIL_CHECK(in.size() == 2, op, ": expects 2 inputs (A, B), got ", in.size());
  }
  // float32 or float64, all operands alike (float16 is computed as float32:
  // float16_via_float32).
  ANVIL_CHECK(host::native_float(in[0].dtype), op, ": input 0 must be float32 or float64, not ",
              in[0].dtype);
  for (size_t i = 1; i < in.size(); ++i) {
    ANVIL_CHECK(in[i].dtype == in[0].dtype, op, ": input ", i, " must be ", in[0].dtype,
                " like input 0, not ", in[i].dtype);
  }
  p.dtype = in[0].dtype;
  const std::vector<int64_t>& a = in[0].shape;
  const std::vector<int64_t>& b = in[1].shape;
  if (op == "dense") {
    ANVIL_CHECK(a.size() == 2, op, ": input 'x' must have rank 2 [M, K], got ", shape_str(a));
    ANVIL_CHECK(b.size() == 2, op, ": input 'weight' must have rank 2 [N, K], got ", shape_str(b));
    p.trans_b = true;
  } else if (op == "batch_matmul") {
    ANVIL_CHECK(a.size() == 3, op, ": input 'A' must have rank 3, got ", shape_str(a));
    ANVIL_CHECK(b.size() == 3, op, ": input 'B' must have rank 3, got ", shape_str(b));
    p.trans_a = flag(attrs, op, "trans_a");
    p.trans_b = flag(attrs, op, "trans_b");
  } else {
    ANVIL_CHECK(a.size() >= 2, op, ": input 'A' must have rank >= 2, got ", shape_str(a));
    ANVIL_CHECK(b.size() >= 2, op, ": input 'B' must have rank >= 2, got ", shape_str(b));
    p.trans_a = flag(attrs, op, "trans_a");
    p.trans_b = flag(attrs, op, "trans_b");
  }
  size_t ra = a.size(), rb = b.size();
  p.M = p.trans_a ? a[ra - 1] : a[ra - 2];
  int64_t ka = p.trans_a ? a[ra - 2] : a[ra - 1];
  int64_t kb = p.trans_b ? b[rb - 1] : b[rb - 2];
  p.N = p.trans_b ? b[rb - 2] : b[rb - 1];
  ANVIL_CHECK(ka == kb, op, ": inner dimensions differ: input '", a_name, "' ", shape_str(a),
              p.trans_a ? " (transposed)" : "", " has K = ", ka, " but input '", b_name, "' ",
              shape_str(b), p.trans_b ? " (transposed)" : "", " has K = ", kb);
  p.K = ka;
  p.a_batch.assign(a.begin(), a.end() - 2);
  p.b_batch.assign(b.begin(), b.end() - 2);
  size_t nb = std::max(p.a_batch.size(), p.b_batch.size());
  p.batch.resize(nb);
  for (size_t i = 0; i < nb; ++i) {
    int64_t x = i < nb - p.a_batch.size() ? 1 : p.a_batch[i - (nb - p.a_batch.size())];
    int64_t y = i < nb - p.b_batch.size() ? 1 : p.b_batch[i - (nb - p.b_batch.size())];
    ANVIL_CHECK(x == y || x == 1 || y == 1, op, ": batch dimensions of input '", a_name, "' ",
                shape_str(a), " and input '", b_name, "' ", shape_str(b),
                " do not broadcast (batch dimension ", i, ": ", x, " vs ", y, ")");
    p.batch[i] = x == 1 ? y : x;  // an empty dimension broadcasts to empty
  }
  if (in.size() == 3) {
    ANVIL_CHECK(in[2].shape == std::vector<int64_t>{p.N}, op, ": input 'bias' must have shape [",
                p.N, "] (N of weight ", shape_str(b), "), got ", shape_str(in[2].shape));
    p.bias = true;
  }
  return p;
}

std::vector<int64_t> out_shape(const Problem& p) {
  std::vector<int64_t> s = p.batch;
  s.push_back(p.M);
  s.push_back(p.N);
  return s;
}

// Indices into an operand with batch dims `own` for output batch indices `idx` (broadcasting).
std::vector<Expr> batch_indices(const std::vector<int64_t>& own, const std::vector<Expr>& idx) {
  std::vector<Expr> out;
  size_t offset = idx.size() - own.size();
  for (size_t d = 0; d < own.size(); ++d) {
    out.push_back(own[d] == 1 ? Expr(0) : idx[offset + d]);
  }
  return out;
}

// Few rows against a transposed B (dense with M = 1: the LSTM's matrix-vector product) are
// dot products along K, whose rows of B are contiguous: vectorize over K instead of N.
bool dot_path(const Problem& p) {
  return p.trans_b && p.M < kPackMinRows;
}

// part[b.., m, n, kv] = sum_ko A[.., m, ko*16 + kv] * B[.., n, ko*16 + kv]   (zero past K)
// acc[b.., m, n]      = sum_kv part[b.., m, n, kv]
te::Tensor dot_compute(const std::string& op, const Problem& p, const te::Tensor& A,
                       const te::Tensor& B) {
  size_t nb = p.batch.size();
  int K = static_cast<int>(p.K);
  int kv_n = static_cast<int>(kDotLanes);
  IterVar ko = te::reduce_axis(static_cast<int>((p.K + kDotLanes - 1) / kDotLanes), "ko");
  std::vector<int64_t> pshape = out_shape(p);
  pshape.push_back(kDotLanes);
  bool tail = p.K % kDotLanes != 0;
  te::Tensor part = te::compute(
      to_exprs(pshape),
      [&](const std::vector<Var>& v) {
        std::vector<Expr> bidx(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(nb));
        Expr m = v[nb], n = v[nb + 1], kv = v[nb + 2];
        Expr k = ko->var * kv_n + kv;
        Expr kc = k;
        std::vector<Expr> ai = batch_indices(p.a_batch, bidx);
        ai.push_back(p.trans_a ? kc : m);
        ai.push_back(p.trans_a ? m : kc);
        std::vector<Expr> bi = batch_indices(p.b_batch, bidx);
        bi.push_back(n);
        bi.push_back(kc);
        Expr prod = A(ai) * B(bi);
        return tail ? te::sum(prod, {ko}, k < K) : te::sum(prod, {ko});
      },
      op + "_part");
  IterVar kv = te::reduce_axis(kv_n, "kv");
  return te::compute(
      to_exprs(out_shape(p)),
      [&](const std::vector<Var>& v) {
        std::vector<Expr> idx(v.begin(), v.end());
        idx.push_back(kv->var);
        return te::sum(part(idx), {kv});
      },
      p.bias ? op + "_acc" : op);
}

std::vector<te::Tensor> matmul_compute(const std::string& op, const std::vector<te::Tensor>& in,
                                       const Attrs& attrs) {
  std::vector<TensorType> types;
  for (const te::Tensor& t : in) types.push_back({shape_of(t), t->dtype});
  Problem p = analyze(op, types, attrs);
  te::Tensor A = in[0], B = in[1];
  int N = static_cast<int>(p.N);
  int64_t panels = (p.N + kPanel - 1) / kPanel;

  // packed[bb.., no, k, ni], when A has enough rows to pay for it.
  bool pack = p.M >= kPackMinRows;
  std::vector<int64_t> pshape = p.b_batch;
  pshape.push_back(panels);
  pshape.push_back(p.K);
  pshape.push_back(kPanel);
  size_t nbb = p.b_batch.size();
  bool trans_b = p.trans_b;
  te::Tensor P;
  if (pack)
    P = te::compute(
        to_exprs(pshape),
        [&](const std::vector<Var>& v) {
          std::vector<Expr> idx(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(nbb));
          Expr no = v[nbb], k = v[nbb + 1], ni = v[nbb + 2];
          Expr n = no * static_cast<int>(kPanel) + ni;
          Expr nc = min(n, N - 1);
          if (trans_b) {
            idx.push_back(nc);
            idx.push_back(k);
          } else {
            idx.push_back(k);
            idx.push_back(nc);
          }
          return select(n < N, B(idx), make_zero(B->dtype));
        },
        op + "_packed");

  size_t nb = p.batch.size();
  te::Tensor acc;
  if (dot_path(p)) {
    acc = dot_compute(op, p, A, B);
  } else {
    IterVar k = te::reduce_axis(static_cast<int>(p.K), "k");
    acc = te::compute(
        to_exprs(out_shape(p)),
        [&](const std::vector<Var>& v) {
          std::vector<Expr> bidx(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(nb));
          Expr m = v[nb], n = v[nb + 1];
          std::vector<Expr> ai = batch_indices(p.a_batch, bidx);
          if (p.trans_a) {
            ai.push_back(k->var);
            ai.push_back(m);
          } else {
            ai.push_back(m);
            ai.push_back(k->var);
          }
          std::vector<Expr> bi = batch_indices(p.b_batch, bidx);
          if (pack) {
            bi.push_back(floordiv(n, static_cast<int>(kPanel)));
            bi.push_back(k->var);
            bi.push_back(floormod(n, static_cast<int>(kPanel)));
            return te::sum(A(ai) * P(bi), {k});
          }
          bi.push_back(trans_b ? n : Expr(k->var));
          bi.push_back(trans_b ? Expr(k->var) : n);
          return te::sum(A(ai) * B(bi), {k});
        },
        p.bias ? op + "_acc" : op);
  }
  if (!p.bias) return {acc};
  te::Tensor bias = in[2];
  te::Tensor out = te::compute(
      to_exprs(out_shape(p)),
      [&](const std::vector<Var>& v) { return acc(v[0], v[1]) + bias(v[1]); }, op);
  return {out};
}

// Naive loops in double precision.
std::vector<runtime::NDArray> matmul_reference(const std::string& op,
                                               const std::vector<runtime::NDArray>& in,
                                               const Attrs& attrs) {
  std::vector<TensorType> types;
  for (const runtime::NDArray& a : in) types.push_back({a.shape(), from_dlpack(a.dtype())});
  Problem p = analyze(op, types, attrs);
  std::vector<int64_t> shape = out_shape(p);
  int64_t batches = 1;
  for (int64_t d : p.batch) batches *= d;
  const std::vector<double> av = host::read_all_f64(in[0]), bv = host::read_all_f64(in[1]);
  const std::vector<double> bias = p.bias ? host::read_all_f64(in[2]) : std::vector<double>{};
  std::vector<double> cv(static_cast<size_t>(batches * p.M * p.N));
  const double* a = av.data();
  const double* b = bv.data();
  double* c = cv.data();
  size_t nb = p.batch.size();
  std::vector<int64_t> coord(nb, 0);
  // Offset of a batch matrix of an operand with batch dims `own` for output batch `coord`.
  auto offset = [&](const std::vector<int64_t>& own) {
    int64_t off = 0;
    size_t lead = nb - own.size();
    for (size_t d = 0; d < own.size(); ++d)
      off = off * own[d] + (own[d] == 1 ? 0 : coord[lead + d]);
    return off;
  };
  for (int64_t bi = 0; bi < batches; ++bi) {
    const double* ab = a + offset(p.a_batch) * p.M * p.K;
    const double* bb = b + offset(p.b_batch) * p.K * p.N;
    double* cb = c + bi * p.M * p.N;
    for (int64_t m = 0; m < p.M; ++m) {
      for (int64_t n = 0; n < p.N; ++n) {
        double s = 0;
        for (int64_t kk = 0; kk < p.K; ++kk) {
          double x = p.trans_a ? ab[kk * p.M + m] : ab[m * p.K + kk];
          double y = p.trans_b ? bb[n * p.K + kk] : bb[kk * p.N + n];
          s += x * y;
        }
        if (p.bias) s += bias[static_cast<size_t>(n)];
        cb[m * p.N + n] = s;
      }
    }
    for (int d = static_cast<int>(nb) - 1; d >= 0; --d) {
      if (++coord[static_cast<size_t>(d)] < p.batch[static_cast<size_t>(d)]) break;
      coord[static_cast<size_t>(d)] = 0;
    }
  }
  return {host::from_all_f64(shape, p.dtype, cv)};
}

// ---- schedule

int64_t round_up(int64_t x, int64_t m) {
  return (x + m - 1) / m * m;
}

struct Tiles {
  int64_t bm, bn, kunroll, parallel;
};

// A product with one row per batch against a weight all batches share (a Linear layer over a
// sequence stored [S, 1, K]) is one [S, K] product: the last batch dimension becomes the rows, so
// that the register tile has rows to reuse the weight's vectors over. Returns whether it folded.
bool fold_unit_rows(Problem& p) {
  if (p.M != 1 || p.batch.empty()) return false;
  p.M = p.batch.back();
  p.batch.pop_back();
  return true;
}

Tiles default_tiles(const Problem& p, const Target& target) {
  int64_t lanes = target.vector_lanes(p.dtype.bits());
  int64_t regs = target.vector_registers;
  // Tile columns come in steps that hold whole panels and whole vectors (16 for kPanel).
  int64_t step = std::lcm(p.panel, lanes);
  int64_t n_cap = round_up(p.N, step);
  Tiles t{};
  t.bn = std::min(round_up(2 * lanes, step), n_cap);
  t.bm = std::min<int64_t>(6, p.M);
  if (p.M > 6) {
    // Rows x vectors per tile: the fewest loads per FMA. A k step loads one broadcast per row and
    // one vector per column vector for rows x vectors FMAs, so a square-ish tile reuses each load
    // most; the last row tile counts with its own rows. At most 3/4 of the registers hold
    // accumulators (the broadcasts and vectors need the rest; more made LLVM spill). The LSTM
    // language model's decoder (35 x 650 x 10000, in the model on Zen 4): 4.95 ms with 7 x 2
    // vectors (0.64 loads per FMA), 4.81 with 4 x 5 (0.46), 4.61 with 8 x 3 (0.48), 4.53 with
    // 6 x 4 (0.42). Ties keep fewer vectors, then fewer rows.
    const int64_t budget = regs * 3 / 4;
    double best = std::numeric_limits<double>::infinity();
    for (int64_t v = 2; v <= 4; ++v) {
      const int64_t bn = round_up(v * lanes, step);
      if (bn > n_cap || bn / lanes != v) continue;
      for (int64_t bm = 6; bm <= std::min(p.M, budget / v); ++bm) {
        const int64_t tail = p.M % bm;
        const double loads = static_cast<double>(p.M / bm * (bm + v) + (tail ? tail + v : 0));
        const double per_fma = loads / static_cast<double>(p.M * v);
        if (per_fma < best - 1e-9) {
          best = per_fma;
          t.bm = bm;
          t.bn = bn;
        }
      }
    }
  }
  if (p.M < 6) {
    // Widen over N until 8 accumulator chains, within the register budget and N.
    for (;;) {
      int64_t wider = t.bn + step;
      int64_t vecs = wider / lanes;
      if (wider > n_cap || t.bm * (t.bn / lanes) >= 8 || t.bm * vecs + vecs + 1 > regs - 1) break;
      t.bn = wider;
    }
  }
  t.kunroll = p.K % 4 == 0 ? 4 : p.K % 2 == 0 ? 2 : 1;
  if (dot_path(p)) {
    // Rows of B per block: 8 independent vector chains of FMAs (16 / lanes vectors per row).
    t.bm = p.M;
    t.bn = std::min<int64_t>(std::max<int64_t>(lanes / 2, 1), p.N);
    t.kunroll = 1;
  }
  int64_t batches = 1;
  for (int64_t d : p.batch) batches *= d;
  int64_t blocks = batches * ((p.M + t.bm - 1) / t.bm) * ((p.N + t.bn - 1) / t.bn);
  t.parallel = batches * p.M * p.N * p.K >= kParallelMultiplyAdds && blocks >= 2 ? 1 : 0;
  return t;
}

// Problem from the scheduled tensors: out is the op's output; the accumulation and packing are
// found among its inputs.
struct Found {
  te::Tensor out, acc, packed, part;  // packed: the packing path; part: the dot path
};

Found find_stages(const te::Tensor& out) {
  Found f{out, out, te::Tensor(), te::Tensor()};
  if (!out->body.as<Reduce>()) {
    for (const auto& t : out->inputs) {
      te::Tensor tt(t.get());
      if (tt.is_compute() && tt->body.as<Reduce>()) f.acc = tt;
    }
  }
  for (const auto& t : f.acc->inputs) {
    te::Tensor tt(t.get());
    if (tt.is_compute()) (tt->body.as<Reduce>() ? f.part : f.packed) = tt;
  }
  // Not a bug but a refusal: a fused group's output two or more stages past the product (dense,
  // bias, relu) is not this schedule's; the builder then gives it the product's own output.
  ANVIL_CHECK(f.acc->body.as<Reduce>(), "dense schedule: '", out.name(),
              "' is neither the product nor computed directly from it");
  // The tiles computed at the output's blocks assume the output reads the product where it
  // writes: an epilogue that moves elements (a reshape or transpose) is the builder's to split
  // off (a reshape to the same shape lowered into loops that read an unbound variable).
  if (f.acc.get() != out.get()) {
    class ProductReads : public ir::IRVisitor {
     public:
      ProductReads(const ir::BufferNode* b, const std::vector<IterVar>& axis)
          : b_(b), axis_(axis) {}
      using ir::IRVisitor::visit;
      void visit(const Load* op) override {
        ir::IRVisitor::visit(op);
        if (op->buffer.get() != b_) return;
        bool same = op->indices.size() == axis_.size();
        for (size_t d = 0; same && d < axis_.size(); ++d)
          same = op->indices[d].same_as(axis_[d]->var);
        moved = moved || !same;
      }
      bool moved = false;

     private:
      const ir::BufferNode* b_;
      const std::vector<IterVar>& axis_;
    } reads(f.acc->buffer.get(), out->axis);
    reads.visit(out->body);
    ANVIL_CHECK(!reads.moved, "dense schedule: '", out.name(),
                "' reads the product at other positions than its own");
  }
  return f;
}

// The dot path: blocks of tile_n outputs (rows of B) per parallel iteration; per block, the
// partial sums part[.., n, 0:16] are vectors over K accumulated with k outer, the rows unrolled
// (tile_n independent chains), ko unrolled by k_unroll; then each output sums its 16 lanes.
void schedule_dot_x86(const std::string& op, te::Schedule& s, const Found& f, const Problem& p,
                      const Tiles& d, const Config& config) {
  int64_t tn = knob(config, "tile_n", d.bn), ku = knob(config, "k_unroll", d.kunroll);
  int64_t par = knob(config, "parallel", d.parallel);
  ANVIL_CHECK(tn >= 1, op, ": knob tile_n must be >= 1, not ", tn);
  ANVIL_CHECK(ku >= 1, op, ": knob k_unroll must be >= 1, not ", ku);
  ANVIL_CHECK(par == 0 || par == 1, op, ": knob parallel must be 0 or 1, not ", par);
  size_t nb = p.batch.size();
  te::Stage so = s[f.out];
  std::vector<IterVar> ax = so.axis();
  auto [no, ni] = so.split(ax[nb + 1], tn);
  IterVar outer = so.fuse(ax[nb], no);
  for (size_t i = nb; i-- > 0;) outer = so.fuse(ax[i], outer);
  if (par) so.parallel(outer);
  te::Stage sp = s[f.part];
  if (f.acc.get() != f.out.get()) {
    s[f.acc].compute_at(so, outer);
    sp.compute_at(s[f.acc], s[f.acc].axis()[nb]);
  } else {
    sp.compute_at(so, outer);
  }
  std::vector<IterVar> pax = sp.axis();
  auto [koo, koi] = sp.split(sp.reduce_axis()[0], ku);
  std::vector<IterVar> order(pax.begin(), pax.begin() + static_cast<std::ptrdiff_t>(nb + 1));
  order.insert(order.end(), {koo, koi, pax[nb + 1], pax[nb + 2]});
  sp.reorder(order);
  sp.unroll(koi);
  sp.unroll(pax[nb + 1]);
  sp.vectorize(pax[nb + 2]);
}

// `panel`: columns per panel of the packed B; `own_packing`: whether the packing stage (when
// the product reads one) is this op's to schedule (a pre-packed weight shared by several
// products is scheduled once by its owner).
// `shared_weight`: every batch shares one B (dense_packed), so when M = 1 the last batch
// dimension serves as the rows of the register tile (fold_unit_rows).
void schedule_matmul_x86(const std::string& op, te::Schedule& s, const te::Tensor& out,
                         const Target& target, const Config& config, int64_t panel = kPanel,
                         bool own_packing = true, bool shared_weight = false) {
  Found f = find_stages(out);
  std::vector<int64_t> oshape = shape_of(out);
  size_t nb = oshape.size() - 2;
  Problem p;
  p.batch.assign(oshape.begin(), oshape.end() - 2);
  p.M = oshape[nb];
  p.N = oshape[nb + 1];
  p.dtype = out->dtype;
  // The axis the tile's rows come from: m, or the last batch axis when folded.
  size_t row = nb;
  if (shared_weight && fold_unit_rows(p)) row = nb - 1;
  const te::Tensor& reducer = f.part.get() ? f.part : f.acc;
  p.K = ir::as_const_int(reducer->reduce_axis[0]->dom.extent).value_or(1);
  p.panel = panel;
  if (f.part.get()) {
    p.K *= kDotLanes;
    p.trans_b = true;
  }
  Tiles d = default_tiles(p, target);
  if (f.part.get()) return schedule_dot_x86(op, s, f, p, d, config);
  int64_t lanes = target.vector_lanes(p.dtype.bits());
  int64_t bm = knob(config, "tile_m", d.bm), bn = knob(config, "tile_n", d.bn);
  int64_t ku = knob(config, "k_unroll", d.kunroll), par = knob(config, "parallel", d.parallel);
  ANVIL_CHECK(bm >= 1, op, ": knob tile_m must be >= 1, not ", bm);
  ANVIL_CHECK(bn >= panel && bn % panel == 0 && bn % lanes == 0, op,
              ": knob tile_n must be a positive multiple of ", panel, " and of ", lanes,
              " (vector lanes), not ", bn);
  ANVIL_CHECK(ku >= 1, op, ": knob k_unroll must be >= 1, not ", ku);
  ANVIL_CHECK(par == 0 || par == 1, op, ": knob parallel must be 0 or 1, not ", par);

  // The accumulator: a local tile (cache_write) unless a bias stage already follows it.
  te::Tensor acc = f.acc.get() == f.out.get() ? s.cache_write(out, MemoryScope::kLocal) : f.acc;

  // Output: batch.., [no, mo], (m when folded: extent 1), mi, ni.
  te::Stage so = s[out];
  std::vector<IterVar> ax = so.axis();
  std::vector<IterVar> t = so.tile(ax[row], ax[nb + 1], bm, bn);
  IterVar mo = t[0], no = t[1], mi = t[2], ni = t[3];
  int64_t batches = 1;
  for (size_t i = 0; i < row; ++i) batches *= oshape[i];
  // A weight shared by the batches (a Linear layer over [.., M, K]) that is larger than the
  // activations is read once: its column blocks go outside the batches, each block's panels
  // serving every batch from L2. Batches outside would stream the whole weight once per batch
  // (ConvNeXt's last stage, 7 batches of 7 rows against 9.4 MB: 1.7 ms, at 58% of peak, with the
  // weight in L3).
  bool weight_outer = shared_weight && batches > 1 && p.N % bn == 0 && p.N > batches * p.M;
  std::vector<IterVar> order;
  if (weight_outer) order.push_back(no);
  order.insert(order.end(), ax.begin(), ax.begin() + static_cast<std::ptrdiff_t>(row));
  if (!weight_outer) order.push_back(no);
  order.push_back(mo);
  if (row != nb) order.push_back(ax[nb]);
  order.insert(order.end(), {mi, ni});
  so.reorder(order);
  // The parallel loop: the batches fused with the column blocks; but a column split with a tail
  // (N not a multiple of bn) is not fused into the batches (the fused loop could not be split
  // into whole blocks and a tail, and every block would take the guarded path): then the
  // batches alone (with one batch, fusing its unit axes changes nothing).
  IterVar outer = no;
  if (weight_outer) {
    for (size_t i = 0; i < row; ++i) outer = so.fuse(outer, ax[i]);
  } else if (p.N % bn == 0 || batches == 1) {
    for (size_t i = row; i-- > 0;) outer = so.fuse(ax[i], outer);
  } else {
    outer = ax[0];
    for (size_t i = 1; i < row; ++i) outer = so.fuse(outer, ax[i]);
  }
  // The tile's columns as whole vectors, unrolled: one vector of tile_n lanes (48 with AVX2's
  // 6 x 8) made LLVM split the accumulator tile into scalars and rebuild it with inserts, the
  // LSTM's steps at a third of the rate their weights stream from L3.
  auto [nvo, nvi] = so.split(ni, lanes);
  so.unroll(nvo);
  so.vectorize(nvi);
  if (par) so.parallel(outer);

  // The accumulator tile at the block loop.
  te::Stage sa = s[acc];
  sa.compute_at(so, mo);
  std::vector<IterVar> aax = sa.axis();
  IterVar mc = aax[row], nc = aax[nb + 1];
  IterVar k = sa.reduce_axis()[0];
  auto [ko, ki] = sa.split(k, ku);
  auto [nj, nv] = sa.split(nc, lanes);
  std::vector<IterVar> aorder(aax.begin(), aax.begin() + static_cast<std::ptrdiff_t>(row));
  aorder.insert(aorder.end(), {ko, ki, mc});
  if (row != nb) aorder.push_back(aax[nb]);
  aorder.insert(aorder.end(), {nj, nv});
  sa.reorder(aorder);
  sa.unroll(ki);
  sa.unroll(mc);
  sa.unroll(nj);
  sa.vectorize(nv);

  // Packing: vectorized over the panel's columns, parallel over panels (with batch).
  if (!f.packed.get() || !own_packing) return;
  te::Stage sp = s[f.packed];
  std::vector<IterVar> pax = sp.axis();
  size_t pb = pax.size() - 3;
  sp.vectorize(pax[pb + 2]);
  IterVar pouter = pax[pb];
  for (size_t i = pb; i-- > 0;) pouter = sp.fuse(pax[i], pouter);
  if (par) sp.parallel(pouter);
}

ConfigSpace problem_space(const Problem& p, const Target& target) {
  Tiles d = default_tiles(p, target);
  int64_t lanes = target.vector_lanes(p.dtype.bits());
  auto knob_of = [](const std::string& name, int64_t def, std::vector<int64_t> more) {
    Knob k{name, {def}};
    for (int64_t v : more)
      if (std::find(k.values.begin(), k.values.end(), v) == k.values.end()) k.values.push_back(v);
    return k;
  };
  if (dot_path(p)) {
    std::vector<int64_t> ns, ks;
    for (int64_t v : {1, 2, 4, 8, 16})
      if (v <= p.N) ns.push_back(v);
    for (int64_t v : {1, 2, 4})
      if (v <= (p.K + kDotLanes - 1) / kDotLanes) ks.push_back(v);
    return {knob_of("tile_m", d.bm, {}), knob_of("tile_n", d.bn, ns),
            knob_of("k_unroll", d.kunroll, ks), knob_of("parallel", d.parallel, {1 - d.parallel})};
  }
  std::vector<int64_t> ms;
  for (int64_t v : {1, 2, 4, 6, 8})
    if (v <= p.M) ms.push_back(v);
  std::vector<int64_t> ns;
  int64_t step = std::lcm(p.panel, lanes);
  for (int64_t v = step; v <= std::min<int64_t>(round_up(p.N, step), 8 * lanes); v += step)
    ns.push_back(v);
  std::vector<int64_t> ks;
  for (int64_t v : {1, 2, 4, 8})
    if (v <= p.K) ks.push_back(v);
  return {knob_of("tile_m", d.bm, ms), knob_of("tile_n", d.bn, ns),
          knob_of("k_unroll", d.kunroll, ks), knob_of("parallel", d.parallel, {1 - d.parallel})};
}

ConfigSpace matmul_space(const std::string& op, const std::vector<TensorType>& in,
                         const Attrs& attrs, const Target& target) {
  return problem_space(analyze(op, in, attrs), target);
}

// ---- GPU schedule: the tiled one (schedule_gpu.h) over (rows, columns), batches on
// blockIdx.z: default up to 8 row threads x 2 rows each, 32 column threads x 2 columns each, K in
// steps of up to 16 through shared memory.
const std::vector<GpuTileAxis> kMatmulGpuAxes = {{"m", 8, 2}, {"n", 32, 2}};
constexpr int64_t kMatmulGpuMaxKTile = 16;

// The dot path (few rows against a transposed B): a block of n_threads outputs x kDotLanes
// threads, a thread (output, lane) summing its lane of K into shared memory (coalesced reads of
// B's rows), then each output's threads reducing the lanes (every lane's thread alike; they
// write the same value). Default: the largest divisor of N up to 16 (256 threads).
int64_t dot_gpu_default(int64_t N) {
  return largest_divisor(N, 16);
}

ConfigSpace dot_gpu_space(const Problem& p, const Target& target) {
  Knob k{"n_threads", {dot_gpu_default(p.N)}};
  for (int64_t t : {1, 2, 4, 8, 16, 32, 64})
    if (t != k.values[0] && p.N % t == 0 && t * kDotLanes <= target.max_threads_per_block)
      k.values.push_back(t);
  return {k};
}

void schedule_dot_gpu(te::Schedule& s, const std::vector<te::Tensor>& outs, te::Tensor part,
                      const Config& config) {
  using ir::MemoryScope;
  const te::Tensor& out = outs[0];
  std::vector<int64_t> shape = shape_of(out);
  int64_t N = shape.back();
  int64_t t = knob(config, "n_threads", dot_gpu_default(N));
  ANVIL_CHECK(t >= 1 && N % t == 0, "GPU schedule of '", out.name(), "': n_threads ", t,
              " does not divide N = ", N);
  te::Tensor acc;
  for (const te::Stage& st : s.stages())
    if (!st.reduce_axis().empty() && !st.tensor().same_as(part)) acc = st.tensor();
  ANVIL_ICHECK(acc.defined(), "schedule_dot_gpu: no final reduction of '", part.name(), "'");
  if (acc.same_as(out)) {
    acc = s.cache_write(out, MemoryScope::kLocal);
  } else {
    s[acc].set_scope(MemoryScope::kLocal);
  }
  for (te::Stage& st : s.stages()) {
    te::Tensor x = st.tensor();
    if (x.is_compute() && st.reduce_axis().empty() && !x.same_as(out) && !x.same_as(acc))
      st.compute_inline();
  }
  te::Stage so = s[out];
  std::vector<te::IterVar> axes = so.axis();
  auto [bn, tn] = so.split(axes.back(), t);
  so.bind(bn, "blockIdx.x");
  so.bind(tn, "threadIdx.y");
  if (axes.size() >= 2) so.bind(axes[axes.size() - 2], "blockIdx.y");
  if (axes.size() >= 3) {
    te::IterVar z = axes[0];
    for (size_t d = 1; d + 2 < axes.size(); ++d) z = so.fuse(z, axes[d]);
    so.bind(z, "blockIdx.z");
  }
  s[acc].compute_at(so, tn);
  // The partial sums at the accumulator's loops: a shared stage covers every thread of the
  // block, so its region is the block's outputs x lanes.
  te::Stage sp = s[part];
  sp.set_scope(MemoryScope::kShared);
  sp.compute_at(s[acc], s[acc].axis().back());
  std::vector<te::IterVar> paxes = sp.axis();
  sp.bind(paxes[paxes.size() - 2], "threadIdx.y");
  sp.bind(paxes.back(), "threadIdx.x");
}

// 2 FLOPs per multiply-add of the reduction over K (flops.h), plus one per output for a bias.
double matmul_flops(const std::vector<TensorType>& in, const std::vector<TensorType>& out,
                    const Attrs& attrs) {
  const std::string& op = attrs.op();
  const std::vector<int64_t>& a = flops_operand(op, in, true, 0, 1);
  if (op == "dense" || op == "dense_packed") {
    double n = numel(TensorType{flops_operand(op, out, false, 0, 0), {}});
    return 2 * n * static_cast<double>(a.back()) + (in.size() > 2 ? n : 0.0);
  }
  bool trans_a = attrs.get_int("trans_a", 0) != 0 && a.size() >= 2;
  int64_t k = trans_a ? a[a.size() - 2] : a.back();
  return 2 * numel(TensorType{flops_operand(op, out, false, 0, 0), {}}) * static_cast<double>(k);
}

void register_matmul_like(const std::string& name) {
  OpDef def;
  def.name = name;
  def.pattern = Pattern::kComplexOutFusable;
  def.attrs = matmul_attrs(name);
  def.flops = matmul_flops;
  def.infer = [name](const std::vector<TensorType>& in, const Attrs& attrs) {
    Problem p = analyze(name, in, attrs);
    return std::vector<TensorType>{{out_shape(p), p.dtype}};
  };
  def.compute = [name](const std::vector<te::Tensor>& in, const Attrs& attrs) {
    return matmul_compute(name, in, attrs);
  };
  def.reference = [name](const std::vector<runtime::NDArray>& in, const Attrs& attrs) {
    return matmul_reference(name, in, attrs);
  };
  def.schedule_x86 = [name](te::Schedule& s, const std::vector<te::Tensor>& outs,
                            const Target& target, const Config& config) {
    schedule_matmul_x86(name, s, outs[0], target, config);
  };
  def.space = [name](const std::vector<TensorType>& in, const Attrs& attrs, const Target& target) {
    return matmul_space(name, in, attrs, target);
  };
  def.schedule_gpu = [](te::Schedule& s, const std::vector<te::Tensor>& outs, const Attrs&,
                        const Target& target, const Config& config) {
    std::vector<te::Stage> stages = s.stages();
    // The dot path's partial sums: the reduction with a lane dimension past the output's.
    size_t dims = outs[0]->shape.size();
    auto part = std::find_if(stages.begin(), stages.end(), [&](const te::Stage& st) {
      return !st.reduce_axis().empty() && st.axis().size() == dims + 1;
    });
    if (part != stages.end()) return schedule_dot_gpu(s, outs, part->tensor(), config);
    // B packed into panels (the CPU's layout, chosen by the compute for M >= kPackMinRows) is
    // read through the packing from global memory: a tile of columns that is not a multiple of
    // the panel covers a number of panels that varies between blocks, which a shared copy of
    // static size cannot hold.
    schedule_gpu_tiled(s, outs, kMatmulGpuAxes, kMatmulGpuMaxKTile, target, config,
                       [](const te::Tensor& t) { return t.name().ends_with("_packed"); });
  };
  def.space_gpu = [name](const std::vector<TensorType>& in, const Attrs& attrs,
                         const Target& target) {
    Problem p = analyze(name, in, attrs);
    if (dot_path(p)) return dot_gpu_space(p, target);
    return gpu_tiled_space(out_shape(p), p.K, kMatmulGpuAxes, kMatmulGpuMaxKTile, target);
  };
  def.float16_via_float32 = true;
  register_op(std::move(def));
}

// ---- dense with a pre-packed weight

// dense_pack_weight: weight [N, K] -> [ceil(N/nb), K, nb]; nb from attribute 'block'.
int64_t pack_block(const std::string&, const Attrs& attrs) {
  return attrs.get_int("block");  // positive: the schema checks it
}

std::vector<TensorType> pack_weight_infer(const std::vector<TensorType>& in, const Attrs& attrs) {
  const std::string op = "dense_pack_weight";
  int64_t nb = pack_block(op, attrs);
  ANVIL_CHECK(in.size() == 1, op, ": expects 1 input (weight), got ", in.size());
  ANVIL_CHECK(in[0].dtype == DataType::Float32(), op, ": input 'weight' must be float32, not ",
              in[0].dtype);
  const std::vector<int64_t>& w = in[0].shape;
  ANVIL_CHECK(w.size() >= 2, op, ": input 'weight' must have rank 2 or more [batch.., N, K], got ",
              shape_str(w));
  std::vector<int64_t> out(w.begin(), w.end() - 2);
  const int64_t N = w[w.size() - 2], K = w.back();
  out.insert(out.end(), {(N + nb - 1) / nb, K, nb});
  return {{out, DataType::Float32()}};
}

// dense_packed: x [batch.., M, K], packed [ceil(N/nb), K, nb], optional bias [N]; attribute
// 'units' = N. The batch dimensions are the product's own (a constant weight shared by all of
// them: a Linear layer over a sequence).
Problem packed_analyze(const std::vector<TensorType>& in, const Attrs& attrs) {
  const std::string op = "dense_packed";
  ANVIL_CHECK(in.size() == 2 || in.size() == 3, op,
              ": expects 2 or 3 inputs (x, packed[, bias]), got ", in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    ANVIL_CHECK(in[i].dtype == DataType::Float32(), op, ": input ", i, " must be float32, not ",
                in[i].dtype);
  }
  const std::vector<int64_t>& x = in[0].shape;
  const std::vector<int64_t>& w = in[1].shape;
  ANVIL_CHECK(x.size() >= 2, op, ": input 'x' must have rank 2 or more [batch.., M, K], got ",
              shape_str(x));
  ANVIL_CHECK(w.size() == 3, op, ": input 'packed' must have rank 3 [N/nb, K, nb], got ",
              shape_str(w));
  Problem p;
  p.a_batch.assign(x.begin(), x.end() - 2);
  p.batch = p.a_batch;
  p.M = x[x.size() - 2];
  p.K = x.back();
  p.panel = w[2];
  p.N = attrs.get_int("units");  // required and positive: the schema checks it
  ANVIL_CHECK(w[1] == p.K, op, ": inner dimensions differ: input 'x' ", shape_str(x),
              " has K = ", p.K, " but input 'packed' ", shape_str(w), " has K = ", w[1]);
  ANVIL_CHECK(
      p.panel >= 1 && w[0] == (p.N + p.panel - 1) / p.panel, op, ": input 'packed' ", shape_str(w),
      " does not hold units = ", p.N, " rows in panels of ", p.panel, " (expected ",
      (p.N + std::max<int64_t>(p.panel, 1) - 1) / std::max<int64_t>(p.panel, 1), " panels)");
  if (in.size() == 3) {
    ANVIL_CHECK(in[2].shape == std::vector<int64_t>{p.N}, op, ": input 'bias' must have shape [",
                p.N, "] (attribute 'units'), got ", shape_str(in[2].shape));
    p.bias = true;
  }
  return p;
}

std::vector<te::Tensor> packed_compute(const std::vector<te::Tensor>& in, const Attrs& attrs) {
  std::vector<TensorType> types;
  for (const te::Tensor& t : in) types.push_back({shape_of(t), t->dtype});
  Problem p = packed_analyze(types, attrs);
  te::Tensor x = in[0], w = in[1];
  int nb = static_cast<int>(p.panel);
  IterVar k = te::reduce_axis(static_cast<int>(p.K), "k");
  te::Tensor acc = te::compute(
      to_exprs(out_shape(p)),
      [&](const std::vector<Var>& v) {
        std::vector<Expr> xi(v.begin(), v.end() - 1);  // batch.., m
        xi.push_back(k->var);
        Expr n = v.back();
        return te::sum(x(xi) * w(floordiv(n, nb), k->var, floormod(n, nb)), {k});
      },
      p.bias ? "dense_packed_acc" : "dense_packed");
  if (!p.bias) return {acc};
  te::Tensor bias = in[2];
  return {te::compute(
      to_exprs(out_shape(p)),
      [&](const std::vector<Var>& v) {
        return acc(std::vector<Expr>(v.begin(), v.end())) + bias(v.back());
      },
      "dense_packed")};
}

std::vector<runtime::NDArray> packed_reference(const std::vector<runtime::NDArray>& in,
                                               const Attrs& attrs) {
  std::vector<TensorType> types;
  for (const runtime::NDArray& a : in) types.push_back({a.shape(), DataType::Float32()});
  Problem p = packed_analyze(types, attrs);
  runtime::NDArray out = runtime::NDArray::empty(out_shape(p), runtime::dl_float32());
  const float* x = in[0].data_as<float>();
  const float* w = in[1].data_as<float>();
  int64_t rows = p.M;  // the batch dimensions are rows of one product: the weight is shared
  for (int64_t d : p.batch) rows *= d;
  for (int64_t m = 0; m < rows; ++m) {
    for (int64_t n = 0; n < p.N; ++n) {
      double acc = p.bias ? in[2].data_as<float>()[n] : 0.0;
      for (int64_t kk = 0; kk < p.K; ++kk)
        acc += double{x[m * p.K + kk]} * w[((n / p.panel) * p.K + kk) * p.panel + n % p.panel];
      out.data_as<float>()[m * p.N + n] = static_cast<float>(acc);
    }
  }
  return {out};
}

void register_packed_dense() {
  OpDef pack;
  pack.name = "dense_pack_weight";
  pack.pattern = Pattern::kInjective;
  pack.attrs = std::vector<AttrSpec>{
      {"block", AttrType::kInt, int64_t{kDefaultPanel}, {positive()}, "columns per panel"}};
  pack.flops = flops_none();
  pack.infer = pack_weight_infer;
  pack.compute = [](const std::vector<te::Tensor>& in, const Attrs& attrs) {
    std::vector<int64_t> shape = shape_of(in[0]);
    int64_t n = shape[shape.size() - 2];
    return std::vector<te::Tensor>{
        pack_panels(in[0], pack_block("dense_pack_weight", attrs), 0, n, "dense_pack_weight")};
  };
  pack.reference = [](const std::vector<runtime::NDArray>& in, const Attrs& attrs) {
    int64_t nb = pack_block("dense_pack_weight", attrs);
    const std::vector<int64_t>& shape = in[0].shape();
    int64_t N = shape[shape.size() - 2], K = shape.back(), panels = (N + nb - 1) / nb;
    int64_t batch = 1;
    for (size_t d = 0; d + 2 < shape.size(); ++d) batch *= shape[d];
    std::vector<int64_t> out_shape(shape.begin(), shape.end() - 2);
    out_shape.insert(out_shape.end(), {panels, K, nb});
    runtime::NDArray out = runtime::NDArray::empty(out_shape, runtime::dl_float32());
    const float* w = in[0].data_as<float>();
    float* o = out.data_as<float>();
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t no = 0; no < panels; ++no)
        for (int64_t k = 0; k < K; ++k)
          for (int64_t ni = 0; ni < nb; ++ni) {
            int64_t n = no * nb + ni;
            o[((b * panels + no) * K + k) * nb + ni] = n < N ? w[(b * N + n) * K + k] : 0.0f;
          }
    return std::vector<runtime::NDArray>{out};
  };
  pack.schedule_x86 = [](te::Schedule& s, const std::vector<te::Tensor>& outs, const Target& target,
                         const Config&) {
    int64_t elems = 1;
    for (int64_t d : shape_of(outs[0])) elems *= d;
    schedule_pack_panels_x86(s, outs[0], target, elems >= (int64_t{1} << 18));
  };
  pack.space = [](const std::vector<TensorType>&, const Attrs&, const Target&) {
    return ConfigSpace{};
  };
  register_op(std::move(pack));

  OpDef def;
  def.name = "dense_packed";
  def.pattern = Pattern::kComplexOutFusable;
  def.attrs = std::vector<AttrSpec>{
      {"units", AttrType::kInt, std::nullopt, {positive()}, "N, the output columns", true}};
  def.flops = matmul_flops;
  def.infer = [](const std::vector<TensorType>& in, const Attrs& attrs) {
    return std::vector<TensorType>{{out_shape(packed_analyze(in, attrs)), DataType::Float32()}};
  };
  def.compute = packed_compute;
  def.reference = packed_reference;
  def.schedule_x86 = [](te::Schedule& s, const std::vector<te::Tensor>& outs, const Target& target,
                        const Config& config) {
    // The block nb is the last dimension of the packed operand: the one the product reads at
    // [n/nb, k, n%nb] (x's last index is k).
    Found f = find_stages(outs[0]);
    int64_t nb = kDefaultPanel;
    if (const Mul* mul = f.acc->body.as<Reduce>()->source.as<Mul>()) {
      for (const Expr& e : {mul->a, mul->b}) {
        const Load* load = e.as<Load>();
        if (load && load->indices.back().as<FloorMod>())
          nb = ir::as_const_int(load->buffer->shape.back()).value_or(nb);
      }
    }
    schedule_matmul_x86("dense_packed", s, outs[0], target, config, nb, true, true);
  };
  def.space = [](const std::vector<TensorType>& in, const Attrs& attrs, const Target& target) {
    Problem p = packed_analyze(in, attrs);
    fold_unit_rows(p);
    return problem_space(p, target);
  };
  register_op(std::move(def));
}

}  // namespace

void schedule_panel_product_x86(const std::string& op, te::Schedule& s, const te::Tensor& out,
                                int64_t nb, const Target& target, const Config& config) {
  schedule_matmul_x86(op, s, out, target, config, nb, false);
}

ConfigSpace panel_product_space(int64_t batches, int64_t M, int64_t N, int64_t K, int64_t nb,
                                const Target& target) {
  Problem p;
  p.batch = {batches};
  p.M = M;
  p.N = N;
  p.K = K;
  p.panel = nb;
  return problem_space(p, target);
}

void register_dense_ops() {
  register_matmul_like("dense");
  register_matmul_like("matmul");
  register_matmul_like("batch_matmul");
  register_packed_dense();
}

}  // namespace anvil::ops
