// Graph compilation and execution (build.h).
//
// Each fused group becomes one tensor-expression function: a placeholder per group input
// (constants included: they are passed from the graph's constants at run time), every node's
// compute in order, and the sink's outputs as the function's outputs. The schedule is tried in
// order of preference until one lowers:
//   1. the anchor's schedule_x86 on the group outputs (it inlines the epilogue stages itself); for
//      a purely injective group, every non-output stage inlined and the sink's schedule_x86;
//   2. for an anchor with an epilogue whose schedule wants to be given its own output (dense
//      finds its reduction among its output's direct inputs): the anchor's schedule on the
//      anchor's output (an intermediate of the kernel), the epilogue stages inlined into the group
//      output and that scheduled by the sink's schedule;
//   3. the default loop nests (correct, unoptimized), recorded in the summary.
#include "anvil/graph/build.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <sstream>

#include "anvil/codegen/llvm/codegen_llvm.h"
#include "anvil/lower/lower.h"
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
                                   "g" + std::to_string(index) + "_in" + std::to_string(k));
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

}  // namespace

CompiledGraph CompiledGraph::build(const Graph& g, const Target& target,
                                   const BuildOptions& options) {
  std::vector<Pass> passes = {{"simplify_inference", simplify_inference},
                              {"fold_constants", fold_constants}};
  if (options.alter_layout) {
    passes.push_back(
        {"alter_layout", [&target](const Graph& x) { return alter_layout(x, target); }});
    passes.push_back({"fold_constants", fold_constants});
  }
  passes.push_back({"eliminate_common_subexpressions", eliminate_common_subexpressions});
  passes.push_back({"eliminate_dead_code", eliminate_dead_code});

  CompiledGraph cg;
  cg.graph_ = run_passes(g, passes, options.print_after);
  const Graph& gr = cg.graph_;
  std::vector<FusedGroup> groups = fuse(gr, options.fuse);
  cg.plan_ = plan_memory(gr, groups);

  std::vector<ir::LoweredFunc> funcs;
  for (size_t i = 0; i < groups.size(); ++i) {
    const FusedGroup& group = groups[i];
    ANVIL_ICHECK(!group.nodes.empty(), "build: fused group ", i, " is empty");
    NodeId sched_node = group.anchor >= 0 ? group.anchor : group.nodes.back();
    const Node& snode = gr.node(sched_node);
    Kernel k;
    k.name = "fused_" + std::to_string(i) + "_" + snode.op;
    k.nodes = group.nodes;
    GroupFunc f = group_function(gr, group, i);
    k.args = group.inputs;
    k.num_inputs = group.inputs.size();
    for (ValueId v : gr.node(group.nodes.back()).outputs) k.args.push_back(v);
    std::vector<te::Tensor> args = f.inputs;
    args.insert(args.end(), f.outputs.begin(), f.outputs.end());

    const ops::OpDef& def = ops::lookup(snode.op);
    std::string last_error;
    for (int mode = 0; mode < 3; ++mode) {
      try {
        te::Schedule s(f.outputs);
        if (mode < 2)
          ANVIL_CHECK(def.schedule_x86, "operator '", snode.op, "' has no x86 schedule");
        if (mode == 0) {
          if (group.anchor < 0) inline_stages(s, f.outputs, {});
          def.schedule_x86(s, f.outputs, target, {});
        } else if (mode == 1) {
          const Node& sink = gr.node(group.nodes.back());
          if (group.anchor < 0 || group.anchor == group.nodes.back()) continue;
          ANVIL_CHECK(ops::lookup(sink.op).schedule_x86, "operator '", sink.op,
                      "' has no x86 schedule");
          inline_stages(s, f.outputs, f.anchor_stages);
          def.schedule_x86(s, f.anchor_outputs, target, {});
          ops::lookup(sink.op).schedule_x86(s, f.outputs, target, {});
        }
        funcs.push_back(lower(s, args, k.name));
        k.schedule = mode == 0   ? snode.op + " schedule"
                     : mode == 1 ? snode.op + " schedule on its own output, epilogue by " +
                                       gr.node(group.nodes.back()).op
                                 : "default loops (" + last_error + ")";
        break;
      } catch (const std::exception& e) {
        last_error = e.what();
        if (mode == 2)
          ANVIL_FAIL("build: kernel ", k.name, " (nodes ", node_list(gr, group.nodes),
                     ") cannot be lowered: ", e.what());
      }
    }
    cg.kernels_.push_back(std::move(k));
  }
  // Each unplanned intermediate (an unused output, a value the plan leaves out) is released after
  // the last kernel that touches it; graph outputs are kept.
  std::vector<int64_t> last(gr.num_values(), -1);
  for (size_t i = 0; i < cg.kernels_.size(); ++i)
    for (ValueId v : cg.kernels_[i].args) last[v] = static_cast<int64_t>(i);
  for (ValueId v : gr.outputs()) last[v] = -1;
  for (size_t v = 0; v < gr.num_values(); ++v) {
    bool planned = v < cg.plan_.offset.size() && cg.plan_.offset[v] >= 0;
    if (last[v] >= 0 && !planned &&
        gr.value(static_cast<ValueId>(v)).kind == ValueKind::kNodeOutput)
      cg.kernels_[static_cast<size_t>(last[v])].release.push_back(static_cast<ValueId>(v));
  }
  cg.module_ = codegen::LLVMModule::compile(funcs, target);
  for (Kernel& k : cg.kernels_) k.fn = cg.module_->get_function(k.name);
  return cg;
}

