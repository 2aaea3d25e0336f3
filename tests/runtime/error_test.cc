#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "anvil/runtime/c_runtime_api.h"

namespace {

TEST(LastError, IsPerThread) {
  AnvilSetLastError("main failed");
  std::string seen_before, seen_after;
  std::thread worker([&] {
    seen_before = AnvilGetLastError();
    AnvilSetLastError("worker failed");
    seen_after = AnvilGetLastError();
  });
  worker.join();
  EXPECT_EQ(seen_before, "");
  EXPECT_EQ(seen_after, "worker failed");
  EXPECT_STREQ(AnvilGetLastError(), "main failed");
}

TEST(LastError, NullClears) {
  AnvilSetLastError("something");
  AnvilSetLastError(nullptr);
  EXPECT_STREQ(AnvilGetLastError(), "");
}

}  // namespace
