// The CUDA kernel of example::lstm_cell (lstm_cell.cpp registers it), compiled
// only when CMake finds nvcc. It includes no flambeau header: nvcc's front end
// rejects some of core's C++20 headers (flambeau/device_fallback.h's parameter
// packs inside lambdas), so the .cpp checks the tensors and passes raw pointers.
#include <cuda_runtime.h>

#include <cstdint>

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
void launch(const void* gates, const void* c, void* h, void* c_next, int64_t rows, int64_t hidden) {
  const int64_t numel = rows * hidden;
  constexpr int kThreads = 256;
  const int64_t blocks = (numel + kThreads - 1) / kThreads;
  // On the default stream: the example has no access to flambeau-cuda's
  // current stream without including its headers.
  lstm_cell_kernel<T><<<static_cast<unsigned>(blocks < 65535 ? blocks : 65535), kThreads>>>(
      static_cast<const T*>(gates), static_cast<const T*>(c), static_cast<T*>(h), static_cast<T*>(c_next), numel,
      hidden);
}

}  // namespace

// Returns a cudaError_t (0: success).
int example_lstm_cell_cuda(int device, bool is_double, const void* gates, const void* c, void* h, void* c_next,
                           int64_t rows, int64_t hidden) {
  int previous = 0;
  cudaError_t error = cudaGetDevice(&previous);
  if (error != cudaSuccess) return error;
  if (device >= 0 && device != previous && (error = cudaSetDevice(device)) != cudaSuccess) return error;
  if (is_double)
    launch<double>(gates, c, h, c_next, rows, hidden);
  else
    launch<float>(gates, c, h, c_next, rows, hidden);
  error = cudaGetLastError();
  if (device >= 0 && device != previous) cudaSetDevice(previous);
  return error;
}

const char* example_cuda_error_string(int error) { return cudaGetErrorString(static_cast<cudaError_t>(error)); }
