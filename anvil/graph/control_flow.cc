// Control-flow nodes in the graph (control_flow.h).
#include "anvil/graph/control_flow.h"

#include <stdexcept>

#include "anvil/graph/interpreter.h"
#include "anvil/support/error.h"

namespace anvil::graph {

namespace {

using ops::TensorType;

// Checks that body `b`'s inputs have the types `want` (in order); `what` names the body.
void check_body_inputs(const Graph& b, const std::vector<TensorType>& want,
                       const std::string& what) {
  ANVIL_CHECK(b.inputs().size() == want.size(), what, " takes ", b.inputs().size(),
              " inputs, the node passes it ", want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    const Value& v = b.value(b.inputs()[k]);
    ANVIL_CHECK(v.type == want[k], what, "'s input ", k, " '", v.name, "' is ",
                ops::to_string(v.type), ", the node passes ", ops::to_string(want[k]));
  }
}

std::vector<TensorType> output_types(const Graph& b) {
  std::vector<TensorType> t;
  for (ValueId v : b.outputs()) t.push_back(b.value(v).type);
  return t;
}

std::vector<TensorType> if_types(const ops::Attrs& attrs, const std::vector<TensorType>& in,
                                 const std::vector<std::shared_ptr<const Graph>>& bodies) {
  ANVIL_CHECK(bodies.size() == 2, "an if takes two bodies (then, else), got ", bodies.size());
  ANVIL_CHECK(
      !in.empty() && in[0].shape.size() <= 1 && (in[0].shape.empty() || in[0].shape[0] == 1),
      "the condition must be a single value");
  size_t then_n = static_cast<size_t>(attrs.get_int("then_inputs"));
  ANVIL_CHECK(1 + then_n <= in.size(), "then_inputs ", then_n, " is more than the node's ",
              in.size() - 1, " inputs after cond");
  check_body_inputs(*bodies[0], {in.begin() + 1, in.begin() + 1 + then_n}, "the then-branch");
  check_body_inputs(*bodies[1], {in.begin() + 1 + then_n, in.end()}, "the else-branch");
  std::vector<TensorType> t = output_types(*bodies[0]), e = output_types(*bodies[1]);
  ANVIL_CHECK(t.size() == e.size(), "the then-branch gives ", t.size(),
              " outputs, the else-branch ", e.size());
  for (size_t k = 0; k < t.size(); ++k)
    ANVIL_CHECK(t[k] == e[k], "output ", k, " is ", ops::to_string(t[k]),
                " in the then-branch and ", ops::to_string(e[k]),
                " in the else-branch: outputs whose shape depends on the branch taken are not "
                "supported (shapes are bound at compile time)");
  return t;
}

std::vector<TensorType> loop_types(const ops::Attrs& attrs, const std::vector<TensorType>& in,
                                   const std::vector<std::shared_ptr<const Graph>>& bodies) {
  ANVIL_CHECK(bodies.size() == 1, "a loop takes one body, got ", bodies.size());
  size_t at = static_cast<size_t>(attrs.get_int("has_trip_count") + attrs.get_int("has_cond"));
  size_t n = static_cast<size_t>(attrs.get_int("num_carried"));
  ANVIL_CHECK(at + n <= in.size(), "the node has ", in.size(), " inputs, fewer than its ", at + n,
              " operands");
  std::vector<TensorType> want = {{{}, ir::DataType::Int(64)}, {{}, ir::DataType::Bool()}};
  want.insert(want.end(), in.begin() + static_cast<std::ptrdiff_t>(at), in.end());
  const Graph& body = *bodies[0];
  check_body_inputs(body, want, "the body");
  std::vector<TensorType> out = output_types(body);
  ANVIL_CHECK(out.size() >= 1 + n, "the body gives ", out.size(), " outputs, fewer than cond and ",
              n, " loop-carried values");
  ANVIL_CHECK(out[0].shape.size() <= 1 && (out[0].shape.empty() || out[0].shape[0] == 1),
              "the body's condition output must be a single value, got ", ops::to_string(out[0]));
  std::vector<TensorType> types;
  for (size_t k = 0; k < n; ++k) {
    ANVIL_CHECK(out[1 + k] == in[at + k], "loop-carried value ", k, " enters as ",
                ops::to_string(in[at + k]), " and leaves the body as ", ops::to_string(out[1 + k]),
                ": values whose shape changes from one iteration to the next are not supported");
    types.push_back(out[1 + k]);
  }
  int64_t bound = attrs.get_int("trip_bound");
  if (out.size() > 1 + n)
    ANVIL_CHECK(bound >= 0, "its ", out.size() - 1 - n,
                " scan output(s) hold one value per iteration, so their length is the trip count, "
                "which is not known at compile time");
  for (size_t k = 1 + n; k < out.size(); ++k) {
    TensorType t = out[k];
    t.shape.insert(t.shape.begin(), bound);
    types.push_back(t);
  }
  return types;
}

std::vector<TensorType> scan_types(const ops::Attrs& attrs, const std::vector<TensorType>& in,
                                   const std::vector<std::shared_ptr<const Graph>>& bodies) {
  ANVIL_CHECK(bodies.size() == 1, "a scan takes one body, got ", bodies.size());
  size_t n = static_cast<size_t>(attrs.get_int("num_carried"));
  size_t m = static_cast<size_t>(attrs.get_int("num_scan_inputs"));
  ANVIL_CHECK(n + m <= in.size(), "the node has ", in.size(), " inputs, fewer than its ", n + m,
              " states and scan inputs");
  std::vector<int64_t> in_axes = attrs.get_ints("scan_input_axes");
  std::vector<int64_t> in_dirs = attrs.get_ints("scan_input_directions");
  ANVIL_CHECK(in_axes.empty() || in_axes.size() == m, "scan_input_axes has ", in_axes.size(),
              " entries for ", m, " scan inputs");
  ANVIL_CHECK(in_dirs.empty() || in_dirs.size() == m, "scan_input_directions has ", in_dirs.size(),
              " entries for ", m, " scan inputs");
  std::vector<TensorType> want(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(n));
  int64_t length = -1;
  for (size_t k = 0; k < m; ++k) {
    TensorType x = in[n + k];
    int64_t axis = in_axes.empty() ? 0 : in_axes[k];
    ANVIL_CHECK(axis >= 0 && axis < static_cast<int64_t>(x.shape.size()), "scan input ", k,
                " of type ", ops::to_string(x), " has no axis ", axis);
    int64_t l = x.shape[static_cast<size_t>(axis)];
    ANVIL_CHECK(length < 0 || l == length, "scan input ", k, " has ", l,
                " steps along its scan axis, scan input 0 has ", length);
    length = l;
    x.shape.erase(x.shape.begin() + axis);
    want.push_back(x);
  }
  want.insert(want.end(), in.begin() + static_cast<std::ptrdiff_t>(n + m), in.end());
  const Graph& body = *bodies[0];
  check_body_inputs(body, want, "the body");
  std::vector<TensorType> out = output_types(body);
  ANVIL_CHECK(out.size() >= n, "the body gives ", out.size(), " outputs, fewer than its ", n,
              " states");
  std::vector<int64_t> out_axes = attrs.get_ints("scan_output_axes");
  std::vector<int64_t> out_dirs = attrs.get_ints("scan_output_directions");
  size_t k_out = out.size() - n;
  ANVIL_CHECK(out_axes.empty() || out_axes.size() == k_out, "scan_output_axes has ",
              out_axes.size(), " entries for ", k_out, " scan outputs");
  ANVIL_CHECK(out_dirs.empty() || out_dirs.size() == k_out, "scan_output_directions has ",
              out_dirs.size(), " entries for ", k_out, " scan outputs");
  std::vector<TensorType> types;
  for (size_t k = 0; k < n; ++k) {
    ANVIL_CHECK(out[k] == in[k], "state ", k, " enters as ", ops::to_string(in[k]),
                " and leaves the body as ", ops::to_string(out[k]),
                ": values whose shape changes from one step to the next are not supported");
    types.push_back(out[k]);
  }
  for (size_t k = 0; k < k_out; ++k) {
    TensorType t = out[n + k];
    int64_t axis = out_axes.empty() ? 0 : out_axes[k];
    ANVIL_CHECK(axis >= 0 && axis <= static_cast<int64_t>(t.shape.size()), "scan output ", k,
                " of type ", ops::to_string(t), " per step cannot be stacked along axis ", axis);
    t.shape.insert(t.shape.begin() + axis, length);
    types.push_back(t);
  }
  return types;
}

}  // namespace

bool is_control_flow(const std::string& op) {
  return op == "if" || op == "loop" || op == "scan";
}

std::vector<ops::TensorType> control_output_types(
    const ops::Attrs& attrs, const std::vector<ops::TensorType>& inputs,
    const std::vector<std::shared_ptr<const Graph>>& bodies) {
  for (const auto& b : bodies) ANVIL_CHECK(b != nullptr, "a body is missing");
  if (attrs.op() == "if") return if_types(attrs, inputs, bodies);
  if (attrs.op() == "loop") return loop_types(attrs, inputs, bodies);
  if (attrs.op() == "scan") return scan_types(attrs, inputs, bodies);
  ANVIL_FAIL("'", attrs.op(), "' is not a control-flow op");
}

runtime::ControlFlow control_step(const Node& n) {
  runtime::ControlFlow cf;
  cf.op = n.op;
  if (n.op == "if") {
    cf.then_inputs = n.attrs.get_int("then_inputs");
  } else if (n.op == "loop") {
    cf.has_trip_count = n.attrs.get_int("has_trip_count") != 0;
    cf.has_cond = n.attrs.get_int("has_cond") != 0;
    cf.num_carried = n.attrs.get_int("num_carried");
  } else {
    cf.num_carried = n.attrs.get_int("num_carried");
    cf.num_scan_inputs = n.attrs.get_int("num_scan_inputs");
    cf.input_axes = n.attrs.get_ints("scan_input_axes");
    cf.input_reverse = n.attrs.get_ints("scan_input_directions");
    cf.output_axes = n.attrs.get_ints("scan_output_axes");
    cf.output_reverse = n.attrs.get_ints("scan_output_directions");
  }
  return cf;
}

std::vector<runtime::NDArray> interpret_control(const Graph& g, const Node& n,
                                                const std::vector<runtime::NDArray>& args) {
  std::vector<runtime::OutputInfo> outputs;
  for (ValueId v : n.outputs)
    outputs.push_back({g.value(v).type.shape, ops::to_dlpack(g.value(v).type.dtype)});
  try {
    return runtime::run_control(control_step(n), args, outputs,
                                [&](size_t b, const std::vector<runtime::NDArray>& in) {
                                  return interpret(*n.bodies.at(b), in);
                                });
  } catch (const std::runtime_error& e) {
    ANVIL_FAIL("node '", n.name, "' (", n.op, "): ", e.what());
  }
}

}  // namespace anvil::graph
