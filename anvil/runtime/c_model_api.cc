// The C API of a compiled model (c_model_api.h) over runtime::Model.
#include "anvil/runtime/c_model_api.h"

#include <cstring>
#include <new>

#include "anvil/runtime/model.h"

struct AnvilModel {
  anvil::runtime::Model model;
};

namespace {

using anvil::runtime::NDArray;
using anvil::runtime::TensorInfo;

// Runs `f`, turning an exception into -1 and the last error.
template <typename F>
int32_t guarded(F&& f) {
  try {
    f();
    return 0;
  } catch (const std::exception& e) {
    AnvilSetLastError(e.what());
  } catch (...) {
    AnvilSetLastError("unknown error");
  }
  return -1;
}

int32_t info(AnvilModelHandle model, const std::vector<TensorInfo>* list, int32_t index,
             const char* what, const char** name, int32_t* ndim, const int64_t** shape,
             DLDataType* dtype) {
  return guarded([&] {
    if (!model) throw std::invalid_argument(std::string("AnvilModel") + what + "Info: NULL model");
    if (index < 0 || index >= static_cast<int32_t>(list->size()))
      throw std::out_of_range(std::string("AnvilModel") + what + "Info: index " +
                              std::to_string(index) + " is out of range (the model has " +
                              std::to_string(list->size()) + ")");
    const TensorInfo& t = (*list)[index];
    if (name) *name = t.name.c_str();
    if (ndim) *ndim = static_cast<int32_t>(t.shape.size());
    if (shape) *shape = t.shape.data();
    if (dtype) *dtype = t.dtype;
  });
}

// A compact CPU tensor's bytes, checked against `t` (the model's description).
size_t checked_bytes(const DLTensor* x, const TensorInfo& t, const char* what) {
  std::string where = std::string(what) + " '" + t.name + "'";
  if (!x) throw std::invalid_argument(where + " is NULL");
  if (anvil::runtime::device_type_code(x->device) != kDLCPU)
    throw std::invalid_argument(where + " is on " + anvil::runtime::to_string(x->device) +
                                ", expected cpu");
  bool same_type = x->dtype.code == t.dtype.code && x->dtype.bits == t.dtype.bits &&
                   x->dtype.lanes == t.dtype.lanes;
  bool same_shape =
      x->ndim == static_cast<int32_t>(t.shape.size()) &&
      (x->ndim == 0 || (x->shape && std::equal(t.shape.begin(), t.shape.end(), x->shape)));
  if (!same_type || !same_shape) {
    std::string got = anvil::runtime::to_string(x->dtype) + "[";
    for (int32_t d = 0; d < x->ndim && x->shape; ++d)
      got += (d ? ", " : "") + std::to_string(x->shape[d]);
    std::string want = anvil::runtime::to_string(t.dtype) + "[";
    for (size_t d = 0; d < t.shape.size(); ++d)
      want += (d ? ", " : "") + std::to_string(t.shape[d]);
    throw std::invalid_argument(where + ": expected " + want + "], got " + got + "]");
  }
  if (x->strides) {
    int64_t expect = 1;
    for (int32_t d = x->ndim - 1; d >= 0; --d) {
      if (x->shape[d] != 1 && x->strides[d] != expect)
        throw std::invalid_argument(where + " is not compact row-major (strides)");
      expect *= x->shape[d];
    }
  }
  size_t n = (t.dtype.bits * t.dtype.lanes + 7) / 8;
  for (int64_t d : t.shape) n *= static_cast<size_t>(d);
  if (n > 0 && !x->data) throw std::invalid_argument(where + " has NULL data");
  return n;
}

}  // namespace

