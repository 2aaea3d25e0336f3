// Run-time control flow: if, loop and scan. Their bodies are graphs, which an op cannot see, so
// these entries declare only the attributes and the fusion pattern: the output types come from
// the bodies (graph/control_flow.h), the semantics from runtime/control_flow.h, which the graph
// executor (bodies as subprograms) and the reference interpreter (bodies as graphs) share. No
// compute: a control-flow node is a step of the executor, never part of a kernel.
#include "anvil/ops/families.h"
#include "anvil/ops/op.h"
#include "anvil/support/error.h"

namespace anvil::ops {

namespace {

void register_control(const std::string& name, std::vector<AttrSpec> attrs) {
  OpDef def;
  def.name = name;
  def.pattern = Pattern::kOpaque;
  def.attrs = std::move(attrs);
  def.flops = flops_none();  // the bodies' kernels count their own
  def.infer = [name](const std::vector<TensorType>&, const Attrs&) -> std::vector<TensorType> {
    ANVIL_FAIL(name, ": the output types come from the node's bodies (graph::Graph::add_node ",
               "with bodies)");
  };
  register_op(std::move(def));
}

}  // namespace

void register_control_ops() {
  register_control("if", {{"then_inputs",
                           AttrType::kInt,
                           std::nullopt,
                           {non_negative()},
                           "inputs after cond that the then-branch reads (the rest: else's)",
                           /*required=*/true}});
  register_control(
      "loop", {{"has_trip_count", AttrType::kInt, int64_t{0}, {one_of({0, 1})}, "input 0 is M"},
               {"has_cond", AttrType::kInt, int64_t{0}, {one_of({0, 1})}, "the next input is cond"},
               {"num_carried", AttrType::kInt, int64_t{0}, {non_negative()}, "loop-carried values"},
               {"trip_bound", AttrType::kInt, int64_t{-1}, {}, "scan outputs' length (-1: none)"}});
  register_control(
      "scan",
      {{"num_carried", AttrType::kInt, int64_t{0}, {non_negative()}, "states"},
       {"num_scan_inputs", AttrType::kInt, std::nullopt, {positive()}, "scan inputs", true},
       {"scan_input_axes", AttrType::kInts, std::vector<int64_t>{}, {}, "per scan input"},
       {"scan_input_directions", AttrType::kInts, std::vector<int64_t>{}, {}, "1: reversed"},
       {"scan_output_axes", AttrType::kInts, std::vector<int64_t>{}, {}, "per scan output"},
       {"scan_output_directions", AttrType::kInts, std::vector<int64_t>{}, {}, "1: reversed"}});
}

}  // namespace anvil::ops
