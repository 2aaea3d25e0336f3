#include "tools/anvil/args.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>

namespace anvil::cli {

void usage_error(const std::string& message) {
  throw CliError(kUsage, message);
}

autotune::RecordFile read_tuning_records(const std::string& file, bool any_cpu) {
  return with_exit_code(kBadInput, "--tuning-records",
                        [&] { return driver::read_tuning_records(file, any_cpu); });
}

ExitCode exit_code(driver::ErrorKind kind) {
  switch (kind) {
    case driver::ErrorKind::kBadInput:
      return kBadInput;
    case driver::ErrorKind::kCompile:
      return kCompile;
    case driver::ErrorKind::kRuntime:
      return kRuntime;
  }
  return kRuntime;
}

std::vector<int64_t> parse_dims(const std::string& text, const std::string& option) {
  std::vector<int64_t> dims;
  if (text.empty()) return dims;
  size_t start = 0;
  while (true) {
    size_t end = text.find('x', start);
    if (end == std::string::npos) end = text.size();
    const char* first = text.data() + start;
    const char* last = text.data() + end;
    int64_t d = 0;
    auto [ptr, ec] = std::from_chars(first, last, d);
    if (first == last || ptr != last || ec != std::errc() || *first == '-' || *first == '+')
      usage_error(option + ": '" + text + "' is not a shape: dimension " +
                  std::to_string(dims.size()) + " is '" + std::string(first, last) +
                  "' (expected non-negative integers joined by 'x', as in 1x3x224x224)");
    dims.push_back(d);
    if (end == text.size()) return dims;
    start = end + 1;
  }
}

std::pair<std::string, std::string> parse_binding(const std::string& text,
                                                  const std::string& option,
                                                  const std::string& expected, Split split) {
  size_t eq = split == Split::kAtLast ? text.rfind('=') : text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    usage_error(option + ": '" + text + "' is not of the form " + expected);
  return {text.substr(0, eq), text.substr(eq + 1)};
}

std::pair<std::string, std::vector<int64_t>> parse_shape_binding(const std::string& text) {
  auto [name, dims] = parse_binding(text, "--input-shape", "NAME=DIMS (as in data=1x3x224x224)");
  return {name, parse_dims(dims, "--input-shape " + name)};
}

std::string output_file(const std::string& dir, const std::string& name) {
  std::string file = name;
  for (char& c : file)
    if (c == '/' || c == '\0') c = '_';
  if (!file.empty() && file[0] == '.') file[0] = '_';
  if (dir.empty() || dir.back() == '/') return dir + file + ".npy";
  return dir + "/" + file + ".npy";
}

std::string tuning_summary(size_t records, size_t tasks, int torn,
                           const std::vector<autotune::TaskLookup>& lookups) {
  size_t tuned = 0, kernels = 0, convolutions = 0, chosen = 0;
  std::vector<std::pair<std::string, int>> untuned;  // task, kernels
  for (const autotune::TaskLookup& l : lookups) {
    if (!l.task.choice.empty()) {  // a convolution's algorithm, not a kernel's schedule
      ++convolutions;
      chosen += l.found;
      continue;
    }
    ++kernels;
    if (l.found) {
      ++tuned;
      continue;
    }
    const std::string t = l.task.str();
    auto it = std::find_if(untuned.begin(), untuned.end(),
                           [&](const std::pair<std::string, int>& u) { return u.first == t; });
    if (it == untuned.end())
      untuned.push_back({t, 1});
    else
      ++it->second;
  }
  std::string s = "tuning records: " + std::to_string(records) + " read (" + std::to_string(tasks) +
                  (tasks == 1 ? " task" : " tasks") +
                  (torn ? ", " + std::to_string(torn) + " cut-off last line skipped" : "") + "); " +
                  std::to_string(tuned) + " of " + std::to_string(kernels) +
                  " tunable kernels tuned" +
                  (untuned.empty() ? "" : ", the others use the default rule") + "\n";
  if (chosen > 0)
    s += "  the algorithm of " + std::to_string(chosen) + " of " + std::to_string(convolutions) +
         " convolutions (direct or Winograd) is the in-model check's\n";
  for (const auto& [task, kernels] : untuned)
    s += "  untuned: " + task + " (" + std::to_string(kernels) +
         (kernels == 1 ? " kernel" : " kernels") + ")\n";
  return s;
}

std::string dims_string(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

std::string bytes_string(int64_t bytes) {
  char buf[64];
  if (bytes >= (int64_t{1} << 20)) {
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  } else if (bytes >= 1024) {
    std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(bytes) / 1024);
  } else {
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  }
  return buf;
}

LatencyStats latency_stats(std::vector<double> ms) {
  if (ms.empty()) throw std::invalid_argument("latency_stats: no samples");
  std::sort(ms.begin(), ms.end());
  size_t n = ms.size();
  LatencyStats s;
  s.median_ms = n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
  s.min_ms = ms.front();
  s.max_ms = ms.back();
  return s;
}

std::string profile_table(std::vector<runtime::KernelProfile> kernels, int runs, int threads,
                          const PeakFlops& peak) {
  std::stable_sort(kernels.begin(), kernels.end(),
                   [](const runtime::KernelProfile& a, const runtime::KernelProfile& b) {
                     return a.median_seconds > b.median_seconds;
                   });
  double total_s = 0, total_flops = 0;
  size_t width = 6;
  for (const runtime::KernelProfile& k : kernels) {
    total_s += k.median_seconds;
    total_flops += k.flops;
    width = std::max(width, k.kernel.size());
  }
  const double peak_gflops = peak.gflops_per_core * threads;
  std::string out;
  char line[512];
  // A Winograd kernel's FLOPs are the direct convolution's (flops.h), more than it performs: its
  // rate is an effective one, marked "e".
  bool effective_rates = false;
  auto row = [&](double seconds, double flops, const std::string& name, const std::string& nodes) {
    std::string rate = "-", fraction = "-";
    if (flops > 0 && seconds > 0) {
      char buf[64];
      double gflops = flops / seconds / 1e9;
      const bool effective = name.find("winograd") != std::string::npos;
      effective_rates = effective_rates || effective;
      std::snprintf(buf, sizeof buf, effective ? "%.1fe" : "%.1f", gflops);
      rate = buf;
      if (peak_gflops > 0) {
        std::snprintf(buf, sizeof buf, "%.1f%%", 100 * gflops / peak_gflops);
        fraction = buf;
      }
    }
    std::snprintf(line, sizeof line, "%10.3f %7.1f%% %9s %8s  %-*s", seconds * 1e3,
                  total_s > 0 ? 100 * seconds / total_s : 0.0, rate.c_str(), fraction.c_str(),
                  static_cast<int>(width), name.c_str());
    out += line;
    out += nodes.empty() ? "" : "  " + nodes;
    while (!out.empty() && out.back() == ' ') out.pop_back();
    out += "\n";
  };
  if (threads > 0)
    std::snprintf(line, sizeof line, "profile: median of %d runs after 1 warm-up, %d %s\n", runs,
                  threads, threads == 1 ? "thread" : "threads");
  else
    std::snprintf(line, sizeof line,
                  "profile: median of %d runs after 1 warm-up, on the GPU (each call waited "
                  "for alone)\n",
                  runs);
  out += line;
  std::snprintf(line, sizeof line, "%10s %8s %9s %8s  %-*s  %s\n", "time (ms)", "share", "GFLOP/s",
                "of peak", static_cast<int>(width), "kernel", "nodes");
  out += line;
  for (const runtime::KernelProfile& k : kernels) row(k.median_seconds, k.flops, k.kernel, k.nodes);
  row(total_s, total_flops, "total", "(" + std::to_string(kernels.size()) + " kernels)");
  if (peak_gflops > 0) {
    std::snprintf(line, sizeof line,
                  "peak: %.1f GFLOP/s per core x %d %s (measured: %s fused multiply-adds)\n",
                  peak.gflops_per_core, threads, threads == 1 ? "thread" : "threads",
                  peak.isa.c_str());
    out += line;
  }
  if (effective_rates)
    out +=
        "e: effective rate of a Winograd kernel (the direct convolution's FLOPs over its time; "
        "it performs fewer, so it can exceed the peak)\n";
  return out;
}

}  // namespace anvil::cli
