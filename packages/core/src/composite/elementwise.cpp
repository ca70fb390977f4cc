// Elementwise composites of the op table (square, lerp, clamp with tensor
// bounds, clamp_min/clamp_max): built from ops, so they need no kernel and no
// derivative of their own.
#include "composite_generated.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"

namespace flambeau {

Tensor composite::square(const Tensor& self) { return op::pow(self, scalar_to_tensor(Scalar(int64_t{2}))); }

// PyTorch's lerp: start + w * (end - start) for |w| < 0.5, else end - (end - start) * (1 - w), which is
// exact at w == 1.
Tensor composite::lerp_tensor(const Tensor& self, const Tensor& end, const Tensor& weight) {
  FB_CHECK_TYPE(is_floating(self.dtype()) && self.dtype() == end.dtype(),
                "[lerp] expected floating point input and end of one dtype, got ", dtype_name(self.dtype()),
                " and ", dtype_name(end.dtype()));
  const Tensor diff = op::sub(end, self, 1);
  const Tensor one = scalar_to_tensor(Scalar(1.0));
  const Tensor small = op::lt(op::abs(weight), scalar_to_tensor(Scalar(0.5)));
  return op::where(small, op::add(self, op::mul(weight, diff), 1),
                   op::sub(end, op::mul(diff, op::sub(one, weight, 1)), 1));
}

Tensor composite::lerp(const Tensor& self, const Tensor& end, const Scalar& weight) {
  FB_CHECK_TYPE(is_floating(self.dtype()) && self.dtype() == end.dtype(),
                "[lerp] expected floating point input and end of one dtype, got ", dtype_name(self.dtype()),
                " and ", dtype_name(end.dtype()));
  const double w = weight.to_double();
  const Tensor diff = op::sub(end, self, 1);
  if (std::abs(w) < 0.5) return op::add(self, diff, weight);
  return op::sub(end, diff, Scalar(1.0 - w));
}

Tensor& composite::lerp__tensor(Tensor& self, const Tensor& end, const Tensor& weight) {
  return op::copy_(self, op::lerp_tensor(self, end, weight));
}
Tensor& composite::lerp_(Tensor& self, const Tensor& end, const Scalar& weight) {
  return op::copy_(self, op::lerp(self, end, weight));
}

// maximum then minimum: NaN in input or a bound propagates, and where
// min > max the result is max, as PyTorch. (Gradients follow maximum/minimum:
// ties split, unlike PyTorch's clamp, which gives a tie to input.)
Tensor composite::clamp_tensor(const Tensor& self, const std::optional<Tensor>& min,
                               const std::optional<Tensor>& max) {
  FB_CHECK_VALUE(min || max, "[clamp] at least one of min and max must not be None");
  Tensor r = self;
  if (min) r = op::maximum(r, *min);
  if (max) r = op::minimum(r, *max);
  return r;
}

Tensor composite::clamp_min_tensor(const Tensor& self, const Tensor& min) {
  return op::clamp_tensor(self, min, std::nullopt);
}
Tensor composite::clamp_max_tensor(const Tensor& self, const Tensor& max) {
  return op::clamp_tensor(self, std::nullopt, max);
}
Tensor composite::clamp_min(const Tensor& self, const Scalar& min) {
  return op::clamp(self, min, std::nullopt);
}
Tensor composite::clamp_max(const Tensor& self, const Scalar& max) {
  return op::clamp(self, std::nullopt, max);
}

}  // namespace flambeau
