// index_put_'s write (Note [CUDA advanced indexing]): one thread per value,
// a copy of its bytes at its offset, or an atomicAdd with accumulate.
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "kernels.h"
#include "launch.cuh"

namespace flambeau::cuda {

int launch_index_put(void* self_data, const int64_t* offsets, const void* values, int64_t n, int dtype,
                     int itemsize, bool accumulate, void* stream);

namespace {

template <class T>
__global__ void put_kernel(T* self, const int64_t* offsets, const T* values, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)
    self[offsets[i]] = values[i];
}

template <class T>
__global__ void accumulate_kernel(T* self, const int64_t* offsets, const T* values, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    if constexpr (sizeof(T) == 8 && !std::is_floating_point_v<T>)
      atomicAdd(reinterpret_cast<unsigned long long*>(self + offsets[i]),
                static_cast<unsigned long long>(values[i]));
    else
      atomicAdd(self + offsets[i], values[i]);
  }
}

struct alignas(16) Bytes16 {
  unsigned char b[16];
};

template <class T>
int put(void* self, const int64_t* offsets, const void* values, int64_t n, cudaStream_t s) {
  put_kernel<T>
      <<<grid_for(n), kThreads, 0, s>>>(static_cast<T*>(self), offsets, static_cast<const T*>(values), n);
  return static_cast<int>(cudaGetLastError());
}

template <class T>
int add(void* self, const int64_t* offsets, const void* values, int64_t n, cudaStream_t s) {
  accumulate_kernel<T>
      <<<grid_for(n), kThreads, 0, s>>>(static_cast<T*>(self), offsets, static_cast<const T*>(values), n);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace

int launch_index_put(void* self_data, const int64_t* offsets, const void* values, int64_t n, int dtype,
                     int itemsize, bool accumulate, void* stream) {
  if (n == 0) return 0;
  auto s = static_cast<cudaStream_t>(stream);
  if (accumulate) {
    switch (dtype) {
      case kFloat32:
        return add<float>(self_data, offsets, values, n, s);
      case kFloat64:
        return add<double>(self_data, offsets, values, n, s);
      case kInt64:
        return add<int64_t>(self_data, offsets, values, n, s);
      case kInt32:
        return add<int>(self_data, offsets, values, n, s);
      default:
        return static_cast<int>(cudaErrorInvalidValue);
    }
  }
  switch (itemsize) {
    case 1:
      return put<uint8_t>(self_data, offsets, values, n, s);
    case 2:
      return put<uint16_t>(self_data, offsets, values, n, s);
    case 4:
      return put<uint32_t>(self_data, offsets, values, n, s);
    case 8:
      return put<uint64_t>(self_data, offsets, values, n, s);
    case 16:
      return put<Bytes16>(self_data, offsets, values, n, s);
    default:
      return static_cast<int>(cudaErrorInvalidValue);
  }
}

}  // namespace flambeau::cuda
