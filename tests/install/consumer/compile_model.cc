// The consumer of the installed compiler library (Anvil::onnx, which brings Anvil::compiler):
// builds a model (an ONNX file, or zoo:NAME for a built-in one), compiles it for this CPU and
// writes model.so, as `anvil compile` does.
//
//   compile_model zoo:dqn dqn.so
//
// Exit status 0 on success, 1 on any error.
#include <exception>
#include <iostream>
#include <string>

#include "anvil/frontend/onnx/importer.h"
#include "anvil/graph/build.h"
#include "anvil/models/models.h"
#include "anvil/target/target.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: " << argv[0] << " MODEL.onnx|zoo:NAME OUT.so\n";
    return 1;
  }
  try {
    const std::string model = argv[1];
    anvil::graph::Graph g = model.rfind("zoo:", 0) == 0
                                ? anvil::models::build_model(model.substr(4))
                                : anvil::frontend::import_onnx(model);
    anvil::graph::CompiledGraph cg =
        anvil::graph::CompiledGraph::build(g, anvil::Target::parse("llvm"), {});
    cg.save(argv[2]);
    std::cout << "compiled " << model << ": " << cg.num_kernels() << " kernels\n";
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
