// How much a model's time depends on the load: the same artifact loaded several times in one
// process, the loads timed round-robin (blocks of 4 runs, the order reversed every other round, so
// that no load always runs first), and each load's median printed with the medians of the first
// and the second half of its runs. Loads that differ consistently in both halves differ by where
// their memory landed, not by when they ran.
//
//   bench_loads MODEL.so [LOADS=4] [ROUNDS=40] [THREADS=1]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "anvil/runtime/c_runtime_api.h"
#include "anvil/runtime/model.h"

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

int positive_arg(int argc, char** argv, int i, int fallback, const char* name) {
  if (i >= argc) return fallback;
  char* end = nullptr;
  const long v = std::strtol(argv[i], &end, 10);
  if (*end != '\0' || v < 1 || v > 1000) {
    std::fprintf(stderr, "bench_loads: %s must be an integer from 1 to 1000, not '%s'\n", name,
                 argv[i]);
    std::exit(1);
  }
  return static_cast<int>(v);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 5) {
    std::fprintf(stderr, "usage: bench_loads MODEL.so [LOADS=4] [ROUNDS=40] [THREADS=1]\n");
    return 1;
  }
  const int loads = positive_arg(argc, argv, 2, 4, "LOADS");
  const int rounds = positive_arg(argc, argv, 3, 40, "ROUNDS");
  const int threads = positive_arg(argc, argv, 4, 1, "THREADS");
  using anvil::runtime::Model;
  using anvil::runtime::NDArray;
  try {
    AnvilSetNumThreads(threads);
    std::vector<Model> models;
    for (int k = 0; k < loads; ++k) models.push_back(Model::load(argv[1]));
    std::vector<NDArray> inputs;
    for (const anvil::runtime::TensorInfo& t : models[0].inputs()) {
      NDArray a = NDArray::empty(t.shape, t.dtype);
      auto* bytes = static_cast<unsigned char*>(a.data());
      for (size_t i = 0; i < a.nbytes(); ++i) bytes[i] = 0;  // zeros: valid for any dtype
      inputs.push_back(a);
    }
    for (const Model& m : models) m.run(inputs);  // warm-up
    std::vector<std::vector<double>> ms(loads);
    for (int r = 0; r < rounds; ++r)
      for (int i = 0; i < loads; ++i) {
        const int k = r % 2 ? loads - 1 - i : i;
        for (int run = 0; run < 4; ++run) {
          auto start = std::chrono::steady_clock::now();
          models[k].run(inputs);
          ms[k].push_back(
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                  .count());
        }
      }
    std::printf("%s: %d loads, %d rounds of 4 runs each, %d thread(s)\n", argv[1], loads, rounds,
                threads);
    for (int k = 0; k < loads; ++k) {
      const size_t half = ms[k].size() / 2;
      std::printf("  load %d: median %.3f ms (first half %.3f, second half %.3f)\n", k,
                  median(ms[k]), median({ms[k].begin(), ms[k].begin() + half}),
                  median({ms[k].begin() + half, ms[k].end()}));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_loads: %s\n", e.what());
    return 2;
  }
  return 0;
}
