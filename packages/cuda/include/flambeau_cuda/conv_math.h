#pragma once
// Note [CUDA convolution]
// The index math of flambeau-cuda's convolution kernels, written
// __host__ __device__ (Note [CUDA index math]) so that tests/cpp checks it
// against core's CPU kernels without a GPU. Geometry as core's Note
// [Convolution geometry]: every convolution is a 2-D one (a 1-D one has a
// height of 1); the "big" image is the one a window slides over (the input of
// a convolution, the output of a transposed one), the "small" image has one
// value per window position.
//   * im2col: columns (C * kh * kw, ld) of a big image (C, Hb, Wb); column
//     l < Hs * Ws is window position (l / Ws, l % Ws); row (c, i, j) holds
//     big[c, oh * sh - ph + i * dh, ow * sw - pw + j * dw] or 0 in the padding.
//   * col2im: the adjoint, as a gather (one thread per big element sums the
//     column entries that read it: no atomics, deterministic).
// Only <cstdint>: the .cu files include it without core's headers.
#include <cstdint>

#include "flambeau_cuda/device_math.h"

namespace flambeau::cuda {

struct ConvGeometry {
  int64_t Hb = 1, Wb = 1;  // big image
  int64_t Hs = 1, Ws = 1;  // small image
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;

  FBC_HD int64_t kk() const { return kh * kw; }
  FBC_HD int64_t small_hw() const { return Hs * Ws; }
  FBC_HD int64_t big_hw() const { return Hb * Wb; }

  /// The offset in a big image (C, Hb, Wb) that im2col's row `row` (c * kk +
  /// i * kw + j) reads at window position `l`; -1 in the padding.
  FBC_HD int64_t im2col_source(int64_t row, int64_t l) const {
    const int64_t c = row / kk(), ij = row % kk();
    const int64_t i = ij / kw, j = ij % kw;
    const int64_t oh = l / Ws, ow = l % Ws;
    const int64_t h = oh * sh - ph + i * dh, w = ow * sw - pw + j * dw;
    if (h < 0 || h >= Hb || w < 0 || w >= Wb) return -1;
    return (c * Hb + h) * Wb + w;
  }

  /// col2im as a gather: the sum of the column entries (rows ld apart) that
  /// read big element `index` (c * Hb * Wb + h * Wb + w).
  template <class T>
  FBC_HD T col2im_sum(const T* cols, int64_t ld, int64_t index) const {
    const int64_t c = index / big_hw(), hw = index % big_hw();
    const int64_t h = hw / Wb, w = hw % Wb;
    T acc = T(0);
    for (int64_t i = 0; i < kh; ++i) {
      const int64_t y = h + ph - i * dh;  // = oh * sh
      if (y < 0 || y % sh != 0 || y / sh >= Hs) continue;
      const int64_t oh = y / sh;
      for (int64_t j = 0; j < kw; ++j) {
        const int64_t x = w + pw - j * dw;
        if (x < 0 || x % sw != 0 || x / sw >= Ws) continue;
        acc += cols[((c * kh + i) * kw + j) * ld + oh * Ws + x / sw];
      }
    }
    return acc;
  }
};

}  // namespace flambeau::cuda
