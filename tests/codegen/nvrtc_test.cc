// NVRTC: CUDA C++ to PTX, and every diagnostic of the wrapper. The CUDA toolkit is part of the
// CI image (/usr/local/cuda), so a missing NVRTC fails these tests rather than skipping them.
#include "anvil/codegen/cuda/nvrtc.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "testing/errors.h"

namespace anvil::testing {
namespace {

using codegen::compile_cuda_to_ptx;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Threads, shared memory and a barrier; no standard headers (NVRTC provides none).
const char* const kAxpy = R"(
extern "C" __global__ void axpy(float* y, const float* x, float a, int n) {
  __shared__ float tile[128];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = i < n ? x[i] : 0.0f;
  __syncthreads();
  if (i < n) y[i] = a * tile[blockDim.x - 1 - threadIdx.x] + y[i];
}
)";

TEST(Nvrtc, IsAvailable) {
  std::string why;
  ASSERT_TRUE(codegen::nvrtc_available(&why)) << why;
  EXPECT_EQ(why, "");
  std::printf("NVRTC %s\n", codegen::nvrtc_version().c_str());
}

TEST(Nvrtc, CompilesAKernelToPtx) {
  auto start = std::chrono::steady_clock::now();
  std::string ptx = compile_cuda_to_ptx(kAxpy, "axpy.cu", "sm_90");
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("compiled axpy in %.1f ms (%zu bytes of PTX)\n", ms, ptx.size());
  EXPECT_TRUE(contains(ptx, ".target sm_90")) << ptx;
  EXPECT_TRUE(contains(ptx, ".visible .entry axpy(")) << ptx;
  EXPECT_TRUE(contains(ptx, ".shared")) << ptx;
  EXPECT_TRUE(contains(ptx, "bar.sync")) << ptx;
  EXPECT_EQ(ptx.find('\0'), std::string::npos);
  // A second architecture from the same source.
  EXPECT_TRUE(contains(compile_cuda_to_ptx(kAxpy, "axpy.cu", "sm_80"), ".target sm_80"));
}

TEST(Nvrtc, DeviceFunctionsByDefaultAndNoFastMath) {
  // -default-device: `scale` needs no __device__. No fast math: the division stays IEEE
  // (div.rn), not the approximate div.approx/div.full.
  std::string ptx = compile_cuda_to_ptx(R"(
float scale(float v, float d) { return v / d; }
extern "C" __global__ void divide(float* y, const float* x, float d) {
  y[threadIdx.x] = scale(x[threadIdx.x], d);
}
)",
                                        "divide.cu", "sm_90");
  EXPECT_TRUE(contains(ptx, ".entry divide(")) << ptx;
  EXPECT_TRUE(contains(ptx, "div.rn.f32")) << ptx;
  EXPECT_FALSE(contains(ptx, "div.approx")) << ptx;
  EXPECT_FALSE(contains(ptx, "div.full")) << ptx;
}

TEST(Nvrtc, SyntaxErrorCarriesTheLog) {
  std::string e = user_error([] {
    compile_cuda_to_ptx("extern \"C\" __global__ void broken(float* y) {\n  y[0] = 1.0f\n}\n",
                        "broken.cu", "sm_90");
  });
  EXPECT_TRUE(contains(e, "CUDA compilation of 'broken.cu' for sm_90 failed")) << e;
  EXPECT_TRUE(contains(e, "broken.cu(3): error")) << e;  // NVRTC's log: the name, line and error
  EXPECT_TRUE(contains(e, "expected a \";\"")) << e;
}

TEST(Nvrtc, UndeclaredIdentifierCarriesTheLog) {
  std::string e = user_error([] {
    compile_cuda_to_ptx("extern \"C\" __global__ void k(float* y) { y[0] = undefined_thing; }",
                        "undeclared.cu", "sm_90");
  });
  EXPECT_TRUE(contains(e, "undeclared.cu(1): error")) << e;
  EXPECT_TRUE(contains(e, "undefined_thing")) << e;
}

TEST(Nvrtc, ArchitecturesNvrtcRefuses) {
  std::string e = user_error([] { compile_cuda_to_ptx(kAxpy, "axpy.cu", "sm_1"); });
  EXPECT_TRUE(contains(e, "refuses architecture 'sm_1' (--gpu-architecture=compute_1)")) << e;
  EXPECT_TRUE(contains(e, "sm_90")) << e;  // the list of what it supports
}

TEST(Nvrtc, MalformedArchitectures) {
  for (const char* arch : {"", "sm_", "90", "compute_90", "gfx90a", "sm_90 -G", "sm_9x0"}) {
    std::string e = user_error([&] { compile_cuda_to_ptx(kAxpy, "axpy.cu", arch); });
    EXPECT_EQ(e, std::string("CUDA compilation of 'axpy.cu': unknown architecture '") + arch +
                     "' (expected sm_<number>, such as sm_80 or sm_90)");
  }
}

TEST(Nvrtc, ConcurrentCompilations) {
  std::string expected = compile_cuda_to_ptx(kAxpy, "axpy.cu", "sm_90");
  std::vector<std::string> ptx(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < ptx.size(); ++t)
    threads.emplace_back([&, t] { ptx[t] = compile_cuda_to_ptx(kAxpy, "axpy.cu", "sm_90"); });
  for (std::thread& t : threads) t.join();
  for (const std::string& p : ptx) EXPECT_EQ(p, expected);
}

// The library is opened once per process: what ANVIL_NVRTC chooses is checked in a fresh process
// (the threadsafe death-test style re-executes this test), which prints the error and exits.
void compile_with_nvrtc_from(const char* path) {
  setenv("ANVIL_NVRTC", path, 1);
  try {
    compile_cuda_to_ptx(kAxpy, "axpy.cu", "sm_90");
  } catch (const Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    std::exit(3);
  }
  std::exit(0);
}

TEST(NvrtcDeathTest, AMissingExplicitLibraryIsAnError) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(compile_with_nvrtc_from("/nonexistent/libnvrtc.so.13"), ::testing::ExitedWithCode(3),
              "could not be opened from ANVIL_NVRTC=/nonexistent/libnvrtc.so.13: .*No such file.*"
              "part of the CUDA toolkit");
}

TEST(NvrtcDeathTest, ALibraryThatIsNotNvrtcIsAnError) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(compile_with_nvrtc_from("libm.so.6"), ::testing::ExitedWithCode(3),
              "ANVIL_NVRTC=libm.so.6: loaded, but it lacks nvrtcCreateProgram, ");
}

TEST(NvrtcDeathTest, AnExplicitLibraryIsUsed) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(compile_with_nvrtc_from("/usr/local/cuda/lib64/libnvrtc.so.13"),
              ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace anvil::testing
