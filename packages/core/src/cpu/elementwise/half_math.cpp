// The fused float16/bfloat16 arithmetic for AVX-512 (half_convert.h): add, sub, mul, div, exp,
// sin and cos of contiguous 16-bit operands in one pass (load, widen, compute in float32
// registers, round, store). Target attributes as in half_convert.cpp, which puts these into
// the AVX-512 table: AVX512-BF16 is a CPUID bit of its own.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "flambeau/half.h"
#include "half_convert.h"

namespace flambeau::cpu {
namespace {

// ---- fused binary ops (AVX-512): load, widen, compute, round, store ----

#define FB_AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq")))
#define FB_AVX512_BF16 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx512bf16")))

// a + alpha * b in one rounding (a fused multiply-add), as PyTorch's vectorized add and sub (and
// flambeau's float32 loops, which the compiler contracts); alpha is already in the operands' dtype
// (alpha_in, binary.cpp).
template <int Op>
FB_AVX512 inline __m512 apply(__m512 a, __m512 b, __m512 alpha, bool unit) {
  if constexpr (Op == 0) return unit ? _mm512_add_ps(a, b) : _mm512_fmadd_ps(alpha, b, a);
  if constexpr (Op == 1) return unit ? _mm512_sub_ps(a, b) : _mm512_fnmadd_ps(alpha, b, a);
  if constexpr (Op == 2) return _mm512_mul_ps(a, b);
  return _mm512_div_ps(a, b);
}
template <int Op>
inline float apply1(float a, float b, float alpha, bool unit) {
  if constexpr (Op == 0) return unit ? a + b : std::fma(alpha, b, a);
  if constexpr (Op == 1) return unit ? a - b : std::fma(-alpha, b, a);
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
FB_AVX512 void f16_binary_avx512(const uint16_t* a, const uint16_t* b, float bs, uint16_t* out, int64_t n,
                                 float alpha) {
  const bool unit = alpha == 1.0f, b_scalar = b == nullptr;
  const __m512 va = _mm512_set1_ps(alpha);
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
FB_AVX512_BF16 void bf16_binary_avx512(const uint16_t* a, const uint16_t* b, float bs, uint16_t* out,
                                       int64_t n, float alpha) {
  const bool unit = alpha == 1.0f, b_scalar = b == nullptr;
  const __m512 va = _mm512_set1_ps(alpha);
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

// ---- fused exp, sin, cos (AVX-512): Note in half_convert.h ----

// e^x = 2^t, t = x log2(e); f = t - floor(t) in [0, 1) in one vreduceps; 2^f = 1 + f q(f)
// (q of degree Deg - 1, kDegF16 = kDegBF16 = 4: minimax of the relative error, max 2^-18.3,
// against the 16-bit types' half ulp of 2^-11 and 2^-8: within one ulp of the correctly
// rounded result everywhere, which it misses for 0.14% of the float16 values and 6e-5 of the
// bfloat16 ones (all 65,536 measured; degree 5, 2^-22.5: ~5e-5, at ~8% more time per float16
// element; degree 3 for bfloat16 misses ~1% of test_half_math.py's sample)); times
// 2^floor(t) with vscalefps, which rounds denormal results once and gives inf / 0 past the
// range. No clamp is needed: vreduceps of +-inf is 0, so e^inf = scalef(1, inf) = inf,
// e^-inf = 0, and NaN propagates. Rounding t costs |t| 2^-24 relative: 2^-17 at the bfloat16
// extremes (|t| < 2^7), 2^-19 for float16 (|t| < 2^5), below what the 16-bit results keep.
constexpr int kDegF16 = 4, kDegBF16 = 4;

template <int Deg>
FB_AVX512 inline __m512 exp16_ps(__m512 x) {
  const __m512 t = _mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f));
  const __m512 f = _mm512_reduce_ps(t, _MM_FROUND_TO_NEG_INF);
  __m512 q;
  if constexpr (Deg == 4) {
    q = _mm512_fmadd_ps(_mm512_set1_ps(0.013426518999040127f), f, _mm512_set1_ps(0.052242740988731384f));
    q = _mm512_fmadd_ps(q, f, _mm512_set1_ps(0.24128007888793945f));
    q = _mm512_fmadd_ps(q, f, _mm512_set1_ps(0.6930448412895203f));
  } else {
    static_assert(Deg == 5);
    q = _mm512_fmadd_ps(_mm512_set1_ps(0.0018671182915568352f), f, _mm512_set1_ps(0.009017054922878742f));
    q = _mm512_fmadd_ps(q, f, _mm512_set1_ps(0.05579989403486252f));
    q = _mm512_fmadd_ps(q, f, _mm512_set1_ps(0.24016445875167847f));
    q = _mm512_fmadd_ps(q, f, _mm512_set1_ps(0.6931512951850891f));
  }
  return _mm512_scalef_ps(_mm512_fmadd_ps(q, f, _mm512_set1_ps(1.0f)), t);
}

// sin / cos: x = k pi/2 + r with k = round(x 2/pi), |r| <= pi/4 (reductions below), then
// Cephes-style odd/even polynomials in r in float32 (relative error ~2^-23), chosen and signed
// by k mod 4 (cos: k + 1); sin(-0) keeps its sign. float16 and most bfloat16 vectors take the
// float32 reduction; bfloat16 vectors with a lane |x| >= 2^16 the double one, with |x| >= 2^20
// or inf the scalar double-precision routine (sincos_route).
// The reduction for bfloat16 (|x| < 2^20): k and r = x - k P1 - k P2 (pi/2 = P1 + P2 +
// O(2^-107)) in double precision by fused multiply-adds: r is exact to 2^-53, far below the
// closest approach of a 16-bit value to a multiple of pi/2.
FB_AVX512 inline __m512 reduce_pio2_wide(__m512 x, __m512i& q) {
  const __m512d two_over_pi = _mm512_set1_pd(0.63661977236758134308), p1 = _mm512_set1_pd(1.5707963267948966),
                p2 = _mm512_set1_pd(6.123233995736766e-17);
  const __m512d xl = _mm512_cvtps_pd(_mm512_castps512_ps256(x));
  const __m512d xh = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)));
  const __m512d kl = _mm512_roundscale_pd(_mm512_mul_pd(xl, two_over_pi), _MM_FROUND_TO_NEAREST_INT);
  const __m512d kh = _mm512_roundscale_pd(_mm512_mul_pd(xh, two_over_pi), _MM_FROUND_TO_NEAREST_INT);
  const __m512d rl = _mm512_fnmadd_pd(kl, p2, _mm512_fnmadd_pd(kl, p1, xl));
  const __m512d rh = _mm512_fnmadd_pd(kh, p2, _mm512_fnmadd_pd(kh, p1, xh));
  q = _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtpd_epi32(kl)), _mm512_cvtpd_epi32(kh), 1);
  return _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(rl)), _mm512_cvtpd_ps(rh), 1);
}

