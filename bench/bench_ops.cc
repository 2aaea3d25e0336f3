// bench_ops: Anvil's operators against oneDNN, layer by layer (bench/ops_layers.h lists them), at
// batch 1, at 1 and 2 threads, each layer on both sides in the same run.
//
// Anvil: the operator from the registry with its default schedule (no tuning): the blocked
// NCHW[x]c operators of anvil/ops/nchwc.h (conv2d_nchwc, depthwise_conv2d_nchwc,
// conv2d_transpose_nchwc, conv2d_winograd_nchwc where ops::prefer_winograd says so; blocks from
// ops::nchwc_block), dense_packed for the LSTM gates; an operator that is not registered falls
// back to its NCHW counterpart (conv2d, conv2d with group, conv2d_transpose, dense), which
// --layout=nchw forces. The input is given already in the operator's layout and the weights are
// packed once by the ops' *_pack_weight operators, outside the timed region, as the graph
// compiler does; the timed region is the kernel alone.
// oneDNN: the primitive on its preferred layouts (bench/onednn_layers.h).
//
// Before timing, every Anvil output (1 and 2 threads) is compared with oneDNN's, both in NCHW: a
// max error above 1e-3 of the output's largest magnitude puts a note in the row instead of
// numbers, and the program exits non-zero at the end. Repetitions (8, each at least --min-time,
// 0.05 s) of all benchmarks are interleaved (Google Benchmark's random interleaving); medians are
// reported, with Anvil's GFLOP/s (2 * multiply-adds of the useful computation, so a Winograd
// kernel can pass the peak) and its fraction of the FMA peak (Target::peak_gflops_per_core, x
// threads), then per thread count the geometric mean and the minimum of the speedups (oneDNN ms /
// Anvil ms), over the layers and over their perturbed twins separately. The fastest repetition of
// each side is reported beside the median: the machine is shared, and the fastest is what a kernel
// does when it has the cores to itself.
//
// With --tuning-records FILE (anvil tune's records), each Anvil operator gets its task's best
// recorded configuration instead of the default (the task as the graph compiler makes it: the
// same operator, input types and attributes); the table marks those "tuned" ("tuned=default" where
// the records keep the default), and the layers whose task had no record are listed.
//
//   build/bin/bench_ops [--perturbed] [--filter=REGEX] [--layout=nchw] [--threads=1,2]
//                       [--min-time=S] [--summary-json FILE] [--tuning-records FILE]
//                       [google benchmark flags]
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include <unistd.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "anvil/autotune/records.h"
#include "anvil/autotune/task.h"
#include "anvil/codegen/llvm/codegen_llvm.h"
#include "anvil/lower/lower.h"
#include "anvil/ops/nchwc.h"
#include "anvil/ops/op.h"
#include "anvil/ops/winograd.h"
#include "anvil/runtime/c_runtime_api.h"
#include "anvil/runtime/ndarray.h"
#include "anvil/support/error.h"
#include "onednn_layers.h"
#include "ops_layers.h"

namespace {

using anvil::Target;
using anvil::bench::Layer;
using anvil::bench::LayerKind;
using anvil::ops::Attrs;
using anvil::ops::TensorType;
using anvil::runtime::NDArray;
using Ints = std::vector<int64_t>;

struct Options {
  bool perturbed = false;
  bool nchw = false;
  std::string filter;
  std::string summary_path;
  std::vector<int> threads = {1, 2};
  double min_time = 0.05;
  std::string tuning_records;
};

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown";
}

double load_average() {
  double la[1] = {0.0};
  return getloadavg(la, 1) == 1 ? la[0] : 0.0;
}

// ---------------------------------------------------------------------------------------------
// The Anvil side

bool registered(const std::string& op) {
  std::vector<std::string> ops = anvil::ops::registered_ops();
  return std::find(ops.begin(), ops.end(), op) != ops.end();
}

