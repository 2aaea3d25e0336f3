#include "anvil/autotune/measure.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <map>
#include <random>

#include "anvil/codegen/llvm/codegen_llvm.h"
#include "anvil/lower/lower.h"
#include "anvil/runtime/ndarray.h"
#include "anvil/support/error.h"

namespace anvil::autotune {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Seeded inputs of the task's types (floats uniform in [-1, 1]; integers in [0, 4): valid as
// indices and shifts) and the operator's reference outputs on them.
struct Reference {
  std::vector<runtime::NDArray> inputs, outputs;
};

Reference make_reference(const Task& task) {
  const ops::OpDef& def = ops::lookup(task.op);
  Reference r;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  if (def.sample_inputs) {
    r.inputs = def.sample_inputs(task.inputs, task.attrs, [&](const std::vector<int64_t>& shape) {
      runtime::NDArray a = runtime::NDArray::empty(shape, runtime::dl_float32());
      for (int64_t i = 0; i < a.numel(); ++i) a.data_as<float>()[i] = u(rng);
      return a;
    });
    r.outputs = def.reference(r.inputs, task.attrs);
    return r;
  }
  for (const ops::TensorType& t : task.inputs) {
    runtime::NDArray a = runtime::NDArray::empty(t.shape, ops::to_dlpack(t.dtype), true);
    if (t.dtype == ir::DataType::Float32()) {
      for (int64_t i = 0; i < a.numel(); ++i) a.data_as<float>()[i] = u(rng);
    } else if (t.dtype == ir::DataType::Int(64)) {
      for (int64_t i = 0; i < a.numel(); ++i) a.data_as<int64_t>()[i] = rng() % 4;
    } else if (t.dtype == ir::DataType::Int(32)) {
      for (int64_t i = 0; i < a.numel(); ++i) a.data_as<int32_t>()[i] = rng() % 4;
    }
    r.inputs.push_back(a);
  }
  r.outputs = def.reference(r.inputs, task.attrs);
  return r;
}

// "" when `got` matches `want` (floats within 1e-3 of the largest reference magnitude: the
// candidates sum in different orders), else what differs.
std::string compare(const std::vector<runtime::NDArray>& want,
                    const std::vector<runtime::NDArray>& got) {
  for (size_t o = 0; o < want.size(); ++o) {
    const runtime::NDArray& w = want[o];
    const runtime::NDArray& g = got[o];
    if (w.dtype().code == kDLFloat && w.dtype().bits == 32) {
      double largest = 0, diff = 0;
      int64_t at = 0;
      for (int64_t i = 0; i < w.numel(); ++i) {
        largest = std::max(largest, std::fabs(double(w.data_as<float>()[i])));
        double d = std::fabs(double(w.data_as<float>()[i]) - double(g.data_as<float>()[i]));
        if (std::isnan(d)) d = INFINITY;
        if (d > diff) diff = d, at = i;
      }
      if (diff > 1e-3 * largest + 1e-5)
        return "output " + std::to_string(o) + " element " + std::to_string(at) + " is " +
               std::to_string(g.data_as<float>()[at]) + ", the reference " +
               std::to_string(w.data_as<float>()[at]);
    } else if (std::memcmp(w.data(), g.data(), static_cast<size_t>(w.nbytes())) != 0) {
      return "output " + std::to_string(o) + " differs from the reference";
    }
  }
  return "";
}

int32_t default_call(AnvilKernel kernel, const std::vector<const DLTensor*>& args) {
  return kernel(args.data(), static_cast<int32_t>(args.size()), nullptr);
}

}  // namespace

