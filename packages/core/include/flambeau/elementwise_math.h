#pragma once
// Note [Elementwise math list]
// The elementwise math every backend computes, declared once: each X-macro
// list below names an op and gives its math as an expression of `a` (and `b`)
// of the compute type `T`. The CPU (core's src/cpu: vec_table.h, loops.h,
// unary_math.cpp, binary_math.cpp) and flambeau-cuda (src/elementwise_math.h,
// elementwise_math.cu, elementwise.cpp) expand the same lines into their
// loops, device functions, op codes, wrappers and kernel registrations, so a
// new op of a list is its ops.yaml declaration and one line here (Note
// walked in docs/design/adding-an-op.md). The header is installed with core,
// so a backend built against the installed core includes it too.
//
// Every expression must compile for the host and, under nvcc, for the
// device: only <cmath>'s functions (CUDA declares their std:: overloads as
// __host__ __device__), arithmetic, and the FB_HOST_DEVICE helpers of
// flambeau::math below. Qualify those as math::name (the lists expand inside
// namespace flambeau::cpu and flambeau::cuda).
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#ifdef __CUDACC__
#define FB_HOST_DEVICE __host__ __device__
#else
#define FB_HOST_DEVICE
#endif

/// Float-valued unary math, X(name, expression of a): integer and bool
/// inputs compute in the default float dtype (float32 on the CPU).
#define FB_FLOAT_UNARY_MATH(X)  \
  X(sin, std::sin(a))           \
  X(cos, std::cos(a))           \
  X(tan, std::tan(a))           \
  X(asin, std::asin(a))         \
  X(acos, std::acos(a))         \
  X(atan, std::atan(a))         \
  X(sinh, std::sinh(a))         \
  X(cosh, std::cosh(a))         \
  X(asinh, std::asinh(a))       \
  X(acosh, std::acosh(a))       \
  X(atanh, std::atanh(a))       \
  X(expm1, std::expm1(a))       \
  X(log1p, std::log1p(a))       \
  X(log2, std::log2(a))         \
  X(log10, std::log10(a))       \
  X(exp2, std::exp2(a))         \
  X(erf, std::erf(a))           \
  X(erfc, std::erfc(a))         \
  X(erfinv, math::erfinv_of(a)) \
  X(rsqrt, T(1) / std::sqrt(a)) \
  X(reciprocal, T(1) / a)       \
  X(sinc, a == T(0) ? T(1) : std::sin(T(math::kPi) * a) / (T(math::kPi) * a))

/// Rounding and sign of floats, X(name, expression of a): the same list
/// shape; integer inputs keep their dtype and value (sign: their sign), and
/// each op's kernel is written by its backend (round takes `decimals`).
#define FB_FLOAT_ROUNDING(X)  \
  X(floor, std::floor(a))     \
  X(ceil, std::ceil(a))       \
  X(trunc, std::trunc(a))     \
  X(round, std::nearbyint(a)) \
  X(frac, a - std::trunc(a))  \
  X(sign, (a > T(0)) - (a < T(0)))

/// Binary math, X(name, dtype rule, expression of a and b). The dtype rules
/// (flambeau::math::Kind) compute in PyTorch's result_type of the two inputs:
/// FloatValued: integer and bool inputs compute in the default float dtype;
/// FloatOnly: float inputs only (else TypeError);
/// Division: floats and integers (not bool), and an integer divisor holding
/// a 0 raises (PyTorch's ZeroDivisionError). The expression is instantiated
/// for integer T only under Division.
#define FB_BINARY_MATH(X)                               \
  X(atan2, FloatValued, std::atan2(a, b))               \
  X(copysign, FloatValued, std::copysign(a, b))         \
  X(logaddexp, FloatValued, math::logaddexp_of(a, b))   \
  X(hypot, FloatOnly, std::hypot(a, b))                 \
  X(nextafter, FloatOnly, std::nextafter(a, b))         \
  X(fmod, Division, math::fmod_of(a, b))                \
  X(remainder, Division, math::remainder_of(a, b))      \
  X(floor_divide, Division, math::floor_divide_of(a, b))

