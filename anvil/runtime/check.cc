// The argument checks of generated kernel entries. The success path only compares; messages are
// built on failure.
#include <cinttypes>
#include <cstdio>
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
  if (args == nullptr) return fail(kernel, index, name, "expected an argument array, got NULL");
  const DLTensor* t = args[index];
  if (t == nullptr) return fail(kernel, index, name, "expected a tensor, got NULL");
  if (anvil::runtime::device_type_code(t->device) != kDLCPU)
    return fail(kernel, index, name, "expected device cpu, got " + to_string(t->device));
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
  // Integer arithmetic: the address is never formed as a pointer, so nothing here is UB.
  uintptr_t address = reinterpret_cast<uintptr_t>(t->data) + t->byte_offset;
  if (address % ANVIL_ALIGNMENT != 0)
    return fail(kernel, index, name,
                "data is not " + std::to_string(ANVIL_ALIGNMENT) + "-byte aligned (data " +
                    hex(reinterpret_cast<uintptr_t>(t->data)) + ", byte_offset " +
                    std::to_string(t->byte_offset) + ")");
  return 0;
}

int32_t AnvilCheckDim(const char* kernel, int32_t index, const char* name, int32_t dim,
                      const char* var, int64_t got, int64_t expected) {
  if (got == expected) return 0;
  return fail(kernel, index, name,
              "expected shape[" + std::to_string(dim) + "] = " + or_unnamed(var) + " = " +
                  std::to_string(expected) + ", got " + std::to_string(got));
}

}  // extern "C"