// One operator built from its OpDef with the default schedule and compiled, as
// tests/ops/ops_testing.h does.
struct Compiled {
  std::unique_ptr<anvil::codegen::LLVMModule> module;
  AnvilKernel kernel = nullptr;
  std::vector<TensorType> out_types;
};

Compiled compile_op(const std::string& op, const std::vector<TensorType>& in, const Attrs& attrs,
                    const Target& target, const anvil::ops::Config& config = {}) {
  const anvil::ops::OpDef& def = anvil::ops::lookup(op);
  Compiled c;
  c.out_types = def.infer(in, attrs);
  std::vector<anvil::te::Tensor> ins;
  for (size_t i = 0; i < in.size(); ++i) {
    ins.push_back(anvil::te::placeholder(anvil::ops::to_exprs(in[i].shape), in[i].dtype,
                                         "in" + std::to_string(i)));
  }
  std::vector<anvil::te::Tensor> outs = def.compute(ins, attrs);
  anvil::te::Schedule s(outs);
  def.schedule_x86(s, outs, target, config);
  std::vector<anvil::te::Tensor> args = ins;
  args.insert(args.end(), outs.begin(), outs.end());
  c.module = anvil::codegen::LLVMModule::compile({anvil::lower(s, args, op)}, target);
  c.kernel = c.module->get_function(op);
  return c;
}

void call(const Compiled& c, const std::vector<const NDArray*>& arrays, const std::string& what) {
  std::vector<const DLTensor*> args;
  for (const NDArray* a : arrays) args.push_back(a->get());
  if (c.kernel(args.data(), static_cast<int32_t>(args.size()), nullptr) != 0) {
    std::fprintf(stderr, "bench_ops: %s failed: %s\n", what.c_str(), AnvilGetLastError());
    std::exit(1);
  }
}

NDArray from_vector(const Ints& shape, const std::vector<float>& v) {
  NDArray a = NDArray::empty(shape, anvil::runtime::dl_float32());
  std::memcpy(a.data_as<float>(), v.data(), v.size() * sizeof(float));
  return a;
}

// NCHW [1, C, H, W] -> NCHW[b]c [1, ceil(C/b), H, W, b], the padded channels zero.
NDArray to_nchwc(const std::vector<float>& x, int64_t C, int64_t H, int64_t W, int64_t b) {
  int64_t cb = (C + b - 1) / b;
  NDArray a = NDArray::empty({1, cb, H, W, b}, anvil::runtime::dl_float32(), true);
  float* p = a.data_as<float>();
  for (int64_t c = 0; c < C; ++c)
    for (int64_t i = 0; i < H * W; ++i) p[((c / b) * H * W + i) * b + c % b] = x[c * H * W + i];
  return a;
}

std::vector<float> from_nchwc(const NDArray& a, int64_t C) {
  const Ints& s = a.shape();
  int64_t hw = s[2] * s[3], b = s[4];
  std::vector<float> out(C * hw);
  const float* p = a.data_as<float>();
  for (int64_t c = 0; c < C; ++c)
    for (int64_t i = 0; i < hw; ++i) out[c * hw + i] = p[((c / b) * hw + i) * b + c % b];
  return out;
}

struct AnvilLayer {
  std::string op;  // what runs, for the table: "conv2d_nchwc 16->16"
  Compiled kernel;
  NDArray x, w, out;
  bool blocked = false;
  int64_t out_channels = 0;

  void run() const { call(kernel, {&x, &w, &out}, op); }
  std::vector<float> output() const {
    if (blocked) return from_nchwc(out, out_channels);
    const float* p = out.data_as<float>();
    return std::vector<float>(p, p + out.numel());
  }
};

// Packs `weight` with operator `op` (run once, like the graph compiler's constant folding).
NDArray pack(const std::string& op, const NDArray& weight, const Attrs& attrs,
             const Target& target) {
  Compiled c = compile_op(op, {{weight.shape()}}, attrs, target);
  NDArray packed = NDArray::empty(c.out_types[0].shape, anvil::runtime::dl_float32());
  call(c, {&weight, &packed}, op);
  return packed;
}

