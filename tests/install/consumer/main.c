/* The consumer of an installed Anvil: loads the model.so given on the command line with the C API
 * (the only Anvil header it includes), runs it on inputs of ones and prints one line per output:
 *
 *   output NAME [D0, D1, ...] sum S
 *
 * Exit status 0 on success, 1 on any error (printed with the runtime's message). Float32 inputs
 * and outputs only: that is what the test compiles. */
#include <stdio.h>
#include <stdlib.h>

#include "anvil/runtime/c_model_api.h"

static size_t numel(int32_t ndim, const int64_t* shape) {
  size_t n = 1;
  for (int32_t d = 0; d < ndim; ++d) n *= (size_t)shape[d];
  return n;
}

/* A CPU float32 tensor of `shape` (not copied: the model's shape arrays outlive the run). */
static int init_tensor(DLTensor* t, int32_t ndim, const int64_t* shape, DLDataType dtype) {
  if (dtype.code != kDLFloat || dtype.bits != 32 || dtype.lanes != 1) return 1;
  size_t n = numel(ndim, shape);
  t->data = calloc(n ? n : 1, sizeof(float));
  t->device.device_type = kDLCPU;
  t->device.device_id = 0;
  t->ndim = ndim;
  t->dtype = dtype;
  t->shape = (int64_t*)shape;
  t->strides = NULL;
  t->byte_offset = 0;
  return t->data == NULL;
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
  DLTensor* inputs = (DLTensor*)calloc((size_t)num_inputs + 1, sizeof(DLTensor));
  DLTensor* outputs = (DLTensor*)calloc((size_t)num_outputs + 1, sizeof(DLTensor));
  const DLTensor** input_ptrs = (const DLTensor**)calloc((size_t)num_inputs + 1, sizeof(void*));
  DLTensor** output_ptrs = (DLTensor**)calloc((size_t)num_outputs + 1, sizeof(void*));
  int status = 0;
  for (int32_t i = 0; i < num_inputs && status == 0; ++i) {
    const char* name;
    int32_t ndim;
    const int64_t* shape;
    DLDataType dtype;
    AnvilModelInputInfo(model, i, &name, &ndim, &shape, &dtype);
    if (init_tensor(&inputs[i], ndim, shape, dtype) != 0) {
      fprintf(stderr, "error: input %s is not float32\n", name);
      status = 1;
      break;
    }
    float* x = (float*)inputs[i].data;
    for (size_t k = 0; k < numel(ndim, shape); ++k) x[k] = 1.0f;
    input_ptrs[i] = &inputs[i];
  }
  for (int32_t i = 0; i < num_outputs && status == 0; ++i) {
    const char* name;
    int32_t ndim;
    const int64_t* shape;
    DLDataType dtype;
    AnvilModelOutputInfo(model, i, &name, &ndim, &shape, &dtype);
    if (init_tensor(&outputs[i], ndim, shape, dtype) != 0) {
      fprintf(stderr, "error: output %s is not float32\n", name);
      status = 1;
      break;
    }
    output_ptrs[i] = &outputs[i];
  }
  if (status == 0 && AnvilModelRun(model, input_ptrs, num_inputs, output_ptrs, num_outputs) != 0) {
    fprintf(stderr, "error: %s\n", AnvilGetLastError());
    status = 1;
  }
  for (int32_t i = 0; i < num_outputs && status == 0; ++i) {
    const char* name;
    AnvilModelOutputInfo(model, i, &name, NULL, NULL, NULL);
    printf("output %s [", name);
    for (int32_t d = 0; d < outputs[i].ndim; ++d)
      printf("%s%lld", d ? ", " : "", (long long)outputs[i].shape[d]);
    double sum = 0;
    const float* y = (const float*)outputs[i].data;
    for (size_t k = 0; k < numel(outputs[i].ndim, outputs[i].shape); ++k) sum += y[k];
    printf("] sum %.9g\n", sum);
  }
  for (int32_t i = 0; i < num_inputs; ++i) free(inputs[i].data);
  for (int32_t i = 0; i < num_outputs; ++i) free(outputs[i].data);
  free(inputs);
  free(outputs);
  free(input_ptrs);
  free(output_ptrs);
  AnvilModelFree(model);
  return status;
}
