#pragma once
// The AVX-512 2x2 max pooling of one plane (Note [2x2 max pooling] in pool_avx512.cpp), float32 and
// bfloat16, used by pool.cpp's max_pool2d when the capability allows AVX-512; pool.cpp's portable
// loops run the windows it leaves (the partial ones of ceil_mode) and every other capability.
#include <cstdint>

#include "cpu/dispatch/dispatch_stub.h"

namespace flambeau::cpu {

struct MaxPool2x2Kernels {
  /// The full windows of one H x W plane (rows oh < min(OH, H / 2), columns ow < min(OW, W / 2)):
  /// out (OH x OW, row stride OW) = the window maxima, idx their flat input positions; the first
  /// maximum in scan order wins and NaN beats every number, as PyTorch. Needs W < 2^30.
  void (*f32)(const float* in, float* out, int64_t* idx, int64_t H, int64_t W, int64_t OH, int64_t OW);
  /// The same on bfloat16 bits (compared as float32: exact, each maximum is an input's bits).
  void (*bf16)(const uint16_t* in, uint16_t* out, int64_t* idx, int64_t H, int64_t W, int64_t OH, int64_t OW);
};

FB_DECLARE_DISPATCH(const MaxPool2x2Kernels& (*)(), max_pool_2x2_stub);

}  // namespace flambeau::cpu
