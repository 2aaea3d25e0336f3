#include "anvil/autotune/measure.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <sstream>

#include "anvil/codegen/gpu/codegen_gpu.h"
#include "anvil/codegen/llvm/codegen_llvm.h"
#include "anvil/lower/lower.h"
#include "anvil/runtime/device_api.h"
#include "anvil/runtime/module.h"
#include "anvil/runtime/ndarray.h"
#include "anvil/support/error.h"
#include "anvil/support/temp_dir.h"

namespace anvil::autotune {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Seeded inputs of the task's types (floats uniform in [-1, 1]; 8-bit integers over their whole
// range; other integers in [0, 4): valid as indices and shifts) and the operator's reference
// outputs on them.
struct Reference {
  std::vector<runtime::NDArray> inputs, outputs;
};

Reference make_reference(const Task& task) {
  const ops::OpDef& def = ops::lookup(task.op);
  Reference r;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  if (def.sample_inputs) {
    r.inputs = def.sample_inputs(task.inputs, task.attrs, [&](const std::vector<int64_t>& shape) {
      runtime::NDArray a = runtime::NDArray::empty(shape, runtime::dl_float32());
      for (int64_t i = 0; i < a.numel(); ++i) a.data_as<float>()[i] = u(rng);
      return a;
    });
    r.outputs = def.reference(r.inputs, task.attrs);
    return r;
  }
  for (const ops::TensorType& t : task.inputs) {
    runtime::NDArray a = runtime::NDArray::empty(t.shape, ops::to_dlpack(t.dtype), true);
    if (t.dtype == ir::DataType::Float32()) {
      for (int64_t i = 0; i < a.numel(); ++i) a.data_as<float>()[i] = u(rng);
    } else if (t.dtype == ir::DataType::Int(64)) {
      for (int64_t i = 0; i < a.numel(); ++i) a.data_as<int64_t>()[i] = rng() % 4;
    } else if (t.dtype == ir::DataType::Int(32)) {
      for (int64_t i = 0; i < a.numel(); ++i) a.data_as<int32_t>()[i] = rng() % 4;
    } else if (t.dtype == ir::DataType::UInt(8) || t.dtype == ir::DataType::Int(8)) {
      // Every byte value: an int8 kernel's candidate must get its largest products right.
      for (int64_t i = 0; i < a.numel(); ++i) a.data_as<uint8_t>()[i] = static_cast<uint8_t>(rng());
    }
    r.inputs.push_back(a);
  }
  r.outputs = def.reference(r.inputs, task.attrs);
  return r;
}

// "" when `got` matches `want` (floats within 1e-3 of the largest reference magnitude: the
// candidates sum in different orders), else what differs.
std::string compare(const std::vector<runtime::NDArray>& want,
                    const std::vector<runtime::NDArray>& got) {
  for (size_t o = 0; o < want.size(); ++o) {
    const runtime::NDArray& w = want[o];
    const runtime::NDArray& g = got[o];
    if (w.dtype().code == kDLFloat && w.dtype().bits == 32) {
      double largest = 0, diff = 0;
      int64_t at = 0;
      for (int64_t i = 0; i < w.numel(); ++i) {
        largest = std::max(largest, std::fabs(double(w.data_as<float>()[i])));
        double d = std::fabs(double(w.data_as<float>()[i]) - double(g.data_as<float>()[i]));
        if (std::isnan(d)) d = INFINITY;
        if (d > diff) diff = d, at = i;
      }
      if (diff > 1e-3 * largest + 1e-5)
        return "output " + std::to_string(o) + " element " + std::to_string(at) + " is " +
               std::to_string(g.data_as<float>()[at]) + ", the reference " +
               std::to_string(w.data_as<float>()[at]);
    } else if (std::memcmp(w.data(), g.data(), static_cast<size_t>(w.nbytes())) != 0) {
      return "output " + std::to_string(o) + " differs from the reference";
    }
  }
  return "";
}

int32_t default_call(AnvilKernel kernel, const std::vector<const DLTensor*>& args,
                     const ops::Config&) {
  return kernel(args.data(), static_cast<int32_t>(args.size()), nullptr);
}

// The reference of `task`, computed once per task for this process.
const Reference& reference_of(const Task& task) {
  static std::map<std::string, Reference> references;
  auto it = references.find(task.key());
  if (it == references.end()) it = references.emplace(task.key(), make_reference(task)).first;
  return it->second;
}

// Writes back and invalidates every cache line of the tensors' data, on every core (the flush
// instructions are coherent), and waits until that is done.
void evict_from_caches(const std::vector<const DLTensor*>& tensors) {
  constexpr uintptr_t kLine = 64;  // the smallest line size of the targets; a larger line is
                                   // flushed more than once, which costs only time
  for (const DLTensor* t : tensors) {
    const uintptr_t begin = reinterpret_cast<uintptr_t>(t->data) + t->byte_offset;
    uintptr_t bytes = (t->dtype.bits * t->dtype.lanes + 7u) / 8u;
    for (int d = 0; d < t->ndim; ++d) bytes *= static_cast<uintptr_t>(t->shape[d]);
    const uintptr_t end = begin + bytes;
    for (uintptr_t p = begin & ~(kLine - 1); p < end; p += kLine) {
#if defined(__x86_64__)
      _mm_clflush(reinterpret_cast<const void*>(p));
#elif defined(__aarch64__)
      asm volatile("dc civac, %0" ::"r"(p) : "memory");
#else
#error "evict_from_caches: no cache flush instruction for this host"
#endif
    }
  }
#if defined(__x86_64__)
  _mm_mfence();
#elif defined(__aarch64__)
  asm volatile("dsb ish" ::: "memory");
#endif
}

// Checks a compiled candidate against the reference on its first run, then times it into `m`.
void check_and_time(const Task& task, AnvilKernel kernel,
                    const std::vector<ops::TensorType>& out_types, const ops::Config& config,
                    const MeasureOptions& options, const KernelCall& call, Measurement& m) {
  const Reference& ref = reference_of(task);
  std::vector<runtime::NDArray> outs;
  std::vector<const DLTensor*> args;
  for (const runtime::NDArray& a : ref.inputs) args.push_back(a.get());
  for (const ops::TensorType& t : out_types) {
    outs.push_back(runtime::NDArray::empty(t.shape, ops::to_dlpack(t.dtype), true));
    args.push_back(outs.back().get());
  }
  if (call(kernel, args, config) != 0) {
    m.error = std::string("runtime: ") + AnvilGetLastError();
    return;
  }
  std::string differs = compare(ref.outputs, outs);
  if (!differs.empty()) {
    m.error = "wrong result: " + differs;
    return;
  }
  for (int r = 0; r < options.repeats; ++r) {
    auto t0 = Clock::now();
    double timed_s = 0;  // with flushes: the calls alone
    int calls = 0;
    do {
      if (options.flush_caches) evict_from_caches(args);
      auto c0 = Clock::now();
      if (call(kernel, args, config) != 0) {
        m.error = std::string("runtime: ") + AnvilGetLastError();
        m.costs_s.clear();
        return;
      }
      timed_s += seconds_since(c0);
      ++calls;
    } while (seconds_since(t0) * 1e3 < options.min_repeat_ms);
    // Without flushes the repeat is timed as a whole: no clock reads between short calls.
    m.costs_s.push_back((options.flush_caches ? timed_s : seconds_since(t0)) / calls);
  }
}

// check_and_time for a candidate compiled for a GPU target: the reference's inputs copied to the
// device, the outputs copied back and checked after the first call, then each repeat launches the
// kernel in groups of kGroup calls, waiting for the device after each group, until min_repeat_ms
// has passed; a repeat's cost is its time per call. (No cache flushes: the device's caches are
// not the host's.)
void check_and_time_on_device(const Task& task, const runtime::Module& module, AnvilKernel kernel,
                              const std::vector<ops::TensorType>& out_types,
                              const MeasureOptions& options, Measurement& m) {
  constexpr int kGroup = 10;
  try {
    const Reference& ref = reference_of(task);
    runtime::Device& device = runtime::Device::get(static_cast<DLDeviceType>(module.device_type()));
    std::vector<runtime::NDArray> outs;
    for (const ops::TensorType& t : out_types)
      outs.push_back(runtime::NDArray::empty(t.shape, ops::to_dlpack(t.dtype), true));
    std::vector<const runtime::NDArray*> arrays;
    for (const runtime::NDArray& a : ref.inputs) arrays.push_back(&a);
    for (const runtime::NDArray& a : outs) arrays.push_back(&a);
    const runtime::DeviceArrays on_device(device, arrays);
    const std::vector<const DLTensor*>& args = on_device.args();
    void* ctx = module.context();
    auto call = [&] {
      if (kernel(args.data(), static_cast<int32_t>(args.size()), ctx) != 0)
        throw std::runtime_error(AnvilGetLastError());
    };
    call();
    for (size_t o = 0; o < outs.size(); ++o) on_device.read(ref.inputs.size() + o, outs[o]);
    std::string differs = compare(ref.outputs, outs);
    if (!differs.empty()) {
      m.error = "wrong result: " + differs;
      return;
    }
    for (int r = 0; r < options.repeats; ++r) {
      auto t0 = Clock::now();
      int calls = 0;
      do {
        for (int i = 0; i < kGroup; ++i) call();
        device.synchronize();
        calls += kGroup;
      } while (seconds_since(t0) * 1e3 < options.min_repeat_ms);
      m.costs_s.push_back(seconds_since(t0) / calls);
    }
  } catch (const std::exception& e) {
    m.error = std::string("runtime: ") + e.what();
    m.costs_s.clear();
  }
}

std::string describe_status(int status) {
  if (WIFSIGNALED(status))
    return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "stopped";
}

// What a compiling child sends its parent over a pipe: "ok COMPILE_S" when it saved the shared
// library, or "error\n" and the reason.
std::string compile_in_child(const Task& task, const Target& target, const ops::Config& config,
                             const std::string& library) {
  auto start = Clock::now();
  try {
    std::vector<ops::TensorType> out_types;
    if (target.is_gpu()) {
      codegen::save_gpu_library({lower_candidate_gpu(task, target, config, &out_types)}, target,
                                library);
    } else {
      ir::LoweredFunc f = lower_candidate(task, target, config, &out_types);
      codegen::LLVMModule::compile({f}, target)->save_shared_library(library);
    }
    return "ok " + std::to_string(seconds_since(start));
  } catch (const std::exception& e) {
    return std::string("error\n") + e.what();
  }
}

// A compiling child: its process, the read end of its pipe, and what it has sent so far.
struct Child {
  pid_t pid = -1;
  int fd = -1;
  size_t index = 0;
  Clock::time_point start;
  std::string message;
};

// Forks a child that compiles configs[index] into `library` and exits. A child runs no
// destructors and flushes nothing (_exit), and its stdout is its stderr: the worker's stdout is
// the protocol.
Child start_child(const Task& task, const Target& target, const ops::Config& config, size_t index,
                  const std::string& library) {
  int fds[2];
  ANVIL_CHECK(pipe2(fds, O_CLOEXEC) == 0, "measure_batch of ", task.str(),
              ": cannot create a pipe: ", std::strerror(errno));
  std::cout.flush();
  std::cerr.flush();
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    ANVIL_FAIL("measure_batch of ", task.str(), ": cannot fork: ", std::strerror(errno));
  }
  if (pid == 0) {
    // Its own process group, so that a timeout also kills the linker it runs; and it dies with
    // the worker (killed by the tuner at a batch's time limit).
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() == 1) _exit(1);
    close(fds[0]);
    dup2(2, 1);
    std::string message = compile_in_child(task, target, config, library);
    for (size_t done = 0; done < message.size();) {
      ssize_t n = write(fds[1], message.data() + done, message.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    _exit(0);
  }
  setpgid(pid, pid);
  close(fds[1]);
  Child c;
  c.pid = pid;
  c.fd = fds[0];
  c.index = index;
  c.start = Clock::now();
  return c;
}

// Reaps a child whose pipe reached its end and records its outcome in `m`.
void finish_child(Child& c, Measurement& m) {
  close(c.fd);
  int status = 0;
  while (waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (c.message.rfind("ok ", 0) == 0) {
    m.compile_s = std::strtod(c.message.c_str() + 3, nullptr);
  } else if (c.message.rfind("error\n", 0) == 0) {
    m.error = "compile: " + c.message.substr(6);
  } else {
    m.error = "compile: the compiling process " + describe_status(status) + " without an answer";
  }
}

// Compiles configs[i] into dir/candidate<i>.so, `jobs` children at a time, each child at most
// `timeout_s`; failures go to results[i].error.
void compile_all(const Task& task, const Target& target, const std::vector<ops::Config>& configs,
                 int jobs, double timeout_s, const std::string& dir,
                 std::vector<Measurement>& results) {
  auto library = [&](size_t i) { return dir + "/candidate" + std::to_string(i) + ".so"; };
  std::vector<Child> running;
  size_t next = 0;
  while (next < configs.size() || !running.empty()) {
    while (running.size() < static_cast<size_t>(jobs) && next < configs.size()) {
      try {
        running.push_back(start_child(task, target, configs[next], next, library(next)));
      } catch (const std::exception& e) {
        results[next].error = std::string("compile: ") + e.what();
      }
      ++next;
    }
    if (running.empty()) continue;
    std::vector<pollfd> fds;
    double wait_s = timeout_s;
    for (const Child& c : running) {
      fds.push_back({c.fd, POLLIN, 0});
      wait_s = std::min(wait_s, timeout_s - seconds_since(c.start));
    }
    int ready = poll(fds.data(), fds.size(), static_cast<int>(std::max(0.0, wait_s) * 1000) + 1);
    if (ready < 0 && errno != EINTR)
      ANVIL_FAIL("measure_batch of ", task.str(), ": poll: ", std::strerror(errno));
    std::vector<Child> still;
    for (size_t k = 0; k < running.size(); ++k) {
      Child& c = running[k];
      bool done = false;
      if (ready > 0 && (fds[k].revents & (POLLIN | POLLHUP | POLLERR))) {
        char chunk[4096];
        ssize_t n = read(c.fd, chunk, sizeof chunk);
        if (n > 0) {
          c.message.append(chunk, static_cast<size_t>(n));
        } else if (n == 0 || errno != EINTR) {
          finish_child(c, results[c.index]);
          done = true;
        }
      }
      if (!done && seconds_since(c.start) >= timeout_s) {
        kill(-c.pid, SIGKILL);
        kill(c.pid, SIGKILL);
        close(c.fd);
        while (waitpid(c.pid, nullptr, 0) < 0 && errno == EINTR) {
        }
        std::ostringstream limit;
        limit << timeout_s;
        results[c.index].error = "timeout: compiling took more than " + limit.str() + " s";
        done = true;
      }
      if (!done) still.push_back(c);
    }
    running = std::move(still);
  }
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  ANVIL_CHECK(f.good(), "cannot read '", path, "'");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

Measurement failed_trial(const std::exception& e) {
  // The worker crashed, hung (it is killed) or broke the protocol.
  const std::string what = e.what();
  const bool timeout = what.find("no answer within") != std::string::npos;
  Measurement m;
  m.error = (timeout ? "timeout: " : "crash: ") + what;
  return m;
}

nlohmann::json config_to_json(const ops::Config& config) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, value] : config) j[name] = value;
  return j;
}

