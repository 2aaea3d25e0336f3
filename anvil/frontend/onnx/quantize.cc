#include "anvil/frontend/onnx/quantize.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "anvil/frontend/onnx/importer.h"
#include "anvil/graph/build.h"
#include "anvil/support/error.h"
#include "anvil/target/target.h"

namespace anvil::frontend {

namespace {

// What a quantized node needs: its activation (input 0) and its weight (input 1, an initializer)
// with the axis of its output channels.
struct Candidate {
  int node;
  std::string activation, weight, output;
  int64_t axis;
};

std::string node_label(const ::onnx::NodeProto& n, int i) {
  return n.name().empty() ? n.op_type() + " #" + std::to_string(i) : n.name();
}

std::vector<float> floats_of(const ::onnx::TensorProto& t) {
  int64_t n = 1;
  for (int64_t d : t.dims()) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  if (t.has_raw_data()) {
    ANVIL_CHECK(t.raw_data().size() == v.size() * sizeof(float), "quantize: initializer '",
                t.name(), "' holds ", t.raw_data().size(), " bytes, not ", v.size(), " floats");
    std::memcpy(v.data(), t.raw_data().data(), t.raw_data().size());
  } else {
    ANVIL_CHECK(t.float_data_size() == n, "quantize: initializer '", t.name(), "' holds ",
                t.float_data_size(), " floats, not ", n);
    std::copy(t.float_data().begin(), t.float_data().end(), v.begin());
  }
  return v;
}

::onnx::TensorProto tensor(const std::string& name, int type, const std::vector<int64_t>& dims,
                           const void* data, size_t bytes) {
  ::onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(type);
  for (int64_t d : dims) t.add_dims(d);
  t.set_raw_data(std::string(static_cast<const char*>(data), bytes));
  return t;
}

// Each Conv followed only by an inference BatchNormalization, all of whose parameters are float32
// initializers, takes the normalization into its weight and bias (w * s, (b - mean) * s + beta
// with s = scale / sqrt(var + epsilon)), as quantization tools do first: the weight is then
// quantized with the scale it is used with, and the convolution's output is the normalized one.
int fold_batch_norms(::onnx::GraphProto& g) {
  std::map<std::string, int> readers;
  for (const ::onnx::NodeProto& n : g.node())
    for (const std::string& in : n.input()) ++readers[in];
  for (const ::onnx::ValueInfoProto& o : g.output()) readers[o.name()] += 2;
  std::map<std::string, int> producer;
  for (int i = 0; i < g.node_size(); ++i)
    for (const std::string& out : g.node(i).output()) producer[out] = i;
  std::vector<bool> drop(static_cast<size_t>(g.node_size()), false);
  // Initializers by name, as indices: pointers would not survive the ones added below.
  std::map<std::string, int> initializer;
  for (int i = 0; i < g.initializer_size(); ++i) initializer[g.initializer(i).name()] = i;
  int folded = 0;
  for (int b = 0; b < g.node_size(); ++b) {
    const ::onnx::NodeProto& bn = g.node(b);
    if (bn.op_type() != "BatchNormalization" || bn.input_size() != 5 || bn.output_size() != 1)
      continue;
    auto p = producer.find(bn.input(0));
    if (p == producer.end() || readers[bn.input(0)] != 1) continue;
    ::onnx::NodeProto& conv = *g.mutable_node(p->second);
    if (conv.op_type() != "Conv" || conv.input_size() < 2) continue;
    auto get = [&](const std::string& name) -> const ::onnx::TensorProto* {
      auto it = initializer.find(name);
      if (it == initializer.end()) return nullptr;
      const ::onnx::TensorProto& t = g.initializer(it->second);
      return t.data_type() == ::onnx::TensorProto::FLOAT ? &t : nullptr;
    };
    const ::onnx::TensorProto* w = get(conv.input(1));
    const ::onnx::TensorProto* cb = conv.input_size() > 2 ? get(conv.input(2)) : nullptr;
    if (!w || (conv.input_size() > 2 && !cb)) continue;
    std::vector<const ::onnx::TensorProto*> params;
    for (int i = 1; i < 5; ++i) params.push_back(get(bn.input(i)));
    if (std::find(params.begin(), params.end(), nullptr) != params.end()) continue;
    float epsilon = 1e-5f;
    bool training = false;
    for (const auto& a : bn.attribute()) {
      if (a.name() == "epsilon") epsilon = a.f();
      if (a.name() == "training_mode") training = a.i() != 0;
    }
    if (training) continue;
    std::vector<float> wv = floats_of(*w);
    const std::vector<float> scale = floats_of(*params[0]), beta = floats_of(*params[1]),
                             mean = floats_of(*params[2]), var = floats_of(*params[3]);
    const int64_t O = w->dims(0);
    if (static_cast<int64_t>(scale.size()) != O) continue;
    std::vector<float> bias = cb ? floats_of(*cb) : std::vector<float>(static_cast<size_t>(O), 0);
    const size_t per = wv.size() / static_cast<size_t>(O);
    for (int64_t o = 0; o < O; ++o) {
      const size_t k = static_cast<size_t>(o);
      const float s = scale[k] / std::sqrt(var[k] + epsilon);
      for (size_t i = 0; i < per; ++i) wv[k * per + i] *= s;
      bias[k] = (bias[k] - mean[k]) * s + beta[k];
    }
    const std::vector<int64_t> dims(w->dims().begin(), w->dims().end());
    const std::string wname = bn.output(0) + "_folded_weight";
    const std::string bname = bn.output(0) + "_folded_bias";
    *g.add_initializer() =
        tensor(wname, ::onnx::TensorProto::FLOAT, dims, wv.data(), wv.size() * sizeof(float));
    *g.add_initializer() =
        tensor(bname, ::onnx::TensorProto::FLOAT, {O}, bias.data(), bias.size() * sizeof(float));
    initializer[wname] = g.initializer_size() - 2;
    initializer[bname] = g.initializer_size() - 1;
    conv.set_input(1, wname);
    if (conv.input_size() > 2) {
      conv.set_input(2, bname);
    } else {
      conv.add_input(bname);
    }
    conv.set_output(0, bn.output(0));
    drop[static_cast<size_t>(b)] = true;
    ++folded;
  }
  ::onnx::GraphProto kept = g;
  kept.clear_node();
  for (int i = 0; i < g.node_size(); ++i)
    if (!drop[static_cast<size_t>(i)]) *kept.add_node() = g.node(i);
  // Initializers only the folded convolutions and normalizations read go.
  std::set<std::string> read;
  for (const ::onnx::NodeProto& n : kept.node())
    for (const std::string& in : n.input()) read.insert(in);
  kept.clear_initializer();
  for (const ::onnx::TensorProto& t : g.initializer())
    if (read.count(t.name())) *kept.add_initializer() = t;
  g = kept;
  return folded;
}

// Activation ranges: min and max of each tensor, or the percentile of its values on each side.
struct Range {
  std::vector<float> values;  // kept only for a percentile
  float lo = 0, hi = 0;
};

// The uint8 scale and zero point of [lo, hi] (widened to hold 0, as ONNX's DynamicQuantizeLinear
// does, so that zero is exact).
std::pair<float, uint8_t> uint8_params(float lo, float hi) {
  lo = std::min(lo, 0.0f);
  hi = std::max(hi, 0.0f);
  float scale = (hi - lo) / 255.0f;
  if (!(scale > 0)) scale = 1.0f;
  const float zp = std::nearbyint(-lo / scale);
  return {scale, static_cast<uint8_t>(std::clamp(zp, 0.0f, 255.0f))};
}

std::vector<runtime::NDArray> ordered_inputs(const graph::Graph& g,
                                             const std::map<std::string, runtime::NDArray>& in) {
  std::vector<runtime::NDArray> v;
  for (graph::ValueId i : g.inputs()) {
    auto it = in.find(g.value(i).name);
    ANVIL_CHECK(it != in.end(), "quantize: the calibration inputs have no '", g.value(i).name,
                "', an input of the model");
    v.push_back(it->second);
  }
  return v;
}

}  // namespace

QuantizeReport quantize_onnx(const std::string& in_path, const std::string& out_path,
                             const QuantizeOptions& options) {
  ANVIL_CHECK(!options.calibration.empty(), "quantize '", in_path, "': no calibration inputs");
  ANVIL_CHECK(options.percentile > 50 && options.percentile <= 100, "quantize: percentile ",
              options.percentile, " is not in (50, 100]");
  std::ifstream file(in_path, std::ios::binary);
  ANVIL_CHECK(file, "quantize: cannot read '", in_path, "'");
  std::stringstream bytes;
  bytes << file.rdbuf();
  ::onnx::ModelProto model;
  ANVIL_CHECK(model.ParseFromString(bytes.str()), "quantize: '", in_path,
              "' is not an ONNX model (it does not parse as a ModelProto)");
  int64_t opset = 0;
  for (const auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  ANVIL_CHECK(opset >= 13, "quantize '", in_path, "': opset ", opset,
              " of the default domain; per-channel QuantizeLinear and DequantizeLinear need 13");
  ::onnx::GraphProto& g = *model.mutable_graph();
  QuantizeReport report;
  report.folded_batch_norms = fold_batch_norms(g);

  // The candidates.
  std::map<std::string, int> initializer;
  for (int i = 0; i < g.initializer_size(); ++i) initializer[g.initializer(i).name()] = i;
  std::vector<Candidate> candidates;
  for (int i = 0; i < g.node_size(); ++i) {
    const ::onnx::NodeProto& n = g.node(i);
    if (n.op_type() != "Conv" && n.op_type() != "MatMul" && n.op_type() != "Gemm") continue;
    auto w = n.input_size() >= 2 ? initializer.find(n.input(1)) : initializer.end();
    if (w == initializer.end()) {
      report.left_float.push_back(node_label(n, i) + " (" + n.op_type() +
                                  "): its weight is not an initializer");
      continue;
    }
    const ::onnx::TensorProto& wt = g.initializer(w->second);
    if (wt.data_type() != ::onnx::TensorProto::FLOAT || wt.dims_size() < 2 ||
        (n.op_type() != "Conv" && wt.dims_size() != 2)) {
      report.left_float.push_back(node_label(n, i) + " (" + n.op_type() +
                                  "): its weight is not a float32 matrix or filter bank");
      continue;
    }
    int64_t axis = 0;
    if (n.op_type() == "MatMul") axis = 1;
    if (n.op_type() == "Gemm") {
      int64_t trans_b = 0, trans_a = 0;
      for (const auto& a : n.attribute()) {
        if (a.name() == "transB") trans_b = a.i();
        if (a.name() == "transA") trans_a = a.i();
      }
      if (trans_a) {
        report.left_float.push_back(node_label(n, i) + " (Gemm): transA = 1");
        continue;
      }
      axis = trans_b ? 0 : 1;
    }
    candidates.push_back({i, n.input(0), n.input(1), n.output(0), axis});
  }

  // Calibration: the float model with the activations as extra outputs.
  std::vector<std::string> activations;
  for (const Candidate& c : candidates)
    for (const std::string& t : {c.activation, c.output})
      if (std::find(activations.begin(), activations.end(), t) == activations.end())
        activations.push_back(t);
  graph::Graph fg = import_onnx_bytes(bytes.str());
  graph::Graph cg = fg;
  std::vector<std::string> calibrated;
  for (const std::string& a : activations) {
    graph::ValueId v = cg.find(a);
    if (v < 0) continue;
    cg.add_output(v, "anvil_calibrate_" + std::to_string(calibrated.size()));
    calibrated.push_back(a);
  }
  const size_t first_extra = fg.outputs().size();
  graph::CompiledGraph calib = graph::CompiledGraph::build(cg, Target::host(), {});
  std::map<std::string, Range> ranges;
  for (const auto& sample : options.calibration) {
    std::vector<runtime::NDArray> outs = calib.run(ordered_inputs(cg, sample));
    for (size_t k = 0; k < calibrated.size(); ++k) {
      const runtime::NDArray& a = outs.at(first_extra + k);
      if (a.dtype().code != kDLFloat || a.dtype().bits != 32) continue;
      const float* d = a.data_as<float>();
      Range& r = ranges[calibrated[k]];
      for (int64_t j = 0; j < a.numel(); ++j) {
        r.lo = std::min(r.lo, d[j]);
        r.hi = std::max(r.hi, d[j]);
      }
      if (options.percentile < 100) r.values.insert(r.values.end(), d, d + a.numel());
    }
  }
  for (auto& [name, r] : ranges) {
    if (r.values.empty()) continue;
    std::sort(r.values.begin(), r.values.end());
    const double tail = (100.0 - options.percentile) / 100.0;
    const size_t n = r.values.size();
    r.lo = r.values[static_cast<size_t>(tail * static_cast<double>(n - 1))];
    r.hi = r.values[static_cast<size_t>((1 - tail) * static_cast<double>(n - 1))];
    r.values.clear();
  }

  // The rewrite: new nodes go before the node that first needs them (the graph stays sorted).
  std::vector<std::vector<::onnx::NodeProto>> before(static_cast<size_t>(g.node_size())),
      after(static_cast<size_t>(g.node_size()));
  std::map<std::string, std::string> activation_dq, weight_dq;
  std::set<std::string> replaced_weights;
  const int limit = options.reduce_range ? 63 : 127;
  // QuantizeLinear of `from` with the uint8 parameters of `range`, and DequantizeLinear of that
  // into `to`; their initializers are named after `base`.
  auto qdq = [&](const std::string& from, const std::string& to, const std::string& base,
                 const Range& range) {
    auto [scale, zp] = uint8_params(range.lo, range.hi);
    *g.add_initializer() = tensor(base + "_scale", ::onnx::TensorProto::FLOAT, {}, &scale, 4);
    *g.add_initializer() = tensor(base + "_zero_point", ::onnx::TensorProto::UINT8, {}, &zp, 1);
    ::onnx::NodeProto q, dq;
    q.set_op_type("QuantizeLinear");
    q.set_name(base + "_q");
    for (const char* s : {"", "_scale", "_zero_point"}) q.add_input(*s ? base + s : from);
    q.add_output(base);
    dq.set_op_type("DequantizeLinear");
    dq.set_name(base + "_dq");
    for (const char* s : {"", "_scale", "_zero_point"}) dq.add_input(base + s);
    dq.add_output(to);
    return std::vector<::onnx::NodeProto>{q, dq};
  };
  for (const Candidate& c : candidates) {
    ::onnx::NodeProto& n = *g.mutable_node(c.node);
    auto range = ranges.find(c.activation);
    if (range == ranges.end()) {
      report.left_float.push_back(node_label(n, c.node) + " (" + n.op_type() + "): activation '" +
                                  c.activation + "' is not a float32 tensor Anvil computes");
      continue;
    }
    auto& pre = before[static_cast<size_t>(c.node)];
    if (!activation_dq.count(c.activation)) {
      const std::string base = c.activation + "_quantized";
      for (const ::onnx::NodeProto& p :
           qdq(c.activation, base + "_dequantized", base, range->second))
        pre.push_back(p);
      activation_dq[c.activation] = base + "_dequantized";
    }
    if (!weight_dq.count(c.weight)) {
      const ::onnx::TensorProto& wt = g.initializer(initializer.at(c.weight));
      std::vector<int64_t> dims(wt.dims().begin(), wt.dims().end());
      std::vector<float> w = floats_of(wt);
      const int64_t channels = dims[static_cast<size_t>(c.axis)];
      // Element i's channel: along axis 0 of [O, ...], or axis 1 of a matrix [K, N].
      const int64_t inner = c.axis == 0 ? static_cast<int64_t>(w.size()) / channels : 1;
      auto channel_of = [&](int64_t i) { return c.axis == 0 ? i / inner : i % channels; };
      std::vector<float> scale(static_cast<size_t>(channels), 0.0f);
      for (int64_t i = 0; i < static_cast<int64_t>(w.size()); ++i) {
        float& s = scale[static_cast<size_t>(channel_of(i))];
        s = std::max(s, std::abs(w[static_cast<size_t>(i)]));
      }
      for (float& s : scale) s = s > 0 ? s / static_cast<float>(limit) : 1.0f;
      std::vector<int8_t> q(w.size());
      for (int64_t i = 0; i < static_cast<int64_t>(w.size()); ++i) {
        const float v =
            std::nearbyint(w[static_cast<size_t>(i)] / scale[static_cast<size_t>(channel_of(i))]);
        q[static_cast<size_t>(i)] = static_cast<int8_t>(
            std::clamp(v, -static_cast<float>(limit), static_cast<float>(limit)));
      }
      std::vector<int8_t> zeros(static_cast<size_t>(channels), 0);
      const std::string base = c.weight + "_quantized";
      *g.add_initializer() = tensor(base, ::onnx::TensorProto::INT8, dims, q.data(), q.size());
      *g.add_initializer() = tensor(base + "_scale", ::onnx::TensorProto::FLOAT, {channels},
                                    scale.data(), scale.size() * 4);
      *g.add_initializer() = tensor(base + "_zero_point", ::onnx::TensorProto::INT8, {channels},
                                    zeros.data(), zeros.size());
      ::onnx::NodeProto dq;
      dq.set_op_type("DequantizeLinear");
      dq.set_name(base + "_dq");
      for (const char* s : {"", "_scale", "_zero_point"}) dq.add_input(base + s);
      dq.add_output(base + "_dequantized");
      ::onnx::AttributeProto* axis = dq.add_attribute();
      axis->set_name("axis");
      axis->set_type(::onnx::AttributeProto::INT);
      axis->set_i(c.axis);
      pre.push_back(dq);
      weight_dq[c.weight] = base + "_dequantized";
      replaced_weights.insert(c.weight);
    }
    n.set_input(0, activation_dq.at(c.activation));
    n.set_input(1, weight_dq.at(c.weight));
    // The output too, as quantization tools write it (a runtime then computes the node as one
    // integer kernel with its requantization): the node writes `output`_float, and `output` is
    // its quantized and dequantized value, which a later quantized node reads as it is.
    if (auto out = ranges.find(c.output); out != ranges.end()) {
      const std::string raw = c.output + "_float";
      n.set_output(0, raw);
      for (const ::onnx::NodeProto& p :
           qdq(raw, c.output, c.output + "_output_quantized", out->second))
        after[static_cast<size_t>(c.node)].push_back(p);
      activation_dq[c.output] = c.output;
    }
    report.quantized.push_back(node_label(n, c.node));
  }
  // The float weights no other node reads go.
  std::set<std::string> still_read;
  for (const ::onnx::NodeProto& n : g.node())
    for (const std::string& in : n.input()) still_read.insert(in);
  ::onnx::GraphProto rewritten = g;
  rewritten.clear_node();
  for (int i = 0; i < g.node_size(); ++i) {
    for (const ::onnx::NodeProto& p : before[static_cast<size_t>(i)]) *rewritten.add_node() = p;
    *rewritten.add_node() = g.node(i);
    for (const ::onnx::NodeProto& p : after[static_cast<size_t>(i)]) *rewritten.add_node() = p;
  }
  rewritten.clear_initializer();
  for (const ::onnx::TensorProto& t : g.initializer())
    if (!replaced_weights.count(t.name()) || still_read.count(t.name()))
      *rewritten.add_initializer() = t;
  *model.mutable_graph() = rewritten;
  std::string out_bytes;
  ANVIL_CHECK(model.SerializeToString(&out_bytes), "quantize: cannot serialize the model");
  {
    std::ofstream out(out_path, std::ios::binary);
    ANVIL_CHECK(out, "quantize: cannot write '", out_path, "'");
    out << out_bytes;
    ANVIL_CHECK(out.good(), "quantize: cannot write '", out_path, "'");
  }

  // The report: the quantized model against the float one on the calibration inputs.
  graph::CompiledGraph float_model = graph::CompiledGraph::build(fg, Target::host(), {});
  graph::Graph qg = import_onnx_bytes(out_bytes);
  graph::CompiledGraph quantized = graph::CompiledGraph::build(qg, Target::host(), {});
  for (const auto& sample : options.calibration) {
    std::vector<runtime::NDArray> want = float_model.run(ordered_inputs(fg, sample));
    std::vector<runtime::NDArray> got = quantized.run(ordered_inputs(qg, sample));
    for (size_t o = 0; o < want.size() && o < got.size(); ++o) {
      if (want[o].dtype().code != kDLFloat || want[o].dtype().bits != 32) continue;
      const float* w = want[o].data_as<float>();
      const float* q = got[o].data_as<float>();
      double dot = 0, ww = 0, qq = 0;
      for (int64_t i = 0; i < want[o].numel(); ++i) {
        report.max_abs_difference =
            std::max(report.max_abs_difference, std::abs(double{q[i]} - w[i]));
        report.max_abs_float = std::max(report.max_abs_float, std::abs(double{w[i]}));
        dot += double{q[i]} * w[i];
        ww += double{w[i]} * w[i];
        qq += double{q[i]} * q[i];
      }
      if (ww > 0 && qq > 0)
        report.min_cosine = std::min(report.min_cosine, dot / std::sqrt(ww * qq));
    }
  }
  return report;
}

}  // namespace anvil::frontend
