#pragma once
// Note [Special functions of the elementwise list]
// The scalar math behind torch.special's Bessel, Airy and orthogonal-polynomial functions, used by
// entries of FB_FLOAT_UNARY_MATH and FB_BINARY_MATH (elementwise_math.h, which includes this header,
// so the CPU and flambeau-cuda compile the same code).
//
// Bessel J0, J1, Y0, Y1, K0, K1 and Airy Ai: the rational and Chebyshev approximations of Cephes
// (S. Moshier, "Methods and Programs for Mathematical Functions", 1989), evaluated in double for both
// float dtypes. Each rational approximation's denominator has an implicit leading coefficient 1
// (Cephes' p1evl); PyTorch's port drops it for J0, J1, Y0, Y1 and Ai's oscillating region, which costs
// it 1e-9..1e-6 relative error for 2 < |x| < 10 and x < -2.09. These follow Cephes (SciPy's values, to
// ~1e-15); everything else (domains, infinities, NaN) is PyTorch's.
//
// The polynomials (Chebyshev T U V W and their shifted forms on [0, 1], Hermite H and He, Laguerre L,
// Legendre P) by their three-term recurrences in the compute type T, with PyTorch's rules: the degree
// n is truncated to an integer, a negative degree gives 0, and so do NaN, infinite or out-of-int64
// degrees (PyTorch's CPU conversion of those gives INT64_MIN); for |x| < 1 and n above a threshold
// the Chebyshev families use their trigonometric forms (cos(n acos x), ...); the recurrences stop at
// the first NaN (an overflow reached inf - inf); Hermite degrees above 128 (float32) or 512
// (float64) give NaN.
#include <cmath>
#include <cstdint>

#ifndef FB_HOST_DEVICE
#ifdef __CUDACC__
#define FB_HOST_DEVICE __host__ __device__
#else
#define FB_HOST_DEVICE
#endif
#endif

