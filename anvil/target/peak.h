// The machine's measured FP32 peak (see peak.cc for the method): the denominator of "fraction of
// peak" in `anvil run --profile` and the benchmarks.
#pragma once

#include <string>

namespace anvil {

// The measured FP32 peak of one core of this machine, in GFLOP/s: independent chains of fused
// multiply-adds in the widest vectors the CPU has (see peak.cc for the method). Measured once per
// process (about 20 ms), then cached.
struct PeakFlops {
  double gflops_per_core = 0;
  int lanes = 1;    // floats per vector the measurement used
  std::string isa;  // "avx512f", "avx2+fma" or "scalar"
};
const PeakFlops& measured_peak();

}  // namespace anvil
