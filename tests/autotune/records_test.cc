// Tuning records: the JSON-lines format of DESIGN.md round-trips, a file cut off mid-line (a tuner
// killed while appending) reads as every whole record, any other bad line is an error naming the
// file and the line, and the book picks the lowest median cost among successful trials whose
// configuration is still a point of the task's space.
#include "anvil/autotune/records.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>

#include "testing/errors.h"

namespace anvil::autotune {
namespace {

namespace fs = std::filesystem;

// A dense task ([4, 32] x packed [2, 32, 16]): its space has the knobs of dense's packed path.
Task dense_task() {
  Task t;
  t.op = "dense_packed";
  t.inputs = {{{4, 32}, ir::DataType::Float32()}, {{2, 32, 16}, ir::DataType::Float32()}};
  t.attrs = ops::Attrs("dense_packed", {{"units", int64_t{32}}});
  t.target = Target::parse("llvm -vector-bits=256").str();
  return t;
}

Record record(const Task& t, const ops::Config& c, std::vector<double> costs,
              std::optional<std::string> error = std::nullopt) {
  return {t.to_json(), t.target, c, std::move(costs), std::move(error), utc_now()};
}

class RecordsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "anvil_records_XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (fs::path(dir_) / name).string(); }
  std::string dir_;
};

TEST_F(RecordsTest, AppendedRecordsReadBack) {
  Task t = dense_task();
  ops::ConfigSpace space = t.space();
  ASSERT_GT(space_size(space), 2);
  const std::string file = path("r.json");
  append_record(file, record(t, config_at(space, 1), {2e-6, 1e-6, 3e-6}));
  append_record(file, record(t, config_at(space, 2), {}, "crash: killed by signal SIGSEGV"));
  RecordFile f = read_records(file);
  ASSERT_EQ(f.records.size(), 2u);
  EXPECT_EQ(f.torn_lines, 0);
  EXPECT_EQ(f.records[0].task, t.to_json());
  EXPECT_EQ(f.records[0].config, config_at(space, 1));
  EXPECT_DOUBLE_EQ(f.records[0].cost(), 2e-6);
  EXPECT_EQ(f.records[1].error, "crash: killed by signal SIGSEGV");
  EXPECT_TRUE(std::isinf(f.records[1].cost()));
  // The line is the format of DESIGN.md.
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  nlohmann::json j = nlohmann::json::parse(line);
  EXPECT_EQ(j["v"], 1);
  EXPECT_EQ(j["task"]["op"], "dense_packed");
  EXPECT_EQ(j["task"]["shapes"], nlohmann::json::parse("[[4, 32], [2, 32, 16]]"));
  EXPECT_EQ(j["task"]["dtype"], "float32");
  EXPECT_EQ(j["task"]["attrs"]["units"], 32);
  EXPECT_TRUE(j["error"].is_null());
  EXPECT_EQ(j["time"].get<std::string>().size(), 20u);
}

// A record names the CPU it was tuned on; one that names none was written before records did.
TEST_F(RecordsTest, RecordsNameTheirCpuAndOtherCpusAreSetAside) {
  Task t = dense_task();
  Record here = record(t, config_at(t.space(), 1), {1e-6});
  EXPECT_EQ(here.cpu, runtime::host_cpu().id());
  EXPECT_EQ(here.to_json()["cpu"], runtime::host_cpu().id());
  Record there = here;
  there.cpu = "GenuineIntel family 6 model 143";
  nlohmann::json unnamed = here.to_json();
  unnamed.erase("cpu");
  EXPECT_EQ(Record::from_json(unnamed).cpu, "");
  EXPECT_EQ(Record::from_json(there.to_json()).cpu, there.cpu);
  nlohmann::json bad = here.to_json();
  bad["cpu"] = 7;
  EXPECT_THROW(Record::from_json(bad), Error);

  const std::string file = path("cpus.json");
  append_record(file, here);
  append_record(file, there);
  append_record(file, Record::from_json(unnamed));
  append_record(file, there);
  RecordFile f = read_records(file);
  ASSERT_EQ(f.records.size(), 4u);
  EXPECT_EQ(other_cpus_note(f), "");
  keep_cpu(f, runtime::host_cpu().id());
  ASSERT_EQ(f.records.size(), 1u);
  EXPECT_EQ(f.records[0].cpu, runtime::host_cpu().id());
  EXPECT_EQ(f.other_cpus, (std::map<std::string, size_t>{{"", 1}, {there.cpu, 2}}));
  EXPECT_EQ(other_cpus_note(f),
            "tuning records: 3 of 4 were tuned on another CPU (naming no CPU: 1; " + there.cpu +
                ": 2) and are not applied on this one (" + runtime::host_cpu().id() + ")");
}

TEST_F(RecordsTest, ACutOffLastLineIsSkipped) {
  Task t = dense_task();
  const std::string file = path("torn.json");
  append_record(file, record(t, {}, {1e-6}));
  append_record(file, record(t, config_at(t.space(), 1), {5e-7}));
  // Cut the second record in half, as a tuner killed mid-write would leave it.
  std::string text;
  {
    std::ifstream in(file);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  size_t first_end = text.find('\n');
  std::ofstream(file, std::ios::trunc) << text.substr(0, first_end + 1 + 40);
  RecordFile f = read_records(file);
  EXPECT_EQ(f.records.size(), 1u);
  EXPECT_EQ(f.torn_lines, 1);
  // A resumed tuner's append cuts the torn line off first: the new record follows the whole one.
  append_record(file, record(t, {}, {3e-6}));
  f = read_records(file);
  ASSERT_EQ(f.records.size(), 2u);
  EXPECT_EQ(f.torn_lines, 0);
  EXPECT_DOUBLE_EQ(f.records[1].cost(), 3e-6);
  // The same for a file that holds nothing but a torn line.
  const std::string only_torn = path("only_torn.json");
  std::ofstream(only_torn) << text.substr(0, 40);
  append_record(only_torn, record(t, {}, {4e-6}));
  f = read_records(only_torn);
  ASSERT_EQ(f.records.size(), 1u);
  EXPECT_DOUBLE_EQ(f.records[0].cost(), 4e-6);
  // A whole record without its newline (written by hand or another tool) is kept: the append
  // ends its line first.
  const std::string unterminated = path("unterminated.json");
  std::ofstream(unterminated) << record(t, {}, {5e-6}).to_json().dump();
  append_record(unterminated, record(t, {}, {6e-6}));
  f = read_records(unterminated);
  ASSERT_EQ(f.records.size(), 2u);
  EXPECT_DOUBLE_EQ(f.records[0].cost(), 5e-6);
  EXPECT_DOUBLE_EQ(f.records[1].cost(), 6e-6);
  // A bad line that ends with its newline is not torn: it stays, and reading names it (the file
  // was damaged, not just cut).
  std::ofstream(file, std::ios::app) << text.substr(0, 40) << "\n";
  append_record(file, record(t, {}, {2e-6}));
  std::string m = testing::user_error([&] { read_records(file); });
  EXPECT_NE(m.find("torn.json', line 3: not JSON"), std::string::npos) << m;
}

// The number of newlines in `file` (0 when it does not exist yet).
size_t line_count(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  return static_cast<size_t>(
      std::count(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>(), '\n'));
}

TEST_F(RecordsTest, SurvivesATunerKilledWhileAppending) {
  // A child process appends records as fast as it can until it is killed (SIGKILL), three times
  // over one file: after each kill the file loads, and the next child's records follow. (A kill
  // lands between writes, in practice never inside one: ACutOffLastLineIsSkipped covers a torn
  // line.)
  Task t = dense_task();
  const std::string file = path("killed.json");
  size_t before = 0;
  for (int round = 0; round < 3; ++round) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      try {
        for (int i = 1;; ++i) append_record(file, record(t, {}, {1e-6 * i}));
      } catch (...) {
        ::_exit(1);
      }
    }
    for (int waited_ms = 0; waited_ms < 20000 && line_count(file) < before + 4; ++waited_ms)
      ::usleep(1000);
    ::kill(pid, SIGKILL);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the child failed";
    RecordFile f = read_records(file);
    EXPECT_GE(f.records.size(), before + 4) << "round " << round;
    EXPECT_LE(f.torn_lines, 1) << "round " << round;
    before = f.records.size();
  }
}

