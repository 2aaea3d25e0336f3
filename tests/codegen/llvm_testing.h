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

namespace anvil::llvm_testing {

inline ir::LoweredFunc func(std::string name, std::vector<ir::Buffer> args, ir::Stmt body) {
  return ir::LoweredFunc{std::move(name), std::move(args), std::move(body)};
}

// The one-dimensional view of `b` that flattened bodies access: same name, element type and
// data variable.
inline ir::Buffer flat(const ir::Buffer& b, ir::Expr size) {
  auto* node = new ir::BufferNode();
  node->name = b->name;
  node->dtype = b->dtype;
  node->shape = {std::move(size)};
  node->data = b->data;
  node->scope = b->scope;
  return ir::Buffer(node);
}

inline ir::Buffer flat(const ir::Buffer& b) {
  ir::Expr size = ir::make_one(ir::DataType::Int32());
  for (const ir::Expr& d : b->shape) size = size * d;
  return flat(b, size);
}

inline DLDataType dl_type(ir::DataType t) {
  return DLDataType{static_cast<uint8_t>(t.code()), static_cast<uint8_t>(t.bytes() * 8),
                    static_cast<uint16_t>(t.lanes())};
}

inline runtime::NDArray array(std::vector<int64_t> shape,
                              ir::DataType t = ir::DataType::Float32()) {
  return runtime::NDArray::empty(std::move(shape), dl_type(t), true);
}

template <typename T>
std::vector<T> read(const runtime::NDArray& a) {
  std::vector<T> v(a.nbytes() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), a.data(), v.size() * sizeof(T));
  return v;
}

template <typename T>
void write(const runtime::NDArray& a, const std::vector<T>& v) {
  ASSERT_EQ(v.size() * sizeof(T), a.nbytes());
  if (!v.empty()) std::memcpy(a.data(), v.data(), a.nbytes());
}

inline std::unique_ptr<codegen::LLVMModule> compile(const std::vector<ir::LoweredFunc>& funcs,
                                                    const Target& target = Target::host()) {
  return codegen::LLVMModule::compile(funcs, target);
}

inline int32_t call(AnvilKernel kernel, const std::vector<const DLTensor*>& args) {
  return kernel(args.data(), static_cast<int32_t>(args.size()), nullptr);
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