ops::Config config_from_json(const nlohmann::json& j) {
  ops::Config config;
  for (const auto& [name, value] : j.items()) config[name] = value.get<int64_t>();
  return config;
}

nlohmann::json measurement_to_json(const Measurement& m) {
  nlohmann::json j = {{"costs_s", m.costs_s}, {"compile_s", m.compile_s}};
  if (m.error) j["error"] = *m.error;
  return j;
}

Measurement measurement_from_json(const nlohmann::json& j) {
  Measurement m;
  m.costs_s = j.at("costs_s").get<std::vector<double>>();
  m.compile_s = j.value("compile_s", 0.0);
  if (j.contains("error")) m.error = j["error"].get<std::string>();
  return m;
}

}  // namespace

Measurement measure_here(const Task& task, const ops::Config& config, const MeasureOptions& options,
                         const KernelCall& call_fn) {
  const KernelCall call = call_fn ? call_fn : KernelCall(default_call);
  Measurement m;
  const Target target = Target::parse(task.target);
  auto start = Clock::now();
  std::unique_ptr<codegen::LLVMModule> module;
  AnvilKernel kernel = nullptr;
  std::vector<ops::TensorType> out_types;
  if (target.is_gpu()) {
    try {
      const TempDir temp("anvil-measure-", "measure of " + task.str());
      runtime::Module gpu =
          codegen::build_gpu({lower_candidate_gpu(task, target, config, &out_types)}, target,
                             temp.path() + "/candidate.so");
      m.compile_s = seconds_since(start);
      check_and_time_on_device(task, gpu, gpu.get_function("candidate"), out_types, options, m);
    } catch (const std::exception& e) {
      m.error = std::string("compile: ") + e.what();
    }
    return m;
  }
  try {
    module =
        codegen::LLVMModule::compile({lower_candidate(task, target, config, &out_types)}, target);
    kernel = module->get_function("candidate");
  } catch (const std::exception& e) {
    m.error = std::string("compile: ") + e.what();
    return m;
  }
  m.compile_s = seconds_since(start);
  check_and_time(task, kernel, out_types, config, options, call, m);
  return m;
}

