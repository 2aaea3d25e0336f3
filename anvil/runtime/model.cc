#include "anvil/runtime/model.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "anvil/runtime/artifact.h"
#include "anvil/runtime/graph_executor.h"
#include "anvil/runtime/host_cpu.h"
#include "anvil/runtime/module.h"

namespace anvil::runtime {

struct Model::State {
  GraphProgram program;
  std::vector<TensorInfo> inputs, outputs;
};

namespace {

std::string read_file(const std::string& path, const std::string& what) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw ArtifactError("cannot open " + what + " '" + path + "': " + std::strerror(errno));
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) throw ArtifactError("cannot read " + what + " '" + path + "'");
  return ss.str();
}

std::shared_ptr<const Model::State> make_state(GraphProgram program, const std::string& origin);

// The highest x86-64 microarchitecture level `cpu` runs, for the advice of a refused artifact.
std::string portable_level(const HostCpu& cpu) {
  if (cpu.has("avx512f") && cpu.has("avx512bw") && cpu.has("avx512dq") && cpu.has("avx512vl"))
    return "x86-64-v4";
  if (cpu.has("avx2") && cpu.has("fma") && cpu.has("bmi2")) return "x86-64-v3";
  return cpu.has("sse4.2") ? "x86-64-v2" : "x86-64";
}

}  // namespace

Model::Model(GraphProgram program) : state_(make_state(std::move(program), "<in memory>")) {}

ArtifactContents read_artifact(const std::string& path) {
  std::string file = read_file(path, "model");
  ArtifactTrailer t = decode_trailer(file, path);
  ArtifactContents c;
  c.program = program_from_json(std::string_view(file).substr(t.library_bytes, t.program_bytes),
                                path, &c.params_file);
  c.file_bytes = file.size();
  c.library_bytes = t.library_bytes;
  c.program_bytes = t.program_bytes;
  c.params_bytes = t.params_bytes;
  return c;
}

Model Model::load(const std::string& path) {
  std::string file = read_file(path, "model");
  ArtifactTrailer t = decode_trailer(file, path);
  std::string_view body(file);
  ParamsFile params_file;
  GraphProgram program =
      program_from_json(body.substr(t.library_bytes, t.program_bytes), path, &params_file);

  // Code compiled for extensions this CPU lacks would die of SIGILL at its first kernel.
  if (std::vector<std::string> missing = missing_cpu_features(program.cpu_features, host_cpu());
      !missing.empty()) {
    std::string list;
    for (const std::string& f : missing) list += (list.empty() ? "" : ", ") + f;
    throw ArtifactError("'" + path + "' was compiled for " +
                        (program.cpu.empty() ? "another CPU" : "the CPU '" + program.cpu + "'") +
                        " and may use " + list + ", which this CPU (" + host_cpu().brand + ", " +
                        host_cpu().id() +
                        ") lacks; compile the model again on this CPU, or for a level it "
                        "runs (--target 'llvm -mcpu=" +
                        portable_level(host_cpu()) + "')");
  }

  // Parameters: embedded, or in the file the program names beside the artifact.
  std::vector<std::pair<std::string, NDArray>> params;
  if (t.flags & kSeparateParams) {
    if (params_file.name.empty() || params_file.name.find('/') != std::string::npos)
      throw ArtifactError("'" + path + "' keeps its parameters apart but names no valid file ('" +
                          params_file.name + "')");
    std::string params_path =
        (std::filesystem::path(path).parent_path() / params_file.name).string();
    std::string bytes = read_file(params_path, "parameter file");
    std::string mismatch = params_file_mismatch(bytes, params_file.bytes, params_file.checksum);
    if (!mismatch.empty())
      throw ArtifactError("parameter file '" + params_path + "' does not match '" + path +
                          "': " + mismatch);
    params = parse_safetensors(bytes, params_path);
  } else {
    if (!params_file.name.empty())
      throw ArtifactError("'" + path + "' embeds its parameters but also names a file for them");
    params =
        parse_safetensors(body.substr(t.library_bytes + t.program_bytes, t.params_bytes), path);
  }
  for_each_program(program, [&](GraphProgram& q) {
    q.params.resize(q.param_names.size());
    for (auto& [name, array] : params)
      for (size_t k = 0; k < q.param_names.size(); ++k)
        if (q.param_names[k] == name) q.params[k] = array;
    for (size_t k = 0; k < q.params.size(); ++k)
      if (!q.params[k].defined())
        throw ArtifactError("'" + path + "': parameter '" + q.param_names[k] +
                            "' is missing from its parameters");
  });

  // Only now, with every byte checked, is the library loaded: from the bytes checked, not from the
  // file again.
  std::shared_ptr<Module> module;
  try {
    module =
        std::make_shared<Module>(Module::load_from_memory(body.substr(0, t.library_bytes), path));
    bind_kernels(program, [&](const std::string& k) { return module->get_function(k); });
  } catch (const ArtifactError&) {
    throw;
  } catch (const DeviceUnavailable&) {
    throw;  // the machine's state, not the artifact's fault
  } catch (const std::runtime_error& e) {
    throw ArtifactError(e.what());
  }
  program.keep_alive = module;
  attach_device(program, *module);
  Model m;
  m.state_ = make_state(std::move(program), path);
  return m;
}

