// The CUDA kernel of example::lstm_cell (lstm_cell.cpp registers it), compiled
// only when CMake finds nvcc. A .cu includes flambeau's headers as a .cpp does:
// the tensors are checked, allocated on their device and read through
// data_ptr<T>() here.
#include <cuda_runtime.h>

#include <cstdint>

#include "lstm_cell.h"

using flambeau::Tensor;

namespace {

template <class T>
__device__ T sigmoid(T x) {
  return T(1) / (T(1) + exp(-x));
}

template <class T>
__global__ void lstm_cell_kernel(const T* __restrict__ gates, const T* __restrict__ c, T* __restrict__ h,
                                 T* __restrict__ c_next, int64_t numel, int64_t hidden) {
  for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < numel; k += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = k / hidden, j = k % hidden;
    const T* g = gates + row * 4 * hidden;
    const T cn = sigmoid(g[hidden + j]) * c[k] + sigmoid(g[j]) * tanh(g[2 * hidden + j]);
    c_next[k] = cn;
    h[k] = sigmoid(g[3 * hidden + j]) * tanh(cn);
  }
}

template <class T>
void launch(const Tensor& gates, const Tensor& c, Tensor& h, Tensor& c_next) {
  const int64_t numel = c.numel();
  constexpr int kThreads = 256;
  const int64_t blocks = (numel + kThreads - 1) / kThreads;
  // On the default stream: flambeau-cuda's current stream is its own package's API, which this example
  // does not build against.
  lstm_cell_kernel<T><<<static_cast<unsigned>(blocks < 65535 ? blocks : 65535), kThreads>>>(
      gates.data_ptr<T>(), c.data_ptr<T>(), h.data_ptr<T>(), c_next.data_ptr<T>(), numel, c.size(1));
}

}  // namespace

std::tuple<Tensor, Tensor> example::lstm_cell_cuda(const Tensor& gates, const Tensor& c) {
  check_lstm_cell_inputs(gates, c);
  const Tensor g = flambeau::contiguous(gates), cc = flambeau::contiguous(c);
  Tensor h = flambeau::empty_like(cc), c_next = flambeau::empty_like(cc);
  if (cc.numel() == 0) return {h, c_next};
  int previous = 0;
  cudaError_t error = cudaGetDevice(&previous);
  const int device = cc.device().index;
  if (error == cudaSuccess && device >= 0 && device != previous) error = cudaSetDevice(device);
  if (error == cudaSuccess) {
    if (cc.dtype() == flambeau::ScalarType::Float64)
      launch<double>(g, cc, h, c_next);
    else
      launch<float>(g, cc, h, c_next);
    error = cudaGetLastError();
    if (device >= 0 && device != previous) cudaSetDevice(previous);
  }
  FB_CHECK(error == cudaSuccess, "[example::lstm_cell] the CUDA kernel failed: ", cudaGetErrorString(error));
  return {h, c_next};
}
