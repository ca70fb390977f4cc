// im2col / col2im kernels of the CUDA convolution (Note [CUDA convolution]):
// one thread per column entry (im2col) or per big-image element (col2im, a
// gather: no atomics), grid-stride loops.
#include <cuda_runtime.h>

#include "conv.h"
#include "launch.cuh"

namespace flambeau::cuda {
namespace {

template <class T>
__global__ void im2col_kernel(ConvGeometry g, int64_t C, const T* img, T* cols, int64_t nimg) {
  const int64_t L = g.small_hw(), rows = C * g.kk(), per = rows * L, n = per * nimg;
  const int64_t img_stride = C * g.big_hw();
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t b = i / per, r = i % per;
    const int64_t src = g.im2col_source(r / L, r % L);
    cols[i] = src < 0 ? T(0) : img[b * img_stride + src];
  }
}

template <class T>
__global__ void col2im_kernel(ConvGeometry g, int64_t C, const T* cols, T* img, int64_t nimg) {
  const int64_t L = g.small_hw(), per = C * g.big_hw(), n = per * nimg;
  const int64_t cols_stride = C * g.kk() * L;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t b = i / per;
    img[i] = g.col2im_sum(cols + b * cols_stride, L, i % per);
  }
}

}  // namespace

int launch_im2col(bool is_double, const ConvGeometry& g, int64_t C, const void* img, void* cols, int64_t nimg,
                  void* stream) {
  const int64_t n = C * g.kk() * g.small_hw() * nimg;
  if (n == 0) return 0;
  auto s = static_cast<cudaStream_t>(stream);
  if (is_double)
    im2col_kernel<double><<<grid_for(n), kThreads, 0, s>>>(g, C, static_cast<const double*>(img),
                                                           static_cast<double*>(cols), nimg);
  else
    im2col_kernel<float><<<grid_for(n), kThreads, 0, s>>>(g, C, static_cast<const float*>(img),
                                                          static_cast<float*>(cols), nimg);
  return static_cast<int>(cudaGetLastError());
}

int launch_col2im(bool is_double, const ConvGeometry& g, int64_t C, const void* cols, void* img, int64_t nimg,
                  void* stream) {
  const int64_t n = C * g.big_hw() * nimg;
  if (n == 0) return 0;
  auto s = static_cast<cudaStream_t>(stream);
  if (is_double)
    col2im_kernel<double><<<grid_for(n), kThreads, 0, s>>>(g, C, static_cast<const double*>(cols),
                                                           static_cast<double*>(img), nimg);
  else
    col2im_kernel<float><<<grid_for(n), kThreads, 0, s>>>(g, C, static_cast<const float*>(cols),
                                                          static_cast<float*>(img), nimg);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace flambeau::cuda
