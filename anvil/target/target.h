// Target: what to generate code for, parsed from strings like "llvm -mcpu=znver3",
// "llvm -mtriple=aarch64-linux-gnu", "c", "cuda -arch=sm_90", "opencl"; and, for CPU targets, the
// machine it describes (vector width and registers, FMA pipes, caches, cores), which the
// schedules' default rules derive their tile sizes from. This is the only place that knows the
// machine: nothing in anvil/ops/ states a cache size or a register count.
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
  // AVX-512, 128 for NEON); filled for the host, or given by -vector-bits.
  int vector_bits = 0;

  // The machine (CPU targets). For the host (no -mcpu, or -mcpu=native, and no -mtriple) it is
  // detected: caches from sysfs (CPUID where sysfs has none), FMA pipes from the CPU's family; for
  // -mcpu=NAME the published figures of that CPU (machine_table); otherwise conservative
  // defaults. None of it is part of str(): records and artifacts name a target by its options.
  int vector_registers = 0;  // architectural vector registers (16 AVX2, 32 AVX-512 and NEON)
  int fma_units = 0;         // vector FMA pipes per core, each vector_bits wide (Zen 4's 512-bit
                             // FMAs issue as two 256-bit halves: 1)
  int fma_pipe_bits = 0;     // the width of one physical FMA pipe when narrower than vector_bits
                             // (Zen 4: 256, two of them make its one 512-bit unit); 0: as wide
  int64_t cache_line_bytes = 0;
  int64_t l1d_bytes = 0;       // per core
  int l1d_ways = 0;            // associativity: l1d_bytes / l1d_ways bytes map to one set
  int64_t l2_bytes = 0;        // per core
  int64_t l3_bytes = 0;        // the whole L3 one core shares with others (0: none)
  int cores = 0;               // cores this process may run on (host), or a core complex's (table)
  std::string machine_source;  // "host", "table" (-mcpu=NAME) or "default" (an unknown CPU)

  // GPU targets: the CUDA architecture ("sm_90"), the most threads per block and the most shared
  // (OpenCL: local) memory per block a kernel may use. Defaults: sm_90, 1024 threads and 48 KiB
  // (CUDA's static shared memory limit) for cuda; 256 threads and 32 KiB for opencl, which
  // embedded GPUs (Mali) also allow.
  std::string arch;
  int64_t max_threads_per_block = 0;
  int64_t max_shared_memory = 0;
  // The multiprocessors (CUDA SMs, OpenCL compute units) that run blocks at once: schedules
  // split a reduction when a kernel would launch fewer blocks than this. -multiprocessors=N,
  // else the published figure of the architecture's data-center part (sm_70: 80, sm_80: 108,
  // sm_90: 132); 0 (unknown: no split unless tuned) for other architectures and for opencl.
  int64_t multiprocessors = 0;

  bool is_gpu() const { return kind == Kind::kCUDA || kind == Kind::kOpenCL; }
  // Whether the machine facts are this host's (detected, and the peak measurable).
  bool is_host() const { return machine_source == "host"; }
  // Throws anvil::Error naming the bad part for an unknown kind or option.
  static Target parse(std::string_view text);
  // The host machine: triple, CPU name, features and vector width as the host reports them.
  static Target host();
  // Canonical text: parse(t.str()) == t.
  std::string str() const;
  // Elements of `element_bits` per vector register.
  int vector_lanes(int element_bits) const {
    return (vector_bits > 0 ? vector_bits : 256) / element_bits;
  }
  // Floats per vector register.
  int vector_lanes_f32() const { return vector_lanes(32); }
  // Bytes of L1 that map to one set (a "way"): accesses this far apart compete for the same set.
  int64_t l1d_way_bytes() const { return l1d_ways > 0 ? l1d_bytes / l1d_ways : 4096; }
  // FP32 FLOPs one core issues per cycle: a fused multiply-add per lane per FMA pipe.
  double flops_per_cycle() const { return 2.0 * fma_lanes_per_cycle(vector_lanes_f32()); }
  // The float lanes the FMA pipes retire per cycle with vectors of `lanes` floats: a vector
  // narrower than a pipe leaves the rest of it idle, so on Zen 5 half vectors go at half the
  // rate, while on Zen 4, whose 512-bit FMAs are two 256-bit halves, they lose nothing.
  double fma_lanes_per_cycle(int64_t lanes) const;
  // The bytes per cycle one core streams from memory while the others share it: an assumption
  // (no CPU reports it), about 12 GB/s at 4 GHz, the per-core share of a server's DRAM
  // bandwidth. With flops_per_cycle it is the machine's balance, what a weight streamed at
  // batch 1 must repay per byte (Winograd's rule).
  double memory_bytes_per_cycle() const { return 3.0; }
  // The FP32 peak of one core in GFLOP/s: measured on the host (target/peak.h, once per process);
  // 0 for any other machine, whose clock is unknown.
  double peak_gflops_per_core() const;
  // The machine facts, one per line ("L2 per core: 2 MiB"), for `anvil env`.
  std::string describe() const;

  friend bool operator==(const Target&, const Target&) = default;
};

// The published machine facts of a CPU by its LLVM name ("znver4", "sapphirerapids"), for
// targets that name one; false when the table does not know it.
bool machine_table(const std::string& mcpu, Target* t);

}  // namespace anvil
