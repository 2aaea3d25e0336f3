// Target: what to generate code for, parsed from strings like "llvm -mcpu=znver3",
// "llvm -mtriple=aarch64-linux-gnu", "c", "cuda -arch=sm_90", "opencl".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace anvil {

struct Target {
  enum class Kind { kLLVM, kC, kCUDA, kOpenCL };

  Kind kind = Kind::kLLVM;
  std::string triple;              // empty: the host's
  std::string mcpu;                // empty or "native": the host CPU
  std::vector<std::string> mattr;  // extra features, e.g. "+avx2", "-avx512f"
  int num_threads = 0;             // 0: the runtime's default
  // Width of the widest vector register in bits for the resolved CPU (256 for AVX2, 512 for
  // AVX-512, 128 for NEON); filled by resolve_host().
  int vector_bits = 0;
  // GPU targets: the CUDA architecture ("sm_90"), the most threads per block and the most shared
  // (OpenCL: local) memory per block a kernel may use. Defaults: sm_90, 1024 threads and 48 KiB
  // (CUDA's static shared memory limit) for cuda; 256 threads and 32 KiB for opencl, which
  // embedded GPUs (Mali) also allow.
  std::string arch;
  int64_t max_threads_per_block = 0;
  int64_t max_shared_memory = 0;

  bool is_gpu() const { return kind == Kind::kCUDA || kind == Kind::kOpenCL; }
  // Throws anvil::Error naming the bad part for an unknown kind or option.
  static Target parse(std::string_view text);
  // The host machine: triple, CPU name, features and vector width as the host reports them.
  static Target host();
  // Canonical text: parse(t.str()) == t.
  std::string str() const;
  // Floats per vector register.
  int vector_lanes_f32() const { return vector_bits > 0 ? vector_bits / 32 : 8; }

  friend bool operator==(const Target&, const Target&) = default;
};

}  // namespace anvil
