#include "anvil/runtime/ndarray.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

namespace anvil::runtime {

struct NDArray::State {
  std::vector<int64_t> shape;  // never resized: tensor.shape points into it
  DLTensor tensor{};
  size_t nbytes = 0;
  std::shared_ptr<void> owner;  // a view's: what owns tensor.data
  ~State() {
    if (!owner) std::free(tensor.data);
  }
};

namespace {

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

[[noreturn]] void undefined(const char* accessor) {
  throw std::logic_error(std::string("NDArray::") + accessor + ": the NDArray is undefined");
}

}  // namespace

NDArray NDArray::empty(std::vector<int64_t> shape, DLDataType dtype, bool zero) {
  auto where = [&] {
    return "NDArray::empty(" + shape_string(shape) + ", " + to_string(dtype) + ")";
  };
  if (dtype.bits == 0 || dtype.lanes == 0)
    throw std::invalid_argument(where() + ": a dtype needs non-zero bits and lanes");
  // Element count and size in bits, refusing overflow: the maximum is far above any real memory.
  uint64_t bits = uint64_t{dtype.bits} * dtype.lanes;
  constexpr uint64_t kMaxBits = uint64_t{std::numeric_limits<int64_t>::max()} / 2;
  int64_t numel = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 0)
      throw std::invalid_argument(where() + ": dimension " + std::to_string(d) + " is negative");
    if (shape[d] != 0 && static_cast<uint64_t>(numel) > kMaxBits / bits / shape[d])
      throw std::invalid_argument(where() + ": the tensor is too large to address");
    numel *= shape[d];
  }
  size_t nbytes = (numel * bits + 7) / 8;
  // Rounded up to whole alignment units (aligned_alloc requires it), and never empty, so that an
  // empty tensor still has a valid, aligned data pointer.
  size_t capacity = std::max<size_t>(
      ANVIL_ALIGNMENT, (nbytes + ANVIL_ALIGNMENT - 1) / ANVIL_ALIGNMENT * ANVIL_ALIGNMENT);
  void* data = std::aligned_alloc(ANVIL_ALIGNMENT, capacity);
  if (data == nullptr)
    throw std::runtime_error(where() + ": out of memory allocating " + std::to_string(nbytes) +
                             " bytes");
  if (zero) std::memset(data, 0, nbytes);

  NDArray array;
  array.state_ = std::make_shared<State>();
  State& s = *array.state_;
  s.shape = std::move(shape);
  s.nbytes = nbytes;
  s.tensor.data = data;
  s.tensor.device = DLDevice{kDLCPU, 0};
  s.tensor.ndim = static_cast<int32_t>(s.shape.size());
  s.tensor.dtype = dtype;
  s.tensor.shape = s.shape.data();
  s.tensor.strides = nullptr;  // compact row-major
  s.tensor.byte_offset = 0;
  return array;
}

NDArray NDArray::view(std::shared_ptr<void> owner, void* data, std::vector<int64_t> shape,
                      DLDataType dtype) {
  if (!owner || data == nullptr || reinterpret_cast<uintptr_t>(data) % ANVIL_ARG_ALIGNMENT != 0)
    throw std::invalid_argument("NDArray::view(" + shape_string(shape) +
                                "): needs an owner and ANVIL_ARG_ALIGNMENT-aligned data");
  NDArray array = empty({0}, dtype);  // checks the dtype
  int64_t numel = 1;
  for (int64_t d : shape) {
    if (d < 0) throw std::invalid_argument("NDArray::view(" + shape_string(shape) + "): negative");
    numel *= d;
  }
  State& s = *array.state_;
  std::free(s.tensor.data);
  s.owner = std::move(owner);
  s.shape = std::move(shape);
  s.nbytes = static_cast<size_t>((numel * dtype.bits * dtype.lanes + 7) / 8);
  s.tensor.data = data;
  s.tensor.ndim = static_cast<int32_t>(s.shape.size());
  s.tensor.shape = s.shape.data();
  return array;
}

DLTensor* NDArray::get() const {
  return state_ ? &state_->tensor : nullptr;
}
void* NDArray::data() const {
  return state_ ? state_->tensor.data : nullptr;
}

const std::vector<int64_t>& NDArray::shape() const {
  if (!state_) undefined("shape");
  return state_->shape;
}

DLDataType NDArray::dtype() const {
  if (!state_) undefined("dtype");
  return state_->tensor.dtype;
}

int64_t NDArray::numel() const {
  if (!state_) undefined("numel");
  int64_t n = 1;
  for (int64_t d : state_->shape) n *= d;
  return n;
}

size_t NDArray::nbytes() const {
  if (!state_) undefined("nbytes");
  return state_->nbytes;
}

bool memory_overlaps(const NDArray& a, const NDArray& b) {
  auto* x = static_cast<const char*>(a.data());
  auto* y = static_cast<const char*>(b.data());
  return a.nbytes() > 0 && b.nbytes() > 0 && x < y + b.nbytes() && y < x + a.nbytes();
}

DLDataType dl_float32() {
  return DLDataType{kDLFloat, 32, 1};
}
DLDataType dl_int32() {
  return DLDataType{kDLInt, 32, 1};
}

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string to_string(DLDataType dtype) {
  std::string s;
  switch (dtype.code) {
    case kDLInt:
      s = "int" + std::to_string(dtype.bits);
      break;
    case kDLUInt:
      s = "uint" + std::to_string(dtype.bits);
      break;
    case kDLFloat:
      s = "float" + std::to_string(dtype.bits);
      break;
    case kDLOpaqueHandle:
      s = "handle";
      break;
    case kDLBfloat:
      s = "bfloat" + std::to_string(dtype.bits);
      break;
    case kDLComplex:
      s = "complex" + std::to_string(dtype.bits);
      break;
    case 6:
      s = "bool";
      break;  // kDLBool in DLPack >= 0.8, which this one predates
    default:
      s = "dtype(code " + std::to_string(dtype.code) + ", bits " + std::to_string(dtype.bits) + ")";
  }
  if (dtype.lanes != 1) s += "x" + std::to_string(dtype.lanes);
  return s;
}

std::string to_string(DLDevice device) {
  const char* name = nullptr;
  int32_t code = device_type_code(device);
  switch (code) {
    case kDLCPU:
      name = "cpu";
      break;
    case kDLCUDA:
      name = "cuda";
      break;
    case kDLCUDAHost:
      name = "cuda_host";
      break;
    case kDLOpenCL:
      name = "opencl";
      break;
    case kDLVulkan:
      name = "vulkan";
      break;
    case kDLMetal:
      name = "metal";
      break;
    case kDLVPI:
      name = "vpi";
      break;
    case kDLROCM:
      name = "rocm";
      break;
    case kDLROCMHost:
      name = "rocm_host";
      break;
    case kDLExtDev:
      name = "ext_dev";
      break;
    case kDLCUDAManaged:
      name = "cuda_managed";
      break;
    default:
      break;
  }
  std::string id = std::to_string(device.device_id);
  if (name == nullptr) return "device_type " + std::to_string(code) + ":" + id;
  // The CPU is one device; its id only matters when it is not 0.
  if (code == kDLCPU && device.device_id == 0) return name;
  return std::string(name) + ":" + id;
}

}  // namespace anvil::runtime
