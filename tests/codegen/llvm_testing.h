// Shared by the LLVM code generation tests: building lowered functions by hand, tensors, and
// calling JIT-compiled kernels.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "anvil/codegen/llvm/codegen_llvm.h"
#include "anvil/ir/op.h"
#include "anvil/ir/printer.h"
#include "anvil/runtime/ndarray.h"
#include "anvil/support/error.h"
#include "testing/errors.h"
#include "testing/kernel_args.h"

namespace anvil::llvm_testing {

using testing::array;
using testing::call;
using testing::dl_type;
using testing::func;
using testing::read;
using testing::write;

// The one-dimensional view of `b` that flattened bodies access: same name, element type and
// data variable.
inline ir::Buffer flat(const ir::Buffer& b, ir::Expr size) {
  return ir::Buffer::make_flat(b, std::move(size));
}

inline ir::Buffer flat(const ir::Buffer& b) {
  ir::Expr size = ir::make_one(ir::DataType::Int32());
  for (const ir::Expr& d : b->shape) size = size * d;
  return flat(b, size);
}

inline std::unique_ptr<codegen::LLVMModule> compile(const std::vector<ir::LoweredFunc>& funcs,
                                                    const Target& target = Target::host()) {
  return codegen::LLVMModule::compile(funcs, target);
}

inline int32_t call(AnvilKernel kernel, std::initializer_list<runtime::NDArray> arrays) {
  std::vector<const DLTensor*> args;
  for (const runtime::NDArray& a : arrays) args.push_back(a.get());
  return call(kernel, args);
}

// Runs `kernel` on the arrays and expects success.
#define ANVIL_EXPECT_RUNS(kernel, ...)                                          \
  do {                                                                          \
    int32_t anvil_status_ = ::anvil::llvm_testing::call(kernel, {__VA_ARGS__}); \
    EXPECT_EQ(anvil_status_, 0) << "kernel failed: " << AnvilGetLastError();    \
  } while (0)

// for (var = 0; var < extent; ++var) body
inline ir::Stmt loop(const ir::Var& var, ir::Expr extent, ir::Stmt body,
                     ir::ForKind kind = ir::ForKind::kSerial) {
  return ir::For::make(var, ir::make_zero(var.type()), std::move(extent), kind, std::move(body));
}

}  // namespace anvil::llvm_testing
