// NVRTC: CUDA C++ to PTX, and every diagnostic of the wrapper. The CUDA toolkit is part of the
// CI image (/usr/local/cuda), so a missing NVRTC fails these tests rather than skipping them.
#include "anvil/codegen/cuda/nvrtc.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "anvil/support/temp_dir.h"
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
  EXPECT_TRUE(contains(e, "refuses architecture 'sm_1' (--gpu-architecture=sm_1)")) << e;
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

// The machine code for the real architecture comes with the PTX, and ptxas's report of the
// kernel's resources (the host has no GPU: ptxas runs inside NVRTC).
TEST(Nvrtc, CompilesMachineCodeAndReportsResources) {
  codegen::CudaBinary b = codegen::compile_cuda(kAxpy, "axpy.cu", "sm_90");
  EXPECT_EQ(b.arch, "sm_90");
  EXPECT_TRUE(contains(b.ptx, ".target sm_90"));
  ASSERT_GT(b.cubin.size(), 4u);
  EXPECT_EQ(b.cubin.substr(0, 4), std::string("\x7f"
                                              "ELF"));  // an ELF image, as cubins are
  ASSERT_EQ(b.kernels.size(), 1u);
  EXPECT_EQ(b.kernels[0].name, "axpy");
  EXPECT_GT(b.kernels[0].registers, 0);
  EXPECT_LE(b.kernels[0].registers, 255);
  EXPECT_EQ(b.kernels[0].shared_bytes, 512);  // float tile[128]
  EXPECT_EQ(b.kernels[0].spill_store_bytes, 0);
  std::string table = codegen::format_cuda_resources(b.kernels, b.arch);
  EXPECT_TRUE(contains(table, "device code for sm_90 (ptxas): 1 kernels")) << table;
  EXPECT_TRUE(contains(table, "  axpy: ")) << table;
}

TEST(Nvrtc, ParsesThePtxasReport) {
  const std::string log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'k0' for 'sm_90'\n"
      "ptxas info    : Function properties for k0\n"
      "ptxas         .     24 bytes stack frame, 16 bytes spill stores, 12 bytes spill loads\n"
      "ptxas info    : Used 255 registers, used 1 barriers, 6144 bytes smem, 380 bytes cmem[0]\n"
      "ptxas info    : Compile time = 2.820 ms\n"
      "ptxas info    : Compiling entry function 'k1' for 'sm_90'\n"
      "ptxas info    : Function properties for k1\n"
      "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 8 registers, used 0 barriers\n";
  std::vector<codegen::CudaKernelResources> k = codegen::parse_ptxas_info(log);
  ASSERT_EQ(k.size(), 2u);
  EXPECT_EQ(k[0].name, "k0");
  EXPECT_EQ(k[0].registers, 255);
  EXPECT_EQ(k[0].shared_bytes, 6144);
  EXPECT_EQ(k[0].stack_frame_bytes, 24);
  EXPECT_EQ(k[0].spill_store_bytes, 16);
  EXPECT_EQ(k[0].spill_load_bytes, 12);
  EXPECT_EQ(k[1].name, "k1");
  EXPECT_EQ(k[1].registers, 8);
  EXPECT_EQ(k[1].shared_bytes, 0);
  EXPECT_EQ(k[1].spill_store_bytes, 0);
  std::string table = codegen::format_cuda_resources(k, "sm_90");
  EXPECT_TRUE(contains(table, "2 kernels, at most 255 registers, 1 with spills")) << table;
  EXPECT_TRUE(contains(table, "k0: 255 registers, 6144 B shared, spills 16 B stored / 12 B loaded"))
      << table;
  EXPECT_EQ(codegen::format_cuda_resources({}, "sm_90"), "");
}

// Where NVRTC is looked for: the names, then the toolkit's directories, then the NVIDIA wheels of
// the bench's Python (a fake interpreter here, reporting a fake site-packages), in that order.
TEST(Nvrtc, SearchOrderEndsWithThePythonWheels) {
  TempDir dir("anvil_nvrtc_search", "the fake CUDA and Python trees");
  namespace fs = std::filesystem;
  const std::string site = dir.path() + "/lib/python3.12/site-packages";
  fs::create_directories(site + "/nvidia/cu13/lib");
  fs::create_directories(site + "/nvidia/cuda_nvrtc/lib");
  fs::create_directories(site + "/nvidia/cublas/lib");  // not NVRTC's
  const std::string python = dir.path() + "/python3";
  {
    std::ofstream f(python);
    f << "#!/bin/sh\necho " << site << "\necho /nonexistent/site-packages\n";
  }
  fs::permissions(python, fs::perms::owner_all);
  setenv("CUDA_HOME", (dir.path() + "/cuda").c_str(), 1);
  setenv("ANVIL_BENCH_PYTHON", python.c_str(), 1);
  std::vector<std::string> dirs = codegen::nvrtc_search_dirs();
  EXPECT_EQ(dirs,
            (std::vector<std::string>{dir.path() + "/cuda/lib64", "/usr/local/cuda/lib64",
                                      "/usr/local/cuda/targets/x86_64-linux/lib",
                                      site + "/nvidia/cu13/lib", site + "/nvidia/cuda_nvrtc/lib"}));
  std::vector<std::string> candidates = codegen::nvrtc_candidates();
  ASSERT_EQ(candidates.size(), 4u + 4u * dirs.size());
  EXPECT_EQ(candidates[0], "libnvrtc.so");
  EXPECT_EQ(candidates[3], "libnvrtc.so.11.2");
  EXPECT_EQ(candidates[4], dir.path() + "/cuda/lib64/libnvrtc.so");
  EXPECT_EQ(candidates[4 + 4 * 3 + 1], site + "/nvidia/cu13/lib/libnvrtc.so.13");
  EXPECT_EQ(candidates.back(), site + "/nvidia/cuda_nvrtc/lib/libnvrtc.so.11.2");

  // A Python that does not run adds no directory.
  setenv("ANVIL_BENCH_PYTHON", (dir.path() + "/no-such-python").c_str(), 1);
  EXPECT_EQ(codegen::nvrtc_search_dirs().size(), 3u);
  unsetenv("CUDA_HOME");
  unsetenv("ANVIL_BENCH_PYTHON");
}

}  // namespace
}  // namespace anvil::testing
