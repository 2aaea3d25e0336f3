// ANVIL_NUM_THREADS is read once, at the first call, so it is set before main (each test also runs
// in its own process under ctest).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>

#include "anvil/runtime/c_runtime_api.h"

namespace {

const bool env_set = setenv("ANVIL_NUM_THREADS", "3", 1) == 0;

int32_t count_chunks(int64_t, int64_t, void* closure) {
  static_cast<std::atomic<int>*>(closure)->fetch_add(1);
  return 0;
}

TEST(NumThreadsEnv, SetsTheDefault) {
  ASSERT_TRUE(env_set);
  EXPECT_EQ(AnvilGetNumThreads(), 3);
  std::atomic<int> chunks{0};
  EXPECT_EQ(AnvilParallelFor(100, count_chunks, &chunks), 0);
  EXPECT_EQ(chunks, 3);
  AnvilSetNumThreads(5);
  EXPECT_EQ(AnvilGetNumThreads(), 5);
  AnvilSetNumThreads(0);
  EXPECT_EQ(AnvilGetNumThreads(), 3);
}

}  // namespace
