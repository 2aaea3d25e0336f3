// The measured peak (peak.h): plausible, and measured once per process.
#include "anvil/target/peak.h"

#include <gtest/gtest.h>

namespace anvil {
namespace {

TEST(Peak, IsPlausibleAndMeasuredOnce) {
  const PeakFlops& p = measured_peak();
  EXPECT_TRUE(p.lanes == 1 || p.lanes == 8 || p.lanes == 16) << p.lanes;
  EXPECT_FALSE(p.isa.empty());
  // At least 0.1 GFLOP/s (a sanitized build, a busy machine); at most 64 FLOP per cycle at 10 GHz.
  EXPECT_GT(p.gflops_per_core, 0.1);
  EXPECT_LT(p.gflops_per_core, 640);
  EXPECT_EQ(&measured_peak(), &p);
}

}  // namespace
}  // namespace anvil
