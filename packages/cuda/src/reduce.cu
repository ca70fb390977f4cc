// Reduction kernels (reduce.h): one block per output (grid-stride over
// outputs), each thread strides over the reduced elements, then a tree in
// shared memory. The index split is ReduceSplit (Note [CUDA index math]).
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "launch.cuh"
#include "reduce.h"

namespace flambeau::cuda {
namespace {

template <class T>
struct Acc {
  T v;
  int64_t i;
};

template <class T>
__device__ bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>)
    return v != v;
  else
    return false;
}

// Max/min with NaN winning and the first index on ties.
template <class T>
__device__ Acc<T> pick(int op, Acc<T> a, Acc<T> b) {
  if (a.i < 0) return b;
  if (b.i < 0) return a;
  const bool an = is_nan(a.v), bn = is_nan(b.v);
  if (an || bn) return (an && (!bn || a.i < b.i)) ? a : b;
  const bool want_max = op == kRedMax || op == kRedArgMax;
  if (a.v == b.v) return a.i < b.i ? a : b;
  return (want_max ? a.v > b.v : a.v < b.v) ? a : b;
}

template <class T>
__global__ void reduce_kernel(int op, const T* in, ReduceSplit split, T* out, int64_t* indices,
                              double scale) {
  __shared__ T sv[kThreads];
  __shared__ int64_t si[kThreads];
  const bool arg = op >= kRedMax;
  for (int64_t o = blockIdx.x; o < split.num_outputs; o += gridDim.x) {
    T v = op == kRedProd ? T(1) : T(0);
    int64_t idx = -1;
    for (int64_t r = threadIdx.x; r < split.reduce_size; r += blockDim.x) {
      const T x = in[split.offset(o, r)];
      if (op == kRedSum)
        v += x;
      else if (op == kRedProd)
        v *= x;
      else {
        const Acc<T> p = pick<T>(op, Acc<T>{v, idx}, Acc<T>{x, r});
        v = p.v;
        idx = p.i;
      }
    }
    sv[threadIdx.x] = v;
    si[threadIdx.x] = idx;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
      if (threadIdx.x < s) {
        if (op == kRedSum)
          sv[threadIdx.x] += sv[threadIdx.x + s];
        else if (op == kRedProd)
          sv[threadIdx.x] *= sv[threadIdx.x + s];
        else {
          const Acc<T> p = pick<T>(op, Acc<T>{sv[threadIdx.x], si[threadIdx.x]},
                                   Acc<T>{sv[threadIdx.x + s], si[threadIdx.x + s]});
          sv[threadIdx.x] = p.v;
          si[threadIdx.x] = p.i;
        }
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      if (out) out[o] = op == kRedSum && scale != 1.0 ? static_cast<T>(sv[0] * scale) : sv[0];
      if (arg && indices) indices[o] = si[0];
    }
    __syncthreads();
  }
}

template <class T>
int reduce_as(int op, const void* in, const ReduceSplit& split, void* out, int64_t* indices, double scale,
              cudaStream_t s) {
  const int64_t blocks = split.num_outputs < 65535 ? split.num_outputs : 65535;
  reduce_kernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(op, static_cast<const T*>(in), split,
                                                                      static_cast<T*>(out), indices, scale);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace

int launch_reduce(int op, int compute, const void* in, const ReduceSplit& split, void* out, int64_t* indices,
                  double scale, void* stream) {
  if (split.num_outputs == 0) return 0;
  auto s = static_cast<cudaStream_t>(stream);
  switch (compute) {
    case 0:
      return reduce_as<float>(op, in, split, out, indices, scale, s);
    case 1:
      return reduce_as<double>(op, in, split, out, indices, scale, s);
    default:
      return reduce_as<int64_t>(op, in, split, out, indices, scale, s);
  }
}

}  // namespace flambeau::cuda
