#include "anvil/target/target.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "anvil/runtime/host_cpu.h"
#include "anvil/support/error.h"
#include "anvil/target/peak.h"

namespace anvil {

namespace {

// The widest vector register of the host, from the CPU's feature bits.
int host_vector_bits() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return 512;
  if (__builtin_cpu_supports("avx")) return 256;
  return 128;
#else
  return 128;
#endif
}

// One level of the cache hierarchy as the host reports it.
struct CacheLevel {
  int64_t bytes = 0;
  int ways = 0;
  int64_t line = 0;
};
struct HostCaches {
  CacheLevel l1d, l2, l3;
};

std::string read_line(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  std::getline(f, s);
  return s;
}

// "48K", "2048K", "260M" (sysfs's cache sizes).
int64_t parse_size(const std::string& s) {
  int64_t n = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc() || n <= 0) return 0;
  char unit = ptr < s.data() + s.size() ? *ptr : ' ';
  return unit == 'K' ? n << 10 : unit == 'M' ? n << 20 : unit == 'G' ? n << 30 : n;
}

// The caches of the CPU this process starts on, from sysfs (Linux's view of CPUID or the device
// tree); each level's size is one instance's, which for L1 and L2 is one core's.
HostCaches sysfs_caches() {
  HostCaches c;
  for (int i = 0; i < 16; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    const std::string level = read_line(dir + "level");
    if (level.empty()) break;
    const std::string type = read_line(dir + "type");
    if (type == "Instruction") continue;
    CacheLevel l;
    l.bytes = parse_size(read_line(dir + "size"));
    l.ways = std::atoi(read_line(dir + "ways_of_associativity").c_str());
    l.line = std::atoi(read_line(dir + "coherency_line_size").c_str());
    if (level == "1") c.l1d = l;
    if (level == "2") c.l2 = l;
    if (level == "3") c.l3 = l;
  }
  return c;
}

// The same from CPUID's deterministic cache parameters (leaf 4 on Intel, 0x8000001D on AMD), for a
// system without sysfs's cache directory.
HostCaches cpuid_caches() {
  HostCaches c;
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx)) return c;
  const bool amd = ebx == 0x68747541;  // "Auth(enticAMD)"
  const unsigned leaf = amd ? 0x8000001D : 4;
  for (unsigned sub = 0; sub < 16; ++sub) {
    if (!__get_cpuid_count(leaf, sub, &eax, &ebx, &ecx, &edx)) break;
    const unsigned type = eax & 0x1f;  // 0: no more caches, 1 data, 2 instruction, 3 unified
    if (type == 0) break;
    if (type == 2) continue;
    CacheLevel l;
    l.ways = static_cast<int>((ebx >> 22) + 1);
    l.line = (ebx & 0xfff) + 1;
    l.bytes = int64_t{l.ways} * (((ebx >> 12) & 0x3ff) + 1) * l.line * (int64_t{ecx} + 1);
    const unsigned level = (eax >> 5) & 7;
    if (level == 1) c.l1d = l;
    if (level == 2) c.l2 = l;
    if (level == 3) c.l3 = l;
  }
#endif
  return c;
}

// Vector FMA pipes per core at the host's widest vector width, by CPU family: AMD's Zen 4
// executes a 512-bit FMA as two 256-bit halves on its two pipes (one 512-bit FMA per cycle); Zen 5
// has two full-width pipes, as do Zen 2 and 3 at 256 bits and Intel's cores with AVX2 or
// AVX-512 (server parts). The measured peak (peak_gflops_per_core) is the figure to trust.
// Sets fma_units, and fma_pipe_bits where the units are made of narrower pipes.
void host_fma_units(Target* t) {
  t->fma_units = 2;
#if defined(__x86_64__) || defined(__i386__)
  const runtime::HostCpu& cpu = runtime::host_cpu();
  const bool amd = cpu.vendor == "AuthenticAMD";
  if (amd && cpu.family == 0x19 && t->vector_bits >= 512) {
    t->fma_units = 1;
    t->fma_pipe_bits = 256;
  } else if ((amd && cpu.family < 0x17) || !cpu.has("fma")) {
    t->fma_units = 1;
  }
#endif
}

void fill_caches(Target* t, const HostCaches& c) {
  t->l1d_bytes = c.l1d.bytes;
  t->l1d_ways = c.l1d.ways;
  t->l2_bytes = c.l2.bytes;
  t->l3_bytes = c.l3.bytes;
  t->cache_line_bytes = c.l1d.line;
}

