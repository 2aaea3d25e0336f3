// The `anvil` command line: compile a model (an ONNX file or a built-in one) into model.so, run a
// compiled model on .npy inputs (and profile its kernels), inspect what the compiler makes of a
// model at each stage, time it against ONNX Runtime and PyTorch (bench), tune its kernels' schedule
// configurations (tune), list and export the built-in models. Every command's --help ends with an
// example.
//
// Exit codes, and which failure maps to which:
//   0  success (and --help).
//   1  usage error: anything CLI11 rejects (unknown option or command, missing argument, a
//      --repeat or --threads below 1), a malformed option value (--input-shape not NAME=DIMS,
//      --input not NAME=FILE, a --target that anvil::Target::parse refuses, a --print-after that
//      names no pass), an unknown zoo model name, an output path whose directory does not exist;
//      for `inspect`, a --stage it does not know, a --kernel the model does not have (the message
//      lists the kernels), --kernel with a whole-model stage, --stage llvm or asm for a target
//      other than llvm, no --stage for a model, --stage or --kernel for an artifact.
//   2  bad input or model: a missing, malformed or truncated ONNX file, a --tuning-records file
//      that is missing, unreadable or has a line (but a cut-off last one) that is not a record,
//      an op the importer does not map or a symbolic dimension left unbound (every anvil::Error
//      out of import_onnx), an --input-shape that a zoo model's static shape contradicts; for
//      `run`, a model.so that is not a valid artifact (runtime::ArtifactError, or anything else
//      Model::load throws), a bad .npy (load_npy), an input that the model does not have, lacks, or
//      whose shape or dtype differs (checked here, and runtime::InputError out of Model::run). For
//      `bench`: as for compile, and a --summary-json or --chart whose directory does not exist, an
//      unknown --baselines name, a MODEL that is neither a zoo name nor a file are usage errors; a
//      baseline that fails is not an error but a row with a note; a --summary-json or --chart that
//      cannot be written (gnuplot missing or failing) is a runtime error, 4.
//   3  compile error: anvil::Error (or anything else) out of CompiledGraph::build or save (and the
//      inspected stages; with --strict, a kernel whose schedule fails; without it, a warning line
//      "anvil: warning: kernel ..." per such kernel), and out of export_onnx for `zoo export`: the
//      model was valid, Anvil could not compile it.
//   4  runtime error: any other exception out of Model::run (a kernel returned an error), an
//      output .npy that cannot be written, or a GPU artifact whose device cannot be opened on
//      this machine (no driver: runtime::DeviceUnavailable out of Model::load).
// The phase an error happens in decides its code (tools/anvil/commands.cc wraps each phase with
// with_exit_code), not the exception's type alone: an anvil::Error is a bad model when the
// importer throws it and a compile error when the build does; a std::runtime_error is a bad model
// out of Model::load and a runtime error out of Model::run. An exception that no phase claims is
// reported as an internal error with code 3. Every message goes to stderr as "anvil: error: "
// followed by the file, node, tensor or option involved and what was expected.
#include <CLI/CLI.hpp>
#include <iostream>

#include "anvil/runtime/artifact.h"
#include "anvil/runtime/device_api.h"
#include "tools/anvil/args.h"
#include "tools/anvil/bench.h"
#include "tools/anvil/commands.h"
#include "tools/anvil/tune.h"

namespace {

using namespace anvil::cli;

int report(ExitCode code, const std::string& message) {
  std::cerr << "anvil: error: " << message << "\n";
  return code;
}

// CLI11 reports an unknown command as "A subcommand is required"; this names it instead.
// Returns an empty string when `arg` is an option or one of `parent`'s commands.
std::string unknown_command(CLI::App& parent, const std::string& arg) {
  if (arg.empty() || arg[0] == '-') return "";
  std::string names;
  for (CLI::App* sub : parent.get_subcommands([](CLI::App*) { return true; })) {
    if (sub->check_name(arg)) return "";
    if (sub->get_group().empty()) continue;  // hidden (measure-worker)
    names += (names.empty() ? "" : ", ") + sub->get_name();
  }
  return "unknown command '" + arg + "' (expected one of: " + names + ")";
}

constexpr const char* kStrictHelp =
    "A kernel whose schedule fails is a compile error (default: a warning, and the kernel takes "
    "the default loops, or on a GPU the default GPU schedule)";

// "anvil 0.1 (LLVM 15.0.6; artifacts: format 1, program version 1)".
std::string version_string() {
  return std::string("anvil ") + ANVIL_VERSION + " (LLVM " + ANVIL_LLVM_VERSION +
         "; artifact format " + std::to_string(anvil::runtime::kArtifactVersion) + ")";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"anvil: a deep-learning compiler (ONNX or built-in models to model.so)", "anvil"};
  app.require_subcommand(1);
  int device_number = 0;
  app.add_option("--device", device_number,
                 "The GPU that GPU targets run on (CUDA device number; OpenCL: the index among "
                 "the platform's GPUs), default 0; before the command: anvil --device 1 run ...")
      ->check(CLI::NonNegativeNumber);
  app.set_version_flag("--version", version_string(),
                       "Print Anvil's version, its LLVM and its artifact format, and exit");

