// bench_tuners: the tuner comparison of the TVM paper's figure 12. Each search strategy (xgb,
// genetic, random) tunes one convolution task from nothing (the default configuration is not
// proposed first) for --trials trials, with --seeds seeds; the best throughput found after each
// trial gives one curve per run. Output: a CSV of every curve, a PNG (median over seeds and the
// range, per strategy), and per strategy the median number of trials to reach 95% of the best
// throughput any run found (a run that never does counts as --trials).
//
// The task is ResNet-18's c6 layer (3x3, 128 -> 128 channels, 28x28, stride 1) as the direct
// NCHW[16]c convolution template conv2d_nchwc (the graph compiler picks Winograd for this layer;
// the direct template has the larger space). Measurements go through the tuner's own worker
// (anvil/autotune/measure.h: compiled in parallel, timed one at a time, checked against the
// reference) and into a records file that doubles as a cache: a configuration already measured
// there (by this or an earlier run) is not measured again, so the strategies are compared on the
// same costs and a rerun over the committed records reproduces the figure without measuring.
//
// A candidate gets --timeout seconds (10) to compile and run: the space's widest register tiles
// (8 channel blocks x 28 columns, unrolled) take LLVM minutes, and are failed trials here as they
// would be for a user.
//
//   build/bin/bench_tuners [--records FILE] [--tuners xgb,genetic,random] [--seeds 5]
//                          [--trials 400] [--csv FILE] [--chart FILE.png] [--summary-json FILE]
//                          [--timeout S]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "anvil/autotune/features.h"
#include "anvil/autotune/measure.h"
#include "anvil/autotune/records.h"
#include "anvil/autotune/search.h"
#include "anvil/autotune/task.h"
#include "anvil/ops/nchwc.h"
#include "anvil/support/error.h"

namespace {

using namespace anvil;
namespace fs = std::filesystem;

struct Options {
  std::string records = "build/bench/tuners/resnet18_c6.records.json";
  std::vector<std::string> tuners = {"xgb", "genetic", "random"};
  int seeds = 5;
  int trials = 400;
  std::string csv = "build/bench/tuners/curves.csv";
  std::string chart = "build/bench/tuners/tuners.png";
  std::string summary;
  double timeout_s = 10;  // per candidate: one that takes longer to compile or run is a failure
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_tuners: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--records") {
      o.records = value();
    } else if (a == "--tuners") {
      o.tuners = split(value());
    } else if (a == "--seeds") {
      o.seeds = std::atoi(value().c_str());
    } else if (a == "--trials") {
      o.trials = std::atoi(value().c_str());
    } else if (a == "--csv") {
      o.csv = value();
    } else if (a == "--chart") {
      o.chart = value();
    } else if (a == "--summary-json") {
      o.summary = value();
    } else if (a == "--timeout") {
      o.timeout_s = std::atof(value().c_str());
    } else {
      std::fprintf(stderr,
                   "bench_tuners: unknown argument '%s'\nusage: bench_tuners [--records FILE] "
                   "[--tuners xgb,genetic,random] [--seeds N] [--trials N] [--csv FILE] "
                   "[--chart FILE.png] [--summary-json FILE] [--timeout S]\n",
                   a.c_str());
      return false;
    }
  }
  if (o.seeds < 1 || o.trials < 1 || !(o.timeout_s > 0)) {
    std::fprintf(stderr, "bench_tuners: --seeds, --trials and --timeout must be positive\n");
    return false;
  }
  return true;
}

