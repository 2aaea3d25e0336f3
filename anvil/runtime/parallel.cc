// AnvilParallelFor on OpenMP: one contiguous chunk per thread. A hand-written pool would have
// to beat libgomp/libomp in a measurement first (DESIGN.md, Parallelism).
#include "anvil/runtime/parallel.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>

#include "anvil/runtime/c_runtime_api.h"
#include "anvil/runtime/host_cpu.h"

// libomp (KMP_VERSION_MAJOR) under LeakSanitizer: see grow_team.
#if defined(KMP_VERSION_MAJOR) && defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(leak_sanitizer)
#include <sanitizer/lsan_interface.h>
#define ANVIL_LIBOMP_LSAN 1
#endif
#endif

namespace anvil::runtime {

std::optional<int32_t> parse_num_threads(const char* value) {
  if (value == nullptr) return std::nullopt;
  const char* end = value + std::strlen(value);
  int32_t n = 0;
  auto [ptr, ec] = std::from_chars(value, end, n);  // no "+", space or base prefix accepted
  if (ec != std::errc() || ptr != end || n < 1 || n > kMaxNumThreads) return std::nullopt;
  return n;
}

int32_t default_num_threads() {
  static const int32_t threads = [] {
    const int32_t cores = available_cores();
    const char* env = std::getenv("ANVIL_NUM_THREADS");
    if (env == nullptr) return cores;
    if (auto n = parse_num_threads(env)) return *n;
    std::fprintf(stderr,
                 "anvil: warning: ignoring ANVIL_NUM_THREADS='%s' (expected an integer from 1 to "
                 "%d); using %d threads\n",
                 env, kMaxNumThreads, cores);
    return cores;
  }();
  return threads;
}

namespace {

std::atomic<int32_t> num_threads_override{0};  // 0: none

// Runs one chunk, turning an escaping C++ exception into an error code: it must not unwind
// through OpenMP or a C caller.
int32_t run_chunk(AnvilParallelBody body, int64_t begin, int64_t end, void* closure) {
  try {
    return body(begin, end, closure);
  } catch (const std::exception& e) {
    AnvilSetLastError((std::string("AnvilParallelFor: the loop body threw: ") + e.what()).c_str());
  } catch (...) {
    AnvilSetLastError("AnvilParallelFor: the loop body threw an unknown exception");
  }
  return -1;
}

// libomp 14 loses each thread's dispatch buffers when a hot team grows past its capacity (growing
// from k >= 2 threads to more than max(k, 4) leaks k blocks of 1440 bytes, once per growth), and
// LeakSanitizer then fails whichever test raised the thread count. The team belongs to the
// forking thread, so an empty region grows it there with leak checking off; loop bodies never run
// unchecked. libgomp does not have the bug.
void grow_team([[maybe_unused]] int threads) {
#ifdef ANVIL_LIBOMP_LSAN
  thread_local int largest_team = 1;
  if (threads <= largest_team) return;
  __lsan_disable();
#pragma omp parallel num_threads(threads)
  {
    __asm__ volatile("");  // a side effect: clang's OpenMPOpt deletes empty parallel regions
  }
  __lsan_enable();
  largest_team = threads;
#endif
}

}  // namespace
}  // namespace anvil::runtime

extern "C" {

int32_t AnvilGetNumThreads(void) {
  int32_t n = anvil::runtime::num_threads_override.load(std::memory_order_relaxed);
  return n > 0 ? n : anvil::runtime::default_num_threads();
}

void AnvilSetNumThreads(int32_t n) {
  anvil::runtime::num_threads_override.store(n > 0 ? n : 0, std::memory_order_relaxed);
}

int32_t AnvilParallelFor(int64_t extent, AnvilParallelBody body, void* closure) {
  if (body == nullptr) {
    AnvilSetLastError("AnvilParallelFor: the loop body is NULL");
    return -1;
  }
  if (extent <= 0) return 0;
  const int64_t chunks = std::min<int64_t>(AnvilGetNumThreads(), extent);
  // Nested calls run serially: omp_get_level() counts enclosing regions even when OpenMP ran them
  // on one thread (OMP_DYNAMIC), which omp_in_parallel() would miss.
  if (chunks == 1 || omp_get_level() > 0)
    return anvil::runtime::run_chunk(body, 0, extent, closure);

  // Chunk c is [c*q + min(c, r), (c+1)*q + min(c+1, r)): sizes differ by at most one, and no
  // product of extent can overflow.
  const int64_t q = extent / chunks, r = extent % chunks;
  const int team = static_cast<int>(chunks);
  anvil::runtime::grow_team(team);
  // The failure of the lowest failing chunk is reported, as a serial loop would; its message
  // moves from the worker's thread-local error to the caller's.
  std::mutex mutex;
  int64_t failed_chunk = chunks;
  int32_t failed_code = 0;
  std::string failed_message;
#pragma omp parallel for schedule(static) num_threads(team)
  for (int64_t c = 0; c < chunks; ++c) {
    int64_t begin = c * q + std::min(c, r);
    int64_t end = begin + q + (c < r ? 1 : 0);
    if (int32_t code = anvil::runtime::run_chunk(body, begin, end, closure); code != 0) {
      std::lock_guard lock(mutex);
      if (c < failed_chunk) {
        failed_chunk = c;
        failed_code = code;
        failed_message = AnvilGetLastError();
      }
    }
  }
  if (failed_code != 0) AnvilSetLastError(failed_message.c_str());
  return failed_code;
}

}  // extern "C"