  CompileOptions compile;
  CLI::App* c = app.add_subcommand("compile", "Compile a model into one artifact (model.so)");
  c->add_option("MODEL", compile.model, "An ONNX file, or zoo:NAME for a built-in model")
      ->required();
  c->add_option("--target", compile.target,
                "What to compile for: 'llvm' (this CPU), 'llvm -mcpu=znver3', 'c', "
                "'cuda -arch=sm_90' (NVIDIA GPUs, needs NVRTC), 'opencl'")
      ->capture_default_str()
      ->type_name("TARGET");
  c->add_option("--input-shape", compile.input_shapes,
                "Bind an input's shape, NAME=DIMS (data=1x3x224x224); repeatable")
      ->allow_extra_args(false)
      ->type_name("NAME=DIMS");
  c->add_option("--input-value", compile.input_values,
                "Bind an input's value at compile time, NAME=FILE.npy (the input leaves the "
                "artifact's inputs): for inputs that decide a shape, such as a Reshape's target "
                "shape; repeatable")
      ->allow_extra_args(false)
      ->type_name("NAME=FILE");
  c->add_flag("--no-fuse", compile.no_fuse, "One kernel per operator (the fusion ablation)");
  c->add_flag("--no-layout", compile.no_layout,
              "No layout alteration: NCHW convolutions, no packed weights (CPU); no Winograd, no "
              "GPU form of recurrent ops (GPU)");
  c->add_flag("--no-winograd", compile.no_winograd,
              "Every convolution direct on a CPU target (the Winograd ablation; overrides "
              "the algorithms in --tuning-records)");
  c->add_flag("--separate-params", compile.separate_params,
              "Write the parameters beside model.so as a .safetensors file");
  c->add_option("--print-after", compile.print_after,
                "Print the graph after a pass (or 'all'); repeatable")
      ->allow_extra_args(false)
      ->type_name("PASS")
      ->check(CLI::IsMember(printable_passes()));
  c->add_option("--tuning-records", compile.tuning_records,
                "Tuning records, one JSON record per line: each kernel gets its task's best "
                "recorded configuration (the others the default rule)")
      ->type_name("FILE");
  c->add_flag("--records-any-cpu", compile.records_any_cpu, kRecordsAnyCpuHelp);
  c->add_flag("-v,--verbose", compile.verbose, "Print the kernels and the memory plan");
  c->add_flag("--strict", compile.strict, kStrictHelp);
  c->add_option("-o,--output", compile.output, "The artifact to write (model.so)")
      ->required()
      ->type_name("FILE");
  c->footer(
      "Examples:\n"
      "  anvil compile zoo:resnet18 -o resnet18.so\n"
      "  anvil compile zoo:resnet18 --target cuda -o resnet18_cuda.so\n"
      "  anvil compile model.onnx --input-shape data=1x3x224x224 --target 'llvm -mcpu=znver3' "
      "-o model.so");

