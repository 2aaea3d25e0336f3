// anvil._anvil: the native half of the Python package. It compiles through the driver
// (anvil/driver/driver.h, as the command line does) and runs through the runtime's Model. The
// Python layer (python/anvil/) gives it its public shape: names, defaults, docstrings.
//
// Errors become the package's exception classes (anvil/errors.py) by their driver kind; a model
// runs with the GIL released, so that several Python threads run one module at once.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "anvil/autotune/measure.h"
#include "anvil/autotune/session.h"
#include "anvil/driver/driver.h"
#include "anvil/runtime/artifact.h"
#include "anvil/runtime/c_runtime_api.h"
#include "anvil/runtime/graph_executor.h"
#include "anvil/runtime/host_cpu.h"
#include "anvil/runtime/model.h"
#include "python/src/arrays.h"

namespace anvil::python {
namespace {

namespace fs = std::filesystem;
using driver::ErrorKind;

// The class of anvil/errors.py that `name` names.
py::object error_class(const char* name) {
  return py::module_::import("anvil.errors").attr(name);
}

void raise(const char* cls, const char* message) {
  PyErr_SetString(error_class(cls).ptr(), message);
}

const char* class_of(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kBadInput:
      return "BadInputError";
    case ErrorKind::kCompile:
      return "CompileError";
    case ErrorKind::kRuntime:
      return "RunError";
  }
  return "Error";
}

// A compiled model: compiled here (it can be saved) or loaded from an artifact.
class Module {
 public:
  explicit Module(std::shared_ptr<driver::Compiled> compiled)
      : compiled_(std::move(compiled)), model_(compiled_->graph.model()) {}
  Module(runtime::Model model, std::string path)
      : model_(std::move(model)), path_(std::move(path)) {}

  const runtime::Model& model() const { return model_; }

  py::list tensors(const std::vector<runtime::TensorInfo>& infos) const {
    py::list list;
    for (const runtime::TensorInfo& t : infos)
      list.append(
          py::make_tuple(t.name, py::tuple(py::cast(t.shape)), runtime::to_string(t.dtype)));
    return list;
  }

  // The caller's inputs (in the model's order) as the runtime takes them; each copy made is
  // reported to `copies` ("input 'x': why") when given.
  std::vector<runtime::NDArray> borrow_inputs(const py::sequence& inputs,
                                              py::list* copies = nullptr) const {
    const std::vector<runtime::TensorInfo>& want = model_.inputs();
    if (py::len(inputs) != want.size())
      throw runtime::InputError("the model takes " + std::to_string(want.size()) +
                                " input(s), got " + std::to_string(py::len(inputs)));
    std::vector<runtime::NDArray> arrays;
    for (size_t i = 0; i < want.size(); ++i) {
      Borrowed b = borrow(inputs[i], want[i], "input", false);
      if (copies && !b.copy_reason.empty())
        copies->append("input '" + want[i].name + "': " + b.copy_reason);
      arrays.push_back(b.array);
    }
    return arrays;
  }

  // Runs on `inputs` (in the model's order); into `out` when given. Copies made on the way in or
  // out are reported to `copies` (one "input 'x': why" each).
  py::list run(const py::sequence& inputs, const std::optional<py::sequence>& out,
               py::list copies) const {
    std::vector<runtime::NDArray> arrays = borrow_inputs(inputs, &copies);
    py::list results;
    if (!out) {
      std::vector<runtime::NDArray> outputs;
      {
        py::gil_scoped_release release;
        outputs = run_guarded([&] { return model_.run(arrays); });
      }
      for (const runtime::NDArray& o : outputs) results.append(to_numpy(o));
      return results;
    }
    const std::vector<runtime::TensorInfo>& outs = model_.outputs();
    if (py::len(*out) != outs.size())
      throw runtime::InputError("the model has " + std::to_string(outs.size()) +
                                " output(s), out= gives " + std::to_string(py::len(*out)));
    std::vector<Borrowed> given;
    std::vector<runtime::NDArray> targets;
    for (size_t i = 0; i < outs.size(); ++i) {
      given.push_back(borrow((*out)[i], outs[i], "output", true));
      targets.push_back(given.back().array);
      if (!given.back().copy_reason.empty())
        copies.append("output '" + outs[i].name + "': " + given.back().copy_reason);
    }
    {
      py::gil_scoped_release release;
      run_guarded([&] {
        model_.run(arrays, targets);
        return 0;
      });
      for (const Borrowed& b : given)
        if (b.caller && b.array.nbytes() > 0)
          std::memcpy(b.caller, b.array.data(), b.array.nbytes());
    }
    for (size_t i = 0; i < outs.size(); ++i) results.append((*out)[i]);
    return results;
  }

