// Run-time control flow (control_flow.h).
#include "anvil/runtime/control_flow.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace anvil::runtime {

namespace {

constexpr uint8_t kBoolCode = 6;  // kDLBool in DLPack >= 0.8, which this one predates

std::string type_str(const std::vector<int64_t>& shape, DLDataType dtype) {
  return to_string(dtype) + shape_str(shape);
}

bool same_dtype(DLDataType a, DLDataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

size_t elem_bytes(DLDataType t) {
  return (t.bits * t.lanes + 7) / 8;
}

int64_t int_of(const NDArray& a, const std::string& what) {
  if (a.numel() != 1)
    throw std::runtime_error(what + " must hold one value, got shape " + shape_str(a.shape()));
  DLDataType t = a.dtype();
  if (t.code == kDLInt && t.bits == 64) return a.data_as<int64_t>()[0];
  if (t.code == kDLInt && t.bits == 32) return a.data_as<int32_t>()[0];
  if (t.code == kDLUInt && t.bits == 64) return static_cast<int64_t>(a.data_as<uint64_t>()[0]);
  throw std::runtime_error(what + " must be an integer, got " + to_string(t));
}

NDArray copy(const NDArray& a) {
  NDArray c = NDArray::empty(a.shape(), a.dtype());
  if (c.nbytes() > 0) std::memcpy(c.data(), a.data(), c.nbytes());
  return c;
}

// The product of shape[begin, end).
int64_t extent(const std::vector<int64_t>& shape, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t d = begin; d < end; ++d) n *= shape[d];
  return n;
}

// Slice t of `x` along `axis` (the axis removed).
NDArray slice_at(const NDArray& x, size_t axis, int64_t t) {
  const std::vector<int64_t>& s = x.shape();
  if (axis >= s.size())
    throw std::runtime_error("a scan input of shape " + shape_str(s) + " has no axis " +
                             std::to_string(axis));
  std::vector<int64_t> shape = s;
  shape.erase(shape.begin() + static_cast<std::ptrdiff_t>(axis));
  NDArray y = NDArray::empty(shape, x.dtype());
  size_t inner = static_cast<size_t>(extent(s, axis + 1, s.size())) * elem_bytes(x.dtype());
  int64_t outer = extent(s, 0, axis), length = s[axis];
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(static_cast<char*>(y.data()) + o * inner,
                static_cast<const char*>(x.data()) + (o * length + t) * inner, inner);
  return y;
}

// Writes `y` as slice t of `out` along `axis`; `what` names the output in errors.
void put_slice(NDArray& out, size_t axis, int64_t t, const NDArray& y, const std::string& what) {
  std::vector<int64_t> want = out.shape();
  if (axis >= want.size())
    throw std::runtime_error(what + " of shape " + shape_str(want) + " has no axis " +
                             std::to_string(axis));
  want.erase(want.begin() + static_cast<std::ptrdiff_t>(axis));
  if (y.shape() != want || !same_dtype(y.dtype(), out.dtype()))
    throw std::runtime_error(what + ": the body gives " + type_str(y.shape(), y.dtype()) +
                             " per iteration, the output is " + type_str(out.shape(), out.dtype()));
  const std::vector<int64_t>& s = out.shape();
  size_t inner = static_cast<size_t>(extent(s, axis + 1, s.size())) * elem_bytes(out.dtype());
  int64_t outer = extent(s, 0, axis), length = s[axis];
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(static_cast<char*>(out.data()) + (o * length + t) * inner,
                static_cast<const char*>(y.data()) + o * inner, inner);
}

void check_output(const NDArray& a, const OutputInfo& info, const std::string& what) {
  if (a.shape() != info.shape || !same_dtype(a.dtype(), info.dtype))
    throw std::runtime_error(what + " is " + type_str(a.shape(), a.dtype()) +
                             ", the step's output is " + type_str(info.shape, info.dtype));
}

std::vector<NDArray> run_if(const ControlFlow& cf, const std::vector<NDArray>& inputs,
                            const std::vector<OutputInfo>& outputs, const RunBody& run_body) {
  if (inputs.empty() || cf.then_inputs < 0 ||
      static_cast<size_t>(cf.then_inputs) > inputs.size() - 1)
    throw std::runtime_error("an if with " + std::to_string(inputs.size()) +
                             " inputs cannot pass " + std::to_string(cf.then_inputs) +
                             " to its then-branch");
  bool taken = truth_of(inputs.at(0));
  auto first = inputs.begin() + 1 + (taken ? 0 : cf.then_inputs);
  auto last = taken ? inputs.begin() + 1 + cf.then_inputs : inputs.end();
  std::vector<NDArray> outs = run_body(taken ? 0 : 1, std::vector<NDArray>(first, last));
  if (outs.size() != outputs.size())
    throw std::runtime_error("the branch gives " + std::to_string(outs.size()) + " outputs, " +
                             std::to_string(outputs.size()) + " expected");
  for (size_t k = 0; k < outs.size(); ++k)
    check_output(outs[k], outputs[k], "output " + std::to_string(k) + " of the branch");
  return outs;
}

std::vector<NDArray> run_loop(const ControlFlow& cf, const std::vector<NDArray>& inputs,
                              const std::vector<OutputInfo>& outputs, const RunBody& run_body) {
  size_t at = 0;
  int64_t trip = std::numeric_limits<int64_t>::max();
  if (cf.has_trip_count) trip = int_of(inputs.at(at++), "the trip count");
  bool cond = true;
  if (cf.has_cond) cond = truth_of(inputs.at(at++));
  size_t n = static_cast<size_t>(cf.num_carried);
  if (cf.num_carried < 0 || at + n > inputs.size() || n > outputs.size())
    throw std::runtime_error("a loop with " + std::to_string(inputs.size()) + " inputs and " +
                             std::to_string(outputs.size()) + " outputs cannot carry " +
                             std::to_string(cf.num_carried) + " values");
  std::vector<NDArray> body_in(2);
  for (size_t k = 0; k < n; ++k) body_in.push_back(copy(inputs.at(at + k)));
  body_in.insert(body_in.end(), inputs.begin() + static_cast<std::ptrdiff_t>(at + n), inputs.end());
  std::vector<NDArray> stacked;
  for (size_t k = n; k < outputs.size(); ++k)
    stacked.push_back(NDArray::empty(outputs[k].shape, outputs[k].dtype));
  int64_t i = 0;
  for (; i < trip && cond; ++i) {
    NDArray iter = NDArray::empty({}, DLDataType{kDLInt, 64, 1});
    iter.data_as<int64_t>()[0] = i;
    NDArray c = NDArray::empty({}, DLDataType{kBoolCode, 8, 1});
    c.data_as<uint8_t>()[0] = 1;
    body_in[0] = iter;
    body_in[1] = c;
    std::vector<NDArray> outs = run_body(0, body_in);
    if (outs.size() != 1 + outputs.size())
      throw std::runtime_error("the body gives " + std::to_string(outs.size()) + " outputs, " +
                               std::to_string(1 + outputs.size()) + " expected");
    cond = truth_of(outs[0]);
    for (size_t k = 0; k < n; ++k) {
      check_output(outs[1 + k], outputs[k], "loop-carried value " + std::to_string(k));
      body_in[2 + k] = outs[1 + k];
    }
    for (size_t k = 0; k < stacked.size(); ++k) {
      std::string what = "scan output " + std::to_string(k);
      if (i >= stacked[k].shape().at(0))
        throw std::runtime_error("the loop runs past " + std::to_string(i) + " iterations, but " +
                                 what + " was compiled for " +
                                 std::to_string(stacked[k].shape()[0]) +
                                 " (its trip count, bound at compile time)");
      put_slice(stacked[k], 0, i, outs[1 + n + k], what);
    }
  }
  for (size_t k = 0; k < stacked.size(); ++k)
    if (i != stacked[k].shape()[0])
      throw std::runtime_error(
          "the loop ran " + std::to_string(i) + " iterations, but scan output " +
          std::to_string(k) + " was compiled for " + std::to_string(stacked[k].shape()[0]) +
          " (its trip count, bound at compile time; a loop that stops early cannot fill it)");
  std::vector<NDArray> results(body_in.begin() + 2,
                               body_in.begin() + 2 + static_cast<std::ptrdiff_t>(n));
  // A carried value that no iteration replaced is still the copy of its input.
  results.insert(results.end(), stacked.begin(), stacked.end());
  return results;
}

std::vector<NDArray> run_scan(const ControlFlow& cf, const std::vector<NDArray>& inputs,
                              const std::vector<OutputInfo>& outputs, const RunBody& run_body) {
  size_t n = static_cast<size_t>(cf.num_carried), m = static_cast<size_t>(cf.num_scan_inputs);
  if (cf.num_carried < 0 || cf.num_scan_inputs < 0 || n + m > inputs.size() || n > outputs.size())
    throw std::runtime_error("a scan with " + std::to_string(inputs.size()) + " inputs and " +
                             std::to_string(outputs.size()) + " outputs cannot have " +
                             std::to_string(n) + " states and " + std::to_string(m) +
                             " scan inputs");
  auto axis_of = [](const std::vector<int64_t>& axes, size_t k) {
    return k < axes.size() ? static_cast<size_t>(axes[k]) : size_t{0};
  };
  auto reversed = [](const std::vector<int64_t>& r, size_t k) { return k < r.size() && r[k]; };
  int64_t length = -1;
  for (size_t k = 0; k < m; ++k) {
    const NDArray& x = inputs.at(n + k);
    int64_t l = x.shape().at(axis_of(cf.input_axes, k));
    if (length >= 0 && l != length)
      throw std::runtime_error("scan input " + std::to_string(k) + " has " + std::to_string(l) +
                               " steps along its scan axis, scan input 0 has " +
                               std::to_string(length));
    length = l;
  }
  std::vector<NDArray> body_in;
  for (size_t k = 0; k < n; ++k) body_in.push_back(copy(inputs.at(k)));
  body_in.resize(n + m);
  body_in.insert(body_in.end(), inputs.begin() + static_cast<std::ptrdiff_t>(n + m), inputs.end());
  std::vector<NDArray> stacked;
  for (size_t k = n; k < outputs.size(); ++k)
    stacked.push_back(NDArray::empty(outputs[k].shape, outputs[k].dtype));
  for (int64_t t = 0; t < std::max<int64_t>(length, 0); ++t) {
    for (size_t k = 0; k < m; ++k)
      body_in[n + k] = slice_at(inputs[n + k], axis_of(cf.input_axes, k),
                                reversed(cf.input_reverse, k) ? length - 1 - t : t);
    std::vector<NDArray> outs = run_body(0, body_in);
    if (outs.size() != outputs.size())
      throw std::runtime_error("the body gives " + std::to_string(outs.size()) + " outputs, " +
                               std::to_string(outputs.size()) + " expected");
    for (size_t k = 0; k < n; ++k) {
      check_output(outs[k], outputs[k], "state " + std::to_string(k));
      body_in[k] = outs[k];
    }
    for (size_t k = 0; k < stacked.size(); ++k) {
      size_t axis = axis_of(cf.output_axes, k);
      if (stacked[k].shape().at(axis) != length)
        throw std::runtime_error("scan output " + std::to_string(k) + " holds " +
                                 std::to_string(stacked[k].shape()[axis]) +
                                 " steps, the scan has " + std::to_string(length));
      put_slice(stacked[k], axis, reversed(cf.output_reverse, k) ? length - 1 - t : t, outs[n + k],
                "scan output " + std::to_string(k));
    }
  }
  std::vector<NDArray> results(body_in.begin(), body_in.begin() + static_cast<std::ptrdiff_t>(n));
  results.insert(results.end(), stacked.begin(), stacked.end());
  return results;
}

}  // namespace

