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
  X(sinc, a == T(0) ? T(1) : std::sin(T(math::kPi) * a) / (T(math::kPi) * a)) \
  X(lgamma, std::lgamma(a))                                                   \
  X(digamma, static_cast<T>(math::digamma_of(static_cast<double>(a))))       \
  X(i0, static_cast<T>(math::bessel_i_of(0, static_cast<double>(a), false)))  \
  X(special_i0e, static_cast<T>(math::bessel_i_of(0, static_cast<double>(a), true))) \
  X(special_i1, static_cast<T>(math::bessel_i_of(1, static_cast<double>(a), false))) \
  X(special_i1e, static_cast<T>(math::bessel_i_of(1, static_cast<double>(a), true))) \
  X(special_erfcx, static_cast<T>(math::erfcx_of(static_cast<double>(a))))    \
  X(special_ndtr, T(0.5) * std::erfc(-a * T(0.70710678118654752440)))          \
  X(special_ndtri, static_cast<T>(math::ndtri_of(static_cast<double>(a))))    \
  X(special_log_ndtr, static_cast<T>(math::log_ndtr_of(static_cast<double>(a)))) \
  X(special_entr, math::entr_of(a))                                             \
  X(special_bessel_j0, static_cast<T>(math::bessel_j0_of(static_cast<double>(a))))  \
  X(special_bessel_j1, static_cast<T>(math::bessel_j1_of(static_cast<double>(a))))  \
  X(special_bessel_y0, static_cast<T>(math::bessel_y0_of(static_cast<double>(a))))  \
  X(special_bessel_y1, static_cast<T>(math::bessel_y1_of(static_cast<double>(a))))  \
  X(special_modified_bessel_k0, static_cast<T>(math::bessel_k_of(0, static_cast<double>(a), false))) \
  X(special_modified_bessel_k1, static_cast<T>(math::bessel_k_of(1, static_cast<double>(a), false))) \
  X(special_scaled_modified_bessel_k0, static_cast<T>(math::bessel_k_of(0, static_cast<double>(a), true))) \
  X(special_scaled_modified_bessel_k1, static_cast<T>(math::bessel_k_of(1, static_cast<double>(a), true))) \
  X(special_spherical_bessel_j0, static_cast<T>(math::spherical_bessel_j0_of(static_cast<double>(a)))) \
  X(special_airy_ai, static_cast<T>(math::airy_ai_of(static_cast<double>(a))))

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
  X(floor_divide, Division, math::floor_divide_of(a, b)) \
  X(xlogy, FloatValued, math::xlogy_of(a, b))           \
  X(special_xlog1py, FloatValued, math::xlog1py_of(a, b)) \
  X(special_zeta, FloatValued, static_cast<T>(math::zeta_of(static_cast<double>(a), static_cast<double>(b)))) \
  X(special_chebyshev_polynomial_t, FloatValued, (math::chebyshev_polynomial_of<math::ChebyshevKind::T>(a, b))) \
  X(special_chebyshev_polynomial_u, FloatValued, (math::chebyshev_polynomial_of<math::ChebyshevKind::U>(a, b))) \
  X(special_chebyshev_polynomial_v, FloatValued, (math::chebyshev_polynomial_of<math::ChebyshevKind::V>(a, b))) \
  X(special_chebyshev_polynomial_w, FloatValued, (math::chebyshev_polynomial_of<math::ChebyshevKind::W>(a, b))) \
  X(special_shifted_chebyshev_polynomial_t, FloatValued,                                                     \
    (math::shifted_chebyshev_polynomial_of<math::ChebyshevKind::T>(a, b)))                                  \
  X(special_shifted_chebyshev_polynomial_u, FloatValued,                                                     \
    (math::shifted_chebyshev_polynomial_of<math::ChebyshevKind::U>(a, b)))                                  \
  X(special_shifted_chebyshev_polynomial_v, FloatValued,                                                     \
    (math::shifted_chebyshev_polynomial_of<math::ChebyshevKind::V>(a, b)))                                  \
  X(special_shifted_chebyshev_polynomial_w, FloatValued,                                                     \
    (math::shifted_chebyshev_polynomial_of<math::ChebyshevKind::W>(a, b)))                                  \
  X(special_hermite_polynomial_h, FloatValued, math::hermite_polynomial_of(a, b, true))                     \
  X(special_hermite_polynomial_he, FloatValued, math::hermite_polynomial_of(a, b, false))                   \
  X(special_laguerre_polynomial_l, FloatValued, math::laguerre_polynomial_of(a, b))                         \
  X(special_legendre_polynomial_p, FloatValued, math::legendre_polynomial_of(a, b))

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

