// The AVX512-BF16 tiles of the bfloat16 GEMM (Note [Low-precision GEMM] in lowp_gemm.h). The file
// is compiled for AVX-512; the bf16 instructions are enabled per function, and the caller runs
// them only on a CPU that has them (bf16_gemm_kernel_available).
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "cpu/linalg/lowp_gemm.h"

namespace flambeau::cpu {
namespace {

constexpr int kRows = 8;    // rows of C per tile: 8 x 2 zmm accumulators
constexpr int kPanel = 32;  // columns per panel (2 zmm)

#define FB_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

template <int R>
FB_BF16_TARGET void tile(int64_t kp, const uint16_t* a, int64_t lda, const uint16_t* panel, const float* bias,
                         uint16_t* c, int64_t ldc, __mmask16 m0, __mmask16 m1) {
  // The accumulators start from the bias (Note [Low-precision GEMM]): one rounding at the end.
  const __m512 init0 = bias ? _mm512_loadu_ps(bias) : _mm512_setzero_ps();
  const __m512 init1 = bias ? _mm512_loadu_ps(bias + 16) : _mm512_setzero_ps();
  __m512 acc0[R], acc1[R];
  for (int r = 0; r < R; ++r) {
    acc0[r] = init0;
    acc1[r] = init1;
  }
  const auto* b = reinterpret_cast<const __m512i*>(panel);
  for (int64_t p = 0; p < kp; ++p) {
    const __m512bh b0 = (__m512bh)_mm512_loadu_si512(b + 2 * p);
    const __m512bh b1 = (__m512bh)_mm512_loadu_si512(b + 2 * p + 1);
    for (int r = 0; r < R; ++r) {
      int32_t pair;
      __builtin_memcpy(&pair, a + r * lda + 2 * p, sizeof(pair));
      const __m512bh av = (__m512bh)_mm512_set1_epi32(pair);
      acc0[r] = _mm512_dpbf16_ps(acc0[r], av, b0);
      acc1[r] = _mm512_dpbf16_ps(acc1[r], av, b1);
    }
  }
  for (int r = 0; r < R; ++r) {
    _mm256_mask_storeu_epi16(c + r * ldc, m0, (__m256i)_mm512_cvtneps_pbh(acc0[r]));
    _mm256_mask_storeu_epi16(c + r * ldc + 16, m1, (__m256i)_mm512_cvtneps_pbh(acc1[r]));
  }
}

__mmask16 lanes(int64_t count) {
  return count >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << std::max<int64_t>(count, 0)) - 1u);
}

FB_BF16_TARGET void bf16_tiles(int64_t r0, int64_t r1, int64_t p0, int64_t p1, int64_t kk, int64_t n,
                               const uint16_t* ap, int64_t lda, const uint16_t* bp, const float* bias,
                               uint16_t* c, int64_t ldc) {
  const int64_t kp = kk / 2;
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t col = p * kPanel;
    const __mmask16 m0 = lanes(n - col), m1 = lanes(n - col - 16);
    const uint16_t* panel = bp + p * kp * 2 * kPanel;
    const float* pbias = bias ? bias + col : nullptr;
    int64_t r = r0;
    for (; r + kRows <= r1; r += kRows)
      tile<kRows>(kp, ap + r * lda, lda, panel, pbias, c + r * ldc + col, ldc, m0, m1);
    switch (r1 - r) {
#define FB_TAIL(R)                                                                \
  case R:                                                                         \
    tile<R>(kp, ap + r * lda, lda, panel, pbias, c + r * ldc + col, ldc, m0, m1); \
    break;
      FB_TAIL(1)
      FB_TAIL(2) FB_TAIL(3) FB_TAIL(4) FB_TAIL(5) FB_TAIL(6) FB_TAIL(7)
#undef FB_TAIL
          default : break;
    }
  }
}

}  // namespace

FB_REGISTER_DISPATCH(bf16_tiles_stub, avx512, &bf16_tiles);

}  // namespace flambeau::cpu
