// The argument checks of generated kernels: success, and every message a user can meet.
#include <gtest/gtest.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "anvil/runtime/c_runtime_api.h"

namespace {

constexpr DLDataType kFloat32{kDLFloat, 32, 1};

// A device whose type code this DLPack does not name (as a newer producer may send), stored
// without forming an out-of-range enum value.
DLDevice unnamed_device(int32_t code, int32_t id) {
  DLDevice device{kDLCPU, id};
  static_assert(sizeof device.device_type == sizeof code);
  std::memcpy(&device.device_type, &code, sizeof code);
  return device;
}

// A well-formed 2-D float32 tensor over aligned storage (never read) and the checks of matmul's
// third argument C, which expects shape [-1, 64] float32.
class CheckTensor : public ::testing::Test {
 protected:
  void SetUp() override {
    tensor.data = storage;
    tensor.device = DLDevice{kDLCPU, 0};
    tensor.ndim = 2;
    tensor.dtype = kFloat32;
    tensor.shape = shape.data();
  }
  int32_t check(int32_t ndim = 2, DLDataType dtype = kFloat32) {
    const DLTensor* args[] = {&tensor, &tensor, &tensor};
    return AnvilCheckTensor("matmul", args, 2, "C", ndim, expected.data(), dtype.code, dtype.bits,
                            dtype.lanes);
  }
  // The message check() left, after checking that it failed.
  std::string failure(int32_t ndim = 2, DLDataType dtype = kFloat32) {
    EXPECT_EQ(check(ndim, dtype), -1);
    return AnvilGetLastError();
  }

  alignas(ANVIL_ALIGNMENT) char storage[1024] = {};
  std::vector<int64_t> shape{32, 64};
  std::vector<int64_t> strides;
  std::vector<int64_t> expected{-1, 64};
  DLTensor tensor{};
};

TEST_F(CheckTensor, AcceptsAMatchingTensor) {
  AnvilSetLastError("earlier");
  EXPECT_EQ(check(), 0);
  EXPECT_STREQ(AnvilGetLastError(), "earlier");  // success leaves the last error alone
}

TEST_F(CheckTensor, NullArguments) {
  EXPECT_EQ(AnvilCheckTensor("matmul", nullptr, 2, "C", 2, expected.data(), kDLFloat, 32, 1), -1);
  EXPECT_STREQ(AnvilGetLastError(),
               "matmul: argument 2 ('C'): expected an argument array, got NULL");
  const DLTensor* args[] = {&tensor, nullptr};
  EXPECT_EQ(AnvilCheckTensor("matmul", args, 1, "B", 2, expected.data(), kDLFloat, 32, 1), -1);
  EXPECT_STREQ(AnvilGetLastError(), "matmul: argument 1 ('B'): expected a tensor, got NULL");
  EXPECT_EQ(AnvilCheckTensor(nullptr, nullptr, 0, nullptr, 2, nullptr, kDLFloat, 32, 1), -1);
  EXPECT_STREQ(AnvilGetLastError(),
               "<unnamed>: argument 0 ('<unnamed>'): expected an argument array, got NULL");
}

TEST_F(CheckTensor, Device) {
  tensor.device = DLDevice{kDLCUDA, 1};
  EXPECT_EQ(failure(), "matmul: argument 2 ('C'): expected device cpu, got cuda:1");
  tensor.device = DLDevice{kDLOpenCL, 0};
  EXPECT_EQ(failure(), "matmul: argument 2 ('C'): expected device cpu, got opencl:0");
  tensor.device = unnamed_device(99, 0);
  EXPECT_EQ(failure(), "matmul: argument 2 ('C'): expected device cpu, got device_type 99:0");
}

TEST_F(CheckTensor, Rank) {
  EXPECT_EQ(failure(3), "matmul: argument 2 ('C'): expected 3 dimensions, got 2");
}

TEST_F(CheckTensor, Dtype) {
  tensor.dtype = DLDataType{kDLInt, 32, 4};
  EXPECT_EQ(failure(), "matmul: argument 2 ('C'): expected dtype float32, got int32x4");
  tensor.dtype = DLDataType{kDLFloat, 16, 1};
  EXPECT_EQ(failure(), "matmul: argument 2 ('C'): expected dtype float32, got float16");
  tensor.dtype = kFloat32;
  EXPECT_EQ(failure(2, DLDataType{kDLFloat, 32, 8}),
            "matmul: argument 2 ('C'): expected dtype float32x8, got float32");
  EXPECT_EQ(failure(2, DLDataType{kDLUInt, 8, 1}),
            "matmul: argument 2 ('C'): expected dtype uint8, got float32");
  EXPECT_EQ(failure(2, DLDataType{6, 8, 1}),
            "matmul: argument 2 ('C'): expected dtype bool, got float32");
  EXPECT_EQ(failure(2, DLDataType{kDLBfloat, 16, 1}),
            "matmul: argument 2 ('C'): expected dtype bfloat16, got float32");
}

TEST_F(CheckTensor, Shape) {
  shape[1] = 65;
  EXPECT_EQ(failure(), "matmul: argument 2 ('C'): expected shape[1] = 64, got 65");
  shape = {7, 64};  // dimension 0 is symbolic
  tensor.shape = shape.data();
  EXPECT_EQ(check(), 0);
  const DLTensor* args[] = {&tensor};
  EXPECT_EQ(AnvilCheckTensor("matmul", args, 0, "A", 2, nullptr, kDLFloat, 32, 1), 0);
  tensor.shape = nullptr;
  EXPECT_EQ(failure(), "matmul: argument 2 ('C'): expected a shape array, got NULL");
}

TEST_F(CheckTensor, Strides) {
  strides = {64, 1};
  tensor.strides = strides.data();
  EXPECT_EQ(check(), 0);
  strides = {1, 32};  // column-major
  EXPECT_EQ(failure(),
            "matmul: argument 2 ('C'): expected compact row-major strides [64, 1], got [1, 32]");
  strides = {128, 1};  // a row of a larger matrix
  EXPECT_EQ(failure(),
            "matmul: argument 2 ('C'): expected compact row-major strides [64, 1], got [128, 1]");
  // An extent-1 dimension is never stepped over: any stride is compact.
  shape = {1, 64};
  strides = {12345, 1};
  EXPECT_EQ(check(), 0);
  // An empty tensor has no layout.
  shape = {0, 64};
  strides = {3, 5};
  EXPECT_EQ(check(), 0);
}

TEST_F(CheckTensor, Data) {
  tensor.data = nullptr;
  EXPECT_EQ(failure(), "matmul: argument 2 ('C'): expected a data pointer, got NULL");
  auto hex = [](const void* p) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "0x%" PRIxPTR, reinterpret_cast<uintptr_t>(p));
    return std::string(buffer);
  };
  tensor.data = storage + 4;
  EXPECT_EQ(failure(), "matmul: argument 2 ('C'): data is not 16-byte aligned (data " +
                           hex(storage + 4) + ", byte_offset 0)");
  tensor.data = storage;
  tensor.byte_offset = 40;
  EXPECT_EQ(failure(), "matmul: argument 2 ('C'): data is not 16-byte aligned (data " +
                           hex(storage) + ", byte_offset 40)");
  tensor.byte_offset = 48;  // 16-byte aligned is enough: a NumPy array's alignment
  EXPECT_EQ(check(), 0);
  tensor.data = storage + 4;  // what counts is data + byte_offset
  tensor.byte_offset = 60;
  EXPECT_EQ(check(), 0);
}

