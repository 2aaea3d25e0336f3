// The host CPU as the runtime sees it: CPUID's identity and extensions (checked against LLVM's
// own host detection), the check of an artifact's extensions, and the cores a process may use.
#include "anvil/runtime/host_cpu.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>

#include "anvil/codegen/llvm/codegen_llvm.h"
#include "anvil/target/target.h"

namespace anvil::runtime {
namespace {

#if defined(__x86_64__)
TEST(HostCpu, IdentityAndBaselineExtensions) {
  const HostCpu& cpu = host_cpu();
  EXPECT_EQ(cpu.vendor.size(), 12u) << cpu.vendor;
  EXPECT_GE(cpu.family, 6);
  EXPECT_FALSE(cpu.brand.empty());
  EXPECT_EQ(cpu.id(), cpu.vendor + " family " + std::to_string(cpu.family) + " model " +
                          std::to_string(cpu.model));
  EXPECT_TRUE(cpu.has("sse2")) << "every x86-64 CPU has SSE2";
  EXPECT_TRUE(std::is_sorted(cpu.features.begin(), cpu.features.end()));
  for (const std::string& f : cpu.features)
    EXPECT_TRUE(std::count(checkable_cpu_features().begin(), checkable_cpu_features().end(), f))
        << f;
}

// Two independent detections agree: CPUID read by the runtime, and LLVM's host features (which
// the code generator compiles for) as the artifact records them.
TEST(HostCpu, ExtensionsAgreeWithLlvmsHostDetection) {
  codegen::TargetCpu llvm_view = codegen::target_cpu(Target::host());
  EXPECT_EQ(host_cpu().features, llvm_view.features);
}

TEST(HostCpu, NamedCpusEnableTheirExtensions) {
  codegen::TargetCpu zen3 = codegen::target_cpu(Target::parse("llvm -mcpu=znver3"));
  EXPECT_EQ(zen3.name, "znver3");
  auto has = [](const codegen::TargetCpu& c, const char* f) {
    return std::count(c.features.begin(), c.features.end(), f) > 0;
  };
  EXPECT_TRUE(has(zen3, "avx2"));
  EXPECT_TRUE(has(zen3, "fma"));
  EXPECT_FALSE(has(zen3, "avx512f"));
  codegen::TargetCpu v4 = codegen::target_cpu(Target::parse("llvm -mcpu=x86-64-v4"));
  EXPECT_TRUE(has(v4, "avx512f"));
  EXPECT_TRUE(has(v4, "avx512bw"));
  // -mattr adds and takes away.
  codegen::TargetCpu less =
      codegen::target_cpu(Target::parse("llvm -mcpu=x86-64-v4 -mattr=-avx512f"));
  EXPECT_FALSE(has(less, "avx512f"));
  EXPECT_FALSE(has(less, "avx512bw")) << "what needs AVX-512F goes with it";
  // Another architecture: nothing the runtime here could check.
  EXPECT_TRUE(
      codegen::target_cpu(Target::parse("llvm -mtriple=aarch64-linux-gnu")).features.empty());
}
#endif

TEST(HostCpu, MissingExtensionsAreThoseTheCpuLacks) {
  HostCpu avx2_only;
  avx2_only.features = {"avx", "avx2", "fma", "sse2"};
  std::vector<std::string> missing =
      missing_cpu_features({"avx2", "avx512bw", "avx512f", "fma", "not-a-feature"}, avx2_only);
#if defined(__x86_64__)
  EXPECT_EQ(missing, (std::vector<std::string>{"avx512bw", "avx512f"}));
#else
  EXPECT_TRUE(missing.empty()) << "nothing is checkable off x86";
#endif
  EXPECT_TRUE(missing_cpu_features({}, avx2_only).empty());
}

TEST(HostCpu, CgroupQuotaInWholeCpus) {
  EXPECT_EQ(cpus_of_cgroup_quota("200000 100000"), 2);
  EXPECT_EQ(cpus_of_cgroup_quota("150000 100000"), 2) << "rounded up";
  EXPECT_EQ(cpus_of_cgroup_quota("50000 100000"), 1);
  EXPECT_EQ(cpus_of_cgroup_quota("max 100000"), 0) << "no limit";
  EXPECT_EQ(cpus_of_cgroup_quota(""), 0);
  EXPECT_EQ(cpus_of_cgroup_quota("100000"), 0);
  EXPECT_EQ(cpus_of_cgroup_quota("-1 100000"), 0);
  EXPECT_EQ(cpus_of_cgroup_quota("12x 100000"), 0);
}

TEST(HostCpu, AvailableCoresAreWithinTheAffinityMask) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  EXPECT_GE(available_cores(), 1);
  EXPECT_LE(available_cores(), CPU_COUNT(&set));
}

}  // namespace
}  // namespace anvil::runtime
