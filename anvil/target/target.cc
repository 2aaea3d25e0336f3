#include "anvil/target/target.h"

#include <algorithm>
#include <charconv>
#include <sstream>

#include "anvil/support/error.h"

namespace anvil {

namespace {

// The widest vector register of the host, from the CPU's feature bits.
int host_vector_bits() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return 512;
  if (__builtin_cpu_supports("avx")) return 256;
  return 128;
#else
  return 128;
#endif
}

std::vector<std::string> split_commas(std::string_view text) {
  std::vector<std::string> parts;
  while (!text.empty()) {
    size_t comma = text.find(',');
    parts.emplace_back(text.substr(0, comma));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return parts;
}

}  // namespace

Target Target::parse(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::string word;
  ANVIL_CHECK(static_cast<bool>(in >> word), "target: empty target string");
  Target t;
  if (word == "llvm") {
    t.kind = Kind::kLLVM;
  } else if (word == "c") {
    t.kind = Kind::kC;
  } else if (word == "cuda") {
    t.kind = Kind::kCUDA;
    t.arch = "sm_90";
    t.max_threads_per_block = 1024;
    t.max_shared_memory = 48 * 1024;
  } else if (word == "opencl") {
    t.kind = Kind::kOpenCL;
    t.max_threads_per_block = 256;
    t.max_shared_memory = 32 * 1024;
  } else {
    ANVIL_FAIL("target '", text, "': unknown kind '", word, "' (expected llvm, c, cuda or opencl)");
  }
  auto positive = [&](const std::string& key, const std::string& value) {
    int64_t n = 0;
    auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    ANVIL_CHECK(ec == std::errc() && ptr == value.data() + value.size() && n > 0, "target '", text,
                "': ", key, " must be a positive integer, not '", value, "'");
    return n;
  };
  while (in >> word) {
    size_t eq = word.find('=');
    std::string key = word.substr(0, eq);
    std::string value = eq == std::string::npos ? "" : word.substr(eq + 1);
    ANVIL_CHECK(eq != std::string::npos && !value.empty(), "target '", text, "': option '", word,
                "' needs a value (-key=value)");
    if (t.is_gpu()) {
      if (key == "-arch" && t.kind == Kind::kCUDA) {
        ANVIL_CHECK(value.size() > 3 && value.rfind("sm_", 0) == 0 &&
                        std::all_of(value.begin() + 3, value.end(),
                                    [](char c) { return c >= '0' && c <= '9'; }),
                    "target '", text, "': -arch must be sm_<digits> (sm_90), not '", value, "'");
        t.arch = value;
      } else if (key == "-max-threads") {
        t.max_threads_per_block = positive(key, value);
      } else if (key == "-max-shared-memory") {
        t.max_shared_memory = positive(key, value);
      } else {
        ANVIL_FAIL("target '", text, "': unknown option '", key,
                   "' (known: ", t.kind == Kind::kCUDA ? "-arch, " : "",
                   "-max-threads, -max-shared-memory)");
      }
    } else if (key == "-mcpu") {
      t.mcpu = value;
    } else if (key == "-mtriple") {
      t.triple = value;
    } else if (key == "-mattr") {
      for (std::string& f : split_commas(value)) {
        ANVIL_CHECK(f.size() > 1 && (f[0] == '+' || f[0] == '-'), "target '", text, "': feature '",
                    f, "' must start with + or -");
        t.mattr.push_back(std::move(f));
      }
    } else if (key == "-threads") {
      auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), t.num_threads);
      ANVIL_CHECK(ec == std::errc() && ptr == value.data() + value.size() && t.num_threads >= 0,
                  "target '", text, "': -threads must be a non-negative integer, not '", value,
                  "'");
    } else if (key == "-vector-bits") {
      auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), t.vector_bits);
      ANVIL_CHECK(ec == std::errc() && ptr == value.data() + value.size() &&
                      (t.vector_bits == 128 || t.vector_bits == 256 || t.vector_bits == 512),
                  "target '", text, "': -vector-bits must be 128, 256 or 512, not '", value, "'");
    } else {
      ANVIL_FAIL("target '", text, "': unknown option '", key,
                 "' (known: -mcpu, -mtriple, -mattr, -threads, -vector-bits)");
    }
  }
  if (!t.is_gpu() && t.vector_bits == 0 && t.triple.empty() &&
      (t.mcpu.empty() || t.mcpu == "native")) {
    t.vector_bits = host_vector_bits();
  }
  return t;
}

Target Target::host() {
  return parse("llvm");
}

std::string Target::str() const {
  std::ostringstream os;
  if (is_gpu()) {
    os << (kind == Kind::kCUDA ? "cuda" : "opencl");
    if (!arch.empty()) os << " -arch=" << arch;
    os << " -max-threads=" << max_threads_per_block << " -max-shared-memory=" << max_shared_memory;
    return os.str();
  }
  os << (kind == Kind::kC ? "c" : "llvm");
  if (!triple.empty()) os << " -mtriple=" << triple;
  if (!mcpu.empty()) os << " -mcpu=" << mcpu;
  if (!mattr.empty()) {
    os << " -mattr=";
    for (size_t i = 0; i < mattr.size(); ++i) os << (i ? "," : "") << mattr[i];
  }
  if (num_threads > 0) os << " -threads=" << num_threads;
  if (vector_bits > 0) os << " -vector-bits=" << vector_bits;
  return os.str();
}

}  // namespace anvil