extern "C" {

int32_t AnvilModelLoad(const char* path, AnvilModelHandle* out) {
  return guarded([&] {
    if (!path || !out) throw std::invalid_argument("AnvilModelLoad: NULL path or handle pointer");
    *out = nullptr;
    auto* m = new AnvilModel{anvil::runtime::Model::load(path)};
    *out = m;
  });
}

void AnvilModelFree(AnvilModelHandle model) {
  delete model;
}

int32_t AnvilModelNumInputs(AnvilModelHandle model) {
  return model ? static_cast<int32_t>(model->model.inputs().size()) : -1;
}

int32_t AnvilModelNumOutputs(AnvilModelHandle model) {
  return model ? static_cast<int32_t>(model->model.outputs().size()) : -1;
}

int32_t AnvilModelInputInfo(AnvilModelHandle model, int32_t index, const char** name, int32_t* ndim,
                            const int64_t** shape, DLDataType* dtype) {
  return info(model, model ? &model->model.inputs() : nullptr, index, "Input", name, ndim, shape,
              dtype);
}

int32_t AnvilModelOutputInfo(AnvilModelHandle model, int32_t index, const char** name,
                             int32_t* ndim, const int64_t** shape, DLDataType* dtype) {
  return info(model, model ? &model->model.outputs() : nullptr, index, "Output", name, ndim, shape,
              dtype);
}

int32_t AnvilModelRun(AnvilModelHandle model, const DLTensor* const* inputs, int32_t num_inputs,
                      DLTensor* const* outputs, int32_t num_outputs) {
  return AnvilModelRunOnStream(model, inputs, num_inputs, outputs, num_outputs, nullptr);
}

int32_t AnvilModelRunOnStream(AnvilModelHandle model, const DLTensor* const* inputs,
                              int32_t num_inputs, DLTensor* const* outputs, int32_t num_outputs,
                              void* stream) {
  return guarded([&] {
    if (!model) throw std::invalid_argument("AnvilModelRun: NULL model");
    const auto& in_info = model->model.inputs();
    const auto& out_info = model->model.outputs();
    if (num_inputs != static_cast<int32_t>(in_info.size()) ||
        num_outputs != static_cast<int32_t>(out_info.size()))
      throw std::invalid_argument(
          "AnvilModelRun: the model takes " + std::to_string(in_info.size()) + " inputs and " +
          std::to_string(out_info.size()) + " outputs, got " + std::to_string(num_inputs) +
          " and " + std::to_string(num_outputs));
    if ((num_inputs && !inputs) || (num_outputs && !outputs))
      throw std::invalid_argument("AnvilModelRun: NULL input or output array");
    std::vector<size_t> out_bytes;
    for (int32_t i = 0; i < num_outputs; ++i)
      out_bytes.push_back(checked_bytes(outputs[i], out_info[i], "output"));
    // The caller's arrays themselves where they are aligned as kernel arguments must be (the
    // caller owns them for the call); a copy otherwise.
    auto address = [](const DLTensor* t) { return static_cast<char*>(t->data) + t->byte_offset; };
    auto in_place = [&](const DLTensor* t, const TensorInfo& info) {
      char* data = address(t);
      if (data == nullptr || reinterpret_cast<uintptr_t>(data) % ANVIL_ARG_ALIGNMENT != 0)
        return NDArray();
      return NDArray::view(std::shared_ptr<void>(data, [](void*) {}), data, info.shape, info.dtype);
    };
    std::vector<NDArray> in;
    for (int32_t i = 0; i < num_inputs; ++i) {
      size_t bytes = checked_bytes(inputs[i], in_info[i], "input");
      NDArray a = in_place(inputs[i], in_info[i]);
      if (!a.defined()) {
        a = NDArray::empty(in_info[i].shape, in_info[i].dtype);
        if (bytes) std::memcpy(a.data(), address(inputs[i]), bytes);
      }
      in.push_back(a);
    }
    // A CPU model writes its outputs into the caller's arrays when they are aligned and overlap
    // nothing else given.
    std::vector<NDArray> out;
    bool direct = stream == nullptr && model->model.device().device_type == kDLCPU;
    for (int32_t i = 0; direct && i < num_outputs; ++i) {
      out.push_back(in_place(outputs[i], out_info[i]));
      direct = out.back().defined();
    }
    for (int32_t i = 0; direct && i < num_outputs; ++i) {
      for (const NDArray& a : in) direct = direct && !memory_overlaps(out[i], a);
      for (int32_t k = 0; k < i; ++k) direct = direct && !memory_overlaps(out[i], out[k]);
    }
    if (direct) {
      model->model.run(in, out);
      return;
    }
    std::vector<NDArray> result = model->model.run(in, stream);
    for (int32_t i = 0; i < num_outputs; ++i)
      if (out_bytes[i]) std::memcpy(address(outputs[i]), result[i].data(), out_bytes[i]);
  });
}

}  // extern "C"
