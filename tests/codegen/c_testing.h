// Shared by the C code generation tests: building modules into a private directory, tensors,
// and calling kernels.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "anvil/codegen/c/codegen_c.h"
#include "anvil/ir/op.h"
#include "anvil/runtime/ndarray.h"
#include "anvil/support/error.h"
#include "testing/kernel_args.h"

namespace anvil::testing {

// A directory for this process's generated sources and libraries, removed at exit unless
// ANVIL_KEEP_C_TESTS is set.
inline const std::filesystem::path& c_test_dir() {
  struct Dir {
    std::filesystem::path path;
    Dir() {
      std::string pattern = (std::filesystem::temp_directory_path() / "anvil-c-XXXXXX").string();
      if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
      path = pattern;
    }
    ~Dir() {
      std::error_code ignored;
      if (!std::getenv("ANVIL_KEEP_C_TESTS")) std::filesystem::remove_all(path, ignored);
    }
  };
  static Dir dir;
  return dir.path;
}

// A library path no module of this process has used (a library stays loaded while a Module
// holds it, so every build gets its own file).
inline std::string fresh_library_path() {
  static int counter = 0;
  return (c_test_dir() / ("module" + std::to_string(counter++) + ".so")).string();
}

inline runtime::Module build(const std::vector<ir::LoweredFunc>& funcs) {
  return codegen::build_c(funcs, fresh_library_path());
}

// The generated source of the module at `library` (build_c writes it beside the library).
inline std::string source_of(const runtime::Module& module) {
  std::filesystem::path path = std::filesystem::path(module.path()).replace_extension(".c");
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline std::vector<const DLTensor*> tensors(std::initializer_list<runtime::NDArray> arrays) {
  std::vector<const DLTensor*> out;
  for (const runtime::NDArray& a : arrays) out.push_back(a.get());
  return out;
}

// Runs `kernel` and expects success.
#define ANVIL_EXPECT_RUNS(kernel, ...)                                       \
  do {                                                                       \
    int32_t anvil_status_ = ::anvil::testing::call(kernel, __VA_ARGS__);     \
    EXPECT_EQ(anvil_status_, 0) << "kernel failed: " << AnvilGetLastError(); \
  } while (0)

}  // namespace anvil::testing
