#include "anvil/support/worker.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace anvil {

namespace {

std::string join(const std::vector<std::string>& argv) {
  std::string s;
  for (const std::string& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

std::string exit_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  return "stopped";
}

}  // namespace

Worker::Worker(std::string name, std::vector<std::string> argv, double timeout_s)
    : name_(std::move(name)), command_(join(argv)) {
  if (argv.empty()) throw std::runtime_error(name_ + ": empty worker command");
  char tmpl[] = "/tmp/anvil-worker-XXXXXX";
  int err_fd = mkstemp(tmpl);
  if (err_fd < 0) throw std::runtime_error(name_ + ": cannot create a stderr file");
  stderr_file_ = tmpl;

  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) {
    close(err_fd);
    throw std::runtime_error(name_ + ": pipe: " + std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_fd, 2);
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(in[0]);
  close(out[1]);
  close(err_fd);
  to_worker_ = in[1];
  from_worker_ = out[0];
  if (rc != 0) {
    close(to_worker_);
    close(from_worker_);
    to_worker_ = from_worker_ = -1;
    throw std::runtime_error(name_ + ": cannot start '" + command_ + "': " + std::strerror(rc));
  }
  pid_ = pid;
  // A worker that dies must not kill anvil with SIGPIPE on the next write.
  signal(SIGPIPE, SIG_IGN);

  std::string line = read_line(timeout_s, "start");
  nlohmann::json hello = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!hello.is_object() || hello.value("ok", false) != true)
    fail("start", "its greeting is not {\"ok\": true, ...}: " + line.substr(0, 200));
  if (hello.contains("version") && hello["version"].is_string()) version_ = hello["version"];
}

Worker::~Worker() {
  if (pid_ > 0) {
    const std::string quit = "{\"op\": \"quit\"}\n";
    if (write(to_worker_, quit.data(), quit.size()) < 0) {
      // Already gone; stop() reaps it.
    }
  }
  stop();
  if (!stderr_file_.empty()) unlink(stderr_file_.c_str());
}

void Worker::stop() {
  if (to_worker_ >= 0) close(to_worker_);
  if (from_worker_ >= 0) close(from_worker_);
  to_worker_ = from_worker_ = -1;
  if (pid_ <= 0) return;
  // Give it a moment to quit by itself, then kill it.
  for (int i = 0; i < 50; ++i) {
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    usleep(20000);
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

std::string Worker::stderr_tail() const {
  std::ifstream f(stderr_file_);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string s = ss.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  if (s.size() > 1500) s = "..." + s.substr(s.size() - 1500);
  return s;
}

void Worker::fail(const std::string& what, const std::string& why) {
  std::string message = name_ + " (" + command_ + "), " + what + ": " + why;
  int status = 0;
  if (pid_ > 0 && waitpid(pid_, &status, WNOHANG) == pid_) {
    message += "; the worker " + exit_status(status);
    pid_ = -1;
  }
  stop();
  std::string tail = stderr_tail();
  if (!tail.empty()) message += "; its stderr ends with:\n" + tail;
  throw std::runtime_error(message);
}

std::string Worker::read_line(double timeout_s, const std::string& what) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    size_t newline = buffer_.find('\n');
    if (newline != std::string::npos) {
      std::string line = buffer_.substr(0, newline);
      buffer_.erase(0, newline + 1);
      return line;
    }
    const double left = std::chrono::duration<double>(deadline - Clock::now()).count();
    if (left <= 0) fail(what, "no answer within " + std::to_string(int(timeout_s)) + " s");
    pollfd p{from_worker_, POLLIN, 0};
    int ready = poll(&p, 1, static_cast<int>(left * 1000) + 1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;  // the deadline check above reports the timeout
    char chunk[4096];
    ssize_t n = read(from_worker_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      // End of its output: the worker has exited (or closed stdout); wait for its status.
      int status = 0;
      if (pid_ > 0 && waitpid(pid_, &status, 0) == pid_) {
        pid_ = -1;
        fail(what, "the worker " + exit_status(status));
      }
      fail(what, "the worker closed its output");
    }
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

nlohmann::json Worker::request(const nlohmann::json& request, double timeout_s) {
  const std::string op = request.value("op", std::string("?"));
  if (pid_ <= 0) throw std::runtime_error(name_ + ": the worker is not running");
  std::string line = request.dump() + "\n";
  for (size_t done = 0; done < line.size();) {
    ssize_t n = write(to_worker_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail(op, std::string("cannot send the request: ") + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  std::string answer_line = read_line(timeout_s, op);
  nlohmann::json answer = nlohmann::json::parse(answer_line, nullptr, false);
  if (!answer.is_object() || !answer.contains("ok"))
    fail(op,
         "answered with something that is not a protocol object: " + answer_line.substr(0, 200));
  if (answer["ok"] != true) {
    std::string error = answer.contains("error") && answer["error"].is_string()
                            ? answer["error"].get<std::string>()
                            : answer.dump();
    throw std::runtime_error(name_ + ", " + op + ": " + error);
  }
  return answer;
}

}  // namespace anvil