  RunOptions run;
  CLI::App* r = app.add_subcommand("run", "Run a compiled model on .npy inputs");
  r->add_option("MODEL", run.model, "The artifact (model.so)")->required();
  r->add_option("--input", run.inputs, "An input, NAME=FILE.npy; repeatable")
      ->allow_extra_args(false)
      ->type_name("NAME=FILE");
  r->add_option("--fill-mode", run.fill_mode,
                "Fill the inputs not given by --input: zeros, ones, or random (floats uniform in "
                "[-1, 1], integers in [0, 10), seed 0)")
      ->check(CLI::IsMember({"zeros", "ones", "random"}))
      ->type_name("MODE");
  r->add_option("--output-dir", run.output_dir, "Where <output name>.npy files go")
      ->capture_default_str()
      ->type_name("DIR");
  r->add_option("--repeat", run.repeat,
                "Time N runs after one warm-up; print the median (with --profile: per kernel); "
                "the outputs written are the last run's")
      ->type_name("N")
      ->check(CLI::Range(1, 1000000));
  r->add_option("--threads", run.threads, "Threads the kernels use")
      ->type_name("T")
      ->check(CLI::Range(1, 4096));
  r->add_flag("--profile", run.profile,
              "Time each kernel (median of --repeat runs, default 10): time, share, GFLOP/s and "
              "fraction of the measured peak, slowest first");
  r->add_option("--top", run.top, "Print each float output's K largest elements (index, value)")
      ->type_name("K")
      ->check(CLI::Range(1, 1000000));
  r->footer(
      "Examples:\n"
      "  anvil run resnet18.so --input data=image.npy --output-dir out --top 5\n"
      "  anvil run resnet18.so --fill-mode random --profile --repeat 20 --threads 2");

  InspectOptions inspect;
  CLI::App* in = app.add_subcommand(
      "inspect",
      "Show what the compiler makes of a model, by stage; or describe a compiled artifact");
  in->add_option("MODEL", inspect.model,
                 "An ONNX file, zoo:NAME for a built-in model, or an artifact (model.so): its "
                 "target, CPU, inputs, outputs, kernels and sizes")
      ->required();
  in->add_option("--stage", inspect.stage,
                 "graph (as imported), optimized (after the graph passes), fused (the kernels "
                 "and their schedules), lowered (loop IR), llvm (LLVM IR), asm (assembly), c (the "
                 "C source of the kernels); required for a model, not for an artifact")
      ->type_name("STAGE")
      ->check(CLI::IsMember(inspect_stages()));
  in->add_option("--kernel", inspect.kernel, "Only this kernel (lowered, llvm, asm)")
      ->type_name("NAME");
  in->add_option("--target", inspect.target, "What to compile for (as for compile)")
      ->capture_default_str()
      ->type_name("TARGET");
  in->add_option("--input-shape", inspect.input_shapes,
                 "Bind an input's shape, NAME=DIMS; repeatable")
      ->allow_extra_args(false)
      ->type_name("NAME=DIMS");
  in->add_option("--input-value", inspect.input_values,
                 "Bind an input's value, NAME=FILE.npy (as for compile); repeatable")
      ->allow_extra_args(false)
      ->type_name("NAME=FILE");
  in->add_flag("--no-fuse", inspect.no_fuse, "One kernel per operator");
  in->add_flag("--no-layout", inspect.no_layout, "No layout alteration (as compile --no-layout)");
  in->add_flag("--strict", inspect.strict, kStrictHelp);
  in->footer(
      "Examples:\n"
      "  anvil inspect zoo:dqn --stage fused\n"
      "  anvil inspect zoo:dqn --stage lowered --kernel fused_0_layout_transform\n"
      "  anvil inspect model.onnx --input-shape data=1x3x224x224 --stage asm\n"
      "  anvil inspect resnet18.so");