/// Python's modulo: the sign of the divisor, a zero result's too (`-0.0 % 5` is 0.0 and `0.0 % -5` is -0.0,
/// as in Python, NumPy, the Array API standard and PyTorch's documentation; PyTorch 2.13's kernel keeps the
/// dividend's sign there, a known divergence from its own docs, and that is the one place flambeau differs).
template <class T>
FB_HOST_DEVICE T remainder_of(T a, T b) {
  T m = fmod_of(a, b);
  if constexpr (std::is_floating_point_v<T>) {
    if (m == 0) return std::copysign(T(0), b);
    if ((b < 0) != (m < 0)) m += b;
  } else if constexpr (std::is_signed_v<T>) {
    if (m != 0 && ((b < 0) != (m < 0))) m = static_cast<T>(m + b);
  }
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

// ---- special functions (lgamma's relatives, Bessel I, the normal distribution's functions) ----
// Computed in double for both float dtypes: float32 results are then correctly
// rounded nearly everywhere, and one implementation serves host and device.

FB_HOST_DEVICE inline double inf_d() { return HUGE_VAL; }
FB_HOST_DEVICE inline double nan_d() { return static_cast<double>(NAN); }

/// The digamma function psi = (ln Gamma)'. Reflection psi(x) = psi(1 - x) - pi / tan(pi x) below 0,
/// the recurrence psi(x) = psi(x + 1) - 1/x up to 10, then the asymptotic series
/// ln x - 1/(2x) - sum B_2k / (2k x^2k). PyTorch's values at the poles: -inf at +0, +inf at -0,
/// NaN at the negative integers.
FB_HOST_DEVICE inline double digamma_of(double x) {
  if (x == 0) return std::signbit(x) ? inf_d() : -inf_d();
  if (std::isnan(x) || x == -inf_d()) return nan_d();
  if (x == inf_d()) return x;
  double r = 0;
  if (x < 0) {
    // tan has period pi: the distance to the nearest integer, in [-1/2, 1/2] and exact, keeps
    // tan(pi f) accurate next to the poles
    const double f = x - std::nearbyint(x);
    if (f == 0) return nan_d();
    r = -kPi / std::tan(kPi * f);
    x = 1 - x;
  }
  while (x < 10) {
    r -= 1 / x;
    x += 1;
  }
  const double z = 1 / (x * x);
  // B_2k / (2k) for k = 1..7
  const double series =
      z * (1.0 / 12 -
           z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 - z * (1.0 / 132 - z * (691.0 / 32760 - z / 12))))));
  return r + std::log(x) - 0.5 / x - series;
}

/// The Hurwitz zeta function sum_k (q + k)^-s (s > 1): Euler-Maclaurin summation past q + N >= 9.
/// q <= 0 (PyTorch: an integer q is a pole, inf; a non-integer s there is NaN): with f the fractional
/// part of q and m = ceil(-q), the terms below f are (f - j)^-s, j = 1..m, so
/// zeta(s, q) = zeta(s, f) + (-1)^s (zeta(s, 1 - f) - zeta(s, m + 1 - f)), no loop over m.
FB_HOST_DEVICE inline double zeta_positive(double s, double q) {
  // B_2j / (2j)!, j = 1..12
  constexpr double kB[12] = {8.333333333333333e-02,  -1.388888888888889e-03, 3.306878306878307e-05,
                             -8.267195767195768e-07, 2.08767569878681e-08,   -5.284190138687493e-10,
                             1.3382536530684679e-11, -3.3896802963225827e-13, 8.586062056277845e-15,
                             -2.174868698558062e-16, 5.5090028283602295e-18, -1.3954464685812522e-19};
  double sum = 0, a = q;
  for (int k = 0; k < 9 || a < 9; ++k) {
    const double t = std::pow(a, -s);
    sum += t;
    if (t <= 1e-17 * sum) return sum;  // for large s the first terms already hold every bit
    a += 1;
  }
  const double apow = std::pow(a, -s);
  sum += a * apow / (s - 1) + 0.5 * apow;
  double fac = s * apow / a, term;  // s (s+1) ... (s+2j-2) a^(-s-2j+1)
  for (int j = 0; j < 12; ++j) {
    term = kB[j] * fac;
    sum += term;
    if (std::fabs(term) <= 1e-17 * std::fabs(sum)) break;
    fac *= (s + 2 * j + 1) * (s + 2 * j + 2) / (a * a);
  }
  return sum;
}

