// `make run`: the most complete end-to-end demonstration so far. A matrix multiply followed by a
// ReLU is written as tensor expressions, scheduled for this CPU (tiling, a register tile kept in
// a local buffer, vectorization, unrolling, parallel blocks), lowered, compiled by LLVM, run, and
// checked against naive loops.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <random>

#include "anvil/codegen/llvm/codegen_llvm.h"
#include "anvil/ir/op.h"
#include "anvil/ir/printer.h"
#include "anvil/lower/lower.h"
#include "anvil/runtime/ndarray.h"

using namespace anvil;
using namespace anvil::ir;

int main() {
  const int M = 384, N = 512, K = 256;
  Target target = Target::host();

  // What to compute.
  te::Tensor A = te::placeholder({M, K}, DataType::Float32(), "A");
  te::Tensor B = te::placeholder({K, N}, DataType::Float32(), "B");
  IterVar k = te::reduce_axis(K, "k");
  te::Tensor C = te::compute(
      {M, N}, [&](Var i, Var j) { return te::sum(A(i, k->var) * B(k->var, j), {k}); }, "C");
  te::Tensor R = te::compute(
      {M, N}, [&](Var i, Var j) { return max(C(i, j), 0.0f); }, "R");

  // How to compute it.
  int lanes = target.vector_lanes_f32();
  te::Schedule s({R});
  te::Tensor CC = s.cache_write(C, MemoryScope::kLocal);
  s[C].compute_inline();
  std::vector<IterVar> t = s[R].tile(s[R].axis()[0], s[R].axis()[1], 6, 2 * lanes);
  s[R].parallel(t[0]);
  s[R].vectorize(t[3]);
  s[CC].compute_at(s[R], t[1]);
  auto [ko, ki] = s[CC].split(k, 4);
  s[CC].reorder({ko, ki, s[CC].axis()[0], s[CC].axis()[1]});
  s[CC].unroll(ki);
  s[CC].unroll(s[CC].axis()[0]);
  s[CC].vectorize(s[CC].axis()[1]);

  LowerOptions options;
  options.print_after = {"loops"};
  options.dump_to = &std::cout;
  std::cout << "== the loop nest the schedule describes\n";
  LoweredFunc f = lower(s, {A, B, R}, "matmul_relu", options);
  auto module = codegen::LLVMModule::compile({f}, target);
  AnvilKernel kernel = module->get_function("matmul_relu");

  runtime::NDArray a = runtime::NDArray::empty({M, K}, runtime::dl_float32());
  runtime::NDArray b = runtime::NDArray::empty({K, N}, runtime::dl_float32());
  runtime::NDArray r = runtime::NDArray::empty({M, N}, runtime::dl_float32());
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (int64_t i = 0; i < a.numel(); ++i) a.data_as<float>()[i] = dist(rng);
  for (int64_t i = 0; i < b.numel(); ++i) b.data_as<float>()[i] = dist(rng);

  const DLTensor* args[] = {a.get(), b.get(), r.get()};
  auto start = std::chrono::steady_clock::now();
  if (kernel(args, 3, nullptr) != 0) {
    std::cerr << "kernel failed: " << AnvilGetLastError() << "\n";
    return 1;
  }
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

  double max_err = 0;
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) {
      float acc = 0;
      for (int x = 0; x < K; ++x)
        acc += a.data_as<float>()[i * K + x] * b.data_as<float>()[x * N + j];
      max_err = std::max(max_err, static_cast<double>(std::abs(std::max(acc, 0.0f) -
                                                               r.data_as<float>()[i * N + j])));
    }
  }
  std::printf("== compiled for %s, ran %dx%dx%d in %.2f ms (first call, %d threads)\n",
              target.str().c_str(), M, N, K, ms, AnvilGetNumThreads());
  std::printf("== max |error| against naive loops: %.2e (%s)\n", max_err,
              max_err < 1e-3 ? "ok" : "MISMATCH");
  return max_err < 1e-3 ? 0 : 1;
}
