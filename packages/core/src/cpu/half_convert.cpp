// Note [CPU capabilities] for the 16-bit float conversions (half_convert.h).
// The ISA-specific functions carry target attributes instead of living in
// *_avx2.cpp / *_avx512.cpp files: they are a few intrinsics each, and F16C and
// AVX512-BF16 are separate CPUID bits from the ones those files assume.
#include "half_convert.h"

#include <immintrin.h>

#include <cstring>
#include <string_view>

#include "flambeau/half.h"
#include "vec_table.h"

namespace flambeau::cpu {
namespace {

void f16_to_f32_scalar(const uint16_t* s, float* d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = detail::fp16_bits_to_fp32(s[i]);
}
void f32_to_f16_scalar(const float* s, uint16_t* d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = detail::fp32_to_fp16_bits(s[i]);
}
void bf16_to_f32_scalar(const uint16_t* s, float* d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = detail::bf16_bits_to_fp32(s[i]);
}
void f32_to_bf16_scalar(const float* s, uint16_t* d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = detail::fp32_to_bf16_bits(s[i]);
}

__attribute__((target("avx2,f16c"))) void f16_to_f32_f16c(const uint16_t* s, float* d, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    _mm256_storeu_ps(d + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) d[i] = detail::fp16_bits_to_fp32(s[i]);
}
__attribute__((target("avx2,f16c"))) void f32_to_f16_f16c(const float* s, uint16_t* d, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), h);
  }
  for (; i < n; ++i) d[i] = detail::fp32_to_fp16_bits(s[i]);
}
__attribute__((target("avx2"))) void bf16_to_f32_avx2(const uint16_t* s, float* d, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), _mm256_slli_epi32(w, 16));
  }
  for (; i < n; ++i) d[i] = detail::bf16_bits_to_fp32(s[i]);
}
__attribute__((target("avx2"))) void f32_to_bf16_avx2(const float* s, uint16_t* d, int64_t n) {
  // Round to nearest even on the bits; NaN -> quiet NaN (as the scalar routine).
  int64_t i = 0;
  const __m256i ones = _mm256_set1_epi32(1), bias = _mm256_set1_epi32(0x7fff),
                absmask = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000),
                qbit = _mm256_set1_epi32(0x00400000);
  for (; i + 8 <= n; i += 8) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i));
    const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(x, 16), ones);
    const __m256i rounded = _mm256_add_epi32(x, _mm256_add_epi32(bias, odd));
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, absmask), inf);
    const __m256i r = _mm256_blendv_epi8(rounded, _mm256_or_si256(x, qbit), nan);
    const __m256i hi = _mm256_srli_epi32(r, 16);
    // Pack 8 x 32-bit (each < 2^16) into 8 x 16-bit: packus works within lanes, then fix the order.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(hi, hi), 0xd8);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), _mm256_castsi256_si128(packed));
  }
  for (; i < n; ++i) d[i] = detail::fp32_to_bf16_bits(s[i]);
}

