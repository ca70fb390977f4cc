#pragma once
// Inner loops of the elementwise and reduction kernels, written once as
// templates and compiled several times: by the plain kernel files, and by
// vec_avx2.cpp / vec_avx512.cpp with wider instruction sets (Note [CPU
// capabilities] in dispatch_stub.h). Everything here lives in a namespace named
// after the capability being compiled, so the AVX copies never merge with the
// baseline ones at link time (which would run AVX code on a CPU without it).
// Only plain arithmetic and C math builtins are used in the loop bodies.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "vec_table.h"
#include "wrapping.h"

#ifndef FB_CPU_CAPABILITY
#define FB_CPU_CAPABILITY base
#endif

namespace flambeau::cpu::FB_CPU_CAPABILITY {

// ---- 1-D loops over the iterator's pointers (Note [TensorIterator]) ----

template <class R, class T, class F>
inline void unary_loop(char** d, const int64_t* s, int64_t n, const F& f) {
  R* out = reinterpret_cast<R*>(d[0]);
  const T* a = reinterpret_cast<const T*>(d[1]);
  if (s[0] == sizeof(R) && s[1] == sizeof(T)) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) out[i] = f(a[i]);
  } else if (s[0] == sizeof(R) && s[1] == 0) {
    const R v = f(*a);
    for (int64_t i = 0; i < n; ++i) out[i] = v;
  } else {
    for (int64_t i = 0; i < n; ++i)
      *reinterpret_cast<R*>(d[0] + i * s[0]) = f(*reinterpret_cast<const T*>(d[1] + i * s[1]));
  }
}

template <class R, class T, class F>
inline void binary_loop(char** d, const int64_t* s, int64_t n, const F& f) {
  R* out = reinterpret_cast<R*>(d[0]);
  const T* a = reinterpret_cast<const T*>(d[1]);
  const T* b = reinterpret_cast<const T*>(d[2]);
  if (s[0] == sizeof(R) && s[1] == sizeof(T) && s[2] == sizeof(T)) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], b[i]);
  } else if (s[0] == sizeof(R) && s[1] == sizeof(T) && s[2] == 0) {
    const T bv = *b;
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], bv);
  } else if (s[0] == sizeof(R) && s[1] == 0 && s[2] == sizeof(T)) {
    const T av = *a;
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) out[i] = f(av, b[i]);
  } else {
    for (int64_t i = 0; i < n; ++i)
      *reinterpret_cast<R*>(d[0] + i * s[0]) =
          f(*reinterpret_cast<const T*>(d[1] + i * s[1]), *reinterpret_cast<const T*>(d[2] + i * s[2]));
  }
}

// ---- float32 transcendental functions, branch-free so loops vectorize ----
// Cephes' single-precision polynomials (about 1 ulp) with selects instead of
// branches; special values (inf, NaN, 0, denormals) match the C library.

inline float as_float(int32_t i) { return __builtin_bit_cast(float, i); }
inline int32_t as_int(float f) { return __builtin_bit_cast(int32_t, f); }

