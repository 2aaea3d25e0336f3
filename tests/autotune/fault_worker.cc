// A measurement worker for the tests of anvil/autotune/measure.h: serve_measurements with a
// kernel call that misbehaves:
//   fault_worker FAULT[/N/R][:KNOB=VALUE,...] ...
// Each argument names a fault, for every candidate or only for those whose configuration has
// all the knob values it lists; with /N/R, only for the configurations whose hash is R modulo N
// (one in N, the same ones after every restart of the worker). The first fault that applies to a
// candidate wins; none: it behaves.
//     crash  the candidate segfaults        hang   it never returns
//     wrong  it runs, then corrupts its output    none   it behaves
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "anvil/autotune/measure.h"

namespace {

struct Fault {
  std::string kind;
  anvil::ops::Config when;  // the knob values a candidate must have (empty: every candidate)
  uint64_t modulus = 1, residue = 0;
};

// FNV-1a over the configuration's knobs and values, in order.
uint64_t config_hash(const anvil::ops::Config& config) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const auto& [knob, value] : config)
    for (char c : knob + "=" + std::to_string(value) + ";")
      h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  return h;
}

Fault parse(const std::string& arg) {
  Fault f;
  size_t colon = arg.find(':');
  f.kind = arg.substr(0, colon);
  if (size_t slash = f.kind.find('/'); slash != std::string::npos) {
    size_t second = f.kind.find('/', slash + 1);
    if (second == std::string::npos) {
      std::cerr << "fault_worker: '" << f.kind << "' is not FAULT/N/R\n";
      std::exit(2);
    }
    try {
      f.modulus = std::stoull(f.kind.substr(slash + 1, second - slash - 1));
      f.residue = std::stoull(f.kind.substr(second + 1));
    } catch (const std::exception&) {
      f.modulus = 0;
    }
    if (f.modulus == 0 || f.residue >= f.modulus) {
      std::cerr << "fault_worker: '" << f.kind << "' is not FAULT/N/R with N >= 1 and R < N\n";
      std::exit(2);
    }
    f.kind = f.kind.substr(0, slash);
  }
  if (colon == std::string::npos) return f;
  std::string rest = arg.substr(colon + 1);
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string item = rest.substr(0, comma);
    size_t eq = item.find('=');
    if (eq == std::string::npos) {
      std::cerr << "fault_worker: '" << item << "' is not KNOB=VALUE\n";
      std::exit(2);
    }
    f.when[item.substr(0, eq)] = std::stoll(item.substr(eq + 1));
    rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
  }
  return f;
}

std::string fault_of(const std::vector<Fault>& faults, const anvil::ops::Config& config) {
  for (const Fault& f : faults) {
    bool applies = config_hash(config) % f.modulus == f.residue;
    for (const auto& [knob, value] : f.when) {
      auto it = config.find(knob);
      applies = applies && it != config.end() && it->second == value;
    }
    if (applies) return f.kind;
  }
  return "none";
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<Fault> faults;
  for (int i = 1; i < argc; ++i) faults.push_back(parse(argv[i]));
  anvil::autotune::KernelCall call = [faults](AnvilKernel kernel,
                                              const std::vector<const DLTensor*>& args,
                                              const anvil::ops::Config& config) {
    const std::string fault = fault_of(faults, config);
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