TEST_F(CheckTensor, ReportsTheFirstProblemInOrder) {
  // device, rank, dtype, shape, strides, data: the order a reader fixes them in.
  tensor.dtype = DLDataType{kDLInt, 8, 1};
  shape[1] = 3;
  tensor.data = nullptr;
  EXPECT_EQ(failure(), "matmul: argument 2 ('C'): expected dtype float32, got int8");
  tensor.device = DLDevice{kDLCUDA, 0};
  EXPECT_EQ(failure(), "matmul: argument 2 ('C'): expected device cpu, got cuda:0");
}

TEST(CheckArgCount, CountsArguments) {
  EXPECT_EQ(AnvilCheckArgCount("matmul", 3, 3), 0);
  EXPECT_EQ(AnvilCheckArgCount("matmul", 2, 3), -1);
  EXPECT_STREQ(AnvilGetLastError(), "matmul: expected 3 arguments, got 2");
  EXPECT_EQ(AnvilCheckArgCount("relu", 0, 1), -1);
  EXPECT_STREQ(AnvilGetLastError(), "relu: expected 1 argument, got 0");
}

TEST(CheckDim, ComparesWithTheFirstBinding) {
  EXPECT_EQ(AnvilCheckDim("matmul", 1, "B", 0, "k", 64, 64), 0);
  EXPECT_EQ(AnvilCheckDim("matmul", 1, "B", 0, "k", 32, 64), -1);
  EXPECT_STREQ(AnvilGetLastError(), "matmul: argument 1 ('B'): expected shape[0] = k = 64, got 32");
}

}  // namespace
