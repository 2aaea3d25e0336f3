#include "python/src/arrays.h"

#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include <dlpack/dlpack.h>

#include "anvil/runtime/c_runtime_api.h"

namespace anvil::python {

namespace {

using runtime::InputError;
using runtime::NDArray;

constexpr uint8_t kBoolCode = 6;  // kDLBool in DLPack >= 0.8 (Anvil's bool)

// A caller's array before it is checked: where its elements are and how they are laid out.
struct View {
  char* data = nullptr;
  std::vector<int64_t> shape;
  std::vector<int64_t> byte_strides;  // empty: compact row-major
  DLDataType dtype{};
  DLDevice device{kDLCPU, 0};
  std::shared_ptr<void> owner;  // keeps the memory alive
};

// The element type of a buffer's struct-module format ("f", "<i8", "?").
std::optional<DLDataType> buffer_dtype(const char* format, Py_ssize_t itemsize) {
  std::string f = format ? format : "B";
  if (!f.empty() && (f[0] == '@' || f[0] == '=' || f[0] == '<')) f = f.substr(1);
  if (f.size() != 1) return std::nullopt;
  uint8_t bits = static_cast<uint8_t>(itemsize * 8);
  switch (f[0]) {
    case 'e':
    case 'f':
    case 'd':
      return DLDataType{kDLFloat, bits, 1};
    case 'b':
    case 'h':
    case 'i':
    case 'l':
    case 'q':
      return DLDataType{kDLInt, bits, 1};
    case 'B':
    case 'H':
    case 'I':
    case 'L':
    case 'Q':
      return DLDataType{kDLUInt, bits, 1};
    case '?':
      return DLDataType{kBoolCode, 8, 1};
  }
  return std::nullopt;
}

View from_buffer(py::handle obj, bool writable, const std::string& what) {
  auto buffer = std::make_unique<Py_buffer>();
  int flags = PyBUF_STRIDES | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
  if (PyObject_GetBuffer(obj.ptr(), buffer.get(), flags) != 0) {
    py::error_already_set e;
    throw InputError(what +
                     (writable ? ": expected writable memory a run can write: "
                               : ": its memory cannot be read: ") +
                     std::string(e.what()));
  }
  View v;
  Py_buffer* b = buffer.get();
  v.owner = std::shared_ptr<Py_buffer>(buffer.release(), [](Py_buffer* p) {
    py::gil_scoped_acquire gil;
    PyBuffer_Release(p);
    delete p;
  });
  std::optional<DLDataType> dtype = buffer_dtype(b->format, b->itemsize);
  if (!dtype)
    throw InputError(what + ": its elements (buffer format '" +
                     std::string(b->format ? b->format : "") +
                     "') are of no type Anvil takes (numbers or bool)");
  v.dtype = *dtype;
  v.data = static_cast<char*>(b->buf);
  for (int d = 0; d < b->ndim; ++d) {
    v.shape.push_back(b->shape[d]);
    v.byte_strides.push_back(b->strides[d]);
  }
  return v;
}

View from_dlpack(py::handle obj, const std::string& what) {
  py::object capsule;
  try {
    capsule = obj.attr("__dlpack__")();
  } catch (py::error_already_set& e) {
    throw InputError(what + ": could not take it through DLPack: " + std::string(e.what()));
  }
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
  if (managed == nullptr) throw py::error_already_set();
  // Consumed: from here the deleter is ours to call (DLPack's protocol).
  PyCapsule_SetName(capsule.ptr(), "used_dltensor");
  View v;
  v.owner = std::shared_ptr<DLManagedTensor>(managed, [](DLManagedTensor* m) {
    if (m->deleter == nullptr) return;
    py::gil_scoped_acquire gil;
    m->deleter(m);
  });
  const DLTensor& t = managed->dl_tensor;
  v.device = t.device;
  v.dtype = t.dtype;
  v.data = static_cast<char*>(t.data) + t.byte_offset;
  int64_t itemsize = (t.dtype.bits * t.dtype.lanes + 7) / 8;
  for (int d = 0; d < t.ndim; ++d) {
    v.shape.push_back(t.shape[d]);
    if (t.strides) v.byte_strides.push_back(t.strides[d] * itemsize);
  }
  return v;
}

bool is_compact(const View& v, int64_t itemsize) {
  if (v.byte_strides.empty()) return true;
  int64_t stride = itemsize, numel = 1;
  for (int64_t d : v.shape) numel *= d;
  if (numel == 0) return true;
  for (size_t d = v.shape.size(); d-- > 0;) {
    if (v.shape[d] != 1 && v.byte_strides[d] != stride) return false;
    stride *= v.shape[d];
  }
  return true;
}

// Copies the elements of `v` (any strides) into compact memory at `out`.
void copy_compact(const View& v, int64_t itemsize, char* out) {
  size_t rank = v.shape.size();
  int64_t numel = 1;
  for (int64_t d : v.shape) numel *= d;
  std::vector<int64_t> index(rank, 0);
  for (int64_t e = 0; e < numel; ++e) {
    const char* src = v.data;
    for (size_t d = 0; d < rank; ++d) src += index[d] * v.byte_strides[d];
    std::memcpy(out + e * itemsize, src, static_cast<size_t>(itemsize));
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < v.shape[d]) break;
      index[d] = 0;
    }
  }
}

