#include "tools/anvil/bench_report.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "anvil/runtime/host_cpu.h"
#include "anvil/target/target.h"

namespace anvil::cli {

namespace fs = std::filesystem;

namespace {

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// Milliseconds with three significant decimals at most: 0.209, 20.18, 152.3.
std::string ms_string(double ms) {
  return fixed(ms, ms < 1 ? 3 : ms < 100 ? 2 : 1);
}

// "48 KiB", "1 MiB", "32 MiB"; "?" when unknown.
std::string size_string(int64_t bytes) {
  if (bytes <= 0) return "?";
  if (bytes % (1 << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  if (bytes % (1 << 10) == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " B";
}

std::string table_line(const std::vector<std::string>& cells) {
  std::string s = "|";
  for (const std::string& c : cells) s += " " + c + " |";
  return s + "\n";
}

// Names in the first `left` columns, left-aligned; numbers after them, right-aligned.
std::string separator(size_t columns, size_t left) {
  std::string s = "|";
  for (size_t i = 0; i < columns; ++i) s += (i < left ? "---|" : "--:|");
  return s + "\n";
}

}  // namespace

std::string cpu_name() {
  const std::string& brand = runtime::host_cpu().brand;
  return brand.empty() ? "unknown CPU" : brand;
}

MachineFacts MachineFacts::host() {
  const Target t = Target::host();
  MachineFacts m;
  m.cpu_id = runtime::host_cpu().id();
  m.features = runtime::host_cpu().features;
  m.vector_bits = t.vector_bits;
  m.fma_units = t.fma_units;
  m.cores = t.cores;
  m.l1d_bytes = t.l1d_bytes;
  m.l2_bytes = t.l2_bytes;
  m.l3_bytes = t.l3_bytes;
  return m;
}

std::string machine_line(const BenchReport& r) {
  const MachineFacts& m = r.machine;
  std::string simd;  // the vector extensions; the rest is in the summary JSON
  for (const std::string& f : m.features)
    if (f.rfind("avx", 0) == 0 || f.rfind("amx", 0) == 0 || f == "fma")
      simd += (simd.empty() ? "" : " ") + f;
  std::string s = r.cpu + " (" + m.cpu_id + "): " + std::to_string(m.vector_bits) +
                  "-bit vectors, " + std::to_string(m.fma_units) + " FMA units" +
                  (simd.empty() ? "" : ", " + simd) + "; L1d " + size_string(m.l1d_bytes) +
                  ", L2 " + size_string(m.l2_bytes) + " per core, L3 " + size_string(m.l3_bytes) +
                  "; " + std::to_string(m.cores) + " cores";
  if (r.peak_gflops_per_core > 0)
    s += "; measured peak " + fixed(r.peak_gflops_per_core, 1) + " GFLOP/s per core";
  return s;
}

double BenchRow::spread(const std::vector<double>& ms) {
  if (ms.size() < 2) return 0;
  std::vector<double> v = ms;
  std::sort(v.begin(), v.end());
  const double median =
      v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  return median > 0 ? (v.back() - v.front()) / median : 0;
}

std::string bench_table(const BenchReport& r) {
  const bool processes = std::any_of(r.rows.begin(), r.rows.end(), [](const BenchRow& row) {
    return row.anvil_process_ms.size() > 1;
  });
  std::vector<std::string> head = {"model",    "threads", "baseline",      "baseline ms",
                                   "Anvil ms", "speedup", "Anvil GFLOP/s", "of peak"};
  if (processes) head.push_back("spread Anvil / baseline");
  std::string s = "Measured on " +
                  (r.gpu.empty() ? machine_line(r) : r.gpu + " (the host: " + r.cpu + ")") +
                  "\n\n" + table_line(head) + separator(head.size(), 3);
  std::vector<std::string> notes;
  bool contended = false, above_peak = false, spread = false;
  auto percent = [&](const std::vector<double>& ms) {
    if (ms.size() < 2) return std::string("-");
    const bool wide = BenchRow::spread(ms) > kSpreadWarning;
    spread = spread || wide;
    return fixed(100 * BenchRow::spread(ms), 1) + "%" + (wide ? " !" : "");
  };
  for (const BenchRow& row : r.rows) {
    const std::string side = r.gpu.empty() ? std::to_string(row.threads) : "GPU";
    std::vector<std::string> cells = {row.name, side, row.baseline.empty() ? "-" : row.baseline};
    if (!row.error.empty()) {
      notes.push_back("(" + std::to_string(notes.size() + 1) + ") " + row.name + ": " + row.error);
      cells.insert(cells.end(), {"-", "(" + std::to_string(notes.size()) + ")", "-", "-", "-"});
      if (processes) cells.push_back("-");
      s += table_line(cells);
      continue;
    }
    if (row.baseline_ms) {
      cells.push_back(ms_string(*row.baseline_ms));
      cells.push_back(ms_string(row.anvil_ms));
      cells.push_back(fixed(row.speedup(), 2) + "x" + (row.contended() ? " *" : ""));
      contended = contended || row.contended();
    } else {
      cells.push_back("-");
      cells.push_back(ms_string(row.anvil_ms));
      if (row.baseline.empty()) {
        cells.push_back("-");
      } else {
        notes.push_back("(" + std::to_string(notes.size() + 1) + ") " + row.name + ", " +
                        (r.gpu.empty() ? side + " thread(s)" : side) + ", " + row.baseline + ": " +
                        row.note);
        cells.push_back("(" + std::to_string(notes.size()) + ")");
      }
    }
    cells.push_back(fixed(row.gflops, 1));
    const double peak = r.gpu.empty() ? r.peak_gflops_per_core * row.threads : 0;
    cells.push_back(peak > 0 ? fixed(100 * row.gflops / peak, 1) + "%" : "-");
    above_peak = above_peak || (peak > 0 && row.gflops > peak);
    if (processes)
      cells.push_back(percent(row.anvil_process_ms) + " / " + percent(row.baseline_process_ms));
    s += table_line(cells);
  }
  for (const std::string& n : notes) s += n + "\n";
  if (above_peak)
    s += "GFLOP/s counts each convolution's direct FLOPs; Winograd convolutions do fewer, so "
         "a model that uses them can exceed 100% of peak\n";
  if (contended)
    s += "* contended: a median more than twice that side's fastest run (another process was "
         "using the cores)\n";
  if (spread)
    s += "! warning: that side's per-process medians spread beyond " +
         fixed(100 * kSpreadWarning, 0) +
         "% (max - min over their median): the machine's speed moved during the run (other "
         "tenants, clocks) or the processes drew different memory placements; read the row's "
         "speedup with that margin\n";
  for (const CallOverhead& c : r.call_overhead)
    s += "Per call on a one-op model (relu of one float, 1 thread): Anvil " +
         fixed(c.anvil_ms * 1e3, 1) + " us, " + c.baseline + " " +
         (c.baseline_ms ? fixed(*c.baseline_ms * 1e3, 1) + " us" : "not timed (" + c.note + ")") +
         ": part of every row's time, most of it for the smallest models\n";
  return s;
}

std::string ablation_table(const BenchReport& r) {
  if (r.ablation.empty()) return "";
  std::string s = table_line({"model", "threads", "fusion + layout ms", "no fusion ms",
                              "no layout ms", "neither ms"}) +
                  separator(6, 2);
  for (const AblationRow& a : r.ablation) {
    std::vector<std::string> cells = {a.name, std::to_string(a.threads), ms_string(a.ms[0])};
    for (int i = 1; i < 4; ++i)
      cells.push_back(ms_string(a.ms[i]) + " (" + fixed(a.ms[i] / a.ms[0], 2) + "x)");
    s += table_line(cells);
  }
  return s;
}

nlohmann::json summary_json(const BenchReport& r) {
  nlohmann::json out;
  // On a GPU the CPU's peak was not measured and no row has a fraction of it.
  const MachineFacts& m = r.machine;
  out["machine"] = {{"cpu", r.cpu},
                    {"cpu_id", m.cpu_id},
                    {"features", m.features},
                    {"vector_bits", m.vector_bits},
                    {"fma_units", m.fma_units},
                    {"cores", m.cores},
                    {"l1d_bytes", m.l1d_bytes},
                    {"l2_bytes", m.l2_bytes},
                    {"l3_bytes", m.l3_bytes},
                    {"peak_gflops_per_core", r.gpu.empty() ? nlohmann::json(r.peak_gflops_per_core)
                                                           : nlohmann::json(nullptr)}};
  if (!r.call_overhead.empty()) {
    out["call_overhead_ms"] = nlohmann::json::object();
    for (const CallOverhead& c : r.call_overhead) {
      out["call_overhead_ms"]["anvil"] = c.anvil_ms;
      out["call_overhead_ms"][c.baseline] =
          c.baseline_ms ? nlohmann::json(*c.baseline_ms) : nlohmann::json(nullptr);
    }
  }
  if (!r.gpu.empty()) out["machine"]["gpu"] = r.gpu;
  out["runs"] = r.runs;
  out["rows"] = nlohmann::json::array();
  for (const BenchRow& row : r.rows) {
    if (!row.error.empty()) {
      out["rows"].push_back({{"name", row.name},
                             {"threads", row.threads},
                             {"baseline", row.baseline.empty() ? nlohmann::json(nullptr)
                                                               : nlohmann::json(row.baseline)},
                             {"anvil_ms", nullptr},
                             {"error", row.error}});
      continue;
    }
    nlohmann::json j = {{"name", row.name},
                        {"threads", row.threads},
                        {"anvil_ms", row.anvil_ms},
                        {"gflops", row.gflops}};
    if (row.anvil_process_ms.size() > 1) {
      j["anvil_process_ms"] = row.anvil_process_ms;
      j["anvil_spread"] = BenchRow::spread(row.anvil_process_ms);
    }
    if (row.baseline_process_ms.size() > 1) {
      j["baseline_process_ms"] = row.baseline_process_ms;
      j["baseline_spread"] = BenchRow::spread(row.baseline_process_ms);
    }
    const double peak = r.gpu.empty() ? r.peak_gflops_per_core * row.threads : 0;
    j["peak_fraction"] = peak > 0 ? nlohmann::json(row.gflops / peak) : nlohmann::json(nullptr);
    j["baseline"] = row.baseline.empty() ? nlohmann::json(nullptr) : nlohmann::json(row.baseline);
    if (row.baseline_ms) {
      j["baseline_ms"] = *row.baseline_ms;
      j["speedup"] = row.speedup();
      if (row.contended()) j["contended"] = true;
    } else if (!row.baseline.empty()) {
      j["note"] = row.note;
    }
    out["rows"].push_back(j);
  }
  if (!r.ablation.empty()) {
    out["ablation"] = nlohmann::json::array();
    for (const AblationRow& a : r.ablation)
      out["ablation"].push_back({{"name", a.name},
                                 {"threads", a.threads},
                                 {"fuse_layout_ms", a.ms[0]},
                                 {"no_fuse_ms", a.ms[1]},
                                 {"no_layout_ms", a.ms[2]},
                                 {"no_fuse_no_layout_ms", a.ms[3]}});
  }
  // Per model, its kernels slowest first: median ms and GFLOP/s (null: no FLOPs counted).
  if (!r.profiles.empty()) {
    out["profiles"] = nlohmann::json::array();
    for (const ModelProfile& p : r.profiles) {
      std::vector<runtime::KernelProfile> kernels = p.kernels;
      std::stable_sort(kernels.begin(), kernels.end(), [](const auto& a, const auto& b) {
        return a.median_seconds > b.median_seconds;
      });
      nlohmann::json list = nlohmann::json::array();
      for (const runtime::KernelProfile& k : kernels) {
        list.push_back({{"kernel", k.kernel},
                        {"nodes", k.nodes},
                        {"ms", k.median_seconds * 1e3},
                        {"gflops", k.flops > 0 && k.median_seconds > 0
                                       ? nlohmann::json(k.flops / k.median_seconds / 1e9)
                                       : nlohmann::json(nullptr)}});
        // Winograd's rate counts the direct convolution's FLOPs (profile_table's "e").
        if (k.kernel.find("winograd") != std::string::npos) list.back()["effective"] = true;
      }
      out["profiles"].push_back(
          {{"name", p.name}, {"threads", p.threads}, {"runs", p.runs}, {"kernels", list}});
    }
  }
  return out;
}

void write_chart(const BenchReport& r, const std::string& png) {
  // The data: one line per model, one column per (baseline, threads); "?" where there is none.
  std::vector<std::string> models;
  std::vector<std::pair<std::string, int>> series;
  std::map<std::pair<std::string, std::pair<std::string, int>>, double> speedup;
  for (const BenchRow& row : r.rows) {
    if (!row.baseline_ms) continue;
    if (std::find(models.begin(), models.end(), row.name) == models.end())
      models.push_back(row.name);
    std::pair<std::string, int> s{row.baseline, row.threads};
    if (std::find(series.begin(), series.end(), s) == series.end()) series.push_back(s);
    speedup[{row.name, s}] = row.speedup();
  }
  if (models.empty()) throw std::runtime_error("chart " + png + ": no row has a speedup to draw");
  if (png.find('\'') != std::string::npos)
    throw std::runtime_error("chart " + png + ": the file name may not contain a quote");

  const fs::path dir = fs::temp_directory_path() / ("anvil-chart-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path data = dir / "speedup.dat", script = dir / "speedup.gp", log = dir / "log";
  {
    std::ofstream d(data);
    d << "model";
    for (const auto& [b, t] : series)
      d << " \"" << b
        << (r.gpu.empty() ? ", " + std::to_string(t) + (t == 1 ? " thread" : " threads") : "")
        << "\"";
    d << "\n";
    for (const std::string& m : models) {
      d << m;
      for (const auto& s : series) {
        auto it = speedup.find({m, s});
        d << " " << (it == speedup.end() ? std::string("?") : fixed(it->second, 4));
      }
      d << "\n";
    }
  }
  {
    std::ofstream g(script);
    g << "set terminal pngcairo size 1100,520 font 'sans,11'\n"
      << "set output '" << png << "'\n"
      << "set title 'Anvil speedup over each baseline (baseline ms / Anvil ms), batch 1, "
      << (r.gpu.empty() ? r.cpu : r.gpu) << "' noenhanced\n"
      << "set ylabel 'speedup'\nset yrange [0:*]\nset grid ytics\n"
      << "set style data histograms\nset style histogram clustered gap 1\n"
      << "set style fill solid 0.85 border -1\nset boxwidth 0.9\n"
      << "set datafile missing '?'\nset key outside right top noenhanced\n"
      << "set xtics noenhanced\n"
      << "set arrow from graph 0, first 1 to graph 1, first 1 nohead dashtype 2 lw 1.5\n"
      << "plot for [i=2:" << series.size() + 1 << "] '" << data.string()
      << "' using i:xtic(1) title columnheader(i)\n";
  }
  const std::string command = "gnuplot '" + script.string() + "' > '" + log.string() + "' 2>&1";
  const int status = std::system(command.c_str());
  std::ifstream l(log);
  std::stringstream message;
  message << l.rdbuf();
  fs::remove_all(dir);
  if (status != 0) {
    const bool missing = WIFEXITED(status) && WEXITSTATUS(status) == 127;
    throw std::runtime_error("chart " + png + ": " +
                             (missing ? std::string("gnuplot is not installed (Debian package "
                                                    "gnuplot-nox; make bench installs it)")
                                      : "gnuplot failed: " + message.str()));
  }
}

}  // namespace anvil::cli