__attribute__((target("avx512f,avx512vl,avx512bw"))) void f16_to_f32_avx512(const uint16_t* s, float* d,
                                                                            int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i));
    _mm512_storeu_ps(d + i, _mm512_cvtph_ps(h));
  }
  for (; i < n; ++i) d[i] = detail::fp16_bits_to_fp32(s[i]);
}
__attribute__((target("avx512f,avx512vl,avx512bw"))) void f32_to_f16_avx512(const float* s, uint16_t* d,
                                                                            int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256i h = _mm512_cvtps_ph(_mm512_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __asm__("" : "+v"(h));  // a register destination: see to_f16_reg
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), h);
  }
  for (; i < n; ++i) d[i] = detail::fp32_to_fp16_bits(s[i]);
}
__attribute__((target("avx512f,avx512vl,avx512bw"))) void bf16_to_f32_avx512(const uint16_t* s, float* d,
                                                                             int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i)));
    _mm512_storeu_si512(d + i, _mm512_slli_epi32(w, 16));
  }
  for (; i < n; ++i) d[i] = detail::bf16_bits_to_fp32(s[i]);
}
__attribute__((target("avx512f,avx512vl,avx512bw,avx512bf16"))) void f32_to_bf16_avx512bf16(const float* s,
                                                                                            uint16_t* d,
                                                                                            int64_t n) {
  // vcvtneps2bf16 treats denormal inputs as zero; blocks holding one take the exact scalar route.
  int64_t i = 0;
  const __m512i expmask = _mm512_set1_epi32(0x7f800000), absmask = _mm512_set1_epi32(0x7fffffff);
  for (; i + 16 <= n; i += 16) {
    const __m512 x = _mm512_loadu_ps(s + i);
    const __m512i xi = _mm512_castps_si512(x);
    const __mmask16 denormal = _mm512_testn_epi32_mask(xi, expmask) & _mm512_test_epi32_mask(xi, absmask);
    if (denormal) {
      for (int64_t j = i; j < i + 16; ++j) d[j] = detail::fp32_to_bf16_bits(s[j]);
      continue;
    }
    const __m256bh b = _mm512_cvtneps_pbh(x);
    std::memcpy(d + i, &b, sizeof b);
  }
  for (; i < n; ++i) d[i] = detail::fp32_to_bf16_bits(s[i]);
}

// ---- fused binary ops (AVX-512): load, widen, compute, round, store ----

#define FB_AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq")))
#define FB_AVX512_BF16 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx512bf16")))

template <int Op>
FB_AVX512 inline __m512 apply(__m512 a, __m512 b, __m512 alpha, bool unit) {
  if constexpr (Op == 0) return unit ? _mm512_add_ps(a, b) : _mm512_add_ps(a, _mm512_mul_ps(alpha, b));
  if constexpr (Op == 1) return unit ? _mm512_sub_ps(a, b) : _mm512_sub_ps(a, _mm512_mul_ps(alpha, b));
  if constexpr (Op == 2) return _mm512_mul_ps(a, b);
  return _mm512_div_ps(a, b);
}
template <int Op>
inline float apply1(float a, float b, float alpha, bool unit) {
  if constexpr (Op == 0) return unit ? a + b : a + alpha * b;
  if constexpr (Op == 1) return unit ? a - b : a - alpha * b;
  if constexpr (Op == 2) return a * b;
  return a / b;
}

FB_AVX512 inline __m512 load_f16(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
FB_AVX512 inline __m512 load_bf16(const uint16_t* p) {
  const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}

// Zen 4 runs vcvtps2ph with a memory operand several times slower than into a register: the
// empty asm keeps the compiler from folding the store into the conversion.
FB_AVX512 inline __m256i to_f16_reg(__m512 x) {
  __m256i h = _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __asm__("" : "+v"(h));
  return h;
}

template <int Op>
FB_AVX512 void f16_binary_avx512(const uint16_t* a, const uint16_t* b, uint16_t* out, int64_t n, float alpha,
                                 bool b_scalar) {
  const bool unit = alpha == 1.0f;
  const __m512 va = _mm512_set1_ps(alpha);
  const float bs = detail::fp16_bits_to_fp32(b[0]);
  const __m512 vbs = _mm512_set1_ps(bs);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 r = apply<Op>(load_f16(a + i), b_scalar ? vbs : load_f16(b + i), va, unit);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), to_f16_reg(r));
  }
  for (; i < n; ++i)
    out[i] = detail::fp32_to_fp16_bits(apply1<Op>(
        detail::fp16_bits_to_fp32(a[i]), b_scalar ? bs : detail::fp16_bits_to_fp32(b[i]), alpha, unit));
}