// The host's machine facts, detected once per process.
Target host_machine() {
  Target t;
  t.vector_bits = host_vector_bits();
#if defined(__x86_64__) || defined(__i386__)
  t.vector_registers = t.vector_bits >= 512 ? 32 : 16;
#else
  t.vector_registers = 32;
#endif
  host_fma_units(&t);
  HostCaches c = sysfs_caches();
  if (c.l1d.bytes == 0 || c.l2.bytes == 0) c = cpuid_caches();
  fill_caches(&t, c);
  t.cores = runtime::available_cores();  // affinity and cgroup quota
  t.machine_source = "host";
  return t;
}

// Conservative figures for a CPU nothing is known of: the smallest caches of the x86-64 and
// AArch64 server cores the rules were measured on.
void default_machine(Target* t, bool aarch64) {
  t->vector_registers = aarch64 || t->vector_bits >= 512 ? 32 : 16;
  t->fma_units = 2;
  t->cache_line_bytes = 64;
  t->l1d_bytes = 32 << 10;
  t->l1d_ways = 8;
  t->l2_bytes = 512 << 10;
  t->l3_bytes = 0;
  t->cores = 1;
  t->machine_source = "default";
}

std::vector<std::string> split_commas(std::string_view text) {
  std::vector<std::string> parts;
  while (!text.empty()) {
    size_t comma = text.find(',');
    parts.emplace_back(text.substr(0, comma));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return parts;
}

}  // namespace

namespace {

// The multiprocessors of a CUDA architecture's data-center part (V100, A100, H100 SXM and H200),
// 0 when the architecture has no one figure.
int64_t published_multiprocessors(const std::string& arch) {
  if (arch == "sm_70") return 80;
  if (arch == "sm_80") return 108;
  if (arch == "sm_90") return 132;
  return 0;
}

}  // namespace

Target Target::parse(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::string word;
  ANVIL_CHECK(static_cast<bool>(in >> word), "target: empty target string");
  Target t;
  if (word == "llvm") {
    t.kind = Kind::kLLVM;
  } else if (word == "c") {
    t.kind = Kind::kC;
  } else if (word == "cuda") {
    t.kind = Kind::kCUDA;
    t.arch = "sm_90";
    t.max_threads_per_block = 1024;
    t.max_shared_memory = 48 * 1024;
  } else if (word == "opencl") {
    t.kind = Kind::kOpenCL;
    t.max_threads_per_block = 256;
    t.max_shared_memory = 32 * 1024;
  } else {
    ANVIL_FAIL("target '", text, "': unknown kind '", word, "' (expected llvm, c, cuda or opencl)");
  }
  auto positive = [&](const std::string& key, const std::string& value) {
    int64_t n = 0;
    auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    ANVIL_CHECK(ec == std::errc() && ptr == value.data() + value.size() && n > 0, "target '", text,
                "': ", key, " must be a positive integer, not '", value, "'");
    return n;
  };
  std::optional<int64_t> multiprocessors;
  while (in >> word) {
    size_t eq = word.find('=');
    std::string key = word.substr(0, eq);
    std::string value = eq == std::string::npos ? "" : word.substr(eq + 1);
    ANVIL_CHECK(eq != std::string::npos && !value.empty(), "target '", text, "': option '", word,
                "' needs a value (-key=value)");
    if (t.is_gpu()) {
      if (key == "-arch" && t.kind == Kind::kCUDA) {
        ANVIL_CHECK(value.size() > 3 && value.rfind("sm_", 0) == 0 &&
                        std::all_of(value.begin() + 3, value.end(),
                                    [](char c) { return c >= '0' && c <= '9'; }),
                    "target '", text, "': -arch must be sm_<digits> (sm_90), not '", value, "'");
        t.arch = value;
      } else if (key == "-max-threads") {
        t.max_threads_per_block = positive(key, value);
      } else if (key == "-max-shared-memory") {
        t.max_shared_memory = positive(key, value);
      } else if (key == "-multiprocessors") {
        multiprocessors = positive(key, value);
      } else {
        ANVIL_FAIL("target '", text, "': unknown option '", key,
                   "' (known: ", t.kind == Kind::kCUDA ? "-arch, " : "",
                   "-max-threads, -max-shared-memory, -multiprocessors)");
      }
    } else if (key == "-mcpu") {
      t.mcpu = value;
    } else if (key == "-mtriple") {
      t.triple = value;
    } else if (key == "-mattr") {
      for (std::string& f : split_commas(value)) {
        ANVIL_CHECK(f.size() > 1 && (f[0] == '+' || f[0] == '-'), "target '", text, "': feature '",
                    f, "' must start with + or -");
        t.mattr.push_back(std::move(f));
      }
    } else if (key == "-threads") {
      auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), t.num_threads);
      ANVIL_CHECK(ec == std::errc() && ptr == value.data() + value.size() && t.num_threads >= 0,
                  "target '", text, "': -threads must be a non-negative integer, not '", value,
                  "'");
    } else if (key == "-vector-bits") {
      auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), t.vector_bits);
      ANVIL_CHECK(ec == std::errc() && ptr == value.data() + value.size() &&
                      (t.vector_bits == 128 || t.vector_bits == 256 || t.vector_bits == 512),
                  "target '", text, "': -vector-bits must be 128, 256 or 512, not '", value, "'");
    } else {
      ANVIL_FAIL("target '", text, "': unknown option '", key,
                 "' (known: -mcpu, -mtriple, -mattr, -threads, -vector-bits)");
    }
  }
  if (t.is_gpu()) {
    t.multiprocessors =
        multiprocessors.value_or(t.kind == Kind::kCUDA ? published_multiprocessors(t.arch) : 0);
  } else {
    if (t.triple.empty() && (t.mcpu.empty() || t.mcpu == "native")) {
      static const Target host = host_machine();
      const int given_bits = t.vector_bits;
      const std::string mcpu = t.mcpu;
      std::vector<std::string> mattr = std::move(t.mattr);
      const int threads = t.num_threads;
      const Kind kind = t.kind;
      t = host;
      t.kind = kind;
      t.mcpu = mcpu;
      t.mattr = std::move(mattr);
      t.num_threads = threads;
      // A narrower width given by hand also means the narrower register file (AVX2's 16): the
      // rules were measured that way, and -mattr may take AVX-512 away.
      if (given_bits > 0 && given_bits != t.vector_bits) {
        // Vectors no wider than a physical pipe use each pipe on its own (Zen 4 at 256 bits: 2).
        if (t.fma_pipe_bits > 0 && given_bits <= t.fma_pipe_bits) {
          t.fma_units *= t.vector_bits / t.fma_pipe_bits;
          t.fma_pipe_bits = 0;
        }
        t.vector_bits = given_bits;
#if defined(__x86_64__) || defined(__i386__)
        t.vector_registers = given_bits >= 512 ? 32 : 16;
#endif
      }
    } else if (!machine_table(t.mcpu, &t)) {
      default_machine(&t, t.triple.rfind("aarch64", 0) == 0 || t.triple.rfind("arm64", 0) == 0);
    }
  }
  return t;
}

