// CPU kernels of the samplers that need rejection (Note [Random numbers]):
// _standard_gamma (Marsaglia-Tsang), its reparameterised gradient
// _standard_gamma_grad, poisson (multiplication below rate 10, Hoermann's
// PTRS above) and binomial (inversion below n min(p, 1-p) = 10, Hoermann's
// BTRS above).
//
// A rejection sampler takes a variable number of draws per element, so each
// element gets its own stream: one reserved draw per element keys a
// counter-based sequence of its own, and the values still depend only on
// (seed, offset, index), never on the thread count.
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "cpu/write_out.h"
#include "fill_indexed.h"
#include "flambeau/elementwise_math.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "flambeau/parallel.h"
#include "flambeau/random.h"
#include "flambeau/type_dispatch.h"

namespace flambeau {
namespace {

class Stream {
 public:
  explicit Stream(uint64_t key) : key_(key) {}
  /// Uniform on (0, 1): a 0 would make the logarithms below -inf.
  double uniform() {
    double u;
    do u = Generator::to_unit(Generator::draw(key_, n_++));
    while (u == 0.0);
    return u;
  }
  /// Standard normal (Box-Muller; one of the pair is dropped to keep the stream simple).
  double normal() {
    const double u = uniform(), v = uniform();
    return std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * math::kPi * v);
  }

 private:
  uint64_t key_;
  uint64_t n_ = 0;
};

/// Gamma(alpha, 1): Marsaglia and Tsang, "A simple method for generating gamma variables" (2000);
/// alpha < 1 through Gamma(alpha + 1) U^(1/alpha).
double sample_gamma(double alpha, Stream& s) {
  double scale = 1.0;
  if (alpha < 1.0) {
    scale = std::pow(s.uniform(), 1.0 / alpha);
    alpha += 1.0;
  }
  const double d = alpha - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = s.normal();
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = s.uniform(), x2 = x * x;
    if (u < 1.0 - 0.0331 * x2 * x2 || std::log(u) < 0.5 * x2 + d * (1.0 - v + std::log(v)))
      return scale * d * v;
  }
}

double sample_poisson(double rate, Stream& s) {
  if (rate == 0.0) return 0.0;
  if (rate < 10.0) {
    // count uniforms until their product falls below e^-rate
    const double limit = std::exp(-rate);
    double k = 0.0, prod = s.uniform();
    while (prod > limit) {
      k += 1.0;
      prod *= s.uniform();
    }
    return k;
  }
  // PTRS: Hoermann, "The transformed rejection method for generating Poisson random variables" (1993)
  const double slam = std::sqrt(rate), loglam = std::log(rate);
  const double b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b;
  const double inv_alpha = 1.1239 + 1.1328 / (b - 3.4), vr = 0.9277 - 3.6224 / (b - 2.0);
  for (;;) {
    const double u = s.uniform() - 0.5, v = s.uniform(), us = 0.5 - std::fabs(u);
    const double k = std::floor((2.0 * a / us + b) * u + rate + 0.43);
    if (us >= 0.07 && v <= vr) return k;
    if (k < 0.0 || (us < 0.013 && v > us)) continue;
    const double lhs = std::log(v) + std::log(inv_alpha) - std::log(a / (us * us) + b);
    if (lhs <= -rate + k * loglam - std::lgamma(k + 1.0)) return k;
  }
}

double sample_binomial(double n, double p, Stream& s) {
  if (n <= 0.0 || p <= 0.0) return 0.0;
  if (p >= 1.0) return n;
  const bool flip = p > 0.5;
  const double q = flip ? 1.0 - p : p;
  double k;
  if (n * q < 10.0) {
    // inversion: walk the CDF from 0 (about n q + 1 steps)
    const double r = q / (1.0 - q), u = s.uniform();
    double pk = std::exp(n * std::log1p(-q)), cdf = pk;
    k = 0.0;
    while (u > cdf && k < n) {
      k += 1.0;
      pk *= r * (n - k + 1.0) / k;
      cdf += pk;
    }
  } else {
    // BTRS: Hoermann, "The generation of binomial random variates" (1993)
    const double spq = std::sqrt(n * q * (1.0 - q));
    const double b = 1.15 + 2.53 * spq, a = -0.0873 + 0.0248 * b + 0.01 * q, c = n * q + 0.5;
    const double vr = 0.92 - 4.2 / b, alpha = (2.83 + 5.1 / b) * spq, lpq = std::log(q / (1.0 - q));
    const double m = std::floor((n + 1.0) * q), h = std::lgamma(m + 1.0) + std::lgamma(n - m + 1.0);
    for (;;) {
      const double u = s.uniform() - 0.5, us = 0.5 - std::fabs(u);
      double v = s.uniform();
      k = std::floor((2.0 * a / us + b) * u + c);
      if (k < 0.0 || k > n) continue;
      if (us >= 0.07 && v <= vr) break;
      v = std::log(v * alpha / (a / (us * us) + b));
      if (v <= h - std::lgamma(k + 1.0) - std::lgamma(n - k + 1.0) + (k - m) * lpq) break;
    }
  }
  return flip ? n - k : k;
}

