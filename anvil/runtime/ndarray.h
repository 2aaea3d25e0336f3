// NDArray: an owning, reference-counted tensor on the CPU whose DLTensor can be passed to
// kernels. Memory is ANVIL_ALIGNMENT-aligned.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "anvil/runtime/c_runtime_api.h"

namespace anvil::runtime {

class NDArray {
 public:
  NDArray() = default;
  // Uninitialized storage of the given shape and dtype (zero-filled when `zero`).
  // Throws std::invalid_argument naming the shape for negative dimensions.
  static NDArray empty(std::vector<int64_t> shape, DLDataType dtype, bool zero = false);

  bool defined() const { return state_ != nullptr; }
  DLTensor* get() const;  // stays valid while any copy of this NDArray lives
  const std::vector<int64_t>& shape() const;
  DLDataType dtype() const;
  int64_t numel() const;
  size_t nbytes() const;
  void* data() const;
  template <typename T>
  T* data_as() const {
    return static_cast<T*>(data());
  }

 private:
  struct State;
  std::shared_ptr<State> state_;
};

DLDataType dl_float32();
DLDataType dl_int32();

}  // namespace anvil::runtime
