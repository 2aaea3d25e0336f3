// The tensor expressions and the default x86 schedule of lstm and gru (see recurrent.cc for the
// operators' interface). G = gates * H.
//
// Stages, named <op>_<role>[_d<direction>_t<time>]:
//   wpack, xwacc, xw  the projection of every step, XW[d, t*batch + b, g] = sum_k X[t, b, k]
//                     W[d, g, k] (+ the biases that do not depend on the step), one product with
//                     M = seq*batch rows: over W packed into panels of 16 gate rows
//                     ([dirs, G/16, I, 16]) when M >= 8, else in the dot form (as dense chooses)
//   (with packed_weights, W and R come packed: no wpack or rpack stage, always the panel forms)
//   rpack             R packed likewise, once per call, when at least 8 steps (all directions)
//                     multiply by it (gru with linear_before_reset = 0: rzpack holds the z and r
//                     rows, rhpack the h rows, so that each product starts on a panel)
//   per direction d and time t, in the order the direction visits them:
//   gemv (partgemv)   acc[b, g] = sum_k h_prev[b, k] R[d, g, k]: over the packed R, else in the
//                     dot form (partial-sum vectors along k); absent at the first step when there
//                     is no initial_h (h_prev = 0)
//   c, h              lstm: the cell state and the hidden state, every gate inlined into them
//   state             lstm with gpu_form: c and h as one stage [2, batch, H] (rows c, h), the
//                     gates computed in both rows, so that a GPU computes them in one kernel
//                     (with the step's gemvsum)
//   rh, gemvh, h      gru: h alone (linear_before_reset = 1), or r (.) h_prev, its product with
//                     R_h and h (linear_before_reset = 0)
//   Y, Yh, Yc         the outputs: selects over the per-step h (and c) stages, folded to one load
//                     each once the time and direction loops are unrolled
// gpu_form (the GPU targets' form): nothing is packed; the products are plain reductions over
// the weights as given: xwsum (then xwbias with the biases), gemvsum and gemvhsum. The lstm's
// gemvsum is by unit, [batch, H, 4] (gate q of unit j: R's row q*H + j), and its state stage
// replaces c and h, so that its GPU schedule (recurrent_gpu.cc) computes a step in one kernel.
// The gru's products take the default GPU schedule, each gate row reduced in a block of lanes
// along k (coalesced reads of R); the projection, with more rows than that schedule shares among
// lanes, is a thread per output.
//
// Why pack R: the packing is a gather (about 650 us for 2600 x 650 here, 7 GEMV passes), but the
// GEMV over panels streams 16-float rows with 8 accumulator vectors in flight and no horizontal
// sums: for [1, 650] x [650, 2600], 73 us packed vs 86 us dot with R in the L3, and twice the dot
// form's bandwidth once the weights leave the L3 (a model's several layers: 30 vs 15 GB/s at
// 54 MB). On the LSTM language model's layer (seq 35, H 650, all in L3) the two are within 4%
// (best of 40: 5.98 ms packed, 5.76 ms dot), so from 8 products on, R is packed for the
// out-of-cache case.
//
// Schedule: every product follows dense's rule (recurrent_dense.h): the packed projection as a
// register-tiled GEMM (6 x 2 vectors), the GEMV form with tile_m = batch and 8 accumulator
// vectors (broadcast h[b, k], FMA into panel vectors, k outer and unrolled), the dot form with
// 8 rows per block; blocks parallel when the product has at least 2^18 multiply-adds. The
// packings are vectorized and parallel over panels when large. Element-wise stages are
// vectorized over the hidden units; the outputs unroll time and direction and vectorize over the
// hidden units. The unrolled steps make the kernel's code grow with seq: LLVM compiles the
// seq 35, H 650 layer in about 6 s (0.16 s per step) on this machine when quiet.
#include <functional>

#include "anvil/ir/op.h"
#include "anvil/ops/recurrent_common.h"
#include "anvil/ops/recurrent_dense.h"
#include "anvil/ops/schedule_util.h"
#include "anvil/support/error.h"

