#include "anvil/runtime/graph_executor.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>

#include "anvil/runtime/artifact.h"
#include "anvil/runtime/device_executor.h"
#include "anvil/runtime/host_memory.h"

namespace anvil::runtime {

namespace {

using json = nlohmann::ordered_json;

constexpr const char* kFormat = "anvil-graph-program";
// Version 2: subprograms and control-flow steps; a program without them is written as version 1,
// which readers before them load too.
constexpr int kProgramVersion = 2;

const char* storage_name(GraphProgram::Storage s) {
  switch (s) {
    case GraphProgram::Storage::kInput:
      return "input";
    case GraphProgram::Storage::kParam:
      return "param";
    case GraphProgram::Storage::kArena:
      return "arena";
    case GraphProgram::Storage::kOwned:
      return "owned";
  }
  return "?";
}

}  // namespace

void GraphProgram::validate(const std::string& origin) const {
  auto fail = [&](const std::string& what) {
    throw ArtifactError("the program in '" + origin + "' is inconsistent: " + what);
  };
  int32_t n = static_cast<int32_t>(slots.size());
  auto check_slot = [&](int32_t s, const std::string& where) {
    if (s < 0 || s >= n)
      fail(where + " names slot " + std::to_string(s) + " of " + std::to_string(n));
  };
  if (arena_bytes < 0) fail("arena_bytes is negative");
  std::vector<int> input_seen(inputs.size(), 0);
  for (int32_t s = 0; s < n; ++s) {
    const Slot& slot = slots[s];
    std::string what = "slot " + std::to_string(s) + " ('" + slot.name + "')";
    int64_t bytes = tensor_bytes(slot.shape, slot.dtype);
    if (bytes < 0) fail(what + " has an invalid shape " + shape_str(slot.shape));
    switch (slot.storage) {
      case Storage::kArena:
        if (slot.offset < 0 || slot.offset % ANVIL_ALIGNMENT != 0 ||
            slot.offset > arena_bytes - bytes)
          fail(what + " (" + std::to_string(bytes) + " bytes at offset " +
               std::to_string(slot.offset) + ") does not lie aligned inside the arena of " +
               std::to_string(arena_bytes) + " bytes");
        break;
      case Storage::kParam: {
        if (slot.offset < 0 || slot.offset >= static_cast<int64_t>(params.size()))
          fail(what + " names parameter " + std::to_string(slot.offset) + " of " +
               std::to_string(params.size()));
        const NDArray& p = params[slot.offset];
        if (p.shape() != slot.shape || to_string(p.dtype()) != to_string(slot.dtype))
          fail(what + " is " + to_string(slot.dtype) + shape_str(slot.shape) + ", its parameter '" +
               param_names[slot.offset] + "' is " + to_string(p.dtype()) + shape_str(p.shape()));
        break;
      }
      case Storage::kInput:
        if (slot.offset < 0 || slot.offset >= static_cast<int64_t>(inputs.size()) ||
            inputs[slot.offset] != s)
          fail(what + " claims to be input " + std::to_string(slot.offset) +
               ", which is another slot");
        ++input_seen[slot.offset];
        break;
      case Storage::kOwned:
        break;
    }
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    check_slot(inputs[i], "input " + std::to_string(i));
    if (slots[inputs[i]].storage != Storage::kInput || input_seen[i] != 1)
      fail("input " + std::to_string(i) + " is not stored as that input");
  }
  for (size_t i = 0; i < outputs.size(); ++i) check_slot(outputs[i], "output " + std::to_string(i));
  if (!output_names.empty() && output_names.size() != outputs.size())
    fail("names " + std::to_string(output_names.size()) + " outputs but has " +
         std::to_string(outputs.size()));
  for (size_t i = 0; i < output_names.size(); ++i)
    for (size_t k = 0; k < i; ++k)
      if (output_names[i] == output_names[k]) fail("names two outputs '" + output_names[i] + "'");
  for (const Call& c : calls) {
    for (int32_t a : c.args) check_slot(a, "kernel " + c.kernel);
    if (c.is_control()) {
      if (c.num_inputs < 0 || c.num_inputs > static_cast<int32_t>(c.args.size()))
        fail("step " + c.kernel + " has " + std::to_string(c.num_inputs) + " inputs of " +
             std::to_string(c.args.size()) + " arguments");
      if (c.bodies.size() != (c.control.op == "if" ? 2u : 1u))
        fail("step " + c.kernel + " (" + c.control.op + ") has " + std::to_string(c.bodies.size()) +
             " bodies");
      for (int32_t b : c.bodies)
        if (b < 0 || b >= static_cast<int32_t>(subprograms.size()))
          fail("step " + c.kernel + " names subprogram " + std::to_string(b) + " of " +
               std::to_string(subprograms.size()));
      if (c.control.op != "if" && c.control.op != "loop" && c.control.op != "scan")
        fail("step " + c.kernel + " is of unknown kind '" + c.control.op + "'");
    }
    for (int32_t r : c.release) {
      check_slot(r, "kernel " + c.kernel + " (release)");
      if (slots[r].storage != Storage::kOwned)
        fail("kernel " + c.kernel + " releases slot " + std::to_string(r) +
             ", which it does not own");
      if (std::count(outputs.begin(), outputs.end(), r) > 0)
        fail("kernel " + c.kernel + " releases slot " + std::to_string(r) +
             ", an output of the program");
    }
    if (!c.fn && !c.is_control()) fail("kernel " + c.kernel + " has no code");
    if (!(c.flops >= 0) || std::isinf(c.flops))
      fail("kernel " + c.kernel + " has a FLOP count of " + std::to_string(c.flops));
  }
  for (const GraphProgram& sub : subprograms) sub.validate(origin);
}

void for_each_program(GraphProgram& p, const std::function<void(GraphProgram&)>& f) {
  f(p);
  for (GraphProgram& sub : p.subprograms) for_each_program(sub, f);
}

void bind_kernels(GraphProgram& p, const std::function<AnvilKernel(const std::string&)>& get) {
  for_each_program(p, [&](GraphProgram& q) {
    for (GraphProgram::Call& c : q.calls)
      if (!c.is_control()) c.fn = get(c.kernel);
  });
}

void for_each_program(const GraphProgram& p, const std::function<void(const GraphProgram&)>& f) {
  f(p);
  for (const GraphProgram& sub : p.subprograms) for_each_program(sub, f);
}

namespace {

json control_to_json(const ControlFlow& cf) {
  json j = {{"op", cf.op}};
  if (cf.op == "if") j["then_inputs"] = cf.then_inputs;
  if (cf.op == "loop") {
    j["has_trip_count"] = cf.has_trip_count;
    j["has_cond"] = cf.has_cond;
  }
  if (cf.op != "if") j["num_carried"] = cf.num_carried;
  if (cf.op == "scan") {
    j["num_scan_inputs"] = cf.num_scan_inputs;
    j["input_axes"] = cf.input_axes;
    j["input_reverse"] = cf.input_reverse;
    j["output_axes"] = cf.output_axes;
    j["output_reverse"] = cf.output_reverse;
  }
  return j;
}

ControlFlow control_from_json(const json& j) {
  ControlFlow cf;
  cf.op = j.at("op").get<std::string>();
  if (cf.op == "if") cf.then_inputs = j.at("then_inputs").get<int64_t>();
  if (cf.op == "loop") {
    cf.has_trip_count = j.at("has_trip_count").get<bool>();
    cf.has_cond = j.at("has_cond").get<bool>();
  }
  if (cf.op != "if") cf.num_carried = j.at("num_carried").get<int64_t>();
  if (cf.op == "scan") {
    cf.num_scan_inputs = j.at("num_scan_inputs").get<int64_t>();
    cf.input_axes = j.at("input_axes").get<std::vector<int64_t>>();
    cf.input_reverse = j.at("input_reverse").get<std::vector<int64_t>>();
    cf.output_axes = j.at("output_axes").get<std::vector<int64_t>>();
    cf.output_reverse = j.at("output_reverse").get<std::vector<int64_t>>();
  }
  return cf;
}

// The program's own fields (and its subprograms'), without format, version and parameter file.
json program_body_json(const GraphProgram& p) {
  json j;
  j["target"] = p.target;

  if (!p.cpu.empty() || !p.cpu_features.empty())  // optional: older readers ignore it
    j["cpu"] = {{"name", p.cpu}, {"features", p.cpu_features}};
  j["arena_bytes"] = p.arena_bytes;
  json slots = json::array();
  for (const GraphProgram::Slot& s : p.slots) {
    json js = {{"name", s.name},
               {"shape", s.shape},
               {"dtype", to_string(s.dtype)},
               {"storage", storage_name(s.storage)}};
    if (s.storage == GraphProgram::Storage::kParam)
      js["param"] = p.param_names.at(s.offset);
    else if (s.storage != GraphProgram::Storage::kOwned)
      js["offset"] = s.offset;
    slots.push_back(js);
  }
  j["slots"] = slots;
  j["inputs"] = p.inputs;
  j["outputs"] = p.outputs;
  if (!p.output_names.empty()) j["output_names"] = p.output_names;  // optional: older programs
  json calls = json::array();
  for (const GraphProgram::Call& c : p.calls) {
    json jc = {{"kernel", c.kernel}, {"nodes", c.nodes}, {"args", c.args}, {"release", c.release}};
    if (c.flops > 0) jc["flops"] = c.flops;  // optional: older readers ignore it
    if (c.is_control()) {
      jc["control"] = control_to_json(c.control);
      jc["num_inputs"] = c.num_inputs;
      jc["bodies"] = c.bodies;
    }
    calls.push_back(jc);
  }
  j["calls"] = calls;
  j["params"] = p.param_names;
  if (!p.subprograms.empty()) {
    json subs = json::array();
    for (const GraphProgram& sub : p.subprograms) subs.push_back(program_body_json(sub));
    j["subprograms"] = subs;
  }
  return j;
}

}  // namespace

std::string program_to_json(const GraphProgram& p, const ParamsFile& params_file) {
  json j;
  j["format"] = kFormat;
  j["version"] = p.subprograms.empty() ? 1 : kProgramVersion;
  j.update(program_body_json(p));
  if (!params_file.name.empty())
    j["params_file"] = {{"name", params_file.name},
                        {"bytes", params_file.bytes},
                        {"checksum", params_file.checksum}};
  return j.dump(1);
}

namespace {

// The fields program_body_json writes, into `p`; `field` tracks where parsing is (prefixed with
// `prefix`, "subprograms[0]." for a subprogram) for the caller's error.
void parse_program_body(const json& j, const std::string& origin, const std::string& prefix,
                        std::string& field, GraphProgram& p) {
  field = prefix + "target";
  p.target = j.at("target").get<std::string>();
  if (j.contains("cpu")) {
    field = prefix + "cpu";
    p.cpu = j.at("cpu").at("name").get<std::string>();
    p.cpu_features = j.at("cpu").at("features").get<std::vector<std::string>>();
  }
  field = prefix + "arena_bytes";
  p.arena_bytes = j.at("arena_bytes").get<int64_t>();
  field = prefix + "params";
  p.param_names = j.at("params").get<std::vector<std::string>>();
  const json& slots = j.at("slots");
  for (size_t i = 0; i < slots.size(); ++i) {
    field = prefix + "slots[" + std::to_string(i) + "]";
    const json& js = slots.at(i);
    GraphProgram::Slot s;
    s.name = js.at("name").get<std::string>();
    s.shape = js.at("shape").get<std::vector<int64_t>>();
    s.dtype = parse_dtype(js.at("dtype").get<std::string>(), "'" + origin + "' " + field);
    std::string storage = js.at("storage").get<std::string>();
    if (storage == "input") {
      s.storage = GraphProgram::Storage::kInput;
      s.offset = js.at("offset").get<int64_t>();
    } else if (storage == "arena") {
      s.storage = GraphProgram::Storage::kArena;
      s.offset = js.at("offset").get<int64_t>();
    } else if (storage == "param") {
      s.storage = GraphProgram::Storage::kParam;
      std::string name = js.at("param").get<std::string>();
      s.offset = -1;
      for (size_t k = 0; k < p.param_names.size(); ++k)
        if (p.param_names[k] == name) s.offset = static_cast<int64_t>(k);
      if (s.offset < 0)
        throw ArtifactError("the program in '" + origin + "': " + field + " names parameter '" +
                            name + "', which is not in its list");
    } else if (storage == "owned") {
      s.storage = GraphProgram::Storage::kOwned;
    } else {
      throw ArtifactError("the program in '" + origin + "': " + field + " has storage '" + storage +
                          "' (expected input, param, arena or owned)");
    }
    p.slots.push_back(std::move(s));
  }
  field = prefix + "inputs";
  p.inputs = j.at("inputs").get<std::vector<int32_t>>();
  field = prefix + "outputs";
  p.outputs = j.at("outputs").get<std::vector<int32_t>>();
  if (j.contains("output_names")) {
    field = prefix + "output_names";
    p.output_names = j.at("output_names").get<std::vector<std::string>>();
  }
  const json& calls = j.at("calls");
  for (size_t i = 0; i < calls.size(); ++i) {
    field = prefix + "calls[" + std::to_string(i) + "]";
    const json& jc = calls.at(i);
    GraphProgram::Call c;
    c.kernel = jc.at("kernel").get<std::string>();
    c.nodes = jc.at("nodes").get<std::string>();
    c.args = jc.at("args").get<std::vector<int32_t>>();
    c.release = jc.at("release").get<std::vector<int32_t>>();
    if (jc.contains("flops")) {
      field += ".flops";
      // A number (get<double> also takes integers); anything else is malformed.
      if (!jc.at("flops").is_number())
        throw ArtifactError("the program in '" + origin + "' is malformed at " + field +
                            ": expected a number, got " + jc.at("flops").dump());
      c.flops = jc.at("flops").get<double>();
    }
    if (jc.contains("control")) {
      field = prefix + "calls[" + std::to_string(i) + "].control";
      c.control = control_from_json(jc.at("control"));
      c.num_inputs = jc.at("num_inputs").get<int32_t>();
      c.bodies = jc.at("bodies").get<std::vector<int32_t>>();
    }
    p.calls.push_back(std::move(c));
  }
  if (j.contains("subprograms")) {
    const json& subs = j.at("subprograms");
    field = prefix + "subprograms";
    for (size_t i = 0; i < subs.size(); ++i) {
      p.subprograms.emplace_back();
      parse_program_body(subs.at(i), origin, prefix + "subprograms[" + std::to_string(i) + "].",
                         field, p.subprograms.back());
    }
  }
}

}  // namespace

GraphProgram program_from_json(std::string_view text, const std::string& origin,
                               ParamsFile* params_file) {
  GraphProgram p;
  std::string field = "the document";
  try {
    json j = json::parse(text);
    field = "format";
    if (j.at("format").get<std::string>() != kFormat)
      throw ArtifactError("the program in '" + origin + "' has format '" +
                          j.at("format").get<std::string>() + "', expected '" + kFormat + "'");
    field = "version";
    int version = j.at("version").get<int>();
    if (version < 1 || version > kProgramVersion)
      throw ArtifactError("the program in '" + origin + "' has version " + std::to_string(version) +
                          ", expected 1 to " + std::to_string(kProgramVersion) +
                          (version > kProgramVersion ? " (a newer Anvil wrote it)" : ""));
    parse_program_body(j, origin, "", field, p);
    if (params_file) {
      *params_file = ParamsFile();
      if (j.contains("params_file")) {
        field = "params_file";
        const json& f = j.at("params_file");
        params_file->name = f.at("name").get<std::string>();
        params_file->bytes = f.at("bytes").get<uint64_t>();
        params_file->checksum = f.at("checksum").get<uint64_t>();
      }
    }
  } catch (const nlohmann::json::exception& e) {
    throw ArtifactError("the program in '" + origin + "' is malformed at " + field + ": " +
                        e.what());
  }
  return p;
}

// A CPU program's arenas: each run takes a free one (or a new one) and gives it back, so runs
// after the first touch no new memory and find their activations at the same addresses.
struct ArenaPool {
  explicit ArenaPool(size_t bytes) : bytes(bytes) {}
  ArenaPool(const ArenaPool&) = delete;
  ArenaPool& operator=(const ArenaPool&) = delete;
  ~ArenaPool() {
    for (void* a : free) host_free(a, bytes);
  }
  void* take() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (!free.empty()) {
        void* a = free.back();
        free.pop_back();
        return a;
      }
    }
    void* a = host_alloc(bytes);
    if (a == nullptr)
      throw std::runtime_error("out of memory allocating the arena of " + std::to_string(bytes) +
                               " bytes");
    return a;
  }
  void give_back(void* a) {
    std::lock_guard<std::mutex> lock(mutex);
    free.push_back(a);
  }

  const size_t bytes;
  std::mutex mutex;
  std::vector<void*> free;
};

