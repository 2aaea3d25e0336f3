// A measurement worker for the tests of anvil/autotune/measure.h: serve_measurements with a
// kernel call that misbehaves:
//   fault_worker crash|hang|wrong|none
//     crash  the candidate segfaults        hang   it never returns
//     wrong  it runs, then corrupts its output    none   it behaves
#include <csignal>
#include <cstring>
#include <iostream>
#include <string>

#include "anvil/autotune/measure.h"

int main(int argc, char** argv) {
  const std::string fault = argc > 1 ? argv[1] : "none";
  anvil::autotune::KernelCall call = [fault](AnvilKernel kernel,
                                             const std::vector<const DLTensor*>& args) {
    if (fault == "crash") std::raise(SIGSEGV);
    if (fault == "hang") {
      volatile bool forever = true;
      while (forever) {
      }
    }
    int32_t status = kernel(args.data(), static_cast<int32_t>(args.size()), nullptr);
    if (fault == "wrong") static_cast<float*>(args.back()->data)[0] += 100.0f;
    return status;
  };
  anvil::autotune::serve_measurements(std::cin, std::cout, call);
  return 0;
}
