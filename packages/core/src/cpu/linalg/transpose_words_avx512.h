#pragma once
// The 16 x 16 transpose of 32-bit words (a pair of bfloat16 values each) that the AVX512-BF16 kernels
// use to lay out pairs: the GEMM's transposed right operand (lowp_gemm_avx512.cpp) and the
// convolution's weight-gradient operands (conv_bf16_avx512.cpp). Included only by files compiled
// for AVX-512.
#include <cstdint>

// GCC 12's AVX-512 shuffle intrinsics pass an "undefined" vector that it then warns about once
// inlined (GCC bug 105593); the warnings point into the header, where they are switched off.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

namespace flambeau::cpu {

/// d[j * ldd + i] = 32-bit word j of row i (s + i * lds, uint16 units: values 2j and 2j + 1) for rows
/// i < rows and words j < cols (both at most 16): 16 masked loads, 4 rounds of shuffles, cols
/// stores of 16 lanes, the lanes of rows past `rows` zero.
inline __attribute__((target("avx512f"))) void transpose_words_16(const uint16_t* s, int64_t lds, int64_t rows,
                                                                 int64_t cols, uint32_t* d, int64_t ldd) {
  const auto m = static_cast<__mmask16>(cols >= 16 ? 0xFFFFu : (1u << cols) - 1u);
  __m512i r[16], t[16];
  for (int i = 0; i < 16; ++i)
    r[i] = i < rows ? _mm512_maskz_loadu_epi32(m, s + i * lds) : _mm512_setzero_si512();
  for (int i = 0; i < 8; ++i) {  // words (2i, 2i+1) of rows interleaved
    t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {  // 4 rows per 128-bit lane
    r[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
    r[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
    r[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    r[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
  for (int i = 0; i < 4; ++i) {  // then the 128-bit lanes: 8 rows, then 16
    t[i] = _mm512_shuffle_i32x4(r[i], r[4 + i], 0x88);
    t[4 + i] = _mm512_shuffle_i32x4(r[i], r[4 + i], 0xdd);
    t[8 + i] = _mm512_shuffle_i32x4(r[8 + i], r[12 + i], 0x88);
    t[12 + i] = _mm512_shuffle_i32x4(r[8 + i], r[12 + i], 0xdd);
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm512_shuffle_i32x4(t[i], t[8 + i], 0x88);
    r[8 + i] = _mm512_shuffle_i32x4(t[i], t[8 + i], 0xdd);
    r[4 + i] = _mm512_shuffle_i32x4(t[4 + i], t[12 + i], 0x88);
    r[12 + i] = _mm512_shuffle_i32x4(t[4 + i], t[12 + i], 0xdd);
  }
  for (int j = 0; j < cols; ++j) _mm512_storeu_si512(d + j * ldd, r[j]);
}

}  // namespace flambeau::cpu
