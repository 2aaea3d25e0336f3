// The argument checks of generated kernel entries. The success path only compares; messages are
// built on failure.
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "anvil/runtime/c_runtime_api.h"
#include "anvil/runtime/ndarray.h"

namespace {

using anvil::runtime::to_string;

const char* or_unnamed(const char* s) {
  return s ? s : "<unnamed>";
}

int32_t fail(const char* kernel, int32_t index, const char* name, const std::string& what) {
  std::string message = std::string(or_unnamed(kernel)) + ": argument " + std::to_string(index) +
                        " ('" + or_unnamed(name) + "'): " + what;
  AnvilSetLastError(message.c_str());
  return -1;
}

std::string list(const int64_t* values, int32_t n) {
  std::string s = "[";
  for (int32_t i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(values[i]);
  return s + "]";
}

std::string hex(uintptr_t value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "0x%" PRIxPTR, value);
  return buffer;
}

// "cpu", "opencl": a device type as to_string(DLDevice) names it, without the id.
std::string device_name(int32_t device_type) {
  DLDevice device{kDLCPU, 0};
  static_assert(sizeof device.device_type == sizeof device_type);
  std::memcpy(&device.device_type, &device_type, sizeof device_type);
  std::string name = to_string(device);
  return name.substr(0, name.rfind(':'));
}

// AnvilCheckTensor and AnvilCheckDeviceTensor: the same checks, in the same order, for a tensor on
// `device_type`. A device tensor's `data` is a handle (a CUdeviceptr, a cl_mem), not an address,
// so only its byte_offset can be checked for alignment.
int32_t check_tensor(const char* kernel, const DLTensor* const* args, int32_t index,
                     const char* name, int32_t ndim, const int64_t* expected_shape,
                     uint8_t dtype_code, uint8_t dtype_bits, uint16_t dtype_lanes,
                     int32_t device_type) {
  if (args == nullptr) return fail(kernel, index, name, "expected an argument array, got NULL");
  const DLTensor* t = args[index];
  if (t == nullptr) return fail(kernel, index, name, "expected a tensor, got NULL");
  if (anvil::runtime::device_type_code(t->device) != device_type)
    return fail(kernel, index, name,
                "expected device " + device_name(device_type) + ", got " + to_string(t->device));
  if (t->ndim != ndim)
    return fail(kernel, index, name,
                "expected " + std::to_string(ndim) + " dimensions, got " + std::to_string(t->ndim));
  if (t->dtype.code != dtype_code || t->dtype.bits != dtype_bits || t->dtype.lanes != dtype_lanes)
    return fail(kernel, index, name,
                "expected dtype " + to_string(DLDataType{dtype_code, dtype_bits, dtype_lanes}) +
                    ", got " + to_string(t->dtype));
  if (ndim > 0 && t->shape == nullptr)
    return fail(kernel, index, name, "expected a shape array, got NULL");
  for (int32_t d = 0; expected_shape && d < ndim; ++d) {
    if (expected_shape[d] >= 0 && t->shape[d] != expected_shape[d])
      return fail(kernel, index, name,
                  "expected shape[" + std::to_string(d) + "] = " +
                      std::to_string(expected_shape[d]) + ", got " + std::to_string(t->shape[d]));
  }
  if (t->strides != nullptr) {
    // Compact row-major. A dimension of extent 1 is never stepped over, so its stride is free
    // (frameworks export arbitrary ones there); an empty tensor has no layout at all.
    bool compact = true, empty = false;
    int64_t stride = 1;
    for (int32_t d = ndim - 1; d >= 0; --d) {
      if (t->shape[d] != 1 && t->strides[d] != stride) compact = false;
      empty |= t->shape[d] == 0;
      stride *= t->shape[d];
    }
    if (!compact && !empty) {
      std::vector<int64_t> expected(ndim);
      stride = 1;
      for (int32_t d = ndim - 1; d >= 0; --d) expected[d] = stride, stride *= t->shape[d];
      return fail(kernel, index, name,
                  "expected compact row-major strides " + list(expected.data(), ndim) + ", got " +
                      list(t->strides, ndim));
    }
  }
  if (t->data == nullptr) return fail(kernel, index, name, "expected a data pointer, got NULL");
  if (device_type != kDLCPU) {
    if (t->byte_offset % ANVIL_ALIGNMENT != 0)
      return fail(kernel, index, name,
                  "byte_offset " + std::to_string(t->byte_offset) + " is not a multiple of " +
                      std::to_string(ANVIL_ALIGNMENT));
    // A CUDA array's data is its device address, which kernels load 16 bytes at a time (an
    // OpenCL array's is a buffer handle: its vector loads need no more than element alignment).
    if (device_type == kDLCUDA && reinterpret_cast<uintptr_t>(t->data) % ANVIL_ARG_ALIGNMENT != 0)
      return fail(kernel, index, name,
                  "device address " + hex(reinterpret_cast<uintptr_t>(t->data)) + " is not " +
                      std::to_string(ANVIL_ARG_ALIGNMENT) + "-byte aligned");
    return 0;
  }
  // Integer arithmetic: the address is never formed as a pointer, so nothing here is UB.
  uintptr_t address = reinterpret_cast<uintptr_t>(t->data) + t->byte_offset;
  if (address % ANVIL_ARG_ALIGNMENT != 0)
    return fail(kernel, index, name,
                "data is not " + std::to_string(ANVIL_ARG_ALIGNMENT) + "-byte aligned (data " +
                    hex(reinterpret_cast<uintptr_t>(t->data)) + ", byte_offset " +
                    std::to_string(t->byte_offset) + ")");
  return 0;
}

}  // namespace

extern "C" {

int32_t AnvilCheckArgCount(const char* kernel, int32_t nargs, int32_t expected) {
  if (nargs == expected) return 0;
  std::string message = std::string(or_unnamed(kernel)) + ": expected " + std::to_string(expected) +
                        (expected == 1 ? " argument" : " arguments") + ", got " +
                        std::to_string(nargs);
  AnvilSetLastError(message.c_str());
  return -1;
}

int32_t AnvilCheckTensor(const char* kernel, const DLTensor* const* args, int32_t index,
                         const char* name, int32_t ndim, const int64_t* expected_shape,
                         uint8_t dtype_code, uint8_t dtype_bits, uint16_t dtype_lanes) {
  return check_tensor(kernel, args, index, name, ndim, expected_shape, dtype_code, dtype_bits,
                      dtype_lanes, kDLCPU);
}

int32_t AnvilCheckDeviceTensor(const char* kernel, const DLTensor* const* args, int32_t index,
                               const char* name, int32_t ndim, const int64_t* expected_shape,
                               uint8_t dtype_code, uint8_t dtype_bits, uint16_t dtype_lanes,
                               int32_t device_type) {
  return check_tensor(kernel, args, index, name, ndim, expected_shape, dtype_code, dtype_bits,
                      dtype_lanes, device_type);
}

int32_t AnvilCheckDim(const char* kernel, int32_t index, const char* name, int32_t dim,
                      const char* var, int64_t got, int64_t expected) {
  if (got == expected) return 0;
  return fail(kernel, index, name,
              "expected shape[" + std::to_string(dim) + "] = " + or_unnamed(var) + " = " +
                  std::to_string(expected) + ", got " + std::to_string(got));
}

}  // extern "C"
