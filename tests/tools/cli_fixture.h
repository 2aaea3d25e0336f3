// The fixture of the command line's tests: runs the built `anvil` (ANVIL_CLI_PATH) in a temporary
// directory shared by the tests of one suite, capturing its exit code, stdout and stderr.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace anvil::cli {

namespace fs = std::filesystem;

struct Result {
  int code = -1;
  std::string out, err;
};

class Cli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string pattern = (fs::temp_directory_path() / "anvil_cli_test_XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = new fs::path(pattern);
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }
  static std::string path(const std::string& name) { return (*dir_ / name).string(); }
  static std::string read(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  static void write(const std::string& p, const std::string& bytes) {
    std::ofstream(p, std::ios::binary) << bytes;
  }
  // Runs `anvil ARGS` in the temporary directory (ARGS as a shell would split them).
  static Result anvil(const std::string& args) {
    std::string cmd =
        "cd '" + dir_->string() + "' && '" + ANVIL_CLI_PATH + "' " + args + " > cli.out 2> cli.err";
    int status = std::system(cmd.c_str());
    Result r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = read(path("cli.out"));
    r.err = read(path("cli.err"));
    return r;
  }
  // Expects exit code `code` with an "anvil: error: " message holding every one of `parts`.
  static void expect_error(const std::string& args, int code,
                           const std::vector<std::string>& parts) {
    SCOPED_TRACE("anvil " + args);
    Result r = anvil(args);
    EXPECT_EQ(r.code, code) << r.err;
    EXPECT_EQ(r.err.rfind("anvil: error: ", 0), 0u) << r.err;
    for (const std::string& p : parts) EXPECT_NE(r.err.find(p), std::string::npos) << r.err;
  }

  static inline fs::path* dir_ = nullptr;
};

}  // namespace anvil::cli
