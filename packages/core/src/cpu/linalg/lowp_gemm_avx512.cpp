// The AVX512-BF16 and AMX tiles of the bfloat16 GEMM (Note [Low-precision GEMM] in lowp_gemm.h). The
// file is compiled for AVX-512; the bf16 and AMX instructions are enabled per function, and the caller
// runs them only on a CPU that has them (bf16_gemm_kernel_available, amx_usable).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "cpu/amx.h"
#include "cpu/linalg/lowp_gemm.h"
#include "cpu/linalg/transpose_words_avx512.h"

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

// Rows [r0, r1) x panels [p0, p1) on AMX: 32 rows at a time (then 16), each panel's sums started from
// the bias and rounded once; the last rows (below 16) on the vdpbf16ps tiles.
FB_AMX_TARGET void bf16_amx_tiles(int64_t r0, int64_t r1, int64_t p0, int64_t p1, int64_t kk, int64_t n,
                                  const uint16_t* ap, int64_t lda, const uint16_t* bp, const float* bias,
                                  uint16_t* c, int64_t ldc) {
  const int64_t kp = kk / 2, kc = amx_step_pairs(kp), steps = kp / kc;
  const int64_t r_amx = r0 + (r1 - r0) / 16 * 16;
  if (r_amx > r0) {
    // Step s reads pairs [s * kc, (s + 1) * kc): uint16 offsets in a row of op(A) and in a panel.
    std::vector<int64_t> as(static_cast<size_t>(steps)), bs(static_cast<size_t>(steps));
    for (int64_t s = 0; s < steps; ++s) as[s] = 2 * kc * s, bs[s] = 2 * kPanel * kc * s;
    alignas(64) float init[2 * 16 * kPanel], sums[2 * 16 * kPanel];
    amx_configure(kc);
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t col = p * kPanel;
      const __mmask16 m[2] = {lanes(n - col), lanes(n - col - 16)};
      // Without a bias the tiles start from zero (no loads).
      if (bias)
        for (int64_t r = 0; r < 2 * 16; ++r)
          for (int64_t j = 0; j < kPanel; ++j) init[r * kPanel + j] = bias[col + j];
      const float* from = bias ? init : nullptr;
      const uint16_t* panel = bp + p * kp * 2 * kPanel;
      int64_t r = r0;
      for (; r + 32 <= r_amx; r += 32) {
        amx_panel<2, 1, true>(steps, as.data(), bs.data(), ap + r * lda, lda, panel, 2 * kPanel, from, sums);
        amx_round_rows(sums, 32, c + r * ldc + col, ldc, m);
      }
      if (r < r_amx) {
        amx_panel<1, 1, true>(steps, as.data(), bs.data(), ap + r * lda, lda, panel, 2 * kPanel, from, sums);
        amx_round_rows(sums, 16, c + r * ldc + col, ldc, m);
      }
    }
    amx_release();
  }
  if (r_amx < r1) bf16_tiles(r_amx, r1, p0, p1, kk, n, ap, lda, bp, bias, c, ldc);
}

// C^T on AMX (Note [Low-precision GEMM]: a product whose right operand is transposed and wider than the
// left one's rows): the rows [r0, r1) of C' = B^T A^T (a multiple of 16, each a column of C) x panels
// [p0, p1) of its columns (rows of C), each 32 x 32 block's sums started from the bias of its rows,
// transposed back in 16 x 16 blocks of float32 words and rounded once into c (C's rows, stride ldc).
FB_AMX_TARGET void bf16_amx_tiles_t(int64_t r0, int64_t r1, int64_t p0, int64_t p1, int64_t kk, int64_t n,
                                    const uint16_t* ap, int64_t lda, const uint16_t* bp, const float* bias,
                                    uint16_t* c, int64_t ldc) {
  const int64_t kp = kk / 2, kc = amx_step_pairs(kp), steps = kp / kc;
  std::vector<int64_t> as(static_cast<size_t>(steps)), bs(static_cast<size_t>(steps));
  for (int64_t s = 0; s < steps; ++s) as[s] = 2 * kc * s, bs[s] = 2 * kPanel * kc * s;
  alignas(64) float init[2 * 16 * kPanel], sums[2 * 16 * kPanel];
  alignas(64) uint32_t block[16 * 16];
  amx_configure(kc);
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t col = p * kPanel, cols = std::min<int64_t>(kPanel, n - col);
    const uint16_t* panel = bp + p * kp * 2 * kPanel;
    for (int64_t r = r0; r < r1; r += 32) {
      const int64_t mr = std::min<int64_t>(32, r1 - r);  // 32 or 16
      if (bias)
        for (int64_t i = 0; i < mr; ++i) {
          const __m512 v = _mm512_set1_ps(bias[r + i]);
          _mm512_store_ps(init + i * kPanel, v);
          _mm512_store_ps(init + i * kPanel + 16, v);
        }
      if (mr == 32)
        amx_panel<2, 1, true>(steps, as.data(), bs.data(), ap + r * lda, lda, panel, 2 * kPanel,
                              bias ? init : nullptr, sums);
      else
        amx_panel<1, 1, true>(steps, as.data(), bs.data(), ap + r * lda, lda, panel, 2 * kPanel,
                              bias ? init : nullptr, sums);
      // Block (rb, cb): sums rows rb * 16.. (columns of C) by columns cb * 16.. (rows of C).
      for (int64_t rb = 0; rb < mr / 16; ++rb)
        for (int64_t cb = 0; cb * 16 < cols; ++cb) {
          const int64_t w = std::min<int64_t>(16, cols - cb * 16);
          transpose_words_16(reinterpret_cast<const uint16_t*>(sums + rb * 16 * kPanel + cb * 16), 2 * kPanel,
                             16, w, block, 16);
          for (int64_t j = 0; j < w; ++j)
            _mm256_storeu_si256(
                reinterpret_cast<__m256i*>(c + (col + cb * 16 + j) * ldc + r + rb * 16),
                (__m256i)_mm512_cvtneps_pbh(_mm512_castsi512_ps(_mm512_load_si512(block + j * 16))));
        }
    }
  }
  amx_release();
}