void attach_host(GraphProgram& p) {
  if (p.device) return;
  // The parameters in one block, each at a multiple of ANVIL_ALIGNMENT.
  size_t total = 0;
  for (const NDArray& a : p.params)
    if (a.defined())
      total += (a.nbytes() + ANVIL_ALIGNMENT - 1) / ANVIL_ALIGNMENT * ANVIL_ALIGNMENT;
  if (total > 0) {
    void* block = host_alloc(total);
    if (block == nullptr)
      throw std::runtime_error("out of memory allocating " + std::to_string(total) +
                               " bytes for the parameters");
    std::shared_ptr<void> owner(block, [total](void* b) { host_free(b, total); });
    size_t offset = 0;
    for (NDArray& a : p.params) {
      if (!a.defined()) continue;
      char* data = static_cast<char*>(block) + offset;
      if (a.nbytes() > 0) std::memcpy(data, a.data(), a.nbytes());
      a = NDArray::view(owner, data, a.shape(), a.dtype());
      offset += (a.nbytes() + ANVIL_ALIGNMENT - 1) / ANVIL_ALIGNMENT * ANVIL_ALIGNMENT;
    }
  }
  if (p.arena_bytes > 0) p.arenas = std::make_shared<ArenaPool>(static_cast<size_t>(p.arena_bytes));
  for (GraphProgram& sub : p.subprograms) attach_host(sub);
}

