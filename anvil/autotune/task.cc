#include "anvil/autotune/task.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "anvil/graph/flops.h"
#include "anvil/graph/plan.h"
#include "anvil/ops/nchwc.h"
#include "anvil/support/error.h"

namespace anvil::autotune {

namespace {

nlohmann::json attr_json(const ops::AttrValue& v) {
  return std::visit([](const auto& x) { return nlohmann::json(x); }, v);
}

}  // namespace

nlohmann::json Task::to_json() const {
  nlohmann::json shapes = nlohmann::json::array();
  for (const ops::TensorType& t : inputs) shapes.push_back(t.shape);
  nlohmann::json a = nlohmann::json::object();
  for (const auto& [name, value] : attrs.values()) a[name] = attr_json(value);
  std::ostringstream dtype;
  dtype << (inputs.empty() ? ir::DataType::Float32() : inputs[0].dtype);
  nlohmann::json j = {{"op", op}, {"shapes", shapes}, {"dtype", dtype.str()}, {"attrs", a}};
  if (!choice.empty()) j["choice"] = choice;
  return j;
}

Task Task::from_json(const nlohmann::json& j, const std::string& target) {
  ANVIL_CHECK(j.is_object() && j.contains("op") && j["op"].is_string(),
              "a task must be an object with a string 'op'");
  Task t;
  t.op = j["op"];
  t.target = target;
  ir::DataType dtype = ir::DataType::Float32();
  if (j.contains("dtype")) {
    ANVIL_CHECK(j["dtype"].is_string(), "task '", t.op, "': 'dtype' must be a string");
    dtype = ir::DataType::parse(j["dtype"].get<std::string>());
  }
  ANVIL_CHECK(j.contains("shapes") && j["shapes"].is_array(), "task '", t.op,
              "': 'shapes' must be an array of shapes");
  for (const nlohmann::json& s : j["shapes"]) {
    ANVIL_CHECK(s.is_array(), "task '", t.op, "': a shape must be an array, not ", s.dump());
    std::vector<int64_t> shape;
    for (const nlohmann::json& d : s) {
      ANVIL_CHECK(d.is_number_integer() && d.get<int64_t>() >= 0, "task '", t.op,
                  "': a dimension must be a non-negative integer, not ", d.dump());
      shape.push_back(d.get<int64_t>());
    }
    t.inputs.push_back({shape, dtype});
  }
  std::map<std::string, ops::AttrValue> attrs;
  if (j.contains("attrs")) {
    ANVIL_CHECK(j["attrs"].is_object(), "task '", t.op, "': 'attrs' must be an object");
    for (const auto& [name, v] : j["attrs"].items()) {
      if (v.is_number_integer()) {
        attrs[name] = v.get<int64_t>();
      } else if (v.is_number()) {
        attrs[name] = v.get<double>();
      } else if (v.is_string()) {
        attrs[name] = v.get<std::string>();
      } else if (v.is_array() && std::all_of(v.begin(), v.end(), [](const nlohmann::json& x) {
                   return x.is_number_integer();
                 })) {
        attrs[name] = v.get<std::vector<int64_t>>();
      } else if (v.is_array() && std::all_of(v.begin(), v.end(), [](const nlohmann::json& x) {
                   return x.is_number();
                 })) {
        attrs[name] = v.get<std::vector<double>>();
      } else {
        ANVIL_FAIL("task '", t.op, "': attribute '", name, "' has no attribute form: ", v.dump());
      }
    }
  }
  t.attrs = ops::Attrs(t.op, attrs);
  if (j.contains("choice")) {
    ANVIL_CHECK(j["choice"] == "algorithm", "task '", t.op,
                "': 'choice' must be \"algorithm\" when present, not ", j["choice"].dump());
    t.choice = "algorithm";
  }
  return t;
}

std::string task_key(const nlohmann::json& task, const std::string& target) {
  return task.dump() + " " + target;  // nlohmann::json objects keep their keys sorted
}

std::string Task::key() const {
  return task_key(to_json(), target);
}

std::string Task::str() const {
  std::string s = op;
  for (size_t i = 0; i < inputs.size(); ++i) {
    s += i ? " x [" : " [";
    for (size_t d = 0; d < inputs[i].shape.size(); ++d)
      s += (d ? ", " : "") + std::to_string(inputs[i].shape[d]);
    s += "]";
  }
  return choice.empty() ? s : s + " (" + choice + ")";
}

ops::ConfigSpace Task::space() const {
  if (choice == "algorithm")
    return op == "conv2d" ? ops::conv2d_algorithm_space(inputs, attrs, Target::parse(target))
                          : ops::ConfigSpace{};
  return ops::space_for(ops::lookup(op), inputs, attrs, Target::parse(target));
}

std::vector<ModelTask> extract_tasks(const graph::Graph& g, const Target& target,
                                     const graph::BuildOptions& options) {
  graph::Graph gr = graph::CompiledGraph::optimize(g, target, options);
  std::vector<graph::KernelPlan> plans =
      graph::plan_kernels(gr, graph::fuse(gr, options.fuse), target, options);
  std::vector<ModelTask> tasks;
  std::map<std::string, size_t> index;
  double total = graph::graph_flops(gr);
  for (const graph::KernelPlan& p : plans) {
    if (!p.tunable) continue;
    Task t{p.op, p.inputs, p.attrs, target.str()};
    auto [it, added] = index.emplace(t.key(), tasks.size());
    if (added) tasks.push_back({t, 0, 0, 0, {}});
    ModelTask& mt = tasks[it->second];
    mt.count += 1;
    mt.flops += p.flops;
    mt.kernels.push_back(p.name);
  }
  for (ModelTask& mt : tasks) mt.share = total > 0 ? mt.flops / total : 0;
  std::stable_sort(tasks.begin(), tasks.end(),
                   [](const ModelTask& a, const ModelTask& b) { return a.flops > b.flops; });
  return tasks;
}

std::vector<ModelTask> extract_algorithm_tasks(const graph::Graph& g, const Target& target,
                                               const graph::BuildOptions& options) {
  // The layout pass asks algorithm_for about exactly these convolutions: listen in on it.
  std::vector<ModelTask> tasks;
  std::map<std::string, size_t> index;
  graph::BuildOptions listen = options;
  listen.print_after.clear();
  listen.algorithm_for = [&](const std::string& op, const std::vector<ops::TensorType>& inputs,
                             const ops::Attrs& attrs) {
    Task t{op, inputs, attrs, target.str(), "algorithm"};
    auto [it, added] = index.emplace(t.key(), tasks.size());
    if (added) tasks.push_back({t, 0, 0, 0, {}});
    ModelTask& mt = tasks[it->second];
    mt.count += 1;
    const ops::OpDef& def = ops::lookup(op);
    mt.flops += def.flops(inputs, def.infer(inputs, attrs), attrs);  // the direct convolution's
    return options.algorithm_for ? options.algorithm_for(op, inputs, attrs) : std::nullopt;
  };
  const double total = graph::graph_flops(graph::CompiledGraph::optimize(g, target, listen));
  for (ModelTask& mt : tasks) mt.share = total > 0 ? mt.flops / total : 0;
  std::stable_sort(tasks.begin(), tasks.end(),
                   [](const ModelTask& a, const ModelTask& b) { return a.flops > b.flops; });
  return tasks;
}

int64_t space_size(const ops::ConfigSpace& space) {
  int64_t n = 1;
  for (const ops::Knob& k : space) n *= static_cast<int64_t>(k.values.size());
  return n;
}

ops::Config config_at(const ops::ConfigSpace& space, int64_t index) {
  ANVIL_CHECK(index >= 0 && index < space_size(space), "config_at: index ", index,
              " is outside the space of ", space_size(space), " points");
  ops::Config c;
  for (const ops::Knob& k : space) {
    const int64_t n = static_cast<int64_t>(k.values.size());
    c[k.name] = k.values[static_cast<size_t>(index % n)];
    index /= n;
  }
  return c;
}

int64_t index_of(const ops::ConfigSpace& space, const ops::Config& config) {
  for (const auto& entry : config)
    if (std::none_of(space.begin(), space.end(),
                     [&](const ops::Knob& k) { return k.name == entry.first; }))
      return -1;
  int64_t index = 0, stride = 1;
  for (const ops::Knob& k : space) {
    auto it = config.find(k.name);
    size_t pos = 0;
    if (it != config.end()) {
      auto v = std::find(k.values.begin(), k.values.end(), it->second);
      if (v == k.values.end()) return -1;
      pos = static_cast<size_t>(v - k.values.begin());
    }
    index += static_cast<int64_t>(pos) * stride;
    stride *= static_cast<int64_t>(k.values.size());
  }
  return index;
}

namespace {

// The candidate's schedule and its arguments (inputs, then outputs).
std::pair<te::Schedule, std::vector<te::Tensor>> schedule_candidate(
    const Task& task, const Target& target, const ops::Config& config,
    std::vector<ops::TensorType>* out_types) {
  const ops::OpDef& def = ops::lookup(task.op);
  ANVIL_CHECK(def.compute, "operator '", task.op, "' has no compute");
  std::vector<ops::TensorType> types = def.infer(task.inputs, task.attrs);
  if (out_types) *out_types = types;
  std::vector<te::Tensor> ins;
  for (size_t i = 0; i < task.inputs.size(); ++i)
    ins.push_back(te::placeholder(ops::to_exprs(task.inputs[i].shape), task.inputs[i].dtype,
                                  "in" + std::to_string(i)));
  std::vector<te::Tensor> outs = def.compute(ins, task.attrs);
  te::Schedule s(outs);
  ops::schedule_for(def, s, outs, task.attrs, target, config);
  std::vector<te::Tensor> args = ins;
  args.insert(args.end(), outs.begin(), outs.end());
  return {s, args};
}

}  // namespace

ir::LoweredFunc lower_candidate(const Task& task, const Target& target, const ops::Config& config,
                                std::vector<ops::TensorType>* out_types,
                                const LowerOptions& options) {
  auto [s, args] = schedule_candidate(task, target, config, out_types);
  return lower(s, args, "candidate", options);
}

ir::DeviceFunc lower_candidate_gpu(const Task& task, const Target& target,
                                   const ops::Config& config,
                                   std::vector<ops::TensorType>* out_types) {
  auto [s, args] = schedule_candidate(task, target, config, out_types);
  return lower_gpu(s, args, "candidate", target);
}

}  // namespace anvil::autotune
