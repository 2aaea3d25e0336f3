// Every diagnostic of the C backend: what code generation rejects, what the compiler reports,
// and what a kernel's argument checks say at run time (leaving the output untouched).
#include <gtest/gtest.h>

#include <fstream>

#include "anvil/ir/printer.h"
#include "codegen/c_testing.h"
#include "testing/errors.h"

namespace anvil::testing {
namespace {

using namespace ir;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string generate_error(const std::vector<LoweredFunc>& funcs) {
  return user_error([&] { codegen::generate_c(funcs); });
}

// A 1-D copy kernel B[i] = A[i] over [0, n), with the given body when one is passed.
LoweredFunc copy_kernel(const std::string& name = "copy") {
  Var n("n"), i("i");
  Buffer a = Buffer::make("A", DataType::Float32(), {n});
  Buffer b = Buffer::make("B", DataType::Float32(), {n});
  return func(name, {a, b},
              For::make(i, 0, n, ForKind::kSerial, Store::make(b, Load::make(a, {i}), {i})));
}

TEST(CCodegenErrors, UnsupportedTypes) {
  Var i("i");
  Buffer h = Buffer::make("H", DataType::Float(16), {4});
  EXPECT_EQ(generate_error({func("half", {h}, Evaluate::make(0))}),
            "C code generation of kernel 'half': argument 'H' has type float16, which C code "
            "generation does not support (float32 and float64 only)");
  Buffer a = Buffer::make("A", DataType::Float32(), {4});
  Stmt body = For::make(
      i, 0, 4, ForKind::kSerial,
      Store::make(
          a, Cast::make(DataType::Float32(), Cast::make(DataType::BFloat16(), Load::make(a, {i}))),
          {i}));
  EXPECT_TRUE(contains(generate_error({func("bf", {a}, body)}),
                       "C code generation of kernel 'bf': expression bfloat16(A[i]) has type "
                       "bfloat16, which C code generation does not support"))
      << generate_error({func("bf", {a}, body)});
}

TEST(CCodegenErrors, GpuOnlyConstructs) {
  Var tx("tx");
  Buffer a = Buffer::make("A", DataType::Float32(), {4});
  EXPECT_EQ(generate_error({func("sync", {a}, Barrier::make(MemoryScope::kShared))}),
            "C code generation of kernel 'sync': Barrier is a GPU thread synchronization, which "
            "cannot run on the CPU");
  Stmt bound =
      For::make(tx, 0, 4, ForKind::kThreadBinding, Store::make(a, Expr(1.0f), {tx}), "threadIdx.x");
  EXPECT_EQ(generate_error({func("threads", {a}, bound)}),
            "C code generation of kernel 'threads': loop 'tx' is bound to GPU thread "
            "'threadIdx.x', which cannot run on the CPU");
}

TEST(CCodegenErrors, MalformedBodies) {
  Var i("i"), z("z");
  Buffer a = Buffer::make("A", DataType::Float32(), {4, 4});
  Buffer t = Buffer::make("T", DataType::Float32(), {4});
  EXPECT_EQ(generate_error({func("nd", {a}, Store::make(a, Expr(0.0f), {i, i}))}),
            "C code generation of kernel 'nd': Store of 'A' has 2 indices; C code generation "
            "expects flattened storage (one index per access; run flatten_storage)");
  Buffer flat = Buffer::make_flat(a, 16);
  EXPECT_EQ(generate_error({func("unbound", {a}, Store::make(flat, Expr(0.0f), {z}))}),
            "C code generation of kernel 'unbound': variable 'z' is used but never bound (it is "
            "not a loop variable, a let, or a symbolic dimension of an argument)");
  EXPECT_EQ(generate_error({func("stray", {a}, Store::make(t, Expr(0.0f), {0}))}),
            "C code generation of kernel 'stray': Store of buffer 'T', which is neither an "
            "argument nor allocated");
  // A view of A's memory with another element type.
  BufferNode* node = new BufferNode();
  node->name = "A";
  node->dtype = DataType::Int32();
  node->shape = {Expr(16)};
  node->data = a->data;
  node->scope = MemoryScope::kGlobal;
  Buffer as_int(node);
  EXPECT_EQ(generate_error({func("pun", {a}, Store::make(as_int, Expr(0), {0}))}),
            "C code generation of kernel 'pun': Store of 'A' as int32, but argument 'A' holds "
            "float32");
  Expr sum = Reduce::make(CommReducer::sum(DataType::Float32()), Load::make(flat, {i}),
                          {IterVar::make(i, Range::make(0, 16), IterKind::kReduce)});
  std::string reduce = generate_error({func("reduce", {a}, Store::make(flat, sum, {0}))});
  EXPECT_EQ(reduce, "C code generation of kernel 'reduce': Reduce " + to_string(sum) +
                        " must be lowered to loops before code generation");
  Buffer negative = Buffer::make("T", DataType::Float32(), {-1});
  EXPECT_EQ(generate_error({func("alloc", {a}, Allocate::make(negative, Evaluate::make(0)))}),
            "C code generation of kernel 'alloc': allocation 'T' has a negative extent -1");
  EXPECT_EQ(generate_error({func("empty", {a}, Stmt())}),
            "C code generation of kernel 'empty': the body is undefined");
}

TEST(CCodegenErrors, Arguments) {
  Var n("n");
  Buffer a = Buffer::make("A", DataType::Float32(), {n * 2});
  EXPECT_EQ(generate_error({func("derived", {a}, Evaluate::make(0))}),
            "C code generation of kernel 'derived': dimension 0 of argument 'A' is n*2, but 'n' "
            "is not by itself the extent of any argument dimension, so no argument binds it");
  Buffer b = Buffer::make("B", DataType::Float32(), {-2});
  EXPECT_EQ(generate_error({func("negative", {b}, Evaluate::make(0))}),
            "C code generation of kernel 'negative': argument 'B' has a negative extent -2 in "
            "dimension 0");
  Buffer c = Buffer::make("C", DataType::Float32(), {4});
  EXPECT_EQ(generate_error({func("twice", {c, c}, Evaluate::make(0))}),
            "C code generation of kernel 'twice': argument 1 ('C') is passed twice");
}

TEST(CCodegenErrors, KernelNames) {
  for (const char* name : {"2fast", "my-kernel", "exp", "anvil_module_version", "", "for"}) {
    EXPECT_EQ(generate_error({copy_kernel(name)}),
              std::string("C code generation: kernel name '") + name +
                  "' cannot be a C function name (it must be an identifier that C, its headers "
                  "and Anvil do not reserve)");
  }
  EXPECT_EQ(generate_error({copy_kernel("same"), copy_kernel("same")}),
            "C code generation: two kernels are named 'same'");
}

// Sets $CC for one scope.
class ScopedCC {
 public:
  explicit ScopedCC(const std::string& cc) { setenv("CC", cc.c_str(), 1); }
  ~ScopedCC() { unsetenv("CC"); }
};

TEST(CBuildErrors, CompilerFailureCarriesItsOutputAndTheSourcePath) {
  std::string header = (c_test_dir() / "broken.h").string();
  std::ofstream(header) << "#error \"forced failure for the test\"\n";
  ScopedCC cc("cc -include " + header);
  std::string path = fresh_library_path();
  std::string message = user_error([&] { codegen::build_c({copy_kernel()}, path); });
  std::string source = std::filesystem::path(path).replace_extension(".c").string();
  EXPECT_TRUE(contains(message, "build_c: compiling '" + source + "' failed")) << message;
  EXPECT_TRUE(contains(message, "forced failure for the test")) << message;
  EXPECT_TRUE(std::filesystem::exists(source));  // kept for the reader of the message
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(CBuildErrors, MissingCompiler) {
  ScopedCC cc("/nonexistent/bin/cc");
  std::string message = user_error([&] { build({copy_kernel()}); });
  EXPECT_TRUE(contains(message, "/nonexistent/bin/cc")) << message;
  EXPECT_TRUE(contains(message, "failed")) << message;
}

TEST(CBuildErrors, UnwritableSourcePath) {
  std::string message =
      user_error([&] { codegen::build_c({copy_kernel()}, "/nonexistent/dir/lib.so"); });
  EXPECT_EQ(message, "build_c: cannot write the C source to '/nonexistent/dir/lib.c'");
}

TEST(CBuildErrors, CpuFlagsFollowTheTarget) {
  EXPECT_EQ(codegen::c_cpu_flags(Target::parse("c")), "-march=native");
  EXPECT_EQ(codegen::c_cpu_flags(Target::parse("c -mcpu=znver3 -mattr=+avx2,-avx512f")),
            "-march=znver3 -mavx2 -mno-avx512f");
  EXPECT_EQ(user_error([] { codegen::c_cpu_flags(Target::parse("c -mtriple=aarch64-linux-gnu")); }),
            "target 'c -mtriple=aarch64-linux-gnu': the c target compiles with this machine's C "
            "compiler, for this machine; -mtriple is not supported (use an llvm target)");
}

// ---- run time: the argument checks

class CArgumentChecks : public ::testing::Test {
 protected:
  void SetUp() override {
    // add(A: float32[n], B: float32[n], C: float32[16]): C[i] = A[i] + B[i] for i < 16
    Var n("n"), i("i");
    Buffer a = Buffer::make("A", DataType::Float32(), {n});
    Buffer b = Buffer::make("B", DataType::Float32(), {n});
    Buffer c = Buffer::make("C", DataType::Float32(), {16});
    Stmt body = For::make(i, 0, 16, ForKind::kSerial,
                          Store::make(c, Load::make(a, {i}) + Load::make(b, {i}), {i}));
    module = build({func("add", {a, b, c}, body)});
    kernel = module.get_function("add");
    write(out, std::vector<float>(16, 42.0f));
  }

  // Calls the kernel, expects failure with `message`, and an untouched output.
  void expect_failure(const std::vector<const DLTensor*>& args, const std::string& message) {
    EXPECT_EQ(call(kernel, args), -1);
    EXPECT_EQ(AnvilGetLastError(), message);
    EXPECT_EQ(read<float>(out), std::vector<float>(16, 42.0f));
  }

  runtime::Module module;
  AnvilKernel kernel = nullptr;
  runtime::NDArray x = array({16}), y = array({16}), out = array({16});
};

TEST_F(CArgumentChecks, ArgumentCount) {
  expect_failure(tensors({x, y}), "add: expected 3 arguments, got 2");
  EXPECT_EQ(kernel(nullptr, 3, nullptr), -1);
  EXPECT_STREQ(AnvilGetLastError(), "add: argument 0 ('A'): expected an argument array, got NULL");
}

TEST_F(CArgumentChecks, NullTensor) {
  expect_failure({x.get(), nullptr, out.get()},
                 "add: argument 1 ('B'): expected a tensor, got NULL");
}

TEST_F(CArgumentChecks, DtypeRankAndShape) {
  runtime::NDArray ints = array({16}, DataType::Int32()), matrix = array({4, 4});
  runtime::NDArray longer = array({17});
  expect_failure(tensors({ints, y, out}),
                 "add: argument 0 ('A'): expected dtype float32, got int32");
  expect_failure(tensors({x, matrix, out}), "add: argument 1 ('B'): expected 1 dimensions, got 2");
  expect_failure(tensors({x, y, longer}), "add: argument 2 ('C'): expected shape[0] = 16, got 17");
  expect_failure(tensors({x, longer, out}),
                 "add: argument 1 ('B'): expected shape[0] = n = 16, got 17");
}

TEST_F(CArgumentChecks, AlignmentAndStrides) {
  DLTensor shifted = *y.get();
  shifted.byte_offset = 4;
  expect_failure(
      {x.get(), &shifted, out.get()},
      "add: argument 1 ('B'): data is not 16-byte aligned (data 0x" +
          [&] {
            char buffer[32];
            std::snprintf(buffer, sizeof buffer, "%lx", reinterpret_cast<unsigned long>(y.data()));
            return std::string(buffer);
          }() +
          ", byte_offset 4)");
  DLTensor strided = *x.get();
  int64_t strides[1] = {2};
  strided.strides = strides;
  expect_failure({&strided, y.get(), out.get()},
                 "add: argument 0 ('A'): expected compact row-major strides [1], got [2]");
}

TEST_F(CArgumentChecks, ValidCallStillWorks) {
  write(x, std::vector<float>(16, 1.5f));
  write(y, std::vector<float>(16, 2.0f));
  ANVIL_EXPECT_RUNS(kernel, tensors({x, y, out}));
  EXPECT_EQ(read<float>(out), std::vector<float>(16, 3.5f));
}

}  // namespace
}  // namespace anvil::testing