std::vector<Measurement> measure_batch_here(const Task& task,
                                            const std::vector<ops::Config>& configs,
                                            const MeasureOptions& options,
                                            const KernelCall& call_fn) {
  const KernelCall call = call_fn ? call_fn : KernelCall(default_call);
  std::vector<Measurement> results(configs.size());
  if (configs.empty()) return results;
  const Target target = Target::parse(task.target);
  std::vector<ops::TensorType> out_types;
  try {
    out_types = ops::lookup(task.op).infer(task.inputs, task.attrs);
  } catch (const std::exception& e) {
    for (Measurement& m : results) m.error = std::string("compile: ") + e.what();
    return results;
  }
  int jobs = options.compile_jobs;
  if (jobs <= 0) jobs = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));

  const TempDir temp("anvil-batch-", "measure_batch of " + task.str());
  const std::string& dir = temp.path();

  // Every compilation ends before the first candidate is timed.
  compile_all(task, target, configs, jobs, options.timeout_s, dir, results);
  for (size_t i = 0; i < configs.size(); ++i) {
    Measurement& m = results[i];
    if (m.error) continue;
    AnvilKernel kernel = nullptr;
    std::optional<runtime::Module> module;
    try {
      const std::string path = dir + "/candidate" + std::to_string(i) + ".so";
      module = runtime::Module::load_from_memory(read_file(path), path);
      std::filesystem::remove(path);
      kernel = module->get_function("candidate");
    } catch (const std::exception& e) {
      m.error = std::string("compile: ") + e.what();
      continue;
    }
    if (module->device_type() != kDLCPU) {
      check_and_time_on_device(task, *module, kernel, out_types, options, m);
      continue;
    }
    check_and_time(task, kernel, out_types, configs[i], options, call, m);
  }
  return results;
}