std::vector<runtime::NDArray> CompiledGraph::run(
    const std::vector<runtime::NDArray>& inputs) const {
  const Graph& g = graph_;
  check_inputs(g, inputs, "run");

  // Storage: inputs as given, constants from the graph, planned values in the arena, the rest
  // (graph outputs, values the plan leaves out) in arrays of their own.
  size_t nv = g.num_values();
  std::vector<const DLTensor*> where(nv, nullptr);
  std::vector<runtime::NDArray> own(nv);
  std::vector<DLTensor> views(nv);
  std::vector<std::vector<int64_t>> shapes(nv);
  runtime::NDArray arena;
  if (plan_.planned_bytes > 0)
    arena = runtime::NDArray::empty({plan_.planned_bytes}, DLDataType{kDLUInt, 8, 1});
  for (size_t i = 0; i < inputs.size(); ++i) where[g.inputs()[i]] = inputs[i].get();
  for (size_t v = 0; v < nv; ++v) {
    const Value& val = g.value(static_cast<ValueId>(v));
    if (val.kind == ValueKind::kConstant) {
      where[v] = val.data.get();
    } else if (val.kind == ValueKind::kNodeOutput) {
      int64_t off = v < plan_.offset.size() ? plan_.offset[v] : -1;
      if (off >= 0) {
        shapes[v] = val.type.shape;
        DLTensor& t = views[v];
        t.data = static_cast<uint8_t*>(arena.data()) + off;
        t.device = DLDevice{kDLCPU, 0};
        t.ndim = static_cast<int32_t>(shapes[v].size());
        t.dtype = ops::to_dlpack(val.type.dtype);
        t.shape = shapes[v].data();
        t.strides = nullptr;
        t.byte_offset = 0;
        where[v] = &views[v];
      }
    }
  }
  for (const Kernel& k : kernels_) {
    std::vector<const DLTensor*> args;
    args.reserve(k.args.size());
    for (ValueId v : k.args) {
      if (!where[v]) {
        const Value& val = g.value(v);
        own[v] = runtime::NDArray::empty(val.type.shape, ops::to_dlpack(val.type.dtype));
        where[v] = own[v].get();
      }
      args.push_back(where[v]);
    }
    int32_t status = k.fn(args.data(), static_cast<int32_t>(args.size()), nullptr);
    ANVIL_CHECK(status == 0, "run: kernel ", k.name, " (nodes ", node_list(g, k.nodes),
                ") failed: ", AnvilGetLastError());
    for (ValueId v : k.release) {
      own[v] = runtime::NDArray();
      where[v] = nullptr;
    }
  }

  std::vector<runtime::NDArray> results;
  results.reserve(g.outputs().size());
  for (ValueId v : g.outputs()) {
    const Value& val = g.value(v);
    if (val.kind == ValueKind::kNodeOutput && own[v].defined()) {
      results.push_back(own[v]);
    } else if (val.kind == ValueKind::kConstant) {
      results.push_back(copy_of(val.data));
    } else {
      ANVIL_ICHECK(where[v], "run: output '", val.name, "' was never computed");
      // A graph input, or (not expected) a planned value: copy it out.
      runtime::NDArray c = runtime::NDArray::empty(val.type.shape, ops::to_dlpack(val.type.dtype));
      if (c.nbytes() > 0) std::memcpy(c.data(), where[v]->data, c.nbytes());
      results.push_back(c);
    }
  }
  return results;
}

std::string CompiledGraph::summary() const {
  std::ostringstream os;
  os << kernels_.size() << " kernels\n";
  for (const Kernel& k : kernels_) {
    os << "  " << k.name << ": ";
    for (size_t i = 0; i < k.nodes.size(); ++i) os << (i ? ", " : "") << graph_.node(k.nodes[i]).op;
    os << "  [" << k.schedule << "]\n";
  }
  os << "memory: " << plan_.planned_bytes << " bytes planned (arena), " << plan_.unplanned_bytes
     << " bytes unplanned\n";
  return os.str();
}

}  // namespace anvil::graph
