// NDArray: an owning, reference-counted tensor on the CPU whose DLTensor can be passed to
// kernels. Memory it allocates is ANVIL_ALIGNMENT-aligned; a view (of a caller's memory) needs
// only ANVIL_ARG_ALIGNMENT.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "anvil/runtime/c_runtime_api.h"

namespace anvil::runtime {

class NDArray {
 public:
  NDArray() = default;
  // Uninitialized storage of the given shape and dtype (zero-filled when `zero`).
  // Throws std::invalid_argument naming the shape for negative dimensions.
  static NDArray empty(std::vector<int64_t> shape, DLDataType dtype, bool zero = false);
  // An array over `data` (ANVIL_ARG_ALIGNMENT-aligned, at least the shape's bytes), which `owner`
  // keeps alive as long as any copy of the array lives; nothing is copied (a model's parameters are
  // views of one block: runtime/host_memory.h).
  static NDArray view(std::shared_ptr<void> owner, void* data, std::vector<int64_t> shape,
                      DLDataType dtype);

  bool defined() const { return state_ != nullptr; }
  // get() and data() are NULL for an undefined NDArray (a kernel's check then names the argument);
  // the other accessors throw std::logic_error for it.
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

// Whether the bytes of `a` and `b` share any address (empty arrays share none).
bool memory_overlaps(const NDArray& a, const NDArray& b);

DLDataType dl_float32();
DLDataType dl_int32();

// As Anvil prints them everywhere: "float32", "int32x4", "bool"; "cpu", "cuda:1".
std::string to_string(DLDataType dtype);
std::string to_string(DLDevice device);
// "[1, 3, 224, 224]": a shape in messages.
std::string shape_str(const std::vector<int64_t>& shape);

// device.device_type as stored. Loading the enum itself is undefined behaviour for a code this
// DLPack (0.6) does not name, which a newer producer's tensor may carry.
inline int32_t device_type_code(const DLDevice& device) {
  std::underlying_type_t<DLDeviceType> code;
  std::memcpy(&code, &device.device_type, sizeof code);
  return static_cast<int32_t>(code);
}

}  // namespace anvil::runtime