namespace flambeau::math {
// Internal linkage as elementwise_math.h's helpers (Note [CPU capabilities]).
namespace {

/// c[0] z^(N-1) + ... + c[N-1] (Horner).
template <int N>
FB_HOST_DEVICE double poly_eval(const double (&c)[N], double z) {
  double s = c[0];
  for (int i = 1; i < N; ++i) s = s * z + c[i];
  return s;
}

/// z^N + c[0] z^(N-1) + ... + c[N-1]: Cephes' denominators, whose leading coefficient 1 is implicit.
template <int N>
FB_HOST_DEVICE double monic_poly_eval(const double (&c)[N], double z) {
  double s = z + c[0];
  for (int i = 1; i < N; ++i) s = s * z + c[i];
  return s;
}

/// Cephes' Chebyshev series sum' c_i T_i(y / 2) by Clenshaw's recurrence (c[0] the highest order).
template <int N>
FB_HOST_DEVICE double chebyshev_series(const double (&c)[N], double y) {
  double b0 = c[0], b1 = 0, b2 = 0;
  for (int i = 1; i < N; ++i) {
    b2 = b1;
    b1 = b0;
    b0 = y * b1 - b2 + c[i];
  }
  return 0.5 * (b0 - b2);
}

inline constexpr double kTwoOverPi = 0.636619772367581343075535053490057448;   // 2 / pi
inline constexpr double kSqrtTwoOverPi = 0.797884560802865355879892119868763737;  // sqrt(2 / pi)
inline constexpr double kQuarterPi = 0.785398163397448309615660845819875721;
inline constexpr double kThreeQuarterPi = 2.356194490192344928846982537459627163;

/// The Hankel asymptotic form of J_nu / Y_nu (nu = 0, 1) for x > 5: sqrt(2 / (pi x)) (P cos(x - phase)
/// - (5 / x) Q sin(x - phase)) for J, (P sin + (5 / x) Q cos) for Y, with P and Q rational in 25 / x^2.
struct HankelCoefficients {
  double pp[7], pq[7], qp[8], qq[7];
};

FB_HOST_DEVICE inline double hankel_form(const HankelCoefficients& h, double x, double phase, bool y_kind) {
  const double w = 5.0 / x, z = w * w;
  double pn = h.pp[0], pd = h.pq[0], qn = h.qp[0], qd = z + h.qq[0];
  for (int i = 1; i < 7; ++i) {
    pn = pn * z + h.pp[i];
    pd = pd * z + h.pq[i];
    qd = qd * z + h.qq[i];
  }
  for (int i = 1; i < 8; ++i) qn = qn * z + h.qp[i];
  const double p = pn / pd, q = qn / qd, s = std::sin(x - phase), c = std::cos(x - phase);
  return (y_kind ? p * s + w * q * c : p * c - w * q * s) * kSqrtTwoOverPi / std::sqrt(x);
}

FB_HOST_DEVICE inline HankelCoefficients hankel_order0() {
  return {{0.0007969367292973471, 0.08283523921074408, 1.239533716464143, 5.447250030587687, 8.74716500199817,
      5.303240382353949, 1.0}, {0.0009244088105588637, 0.08562884743544745, 1.2535274390105895,
      5.470977403304171, 8.761908832370695, 5.306052882353947, 1.0}, {-0.011366383889846916,
      -1.2825271867050931, -19.553954425773597, -93.20601521237683, -177.68116798048806, -147.07750515495118,
      -51.41053267665993, -6.050143506007285}, {64.3178256118178, 856.4300259769806, 3882.4018360540163,
      7240.467741956525, 5930.727011873169, 2062.0933166032783, 242.0057402402914}};
}

FB_HOST_DEVICE inline HankelCoefficients hankel_order1() {
  return {{0.0007621256162081731, 0.07313970569409176, 1.1271960812968493, 5.112079511468076,
      8.424045901417724, 5.214515986823615, 1.0}, {0.0005713231280725487, 0.06884559087544954,
      1.105142326340617, 5.073863861286015, 8.399855543276042, 5.209828486823619, 1.0}, {0.05108625947501766,
      4.982138729512334, 75.82382841325453, 366.7796093601508, 710.8563049989261, 597.4896124006136,
      211.68875710057213, 25.207020585802372}, {74.23732770356752, 1056.4488603826283, 4986.410583376536,
      9562.318924047562, 7997.041604473507, 2826.1927851763908, 336.0936078106983}};
}

/// The Bessel function of the first kind J0: (x^2 - r1^2)(x^2 - r2^2) R(x^2) up to 5, with r1, r2 its
/// first two zeros, then the Hankel form.
FB_HOST_DEVICE inline double bessel_j0_of(double x) {
  x = std::fabs(x);
  if (x > 5.0 || std::isnan(x)) return hankel_form(hankel_order0(), x, kQuarterPi, false);
  const double z = x * x;
  if (x < 1e-5) return 1.0 - 0.25 * z;
  constexpr double rp[4] = {-4794432209.782018, 1956174919465.5657, -249248344360967.72, 9708622510473064.0};
  constexpr double rq[8] = {499.563147152651, 173785.4016763747, 48440965.83399621, 11185553704.535683,
      2112775201154.892, 310518229857422.56, 3.1812195594320496e+16, 1.7108629408104315e+18};
  return (z - 5.78318596294678452118) * (z - 30.4712623436620863991) * poly_eval(rp, z) /
         monic_poly_eval(rq, z);
}

/// The Bessel function of the first kind J1 (odd): x (x^2 - r1^2)(x^2 - r2^2) R(x^2) up to 5, then the
/// Hankel form.
FB_HOST_DEVICE inline double bessel_j1_of(double x) {
  if (x < 0) return -bessel_j1_of(-x);
  if (x > 5.0 || std::isnan(x)) return hankel_form(hankel_order1(), x, kThreeQuarterPi, false);
  const double z = x * x;
  constexpr double rp[4] = {-899971225.7055594, 452228297998.19403, -72749424522181.83, 3682957328638529.0};
  constexpr double rq[8] = {620.8364781180543, 256987.25675774884, 83514679.14319493, 22151159547.97925,
      4749141220799.914, 784369607876235.9, 8.952223361846274e+16, 5.322786203326801e+18};
  return poly_eval(rp, z) / monic_poly_eval(rq, z) * x * (z - 14.6819706421238932572) *
         (z - 49.2184563216946036703);
}

/// The Bessel function of the second kind Y0: R(x^2) + (2 / pi) log(x) J0(x) up to 5, then the Hankel
/// form; -inf at 0, NaN below.
FB_HOST_DEVICE inline double bessel_y0_of(double x) {
  if (x > 5.0 || std::isnan(x)) return hankel_form(hankel_order0(), x, kQuarterPi, true);
  if (x == 0) return -HUGE_VAL;
  if (x < 0) return static_cast<double>(NAN);
  const double z = x * x;
  constexpr double yp[8] = {15592.436785523574, -14663929.59039716, 5435264770.518765, -982136065717.9115,
      87590639439536.7, -3466283033847297.0, 4.4273326857256984e+16, -1.8495080043698668e+16};
  constexpr double yq[7] = {1041.2835366425984, 626107.330137135, 268919633.39381415, 86400248710.3935,
      20297961275010.555, 3171577528429750.5, 2.5059625617265306e+17};
  return poly_eval(yp, z) / monic_poly_eval(yq, z) + kTwoOverPi * std::log(x) * bessel_j0_of(x);
}

/// The Bessel function of the second kind Y1: x R(x^2) + (2 / pi)(J1(x) log(x) - 1 / x) up to 5, then
/// the Hankel form; -inf at 0, NaN below.
FB_HOST_DEVICE inline double bessel_y1_of(double x) {
  if (x > 5.0 || std::isnan(x)) return hankel_form(hankel_order1(), x, kThreeQuarterPi, true);
  if (x == 0) return -HUGE_VAL;
  if (x < 0) return static_cast<double>(NAN);
  const double z = x * x;
  constexpr double yp[6] = {1263204747.9017804, -647355876379.1603, 114509511541823.73, -8127702555013251.0,
      2.024394757135949e+17, -7.788771962659501e+17};
  constexpr double yq[8] = {594.3015923461282, 235564.09294306856, 73481194.44597217, 18760131610.870617,
      3882312774962.3857, 620557727146953.8, 6.871410873553005e+16, 3.9727060811656064e+18};
  return x * (poly_eval(yp, z) / monic_poly_eval(yq, z)) +
         kTwoOverPi * (bessel_j1_of(x) * std::log(x) - 1.0 / x);
}

/// The modified Bessel function of the second kind K_nu (nu = 0, 1), times e^x if scaled: Chebyshev
/// series in x^2 - 2 with the I_nu log(x / 2) term up to 2, beyond e^-x / sqrt(x) times a Chebyshev
/// series in 8 / x - 2. inf at 0, NaN below.
FB_HOST_DEVICE inline double bessel_k_of(int nu, double x, bool scaled) {
  if (x == 0) return HUGE_VAL;
  if (x < 0) return static_cast<double>(NAN);
  if (x <= 2.0) {
    const double y = x * x - 2.0;
    double r;
    if (nu == 0) {
      constexpr double a[10] = {1.374465435613523e-16, 4.25981614279661e-14, 1.0349695257633842e-11,
          1.904516377220209e-09, 2.5347910790261494e-07, 2.286212103119452e-05, 0.001264615411446926,
          0.0359799365153615, 0.3442898999246285, -0.5353273932339028};
      r = chebyshev_series(a, y) - std::log(0.5 * x) * bessel_i_of(0, x, false);
    } else {
      constexpr double a[11] = {-7.023863479386288e-18, -2.427449850519366e-15, -6.666901694199329e-13,
          -1.4114883926335278e-10, -2.213387630734726e-08, -2.4334061415659684e-06, -0.0001730288957513052,
          -0.006975723859639864, -0.12261118082265715, -0.3531559607765449, 1.5253002273389478};
      r = std::log(0.5 * x) * bessel_i_of(1, x, false) + chebyshev_series(a, y) / x;
    }
    return scaled ? r * std::exp(x) : r;
  }
  const double y = 8.0 / x - 2.0;
  double r;
  if (nu == 0) {
    constexpr double b[25] = {5.300433772686263e-18, -1.6475804301524212e-17, 5.2103915050390274e-17,
        -1.678231096805412e-16, 5.512055978524319e-16, -1.848593377343779e-15, 6.3400764774050706e-15,
        -2.2275133269916698e-14, 8.032890775363575e-14, -2.9800969231727303e-13, 1.140340588208475e-12,
        -4.514597883373944e-12, 1.8559491149547177e-11, -7.957489244477107e-11, 3.577397281400301e-10,
        -1.69753450938906e-09, 8.574034017414225e-09, -4.660489897687948e-08, 2.766813639445015e-07,
        -1.8317555227191195e-06, 1.39498137188765e-05, -0.00012849549581627802, 0.0015698838857300533,
        -0.0314481013119645, 2.4403030820659555};
    r = chebyshev_series(b, y) / std::sqrt(x);
  } else {
    constexpr double b[25] = {-5.756744483665017e-18, 1.7940508731475592e-17, -5.689462558442859e-17,
        1.838093544366639e-16, -6.057047248373319e-16, 2.038703165624334e-15, -7.019837090418314e-15,
        2.4771544244813043e-14, -8.976705182324994e-14, 3.3484196660784293e-13, -1.2891739609510289e-12,
        5.13963967348173e-12, -2.1299678384275683e-11, 9.218315187605006e-11, -4.1903547593418965e-10,
        2.015049755197033e-09, -1.0345762465678097e-08, 5.7410841254500495e-08, -3.5019606030878126e-07,
        2.406484947837217e-06, -1.936197974166083e-05, 0.00019521551847135162, -0.002857816859622779,
        0.10392373657681724, 2.7206261904844427};
    r = chebyshev_series(b, y) / std::sqrt(x);
  }
  return scaled ? r : std::exp(-x) * r;
}

/// The Airy function Ai: 0 beyond 103.892 (it underflows), its asymptotic form
/// e^-zeta / (2 sqrt(pi) x^(1/4)) R(1 / zeta), zeta = 2 x^(3/2) / 3, from 2.09, the oscillating
/// asymptotic form below -2.09, and between them the Maclaurin series c1 f(x) - c2 g(x). NaN at +-inf
/// (PyTorch's value).
FB_HOST_DEVICE inline double airy_ai_of(double x) {
  if (std::isnan(x)) return x;
  if (std::isinf(x)) return static_cast<double>(NAN);
  if (x > 103.892) return 0.0;
  constexpr double kInvSqrtPi = 0.564189583547756286948;
  if (x < -2.09) {
    const double t = std::sqrt(-x), zeta = -2.0 * x * t / 3.0, z = 1.0 / zeta, zz = z * z;
    constexpr double afn[9] = {-0.1316963234183318, -0.6264565444319123, -0.6931580360369335,
        -0.2797799815451191, -0.04919001326095003, -0.004062659235948854, -0.0001592764962392621,
        -2.776491081552329e-06, -1.6778769848911465e-08};
    constexpr double afd[9] = {13.356042070655324, 32.682503279522464, 26.736704094149957, 9.187074029072596,
        1.4752914677166642, 0.11568717379518804, 0.004402916416152112, 7.547203482874142e-05,
        4.5185009297058035e-07};
    constexpr double agn[11] = {0.01973399320916857, 0.39110302961568827, 1.0657989759959559,
        0.9391692298166502, 0.35146565610554764, 0.06338889196289255, 0.005858041130483885,
        0.000282851600836737, 6.98793669997261e-06, 8.117892395543892e-08, 3.415517847659236e-10};
    constexpr double agd[10] = {9.30892908077442, 19.835292871831214, 15.564662893286462, 5.476860694229755,
        0.9542936116189619, 0.08645808263523921, 0.004126565238242226, 0.00010125908511650914,
        1.1716673321441352e-06, 4.9183457006293e-09};
    const double uf = 1.0 + zz * poly_eval(afn, zz) / monic_poly_eval(afd, zz);
    const double ug = z * poly_eval(agn, zz) / monic_poly_eval(agd, zz);
    const double theta = zeta + 0.25 * kPi;
    return kInvSqrtPi / std::sqrt(t) * (std::sin(theta) * uf - std::cos(theta) * ug);
  }
  if (x >= 2.09) {
    const double t = std::sqrt(x), zeta = 2.0 * x * t / 3.0, z = 1.0 / zeta;
    constexpr double an[8] = {0.346538101525629, 12.007595273964581, 76.27960536152345, 168.08922493463058,
        159.75639135016442, 70.53609068404442, 14.026469116338967, 1.0};
    constexpr double ad[8] = {0.5675945326387702, 14.75625625848472, 84.51389701414746, 177.31808814540045,
        164.2346928715297, 71.47784008255756, 14.095913560783403, 1.0};
    return kInvSqrtPi * (poly_eval(an, z) / poly_eval(ad, z)) / (2.0 * std::sqrt(t) * std::exp(zeta));
  }
  // Ai(x) = c1 f(x) - c2 g(x) with f = sum 3^k (1/3)_k x^3k / (3k)!, g = sum 3^k (2/3)_k x^(3k+1) / (3k+1)!
  const double z = x * x * x;
  double f = 1.0, g = x, uf = 1.0, ug = x, k = 1.0;
  for (int i = 0; i < 60; ++i) {
    uf *= z / ((k + 1.0) * (k + 2.0));
    ug *= z / ((k + 2.0) * (k + 3.0));
    k += 3.0;
    f += uf;
    g += ug;
    if (std::fabs(uf / f) <= 1.1102230246251565e-16) break;
  }
  return 0.355028053887817239260 * f - 0.258819403792806798405 * g;
}

/// The spherical Bessel function j0 = sin(x) / x (1 at 0, 0 at +-inf).
FB_HOST_DEVICE inline double spherical_bessel_j0_of(double x) {
  if (std::isinf(x)) return 0.0;
  return x == 0 ? 1.0 : std::sin(x) / x;
}

// ---- orthogonal polynomials: x the point, n the degree, both of the compute type T ----

/// The degree as PyTorch reads it: truncated to int64; NaN, infinities and values out of int64's range
/// give -1 (so the polynomial is 0), as PyTorch's CPU conversion (INT64_MIN) does.
template <class T>
FB_HOST_DEVICE int64_t polynomial_degree(T n) {
  if (!(n > T(-9.2233720368547758e18) && n < T(9.2233720368547758e18))) return -1;
  return static_cast<int64_t>(n);
}

/// p_n of a three-term recurrence: p_0 = 1, p_1 = first, p_{k+1} = step(k, p_k, p_{k-1}); with
/// stop_at_nan, the first NaN is the result (PyTorch's loops stop there, except Hermite's).
template <class T, class Step>
FB_HOST_DEVICE T three_term_recurrence(T first, int64_t n, bool stop_at_nan, Step step) {
  if (n == 0) return T(1);
  T prev = T(1), cur = first;
  for (int64_t k = 1; k < n && !(stop_at_nan && std::isnan(cur)); ++k) {
    const T next = step(k, cur, prev);
    prev = cur;
    cur = next;
  }
  return cur;
}

/// y_0 = 1, y_1 = first, y_{k+1} = 2 y y_k - y_{k-1} (every Chebyshev kind).
template <class T>
FB_HOST_DEVICE T chebyshev_recurrence(T y, T first, int64_t n) {
  return three_term_recurrence(first, n, true, [y](int64_t, T cur, T prev) { return (y + y) * cur - prev; });
}

enum class ChebyshevKind { T, U, V, W };

/// The Chebyshev polynomial of the given kind at y (x, or 2x - 1 for the shifted ones, whose ends
/// x = 1 and x = 0 are y = +-1). trig_above: the degree above which |y| < 1 uses the trigonometric
/// form (PyTorch: 6 for T and the shifted T U V, 8 for U V W, 4 for the shifted W). A trigonometric
/// form that divides by 0 in rounding falls back to the value at the nearer end, as PyTorch's (the
/// shifted W always takes the value at -1 there, as PyTorch's).
template <ChebyshevKind K, class T>
FB_HOST_DEVICE T chebyshev_of(T y, int64_t n, int64_t trig_above, bool shifted) {
  if (n < 0) return T(0);
  const T sign_at_minus_one = n % 2 == 0 ? T(1) : T(-1);
  const T n_plus_1 = static_cast<T>(n + 1), two_n_plus_1 = static_cast<T>(n + n + 1);
  if (std::fabs(y) == T(1)) {
    const bool at_one = y > T(0);
    if constexpr (K == ChebyshevKind::T) return at_one ? T(1) : sign_at_minus_one;
    if constexpr (K == ChebyshevKind::U) return at_one ? n_plus_1 : sign_at_minus_one * n_plus_1;
    if constexpr (K == ChebyshevKind::V) return at_one ? T(1) : sign_at_minus_one * two_n_plus_1;
    if constexpr (K == ChebyshevKind::W) return at_one ? two_n_plus_1 : sign_at_minus_one;
  }
  if (n > trig_above && std::fabs(y) < T(1)) {
    const T theta = std::acos(y), nf = static_cast<T>(n);
    if constexpr (K == ChebyshevKind::T) {
      return std::cos(nf * theta);
    } else if constexpr (K == ChebyshevKind::U) {
      if (std::sin(theta) != T(0)) return std::sin(n_plus_1 * theta) / std::sin(theta);
      return n_plus_1 * std::cos(n_plus_1 * theta) / y;
    } else if constexpr (K == ChebyshevKind::V) {
      if (std::sin(theta / T(2)) != T(1)) return std::cos((nf + T(0.5)) * theta) / std::cos(theta / T(2));
      return sign_at_minus_one * two_n_plus_1;
    } else {
      if (std::cos(theta / T(2)) != T(1)) return std::sin((nf + T(0.5)) * theta) / std::sin(theta / T(2));
      return !shifted && y > T(0) ? two_n_plus_1 : sign_at_minus_one;
    }
  }
  if constexpr (K == ChebyshevKind::T) return chebyshev_recurrence(y, y, n);
  if constexpr (K == ChebyshevKind::U) return chebyshev_recurrence(y, y + y, n);
  if constexpr (K == ChebyshevKind::V) return chebyshev_recurrence(y, y + y - T(1), n);
  if constexpr (K == ChebyshevKind::W) return chebyshev_recurrence(y, y + y + T(1), n);
}

template <ChebyshevKind K, class T>
FB_HOST_DEVICE T chebyshev_polynomial_of(T x, T n) {
  return chebyshev_of<K>(x, polynomial_degree(n), K == ChebyshevKind::T ? 6 : 8, false);
}

template <ChebyshevKind K, class T>
FB_HOST_DEVICE T shifted_chebyshev_polynomial_of(T x, T n) {
  // the ends are tested on x itself (x + x - 1 may round to +-1 elsewhere; the recurrence then gives
  // the same integers)
  const int64_t d = polynomial_degree(n);
  if (d >= 0 && x == T(1)) return chebyshev_of<K>(T(1), d, 0, true);
  if (d >= 0 && x == T(0)) return chebyshev_of<K>(T(-1), d, 0, true);
  return chebyshev_of<K>(x + x - T(1), d, K == ChebyshevKind::W ? 4 : 6, true);
}

/// The physicists' (physicists = true: H, H_{k+1} = 2x H_k - 2k H_{k-1}) or probabilists' (He,
/// He_{k+1} = x He_k - k He_{k-1}) Hermite polynomial.
template <class T>
FB_HOST_DEVICE T hermite_polynomial_of(T x, T nf, bool physicists) {
  const int64_t n = polynomial_degree(nf);
  if (n < 0) return T(0);
  const T first = physicists ? x + x : x;
  if (n == 0) return T(1);
  if (n == 1) return first;
  if (n > (sizeof(T) == sizeof(float) ? 128 : 512)) return static_cast<T>(NAN);
  return three_term_recurrence(first, n, false, [x, physicists](int64_t k, T cur, T prev) {
    return physicists ? (x + x) * cur - static_cast<T>(k + k) * prev : x * cur - static_cast<T>(k) * prev;
  });
}

/// The Laguerre polynomial: (k + 1) L_{k+1} = (2k + 1 - x) L_k - k L_{k-1}; 1 at x = 0.
template <class T>
FB_HOST_DEVICE T laguerre_polynomial_of(T x, T nf) {
  const int64_t n = polynomial_degree(nf);
  if (n < 0) return T(0);
  if (x == T(0)) return T(1);
  return three_term_recurrence(T(1) - x, n, true, [x](int64_t k, T cur, T prev) {
    return ((static_cast<T>(k + k) + (T(1) - x)) * cur - static_cast<T>(k) * prev) / static_cast<T>(k + 1);
  });
}

/// The Legendre polynomial: (k + 1) P_{k+1} = (2k + 1) x P_k - k P_{k-1}; +-1 at x = +-1.
template <class T>
FB_HOST_DEVICE T legendre_polynomial_of(T x, T nf) {
  const int64_t n = polynomial_degree(nf);
  if (n < 0) return T(0);
  if (std::fabs(x) == T(1)) return x > T(0) || n % 2 == 0 ? T(1) : T(-1);
  return three_term_recurrence(x, n, true, [x](int64_t k, T cur, T prev) {
    return (static_cast<T>(k + k + 1) * x * cur - static_cast<T>(k) * prev) / static_cast<T>(k + 1);
  });
}

}  // namespace
}  // namespace flambeau::math