inline float exp_f32(float x) {
  float c = x < -104.0f ? -104.0f : x;
  c = c > 89.0f ? 89.0f : c;
  // round(c / ln 2) with the 1.5 * 2^23 trick (no rounding instruction needed)
  const float n = (c * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = c - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  // 2^n as two factors, so results in the denormal range (n < -126) and
  // overflow to inf (n = 128) come out right.
  const int32_t ni = static_cast<int32_t>(n);
  const int32_t n1 = ni >> 1, n2 = ni - n1;
  const float res = p * as_float((n1 + 127) << 23) * as_float((n2 + 127) << 23);
  return x != x ? x : res;
}

inline float log_f32(float x) {
  const bool denormal = x < 1.17549435e-38f;
  const float xs = denormal ? x * 8388608.0f : x;  // 2^23
  const int32_t bits = as_int(xs);
  float e = static_cast<float>(((bits >> 23) & 0xff) - 126 - (denormal ? 23 : 0));
  float m = as_float((bits & 0x007fffff) | 0x3f000000);  // mantissa in [0.5, 1)
  const bool small = m < 0.707106781186547524f;
  e = small ? e - 1.0f : e;
  m = small ? m + m - 1.0f : m - 1.0f;
  const float z = m * m;
  float y = 7.0376836292e-2f;
  y = y * m - 1.1514610310e-1f;
  y = y * m + 1.1676998740e-1f;
  y = y * m - 1.2420140846e-1f;
  y = y * m + 1.4249322787e-1f;
  y = y * m - 1.6668057665e-1f;
  y = y * m + 2.0000714765e-1f;
  y = y * m - 2.4999993993e-1f;
  y = y * m + 3.3333331174e-1f;
  y = y * m * z;
  y += -2.12194440e-4f * e;
  y += -0.5f * z;
  float res = m + y + 0.693359375f * e;
  res = x == __builtin_inff() ? x : res;
  res = x == 0.0f ? -__builtin_inff() : res;
  return (x < 0.0f || x != x) ? __builtin_nanf("") : res;
}

inline float tanh_f32(float x) {
  const float ax = x < 0 ? -x : x;
  const float z = x * x;
  float p = -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  const float small = p * z * x + x;
  const float large = __builtin_copysignf(1.0f - 2.0f / (exp_f32(ax + ax) + 1.0f), x);
  // copysign keeps tanh(-0.0) = -0.0 (p * z * x + x loses the zero's sign).
  return ax < 0.625f ? __builtin_copysignf(small, x) : large;
}

// e / (1 + e) with e = exp(-|x|): no overflow, and tiny results for x << 0.
inline float sigmoid_f32(float x) {
  const float e = exp_f32(x < 0 ? x : -x);
  const float q = 1.0f / (1.0f + e);
  return x < 0 ? e * q : q;
}

// ---- float64 exp, tanh and sigmoid, branch-free so loops vectorize ----
// Note [float64 exp]: e^x = 2^n e^r with n = round(x / ln 2) and r = x - n ln 2 in two steps
// (Cody and Waite: n * C1 is exact, C1 having 21 significant bits), |r| <= ln 2 / 2; e^r by its
// Taylor series to r^13 (the first term left out is below 2^-57 relative), summed as
// 1 + (r + r^2 Q(r)). 2^n is applied as two factors, each written into a double's exponent field,
// so results in the denormal range and overflow to inf come out right; the integer steps use the
// 1.5 * 2^52 trick and 64-bit shifts only, which AVX2 has. The rounding errors of r and of the
// two sums are carried to the one final rounding: below 0.63 ulp (normal results), the correctly
// rounded one for ~99 % of inputs (exp(1) is the double nearest e).
// The functions and the loops' lambdas are always inlined: a call left in the loop (the inliner's
// budget runs out in the kernel files' many instantiations) would keep it scalar.

inline double as_double(int64_t i) { return __builtin_bit_cast(double, i); }
inline int64_t as_int64(double d) { return __builtin_bit_cast(int64_t, d); }

/// 2^k for an integer-valued k in [-1022, 1023]: k + 1023 is the low bits of k + 1023 + 2^52.
inline double pow2_f64(double k) { return as_double(as_int64(k + (1023.0 + 0x1p52)) << 52); }

[[gnu::always_inline]] inline double exp_f64(double x) {
  double c = x < -746.0 ? -746.0 : x;
  c = c > 710.0 ? 710.0 : c;
  const double n = (c * 0x1.71547652b82fep0 + 0x1.8p52) - 0x1.8p52;  // round(c / ln 2)
  const double r1 = c - n * 0.693145751953125;
  const double nc2 = n * 1.42860682030941723212e-6;
  const double r = r1 - nc2;
  const double r_lo = (r1 - r) - nc2;  // what the subtraction rounded away (Fast2Sum)
  double q = 1.0 / 6227020800.0;  // 1/13!
  q = q * r + 1.0 / 479001600.0;
  q = q * r + 1.0 / 39916800.0;
  q = q * r + 1.0 / 3628800.0;
  q = q * r + 1.0 / 362880.0;
  q = q * r + 1.0 / 40320.0;
  q = q * r + 1.0 / 5040.0;
  q = q * r + 1.0 / 720.0;
  q = q * r + 1.0 / 120.0;
  q = q * r + 1.0 / 24.0;
  q = q * r + 1.0 / 6.0;
  q = q * r + 0.5;
  // 1 + r + (r^2 Q(r) + r_lo e^r), its two sums carried exactly (Fast2Sum), rounded once at the end
  const double a = q * (r * r) + r_lo * (1.0 + r);
  const double s = r + a;
  const double s_err = a - (s - r);
  const double p1 = 1.0 + s;
  const double p = p1 + ((s - (p1 - 1.0)) + s_err);
  const double n1 = (n * 0.5 + 0x1.8p52) - 0x1.8p52;  // n = n1 + n2, each in the normal range
  const double res = p * pow2_f64(n1) * pow2_f64(n - n1);
  return x != x ? x : res;
}

[[gnu::always_inline]] inline double tanh_f64(double x) {
  const double ax = x < 0 ? -x : x;
  const double z = x * x;
  // |x| < 0.625: x + x z P(z) / Q(z), Cephes' double-precision rational approximation
  double p = -9.64399179425052238628e-1;
  p = p * z - 9.92877231001918586564e1;
  p = p * z - 1.61468768441708447952e3;
  double q = z + 1.12811678491632931402e2;
  q = q * z + 2.23548839060100448583e3;
  q = q * z + 4.84406305325125486048e3;
  const double small = x + x * z * (p / q);
  const double large = 1.0 - 2.0 / (exp_f64(ax + ax) + 1.0);
  // copysign keeps tanh(-0.0) = -0.0; NaN takes the large branch (exp of NaN is NaN)
  return __builtin_copysign(ax < 0.625 ? small : large, x);
}

[[gnu::always_inline]] inline double sigmoid_f64(double x) {
  const double e = exp_f64(x < 0 ? x : -x);
  const double q = 1.0 / (1.0 + e);
  return x < 0 ? e * q : q;
}

// ---- elementwise functions (T = the compute dtype) ----

template <class T>
inline T max_propagate_nan(T a, T b) {
  return (a > b || a != a) ? a : b;
}
template <class T>
inline T min_propagate_nan(T a, T b) {
  return (a < b || a != a) ? a : b;
}

template <class T>
void add_loop(char** d, const int64_t* s, int64_t n, double alpha) {
  if constexpr (std::is_same_v<T, bool>) {  // bool: a || (alpha && b), as PyTorch
    if (alpha != 0)
      binary_loop<T, T>(d, s, n, [](T a, T b) { return static_cast<T>(a || b); });
    else
      binary_loop<T, T>(d, s, n, [](T a, T) { return a; });
  } else if (alpha == 1) {
    binary_loop<T, T>(d, s, n, [](T a, T b) { return static_cast<T>(wrapping_add(a, b)); });
  } else {
    const T al = static_cast<T>(alpha);
    binary_loop<T, T>(d, s, n,
                      [al](T a, T b) { return static_cast<T>(wrapping_add(a, wrapping_mul(al, b))); });
  }
}
template <class T>
void sub_loop(char** d, const int64_t* s, int64_t n, double alpha) {
  if (alpha == 1) {
    binary_loop<T, T>(d, s, n, [](T a, T b) { return static_cast<T>(wrapping_sub(a, b)); });
  } else {
    const T al = static_cast<T>(alpha);
    binary_loop<T, T>(d, s, n,
                      [al](T a, T b) { return static_cast<T>(wrapping_sub(a, wrapping_mul(al, b))); });
  }
}
template <class T>
void mul_loop(char** d, const int64_t* s, int64_t n, double) {
  if constexpr (std::is_same_v<T, bool>)
    binary_loop<T, T>(d, s, n, [](T a, T b) { return static_cast<T>(a && b); });
  else
    binary_loop<T, T>(d, s, n, [](T a, T b) { return static_cast<T>(wrapping_mul(a, b)); });
}
template <class T>
void div_loop(char** d, const int64_t* s, int64_t n, double) {
  binary_loop<T, T>(d, s, n, [](T a, T b) { return a / b; });
}
template <class T>
void maximum_loop(char** d, const int64_t* s, int64_t n, double) {
  binary_loop<T, T>(d, s, n, [](T a, T b) { return max_propagate_nan(a, b); });
}
template <class T>
void minimum_loop(char** d, const int64_t* s, int64_t n, double) {
  binary_loop<T, T>(d, s, n, [](T a, T b) { return min_propagate_nan(a, b); });
}

template <class T>
void neg_loop(char** d, const int64_t* s, int64_t n, double) {
  unary_loop<T, T>(d, s, n, [](T a) { return static_cast<T>(wrapping_neg(a)); });
}
template <class T>
void abs_loop(char** d, const int64_t* s, int64_t n, double) {
  if constexpr (std::is_unsigned_v<T>)
    unary_loop<T, T>(d, s, n, [](T a) { return a; });
  else
    unary_loop<T, T>(d, s, n, [](T a) {
      if constexpr (std::is_floating_point_v<T>)
        return std::abs(a);  // clears the sign bit: abs(-0.0) is +0.0
      else
        return a < 0 ? wrapping_neg(a) : a;  // abs(int min) is int min, as PyTorch
    });
}
template <class T>
void relu_loop(char** d, const int64_t* s, int64_t n, double) {
  // NaN stays NaN, as in PyTorch.
  if constexpr (std::is_unsigned_v<T>)
    unary_loop<T, T>(d, s, n, [](T a) { return a; });
  else
    unary_loop<T, T>(d, s, n, [](T a) { return a < 0 ? T(0) : a; });
}
template <class T>
void sqrt_loop(char** d, const int64_t* s, int64_t n, double) {
  unary_loop<T, T>(d, s, n, [](T a) { return std::sqrt(a); });
}
template <class T>
void exp_loop(char** d, const int64_t* s, int64_t n, double) {
  if constexpr (std::is_same_v<T, float>)
    unary_loop<T, T>(d, s, n, [](T a) { return exp_f32(a); });
  else
    unary_loop<T, T>(d, s, n, [](T a) __attribute__((always_inline)) { return exp_f64(a); });
}
template <class T>
void log_loop(char** d, const int64_t* s, int64_t n, double) {
  if constexpr (std::is_same_v<T, float>)
    unary_loop<T, T>(d, s, n, [](T a) { return log_f32(a); });
  else
    unary_loop<T, T>(d, s, n, [](T a) { return std::log(a); });
}
template <class T>
void tanh_loop(char** d, const int64_t* s, int64_t n, double) {
  if constexpr (std::is_same_v<T, float>)
    unary_loop<T, T>(d, s, n, [](T a) { return tanh_f32(a); });
  else
    unary_loop<T, T>(d, s, n, [](T a) __attribute__((always_inline)) { return tanh_f64(a); });
}
template <class T>
void sigmoid_loop(char** d, const int64_t* s, int64_t n, double) {
  if constexpr (std::is_same_v<T, float>)
    unary_loop<T, T>(d, s, n, [](T a) { return sigmoid_f32(a); });
  else
    unary_loop<T, T>(d, s, n, [](T a) __attribute__((always_inline)) { return sigmoid_f64(a); });
}

#define FB_DEFINE_UNARY_LOOP(name, expr)                                 \
  template <class T>                                                     \
  void name##_loop(char** d, const int64_t* s, int64_t n, double) {      \
    unary_loop<T, T>(d, s, n, [](T a) { return static_cast<T>(expr); }); \
  }
