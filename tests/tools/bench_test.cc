// `anvil bench` end to end with the reference interpreter as the baseline (tests/tools/
// reference_worker.cc, a worker of the protocol in tools/anvil/bench.h), so that the test needs
// neither ONNX Runtime nor PyTorch: the table, the summary JSON, the blocks of timed runs, the
// output check that keeps disagreeing baselines out of the table, and workers that refuse, crash or
// answer garbage, each a row with a note naming what went wrong.
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "anvil/autotune/records.h"
#include "anvil/autotune/task.h"
#include "anvil/graph/flops.h"
#include "anvil/models/models.h"
#include "anvil/runtime/device_api.h"
#include "anvil/runtime/host_cpu.h"
#include "tools/anvil/bench_report.h"
#include "tools/cli_fixture.h"

namespace anvil::cli {
namespace {

using nlohmann::json;

std::string worker(const std::string& name, const std::string& fault = "") {
  return "--worker '" + name + "=" + REFERENCE_WORKER_PATH +
         (fault.empty() ? "" : " --fault " + fault) + "'";
}

json read_json(const std::string& file) {
  std::ifstream in(file);
  return json::parse(in, nullptr, /*allow_exceptions=*/false);
}

const json* find_row(const json& summary, const std::string& baseline) {
  for (const json& row : summary["rows"])
    if (row["baseline"] == baseline) return &row;
  return nullptr;
}

TEST_F(Cli, BenchTimesAnvilAgainstABaselineWorker) {
  // Two timed runs per side in blocks of one; the reference interpreter as the baseline, once as
  // itself and once with a fault in each way a worker can fail.
  Result r = anvil(
      "bench zoo:dqn --threads 1 --runs 2 --block 1 --warmup 1 --processes 1 --baselines "
      "ref,wrong,refuse,crash,garbage,absent " +
      worker("ref") + " " + worker("wrong", "wrong") + " " + worker("refuse", "refuse") + " " +
      worker("crash", "crash") + " " + worker("garbage", "garbage") +
      " --worker absent=/nonexistent/worker --summary-json bench.json");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("baseline ref interpreter"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| model | threads | baseline | baseline ms | Anvil ms | speedup |"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("| dqn | 1 | ref | "), std::string::npos) << r.out;

  json summary = read_json(path("bench.json"));
  ASSERT_TRUE(summary.is_object()) << read(path("bench.json"));
  EXPECT_GT(summary["machine"]["peak_gflops_per_core"].get<double>(), 1.0);
  EXPECT_EQ(summary["rows"].size(), 6u);
  const json* ref = find_row(summary, "ref");
  ASSERT_NE(ref, nullptr);
  EXPECT_EQ((*ref)["name"], "dqn");
  EXPECT_EQ((*ref)["threads"], 1);
  const double anvil_ms = (*ref)["anvil_ms"], baseline_ms = (*ref)["baseline_ms"];
  EXPECT_GT(anvil_ms, 0);
  EXPECT_GT(baseline_ms, 0);
  EXPECT_DOUBLE_EQ((*ref)["speedup"].get<double>(), baseline_ms / anvil_ms);
  // The row's GFLOP/s is the model's FLOPs over Anvil's time.
  const double flops = graph::graph_flops(models::build_model("dqn"));
  EXPECT_NEAR((*ref)["gflops"].get<double>(), flops / (anvil_ms * 1e6), 1e-9 * flops);
  EXPECT_FALSE(ref->contains("note"));

  // Each failing baseline carries a note saying why, and no time.
  const std::pair<const char*, const char*> expected[] = {
      {"wrong", "outputs disagree with Anvil's: output 0 differs"},
      {"refuse", "refusing to load (test fault)"},
      {"crash", "was killed by signal"},
      {"garbage", "answered with something that is not a protocol object: this is not JSON"},
      {"absent", "cannot start '/nonexistent/worker'"},
  };
  for (const auto& [baseline, note] : expected) {
    SCOPED_TRACE(baseline);
    const json* row = find_row(summary, baseline);
    ASSERT_NE(row, nullptr);
    EXPECT_FALSE(row->contains("baseline_ms"));
    EXPECT_FALSE(row->contains("speedup"));
    ASSERT_TRUE(row->contains("note"));
    EXPECT_NE((*row)["note"].get<std::string>().find(note), std::string::npos) << (*row)["note"];
    EXPECT_GT((*row)["anvil_ms"].get<double>(), 0);  // Anvil alone
  }
}

// On a GPU target the model runs on the device (here OpenCL on PoCL, this CPU as the device): the
// GPU baselines by default, one row per baseline whatever --threads says, the device's name in the
// summary, no fraction of a CPU peak, and with --profile every kernel's median time, slowest
// first. The two default baselines are the reference interpreter here, the second refusing to
// load, so that its row carries the note instead of a time.
TEST_F(Cli, BenchOnAGpuTargetRunsTheModelOnTheDevice) {
  Result r = anvil(
      "bench zoo:dqn --target opencl --threads 2 --runs 2 --block 1 --warmup 1 --processes 1 "
      "--profile " +
      worker("torch_eager_cuda") + " " + worker("torch_cuda_graph", "refuse") +
      " --summary-json gpu.json");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("on the GPU"), std::string::npos) << r.out;
  json summary = read_json(path("gpu.json"));
  ASSERT_TRUE(summary.is_object()) << read(path("gpu.json"));
  EXPECT_FALSE(summary["machine"]["gpu"].get<std::string>().empty());
  // The two baselines, then Anvil against itself: kernel by kernel, and copying through the host.
  ASSERT_EQ(summary["rows"].size(), 4u);
  for (const char* self : {"anvil_kernel_by_kernel", "anvil_host_copies"}) {
    const json* row = find_row(summary, self);
    ASSERT_NE(row, nullptr) << self;
    EXPECT_GT((*row)["baseline_ms"].get<double>(), 0) << *row;
    EXPECT_GT((*row)["anvil_ms"].get<double>(), 0) << *row;
  }
  EXPECT_NE(r.out.find("Both sides' inputs and outputs stay on the device"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("GPU, Anvil against itself: on device arrays "), std::string::npos) << r.out;
  const json* eager = find_row(summary, "torch_eager_cuda");
  ASSERT_NE(eager, nullptr);
  EXPECT_GT((*eager)["baseline_ms"].get<double>(), 0) << *eager;
  EXPECT_GT((*eager)["anvil_ms"].get<double>(), 0);
  EXPECT_TRUE((*eager)["peak_fraction"].is_null());
  const json* replay = find_row(summary, "torch_cuda_graph");
  ASSERT_NE(replay, nullptr);
  EXPECT_FALSE(replay->contains("baseline_ms"));
  EXPECT_NE((*replay)["note"].get<std::string>().find("refusing to load (test fault)"),
            std::string::npos)
      << (*replay)["note"];
  EXPECT_NE(r.out.find("| dqn | GPU | torch_eager_cuda |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--threads does not apply on a GPU target"), std::string::npos) << r.out;
  EXPECT_TRUE(summary["machine"]["peak_gflops_per_core"].is_null());

  ASSERT_EQ(summary["profiles"].size(), 1u);
  const json& profile = summary["profiles"][0];
  EXPECT_EQ(profile["name"], "dqn");
  EXPECT_EQ(profile["threads"], 0);
  const json& kernels = profile["kernels"];
  ASSERT_GE(kernels.size(), 3u);  // dqn: three convolutions, two dense layers
  double total_flops = 0;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const double ms = kernels[i]["ms"];
    EXPECT_GT(ms, 0);
    if (i > 0) {
      EXPECT_LE(ms, kernels[i - 1]["ms"].get<double>());
    }
    if (!kernels[i]["gflops"].is_null())
      total_flops += kernels[i]["gflops"].get<double>() * ms * 1e6;
  }
  // The kernels count the model's FLOPs between them (GFLOP/s x ms gives them back).
  const double flops = graph::graph_flops(models::build_model("dqn"));
  EXPECT_NEAR(total_flops, flops, 0.05 * flops);
}

// Without a CUDA device, a CUDA bench says so before compiling anything.
TEST_F(Cli, BenchOnCudaWithoutADeviceSaysWhy) {
  if (runtime::Device::available(kDLCUDA)) GTEST_SKIP() << "this machine has a CUDA device";
  expect_error("bench zoo:dqn --target cuda --runs 1 --block 1", 4,
               {"--target 'cuda'", "no device to run on"});
  EXPECT_EQ(anvil("bench zoo:dqn --target cuda --runs 1 --block 1").out.find("compiled in"),
            std::string::npos);
}

// --profile on the CPU: the kernels at the last thread count, compared with the measured peak.
TEST_F(Cli, BenchProfileOnTheCpuUsesTheLastThreadCount) {
  Result r = anvil(
      "bench zoo:dqn --threads 1,2 --runs 2 --block 1 --warmup 0 --processes 1 --baselines none "
      "--profile "
      "--summary-json cpu.json");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("profile: median of 2 runs after 1 warm-up, 2 threads"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("peak: "), std::string::npos) << r.out;
  json summary = read_json(path("cpu.json"));
  ASSERT_EQ(summary["profiles"].size(), 1u) << summary;
  EXPECT_EQ(summary["profiles"][0]["threads"], 2);
  EXPECT_GE(summary["profiles"][0]["kernels"].size(), 3u);
  EXPECT_GT(summary["rows"][0]["peak_fraction"].get<double>(), 0);
}

TEST_F(Cli, BenchRefusesBadArguments) {
  expect_error("bench zoo:dqn --baselines tflite", 1,
               {"unknown baseline 'tflite'", "onnxruntime", "torch_jit", "--worker tflite="});
  expect_error("bench zoo:dqn --threads 0", 1, {"--threads"});
  expect_error("bench zoo:dqn --threads 1,x", 1, {"--threads"});
  expect_error("bench nosuchmodel --baselines none", 1,
               {"MODEL nosuchmodel: neither a zoo model", "resnet18", "nor an ONNX file"});
  expect_error("bench zoo:dqn --baselines none --summary-json no/such/dir/x.json", 1,
               {"no/such/dir/x.json", "does not exist"});
  expect_error("bench zoo:dqn --worker =cmd", 1, {"--worker"});
  write(path("garbage.onnx"), "not a protobuf");
  expect_error("bench garbage.onnx --baselines none", 2, {"garbage.onnx", "1 of 1 models failed"});
}

TEST_F(Cli, BenchWithoutOnnxRuntimeInstalledSaysHowToInstallIt) {
  fs::create_directories(path("empty-deps"));
  Result r = anvil(
      "bench zoo:dqn --threads 1 --runs 1 --block 1 --warmup 0 --processes 1 --baselines "
      "onnxruntime --deps empty-deps --summary-json ort.json");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  json summary = read_json(path("ort.json"));
  const json* row = find_row(summary, "onnxruntime");
  ASSERT_NE(row, nullptr);
  EXPECT_NE((*row)["note"].get<std::string>().find(
                "onnxruntime-node is not installed in empty-deps (make bench installs it"),
            std::string::npos)
      << (*row)["note"];
}

// With tuning records the tuned build is timed against the untuned one: a row with baseline
// "untuned"; the summary says how many kernels the records tuned.
TEST_F(Cli, BenchWithTuningRecordsTimesTheUntunedBuild) {
  Target target = Target::host();
  std::vector<autotune::ModelTask> tasks =
      autotune::extract_tasks(models::build_model("dqn"), target, {});
  ASSERT_FALSE(tasks.empty());
  const autotune::Task& t = tasks[0].task;
  autotune::Record r{t.to_json(), t.target, autotune::config_at(t.space(), 1), {1e-6}, {}, ""};
  write(path("tuned.json"), r.to_json().dump() + "\n");
  Result b = anvil(
      "bench dqn --threads 1 --runs 2 --block 1 --warmup 0 --processes 1 --baselines none "
      "--tuning-records tuned.json --summary-json tuned_bench.json");
  ASSERT_EQ(b.code, 0) << b.out << b.err;
  EXPECT_NE(b.out.find("tuning records: 1 read (1 task); " +
                       std::to_string(tasks[0].kernels.size()) + " of "),
            std::string::npos)
      << b.out;
  json summary = read_json(path("tuned_bench.json"));
  const json* untuned = find_row(summary, "untuned");
  ASSERT_NE(untuned, nullptr) << summary.dump();
  EXPECT_GT((*untuned)["baseline_ms"].get<double>(), 0);
  EXPECT_DOUBLE_EQ((*untuned)["speedup"].get<double>(),
                   (*untuned)["baseline_ms"].get<double>() / (*untuned)["anvil_ms"].get<double>());
  expect_error("bench dqn --baselines none --tuning-records nothing.json", 2, {"nothing.json"});
}

// --processes N: each side in N fresh processes (Anvil's through `anvil bench-worker`); a row's
// median is the median of the per-process medians, and the summary keeps them with their spread.
TEST_F(Cli, BenchProcessesReportsTheMedianOfPerProcessMedians) {
  Result r = anvil(
      "bench zoo:dqn --threads 1 --runs 3 --block 1 --warmup 0 --processes 3 "
      "--baselines ref " +
      worker("ref") + " --summary-json processes.json");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("spread over 3 processes: Anvil "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("spread Anvil / baseline"), std::string::npos) << r.out;
  json summary = read_json(path("processes.json"));
  const json* row = find_row(summary, "ref");
  ASSERT_NE(row, nullptr) << summary;
  for (const char* side : {"anvil", "baseline"}) {
    SCOPED_TRACE(side);
    std::vector<double> ms = (*row)[std::string(side) + "_process_ms"].get<std::vector<double>>();
    ASSERT_EQ(ms.size(), 3u);
    std::sort(ms.begin(), ms.end());
    EXPECT_DOUBLE_EQ((*row)[std::string(side) + "_ms"].get<double>(), ms[1]);
    EXPECT_DOUBLE_EQ((*row)[std::string(side) + "_spread"].get<double>(), (ms[2] - ms[0]) / ms[1]);
  }
  // Each side's cost per call, on a one-op model, timed the same way.
  EXPECT_NE(r.out.find("Per call on a one-op model (relu of one float, 1 thread): Anvil "),
            std::string::npos)
      << r.out;
  EXPECT_GT(summary["call_overhead_ms"]["anvil"].get<double>(), 0) << summary;
  EXPECT_GT(summary["call_overhead_ms"]["ref"].get<double>(), 0) << summary;
  EXPECT_EQ(summary["machine"]["cpu_id"], runtime::host_cpu().id());
  // --processes 0: Anvil in the bench's own process, no per-process figures.
  Result in_process = anvil(
      "bench zoo:dqn --threads 1 --runs 2 --block 1 --warmup 0 "
      "--processes 0 --baselines none --summary-json one.json");
  ASSERT_EQ(in_process.code, 0) << in_process.out << in_process.err;
  json one = read_json(path("one.json"));
  EXPECT_FALSE(one["rows"][0].contains("anvil_process_ms")) << one;
  EXPECT_GT(one["rows"][0]["anvil_ms"].get<double>(), 0);
}

// A model that cannot be compiled gets a row per thread count with the error; the next model is
// still timed, and the command fails at the end with the first failure's exit code.
TEST_F(Cli, BenchGoesOnPastAModelThatFails) {
  write(path("broken.onnx"), "not a protobuf");
  Result r = anvil(
      "bench broken.onnx zoo:dqn --threads 1,2 --runs 1 --block 1 --warmup 0 "
      "--processes 1 --baselines none --summary-json partial.json");
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("1 of 2 models failed: broken.onnx"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("| dqn | 2 | - | "), std::string::npos) << r.out;
  json summary = read_json(path("partial.json"));
  ASSERT_EQ(summary["rows"].size(), 4u) << summary;
  for (int i = 0; i < 2; ++i) {
    const json& bad = summary["rows"][i];
    EXPECT_EQ(bad["name"], "broken");
    EXPECT_TRUE(bad["anvil_ms"].is_null());
    EXPECT_NE(bad["error"].get<std::string>().find("broken.onnx"), std::string::npos) << bad;
    const json& good = summary["rows"][2 + i];
    EXPECT_EQ(good["name"], "dqn");
    EXPECT_GT(good["anvil_ms"].get<double>(), 0);
  }
}

// ---- the report's forms, from figures given here

BenchReport sample_report() {
  BenchReport r;
  r.cpu = "Test CPU";
  r.machine = {"TestVendor family 1 model 2",
               {"avx2", "fma", "sse2"},
               256,
               2,
               4,
               48 << 10,
               1 << 20,
               32 << 20};
  r.peak_gflops_per_core = 100;
  r.runs = 50;
  r.call_overhead.push_back({"onnxruntime", 0.0004, 0.0101, ""});
  // Anvil's three processes spread (23 - 19.5) / 20 = 17.5%: flagged.
  r.rows.push_back({"resnet18",
                    1,
                    20.0,
                    "onnxruntime",
                    60.0,
                    90.9,
                    "",
                    19.0,
                    58.0,
                    {19.5, 20.0, 23.0},
                    {59.0, 60.0, 61.0},
                    ""});
  r.rows.push_back(
      {"resnet18", 1, 20.0, "torch_jit", std::nullopt, 90.9, "it crashed", 19.0, 0, {}, {}, ""});
  // Anvil's fastest run is less than half its median: contended.
  r.rows.push_back({"dqn", 2, 0.2, "onnxruntime", 0.25, 70.0, "", 0.09, 0.24, {}, {}, ""});
  r.ablation.push_back({"dqn", 2, {0.2, 0.22, 0.3, 0.4}});
  return r;
}

TEST(BenchReport, TableHasOneLinePerRowWithNotesBelow) {
  const std::string table = bench_table(sample_report());
  EXPECT_EQ(table,
            "Measured on Test CPU (TestVendor family 1 model 2): 256-bit vectors, 2 FMA units, "
            "avx2 fma; L1d 48 KiB, L2 1 MiB per core, L3 32 MiB; 4 cores; measured peak 100.0 "
            "GFLOP/s per core\n\n"
            "| model | threads | baseline | baseline ms | Anvil ms | speedup | Anvil GFLOP/s | "
            "of peak | spread Anvil / baseline |\n"
            "|---|---|---|--:|--:|--:|--:|--:|--:|\n"
            "| resnet18 | 1 | onnxruntime | 60.00 | 20.00 | 3.00x | 90.9 | 90.9% | 17.5% ! / "
            "3.3% |\n"
            "| resnet18 | 1 | torch_jit | - | 20.00 | (1) | 90.9 | 90.9% | - / - |\n"
            "| dqn | 2 | onnxruntime | 0.250 | 0.200 | 1.25x * | 70.0 | 35.0% | - / - |\n"
            "(1) resnet18, 1 thread(s), torch_jit: it crashed\n"
            "* contended: a median more than twice that side's fastest run (another process was "
            "using the cores)\n"
            "! warning: that side's per-process medians spread beyond 10% (max - min over their "
            "median): the machine's speed moved during the run (other tenants, clocks) or the "
            "processes drew different memory placements; read the row's speedup with that "
            "margin\n"
            "Per call on a one-op model (relu of one float, 1 thread): Anvil 0.4 us, onnxruntime "
            "10.1 us: part of every row's time, most of it for the smallest models\n");
  EXPECT_EQ(ablation_table(sample_report()),
            "| model | threads | fusion + layout ms | no fusion ms | no layout ms | neither ms |\n"
            "|---|---|--:|--:|--:|--:|\n"
            "| dqn | 2 | 0.200 | 0.220 (1.10x) | 0.300 (1.50x) | 0.400 (2.00x) |\n");
}

TEST(BenchReport, SummaryJsonHasOneRowPerBaselineAsDesigned) {
  json j = summary_json(sample_report());
  EXPECT_EQ(j["machine"]["cpu"], "Test CPU");
  EXPECT_EQ(j["machine"]["cpu_id"], "TestVendor family 1 model 2");
  EXPECT_EQ(j["machine"]["features"], json::parse(R"(["avx2", "fma", "sse2"])"));
  EXPECT_EQ(j["machine"]["l2_bytes"], 1 << 20);
  EXPECT_EQ(j["machine"]["vector_bits"], 256);
  EXPECT_DOUBLE_EQ(j["call_overhead_ms"]["onnxruntime"].get<double>(), 0.0101);
  EXPECT_DOUBLE_EQ(j["call_overhead_ms"]["anvil"].get<double>(), 0.0004);
  EXPECT_DOUBLE_EQ(j["rows"][0]["anvil_spread"].get<double>(), 0.175);
  ASSERT_EQ(j["rows"].size(), 3u);
  const json& first = j["rows"][0];
  EXPECT_EQ(first["name"], "resnet18");
  EXPECT_EQ(first["baseline"], "onnxruntime");
  EXPECT_DOUBLE_EQ(first["speedup"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(first["peak_fraction"].get<double>(), 0.909);
  EXPECT_EQ(j["rows"][1]["note"], "it crashed");
  EXPECT_FALSE(j["rows"][1].contains("speedup"));
  EXPECT_DOUBLE_EQ(j["rows"][2]["peak_fraction"].get<double>(), 70.0 / 200);
  EXPECT_FALSE(first.contains("contended"));
  EXPECT_EQ(j["rows"][2]["contended"], true);
  EXPECT_DOUBLE_EQ(j["ablation"][0]["no_layout_ms"].get<double>(), 0.3);
}

TEST_F(Cli, BenchChartIsAPngOrSaysGnuplotIsMissing) {
  const std::string png = path("speedup.png");
  bool has_gnuplot = std::system("command -v gnuplot > /dev/null 2>&1") == 0;
  try {
    write_chart(sample_report(), png);
    ASSERT_TRUE(has_gnuplot);
    std::string bytes = read(png);
    ASSERT_GT(bytes.size(), 1000u);
    EXPECT_EQ(bytes.substr(1, 3), "PNG");
  } catch (const std::runtime_error& e) {
    EXPECT_FALSE(has_gnuplot) << e.what();
    EXPECT_NE(std::string(e.what()).find("gnuplot is not installed"), std::string::npos)
        << e.what();
  }
  BenchReport none = sample_report();
  none.rows.clear();
  EXPECT_THROW(write_chart(none, png), std::runtime_error);
}

}  // namespace
}  // namespace anvil::cli
