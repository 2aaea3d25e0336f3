// Shared by the operator tests: builds an operator from its registered definition on inputs of
// given types, schedules it with its default x86 schedule (or a given config), compiles it with
// LLVM, runs it on random inputs, and compares every output with the operator's reference. Then
// the same with the op's GPU schedule (its own, else the default one) through OpenCL on the CPU
// (PoCL).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "anvil/codegen/gpu/codegen_gpu.h"
#include "anvil/codegen/llvm/codegen_llvm.h"
#include "anvil/ir/printer.h"
#include "anvil/lower/lower.h"
#include "anvil/ops/host_value.h"
#include "anvil/ops/op.h"
#include "anvil/runtime/device_api.h"
#include "anvil/support/temp_dir.h"
#include "testing/kernel_args.h"

namespace anvil::ops_testing {

using ops::Attrs;
using ops::TensorType;

// Stores the values `next()` draws into a's elements of type T.
template <typename T, typename Next>
void fill(runtime::NDArray& a, Next next) {
  for (int64_t i = 0; i < a.numel(); ++i) a.data_as<T>()[i] = static_cast<T>(next());
}

// 8-bit integers of type `t` (int8 or uint8) uniform in [lo, hi], with both ends in every tensor
// (every fifth element lo, the next hi): the largest products of the int8 kernels must come out
// exact.
inline runtime::NDArray random_bytes(const std::vector<int64_t>& shape, ir::DataType t,
                                     uint32_t seed, int lo, int hi) {
  runtime::NDArray a = runtime::NDArray::empty(shape, ops::to_dlpack(t));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(lo, hi);
  auto* bytes = static_cast<uint8_t*>(a.data());
  for (int64_t i = 0; i < a.numel(); ++i) {
    const int v = i % 5 == 0 ? lo : i % 5 == 1 ? hi : d(rng);
    bytes[i] = static_cast<uint8_t>(v);
  }
  return a;
}

// A tensor of `type` with random contents: floats uniform in [lo, hi], integers in [lo, hi]
// (unsigned ones from max(lo, 0)), bools 0/1.
inline runtime::NDArray random_array(const TensorType& type, std::mt19937& rng, double lo = -1.0,
                                     double hi = 1.0) {
  runtime::NDArray a = testing::array(type.shape, type.dtype);
  ir::DataType t = type.dtype;
  std::uniform_real_distribution<double> real(lo, hi);
  int64_t ilo = static_cast<int64_t>(t.is_uint() ? std::max(lo, 0.0) : lo);
  std::uniform_int_distribution<int64_t> integer(ilo, static_cast<int64_t>(hi));
  auto r = [&] { return real(rng); };
  auto i = [&] { return integer(rng); };
  if (t == ir::DataType::Float32()) {
    fill<float>(a, [&] { return static_cast<float>(r()); });
  } else if (t == ir::DataType::Float(64)) {
    fill<double>(a, r);
  } else if (t == ir::DataType::Float(16)) {
    fill<uint16_t>(a, [&] { return ops::host::double_to_half(r()); });
  } else if (t.is_bool()) {
    std::uniform_int_distribution<int> d(0, 1);
    fill<uint8_t>(a, [&] { return d(rng); });
  } else if (t.is_int() && t.bits() == 8) {
    fill<int8_t>(a, i);
  } else if (t.is_int() && t.bits() == 16) {
    fill<int16_t>(a, i);
  } else if (t.is_int() && t.bits() == 32) {
    fill<int32_t>(a, i);
  } else if (t.is_int() && t.bits() == 64) {
    fill<int64_t>(a, i);
  } else if (t.is_uint() && t.bits() == 8) {
    fill<uint8_t>(a, i);
  } else if (t.is_uint() && t.bits() == 16) {
    fill<uint16_t>(a, i);
  } else if (t.is_uint() && t.bits() == 32) {
    fill<uint32_t>(a, i);
  } else if (t.is_uint() && t.bits() == 64) {
    fill<uint64_t>(a, i);
  } else {
    ADD_FAILURE() << "random_array: no generator for " << t;
  }
  return a;
}

// Element i of a host tensor as a double.
inline double element(const runtime::NDArray& a, int64_t i) {
  DLDataType t = a.dtype();
  bool s = t.code == kDLInt;
  if (t.code == kDLFloat && t.bits == 32) return a.data_as<float>()[i];
  if (t.code == kDLFloat && t.bits == 64) return a.data_as<double>()[i];
  if (t.code == kDLFloat && t.bits == 16)
    return ops::host::half_to_double(a.data_as<uint16_t>()[i]);
  if (t.code == kDLFloat) {
    ADD_FAILURE() << "element: unsupported dtype";
    return 0;
  }
  switch (t.bits) {
    case 8:
      return s ? a.data_as<int8_t>()[i] : a.data_as<uint8_t>()[i];
    case 16:
      return s ? a.data_as<int16_t>()[i] : a.data_as<uint16_t>()[i];
    case 32:
      return s ? a.data_as<int32_t>()[i] : a.data_as<uint32_t>()[i];
    case 64:
      return s ? static_cast<double>(a.data_as<int64_t>()[i])
               : static_cast<double>(a.data_as<uint64_t>()[i]);
  }
  ADD_FAILURE() << "element: unsupported dtype";
  return 0;
}

constexpr int kGpuChecksPerOp = 3;

struct CheckOptions {
  double tol = 1e-5;  // |got - want| <= tol * (1 + |want|) (or equal: infinities); integers and
                      // bools compare exactly
  double lo = -1.0, hi = 1.0;  // range of the random inputs
  uint32_t seed = 1;
  ops::Config config;  // knobs for the schedule (empty: the default rule)
  // Also run the op's GPU schedule through OpenCL: for the first kGpuChecksPerOp calls per
  // operator in a test program (PoCL compiles each kernel with LLVM, a few hundred ms), or for
  // every call with gpu_always.
  bool gpu = true;
  bool gpu_always = false;
  ops::Config gpu_config;  // knobs for the GPU schedule (empty: its default rule)
  // Inputs given explicitly (for indices and the like); random where empty.
  std::vector<runtime::NDArray> inputs;
  // Per output, per element, the magnitude the tolerance is relative to, in place of |want|
  // (e.g. the sum of |x| for a sum, whose cancellation can make |want| small); from the inputs.
  std::function<std::vector<runtime::NDArray>(const std::vector<runtime::NDArray>&)> magnitude;
};

// The operator `outs` = compute(`ins`) with its GPU schedule and `config`, lowered for OpenCL,
// run on PoCL on `inputs`; returns the outputs copied back.
inline std::vector<runtime::NDArray> run_on_opencl(const std::string& name,
                                                   const std::vector<te::Tensor>& ins,
                                                   const std::vector<te::Tensor>& outs,
                                                   const std::vector<runtime::NDArray>& inputs,
                                                   const std::vector<TensorType>& out_types,
                                                   const Attrs& attrs, const ops::Config& config) {
  Target target = Target::parse("opencl");
  te::Schedule s(outs);
  ops::schedule_for(ops::lookup(name), s, outs, attrs, target, config);
  std::vector<te::Tensor> args = ins;
  args.insert(args.end(), outs.begin(), outs.end());
  // Its own name: the host entry is a C function, and an op may be named like one of C's (pow).
  const std::string entry = "op_" + name;
  ir::DeviceFunc f = lower_gpu(s, args, entry, target);
  TempDir dir("anvil_op_test", "the OpenCL kernel");
  runtime::Module module = codegen::build_gpu({f}, target, dir.path() + "/" + entry + ".so");
  runtime::Device& device = runtime::Device::get(kDLOpenCL);

  std::vector<runtime::NDArray> results;
  for (const TensorType& t : out_types) results.push_back(testing::array(t.shape, t.dtype));
  std::vector<const runtime::NDArray*> arrays;
  for (const runtime::NDArray& a : inputs) arrays.push_back(&a);
  for (const runtime::NDArray& a : results) arrays.push_back(&a);
  const runtime::DeviceArrays on_device(device, arrays);
  const std::vector<const DLTensor*>& ptrs = on_device.args();
  int32_t status =
      module.get_function(entry)(ptrs.data(), static_cast<int32_t>(ptrs.size()), module.context());
  EXPECT_EQ(status, 0) << name << " (opencl): " << AnvilGetLastError();
  for (size_t o = 0; o < results.size(); ++o) on_device.read(inputs.size() + o, results[o]);
  return results;
}

// Op `name` compiled through LLVM and run on `inputs`: the kernel's error, empty on success.
inline std::string compiled_error(const std::string& name,
                                  const std::vector<runtime::NDArray>& inputs,
                                  const ops::Attrs& attrs) {
  const ops::OpDef& def = ops::lookup(name);
  std::vector<ops::TensorType> types;
  std::vector<te::Tensor> ins;
  for (size_t i = 0; i < inputs.size(); ++i) {
    DLDataType d = inputs[i].dtype();
    types.push_back(
        {inputs[i].shape(), ir::DataType(static_cast<ir::DataType::Code>(d.code), d.bits)});
    ins.push_back(
        te::placeholder(ops::to_exprs(types[i].shape), types[i].dtype, "in" + std::to_string(i)));
  }
  std::vector<te::Tensor> outs = def.compute(ins, attrs);
  te::Schedule s(outs);
  def.schedule_x86(s, outs, Target::host(), ops::Config());
  std::vector<te::Tensor> args = ins;
  args.insert(args.end(), outs.begin(), outs.end());
  auto module = codegen::LLVMModule::compile({lower(s, args, "check_" + name)}, Target::host());
  std::vector<runtime::NDArray> results;
  std::vector<const DLTensor*> ptrs;
  for (const runtime::NDArray& a : inputs) ptrs.push_back(a.get());
  for (const ops::TensorType& t : def.infer(types, attrs)) {
    results.push_back(testing::array(t.shape, t.dtype));
    ptrs.push_back(results.back().get());
  }
  return testing::call(module->get_function("check_" + name), ptrs) == 0 ? "" : AnvilGetLastError();
}

// Builds, runs and checks operator `name`. Returns the lowered function for further checks.
inline ir::LoweredFunc check_op(const std::string& name, const std::vector<TensorType>& types,
                                const Attrs& attrs, const CheckOptions& options = {}) {
  const ops::OpDef& def = ops::lookup(name);
  std::vector<TensorType> out_types = def.infer(types, attrs);
  std::vector<te::Tensor> ins;
  for (size_t i = 0; i < types.size(); ++i) {
    ins.push_back(
        te::placeholder(ops::to_exprs(types[i].shape), types[i].dtype, "in" + std::to_string(i)));
  }
  std::vector<te::Tensor> outs = def.compute(ins, attrs);
  EXPECT_EQ(outs.size(), out_types.size()) << name;
  for (size_t i = 0; i < outs.size() && i < out_types.size(); ++i) {
    EXPECT_EQ(ops::shape_of(outs[i]), out_types[i].shape) << name << " output " << i;
    EXPECT_EQ(outs[i]->dtype, out_types[i].dtype) << name << " output " << i;
  }
  te::Schedule s(outs);
  Target target = Target::host();
  def.schedule_x86(s, outs, target, options.config);
  std::vector<te::Tensor> args = ins;
  args.insert(args.end(), outs.begin(), outs.end());
  // Not the op's own name: a kernel called "exp" or "tanh" would be the symbol its float64 code
  // calls in libm.
  const std::string kernel = "check_" + name;
  ir::LoweredFunc f = lower(s, args, kernel);
  auto module = codegen::LLVMModule::compile({f}, target);

  std::mt19937 rng(options.seed);
  std::vector<runtime::NDArray> in_arrays = options.inputs;
  for (size_t i = in_arrays.size(); i < types.size(); ++i) {
    in_arrays.push_back(random_array(types[i], rng, options.lo, options.hi));
  }
  std::vector<runtime::NDArray> out_arrays;
  std::vector<const DLTensor*> ptrs;
  for (const runtime::NDArray& a : in_arrays) ptrs.push_back(a.get());
  for (const TensorType& t : out_types) {
    out_arrays.push_back(testing::array(t.shape, t.dtype));
    ptrs.push_back(out_arrays.back().get());
  }
  int32_t status = testing::call(module->get_function(kernel), ptrs);
  EXPECT_EQ(status, 0) << name << ": " << AnvilGetLastError();

  std::vector<runtime::NDArray> want = def.reference(in_arrays, attrs);
  std::vector<runtime::NDArray> scale;
  if (options.magnitude) scale = options.magnitude(in_arrays);
  auto compare = [&](const std::vector<runtime::NDArray>& got, const std::string& where) {
    EXPECT_EQ(want.size(), got.size());
    for (size_t o = 0; o < want.size() && o < got.size(); ++o) {
      ir::DataType t = out_types[o].dtype;
      int bad = 0;
      for (int64_t i = 0; i < want[o].numel() && bad < 5; ++i) {
        double w = element(want[o], i), g = element(got[o], i);
        double mag = o < scale.size() ? element(scale[o], i) : std::abs(w);
        bool ok = t.is_float() ? (g == w || std::abs(g - w) <= options.tol * (1 + mag) ||
                                  (std::isnan(g) && std::isnan(w)))
                               : g == w;
        if (!ok) {
          ++bad;
          ADD_FAILURE() << name << where << " output " << o << " element " << i << ": got " << g
                        << ", want " << w;
        }
      }
    }
  };
  compare(out_arrays, "");
  static std::map<std::string, int> gpu_checks;
  if (options.gpu && (options.gpu_always || gpu_checks[name]++ < kGpuChecksPerOp))
    compare(run_on_opencl(name, ins, outs, in_arrays, out_types, attrs, options.gpu_config),
            " (opencl)");
  return f;
}

}  // namespace anvil::ops_testing
