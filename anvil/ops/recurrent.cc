// Recurrent layers with ONNX semantics (opset 14, layout = 0):
//
//   lstm  X [seq, batch, I], W [dirs, 4H, I], R [dirs, 4H, H], optional B [dirs, 8H],
//         initial_h, initial_c [dirs, batch, H], P [dirs, 3H]
//         -> Y [seq, dirs, batch, H], Y_h [dirs, batch, H], Y_c [dirs, batch, H]
//   gru   X, W [dirs, 3H, I], R [dirs, 3H, H], optional B [dirs, 6H], initial_h
//         -> Y [seq, dirs, batch, H], Y_h [dirs, batch, H]
//
// Gate orders as ONNX: lstm i, o, f, c (peepholes i, o, f); gru z, r, h. Both always produce
// every output (an importer drops the ones a node does not use).
//
// Attributes:
//   hidden_size (required), direction ("forward", "reverse", "bidirectional"; default forward),
//   packed_weights (lstm, 0/1: W and R are packed into panels of 16 gate rows, [dirs, ceil(G/16),
//   input or hidden, 16], as dense_pack_weight packs; alter_layout packs constant weights so),
//   gpu_form (0/1: the form GPU schedules want, see recurrent_compute.cc; alter_layout sets it
//   for GPU targets; the outputs are the same; not with packed_weights),
//   clip (optional: gate pre-activations are clamped to [-clip, clip] before their activation;
//   the tanh of the lstm cell state is not clipped), input_forget (lstm, 0/1: f = 1 - i),
//   linear_before_reset (gru, 0/1), activations (one string, comma-separated; only the defaults
//   "Sigmoid,Tanh,Tanh" per direction are supported, anything else is rejected),
//   layout (0 only), and
//   present: which ONNX inputs the node's inputs are. ONNX inputs are positional with empty names
//   for the absent ones: X, W, R, B, sequence_lens, initial_h, initial_c, P (lstm; gru stops at
//   initial_h). present[i] = 1 when ONNX input i is given; the node's inputs are the present ones
//   in that order; missing trailing entries are 0. Without the attribute the inputs are the
//   first inputs.size() ONNX inputs.
//   sequence_lens is rejected: every sequence has length seq (an importer drops a constant
//   sequence_lens that equals seq everywhere).
//
// Compute (recurrent_compute.cc): the input projection of every time step is one matrix product
// over W, XW [dirs, seq*batch, G*H] (+ the biases that do not depend on the step); then the time
// steps are unrolled (seq is static): per step the product of R (packed into panels once per
// call when enough steps use it) with the previous hidden state, and the gate math fused into one
// or two element-wise stages reading it. Every product follows dense's packed-path rule; its
// knobs (rnn_space) are the input projection's (xw_*) and the steps' products' (step_*). The
// reference below is naive loops in double precision, straight from the ONNX equations.
#include <algorithm>
#include <cctype>
#include <cmath>

#include "anvil/ops/families.h"
#include "anvil/ops/recurrent_common.h"
#include "anvil/ops/recurrent_dense.h"
#include "anvil/ops/schedule_gpu.h"
#include "anvil/support/error.h"