namespace {

struct TableEntry {
  const char* mcpu;
  int vector_registers, fma_units;  // FMA pipes at the CPU's widest vector
  int fma_pipe_bits;                // a physical pipe's width when narrower (Zen 4); else 0
  int64_t l1d_kib;
  int l1d_ways;
  int64_t l2_kib, l3_mib;  // L2 per core; L3 of one core complex or die
};

// Published figures per core (vendors' optimization manuals and product pages).
constexpr TableEntry kMachines[] = {
    {"haswell", 16, 2, 0, 32, 8, 256, 8},
    {"broadwell", 16, 2, 0, 32, 8, 256, 8},
    {"skylake", 16, 2, 0, 32, 8, 256, 8},
    {"skylake-avx512", 32, 2, 0, 32, 8, 1024, 32},
    {"cascadelake", 32, 2, 0, 32, 8, 1024, 32},
    {"icelake-server", 32, 2, 0, 48, 12, 1280, 48},
    {"sapphirerapids", 32, 2, 0, 48, 12, 2048, 105},
    {"emeraldrapids", 32, 2, 0, 48, 12, 2048, 320},
    {"alderlake", 16, 2, 0, 48, 12, 1280, 30},
    {"znver1", 16, 1, 128, 32, 8, 512, 8},
    {"znver2", 16, 2, 0, 32, 8, 512, 16},
    {"znver3", 16, 2, 0, 32, 8, 512, 32},
    {"znver4", 32, 1, 256, 32, 8, 1024, 32},
    {"znver5", 32, 2, 0, 48, 12, 1024, 32},
    {"neoverse-n1", 32, 2, 0, 64, 4, 1024, 32},
    {"neoverse-n2", 32, 2, 0, 64, 4, 1024, 32},
    {"neoverse-v1", 32, 4, 0, 64, 4, 1024, 32},
    {"cortex-a72", 32, 2, 0, 32, 2, 512, 0},
    {"cortex-a76", 32, 2, 0, 64, 4, 512, 4},
    {"apple-m1", 32, 4, 0, 128, 8, 3072, 0},
};

}  // namespace

