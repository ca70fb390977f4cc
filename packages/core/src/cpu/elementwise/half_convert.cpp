// The float16/bfloat16 <-> float32 conversions of half_convert.h for each instruction set, and
// the stub that picks them together with the fused arithmetic of half_math.cpp (Note [CPU
// capabilities] in dispatch_stub.h). The vector routines carry target attributes instead of
// living in *_avx2.cpp / *_avx512.cpp files: they are a few intrinsics each, and F16C and
// AVX512-BF16 are CPUID bits of their own, asked when a table is filled. So this baseline file
// registers all three slots.
#include "half_convert.h"

#include <immintrin.h>

#include <cstring>

#include "flambeau/half.h"

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

void fill_base(HalfConvert& c) {
  c = HalfConvert{"scalar",          "scalar",           f16_to_f32_scalar,
                  f32_to_f16_scalar, bf16_to_f32_scalar, f32_to_bf16_scalar};
}

void fill_avx2(HalfConvert& c) {
  fill_base(c);
  c.bf16_name = "avx2";
  c.bf16_to_f32 = bf16_to_f32_avx2;
  c.f32_to_bf16 = f32_to_bf16_avx2;
  __builtin_cpu_init();
  if (__builtin_cpu_supports("f16c")) {
    c.f16_name = "f16c";
    c.f16_to_f32 = f16_to_f32_f16c;
    c.f32_to_f16 = f32_to_f16_f16c;
  }
}

void fill_avx512(HalfConvert& c) {
  fill_avx2(c);
  c.f16_name = "avx512";
  c.f16_to_f32 = f16_to_f32_avx512;
  c.f32_to_f16 = f32_to_f16_avx512;
  c.bf16_to_f32 = bf16_to_f32_avx512;
  const bool native_bf16 = __builtin_cpu_supports("avx512bf16");
  if (native_bf16) {
    c.bf16_name = "avx512_bf16";
    c.f32_to_bf16 = f32_to_bf16_avx512bf16;
  }
  fill_half_math_avx512(c, native_bf16);
}

}  // namespace

FB_DEFINE_DISPATCH(half_convert_stub);
FB_REGISTER_DISPATCH(half_convert_stub, base, (&table_of<HalfConvert, fill_base>));
FB_REGISTER_DISPATCH(half_convert_stub, avx2, (&table_of<HalfConvert, fill_avx2>));
FB_REGISTER_DISPATCH(half_convert_stub, avx512, (&table_of<HalfConvert, fill_avx512>));

const HalfConvert& half_convert() { return half_convert_stub.get()(); }

}  // namespace flambeau::cpu
