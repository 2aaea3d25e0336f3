#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "anvil/runtime/c_runtime_api.h"

namespace {

TEST(Workspace, IsAlignedAndWritable) {
  for (uint64_t nbytes : {0, 1, 7, 63, 64, 65, 1000, 1 << 20}) {
    void* p = AnvilWorkspaceAlloc(nbytes);
    ASSERT_NE(p, nullptr) << nbytes;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % ANVIL_ALIGNMENT, 0u) << nbytes;
    std::memset(p, 0xAB, nbytes);  // the sanitizer build checks the bounds
    AnvilWorkspaceFree(p);
  }
  AnvilWorkspaceFree(nullptr);
}

TEST(Workspace, ImpossibleSizesFailWithAMessage) {
  for (uint64_t nbytes : {UINT64_MAX, UINT64_MAX - 10, uint64_t{1} << 63}) {
    EXPECT_EQ(AnvilWorkspaceAlloc(nbytes), nullptr);
    EXPECT_EQ(AnvilGetLastError(),
              "AnvilWorkspaceAlloc: out of memory allocating " + std::to_string(nbytes) + " bytes");
  }
}

}  // namespace
