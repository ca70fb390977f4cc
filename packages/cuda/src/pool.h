#pragma once
// Launchers of the pooling kernels (pool.cu; Note [CUDA convolution]).
// Planes are contiguous: input (planes, Hb, Wb), output (planes, Hs, Ws).
#include <cstdint>

#include "flambeau_cuda/conv_math.h"

namespace flambeau::cuda {

/// out, indices (flat h * Wb + w per plane) of max_pool2d.
int launch_max_pool2d(bool is_double, const ConvGeometry& g, int64_t planes, const void* in, void* out,
                      int64_t* indices, void* stream);
/// grad_input (planes * in_plane, zeroed by the caller) += grad_output scattered through indices.
int launch_max_pool_backward(bool is_double, int64_t planes, int64_t in_plane, int64_t out_plane,
                             const void* grad_output, const int64_t* indices, void* grad_input, void* stream);
int launch_avg_pool2d(bool is_double, const AvgPoolGeometry& a, int64_t planes, const void* in, void* out,
                      void* stream);
int launch_avg_pool2d_backward(bool is_double, const AvgPoolGeometry& a, int64_t planes,
                               const void* grad_output, void* grad_input, void* stream);
int launch_adaptive_avg_pool2d(bool is_double, const ConvGeometry& g, int64_t planes, const void* in,
                               void* out, void* stream);
int launch_adaptive_avg_pool2d_backward(bool is_double, const ConvGeometry& g, int64_t planes,
                                        const void* grad_output, void* grad_input, void* stream);

}  // namespace flambeau::cuda
