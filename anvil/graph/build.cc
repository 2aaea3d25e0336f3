// Graph compilation and execution (build.h).
//
// plan_kernels (plan.h) decides each kernel: its name, scheduling node, FLOPs, arguments and
// configuration. Each fused group then becomes one tensor-expression function: a placeholder per
// group input (constants included: they are passed from the graph's constants at run time), every
// node's compute in order, and the sink's outputs as the function's outputs. schedule_group
// schedules and lowers it; the target kind's backend (backend.h) compiles every kernel.
#include "anvil/graph/build.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "anvil/codegen/llvm/codegen_llvm.h"
#include "anvil/graph/control_flow.h"
#include "anvil/graph/plan.h"
#include "anvil/ir/printer.h"
#include "anvil/lower/lower.h"
#include "anvil/ops/int8_dot.h"
#include "anvil/ops/schedule_gpu.h"
#include "anvil/runtime/graph_executor.h"
#include "anvil/support/error.h"

namespace anvil::graph {

namespace {

std::string node_list(const Graph& g, const std::vector<NodeId>& nodes) {
  std::string s;
  for (size_t i = 0; i < nodes.size(); ++i)
    s += (i ? ", " : "") + ("'" + g.node(nodes[i]).name + "' (" + g.node(nodes[i]).op + ")");
  return s;
}

// A copy of `t` as a new compute stage (for outputs that are placeholders or repeated).
te::Tensor copy_tensor(const te::Tensor& t, const std::string& name) {
  return te::compute(
      t->shape,
      [&](const std::vector<ir::Var>& i) {
        std::vector<ir::Expr> e(i.begin(), i.end());
        return t(e);
      },
      name);
}

// What a constant of 8-bit integers holds, for kernels whose instructions need to know (AVX2's
// int8 dot product, te/tensor_intrin.h); nothing for other values.
std::optional<te::ValueRange> constant_values(const Value& v) {
  if (v.kind != ValueKind::kConstant || v.data.numel() == 0) return std::nullopt;
  auto range = [&](const auto* data) {
    auto [lo, hi] = std::minmax_element(data, data + v.data.numel());
    return te::ValueRange{*lo, *hi};
  };
  if (v.type.dtype == ir::DataType::Int(8)) return range(v.data.data_as<int8_t>());
  if (v.type.dtype == ir::DataType::UInt(8)) return range(v.data.data_as<uint8_t>());
  return std::nullopt;
}

// The tensor-expression function of one group.
struct GroupFunc {
  std::vector<te::Tensor> inputs, outputs;
  std::set<const te::TensorNode*> anchor_stages;  // stages the anchor's compute created
  std::vector<te::Tensor> anchor_outputs;         // the anchor's own outputs
};

GroupFunc group_function(const Graph& g, const FusedGroup& group, size_t index) {
  GroupFunc f;
  std::map<ValueId, te::Tensor> tensors;
  for (size_t k = 0; k < group.inputs.size(); ++k) {
    const Value& v = g.value(group.inputs[k]);
    te::Tensor p = te::placeholder(ops::to_exprs(v.type.shape), v.type.dtype,
                                   "g" + std::to_string(index) + "_in" + std::to_string(k),
                                   constant_values(v));
    tensors[group.inputs[k]] = p;
    f.inputs.push_back(p);
  }
  for (NodeId n : group.nodes) {
    const Node& node = g.node(n);
    std::vector<te::Tensor> ins;
    for (ValueId v : node.inputs) {
      auto it = tensors.find(v);
      ANVIL_ICHECK(it != tensors.end(), "build: node '", node.name, "' reads '", g.value(v).name,
                   "', which is neither a group input nor computed earlier in its group");
      ins.push_back(it->second);
    }
    const ops::OpDef& def = ops::lookup(node.op);
    ANVIL_CHECK(def.compute, "build: node '", node.name, "': operator '", node.op,
                "' has no compute");
    std::vector<te::Tensor> outs;
    try {
      outs = def.compute(ins, node.attrs);
    } catch (const InternalError&) {
      throw;
    } catch (const Error& e) {
      ANVIL_FAIL("build: node '", node.name, "' (", node.op, "): ", e.what());
    }
    ANVIL_ICHECK(outs.size() == node.outputs.size(), "build: node '", node.name, "' (", node.op,
                 ") computes ", outs.size(), " outputs, its shape rule gives ",
                 node.outputs.size());
    for (size_t k = 0; k < outs.size(); ++k) {
      const Value& v = g.value(node.outputs[k]);
      ANVIL_ICHECK(ops::shape_of(outs[k]) == v.type.shape && outs[k]->dtype == v.type.dtype,
                   "build: node '", node.name, "' (", node.op, ") output '", v.name, "' computes ",
                   ops::list_str(ops::shape_of(outs[k])), ", its type is ", ops::to_string(v.type));
      tensors[node.outputs[k]] = outs[k];
    }
    if (n == group.anchor) {
      f.anchor_outputs = outs;
      std::set<const te::TensorNode*> before;
      for (const te::Tensor& t : te::topological_order(ins)) before.insert(t.get());
      for (const te::Tensor& t : te::topological_order(outs))
        if (!before.count(t.get())) f.anchor_stages.insert(t.get());
    }
  }
  const Node& sink = g.node(group.nodes.back());
  for (ValueId v : group.outputs)
    ANVIL_ICHECK(std::find(sink.outputs.begin(), sink.outputs.end(), v) != sink.outputs.end(),
                 "build: group output '", g.value(v).name, "' is not computed by the group's last ",
                 "node '", sink.name, "'");
  std::set<const te::TensorNode*> seen;
  for (const te::Tensor& p : f.inputs) seen.insert(p.get());
  for (size_t k = 0; k < sink.outputs.size(); ++k) {
    te::Tensor t = tensors.at(sink.outputs[k]);
    if (!t.is_compute() || seen.count(t.get()))
      t = copy_tensor(t, "g" + std::to_string(index) + "_out" + std::to_string(k));
    seen.insert(t.get());
    f.outputs.push_back(t);
  }
  return f;
}

// Inlines every compute stage that is not an output, not a reduction and (when `keep` is given)
// not one of `keep`.
void inline_stages(te::Schedule& s, const std::vector<te::Tensor>& outs,
                   const std::set<const te::TensorNode*>& keep) {
  std::set<const te::TensorNode*> out_set;
  for (const te::Tensor& t : outs) out_set.insert(t.get());
  for (const te::Tensor& t : te::topological_order(outs)) {
    if (!t.is_compute() || out_set.count(t.get()) || keep.count(t.get())) continue;
    if (!t->reduce_axis.empty()) continue;
    s[t].compute_inline();
  }
}

// A unique, readable name per constant (value names are unique in a well-formed graph, but the
// artifact must not depend on it).
std::string param_name(const Graph& g, ValueId v, std::set<std::string>& taken) {
  std::string name = g.value(v).name.empty() ? "const" : g.value(v).name;
  if (!taken.insert(name).second) {
    name += "#" + std::to_string(v);
    taken.insert(name);
  }
  return name;
}

// How schedule_group scheduled a kernel.
struct ScheduledGroup {
  std::string schedule;                             // Kernel::schedule
  std::optional<CompiledGraph::Fallback> fallback;  // set when it did not get its op's schedule
  bool config_applied = true;  // false: the plan's configuration was not the schedule's
};

// Runs `schedule` on a fresh schedule of `f` and lowers it with `lower_fn` into `out`. Returns
// the error of a schedule or lowering that refuses the group (an anvil::Error), "" on success. An
// InternalError, or any exception that is not an anvil::Error, is a bug, never a refusal: it
// propagates.
template <typename ScheduleFn, typename LowerFn, typename Out>
std::string try_schedule(const GroupFunc& f, ScheduleFn&& schedule, LowerFn&& lower_fn,
                         std::vector<Out>& out) {
  try {
    te::Schedule s(f.outputs);
    schedule(s);
    out.push_back(lower_fn(s));
    return "";
  } catch (const InternalError&) {
    throw;
  } catch (const Error& e) {
    std::string why = e.what();
    return why.empty() ? "(no message)" : why;
  }
}

// A CPU kernel's schedule, in order of preference until one lowers:
//   1. the anchor's schedule_x86 on the group outputs (it inlines the epilogue stages itself); for
//      a purely injective group, every non-output stage inlined and the sink's schedule_x86;
//   2. for an anchor with an epilogue whose schedule wants to be given its own output (dense
//      finds its reduction among its output's direct inputs): the anchor's schedule on the
//      anchor's output (an intermediate of the kernel), the epilogue stages inlined into the group
//      output and that scheduled by the sink's schedule. By design, not a fallback;
//   3. the default loop nests (correct, unoptimized): a fallback.
ScheduledGroup schedule_cpu(const Graph& g, const KernelPlan& p, const GroupFunc& f,
                            const Target& target, std::vector<ir::LoweredFunc>& funcs) {
  const ops::OpDef& def = ops::lookup(p.op);
  const Node& sink = g.node(p.group.nodes.back());
  std::vector<te::Tensor> args = f.inputs;
  args.insert(args.end(), f.outputs.begin(), f.outputs.end());
  auto lower_fn = [&](te::Schedule& s) { return lower(s, args, p.name); };
  std::string why = try_schedule(
      f,
      [&](te::Schedule& s) {
        if (p.group.anchor < 0) inline_stages(s, f.outputs, {});
        ops::schedule_for(def, s, f.outputs, p.attrs, target, p.config);
      },
      lower_fn, funcs);
  if (why.empty()) return {p.op + " schedule", std::nullopt};
  if (p.group.anchor >= 0 && p.group.anchor != p.group.nodes.back()) {
    std::string own = try_schedule(
        f,
        [&](te::Schedule& s) {
          inline_stages(s, f.outputs, f.anchor_stages);
          ops::schedule_for(def, s, f.anchor_outputs, p.attrs, target, p.config);
          ops::schedule_for(ops::lookup(sink.op), s, f.outputs, sink.attrs, target, {});
        },
        lower_fn, funcs);
    if (own.empty())
      return {p.op + " schedule on its own output, epilogue by " + sink.op, std::nullopt};
    why += "; on its own output: " + own;
  }
  std::string error = try_schedule(
      f, [](te::Schedule&) {}, lower_fn, funcs);
  if (!error.empty())
    ANVIL_FAIL("build: kernel ", p.name, " (nodes ", node_list(g, p.group.nodes),
               ") cannot be lowered: ", error);
  return {"default loops (" + why + ")",
          CompiledGraph::Fallback{p.name, p.op, why, "default loops"}, false};
}

// A GPU kernel's schedule: the anchor op's (schedule_for: its schedule_gpu with the plan's
// configuration, or schedule_gpu_default, which an op without a GPU schedule of its own tunes).
// When an op's own schedule refuses the group, the default GPU schedule without the plan's
// configuration (the op's knobs are not the default schedule's): a fallback. An op that
// declines some groups by design (grouped convolutions that are not depthwise) calls
// schedule_gpu_default itself instead of refusing, so that only a failure is reported.
ScheduledGroup schedule_gpu(const Graph& g, const KernelPlan& p, const GroupFunc& f,
                            const Target& target, std::vector<ir::DeviceFunc>& funcs) {
  const ops::OpDef& def = ops::lookup(p.op);
  std::vector<te::Tensor> args = f.inputs;
  args.insert(args.end(), f.outputs.begin(), f.outputs.end());
  auto lower_fn = [&](te::Schedule& s) { return lower_gpu(s, args, p.name, target); };
  auto cannot = [&](const std::string& why) {
    ANVIL_FAIL("build: kernel ", p.name, " (nodes ", node_list(g, p.group.nodes),
               ") cannot be compiled for '", target.str(), "': ", why);
  };
  std::string why = try_schedule(
      f, [&](te::Schedule& s) { ops::schedule_for(def, s, f.outputs, p.attrs, target, p.config); },
      lower_fn, funcs);
  if (why.empty())
    return {def.schedule_gpu ? p.op + " GPU schedule" : "default GPU schedule", std::nullopt};
  if (!def.schedule_gpu) cannot(why);
  std::string error = try_schedule(
      f, [&](te::Schedule& s) { ops::schedule_gpu_default(s, f.outputs, target, {}); }, lower_fn,
      funcs);
  if (!error.empty()) cannot(error);
  return {"default GPU schedule (" + why + ")",
          CompiledGraph::Fallback{p.name, p.op, why, "the default GPU schedule"}, false};
}

// Schedules plan `p`'s group function `f` and lowers it into `out` (its funcs for a CPU target,
// its device_funcs for a GPU one).
ScheduledGroup schedule_group(const Graph& g, const KernelPlan& p, const GroupFunc& f,
                              const Target& target, LoweredKernels& out) {
  return target.is_gpu() ? schedule_gpu(g, p, f, target, out.device_funcs)
                         : schedule_cpu(g, p, f, target, out.funcs);
}

}  // namespace

// The executor's program: a slot per value the kernels touch (graph inputs first), each stored
// where the plan puts it; an unplanned intermediate is released after the last kernel touching
// it, graph outputs are kept.
runtime::GraphProgram CompiledGraph::make_program(const CompiledGraph& cg,
                                                  std::set<std::string>& taken) {
  const Graph& g = cg.graph_;
  runtime::GraphProgram p;
  p.target = cg.target_.str();
  if (!cg.target_.is_gpu()) {
    codegen::TargetCpu cpu = codegen::target_cpu(cg.target_);
    p.cpu = cpu.name;
    p.cpu_features = std::move(cpu.features);
  }
  p.arena_bytes = cg.plan_.planned_bytes;
  std::vector<int32_t> slot(g.num_values(), -1);
  auto slot_of = [&](ValueId v) {
    if (slot[v] >= 0) return slot[v];
    const Value& val = g.value(v);
    runtime::GraphProgram::Slot s;
    s.name = val.name;
    s.shape = val.type.shape;
    s.dtype = ops::to_dlpack(val.type.dtype);
    if (val.kind == ValueKind::kInput) {
      s.storage = runtime::GraphProgram::Storage::kInput;
      auto it = std::find(g.inputs().begin(), g.inputs().end(), v);
      s.offset = it - g.inputs().begin();
    } else if (val.kind == ValueKind::kConstant) {
      s.storage = runtime::GraphProgram::Storage::kParam;
      s.offset = static_cast<int64_t>(p.params.size());
      p.params.push_back(val.data);
      p.param_names.push_back(param_name(g, v, taken));
    } else if (static_cast<size_t>(v) < cg.plan_.offset.size() && cg.plan_.offset[v] >= 0) {
      s.storage = runtime::GraphProgram::Storage::kArena;
      s.offset = cg.plan_.offset[v];
    }
    slot[v] = static_cast<int32_t>(p.slots.size());
    p.slots.push_back(std::move(s));
    return slot[v];
  };
  for (ValueId v : g.inputs()) p.inputs.push_back(slot_of(v));
  std::vector<int64_t> last(g.num_values(), -1);
  auto add_call = [&](runtime::GraphProgram::Call c, const std::vector<ValueId>& args) {
    for (ValueId v : args) {
      c.args.push_back(slot_of(v));
      last[v] = static_cast<int64_t>(p.calls.size());
    }
    p.calls.push_back(std::move(c));
  };
  auto add_step = [&](const Step& step) {
    const Node& n = g.node(step.node);
    runtime::GraphProgram::Call c;
    c.kernel = n.op + " '" + n.name + "'";
    c.nodes = node_list(g, {step.node});
    c.control = control_step(n);
    c.num_inputs = static_cast<int32_t>(n.inputs.size());
    for (size_t b : step.bodies) {
      c.bodies.push_back(static_cast<int32_t>(p.subprograms.size()));
      p.subprograms.push_back(make_program(cg.bodies_[b], taken));
    }
    std::vector<ValueId> args = n.inputs;
    args.insert(args.end(), n.outputs.begin(), n.outputs.end());
    add_call(std::move(c), args);
  };
  size_t next_step = 0;
  for (size_t i = 0; i <= cg.kernels_.size(); ++i) {
    while (next_step < cg.steps_.size() && cg.steps_[next_step].position == i)
      add_step(cg.steps_[next_step++]);
    if (i == cg.kernels_.size()) break;
    const Kernel& k = cg.kernels_[i];
    runtime::GraphProgram::Call c;
    c.kernel = k.name;
    c.nodes = node_list(g, k.nodes);
    c.flops = k.flops;
    add_call(std::move(c), k.args);
  }
  for (ValueId v : g.outputs()) {
    p.outputs.push_back(slot_of(v));
    last[v] = -1;
  }
  p.output_names = g.output_names();
  for (size_t v = 0; v < g.num_values(); ++v)
    if (last[v] >= 0 && p.slots[slot[v]].storage == runtime::GraphProgram::Storage::kOwned)
      p.calls[static_cast<size_t>(last[v])].release.push_back(slot[v]);
  return p;
}

Graph CompiledGraph::optimize(const Graph& g, const Target& target, const BuildOptions& options) {
  std::vector<Pass> passes = {{"widen_float16", widen_float16},
                              {"simplify_inference", simplify_inference},
                              {"fold_constants", fold_constants}};
  // The blocked layouts and packed weights are the CPU kernels'; GPU schedules take ONNX's own
  // layout, and alter_layout only moves 3x3 convolutions to Winograd and recurrent ops to their
  // GPU form there.
  if (options.alter_layout) {
    if (target.kind == Target::Kind::kLLVM || target.kind == Target::Kind::kC)
      passes.push_back(
          {"cut_conv_bands", [&target](const Graph& x) { return cut_conv_bands(x, target); }});
    passes.push_back({"alter_layout", [&target, &options](const Graph& x) {
                        return alter_layout(x, target, options.algorithm_for);
                      }});
    passes.push_back({"fold_constants", fold_constants});
  }
  passes.push_back({"eliminate_common_subexpressions", eliminate_common_subexpressions});
  passes.push_back({"eliminate_dead_code", eliminate_dead_code});
  return run_passes(g, passes, options.print_after);
}

void CompiledGraph::compile(CompiledGraph& cg, const Graph& g, const BuildOptions& options,
                            const std::string& prefix, int& next_body, LoweredKernels& lowered) {
  const Target& target = cg.target_;
  cg.graph_ = optimize(g, target, options);
  const Graph& gr = cg.graph_;
  std::vector<FusedGroup> groups = fuse(gr, options.fuse);
  cg.plan_ = plan_memory(gr, groups);
  // Control-flow nodes are steps of the executor between the kernels (plan_kernels skips them).
  size_t kernels_before = 0;
  for (const FusedGroup& group : groups) {
    const Node& n = gr.node(group.nodes.back());
    if (!is_control_flow(n.op)) {
      ++kernels_before;
      continue;
    }
    ANVIL_CHECK(!target.is_gpu(), "build: node '", n.name, "' (", n.op,
                "): run-time control flow is compiled for CPU targets only, not '", target.str(),
                "'");
    cg.steps_.push_back({group.nodes.back(), kernels_before, {}});
  }
  std::vector<KernelPlan> plans = plan_kernels(gr, groups, target, options);
  for (size_t i = 0; i < plans.size(); ++i) {
    KernelPlan& p = plans[i];
    p.name = prefix + p.name;
    GroupFunc f = group_function(gr, p.group, i);
    ScheduledGroup r = schedule_group(gr, p, f, target, lowered);
    if (r.fallback) {
      if (options.strict)
        ANVIL_FAIL("build: kernel ", p.name, " (", p.op, "; nodes ", node_list(gr, p.group.nodes),
                   "): schedule failed, and a strict build does not fall back to ",
                   r.fallback->used, ": ", r.fallback->reason);
      cg.fallbacks_.push_back(*r.fallback);
    }
    Kernel k;
    k.name = p.name;
    k.nodes = p.group.nodes;
    k.args = p.args;
    k.num_inputs = p.num_inputs;
    k.schedule = r.schedule;
    k.flops = p.flops;
    k.tuned = p.tuned && r.config_applied;
    k.config = p.config;
    cg.kernels_.push_back(std::move(k));
  }
  for (Step& step : cg.steps_) {
    const Node& n = gr.node(step.node);
    for (const std::shared_ptr<const Graph>& body : n.bodies) {
      CompiledGraph b;
      b.target_ = target;
      std::string name = "b" + std::to_string(next_body++) + "_";
      try {
        compile(b, *body, options, name, next_body, lowered);
      } catch (const InternalError&) {
        throw;
      } catch (const Error& e) {
        ANVIL_FAIL("build: body ", step.bodies.size(), " of node '", n.name, "' (", n.op,
                   "): ", e.what());
      }
      cg.fallbacks_.insert(cg.fallbacks_.end(), b.fallbacks_.begin(), b.fallbacks_.end());
      step.bodies.push_back(cg.bodies_.size());
      cg.bodies_.push_back(std::move(b));
    }
  }
}

CompiledGraph CompiledGraph::build(const Graph& g, const Target& target,
                                   const BuildOptions& options) {
  CompiledGraph cg;
  cg.target_ = target;
  int next_body = 0;
  compile(cg, g, options, "", next_body, cg.lowered_);
  cg.backend_ = Backend::compile(target, cg.lowered_);
  std::set<std::string> taken;
  cg.program_ = make_program(cg, taken);
  runtime::GraphProgram program = cg.program_;
  // A GPU target's kernels are saved without a device; without one, run() says why.
  if (!cg.backend_->load(program, &cg.no_device_)) return cg;
  cg.model_ = runtime::Model(std::move(program));
  return cg;
}

std::vector<runtime::NDArray> CompiledGraph::run(
    const std::vector<runtime::NDArray>& inputs) const {
  check_inputs(graph_, inputs, "run");
  ANVIL_CHECK(no_device_.empty(), "run: the kernels were compiled for '", target_.str(),
              "', whose device is not available here: ", no_device_);
  try {
    return model_.run(inputs);
  } catch (const std::runtime_error& e) {
    ANVIL_FAIL("run: ", e.what());
  }
}

std::string CompiledGraph::Fallback::str() const {
  return "kernel " + kernel + " (" + op + "): schedule failed, using " + used + ": " + reason;
}

std::string CompiledGraph::summary() const {
  std::ostringstream os;
  os << kernels_.size() << " kernels";
  if (steps_.empty())
    os << "\n";
  else
    os << ", " << steps_.size() << " control-flow steps\n";
  // The steps before kernel `position`, each with its bodies' summaries indented under it.
  size_t next_step = 0;
  auto print_steps = [&](size_t position) {
    for (; next_step < steps_.size() && steps_[next_step].position == position; ++next_step) {
      const Step& step = steps_[next_step];
      const Node& n = graph_.node(step.node);
      os << "  " << n.op << " '" << n.name << "'\n";
      for (size_t b = 0; b < step.bodies.size(); ++b) {
        std::istringstream body(bodies_[step.bodies[b]].summary());
        std::string role = n.op != "if" ? "body" : b == 0 ? "then" : "else";
        bool first = true;
        for (std::string line; std::getline(body, line); first = false)
          os << (first ? "    " + role + ": " : "      ") << line << "\n";
      }
    }
  };
  for (size_t i = 0; i < kernels_.size(); ++i) {
    print_steps(i);
    const Kernel& k = kernels_[i];
    os << "  " << k.name << ": ";
    for (size_t i = 0; i < k.nodes.size(); ++i) os << (i ? ", " : "") << graph_.node(k.nodes[i]).op;
    os << "  [" << k.schedule;
    if (k.tuned) {
      os << ", tuned:";
      for (const auto& [name, value] : k.config) os << " " << name << "=" << value;
    }
    os << "]";
    if (k.flops > 0) {
      char flops[32];
      std::snprintf(flops, sizeof flops, "%.3f", k.flops / 1e6);
      os << "  " << flops << " MFLOP";
    }
    os << "\n";
  }
  print_steps(kernels_.size());
  // A quantized model: its products on the int8 kernels, and every convolution or product left in
  // float (groups the int8 blocks do not take, a weight with a zero point, an activation of two
  // scales); and, on a CPU without VNNI, what its products cost.
  std::vector<std::string> int8, left_float;
  for (const Node& n : graph_.nodes()) {
    const std::string& op = n.op;
    if (op == "dense_int8" || op == "conv2d_int8" || op == "depthwise_conv2d_int8") {
      int8.push_back(n.name);
    } else if ((op.rfind("conv", 0) == 0 || op.rfind("depthwise", 0) == 0 ||
                op.rfind("dense", 0) == 0 || op == "matmul" || op == "batch_matmul") &&
               op.find("pack") == std::string::npos && op.find("transform") == std::string::npos) {
      left_float.push_back(op + " '" + n.name + "'");
    }
  }
  if (!int8.empty()) {
    os << "int8: " << int8.size() << " products; left in float: ";
    if (left_float.empty()) os << "none";
    for (size_t i = 0; i < left_float.size(); ++i) os << (i ? ", " : "") << left_float[i];
    os << "\n";
    if (target_.kind == Target::Kind::kLLVM && ops::int8_exact_form_is_slow(target_)) {
      os << "int8: this CPU has no VNNI: full-range int8 weights take the exact form, slower than "
            "float32 on AVX2; 7-bit weights (anvil quantize --reduce-range) take vpmaddubsw\n";
    }
  }
  os << "memory: " << plan_.planned_bytes << " bytes planned (arena), " << plan_.unplanned_bytes
     << " bytes unplanned\n";
  if (backend_) os << backend_->device_resources();
  return os.str();
}

namespace {

std::string kernel_names(const std::vector<CompiledGraph::Kernel>& kernels) {
  std::string s;
  for (const CompiledGraph::Kernel& k : kernels) s += (s.empty() ? "" : ", ") + k.name;
  return s;
}

}  // namespace

std::string CompiledGraph::lowered_ir(const std::string& kernel) const {
  for (size_t i = 0; i < kernels_.size(); ++i) {
    if (kernels_[i].name != kernel) continue;
    std::ostringstream os;
    if (target_.is_gpu()) {
      const ir::DeviceFunc& f = lowered_.device_funcs.at(i);
      os << "// " << f.name << ": " << node_list(graph_, kernels_[i].nodes) << "\n";
      os << "// schedule: " << kernels_[i].schedule << "\n";
      for (const ir::DeviceKernel& k : f.kernels) {
        os << "// " << k.name << ": grid (" << k.grid[0] << ", " << k.grid[1] << ", " << k.grid[2]
           << "), block (" << k.block[0] << ", " << k.block[1] << ", " << k.block[2] << ")\n"
           << k.body << "\n";
      }
      return os.str();
    }
    const ir::LoweredFunc& f = lowered_.funcs.at(i);
    os << "// " << f.name << ": " << node_list(graph_, kernels_[i].nodes) << "\n";
    os << "// schedule: " << kernels_[i].schedule << "\n";
    os << f.name << "(";
    for (size_t a = 0; a < f.args.size(); ++a) {
      os << (a ? ", " : "") << f.args[a]->name << ": " << f.args[a]->dtype.to_string() << "[";
      for (size_t d = 0; d < f.args[a]->shape.size(); ++d)
        os << (d ? ", " : "") << f.args[a]->shape[d];
      os << "]";
    }
    os << ") {\n" << f.body << "}\n";
    return os.str();
  }
  ANVIL_FAIL("no kernel named '", kernel, "' (the kernels: ", kernel_names(kernels_), ")");
}

std::string CompiledGraph::llvm_ir(const std::string& kernel) const {
  const codegen::LLVMModule* module = backend_ ? backend_->llvm_module() : nullptr;
  ANVIL_CHECK(module, "LLVM IR: the kernels were compiled for target '", target_.str(),
              "', which has no LLVM module (its source is C: c_source)");
  if (!kernel.empty()) {
    bool known = std::any_of(kernels_.begin(), kernels_.end(),
                             [&](const Kernel& k) { return k.name == kernel; });
    ANVIL_CHECK(known, "no kernel named '", kernel, "' (the kernels: ", kernel_names(kernels_),
                ")");
  }
  return module->llvm_ir(kernel);
}

std::string CompiledGraph::assembly() const {
  const codegen::LLVMModule* module = backend_ ? backend_->llvm_module() : nullptr;
  ANVIL_CHECK(module, "assembly: the kernels were compiled for target '", target_.str(),
              "', which has no LLVM module (its source is C: c_source)");
  return module->assembly();
}

std::string CompiledGraph::c_source() const {
  ANVIL_CHECK(backend_, "c_source: nothing was compiled");
  return backend_->source(lowered_);
}

}  // namespace anvil::graph