  // The address each input would be read at: the caller's own memory unless it is copied (the
  // tests' proof that arrays pass in place).
  py::list input_addresses(const py::sequence& inputs) const {
    py::list list;
    for (const runtime::NDArray& a : borrow_inputs(inputs))
      list.append(reinterpret_cast<uintptr_t>(a.data()));
    return list;
  }

  // `runs` calls of Model::run made from C++ on `inputs`, each timed (seconds): what a call costs
  // without Python, the baseline of bench/python/call_overhead.py.
  std::vector<double> time_native_runs(const py::sequence& inputs, int runs) const {
    std::vector<runtime::NDArray> arrays = borrow_inputs(inputs);
    std::vector<double> seconds;
    py::gil_scoped_release release;
    for (int r = 0; r < runs; ++r) {
      auto start = std::chrono::steady_clock::now();
      run_guarded(
          [&] { return model_.run(arrays); });  // outputs freed inside the time, as in Python
      seconds.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    return seconds;
  }

  py::list profile(const py::sequence& inputs, int repeat) const {
    std::vector<runtime::NDArray> arrays = borrow_inputs(inputs);
    std::vector<runtime::KernelProfile> kernels;
    {
      py::gil_scoped_release release;
      kernels = run_guarded([&] { return model_.profile(arrays, repeat); });
    }
    py::list list;
    for (const runtime::KernelProfile& k : kernels) {
      py::dict d;
      d["kernel"] = k.kernel;
      d["nodes"] = k.nodes;
      d["median_ms"] = k.median_seconds * 1e3;
      d["gflops"] = k.flops / 1e9;
      list.append(d);
    }
    return list;
  }

  void save(const std::string& path) const {
    if (compiled_) {
      py::gil_scoped_release release;
      driver::with_kind(ErrorKind::kCompile, "saving to " + path, [&] {
        compiled_->graph.save(path);
        return 0;
      });
      return;
    }
    // Loaded from an artifact: the same file again (with its parameter file, if it has one).
    driver::with_kind(ErrorKind::kCompile, "saving to " + path, [&] {
      runtime::ArtifactContents a = runtime::read_artifact(path_);
      auto copy = [](const fs::path& from, const fs::path& to) {
        std::error_code ec;
        if (!fs::equivalent(from, to, ec))
          fs::copy_file(from, to, fs::copy_options::overwrite_existing);
      };
      copy(path_, path);
      if (!a.params_file.name.empty())
        copy(fs::path(path_).parent_path() / a.params_file.name,
             fs::path(path).parent_path() / a.params_file.name);
      return 0;
    });
  }

  std::string summary() const {
    if (compiled_) return compiled_->graph.summary();
    return "model loaded from " + path_ + " (" + std::to_string(model_.num_kernels()) +
           " kernels; target '" + model_.target() + "')";
  }

  std::vector<std::string> warnings() const {
    return compiled_ ? compiled_->warnings : std::vector<std::string>{};
  }

 private:
  // A kernel that fails while running is a runtime error; a mismatched input stays an InputError.
  template <typename F>
  static auto run_guarded(F&& fn) -> decltype(fn()) {
    try {
      return fn();
    } catch (const runtime::InputError&) {
      throw;
    } catch (const std::invalid_argument&) {
      throw;
    } catch (const std::exception& e) {
      throw driver::Error(ErrorKind::kRuntime, e.what());
    }
  }

  std::shared_ptr<driver::Compiled> compiled_;
  runtime::Model model_;
  std::string path_;
};

std::shared_ptr<Module> compile(const py::object& model, const std::string& target,
                                const std::map<std::string, std::vector<int64_t>>& input_shapes,
                                const std::optional<std::string>& tuning_records,
                                bool records_any_cpu, bool fuse, bool layout, bool strict) {
  driver::CompileOptions options;
  options.fuse = fuse;
  options.layout = layout;
  options.strict = strict;
  driver::ModelInputs inputs;
  inputs.shapes = input_shapes;
  bool is_bytes = py::isinstance<py::bytes>(model);
  std::string text = is_bytes ? std::string(py::bytes(model)) : py::str(model).cast<std::string>();
  py::gil_scoped_release release;
  if (tuning_records)
    options.tuning_records = driver::read_tuning_records(*tuning_records, records_any_cpu);
  auto compiled = std::make_shared<driver::Compiled>(
      driver::compile_model(text, target, options, inputs, is_bytes));
  return std::make_shared<Module>(std::move(compiled));
}

std::shared_ptr<Module> load(const std::string& path) {
  py::gil_scoped_release release;
  runtime::Model m =
      driver::with_kind(ErrorKind::kBadInput, "", [&] { return runtime::Model::load(path); });
  return std::make_shared<Module>(std::move(m), path);
}

double gflops(double flops, double seconds) {
  return std::isfinite(seconds) && seconds > 0 ? flops / seconds / 1e9 : 0.0;
}

py::dict task_dict(const autotune::TaskStatus& s) {
  py::dict d;
  d["index"] = s.index;
  d["count"] = s.count;
  d["op"] = s.task->task.op;
  d["task"] = s.task->task.str();
  d["kernels"] = s.task->kernels.size();
  d["configurations"] = s.size;
  d["measured"] = s.measured;
  d["share"] = s.share;
  d["measured_now"] = s.measured_now;
  d["failed"] = s.failed;
  d["best_gflops"] = gflops(s.flops, s.best_s);
  d["default_gflops"] = gflops(s.flops, s.default_s);
  d["done"] = s.done;
  d["stopped_improving"] = s.stopped_improving;
  return d;
}

// An anvil tune session (autotune/session.h) over `model`: the records are appended to
// `records` as trials come; `on_batch(task dict, seconds left)` and `on_note(line)` are called
// with the GIL held. Returns the trials measured now, the seconds taken and every task's status.
py::dict tune(const py::object& model, const std::string& target_text,
              const std::map<std::string, std::vector<int64_t>>& input_shapes,
              const std::string& records, int trials, double time_budget_min,
              const std::string& tuner, bool records_any_cpu,
              const std::vector<std::string>& measure_worker, const py::object& on_batch,
              const py::object& on_note) {
  const Target target = driver::with_kind(ErrorKind::kBadInput, "target '" + target_text + "'",
                                          [&] { return Target::parse(target_text); });
  if (target.kind != Target::Kind::kLLVM)
    throw driver::Error(ErrorKind::kBadInput,
                        "target '" + target_text +
                            "': tune measures where the kernels run, on this CPU (an llvm target)");
  driver::ModelInputs inputs;
  inputs.shapes = input_shapes;
  bool is_bytes = py::isinstance<py::bytes>(model);
  std::string text = is_bytes ? std::string(py::bytes(model)) : py::str(model).cast<std::string>();
  autotune::TuningOptions options;
  options.trials = trials;
  options.time_budget_min = time_budget_min;
  options.tuner = tuner;
  options.records = records;
  options.measure_worker = measure_worker;
  py::gil_scoped_release release;
  graph::Graph g =
      is_bytes ? driver::load_model_bytes(text, inputs) : driver::load_model(text, inputs);
  autotune::RecordFile file;
  std::error_code ec;
  if (fs::exists(records, ec)) file = driver::read_tuning_records(records, records_any_cpu);
  autotune::TuningSession session = driver::with_kind(
      ErrorKind::kCompile, "extracting the tuning tasks",
      [&] { return autotune::TuningSession(g, target, options, std::move(file)); });
  session.on_batch = [&](const autotune::TuningProgress& p) {
    py::gil_scoped_acquire gil;
    if (!on_batch.is_none()) on_batch(task_dict(p.task), p.left_s);
  };
  session.on_note = [&](const std::string& line) {
    py::gil_scoped_acquire gil;
    if (!on_note.is_none()) on_note(line);
  };
  const auto start = std::chrono::steady_clock::now();
  // A Python error out of a callback (KeyboardInterrupt) propagates as itself.
  int64_t measured = 0;
  try {
    measured = session.run();
  } catch (py::error_already_set&) {
    throw;
  } catch (const driver::Error&) {
    throw;
  } catch (const std::exception& e) {
    throw driver::Error(ErrorKind::kRuntime, std::string("tuning: ") + e.what());
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  py::gil_scoped_acquire gil;
  py::dict summary;
  summary["trials"] = measured;
  summary["seconds"] = seconds;
  summary["records"] = records;
  py::list tasks;
  for (const autotune::TaskStatus& s : session.status()) tasks.append(task_dict(s));
  summary["tasks"] = tasks;
  return summary;
}

}  // namespace
}  // namespace anvil::python

PYBIND11_MODULE(_anvil, m) {
  using namespace anvil::python;
  m.doc() = "The native half of the anvil package (compiler and runtime); use `import anvil`.";
  m.attr("__version__") = ANVIL_VERSION;

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const anvil::driver::Error& e) {
      raise(class_of(e.kind()), e.what());
    } catch (const anvil::runtime::InputError& e) {
      raise("BadInputError", e.what());
    } catch (const anvil::runtime::ArtifactError& e) {
      raise("BadInputError", e.what());
    } catch (const std::invalid_argument& e) {
      raise("BadInputError", e.what());
    }
  });

  py::class_<Module, std::shared_ptr<Module>>(m, "Module")
      .def_property_readonly("inputs",
                             [](const Module& mod) { return mod.tensors(mod.model().inputs()); })
      .def_property_readonly("outputs",
                             [](const Module& mod) { return mod.tensors(mod.model().outputs()); })
      .def_property_readonly("target", [](const Module& mod) { return mod.model().target(); })
      .def_property_readonly("num_kernels",
                             [](const Module& mod) { return mod.model().num_kernels(); })
      .def_property_readonly("warnings", &Module::warnings)
      .def("run", &Module::run, py::arg("inputs"), py::arg("out") = py::none(), py::arg("copies"))
      .def("profile", &Module::profile, py::arg("inputs"), py::arg("repeat"))
      .def("input_addresses", &Module::input_addresses, py::arg("inputs"))
      .def("time_native_runs", &Module::time_native_runs, py::arg("inputs"), py::arg("runs"))
      .def("save", &Module::save, py::arg("path"))
      .def("summary", &Module::summary);

  m.def("compile", &compile, py::arg("model"), py::arg("target"), py::arg("input_shapes"),
        py::arg("tuning_records"), py::arg("records_any_cpu"), py::arg("fuse"), py::arg("layout"),
        py::arg("strict"));
  m.def("load", &load, py::arg("path"));
  m.def("tune", &tune, py::arg("model"), py::arg("target"), py::arg("input_shapes"),
        py::arg("records"), py::arg("trials"), py::arg("time_budget_min"), py::arg("tuner"),
        py::arg("records_any_cpu"), py::arg("measure_worker"), py::arg("on_batch"),
        py::arg("on_note"));
  // The measure worker of tune's sessions: `python3 -c "from anvil import _anvil;
  // _anvil.measure_worker()"` reads requests on stdin and answers on stdout (autotune/measure.h).
  m.def("measure_worker", [] {
    py::gil_scoped_release release;
    anvil::autotune::serve_measurements(std::cin, std::cout);
  });
  m.def(
      "set_num_threads", [](int n) { AnvilSetNumThreads(n); }, py::arg("n"));
  m.def("get_num_threads", [] { return AnvilGetNumThreads(); });
  m.def("host_cpu", [] { return anvil::runtime::host_cpu().id(); });
  m.attr("ARG_ALIGNMENT") = ANVIL_ARG_ALIGNMENT;
}
