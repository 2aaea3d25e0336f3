// `anvil quantize`: static post-training quantization into a QDQ ONNX file
// (frontend/onnx/quantize.h), calibrated on .npy inputs or on random ones.
#include <algorithm>
#include <filesystem>
#include <iostream>

#include "anvil/autotune/ab_timing.h"
#include "anvil/frontend/onnx/importer.h"
#include "anvil/frontend/onnx/quantize.h"
#include "anvil/runtime/npy.h"
#include "tools/anvil/args.h"
#include "tools/anvil/commands.h"

namespace anvil::cli {

namespace fs = std::filesystem;

namespace {

// The calibration samples: `samples` random ones (floats uniform in [-1, 1], each its own seed),
// or one per .npy file in DIR (a model of one input), or one per subdirectory of DIR holding
// NAME.npy for each input NAME.
std::vector<std::map<std::string, runtime::NDArray>> calibration(const graph::Graph& g,
                                                                 const QuantizeCliOptions& o) {
  std::vector<std::map<std::string, runtime::NDArray>> samples;
  if (o.calibration == "random") {
    for (int s = 0; s < o.samples; ++s) {
      std::map<std::string, runtime::NDArray> in;
      for (graph::ValueId v : g.inputs()) {
        const graph::Value& value = g.value(v);
        runtime::TensorInfo t{value.name, value.type.shape, ops::to_dlpack(value.type.dtype)};
        in[value.name] = autotune::filled_input(t, "random", static_cast<uint32_t>(s));
      }
      samples.push_back(std::move(in));
    }
    return samples;
  }
  std::error_code ec;
  if (!fs::is_directory(o.calibration, ec))
    throw CliError(kUsage, "--calibration " + o.calibration + ": neither 'random' nor a directory");
  std::vector<fs::path> entries;
  for (const fs::directory_entry& e : fs::directory_iterator(o.calibration, ec))
    entries.push_back(e.path());
  std::sort(entries.begin(), entries.end());
  for (const fs::path& p : entries) {
    std::map<std::string, runtime::NDArray> in;
    if (fs::is_directory(p, ec)) {
      for (graph::ValueId v : g.inputs()) {
        const std::string& name = g.value(v).name;
        in[name] =
            with_exit_code(kBadInput, "reading calibration input " + (p / (name + ".npy")).string(),
                           [&] { return runtime::load_npy((p / (name + ".npy")).string()); });
      }
    } else if (p.extension() == ".npy") {
      if (g.inputs().size() != 1)
        throw CliError(kUsage, "--calibration " + o.calibration + ": the model has " +
                                   std::to_string(g.inputs().size()) +
                                   " inputs; give one subdirectory per sample with NAME.npy each");
      in[g.value(g.inputs()[0]).name] =
          with_exit_code(kBadInput, "reading calibration input " + p.string(),
                         [&] { return runtime::load_npy(p.string()); });
    } else {
      continue;
    }
    samples.push_back(std::move(in));
  }
  if (samples.empty())
    throw CliError(kUsage, "--calibration " + o.calibration + ": no .npy files or subdirectories");
  return samples;
}

}  // namespace

void quantize_command(const QuantizeCliOptions& o) {
  check_output_path(o.output, "-o");
  graph::Graph g = load_model(o.model, {});
  frontend::QuantizeOptions options;
  options.calibration = calibration(g, o);
  options.percentile = o.percentile;
  options.reduce_range = o.reduce_range;
  frontend::QuantizeReport r = with_exit_code(kCompile, "quantizing " + o.model, [&] {
    return frontend::quantize_onnx(o.model, o.output, options);
  });
  if (r.folded_batch_norms > 0)
    std::cout << "folded " << r.folded_batch_norms << " BatchNormalization nodes into their Conv\n";
  std::cout << "quantized " << r.quantized.size() << " nodes (int8 weights per channel"
            << (o.reduce_range ? ", 7 bits" : "") << ", uint8 activations per tensor, "
            << options.calibration.size() << " calibration inputs)\n";
  for (const std::string& f : r.left_float) std::cout << "  left in float: " << f << "\n";
  std::printf(
      "against the float model on the calibration inputs: max |difference| %.4g where max |float| "
      "is %.4g; cosine similarity at least %.5f\n",
      r.max_abs_difference, r.max_abs_float, r.min_cosine);
  std::cout << "wrote " << o.output << "\n";
}

}  // namespace anvil::cli