// The reduction for |x| < 2^16 (so k < 2^16) in float32: Cody-Waite with
// pi/2 = C1 + C2 + C3, C1 = 3217/2048 and C2 = -2391/2^29 of 12 bits each. Every float16 value
// from pi/4 up is a multiple of 2^-11 (and such bfloat16 values below 2^16 are float16 values), so x - k C1
// is exact (a multiple of 2^-11 below 1 in magnitude); x - k C1 - k C2 rounds once relative to itself, and
// C3's own rounding costs k 2^-55 < 2^-39 absolute. k = round(x 2/pi) in float32 may be one off next to a
// half integer, leaving |r| a few 2^-9 past pi/4, where the polynomials are as good. inf gives NaN.
FB_AVX512 inline __m512 reduce_pio2_f32(__m512 x, __m512i& q) {
  const __m512 k =
      _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(0.6366197466850281f)), _MM_FROUND_TO_NEAREST_INT);
  __m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(1.57080078125f), x);
  r = _mm512_fnmadd_ps(k, _mm512_set1_ps(-4.453584551811218e-06f), r);
  r = _mm512_fnmadd_ps(k, _mm512_set1_ps(-8.705515752716053e-10f), r);
  q = _mm512_cvtps_epi32(k);
  return r;
}

template <bool Cos, bool Wide>
FB_AVX512 inline __m512 sincos16_ps(__m512 x) {
  __m512i q;
  const __m512 r = Wide ? reduce_pio2_wide(x, q) : reduce_pio2_f32(x, q);
  if constexpr (Cos) q = _mm512_add_epi32(q, _mm512_set1_epi32(1));
  const __m512 z = _mm512_mul_ps(r, r);
  __m512 s = _mm512_fmadd_ps(_mm512_set1_ps(-1.9515295891e-4f), z, _mm512_set1_ps(8.3321608736e-3f));
  s = _mm512_fmadd_ps(s, z, _mm512_set1_ps(-1.6666654611e-1f));
  s = _mm512_fmadd_ps(_mm512_mul_ps(s, z), r, r);
  __m512 c =
      _mm512_fmadd_ps(_mm512_set1_ps(2.443315711809948e-5f), z, _mm512_set1_ps(-1.388731625493765e-3f));
  c = _mm512_fmadd_ps(c, z, _mm512_set1_ps(4.166664568298827e-2f));
  c = _mm512_fmadd_ps(_mm512_mul_ps(c, z), z,
                      _mm512_fnmadd_ps(_mm512_set1_ps(0.5f), z, _mm512_set1_ps(1.0f)));
  __m512 v = _mm512_mask_blend_ps(_mm512_test_epi32_mask(q, _mm512_set1_epi32(1)), s, c);
  v = _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(v),
                                           _mm512_slli_epi32(_mm512_and_si512(q, _mm512_set1_epi32(2)), 30)));
  if constexpr (!Cos) v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_EQ_OQ), x);
  return v;
}

