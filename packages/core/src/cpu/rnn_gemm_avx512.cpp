// The recurrent step GEMM against a pre-packed weight (rnn_gemm.h), AVX-512.
//
// A step multiplies a few batch rows (M, tens) by the whole hidden-to-hidden
// weight (K x N, e.g. 256 x 1024): OpenBLAS repacks all of the weight on
// every call, a copy as large as the product's work when M is small. Here the
// weight is packed once per layer call into panels of 64 columns (K rows of 64
// contiguous floats, a panel of a 256-row weight is 64 KiB and stays in L2),
// and each step runs a register-blocked kernel over them: up to 6 rows x 64
// columns of C in 24 zmm accumulators, per k 4 panel loads and 6 broadcasts of
// a.
#include <immintrin.h>

#include <algorithm>

#include "rnn_gemm.h"

namespace flambeau::cpu::rnn_avx512 {

void pack_b(const float* src, int64_t sk, int64_t sn, int64_t K, int64_t N, float* dst) {
  for (int64_t p0 = 0; p0 < N; p0 += kPanel) {
    const int64_t w = std::min(kPanel, N - p0);
    float* panel = dst + p0 * K;
    if (sn == 1) {  // rows of B contiguous
      for (int64_t k = 0; k < K; ++k) {
        const float* s = src + k * sk + p0;
        float* row = panel + k * kPanel;
        std::copy(s, s + w, row);
        std::fill(row + w, row + kPanel, 0.0f);
      }
    } else {  // columns of B (rows of the weight) read along k
      for (int64_t j = 0; j < kPanel; ++j) {
        const float* s = src + (p0 + j) * sn;
        for (int64_t k = 0; k < K; ++k) panel[k * kPanel + j] = j < w ? s[k * sk] : 0.0f;
      }
    }
  }
}

namespace {

constexpr int kV = kPanel / 16;  // zmm vectors per panel row

// R rows of c (at most 6) times one panel; `cols` valid columns (<= kPanel).
template <int R>
inline void block(int64_t K, const float* a, int64_t lda, const float* panel, float* c, int64_t ldc,
                  int64_t cols, bool accumulate) {
  __m512 acc[R][kV];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < kV; ++v) acc[r][v] = _mm512_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    const float* pk = panel + k * kPanel;
    __m512 b[kV];
    for (int v = 0; v < kV; ++v) b[v] = _mm512_loadu_ps(pk + 16 * v);
    for (int r = 0; r < R; ++r) {
      const __m512 av = _mm512_set1_ps(a[r * lda + k]);
      for (int v = 0; v < kV; ++v) acc[r][v] = _mm512_fmadd_ps(av, b[v], acc[r][v]);
    }
  }
  for (int v = 0; v < kV; ++v) {
    const int64_t left = cols - 16 * v;
    if (left <= 0) break;
    const __mmask16 m = left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1u);
    for (int r = 0; r < R; ++r) {
      float* o = c + r * ldc + 16 * v;
      __m512 x = acc[r][v];
      if (accumulate) x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(m, o));
      _mm512_mask_storeu_ps(o, m, x);
    }
  }
}

}  // namespace

void gemm_packed(int64_t M, int64_t N, int64_t K, const float* a, int64_t lda, const float* packed, float* c,
                 int64_t ldc, bool accumulate) {
  for (int64_t p0 = 0; p0 < N; p0 += kPanel) {
    const float* panel = packed + p0 * K;
    const int64_t cols = std::min(kPanel, N - p0);
    int64_t r = 0;
    for (; r + 6 <= M; r += 6) block<6>(K, a + r * lda, lda, panel, c + r * ldc + p0, ldc, cols, accumulate);
    const float* ar = a + r * lda;
    float* cr = c + r * ldc + p0;
    switch (M - r) {
      case 5:
        block<5>(K, ar, lda, panel, cr, ldc, cols, accumulate);
        break;
      case 4:
        block<4>(K, ar, lda, panel, cr, ldc, cols, accumulate);
        break;
      case 3:
        block<3>(K, ar, lda, panel, cr, ldc, cols, accumulate);
        break;
      case 2:
        block<2>(K, ar, lda, panel, cr, ldc, cols, accumulate);
        break;
      case 1:
        block<1>(K, ar, lda, panel, cr, ldc, cols, accumulate);
        break;
      default:
        break;
    }
  }
}

}  // namespace flambeau::cpu::rnn_avx512
