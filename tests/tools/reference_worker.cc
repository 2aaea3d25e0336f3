// A baseline worker for the tests of `anvil bench`: the protocol of tools/anvil/bench.h served by
// the reference interpreter (an independent implementation of every op), with faults on demand:
//   reference_worker [--fault wrong|refuse|crash|garbage]
//     wrong    outputs that differ from the model's (1 added to the first element of each)
//     refuse   every load answers {"ok": false}
//     crash    the process aborts on its first "time" request
//     garbage  the answer to "run" is not JSON
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "anvil/frontend/onnx/importer.h"
#include "anvil/graph/interpreter.h"
#include "anvil/runtime/npy.h"

namespace {

using nlohmann::json;

struct Loaded {
  anvil::graph::Graph graph;
  std::vector<anvil::runtime::NDArray> inputs;
};

json serve(const json& request, const std::string& fault, std::unique_ptr<Loaded>& loaded) {
  const std::string op = request.at("op");
  if (op == "load") {
    if (fault == "refuse") return {{"ok", false}, {"error", "refusing to load (test fault)"}};
    auto l = std::make_unique<Loaded>();
    l->graph = anvil::frontend::import_onnx(request.at("model").get<std::string>());
    for (anvil::graph::ValueId v : l->graph.inputs()) {
      const std::string& name = l->graph.value(v).name;
      if (!request.at("inputs").contains(name))
        return {{"ok", false}, {"error", "no file for input '" + name + "'"}};
      l->inputs.push_back(anvil::runtime::load_npy(request["inputs"][name].get<std::string>()));
    }
    loaded = std::move(l);
    return {{"ok", true}};
  }
  if (!loaded) return {{"ok", false}, {"error", op + " before load"}};
  if (op == "run") {
    std::vector<anvil::runtime::NDArray> outputs =
        anvil::graph::interpret(loaded->graph, loaded->inputs);
    json files = json::array();
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (fault == "wrong" && outputs[i].dtype().code == kDLFloat)
        outputs[i].data_as<float>()[0] += 1.0f;
      files.push_back(request.at("outputs_dir").get<std::string>() + "/output_" +
                      std::to_string(i) + ".npy");
      anvil::runtime::save_npy(files.back(), outputs[i]);
    }
    return {{"ok", true}, {"outputs", files}};
  }
  if (op == "time") {
    if (fault == "crash") std::abort();
    json ms = json::array();
    for (int i = 0; i < request.at("runs").get<int>(); ++i) {
      auto start = std::chrono::steady_clock::now();
      anvil::graph::interpret(loaded->graph, loaded->inputs);
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count());
    }
    return {{"ok", true}, {"ms", ms}};
  }
  return {{"ok", false}, {"error", "unknown op '" + op + "'"}};
}

}  // namespace

int main(int argc, char** argv) {
  const std::string fault = argc == 3 && std::strcmp(argv[1], "--fault") == 0 ? argv[2] : "";
  std::cout << json{{"ok", true}, {"name", "reference"}, {"version", "interpreter"}}.dump()
            << std::endl;
  std::unique_ptr<Loaded> loaded;
  for (std::string line; std::getline(std::cin, line);) {
    json request = json::parse(line, nullptr, false);
    if (request.is_object() && request.value("op", "") == "quit") return 0;
    json answer;
    try {
      answer = serve(request, fault, loaded);
    } catch (const std::exception& e) {
      answer = {{"ok", false}, {"error", e.what()}};
    }
    if (fault == "garbage" && request.value("op", "") == "run") {
      std::cout << "this is not JSON" << std::endl;
      continue;
    }
    std::cout << answer.dump() << std::endl;
  }
  return 0;
}