namespace anvil::ops {

using namespace recurrent;

namespace {

std::string shape_str(const std::vector<int64_t>& shape) {
  return to_string(TensorType{shape, ir::DataType::Float32()}).substr(7);
}

const char* input_name(int i) {
  static const char* names[kNumInputs] = {"X",         "W",         "R", "B", "sequence_lens",
                                          "initial_h", "initial_c", "P"};
  return names[i];
}

bool flag(const Attrs& attrs, const std::string& op, const std::string& name) {
  int64_t v = attrs.get_int(name);
  ANVIL_CHECK(v == 0 || v == 1, op, ": attribute '", name, "' must be 0 or 1, not ", v);
  return v == 1;
}

std::string lower_case(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

namespace recurrent {

Rnn analyze(const std::string& op, const std::vector<TensorType>& in, const Attrs& attrs) {
  Rnn r;
  r.op = op;
  r.lstm = op == "lstm";
  r.gates = r.lstm ? 4 : 3;
  int positions = r.lstm ? kNumInputs : kInitialH + 1;
  r.hidden = attrs.get_int("hidden_size");
  ANVIL_CHECK(r.hidden >= 1 && r.hidden < (int64_t{1} << 31), op,
              ": attribute 'hidden_size' must be from 1 to 2^31 - 1, not ", r.hidden);
  r.direction = attrs.get_string("direction");
  ANVIL_CHECK(
      r.direction == "forward" || r.direction == "reverse" || r.direction == "bidirectional", op,
      ": attribute 'direction' must be forward, reverse or bidirectional, not '", r.direction, "'");
  r.dirs = r.direction == "bidirectional" ? 2 : 1;
  if (attrs.has("clip")) {
    r.clip = attrs.get_float("clip");
    ANVIL_CHECK(*r.clip > 0, op, ": attribute 'clip' must be positive, not ", *r.clip);
  }
  if (r.lstm) {
    r.input_forget = flag(attrs, op, "input_forget");
    r.packed = flag(attrs, op, "packed_weights");
  } else {
    r.linear_before_reset = flag(attrs, op, "linear_before_reset");
  }
  r.gpu_form = flag(attrs, op, "gpu_form");
  ANVIL_CHECK(!(r.gpu_form && r.packed), op,
              ": attributes 'gpu_form' and 'packed_weights' exclude each other (the GPU form reads "
              "the weights unpacked)");
  ANVIL_CHECK(attrs.get_int("layout") == 0, op, ": attribute 'layout' must be 0 (seq-major), not ",
              attrs.get_int("layout"));
  for (const char* a : {"activation_alpha", "activation_beta"}) {
    ANVIL_CHECK(!attrs.has(a), op, ": attribute '", a,
                "' is not supported (only the default activations are)");
  }
  if (attrs.has("activations")) {
    std::string want;
    for (int64_t d = 0; d < r.dirs; ++d) want += d ? ",sigmoid,tanh" : "sigmoid,tanh";
    if (r.lstm) {
      want = "";
      for (int64_t d = 0; d < r.dirs; ++d) want += d ? ",sigmoid,tanh,tanh" : "sigmoid,tanh,tanh";
    }
    std::string got = attrs.get_string("activations");
    std::string norm;
    for (char c : lower_case(got))
      if (c != ' ') norm += c;
    ANVIL_CHECK(norm == want, op, ": attribute 'activations' '", got,
                "' is not supported: only the defaults (", want, ") are");
  }

  // Which ONNX inputs are given.
  std::vector<int64_t> present(static_cast<size_t>(positions), 0);
  if (attrs.has("present")) {
    std::vector<int64_t> p = attrs.get_ints("present");
    ANVIL_CHECK(p.size() <= present.size(), op, ": attribute 'present' has ", p.size(),
                " entries, but ", op, " has ", positions, " inputs");
    for (size_t i = 0; i < p.size(); ++i) {
      ANVIL_CHECK(p[i] == 0 || p[i] == 1, op, ": attribute 'present' entry ", i,
                  " must be 0 or 1, not ", p[i]);
      present[i] = p[i];
    }
  } else {
    ANVIL_CHECK(in.size() <= present.size(), op, ": expects at most ", positions, " inputs, got ",
                in.size());
    for (size_t i = 0; i < in.size(); ++i) present[i] = 1;
  }
  int given = 0;
  for (int i = 0; i < positions; ++i)
    if (present[static_cast<size_t>(i)]) r.index[i] = given++;
  ANVIL_CHECK(static_cast<size_t>(given) == in.size(), op, ": attribute 'present' names ", given,
              " inputs, but the node has ", in.size());
  for (Input i : {kX, kW, kR}) {
    ANVIL_CHECK(r.has(i), op, ": input '", input_name(i), "' is required");
  }
  ANVIL_CHECK(!r.has(kSequenceLens), op,
              ": input 'sequence_lens' is not supported (every sequence must have the full "
              "length of X; drop a constant sequence_lens equal to it)");
  for (const TensorType& t : in) {
    ANVIL_CHECK(t.dtype == ir::DataType::Float32(), op, ": inputs must be float32, got ",
                to_string(t));
  }

  auto type = [&](Input i) -> const std::vector<int64_t>& {
    return in[static_cast<size_t>(r.index[i])].shape;
  };
  const std::vector<int64_t>& x = type(kX);
  ANVIL_CHECK(x.size() == 3, op, ": input 'X' must have rank 3 [seq_length, batch, input_size], ",
              "got ", shape_str(x));
  r.seq = x[0];
  r.batch = x[1];
  r.input = x[2];
  ANVIL_CHECK(r.seq >= 1 && r.batch >= 1 && r.input >= 1, op, ": input 'X' ", shape_str(x),
              " must not be empty");
  int64_t G = r.gates * r.hidden;
  auto expect = [&](Input i, std::vector<int64_t> want, const char* what) {
    if (!r.has(i)) return;
    ANVIL_CHECK(type(i) == want, op, ": input '", input_name(i), "' must have shape ",
                shape_str(want), " ", what, ", got ", shape_str(type(i)));
  };
  const char* dirs_note = r.dirs == 2 ? "(bidirectional, " : "(";
  std::string hs = std::string(dirs_note) + "hidden_size " + std::to_string(r.hidden);
  if (r.packed) {
    const int64_t panels = (G + kDefaultPanel - 1) / kDefaultPanel;
    expect(kW, {r.dirs, panels, r.input, kDefaultPanel},
           (hs + ", input_size of X; packed_weights: panels of " + std::to_string(kDefaultPanel) +
            " gate rows)")
               .c_str());
    expect(kR, {r.dirs, panels, r.hidden, kDefaultPanel},
           (hs + "; packed_weights: panels of " + std::to_string(kDefaultPanel) + " gate rows)")
               .c_str());
  } else {
    expect(kW, {r.dirs, G, r.input}, (hs + ", input_size of X)").c_str());
    expect(kR, {r.dirs, G, r.hidden}, (hs + ")").c_str());
  }
  expect(kB, {r.dirs, 2 * G}, (hs + ")").c_str());
  expect(kInitialH, {r.dirs, r.batch, r.hidden}, (hs + ", batch of X)").c_str());
  expect(kInitialC, {r.dirs, r.batch, r.hidden}, (hs + ", batch of X)").c_str());
  expect(kP, {r.dirs, 3 * r.hidden}, (hs + ")").c_str());
  return r;
}

}  // namespace recurrent

namespace {

// [dirs, panels, K, nb] (panels of nb rows) -> [dirs, rows, K].
runtime::NDArray unpack_panels(const runtime::NDArray& packed, int64_t rows) {
  const std::vector<int64_t>& s = packed.shape();
  const int64_t dirs = s[0], panels = s[1], K = s[2], nb = s[3];
  runtime::NDArray out = runtime::NDArray::empty({dirs, rows, K}, runtime::dl_float32());
  const float* p = packed.data_as<float>();
  float* o = out.data_as<float>();
  for (int64_t d = 0; d < dirs; ++d)
    for (int64_t g = 0; g < rows; ++g)
      for (int64_t k = 0; k < K; ++k)
        o[(d * rows + g) * K + k] = p[((d * panels + g / nb) * K + k) * nb + g % nb];
  return out;
}

std::vector<TensorType> rnn_infer(const Rnn& r) {
  TensorType y{{r.seq, r.dirs, r.batch, r.hidden}, ir::DataType::Float32()};
  TensorType yh{{r.dirs, r.batch, r.hidden}, ir::DataType::Float32()};
  if (r.lstm) return {y, yh, yh};
  return {y, yh};
}

double sigmoid(double x) {
  return 1 / (1 + std::exp(-x));
}

// Naive loops in double precision, from the ONNX equations.
std::vector<runtime::NDArray> rnn_reference(const Rnn& r, const std::vector<runtime::NDArray>& in) {
  auto data = [&](Input i) -> const float* {
    return r.has(i) ? in[static_cast<size_t>(r.index[i])].data_as<float>() : nullptr;
  };
  const float *X = data(kX), *W = data(kW), *R = data(kR), *B = data(kB);
  const float *H0 = data(kInitialH), *C0 = data(kInitialC), *P = data(kP);
  int64_t S = r.seq, N = r.batch, I = r.input, H = r.hidden, G = r.gates * H;
  std::vector<runtime::NDArray> outs;
  for (const TensorType& t : rnn_infer(r)) {
    outs.push_back(runtime::NDArray::empty(t.shape, runtime::dl_float32()));
  }
  float* Y = outs[0].data_as<float>();
  float* Yh = outs[1].data_as<float>();
  float* Yc = r.lstm ? outs[2].data_as<float>() : nullptr;
  auto clip = [&](double v) { return r.clip ? std::clamp(v, -*r.clip, *r.clip) : v; };
  for (int64_t d = 0; d < r.dirs; ++d) {
    const float* w = W + d * G * I;
    const float* rr = R + d * G * H;
    std::vector<double> h(static_cast<size_t>(N * H), 0.0), c(h), hn(h), cn(h);
    for (int64_t i = 0; i < N * H; ++i) {
      if (H0) h[static_cast<size_t>(i)] = H0[d * N * H + i];
      if (C0) c[static_cast<size_t>(i)] = C0[d * N * H + i];
    }
    auto wb = [&](int64_t g) { return B ? double{B[d * 2 * G + g]} : 0.0; };
    auto rb = [&](int64_t g) { return B ? double{B[d * 2 * G + G + g]} : 0.0; };
    auto peep = [&](int64_t g) { return P ? double{P[d * 3 * H + g]} : 0.0; };
    for (int64_t step = 0; step < S; ++step) {
      int64_t t = r.reversed(d) ? S - 1 - step : step;
      for (int64_t b = 0; b < N; ++b) {
        const float* xt = X + (t * N + b) * I;
        const double* hp = h.data() + b * H;
        // x W^T and h R^T of gate row g.
        auto xw = [&](int64_t g) {
          double s = 0;
          for (int64_t k = 0; k < I; ++k) s += double{xt[k]} * w[g * I + k];
          return s;
        };
        auto hr = [&](int64_t g, const double* v) {
          double s = 0;
          for (int64_t k = 0; k < H; ++k) s += v[k] * rr[g * H + k];
          return s;
        };
        // gru, linear_before_reset = 0: (r (.) H_{t-1}) R_h^T needs r of every hidden unit.
        std::vector<double> rh;
        if (!r.lstm && !r.linear_before_reset) {
          for (int64_t k = 0; k < H; ++k) {
            double rk = sigmoid(clip(xw(H + k) + hr(H + k, hp) + wb(H + k) + rb(H + k)));
            rh.push_back(rk * hp[k]);
          }
        }
        for (int64_t j = 0; j < H; ++j) {
          size_t at = static_cast<size_t>(b * H + j);
          if (r.lstm) {
            auto pre = [&](int64_t q) {
              int64_t g = q * H + j;
              return xw(g) + hr(g, hp) + wb(g) + rb(g);
            };
            double i = sigmoid(clip(pre(0) + peep(j) * c[at]));
            double f = r.input_forget ? 1 - i : sigmoid(clip(pre(2) + peep(2 * H + j) * c[at]));
            double cc = std::tanh(clip(pre(3)));
            cn[at] = f * c[at] + i * cc;
            double o = sigmoid(clip(pre(1) + peep(H + j) * cn[at]));
            hn[at] = o * std::tanh(cn[at]);
          } else {
            double z = sigmoid(clip(xw(j) + hr(j, hp) + wb(j) + rb(j)));
            double rg = sigmoid(clip(xw(H + j) + hr(H + j, hp) + wb(H + j) + rb(H + j)));
            int64_t g = 2 * H + j;
            double ht;
            if (r.linear_before_reset) {
              ht = std::tanh(clip(xw(g) + rg * (hr(g, hp) + rb(g)) + wb(g)));
            } else {
              ht = std::tanh(clip(xw(g) + hr(g, rh.data()) + rb(g) + wb(g)));
            }
            hn[at] = (1 - z) * ht + z * hp[j];
          }
        }
      }
      h = hn;
      c = cn;
      for (int64_t i = 0; i < N * H; ++i) {
        Y[((t * r.dirs + d) * N) * H + i] = static_cast<float>(h[static_cast<size_t>(i)]);
      }
    }
    for (int64_t i = 0; i < N * H; ++i) {
      Yh[d * N * H + i] = static_cast<float>(h[static_cast<size_t>(i)]);
      if (Yc) Yc[d * N * H + i] = static_cast<float>(c[static_cast<size_t>(i)]);
    }
  }
  return outs;
}

void register_rnn(const std::string& name) {
  OpDef def;
  def.name = name;
  def.pattern = Pattern::kOpaque;
  // ONNX's attributes (the op checks their values), and this library's own forms.
  auto flag_attr = [](const char* flag, const char* doc) {
    return AttrSpec{flag, AttrType::kInt, int64_t{0}, {}, doc};
  };
  def.attrs = std::vector<AttrSpec>{
      {"hidden_size", AttrType::kInt, std::nullopt, {}, "H, the hidden state's size", true},
      {"direction",
       AttrType::kString,
       std::string("forward"),
       {},
       "forward, reverse or bidirectional"},
      {"clip",
       AttrType::kFloat,
       std::nullopt,
       {},
       "the gates' inputs clipped to +-clip (absent: none)"},
      {"layout", AttrType::kInt, int64_t{0}, {}, "0: seq-major (the only one supported)"},
      {"activations", AttrType::kString, std::nullopt, {}, "only the defaults are supported"},
      {"activation_alpha", AttrType::kFloats, std::nullopt, {}, "not supported"},
      {"activation_beta", AttrType::kFloats, std::nullopt, {}, "not supported"},
      {"present", AttrType::kInts, std::nullopt, {}, "1 per ONNX input given (absent: all)"},
      flag_attr("gpu_form", "1: the GPU form (plain products over unpacked weights)")};
  if (name == "lstm") {
    def.attrs.push_back(flag_attr("input_forget", "1: couple the input and forget gates"));
    def.attrs.push_back(flag_attr("packed_weights", "1: W and R packed by dense_pack_weight"));
  } else {
    def.attrs.push_back(flag_attr("linear_before_reset", "1: apply the reset gate after R"));
  }
  // Every gate's products, input and recurrent, for every step and direction (flops.h); from X
  // and Y, as W and R may be packed into panels (alter_layout).
  def.flops = [name](const std::vector<TensorType>& in, const std::vector<TensorType>& out,
                     const Attrs&) {
    const std::vector<int64_t>& x = flops_operand(name, in, true, 0, 3);    // [seq, batch, I]
    const std::vector<int64_t>& y = flops_operand(name, out, false, 0, 4);  // [seq, dirs, batch, H]
    const double dirs = static_cast<double>(y[1]), H = static_cast<double>(y[3]);
    const double G = (name == "lstm" ? 4 : 3) * H;
    return 2 * static_cast<double>(x[0] * x[1]) * dirs * G * (static_cast<double>(x[2]) + H);
  };
  // The default GPU schedule with each lstm step in one kernel (recurrent_gpu.cc), tunable.
  def.schedule_gpu = [name](te::Schedule& s, const std::vector<te::Tensor>& outs, const Attrs&,
                            const Target& target, const Config& config) {
    rnn_schedule_gpu(name, s, outs, target, config);
  };
  def.space_gpu = [name](const std::vector<TensorType>& in, const Attrs& attrs,
                         const Target& target) {
    return rnn_space_gpu(analyze(name, in, attrs), in, attrs, target);
  };
  def.infer = [name](const std::vector<TensorType>& in, const Attrs& attrs) {
    return rnn_infer(analyze(name, in, attrs));
  };
  def.compute = [name](const std::vector<te::Tensor>& in, const Attrs& attrs) {
    std::vector<TensorType> types;
    for (const te::Tensor& t : in) types.push_back({shape_of(t), t->dtype});
    return rnn_compute(analyze(name, types, attrs), in);
  };
  def.reference = [name](const std::vector<runtime::NDArray>& in, const Attrs& attrs) {
    std::vector<TensorType> types;
    for (const runtime::NDArray& a : in) types.push_back({a.shape(), ir::DataType::Float32()});
    Rnn r = analyze(name, types, attrs);
    if (!r.packed) return rnn_reference(r, in);
    // Packed weights: unpacked, then the same loops.
    std::vector<runtime::NDArray> plain = in;
    const int64_t G = r.gates * r.hidden;
    for (Input i : {kW, kR}) {
      runtime::NDArray& a = plain[static_cast<size_t>(r.index[i])];
      a = unpack_panels(a, G);
    }
    r.packed = false;
    return rnn_reference(r, plain);
  };
  // The products' knobs: dense's packed-path knobs, the projection's and the steps' apart.
  def.schedule_x86 = [name](te::Schedule& s, const std::vector<te::Tensor>&, const Target& target,
                            const Config& config) { rnn_schedule_x86(name, s, target, config); };
  def.space = [name](const std::vector<TensorType>& in, const Attrs& attrs, const Target& target) {
    return rnn_space(analyze(name, in, attrs), target);
  };
  // The tuner's inputs. Weights uniform in [-1, 1] make a recurrence of hundreds of units
  // chaotic: rounding grows step by step until every float32 order of summation disagrees with
  // the double-precision reference (lstm_lm's 650 units: wrong at step 33 of 35). Weights in
  // [-1/sqrt(H), 1/sqrt(H)], PyTorch's initialization, keep it contracting, as trained ones are.
  def.sample_inputs =
      [name](const std::vector<TensorType>& in, const Attrs& attrs,
             const std::function<runtime::NDArray(const std::vector<int64_t>&)>& random) {
        Rnn r = analyze(name, in, attrs);
        float scale = 1.0f / std::sqrt(static_cast<float>(r.hidden));
        std::vector<runtime::NDArray> v;
        for (size_t i = 0; i < in.size(); ++i) {
          runtime::NDArray a = random(in[i].shape);
          bool weight = static_cast<int>(i) == r.index[kW] || static_cast<int>(i) == r.index[kR] ||
                        static_cast<int>(i) == r.index[kB] || static_cast<int>(i) == r.index[kP];
          if (weight)
            for (int64_t k = 0; k < a.numel(); ++k) a.data_as<float>()[k] *= scale;
          v.push_back(a);
        }
        return v;
      };
  def.float16_via_float32 = true;
  register_op(std::move(def));
}

}  // namespace

void register_recurrent_ops() {
  register_rnn("lstm");
  register_rnn("gru");
}

}  // namespace anvil::ops