  BenchOptions bench;
  CLI::App* b = app.add_subcommand(
      "bench", "Time Anvil against ONNX Runtime and PyTorch on the same models (the speedup)");
  b->add_option("MODEL", bench.models,
                "Zoo names or ONNX files (default: the five workloads resnet18, mobilenet_v1, "
                "lstm_lm, dqn, dcgan)");
  b->add_option("--threads", bench.threads, "Thread counts, comma-separated (CPU targets)")
      ->delimiter(',')
      ->capture_default_str()
      ->type_name("T,...")
      ->check(CLI::Range(1, 4096));
  b->add_option("--baselines", bench.baselines,
                "Baselines, comma-separated: onnxruntime, torch_eager, torch_jit (default on the "
                "CPU), torch_eager_cuda, torch_cuda_graph (default on a GPU), those --worker "
                "defines, or none")
      ->delimiter(',')
      ->type_name("NAME,...");
  b->add_option("--worker", bench.workers,
                "A baseline's worker command, NAME=COMMAND (the protocol: tools/anvil/bench.h); "
                "repeatable")
      ->allow_extra_args(false)
      ->type_name("NAME=COMMAND");
  b->add_option("--deps", bench.deps_dir,
                "Where npm's onnxruntime-node is installed (default $ANVIL_BENCH_DEPS, then "
                "bench-deps beside anvil's bin/)")
      ->type_name("DIR");
  b->add_option("--input-shape", bench.input_shapes,
                "Bind an ONNX input's shape, NAME=DIMS; repeatable")
      ->allow_extra_args(false)
      ->type_name("NAME=DIMS");
  b->add_option("--target", bench.target,
                "What Anvil compiles for: llvm or c (this CPU), cuda or opencl (a GPU)")
      ->capture_default_str()
      ->type_name("TARGET");
  b->add_option("--tuning-records", bench.tuning_records,
                "Tuning records: Anvil's kernels get their best recorded configurations, and the "
                "untuned build is timed too (baseline 'untuned')")
      ->type_name("FILE");
  b->add_flag("--records-any-cpu", bench.records_any_cpu, kRecordsAnyCpuHelp);
  b->add_option("--processes", bench.processes,
                "Fresh processes per side and row, timed round-robin; a row's median is the median "
                "of the per-process medians, with their spread (0: Anvil runs in this process)")
      ->capture_default_str()
      ->type_name("N")
      ->check(CLI::Range(0, 1000));
  b->add_option("--runs", bench.runs,
                "Timed runs per side (per process with --processes), at least (whole blocks)")
      ->capture_default_str()
      ->type_name("N")
      ->check(CLI::Range(1, 1000000));
  b->add_option("--block", bench.block, "Runs per block; blocks alternate between the sides")
      ->capture_default_str()
      ->type_name("N")
      ->check(CLI::Range(1, 1000000));
  b->add_option("--warmup", bench.warmup, "Untimed runs per side before timing")
      ->capture_default_str()
      ->type_name("N")
      ->check(CLI::Range(0, 1000000));
  b->add_option("--pause-ms", bench.pause_ms,
                "Idle time before each block (then until the cores are idle, at most 1 s), so that "
                "the threads of the side before have stopped spinning; 0: no pause")
      ->capture_default_str()
      ->type_name("MS")
      ->check(CLI::Range(0, 10000));
  b->add_option("--tolerance", bench.tolerance,
                "A baseline's float outputs must agree with Anvil's within this fraction of the "
                "largest |output| to be timed (quantized models may need 1e-2: implementations "
                "round ties differently)")
      ->capture_default_str()
      ->type_name("R")
      ->check(CLI::Range(0.0, 1.0));
  b->add_flag("--ablation", bench.ablation,
              "Also time each model with fusion and layout alteration off (Anvil alone)");
  b->add_flag("--strict", bench.strict, kStrictHelp);
  b->add_flag("--profile", bench.profile,
              "Also time each kernel of Anvil's build (--runs calls each; in the summary JSON "
              "too)");
  b->add_option("--summary-json", bench.summary_json, "Write the figures as JSON")
      ->type_name("FILE");
  b->add_option("--chart", bench.chart, "Draw the speedups as a PNG bar chart (gnuplot)")
      ->type_name("FILE");
  b->footer(
      "Examples:\n"
      "  anvil bench --summary-json bench.json --chart speedup.png\n"
      "  anvil bench resnet18 --threads 1 --baselines onnxruntime\n"
      "  anvil bench model.onnx --input-shape data=1x3x224x224 --baselines torch_jit --ablation\n"
      "  anvil bench --target 'cuda -arch=sm_90' --summary-json gpu.json");

