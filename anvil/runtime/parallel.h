// Internals of the thread count behind AnvilParallelFor, exposed so that tests can check them.
#pragma once

#include <cstdint>
#include <optional>

namespace anvil::runtime {

// The most threads ANVIL_NUM_THREADS may ask for; larger values are taken for typos.
constexpr int32_t kMaxNumThreads = 4096;

// The value of ANVIL_NUM_THREADS as a thread count: a decimal integer in [1, kMaxNumThreads]
// with nothing around it; std::nullopt for anything else (NULL included).
std::optional<int32_t> parse_num_threads(const char* value);

// The thread count when AnvilSetNumThreads has not overridden it: ANVIL_NUM_THREADS when valid
// (an invalid value is reported once on stderr and ignored), else the cores this
// process may use (available_cores: its affinity mask and cgroup quota). Threads are not pinned:
// they inherit the process's mask, and OMP_PROC_BIND places them as usual. Read
// once, at the first call.
int32_t default_num_threads();

}  // namespace anvil::runtime