// ResNet-18 c6 as the direct blocked convolution: x [1, 128/16, 28, 28, 16], weight packed
// [128/16, 128/16, 3, 3, 16, 16].
autotune::Task c6_task() {
  const Target target = Target::host();
  const int64_t ib = ops::nchwc_block(128, target), ob = ops::nchwc_block(128, target);
  autotune::Task t;
  t.op = "conv2d_nchwc";
  t.inputs = {{{1, 128 / ib, 28, 28, ib}}, {{128 / ob, 128 / ib, 3, 3, ib, ob}}};
  t.attrs = ops::Attrs("conv2d_nchwc", {{"strides", std::vector<int64_t>{1, 1}},
                                        {"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  t.target = target.str();
  return t;
}

// The best-so-far curve of one run.
struct Run {
  std::string tuner;
  int seed = 0;
  std::vector<double> best_gflops;  // after trial k + 1
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

bool write_chart(const Options& o, const std::vector<Run>& runs) {
  const fs::path dir = fs::path(o.chart).parent_path();
  std::vector<std::string> plots;
  int color = 0;  // each tuner's band and line in one colour
  for (const std::string& tuner : o.tuners) {
    const std::string lc = " lc " + std::to_string(++color);
    const fs::path data = dir / (tuner + ".dat");
    std::ofstream f(data);
    for (int k = 0; k < o.trials; ++k) {
      std::vector<double> v;
      for (const Run& r : runs)
        if (r.tuner == tuner) v.push_back(r.best_gflops[k]);
      f << k + 1 << " " << median(v) << " " << *std::min_element(v.begin(), v.end()) << " "
        << *std::max_element(v.begin(), v.end()) << "\n";
    }
    plots.push_back("'" + data.string() + "' using 1:3:4 with filledcurves fs transparent solid " +
                    "0.2 noborder" + lc + " notitle");
    plots.push_back("'" + data.string() + "' using 1:2 with lines lw 2" + lc + " title '" + tuner +
                    "'");
  }
  const fs::path script = dir / "tuners.gp";
  std::ofstream g(script);
  g << "set terminal pngcairo size 900,560\nset output '" << o.chart << "'\n"
    << "set title 'resnet18\\_c6 (conv2d\\_nchwc): best throughput found, median and range over "
    << o.seeds << " seeds'\nset xlabel 'trials'\nset ylabel 'GFLOP/s'\nset key bottom right\n"
    << "set grid\nplot ";
  for (size_t i = 0; i < plots.size(); ++i) g << (i ? ", " : "") << plots[i];
  g << "\n";
  g.close();
  const std::string cmd = "gnuplot '" + script.string() + "' 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    std::fprintf(stderr,
                 "bench_tuners: gnuplot failed (Debian package gnuplot-nox; make bench "
                 "installs it): no chart\n");
    return false;
  }
  return true;
}

int run(const Options& o, const std::string& exe) {
  const autotune::Task task = c6_task();
  const ops::ConfigSpace space = task.space();
  const int64_t size = autotune::space_size(space);
  const double flops = 2.0 * 128 * 128 * 28 * 28 * 9;
  for (const std::string& t : o.tuners) {
    const std::vector<std::string> names = autotune::search_names();
    if (std::find(names.begin(), names.end(), t) == names.end()) {
      std::fprintf(stderr, "bench_tuners: unknown tuner '%s'\n", t.c_str());
      return 2;
    }
  }
  std::error_code ec;
  fs::create_directories(fs::path(o.records).parent_path(), ec);
  fs::create_directories(fs::path(o.csv).parent_path(), ec);
  fs::create_directories(fs::path(o.chart).parent_path(), ec);

  // The cache: point -> cost (the lowest recorded; infinity: failed).
  std::map<int64_t, double> cache;
  if (fs::exists(o.records)) {
    for (const autotune::Record& r : autotune::read_records(o.records).records) {
      if (autotune::task_key(r.task, r.target) != task.key()) continue;
      const int64_t i = autotune::index_of(space, r.config);
      if (i < 0) continue;
      auto [it, added] = cache.emplace(i, r.cost());
      if (!added) it->second = std::min(it->second, r.cost());
    }
  }
  std::printf("bench_tuners: %s, %lld configurations, %zu already measured in %s\n",
              task.str().c_str(), static_cast<long long>(size), cache.size(), o.records.c_str());
  std::fflush(stdout);

  autotune::Measurer measurer({exe, "--measure-worker"});
  autotune::MeasureOptions mo;
  mo.repeats = 3;
  // The committed records were measured with warm caches; the figure compares search strategies
  // on one measurement, so it keeps that one.
  mo.flush_caches = false;
  mo.timeout_s = o.timeout_s;
  const auto start = std::chrono::steady_clock::now();
  int measured_now = 0;
  std::vector<Run> runs;
  for (const std::string& tuner : o.tuners) {
    for (int seed = 0; seed < o.seeds; ++seed) {
      autotune::SearchContext context;
      context.default_first = false;
      context.features = [&](int64_t i) {
        return autotune::extract_features(task, autotune::config_at(space, i));
      };
      std::unique_ptr<autotune::Search> search =
          autotune::make_search(tuner, space, static_cast<uint32_t>(seed), context);
      Run r{tuner, seed, {}};
      std::map<int64_t, double> measured;
      double best = INFINITY;
      while (static_cast<int>(measured.size()) < o.trials) {
        std::vector<int64_t> points =
            search->next_batch(measured, std::min(8, o.trials - static_cast<int>(measured.size())));
        if (points.empty()) break;
        std::vector<int64_t> missing;
        std::vector<ops::Config> configs;
        for (int64_t i : points)
          if (!cache.count(i)) {
            missing.push_back(i);
            configs.push_back(autotune::config_at(space, i));
          }
        if (!missing.empty()) {
          std::vector<autotune::Measurement> ms = measurer.measure_batch(task, configs, mo);
          for (size_t k = 0; k < missing.size(); ++k) {
            autotune::Record rec{task.to_json(), task.target, configs[k],
                                 ms[k].costs_s,  ms[k].error, autotune::utc_now()};
            autotune::append_record(o.records, rec);
            cache[missing[k]] = rec.cost();
          }
          measured_now += static_cast<int>(missing.size());
        }
        for (int64_t i : points) {
          measured[i] = cache.at(i);
          best = std::min(best, cache.at(i));
          r.best_gflops.push_back(std::isfinite(best) ? flops / best / 1e9 : 0.0);
        }
      }
      while (static_cast<int>(r.best_gflops.size()) < o.trials)
        r.best_gflops.push_back(r.best_gflops.empty() ? 0.0 : r.best_gflops.back());
      const double minutes =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / 60;
      std::printf(
          "  %-8s seed %d: best %.1f GFLOP/s after %d trials (%d measured so far, %.1f "
          "min)\n",
          tuner.c_str(), seed, r.best_gflops.back(), o.trials, measured_now, minutes);
      std::fflush(stdout);
      runs.push_back(std::move(r));
    }
  }

  // Trials to 95% of the best any run found.
  double top = 0;
  for (const Run& r : runs) top = std::max(top, r.best_gflops.back());
  std::ofstream csv(o.csv);
  csv << "tuner,seed,trial,best_gflops\n";
  for (const Run& r : runs)
    for (size_t k = 0; k < r.best_gflops.size(); ++k)
      csv << r.tuner << "," << r.seed << "," << k + 1 << "," << r.best_gflops[k] << "\n";
  nlohmann::json summary = {{"task", task.to_json()},
                            {"target", task.target},
                            {"configurations", size},
                            {"trials", o.trials},
                            {"seeds", o.seeds},
                            {"best_gflops", top},
                            {"tuners", nlohmann::json::object()}};
  std::printf(
      "\n| tuner | median trials to 95%% of %.1f GFLOP/s | per seed | median best GFLOP/s "
      "|\n|---|--:|---|--:|\n",
      top);
  for (const std::string& tuner : o.tuners) {
    std::vector<double> reach, bests;
    std::string per_seed;
    for (const Run& r : runs) {
      if (r.tuner != tuner) continue;
      int k = 0;
      while (k < o.trials && r.best_gflops[k] < 0.95 * top) ++k;
      const int trials = k < o.trials ? k + 1 : o.trials;
      reach.push_back(trials);
      bests.push_back(r.best_gflops.back());
      per_seed += (per_seed.empty() ? "" : ", ") + std::to_string(trials);
    }
    std::printf("| %s | %.0f | %s | %.1f |\n", tuner.c_str(), median(reach), per_seed.c_str(),
                median(bests));
    summary["tuners"][tuner] = {{"median_trials_to_95", median(reach)},
                                {"trials_to_95", reach},
                                {"median_best_gflops", median(bests)}};
  }
  std::printf("\ncurves in %s\n", o.csv.c_str());
  if (write_chart(o, runs)) std::printf("chart in %s\n", o.chart.c_str());
  if (!o.summary.empty()) {
    std::ofstream(o.summary) << summary.dump(2) << "\n";
    std::printf("summary in %s\n", o.summary.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--measure-worker") {
    anvil::autotune::serve_measurements(std::cin, std::cout);
    return 0;
  }
  Options o;
  if (!parse(argc, argv, o)) return 2;
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) {
    std::fprintf(stderr, "bench_tuners: cannot find its own executable for the measure worker\n");
    return 1;
  }
  exe[n] = '\0';
  try {
    return run(o, exe);
  } catch (const anvil::Error& e) {
    std::fprintf(stderr, "bench_tuners: %s\n", e.what());
    return 1;
  }
}
