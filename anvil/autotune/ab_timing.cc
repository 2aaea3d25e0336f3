#include "anvil/autotune/ab_timing.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <random>
#include <stdexcept>

namespace anvil::autotune {

std::pair<std::vector<runtime::Model>, std::vector<runtime::Model>> load_copies(
    const std::string& a, const std::string& b, int copies) {
  std::vector<runtime::Model> as, bs;
  for (int i = 0; i < copies; ++i) {
    if (i % 2 == 0) {
      as.push_back(runtime::Model::load(a));
      bs.push_back(runtime::Model::load(b));
    } else {
      bs.push_back(runtime::Model::load(b));
      as.push_back(runtime::Model::load(a));
    }
  }
  return {std::move(as), std::move(bs)};
}

double median(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::infinity();
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

runtime::NDArray filled_input(const runtime::TensorInfo& t, const std::string& mode,
                              uint32_t seed) {
  if (mode != "zeros" && mode != "ones" && mode != "random")
    throw std::invalid_argument("unknown fill mode '" + mode + "' (zeros, ones or random)");
  runtime::NDArray a = runtime::NDArray::empty(t.shape, t.dtype, /*zero=*/true);
  std::mt19937 rng(seed);
  const DLDataType d = t.dtype;
  auto fill = [&](auto* p, auto one, auto random) {
    for (int64_t i = 0; i < a.numel(); ++i) p[i] = mode == "ones" ? one : random();
  };
  if (mode == "zeros") return a;
  if (d.code == kDLFloat && d.bits == 32) {
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    fill(a.data_as<float>(), 1.0f, [&] { return u(rng); });
  } else if (d.code == kDLFloat && d.bits == 64) {
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    fill(a.data_as<double>(), 1.0, [&] { return u(rng); });
  } else if (d.code == kDLInt && d.bits == 64) {
    fill(a.data_as<int64_t>(), int64_t{1}, [&] { return static_cast<int64_t>(rng() % 10); });
  } else if (d.code == kDLInt && d.bits == 32) {
    fill(a.data_as<int32_t>(), int32_t{1}, [&] { return static_cast<int32_t>(rng() % 10); });
  } else {
    throw std::invalid_argument("input '" + t.name + "' has a dtype (" + runtime::to_string(d) +
                                ") it cannot fill");
  }
  return a;
}

void time_calls(int n, const std::function<void()>& run, std::vector<double>* ms) {
  for (int i = 0; i < n; ++i) {
    auto start = std::chrono::steady_clock::now();
    run();
    ms->push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
  }
}

void time_runs(const runtime::Model& model, const std::vector<runtime::NDArray>& inputs, int n,
               std::vector<double>* ms) {
  time_calls(
      n, [&] { model.run(inputs); }, ms);
}

AbTimes time_ab(const std::vector<runtime::Model>& a, const std::vector<runtime::Model>& b,
                const std::vector<runtime::NDArray>& inputs, const AbOptions& o) {
  if (a.empty() || a.size() != b.size())
    throw std::invalid_argument("time_ab: as many loads of each side, at least one");
  AbTimes t;
  std::vector<double> ignored;
  for (size_t i = 0; i < a.size(); ++i) {
    time_runs(a[i], inputs, o.warmup, &ignored);
    time_runs(b[i], inputs, o.warmup, &ignored);
  }
  const int block = std::max(1, o.block);
  for (int round = 0; static_cast<int>(t.a_ms.size()) < o.runs; ++round) {
    const size_t load = static_cast<size_t>(round / 2) % a.size();
    for (int k = 0; k < 2; ++k) {
      const bool a_now = (k == 0) == (round % 2 == 0);
      if (o.before_block) o.before_block();
      time_runs(a_now ? a[load] : b[load], inputs, block, a_now ? &t.a_ms : &t.b_ms);
    }
  }
  return t;
}

}  // namespace anvil::autotune