  TuneOptions tune;
  CLI::App* t = app.add_subcommand(
      "tune", "Search each kernel's schedule configurations; append the trials to records");
  t->add_option("MODEL", tune.model, "An ONNX file, or zoo:NAME for a built-in model")->required();
  t->add_option("--tuning-records", tune.session.records,
                "The records: read to resume, every trial appended (JSON lines)")
      ->required()
      ->type_name("FILE");
  t->add_flag("--records-any-cpu", tune.records_any_cpu,
              "Resume from and learn from records tuned on another CPU too");
  t->add_option("--trials", tune.session.trials,
                "Configurations measured per task on average, the default included (the "
                "scheduler moves trials to the tasks that gain the most)")
      ->capture_default_str()
      ->type_name("N")
      ->check(CLI::Range(1, 1000000));
  t->add_option("--tuner", tune.session.tuner,
                "How to pick them: xgb (a cost model guiding simulated annealing), genetic, "
                "random or grid (index order)")
      ->capture_default_str()
      ->type_name("TUNER")
      ->check(CLI::IsMember(tuner_names()));
  t->add_option("--seed", tune.session.seed, "Seed of the search")->capture_default_str();
  t->add_option("--early-stopping", tune.session.early_stopping,
                "A task stops after this many trials without a 1% gain (0: never)")
      ->capture_default_str()
      ->type_name("N")
      ->check(CLI::Range(0, 1000000));
  t->add_option("--batch", tune.session.batch,
                "Candidates compiled together (in parallel), then timed one at a time")
      ->capture_default_str()
      ->type_name("N")
      ->check(CLI::Range(1, 256));
  t->add_option("--time-budget", tune.session.time_budget_min,
                "Stop starting trials after this many minutes (the records resume from there)")
      ->type_name("MIN")
      ->check(CLI::Range(0.0, 1e6));
  t->add_option("--timeout", tune.session.measure.timeout_s,
                "Seconds a candidate may take to compile, check and time before it is killed")
      ->capture_default_str()
      ->type_name("S")
      ->check(CLI::Range(0.1, 1e6));
  t->add_option("--repeats", tune.session.measure.repeats, "Timed repeats per candidate")
      ->capture_default_str()
      ->type_name("N")
      ->check(CLI::Range(1, 1000));
  t->add_option("--measure-worker", tune.measure_worker,
                "The command that compiles and times candidates, words split at spaces (default: "
                "this anvil's own worker; e.g. a wrapper that runs `anvil measure-worker` on "
                "another machine)")
      ->type_name("COMMAND");
  t->add_option(
       "--target", tune.target,
       "What to tune for: an llvm target for this CPU, or a GPU target measured on its device")
      ->capture_default_str()
      ->type_name("TARGET");
  t->add_flag("--strict", tune.session.strict,
              "The in-model check's builds as compile --strict builds");
  t->add_option("--input-shape", tune.input_shapes, "Bind an input's shape, NAME=DIMS; repeatable")
      ->allow_extra_args(false)
      ->type_name("NAME=DIMS");
  t->footer(
      "Examples:\n"
      "  anvil tune zoo:resnet18 --trials 40 --time-budget 30 --tuning-records resnet18.json\n"
      "  anvil tune zoo:dqn --trials 16 --tuner genetic --tuning-records dqn.json\n"
      "  anvil compile zoo:resnet18 --tuning-records resnet18.json -o resnet18.so");
  // The tuner's measurement process (anvil/autotune/measure.h): not for people.
  CLI::App* mw = app.add_subcommand("measure-worker", "");
  mw->group("");
  // Anvil's side of `anvil bench --processes`: an artifact in a process of its own (bench.h).
  CLI::App* bw = app.add_subcommand("bench-worker", "");
  bw->group("");
  std::string bench_worker_records;
  bw->add_option("--tuning-records", bench_worker_records);
  bool bench_worker_any_cpu = false;
  bw->add_flag("--records-any-cpu", bench_worker_any_cpu);

  std::string env_target = "llvm";
  CLI::App* env = app.add_subcommand(
      "env",
      "What Anvil knows of the machine: vector width, registers, FMA units, caches, cores, "
      "measured peak, huge pages");
  env->add_option("--target", env_target, "The target to describe (default: this host)")
      ->capture_default_str()
      ->type_name("TARGET");
  env->footer("Examples:\n  anvil env\n  anvil env --target 'llvm -mcpu=znver4'");

  CLI::App* ops_cmd = app.add_subcommand(
      "ops",
      "The ONNX operators the importer maps (with their opsets) and the library's operators");
  ops_cmd->footer("Example:\n  anvil ops");

