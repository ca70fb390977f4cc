// The packed GEMM of Note [Packed step GEMM] (rnn.cpp) for AVX2 CPUs: own_sgemm_pack's layout
// (sgemm.h: panels of 64 columns of op(B), each k rows of 64 floats, zero-padded), read by a 6 x 16
// kernel (12 ymm accumulators; per k: 2 loads of the panel, 6 broadcasts of op(A), 12 FMAs).
// Only the recurrent layers use it on AVX2: their per-step GEMM has a few batch rows against the
// whole hidden-to-hidden weight, which OpenBLAS would pack again on every step. A general own GEMM
// on AVX2 was measured level with OpenBLAS once its packing is counted, so blas_gemm() keeps OpenBLAS.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "cpu/linalg/sgemm.h"

namespace flambeau::cpu {
namespace {

constexpr int kPanel = kOwnSgemmPanel;
constexpr int kRows = 6;    // rows of C per kernel call
constexpr int kSlice = 16;  // columns of a panel per kernel call: 2 ymm

// Lanes [0, count) of a masked ymm load or store (count clamped to [0, 8]).
__m256i lanes(int count) {
  const __m256i index = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(std::clamp(count, 0, 8)), index);
}

// R rows of C times one 16-column slice of a panel: c[r * ldc + j] (+)= sum_k a[r * lda + k] *
// slice[k * kPanel + j] for j < cols (1 <= cols <= 16); with init (and not accumulate) every row
// starts from init[0, cols). The slice is zero-padded past the panel's columns, so only C is masked.
template <int R>
void kernel(int depth, const float* a, int64_t lda, const float* slice, float* c, int64_t ldc, int cols,
            bool accumulate, const float* init) {
  const __m256i m0 = lanes(cols), m1 = lanes(cols - 8);
  __m256 acc[R][2];
  if (init && !accumulate) {
    const __m256 x0 = _mm256_maskload_ps(init, m0), x1 = _mm256_maskload_ps(init + 8, m1);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) acc[r][0] = x0, acc[r][1] = x1;
  } else if (accumulate) {
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      acc[r][0] = _mm256_maskload_ps(c + r * ldc, m0);
      acc[r][1] = _mm256_maskload_ps(c + r * ldc + 8, m1);
    }
  } else {
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  }
  for (int k = 0; k < depth; ++k) {
    const __m256 b0 = _mm256_loadu_ps(slice + int64_t{k} * kPanel);
    const __m256 b1 = _mm256_loadu_ps(slice + int64_t{k} * kPanel + 8);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m256 av = _mm256_broadcast_ss(a + r * lda + k);
      acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
    }
  }
  if (cols == kSlice) {
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      _mm256_storeu_ps(c + r * ldc, acc[r][0]);
      _mm256_storeu_ps(c + r * ldc + 8, acc[r][1]);
    }
    return;
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    _mm256_maskstore_ps(c + r * ldc, m0, acc[r][0]);
    _mm256_maskstore_ps(c + r * ldc + 8, m1, acc[r][1]);
  }
}

using KernelFn = void (*)(int, const float*, int64_t, const float*, float*, int64_t, int, bool, const float*);
constexpr KernelFn kKernels[kRows + 1] = {nullptr,   kernel<1>, kernel<2>, kernel<3>,
                                          kernel<4>, kernel<5>, kernel<6>};

void packed(int m, int n, int k, const float* a, int64_t lda, const float* pk, float* c, int64_t ldc,
            bool accumulate, const float* row_init) {
  if (row_init) accumulate = false;
  for (int p0 = 0; p0 < n; p0 += kPanel) {
    const float* panel = pk + int64_t{p0} * k;
    for (int s0 = p0; s0 < std::min(n, p0 + kPanel); s0 += kSlice) {
      const int cols = std::min(kSlice, n - s0);
      for (int r0 = 0; r0 < m; r0 += kRows)
        kKernels[std::min(kRows, m - r0)](k, a + int64_t{r0} * lda, lda, panel + (s0 - p0),
                                          c + int64_t{r0} * ldc + s0, ldc, cols, accumulate,
                                          row_init ? row_init + s0 : nullptr);
    }
  }
}

constexpr PackedSgemm kPackedAvx2{&own_sgemm_pack_portable, &packed};

}  // namespace

FB_REGISTER_DISPATCH(packed_sgemm_stub, avx2, &kPackedAvx2);

}  // namespace flambeau::cpu