FB_HOST_DEVICE inline double zeta_of(double s, double q) {
  if (std::isnan(s) || std::isnan(q)) return nan_d();
  if (s == 1) return inf_d();
  if (s < 1) return nan_d();
  // PyTorch's values at infinite arguments (its summation gives NaN where the limit would be 0)
  if (s == inf_d()) return q == 1 ? 1.0 : (q > 1 ? nan_d() : inf_d());
  if (q > 0) return q == inf_d() ? nan_d() : zeta_positive(s, q);
  if (q == std::floor(q)) return inf_d();
  if (s != std::floor(s) || q == -inf_d()) return nan_d();
  const double f = q - std::floor(q), m = std::ceil(-q);
  const double sign = std::fmod(s, 2.0) == 0 ? 1.0 : -1.0;
  return zeta_positive(s, f) + sign * (zeta_positive(s, 1 - f) - zeta_positive(s, m + 1 - f));
}

/// The modified Bessel function I_nu (nu = 0 or 1), times e^-|x| if scaled. The power series
/// (x/2)^nu sum (x^2/4)^k / (k! (k+nu)!) (positive terms: no cancellation) up to |x| = 20, beyond
/// e^|x| / sqrt(2 pi |x|) sum_k (-1)^k prod_{j<=k} (4 nu^2 - (2j-1)^2) / (k! (8|x|)^k), whose smallest
/// term there is below 1e-17.
FB_HOST_DEVICE inline double bessel_i_of(int nu, double x, bool scaled) {
  if (std::isnan(x)) return x;
  const double ax = std::fabs(x);
  double r;
  if (ax <= 20) {
    const double q = 0.25 * ax * ax;
    double term = nu ? 0.5 * ax : 1.0, sum = term;
    for (int k = 1; k < 100 && term > 1e-17 * sum; ++k) {
      term *= q / (k * (k + nu));
      sum += term;
    }
    r = scaled ? sum * std::exp(-ax) : sum;
  } else {
    const double mu = 4.0 * nu * nu;
    double term = 1, sum = 1;
    for (int k = 1; k < 40; ++k) {
      term *= -(mu - (2 * k - 1) * (2 * k - 1)) / (8.0 * k * ax);
      sum += term;
      if (std::fabs(term) < 1e-17 * sum) break;
    }
    r = sum / std::sqrt(2 * kPi * ax);
    if (!scaled) {
      const double h = std::exp(0.5 * ax);  // I_0 stays finite past e^x's overflow (709.78)
      r = r * h * h;
    }
  }
  return nu && x < 0 ? -r : r;
}

/// exp(x^2) to nearly full precision: x = hi + lo with hi of 24 bits, so hi^2 is exact in double.
FB_HOST_DEVICE inline double exp_square(double x) {
  const double hi = static_cast<double>(static_cast<float>(x)), lo = x - hi;
  return std::exp(hi * hi) * std::exp(lo * (2 * hi + lo));
}

