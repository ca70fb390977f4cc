// Pooling kernels (Note [CUDA convolution]): one thread per output element
// forward, per input element backward (a gather over the windows holding it),
// but max_pool's backward, which scatters through the saved indices with
// atomicAdd. Grid-stride loops.
#include <cuda_runtime.h>

#include "launch.cuh"
#include "pool.h"

namespace flambeau::cuda {
namespace {

#define FBC_GRID_LOOP(i, n)                                                              \
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)

template <class T>
__global__ void max_pool2d_kernel(ConvGeometry g, int64_t planes, const T* in, T* out, int64_t* indices) {
  const int64_t op = g.small_hw();
  FBC_GRID_LOOP(i, planes * op) {
    const int64_t c = i / op, o = i % op;
    out[i] = max_pool_window(g, in + c * g.big_hw(), o / g.Ws, o % g.Ws, &indices[i]);
  }
}

template <class T>
__global__ void max_pool_backward_kernel(int64_t planes, int64_t in_plane, int64_t out_plane, const T* grad,
                                         const int64_t* indices, T* grad_input) {
  FBC_GRID_LOOP(i, planes * out_plane) {
    // Note [Empty pooling window] (core's pool.cpp): an index past the plane gets no gradient.
    if (indices[i] < in_plane) atomicAdd(grad_input + (i / out_plane) * in_plane + indices[i], grad[i]);
  }
}

template <class T>
__global__ void avg_pool2d_kernel(AvgPoolGeometry a, int64_t planes, const T* in, T* out) {
  const int64_t op = a.g.small_hw();
  FBC_GRID_LOOP(i, planes * op) {
    const int64_t c = i / op, o = i % op;
    out[i] = a.forward(in + c * a.g.big_hw(), o / a.g.Ws, o % a.g.Ws);
  }
}

template <class T>
__global__ void avg_pool2d_backward_kernel(AvgPoolGeometry a, int64_t planes, const T* grad, T* grad_input) {
  const int64_t ip = a.g.big_hw();
  FBC_GRID_LOOP(i, planes * ip) {
    const int64_t c = i / ip, x = i % ip;
    grad_input[i] = a.backward(grad + c * a.g.small_hw(), x / a.g.Wb, x % a.g.Wb);
  }
}

template <class T>
__global__ void adaptive_avg_kernel(ConvGeometry g, int64_t planes, const T* in, T* out) {
  const int64_t op = g.small_hw();
  FBC_GRID_LOOP(i, planes * op) {
    const int64_t c = i / op, o = i % op;
    out[i] = adaptive_avg_window(g, in + c * g.big_hw(), o / g.Ws, o % g.Ws);
  }
}

template <class T>
__global__ void adaptive_avg_backward_kernel(ConvGeometry g, int64_t planes, const T* grad, T* grad_input) {
  const int64_t ip = g.big_hw();
  FBC_GRID_LOOP(i, planes * ip) {
    const int64_t c = i / ip, x = i % ip;
    grad_input[i] = adaptive_avg_backward(g, grad + c * g.small_hw(), x / g.Wb, x % g.Wb);
  }
}

#undef FBC_GRID_LOOP

template <class T>
const T* cp(const void* p) {
  return static_cast<const T*>(p);
}

}  // namespace

// The kernels are templates: each launcher casts its pointers per type.
int launch_max_pool2d(bool is_double, const ConvGeometry& g, int64_t planes, const void* in, void* out,
                      int64_t* indices, void* stream) {
  const int64_t n = planes * g.small_hw();
  if (n == 0) return 0;
  auto s = static_cast<cudaStream_t>(stream);
  if (is_double)
    max_pool2d_kernel<double>
        <<<grid_for(n), kThreads, 0, s>>>(g, planes, cp<double>(in), static_cast<double*>(out), indices);
  else
    max_pool2d_kernel<float>
        <<<grid_for(n), kThreads, 0, s>>>(g, planes, cp<float>(in), static_cast<float*>(out), indices);
  return static_cast<int>(cudaGetLastError());
}