Measurement measure_here(const Task& task, const ops::Config& config, const MeasureOptions& options,
                         const KernelCall& call_fn) {
  static std::map<std::string, Reference> references;  // per task, for this process
  const KernelCall call = call_fn ? call_fn : KernelCall(default_call);
  Measurement m;
  const Target target = Target::parse(task.target);
  const ops::OpDef& def = ops::lookup(task.op);
  auto start = Clock::now();
  std::unique_ptr<codegen::LLVMModule> module;
  AnvilKernel kernel = nullptr;
  std::vector<ops::TensorType> out_types;
  try {
    out_types = def.infer(task.inputs, task.attrs);
    std::vector<te::Tensor> ins;
    for (size_t i = 0; i < task.inputs.size(); ++i)
      ins.push_back(te::placeholder(ops::to_exprs(task.inputs[i].shape), task.inputs[i].dtype,
                                    "in" + std::to_string(i)));
    std::vector<te::Tensor> outs = def.compute(ins, task.attrs);
    te::Schedule s(outs);
    def.schedule_x86(s, outs, target, config);
    std::vector<te::Tensor> args = ins;
    args.insert(args.end(), outs.begin(), outs.end());
    module = codegen::LLVMModule::compile({lower(s, args, "candidate")}, target);
    kernel = module->get_function("candidate");
  } catch (const std::exception& e) {
    m.error = std::string("compile: ") + e.what();
    return m;
  }
  m.compile_s = seconds_since(start);

  auto it = references.find(task.key());
  if (it == references.end()) it = references.emplace(task.key(), make_reference(task)).first;
  const Reference& ref = it->second;
  std::vector<runtime::NDArray> outs;
  std::vector<const DLTensor*> args;
  for (const runtime::NDArray& a : ref.inputs) args.push_back(a.get());
  for (const ops::TensorType& t : out_types) {
    outs.push_back(runtime::NDArray::empty(t.shape, ops::to_dlpack(t.dtype), true));
    args.push_back(outs.back().get());
  }
  if (call(kernel, args) != 0) {
    m.error = std::string("runtime: ") + AnvilGetLastError();
    return m;
  }
  std::string differs = compare(ref.outputs, outs);
  if (!differs.empty()) {
    m.error = "wrong result: " + differs;
    return m;
  }
  for (int r = 0; r < options.repeats; ++r) {
    auto t0 = Clock::now();
    int calls = 0;
    do {
      if (call(kernel, args) != 0) {
        m.error = std::string("runtime: ") + AnvilGetLastError();
        m.costs_s.clear();
        return m;
      }
      ++calls;
    } while (seconds_since(t0) * 1e3 < options.min_repeat_ms);
    m.costs_s.push_back(seconds_since(t0) / calls);
  }
  return m;
}

void serve_measurements(std::istream& in, std::ostream& out, const KernelCall& call) {
  out << nlohmann::json{{"ok", true}, {"name", "measure"}, {"version", "1"}}.dump() << std::endl;
  for (std::string line; std::getline(in, line);) {
    nlohmann::json request = nlohmann::json::parse(line, nullptr, false);
    nlohmann::json answer;
    try {
      ANVIL_CHECK(request.is_object() && request.contains("op"),
                  "a request must be an object with an 'op'");
      const std::string op = request["op"];
      if (op == "quit") return;
      ANVIL_CHECK(op == "measure", "unknown op '", op, "'");
      Task task = Task::from_json(request.at("task"), request.at("target").get<std::string>());
      ops::Config config;
      for (const auto& [name, value] : request.at("config").items())
        config[name] = value.get<int64_t>();
      MeasureOptions options;
      options.repeats = request.value("repeats", options.repeats);
      options.min_repeat_ms = request.value("min_repeat_ms", options.min_repeat_ms);
      Measurement m = measure_here(task, config, options, call);
      answer = {{"ok", true}, {"costs_s", m.costs_s}, {"compile_s", m.compile_s}};
      if (m.error) answer["error"] = *m.error;
    } catch (const std::exception& e) {
      answer = {{"ok", false}, {"error", e.what()}};
    }
    out << answer.dump() << std::endl;
  }
}

Measurer::Measurer(std::vector<std::string> command) : command_(std::move(command)) {}

Measurement Measurer::measure(const Task& task, const ops::Config& config,
                              const MeasureOptions& options) {
  Measurement m;
  try {
    if (!worker_ || !worker_->alive()) worker_ = std::make_unique<Worker>("measurer", command_);
    nlohmann::json config_json = nlohmann::json::object();
    for (const auto& [name, value] : config) config_json[name] = value;
    nlohmann::json answer = worker_->request({{"op", "measure"},
                                              {"task", task.to_json()},
                                              {"target", task.target},
                                              {"config", config_json},
                                              {"repeats", options.repeats},
                                              {"min_repeat_ms", options.min_repeat_ms}},
                                             options.timeout_s);
    m.costs_s = answer.at("costs_s").get<std::vector<double>>();
    m.compile_s = answer.value("compile_s", 0.0);
    if (answer.contains("error")) m.error = answer["error"].get<std::string>();
  } catch (const std::exception& e) {
    // The worker crashed, hung (it is killed) or broke the protocol: a failed trial.
    const std::string what = e.what();
    const bool timeout = what.find("no answer within") != std::string::npos;
    m.costs_s.clear();
    m.error = (timeout ? "timeout: " : "crash: ") + what;
    worker_.reset();
  }
  return m;
}

}  // namespace anvil::autotune
