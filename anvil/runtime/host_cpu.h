// The CPU this process runs on, as the runtime needs to know it: what it is (vendor, brand,
// family, model), which instruction-set extensions it and the operating system enable, and how
// many cores this process may use.
//
// Why the runtime: an artifact's code is compiled for one CPU's extensions (AVX-512 on a Zen 5,
// say), and run where they are missing it dies of SIGILL at the first kernel. The artifact names
// the extensions its code may use (GraphProgram::cpu_features); Model::load compares them with
// these before it loads any code, and refuses with the missing ones named.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace anvil::runtime {

struct HostCpu {
  std::string vendor;  // CPUID's vendor string: "AuthenticAMD", "GenuineIntel"; empty off x86
  std::string brand;   // "AMD EPYC 9B45"; /proc/cpuinfo's model name elsewhere
  int family = 0, model = 0, stepping = 0;  // CPUID's, extended fields included (x86)
  // The extensions of checkable_cpu_features() that the CPU has and the OS saves the registers
  // of (AVX-512 needs both), in LLVM's names ("avx2", "avx512f"), sorted.
  std::vector<std::string> features;

  // "AuthenticAMD family 26 model 2": the identity tuning records and reports name.
  std::string id() const;
  bool has(std::string_view feature) const;
};

// This process's CPU, detected once.
const HostCpu& host_cpu();

// The extensions the runtime can detect on this architecture (x86-64: the SIMD, bit-manipulation
// and AMX extensions compiled code may use), in LLVM's names. Empty elsewhere: there, no
// artifact is refused.
const std::vector<std::string>& checkable_cpu_features();

// The features of `required` (LLVM names) that `cpu` lacks; features the runtime cannot detect
// are not counted.
std::vector<std::string> missing_cpu_features(const std::vector<std::string>& required,
                                              const HostCpu& cpu);

// The cores this process may use: its affinity mask, capped by its cgroup's CPU quota (a
// container limited to 2 CPUs on a 64-core host gets 2, not 64). At least 1.
int available_cores();

// The CPUs a cgroup v2 `cpu.max` line ("150000 100000": quota and period in microseconds) grants,
// rounded up (here 2); 0 for "max" (no limit) or a line that does not parse.
int cpus_of_cgroup_quota(std::string_view cpu_max);

}  // namespace anvil::runtime
