// Shared by the code generation tests: lowered functions built by hand, tensors for their
// arguments, and calls through the kernel ABI.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "anvil/ir/function.h"
#include "anvil/runtime/ndarray.h"

namespace anvil::testing {

inline ir::LoweredFunc func(std::string name, std::vector<ir::Buffer> args, ir::Stmt body) {
  return ir::LoweredFunc{std::move(name), std::move(args), std::move(body)};
}

inline DLDataType dl_type(ir::DataType t) {
  return DLDataType{static_cast<uint8_t>(t.code()), static_cast<uint8_t>(t.bytes() * 8),
                    static_cast<uint16_t>(t.lanes())};
}

// A zero-filled tensor.
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

inline int32_t call(AnvilKernel kernel, const std::vector<const DLTensor*>& args) {
  return kernel(args.data(), static_cast<int32_t>(args.size()), nullptr);
}

}  // namespace anvil::testing
