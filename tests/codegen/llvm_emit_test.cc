// What the LLVM back end emits: fast-math flags, attributes and alias information in the IR,
// FMA vector code in the assembly, object files and shared libraries that the runtime loads,
// cross-compilation, and target errors.
#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "anvil/runtime/module.h"
#include "codegen/llvm_testing.h"

namespace anvil {
namespace {

using ir::Buffer;
using ir::DataType;
using ir::Expr;
using ir::Stmt;
using ir::Var;
using llvm_testing::array;
using llvm_testing::call;
using llvm_testing::compile;
using llvm_testing::func;
using llvm_testing::loop;
using llvm_testing::read;
using llvm_testing::write;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;

const DataType f32 = DataType::Float32();

// C[i] = A[i] * B[i] + C[i] over a symbolic n: a scalar loop for LLVM to vectorize.
ir::LoweredFunc fma_kernel(const std::string& name = "axpy") {
  Var n("n"), i("i");
  Buffer A = Buffer::make("A", f32, {n}), B = Buffer::make("B", f32, {n}),
         C = Buffer::make("C", f32, {n});
  Expr value = ir::Load::make(A, {i}) * ir::Load::make(B, {i}) + ir::Load::make(C, {i});
  return func(name, {A, B, C}, loop(i, n, ir::Store::make(C, value, {i})));
}

// A directory for this process's files, removed at exit.
const std::filesystem::path& test_dir() {
  struct Dir {
    std::filesystem::path path;
    Dir() {
      std::string pattern = (std::filesystem::temp_directory_path() / "anvil-llvm-XXXXXX").string();
      if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
      path = pattern;
    }
    ~Dir() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  };
  static Dir dir;
  return dir.path;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void expect_fma_kernel_runs(AnvilKernel kernel) {
  const int n = 1000;
  runtime::NDArray a = array({n}), b = array({n}), c = array({n});
  std::vector<float> av(n), bv(n), cv(n);
  for (int k = 0; k < n; ++k) av[k] = 0.5f * k, bv[k] = 2.0f - 0.001f * k, cv[k] = 1.0f;
  write(a, av);
  write(b, bv);
  write(c, cv);
  ASSERT_EQ(call(kernel, {a, b, c}), 0) << AnvilGetLastError();
  std::vector<float> out = read<float>(c);
  for (int k = 0; k < n; ++k) ASSERT_FLOAT_EQ(out[k], av[k] * bv[k] + 1.0f) << k;
}

// The lines of the hottest vector loop body: from the label before the first packed FMA to the
// backward branch after it.
std::string fma_loop(const std::string& assembly) {
  std::vector<std::string> lines;
  std::istringstream in(assembly);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  size_t fma = 0;
  while (fma < lines.size() && lines[fma].find("vfmadd") == std::string::npos) ++fma;
  if (fma == lines.size()) return "";
  size_t begin = fma, end = fma;
  while (begin > 0 && lines[begin].find(':') == std::string::npos) --begin;
  while (end < lines.size() && lines[end].find("\tj") == std::string::npos) ++end;
  std::string loop;
  for (size_t k = begin; k <= end && k < lines.size(); ++k) loop += lines[k] + "\n";
  return loop;
}

TEST(LLVMEmit, VectorizedFmaLoopUsesYmmOnHaswell) {
  auto m = compile({fma_kernel()}, Target::parse("llvm -mcpu=haswell"));
  std::string assembly = m->assembly();
  EXPECT_THAT(assembly, ContainsRegex("vfmadd[0-9a-z]*ps\t[^\n]*ymm"));
  std::printf("inner loop (-mcpu=haswell):\n%s", fma_loop(assembly).c_str());
  expect_fma_kernel_runs(m->get_function("axpy"));
}

TEST(LLVMEmit, VectorizedFmaLoopOnTheHost) {
  auto m = compile({fma_kernel()});
  std::string assembly = m->assembly();
  // The host has AVX2 at least: 256-bit FMAs, or 512-bit ones where it has AVX-512.
  EXPECT_THAT(assembly, ContainsRegex("vfmadd[0-9a-z]*ps\t[^\n]*(ymm|zmm)"));
  std::printf("inner loop (host):\n%s", fma_loop(assembly).c_str());
  expect_fma_kernel_runs(m->get_function("axpy"));
}

TEST(LLVMEmit, FastMathFlagsAreContractReassocAfnOnly) {
  auto m = compile({fma_kernel()});
  std::string ir = m->llvm_ir("axpy");
  EXPECT_THAT(ir, ContainsRegex("fmul reassoc contract afn <[0-9]+ x float>"));
  EXPECT_THAT(ir, ContainsRegex("fadd reassoc contract afn <[0-9]+ x float>"));
  for (const char* flag : {" nnan ", " ninf ", " nsz ", " arcp ", " fast "}) {
    EXPECT_THAT(ir, Not(HasSubstr(flag))) << flag;
  }
}

TEST(LLVMEmit, AttributesAndAliasInformation) {
  auto m = compile({fma_kernel()});
  std::string ir = m->llvm_ir();
  EXPECT_THAT(ir, ContainsRegex("\"target-cpu\"=\"[a-z0-9-]+\""));
  EXPECT_THAT(ir, ContainsRegex("\"target-features\"=\"[^\"]*\\+avx2"));
  EXPECT_THAT(ir, ContainsRegex("attributes #0 = \\{[^}]*nounwind"));
  // Every buffer is its own alias scope, so the vectorizer needs no run-time overlap checks.
  EXPECT_THAT(ir, HasSubstr("!alias.scope"));
  EXPECT_THAT(ir, HasSubstr("!noalias"));
  EXPECT_THAT(ir, Not(HasSubstr("vector.memcheck")));
  EXPECT_THAT(ir, ContainsRegex("@anvil_module_version = [a-z_ ]*constant i32 1"));
}

TEST(LLVMEmit, ExplicitCpuAndFeatures) {
  auto m = compile({fma_kernel()}, Target::parse("llvm -mcpu=x86-64 -mattr=+avx2,+fma"));
  std::string ir = m->llvm_ir();
  EXPECT_THAT(ir, HasSubstr("\"target-cpu\"=\"x86-64\""));
  EXPECT_THAT(ir, HasSubstr("\"target-features\"=\"+avx2,+fma\""));
  EXPECT_THAT(m->assembly(), ContainsRegex("vfmadd[0-9a-z]*ps\t[^\n]*ymm"));
  expect_fma_kernel_runs(m->get_function("axpy"));
}

TEST(LLVMEmit, ExplicitFeaturesOverrideTheHost) {
  auto m = compile({fma_kernel()}, Target::parse("llvm -mattr=-avx512f"));
  std::string assembly = m->assembly();
  EXPECT_THAT(assembly, ContainsRegex("vfmadd[0-9a-z]*ps\t[^\n]*ymm"));
  EXPECT_THAT(assembly, Not(HasSubstr("zmm")));
  expect_fma_kernel_runs(m->get_function("axpy"));
}

// The alignment of a vector access follows from what divides its index.
TEST(LLVMEmit, VectorAccessAlignment) {
  Var i("i");
  Buffer A = Buffer::make("A", f32, {1024}), B = Buffer::make("B", f32, {1024});
  auto ramp = [](Expr base, int lanes) { return ir::Ramp::make(base, 1, lanes); };
  // B[i*16 .. +8] = A[i*16 + 2 .. +8]: the load is 8-byte aligned; the store as aligned as an
  // argument is (16 bytes: ANVIL_ARG_ALIGNMENT), though its index is a multiple of 64 bytes.
  Stmt body =
      loop(i, 63, ir::Store::make(B, ir::Load::make(A, {ramp(i * 16 + 2, 8)}), {ramp(i * 16, 8)}));
  auto m = compile({func("aligned", {A, B}, body)});
  std::string ir = m->llvm_ir("aligned");
  EXPECT_THAT(ir, ContainsRegex("load <8 x float>, ptr %[^,]+, align 8"));
  EXPECT_THAT(ir, ContainsRegex("store <8 x float> %[^,]+, ptr %[^,]+, align 16"));
}

TEST(LLVMEmit, ParallelBodiesBelongToTheirKernel) {
  Var i("i");
  Buffer A = Buffer::make("A", f32, {64});
  auto m = compile({func(
      "par", {A}, loop(i, 64, ir::Store::make(A, ir::cast(f32, i), {i}), ir::ForKind::kParallel))});
  std::string ir = m->llvm_ir("par");
  EXPECT_THAT(ir, HasSubstr("define i32 @par("));
  EXPECT_THAT(ir, HasSubstr("define internal i32 @par.parallel0(i64 %begin, i64 %end, ptr"));
  EXPECT_THAT(anvil::testing::user_error([&] { m->llvm_ir("missing"); }),
              HasSubstr("no kernel named 'missing'"));
}

TEST(LLVMEmit, ObjectFileAndSharedLibraryRoundTrip) {
  auto m = compile({fma_kernel("axpy"), fma_kernel("axpy2")});
  std::filesystem::path object = test_dir() / "kernels.o";
  m->save_object(object.string());
  EXPECT_EQ(read_file(object).substr(0, 4),
            "\x7f"
            "ELF");

  std::filesystem::path library = test_dir() / "kernels.so";
  m->save_shared_library(library.string());
  // Directly with dlopen: the version symbol and the kernels.
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  const auto* version = static_cast<const int32_t*>(dlsym(handle, "anvil_module_version"));
  ASSERT_NE(version, nullptr);
  EXPECT_EQ(*version, runtime::kModuleVersion);
  auto kernel = reinterpret_cast<AnvilKernel>(dlsym(handle, "axpy2"));
  ASSERT_NE(kernel, nullptr);
  expect_fma_kernel_runs(kernel);
  dlclose(handle);
  // Through the runtime.
  runtime::Module loaded = runtime::Module::load(library.string());
  EXPECT_TRUE(loaded.has_function("axpy"));
  expect_fma_kernel_runs(loaded.get_function("axpy"));
  // Argument checks work from the library too.
  runtime::NDArray a = array({3}), b = array({4}), c = array({3});
  EXPECT_EQ(call(loaded.get_function("axpy"), {a, b, c}), -1);
  EXPECT_THAT(AnvilGetLastError(), HasSubstr("axpy: argument 1 ('B'): expected shape[0] = n = 3"));
}

TEST(LLVMEmit, SharedLibraryLinkErrorsAreReported) {
  auto m = compile({fma_kernel()});
  std::string e = anvil::testing::user_error(
      [&] { m->save_shared_library((test_dir() / "no-such-dir" / "k.so").string()); });
  EXPECT_THAT(e, HasSubstr("save_shared_library"));
  EXPECT_THAT(e, HasSubstr("failed"));
}

TEST(LLVMEmit, CrossCompilesForAarch64) {
  auto m = compile({fma_kernel()}, Target::parse("llvm -mtriple=aarch64-linux-gnu"));
  EXPECT_THAT(m->llvm_ir(), HasSubstr("target triple = \"aarch64-unknown-linux-gnu\""));
  EXPECT_THAT(m->assembly(), ContainsRegex("fmla\tv[0-9]+\\.4s"));
  std::filesystem::path object = test_dir() / "aarch64.o";
  m->save_object(object.string());
  std::string bytes = read_file(object);
  ASSERT_GE(bytes.size(), 20u);
  EXPECT_EQ(bytes.substr(0, 4),
            "\x7f"
            "ELF");
  EXPECT_EQ(static_cast<unsigned char>(bytes[18]), 183);  // e_machine: EM_AARCH64
  EXPECT_THAT(anvil::testing::user_error([&] { m->get_function("axpy"); }),
              HasSubstr("cannot run in this process"));
}

TEST(LLVMEmit, TargetErrors) {
  EXPECT_THAT(anvil::testing::user_error(
                  [&] { compile({fma_kernel()}, Target::parse("llvm -mcpu=notacpu")); }),
              HasSubstr("'notacpu' is not a CPU LLVM knows"));
  EXPECT_THAT(anvil::testing::user_error([&] {
                compile({fma_kernel()}, Target::parse("llvm -mtriple=nonsense-arch-os"));
              }),
              HasSubstr("LLVM cannot generate code for"));
  EXPECT_THAT(anvil::testing::user_error([&] { compile({fma_kernel()}, Target::parse("c")); }),
              HasSubstr("is not an llvm target"));
}

}  // namespace
}  // namespace anvil