bool same_dtype(DLDataType got, DLDataType want, bool dlpack) {
  if (got.code == want.code && got.bits == want.bits && got.lanes == want.lanes) return true;
  // DLPack before 0.8 had no bool: its producers (PyTorch 1.x) give bool tensors as uint8.
  return dlpack && want.code == kBoolCode && got.code == kDLUInt && got.bits == 8 && got.lanes == 1;
}

}  // namespace

Borrowed borrow(py::handle obj, const runtime::TensorInfo& want, const char* role, bool writable) {
  const std::string what = std::string(role) + " '" + want.name + "'";
  const std::string expected = runtime::to_string(want.dtype) + runtime::shape_str(want.shape);
  View v;
  bool dlpack = false;
  if (PyObject_CheckBuffer(obj.ptr())) {
    v = from_buffer(obj, writable, what);
  } else if (py::hasattr(obj, "__dlpack__")) {
    v = from_dlpack(obj, what);
    dlpack = true;
  } else if (writable) {
    throw InputError(what + ": expected an array (NumPy, PyTorch or a writable buffer) of " +
                     expected + ", got " + std::string(py::str(obj.get_type().attr("__name__"))));
  } else {
    py::object array = py::module_::import("numpy").attr("asarray")(obj);
    v = from_buffer(array, false, what);
  }
  if (v.device.device_type != kDLCPU)
    throw InputError(what + " is on " + runtime::to_string(v.device) +
                     "; the model runs on the CPU: give it an array in host memory");
  if (!same_dtype(v.dtype, want.dtype, dlpack) || v.shape != want.shape)
    throw InputError(what + ": expected " + expected + ", got " + runtime::to_string(v.dtype) +
                     runtime::shape_str(v.shape));
  const int64_t itemsize = (want.dtype.bits * want.dtype.lanes + 7) / 8;
  const bool compact = is_compact(v, itemsize);
  const auto address = reinterpret_cast<uintptr_t>(v.data);
  Borrowed b;
  if (compact && address % ANVIL_ARG_ALIGNMENT == 0 && v.data != nullptr) {
    b.array = NDArray::view(v.owner, v.data, want.shape, want.dtype);
    return b;
  }
  if (!compact && writable)
    throw InputError(what + ": expected a compact (C-contiguous) array to write " + expected +
                     " into, got one with strides");
  b.array = NDArray::empty(want.shape, want.dtype);
  if (!compact) {
    b.copy_reason = "its elements are not compact (strides)";
  } else {
    b.copy_reason = "its data is " + std::to_string(address & (~address + 1)) +
                    "-byte aligned, not " + std::to_string(ANVIL_ARG_ALIGNMENT);
  }
  if (writable) {
    b.caller = v.data;
    b.keep = v.owner;
  } else if (compact) {
    if (b.array.nbytes() > 0) std::memcpy(b.array.data(), v.data, b.array.nbytes());
  } else {
    copy_compact(v, itemsize, static_cast<char*>(b.array.data()));
  }
  return b;
}

py::array to_numpy(const NDArray& a) {
  DLDataType t = a.dtype();
  std::string name = runtime::to_string(t);  // NumPy's names: "float32", "bool"
  if (t.lanes != 1 || t.code == kDLBfloat || t.code == kDLOpaqueHandle || t.code == kDLComplex)
    throw InputError("an output of type " + runtime::to_string(t) + " has no NumPy type");
  py::dtype dtype(name);
  std::vector<py::ssize_t> shape(a.shape().begin(), a.shape().end());
  std::vector<py::ssize_t> strides(shape.size());
  py::ssize_t stride = dtype.itemsize();
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= shape[d];
  }
  auto* keep = new NDArray(a);
  py::capsule base(keep, [](void* p) { delete static_cast<NDArray*>(p); });
  return py::array(dtype, shape, strides, a.data(), base);
}

}  // namespace anvil::python