template <int Op, bool NativeBF16>
FB_AVX512_BF16 void bf16_binary_avx512(const uint16_t* a, const uint16_t* b, uint16_t* out, int64_t n,
                                       float alpha, bool b_scalar) {
  const bool unit = alpha == 1.0f;
  const __m512 va = _mm512_set1_ps(alpha);
  const float bs = detail::bf16_bits_to_fp32(b[0]);
  const __m512 vbs = _mm512_set1_ps(bs);
  const __m512i expmask = _mm512_set1_epi32(0x7f800000), absmask = _mm512_set1_epi32(0x7fffffff),
                one = _mm512_set1_epi32(1), bias = _mm512_set1_epi32(0x7fff),
                qbit = _mm512_set1_epi32(0x00400000), inf = _mm512_set1_epi32(0x7f800000);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 r = apply<Op>(load_bf16(a + i), b_scalar ? vbs : load_bf16(b + i), va, unit);
    const __m512i ri = _mm512_castps_si512(r);
    if constexpr (NativeBF16) {
      // vcvtneps2bf16 treats denormals as zero: such vectors take the integer route below.
      if (!(_mm512_testn_epi32_mask(ri, expmask) & _mm512_test_epi32_mask(ri, absmask))) {
        const __m256bh h = _mm512_cvtneps_pbh(r);
        std::memcpy(out + i, &h, sizeof h);
        continue;
      }
    }
    const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(ri, 16), one);
    __m512i rounded = _mm512_add_epi32(ri, _mm512_add_epi32(bias, odd));
    const __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(ri, absmask), inf);
    rounded = _mm512_mask_mov_epi32(rounded, nan, _mm512_or_si512(ri, qbit));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                        _mm512_cvtepi32_epi16(_mm512_srli_epi32(rounded, 16)));
  }
  for (; i < n; ++i)
    out[i] = detail::fp32_to_bf16_bits(apply1<Op>(
        detail::bf16_bits_to_fp32(a[i]), b_scalar ? bs : detail::bf16_bits_to_fp32(b[i]), alpha, unit));
}

// ---- fused exp (AVX-512): Note in half_convert.h ----

// e^x = 2^t, t = x log2(e) clamped to [lo, hi] (NaN propagates: max/min return their
// second operand when one is NaN); f = t - round(t) in [-1/2, 1/2] in one vreduceps,
// 2^f = 1 + f (c1 + f (c2 + ... c5 f)) (least-squares fit of the relative error, max
// 1.9e-7; rounding t costs |t| 6e-8 more, below 2^-16 over these ranges), times 2^(t - f)
// with vscalefps. About half the float32 loop's work: the 16-bit results need no more.
FB_AVX512 inline __m512 exp16_ps(__m512 x, __m512 lo, __m512 hi) {
  const __m512 t =
      _mm512_min_ps(hi, _mm512_max_ps(lo, _mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f))));
  const __m512 f = _mm512_reduce_ps(t, _MM_FROUND_TO_NEAREST_INT);
  __m512 p = _mm512_set1_ps(0.0013218674575909972f);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.009671702980995178f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.05550893023610115f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.24022237956523895f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.6931468844413757f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, _mm512_sub_ps(t, f));
}

FB_AVX512 void f16_exp_avx512(const uint16_t* a, uint16_t* out, int64_t n) {
  // float16 overflows past 2^16 and rounds to 0 below 2^-25: clamping t there changes no result.
  const __m512 lo = _mm512_set1_ps(-26.0f), hi = _mm512_set1_ps(17.0f);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - i)) - 1);
    const __m512 x = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, a + i));
    const __m512 e = exp16_ps(x, lo, hi);
    _mm256_mask_storeu_epi16(out + i, m, to_f16_reg(e));
  }
}

