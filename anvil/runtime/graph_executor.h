// The graph executor: runs a compiled model's program, the list of kernel calls over a statically
// planned arena. The same executor runs a model compiled in process (graph::CompiledGraph, kernels
// JIT-compiled) and one loaded from its artifact (Model::load, kernels from the shared library).
//
// A program names each tensor it touches (a slot): where it lives (a graph input, a parameter,
// the arena at an offset, or an array of its own allocated on first use), its shape and dtype.
// Each call is a kernel with its argument slots (inputs, then outputs) and the owned slots to
// release after it, or a control-flow step (If, Loop, Scan: runtime/control_flow.h) whose bodies
// are subprograms, programs of their own run on the step's inputs. Every run allocates its own
// arena, so runs may proceed concurrently.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "anvil/runtime/c_runtime_api.h"
#include "anvil/runtime/control_flow.h"
#include "anvil/runtime/device_api.h"
#include "anvil/runtime/model.h"
#include "anvil/runtime/module.h"
#include "anvil/runtime/ndarray.h"

namespace anvil::runtime {

// The workspace pools of a program's runs, one per stream (graph_executor.cc).
struct StreamPools;
struct ArenaPool;

struct GraphProgram {
  enum class Storage { kInput, kParam, kArena, kOwned };
  struct Slot {
    std::string name;
    std::vector<int64_t> shape;
    DLDataType dtype{};
    Storage storage = Storage::kOwned;
    int64_t offset = 0;  // kArena: byte offset; kInput / kParam: index into inputs / params
  };
  struct Call {
    std::string kernel;            // the symbol
    std::string nodes;             // the graph nodes it computes, for error messages
    std::vector<int32_t> args;     // slots
    std::vector<int32_t> release;  // kOwned slots no later call reads
    double flops = 0;              // floating-point operations per call (0: unknown)
    AnvilKernel fn = nullptr;
    // A control-flow step instead of a kernel when control.op is set: `kernel` names it ("if
    // 'cond_1'"), the first num_inputs args are its inputs, the rest its outputs, and bodies
    // index subprograms (then, else for an if).
    ControlFlow control;
    int32_t num_inputs = 0;
    std::vector<int32_t> bodies;
    bool is_control() const { return !control.op.empty(); }
  };

  std::string target;
  // CPU programs: the CPU the code was compiled for (LLVM's name: "znver5", "x86-64-v3") and the
  // instruction-set extensions it may use (LLVM's names, those the runtime can check: host_cpu.h).
  // Model::load refuses an artifact whose extensions this CPU lacks. Empty: not checked.
  std::string cpu;
  std::vector<std::string> cpu_features;
  std::vector<Slot> slots;
  std::vector<int32_t> inputs, outputs;  // slots
  // The outputs' names in the model's interface, one per output (the graph's output names: a
  // slot may be several outputs, or an input passed through). Empty: the slots' names (programs
  // written before the field).
  std::vector<std::string> output_names;
  std::vector<Call> calls;
  // The bodies of the control-flow steps: each a whole program (slots, calls, parameters, arena)
  // whose inputs are the values its step passes it. Its kernels are in the same library.
  std::vector<GraphProgram> subprograms;
  int64_t arena_bytes = 0;
  std::vector<NDArray> params;  // by Slot::offset of kParam slots
  std::vector<std::string> param_names;
  std::shared_ptr<void> keep_alive;  // what owns the kernels' code
  // GPU programs (attach_device): the device, the kernels' context (their module's
  // DeviceContext) and the parameters in device memory, uploaded once.
  Device* device = nullptr;
  void* context = nullptr;
  std::shared_ptr<const std::vector<DeviceBuffer>> device_params;
  // Device memory of the runs (arena, inputs, outputs, the kernels' temporaries), kept per
  // stream across runs (see WorkspacePool).
  std::shared_ptr<StreamPools> pools;
  // CPU programs (attach_host): arenas kept across runs, one per run in flight.
  std::shared_ptr<ArenaPool> arenas;