// The weight in ONNX's layout (see OnednnLayer).
Ints weight_shape(const Layer& l) {
  switch (l.kind) {
    case LayerKind::kConv:
      return {l.o, l.c, l.kh, l.kw};
    case LayerKind::kDepthwise:
      return {l.c, 1, l.kh, l.kw};
    case LayerKind::kDeconv:
      return {l.c, l.o, l.kh, l.kw};
    case LayerKind::kDense:
      return {l.o, l.c};
  }
  return {};
}

Ints input_shape(const Layer& l) {
  return l.kind == LayerKind::kDense ? Ints{1, l.c} : Ints{1, l.c, l.h, l.w};
}

// The tuning records' best configurations, when --tuning-records is given.
std::unique_ptr<anvil::autotune::RecordBook>& record_book() {
  static std::unique_ptr<anvil::autotune::RecordBook> book;
  return book;
}

std::unique_ptr<AnvilLayer> build_anvil(const Layer& l, const std::vector<float>& x,
                                        const std::vector<float>& weight, bool force_nchw,
                                        const Target& target) {
  auto a = std::make_unique<AnvilLayer>();
  NDArray w = from_vector(weight_shape(l), weight);
  const Ints strides = {l.stride, l.stride}, pads = {l.pad, l.pad, l.pad, l.pad};
  std::string main_op;
  Attrs attrs;
  auto attrs_of = [](const std::string& op, std::map<std::string, anvil::ops::AttrValue> v) {
    return Attrs(op, std::move(v));
  };
  std::string fallback;
  if (l.kind == LayerKind::kDense) {
    if (!force_nchw && registered("dense_packed") && registered("dense_pack_weight")) {
      main_op = "dense_packed";
      a->w = pack("dense_pack_weight", w, attrs_of("dense_pack_weight", {}), target);
      attrs = attrs_of(main_op, {{"units", l.o}});
      a->op = main_op + " (panel " + std::to_string(a->w.shape()[2]) + ")";
    } else {
      main_op = "dense";
      a->w = w;
      a->op = main_op;
    }
    a->x = from_vector(input_shape(l), x);
  } else {
    std::string blocked_op = l.kind == LayerKind::kConv        ? "conv2d_nchwc"
                             : l.kind == LayerKind::kDepthwise ? "depthwise_conv2d_nchwc"
                                                               : "conv2d_transpose_nchwc";
    std::string pack_op = blocked_op + "_pack_weight";
    bool winograd = l.kind == LayerKind::kConv &&
                    anvil::ops::prefer_winograd(l.c, l.o, l.h, l.w, l.kh, l.kw, l.stride, l.stride,
                                                1, 1, target) &&
                    registered("conv2d_winograd_nchwc") &&
                    registered("conv2d_winograd_nchwc_pack_weight");
    if (winograd) {
      blocked_op = "conv2d_winograd_nchwc";
      pack_op = "conv2d_winograd_nchwc_pack_weight";
    }
    a->blocked = !force_nchw && registered(blocked_op) && registered(pack_op);
    if (!force_nchw && !a->blocked) fallback = " (" + blocked_op + " not registered)";
    if (a->blocked) {
      int64_t ib = anvil::ops::nchwc_block(l.c, target);
      int64_t ob = anvil::ops::nchwc_block(l.o, target);
      main_op = blocked_op;
      a->x = to_nchwc(x, l.c, l.h, l.w, ib);
      a->out_channels = l.o;
      std::string blocks = std::to_string(ib) + "c->" + std::to_string(ob) + "c";
      if (winograd) {
        int64_t tile = anvil::ops::winograd_tile(l.c, l.o, l.out_h(), l.out_w(), target);
        a->w =
            pack(pack_op, w,
                 attrs_of(pack_op, {{"in_block", ib}, {"out_block", ob}, {"tile", tile}}), target);
        attrs = attrs_of(main_op, {{"pads", pads}, {"tile", tile}});
        blocks += " F(" + std::to_string(tile) + "x" + std::to_string(tile) + ",3x3)";
      } else if (l.kind == LayerKind::kConv) {
        // The attributes as the graph compiler writes them (anvil/graph/layout.cc), so that the
        // task is the model's and its tuning records apply.
        a->w = pack(pack_op, w, attrs_of(pack_op, {{"in_block", ib}, {"out_block", ob}}), target);
        attrs =
            attrs_of(main_op, {{"strides", strides}, {"pads", pads}, {"dilations", Ints{1, 1}}});
      } else if (l.kind == LayerKind::kDepthwise) {
        a->w = pack(pack_op, w, attrs_of(pack_op, {{"block", ib}}), target);
        attrs =
            attrs_of(main_op, {{"strides", strides}, {"pads", pads}, {"dilations", Ints{1, 1}}});
      } else {
        anvil::ops::Attrs pack_attrs = attrs_of(
            pack_op,
            {{"in_block", ib}, {"out_block", ob}, {"strides", strides}, {"dilations", Ints{1, 1}}});
        attrs = attrs_of(main_op, {{"kernel_shape", Ints{l.kh, l.kw}},
                                   {"strides", strides},
                                   {"pads", pads},
                                   {"dilations", Ints{1, 1}},
                                   {"output_padding", Ints{0, 0}}});
        if (anvil::ops::transpose_input_innermost(ib, ob, target)) {
          pack_attrs.set("input_innermost", int64_t{1});
          attrs.set("input_innermost", int64_t{1});
          blocks += " input-innermost";
        }
        a->w = pack(pack_op, w, pack_attrs, target);
      }
      a->op = main_op + " " + blocks;
    } else {
      main_op = l.kind == LayerKind::kDeconv ? "conv2d_transpose" : "conv2d";
      a->x = from_vector(input_shape(l), x);
      a->w = w;
      attrs = attrs_of(main_op, {{"strides", strides}, {"pads", pads}});
      if (l.kind == LayerKind::kDepthwise) attrs.set("group", l.c);
      a->op = main_op + (l.kind == LayerKind::kDepthwise ? " group=C" : "") + fallback;
    }
  }
  anvil::ops::Config config;
  if (record_book()) {
    anvil::autotune::Task task{main_op, {{a->x.shape()}, {a->w.shape()}}, attrs, target.str()};
    if (std::optional<anvil::ops::Config> best = record_book()->best(task)) {
      config = *best;
      // The records may keep the default (the in-model check found no point faster).
      a->op += anvil::autotune::index_of(task.space(), config) == 0 ? " tuned=default" : " tuned";
    } else {
      a->op += " untuned";
    }
  }
  a->kernel = compile_op(main_op, {{a->x.shape()}, {a->w.shape()}}, attrs, target, config);
  a->out = NDArray::empty(a->kernel.out_types[0].shape, anvil::runtime::dl_float32(), true);
  return a;
}

