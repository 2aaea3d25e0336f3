// Kernel scratch memory, served from a pool of freed blocks.
//
// A compiled model calls the same kernels with the same temporaries on every run. Handing those
// blocks back to the C allocator costs more than the kernels that use them: glibc returns large
// blocks (past its mmap threshold, 128 KiB by default) to the system on free, so the next call
// page-faults megabytes afresh (measured: Winograd's 4-5 MB of transforms made a 0.8 ms
// convolution take 1.3-2.4 ms). The pool keeps freed blocks by size, up to kMaxCachedBytes in all;
// a request of a size seen before reuses one. Each block carries its size in a header of
// ANVIL_ALIGNMENT bytes just before the pointer the kernel gets. Blocks come from host_alloc.
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "anvil/runtime/c_runtime_api.h"
#include "anvil/runtime/host_memory.h"

namespace {

constexpr uint64_t kMaxCachedBytes = uint64_t{256} << 20;

struct Pool {
  std::mutex mu;
  std::unordered_map<uint64_t, std::vector<void*>> free_blocks;  // block size -> blocks
  uint64_t cached_bytes = 0;
};

// Never destroyed: kernels may run from other static destructors, and the cached blocks stay
// reachable (not leaks) at exit.
Pool& pool() {
  static Pool* p = new Pool;
  return *p;
}

uint64_t& size_header(void* block) {
  return *static_cast<uint64_t*>(block);
}

}  // namespace

extern "C" {

void* AnvilWorkspaceAlloc(uint64_t nbytes) {
  // Sizes past PTRDIFF_MAX can never be satisfied; refuse them before the allocator (whose
  // sanitizer builds abort on them) and before rounding up could wrap.
  void* block = nullptr;
  if (nbytes <= static_cast<uint64_t>(PTRDIFF_MAX) - 2 * ANVIL_ALIGNMENT) {
    uint64_t size = (nbytes + ANVIL_ALIGNMENT - 1) / ANVIL_ALIGNMENT * ANVIL_ALIGNMENT +
                    ANVIL_ALIGNMENT;  // with the header
    {
      Pool& p = pool();
      std::lock_guard<std::mutex> lock(p.mu);
      auto it = p.free_blocks.find(size);
      if (it != p.free_blocks.end() && !it->second.empty()) {
        block = it->second.back();
        it->second.pop_back();
        p.cached_bytes -= size;
      }
    }
    // Large blocks are huge-page blocks (host_memory.h): a kernel's temporaries sit where they
    // sit in every process.
    if (block == nullptr) block = anvil::runtime::host_alloc(size);
    if (block != nullptr) size_header(block) = size;
  }
  if (block == nullptr) {
    AnvilSetLastError(
        ("AnvilWorkspaceAlloc: out of memory allocating " + std::to_string(nbytes) + " bytes")
            .c_str());
    return nullptr;
  }
  return static_cast<char*>(block) + ANVIL_ALIGNMENT;
}

void AnvilWorkspaceFree(void* ptr) {
  if (ptr == nullptr) return;
  void* block = static_cast<char*>(ptr) - ANVIL_ALIGNMENT;
  uint64_t size = size_header(block);
  {
    Pool& p = pool();
    std::lock_guard<std::mutex> lock(p.mu);
    if (p.cached_bytes + size <= kMaxCachedBytes) {
      p.free_blocks[size].push_back(block);
      p.cached_bytes += size;
      return;
    }
  }
  anvil::runtime::host_free(block, size);
}

}  // extern "C"
