// Kernel scratch memory. Plain aligned heap allocation: the allocator's own caches already serve
// the repeated same-size requests a kernel makes; a pool can come when a measurement asks for it.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "anvil/runtime/c_runtime_api.h"

extern "C" {

void* AnvilWorkspaceAlloc(uint64_t nbytes) {
  // Sizes past PTRDIFF_MAX can never be satisfied; refuse them before the allocator (whose
  // sanitizer builds abort on them) and before rounding up could wrap.
  void* ptr = nullptr;
  if (nbytes <= static_cast<uint64_t>(PTRDIFF_MAX) - ANVIL_ALIGNMENT) {
    uint64_t rounded = (nbytes + ANVIL_ALIGNMENT - 1) / ANVIL_ALIGNMENT * ANVIL_ALIGNMENT;
    ptr = std::aligned_alloc(ANVIL_ALIGNMENT, rounded ? rounded : ANVIL_ALIGNMENT);
  }
  if (ptr == nullptr)
    AnvilSetLastError(
        ("AnvilWorkspaceAlloc: out of memory allocating " + std::to_string(nbytes) + " bytes")
            .c_str());
  return ptr;
}

void AnvilWorkspaceFree(void* ptr) {
  std::free(ptr);
}

}  // extern "C"