  QuantizeCliOptions quantize;
  CLI::App* qz = app.add_subcommand(
      "quantize", "Quantize a float ONNX model into a QDQ one (int8 weights, uint8 activations)");
  qz->add_option("MODEL", quantize.model, "The float ONNX file")->required();
  qz->add_option("-o,--output", quantize.output, "The QDQ ONNX file")
      ->required()
      ->type_name("FILE");
  qz->add_option("--calibration", quantize.calibration,
                 "random, or a directory of .npy inputs (one file per input of a one-input "
                 "model, else one subdirectory per input with NAME.npy for each input NAME)")
      ->capture_default_str()
      ->type_name("DIR|random");
  qz->add_option("--samples", quantize.samples, "Random calibration inputs")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  qz->add_option("--percentile", quantize.percentile,
                 "Activation ranges cover this percentile of the values on each side (100: "
                 "min-max)")
      ->capture_default_str()
      ->check(CLI::Range(50.0, 100.0));
  qz->add_flag("--reduce-range", quantize.reduce_range,
               "7-bit weights ([-63, 63]): no pair of products leaves int16, so that AVX2's "
               "vpmaddubsw computes them exactly (ONNX Runtime's quantizer option of that name)");
  qz->footer(
      "Examples:\n  anvil zoo export resnet18 -o resnet18.onnx\n"
      "  anvil quantize resnet18.onnx --calibration random -o resnet18.int8.onnx\n"
      "  anvil quantize model.onnx --calibration calib/ --percentile 99.99 -o model.int8.onnx");

  CLI::App* zoo = app.add_subcommand("zoo", "The built-in models");
  zoo->require_subcommand(1);
  zoo->add_subcommand("list", "Names, descriptions, inputs and outputs");
  ZooExportOptions zoo_export;
  CLI::App* ze = zoo->add_subcommand("export", "Write a built-in model as an ONNX file");
  ze->add_option("NAME", zoo_export.name, "The model's name (anvil zoo list)")->required();
  ze->add_option("-o,--output", zoo_export.output, "The ONNX file (default NAME.onnx)")
      ->type_name("FILE");
  zoo->footer("Examples:\n  anvil zoo list\n  anvil zoo export resnet18 -o resnet18.onnx");
  zoo->get_subcommand("list")->footer("Example:\n  anvil zoo list");
  ze->footer("Example:\n  anvil zoo export dqn -o dqn.onnx");
  app.footer(
      "Examples:\n"
      "  anvil compile zoo:resnet18 -o resnet18.so\n"
      "  anvil compile zoo:resnet18 --target cuda -o resnet18_cuda.so\n"
      "  anvil run resnet18.so --fill-mode random --repeat 20\n"
      "  anvil inspect zoo:dqn --stage fused\n"
      "  anvil bench resnet18 --baselines onnxruntime\n"
      "  anvil tune zoo:dqn --trials 20 --tuning-records dqn.json\n"
      "  anvil env\n"
      "Run 'anvil COMMAND --help' for a command's options.");

  std::string unknown = argc > 1 ? unknown_command(app, argv[1]) : "";
  if (unknown.empty() && argc > 2 && std::string(argv[1]) == "zoo")
    unknown = unknown_command(*zoo, argv[2]);
  if (!unknown.empty()) return report(kUsage, unknown);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "anvil: error: " << e.what() << "\n";
    std::cerr << "Run 'anvil --help' (or 'anvil COMMAND --help') for the usage.\n";
    return kUsage;
  }

  try {
    anvil::runtime::Device::select(kDLCUDA, device_number);
    anvil::runtime::Device::select(kDLOpenCL, device_number);
    if (c->parsed()) {
      compile_command(compile);
    } else if (r->parsed()) {
      run_command(run);
    } else if (in->parsed()) {
      inspect_command(inspect);
    } else if (b->parsed()) {
      bench_command(bench);
    } else if (t->parsed()) {
      tune_command(tune);
    } else if (mw->parsed()) {
      measure_worker_command();
    } else if (bw->parsed()) {
      bench_worker_command(bench_worker_records, bench_worker_any_cpu);
    } else if (env->parsed()) {
      env_command(env_target);
    } else if (ops_cmd->parsed()) {
      ops_command();
    } else if (zoo->got_subcommand("list")) {
      zoo_list_command();
    } else if (ze->parsed()) {
      zoo_export_command(zoo_export);
    } else if (qz->parsed()) {
      quantize_command(quantize);
    }
  } catch (const CliError& e) {
    return report(e.code(), e.what());
  } catch (const std::exception& e) {
    // Each command wraps its phases; an exception that escapes them is Anvil's own failure.
    return report(kCompile, std::string("internal error: ") + e.what());
  }
  return kOk;
}