namespace {

std::shared_ptr<const Model::State> make_state(GraphProgram program, const std::string& origin) {
  program.validate(origin);
  attach_host(program);
  auto state = std::make_shared<Model::State>();
  for (int32_t s : program.inputs)
    state->inputs.push_back(
        {program.slots[s].name, program.slots[s].shape, program.slots[s].dtype});
  for (size_t i = 0; i < program.outputs.size(); ++i) {
    const GraphProgram::Slot& s = program.slots[program.outputs[i]];
    state->outputs.push_back({program.output_name(i), s.shape, s.dtype});
  }
  state->program = std::move(program);
  return state;
}

const Model::State& checked(const std::shared_ptr<const Model::State>& s) {
  if (!s) throw std::logic_error("Model: no model is loaded");
  return *s;
}

}  // namespace

const std::vector<TensorInfo>& Model::inputs() const {
  return checked(state_).inputs;
}
const std::vector<TensorInfo>& Model::outputs() const {
  return checked(state_).outputs;
}
const std::string& Model::target() const {
  return checked(state_).program.target;
}
size_t Model::num_kernels() const {
  return checked(state_).program.calls.size();
}
int64_t Model::arena_bytes() const {
  return checked(state_).program.arena_bytes;
}

namespace {

// The check run() and profile() make of their inputs: InputError naming what was expected.
void check_inputs(const Model::State& s, const std::vector<NDArray>& inputs);

}  // namespace

std::vector<NDArray> Model::run(const std::vector<NDArray>& inputs) const {
  const State& s = checked(state_);
  check_inputs(s, inputs);
  return execute(s.program, inputs);
}

void Model::run(const std::vector<NDArray>& inputs, const std::vector<NDArray>& outputs) const {
  const State& s = checked(state_);
  check_inputs(s, inputs);
  if (s.program.device)
    throw InputError("the model runs on " + to_string(s.program.device->dl_device()) +
                     ": outputs in host arrays are for CPU models (use run_device)");
  if (outputs.size() != s.outputs.size())
    throw InputError("the model has " + std::to_string(s.outputs.size()) + " output(s), given " +
                     std::to_string(outputs.size()) + " array(s) to write them into");
  for (size_t i = 0; i < outputs.size(); ++i) {
    const TensorInfo& want = s.outputs[i];
    const NDArray& a = outputs[i];
    std::string expected = to_string(want.dtype) + shape_str(want.shape);
    if (!a.defined())
      throw InputError("output '" + want.name + "': expected " + expected + ", got no array");
    if (to_string(a.dtype()) != to_string(want.dtype) || a.shape() != want.shape)
      throw InputError("output '" + want.name + "': expected " + expected + ", got " +
                       to_string(a.dtype()) + shape_str(a.shape()));
    for (size_t k = 0; k < inputs.size(); ++k)
      if (memory_overlaps(a, inputs[k]))
        throw InputError("output '" + want.name + "' overlaps input '" + s.inputs[k].name +
                         "': give the outputs memory of their own");
    for (size_t k = 0; k < i; ++k)
      if (memory_overlaps(a, outputs[k]))
        throw InputError("output '" + want.name + "' overlaps output '" + s.outputs[k].name + "'");
  }
  execute_into(s.program, inputs, outputs);
}