namespace flambeau::math {

inline constexpr double kPi = 3.14159265358979323846;

/// The dtype rule of a FB_BINARY_MATH entry.
enum class Kind { FloatValued, FloatOnly, Division };

// Internal linkage on purpose: core compiles these once per CPU capability
// (Note [CPU capabilities]) with different -m flags; one merged out-of-line
// copy of an external inline function could run AVX-512 code on a CPU
// without it.
namespace {

/// The inverse error function. Host: Giles' single-precision approximation
/// ("Approximating the erfinv function", GPU Computing Gems, 2011), then
/// Newton steps in double; the device: CUDA's erfinv.
template <class T>
FB_HOST_DEVICE T erfinv_of(T y) {
#ifdef __CUDA_ARCH__
  if constexpr (std::is_same_v<T, float>)
    return ::erfinvf(y);
  else
    return static_cast<T>(::erfinv(static_cast<double>(y)));
#else
  const double x = static_cast<double>(y), ax = x < 0 ? -x : x;
  if (!(ax < 1.0)) {
    if (ax == 1.0) return static_cast<T>(std::copysign(std::numeric_limits<double>::infinity(), x));
    return static_cast<T>(std::numeric_limits<double>::quiet_NaN());
  }
  double w = -std::log((1.0 - ax) * (1.0 + ax)), p;
  if (w < 5.0) {
    w -= 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
  } else {
    w = std::sqrt(w) - 3.0;
    p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
  }
  double r = p * ax;
  // Newton on erf(r) = ax, or above 0.5 on log(erfc(r)) = log(1 - ax): 1 - ax
  // is exact there, and the logarithm is nearly quadratic, so four steps reach
  // the last bit of float64 even at 1 - 2^-53, where the float start is poor.
  for (int i = 0; i < 4; ++i) {
    const double d = 1.1283791670955126 * std::exp(-r * r);  // erf'(r) = 2/sqrt(pi) exp(-r^2)
    if (ax > 0.5) {
      const double e = std::erfc(r);
      r += (std::log(e) - std::log1p(-ax)) * e / d;
    } else {
      r -= (std::erf(r) - ax) / d;
    }
  }
  return static_cast<T>(x < 0 ? -r : r);
#endif
}

/// max + log1p(exp(-|a - b|)); equal infinities would give inf - inf = NaN there, so they return a.
template <class T>
FB_HOST_DEVICE T logaddexp_of(T a, T b) {
  if (a == b && std::isinf(a)) return a;
  const T m = a > b ? a : b;
  const T d = a - b;
  return m + std::log1p(std::exp(-(d < T(0) ? -d : d)));
}

/// -x wrapping around as PyTorch does for the most negative integer (Note [Integer wrap-around]).
template <class T>
FB_HOST_DEVICE T wrapping_negate(T x) {
  return static_cast<T>(0ull - static_cast<unsigned long long>(x));
}

/// C's fmod; for integers a divisor of 0 gives 0 (the kernels check for it first).
template <class T>
FB_HOST_DEVICE T fmod_of(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::fmod(a, b);
  } else if constexpr (std::is_signed_v<T>) {
    return b == 0 || b == -1 ? T(0) : static_cast<T>(a % b);  // b == -1: INT_MIN % -1 overflows in C
  } else {
    return b == 0 ? T(0) : static_cast<T>(a % b);
  }
}

/// Python's modulo: the sign of the divisor.
template <class T>
FB_HOST_DEVICE T remainder_of(T a, T b) {
  T m = fmod_of(a, b);
  if constexpr (std::is_signed_v<T> || std::is_floating_point_v<T>)
    if (m != 0 && ((b < 0) != (m < 0))) m = static_cast<T>(m + b);
  return m;
}

/// PyTorch's div_floor: exact for floats (fmod first, then the quotient).
template <class T>
FB_HOST_DEVICE T floor_divide_of(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (b == 0) return a / b;
    const T mod = std::fmod(a, b);
    T div = (a - mod) / b;
    if (mod != 0 && ((b < 0) != (mod < 0))) div -= T(1);
    if (div == 0) return std::copysign(T(0), a / b);
    T floordiv = std::floor(div);
    if (div - floordiv > T(0.5)) floordiv += T(1);
    return floordiv;
  } else if constexpr (std::is_signed_v<T>) {
    if (b == 0) return T(0);
    if (b == -1) return wrapping_negate(a);
    const T q = static_cast<T>(a / b);
    return (a % b != 0 && ((a < 0) != (b < 0))) ? static_cast<T>(q - 1) : q;
  } else {
    return b == 0 ? T(0) : static_cast<T>(a / b);
  }
}

/// Division rounded toward zero (div with rounding_mode='trunc').
template <class T>
FB_HOST_DEVICE T trunc_divide_of(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::trunc(a / b);
  } else if constexpr (std::is_signed_v<T>) {
    if (b == 0) return T(0);
    if (b == -1) return wrapping_negate(a);
    return static_cast<T>(a / b);
  } else {
    return b == 0 ? T(0) : static_cast<T>(a / b);
  }
}

}  // namespace
}  // namespace flambeau::math
