// Shared by the GPU code generation tests: schedules that bind loops to GPU threads, lowered for
// a GPU target and run through OpenCL on the CPU (PoCL) against naive loops.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "anvil/codegen/gpu/codegen_gpu.h"
#include "anvil/lower/lower.h"
#include "anvil/runtime/device_api.h"
#include "anvil/support/temp_dir.h"

namespace anvil::gpu_testing {

using Values = std::vector<std::vector<float>>;  // one per argument, row-major

inline std::vector<int64_t> shape_of(const te::Tensor& t) {
  std::vector<int64_t> shape;
  for (const ir::Expr& d : t->shape) shape.push_back(*ir::as_const_int(d));
  return shape;
}

inline int64_t numel(const te::Tensor& t) {
  int64_t n = 1;
  for (int64_t d : shape_of(t)) n *= d;
  return n;
}

inline Values random_values(const std::vector<te::Tensor>& args, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  Values v;
  for (const te::Tensor& t : args) {
    v.emplace_back(static_cast<size_t>(numel(t)));
    for (float& x : v.back()) x = dist(rng);
  }
  return v;
}

// Runs the entry `name` of `module` (a GPU library) on device copies of `values`; returns every
// argument's contents afterwards. Arguments sit at a byte offset inside larger allocations, as
// the graph executor's arena places them.
inline Values run_on_device(const runtime::Module& module, const std::string& name,
                            const std::vector<te::Tensor>& args, Values values) {
  runtime::Device& device = runtime::Device::get(static_cast<DLDeviceType>(module.device_type()));
  constexpr uint64_t kOffset = 128;
  std::vector<void*> data;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<DLTensor> tensors(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    size_t bytes = values[i].size() * sizeof(float);
    data.push_back(device.alloc(bytes + kOffset));
    device.copy_to_device(data.back(), kOffset, values[i].data(), bytes);
    shapes.push_back(shape_of(args[i]));
  }
  std::vector<const DLTensor*> ptrs;
  for (size_t i = 0; i < args.size(); ++i) {
    DLTensor& t = tensors[i];
    t.data = data[i];
    t.device = device.dl_device();
    t.ndim = static_cast<int32_t>(shapes[i].size());
    t.dtype = DLDataType{kDLFloat, 32, 1};
    t.shape = shapes[i].data();
    t.strides = nullptr;
    t.byte_offset = kOffset;
    ptrs.push_back(&t);
  }
  AnvilKernel fn = module.get_function(name);
  int32_t status = fn(ptrs.data(), static_cast<int32_t>(ptrs.size()), module.context());
  EXPECT_EQ(status, 0) << AnvilGetLastError();
  device.synchronize();
  for (size_t i = 0; i < args.size(); ++i) {
    device.copy_from_device(values[i].data(), data[i], kOffset, values[i].size() * sizeof(float));
    device.free(data[i]);
  }
  return values;
}

// Compiles C `source` with the system include path hidden (-nostdinc: only the compiler's own
// freestanding headers, stddef.h and stdint.h among them); returns "" or the compiler's output.
inline std::string compile_without_system_headers(const std::string& source,
                                                  const std::string& dir) {
  const std::string file = dir + "/host_no_headers.c";
  {
    std::ofstream out(file);
    out << source;
  }
  const std::string command =
      "cc -std=c99 -ffreestanding -nostdinc -isystem \"$(cc "
      "-print-file-name=include)\" -Wall -Werror -c -o " +
      dir + "/host_no_headers.o " + file + " 2>&1";
  std::string output;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return "cannot run cc";
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, n);
  int status = pclose(pipe);
  return status == 0 ? "" : "cc failed (" + std::to_string(status) + "):\n" + output;
}

// Lowers `s` for OpenCL, builds it, runs it on PoCL and compares output `out` with `expected`
// within `tol` relative to 1 + |expected|. Also lowers it for CUDA and compiles its kernels to PTX
// with NVRTC (nothing runs: there is no NVIDIA GPU here).
inline void check_gpu(const te::Schedule& s, const std::vector<te::Tensor>& args,
                      const Values& inputs, size_t out, const std::vector<float>& expected,
                      float tol = 1e-4f) {
  Target target = Target::parse("opencl");
  ir::DeviceFunc f = lower_gpu(s, args, "kernel", target);
  TempDir dir("anvil_gpu_test", "the GPU test library");
  runtime::Module module = codegen::build_gpu({f}, target, dir.path() + "/kernel.so");
  Values got = run_on_device(module, "kernel", args, inputs);
  ASSERT_EQ(got[out].size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_NEAR(got[out][i], expected[i], tol * (1 + std::abs(expected[i])))
        << "element " << i << " of\n"
        << codegen::generate_opencl({f});
  }

  Target cuda = Target::parse("cuda -arch=sm_90");
  ir::DeviceFunc g = lower_gpu(s, args, "kernel", cuda);
  codegen::DeviceProgram program = codegen::device_program({g}, cuda);
  const std::string& ptx = program.code;
  EXPECT_NE(ptx.find(".target sm_90"), std::string::npos);
  for (const ir::DeviceKernel& k : g.kernels) {
    EXPECT_NE(ptx.find(".entry " + k.name + "("), std::string::npos) << k.name << " in\n" << ptx;
    EXPECT_NE(program.resources.find("  " + k.name + ": "), std::string::npos) << program.resources;
  }
  EXPECT_FALSE(program.binary.empty());
  // The host code needs nothing outside the compiler's own headers: a GPU machine may lack
  // DLPack's.
  std::string host = codegen::generate_gpu_host({g}, cuda, program);
  std::string errors = compile_without_system_headers(host, dir.path());
  EXPECT_EQ(errors, "") << host.substr(0, 4000);
}

}  // namespace anvil::gpu_testing