namespace anvil::ops::recurrent {

using namespace ir;

namespace {

constexpr int64_t kNb = kDefaultPanel;  // gate rows per packed panel
// As dense: W is packed only for this many rows (seq*batch); fewer take the dot form.
constexpr int kPackMinRows = 8;
constexpr int kPackMinSteps = 8;  // products (steps x directions) that pay for packing R

// The input projection goes through packed panels of W (enough rows, or W packed already), else
// dot products.
bool packed_projection(const Rnn& r) {
  return r.packed || r.seq * r.batch >= kPackMinRows;
}

// R is packed into panels (or arrives packed) when enough products read it: steps with a
// previous hidden state, times directions.
bool packed_steps(const Rnn& r) {
  int64_t products = (r.seq - (r.has(kInitialH) ? 0 : 1)) * r.dirs;
  return r.packed || (products >= kPackMinSteps && !r.gpu_form);
}
constexpr int64_t kDotLanes = 16;  // partial sums per dot product (one AVX-512 vector)
constexpr int64_t kParallelWork = kParallelMultiplyAdds;  // elements or multiply-adds

using VecFn = std::function<Expr(Expr, Expr)>;  // a [batch, H] operand, null when zero

Expr sigmoid(Expr x) {
  return Call::make(Intrinsic::kSigmoid, {std::move(x)});
}
Expr tanh_(Expr x) {
  return Call::make(Intrinsic::kTanh, {std::move(x)});
}

struct Builder {
  const Rnn& r;
  const std::vector<te::Tensor>& in;
  int S, N, I, H, G;
  te::Tensor xw;

  te::Tensor input(Input i) const { return in[static_cast<size_t>(r.index[i])]; }
  std::string name(const std::string& role) const { return r.op + "_" + role; }
  std::string name(const std::string& role, int d, int t) const {
    return r.op + "_" + role + "_d" + std::to_string(d) + "_t" + std::to_string(t);
  }
  Expr clip(Expr v) const {
    if (!r.clip) return v;
    float c = static_cast<float>(*r.clip);
    return min(max(v, Expr(-c)), Expr(c));
  }

  // The projection of every step, with the step-independent biases: W's always, R's except the
  // gru's h row under linear_before_reset (it sits inside r (.) (...)). Packed W for enough rows
  // (seq*batch >= kPackMinRows), else dot products along I, as dense chooses.
  void project() {
    te::Tensor X = input(kX), W = input(kW);
    int n = N;
    bool bias = r.has(kB);
    std::string acc_name = name(bias ? "xwacc" : "xw");
    int dirs = static_cast<int>(r.dirs);
    te::Tensor acc;
    if (r.gpu_form) {
      IterVar k = te::reduce_axis(I, "k");
      acc = te::compute(
          {Expr(dirs), Expr(S * N), Expr(G)},
          [&](Var d, Var m, Var g) {
            return te::sum(X(floordiv(m, n), floormod(m, n), k->var) * W(d, g, k->var), {k});
          },
          name("xwsum"));
    } else if (packed_projection(r)) {
      te::Tensor wp = r.packed ? W : pack_panels(W, kNb, 0, G, name("wpack"));
      IterVar k = te::reduce_axis(I, "k");
      int nb = static_cast<int>(kNb);
      acc = te::compute(
          {Expr(dirs), Expr(S * N), Expr(G)},
          [&](Var d, Var m, Var g) {
            return te::sum(X(floordiv(m, n), floormod(m, n), k->var) *
                               wp(d, floordiv(g, nb), k->var, floormod(g, nb)),
                           {k});
          },
          acc_name);
    } else {
      acc = dot(
          {Expr(dirs), Expr(S * N), Expr(G)}, I,
          [&](const std::vector<Var>& v, Expr k) {
            return X(floordiv(v[1], n), floormod(v[1], n), k) * W(v[0], v[2], k);
          },
          acc_name);
    }
    if (!bias) {
      xw = acc;
      return;
    }
    te::Tensor B = input(kB);
    int rb_rows = !r.lstm && r.linear_before_reset ? 2 * H : G;
    xw = te::compute(
        {Expr(dirs), Expr(S * N), Expr(G)},
        [&](Var d, Var m, Var g) {
          Expr rb = B(d, g + G);
          if (rb_rows < G) rb = select(g < rb_rows, rb, 0.0f);
          return acc(d, m, g) + B(d, g) + rb;
        },
        name(r.gpu_form ? "xwbias" : "xw"));
  }

