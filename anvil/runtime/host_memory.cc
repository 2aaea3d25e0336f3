#include "anvil/runtime/host_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>

#include "anvil/runtime/c_runtime_api.h"

namespace anvil::runtime {

namespace {

size_t round_up(size_t x, size_t m) {
  return (x + m - 1) / m * m;
}

}  // namespace

void* host_alloc(size_t bytes) {
  if (bytes < kHugeBlockThreshold)
    return std::aligned_alloc(ANVIL_ALIGNMENT,
                              std::max<size_t>(ANVIL_ALIGNMENT, round_up(bytes, ANVIL_ALIGNMENT)));
  if (bytes > SIZE_MAX - 2 * kHugePageBytes) return nullptr;
  const size_t size = round_up(bytes, kHugePageBytes);
  // Map a huge page more than needed, then give back the slack on either side of the aligned part.
  void* raw = mmap(nullptr, size + kHugePageBytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t start = round_up(begin, kHugePageBytes);
  if (start > begin) munmap(raw, start - begin);
  const uintptr_t end = begin + size + kHugePageBytes;
  if (end > start + size) munmap(reinterpret_cast<void*>(start + size), end - (start + size));
  void* block = reinterpret_cast<void*>(start);
  madvise(block, size, MADV_HUGEPAGE);  // advice: without huge pages the block still works
  // First touch now, one write a page: the pages exist (huge where granted) before anything is
  // timed.
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  for (size_t offset = 0; offset < size; offset += page)
    static_cast<volatile char*>(block)[offset] = 0;
  return block;
}

void host_free(void* block, size_t bytes) {
  if (block == nullptr) return;
  if (bytes < kHugeBlockThreshold) {
    std::free(block);
    return;
  }
  munmap(block, round_up(bytes, kHugePageBytes));
}

std::string huge_page_mode() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  if (!std::getline(f, line)) return "unknown";
  // "always [madvise] never": the bracketed one is in force.
  const size_t open = line.find('['), close = line.find(']');
  if (open == std::string::npos || close == std::string::npos || close < open) return "unknown";
  return line.substr(open + 1, close - open - 1);
}

}  // namespace anvil::runtime
