// Arrays between Python and the runtime: any object with __dlpack__ (NumPy >= 1.22, PyTorch) or
// the buffer protocol in, NumPy arrays out, sharing memory wherever the layout allows.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>

#include "anvil/runtime/model.h"
#include "anvil/runtime/ndarray.h"

namespace anvil::python {

namespace py = pybind11;

// A caller's array as the runtime takes it.
struct Borrowed {
  runtime::NDArray array;  // what the kernels read (or write)
  // Empty when `array` is the caller's memory itself; otherwise why it is a copy ("strided",
  // "8-byte aligned"): an output is then copied back into `caller` after the run.
  std::string copy_reason;
  void* caller = nullptr;
  std::shared_ptr<void> keep;  // keeps `caller` alive until the copy back
};

// `obj` as an array of `want`'s dtype and shape on the CPU, `role` ("input", "output") naming it in
// errors. The caller's memory itself when it is compact and ANVIL_ARG_ALIGNMENT-aligned, else a
// copy (of its values for an input, uninitialized for an output). `writable`: an output, which
// must be writable memory. Objects that are neither DLPack nor buffers go through numpy.asarray.
// Throws runtime::InputError naming the array and what was expected for another dtype or shape,
// a device other than the CPU, or a read-only output. Needs the GIL.
Borrowed borrow(py::handle obj, const runtime::TensorInfo& want, const char* role, bool writable);

// A NumPy array over `a`'s memory (kept alive by the array). Needs the GIL.
py::array to_numpy(const runtime::NDArray& a);

}  // namespace anvil::python
