// The row sort of sort and topk (Note [CUDA sort]): one thread per row.
#include <cuda_runtime.h>

#include "kernels.h"
#include "launch.cuh"
#include "sort.h"

namespace flambeau::cuda {
namespace {

template <class T>
__global__ void sort_rows_kernel(const T* in, int64_t rows, int64_t n, bool descending, int64_t k, T* values,
                                 int64_t* indices, uint64_t* keys, int64_t* idx) {
  for (int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; r < rows;
       r += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    uint64_t* ka = keys + 2 * r * n;
    int64_t* ia = idx + 2 * r * n;
    sort_row(in + r * n, n, descending, k, values + r * k, indices + r * k, ka, ka + n, ia, ia + n);
  }
}

template <class T>
int launch(const void* in, int64_t rows, int64_t n, bool descending, int64_t k, void* values,
           int64_t* indices, uint64_t* keys, int64_t* idx, cudaStream_t s) {
  sort_rows_kernel<T><<<grid_for(rows), kThreads, 0, s>>>(static_cast<const T*>(in), rows, n, descending, k,
                                                          static_cast<T*>(values), indices, keys, idx);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace

int launch_sort_rows(int dtype, const void* in, int64_t rows, int64_t n, bool descending, int64_t k,
                     void* values, int64_t* indices, uint64_t* keys, int64_t* idx, void* stream) {
  if (rows == 0 || k == 0) return 0;
  auto s = static_cast<cudaStream_t>(stream);
  switch (dtype) {
    case kFloat32:
      return launch<float>(in, rows, n, descending, k, values, indices, keys, idx, s);
    case kFloat64:
      return launch<double>(in, rows, n, descending, k, values, indices, keys, idx, s);
    case kInt64:
      return launch<int64_t>(in, rows, n, descending, k, values, indices, keys, idx, s);
    case kInt32:
      return launch<int32_t>(in, rows, n, descending, k, values, indices, keys, idx, s);
    case kInt16:
      return launch<int16_t>(in, rows, n, descending, k, values, indices, keys, idx, s);
    case kInt8:
      return launch<int8_t>(in, rows, n, descending, k, values, indices, keys, idx, s);
    case kUInt8:
      return launch<uint8_t>(in, rows, n, descending, k, values, indices, keys, idx, s);
    case kBool:
      return launch<bool>(in, rows, n, descending, k, values, indices, keys, idx, s);
    default:
      return static_cast<int>(cudaErrorInvalidValue);
  }
}

}  // namespace flambeau::cuda