size_t Model::device_bytes_held() const {
  return runtime::device_bytes_held(checked(state_).program);
}

std::vector<NDArray> Model::run(const std::vector<NDArray>& inputs, void* stream) const {
  const State& s = checked(state_);
  check_inputs(s, inputs);
  return execute(s.program, inputs, nullptr, stream);
}

namespace {

// A device array's description for an error: "cuda:0 float32[1, 3]".
std::string describe(const DLTensor& t) {
  std::string shape;
  for (int32_t d = 0; d < t.ndim; ++d) shape += (d ? ", " : "") + std::to_string(t.shape[d]);
  return to_string(t.device) + " " + to_string(t.dtype) + "[" + shape + "]";
}

// `t` is an array of `info`'s shape and dtype on `device`; throws InputError saying which and
// what was expected. Allocates nothing when it is.
void check_device_array(const char* role, size_t i, const TensorInfo& info, const DLTensor* t,
                        const DLDevice& device) {
  bool same = t != nullptr && t->data != nullptr && t->device.device_type == device.device_type &&
              t->device.device_id == device.device_id && t->dtype.code == info.dtype.code &&
              t->dtype.bits == info.dtype.bits && t->dtype.lanes == info.dtype.lanes &&
              t->ndim == static_cast<int32_t>(info.shape.size()) && t->strides == nullptr;
  for (int32_t d = 0; same && d < t->ndim; ++d) same = t->shape[d] == info.shape[d];
  if (same) {
    // The kernels read and write device memory 16 bytes at a time where they can.
    std::string what = std::string(role) + " " + std::to_string(i) + " '" + info.name + "': ";
    if (t->byte_offset % ANVIL_ALIGNMENT != 0)
      throw InputError(what + "byte_offset " + std::to_string(t->byte_offset) +
                       " is not a multiple of " + std::to_string(ANVIL_ALIGNMENT) +
                       " (copy it into an array of its own)");
    if (device.device_type == kDLCUDA &&
        reinterpret_cast<uintptr_t>(t->data) % ANVIL_ARG_ALIGNMENT != 0)
      throw InputError(what + "device address is not " + std::to_string(ANVIL_ARG_ALIGNMENT) +
                       "-byte aligned (copy it into an array of its own)");
    return;
  }
  std::string expected = to_string(device) + " " + to_string(info.dtype) + "[";
  for (size_t d = 0; d < info.shape.size(); ++d)
    expected += (d ? ", " : "") + std::to_string(info.shape[d]);
  expected += "], compact";
  throw InputError(
      std::string(role) + " " + std::to_string(i) + " '" + info.name +
      "': " + (t == nullptr || t->data == nullptr ? std::string("no array") : describe(*t)) +
      (t != nullptr && t->strides != nullptr ? " with strides" : "") + ", expected " + expected);
}

}  // namespace

void Model::run_device(const std::vector<const DLTensor*>& inputs,
                       const std::vector<const DLTensor*>& outputs, void* stream) const {
  const State& s = checked(state_);
  if (!s.program.device)
    throw InputError("Model::run_device: the model runs on the CPU (target '" + s.program.target +
                     "'); use run");
  if (inputs.size() != s.inputs.size() || outputs.size() != s.outputs.size())
    throw InputError("Model::run_device: the model takes " + std::to_string(s.inputs.size()) +
                     " inputs and " + std::to_string(s.outputs.size()) + " outputs, given " +
                     std::to_string(inputs.size()) + " and " + std::to_string(outputs.size()));
  const DLDevice device = s.program.device->dl_device();
  for (size_t i = 0; i < inputs.size(); ++i)
    check_device_array("input", i, s.inputs[i], inputs[i], device);
  for (size_t i = 0; i < outputs.size(); ++i)
    check_device_array("output", i, s.outputs[i], outputs[i], device);
  execute_on_device_arrays(s.program, inputs, outputs, stream);
}

