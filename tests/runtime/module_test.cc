// Module loading, end to end: small C libraries are compiled here with the system C compiler and
// loaded through Module. The kernel below is what a generated one looks like: it checks its
// arguments through the runtime and runs its loop with AnvilParallelFor.
#include "anvil/runtime/module.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "anvil/runtime/ndarray.h"

namespace {

namespace fs = std::filesystem;
using anvil::runtime::dl_float32;
using anvil::runtime::Module;
using anvil::runtime::NDArray;

constexpr const char* kAddOne = R"(
#include "anvil/runtime/c_runtime_api.h"

const int32_t anvil_module_version = 1;

struct closure { const float* a; float* b; };

static int32_t body(int64_t begin, int64_t end, void* p) {
  struct closure* c = (struct closure*)p;
  for (int64_t i = begin; i < end; ++i) c->b[i] = c->a[i] + 1.0f;
  return 0;
}

int32_t add_one(const DLTensor* const* args, int32_t nargs, void* ctx) {
  static const int64_t shape[1] = {-1};
  (void)ctx;
  if (AnvilCheckArgCount("add_one", nargs, 2)) return -1;
  if (AnvilCheckTensor("add_one", args, 0, "A", 1, shape, kDLFloat, 32, 1)) return -1;
  if (AnvilCheckTensor("add_one", args, 1, "B", 1, shape, kDLFloat, 32, 1)) return -1;
  if (AnvilCheckDim("add_one", 1, "B", 0, "n", args[1]->shape[0], args[0]->shape[0])) return -1;
  struct closure c = {(const float*)args[0]->data, (float*)args[1]->data};
  return AnvilParallelFor(args[0]->shape[0], body, &c);
}
)";

class ModuleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "anvil_module_test_XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir = pattern;
  }
  void TearDown() override { fs::remove_all(dir); }

  // Compiles C `source` into dir/name and returns the library's path.
  std::string compile(const std::string& name, const std::string& source) {
    fs::path c_file = dir / (name + ".c"), library = dir / name;
    std::ofstream(c_file) << source;
    // The repository root, for the runtime's C header (this file is tests/runtime/module_test.cc).
    fs::path root = fs::path(__FILE__).parent_path().parent_path().parent_path();
    std::string command = "cc -std=c99 -Wall -Wextra -Werror -shared -fPIC -I'" + root.string() +
                          "' -o '" + library.string() + "' '" + c_file.string() + "' 2>&1";
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
    return library.string();
  }

  // The message of the std::runtime_error `f` throws.
  template <typename F>
  static std::string error_of(F&& f) {
    try {
      f();
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    ADD_FAILURE() << "nothing was thrown";
    return "";
  }

  fs::path dir;
};

TEST_F(ModuleTest, LoadsAndRunsAKernel) {
  Module m = Module::load(compile("add_one.so", kAddOne));
  EXPECT_EQ(m.path(), (dir / "add_one.so").string());
  EXPECT_TRUE(m.has_function("add_one"));
  AnvilKernel add_one = m.get_function("add_one");

  constexpr int64_t n = 1000;
  NDArray a = NDArray::empty({n}, dl_float32()), b = NDArray::empty({n}, dl_float32());
  for (int64_t i = 0; i < n; ++i) a.data_as<float>()[i] = static_cast<float>(i);
  const DLTensor* args[] = {a.get(), b.get()};
  ASSERT_EQ(add_one(args, 2, nullptr), 0) << AnvilGetLastError();
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(b.data_as<float>()[i], i + 1.0f) << i;

  // Its checks fail through the runtime, with the runtime's messages.
  NDArray shorter = NDArray::empty({n - 1}, dl_float32());
  const DLTensor* bad[] = {a.get(), shorter.get()};
  EXPECT_EQ(add_one(bad, 2, nullptr), -1);
  EXPECT_STREQ(AnvilGetLastError(),
               "add_one: argument 1 ('B'): expected shape[0] = n = 1000, got 999");
  EXPECT_EQ(add_one(args, 1, nullptr), -1);
  EXPECT_STREQ(AnvilGetLastError(), "add_one: expected 2 arguments, got 1");
}

TEST_F(ModuleTest, MissingKernel) {
  std::string path = compile("add_one.so", kAddOne);
  Module m = Module::load(path);
  EXPECT_FALSE(m.has_function("add_two"));
  EXPECT_EQ(error_of([&] { m.get_function("add_two"); }),
            "Anvil module '" + path + "' has no kernel 'add_two'");
}

TEST_F(ModuleTest, RefusesALibraryWithoutTheVersion) {
  std::string path = compile("plain.so", "int f(void) { return 1; }\n");
  EXPECT_EQ(error_of([&] { Module::load(path); }),
            "'" + path + "' is not an Anvil module: it does not define anvil_module_version");
}

TEST_F(ModuleTest, RefusesAnotherVersion) {
  std::string path = compile("v2.so", "const int anvil_module_version = 2;\n");
  EXPECT_EQ(
      error_of([&] { Module::load(path); }),
      "'" + path + "' is an Anvil module of version 2, expected 1 (rebuild it with this Anvil)");
}

TEST_F(ModuleTest, MissingFile) {
  std::string path = (dir / "absent.so").string();
  std::string message = error_of([&] { Module::load(path); });
  EXPECT_EQ(message.rfind("cannot load Anvil module '" + path + "': ", 0), 0u) << message;
  EXPECT_NE(message.find("No such file"), std::string::npos) << message;
}

TEST_F(ModuleTest, NotASharedLibrary) {
  std::string path = (dir / "text.so").string();
  std::ofstream(path) << "not an ELF file\n";
  std::string message = error_of([&] { Module::load(path); });
  EXPECT_EQ(message.rfind("cannot load Anvil module '" + path + "': ", 0), 0u) << message;
}

TEST_F(ModuleTest, APlainFileNameIsRelativeToTheWorkingDirectory) {
  compile("add_one.so", kAddOne);
  fs::path previous = fs::current_path();
  fs::current_path(dir);
  std::string message;
  try {
    EXPECT_TRUE(Module::load("add_one.so").has_function("add_one"));
  } catch (const std::exception& e) {
    message = e.what();
  }
  fs::current_path(previous);
  EXPECT_EQ(message, "");
}

TEST_F(ModuleTest, StaysLoadedWhileACopyLives) {
  std::string path = compile("add_one.so", kAddOne);
  auto loaded = [&] {
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
    if (h) dlclose(h);
    return h != nullptr;
  };
  {
    Module copy;
    {
      Module m = Module::load(path);
      copy = m;
    }
    EXPECT_TRUE(loaded());
    EXPECT_NE(copy.get_function("add_one"), nullptr);
  }
  EXPECT_FALSE(loaded());
}

TEST_F(ModuleTest, AnEmptyModuleHasNothing) {
  Module m;
  EXPECT_THROW(m.get_function("f"), std::logic_error);
  EXPECT_THROW(m.has_function("f"), std::logic_error);
  EXPECT_THROW(m.path(), std::logic_error);
}

}  // namespace
