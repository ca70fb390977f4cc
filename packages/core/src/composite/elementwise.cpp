// Elementwise composites of the op table (square, lerp, clamp with tensor
// bounds, clamp_min/clamp_max): built from ops, so they need no kernel and no
// derivative of their own.
#include "composite_generated.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "opmath.h"

namespace flambeau {

Tensor composite::square(const Tensor& self) { return op::pow(self, scalar_to_tensor(Scalar(int64_t{2}))); }

// PyTorch's lerp: start + w * (end - start) for |w| < 0.5, else end + (w - 1) * (end - start), which is
// exact at w == 1; each a fused multiply-add on the CPU (Note [Fused addcmul]), in float32 for
// float16/bfloat16 with one rounding at the end, and w - 1 in the dtype's arithmetic.
Tensor composite::lerp_tensor(const Tensor& self, const Tensor& end, const Tensor& weight) {
  FB_CHECK_TYPE(is_floating(self.dtype()) && self.dtype() == end.dtype(),
                "[lerp] expected floating point input and end of one dtype, got ", dtype_name(self.dtype()),
                " and ", dtype_name(end.dtype()));
  const ScalarType t = self.dtype();
  if (opmath::is_16bit(t))
    return to_dtype(op::lerp_tensor(opmath::widen(self), opmath::widen(end), opmath::widen(weight)), t);
  const Tensor diff = op::sub(end, self, 1);
  const Tensor one = scalar_to_tensor(Scalar(1.0));
  const Tensor small = op::lt(op::abs(weight), scalar_to_tensor(Scalar(0.5)));
  if (opmath::fused_on_cpu({&self, &end, &weight}))
    return op::_addcmul_fused(op::where(small, self, end), op::where(small, weight, op::sub(weight, one, 1)), diff, 1);
  return op::where(small, op::add(self, op::mul(weight, diff), 1),
                   op::sub(end, op::mul(diff, op::sub(one, weight, 1)), 1));
}

Tensor composite::lerp(const Tensor& self, const Tensor& end, const Scalar& weight) {
  FB_CHECK_TYPE(is_floating(self.dtype()) && self.dtype() == end.dtype(),
                "[lerp] expected floating point input and end of one dtype, got ", dtype_name(self.dtype()),
                " and ", dtype_name(end.dtype()));
  const ScalarType t = self.dtype();
  if (opmath::is_16bit(t)) return to_dtype(op::lerp(opmath::widen(self), opmath::widen(end), weight), t);
  const Tensor diff = op::sub(end, self, 1);
  // The weight as the dtype reads it: 1 - 0.9 in float64 is not float32's 0.9f - 1.
  const bool single = t == ScalarType::Float32;
  const double w = single ? static_cast<double>(static_cast<float>(weight.to_double())) : weight.to_double();
  if (std::abs(w) < 0.5) return op::add(self, diff, weight);
  return op::add(end, diff, Scalar(single ? static_cast<double>(static_cast<float>(w) - 1.0f) : w - 1.0));
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