/// dx/dalpha of a Gamma(alpha, 1) sample x at a fixed value of its CDF P(alpha, x):
/// -(dP/dalpha) / p(x), p the density (implicit reparameterisation).
/// Below x = alpha + 1 the series P = sum_n x^(alpha+n) e^-x / Gamma(alpha+n+1), differentiated term by
/// term: dx/dalpha = -sum_n r_n (log x - psi(alpha + n + 1)) with
/// r_n = x^(n+1) Gamma(alpha) / Gamma(alpha+n+1)
/// (every term of one sign up to x = alpha + 1/2: no cancellation). Above, Q = 1 - P from its continued
/// fraction (Lentz), Q / p as a function of alpha differentiated by extrapolated central differences
/// (relative error about 1e-9 there, where the series would cancel in the upper tail).
double gamma_cf_ratio(double a, double alpha, double x) {
  // Gamma(a, x) / (Gamma(alpha) p(x; alpha)) = x^(a - alpha + 1) Gamma(alpha) / Gamma(a) * CF
  constexpr double tiny = 1e-300;
  double b = x + 1.0 - a, c = 1.0 / tiny, d = 1.0 / b, h = d;
  for (int i = 1; i < 1000; ++i) {
    const double an = -i * (i - a);
    b += 2.0;
    d = an * d + b;
    if (std::fabs(d) < tiny) d = tiny;
    c = b + an / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1.0 / d;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1.0) < 1e-16) break;
  }
  return std::exp((a - alpha + 1.0) * std::log(x) + std::lgamma(alpha) - std::lgamma(a)) * h;
}

double standard_gamma_grad_one(double alpha, double x) {
  if (!(alpha > 0.0) || !(x > 0.0) || std::isinf(x))
    return std::isnan(alpha) || std::isnan(x) ? alpha + x : 0.0;
  if (x > alpha + 1.0) {
    // central differences at h and h/2, Richardson-extrapolated: error O(h^4)
    const double h = 1e-4 * alpha;
    const double d1 = (gamma_cf_ratio(alpha + h, alpha, x) - gamma_cf_ratio(alpha - h, alpha, x)) / (2.0 * h);
    const double d2 = (gamma_cf_ratio(alpha + h / 2, alpha, x) - gamma_cf_ratio(alpha - h / 2, alpha, x)) / h;
    return (4.0 * d2 - d1) / 3.0;
  }
  const double lx = std::log(x);
  double psi = math::digamma_of(alpha + 1.0), r = x / alpha, sum = 0.0;
  for (int n = 0; n < 100000; ++n) {
    const double term = r * (lx - psi);
    sum += term;
    if (std::fabs(term) <= 1e-17 * std::fabs(sum) && r < 1e-3 * std::fabs(sum)) break;
    r *= x / (alpha + n + 1.0);
    psi += 1.0 / (alpha + n + 1.0);
  }
  return -sum;
}

void check_floating(const Tensor& t, const char* op, const char* what) {
  FB_CHECK_TYPE(is_floating(t.dtype()), "[", op, "] expected a floating point ", what, ", got dtype ",
                dtype_name(t.dtype()));
}

/// t broadcast to shape, contiguous, in float64.
Tensor as_float64(const Tensor& t, IntArrayRef shape) {
  return op::cast(op::contiguous(op::expand(t, shape), MemoryFormat::Contiguous), ScalarType::Float64);
}

