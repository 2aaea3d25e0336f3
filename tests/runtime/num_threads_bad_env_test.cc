// An invalid ANVIL_NUM_THREADS is reported once and ignored: the default stays the core count.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "anvil/runtime/c_runtime_api.h"

namespace {

const bool env_set = setenv("ANVIL_NUM_THREADS", "lots", 1) == 0;

TEST(NumThreadsBadEnv, IsIgnoredWithAWarning) {
  ASSERT_TRUE(env_set);
  int32_t cores = static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()));
  ::testing::internal::CaptureStderr();
  int32_t threads = AnvilGetNumThreads();  // the first call reads the variable
  std::string warning = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(threads, cores);
  EXPECT_EQ(warning,
            "anvil: warning: ignoring ANVIL_NUM_THREADS='lots' (expected an integer from "
            "1 to 4096); using " +
                std::to_string(cores) + " threads\n");
  ::testing::internal::CaptureStderr();
  AnvilGetNumThreads();
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");  // once only
}

}  // namespace
