// cumsum / cumprod rows (Note [CUDA scans]): one thread per row.
#include <cuda_runtime.h>

#include "flambeau_cuda/scan_math.h"
#include "kernels.h"
#include "launch.cuh"

namespace flambeau::cuda {

int launch_scan_rows(int dtype, const void* in, void* out, int64_t rows, int64_t n, bool product,
                     void* stream);

namespace {

template <class T>
__global__ void scan_rows_kernel(const T* in, T* out, int64_t rows, int64_t n, bool product) {
  for (int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; r < rows;
       r += static_cast<int64_t>(blockDim.x) * gridDim.x)
    scan_row(in + r * n, out + r * n, n, product);
}

template <class T>
int launch(const void* in, void* out, int64_t rows, int64_t n, bool product, cudaStream_t s) {
  scan_rows_kernel<T>
      <<<grid_for(rows), kThreads, 0, s>>>(static_cast<const T*>(in), static_cast<T*>(out), rows, n, product);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace

int launch_scan_rows(int dtype, const void* in, void* out, int64_t rows, int64_t n, bool product,
                     void* stream) {
  if (rows == 0 || n == 0) return 0;
  auto s = static_cast<cudaStream_t>(stream);
  switch (dtype) {
    case kFloat32:
      return launch<float>(in, out, rows, n, product, s);
    case kFloat64:
      return launch<double>(in, out, rows, n, product, s);
    case kInt64:
      return launch<int64_t>(in, out, rows, n, product, s);
    case kInt32:
      return launch<int32_t>(in, out, rows, n, product, s);
    default:
      return static_cast<int>(cudaErrorInvalidValue);
  }
}

}  // namespace flambeau::cuda
