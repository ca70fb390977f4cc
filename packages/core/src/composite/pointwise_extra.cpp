// Pointwise composites of PyTorch's vocabulary (addcmul, addcdiv, rsub, float_power,
// fmax/fmin, heaviside, ldexp, logaddexp2, gcd/lcm, deg2rad/rad2deg): built from
// elementwise ops, so autograd differentiates them through those ops and every
// device runs them.
#include <numbers>

#include "composite_generated.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "host_read.h"
#include "opmath.h"

namespace flambeau {
namespace {

Tensor wrapped(double v) { return scalar_tensor(v, ScalarType::Float64, /*wrapped=*/true); }
Tensor wrapped_int(int64_t v) { return scalar_to_tensor(Scalar(v)); }

void check_not_complex(const char* op, const Tensor& t) {
  FB_CHECK_TYPE(!is_complex(t.dtype()), "[", op, "] is not supported for complex tensors, got ", dtype_name(t.dtype()));
}

// Integer inputs compute in the default float dtype (as sin, div).
Tensor as_float(const Tensor& t) {
  return is_floating(t.dtype()) || is_complex(t.dtype()) ? t : to_dtype(t, default_float_dtype());
}

}  // namespace

// A floating result on the CPU is the fused kernel (Note [Fused addcmul]); elsewhere, and for integer and
// complex operands, a product then an add.
Tensor composite::addcmul(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2, const Scalar& value) {
  if (opmath::fused_on_cpu({&self, &tensor1, &tensor2})) return op::_addcmul_fused(self, tensor1, tensor2, value);
  return flambeau::add(self, op::mul(tensor1, tensor2), value);
}

Tensor composite::addcdiv(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2, const Scalar& value) {
  FB_CHECK_TYPE(!(is_integral(tensor1.dtype(), true) && is_integral(tensor2.dtype(), true)),
                "[addcdiv] Integer division with addcdiv is no longer supported: tensor1 and tensor2 are ",
                dtype_name(tensor1.dtype()), " and ", dtype_name(tensor2.dtype()),
                "; use (input + value * tensor1 / tensor2) for a true division");
  // PyTorch's order, self + (value * tensor1) / tensor2, in float32 for float16/bfloat16 operands with one
  // rounding at the end (its opmath).
  const ScalarType t = opmath::promoted({&self, &tensor1, &tensor2});
  if (opmath::is_16bit(t))
    return to_dtype(op::addcdiv(opmath::widen(self), opmath::widen(tensor1), opmath::widen(tensor2), value), t);
  return op::add(self, op::div(op::mul(tensor1, scalar_to_tensor(value)), tensor2), 1);
}

Tensor composite::rsub(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  return flambeau::sub(other, self, alpha);
}

namespace {
ScalarType float_power_dtype(const Tensor& self, const Tensor& exponent) {
  return is_complex(self.dtype()) || is_complex(exponent.dtype()) ? ScalarType::ComplexDouble : ScalarType::Float64;
}
}  // namespace

Tensor composite::float_power(const Tensor& self, const Tensor& exponent) {
  const ScalarType t = float_power_dtype(self, exponent);
  return op::pow(to_dtype(self, t), to_dtype(exponent, t));
}

Tensor& composite::float_power_(Tensor& self, const Tensor& exponent) {
  const ScalarType t = float_power_dtype(self, exponent);
  FB_CHECK_TYPE(self.dtype() == t, "[float_power_] the base given to float_power_ has dtype ", dtype_name(self.dtype()),
                " but the operation's result requires dtype ", dtype_name(t));
  return op::copy_(self, op::pow(self, to_dtype(exponent, t)));
}

// fmax/fmin take the other operand where one is NaN; where() gives the whole gradient to the operand taken
// (ties included), as PyTorch's derivative does.
Tensor composite::fmax(const Tensor& self, const Tensor& other) {
  check_not_complex("fmax", self);
  check_not_complex("fmax", other);
  return op::where(op::logical_or(op::ge(self, other), op::isnan(other)), self, other);
}

Tensor composite::fmin(const Tensor& self, const Tensor& other) {
  check_not_complex("fmin", self);
  check_not_complex("fmin", other);
  return op::where(op::logical_or(op::le(self, other), op::isnan(other)), self, other);
}

Tensor composite::heaviside(const Tensor& self, const Tensor& values) {
  check_not_complex("heaviside", self);
  check_not_complex("heaviside", values);
  FB_CHECK_TYPE(self.dtype() == values.dtype(),
                "[heaviside] is not yet implemented for tensors with different dtypes, got ", dtype_name(self.dtype()),
                " and ", dtype_name(values.dtype()));
  const Tensor zero = wrapped_int(0);
  return op::where(op::eq(self, zero), values, to_dtype(op::gt(self, zero), self.dtype()));
}

Tensor composite::ldexp(const Tensor& self, const Tensor& other) {
  return op::mul(self, op::pow(wrapped(2.0), other));
}

Tensor composite::logaddexp2(const Tensor& self, const Tensor& other) {
  check_not_complex("logaddexp2", self);
  check_not_complex("logaddexp2", other);
  const Tensor a = as_float(self), b = as_float(other);
  const Tensor m = op::maximum(a, b);
  // m + log2(1 + 2^-|a-b|); equal infinities give themselves (their difference is NaN).
  const Tensor rest = op::mul(op::log1p(op::exp2(op::neg(op::abs(flambeau::sub(a, b))))), wrapped(1.0 / std::numbers::ln2));
  return op::where(op::logical_and(op::isinf(m), op::eq(a, b)), m, flambeau::add(m, rest));
}

namespace {
void check_integer(const char* op, const Tensor& self, const Tensor& other) {
  FB_CHECK_TYPE(is_integral(self.dtype(), false) && is_integral(other.dtype(), false), "[", op,
                "] expected integer tensors, got ", dtype_name(self.dtype()), " and ", dtype_name(other.dtype()));
}

// Euclid's algorithm on whole tensors: each step replaces (a, b) by (b, a mod b) where b != 0;
// at most ~log_phi(max) steps, each a few elementwise ops.
Tensor gcd_of(const Tensor& self, const Tensor& other) {
  const ScalarType t = promote_types(self.dtype(), other.dtype());
  const TensorList both = op::broadcast_tensors({to_dtype(op::abs(self), t), to_dtype(op::abs(other), t)});
  Tensor a = both[0], b = both[1];
  const Tensor zero = wrapped_int(0), one = wrapped_int(1);
  for (;;) {
    const Tensor nonzero = op::ne(b, zero);
    if (b.numel() == 0 || !composite_detail::read_first<bool>(op::any(nonzero, std::nullopt, false))) break;
    const Tensor r = op::remainder(a, op::where(nonzero, b, one));
    a = op::where(nonzero, b, a);
    b = op::where(nonzero, r, zero);
  }
  return op::contiguous(a, MemoryFormat::Contiguous);
}
}  // namespace

Tensor composite::gcd(const Tensor& self, const Tensor& other) {
  check_integer("gcd", self, other);
  return gcd_of(self, other);
}

Tensor composite::lcm(const Tensor& self, const Tensor& other) {
  check_integer("lcm", self, other);
  const Tensor g = gcd_of(self, other);
  const Tensor zero = wrapped_int(0);
  const Tensor is_zero = op::eq(g, zero);
  const Tensor q = op::floor_divide(self, op::where(is_zero, wrapped_int(1), g));
  return op::where(is_zero, zero, op::abs(op::mul(q, other)));
}

Tensor composite::deg2rad(const Tensor& self) {
  check_not_complex("deg2rad", self);
  return op::mul(as_float(self), wrapped(std::numbers::pi / 180.0));
}

Tensor composite::rad2deg(const Tensor& self) {
  check_not_complex("rad2deg", self);
  return op::mul(as_float(self), wrapped(180.0 / std::numbers::pi));
}

}  // namespace flambeau