TEST_F(RecordsTest, BadLinesAreErrorsNamingTheLine) {
  auto expect = [&](const std::string& name, const std::string& text, const std::string& want) {
    std::ofstream(path(name)) << text;
    std::string m = testing::user_error([&] { read_records(path(name)); });
    EXPECT_NE(m.find(want), std::string::npos) << m;
  };
  const std::string good = record(dense_task(), {}, {1e-6}).to_json().dump() + "\n";
  expect("a.json", good + "[1, 2]\n", "a.json', line 2: a record must be a JSON object");
  expect("b.json", "\n" + good + "{\"v\": 2}\n", "line 3: record version 2 is not supported");
  expect("c.json", "{\"v\": 1, \"task\": {\"op\": \"x\", \"shapes\": []}}\n",
         "line 1: the record has no field 'target'");
  nlohmann::json j = nlohmann::json::parse(good);
  j["config"]["tile_m"] = "big";
  expect("d.json", j.dump() + "\n", "line 1: config knob 'tile_m' must be an integer");
  j = nlohmann::json::parse(good);
  j["costs_s"] = {-1.0};
  expect("e.json", j.dump() + "\n", "'costs_s' must hold non-negative numbers");
  std::string m = testing::user_error([&] { read_records(path("missing.json")); });
  EXPECT_NE(m.find("missing.json': cannot open"), std::string::npos) << m;
}