namespace {

// A body's inputs as its subprogram declares them (a program read from a file is trusted only
// this far: execute indexes its inputs by slot).
void check_body_inputs(const GraphProgram& sub, const std::vector<NDArray>& in) {
  if (in.size() != sub.inputs.size())
    throw std::runtime_error("the body takes " + std::to_string(sub.inputs.size()) +
                             " inputs, the step passes " + std::to_string(in.size()));
  for (size_t k = 0; k < in.size(); ++k) {
    const GraphProgram::Slot& slot = sub.slots[sub.inputs[k]];
    if (in[k].shape() != slot.shape || to_string(in[k].dtype()) != to_string(slot.dtype))
      throw std::runtime_error("the body's input " + std::to_string(k) + " '" + slot.name +
                               "' is " + to_string(slot.dtype) + shape_str(slot.shape) +
                               ", the step passes " + to_string(in[k].dtype()) +
                               shape_str(in[k].shape()));
  }
}

}  // namespace

namespace {

// A CPU program's run: the outputs in `given` when it is not null (execute_into), else in fresh
// arrays.
std::vector<NDArray> execute_on_host(const GraphProgram& p, const std::vector<NDArray>& inputs,
                                     std::vector<double>* call_seconds,
                                     const std::vector<NDArray>* given) {
  using clock = std::chrono::steady_clock;
  size_t n = p.slots.size();
  std::vector<DLTensor> views(n);
  std::vector<const DLTensor*> where(n, nullptr);
  std::vector<NDArray> owned(n);
  // The arena: the program's own (kept across runs), else one for this run.
  NDArray arena;
  struct Lease {
    ArenaPool* pool = nullptr;
    void* data = nullptr;
    ~Lease() {
      if (pool && data) pool->give_back(data);
    }
  } lease;
  void* arena_data = nullptr;
  if (p.arena_bytes > 0 && p.arenas) {
    lease.pool = p.arenas.get();
    lease.data = arena_data = p.arenas->take();
  } else if (p.arena_bytes > 0) {
    arena = NDArray::empty({p.arena_bytes}, DLDataType{kDLUInt, 8, 1});
    arena_data = arena.data();
  }
  for (size_t s = 0; s < n; ++s) {
    const GraphProgram::Slot& slot = p.slots[s];
    switch (slot.storage) {
      case GraphProgram::Storage::kInput:
        where[s] = inputs[slot.offset].get();
        break;
      case GraphProgram::Storage::kParam:
        where[s] = p.params[slot.offset].get();
        break;
      case GraphProgram::Storage::kArena:
        views[s] = slot_view(slot, static_cast<uint8_t*>(arena_data) + slot.offset);
        where[s] = &views[s];
        break;
      case GraphProgram::Storage::kOwned:
        break;
    }
  }
  // Slot a as an array (a view of the arena's bytes for arena slots), for a control-flow step.
  auto array_of = [&](int32_t a) -> NDArray {
    const GraphProgram::Slot& slot = p.slots[a];
    switch (slot.storage) {
      case GraphProgram::Storage::kInput:
        return inputs[slot.offset];
      case GraphProgram::Storage::kParam:
        return p.params[slot.offset];
      case GraphProgram::Storage::kArena:
        // The arena outlives the step: a view that owns nothing.
        return NDArray::view(std::shared_ptr<void>(where[a]->data, [](void*) {}), where[a]->data,
                             slot.shape, slot.dtype);
      case GraphProgram::Storage::kOwned:
        break;
    }
    return owned[a];
  };
  // The caller's output arrays take the place of the owned buffers the program would allocate.
  std::vector<bool> in_place(n, false);
  if (given) {
    for (size_t i = 0; i < p.outputs.size(); ++i) {
      int32_t o = p.outputs[i];
      if (p.slots[o].storage == GraphProgram::Storage::kOwned &&
          std::count(p.outputs.begin(), p.outputs.end(), o) == 1) {
        owned[o] = (*given)[i];
        where[o] = owned[o].get();
        in_place[o] = true;
      }
    }
  }
  std::vector<const DLTensor*> args;
  for (size_t i = 0; i < p.calls.size(); ++i) {
    const GraphProgram::Call& c = p.calls[i];
    args.clear();
    for (int32_t a : c.args) {
      if (!where[a]) {
        owned[a] = NDArray::empty(p.slots[a].shape, p.slots[a].dtype);
        where[a] = owned[a].get();
      }
      args.push_back(where[a]);
    }
    clock::time_point start;
    if (call_seconds) start = clock::now();
    if (c.is_control()) {
      std::vector<NDArray> ins;
      std::vector<OutputInfo> outs;
      for (size_t k = 0; k < c.args.size(); ++k) {
        const GraphProgram::Slot& slot = p.slots[c.args[k]];
        if (k < static_cast<size_t>(c.num_inputs))
          ins.push_back(array_of(c.args[k]));
        else
          outs.push_back({slot.shape, slot.dtype});
      }
      std::vector<NDArray> results;
      try {
        results = run_control(c.control, ins, outs, [&](size_t b, const std::vector<NDArray>& in) {
          const GraphProgram& sub = p.subprograms.at(static_cast<size_t>(c.bodies.at(b)));
          check_body_inputs(sub, in);
          return execute(sub, in);
        });
      } catch (const std::runtime_error& e) {
        throw std::runtime_error(c.kernel + " (" + c.nodes + "): " + e.what());
      }
      for (size_t k = 0; k < results.size(); ++k) {
        const DLTensor* out = args[static_cast<size_t>(c.num_inputs) + k];
        if (results[k].nbytes() > 0) std::memcpy(out->data, results[k].data(), results[k].nbytes());
      }
    } else if (c.fn(args.data(), static_cast<int32_t>(args.size()), nullptr) != 0) {
      throw std::runtime_error("kernel " + c.kernel + " (" + c.nodes +
                               ") failed: " + AnvilGetLastError());
    }
    if (call_seconds)
      (*call_seconds)[i] = std::chrono::duration<double>(clock::now() - start).count();
    for (int32_t r : c.release) {
      owned[r] = NDArray();
      where[r] = nullptr;
    }
  }
  std::vector<NDArray> results;
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    int32_t o = p.outputs[i];
    const GraphProgram::Slot& slot = p.slots[o];
    if (in_place[o] ||
        (!given && slot.storage == GraphProgram::Storage::kOwned && owned[o].defined() &&
         std::count(p.outputs.begin(), p.outputs.end(), o) == 1)) {
      results.push_back(owned[o]);
      continue;
    }
    if (!where[o]) throw std::runtime_error("output '" + slot.name + "' was never computed");
    NDArray c = given ? (*given)[i] : NDArray::empty(slot.shape, slot.dtype);
    if (c.nbytes() > 0) std::memcpy(c.data(), where[o]->data, c.nbytes());
    results.push_back(c);
  }
  return results;
}

}  // namespace

std::vector<NDArray> execute(const GraphProgram& p, const std::vector<NDArray>& inputs,
                             std::vector<double>* call_seconds, Stream stream) {
  if (!p.device && stream != nullptr)
    throw std::runtime_error("execute: a stream was given, but the program runs on the CPU");
  if (call_seconds) call_seconds->assign(p.calls.size(), 0.0);
  if (p.device) return execute_on_device(p, inputs, call_seconds, stream);
  return execute_on_host(p, inputs, call_seconds, nullptr);
}

void execute_into(const GraphProgram& p, const std::vector<NDArray>& inputs,
                  const std::vector<NDArray>& outputs) {
  if (p.device)
    throw std::runtime_error("execute_into: the program runs on a device (use its device arrays)");
  if (outputs.size() != p.outputs.size())
    throw std::runtime_error("execute_into: " + std::to_string(p.outputs.size()) +
                             " outputs expected, got " + std::to_string(outputs.size()));
  execute_on_host(p, inputs, nullptr, &outputs);
}

}  // namespace anvil::runtime