FB_BF16_TARGET bool bf16_pack_panel(const uint16_t* pb, int64_t s0, int64_t s1, int64_t k, int64_t j0,
                                    int64_t width, uint16_t* dst) {
  const int64_t pairs = (k + 1) / 2;
  if (s1 == 1) {
    // Row-major: rows 2p and 2p + 1 interleaved by one two-source word permutation per 16 columns.
    alignas(64) static constexpr uint16_t lo[32] = {0,  32, 1,  33, 2,  34, 3,  35, 4,  36, 5,  37, 6,  38, 7,  39,
                                                    8,  40, 9,  41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
    alignas(64) static constexpr uint16_t hi[32] = {16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21, 53, 22, 54, 23, 55,
                                                    24, 56, 25, 57, 26, 58, 27, 59, 28, 60, 29, 61, 30, 62, 31, 63};
    const __m512i ilo = _mm512_load_si512(lo), ihi = _mm512_load_si512(hi);
    const __mmask32 m = width >= 32 ? ~__mmask32{0} : static_cast<__mmask32>((uint32_t{1} << width) - 1);
    for (int64_t p = 0; p < pairs; ++p) {
      const uint16_t* row0 = pb + 2 * p * s0 + j0;
      const __m512i r0 = _mm512_maskz_loadu_epi16(m, row0);
      const __m512i r1 = 2 * p + 1 < k ? _mm512_maskz_loadu_epi16(m, row0 + s0) : _mm512_setzero_si512();
      _mm512_storeu_si512(dst + p * 2 * kPanel, _mm512_permutex2var_epi16(r0, ilo, r1));
      _mm512_storeu_si512(dst + p * 2 * kPanel + kPanel, _mm512_permutex2var_epi16(r0, ihi, r1));
    }
    return true;
  }
  if (s0 != 1) return false;
  // Transposed: column c of op(B) is a stored row whose word p is pair p, so the panel is a transpose of
  // 32-bit words, 16 columns x 16 pairs at a time; an odd depth's last pair holds one value and a zero.
  auto* d = reinterpret_cast<uint32_t*>(dst);
  const int64_t whole = k / 2;
  for (int64_t p0 = 0; p0 < whole; p0 += 16)
    for (int64_t c0 = 0; c0 < kPanel; c0 += 16)
      transpose_words_16(pb + (j0 + c0) * s1 + 2 * p0, s1, std::clamp<int64_t>(width - c0, 0, 16),
                         std::min<int64_t>(16, whole - p0), d + p0 * kPanel + c0, kPanel);
  if (k & 1)
    for (int64_t c = 0; c < kPanel; ++c) d[whole * kPanel + c] = c < width ? pb[(j0 + c) * s1 + k - 1] : 0u;
  return true;
}

}  // namespace

FB_REGISTER_DISPATCH(bf16_tiles_stub, avx512, &bf16_tiles);
FB_REGISTER_DISPATCH(bf16_pack_stub, avx512, &bf16_pack_panel);
FB_REGISTER_DISPATCH(bf16_amx_tiles_stub, avx512, &bf16_amx_tiles);
FB_REGISTER_DISPATCH(bf16_amx_tiles_t_stub, avx512, &bf16_amx_tiles_t);

}  // namespace flambeau::cpu
