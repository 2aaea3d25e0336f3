// What the `anvil` command line shares between its commands and its tests: the exit codes, the
// error that carries one, and the parsing of option values ("data=1x3x224x224", "x=in.npy").
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "anvil/autotune/records.h"
#include "anvil/driver/driver.h"
#include "anvil/graph/flops.h"
#include "anvil/runtime/model.h"
#include "anvil/target/peak.h"

namespace anvil::cli {

// The exit codes (main.cc says which failure maps to which).
enum ExitCode : int {
  kOk = 0,
  kUsage = 1,     // the command line is wrong: unknown option, bad option value
  kBadInput = 2,  // a file given is not what it should be: ONNX, .npy, model.so, input names
  kCompile = 3,   // the model is valid but could not be compiled (or exported)
  kRuntime = 4,   // a kernel failed while running, or the outputs could not be written
};

// An error with the exit code it ends the program with. The message is what follows
// "anvil: error: ".
class CliError : public std::runtime_error {
 public:
  CliError(ExitCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ExitCode code() const { return code_; }

 private:
  ExitCode code_;
};

[[noreturn]] void usage_error(const std::string& message);

// The exit code of a driver error's kind.
ExitCode exit_code(driver::ErrorKind kind);

// Runs `fn`; any exception other than a CliError becomes a CliError with `code` (a driver::Error:
// the code of its kind), its message prefixed by `context` (when not empty) and ": ".
template <typename F>
auto with_exit_code(ExitCode code, const std::string& context, F&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const CliError&) {
    throw;
  } catch (const driver::Error& e) {
    throw CliError(exit_code(e.kind()),
                   context.empty() ? std::string(e.what()) : context + ": " + e.what());
  } catch (const std::exception& e) {
    throw CliError(code, context.empty() ? std::string(e.what()) : context + ": " + e.what());
  }
}

// "1x3x224x224" -> {1, 3, 224, 224}. Every dimension a non-negative decimal integer; "" (a
// scalar) is allowed. Throws CliError(kUsage) naming `option` and the text.
std::vector<int64_t> parse_dims(const std::string& text, const std::string& option);

// "NAME=VALUE" -> {NAME, VALUE}; by default splits at the last '=' (ONNX names may hold '='; file
// names and dims rarely do), a command (whose words may hold '=', as env's do) at the first. Both
// sides non-empty. Throws CliError(kUsage) naming `option` and `expected` (e.g. "NAME=FILE.npy").
enum class Split { kAtLast, kAtFirst };
std::pair<std::string, std::string> parse_binding(const std::string& text,
                                                  const std::string& option,
                                                  const std::string& expected,
                                                  Split split = Split::kAtLast);

// "--input-shape" values: "data=1x3x224x224" -> {"data", {1, 3, 224, 224}}.
std::pair<std::string, std::vector<int64_t>> parse_shape_binding(const std::string& text);

// The file an output is written to: DIR/<name>.npy, with characters that cannot be in a file name
// ('/', NUL) and a leading '.' replaced by '_'.
std::string output_file(const std::string& dir, const std::string& name);

// The tuning records of `--tuning-records FILE` (anvil/autotune/records.h; a torn last line is
// skipped), those tuned on another CPU set aside (autotune::keep_cpu) unless `any_cpu`
// (--records-any-cpu). Throws CliError(kBadInput) naming the option and the file when it is
// missing, a directory or unreadable, and the line when one is not a valid record.
autotune::RecordFile read_tuning_records(const std::string& file, bool any_cpu);
constexpr char kRecordsAnyCpuHelp[] =
    "Apply tuning records tuned on another CPU too (by default only this CPU's apply)";

// What applying tuning records did: "tuning records: 12 read (3 tasks); 5 of 7 tunable kernels
// tuned" and a line per task that had no record ("  untuned: conv2d_nchwc [..] x [..]
// (2 kernels)"). `torn` is the number of cut-off last lines skipped.
std::string tuning_summary(size_t records, size_t tasks, int torn,
                           const std::vector<autotune::TaskLookup>& lookups);

// "[1, 3, 224, 224]".
std::string dims_string(const std::vector<int64_t>& dims);

// "1.5 MiB", "312 KiB", "64 B".
std::string bytes_string(int64_t bytes);

struct LatencyStats {
  double median_ms = 0;
  double min_ms = 0;
  double max_ms = 0;
};
// Median (mean of the two middle values for an even count), min and max. Needs one sample.
LatencyStats latency_stats(std::vector<double> ms);

// The table of `anvil run --profile`: one row per kernel, slowest first, with its median time,
// share of the total, GFLOP/s and fraction of the peak of `threads` cores ("-" for a kernel that
// counts no FLOPs: data movement), the total, and the peak it was compared with. `threads` 0: a GPU
// model's kernels (no thread count, no peak).
std::string profile_table(std::vector<runtime::KernelProfile> kernels, int runs, int threads,
                          const PeakFlops& peak);

}  // namespace anvil::cli