DLDevice Model::device() const {
  const State& s = checked(state_);
  return s.program.device ? s.program.device->dl_device() : DLDevice{kDLCPU, 0};
}

DeviceRunCounts Model::device_run_counts() const {
  return runtime::device_run_counts(checked(state_).program);
}

std::vector<KernelProfile> Model::profile(const std::vector<NDArray>& inputs, int repeat) const {
  const State& s = checked(state_);
  if (repeat < 1)
    throw std::invalid_argument("Model::profile: repeat must be at least 1, got " +
                                std::to_string(repeat));
  check_inputs(s, inputs);
  const std::vector<GraphProgram::Call>& calls = s.program.calls;
  execute(s.program, inputs);  // warm-up: first-touch of memory, caches, the thread pool
  std::vector<std::vector<double>> times(calls.size());
  std::vector<double> run_times;
  for (int r = 0; r < repeat; ++r) {
    execute(s.program, inputs, &run_times);
    for (size_t i = 0; i < calls.size(); ++i) times[i].push_back(run_times[i]);
  }
  std::vector<KernelProfile> result;
  for (size_t i = 0; i < calls.size(); ++i) {
    std::vector<double>& t = times[i];
    std::sort(t.begin(), t.end());
    size_t n = t.size();
    double median = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
    result.push_back({calls[i].kernel, calls[i].nodes, median, calls[i].flops});
  }
  return result;
}

std::string rebind_hint(const std::string& input, const std::vector<int64_t>& shape) {
  std::string dims;
  for (int64_t d : shape) dims += (dims.empty() ? "" : "x") + std::to_string(d);
  return "; the shapes were bound when the model was compiled: compile it again with "
         "--input-shape " +
         input + "=" + dims + " to run it on this one";
}

namespace {

void check_inputs(const Model::State& s, const std::vector<NDArray>& inputs) {
  if (inputs.size() != s.inputs.size()) {
    std::string names;
    for (const TensorInfo& i : s.inputs) names += (names.empty() ? "'" : ", '") + i.name + "'";
    throw InputError("the model takes " + std::to_string(s.inputs.size()) + " input(s) (" + names +
                     "), got " + std::to_string(inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorInfo& want = s.inputs[i];
    std::string expected = to_string(want.dtype) + shape_str(want.shape);
    if (!inputs[i].defined())
      throw InputError("input '" + want.name + "': expected " + expected + ", got no array");
    const bool same_dtype = to_string(inputs[i].dtype()) == to_string(want.dtype);
    if (!same_dtype || inputs[i].shape() != want.shape)
      throw InputError("input '" + want.name + "': expected " + expected + ", got " +
                       to_string(inputs[i].dtype()) + shape_str(inputs[i].shape()) +
                       (same_dtype && !inputs[i].shape().empty()
                            ? rebind_hint(want.name, inputs[i].shape())
                            : ""));
  }
}

}  // namespace

std::vector<NDArray> Model::run(const std::map<std::string, NDArray>& inputs) const {
  const State& s = checked(state_);
  std::vector<NDArray> ordered;
  for (const TensorInfo& i : s.inputs) {
    auto it = inputs.find(i.name);
    if (it == inputs.end())
      throw InputError("input '" + i.name + "' (" + to_string(i.dtype) + shape_str(i.shape) +
                       ") is not given");
    ordered.push_back(it->second);
  }
  for (const auto& [name, array] : inputs) {
    bool known = false;
    for (const TensorInfo& i : s.inputs) known |= i.name == name;
    if (!known) {
      std::string names;
      for (const TensorInfo& i : s.inputs) names += (names.empty() ? "'" : ", '") + i.name + "'";
      throw InputError("the model has no input '" + name + "' (its inputs: " + names + ")");
    }
  }
  return run(ordered);
}

}  // namespace anvil::runtime
