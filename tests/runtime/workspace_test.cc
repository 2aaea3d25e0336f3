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

TEST(Workspace, FreedBlocksAreReusedBySize) {
  // A block of a size freed before comes back (the pool), and blocks in use are distinct.
  void* a = AnvilWorkspaceAlloc(5 << 20);
  void* b = AnvilWorkspaceAlloc(5 << 20);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a, b);
  std::memset(a, 1, 5 << 20);
  std::memset(b, 2, 5 << 20);
  AnvilWorkspaceFree(a);
  void* c = AnvilWorkspaceAlloc(5 << 20);
  EXPECT_EQ(c, a);
  void* d = AnvilWorkspaceAlloc(3 << 20);  // another size: not a's block
  ASSERT_NE(d, nullptr);
  EXPECT_NE(d, b);
  EXPECT_NE(d, c);
  std::memset(d, 3, 3 << 20);
  EXPECT_EQ(static_cast<unsigned char*>(b)[(5 << 20) - 1], 2);
  AnvilWorkspaceFree(b);
  AnvilWorkspaceFree(c);
  AnvilWorkspaceFree(d);
}

}  // namespace
