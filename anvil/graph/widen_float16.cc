// widen_float16 (passes.h): the ops whose kernels are float32 run float16 models between casts.
#include "anvil/graph/passes.h"
#include "anvil/ops/host_value.h"

namespace anvil::graph {

namespace {

constexpr ir::DataType kF16 = ir::DataType::Float(16);
constexpr ir::DataType kF32 = ir::DataType::Float32();

bool widens(const Graph& g, const Node& n) {
  if (!ops::lookup(n.op).float16_via_float32) return false;
  for (ValueId v : n.inputs)
    if (g.value(v).type.dtype == kF16) return true;
  return false;
}

ValueId cast(Graph& out, const std::string& name, ValueId x, const char* to) {
  return out.add(name, "cast", ops::Attrs("cast", {{"to", std::string(to)}}), {x});
}

}  // namespace

Graph widen_float16(const Graph& g) {
  bool any = false;
  for (const Node& n : g.nodes()) any = any || widens(g, n);
  if (!any) return g;
  GraphRewriter rw(g);
  Graph& out = rw.out();
  for (size_t id = 0; id < g.num_nodes(); ++id) {
    const Node& n = g.node(static_cast<NodeId>(id));
    if (!widens(g, n)) {
      rw.copy_node(static_cast<NodeId>(id));
      continue;
    }
    // Constants (weights) are converted here, so that simplify_inference sees float32 ones.
    std::vector<ValueId> ins;
    for (ValueId v : n.inputs) {
      const Value& x = g.value(v);
      if (x.type.dtype != kF16) {
        ins.push_back(rw.map(v));
      } else if (x.kind == ValueKind::kConstant) {
        ins.push_back(out.add_constant(out.unique_name(x.name + "_f32"),
                                       ops::host::float_converted(x.data, kF32)));
      } else {
        ins.push_back(cast(out, out.unique_name(x.name + "_f32"), rw.map(v), "float32"));
      }
    }
    std::vector<std::string> names;
    for (ValueId v : n.outputs) names.push_back(out.unique_name(g.value(v).name + "_f32"));
    std::vector<ValueId> outs =
        out.add_node(out.unique_name(n.name), n.op, n.attrs, ins, names, n.bodies);
    for (size_t i = 0; i < outs.size(); ++i) {
      const Value& old = g.value(n.outputs[i]);
      bool narrow = old.type.dtype == kF16 && out.value(outs[i]).type.dtype == kF32;
      rw.set(n.outputs[i],
             narrow ? cast(out, out.unique_name(old.name), outs[i], "float16") : outs[i]);
    }
  }
  return rw.finish();
}

}  // namespace anvil::graph