/// out[i] = f(values of the inputs at i, stream of element i), inputs broadcast to out's shape (the
/// meta step's). The samplers are structured (Note [Structured kernels]): out is the result the meta step
/// allocated, written here in row-major element order whatever its strides.
template <class F>
void sample_elementwise(const Tensor& out, const char* op, std::initializer_list<Tensor> inputs,
                        Generator* gen, const F& f) {
  const IntArrayRef shape = out.sizes();
  std::vector<Tensor> values;
  for (const Tensor& t : inputs)
    values.push_back(as_float64(t, shape));
  Generator& g = gen ? *gen : default_generator();
  const uint64_t base = g.reserve(static_cast<uint64_t>(out.numel()));
  const uint64_t seed = g.initial_seed();
  std::vector<const double*> ptr;
  for (const Tensor& v : values) ptr.push_back(v.data<double>());
  const ScalarType dtype = out.dtype();
  visit_dtype(dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      Tensor dst = out;
      cpu::fill_indexed<T>(dst, [&](int64_t i) {
        Stream s(Generator::draw(seed, base + static_cast<uint64_t>(i)));
        return static_cast<T>(f(ptr, i, s));
      });
    } else {
      FB_CHECK_TYPE(false, "[", op, "] expected a floating point dtype, got ", dtype_name(dtype));
    }
  });
}

void standard_gamma_out_cpu(const Tensor& out, const Tensor& self, Generator* gen) {
  check_floating(self, "_standard_gamma", "concentration");
  const double floor_value = self.dtype() == ScalarType::Float64 ? std::numeric_limits<double>::min()
                                                                  : std::numeric_limits<float>::min();
  // PyTorch: no sample is below the dtype's smallest normal number (a zero would give log(0) in a
  // log_prob), and invalid concentrations give that smallest number too
  sample_elementwise(out, "_standard_gamma", {self}, gen, [&](auto& p, int64_t i, Stream& s) {
    const double alpha = p[0][i];
    if (!(alpha > 0.0)) return floor_value;
    if (std::isinf(alpha)) return alpha;
    const double x = sample_gamma(alpha, s);
    return x < floor_value ? floor_value : x;
  });
}

void standard_gamma_grad_out_cpu(const Tensor& out, const Tensor& self, const Tensor& output) {
  check_floating(self, "_standard_gamma_grad", "concentration");
  check_floating(output, "_standard_gamma_grad", "sample");
  const IntArrayRef shape = out.sizes();
  const Tensor a = as_float64(self, shape), x = as_float64(output, shape);
  // Computed in float64: straight into a float64 out, else into a buffer rounded into out once.
  const auto fill = [&](const Tensor& dst) {
    const double *pa = a.data<double>(), *px = x.data<double>();
    double* po = dst.data<double>();
    parallel_for(0, dst.numel(), 64, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) po[i] = standard_gamma_grad_one(pa[i], px[i]);
    });
  };
  if (out.dtype() == ScalarType::Float64) {
    cpu::write_contiguous(out, {&self, &output}, fill);
    return;
  }
  const Tensor buf = op::empty(shape, ScalarType::Float64, out.device());
  fill(buf);
  cpu::copy_out(out, op::cast(buf, out.dtype()));
}

void poisson_out_cpu(const Tensor& out, const Tensor& self, Generator* gen) {
  check_floating(self, "poisson", "rate");
  const Tensor rates = op::cast(op::contiguous(self, MemoryFormat::Contiguous), ScalarType::Float64);
  const double* r = rates.data<double>();
  for (int64_t i = 0; i < rates.numel(); ++i)
    FB_CHECK_VALUE(r[i] >= 0.0 && !std::isinf(r[i]),
                   "[poisson] invalid Poisson rate, expected rate to be finite and non-negative, got ", r[i]);
  sample_elementwise(out, "poisson", {self}, gen,
                     [](auto& p, int64_t i, Stream& s) { return sample_poisson(p[0][i], s); });
}

void binomial_out_cpu(const Tensor& out, const Tensor& count, const Tensor& prob, Generator* gen) {
  check_floating(count, "binomial", "count");
  FB_CHECK_TYPE(count.dtype() == prob.dtype(), "[binomial] expected count and prob of one dtype, got ",
                dtype_name(count.dtype()), " and ", dtype_name(prob.dtype()));
  sample_elementwise(out, "binomial", {count, prob}, gen, [](auto& p, int64_t i, Stream& s) {
    const double n = p[0][i], q = p[1][i];
    if (std::isnan(n) || std::isnan(q)) return std::numeric_limits<double>::quiet_NaN();
    return sample_binomial(std::floor(n), q, s);
  });
}

FB_REGISTER_OUT_KERNEL(op::_standard_gamma, CPU, standard_gamma_out_cpu);
FB_REGISTER_OUT_KERNEL(op::_standard_gamma_grad, CPU, standard_gamma_grad_out_cpu);
FB_REGISTER_OUT_KERNEL(op::poisson, CPU, poisson_out_cpu);
FB_REGISTER_OUT_KERNEL(op::binomial, CPU, binomial_out_cpu);

}  // namespace
}  // namespace flambeau