  // The dot form of a product with few rows (dense's dot path): rows of the weight are
  // contiguous along k, so partial sums are vectors over k, summed at the end:
  //   part[out.., kv] = sum_ko prod(out.., ko*16 + kv)   (k < K),  acc[out..] = sum_kv part
  te::Tensor dot(std::vector<Expr> shape, int K,
                 const std::function<Expr(const std::vector<Var>&, Expr)>& prod,
                 const std::string& nm) const {
    int lanes = static_cast<int>(kDotLanes);
    IterVar ko = te::reduce_axis((K + lanes - 1) / lanes, "ko");
    std::vector<Expr> pshape = shape;
    pshape.push_back(Expr(lanes));
    std::string part_name = nm;
    part_name.insert(r.op.size() + 1, "part");  // <op>_part<role>...: the dot's partial sums
    te::Tensor part = te::compute(
        pshape,
        [&](const std::vector<Var>& v) {
          std::vector<Var> outer(v.begin(), v.end() - 1);
          Expr k = ko->var * lanes + v.back();
          Expr e = prod(outer, k);
          return K % lanes != 0 ? te::sum(e, {ko}, k < K) : te::sum(e, {ko});
        },
        part_name);
    IterVar kv = te::reduce_axis(lanes, "kv");
    return te::compute(
        shape,
        [&](const std::vector<Var>& v) {
          std::vector<Expr> idx(v.begin(), v.end());
          idx.push_back(kv->var);
          return te::sum(part(idx), {kv});
        },
        nm);
  }

  // acc[b, g] = sum_k v(b, k) * R[d, row0 + g, k] over `rows` gate rows (h_prev R^T), the stage
  // named for `role` at step t: in the GPU form a plain reduction ("<role>sum"), else the GEMV
  // form over `packed` (R's rows row0.. packed into panels) when given, else the dot form.
  te::Tensor gemv(const VecFn& v, const te::Tensor& R, const te::Tensor& packed, int row0, int rows,
                  int d, int t, const std::string& role) const {
    if (r.gpu_form) {
      IterVar k = te::reduce_axis(H, "k");
      return te::compute(
          {Expr(N), Expr(rows)},
          [&](Var b, Var g) { return te::sum(v(b, k->var) * R(d, g + row0, k->var), {k}); },
          name(role + "sum", d, t));
    }
    std::string nm = name(role, d, t);
    if (!packed.get()) {
      return dot(
          {Expr(N), Expr(rows)}, H,
          [&](const std::vector<Var>& o, Expr k) { return v(o[0], k) * R(d, o[1] + row0, k); }, nm);
    }
    IterVar k = te::reduce_axis(H, "k");
    int nb = static_cast<int>(kNb);
    return te::compute(
        {Expr(N), Expr(rows)},
        [&](Var b, Var g) {
          return te::sum(v(b, k->var) * packed(d, floordiv(g, nb), k->var, floormod(g, nb)), {k});
        },
        nm);
  }

  // The lstm's recurrent product in the GPU form, by unit: acc[b, j, q] = sum_k h_prev[b, k]
  // R[d, q*H + j, k], so that the units of a block read one contiguous region of it (a step's
  // kernel computes its block's share, see rnn_schedule_gpu).
  te::Tensor gemv_units(const VecFn& v, const te::Tensor& R, int d, int t) const {
    IterVar k = te::reduce_axis(H, "k");
    return te::compute(
        {Expr(N), Expr(H), Expr(static_cast<int>(r.gates))},
        [&](Var b, Var j, Var q) { return te::sum(v(b, k->var) * R(d, q * H + j, k->var), {k}); },
        name("gemvsum", d, t));
  }