// Which sin/cos route a bfloat16 vector takes (lanes of m): 0 the float32 reduction (every
// |x| < 2^16, where bfloat16 values are float16 values), 1 the double one (|x| < 2^20), 2 the
// scalar routine (larger, or inf). NaN lanes take any.
FB_AVX512 inline int sincos_route(__m512 x, __mmask16 m) {
  const __m512 ax = _mm512_abs_ps(x);
  if (!(_mm512_cmp_ps_mask(ax, _mm512_set1_ps(65536.0f), _CMP_GE_OQ) & m)) [[likely]]
    return 0;
  return _mm512_cmp_ps_mask(ax, _mm512_set1_ps(1048576.0f), _CMP_GE_OQ) & m ? 2 : 1;
}

enum class Fn { kExp, kSin, kCos };

// Deg: exp's polynomial degree (kDegF16, kDegBF16); Wide: sin/cos's double
// precision reduction.
template <Fn F, int Deg, bool Wide = false>
FB_AVX512 inline __m512 apply_fn(__m512 x) {
  if constexpr (F == Fn::kExp) return exp16_ps<Deg>(x);
  if constexpr (F == Fn::kSin) return sincos16_ps<false, Wide>(x);
  return sincos16_ps<true, Wide>(x);
}

template <Fn F, bool BF>
inline uint16_t scalar_fn(uint16_t b) {
  const double x = BF ? detail::bf16_bits_to_fp32(b) : detail::fp16_bits_to_fp32(b);
  const float y = static_cast<float>(F == Fn::kExp ? std::exp(x) : F == Fn::kSin ? std::sin(x) : std::cos(x));
  return BF ? detail::fp32_to_bf16_bits(y) : detail::fp32_to_fp16_bits(y);
}