TEST(RecordBook, PicksTheFastestSuccessfulTrialThatFitsTheSpace) {
  Task t = dense_task();
  ops::ConfigSpace space = t.space();
  Task other = t;
  other.inputs[0].shape = {8, 32};
  ops::Config stale = {{"no_such_knob", 3}};
  ops::Config off_space = config_at(space, 0);
  off_space[space[0].name] = 12345;
  std::vector<Record> rs = {
      record(t, config_at(space, 1), {3e-6, 3e-6}),
      record(t, config_at(space, 2), {1e-6, 9e-6, 2e-6}),  // median 2e-6: the best
      record(t, config_at(space, 3), {}, "wrong result"),  // failed
      record(t, stale, {1e-9}),                            // from an older space
      record(t, off_space, {1e-9}),                        // a value the knob no longer has
      record(other, config_at(space, 1), {1e-9}),          // another task
  };
  RecordBook book(rs);
  EXPECT_EQ(book.num_records(), 6u);
  EXPECT_EQ(book.num_tasks(), 2u);
  ASSERT_TRUE(book.best(t).has_value());
  EXPECT_EQ(*book.best(t), config_at(space, 2));
  EXPECT_DOUBLE_EQ(book.best_cost(t), 2e-6);
  Task third = t;
  third.inputs[0].shape = {16, 32};
  EXPECT_FALSE(book.best(third).has_value());
  // The same task for another target is another task.
  Task avx512 = t;
  avx512.target = Target::parse("llvm -vector-bits=512").str();
  EXPECT_FALSE(book.best(avx512).has_value());
}

// An in-model record: the model's times per thread count with point `i` and without it.
Record in_model(const Task& t, int64_t i, std::vector<double> with, std::vector<double> without) {
  Record r = record(t, config_at(t.space(), i), std::move(with));
  r.in_model = true;
  r.default_s = std::move(without);
  return r;
}

