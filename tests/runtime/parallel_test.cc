#include "anvil/runtime/parallel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "anvil/runtime/c_runtime_api.h"

namespace {

// AnvilParallelFor over a C++ callable `f(begin, end) -> int32_t`.
template <typename F>
int32_t parallel_for(int64_t extent, F&& f) {
  using Fn = std::remove_reference_t<F>;
  AnvilParallelBody body = [](int64_t begin, int64_t end, void* closure) -> int32_t {
    return (*static_cast<Fn*>(closure))(begin, end);
  };
  return AnvilParallelFor(extent, body, &f);
}

using Chunks = std::vector<std::pair<int64_t, int64_t>>;

// Runs an empty body and returns the chunks it was called with, sorted.
Chunks chunks_of(int64_t extent) {
  std::mutex mutex;
  Chunks chunks;
  EXPECT_EQ(parallel_for(extent,
                         [&](int64_t b, int64_t e) {
                           std::lock_guard lock(mutex);
                           chunks.emplace_back(b, e);
                           return 0;
                         }),
            0);
  std::sort(chunks.begin(), chunks.end());
  return chunks;
}

// One chunk per thread (or per index when there are fewer), tiling [0, extent), balanced.
void expect_tiling(const Chunks& chunks, int64_t extent, int32_t threads) {
  ASSERT_EQ(static_cast<int64_t>(chunks.size()), std::min<int64_t>(threads, extent));
  int64_t next = 0, smallest = std::numeric_limits<int64_t>::max(), largest = 0;
  for (auto [b, e] : chunks) {
    EXPECT_EQ(b, next);
    EXPECT_LT(b, e);
    smallest = std::min(smallest, e - b);
    largest = std::max(largest, e - b);
    next = e;
  }
  EXPECT_EQ(next, extent);
  EXPECT_LE(largest - smallest, 1);
}

class ParallelFor : public ::testing::Test {
 protected:
  void TearDown() override { AnvilSetNumThreads(0); }
};

TEST_F(ParallelFor, CoversEveryIndexExactlyOnce) {
  for (int32_t threads : {1, 2, 3, 4, 7, 16}) {
    AnvilSetNumThreads(threads);
    for (int64_t extent : {1, 2, 3, 5, 13, 97, 1000, 100003}) {
      SCOPED_TRACE("threads " + std::to_string(threads) + ", extent " + std::to_string(extent));
      std::vector<std::atomic<int>> hits(extent);
      EXPECT_EQ(parallel_for(extent,
                             [&](int64_t b, int64_t e) {
                               for (int64_t i = b; i < e; ++i) hits[i]++;
                               return 0;
                             }),
                0);
      EXPECT_EQ(std::count_if(hits.begin(), hits.end(), [](auto& h) { return h != 1; }), 0);
      expect_tiling(chunks_of(extent), extent, threads);
    }
  }
}

TEST_F(ParallelFor, LargeExtentsDoNotOverflow) {
  AnvilSetNumThreads(7);
  for (int64_t extent : {int64_t{1} << 40, std::numeric_limits<int64_t>::max()}) {
    SCOPED_TRACE(extent);
    expect_tiling(chunks_of(extent), extent, 7);
  }
}

TEST_F(ParallelFor, EmptyRangeRunsNothing) {
  AnvilSetNumThreads(4);
  int calls = 0;
  auto count = [&](int64_t, int64_t) { return ++calls, 0; };
  EXPECT_EQ(parallel_for(0, count), 0);
  EXPECT_EQ(parallel_for(-5, count), 0);
  EXPECT_EQ(calls, 0);
}

TEST_F(ParallelFor, OneThreadRunsTheWholeRangeOnTheCaller) {
  AnvilSetNumThreads(1);
  Chunks chunks;
  std::set<std::thread::id> ids;
  parallel_for(1000, [&](int64_t b, int64_t e) {
    chunks.emplace_back(b, e);
    ids.insert(std::this_thread::get_id());
    return 0;
  });
  EXPECT_EQ(chunks, (Chunks{{0, 1000}}));
  EXPECT_EQ(ids, std::set{std::this_thread::get_id()});
}

TEST_F(ParallelFor, RunsChunksOnDistinctThreads) {
  AnvilSetNumThreads(2);
  std::mutex mutex;
  std::set<std::thread::id> ids;
  parallel_for(2, [&](int64_t, int64_t) {
    std::lock_guard lock(mutex);
    ids.insert(std::this_thread::get_id());
    return 0;
  });
  // OMP_DYNAMIC lets OpenMP shrink the team; with the defaults it is the size asked for.
  if (std::getenv("OMP_DYNAMIC") == nullptr) {
    EXPECT_EQ(ids.size(), 2u);
  }
}

TEST_F(ParallelFor, ReportsTheLowestFailingChunk) {
  AnvilSetNumThreads(4);
  // Every chunk fails with its own code and message; a serial loop would have stopped at the
  // first, so that one is reported.
  int32_t code = parallel_for(100, [](int64_t b, int64_t) {
    AnvilSetLastError(("chunk at " + std::to_string(b) + " failed").c_str());
    return static_cast<int32_t>(b + 1);
  });
  EXPECT_EQ(code, 1);
  EXPECT_STREQ(AnvilGetLastError(), "chunk at 0 failed");
}

TEST_F(ParallelFor, MovesAWorkersErrorToTheCaller) {
  AnvilSetNumThreads(4);
  AnvilSetLastError("");
  // The last chunk runs on a worker thread, whose last error is its own.
  int32_t code = parallel_for(100, [](int64_t b, int64_t e) {
    if (e != 100) return 0;
    AnvilSetLastError(("index " + std::to_string(b) + " is bad").c_str());
    return 7;
  });
  EXPECT_EQ(code, 7);
  EXPECT_STREQ(AnvilGetLastError(), "index 75 is bad");
}

TEST_F(ParallelFor, AnExceptionBecomesAnError) {
  for (int32_t threads : {1, 4}) {
    AnvilSetNumThreads(threads);
    int32_t code =
        parallel_for(8, [](int64_t, int64_t) -> int32_t { throw std::runtime_error("boom"); });
    EXPECT_EQ(code, -1);
    EXPECT_STREQ(AnvilGetLastError(), "AnvilParallelFor: the loop body threw: boom");
  }
}

TEST_F(ParallelFor, NullBodyIsAnError) {
  EXPECT_EQ(AnvilParallelFor(10, nullptr, nullptr), -1);
  EXPECT_STREQ(AnvilGetLastError(), "AnvilParallelFor: the loop body is NULL");
}

TEST_F(ParallelFor, NestedCallsRunSerially) {
  AnvilSetNumThreads(4);
  std::mutex mutex;
  std::vector<std::pair<Chunks, bool>> inner_runs;  // inner chunks, all on the outer's thread
  EXPECT_EQ(parallel_for(4,
                         [&](int64_t, int64_t) {
                           auto outer_thread = std::this_thread::get_id();
                           Chunks inner;
                           bool same_thread = true;
                           int32_t code = parallel_for(10, [&](int64_t b, int64_t e) {
                             inner.emplace_back(b, e);
                             same_thread &= std::this_thread::get_id() == outer_thread;
                             return 0;
                           });
                           std::lock_guard lock(mutex);
                           inner_runs.emplace_back(inner, same_thread);
                           return code;
                         }),
            0);
  ASSERT_EQ(inner_runs.size(), 4u);
  for (auto& [inner, same_thread] : inner_runs) {
    EXPECT_EQ(inner, (Chunks{{0, 10}}));
    EXPECT_TRUE(same_thread);
  }
}

TEST_F(ParallelFor, NumThreadsOverrideAndDefault) {
  int32_t fallback = anvil::runtime::default_num_threads();
  EXPECT_GE(fallback, 1);
  if (std::getenv("ANVIL_NUM_THREADS") == nullptr) {
    EXPECT_EQ(fallback, static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency())));
  }
  EXPECT_EQ(AnvilGetNumThreads(), fallback);
  AnvilSetNumThreads(3);
  EXPECT_EQ(AnvilGetNumThreads(), 3);
  AnvilSetNumThreads(0);
  EXPECT_EQ(AnvilGetNumThreads(), fallback);
  AnvilSetNumThreads(5);
  AnvilSetNumThreads(-2);
  EXPECT_EQ(AnvilGetNumThreads(), fallback);
}

TEST(ParseNumThreads, AcceptsOnlyAPlainPositiveInteger) {
  using anvil::runtime::parse_num_threads;
  EXPECT_EQ(parse_num_threads("1"), 1);
  EXPECT_EQ(parse_num_threads("8"), 8);
  EXPECT_EQ(parse_num_threads("4096"), 4096);
  for (const char* bad : {"", "0", "-1", "+2", " 2", "2 ", "2x", "x2", "abc", "1.5", "0x10", "4097",
                          "99999999999999999999"})
    EXPECT_EQ(parse_num_threads(bad), std::nullopt) << "'" << bad << "'";
  EXPECT_EQ(parse_num_threads(nullptr), std::nullopt);
}

}  // namespace
