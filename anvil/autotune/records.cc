#include "anvil/autotune/records.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>
#include <fstream>
#include <limits>
#include <sstream>

#include "anvil/autotune/ab_timing.h"
#include "anvil/support/error.h"

namespace anvil::autotune {

double Record::cost() const {
  return error ? std::numeric_limits<double>::infinity() : median(costs_s);
}

nlohmann::json Record::to_json() const {
  nlohmann::json config_json = nlohmann::json::object();
  for (const auto& [name, value] : config) config_json[name] = value;
  nlohmann::json j = {{"v", 1},
                      {"task", task},
                      {"target", target},
                      {"config", config_json},
                      {"costs_s", costs_s},
                      {"error", error ? nlohmann::json(*error) : nlohmann::json(nullptr)},
                      {"time", time}};
  if (in_model) {
    j["in_model"] = true;
    j["default_s"] = default_s;
  }
  if (!cpu.empty()) j["cpu"] = cpu;
  return j;
}

Record Record::from_json(const nlohmann::json& j) {
  ANVIL_CHECK(j.is_object(), "a record must be a JSON object");
  auto field = [&](const char* name) -> const nlohmann::json& {
    ANVIL_CHECK(j.contains(name), "the record has no field '", name, "'");
    return j.at(name);
  };
  const nlohmann::json& v = field("v");
  ANVIL_CHECK(v.is_number_integer() && v.get<int64_t>() == 1, "record version ", v.dump(),
              " is not supported (expected 1)");
  Record r;
  r.task = field("task");
  ANVIL_CHECK(r.task.is_object() && r.task.contains("op") && r.task["op"].is_string() &&
                  r.task.contains("shapes") && r.task["shapes"].is_array(),
              "the record's 'task' must be an object with 'op' and 'shapes'");
  ANVIL_CHECK(field("target").is_string(), "the record's 'target' must be a string");
  r.target = j["target"];
  const nlohmann::json& config = field("config");
  ANVIL_CHECK(config.is_object(), "the record's 'config' must be an object");
  for (const auto& [name, value] : config.items()) {
    ANVIL_CHECK(value.is_number_integer(), "config knob '", name, "' must be an integer, not ",
                value.dump());
    r.config[name] = value.get<int64_t>();
  }
  auto times = [&](const char* name) {
    const nlohmann::json& a = field(name);
    ANVIL_CHECK(a.is_array(), "the record's '", name, "' must be an array");
    std::vector<double> out;
    for (const nlohmann::json& c : a) {
      ANVIL_CHECK(c.is_number() && c.get<double>() >= 0 && std::isfinite(c.get<double>()),
                  "the record's '", name, "' must hold non-negative numbers, not ", c.dump());
      out.push_back(c.get<double>());
    }
    return out;
  };
  r.costs_s = times("costs_s");
  const nlohmann::json& error = field("error");
  ANVIL_CHECK(error.is_null() || error.is_string(),
              "the record's 'error' must be null or a string");
  if (error.is_string()) r.error = error.get<std::string>();
  if (j.contains("time") && j["time"].is_string()) r.time = j["time"];
  r.cpu.clear();  // not this host's unless the record says so
  if (j.contains("cpu")) {
    ANVIL_CHECK(j["cpu"].is_string(), "the record's 'cpu' must be a string");
    r.cpu = j["cpu"].get<std::string>();
  }
  if (j.contains("in_model")) {
    ANVIL_CHECK(j["in_model"].is_boolean(), "the record's 'in_model' must be true or false");
    r.in_model = j["in_model"].get<bool>();
  }
  if (r.in_model) {
    r.default_s = times("default_s");
    ANVIL_CHECK(r.default_s.size() == r.costs_s.size(), "the in-model record's 'default_s' has ",
                r.default_s.size(), " entries and its 'costs_s' ", r.costs_s.size(),
                " (one per thread count in both)");
  }
  return r;
}

RecordFile read_records(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  ANVIL_CHECK(in, "tuning records '", path, "': cannot open the file (", std::strerror(errno), ")");
  std::stringstream ss;
  ss << in.rdbuf();
  ANVIL_CHECK(!in.bad(), "tuning records '", path, "': cannot read the file");
  const std::string text = ss.str();
  RecordFile file;
  size_t start = 0;
  int line_number = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    const bool last_unterminated = end == std::string::npos;
    std::string line = text.substr(start, last_unterminated ? std::string::npos : end - start);
    start = last_unterminated ? text.size() : end + 1;
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() && last_unterminated) {
      ++file.torn_lines;  // the write a killed tuner did not finish
      continue;
    }
    ANVIL_CHECK(!j.is_discarded(), "tuning records '", path, "', line ", line_number, ": not JSON");
    try {
      file.records.push_back(Record::from_json(j));
    } catch (const Error& e) {
      ANVIL_FAIL("tuning records '", path, "', line ", line_number, ": ", e.what());
    }
  }
  return file;
}