TEST(RecordBook, InModelRecordsDecideWhereThereAreAny) {
  // Point 2 won in isolation, but inside the model the default (point 0) was faster.
  Task t = dense_task();
  std::vector<Record> rs = {record(t, config_at(t.space(), 0), {5e-6}),
                            record(t, config_at(t.space(), 2), {1e-6})};
  EXPECT_EQ(*RecordBook(rs).best(t), config_at(t.space(), 2));
  rs.push_back(in_model(t, 2, {5e-6, 4e-6}, {4e-6, 3e-6}));
  RecordBook book(rs);
  EXPECT_EQ(*book.best(t), config_at(t.space(), 0));
  EXPECT_DOUBLE_EQ(book.best_cost(t), 3.5e-6);  // the model's time with the default
  // A win must be faster at every thread count and by more than the margin on the median: 0.5%
  // is a tie, and 5% faster on the median but slower at one thread count loses.
  EXPECT_FALSE(wins_in_model(in_model(t, 3, {4e-6 * 0.995, 3e-6 * 0.995}, {4e-6, 3e-6})));
  EXPECT_FALSE(wins_in_model(in_model(t, 4, {4.1e-6, 2.55e-6}, {4e-6, 3e-6})));
  EXPECT_TRUE(wins_in_model(in_model(t, 5, {4e-6 * 0.97, 3e-6 * 0.98}, {4e-6, 3e-6})));
  rs.push_back(in_model(t, 3, {4e-6 * 0.995, 3e-6 * 0.995}, {4e-6, 3e-6}));
  rs.push_back(in_model(t, 4, {4.1e-6, 2.55e-6}, {4e-6, 3e-6}));
  EXPECT_EQ(*RecordBook(rs).best(t), config_at(t.space(), 0));
  // A point applies when every comparison it took part in was a win: two wins, then one that
  // was not (the later check of all points together, say), and it no longer applies.
  rs.push_back(in_model(t, 5, {4e-6 * 0.97, 3e-6 * 0.98}, {4e-6, 3e-6}));
  rs.push_back(in_model(t, 5, {4e-6 * 0.96, 3e-6 * 0.97}, {4e-6, 3e-6}));
  EXPECT_EQ(*RecordBook(rs).best(t), config_at(t.space(), 5));
  EXPECT_NEAR(RecordBook(rs).best_cost(t), (3.84e-6 + 2.91e-6) / 2, 1e-15);
  rs.push_back(in_model(t, 5, {4e-6 * 1.01, 3e-6 * 0.97}, {4e-6, 3e-6}));
  EXPECT_EQ(*RecordBook(rs).best(t), config_at(t.space(), 0));
  // Of two points that won every time, the one checked last (against the other) applies.
  rs.push_back(in_model(t, 6, {3e-6, 2e-6}, {3.5e-6, 2.5e-6}));
  rs.push_back(in_model(t, 7, {2.5e-6, 1.5e-6}, {3e-6, 2e-6}));
  EXPECT_EQ(*RecordBook(rs).best(t), config_at(t.space(), 7));

  // The flag and the default's times survive the file; a record without them, or with a
  // different number of them, is refused by name.
  const Record& win = rs.back();
  Record back = Record::from_json(nlohmann::json::parse(win.to_json().dump()));
  EXPECT_TRUE(back.in_model);
  EXPECT_EQ(back.default_s, win.default_s);
  EXPECT_FALSE(Record::from_json(rs[0].to_json()).in_model);
  EXPECT_FALSE(rs[0].to_json().contains("in_model"));  // trials keep the format of the design
  EXPECT_FALSE(rs[0].to_json().contains("default_s"));
  nlohmann::json bad = win.to_json();
  bad["in_model"] = "yes";
  EXPECT_THROW(Record::from_json(bad), Error);
  for (nlohmann::json default_s : {nlohmann::json(), nlohmann::json({1e-3}),
                                   nlohmann::json({1e-3, -1.0}), nlohmann::json("fast")}) {
    nlohmann::json j = win.to_json();
    if (default_s.is_null())
      j.erase("default_s");
    else
      j["default_s"] = default_s;
    try {
      Record::from_json(j);
      ADD_FAILURE() << "accepted default_s " << default_s.dump();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("default_s"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace anvil::autotune
