// Kernel plans (plan.h): the builder and the tuner see the same kernels. For every zoo model (and
// two small ONNX models) on the CPU and a GPU target, the tasks extract_tasks returns name,
// count and weigh exactly the tunable kernels plan_kernels plans (and are the tasks it returned
// before it used plans: tasks_before_plans is its old code); for the small models the kernels
// CompiledGraph::build compiles are those plans, and a configuration the records give a task is
// exactly the configuration its kernels carry.
#include "anvil/graph/plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "anvil/autotune/records.h"
#include "anvil/autotune/task.h"
#include "anvil/frontend/onnx/importer.h"
#include "anvil/graph/flops.h"
#include "anvil/models/models.h"
#include "frontend/onnx_model_builder.h"

namespace anvil::graph {
namespace {

using autotune::ModelTask;
using autotune::Task;

// The task a plan's kernel is, as the tuner keys it.
Task task_of(const KernelPlan& p, const Target& target) {
  return Task{p.op, p.inputs, p.attrs, target.str()};
}

// Every tunable plan is a kernel of exactly one task, which has its op, input types and attributes;
// a task's count and FLOPs are those of its kernels; no task names a kernel that is not planned
// or not tunable.
void expect_tasks_match_plans(const std::vector<KernelPlan>& plans,
                              const std::vector<ModelTask>& tasks, const Target& target,
                              const std::string& what) {
  std::map<std::string, const ModelTask*> task_of_kernel;
  for (const ModelTask& mt : tasks) {
    EXPECT_EQ(mt.count, static_cast<int>(mt.kernels.size())) << what << ": " << mt.task.str();
    for (const std::string& k : mt.kernels)
      EXPECT_TRUE(task_of_kernel.emplace(k, &mt).second) << what << ": kernel " << k << " twice";
  }
  std::map<const ModelTask*, std::pair<int, double>> seen;  // kernels, FLOPs
  for (const KernelPlan& p : plans) {
    auto it = task_of_kernel.find(p.name);
    if (!p.tunable) {
      EXPECT_TRUE(it == task_of_kernel.end())
          << what << ": untunable kernel " << p.name << " has a task";
      continue;
    }
    ASSERT_TRUE(it != task_of_kernel.end())
        << what << ": tunable kernel " << p.name << " has no task";
    const Task& t = it->second->task;
    EXPECT_EQ(t.op, p.op) << what << ": " << p.name;
    EXPECT_TRUE(t.inputs == p.inputs) << what << ": " << p.name;
    EXPECT_TRUE(t.attrs.values() == p.attrs.values()) << what << ": " << p.name;
    EXPECT_EQ(t.key(), task_of(p, target).key()) << what << ": " << p.name;
    seen[it->second].first += 1;
    seen[it->second].second += p.flops;
    task_of_kernel.erase(it);
  }
  for (const auto& [name, mt] : task_of_kernel)
    ADD_FAILURE() << what << ": task " << mt->task.str() << " names kernel " << name
                  << ", which is not planned";
  for (const ModelTask& mt : tasks) {
    EXPECT_EQ(seen[&mt].first, mt.count) << what << ": " << mt.task.str();
    EXPECT_DOUBLE_EQ(seen[&mt].second, mt.flops) << what << ": " << mt.task.str();
  }
}

// The tasks of `g` as extract_tasks found them before plan_kernels existed (its own anchor choice,
// naming and FLOP count over optimize() and fuse()): the oracle that plans keep them unchanged.
std::vector<ModelTask> tasks_before_plans(const Graph& g, const Target& target,
                                          const BuildOptions& options) {
  Graph gr = CompiledGraph::optimize(g, target, options);
  std::vector<FusedGroup> groups = fuse(gr, options.fuse);
  std::vector<ModelTask> tasks;
  std::map<std::string, size_t> index;
  double total = graph_flops(gr);
  for (size_t i = 0; i < groups.size(); ++i) {
    NodeId n = groups[i].anchor >= 0 ? groups[i].anchor : groups[i].nodes.back();
    const Node& node = gr.node(n);
    Task t{node.op, {}, node.attrs, target.str()};
    for (ValueId v : node.inputs) t.inputs.push_back(gr.value(v).type);
    if (t.space().empty()) continue;
    double flops = 0;
    for (NodeId m : groups[i].nodes) flops += node_flops(gr, m);
    auto [it, added] = index.emplace(t.key(), tasks.size());
    if (added) tasks.push_back({t, 0, 0, 0, {}});
    tasks[it->second].count += 1;
    tasks[it->second].flops += flops;
    tasks[it->second].kernels.push_back("fused_" + std::to_string(i) + "_" + node.op);
  }
  for (ModelTask& mt : tasks) mt.share = total > 0 ? mt.flops / total : 0;
  std::stable_sort(tasks.begin(), tasks.end(),
                   [](const ModelTask& a, const ModelTask& b) { return a.flops > b.flops; });
  return tasks;
}

void expect_same_tasks(const std::vector<ModelTask>& got, const std::vector<ModelTask>& want,
                       const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].task.key(), want[i].task.key()) << what << ": task " << i;
    EXPECT_EQ(got[i].count, want[i].count) << what << ": " << want[i].task.str();
    EXPECT_EQ(got[i].flops, want[i].flops) << what << ": " << want[i].task.str();
    EXPECT_EQ(got[i].share, want[i].share) << what << ": " << want[i].task.str();
    EXPECT_EQ(got[i].kernels, want[i].kernels) << what << ": " << want[i].task.str();
  }
}