bool machine_table(const std::string& mcpu, Target* t) {
  for (const TableEntry& e : kMachines) {
    if (mcpu != e.mcpu) continue;
    t->vector_registers = e.vector_registers;
    t->fma_units = e.fma_units;
    t->fma_pipe_bits = e.fma_pipe_bits;
    t->cache_line_bytes = 64;
    t->l1d_bytes = e.l1d_kib << 10;
    t->l1d_ways = e.l1d_ways;
    t->l2_bytes = e.l2_kib << 10;
    t->l3_bytes = e.l3_mib << 20;
    t->cores = 0;
    t->machine_source = "table";
    return true;
  }
  return false;
}

double Target::peak_gflops_per_core() const {
  return is_host() ? measured_peak().gflops_per_core : 0.0;
}

std::string Target::describe() const {
  std::ostringstream os;
  auto bytes = [](int64_t b) {
    if (b <= 0) return std::string("unknown");
    if (b % (1 << 20) == 0) return std::to_string(b >> 20) + " MiB";
    if (b % (1 << 10) == 0) return std::to_string(b >> 10) + " KiB";
    return std::to_string(b) + " B";
  };
  os << "target: " << str() << "\n";
  if (is_gpu()) {
    os << "threads per block: " << max_threads_per_block
       << "\nshared memory per block: " << bytes(max_shared_memory) << "\nmultiprocessors: "
       << (multiprocessors > 0 ? std::to_string(multiprocessors) : std::string("unknown")) << "\n";
    return os.str();
  }
  const char* source = machine_source == "host"    ? "detected on this host"
                       : machine_source == "table" ? "published figures for -mcpu"
                                                   : "defaults: an unknown CPU";
  os << "machine: " << source << "\n";
  if (vector_bits > 0)
    os << "vector width: " << vector_bits << " bits (" << vector_lanes_f32() << " float lanes)\n";
  else
    os << "vector width: not given (-vector-bits; the rules assume " << vector_lanes_f32()
       << " float lanes)\n";
  os << "vector registers: " << vector_registers << "\n";
  os << "FMA units: " << fma_units << " (" << flops_per_cycle() << " FLOPs per cycle)";
  if (fma_pipe_bits > 0) os << ", " << fma_pipe_bits << "-bit pipes";
  os << "\n";
  os << "machine balance: " << flops_per_cycle() / memory_bytes_per_cycle()
     << " FLOPs per byte streamed (assuming " << memory_bytes_per_cycle()
     << " bytes per cycle from memory)\n";
  os << "cache line: " << bytes(cache_line_bytes) << "\n";
  os << "L1d per core: " << bytes(l1d_bytes) << ", " << l1d_ways << "-way\n";
  os << "L2 per core: " << bytes(l2_bytes) << "\n";
  os << "L3: " << bytes(l3_bytes) << "\n";
  os << "cores: " << (cores > 0 ? std::to_string(cores) : "unknown") << "\n";
  if (is_host()) {
    const PeakFlops& p = measured_peak();
    char line[96];
    std::snprintf(line, sizeof line, "FP32 peak per core: %.1f GFLOP/s (measured, %s)\n",
                  p.gflops_per_core, p.isa.c_str());
    os << line;
  } else {
    os << "FP32 peak per core: unknown (not this host)\n";
  }
  return os.str();
}

double Target::fma_lanes_per_cycle(int64_t lanes) const {
  const int64_t vector = vector_lanes_f32();
  const int64_t pipe = fma_pipe_bits > 0 ? std::min<int64_t>(fma_pipe_bits / 32, vector) : vector;
  const int64_t pipes = std::max(1, fma_units) * (vector / pipe);
  return static_cast<double>(pipes * std::min(lanes, pipe));
}

Target Target::host() {
  return parse("llvm");
}

std::string Target::str() const {
  std::ostringstream os;
  if (is_gpu()) {
    os << (kind == Kind::kCUDA ? "cuda" : "opencl");
    if (!arch.empty()) os << " -arch=" << arch;
    os << " -max-threads=" << max_threads_per_block << " -max-shared-memory=" << max_shared_memory;
    // Only when it is not the architecture's figure, so that records name a target as before.
    if (multiprocessors != (kind == Kind::kCUDA ? published_multiprocessors(arch) : 0))
      os << " -multiprocessors=" << multiprocessors;
    return os.str();
  }
  os << (kind == Kind::kC ? "c" : "llvm");
  if (!triple.empty()) os << " -mtriple=" << triple;
  if (!mcpu.empty()) os << " -mcpu=" << mcpu;
  if (!mattr.empty()) {
    os << " -mattr=";
    for (size_t i = 0; i < mattr.size(); ++i) os << (i ? "," : "") << mattr[i];
  }
  if (num_threads > 0) os << " -threads=" << num_threads;
  if (vector_bits > 0) os << " -vector-bits=" << vector_bits;
  return os.str();
}

}  // namespace anvil
