// Row gather / scatter-add kernels (index.h).
#include <cuda_runtime.h>

#include <cstdint>

#include "index.h"
#include "launch.cuh"

namespace flambeau::cuda {
namespace {

__global__ void gather_rows_kernel(char* out, const char* table, const int64_t* idx, int64_t k,
                                   int64_t row_bytes) {
  const int64_t n = k * row_bytes;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    const int64_t r = i / row_bytes, b = i % row_bytes;
    out[i] = table[idx[r] * row_bytes + b];
  }
}

template <class T>
__global__ void scatter_add_rows_kernel(T* out, const T* grad, const int64_t* idx, int64_t k, int64_t d,
                                        int64_t padding_idx) {
  const int64_t n = k * d;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    const int64_t r = i / d, c = i % d;
    const int64_t row = idx[r];
    if (row == padding_idx) continue;
    atomicAdd(out + row * d + c, grad[i]);
  }
}

struct alignas(16) Bytes16 {
  uint64_t lo, hi;
};

template <class T>
__global__ void gather_dim_kernel(T* out, const T* self, const int64_t* index, OffsetCalculator<3> calc,
                                  int64_t self_dim_stride, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    int64_t off[3];
    calc.get(i, off);
    out[off[0]] = self[off[1] + index[off[2]] * self_dim_stride];
  }
}

template <class T>
__global__ void scatter_add_dim_kernel(T* out, const T* src, const int64_t* index, OffsetCalculator<3> calc,
                                       int64_t out_dim_stride, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    int64_t off[3];
    calc.get(i, off);
    atomicAdd(out + off[0] + index[off[2]] * out_dim_stride, src[off[1]]);
  }
}

template <class T>
int gather_as(void* out, const void* self, const int64_t* index, const OffsetCalculator<3>& calc,
              int64_t stride, int64_t n, cudaStream_t s) {
  gather_dim_kernel<T><<<grid_for(n), kThreads, 0, s>>>(static_cast<T*>(out), static_cast<const T*>(self),
                                                        index, calc, stride, n);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace

int launch_gather_dim(void* out, const void* self, const int64_t* index, const OffsetCalculator<3>& calc,
                      int64_t self_dim_stride, int64_t n, int elem_size, void* stream) {
  if (n == 0) return 0;
  auto s = static_cast<cudaStream_t>(stream);
  switch (elem_size) {
    case 1:
      return gather_as<uint8_t>(out, self, index, calc, self_dim_stride, n, s);
    case 2:
      return gather_as<uint16_t>(out, self, index, calc, self_dim_stride, n, s);
    case 4:
      return gather_as<uint32_t>(out, self, index, calc, self_dim_stride, n, s);
    case 8:
      return gather_as<uint64_t>(out, self, index, calc, self_dim_stride, n, s);
    default:
      return gather_as<Bytes16>(out, self, index, calc, self_dim_stride, n, s);
  }
}

int launch_scatter_add_dim(void* out, const void* src, const int64_t* index, const OffsetCalculator<3>& calc,
                           int64_t out_dim_stride, int64_t n, bool is_double, void* stream) {
  if (n == 0) return 0;
  auto s = static_cast<cudaStream_t>(stream);
  if (is_double)
    scatter_add_dim_kernel<double><<<grid_for(n), kThreads, 0, s>>>(
        static_cast<double*>(out), static_cast<const double*>(src), index, calc, out_dim_stride, n);
  else
    scatter_add_dim_kernel<float><<<grid_for(n), kThreads, 0, s>>>(
        static_cast<float*>(out), static_cast<const float*>(src), index, calc, out_dim_stride, n);
  return static_cast<int>(cudaGetLastError());
}

int launch_gather_rows(void* out, const void* table, const int64_t* idx, int64_t k, int64_t row_bytes,
                       void* stream) {
  if (k == 0 || row_bytes == 0) return 0;
  gather_rows_kernel<<<grid_for(k * row_bytes), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<char*>(out), static_cast<const char*>(table), idx, k, row_bytes);
  return static_cast<int>(cudaGetLastError());
}

int launch_scatter_add_rows(void* out, const void* grad, const int64_t* idx, int64_t k, int64_t d,
                            int64_t padding_idx, bool is_double, void* stream) {
  if (k == 0 || d == 0) return 0;
  auto s = static_cast<cudaStream_t>(stream);
  if (is_double)
    scatter_add_rows_kernel<double><<<grid_for(k * d), kThreads, 0, s>>>(
        static_cast<double*>(out), static_cast<const double*>(grad), idx, k, d, padding_idx);
  else
    scatter_add_rows_kernel<float><<<grid_for(k * d), kThreads, 0, s>>>(
        static_cast<float*>(out), static_cast<const float*>(grad), idx, k, d, padding_idx);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace flambeau::cuda
