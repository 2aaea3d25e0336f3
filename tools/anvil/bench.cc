#include "tools/anvil/bench.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include "anvil/autotune/ab_timing.h"
#include "anvil/autotune/records.h"
#include "anvil/frontend/onnx/exporter.h"
#include "anvil/graph/build.h"
#include "anvil/graph/flops.h"
#include "anvil/models/models.h"
#include "anvil/runtime/c_runtime_api.h"
#include "anvil/runtime/device_api.h"
#include "anvil/runtime/model.h"
#include "anvil/runtime/npy.h"
#include "anvil/support/worker.h"
#include "anvil/target/peak.h"
#include "anvil/target/target.h"
#include "tools/anvil/args.h"
#include "tools/anvil/bench_device.h"
#include "tools/anvil/bench_report.h"
#include "tools/anvil/commands.h"

namespace anvil::cli {

namespace fs = std::filesystem;

namespace {

// Seconds a worker may take to answer: loading includes torch.jit's trace and freeze.
constexpr double kLoadTimeout = 900, kRunTimeout = 300, kTimeTimeout = 900;

// The directory anvil's executable is in (bin/ of the build or install tree).
fs::path exe_dir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::current_path() : exe.parent_path();
}

std::vector<std::string> split_words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// The worker command of each baseline asked for: the built-in ones (their scripts are in
// share/anvil/bench beside bin/), replaced or extended by --worker NAME=COMMAND.
std::map<std::string, std::vector<std::string>> worker_commands(const BenchOptions& o) {
  const fs::path scripts = exe_dir().parent_path() / "share" / "anvil" / "bench";
  std::string deps = o.deps_dir;
  if (deps.empty() && std::getenv("ANVIL_BENCH_DEPS")) deps = std::getenv("ANVIL_BENCH_DEPS");
  if (deps.empty()) deps = (exe_dir().parent_path() / "bench-deps").string();
  // Debian's python3-torch is under /usr/bin/python3; elsewhere $ANVIL_BENCH_PYTHON names one.
  const char* env_python = std::getenv("ANVIL_BENCH_PYTHON");
  const std::string python = env_python && *env_python ? env_python : "/usr/bin/python3";
  const std::string torch_worker = (scripts / "torch_worker.py").string();
  std::map<std::string, std::vector<std::string>> commands = {
      {"onnxruntime", {"node", (scripts / "onnxruntime_worker.js").string(), deps}},
      {"torch_eager", {python, torch_worker, "--mode", "eager"}},
      {"torch_jit", {python, torch_worker, "--mode", "jit"}},
      {"torch_eager_cuda", {python, torch_worker, "--mode", "eager_cuda"}},
      {"torch_cuda_graph", {python, torch_worker, "--mode", "cuda_graph"}},
  };
  for (const std::string& text : o.workers) {
    auto [name, command] = parse_binding(text, "--worker", "NAME=COMMAND", Split::kAtFirst);
    commands[name] = split_words(command);
    if (commands[name].empty()) usage_error("--worker " + text + ": the command is empty");
  }
  return commands;
}

// Why the onnxruntime worker cannot start, before trying: its npm package is missing.
std::string missing_onnxruntime(const std::vector<std::string>& command) {
  if (command.size() < 3) return "";
  const fs::path package = fs::path(command[2]) / "node_modules" / "onnxruntime-node";
  std::error_code ec;
  if (fs::exists(package / "package.json", ec)) return "";
  return "npm's onnxruntime-node is not installed in " + command[2] +
         " (make bench installs it: scripts/setup_bench.sh DIR, then --deps DIR)";
}

struct BenchModel {
  std::string name;  // the zoo name, or the ONNX file's stem
  std::string spec;  // what load_model takes: zoo:NAME or the file
  std::string onnx;  // the ONNX file the baselines load (absolute)
};

BenchModel resolve_model(const std::string& text, const fs::path& work) {
  const std::vector<std::string> zoo = models::model_names();
  std::string name = text.rfind("zoo:", 0) == 0 ? text.substr(4) : text;
  if (std::find(zoo.begin(), zoo.end(), name) != zoo.end())
    return {name, "zoo:" + name, (work / (name + ".onnx")).string()};
  std::error_code ec;
  if (text.rfind("zoo:", 0) == 0 || !fs::is_regular_file(text, ec)) {
    std::string names;
    for (const std::string& n : zoo) names += (names.empty() ? "" : ", ") + n;
    usage_error("MODEL " + text + ": neither a zoo model (" + names + ") nor an ONNX file");
  }
  return {fs::path(text).stem().string(), text, fs::absolute(text).string()};
}

double median(const std::vector<double>& ms) {
  return latency_stats(ms).median_ms;
}

// A row's medians and fastest runs from the two sides' times (no baseline: `baseline` empty).
void set_times(BenchRow* row, const std::vector<double>& anvil,
               const std::vector<double>& baseline) {
  LatencyStats a = latency_stats(anvil);
  row->anvil_ms = a.median_ms;
  row->anvil_min_ms = a.min_ms;
  if (baseline.empty()) return;
  LatencyStats b = latency_stats(baseline);
  row->baseline_ms = b.median_ms;
  row->baseline_min_ms = b.min_ms;
}

using autotune::time_runs;

// "" when `got` (a baseline's outputs, as files) computes what `want` (Anvil's) does: the same
// count, shapes and dtypes, integers equal, floats within `tolerance` (1e-3 by default: the
// baselines and Anvil sum in different orders, and Winograd convolutions round differently) of
// the largest magnitude.
std::string compare_outputs(const std::vector<runtime::NDArray>& want,
                            const std::vector<std::string>& got_files, double tolerance) {
  if (got_files.size() != want.size())
    return "it returned " + std::to_string(got_files.size()) + " outputs, Anvil " +
           std::to_string(want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    runtime::NDArray got = runtime::load_npy(got_files[i]);
    const runtime::NDArray& w = want[i];
    const std::string which = "output " + std::to_string(i);
    if (got.shape() != w.shape() || got.dtype().code != w.dtype().code ||
        got.dtype().bits != w.dtype().bits)
      return which + " is " + runtime::to_string(got.dtype()) + dims_string(got.shape()) +
             ", Anvil's " + runtime::to_string(w.dtype()) + dims_string(w.shape());
    const DLDataType d = w.dtype();
    const size_t bytes = static_cast<size_t>(w.numel()) * d.bits / 8;
    if (d.code == kDLFloat && d.bits == 32) {
      const float* a = w.data_as<float>();
      const float* b = got.data_as<float>();
      double largest = 0, diff = 0;
      for (int64_t k = 0; k < w.numel(); ++k) {
        largest = std::max(largest, std::fabs(double(a[k])));
        const double dk = std::fabs(double(a[k]) - double(b[k]));
        diff = std::isnan(dk) ? INFINITY : std::max(diff, dk);
      }
      if (diff > tolerance * largest + 1e-6) {
        char buf[160];
        std::snprintf(buf, sizeof buf, " differs: max |difference| %.3g where max |Anvil| is %.3g",
                      diff, largest);
        return which + buf;
      }
    } else if (std::memcmp(w.data_as<char>(), got.data_as<char>(), bytes) != 0) {
      return which + " (" + runtime::to_string(d) + ") differs from Anvil's";
    }
  }
  return "";
}

// A baseline taking part in the bench: its worker (null when it did not start) and why not.
struct Baseline {
  std::string name;  // "" for none
  std::vector<std::string> command;
  std::string start_error;  // known before starting it: its npm package is missing
  std::string version;      // from its first worker's greeting
};

// Busy and total jiffies of all CPUs so far (/proc/stat's first line); {0, 0} when unreadable.
std::pair<int64_t, int64_t> cpu_jiffies() {
  std::ifstream f("/proc/stat");
  std::string cpu;
  f >> cpu;
  int64_t busy = 0, total = 0, v = 0;
  for (int field = 0; field < 8 && f >> v; ++field) {
    total += v;
    if (field != 3 && field != 4) busy += v;  // idle and iowait
  }
  return {busy, total};
}

// The threads of the side that just ran spin for a while before they sleep (libgomp's spin
// lasts about 100 ms under this virtual machine's pause-loop exits); on a machine with as many
// cores as threads they would slow the next side's runs. So each block waits `pause_ms`, then
// until the cores have been idle for 30 ms (at most one second).
void pause_between_blocks(const BenchOptions& o) {
  if (o.pause_ms <= 0) return;
  usleep(static_cast<useconds_t>(o.pause_ms * 1000));
  for (int waited = 0; waited < 1000; waited += 30) {
    auto [busy0, total0] = cpu_jiffies();
    usleep(30000);
    auto [busy1, total1] = cpu_jiffies();
    if (total1 == total0 || busy1 - busy0 <= 1) return;  // one jiffy: anything else's noise
  }
}

std::string threads_string(int t) {
  return std::to_string(t) + (t == 1 ? " thread" : " threads");
}

// Runs `what`; an exception becomes its message (for a row's note).
template <typename F>
std::string error_of(F&& what) {
  try {
    what();
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

struct Compiled {
  runtime::Model model;
  std::string file;
  double seconds = 0;
};

// Compiles and saves one build of `g`, with the tuning records of `book` when given; strict with
// --strict, else warning once per fallback (the tuned and untuned builds share most kernels).
Compiled compile_model(const graph::Graph& g, const BenchModel& m, const Target& target, bool fuse,
                       bool layout, const fs::path& work, bool strict,
                       const autotune::RecordBook* book = nullptr,
                       std::vector<autotune::TaskLookup>* lookups = nullptr) {
  graph::BuildOptions build;
  build.fuse = fuse;
  build.alter_layout = layout;
  if (book) autotune::use_records(*book, target, build, lookups);
  const std::string variant =
      std::string(fuse ? "" : "-nofuse") + (layout ? "" : "-nolayout") + (book ? "-tuned" : "");
  const std::string file = (work / (m.name + variant + ".so")).string();
  auto start = std::chrono::steady_clock::now();
  with_exit_code(kCompile, "compiling " + m.spec + " for '" + target.str() + "'", [&] {
    static std::set<std::string> warned;
    build_graph(g, target, build, strict, &warned).save(file);
  });
  Compiled c;
  c.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  c.model = with_exit_code(kCompile, "loading " + file, [&] { return runtime::Model::load(file); });
  c.file = file;
  return c;
}

// The fusion and layout ablation of one model: four builds, timed in alternating blocks.
void ablate(const graph::Graph& g, const BenchModel& m, const Target& target, const Compiled& base,
            const std::vector<runtime::NDArray>& inputs, const BenchOptions& o,
            const fs::path& work, BenchReport* report) {
  std::vector<const runtime::Model*> models = {&base.model};
  std::vector<Compiled> variants;
  variants.push_back(compile_model(g, m, target, false, true, work, o.strict));
  variants.push_back(compile_model(g, m, target, true, false, work, o.strict));
  variants.push_back(compile_model(g, m, target, false, false, work, o.strict));
  for (const Compiled& v : variants) models.push_back(&v.model);
  const std::vector<runtime::NDArray> want = base.model.run(inputs);
  for (size_t i = 1; i < models.size(); ++i) {
    const std::string dir = (work / (m.name + "-ablation-" + std::to_string(i))).string();
    fs::create_directories(dir);
    std::vector<std::string> files;
    std::vector<runtime::NDArray> got = models[i]->run(inputs);
    for (size_t k = 0; k < got.size(); ++k) {
      files.push_back(dir + "/output_" + std::to_string(k) + ".npy");
      runtime::save_npy(files.back(), got[k]);
    }
    std::string differs = compare_outputs(want, files, 1e-3);
    if (!differs.empty())
      throw CliError(kCompile, m.name + ": the ablation build " + std::to_string(i) +
                                   " computes something else: " + differs);
  }
  for (int t : o.threads) {
    AnvilSetNumThreads(t);
    std::vector<std::vector<double>> ms(models.size());
    std::vector<double> ignored;
    for (const runtime::Model* model : models) time_runs(*model, inputs, o.warmup, &ignored);
    while (static_cast<int>(ms[0].size()) < o.runs)
      for (size_t i = 0; i < models.size(); ++i) {
        pause_between_blocks(o);
        time_runs(*models[i], inputs, o.block, &ms[i]);
      }
    AblationRow row;
    row.name = m.name;
    row.threads = t;
    for (size_t i = 0; i < models.size(); ++i) row.ms[i] = median(ms[i]);
    std::printf(
        "  ablation, %s: %.3f ms (fusion + layout), %.3f (no fusion), %.3f (no layout), "
        "%.3f (neither)\n",
        threads_string(t).c_str(), row.ms[0], row.ms[1], row.ms[2], row.ms[3]);
    std::fflush(stdout);
    report->ablation.push_back(row);
  }
}

// A row of `name` at `threads` against `baseline`, before anything is timed.
BenchRow empty_row(const std::string& name, int threads, const std::string& baseline) {
  BenchRow row;
  row.name = name;
  row.threads = threads;
  row.baseline = baseline;
  return row;
}

// One baseline against Anvil on one model at one thread count: a fresh worker loads the model,
// its outputs are checked against Anvil's (`want`), then after a warm-up, blocks of runs alternate
// between the two until each has `o.runs`. Returns the row, with a note instead of a baseline
// time when the worker cannot start, load, agree or finish.
BenchRow bench_pair(const BenchModel& m, int threads, Baseline& b, const runtime::Model& model,
                    const std::vector<runtime::NDArray>& inputs, const nlohmann::json& input_files,
                    const std::vector<runtime::NDArray>& want, const BenchOptions& o,
                    const fs::path& work) {
  BenchRow row = empty_row(m.name, threads, b.name);
  std::vector<double> anvil_ms, baseline_ms, ignored;
  // On a GPU Anvil's runs stay on the device, as the baselines' do.
  std::optional<DeviceRuns> on_device;
  if (model.device().device_type != kDLCPU) {
    on_device.emplace(model, inputs);
    if (std::string differs = on_device->check(want); !differs.empty())
      throw CliError(kRuntime,
                     m.name + ": the run on device arrays computes something else: " + differs);
  }
  auto time_anvil = [&](int n, std::vector<double>* ms) {
    if (on_device)
      on_device->time(n, ms);
    else
      time_runs(model, inputs, n, ms);
  };
  if (!b.name.empty() && b.start_error.empty()) {
    row.note = error_of([&] {
      // A worker per pair: one baseline process at a time, each started for its thread count
      // (idle runtimes' threads spin, and PyTorch's pool does not shrink and grow cleanly).
      Worker worker("baseline " + b.name, b.command);
      if (b.version.empty()) {
        b.version = worker.version().empty() ? "(no version)" : worker.version();
        std::printf("  baseline %s %s\n", b.name.c_str(), b.version.c_str());
      }
      const std::string dir =
          (work / (m.name + "-" + b.name + "-" + std::to_string(threads))).string();
      fs::create_directories(dir);
      worker.request(
          {{"op", "load"}, {"model", m.onnx}, {"threads", threads}, {"inputs", input_files}},
          kLoadTimeout);
      nlohmann::json answer = worker.request({{"op", "run"}, {"outputs_dir", dir}}, kRunTimeout);
      std::string differs = compare_outputs(want, answer.at("outputs"), o.tolerance);
      if (!differs.empty()) throw std::runtime_error("outputs disagree with Anvil's: " + differs);
      auto time_baseline = [&](int runs, std::vector<double>* ms) {
        answer = worker.request({{"op", "time"}, {"runs", runs}}, kTimeTimeout);
        for (const auto& v : answer.at("ms")) ms->push_back(v.get<double>());
      };
      time_anvil(o.warmup, &ignored);
      time_baseline(o.warmup, &ignored);
      while (static_cast<int>(anvil_ms.size()) < o.runs) {
        pause_between_blocks(o);
        time_anvil(o.block, &anvil_ms);
        pause_between_blocks(o);
        time_baseline(o.block, &baseline_ms);
      }
    });
  } else {
    row.note = b.start_error;
  }
  // Without a baseline time Anvil is timed alone.
  if (!row.note.empty() || anvil_ms.empty()) {
    anvil_ms.clear();
    time_anvil(o.warmup, &ignored);
    time_anvil(o.runs, &anvil_ms);
  }
  if (!row.note.empty()) baseline_ms.clear();
  set_times(&row, anvil_ms, baseline_ms);
  return row;
}

// The same pair with each side in o.processes fresh processes, all alive at once: an Anvil
// worker (`anvil bench-worker` on `artifact`) and a baseline worker per process, the baseline's
// outputs checked against Anvil's (`want`), then rounds in which every process of each side in turn
// times a block of runs, until each has `o.runs`. Round-robin because this kind of machine's speed
// drifts for seconds at a time: processes timed one after another would take the drift for a
// difference between processes. The row's medians are the medians of the per-process medians. A
// baseline that fails leaves a note, and Anvil's processes go on alone.
BenchRow bench_pair_processes(const BenchModel& m, int threads, Baseline& b,
                              const std::string& artifact, const nlohmann::json& input_files,
                              const std::vector<runtime::NDArray>& want, const BenchOptions& o,
                              const fs::path& work) {
  BenchRow row = empty_row(m.name, threads, b.name);
  row.note = b.name.empty() ? "" : b.start_error;
  const std::vector<std::string> anvil_command = {(exe_dir() / "anvil").string(), "bench-worker"};
  auto load = [&](Worker& w, const std::string& model) {
    w.request({{"op", "load"}, {"model", model}, {"threads", threads}, {"inputs", input_files}},
              kLoadTimeout);
  };
  auto time = [&](Worker& w, int runs, std::vector<double>* ms) {
    nlohmann::json answer = w.request({{"op", "time"}, {"runs", runs}}, kTimeTimeout);
    for (const auto& v : answer.at("ms")) ms->push_back(v.get<double>());
  };
  auto check = [&](Worker& w, const std::string& dir, const std::string& what) {
    fs::create_directories(dir);
    nlohmann::json answer = w.request({{"op", "run"}, {"outputs_dir", dir}}, kRunTimeout);
    std::string differs = compare_outputs(want, answer.at("outputs"), o.tolerance);
    if (!differs.empty()) throw std::runtime_error(what + differs);
  };
  struct Process {
    std::unique_ptr<Worker> anvil, base;
    std::vector<double> anvil_ms, base_ms;
  };
  std::vector<Process> procs(static_cast<size_t>(o.processes));
  // The baseline's failure: the note, and no baseline in any process from then on.
  auto drop_baseline = [&](const std::string& why) {
    row.note = why;
    for (Process& p : procs) p.base.reset();
  };
  const std::string tag =
      m.name + "-" + (b.name.empty() ? "anvil" : b.name) + "-" + std::to_string(threads) + "-";
  for (size_t i = 0; i < procs.size(); ++i) {
    Process& p = procs[i];
    p.anvil = std::make_unique<Worker>("anvil bench-worker", anvil_command);
    load(*p.anvil, artifact);
    // Anvil's worker runs the artifact the bench compiled: its outputs are checked once as well.
    if (i == 0)
      check(*p.anvil, (work / (tag + "anvil")).string(),
            "anvil bench-worker's outputs differ from this process's: ");
    if (b.name.empty() || !row.note.empty()) continue;
    const std::string failed = error_of([&] {
      p.base = std::make_unique<Worker>("baseline " + b.name, b.command);
      if (b.version.empty()) {
        b.version = p.base->version().empty() ? "(no version)" : p.base->version();
        std::printf("  baseline %s %s\n", b.name.c_str(), b.version.c_str());
      }
      load(*p.base, m.onnx);
      check(*p.base, (work / (tag + std::to_string(i))).string(),
            "outputs disagree with Anvil's: ");
    });
    if (!failed.empty()) drop_baseline(failed);
  }
  auto time_base = [&](Process& p, int runs, std::vector<double>* ms) {
    if (!p.base) return;
    const std::string failed = error_of([&] { time(*p.base, runs, ms); });
    if (!failed.empty()) drop_baseline(failed);
  };
  std::vector<double> ignored;
  for (Process& p : procs) {
    time(*p.anvil, o.warmup, &ignored);
    time_base(p, o.warmup, &ignored);
  }
  while (static_cast<int>(procs[0].anvil_ms.size()) < o.runs) {
    for (Process& p : procs) {
      pause_between_blocks(o);
      time(*p.anvil, o.block, &p.anvil_ms);
      if (!p.base) continue;
      pause_between_blocks(o);
      time_base(p, o.block, &p.base_ms);
    }
  }
  std::vector<double> anvil_all, baseline_all;
  for (Process& p : procs) {
    row.anvil_process_ms.push_back(median(p.anvil_ms));
    anvil_all.insert(anvil_all.end(), p.anvil_ms.begin(), p.anvil_ms.end());
    if (!row.note.empty() || p.base_ms.empty()) continue;
    row.baseline_process_ms.push_back(median(p.base_ms));
    baseline_all.insert(baseline_all.end(), p.base_ms.begin(), p.base_ms.end());
  }
  if (!row.note.empty()) row.baseline_process_ms.clear();
  set_times(&row, anvil_all, baseline_all);
  row.anvil_ms = median(row.anvil_process_ms);
  if (row.baseline_ms) row.baseline_ms = median(row.baseline_process_ms);
  return row;
}

// How many times the tuned and the untuned build are each loaded for their comparison
// (load_copies: where a load's memory lands moves the model's time by a few percent).
constexpr int kUntunedLoads = 4;

// The tuned build against the untuned one, in alternating blocks in this process over
// kUntunedLoads loads of each: the row of baseline "untuned".
BenchRow bench_untuned(const BenchModel& m, int threads, const std::vector<runtime::Model>& tuned,
                       const std::vector<runtime::Model>& untuned,
                       const std::vector<runtime::NDArray>& inputs, const BenchOptions& o) {
  BenchRow row = empty_row(m.name, threads, "untuned");
  autotune::AbOptions ab;
  ab.runs = o.runs;
  ab.block = o.block;
  ab.warmup = o.warmup;
  ab.before_block = [&o] { pause_between_blocks(o); };
  autotune::AbTimes t = autotune::time_ab(tuned, untuned, inputs, ab);
  set_times(&row, t.a_ms, t.b_ms);
  return row;
}

// Each side's time per call on a model that does next to nothing, relu of one float at 1 thread,
// timed as the rows are (a fresh process per side, alternating blocks): for ONNX Runtime its
// Node binding's call, about 10 us, which the smallest workloads' rows carry too.
CallOverhead call_overhead(const BenchOptions& o, const Target& target, Baseline& b,
                           const fs::path& work) {
  graph::Graph g;
  graph::ValueId x = g.add_input("x", {{1, 1}, ir::DataType::Float32()});
  g.add_output(g.add("relu", "relu", ops::Attrs(), {x}));
  const BenchModel m{"call_overhead", "", (work / "call_overhead.onnx").string()};
  with_exit_code(kCompile, "exporting the one-op model to ONNX",
                 [&] { frontend::export_onnx(g, m.onnx, m.name); });
  Compiled c = compile_model(g, m, target, true, true, work, o.strict);
  std::vector<runtime::NDArray> inputs = {filled_input(c.model.inputs()[0], "random")};
  const std::string input = (work / "call_overhead.input0.npy").string();
  runtime::save_npy(input, inputs[0]);
  BenchOptions q = o;
  q.processes = 1;
  q.runs = 2000;
  q.block = 500;
  q.warmup = 100;
  q.pause_ms = 0;  // one thread a side: no idle pool spins between blocks
  BenchRow row = with_exit_code(kRuntime, "timing the one-op model", [&] {
    return bench_pair_processes(m, 1, b, c.file, {{"x", input}}, c.model.run(inputs), q, work);
  });
  return {b.name, row.anvil_ms, row.baseline_ms, row.note};
}

void bench_model(const BenchModel& m, const BenchOptions& o, const Target& target,
                 std::vector<Baseline>& baselines, const fs::path& work,
                 const autotune::RecordBook* book, BenchReport* report) {
  graph::Graph g = load_model(m.spec, o.input_shapes);
  if (m.spec.rfind("zoo:", 0) == 0)
    with_exit_code(kCompile, "exporting " + m.spec + " to ONNX",
                   [&] { frontend::export_onnx(g, m.onnx, m.name); });
  const double flops = with_exit_code(kCompile, "counting the FLOPs of " + m.spec,
                                      [&] { return graph::graph_flops(g); });
  std::vector<autotune::TaskLookup> lookups;
  Compiled base = compile_model(g, m, target, true, true, work, o.strict, book, &lookups);
  std::printf("%s: compiled in %.1f s (%zu kernels), %.3f GFLOP per run\n", m.name.c_str(),
              base.seconds, base.model.num_kernels(), flops / 1e9);
  std::optional<Compiled> untuned;
  if (book) {
    std::printf("%s", tuning_summary(book->num_records(), book->num_tasks(), 0, lookups).c_str());
    untuned = compile_model(g, m, target, true, true, work, o.strict);
  }
  std::pair<std::vector<runtime::Model>, std::vector<runtime::Model>> tuned_untuned;
  if (untuned)
    tuned_untuned = with_exit_code(kCompile, "loading the tuned and untuned builds", [&] {
      return autotune::load_copies(base.file, untuned->file, kUntunedLoads);
    });
  std::fflush(stdout);

  // The inputs: --fill-mode random, as files for the workers.
  std::vector<runtime::NDArray> inputs;
  nlohmann::json input_files = nlohmann::json::object();
  for (const runtime::TensorInfo& t : base.model.inputs()) {
    inputs.push_back(filled_input(t, "random"));
    const std::string file =
        (work / (m.name + ".input" + std::to_string(inputs.size() - 1) + ".npy")).string();
    runtime::save_npy(file, inputs.back());
    input_files[t.name] = file;
  }

  Baseline none;  // for --baselines none: Anvil alone
  std::vector<Baseline*> sides;
  for (Baseline& b : baselines) sides.push_back(&b);
  if (sides.empty()) sides.push_back(&none);
  for (int t : o.threads) {
    AnvilSetNumThreads(t);
    const std::vector<runtime::NDArray> want =
        with_exit_code(kRuntime, "running " + m.name, [&] { return base.model.run(inputs); });
    std::string line;
    for (Baseline* b : sides) {
      BenchRow row = with_exit_code(kRuntime, "running " + m.name, [&] {
        if (o.processes > 0)
          return bench_pair_processes(m, t, *b, base.file, input_files, want, o, work);
        return bench_pair(m, t, *b, base.model, inputs, input_files, want, o, work);
      });
      row.gflops = flops / (row.anvil_ms * 1e6);
      char buf[200];
      if (row.baseline_ms)
        std::snprintf(buf, sizeof buf, "; %s %.3f ms, Anvil %.3f ms: %.2fx", b->name.c_str(),
                      *row.baseline_ms, row.anvil_ms, row.speedup());
      else if (!b->name.empty())
        std::snprintf(buf, sizeof buf, "; %s: no time (see the notes), Anvil %.3f ms",
                      b->name.c_str(), row.anvil_ms);
      else
        std::snprintf(buf, sizeof buf, "; Anvil %.3f ms", row.anvil_ms);
      line += buf;
      if (row.anvil_process_ms.size() > 1) {
        std::snprintf(buf, sizeof buf, " (spread over %zu processes: Anvil %.1f%%",
                      row.anvil_process_ms.size(), 100 * BenchRow::spread(row.anvil_process_ms));
        line += buf;
        if (row.baseline_process_ms.size() > 1) {
          std::snprintf(buf, sizeof buf, ", %s %.1f%%", b->name.c_str(),
                        100 * BenchRow::spread(row.baseline_process_ms));
          line += buf;
        }
        line += ")";
      }
      report->rows.push_back(row);
    }
    if (untuned) {
      BenchRow row = bench_untuned(m, t, tuned_untuned.first, tuned_untuned.second, inputs, o);
      row.gflops = flops / (row.anvil_ms * 1e6);
      char buf[160];
      std::snprintf(buf, sizeof buf, "; untuned %.3f ms, tuned %.3f ms: %.2fx", *row.baseline_ms,
                    row.anvil_ms, row.speedup());
      line += buf;
      report->rows.push_back(row);
    }
    std::printf("  %s%s\n", target.is_gpu() ? "GPU" : threads_string(t).c_str(), line.c_str());
    std::fflush(stdout);
  }
  if (target.is_gpu()) {
    // What the graph and the device-resident arrays are worth: Anvil against itself.
    DeviceModeTimes d = with_exit_code(kRuntime, "timing " + m.name + " on the device", [&] {
      return time_device_modes(base.model, inputs, o.warmup, o.runs, o.block);
    });
    const runtime::DeviceRunCounts counts = base.model.device_run_counts();
    std::string line;
    for (const auto& [name, ms] : {std::pair{"anvil_kernel_by_kernel", &d.kernel_by_kernel_ms},
                                   std::pair{"anvil_host_copies", &d.host_copies_ms}}) {
      BenchRow row = empty_row(m.name, 1, name);
      set_times(&row, d.graph_ms, *ms);
      row.gflops = flops / (row.anvil_ms * 1e6);
      char buf[160];
      std::snprintf(buf, sizeof buf, "; %s %.3f ms", name, *row.baseline_ms);
      line += buf;
      report->rows.push_back(row);
    }
    std::printf(
        "  GPU, Anvil against itself: on device arrays %.3f ms%s (this process: %lld graph "
        "launches, "
        "%lld graphs recorded, %lld runs kernel by kernel)\n",
        latency_stats(d.graph_ms).median_ms, line.c_str(),
        static_cast<long long>(counts.graph_launches), static_cast<long long>(counts.captures),
        static_cast<long long>(counts.eager_runs));
    std::fflush(stdout);
  }
  if (o.ablation) ablate(g, m, target, base, inputs, o, work, report);
  if (o.profile) {
    // On the CPU at the last thread count; on a GPU each call is waited for alone.
    ModelProfile p;
    p.name = m.name;
    p.threads = target.is_gpu() ? 0 : o.threads.back();
    p.runs = o.runs;
    p.kernels = with_exit_code(kRuntime, "profiling " + m.name,
                               [&] { return base.model.profile(inputs, o.runs); });
    std::printf("%s", profile_table(p.kernels, p.runs, p.threads,
                                    target.is_gpu() ? PeakFlops{} : measured_peak())
                          .c_str());
    std::fflush(stdout);
    report->profiles.push_back(std::move(p));
  }
}

}  // namespace

std::vector<std::string> default_bench_models() {
  return {"resnet18", "mobilenet_v1", "lstm_lm", "dqn", "dcgan"};
}

std::vector<std::string> default_baselines(const Target& target) {
  if (target.is_gpu()) return {"torch_eager_cuda", "torch_cuda_graph"};
  return {"onnxruntime", "torch_eager", "torch_jit"};
}

void bench_command(const BenchOptions& options) {
  BenchOptions o = options;
  const Target target = with_exit_code(kUsage, "--target '" + o.target + "'",
                                       [&] { return Target::parse(o.target); });
  // On a GPU the model runs on the device (inputs copied in and outputs out on every run); there
  // is no thread count, and no peak was measured, so rows have no fraction of peak.
  const bool gpu = target.is_gpu();
  std::string gpu_name;
  if (gpu) {
    const DLDeviceType type = target.kind == Target::Kind::kCUDA ? kDLCUDA : kDLOpenCL;
    std::string why;
    if (!runtime::Device::available(type, &why))
      throw CliError(kRuntime, "--target '" + o.target + "': no device to run on: " + why);
    gpu_name = runtime::Device::get(type).name();
  }
  if (gpu) {
    if (o.threads != std::vector<int>{1, 2} && o.threads != std::vector<int>{1})
      std::printf("--threads does not apply on a GPU target: ignored\n");
    o.threads = {1};
  }
  for (const std::string& file : {o.summary_json, o.chart}) {
    std::error_code ec;
    fs::path parent = fs::path(file).parent_path();
    if (!file.empty() && !parent.empty() && !fs::is_directory(parent, ec))
      usage_error(file + ": the directory '" + parent.string() + "' does not exist");
  }
  const auto commands = worker_commands(o);
  std::vector<std::string> names;
  for (const std::string& b : o.baselines.empty() ? default_baselines(target) : o.baselines) {
    if (b == "none") continue;
    if (!commands.count(b)) {
      std::string known;
      for (const auto& [n, c] : commands) known += (known.empty() ? "" : ", ") + n;
      usage_error("--baselines: unknown baseline '" + b + "' (expected one of: " + known +
                  ", none; or define it with --worker " + b + "=COMMAND)");
    }
    if (std::find(names.begin(), names.end(), b) == names.end()) names.push_back(b);
  }
  std::optional<autotune::RecordBook> book;
  if (!o.tuning_records.empty()) {
    autotune::RecordFile records = read_tuning_records(o.tuning_records, o.records_any_cpu);
    book.emplace(records.records);
    if (std::string note = autotune::other_cpus_note(records); !note.empty())
      std::printf("%s (--records-any-cpu applies them)\n", note.c_str());
    if (records.torn_lines)
      std::printf("tuning records: %d cut-off last line skipped\n", records.torn_lines);
  }

  char tmpl[] = "/tmp/anvil-bench-XXXXXX";
  if (!mkdtemp(tmpl)) throw CliError(kRuntime, "cannot create a working directory in /tmp");
  const fs::path work = tmpl;
  struct RemoveOnExit {
    fs::path dir;
    ~RemoveOnExit() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } remove_work{work};

  std::vector<BenchModel> models;
  for (const std::string& text : o.models.empty() ? default_bench_models() : o.models)
    models.push_back(resolve_model(text, work));

  BenchReport report;
  report.cpu = cpu_name();
  report.machine = MachineFacts::host();
  report.gpu = gpu_name;
  report.runs = (o.runs + o.block - 1) / o.block * o.block;
  if (gpu) {
    std::printf(
        "anvil bench on %s (target '%s'; the host: %s); %d timed runs per side in blocks of %d "
        "after %d warm-up runs\n"
        "Both sides' inputs and outputs stay on the device (Anvil: Model::run_device, replaying "
        "a recorded graph where the device has graphs)\n",
        report.gpu.c_str(), target.str().c_str(), report.cpu.c_str(), report.runs, o.block,
        o.warmup);
  } else {
    report.peak_gflops_per_core = measured_peak().gflops_per_core;
    std::printf("anvil bench on %s; %d timed runs per side in blocks of %d after %d warm-up runs\n",
                machine_line(report).c_str(), report.runs, o.block, o.warmup);
  }

  std::vector<Baseline> baselines;
  for (const std::string& name : names) {
    Baseline b;
    b.name = name;
    b.command = commands.at(name);
    const bool builtin =
        std::none_of(o.workers.begin(), o.workers.end(),
                     [&](const std::string& w) { return w.rfind(name + "=", 0) == 0; });
    if (name == "onnxruntime" && builtin) b.start_error = missing_onnxruntime(b.command);
    if (!b.start_error.empty())
      std::printf("baseline %s cannot start: %s\n", name.c_str(), b.start_error.c_str());
    baselines.push_back(std::move(b));
  }
  std::fflush(stdout);

  if (!gpu && o.processes > 0)
    for (Baseline& b : baselines)
      if (b.start_error.empty()) report.call_overhead.push_back(call_overhead(o, target, b, work));

  // A model that cannot be compiled, loaded or run gets a row per thread count and baseline with
  // the error, and the others are still timed; the command fails at the end.
  std::vector<std::string> failed;
  ExitCode failed_code = kOk;
  for (const BenchModel& m : models) {
    const size_t rows_before = report.rows.size();
    try {
      bench_model(m, o, target, baselines, work, book ? &*book : nullptr, &report);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "anvil: error: %s: %s\n", m.spec.c_str(), e.what());
      const CliError* cli = dynamic_cast<const CliError*>(&e);
      if (failed.empty()) failed_code = cli ? cli->code() : kCompile;
      report.rows.resize(rows_before);
      std::vector<std::string> sides = names.empty() ? std::vector<std::string>{""} : names;
      for (int t : o.threads)
        for (const std::string& b : sides) {
          BenchRow row = empty_row(m.name, t, b);
          row.error = e.what();
          report.rows.push_back(row);
        }
      failed.push_back(m.spec);
    }
  }

  std::printf("\n%s", bench_table(report).c_str());
  if (o.ablation)
    std::printf(
        "\nFusion and layout ablation (Anvil alone; in parentheses, time against the "
        "default build):\n\n%s",
        ablation_table(report).c_str());
  std::fflush(stdout);
  if (!o.summary_json.empty()) {
    with_exit_code(kRuntime, "writing " + o.summary_json, [&] {
      std::ofstream f(o.summary_json);
      f << summary_json(report).dump(2) << "\n";
      if (!f) throw std::runtime_error("cannot write the file");
    });
    std::printf("wrote %s\n", o.summary_json.c_str());
  }
  if (!o.chart.empty()) {
    with_exit_code(kRuntime, "", [&] { write_chart(report, o.chart); });
    std::printf("wrote %s\n", o.chart.c_str());
  }
  if (!failed.empty()) {
    std::string list;
    for (const std::string& n : failed) list += (list.empty() ? "" : ", ") + n;
    throw CliError(failed_code, std::to_string(failed.size()) + " of " +
                                    std::to_string(models.size()) + " models failed: " + list +
                                    " (their rows carry the errors)");
  }
}

}  // namespace anvil::cli
