// Host memory for a model's large, long-lived buffers: its parameters, its arenas and the
// kernels' workspaces.
//
// Why not malloc: a model's time depended on where its buffers landed, for the life of the
// process (the same artifact ran at 15 or 21 ms from one process to the next). With 4 KiB pages
// every page of a weight or an activation lands on a random physical page, so which lines compete
// for the same sets of the physically indexed L2 and L3, and how many TLB entries a kernel's sweep
// needs, is drawn anew in every process; and where the kernel grants transparent huge pages on its
// own ("always"), whether a buffer got any depends on how its random address falls against 2 MiB
// boundaries. A block from host_alloc is aligned to 2 MiB, asks for huge pages (MADV_HUGEPAGE,
// honoured in the kernel's "always" and "madvise" modes) and is touched before it is returned, so a
// buffer's placement in the caches follows from its offsets alone, the same in every process.
#pragma once

#include <cstddef>
#include <string>

namespace anvil::runtime {

// Blocks at least this large are huge-page blocks; smaller ones come from aligned_alloc (a huge
// page for each would waste most of it).
constexpr size_t kHugeBlockThreshold = size_t{1} << 20;
constexpr size_t kHugePageBytes = size_t{2} << 20;

// At least `bytes` of memory aligned to ANVIL_ALIGNMENT (to kHugePageBytes from the threshold on);
// nullptr when out of memory. Contents are unspecified.
void* host_alloc(size_t bytes);
// Frees a block of host_alloc; `bytes` is the size it was asked for. nullptr does nothing.
void host_free(void* block, size_t bytes);

// The kernel's transparent huge page mode: "always", "madvise", "never", or "unknown" (no such
// setting, as on kernels built without it or outside Linux). host_alloc gets huge pages in the
// first two.
std::string huge_page_mode();

}  // namespace anvil::runtime
