// The machine in the target (target.h): the host's facts are plausible and agree with glibc's own
// reading of the caches, named CPUs take their published figures, unknown ones conservative
// defaults, and none of it changes a target's text.
#include "anvil/target/target.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "anvil/target/peak.h"

namespace anvil {
namespace {

TEST(Target, HostMachineIsPlausible) {
  Target t = Target::host();
  EXPECT_TRUE(t.is_host());
  EXPECT_TRUE(t.vector_bits == 128 || t.vector_bits == 256 || t.vector_bits == 512);
  EXPECT_TRUE(t.vector_registers == 16 || t.vector_registers == 32) << t.vector_registers;
  EXPECT_GE(t.fma_units, 1);
  EXPECT_LE(t.fma_units, 4);
  EXPECT_TRUE(t.cache_line_bytes == 64 || t.cache_line_bytes == 128) << t.cache_line_bytes;
  EXPECT_GE(t.l1d_bytes, 16 << 10);
  EXPECT_LE(t.l1d_bytes, 256 << 10);
  EXPECT_GT(t.l1d_ways, 0);
  EXPECT_GT(t.l2_bytes, t.l1d_bytes);
  EXPECT_LE(t.l2_bytes, 64 << 20);
  EXPECT_GE(t.cores, 1);
  EXPECT_EQ(t.l1d_way_bytes() * t.l1d_ways, t.l1d_bytes);
  // The peak is the one measurement every tool reports.
  EXPECT_EQ(t.peak_gflops_per_core(), measured_peak().gflops_per_core);
}

TEST(Target, HostCachesAgreeWithGlibc) {
  // glibc reads CPUID itself: an independent reading of the same hardware. (Not every C library
  // or machine answers; 0 means unknown.)
  Target t = Target::host();
  const long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE), l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  const long ways = sysconf(_SC_LEVEL1_DCACHE_ASSOC), line = sysconf(_SC_LEVEL1_DCACHE_LINESIZE);
  if (l1 > 0) {
    EXPECT_EQ(t.l1d_bytes, l1);
  }
  if (l2 > 0) {
    EXPECT_EQ(t.l2_bytes, l2);
  }
  if (ways > 0) {
    EXPECT_EQ(t.l1d_ways, ways);
  }
  if (line > 0) {
    EXPECT_EQ(t.cache_line_bytes, line);
  }
#if defined(__x86_64__)
  // glibc answers from CPUID on x86-64: the comparison above has happened.
  EXPECT_GT(l1, 0);
  EXPECT_GT(l2, 0);
#endif
}

TEST(Target, NamedCpusTakeThePublishedFigures) {
  Target zen3 = Target::parse("llvm -mcpu=znver3");
  EXPECT_EQ(zen3.machine_source, "table");
  EXPECT_EQ(zen3.l2_bytes, 512 << 10);
  EXPECT_EQ(zen3.vector_registers, 16);
  EXPECT_EQ(zen3.fma_units, 2);
  Target zen4 = Target::parse("llvm -mcpu=znver4");
  EXPECT_EQ(zen4.l2_bytes, 1 << 20);
  EXPECT_EQ(zen4.vector_registers, 32);
  EXPECT_EQ(zen4.fma_units, 1);  // 512-bit FMAs as two 256-bit halves
  Target zen5 = Target::parse("llvm -mcpu=znver5");
  EXPECT_EQ(zen5.l1d_bytes, 48 << 10);
  EXPECT_EQ(zen5.l1d_way_bytes(), 4096);
  EXPECT_EQ(zen5.fma_units, 2);
  // The rate of narrower vectors: half on Zen 5's full-width pipes, the same on Zen 4's halves.
  Target zen5_512 = Target::parse("llvm -mcpu=znver5 -vector-bits=512");
  EXPECT_EQ(zen5_512.fma_lanes_per_cycle(16), 32);
  EXPECT_EQ(zen5_512.fma_lanes_per_cycle(8), 16);
  Target zen4_512 = Target::parse("llvm -mcpu=znver4 -vector-bits=512");
  EXPECT_EQ(zen4_512.fma_lanes_per_cycle(16), 16);
  EXPECT_EQ(zen4_512.fma_lanes_per_cycle(8), 16);
  EXPECT_EQ(zen4_512.fma_lanes_per_cycle(4), 8);
  EXPECT_EQ(Target::parse("llvm -mcpu=znver3 -vector-bits=256").fma_lanes_per_cycle(8), 16);
  Target arm = Target::parse("llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1");
  EXPECT_EQ(arm.l1d_bytes, 64 << 10);
  EXPECT_EQ(arm.vector_registers, 32);
  // Not this host: no peak can be measured for it.
  EXPECT_EQ(zen3.peak_gflops_per_core(), 0.0);
}

TEST(Target, UnknownCpusTakeConservativeDefaults) {
  Target t = Target::parse("llvm -mcpu=some-future-core");
  EXPECT_EQ(t.machine_source, "default");
  EXPECT_EQ(t.l2_bytes, 512 << 10);
  EXPECT_EQ(t.l1d_bytes, 32 << 10);
  EXPECT_EQ(t.cores, 1);
  Target arm = Target::parse("llvm -mtriple=aarch64-linux-gnu");
  EXPECT_EQ(arm.machine_source, "default");
  EXPECT_EQ(arm.vector_registers, 32);
}

TEST(Target, MachineFactsStayOutOfTheText) {
  // Records and artifacts name targets by their options: detection must not change them.
  for (const char* text : {"llvm", "llvm -vector-bits=256", "llvm -mcpu=znver4", "c",
                           "llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1"}) {
    Target t = Target::parse(text);
    EXPECT_EQ(Target::parse(t.str()), t) << text;
    EXPECT_EQ(t.str().find("l2"), std::string::npos) << t.str();
  }
  EXPECT_EQ(Target::parse("llvm -mcpu=znver4").str(), "llvm -mcpu=znver4");
  // A width given by hand wins over the detected one; the rest stays the host's.
  Target narrow = Target::parse("llvm -vector-bits=256");
  EXPECT_EQ(narrow.vector_bits, 256);
  EXPECT_EQ(narrow.l2_bytes, Target::host().l2_bytes);
}

// GPU targets: the multiprocessors split-K aims to fill, the architecture's figure by default
// (and then not in the text, so records keep naming the target as before), else as given.
TEST(Target, GpuMultiprocessors) {
  EXPECT_EQ(Target::parse("cuda").multiprocessors, 132);
  EXPECT_EQ(Target::parse("cuda -arch=sm_80").multiprocessors, 108);
  EXPECT_EQ(Target::parse("cuda -arch=sm_86").multiprocessors, 0);
  EXPECT_EQ(Target::parse("opencl").multiprocessors, 0);
  for (const char* text : {"cuda -arch=sm_90", "cuda -arch=sm_90 -multiprocessors=114",
                           "cuda -arch=sm_86 -multiprocessors=84", "opencl -multiprocessors=16",
                           "cuda -arch=sm_90 -multiprocessors=132"}) {
    Target t = Target::parse(text);
    EXPECT_EQ(Target::parse(t.str()), t) << text;
  }
  EXPECT_EQ(Target::parse("cuda -arch=sm_90 -multiprocessors=132").str(),
            "cuda -arch=sm_90 -max-threads=1024 -max-shared-memory=49152");
  EXPECT_EQ(Target::parse("cuda -multiprocessors=114 -arch=sm_90").str(),
            "cuda -arch=sm_90 -max-threads=1024 -max-shared-memory=49152 -multiprocessors=114");
  try {
    Target::parse("opencl -multiprocessors=0");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("-multiprocessors must be a positive integer, not '0'"),
              std::string::npos)
        << e.what();
  }
  EXPECT_NE(Target::parse("cuda").describe().find("multiprocessors: 132"), std::string::npos);
}

TEST(Target, DescribeNamesEveryFact) {
  std::string d = Target::parse("llvm -mcpu=znver4").describe();
  for (const char* part :
       {"vector width: ", "vector registers: 32",
        "FMA units: 1 (16 FLOPs per cycle), 256-bit pipes", "machine balance: 5.33333",
        "L1d per core: 32 KiB, 8-way", "L2 per core: 1 MiB", "L3: 32 MiB", "published figures",
        "peak per core: unknown"})
    EXPECT_NE(d.find(part), std::string::npos) << part << "\n" << d;
  std::string h = Target::host().describe();
  EXPECT_NE(h.find("(measured, "), std::string::npos) << h;
}

}  // namespace
}  // namespace anvil
