/* The C ABI between generated kernels, the runtime and its users. Plain C so that generated C
 * source, LLVM-generated objects and any host program agree on it.
 *
 * A kernel is
 *     int32_t name(const DLTensor* const* args, int32_t nargs, void* ctx);
 * It checks the rank, shape, dtype, device and alignment of every argument before touching
 * memory; on a mismatch it calls AnvilSetLastError with a message naming the kernel, the
 * argument and what was expected, and returns non-zero. `ctx` is reserved for the caller's
 * context (a device stream, a workspace allocator) and may be NULL on the CPU. */
#ifndef ANVIL_RUNTIME_C_RUNTIME_API_H_
#define ANVIL_RUNTIME_C_RUNTIME_API_H_

#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define ANVIL_DLL __declspec(dllexport)
#else
#define ANVIL_DLL __attribute__((visibility("default")))
#endif

/* Every buffer Anvil allocates is aligned to this (a cache line). */
#define ANVIL_ALIGNMENT 64
/* Every argument a kernel requires is aligned to this: what NumPy and PyTorch give their arrays,
 * so that a caller's arrays are read and written in place. Kernels assume no more (on x86 with
 * AVX an aligned and an unaligned vector access cost the same on aligned data). */
#define ANVIL_ARG_ALIGNMENT 16

typedef int32_t (*AnvilKernel)(const DLTensor* const* args, int32_t nargs, void* ctx);

/* The error of the last failed call on this thread ("" when none). */
ANVIL_DLL const char* AnvilGetLastError(void);
ANVIL_DLL void AnvilSetLastError(const char* message);

/* A parallel loop body: runs iterations [begin, end) with the captured variables in `closure`.
 * Returns 0, or non-zero after AnvilSetLastError. */
typedef int32_t (*AnvilParallelBody)(int64_t begin, int64_t end, void* closure);

/* Runs body over [0, extent) split into contiguous chunks across the runtime's threads.
 * Returns 0, or the code (and message) of the lowest failing chunk. Calls made inside a
 * parallel region (this one's or any OpenMP region) run serially on the calling thread. */
ANVIL_DLL int32_t AnvilParallelFor(int64_t extent, AnvilParallelBody body, void* closure);

/* Threads used by AnvilParallelFor: ANVIL_NUM_THREADS from the environment (read once; a value
 * that is not an integer in [1, 4096] is reported on stderr and ignored), else the number of
 * cores; AnvilSetNumThreads overrides both (n <= 0 restores the default). */
ANVIL_DLL int32_t AnvilGetNumThreads(void);
ANVIL_DLL void AnvilSetNumThreads(int32_t n);

/* Scratch memory for kernels (temporaries too large for the stack), ANVIL_ALIGNMENT-aligned.
 * Returns NULL (after AnvilSetLastError) when out of memory. */
ANVIL_DLL void* AnvilWorkspaceAlloc(uint64_t nbytes);
ANVIL_DLL void AnvilWorkspaceFree(void* ptr);

/* ---- GPU targets. The host entry of a GPU kernel checks its arguments (AnvilCheckDeviceTensor),
 * then launches device kernels through `ctx`, an anvil::runtime::DeviceContext* (device_api.h). */

/* A launch's shape: grid and block extents (x, y, z) and dynamic shared memory in bytes (0 on
 * OpenCL, whose kernels declare their __local arrays statically). A grid with a zero extent
 * launches nothing; every block extent must be at least 1. */
typedef struct {
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t shared_bytes;
} AnvilLaunchDims;

/* Enqueues kernel `name` of ctx's device program with args[i] (device arrays on ctx's device) as
 * its parameters. Returns 0, or -1 after AnvilSetLastError (a NULL ctx, an argument on another
 * device, an unknown kernel, a driver error). A kernel's own faults surface later, at the next
 * copy or synchronize. */
ANVIL_DLL int32_t AnvilDeviceLaunch(void* ctx, const char* name, const AnvilLaunchDims* dims,
                                    int32_t nargs, const DLTensor* const* args);
/* Device memory for a GPU kernel's temporaries: `data` handle of ctx's device (NULL after
 * AnvilSetLastError when out of memory or ctx is NULL). Freed after the kernels using it. */
ANVIL_DLL void* AnvilDeviceWorkspaceAlloc(void* ctx, uint64_t nbytes);
ANVIL_DLL void AnvilDeviceWorkspaceFree(void* ctx, void* data);

/* Argument checks, called by every generated kernel entry before it touches memory. Each returns
 * 0, or -1 after AnvilSetLastError with a message that names the kernel, the argument (index and
 * name), what was expected and what was found, e.g.
 *   "matmul: argument 2 ('C'): expected shape[1] = 64, got 65". */
ANVIL_DLL int32_t AnvilCheckArgCount(const char* kernel, int32_t nargs, int32_t expected);
/* `args` itself non-NULL and args[index] non-NULL; a CPU tensor; `ndim` dimensions; dtype
 * (code, bits, lanes); shape[d] == expected_shape[d] wherever expected_shape[d] >= 0 (-1 marks a
 * symbolic dimension the kernel binds itself; a NULL expected_shape checks no extent); compact
 * row-major (strides NULL or equal to the compact strides, except that a dimension of extent 1
 * may have any stride and an empty tensor any strides: neither changes the layout); data
 * non-NULL and data + byte_offset ANVIL_ARG_ALIGNMENT-byte aligned. Checked in that order; the
 * first mismatch is reported. */
ANVIL_DLL int32_t AnvilCheckTensor(const char* kernel, const DLTensor* const* args, int32_t index,
                                   const char* name, int32_t ndim, const int64_t* expected_shape,
                                   uint8_t dtype_code, uint8_t dtype_bits, uint16_t dtype_lanes);
/* As AnvilCheckTensor for a tensor on a device of type `device_type` (kDLCUDA, kDLOpenCL; any
 * device id): `data` must be non-NULL and byte_offset a multiple of ANVIL_ALIGNMENT; a CUDA
 * array's `data` (its device address, which kernels read 16 bytes at a time) must also be
 * ANVIL_ARG_ALIGNMENT-aligned, an OpenCL one's is a buffer handle. */
ANVIL_DLL int32_t AnvilCheckDeviceTensor(const char* kernel, const DLTensor* const* args,
                                         int32_t index, const char* name, int32_t ndim,
                                         const int64_t* expected_shape, uint8_t dtype_code,
                                         uint8_t dtype_bits, uint16_t dtype_lanes,
                                         int32_t device_type);
/* A symbolic dimension seen again must agree with its first binding (`var` names it). */
ANVIL_DLL int32_t AnvilCheckDim(const char* kernel, int32_t index, const char* name, int32_t dim,
                                const char* var, int64_t got, int64_t expected);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ANVIL_RUNTIME_C_RUNTIME_API_H_ */
