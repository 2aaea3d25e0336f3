// Target: what to generate code for, parsed from strings like "llvm -mcpu=znver3",
// "llvm -mtriple=aarch64-linux-gnu", "c".
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace anvil {

struct Target {
  enum class Kind { kLLVM, kC };

  Kind kind = Kind::kLLVM;
  std::string triple;              // empty: the host's
  std::string mcpu;                // empty or "native": the host CPU
  std::vector<std::string> mattr;  // extra features, e.g. "+avx2", "-avx512f"
  int num_threads = 0;             // 0: the runtime's default
  // Width of the widest vector register in bits for the resolved CPU (256 for AVX2, 512 for
  // AVX-512, 128 for NEON); filled by resolve_host().
  int vector_bits = 0;

  // Throws anvil::Error naming the bad part for an unknown kind or option.
  static Target parse(std::string_view text);
  // The host machine: triple, CPU name, features and vector width as the host reports them.
  static Target host();
  // Canonical text: parse(t.str()) == t.
  std::string str() const;
  // Floats per vector register.
  int vector_lanes_f32() const { return vector_bits > 0 ? vector_bits / 32 : 8; }

  friend bool operator==(const Target&, const Target&) = default;
};

}  // namespace anvil