FB_FLOAT_UNARY_MATH(FB_DEFINE_UNARY_LOOP)
FB_FLOAT_ROUNDING(FB_DEFINE_UNARY_LOOP)
#undef FB_DEFINE_UNARY_LOOP

// float32 sin, cos and tan: vectorised (Note [float32 sin/cos] in vec_trig.inc); the
// vector tables (vec_kernels.inc) take these in place of sin_loop, cos_loop, tan_loop.
#include "vec_trig.inc"
#ifdef __FMA__
constexpr bool kHasTrigF64 = true;  // Note [float64 sin/cos]
#else
constexpr bool kHasTrigF64 = false;
template <int Fn>
void trig_f64_loop(char**, const int64_t*, int64_t) {}
#endif

#define FB_DEFINE_TRIG_LOOP(name, fn)                                   \
  template <class T>                                                    \
  void name##_vec_loop(char** d, const int64_t* s, int64_t n, double) { \
    if constexpr (std::is_same_v<T, float>)                             \
      trig_f32_loop<fn>(d, s, n);                                       \
    else if constexpr (kHasTrigF64)                                     \
      trig_f64_loop<fn>(d, s, n);                                       \
    else                                                                \
      name##_loop<T>(d, s, n, 0);                                       \
  }
FB_DEFINE_TRIG_LOOP(sin, kTrigSin)
FB_DEFINE_TRIG_LOOP(cos, kTrigCos)
FB_DEFINE_TRIG_LOOP(tan, kTrigTan)
#undef FB_DEFINE_TRIG_LOOP