std::vector<KernelPlan> plans_of(const Graph& g, const Target& target,
                                 const BuildOptions& options) {
  Graph opt = CompiledGraph::optimize(g, target, options);
  return plan_kernels(opt, fuse(opt, options.fuse), target, options);
}

// Records giving every task of `g` its space's last point (the farthest from the default).
std::vector<autotune::Record> last_points(const std::vector<ModelTask>& tasks) {
  std::vector<autotune::Record> rs;
  for (const ModelTask& t : tasks) {
    ops::ConfigSpace space = t.task.space();
    rs.push_back({t.task.to_json(),
                  t.task.target,
                  autotune::config_at(space, autotune::space_size(space) - 1),
                  {1e-6},
                  std::nullopt,
                  autotune::utc_now()});
  }
  return rs;
}

// Plans with configurations from records, and (with `build`) the compiled kernels: each kernel is
// its plan, and carries its task's recorded configuration exactly.
void check_configs(const Graph& g, const Target& target, bool build, const std::string& what) {
  std::vector<ModelTask> tasks = autotune::extract_tasks(g, target, {});
  ASSERT_FALSE(tasks.empty()) << what;
  std::vector<autotune::Record> records = last_points(tasks);
  autotune::RecordBook book(records);
  std::map<std::string, ops::Config> recorded;  // kernel name -> configuration
  for (size_t i = 0; i < tasks.size(); ++i)
    for (const std::string& k : tasks[i].kernels) recorded[k] = records[i].config;

  BuildOptions options;
  options.config_for = autotune::config_source(book, target);
  std::vector<KernelPlan> plans = plans_of(g, target, options);
  for (const KernelPlan& p : plans) {
    auto it = recorded.find(p.name);
    EXPECT_EQ(p.tuned, it != recorded.end()) << what << ": " << p.name;
    if (it != recorded.end()) {
      EXPECT_EQ(p.config, it->second) << what << ": " << p.name;
    }
  }
  if (!build) return;

  CompiledGraph cg = CompiledGraph::build(g, target, options);
  EXPECT_TRUE(cg.fallbacks().empty()) << what;
  ASSERT_EQ(cg.kernels().size(), plans.size()) << what << "\n" << cg.summary();
  for (size_t i = 0; i < plans.size(); ++i) {
    const CompiledGraph::Kernel& k = cg.kernels()[i];
    const KernelPlan& p = plans[i];
    EXPECT_EQ(k.name, p.name) << what;
    EXPECT_EQ(k.nodes, p.group.nodes) << what << ": " << k.name;
    EXPECT_EQ(k.args, p.args) << what << ": " << k.name;
    EXPECT_EQ(k.num_inputs, p.num_inputs) << what << ": " << k.name;
    EXPECT_DOUBLE_EQ(k.flops, p.flops) << what << ": " << k.name;
    auto it = recorded.find(k.name);
    EXPECT_EQ(k.tuned, it != recorded.end()) << what << ": " << k.name;
    if (it != recorded.end()) {
      EXPECT_EQ(k.config, it->second) << what << ": " << k.name;
    }
  }
  // The tuned plans are still the tasks' kernels.
  expect_tasks_match_plans(plans, tasks, target, what + " (with records)");
}

// A convolution block: conv + bias + relu, a residual add, max pooling, global pooling, a dense
// layer and softmax.
Graph conv_block() {
  testing::OnnxModel m(13);
  m.input("x", {1, 8, 16, 16});
  std::vector<float> w(16 * 8 * 9), w2(16 * 16 * 9), fc(10 * 16), b(16, 0.01f), fb(10, 0.02f);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.01f * static_cast<float>(i % 17) - 0.08f;
  for (size_t i = 0; i < w2.size(); ++i) w2[i] = 0.01f * static_cast<float>(i % 13) - 0.06f;
  for (size_t i = 0; i < fc.size(); ++i) fc[i] = 0.02f * static_cast<float>(i % 7) - 0.06f;
  m.init_floats("w", {16, 8, 3, 3}, w);
  m.init_floats("b", {16}, b);
  m.init_floats("w2", {16, 16, 3, 3}, w2);
  m.init_floats("fc", {10, 16}, fc);
  m.init_floats("fb", {10}, fb);
  testing::OnnxModel::attr(m.node("Conv", {"x", "w", "b"}, {"c1"}, "conv1"), "pads",
                           std::vector<int64_t>{1, 1, 1, 1});
  m.node("Relu", {"c1"}, {"r1"}, "relu1");
  testing::OnnxModel::attr(m.node("Conv", {"r1", "w2"}, {"c2"}, "conv2"), "pads",
                           std::vector<int64_t>{1, 1, 1, 1});
  m.node("Add", {"c2", "r1"}, {"s"}, "residual");
  auto& pool = m.node("MaxPool", {"s"}, {"p"}, "pool");
  testing::OnnxModel::attr(pool, "kernel_shape", std::vector<int64_t>{2, 2});
  testing::OnnxModel::attr(pool, "strides", std::vector<int64_t>{2, 2});
  m.node("GlobalAveragePool", {"p"}, {"g"}, "gap");
  m.node("Flatten", {"g"}, {"f"}, "flatten");
  testing::OnnxModel::attr(m.node("Gemm", {"f", "fc", "fb"}, {"y"}, "fc"), "transB", int64_t{1});
  m.node("Softmax", {"y"}, {"out"}, "softmax");
  m.output("out");
  return frontend::import_onnx_bytes(m.bytes(), {}, "conv_block");
}