void serve_measurements(std::istream& in, std::ostream& out, const KernelCall& call) {
  out << nlohmann::json{{"ok", true}, {"name", "measure"}, {"version", "1"}}.dump() << std::endl;
  for (std::string line; std::getline(in, line);) {
    nlohmann::json request = nlohmann::json::parse(line, nullptr, false);
    nlohmann::json answer;
    try {
      ANVIL_CHECK(request.is_object() && request.contains("op"),
                  "a request must be an object with an 'op'");
      const std::string op = request["op"];
      if (op == "quit") return;
      ANVIL_CHECK(op == "measure" || op == "measure_batch", "unknown op '", op, "'");
      Task task = Task::from_json(request.at("task"), request.at("target").get<std::string>());
      MeasureOptions options;
      options.repeats = request.value("repeats", options.repeats);
      options.min_repeat_ms = request.value("min_repeat_ms", options.min_repeat_ms);
      options.flush_caches = request.value("flush_caches", options.flush_caches);
      if (op == "measure") {
        Measurement m = measure_here(task, config_from_json(request.at("config")), options, call);
        answer = measurement_to_json(m);
      } else {
        options.compile_jobs = request.value("compile_jobs", 0);
        options.timeout_s = request.value("compile_timeout_s", options.timeout_s);
        std::vector<ops::Config> configs;
        for (const nlohmann::json& c : request.at("configs"))
          configs.push_back(config_from_json(c));
        nlohmann::json results = nlohmann::json::array();
        for (const Measurement& m : measure_batch_here(task, configs, options, call))
          results.push_back(measurement_to_json(m));
        answer = {{"results", results}};
      }
      answer["ok"] = true;
    } catch (const std::exception& e) {
      answer = {{"ok", false}, {"error", e.what()}};
    }
    out << answer.dump() << std::endl;
  }
}