bool truth_of(const NDArray& a) {
  if (a.numel() != 1)
    throw std::runtime_error("a condition must hold one value, got shape " + shape_str(a.shape()));
  DLDataType t = a.dtype();
  const void* p = a.data();
  switch (t.bits) {
    case 8:
      return *static_cast<const uint8_t*>(p) != 0;
    case 16:
      return *static_cast<const uint16_t*>(p) != 0;
    case 32:
      return t.code == kDLFloat ? *static_cast<const float*>(p) != 0
                                : *static_cast<const uint32_t*>(p) != 0;
    case 64:
      return t.code == kDLFloat ? *static_cast<const double*>(p) != 0
                                : *static_cast<const uint64_t*>(p) != 0;
  }
  throw std::runtime_error("a condition of type " + to_string(t) + " is not supported");
}

std::vector<NDArray> run_control(const ControlFlow& cf, const std::vector<NDArray>& inputs,
                                 const std::vector<OutputInfo>& outputs, const RunBody& run_body) {
  std::vector<NDArray> results;
  if (cf.op == "if")
    results = run_if(cf, inputs, outputs, run_body);
  else if (cf.op == "loop")
    results = run_loop(cf, inputs, outputs, run_body);
  else if (cf.op == "scan")
    results = run_scan(cf, inputs, outputs, run_body);
  else
    throw std::runtime_error("unknown control-flow step '" + cf.op + "'");
  // Results that alias an input (a branch returning its capture, a carried value no iteration
  // ran for) are copied, so that no caller's array is handed back as an output.
  for (NDArray& r : results)
    for (const NDArray& in : inputs)
      if (r.data() == in.data() && r.nbytes() > 0) r = copy(r);
  return results;
}

}  // namespace anvil::runtime