FB_AVX512 inline __m512 load_f16_m(const uint16_t* p, __mmask16 m) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
}
FB_AVX512 inline __m512 load_bf16_m(const uint16_t* p, __mmask16 m) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p)), 16));
}

// Rounds float32 lanes to bfloat16 bits in the upper 16 bits of each lane (nearest even; NaN
// stays a NaN): the integer route for vectors with denormals or without AVX512-BF16.
FB_AVX512 inline __m512i round_bf16_hi(__m512 e) {
  const __m512i ri = _mm512_castps_si512(e);
  const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(ri, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_add_epi32(ri, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), odd));
  const __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(ri, _mm512_set1_epi32(0x7fffffff)),
                                                _mm512_set1_epi32(0x7f800000));
  return _mm512_mask_mov_epi32(rounded, nan, _mm512_or_si512(ri, _mm512_set1_epi32(0x00400000)));
}

// Round float32 lanes to bfloat16 (nearest even; NaN stays a NaN) and store the lanes of m.
template <bool NativeBF16>
FB_AVX512_BF16 inline void store_bf16_m(uint16_t* out, __mmask16 m, __m512 e) {
  if constexpr (NativeBF16) {
    // vcvtneps2bf16 treats denormals as zero: vectors holding one take the integer route.
    if (!_mm512_fpclass_ps_mask(e, 0x20)) {
      _mm256_mask_storeu_epi16(out, m, __builtin_bit_cast(__m256i, _mm512_cvtneps_pbh(e)));
      return;
    }
  }
  _mm256_mask_storeu_epi16(out, m, _mm512_cvtepi32_epi16(_mm512_srli_epi32(round_bf16_hi(e), 16)));
}

// One vector of 16 (the lanes of m): load, widen, compute, round, store.
template <Fn F, bool BF, bool NativeBF16, int Deg>
FB_AVX512_BF16 inline void unary16(const uint16_t* a, uint16_t* out, __mmask16 m) {
  const __m512 x = BF ? load_bf16_m(a, m) : load_f16_m(a, m);
  __m512 e;
  if constexpr (BF && F != Fn::kExp) {
    const int route = sincos_route(x, m);
    if (route == 2) [[unlikely]] {
      for (int j = 0; j < 16; ++j)
        if (m >> j & 1) out[j] = scalar_fn<F, BF>(a[j]);
      return;
    }
    e = route ? apply_fn<F, Deg, true>(x) : apply_fn<F, Deg>(x);
  } else {
    e = apply_fn<F, Deg>(x);
  }
  if constexpr (BF)
    store_bf16_m<NativeBF16>(out, m, e);
  else
    _mm256_mask_storeu_epi16(out, m, to_f16_reg(e));
}

