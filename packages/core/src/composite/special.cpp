// Special-function composites of the op table (polygamma, mvlgamma, logit):
// built from the shared list's digamma, lgamma and zeta, so they need no
// kernel and are differentiable through the ops they call.
#include <cmath>

#include "composite_generated.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"

namespace flambeau {
namespace {

Tensor wrapped(double v) { return scalar_tensor(v, ScalarType::Float64, /*wrapped=*/true); }

}  // namespace

// (-1)^(n+1) n! zeta(n + 1, x) for n >= 1: zeta's derivative in its second argument,
// -s zeta(s + 1, q), then gives polygamma(n + 1) as the gradient.
Tensor composite::polygamma(int64_t n, const Tensor& self) {
  FB_CHECK_VALUE(n >= 0, "[polygamma] polygamma(n, x) does not support negative n, got n=", n);
  if (n == 0) return op::digamma(self);
  const double factorial = std::exp(std::lgamma(static_cast<double>(n) + 1.0));
  const Tensor z = op::special_zeta(wrapped(static_cast<double>(n) + 1.0), self);
  return op::mul(z, wrapped(n % 2 == 1 ? factorial : -factorial));
}

Tensor composite::mvlgamma(const Tensor& self, int64_t p) {
  FB_CHECK_VALUE(p >= 1, "[mvlgamma] p has to be greater than or equal to 1, got ", p);
  FB_CHECK_TYPE(is_floating(self.dtype()), "[mvlgamma] expected a floating point input, got ",
                dtype_name(self.dtype()));
  // As PyTorch 2.13: no check that every element exceeds (p - 1) / 2; below, a pole of lgamma
  // gives inf.
  // lgamma(x - j/2) for j = 0 .. p-1 along a new last dim, summed away.
  const Tensor half_j = op::mul(op::arange(0, p, 1, self.dtype(), self.device()), wrapped(0.5));
  const Tensor terms = op::lgamma(op::sub(op::unsqueeze(self, -1), half_j, 1));
  const double log_pi = std::log(3.14159265358979323846);
  const int64_t last[] = {-1};
  return op::add(op::sum(terms, IntArrayRef(last), false, std::nullopt),
                 wrapped(static_cast<double>(p) * (static_cast<double>(p) - 1) / 4 * log_pi), 1);
}

// log(x / (1 - x)) as PyTorch computes it; eps clamps first, so the gradient is 0 outside
// [eps, 1 - eps] as in PyTorch's logit_backward.
Tensor composite::logit(const Tensor& self, std::optional<double> eps) {
  Tensor x = is_floating(self.dtype()) ? self : op::cast(self, default_float_dtype());
  if (eps) x = op::clamp(x, Scalar(*eps), Scalar(1.0 - *eps));
  return op::log(op::div(x, op::sub(wrapped(1.0), x, 1)));
}

// Normalised Gamma(self, 1) samples along the last dim. The gradient flows through
// _standard_gamma's reparameterised one (each gamma sample moved at a fixed CDF value), which
// gives the same expected gradient as PyTorch's _dirichlet_grad. Every coordinate is at least the
// dtype's smallest normal number (the sampler's floor), so log_prob stays finite.
Tensor composite::_sample_dirichlet(const Tensor& self, Generator* generator) {
  FB_CHECK_VALUE(self.dim() >= 1,
                 "[_sample_dirichlet] expected at least a 1-D concentration, got a 0-d tensor");
  const Tensor g = op::_standard_gamma(self, generator);
  const int64_t last[] = {-1};
  return op::div(g, op::sum(g, IntArrayRef(last), true, std::nullopt));
}

}  // namespace flambeau
