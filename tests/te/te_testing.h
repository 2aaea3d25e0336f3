// Shared by the tensor-expression tests: lowers a schedule, compiles it with both code
// generators (LLVM JIT and C through the system compiler), runs both on the same inputs, and
// returns every argument's contents afterwards.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "anvil/codegen/c/codegen_c.h"
#include "anvil/codegen/llvm/codegen_llvm.h"
#include "anvil/lower/lower.h"
#include "anvil/runtime/ndarray.h"

namespace anvil::te_testing {

using Values = std::vector<std::vector<float>>;  // one vector per argument, row-major

inline int64_t numel(const te::Tensor& t) {
  int64_t n = 1;
  for (const ir::Expr& d : t->shape) n *= *ir::as_const_int(d);
  return n;
}

// Random inputs for every argument (outputs are filled too, with garbage the kernel must
// overwrite).
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

inline std::string library_path() {
  static int counter = 0;
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("anvil_te_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return (dir / ("m" + std::to_string(counter++) + ".so")).string();
}

inline Values run_kernel(AnvilKernel kernel, const std::vector<te::Tensor>& args, Values values) {
  std::vector<runtime::NDArray> arrays;
  std::vector<const DLTensor*> ptrs;
  for (size_t i = 0; i < args.size(); ++i) {
    std::vector<int64_t> shape;
    for (const ir::Expr& d : args[i]->shape) shape.push_back(*ir::as_const_int(d));
    arrays.push_back(runtime::NDArray::empty(shape, runtime::dl_float32()));
    std::memcpy(arrays.back().data(), values[i].data(), values[i].size() * sizeof(float));
    ptrs.push_back(arrays.back().get());
  }
  int32_t status = kernel(ptrs.data(), static_cast<int32_t>(ptrs.size()), nullptr);
  EXPECT_EQ(status, 0) << AnvilGetLastError();
  for (size_t i = 0; i < args.size(); ++i) {
    std::memcpy(values[i].data(), arrays[i].data(), values[i].size() * sizeof(float));
  }
  return values;
}

// Lowers and runs the schedule through LLVM and through C; checks output `out` of each against
// `expected` (the naive reference's result) within `tol` relative to 1 + |expected|.
inline void check_both(const te::Schedule& s, const std::vector<te::Tensor>& args,
                       const Values& inputs, size_t out, const std::vector<float>& expected,
                       float tol = 1e-4f) {
  ir::LoweredFunc f = lower(s, args, "kernel");
  auto llvm = codegen::LLVMModule::compile({f}, Target::host());
  Values got_llvm = run_kernel(llvm->get_function("kernel"), args, inputs);
  runtime::Module c = codegen::build_c({f}, library_path());
  Values got_c = run_kernel(c.get_function("kernel"), args, inputs);
  for (const auto& [backend, got] : {std::pair{"llvm", &got_llvm}, std::pair{"c", &got_c}}) {
    ASSERT_EQ((*got)[out].size(), expected.size());
    int bad = 0;
    for (size_t i = 0; i < expected.size() && bad < 5; ++i) {
      float e = expected[i], g = (*got)[out][i];
      if (!(std::abs(g - e) <= tol * (1.0f + std::abs(e)))) {
        ++bad;
        ADD_FAILURE() << backend << ": element " << i << " is " << g << ", expected " << e;
      }
    }
  }
}

}  // namespace anvil::te_testing
