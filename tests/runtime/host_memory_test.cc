// Host memory for a model's large buffers (host_memory.h) and where the executor puts a CPU
// program's parameters and arenas (attach_host): aligned so that their placement in the caches is
// the same in every process, huge pages where the kernel grants them, one block for the
// parameters, and arenas reused from run to run.
#include "anvil/runtime/host_memory.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "anvil/runtime/graph_executor.h"
#include "anvil/runtime/ndarray.h"

namespace anvil::runtime {
namespace {

uintptr_t address(const void* p) {
  return reinterpret_cast<uintptr_t>(p);
}

// kB of AnonHugePages in the mapping of /proc/self/smaps that contains `p`; -1 when not found.
long huge_kib_at(const void* p) {
  std::ifstream f("/proc/self/smaps");
  bool inside = false;
  for (std::string line; std::getline(f, line);) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= address(p) && address(p) < hi;
      continue;
    }
    if (inside && line.rfind("AnonHugePages:", 0) == 0) return std::stol(line.substr(14));
  }
  return -1;
}

TEST(HostMemory, SmallBlocksAreAlignedToTheKernelsAlignment) {
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{100}, size_t{4096}, kHugeBlockThreshold - 1}) {
    void* p = host_alloc(bytes);
    ASSERT_NE(p, nullptr) << bytes;
    EXPECT_EQ(address(p) % ANVIL_ALIGNMENT, 0u) << bytes;
    std::memset(p, 1, bytes);
    host_free(p, bytes);
  }
  host_free(nullptr, 123);
}

TEST(HostMemory, LargeBlocksStartOnAHugePage) {
  for (size_t bytes : {kHugeBlockThreshold, kHugePageBytes, 3 * kHugePageBytes + 5}) {
    char* p = static_cast<char*>(host_alloc(bytes));
    ASSERT_NE(p, nullptr) << bytes;
    EXPECT_EQ(address(p) % kHugePageBytes, 0u) << bytes;
    std::memset(p, 7, bytes);  // every byte asked for is writable
    EXPECT_EQ(p[bytes - 1], 7);
    host_free(p, bytes);
  }
}

TEST(HostMemory, LargeBlocksGetHugePagesWhenTheKernelGrantsThem) {
  const std::string mode = huge_page_mode();
  ASSERT_TRUE(mode == "always" || mode == "madvise" || mode == "never" || mode == "unknown")
      << mode;
  const size_t bytes = 2 * kHugePageBytes;
  void* p = host_alloc(bytes);
  ASSERT_NE(p, nullptr);
  // Touched before it was returned: the pages exist now, huge ones where the kernel grants them
  // (in "never" mode, or without the setting, none).
  const long huge = huge_kib_at(p);
  ASSERT_GE(huge, 0) << "the block is in no mapping of /proc/self/smaps";
  if (mode == "always" || mode == "madvise") {
    EXPECT_GT(huge, 0) << "no huge page backs a block that asked for them (" << mode << ")";
  } else {
    EXPECT_EQ(huge, 0) << mode;
  }
  host_free(p, bytes);
}

TEST(HostMemory, HugeAllocationFailureIsNull) {
  EXPECT_EQ(host_alloc(SIZE_MAX - 10), nullptr);
}

NDArray filled(std::vector<int64_t> shape, float start) {
  NDArray a = NDArray::empty(std::move(shape), dl_float32());
  for (int64_t i = 0; i < a.numel(); ++i) a.data_as<float>()[i] = start + static_cast<float>(i);
  return a;
}

TEST(AttachHost, ParametersMoveIntoOneBlockInOrder) {
  GraphProgram p;
  p.params = {filled({3}, 1), filled({1000, 300}, 10), filled({5, 7}, -3)};
  std::vector<NDArray> before = p.params;
  attach_host(p);
  ASSERT_EQ(p.params.size(), 3u);
  // One block from the huge-page threshold on: aligned, laid out in the program's order, each at
  // a multiple of the kernels' alignment.
  EXPECT_EQ(address(p.params[0].data()) % kHugePageBytes, 0u);
  EXPECT_EQ(address(p.params[1].data()), address(p.params[0].data()) + ANVIL_ALIGNMENT);
  EXPECT_EQ(address(p.params[2].data()) % ANVIL_ALIGNMENT, 0u);
  EXPECT_GT(address(p.params[2].data()), address(p.params[1].data()));
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(p.params[k].shape(), before[k].shape());
    EXPECT_NE(p.params[k].data(), before[k].data());
    EXPECT_EQ(std::memcmp(p.params[k].data(), before[k].data(), before[k].nbytes()), 0) << k;
  }
  // The views keep the block alive on their own.
  NDArray kept = p.params[1];
  p.params.clear();
  EXPECT_EQ(kept.data_as<float>()[299999], 10.0f + 299999);
}

TEST(NDArrayView, RefusesUnalignedOrOwnerlessMemory) {
  auto owner = std::make_shared<std::vector<float>>(64);
  EXPECT_THROW(NDArray::view(nullptr, owner->data(), {4}, dl_float32()), std::invalid_argument);
  alignas(64) static float data[32];
  EXPECT_THROW(NDArray::view(owner, data + 1, {4}, dl_float32()), std::invalid_argument);
  NDArray v = NDArray::view(owner, data, {2, 3}, dl_float32());
  EXPECT_EQ(v.nbytes(), 24u);
  EXPECT_EQ(v.data(), static_cast<void*>(data));
}

// A kernel that doubles its input into its output and records where the output was.
const void* g_output_at = nullptr;
int32_t double_it(const DLTensor* const* args, int32_t, void*) {
  g_output_at = args[1]->data;
  const float* in = static_cast<const float*>(args[0]->data);
  float* out = static_cast<float*>(args[1]->data);
  for (int i = 0; i < 6; ++i) out[i] = 2 * in[i];
  return 0;
}

TEST(AttachHost, RunsReuseTheirArena) {
  GraphProgram p;
  p.slots = {{"x", {6}, dl_float32(), GraphProgram::Storage::kInput, 0},
             {"t", {6}, dl_float32(), GraphProgram::Storage::kArena, 128},
             {"y", {6}, dl_float32(), GraphProgram::Storage::kOwned, 0}};
  p.inputs = {0};
  p.outputs = {1};
  p.arena_bytes = int64_t{3} << 20;
  GraphProgram::Call c;
  c.kernel = "double_it";
  c.args = {0, 1};
  c.fn = double_it;
  p.calls = {c};
  attach_host(p);
  ASSERT_NE(p.arenas, nullptr);
  NDArray x = filled({6}, 1);
  std::vector<NDArray> first = execute(p, {x});
  const void* at = g_output_at;
  EXPECT_EQ((address(at) - 128) % kHugePageBytes, 0u);  // the arena starts on a huge page
  std::vector<NDArray> second = execute(p, {x});
  EXPECT_EQ(g_output_at, at);  // the same arena, not a fresh one
  ASSERT_EQ(second.size(), 1u);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(first[0].data_as<float>()[i], 2.0f * (1 + i));
    EXPECT_EQ(second[0].data_as<float>()[i], 2.0f * (1 + i));
  }
}

}  // namespace
}  // namespace anvil::runtime