int launch_max_pool_backward(bool is_double, int64_t planes, int64_t in_plane, int64_t out_plane,
                             const void* grad_output, const int64_t* indices, void* grad_input,
                             void* stream) {
  const int64_t n = planes * out_plane;
  if (n == 0) return 0;
  auto s = static_cast<cudaStream_t>(stream);
  if (is_double)
    max_pool_backward_kernel<double><<<grid_for(n), kThreads, 0, s>>>(
        planes, in_plane, out_plane, cp<double>(grad_output), indices, static_cast<double*>(grad_input));
  else
    max_pool_backward_kernel<float><<<grid_for(n), kThreads, 0, s>>>(
        planes, in_plane, out_plane, cp<float>(grad_output), indices, static_cast<float*>(grad_input));
  return static_cast<int>(cudaGetLastError());
}

int launch_avg_pool2d(bool is_double, const AvgPoolGeometry& a, int64_t planes, const void* in, void* out,
                      void* stream) {
  const int64_t n = planes * a.g.small_hw();
  if (n == 0) return 0;
  auto s = static_cast<cudaStream_t>(stream);
  if (is_double)
    avg_pool2d_kernel<double>
        <<<grid_for(n), kThreads, 0, s>>>(a, planes, cp<double>(in), static_cast<double*>(out));
  else
    avg_pool2d_kernel<float>
        <<<grid_for(n), kThreads, 0, s>>>(a, planes, cp<float>(in), static_cast<float*>(out));
  return static_cast<int>(cudaGetLastError());
}

int launch_avg_pool2d_backward(bool is_double, const AvgPoolGeometry& a, int64_t planes,
                               const void* grad_output, void* grad_input, void* stream) {
  const int64_t n = planes * a.g.big_hw();
  if (n == 0) return 0;
  auto s = static_cast<cudaStream_t>(stream);
  if (is_double)
    avg_pool2d_backward_kernel<double><<<grid_for(n), kThreads, 0, s>>>(a, planes, cp<double>(grad_output),
                                                                        static_cast<double*>(grad_input));
  else
    avg_pool2d_backward_kernel<float>
        <<<grid_for(n), kThreads, 0, s>>>(a, planes, cp<float>(grad_output), static_cast<float*>(grad_input));
  return static_cast<int>(cudaGetLastError());
}

int launch_adaptive_avg_pool2d(bool is_double, const ConvGeometry& g, int64_t planes, const void* in,
                               void* out, void* stream) {
  const int64_t n = planes * g.small_hw();
  if (n == 0) return 0;
  auto s = static_cast<cudaStream_t>(stream);
  if (is_double)
    adaptive_avg_kernel<double>
        <<<grid_for(n), kThreads, 0, s>>>(g, planes, cp<double>(in), static_cast<double*>(out));
  else
    adaptive_avg_kernel<float>
        <<<grid_for(n), kThreads, 0, s>>>(g, planes, cp<float>(in), static_cast<float*>(out));
  return static_cast<int>(cudaGetLastError());
}

int launch_adaptive_avg_pool2d_backward(bool is_double, const ConvGeometry& g, int64_t planes,
                                        const void* grad_output, void* grad_input, void* stream) {
  const int64_t n = planes * g.big_hw();
  if (n == 0) return 0;
  auto s = static_cast<cudaStream_t>(stream);
  if (is_double)
    adaptive_avg_backward_kernel<double><<<grid_for(n), kThreads, 0, s>>>(g, planes, cp<double>(grad_output),
                                                                          static_cast<double*>(grad_input));
  else
    adaptive_avg_backward_kernel<float>
        <<<grid_for(n), kThreads, 0, s>>>(g, planes, cp<float>(grad_output), static_cast<float*>(grad_input));
  return static_cast<int>(cudaGetLastError());
}

}  // namespace flambeau::cuda
