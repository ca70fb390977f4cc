// The elementwise kernels (elementwise.h): one kernel per compute type, with
// a contiguous fast path; the op is a run-time switch, uniform across a warp.
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "elementwise.h"
#include "launch.cuh"

namespace flambeau::cuda {
namespace {

template <class T>
__device__ T ew_binary(int op, T a, T b, T alpha, T extra) {
  switch (op) {
    case kEwAdd:
      return a + alpha * b;
    case kEwSub:
      return a - alpha * b;
    case kEwMul:
      return a * b;
    case kEwDiv:
      return a / b;
    case kEwMaximum:
      if constexpr (std::is_integral_v<T>) {
        return a > b ? a : b;
      } else {
        return (a != a || b != b) ? a + b : (a > b ? a : b);  // NaN propagates, as torch.maximum
      }
    case kEwMinimum:
      if constexpr (std::is_integral_v<T>) {
        return a < b ? a : b;
      } else {
        return (a != a || b != b) ? a + b : (a < b ? a : b);
      }
    case kEwPow:
      return static_cast<T>(::pow(static_cast<double>(a), static_cast<double>(b)));
    default:
      return b <= extra ? T(0) : a;  // kEwThresholdBackward
  }
}

template <class T>
__device__ bool ew_compare(int op, T a, T b) {
  switch (op) {
    case kEwEq:
      return a == b;
    case kEwNe:
      return a != b;
    case kEwLt:
      return a < b;
    case kEwLe:
      return a <= b;
    case kEwGt:
      return a > b;
    default:
      return a >= b;
  }
}

template <class T>
__device__ T ew_unary(int op, T a) {
  switch (op) {
    case kEwNeg:
      return -a;
    case kEwAbs:
      return a < T(0) ? -a : a;
    case kEwRelu:
      return a > T(0) ? a : (a != a ? a : T(0));
    default:
      break;
  }
  if constexpr (sizeof(T) == 4) {
    switch (op) {
      case kEwExp:
        return expf(a);
      case kEwLog:
        return logf(a);
      case kEwSqrt:
        return sqrtf(a);
      case kEwTanh:
        return tanhf(a);
      default:
        return 1.0f / (1.0f + expf(-a));  // kEwSigmoid
    }
  } else {
    const double x = static_cast<double>(a);
    switch (op) {
      case kEwExp:
        return static_cast<T>(::exp(x));
      case kEwLog:
        return static_cast<T>(::log(x));
      case kEwSqrt:
        return static_cast<T>(::sqrt(x));
      case kEwTanh:
        return static_cast<T>(::tanh(x));
      default:
        return static_cast<T>(1.0 / (1.0 + ::exp(-x)));
    }
  }
}

template <class T, bool Contiguous>
__global__ void ew_kernel(int op, EwArgs args, int64_t n) {
  const T* in0 = static_cast<const T*>(args.in[0]);
  const T* in1 = static_cast<const T*>(args.in[1]);
  const T s0 = static_cast<T>(args.scalar[0]), s1 = static_cast<T>(args.scalar[1]);
  const T alpha = static_cast<T>(args.alpha), extra = static_cast<T>(args.extra);
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    int64_t off[3];
    if constexpr (Contiguous) {
      off[0] = off[1] = off[2] = i;
    } else {
      args.calc.get(i, off);
    }
    const T a = in0 ? in0[off[1]] : s0;
    if (op >= kEwNeg) {
      static_cast<T*>(args.out)[off[0]] = ew_unary<T>(op, a);
      continue;
    }
    const T b = in1 ? in1[off[2]] : s1;
    if (op >= kEwEq && op <= kEwGe)
      static_cast<bool*>(args.out)[off[0]] = ew_compare<T>(op, a, b);
    else
      static_cast<T*>(args.out)[off[0]] = ew_binary<T>(op, a, b, alpha, extra);
  }
}

template <class T>
int launch_as(int op, const EwArgs& args, int64_t n, cudaStream_t s) {
  if (args.contiguous)
    ew_kernel<T, true><<<grid_for(n), kThreads, 0, s>>>(op, args, n);
  else
    ew_kernel<T, false><<<grid_for(n), kThreads, 0, s>>>(op, args, n);
  return static_cast<int>(cudaGetLastError());
}

struct alignas(16) Bytes16 {
  uint64_t lo, hi;
};

template <class T>
__global__ void where_kernel(WhereArgs args, int64_t n) {
  T s[2];
  memcpy(&s[0], args.scalar[0], sizeof(T));
  memcpy(&s[1], args.scalar[1], sizeof(T));
  const T* a = static_cast<const T*>(args.in[0]);
  const T* b = static_cast<const T*>(args.in[1]);
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    int64_t off[4];
    args.calc.get(i, off);
    static_cast<T*>(args.out)[off[0]] = args.cond[off[1]] ? (a ? a[off[2]] : s[0]) : (b ? b[off[3]] : s[1]);
  }
}

template <class T>
int where_as(const WhereArgs& args, int64_t n, cudaStream_t s) {
  where_kernel<T><<<grid_for(n), kThreads, 0, s>>>(args, n);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace

int launch_where(const WhereArgs& args, int elem_size, int64_t n, void* stream) {
  if (n == 0) return 0;
  auto s = static_cast<cudaStream_t>(stream);
  switch (elem_size) {
    case 1:
      return where_as<uint8_t>(args, n, s);
    case 2:
      return where_as<uint16_t>(args, n, s);
    case 4:
      return where_as<uint32_t>(args, n, s);
    case 8:
      return where_as<uint64_t>(args, n, s);
    default:
      return where_as<Bytes16>(args, n, s);
  }
}

int launch_elementwise(int op, int compute, const EwArgs& args, int64_t n, void* stream) {
  if (n == 0) return 0;
  auto s = static_cast<cudaStream_t>(stream);
  switch (compute) {
    case 0:
      return launch_as<float>(op, args, n, s);
    case 1:
      return launch_as<double>(op, args, n, s);
    default:
      return launch_as<int64_t>(op, args, n, s);
  }
}

}  // namespace flambeau::cuda
