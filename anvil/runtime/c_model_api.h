/* The C API of a compiled model: load model.so, ask for its inputs and outputs, run it. Links only
 * libanvil_runtime. Every call returns 0 on success, or -1 after setting the message that
 * AnvilGetLastError() returns (which names the file, the tensor and what was expected).
 *
 *   AnvilModelHandle m;
 *   if (AnvilModelLoad("model.so", &m) != 0) { puts(AnvilGetLastError()); return 1; }
 *   ... AnvilModelRun(m, inputs, 1, outputs, 1) ...
 *   AnvilModelFree(m);
 *
 * A handle may be used by several threads at once; AnvilModelFree must come after every run. */
#ifndef ANVIL_RUNTIME_C_MODEL_API_H_
#define ANVIL_RUNTIME_C_MODEL_API_H_

#include "anvil/runtime/c_runtime_api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct AnvilModel* AnvilModelHandle;

ANVIL_DLL int32_t AnvilModelLoad(const char* path, AnvilModelHandle* out);
ANVIL_DLL void AnvilModelFree(AnvilModelHandle model);

ANVIL_DLL int32_t AnvilModelNumInputs(AnvilModelHandle model);
ANVIL_DLL int32_t AnvilModelNumOutputs(AnvilModelHandle model);
/* The name, rank, shape and dtype of input (or output) `index`. The pointers stay valid until
 * AnvilModelFree. Any out-pointer may be NULL. */
ANVIL_DLL int32_t AnvilModelInputInfo(AnvilModelHandle model, int32_t index, const char** name,
                                      int32_t* ndim, const int64_t** shape, DLDataType* dtype);
ANVIL_DLL int32_t AnvilModelOutputInfo(AnvilModelHandle model, int32_t index, const char** name,
                                       int32_t* ndim, const int64_t** shape, DLDataType* dtype);

/* Runs the model. inputs[i] is input i (CPU tensors, compact row-major, any alignment);
 * outputs[i] is output i, allocated by the caller with the output's shape and dtype. Arrays whose
 * data is ANVIL_ARG_ALIGNMENT-aligned are read and written in place (a CPU model's outputs when
 * none overlaps another array given); others are copied in or out. */
ANVIL_DLL int32_t AnvilModelRun(AnvilModelHandle model, const DLTensor* const* inputs,
                                int32_t num_inputs, DLTensor* const* outputs, int32_t num_outputs);

/* The same for a GPU model on `stream` of its device (a CUstream, or a cl_command_queue of the
 * device's OpenCL context): its kernels are launched there, and the call returns once the outputs
 * are copied back. NULL is the device's own queue (AnvilModelRun); a CPU model refuses any other
 * stream. */
ANVIL_DLL int32_t AnvilModelRunOnStream(AnvilModelHandle model, const DLTensor* const* inputs,
                                        int32_t num_inputs, DLTensor* const* outputs,
                                        int32_t num_outputs, void* stream);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ANVIL_RUNTIME_C_MODEL_API_H_ */
