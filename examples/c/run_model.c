/* Runs a compiled model through the C API, linking only libanvil_runtime:
 *
 *   anvil compile zoo:dqn --target llvm -o dqn.so
 *   run_model dqn.so
 *
 * Every float32 input is filled with a fixed pattern (other dtypes with zeros); the program
 * prints each output's name, shape, sum and first values. Exit status 0 on success, 1 on any
 * error (printed with the runtime's message). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/runtime/c_model_api.h"

/* Bytes of a tensor of `ndim` dimensions `shape` and dtype `t`. */
static size_t tensor_bytes(int32_t ndim, const int64_t* shape, DLDataType t) {
  size_t n = (size_t)(t.bits * t.lanes + 7) / 8;
  for (int32_t d = 0; d < ndim; ++d) n *= (size_t)shape[d];
  return n;
}

static DLTensor* make_tensor(int32_t ndim, const int64_t* shape, DLDataType dtype) {
  DLTensor* t = (DLTensor*)calloc(1, sizeof(DLTensor));
  size_t bytes = tensor_bytes(ndim, shape, dtype);
  t->data = calloc(bytes ? bytes : 1, 1);
  t->device.device_type = kDLCPU;
  t->ndim = ndim;
  t->dtype = dtype;
  t->shape = (int64_t*)shape; /* the model's shape array outlives the tensor */
  return t;
}

static void free_tensor(DLTensor* t) {
  if (t) free(t->data);
  free(t);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODEL.so\n", argv[0]);
    return 1;
  }
  AnvilModelHandle model;
  if (AnvilModelLoad(argv[1], &model) != 0) {
    fprintf(stderr, "error: %s\n", AnvilGetLastError());
    return 1;
  }
  int32_t num_inputs = AnvilModelNumInputs(model), num_outputs = AnvilModelNumOutputs(model);
  DLTensor** inputs = (DLTensor**)calloc((size_t)num_inputs + 1, sizeof(DLTensor*));
  DLTensor** outputs = (DLTensor**)calloc((size_t)num_outputs + 1, sizeof(DLTensor*));
  for (int32_t i = 0; i < num_inputs; ++i) {
    const char* name;
    int32_t ndim;
    const int64_t* shape;
    DLDataType dtype;
    AnvilModelInputInfo(model, i, &name, &ndim, &shape, &dtype);
    inputs[i] = make_tensor(ndim, shape, dtype);
    if (dtype.code == kDLFloat && dtype.bits == 32) {
      float* x = (float*)inputs[i]->data;
      size_t n = tensor_bytes(ndim, shape, dtype) / sizeof(float);
      for (size_t k = 0; k < n; ++k) x[k] = (float)sin(0.01 * (double)k);
    }
  }
  for (int32_t i = 0; i < num_outputs; ++i) {
    int32_t ndim;
    const int64_t* shape;
    DLDataType dtype;
    AnvilModelOutputInfo(model, i, NULL, &ndim, &shape, &dtype);
    outputs[i] = make_tensor(ndim, shape, dtype);
  }
  int status = 0;
  if (AnvilModelRun(model, (const DLTensor* const*)inputs, num_inputs, outputs, num_outputs) !=
      0) {
    fprintf(stderr, "error: %s\n", AnvilGetLastError());
    status = 1;
  }
  for (int32_t i = 0; i < num_outputs && status == 0; ++i) {
    const char* name;
    AnvilModelOutputInfo(model, i, &name, NULL, NULL, NULL);
    printf("%s [", name);
    for (int32_t d = 0; d < outputs[i]->ndim; ++d)
      printf("%s%lld", d ? ", " : "", (long long)outputs[i]->shape[d]);
    printf("]");
    if (outputs[i]->dtype.code == kDLFloat && outputs[i]->dtype.bits == 32) {
      const float* y = (const float*)outputs[i]->data;
      size_t n = tensor_bytes(outputs[i]->ndim, outputs[i]->shape, outputs[i]->dtype) / 4;
      double sum = 0;
      for (size_t k = 0; k < n; ++k) sum += y[k];
      printf(" sum %.9g first", sum);
      for (size_t k = 0; k < n && k < 4; ++k) printf(" %.9g", y[k]);
    }
    printf("\n");
  }
  for (int32_t i = 0; i < num_inputs; ++i) free_tensor(inputs[i]);
  for (int32_t i = 0; i < num_outputs; ++i) free_tensor(outputs[i]);
  free(inputs);
  free(outputs);
  AnvilModelFree(model);
  return status;
}
