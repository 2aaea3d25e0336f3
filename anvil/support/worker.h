// A worker: a child process that answers JSON requests, one object per line each way over its
// stdin and stdout. `anvil bench` runs its baselines in workers (the protocol of their requests:
// tools/anvil/bench.h) and the tuner measures candidates in one (anvil/autotune/measure.h), so that
// a crash or a hang costs the worker, not the caller.
//   on start   the worker prints {"ok": true, "name": "...", "version": "..."}.
//   a request  {"op": "...", ...} -> {"ok": true, ...}, or {"ok": false, "error": "what failed
//              and why"} after which the worker keeps serving.
//   {"op": "quit"} the worker exits with status 0.
// Everything else a worker prints goes to stderr, never stdout.
#pragma once

#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace anvil {

// A worker process; the destructor asks it to quit and reaps it (killing it if it does not go).
class Worker {
 public:
  // Starts `argv` (argv[0] looked up on PATH) and waits up to `timeout_s` for its greeting.
  // Throws std::runtime_error naming `name`, the command and the reason (not found, exited with
  // status N and the end of its stderr, timed out, greeted with something that is not JSON).
  Worker(std::string name, std::vector<std::string> argv, double timeout_s = 60);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  const std::string& name() const { return name_; }
  // The greeting's "version" ("" when it had none).
  const std::string& version() const { return version_; }

  // Sends `request` and returns the answer's fields. Throws std::runtime_error naming the worker
  // and the op when the answer is {"ok": false} (with its "error"), is not JSON, does not come
  // within `timeout_s`, or the process dies (with its exit status and the end of its stderr).
  // After a timeout or a death the worker is dead and every later request throws.
  nlohmann::json request(const nlohmann::json& request, double timeout_s);

  bool alive() const { return pid_ > 0; }

 private:
  std::string read_line(double timeout_s, const std::string& what);
  [[noreturn]] void fail(const std::string& what, const std::string& why);
  void stop();
  std::string stderr_tail() const;

  std::string name_;
  std::string command_;  // argv joined, for messages
  std::string version_;
  pid_t pid_ = -1;
  int to_worker_ = -1;    // the worker's stdin
  int from_worker_ = -1;  // the worker's stdout
  std::string stderr_file_;
  std::string buffer_;  // bytes read past the last line
};

}  // namespace anvil