  // Checks every index and size (slots in range, arena slots inside the arena, parameters of the
  // slot's shape and dtype, every call's kernel present); throws ArtifactError naming `origin`.
  void validate(const std::string& origin) const;
  // The name of output i.
  const std::string& output_name(size_t i) const {
    return output_names.empty() ? slots[outputs[i]].name : output_names[i];
  }
};

// Points every kernel call of `p` and of its subprograms at `get(symbol)` (the control-flow steps
// have no code).
void bind_kernels(GraphProgram& p, const std::function<AnvilKernel(const std::string&)>& get);

// Calls `f` on `p`, then on each of its subprograms and theirs, depth first.
void for_each_program(GraphProgram& p, const std::function<void(GraphProgram&)>& f);
void for_each_program(const GraphProgram& p, const std::function<void(const GraphProgram&)>& f);

// The program as JSON (without kernel pointers, parameters or keep_alive) and back. from_json
// fills everything but fn, params and keep_alive, and throws ArtifactError naming `origin` and
// the field for JSON that does not parse or does not have the expected form. `params_file`
// (optional) records a separate parameter file: its name beside the artifact, size and checksum.
struct ParamsFile {
  std::string name;  // empty: parameters embedded in the artifact
  uint64_t bytes = 0, checksum = 0;
};
std::string program_to_json(const GraphProgram& p, const ParamsFile& params_file);
GraphProgram program_from_json(std::string_view json, const std::string& origin,
                               ParamsFile* params_file);

// What an artifact holds, read without loading its code, so that one built for another CPU or for
// a GPU this machine lacks can still be described: its program (no kernels attached, no
// parameters) and the sizes of its parts. Throws ArtifactError as Model::load does for a file
// that is not a valid artifact.
struct ArtifactContents {
  GraphProgram program;
  ParamsFile params_file;  // a separate parameter file, or none (name empty)
  uint64_t file_bytes = 0, library_bytes = 0, program_bytes = 0, params_bytes = 0;
};
ArtifactContents read_artifact(const std::string& path);

// For a program whose kernels run on the CPU: moves the parameters into one block of host memory
// (runtime/host_memory.h: aligned to 2 MiB, huge pages where the kernel grants them, in the
// program's order) and keeps the runs' arenas there too, reused from run to run, so that where
// a model's data sits, and so its time, is the same in every process. Model does this for every
// CPU program (and each subprogram). Throws std::runtime_error when out of memory.
void attach_host(GraphProgram& p);

// For a program whose kernels run on a GPU (module.device_type() is not kDLCPU): sets p.device,
// p.context and p.pools and uploads the parameters. Throws std::runtime_error naming the device's
// error. The second form takes the device and the kernels' context (a DeviceContext that
// outlives the program) directly.
void attach_device(GraphProgram& p, const Module& module);
void attach_device(GraphProgram& p, Device& device, void* context);

// Runs `p` on `inputs` (one per p.inputs, already checked against the slots); returns the outputs.
// A GPU program copies its inputs to the device, keeps its intermediates there (the arena is one
// device allocation) and copies its outputs back, all on `stream` (a CUstream or cl_command_queue
// of the program's device; nullptr: the device's own queue): its kernels are launched
// asynchronously there, and execute returns once the outputs have been copied back. Device
// memory is reused from earlier runs on the same stream.
// Throws std::runtime_error naming the kernel and its nodes when a kernel fails. With
// `call_seconds`, each call's wall time is written to it (one entry per p.calls); without it,
// nothing is timed.
std::vector<NDArray> execute(const GraphProgram& p, const std::vector<NDArray>& inputs,
                             std::vector<double>* call_seconds = nullptr, Stream stream = nullptr);
// A CPU program's run into the caller's `outputs` (one per p.outputs, each already checked against
// its slot and compact): an output the program computes into a buffer of its own is computed
// there in place; one it keeps in the arena, passes through from an input or a parameter, or
// returns twice is copied in at the end. `outputs` must not overlap the inputs.
void execute_into(const GraphProgram& p, const std::vector<NDArray>& inputs,
                  const std::vector<NDArray>& outputs);
// Device memory a GPU program's runs hold for reuse (all streams), in bytes; 0 on the CPU.
size_t device_bytes_held(const GraphProgram& p);

// Runs a GPU program on device arrays of its device: `inputs` one per p.inputs, `outputs` one per
// p.outputs, each already checked against its slot (shape, dtype, device). Nothing passes
// through the host: the kernels read the inputs where they are and the outputs are written in
// place. Returns once they are written. Throws as execute does.
void execute_on_device_arrays(const GraphProgram& p, const std::vector<const DLTensor*>& inputs,
                              const std::vector<const DLTensor*>& outputs, Stream stream = nullptr);

// How a GPU program's runs went on a device with graphs (model.h's DeviceRunCounts).
DeviceRunCounts device_run_counts(const GraphProgram& p);

// Whether GPU programs replay recorded graphs where the device has them: on unless the
// environment sets ANVIL_DEVICE_GRAPHS=0; set_device_graphs changes it for the process (a bench
// compares both).
bool device_graphs_enabled();
void set_device_graphs(bool enabled);

}  // namespace anvil::runtime
