// The AVX-512 2x2 max pooling kernels (pool_2x2.h).
//
// Note [2x2 max pooling]
// LeNet-sized planes have few outputs per row (14, then 5): a loop vectorized across a row's
// outputs never fills a vector, and its scalar remainder (a compare and a branch per element) was
// the whole cost. Here each output row is done 16 outputs at a time under a mask: the two input rows'
// 32 values are split into the windows' left and right columns (float32: two permutes; bfloat16: the
// two values of a column pair are one 32-bit word, so the left value is the word shifted up and the
// right one the word with its low half cleared, both exact float32), the four candidates are
// compared in scan order (a later one wins when strictly greater or NaN), and the maxima and their
// int64 indices are stored under the mask. bfloat16 maxima are narrowed back by dropping the low
// half (exact: each is one of the inputs). The file is compiled for AVX-512 (F, VL, BW, DQ).
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "cpu/pool/pool_2x2.h"

namespace flambeau::cpu {
namespace pool_avx512 {
namespace {

struct Window {
  __m512 m;    // the maximum
  __m512i mi;  // its offset from the window's first element: 0, 1, W or W + 1
};

// The scan order of Note [2x2 max pooling]: a, b (first row), c, d (second row).
Window max4(__m512 a, __m512 b, __m512 c, __m512 d, int32_t W) {
  const __m512i zero = _mm512_setzero_si512();
  __mmask16 u = _mm512_cmp_ps_mask(b, a, _CMP_GT_OQ) | _mm512_cmp_ps_mask(b, b, _CMP_UNORD_Q);
  __m512 m = _mm512_mask_blend_ps(u, a, b);
  __m512i mi = _mm512_mask_blend_epi32(u, zero, _mm512_set1_epi32(1));
  u = _mm512_cmp_ps_mask(c, m, _CMP_GT_OQ) | _mm512_cmp_ps_mask(c, c, _CMP_UNORD_Q);
  m = _mm512_mask_blend_ps(u, m, c);
  mi = _mm512_mask_blend_epi32(u, mi, _mm512_set1_epi32(W));
  u = _mm512_cmp_ps_mask(d, m, _CMP_GT_OQ) | _mm512_cmp_ps_mask(d, d, _CMP_UNORD_Q);
  m = _mm512_mask_blend_ps(u, m, d);
  mi = _mm512_mask_blend_epi32(u, mi, _mm512_set1_epi32(W + 1));
  return {m, mi};
}

// idx[0, count) = base + 2 * lane + mi[lane].
void store_indices(int64_t* idx, int64_t base, __m512i mi, int64_t count) {
  const __m512i lane2 = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i off = _mm512_add_epi32(mi, lane2);
  const __m512i b = _mm512_set1_epi64(base);
  const auto lo = static_cast<__mmask8>(count >= 8 ? 0xFF : (1u << count) - 1u);
  const auto hi = static_cast<__mmask8>(count >= 16 ? 0xFF : count <= 8 ? 0u : (1u << (count - 8)) - 1u);
  _mm512_mask_storeu_epi64(
      idx, lo, _mm512_add_epi64(b, _mm512_maskz_cvtepi32_epi64(0xFF, _mm512_castsi512_si256(off))));
  _mm512_mask_storeu_epi64(
      idx + 8, hi,
      _mm512_add_epi64(b, _mm512_maskz_cvtepi32_epi64(0xFF, _mm512_maskz_extracti64x4_epi64(0xF, off, 1))));
}

__mmask16 mask16(int64_t count) { return count >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << count) - 1u); }

// A row's 32 values from `count` outputs' windows (2 * count values), split into left and right columns.
void columns_f32(const float* r, int64_t count, __m512* left, __m512* right) {
  const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  const __m512 lo = _mm512_maskz_loadu_ps(mask16(2 * count), r);
  const __m512 hi = _mm512_maskz_loadu_ps(mask16(2 * count - 16 > 0 ? 2 * count - 16 : 0), r + 16);
  *left = _mm512_permutex2var_ps(lo, even, hi);
  *right = _mm512_permutex2var_ps(lo, odd, hi);
}

void columns_bf16(const uint16_t* r, int64_t count, __m512* left, __m512* right) {
  const auto m = static_cast<__mmask32>(count >= 16 ? 0xFFFFFFFFu : (1u << (2 * count)) - 1u);
  const __m512i words = _mm512_maskz_loadu_epi16(m, r);
  *left = _mm512_castsi512_ps(_mm512_slli_epi32(words, 16));
  *right = _mm512_castsi512_ps(_mm512_and_si512(words, _mm512_set1_epi32(static_cast<int>(0xFFFF0000u))));
}

template <class S>
void plane(const S* in, S* out, int64_t* idx, int64_t H, int64_t W, int64_t OH, int64_t OW) {
  const int64_t rows = std::min(OH, H / 2), cols = std::min(OW, W / 2);
  const auto w32 = static_cast<int32_t>(W);
  for (int64_t oh = 0; oh < rows; ++oh) {
    const S* r0 = in + 2 * oh * W;
    const S* r1 = r0 + W;
    for (int64_t ow = 0; ow < cols; ow += 16) {
      const int64_t count = std::min<int64_t>(16, cols - ow);
      __m512 a, b, c, d;
      if constexpr (sizeof(S) == 4) {
        columns_f32(r0 + 2 * ow, count, &a, &b);
        columns_f32(r1 + 2 * ow, count, &c, &d);
      } else {
        columns_bf16(r0 + 2 * ow, count, &a, &b);
        columns_bf16(r1 + 2 * ow, count, &c, &d);
      }
      const Window win = max4(a, b, c, d, w32);
      S* y = out + oh * OW + ow;
      if constexpr (sizeof(S) == 4) {
        _mm512_mask_storeu_ps(y, mask16(count), win.m);
      } else {
        const __m256i narrow =
            _mm512_maskz_cvtepi32_epi16(0xFFFF, _mm512_srli_epi32(_mm512_castps_si512(win.m), 16));
        _mm256_mask_storeu_epi16(y, mask16(count), narrow);
      }
      store_indices(idx + oh * OW + ow, 2 * oh * W + 2 * ow, win.mi, count);
    }
  }
}

void plane_f32(const float* in, float* out, int64_t* idx, int64_t H, int64_t W, int64_t OH, int64_t OW) {
  plane<float>(in, out, idx, H, W, OH, OW);
}

void plane_bf16(const uint16_t* in, uint16_t* out, int64_t* idx, int64_t H, int64_t W, int64_t OH,
                int64_t OW) {
  plane<uint16_t>(in, out, idx, H, W, OH, OW);
}

void fill(MaxPool2x2Kernels& k) { k = {plane_f32, plane_bf16}; }

}  // namespace
}  // namespace pool_avx512

FB_REGISTER_DISPATCH(max_pool_2x2_stub, avx512, (&table_of<MaxPool2x2Kernels, pool_avx512::fill>));

}  // namespace flambeau::cpu