template <bool NativeBF16>
FB_AVX512_BF16 void bf16_exp_avx512(const uint16_t* a, uint16_t* out, int64_t n) {
  // The float32 range: 2^129 overflows, 2^-151 rounds to 0.
  const __m512 lo = _mm512_set1_ps(-151.0f), hi = _mm512_set1_ps(129.0f);
  const __m512i expmask = _mm512_set1_epi32(0x7f800000), absmask = _mm512_set1_epi32(0x7fffffff),
                one = _mm512_set1_epi32(1), bias = _mm512_set1_epi32(0x7fff),
                qbit = _mm512_set1_epi32(0x00400000), inf = _mm512_set1_epi32(0x7f800000);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - i)) - 1);
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, a + i));
    const __m512 e = exp16_ps(_mm512_castsi512_ps(_mm512_slli_epi32(w, 16)), lo, hi);
    const __m512i ri = _mm512_castps_si512(e);
    if constexpr (NativeBF16) {
      // vcvtneps2bf16 treats denormals as zero: such vectors take the integer route below.
      if (!(_mm512_testn_epi32_mask(ri, expmask) & _mm512_test_epi32_mask(ri, absmask))) {
        _mm256_mask_storeu_epi16(out + i, m, __builtin_bit_cast(__m256i, _mm512_cvtneps_pbh(e)));
        continue;
      }
    }
    const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(ri, 16), one);
    __m512i rounded = _mm512_add_epi32(ri, _mm512_add_epi32(bias, odd));
    const __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(ri, absmask), inf);
    rounded = _mm512_mask_mov_epi32(rounded, nan, _mm512_or_si512(ri, qbit));
    _mm256_mask_storeu_epi16(out + i, m, _mm512_cvtepi32_epi16(_mm512_srli_epi32(rounded, 16)));
  }
}

HalfConvert choose() {
  HalfConvert c{"scalar",          "scalar",           f16_to_f32_scalar,
                f32_to_f16_scalar, bf16_to_f32_scalar, f32_to_bf16_scalar};
  const std::string_view cap = cpu_capability();  // "base", "avx2" or "avx512", capped by the env variable
  if (cap == "base") return c;
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2")) {
    c.bf16_name = "avx2";
    c.bf16_to_f32 = bf16_to_f32_avx2;
    c.f32_to_bf16 = f32_to_bf16_avx2;
    if (__builtin_cpu_supports("f16c")) {
      c.f16_name = "f16c";
      c.f16_to_f32 = f16_to_f32_f16c;
      c.f32_to_f16 = f32_to_f16_f16c;
    }
  }
  if (cap == "avx512") {
    c.f16_name = "avx512";
    c.f16_to_f32 = f16_to_f32_avx512;
    c.f32_to_f16 = f32_to_f16_avx512;
    c.bf16_to_f32 = bf16_to_f32_avx512;
    c.f16_binary[0] = f16_binary_avx512<0>;
    c.f16_binary[1] = f16_binary_avx512<1>;
    c.f16_binary[2] = f16_binary_avx512<2>;
    c.f16_binary[3] = f16_binary_avx512<3>;
    c.bf16_binary[0] = bf16_binary_avx512<0, false>;
    c.bf16_binary[1] = bf16_binary_avx512<1, false>;
    c.bf16_binary[2] = bf16_binary_avx512<2, false>;
    c.bf16_binary[3] = bf16_binary_avx512<3, false>;
    c.f16_exp = f16_exp_avx512;
    c.bf16_exp = bf16_exp_avx512<false>;
    if (__builtin_cpu_supports("avx512bf16")) {
      c.bf16_name = "avx512_bf16";
      c.f32_to_bf16 = f32_to_bf16_avx512bf16;
      c.bf16_binary[0] = bf16_binary_avx512<0, true>;
      c.bf16_binary[1] = bf16_binary_avx512<1, true>;
      c.bf16_binary[2] = bf16_binary_avx512<2, true>;
      c.bf16_binary[3] = bf16_binary_avx512<3, true>;
      c.bf16_exp = bf16_exp_avx512<true>;
    }
  }
  return c;
}

}  // namespace

const HalfConvert& half_convert() {
  static const HalfConvert c = choose();
  return c;
}

}  // namespace flambeau::cpu
