#include "anvil/runtime/host_cpu.h"

#include <sched.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace anvil::runtime {
namespace {

#if defined(__x86_64__) || defined(__i386__)
// Where CPUID reports an extension: leaf, subleaf, register (0 eax, 1 ebx, 2 ecx, 3 edx), bit; and
// which register state the OS must save for it (XCR0 bits: AVX's YMM, AVX-512's opmask and ZMM,
// AMX's tiles).
enum : uint64_t {
  kNoState = 0,
  kAvxState = 0x6,
  kAvx512State = 0xe6,
  kAmxState = 0x60000,
};
struct X86Feature {
  const char* name;
  unsigned leaf, subleaf, reg, bit;
  uint64_t state;
};
constexpr X86Feature kX86Features[] = {
    {"sse2", 1, 0, 3, 26, kNoState},
    {"sse3", 1, 0, 2, 0, kNoState},
    {"pclmul", 1, 0, 2, 1, kNoState},
    {"ssse3", 1, 0, 2, 9, kNoState},
    {"fma", 1, 0, 2, 12, kAvxState},
    {"sse4.1", 1, 0, 2, 19, kNoState},
    {"sse4.2", 1, 0, 2, 20, kNoState},
    {"movbe", 1, 0, 2, 22, kNoState},
    {"popcnt", 1, 0, 2, 23, kNoState},
    {"aes", 1, 0, 2, 25, kNoState},
    {"avx", 1, 0, 2, 28, kAvxState},
    {"f16c", 1, 0, 2, 29, kAvxState},
    {"bmi", 7, 0, 1, 3, kNoState},
    {"avx2", 7, 0, 1, 5, kAvxState},
    {"bmi2", 7, 0, 1, 8, kNoState},
    {"avx512f", 7, 0, 1, 16, kAvx512State},
    {"avx512dq", 7, 0, 1, 17, kAvx512State},
    {"adx", 7, 0, 1, 19, kNoState},
    {"avx512ifma", 7, 0, 1, 21, kAvx512State},
    {"avx512cd", 7, 0, 1, 28, kAvx512State},
    {"sha", 7, 0, 1, 29, kNoState},
    {"avx512bw", 7, 0, 1, 30, kAvx512State},
    {"avx512vl", 7, 0, 1, 31, kAvx512State},
    {"avx512vbmi", 7, 0, 2, 1, kAvx512State},
    {"avx512vbmi2", 7, 0, 2, 6, kAvx512State},
    {"gfni", 7, 0, 2, 8, kNoState},
    {"vaes", 7, 0, 2, 9, kAvxState},
    {"vpclmulqdq", 7, 0, 2, 10, kAvxState},
    {"avx512vnni", 7, 0, 2, 11, kAvx512State},
    {"avx512bitalg", 7, 0, 2, 12, kAvx512State},
    {"avx512vpopcntdq", 7, 0, 2, 14, kAvx512State},
    {"avx512vp2intersect", 7, 0, 3, 8, kAvx512State},
    {"amx-bf16", 7, 0, 3, 22, kAmxState},
    {"avx512fp16", 7, 0, 3, 23, kAvx512State},
    {"amx-tile", 7, 0, 3, 24, kAmxState},
    {"amx-int8", 7, 0, 3, 25, kAmxState},
    {"avxvnni", 7, 1, 0, 4, kAvxState},
    {"avx512bf16", 7, 1, 0, 5, kAvx512State},
    {"lzcnt", 0x80000001, 0, 2, 5, kNoState},
    {"sse4a", 0x80000001, 0, 2, 6, kNoState},
    {"xop", 0x80000001, 0, 2, 11, kAvxState},
    {"fma4", 0x80000001, 0, 2, 16, kAvxState},
};

void detect_x86(HostCpu* cpu) {
  unsigned r[4] = {};
  if (!__get_cpuid(0, &r[0], &r[1], &r[2], &r[3])) return;
  const unsigned max_leaf = r[0];
  char vendor[13] = {};
  std::copy_n(reinterpret_cast<const char*>(&r[1]), 4, vendor);
  std::copy_n(reinterpret_cast<const char*>(&r[3]), 4, vendor + 4);
  std::copy_n(reinterpret_cast<const char*>(&r[2]), 4, vendor + 8);
  cpu->vendor = vendor;
  __get_cpuid(1, &r[0], &r[1], &r[2], &r[3]);
  const unsigned base_family = (r[0] >> 8) & 0xf, base_model = (r[0] >> 4) & 0xf;
  cpu->family = static_cast<int>(base_family + (base_family == 0xf ? (r[0] >> 20) & 0xff : 0));
  cpu->model = static_cast<int>(
      base_model + (base_family == 0x6 || base_family == 0xf ? ((r[0] >> 16) & 0xf) << 4 : 0));
  cpu->stepping = static_cast<int>(r[0] & 0xf);
  // The register state the OS saves on a context switch (XCR0), readable once it sets OSXSAVE.
  uint64_t xcr0 = 0;
  if (r[2] & (1u << 27)) {
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    xcr0 = (uint64_t{hi} << 32) | lo;
  }
  unsigned max_extended = __get_cpuid_max(0x80000000, nullptr);
  for (const X86Feature& f : kX86Features) {
    if (f.leaf < 0x80000000 ? f.leaf > max_leaf : f.leaf > max_extended) continue;
    if (!__get_cpuid_count(f.leaf, f.subleaf, &r[0], &r[1], &r[2], &r[3])) continue;
    if ((r[f.reg] >> f.bit & 1) && (xcr0 & f.state) == f.state) cpu->features.push_back(f.name);
  }
  std::sort(cpu->features.begin(), cpu->features.end());
  // The brand string, leaves 0x80000002..4, trimmed.
  if (max_extended >= 0x80000004) {
    char brand[49] = {};
    for (unsigned i = 0; i < 3; ++i) {
      __get_cpuid(0x80000002 + i, &r[0], &r[1], &r[2], &r[3]);
      std::copy_n(reinterpret_cast<const char*>(r), 16, brand + 16 * i);
    }
    std::string b = brand;
    b.erase(0, b.find_first_not_of(' '));
    b.erase(b.find_last_not_of(' ') + 1);
    cpu->brand = b;
  }
}
#endif

HostCpu detect() {
  HostCpu cpu;
#if defined(__x86_64__) || defined(__i386__)
  detect_x86(&cpu);
#endif
  if (cpu.brand.empty()) {
    std::ifstream f("/proc/cpuinfo");
    for (std::string line; std::getline(f, line);) {
      if (line.rfind("model name", 0) != 0 && line.rfind("Model", 0) != 0) continue;
      const size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      const size_t begin = line.find_first_not_of(" \t", colon + 1);
      if (begin != std::string::npos) cpu.brand = line.substr(begin);
      break;
    }
  }
  return cpu;
}

std::string read_line(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return line;
}

// The CPUs the cgroup of this process grants (v2's cpu.max, else v1's CFS quota); 0: no limit.
int cgroup_cpus() {
  std::ifstream cgroups("/proc/self/cgroup");
  for (std::string line; std::getline(cgroups, line);) {
    // "0::/path" (v2) or "N:cpu,cpuacct:/path" (v1).
    const size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (controllers.empty()) {
      if (int n = cpus_of_cgroup_quota(read_line("/sys/fs/cgroup" + path + "/cpu.max"))) return n;
    } else if (("," + controllers + ",").find(",cpu,") != std::string::npos) {
      const std::string dir = "/sys/fs/cgroup/cpu" + (path == "/" ? "" : path);
      const std::string quota = read_line(dir + "/cpu.cfs_quota_us");
      if (quota.empty() || quota[0] == '-') continue;
      if (int n = cpus_of_cgroup_quota(quota + " " + read_line(dir + "/cpu.cfs_period_us")))
        return n;
    }
  }
  return 0;
}

}  // namespace

