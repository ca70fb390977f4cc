// flambeau-cuda's copy and fill kernels (kernels.h). The index math is
// Note [CUDA index math] (device_math.h), tested on the host.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels.h"
#include "launch.cuh"

namespace flambeau::cuda {
namespace {

struct alignas(16) Bytes16 {
  uint64_t lo, hi;
};

template <class T>
__global__ void fill_kernel(T* dst, T value, OffsetCalculator<1> calc, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x)
    dst[calc.get0(i)] = value;
}

template <class T>
__global__ void fill_contiguous_kernel(T* dst, T value, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x)
    dst[i] = value;
}

template <class T>
int fill_as(void* dst, const void* pattern, const OffsetCalculator<1>& calc, int64_t n, cudaStream_t s) {
  T value;
  memcpy(&value, pattern, sizeof(T));
  if (calc.ndim == 1 && calc.strides[0][0] == 1)
    fill_contiguous_kernel<T><<<grid_for(n), kThreads, 0, s>>>(static_cast<T*>(dst), value, n);
  else
    fill_kernel<T><<<grid_for(n), kThreads, 0, s>>>(static_cast<T*>(dst), value, calc, n);
  return static_cast<int>(cudaGetLastError());
}

// A value in transit between two dtypes: integers stay exact in 64 bits.
struct Wide {
  bool is_float;
  double f;
  int64_t i;
  uint64_t u;  // for uint64 sources above INT64_MAX
  bool is_unsigned;
};

__device__ Wide load(const char* p, int dtype) {
  Wide w{false, 0.0, 0, 0, false};
  switch (dtype) {
    case kBool:
      w.i = *reinterpret_cast<const bool*>(p) ? 1 : 0;
      break;
    case kUInt8:
      w.i = *reinterpret_cast<const uint8_t*>(p);
      break;
    case kInt8:
      w.i = *reinterpret_cast<const int8_t*>(p);
      break;
    case kInt16:
      w.i = *reinterpret_cast<const int16_t*>(p);
      break;
    case kInt32:
      w.i = *reinterpret_cast<const int32_t*>(p);
      break;
    case kInt64:
      w.i = *reinterpret_cast<const int64_t*>(p);
      break;
    case kUInt16:
      w.i = *reinterpret_cast<const uint16_t*>(p);
      break;
    case kUInt32:
      w.i = *reinterpret_cast<const uint32_t*>(p);
      break;
    case kUInt64:
      w.u = *reinterpret_cast<const uint64_t*>(p);
      w.i = static_cast<int64_t>(w.u);
      w.is_unsigned = true;
      break;
    case kFloat16:
      w.is_float = true;
      w.f = __half2float(*reinterpret_cast<const __half*>(p));
      break;
    case kBFloat16:
      w.is_float = true;
      w.f = __bfloat162float(*reinterpret_cast<const __nv_bfloat16*>(p));
      break;
    case kFloat32:
      w.is_float = true;
      w.f = *reinterpret_cast<const float*>(p);
      break;
    default:
      w.is_float = true;
      w.f = *reinterpret_cast<const double*>(p);
      break;
  }
  return w;
}

template <class T>
__device__ T wide_to(const Wide& w) {
  if (w.is_float) return static_cast<T>(w.f);
  if (w.is_unsigned) return static_cast<T>(w.u);
  return static_cast<T>(w.i);
}