/// The scaled complementary error function exp(x^2) erfc(x) for x >= 0: that product below 10
/// (exp(x^2) exact to an ulp or two), beyond it the asymptotic series
/// 1/(x sqrt pi) sum (-1)^k (2k-1)!! / (2x^2)^k (14 terms reach 1e-17 at 10).
FB_HOST_DEVICE inline double erfcx_nonnegative(double x) {
  if (x < 10) return exp_square(x) * std::erfc(x);
  if (x > 1e8) return 0.5641895835477563 / x;  // 1 / sqrt(pi)
  const double z = 1 / (2 * x * x);
  double term = 1, sum = 1;
  for (int k = 1; k <= 14; ++k) {
    term *= -(2 * k - 1) * z;
    sum += term;
  }
  return 0.5641895835477563 / x * sum;
}

/// erfcx(x) = 2 exp(x^2) - erfcx(-x) below 0 (inf once exp(x^2) overflows).
FB_HOST_DEVICE inline double erfcx_of(double x) {
  if (std::isnan(x)) return x;
  if (x >= 0) return erfcx_nonnegative(x);
  if (x < -26.7) return inf_d();
  return 2 * exp_square(x) - erfcx_nonnegative(-x);
}

/// log of the standard normal CDF: log1p(-ndtr(-x)) above -1, log(erfcx(-x/sqrt 2) / 2) - x^2/2 below
/// (no underflow in the far left tail).
FB_HOST_DEVICE inline double log_ndtr_of(double x) {
  const double t = x * 0.70710678118654752440;
  if (x < -1) return std::log(0.5 * erfcx_of(-t)) - t * t;
  return std::log1p(-0.5 * std::erfc(t));
}

/// The standard normal quantile: Acklam's rational approximation (relative error 1.2e-9), then one
/// Halley step on ndtr(x) = p with erfc (accurate in both tails), which reaches double precision.
FB_HOST_DEVICE inline double ndtri_of(double p) {
  if (std::isnan(p) || p < 0 || p > 1) return nan_d();
  if (p == 0) return -inf_d();
  if (p == 1) return inf_d();
  constexpr double a[6] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                           1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  constexpr double b[5] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                           6.680131188771972e+01, -1.328068155288572e+01};
  constexpr double c[6] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                           -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  constexpr double d[4] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                           3.754408661907416e+00};
  double x;
  if (p < 0.02425 || p > 1 - 0.02425) {
    const double q = std::sqrt(-2 * std::log(p < 0.5 ? p : 1 - p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
    if (p > 0.5) x = -x;
  } else {
    const double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  }
  // Halley on ndtr(x) - p; the upper tail works on the complement 1 - p, whose rounding already
  // bounds the answer there. exp(x^2/2) is split in two factors: it overflows before the product.
  // (Near p = 1/2, erf keeps the relative accuracy of small x, and p - 1/2 is exact.)
  const double t = x * 0.70710678118654752440;
  const double e = p < 0.02425 ? 0.5 * std::erfc(-t) - p
                   : p > 1 - 0.02425 ? (1 - p) - 0.5 * std::erfc(t)
                                     : 0.5 * std::erf(t) - (p - 0.5);
  const double h = std::exp(0.25 * x * x);
  const double u = e * 2.5066282746310002 * h * h;  // sqrt(2 pi)
  return x - u / (1 + 0.5 * x * u);
}

/// -x log x (0 at 0, -inf below 0), torch.special.entr.
template <class T>
FB_HOST_DEVICE T entr_of(T x) {
  if (std::isnan(x)) return x;
  if (x > T(0)) return -x * std::log(x);
  return x == T(0) ? T(0) : -static_cast<T>(inf_d());
}

/// x log y, 0 where x is 0 unless y is NaN (PyTorch's xlogy).
template <class T>
FB_HOST_DEVICE T xlogy_of(T x, T y) {
  if (std::isnan(y)) return y;
  return x == T(0) ? T(0) : x * std::log(y);
}

/// x log1p(y), 0 where x is 0 unless y is NaN.
template <class T>
FB_HOST_DEVICE T xlog1py_of(T x, T y) {
  if (std::isnan(y)) return y;
  return x == T(0) ? T(0) : x * std::log1p(y);
}

}  // namespace
}  // namespace flambeau::math

// Bessel, Airy and the orthogonal polynomials (Note [Special functions of the elementwise list])
#include "flambeau/special_functions.h"