// A two-layer perceptron from MatMul and Add (the dense anchor with a bias and relu epilogue).
Graph mlp() {
  testing::OnnxModel m(13);
  m.input("x", {4, 32});
  std::vector<float> w1(32 * 64), b1(64, 0.01f), w2(64 * 10), b2(10, -0.01f);
  for (size_t i = 0; i < w1.size(); ++i) w1[i] = 0.01f * static_cast<float>(i % 11) - 0.05f;
  for (size_t i = 0; i < w2.size(); ++i) w2[i] = 0.01f * static_cast<float>(i % 9) - 0.04f;
  m.init_floats("w1", {32, 64}, w1);
  m.init_floats("b1", {64}, b1);
  m.init_floats("w2", {64, 10}, w2);
  m.init_floats("b2", {10}, b2);
  m.node("MatMul", {"x", "w1"}, {"h"}, "fc1");
  m.node("Add", {"h", "b1"}, {"hb"}, "bias1");
  m.node("Relu", {"hb"}, {"r"}, "relu");
  m.node("MatMul", {"r", "w2"}, {"y"}, "fc2");
  m.node("Add", {"y", "b2"}, {"out"}, "bias2");
  m.output("out");
  return frontend::import_onnx_bytes(m.bytes(), {}, "mlp");
}

Target gpu() {
  return Target::parse("opencl");
}

// extract_tasks and plan_kernels agree on every zoo model, for the CPU and for a GPU target, with
// fusion on and off.
TEST(PlanKernels, TasksAreTheTunablePlansOfEveryZooModel) {
  for (const std::string& name : models::model_names()) {
    Graph g = models::build_model(name);
    for (const Target& target : {Target::host(), gpu()}) {
      for (bool fused : {true, false}) {
        BuildOptions options;
        options.fuse = fused;
        std::string what = name + " for '" + target.str() + "'" + (fused ? "" : " unfused");
        std::vector<KernelPlan> plans = plans_of(g, target, options);
        ASSERT_FALSE(plans.empty()) << what;
        for (size_t i = 0; i < plans.size(); ++i) {
          EXPECT_EQ(plans[i].name, "fused_" + std::to_string(i) + "_" + plans[i].op) << what;
          EXPECT_FALSE(plans[i].tuned) << what;
        }
        std::vector<ModelTask> tasks = autotune::extract_tasks(g, target, options);
        expect_tasks_match_plans(plans, tasks, target, what);
        expect_same_tasks(tasks, tasks_before_plans(g, target, options), what);
      }
    }
  }
}

// Recorded configurations reach the plans of every zoo model (no compilation).
TEST(PlanKernels, RecordedConfigurationsReachEveryZooModelsPlans) {
  for (const std::string& name : models::model_names()) {
    Graph g = models::build_model(name);
    for (const Target& target : {Target::host(), gpu()})
      check_configs(g, target, /*build=*/false, name + " for '" + target.str() + "'");
  }
}

// The compiled kernels are the plans, tuned exactly as recorded: the small models, compiled.
TEST(PlanKernels, BuiltKernelsAreThePlansOfSmallModels) {
  check_configs(models::build_model("dqn"), Target::host(), /*build=*/true, "dqn");
  check_configs(conv_block(), Target::host(), /*build=*/true, "conv_block");
  check_configs(mlp(), Target::host(), /*build=*/true, "mlp");
}

// The small ONNX models' tasks are their tunable plans, fused and unfused.
TEST(PlanKernels, TasksAreTheTunablePlansOfSmallOnnxModels) {
  for (const auto& [name, g] : {std::pair{"conv_block", conv_block()}, std::pair{"mlp", mlp()}}) {
    for (bool fused : {true, false}) {
      BuildOptions options;
      options.fuse = fused;
      std::string what = std::string(name) + (fused ? "" : " unfused");
      std::vector<ModelTask> tasks = autotune::extract_tasks(g, Target::host(), options);
      expect_tasks_match_plans(plans_of(g, Target::host(), options), tasks, Target::host(), what);
      expect_same_tasks(tasks, tasks_before_plans(g, Target::host(), options), what);
    }
  }
}

}  // namespace
}  // namespace anvil::graph