// 32 bfloat16 values from one 64-byte load, without widening shuffles: each 32-bit lane holds
// elements 2k (low half) and 2k + 1 (high half), so the even elements are the lanes shifted
// left by 16 and the odd ones the lanes with the low half cleared. Stores put them back the
// same way (integer route: shift and merge; AVX512-BF16: vcvtne2ps2bf16 and one word permute).
template <Fn F, bool NativeBF16>
FB_AVX512_BF16 inline void bf16_unary32(const uint16_t* a, uint16_t* out) {
  const __m512i v = _mm512_loadu_si512(a);
  const __m512i hi16 = _mm512_set1_epi32(int32_t(0xffff0000u));
  const __m512 xe = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
  const __m512 xo = _mm512_castsi512_ps(_mm512_and_si512(v, hi16));
  __m512 ee, eo;
  if constexpr (F != Fn::kExp) {
    const int route = std::max(sincos_route(xe, 0xffff), sincos_route(xo, 0xffff));
    if (route == 2) [[unlikely]] {
      for (int j = 0; j < 32; ++j) out[j] = scalar_fn<F, true>(a[j]);
      return;
    }
    if (route) {
      ee = apply_fn<F, kDegBF16, true>(xe);
      eo = apply_fn<F, kDegBF16, true>(xo);
    } else {
      ee = apply_fn<F, kDegBF16>(xe);
      eo = apply_fn<F, kDegBF16>(xo);
    }
  } else {
    ee = apply_fn<F, kDegBF16>(xe);
    eo = apply_fn<F, kDegBF16>(xo);
  }
  if constexpr (NativeBF16) {
    // vcvtne2ps2bf16 treats denormals as zero: vectors holding one take the integer route.
    if (!(_mm512_fpclass_ps_mask(ee, 0x20) | _mm512_fpclass_ps_mask(eo, 0x20))) {
      // Words 0..15 are the even elements, 16..31 the odd ones: interleave them.
      const __m512i idx = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23,
                                           7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
      const __m512i packed = __builtin_bit_cast(__m512i, _mm512_cvtne2ps_pbh(eo, ee));
      _mm512_storeu_si512(out, _mm512_permutexvar_epi16(idx, packed));
      return;
    }
  }
  // (even >> 16) | (odd & 0xffff0000): one vpternlogd (A | (B & C)).
  _mm512_storeu_si512(out, _mm512_ternarylogic_epi32(_mm512_srli_epi32(round_bf16_hi(ee), 16),
                                                     round_bf16_hi(eo), hi16, 0xf8));
}

// The contiguous loop: 32 elements per step (two independent chains for the out-of-order core,
// one loop branch), then the tail 16 at a time under a mask, with the same arithmetic.
template <Fn F, bool BF, bool NativeBF16>
FB_AVX512_BF16 void unary16_loop(const uint16_t* a, uint16_t* out, int64_t n) {
  constexpr int Deg = BF ? kDegBF16 : kDegF16;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    if constexpr (BF) {
      bf16_unary32<F, NativeBF16>(a + i, out + i);
    } else {
      unary16<F, BF, NativeBF16, Deg>(a + i, out + i, 0xffff);
      unary16<F, BF, NativeBF16, Deg>(a + i + 16, out + i + 16, 0xffff);
    }
  }
  for (; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - i)) - 1);
    unary16<F, BF, NativeBF16, Deg>(a + i, out + i, m);
  }
}

template <bool NativeBF16>
void fill_bf16(HalfConvert& c) {
  c.bf16_binary[0] = bf16_binary_avx512<0, NativeBF16>;
  c.bf16_binary[1] = bf16_binary_avx512<1, NativeBF16>;
  c.bf16_binary[2] = bf16_binary_avx512<2, NativeBF16>;
  c.bf16_binary[3] = bf16_binary_avx512<3, NativeBF16>;
  c.bf16_unary[kUnaryExp] = unary16_loop<Fn::kExp, true, NativeBF16>;
  c.bf16_unary[kUnarySin] = unary16_loop<Fn::kSin, true, NativeBF16>;
  c.bf16_unary[kUnaryCos] = unary16_loop<Fn::kCos, true, NativeBF16>;
}

}  // namespace

void fill_half_math_avx512(HalfConvert& c, bool native_bf16) {
  c.f16_binary[0] = f16_binary_avx512<0>;
  c.f16_binary[1] = f16_binary_avx512<1>;
  c.f16_binary[2] = f16_binary_avx512<2>;
  c.f16_binary[3] = f16_binary_avx512<3>;
  c.f16_unary[kUnaryExp] = unary16_loop<Fn::kExp, false, false>;
  c.f16_unary[kUnarySin] = unary16_loop<Fn::kSin, false, false>;
  c.f16_unary[kUnaryCos] = unary16_loop<Fn::kCos, false, false>;
  if (native_bf16)
    fill_bf16<true>(c);
  else
    fill_bf16<false>(c);
}

}  // namespace flambeau::cpu