  // XW of gate row q*H + j at time t, plus the recurrent product's row when there is one (from a
  // product by unit, [batch, H, gates], when acc has three dimensions).
  Expr pre(int d, int t, int q, const te::Tensor& acc, Expr b, Expr j, int acc_row0 = -1) const {
    Expr v = xw(d, b + t * N, j + q * H);
    if (!acc.get()) return v;
    if (acc.ndim() == 3) return v + acc(b, j, q);
    return v + acc(b, j + (acc_row0 < 0 ? q * H : acc_row0));
  }
};

}  // namespace

std::vector<te::Tensor> rnn_compute(const Rnn& r, const std::vector<te::Tensor>& in) {
  Builder bl{r,
             in,
             static_cast<int>(r.seq),
             static_cast<int>(r.batch),
             static_cast<int>(r.input),
             static_cast<int>(r.hidden),
             static_cast<int>(r.gates * r.hidden),
             te::Tensor()};
  int S = bl.S, N = bl.N, H = bl.H, G = bl.G;
  bl.project();
  bool lbr0 = !r.lstm && !r.linear_before_reset;
  te::Tensor R = in[static_cast<size_t>(r.index[kR])];
  // R packed into panels once per call when enough steps read it (see the header).
  te::Tensor rpack, rhpack;
  if (r.packed) {
    rpack = R;
  } else if (packed_steps(r)) {
    rpack = pack_panels(R, kNb, 0, lbr0 ? 2 * H : G, bl.name(lbr0 ? "rzpack" : "rpack"));
    if (lbr0) rhpack = pack_panels(R, kNb, 2 * H, H, bl.name("rhpack"));
  }
  te::Tensor P = r.has(kP) ? bl.input(kP) : te::Tensor();
  te::Tensor B = r.has(kB) ? bl.input(kB) : te::Tensor();

  int dirs = static_cast<int>(r.dirs);
  // Per direction and step, the hidden and cell states as functions of (batch, unit).
  std::vector<std::vector<VecFn>> hs(static_cast<size_t>(dirs)), cs(hs);
  for (int d = 0; d < dirs; ++d) {
    hs[static_cast<size_t>(d)].resize(static_cast<size_t>(S));
    cs[static_cast<size_t>(d)].resize(static_cast<size_t>(S));
    VecFn hprev, cprev;
    if (r.has(kInitialH)) {
      te::Tensor h0 = bl.input(kInitialH);
      hprev = [h0, d](Expr b, Expr j) { return h0(d, b, j); };
    }
    if (r.has(kInitialC)) {
      te::Tensor c0 = bl.input(kInitialC);
      cprev = [c0, d](Expr b, Expr j) { return c0(d, b, j); };
    }
    for (int step = 0; step < S; ++step) {
      int t = r.reversed(d) ? S - 1 - step : step;
      te::Tensor acc;
      if (hprev && r.lstm && r.gpu_form) {
        acc = bl.gemv_units(hprev, R, d, t);
      } else if (hprev) {
        acc = bl.gemv(hprev, R, rpack, 0, lbr0 ? 2 * H : G, d, t, "gemv");
      }
      if (r.lstm) {
        // The cell state of unit (b, j), and the hidden state from it.
        auto cell = [&](Var b, Var j) {
          Expr cp = cprev ? cprev(b, j) : Expr();
          Expr ip = bl.pre(d, t, 0, acc, b, j);
          if (P.get() && cp.defined()) ip = ip + P(d, j) * cp;
          Expr i = sigmoid(bl.clip(ip));
          Expr next = i * tanh_(bl.clip(bl.pre(d, t, 3, acc, b, j)));
          if (!cp.defined()) return next;
          Expr f;
          if (r.input_forget) {
            f = Expr(1.0f) - i;
          } else {
            Expr fp = bl.pre(d, t, 2, acc, b, j);
            if (P.get()) fp = fp + P(d, j + 2 * H) * cp;
            f = sigmoid(bl.clip(fp));
          }
          return f * cp + next;
        };
        auto hidden = [&](Var b, Var j, Expr c) {
          Expr op = bl.pre(d, t, 1, acc, b, j);
          if (P.get()) op = op + P(d, j + H) * c;
          return sigmoid(bl.clip(op)) * tanh_(c);
        };
        VecFn c_of, h_of;
        if (r.gpu_form) {
          // One stage [2, batch, H]: row 0 the cell state, row 1 the hidden state (the gates
          // computed in both rows).
          te::Tensor st = te::compute(
              {Expr(2), Expr(N), Expr(H)},
              [&](Var row, Var b, Var j) {
                Expr c = cell(b, j);
                return select(row == 0, c, hidden(b, j, c));
              },
              bl.name("state", d, t));
          c_of = [st](Expr b, Expr j) { return st(0, b, j); };
          h_of = [st](Expr b, Expr j) { return st(1, b, j); };
        } else {
          te::Tensor c = te::compute({Expr(N), Expr(H)}, cell, bl.name("c", d, t));
          te::Tensor h = te::compute(
              {Expr(N), Expr(H)}, [&](Var b, Var j) { return hidden(b, j, c(b, j)); },
              bl.name("h", d, t));
          c_of = [c](Expr b, Expr j) { return c(b, j); };
          h_of = [h](Expr b, Expr j) { return h(b, j); };
        }
        cs[static_cast<size_t>(d)][static_cast<size_t>(t)] = c_of;
        cprev = c_of;
        hs[static_cast<size_t>(d)][static_cast<size_t>(t)] = h_of;
        hprev = h_of;
      } else {
        te::Tensor acch;
        if (lbr0 && hprev) {
          te::Tensor rh = te::compute(
              {Expr(N), Expr(H)},
              [&](Var b, Var j) {
                return sigmoid(bl.clip(bl.pre(d, t, 1, acc, b, j))) * hprev(b, j);
              },
              bl.name("rh", d, t));
          acch = bl.gemv([rh](Expr b, Expr j) { return rh(b, j); }, R, rhpack, 2 * H, H, d, t,
                         "gemvh");
        }
        te::Tensor h = te::compute(
            {Expr(N), Expr(H)},
            [&](Var b, Var j) {
              Expr z = sigmoid(bl.clip(bl.pre(d, t, 0, acc, b, j)));
              Expr cand;
              if (lbr0) {
                cand = bl.pre(d, t, 2, acch, b, j, 0);
              } else {
                Expr lin = acc.get() ? acc(b, j + 2 * H) : Expr();
                if (B.get()) {
                  Expr rbh = B(d, j + (G + 2 * H));
                  lin = lin.defined() ? lin + rbh : rbh;
                }
                cand = bl.pre(d, t, 2, te::Tensor(), b, j);
                if (lin.defined()) {
                  Expr rg = sigmoid(bl.clip(bl.pre(d, t, 1, acc, b, j)));
                  cand = cand + rg * lin;
                }
              }
              Expr next = (Expr(1.0f) - z) * tanh_(bl.clip(cand));
              return hprev ? next + z * hprev(b, j) : next;
            },
            bl.name("h", d, t));
        hs[static_cast<size_t>(d)][static_cast<size_t>(t)] = [h](Expr b, Expr j) {
          return h(b, j);
        };
        hprev = hs[static_cast<size_t>(d)][static_cast<size_t>(t)];
      }
    }
  }

  // The outputs select among the per-step stages.
  auto pick = [&](const std::vector<std::vector<VecFn>>& st, Expr t, Expr d, Expr b, Expr j,
                  bool last) {
    Expr e;
    for (int dd = dirs - 1; dd >= 0; --dd) {
      const std::vector<VecFn>& v = st[static_cast<size_t>(dd)];
      Expr ed;
      if (last) {
        ed = v[static_cast<size_t>(r.reversed(dd) ? 0 : S - 1)](b, j);
      } else {
        ed = v[static_cast<size_t>(S - 1)](b, j);
        for (int tt = S - 2; tt >= 0; --tt)
          ed = select(t == tt, v[static_cast<size_t>(tt)](b, j), ed);
      }
      e = e.defined() ? select(d == dd, ed, e) : ed;
    }
    return e;
  };
  std::vector<te::Tensor> outs;
  outs.push_back(te::compute(
      {Expr(S), Expr(dirs), Expr(N), Expr(H)},
      [&](Var t, Var d, Var b, Var j) { return pick(hs, t, d, b, j, false); }, bl.name("Y")));
  outs.push_back(te::compute(
      {Expr(dirs), Expr(N), Expr(H)},
      [&](Var d, Var b, Var j) { return pick(hs, Expr(), d, b, j, true); }, bl.name("Yh")));
  if (r.lstm) {
    outs.push_back(te::compute(
        {Expr(dirs), Expr(N), Expr(H)},
        [&](Var d, Var b, Var j) { return pick(cs, Expr(), d, b, j, true); }, bl.name("Yc")));
  }
  return outs;
}

ConfigSpace rnn_space(const Rnn& r, const Target& target) {
  ConfigSpace space;
  if (r.gpu_form) return space;
  auto add = [&](const ConfigSpace& part, const std::string& prefix) {
    for (Knob k : part) {
      k.name = prefix + k.name;
      space.push_back(std::move(k));
    }
  };
  int64_t G = r.gates * r.hidden;
  if (packed_projection(r))
    add(panel_product_space(r.dirs, r.seq * r.batch, G, r.input, kNb, target), "xw_");
  if (packed_steps(r)) {
    // The gru's r and z rows when h's product is apart (linear_before_reset 0): the larger one.
    int64_t rows = !r.lstm && !r.linear_before_reset ? 2 * r.hidden : G;
    add(panel_product_space(1, r.batch, rows, r.hidden, kNb, target), "step_");
  }
  return space;
}

std::string stage_role(const std::string& op, const te::Tensor& t) {
  const std::string& n = t.name();
  if (n.rfind(op + "_", 0) != 0) return "";
  std::string role = n.substr(op.size() + 1);
  return role.substr(0, role.find('_'));
}

void rnn_schedule_x86(const std::string& op, te::Schedule& s, const Target& target,
                      const Config& config) {
  // The knobs named prefix + knob, without the prefix.
  auto knobs = [&](const std::string& prefix) {
    Config c;
    for (const auto& [name, value] : config)
      if (name.rfind(prefix, 0) == 0) c[name.substr(prefix.size())] = value;
    return c;
  };
  const Config xw_config = knobs("xw_"), step_config = knobs("step_");
  int64_t lanes = target.vector_lanes_f32();
  std::vector<te::Tensor> stages;
  for (const te::Stage& st : s.stages()) stages.push_back(st.tensor());
  auto vectorize_last = [&](te::Stage st) {
    std::vector<IterVar> ax = st.axis();
    auto [jo, ji] = st.split(ax.back(), lanes);
    st.vectorize(ji);
    (void)jo;
  };
  for (const te::Tensor& t : stages) {
    if (!t.is_compute()) continue;
    const std::string& n = t.name();
    std::string role = stage_role(op, t);
    ANVIL_ICHECK(!role.empty(), op, " schedule: unexpected stage '", n, "'");
    std::vector<int64_t> shape = shape_of(t);
    int64_t elems = 1;
    for (int64_t e : shape) elems *= e;
    if (role == "wpack" || role == "rpack" || role == "rzpack" || role == "rhpack") {
      schedule_pack_panels_x86(s, t, target, elems >= kParallelWork);
    } else if (role == "xw" || role == "gemv" || role == "gemvh") {
      schedule_panel_product_x86(op, s, t, kNb, target, role == "xw" ? xw_config : step_config);
    } else if (role == "c" || role == "h" || role == "rh" || role == "xwbias") {
      vectorize_last(s[t]);
    } else if (role == "state") {
      // gpu_form: the (cell, hidden) row unrolled so its select folds.
      s[t].unroll(s[t].axis()[0]);
      vectorize_last(s[t]);
    } else if (role == "Y" || role == "Yh" || role == "Yc") {
      // Unrolled time and direction loops fold the selects to one load each.
      te::Stage st = s[t];
      std::vector<IterVar> ax = st.axis();
      st.unroll(ax[0]);
      if (role == "Y") st.unroll(ax[1]);
      vectorize_last(st);
    } else if (role == "xwsum" || role == "gemvsum" || role == "gemvhsum") {
      // gpu_form's plain products: left serial on the CPU (GPU targets schedule them).
    } else {
      // Scheduled with their products.
      ANVIL_ICHECK(role == "xwacc" || role.rfind("part", 0) == 0, op,
                   " schedule: unexpected stage '", n, "'");
    }
  }
}

}  // namespace anvil::ops::recurrent
