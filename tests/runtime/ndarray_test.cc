#include "anvil/runtime/ndarray.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

namespace {

using anvil::runtime::dl_float32;
using anvil::runtime::dl_int32;
using anvil::runtime::NDArray;

// A device whose type code this DLPack does not name (as a newer producer may send), stored
// without forming an out-of-range enum value.
DLDevice unnamed_device(int32_t code, int32_t id) {
  DLDevice device{kDLCPU, id};
  static_assert(sizeof device.device_type == sizeof code);
  std::memcpy(&device.device_type, &code, sizeof code);
  return device;
}

bool aligned(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % ANVIL_ALIGNMENT == 0;
}

template <typename Exception, typename F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const Exception& e) {
    return e.what();
  }
  ADD_FAILURE() << "nothing was thrown";
  return "";
}

TEST(NDArray, DescribesItsTensor) {
  NDArray a = NDArray::empty({2, 3, 5}, dl_float32());
  EXPECT_TRUE(a.defined());
  EXPECT_EQ(a.shape(), (std::vector<int64_t>{2, 3, 5}));
  EXPECT_EQ(a.numel(), 30);
  EXPECT_EQ(a.nbytes(), 120u);
  EXPECT_EQ(a.dtype().code, kDLFloat);
  const DLTensor* t = a.get();
  EXPECT_EQ(t->data, a.data());
  EXPECT_EQ(t->device.device_type, kDLCPU);
  EXPECT_EQ(t->ndim, 3);
  EXPECT_EQ(t->shape, a.shape().data());
  EXPECT_EQ(t->strides, nullptr);
  EXPECT_EQ(t->byte_offset, 0u);
  EXPECT_EQ(t->dtype.bits, 32);
  EXPECT_EQ(t->dtype.lanes, 1);
}

TEST(NDArray, IsAlignedForEveryShape) {
  for (auto shape : std::vector<std::vector<int64_t>>{{}, {0}, {1}, {3}, {17}, {1000, 3}, {5, 0}})
    EXPECT_TRUE(aligned(NDArray::empty(shape, dl_int32()).data())) << shape.size();
}

TEST(NDArray, ScalarsAndEmptyTensors) {
  NDArray scalar = NDArray::empty({}, dl_float32());
  EXPECT_EQ(scalar.get()->ndim, 0);
  EXPECT_EQ(scalar.numel(), 1);
  EXPECT_EQ(scalar.nbytes(), 4u);
  NDArray empty = NDArray::empty({4, 0}, dl_float32());
  EXPECT_EQ(empty.numel(), 0);
  EXPECT_EQ(empty.nbytes(), 0u);
  EXPECT_NE(empty.data(), nullptr);  // still a valid pointer for the kernel checks
}

TEST(NDArray, SizesVectorAndSubByteTypes) {
  EXPECT_EQ(NDArray::empty({3}, DLDataType{kDLInt, 32, 4}).nbytes(), 48u);
  EXPECT_EQ(NDArray::empty({3}, DLDataType{kDLInt, 4, 1}).nbytes(), 2u);
  EXPECT_EQ(NDArray::empty({2}, DLDataType{6, 8, 1}).nbytes(), 2u);
}

TEST(NDArray, ZeroFills) {
  constexpr int64_t n = 1 << 16;
  {
    // Leave garbage where the next allocation is likely to land.
    NDArray dirty = NDArray::empty({n}, dl_int32());
    std::memset(dirty.data(), 0xFF, dirty.nbytes());
  }
  NDArray a = NDArray::empty({n}, dl_int32(), /*zero=*/true);
  int64_t nonzero = 0;
  for (int64_t i = 0; i < n; ++i) nonzero += a.data_as<int32_t>()[i] != 0;
  EXPECT_EQ(nonzero, 0);
}

TEST(NDArray, CopiesShareStorageThatOutlivesTheOriginal) {
  DLTensor* t;
  NDArray copy;
  {
    NDArray a = NDArray::empty({4}, dl_float32());
    copy = a;
    t = a.get();
    EXPECT_EQ(copy.data(), a.data());
  }
  t->shape[0] = 4;  // the sanitizer build catches a dangling tensor, shape or data
  copy.data_as<float>()[3] = 1.0f;
  EXPECT_EQ(copy.get(), t);
}

TEST(NDArray, RejectsBadShapesAndTypes) {
  EXPECT_EQ(message_of<std::invalid_argument>([] {
              NDArray::empty({2, -1}, dl_float32());
            }),
            "NDArray::empty([2, -1], float32): dimension 1 is negative");
  EXPECT_EQ(message_of<std::invalid_argument>([] {
              NDArray::empty({int64_t{1} << 40, int64_t{1} << 40}, dl_float32());
            }),
            "NDArray::empty([1099511627776, 1099511627776], float32): the tensor is too large to "
            "address");
  EXPECT_EQ(message_of<std::invalid_argument>([] {
              NDArray::empty({2}, DLDataType{kDLFloat, 32, 0});
            }),
            "NDArray::empty([2], float32x0): a dtype needs non-zero bits and lanes");
}

TEST(NDArray, UndefinedArrays) {
  NDArray a;
  EXPECT_FALSE(a.defined());
  EXPECT_EQ(a.get(), nullptr);
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(message_of<std::logic_error>([&] { a.shape(); }),
            "NDArray::shape: the NDArray is undefined");
  EXPECT_THROW(a.numel(), std::logic_error);
  EXPECT_THROW(a.nbytes(), std::logic_error);
  EXPECT_THROW(a.dtype(), std::logic_error);
}

TEST(NDArray, PassesTheKernelChecks) {
  NDArray a = NDArray::empty({8, 16}, dl_float32());
  const DLTensor* args[] = {a.get()};
  int64_t expected[] = {8, 16};
  EXPECT_EQ(AnvilCheckTensor("k", args, 0, "A", 2, expected, kDLFloat, 32, 1), 0)
      << AnvilGetLastError();
}

TEST(ToString, DtypesAndDevices) {
  using anvil::runtime::to_string;
  EXPECT_EQ(to_string(dl_float32()), "float32");
  EXPECT_EQ(to_string(DLDataType{kDLInt, 32, 4}), "int32x4");
  EXPECT_EQ(to_string(DLDataType{kDLUInt, 8, 1}), "uint8");
  EXPECT_EQ(to_string(DLDataType{kDLBfloat, 16, 1}), "bfloat16");
  EXPECT_EQ(to_string(DLDataType{kDLOpaqueHandle, 64, 1}), "handle");
  EXPECT_EQ(to_string(DLDataType{6, 8, 1}), "bool");
  EXPECT_EQ(to_string(DLDataType{42, 8, 2}), "dtype(code 42, bits 8)x2");
  EXPECT_EQ(to_string(DLDevice{kDLCPU, 0}), "cpu");
  EXPECT_EQ(to_string(DLDevice{kDLCPU, 1}), "cpu:1");
  EXPECT_EQ(to_string(DLDevice{kDLCUDA, 0}), "cuda:0");
  EXPECT_EQ(to_string(unnamed_device(77, 2)), "device_type 77:2");
}

}  // namespace