__device__ void store(char* p, int dtype, const Wide& w) {
  switch (dtype) {
    case kBool:
      *reinterpret_cast<bool*>(p) = w.is_float ? w.f != 0.0 : w.i != 0;
      break;
    case kUInt8:
      *reinterpret_cast<uint8_t*>(p) =
          w.is_float ? static_cast<uint8_t>(static_cast<int64_t>(w.f)) : static_cast<uint8_t>(w.i);
      break;
    case kInt8:
      *reinterpret_cast<int8_t*>(p) =
          w.is_float ? static_cast<int8_t>(static_cast<int64_t>(w.f)) : static_cast<int8_t>(w.i);
      break;
    case kInt16:
      *reinterpret_cast<int16_t*>(p) =
          w.is_float ? static_cast<int16_t>(static_cast<int64_t>(w.f)) : static_cast<int16_t>(w.i);
      break;
    case kInt32:
      *reinterpret_cast<int32_t*>(p) = wide_to<int32_t>(w);
      break;
    case kInt64:
      *reinterpret_cast<int64_t*>(p) = wide_to<int64_t>(w);
      break;
    case kUInt16:
      *reinterpret_cast<uint16_t*>(p) =
          w.is_float ? static_cast<uint16_t>(static_cast<int64_t>(w.f)) : static_cast<uint16_t>(w.i);
      break;
    case kUInt32:
      *reinterpret_cast<uint32_t*>(p) =
          w.is_float ? static_cast<uint32_t>(static_cast<int64_t>(w.f)) : static_cast<uint32_t>(w.i);
      break;
    case kUInt64:
      *reinterpret_cast<uint64_t*>(p) = wide_to<uint64_t>(w);
      break;
    case kFloat16:
      *reinterpret_cast<__half*>(p) = __double2half(
          w.is_float ? w.f : (w.is_unsigned ? static_cast<double>(w.u) : static_cast<double>(w.i)));
      break;
    case kBFloat16:
      *reinterpret_cast<__nv_bfloat16*>(p) = __double2bfloat16(
          w.is_float ? w.f : (w.is_unsigned ? static_cast<double>(w.u) : static_cast<double>(w.i)));
      break;
    case kFloat32:
      *reinterpret_cast<float*>(p) = wide_to<float>(w);
      break;
    default:
      *reinterpret_cast<double*>(p) = wide_to<double>(w);
      break;
  }
}

__host__ __device__ int dtype_size(int dtype) {
  switch (dtype) {
    case kBool:
    case kUInt8:
    case kInt8:
      return 1;
    case kInt16:
    case kUInt16:
    case kFloat16:
    case kBFloat16:
      return 2;
    case kInt32:
    case kUInt32:
    case kFloat32:
      return 4;
    case kComplexDouble:
      return 16;
    default:
      return 8;
  }
}

__global__ void cast_kernel(char* dst, int dst_dtype, const char* src, int src_dtype,
                            OffsetCalculator<2> calc, int64_t n) {
  const int ds = dtype_size(dst_dtype), ss = dtype_size(src_dtype);
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    int64_t off[2];
    calc.get(i, off);
    store(dst + off[0] * ds, dst_dtype, load(src + off[1] * ss, src_dtype));
  }
}

template <class T>
__global__ void copy_kernel(T* dst, const T* src, OffsetCalculator<2> calc, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    int64_t off[2];
    calc.get(i, off);
    dst[off[0]] = src[off[1]];
  }
}

template <class T>
int copy_as(void* dst, const void* src, const OffsetCalculator<2>& calc, int64_t n, cudaStream_t s) {
  copy_kernel<T><<<grid_for(n), kThreads, 0, s>>>(static_cast<T*>(dst), static_cast<const T*>(src), calc, n);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace

int launch_fill(void* dst, int itemsize, const void* pattern, const OffsetCalculator<1>& calc, int64_t n,
                void* stream) {
  if (n == 0) return 0;
  auto s = static_cast<cudaStream_t>(stream);
  switch (itemsize) {
    case 1:
      return fill_as<uint8_t>(dst, pattern, calc, n, s);
    case 2:
      return fill_as<uint16_t>(dst, pattern, calc, n, s);
    case 4:
      return fill_as<uint32_t>(dst, pattern, calc, n, s);
    case 8:
      return fill_as<uint64_t>(dst, pattern, calc, n, s);
    case 16:
      return fill_as<Bytes16>(dst, pattern, calc, n, s);
    default:
      return static_cast<int>(cudaErrorInvalidValue);
  }
}

int launch_copy(void* dst, int dst_dtype, const void* src, int src_dtype, const OffsetCalculator<2>& calc,
                int64_t n, void* stream) {
  if (n == 0) return 0;
  auto s = static_cast<cudaStream_t>(stream);
  if (dst_dtype == src_dtype) {
    switch (dtype_size(dst_dtype)) {
      case 1:
        return copy_as<uint8_t>(dst, src, calc, n, s);
      case 2:
        return copy_as<uint16_t>(dst, src, calc, n, s);
      case 4:
        return copy_as<uint32_t>(dst, src, calc, n, s);
      case 8:
        return copy_as<uint64_t>(dst, src, calc, n, s);
      default:
        return copy_as<Bytes16>(dst, src, calc, n, s);
    }
  }
  if (dst_dtype >= kComplexFloat || src_dtype >= kComplexFloat)
    return static_cast<int>(cudaErrorInvalidValue);
  cast_kernel<<<grid_for(n), kThreads, 0, s>>>(static_cast<char*>(dst), dst_dtype,
                                               static_cast<const char*>(src), src_dtype, calc, n);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace flambeau::cuda