namespace {

// Ends the file open as `fd` with a newline before a record is appended. A last line without its
// newline is the torn write of a killed tuner when it does not parse (read_records skips it): it is
// cut off. One that parses is a whole record someone wrote without a newline: it gets one. Returns
// false when the file cannot be read or changed.
bool end_last_line(int fd) {
  off_t size = ::lseek(fd, 0, SEEK_END);
  if (size <= 0) return size == 0;
  char last = 0;
  if (::pread(fd, &last, 1, size - 1) != 1) return false;
  if (last == '\n') return true;
  // The last line's start: after the last newline (the search runs backwards a buffer at a time).
  off_t start = 0;
  char buf[4096];
  for (off_t end = size; end > 0 && start == 0;) {
    off_t begin = std::max<off_t>(0, end - static_cast<off_t>(sizeof buf));
    ssize_t n = ::pread(fd, buf, static_cast<size_t>(end - begin), begin);
    if (n != end - begin) return false;
    for (ssize_t i = n - 1; i >= 0 && start == 0; --i)
      if (buf[i] == '\n') start = begin + i + 1;
    end = begin;
  }
  std::string line(static_cast<size_t>(size - start), '\0');
  if (::pread(fd, line.data(), line.size(), start) != static_cast<ssize_t>(line.size()))
    return false;
  if (nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false).is_discarded())
    return ::ftruncate(fd, start) == 0;
  return ::write(fd, "\n", 1) == 1;
}

}  // namespace

