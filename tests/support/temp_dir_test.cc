// TempDir: a fresh directory per object, removed with its contents when the object goes.
#include "anvil/support/temp_dir.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace anvil {
namespace {

namespace fs = std::filesystem;

TEST(TempDir, IsFreshAndRemovedWithItsContents) {
  std::string kept;
  {
    TempDir a("anvil-temp-dir-test-", "the test"), b("anvil-temp-dir-test-", "the test");
    EXPECT_NE(a.path(), b.path());
    ASSERT_TRUE(fs::is_directory(a.path()));
    EXPECT_EQ(fs::path(a.path()).filename().string().rfind("anvil-temp-dir-test-", 0), 0u);
    fs::create_directories(a.path() + "/sub");
    std::ofstream(a.path() + "/sub/file") << "x";
    kept = a.path();
  }
  EXPECT_FALSE(fs::exists(kept));
}

}  // namespace
}  // namespace anvil