// ---------------------------------------------------------------------------------------------
// One distinct layer (identical layers share it) with both sides prepared.

struct Entry {
  Layer layer;
  std::vector<std::string> names;  // every layer this measurement stands for
  std::unique_ptr<AnvilLayer> anvil;
  std::map<int, std::unique_ptr<anvil::bench::OnednnLayer>> onednn;  // per thread count
  std::string note;  // non-empty: not timed, and why
};

std::vector<float> random_vector(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// max |got - want| / max |want|: a norm-wise relative error (Winograd's rounding grows with the
// magnitude of the whole sum, not with each output's).
double relative_error(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return INFINITY;
  double err = 0.0, scale = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    double d = std::abs(double{got[i]} - want[i]);
    err = std::isnan(d) ? INFINITY : std::max(err, d);
    scale = std::max(scale, std::abs(double{want[i]}));
  }
  return err / std::max(scale, 1e-30);
}

void prepare(Entry& e, const Options& opt, const Target& target) {
  const Layer& l = e.layer;
  int64_t xn = 1, wn = 1;
  for (int64_t d : input_shape(l)) xn *= d;
  for (int64_t d : weight_shape(l)) wn *= d;
  std::vector<float> x = random_vector(xn, 1), w = random_vector(wn, 2);
  try {
    for (int t : opt.threads) e.onednn[t] = std::make_unique<anvil::bench::OnednnLayer>(l, t, x, w);
  } catch (const std::exception& err) {
    e.note = std::string("oneDNN failed: ") + err.what();
    return;
  }
  try {
    e.anvil = build_anvil(l, x, w, opt.nchw, target);
  } catch (const std::exception& err) {
    e.note = std::string("Anvil failed: ") + err.what();
    return;
  }
  // Outputs agree before anything is timed: every side at every thread count against oneDNN's
  // at the first.
  auto& ref_side = *e.onednn.begin()->second;
  ref_side.run();
  std::vector<float> want = ref_side.output();
  for (int t : opt.threads) {
    e.onednn[t]->run();
    double err = relative_error(e.onednn[t]->output(), want);
    if (!(err <= 1e-3)) {
      e.note = "oneDNN disagrees with itself at " + std::to_string(t) + " threads";
      return;
    }
    AnvilSetNumThreads(t);
    e.anvil->run();
    err = relative_error(e.anvil->output(), want);
    if (!(err <= 1e-3)) {
      char buf[160];
      std::snprintf(buf, sizeof buf,
                    "outputs disagree at %d thread(s): max error %.3g of the "
                    "largest output",
                    t, err);
      e.note = buf;
      return;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Reporting: the median and the fastest repetition per (side, layer, threads). The median is the
// figure of record; the fastest shows what the kernel does when the shared machine leaves it
// alone.

struct Timing {
  double median_ms = 0.0, best_ms = 0.0;
};
std::map<std::string, Timing>& timings() {
  static std::map<std::string, Timing> m;
  return m;
}

double fastest(const std::vector<double>& v) {
  return v.empty() ? 0.0 : *std::min_element(v.begin(), v.end());
}

class MedianReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      // "anvil/resnet18_c2/threads:1/min_time:0.050/real_time" -> "anvil/resnet18_c2/threads:1"
      std::string name = r.run_name.str();
      name = name.substr(0, name.find("/min_time:"));
      Timing& t = timings()[name];
      double ms = r.GetAdjustedRealTime();  // in the benchmark's unit
      if (r.run_type == Run::RT_Iteration && r.repetitions <= 1) t = {ms, ms};  // no aggregates
      if (r.run_type != Run::RT_Aggregate) continue;
      if (r.aggregate_name == "median") t.median_ms = ms;
      if (r.aggregate_name == "best") t.best_ms = ms;
    }
    ConsoleReporter::ReportRuns(runs);
  }
};

