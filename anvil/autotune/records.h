// Tuning records: one JSON object per line (../shared/DESIGN.md, "Tuning records"), appended whole
// so that a tuner killed at any moment leaves a valid file:
//   {"v": 1, "task": {"op": ..., "shapes": [...], "dtype": ..., "attrs": {...}}, "target": ...,
//    "config": {"knob": value, ...}, "costs_s": [...], "error": null, "time": "..."}
// A failed trial has "error" naming why (compile, crash, timeout, wrong result) and no costs.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "anvil/autotune/task.h"
#include "anvil/ops/op.h"
#include "anvil/runtime/host_cpu.h"

namespace anvil::autotune {

struct Record {
  nlohmann::json task;  // Task::to_json
  std::string target;
  ops::Config config;
  std::vector<double> costs_s;  // seconds per run of each timed repeat (empty: failed)
  std::optional<std::string> error;
  std::string time;  // UTC, ISO 8601
  // Timed inside the compiled model ("in_model": true; `anvil tune`'s last step) rather than as a
  // trial in isolation: one comparison of two builds of the whole model, timed in alternation.
  // costs_s is the model's time per run with this configuration for the task, default_s without
  // it (the build it was compared against), one entry of each per thread count.
  bool in_model = false;
  std::vector<double> default_s = {};
  // The CPU the trial ran on (runtime::HostCpu::id(), "AuthenticAMD family 26 model 2"): a
  // record made in this process names this host; one read from a file written before records
  // named their CPU names none ("").
  std::string cpu = runtime::host_cpu().id();

  // The median cost, or infinity for a failed trial.
  double cost() const;
  nlohmann::json to_json() const;
  // Throws anvil::Error naming the field that is missing or of the wrong kind, or a version other
  // than 1.
  static Record from_json(const nlohmann::json& j);
};

// The records of a file. A last line cut off mid-way (no newline at the end, not JSON: a tuner
// killed while writing) is skipped and counted; blank lines are skipped. Throws anvil::Error
// naming the file when it cannot be read, and the file and line number when any other line is
// not a valid record.
struct RecordFile {
  std::vector<Record> records;
  int torn_lines = 0;
  // Records set aside by keep_cpu, counted by the CPU they name ("" for none).
  std::map<std::string, size_t> other_cpus;
};
RecordFile read_records(const std::string& path);

// Keeps the records tuned on `cpu` (a runtime::HostCpu::id()) and sets the others aside into
// file.other_cpus: a configuration the search found fastest on one CPU is a guess on another
// (cache sizes, vector units and memory differ), and so is one from a record that names no CPU.
void keep_cpu(RecordFile& file, const std::string& cpu);
// What keep_cpu set aside, for the command line: "tuning records: 1200 of 1300 were tuned on
// another CPU (AuthenticAMD family 25 model 17: 1200) and are not applied"; empty when none.
std::string other_cpus_note(const RecordFile& file);

// Appends `r` to `path` (created when missing) as one line, flushed and synced before returning.
// Appenders to one file take turns (an exclusive flock). A torn last line, left by a tuner killed
// mid-write (no newline, not JSON), is cut off first, so that a resumed run's records follow the
// whole ones; a whole record missing only its newline gets one. Throws anvil::Error naming the
// file when it cannot be written.
void append_record(const std::string& path, const Record& r);

// The best configuration per task among records: the lowest median cost of the successful trials
// of that task and target whose configuration is a point of the task's space (records from an
// older space are set aside and counted as stale). Where a task has in-model records, they decide
// alone: what the model measured outranks what a kernel did in isolation. There a point applies
// only when every comparison it took part in was a win (wins_in_model), the latest such point
// when there are several; otherwise the default (point 0) stays.
constexpr double kInModelMargin = 0.01;
// Whether in-model record `r` is a win for its configuration: the model was faster with it at
// every thread count, and by more than kInModelMargin on the median (the comparison's noise).
bool wins_in_model(const Record& r);
class RecordBook {
 public:
  RecordBook() = default;
  explicit RecordBook(const std::vector<Record>& records);

  // The best configuration of `task`, or nullopt when no successful record fits its space.
  std::optional<ops::Config> best(const Task& task) const;
  // Its median cost in seconds (infinity when none; for an in-model record, the whole model's
  // time per run).
  double best_cost(const Task& task) const;

  size_t num_records() const { return num_records_; }
  size_t num_tasks() const { return by_task_.size(); }

 private:
  size_t num_records_ = 0;
  std::map<std::string, std::vector<Record>> by_task_;  // task key -> its successful records
};

// graph::BuildOptions::config_for over `book` (which must outlive the build) for `target`. When
// `log` is given, every tunable kernel's task is appended to it with whether the book had a
// configuration for it.
struct TaskLookup {
  Task task;
  bool found = false;
};
graph::ConfigFn config_source(const RecordBook& book, const Target& target,
                              std::vector<TaskLookup>* log = nullptr);
// graph::BuildOptions::algorithm_for over `book`: a conv2d's algorithm (the task with choice
// "algorithm") as the in-model check decided it; nullopt, the default rule, where it has not.
// `log` as for config_source, with the algorithm tasks.
graph::ConfigFn algorithm_source(const RecordBook& book, const Target& target,
                                 std::vector<TaskLookup>* log = nullptr);
// A build with tuning records: both of the above into `build`.
void use_records(const RecordBook& book, const Target& target, graph::BuildOptions& build,
                 std::vector<TaskLookup>* log = nullptr);

// The current UTC time as "2026-11-30T12:00:00Z".
std::string utc_now();

}  // namespace anvil::autotune