Measurer::Measurer(std::vector<std::string> command) : command_(std::move(command)) {}

Worker& Measurer::worker() {
  if (worker_ && worker_->alive()) return *worker_;
  // A worker that does not start is no candidate's fault: an error, not a failed trial.
  try {
    worker_ = std::make_unique<Worker>("measurer", command_);
  } catch (const std::exception& e) {
    worker_.reset();
    ANVIL_FAIL("the measure worker does not start (", e.what(), ")");
  }
  return *worker_;
}

Measurement Measurer::measure(const Task& task, const ops::Config& config,
                              const MeasureOptions& options) {
  Worker& w = worker();
  try {
    nlohmann::json answer = w.request({{"op", "measure"},
                                       {"task", task.to_json()},
                                       {"target", task.target},
                                       {"config", config_to_json(config)},
                                       {"repeats", options.repeats},
                                       {"min_repeat_ms", options.min_repeat_ms},
                                       {"flush_caches", options.flush_caches}},
                                      options.timeout_s);
    return measurement_from_json(answer);
  } catch (const std::exception& e) {
    worker_.reset();
    return failed_trial(e);
  }
}

std::vector<Measurement> Measurer::measure_batch(const Task& task,
                                                 const std::vector<ops::Config>& configs,
                                                 const MeasureOptions& options) {
  if (configs.empty()) return {};
  Worker& w = worker();
  try {
    nlohmann::json configs_json = nlohmann::json::array();
    for (const ops::Config& c : configs) configs_json.push_back(config_to_json(c));
    nlohmann::json answer = w.request({{"op", "measure_batch"},
                                       {"task", task.to_json()},
                                       {"target", task.target},
                                       {"configs", configs_json},
                                       {"repeats", options.repeats},
                                       {"min_repeat_ms", options.min_repeat_ms},
                                       {"flush_caches", options.flush_caches},
                                       {"compile_jobs", options.compile_jobs},
                                       {"compile_timeout_s", options.timeout_s}},
                                      options.timeout_s * static_cast<double>(configs.size()));
    const nlohmann::json& results = answer.at("results");
    ANVIL_CHECK(results.is_array() && results.size() == configs.size(), "measure_batch of ",
                task.str(), ": the worker answered ", results.size(), " results for ",
                configs.size(), " configurations");
    std::vector<Measurement> out;
    for (const nlohmann::json& r : results) out.push_back(measurement_from_json(r));
    return out;
  } catch (const std::exception& e) {
    worker_.reset();
    if (configs.size() == 1) return {failed_trial(e)};
    // Which candidate crashed or hung is unknown: each in a batch of its own finds it.
    std::vector<Measurement> out;
    for (const ops::Config& c : configs) out.push_back(measure_batch(task, {c}, options).front());
    return out;
  }
}

}  // namespace anvil::autotune