void append_record(const std::string& path, const Record& r) {
  const std::string line = r.to_json().dump() + "\n";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  ANVIL_CHECK(fd >= 0, "tuning records '", path, "': cannot open for appending (",
              std::strerror(errno), ")");
  auto fail = [&](const char* what) {
    int err = errno;
    ::close(fd);
    ANVIL_FAIL("tuning records '", path, "': cannot ", what, " (", std::strerror(err), ")");
  };
  // The lock ends with the process, so a killed tuner never holds it. File systems without locks
  // (some NFS and FUSE mounts) append unlocked, as before there was a lock.
  while (::flock(fd, LOCK_EX) != 0) {
    if (errno == ENOLCK || errno == EOPNOTSUPP) break;
    if (errno != EINTR) fail("lock the file");
  }
  if (!end_last_line(fd)) fail("end the last line");
  // One write of the whole line (O_APPEND): readers see all of it or a torn tail, never a
  // mixture of two records.
  size_t done = 0;
  while (done < line.size()) {
    ssize_t n = ::write(fd, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("write");
    done += static_cast<size_t>(n);
  }
  ::fsync(fd);
  ::close(fd);
}

void keep_cpu(RecordFile& file, const std::string& cpu) {
  std::vector<Record> kept;
  for (Record& r : file.records) {
    if (r.cpu == cpu)
      kept.push_back(std::move(r));
    else
      ++file.other_cpus[r.cpu];
  }
  file.records = std::move(kept);
}

std::string other_cpus_note(const RecordFile& file) {
  if (file.other_cpus.empty()) return "";
  size_t others = 0;
  std::string which;
  for (const auto& [cpu, n] : file.other_cpus) {
    others += n;
    which += (which.empty() ? "" : "; ") + (cpu.empty() ? "naming no CPU" : cpu) + ": " +
             std::to_string(n);
  }
  return "tuning records: " + std::to_string(others) + " of " +
         std::to_string(others + file.records.size()) + " were tuned on another CPU (" + which +
         ") and are not applied on this one (" + runtime::host_cpu().id() + ")";
}

RecordBook::RecordBook(const std::vector<Record>& records) : num_records_(records.size()) {
  for (const Record& r : records)
    if (!r.error && !r.costs_s.empty()) by_task_[task_key(r.task, r.target)].push_back(r);
}

namespace {

// What the records say for a task: the record of its best point, or `use_default` (point 0, as
// the in-model check decided) with the model's time in `default_cost`.
struct Verdict {
  const Record* record = nullptr;
  bool use_default = false;
  double default_cost = std::numeric_limits<double>::infinity();
};

Verdict verdict(const std::map<std::string, std::vector<Record>>& by_task, const Task& task) {
  auto it = by_task.find(task.key());
  if (it == by_task.end()) return {};
  const ops::ConfigSpace space = task.space();
  // In-model records, where there are any, decide alone: the latest point all of whose
  // comparisons were wins, else the default.
  std::map<int64_t, bool> all_wins;  // point -> every comparison it took part in was a win
  const Record* latest = nullptr;
  for (const Record& r : it->second) {
    if (!r.in_model) continue;
    const int64_t i = index_of(space, r.config);
    if (i < 0) continue;
    auto [w, added] = all_wins.emplace(i, true);
    w->second = w->second && wins_in_model(r);
    latest = &r;
  }
  if (latest) {
    Verdict v;
    for (auto r = it->second.rbegin(); r != it->second.rend() && !v.record; ++r)
      if (r->in_model && index_of(space, r->config) > 0 && all_wins[index_of(space, r->config)])
        v.record = &*r;
    v.use_default = !v.record;
    v.default_cost = median(latest->default_s);
    return v;
  }
  Verdict v;
  for (const Record& r : it->second)
    if (index_of(space, r.config) >= 0 && (!v.record || r.cost() < v.record->cost())) v.record = &r;
  return v;
}

}  // namespace

bool wins_in_model(const Record& r) {
  if (!r.in_model || r.costs_s.empty() || r.costs_s.size() != r.default_s.size()) return false;
  for (size_t t = 0; t < r.costs_s.size(); ++t)
    if (r.costs_s[t] >= r.default_s[t]) return false;
  return r.cost() < median(r.default_s) * (1 - kInModelMargin);
}

std::optional<ops::Config> RecordBook::best(const Task& task) const {
  const Verdict v = verdict(by_task_, task);
  if (v.use_default) return config_at(task.space(), 0);
  if (!v.record) return std::nullopt;
  return v.record->config;
}

double RecordBook::best_cost(const Task& task) const {
  const Verdict v = verdict(by_task_, task);
  if (v.use_default) return v.default_cost;
  return v.record ? v.record->cost() : std::numeric_limits<double>::infinity();
}

graph::ConfigFn config_source(const RecordBook& book, const Target& target,
                              std::vector<TaskLookup>* log) {
  const std::string target_str = target.str();
  return [&book, target_str, log](const std::string& op, const std::vector<ops::TensorType>& inputs,
                                  const ops::Attrs& attrs) -> std::optional<ops::Config> {
    Task task{op, inputs, attrs, target_str};
    if (task.space().empty()) return std::nullopt;
    std::optional<ops::Config> c = book.best(task);
    if (log) log->push_back({task, c.has_value()});
    return c;
  };
}

graph::ConfigFn algorithm_source(const RecordBook& book, const Target& target,
                                 std::vector<TaskLookup>* log) {
  const std::string target_str = target.str();
  return [&book, target_str, log](const std::string& op, const std::vector<ops::TensorType>& inputs,
                                  const ops::Attrs& attrs) -> std::optional<ops::Config> {
    Task task{op, inputs, attrs, target_str, "algorithm"};
    std::optional<ops::Config> c = book.best(task);
    if (log) log->push_back({task, c.has_value()});
    return c;
  };
}

void use_records(const RecordBook& book, const Target& target, graph::BuildOptions& build,
                 std::vector<TaskLookup>* log) {
  build.config_for = config_source(book, target, log);
  build.algorithm_for = algorithm_source(book, target, log);
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace anvil::autotune