std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

bool parse_options(int argc, char** argv, Options& opt, std::vector<char*>& rest) {
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--summary-json" && i + 1 < argc) {
      opt.summary_path = argv[++i];
    } else if (a.rfind("--summary-json=", 0) == 0) {
      opt.summary_path = a.substr(15);
    } else if (a == "--tuning-records" && i + 1 < argc) {
      opt.tuning_records = argv[++i];
    } else if (a.rfind("--tuning-records=", 0) == 0) {
      opt.tuning_records = a.substr(17);
    } else if (a == "--perturbed") {
      opt.perturbed = true;
    } else if (a.rfind("--filter=", 0) == 0) {
      opt.filter = a.substr(9);
    } else if (a == "--layout=nchw" || a == "--layout=nchwc") {
      opt.nchw = a == "--layout=nchw";
    } else if (a.rfind("--min-time=", 0) == 0) {
      opt.min_time = std::atof(a.c_str() + 11);
    } else if (a.rfind("--threads=", 0) == 0) {
      opt.threads.clear();
      for (size_t p = 10; p < a.size();) {
        size_t q = a.find(',', p);
        if (q == std::string::npos) q = a.size();
        int t = std::atoi(a.substr(p, q - p).c_str());
        if (t < 1) {
          std::fprintf(stderr, "bench_ops: bad --threads list '%s'\n", a.c_str());
          return false;
        }
        opt.threads.push_back(t);
        p = q + 1;
      }
    } else if (a.rfind("--layout", 0) == 0) {
      std::fprintf(stderr, "bench_ops: unknown layout '%s' (nchw or nchwc)\n", a.c_str());
      return false;
    } else {
      rest.push_back(argv[i]);
    }
  }
  return !opt.threads.empty() && opt.min_time > 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  std::vector<char*> args;
  if (!parse_options(argc, argv, opt, args)) return 2;
  static char interleave[] = "--benchmark_enable_random_interleaving=true";
  static char reps[] = "--benchmark_repetitions=8";
  static char aggregates[] = "--benchmark_report_aggregates_only=true";
  args.insert(args.begin() + 1, {interleave, reps, aggregates});
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());

  // The layers, identical ones merged.
  std::vector<Layer> layers;
  std::regex filter;
  try {
    filter = std::regex(opt.filter.empty() ? "." : opt.filter);
  } catch (const std::regex_error& err) {
    std::fprintf(stderr, "bench_ops: bad --filter '%s': %s\n", opt.filter.c_str(), err.what());
    return 2;
  }
  for (const Layer& l : anvil::bench::all_layers(opt.perturbed))
    if (std::regex_search(l.name, filter)) layers.push_back(l);
  if (layers.empty()) {
    std::fprintf(stderr, "bench_ops: no layer matches --filter=%s%s\n", opt.filter.c_str(),
                 opt.perturbed ? "" : " (perturbed layers need --perturbed)");
    return 2;
  }

  if (!opt.tuning_records.empty()) {
    try {
      anvil::autotune::RecordFile f = anvil::autotune::read_records(opt.tuning_records);
      anvil::autotune::keep_cpu(f, anvil::runtime::host_cpu().id());
      if (std::string note = anvil::autotune::other_cpus_note(f); !note.empty())
        std::printf("%s\n", note.c_str());
      record_book() = std::make_unique<anvil::autotune::RecordBook>(f.records);
      std::printf("tuning records %s: %zu records of %zu tasks\n", opt.tuning_records.c_str(),
                  record_book()->num_records(), record_book()->num_tasks());
    } catch (const anvil::Error& err) {
      std::fprintf(stderr, "bench_ops: --tuning-records: %s\n", err.what());
      return 2;
    }
  }

  Target target = Target::host();
  double peak = target.peak_gflops_per_core();
  double load_start = load_average();
  std::printf("FMA peak (1 core, measured): %.1f GFLOP/s\noneDNN %s\nAnvil target %s\n", peak,
              anvil::bench::onednn_version().c_str(), target.str().c_str());

  std::vector<std::unique_ptr<Entry>> entries;
  std::map<std::string, Entry*> by_key;
  std::map<std::string, Entry*> of_layer;
  for (const Layer& l : layers) {
    auto it = by_key.find(l.key());
    if (it == by_key.end()) {
      entries.push_back(std::make_unique<Entry>());
      entries.back()->layer = l;
      it = by_key.emplace(l.key(), entries.back().get()).first;
    }
    it->second->names.push_back(l.name);
    of_layer[l.name] = it->second;
  }
  for (auto& e : entries) {
    auto start = std::chrono::steady_clock::now();
    prepare(*e, opt, target);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::string dnnl_impl = e->onednn.empty() ? "-" : e->onednn.begin()->second->implementation();
    std::printf("prepared %-32s %-40s %s | onednn %s (%.1f s)%s%s\n", e->layer.name.c_str(),
                e->layer.describe().c_str(), e->anvil ? e->anvil->op.c_str() : "-",
                dnnl_impl.c_str(), s, e->note.empty() ? "" : "\n  NOTE: ", e->note.c_str());
    std::fflush(stdout);
  }

  if (record_book()) {
    std::string untuned;
    for (auto& e : entries)
      if (e->anvil && e->anvil->op.ends_with(" untuned")) untuned += " " + e->layer.name;
    std::printf("layers whose task has no tuning record:%s\n",
                untuned.empty() ? " none" : untuned.c_str());
  }

  for (auto& e : entries) {
    if (!e->note.empty()) continue;
    Entry* entry = e.get();
    double flops = entry->layer.flops();
    for (int t : opt.threads) {
      std::string suffix = entry->layer.name + "/threads:" + std::to_string(t);
      benchmark::RegisterBenchmark(("anvil/" + suffix).c_str(),
                                   [entry, t, flops](benchmark::State& st) {
                                     AnvilSetNumThreads(t);
                                     for (auto _ : st) entry->anvil->run();
                                     st.counters["GFLOPS"] = benchmark::Counter(
                                         flops * st.iterations(), benchmark::Counter::kIsRate);
                                   })
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime()
          ->MinTime(opt.min_time)
          ->ComputeStatistics("best", fastest);
      anvil::bench::OnednnLayer* side = entry->onednn[t].get();
      benchmark::RegisterBenchmark(("onednn/" + suffix).c_str(),
                                   [side, flops](benchmark::State& st) {
                                     for (auto _ : st) side->run();
                                     st.counters["GFLOPS"] = benchmark::Counter(
                                         flops * st.iterations(), benchmark::Counter::kIsRate);
                                   })
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime()
          ->MinTime(opt.min_time)
          ->ComputeStatistics("best", fastest);
    }
  }
  MedianReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  double load_end = load_average();

  // The table and the summary.
  std::string json =
      "{\"machine\": {\"cpu\": \"" + json_escape(cpu_model()) + "\", \"target\": \"" +
      json_escape(target.str()) + "\", \"peak_gflops_per_core\": " + std::to_string(peak) +
      ", \"onednn\": \"" + json_escape(anvil::bench::onednn_version()) + "\", \"load_average\": [" +
      std::to_string(load_start) + ", " + std::to_string(load_end) + "]},\n \"rows\": [";
  std::printf(
      "\n| layer | shape | anvil op | threads | anvil ms | onednn ms | speedup | anvil GFLOP/s | "
      "peak fraction | onednn GFLOP/s | best: anvil GFLOP/s | onednn GFLOP/s | speedup |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  bool first = true, mismatch = false;
  struct Stats {
    double log_sum = 0.0, log_sum_best = 0.0;
    int count = 0, contended = 0;
    double min = INFINITY;
    std::string min_name;
  };
  // By (perturbed, threads): the bars are per thread count, on the layers as given and on
  // their perturbed twins separately.
  std::map<std::pair<bool, int>, Stats> stats;
  for (const Layer& l : layers) {
    const Entry& e = *of_layer[l.name];
    if (!e.note.empty()) mismatch = true;
    for (int t : opt.threads) {
      std::string suffix = e.layer.name + "/threads:" + std::to_string(t);
      auto a = timings().find("anvil/" + suffix), b = timings().find("onednn/" + suffix);
      std::string row;
      char buf[768];
      std::string op = e.anvil ? e.anvil->op : "-";
      if (!e.note.empty() || a == timings().end() || b == timings().end()) {
        std::string note = e.note.empty() ? "not measured (filtered out)" : e.note;
        std::printf("| %s | %s | %s | %d | - | - | - | - | - | - | - | - | - | %s\n",
                    l.name.c_str(), l.describe().c_str(), op.c_str(), t, note.c_str());
        std::snprintf(buf, sizeof buf,
                      "%s\n  {\"name\": \"%s\", \"threads\": %d, \"baseline\": \"onednn\", "
                      "\"note\": \"%s\"}",
                      first ? "" : ",", l.name.c_str(), t, json_escape(note).c_str());
      } else {
        double anvil_ms = a->second.median_ms, dnnl_ms = b->second.median_ms;
        double anvil_best = a->second.best_ms, dnnl_best = b->second.best_ms;
        double gflops = l.flops() / (anvil_ms / 1e3) / 1e9;
        double fraction = peak > 0 ? gflops / (peak * t) : 0.0;
        double speedup = dnnl_ms / anvil_ms;
        double best_speedup = dnnl_best / anvil_best;
        // A median far above the fastest repetition: other processes took the cores (on a shared
        // machine a parallel region can wait a scheduler tick for its second thread).
        bool contended = anvil_ms > 2 * anvil_best || dnnl_ms > 2 * dnnl_best;
        std::printf(
            "| %s | %s | %s | %d | %.4f | %.4f | %.3f | %.1f | %.3f | %.1f | %.1f | %.1f | %.3f "
            "|\n",
            l.name.c_str(), l.describe().c_str(), op.c_str(), t, anvil_ms, dnnl_ms, speedup, gflops,
            fraction, l.flops() / (dnnl_ms / 1e3) / 1e9, l.flops() / (anvil_best / 1e3) / 1e9,
            l.flops() / (dnnl_best / 1e3) / 1e9, best_speedup);
        std::snprintf(buf, sizeof buf,
                      "%s\n  {\"name\": \"%s\", \"threads\": %d, \"anvil_ms\": %.5f, "
                      "\"baseline\": \"onednn\", \"baseline_ms\": %.5f, \"speedup\": %.4f, "
                      "\"gflops\": %.2f, \"peak_fraction\": %.4f, \"anvil_best_ms\": %.5f, "
                      "\"baseline_best_ms\": %.5f, \"contended\": %s, \"anvil_op\": \"%s\"}",
                      first ? "" : ",", l.name.c_str(), t, anvil_ms, dnnl_ms, speedup, gflops,
                      fraction, anvil_best, dnnl_best, contended ? "true" : "false",
                      json_escape(op).c_str());
        bool perturbed =
            l.name.size() > 10 && l.name.compare(l.name.size() - 10, 10, "_perturbed") == 0;
        Stats& s = stats[{perturbed, t}];
        s.contended += contended ? 1 : 0;
        s.log_sum += std::log(speedup);
        s.log_sum_best += std::log(best_speedup);
        s.count += 1;
        if (speedup < s.min) {
          s.min = speedup;
          s.min_name = l.name;
        }
      }
      json += buf;
      first = false;
    }
  }
  json += "\n]}\n";
  std::printf("\n");
  for (auto& [key, s] : stats) {
    std::printf(
        "%s, threads %d: geometric mean speedup %.3f over %d layers, minimum %.3f (%s); fastest "
        "repetitions: geometric mean speedup %.3f\n",
        key.first ? "perturbed" : "layers", key.second, std::exp(s.log_sum / s.count), s.count,
        s.min, s.min_name.c_str(), std::exp(s.log_sum_best / s.count));
    if (s.contended > 0) {
      std::printf(
          "  warning: %d of these rows have a median above twice the fastest repetition (the "
          "machine was busy: compare the fastest repetitions, or rerun on a quiet machine)\n",
          s.contended);
    }
  }
  std::printf("load average %.1f at the start, %.1f at the end (%ld cores)\n", load_start, load_end,
              sysconf(_SC_NPROCESSORS_ONLN));
  if (!opt.summary_path.empty()) {
    std::ofstream(opt.summary_path) << json;
    std::printf("summary written to %s\n", opt.summary_path.c_str());
  }
  if (mismatch) {
    std::fprintf(stderr, "bench_ops: some layers were not measured (see the notes)\n");
    return 1;
  }
  return 0;
}
