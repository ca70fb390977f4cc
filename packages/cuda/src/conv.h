#pragma once
// Launchers of the convolution kernels (conv.cu; Note [CUDA convolution]).
// Images are contiguous (nimg, C, Hb, Wb); columns contiguous (nimg, C * kh * kw, Hs * Ws).
#include <cstdint>

#include "flambeau_cuda/conv_math.h"

namespace flambeau::cuda {

/// cols[b] = im2col(img[b]) for b < nimg; float64 when `is_double`, else float32.
int launch_im2col(bool is_double, const ConvGeometry& g, int64_t C, const void* img, void* cols, int64_t nimg,
                  void* stream);
/// img[b] = col2im(cols[b]) (written, not accumulated).
int launch_col2im(bool is_double, const ConvGeometry& g, int64_t C, const void* cols, void* img, int64_t nimg,
                  void* stream);

}  // namespace flambeau::cuda