std::string HostCpu::id() const {
  if (vendor.empty()) return brand.empty() ? "unknown CPU" : brand;
  return vendor + " family " + std::to_string(family) + " model " + std::to_string(model);
}

bool HostCpu::has(std::string_view feature) const {
  return std::binary_search(features.begin(), features.end(), feature);
}

const HostCpu& host_cpu() {
  static const HostCpu cpu = detect();
  return cpu;
}

const std::vector<std::string>& checkable_cpu_features() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
#if defined(__x86_64__) || defined(__i386__)
    for (const X86Feature& f : kX86Features) v.push_back(f.name);
    std::sort(v.begin(), v.end());
#endif
    return v;
  }();
  return names;
}

std::vector<std::string> missing_cpu_features(const std::vector<std::string>& required,
                                              const HostCpu& cpu) {
  const std::vector<std::string>& checkable = checkable_cpu_features();
  std::vector<std::string> missing;
  for (const std::string& f : required)
    if (std::binary_search(checkable.begin(), checkable.end(), f) && !cpu.has(f))
      missing.push_back(f);
  return missing;
}

int cpus_of_cgroup_quota(std::string_view cpu_max) {
  std::istringstream in{std::string(cpu_max)};
  std::string quota, period;
  if (!(in >> quota >> period)) return 0;
  int64_t q = 0, p = 0;
  auto number = [](const std::string& s, int64_t* v) {
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
    return ec == std::errc() && ptr == s.data() + s.size() && *v > 0;
  };
  if (!number(quota, &q) || !number(period, &p)) return 0;
  return static_cast<int>(std::min<int64_t>((q + p - 1) / p, 1 << 20));
}

int available_cores() {
  static const int cores = [] {
    int n = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) n = CPU_COUNT(&set);
    if (int quota = cgroup_cpus(); quota > 0) n = std::min(n, quota);
    return std::max(1, n);
  }();
  return cores;
}

}  // namespace anvil::runtime
