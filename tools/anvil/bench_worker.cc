// `anvil bench-worker`: Anvil's side of `anvil bench --processes`, an artifact in a process of its
// own behind the baselines' protocol (bench.h): "load" takes the artifact (model.so) where a
// baseline takes the ONNX file, "run" writes the outputs as .npy, "time" times runs one by one (a
// GPU artifact on device arrays, checked against a host run when loaded, as in the bench itself).
// Given an ONNX file, "load" compiles it first for the host (with the worker's --tuning-records),
// so that another build of Anvil can be a baseline: `--worker old="OLD/anvil bench-worker"`.
// A fresh process draws its memory afresh, so the bench's spread across these processes is the
// spread a user meets from one start of their program to the next.
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "anvil/autotune/ab_timing.h"
#include "anvil/autotune/records.h"
#include "anvil/graph/build.h"
#include "anvil/runtime/c_runtime_api.h"
#include "anvil/runtime/model.h"
#include "anvil/runtime/npy.h"
#include "anvil/support/temp_dir.h"
#include "anvil/target/target.h"
#include "tools/anvil/args.h"
#include "tools/anvil/bench.h"
#include "tools/anvil/bench_device.h"
#include "tools/anvil/commands.h"

namespace anvil::cli {

namespace {

struct Loaded {
  bool loaded = false;
  runtime::Model model;
  std::vector<runtime::NDArray> inputs;
  // A GPU model is timed on device arrays, as in the bench's own process (bench_device.h).
  std::unique_ptr<DeviceRuns> on_device;
};

// The artifact of an ONNX file, compiled for the host into `dir`.
std::string compile_onnx(const std::string& onnx, const std::string& records, bool any_cpu,
                         const std::string& dir) {
  graph::Graph g = load_model(onnx, {});
  graph::BuildOptions build;
  const Target target = Target::host();
  std::optional<autotune::RecordBook> book;
  if (!records.empty()) {
    book.emplace(read_tuning_records(records, any_cpu).records);
    autotune::use_records(*book, target, build);
  }
  const std::string file = dir + "/model.so";
  graph::CompiledGraph::build(g, target, build).save(file);
  return file;
}

nlohmann::json serve(const nlohmann::json& req, const std::string& records, bool any_cpu,
                     const TempDir& work, Loaded* m) {
  const std::string op = req.at("op").get<std::string>();
  if (op == "load") {
    Loaded next;
    std::string model = req.at("model").get<std::string>();
    if (model.size() > 5 && model.substr(model.size() - 5) == ".onnx")
      model = compile_onnx(model, records, any_cpu, work.path());
    next.model = runtime::Model::load(model);
    AnvilSetNumThreads(req.at("threads").get<int>());
    const nlohmann::json& files = req.at("inputs");
    for (const runtime::TensorInfo& t : next.model.inputs()) {
      if (!files.contains(t.name))
        throw std::runtime_error("no file for the model's input '" + t.name + "'");
      next.inputs.push_back(runtime::load_npy(files.at(t.name).get<std::string>()));
    }
    next.loaded = true;
    *m = std::move(next);
    // Made where the model now lives: DeviceRuns keeps a pointer to it. Any failure leaves no
    // model loaded.
    if (m->model.device().device_type != kDLCPU) {
      try {
        m->on_device = std::make_unique<DeviceRuns>(m->model, m->inputs);
        const std::string differs = m->on_device->check(m->model.run(m->inputs));
        if (!differs.empty())
          throw std::runtime_error("the run on device arrays computes something else: " + differs);
      } catch (...) {
        *m = Loaded();
        throw;
      }
    }
    return {{"ok", true}};
  }
  if (!m->loaded) throw std::runtime_error("'" + op + "' before a model was loaded");
  if (op == "run") {
    const std::string dir = req.at("outputs_dir").get<std::string>();
    std::vector<runtime::NDArray> outs = m->model.run(m->inputs);
    nlohmann::json files = nlohmann::json::array();
    for (size_t i = 0; i < outs.size(); ++i) {
      files.push_back(dir + "/output_" + std::to_string(i) + ".npy");
      runtime::save_npy(files.back().get<std::string>(), outs[i]);
    }
    return {{"ok", true}, {"outputs", files}};
  }
  if (op == "time") {
    const int runs = req.at("runs").get<int>();
    nlohmann::json ms = nlohmann::json::array();
    std::vector<double> times;
    if (m->on_device)
      m->on_device->time(runs, &times);
    else
      autotune::time_runs(m->model, m->inputs, runs, &times);
    for (double t : times) ms.push_back(t);
    return {{"ok", true}, {"ms", ms}};
  }
  throw std::runtime_error("unknown op '" + op + "' (expected load, run or time)");
}

}  // namespace

void bench_worker_command(const std::string& tuning_records, bool records_any_cpu) {
  const TempDir work("anvil-bench-worker-", "the bench worker's builds");
  std::cout << nlohmann::json{{"ok", true}, {"name", "anvil"}, {"version", "bench-worker"}}.dump()
            << std::endl;
  Loaded m;
  for (std::string line; std::getline(std::cin, line);) {
    if (line.empty()) continue;
    nlohmann::json answer;
    try {
      answer = serve(nlohmann::json::parse(line), tuning_records, records_any_cpu, work, &m);
    } catch (const std::exception& e) {
      answer = {{"ok", false}, {"error", e.what()}};
    }
    std::cout << answer.dump() << std::endl;
  }
}

}  // namespace anvil::cli