// lgamma, digamma, erfcx, log_ndtr, i0e, xlogy, xlog1py: vectorised (Note [Vectorised special
// functions] in vec_special.inc); the vector tables take these <name>_vec_loop in place of the list's.
#include "vec_special.inc"

// ---- reductions ----

/// Sum of n elements `stride` bytes apart, accumulated in double: blocks
/// summed with independent SIMD lanes, blocks combined pairwise.
template <class T>
double sum_strided(const char* p, int64_t n, int64_t stride) {
  constexpr int64_t kBlock = 512;
  if (n <= kBlock) {
    double acc = 0;
    if (stride == sizeof(T)) {
      const T* x = reinterpret_cast<const T*>(p);
#pragma omp simd reduction(+ : acc)
      for (int64_t i = 0; i < n; ++i) acc += static_cast<double>(x[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) acc += static_cast<double>(*reinterpret_cast<const T*>(p + i * stride));
    }
    return acc;
  }
  const int64_t half = (n / 2 + kBlock - 1) / kBlock * kBlock;
  return sum_strided<T>(p, half, stride) + sum_strided<T>(p + half * stride, n - half, stride);
}

/// acc[i] += x[i * stride] (a row of an outer reduction).
template <class T>
void accumulate_row(double* acc, const char* p, int64_t n, int64_t stride) {
  if (stride == sizeof(T)) {
    const T* x = reinterpret_cast<const T*>(p);
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) acc[i] += static_cast<double>(x[i]);
  } else {
    for (int64_t i = 0; i < n; ++i)
      acc[i] += static_cast<double>(*reinterpret_cast<const T*>(p + i * stride));
  }
}

}  // namespace flambeau::cpu::FB_CPU_CAPABILITY
