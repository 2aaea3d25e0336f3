#include "anvil/autotune/records.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>
#include <fstream>
#include <limits>
#include <sstream>

#include "anvil/support/error.h"

namespace anvil::autotune {

double Record::cost() const {
  if (error || costs_s.empty()) return std::numeric_limits<double>::infinity();
  std::vector<double> c = costs_s;
  std::sort(c.begin(), c.end());
  const size_t n = c.size();
  return n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
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
  if (in_model) j["in_model"] = true;
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
  const nlohmann::json& costs = field("costs_s");
  ANVIL_CHECK(costs.is_array(), "the record's 'costs_s' must be an array");
  for (const nlohmann::json& c : costs) {
    ANVIL_CHECK(c.is_number() && c.get<double>() >= 0 && std::isfinite(c.get<double>()),
                "the record's 'costs_s' must hold non-negative numbers, not ", c.dump());
    r.costs_s.push_back(c.get<double>());
  }
  const nlohmann::json& error = field("error");
  ANVIL_CHECK(error.is_null() || error.is_string(),
              "the record's 'error' must be null or a string");
  if (error.is_string()) r.error = error.get<std::string>();
  if (j.contains("time") && j["time"].is_string()) r.time = j["time"];
  if (j.contains("in_model")) {
    ANVIL_CHECK(j["in_model"].is_boolean(), "the record's 'in_model' must be true or false");
    r.in_model = j["in_model"].get<bool>();
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

void append_record(const std::string& path, const Record& r) {
  const std::string line = r.to_json().dump() + "\n";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  ANVIL_CHECK(fd >= 0, "tuning records '", path, "': cannot open for appending (",
              std::strerror(errno), ")");
  // One write of the whole line (O_APPEND): readers see all of it or a torn tail, never a
  // mixture of two records.
  size_t done = 0;
  while (done < line.size()) {
    ssize_t n = ::write(fd, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = errno;
      ::close(fd);
      ANVIL_FAIL("tuning records '", path, "': cannot write (", std::strerror(err), ")");
    }
    done += static_cast<size_t>(n);
  }
  ::fsync(fd);
  ::close(fd);
}

RecordBook::RecordBook(const std::vector<Record>& records) : num_records_(records.size()) {
  for (const Record& r : records)
    if (!r.error && !r.costs_s.empty()) by_task_[task_key(r.task, r.target)].push_back(r);
}

namespace {

// The best record of `task` that fits its space, or null.
const Record* best_record(const std::map<std::string, std::vector<Record>>& by_task,
                          const Task& task) {
  auto it = by_task.find(task.key());
  if (it == by_task.end()) return nullptr;
  const ops::ConfigSpace space = task.space();
  // In-model records, where there are any, decide alone, and the default (point 0) keeps its
  // place unless another point beats it at every thread count and by more than the margin.
  const Record *best = nullptr, *in_model_default = nullptr;
  for (const Record& r : it->second)
    if (r.in_model && index_of(space, r.config) == 0 &&
        (!in_model_default || r.cost() < in_model_default->cost()))
      in_model_default = &r;
  bool any_in_model = false;
  for (const Record& r : it->second) {
    if (!r.in_model || index_of(space, r.config) < 0) continue;
    any_in_model = true;
    if (in_model_default && (&r == in_model_default || !beats_in_model(r, *in_model_default)))
      continue;
    if (!best || r.cost() < best->cost()) best = &r;
  }
  if (any_in_model) return best ? best : in_model_default;
  for (const Record& r : it->second)
    if (index_of(space, r.config) >= 0 && (!best || r.cost() < best->cost())) best = &r;
  return best;
}

}  // namespace

bool beats_in_model(const Record& point, const Record& by_default) {
  if (point.costs_s.size() != by_default.costs_s.size()) return false;
  for (size_t t = 0; t < point.costs_s.size(); ++t)
    if (point.costs_s[t] >= by_default.costs_s[t]) return false;
  return point.cost() < by_default.cost() * (1 - kInModelMargin);
}

std::optional<ops::Config> RecordBook::best(const Task& task) const {
  const Record* r = best_record(by_task_, task);
  if (!r) return std::nullopt;
  return r->config;
}

double RecordBook::best_cost(const Task& task) const {
  const Record* r = best_record(by_task_, task);
  return r ? r->cost() : std::numeric_limits<double>::infinity();
}

std::function<std::optional<ops::Config>(const std::string&, const std::vector<ops::TensorType>&,
                                         const ops::Attrs&)>
config_source(const RecordBook& book, const Target& target, std::vector<TaskLookup>* log) {
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

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace anvil::autotune
