// Factory helpers of flambeau/ops.h and the zero_ composite: built from ops,
// so they need no kernel and no derivative of their own, on any device.
#include "composite_generated.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"

namespace flambeau {

Tensor full(IntArrayRef sizes, const Scalar& value, ScalarType dtype, Device device) {
  Tensor t = op::empty(sizes, dtype, device);
  op::fill_(t, value);
  return t;
}
Tensor zeros(IntArrayRef sizes, ScalarType dtype, Device device) { return full(sizes, 0, dtype, device); }
Tensor ones(IntArrayRef sizes, ScalarType dtype, Device device) { return full(sizes, 1, dtype, device); }
Tensor empty_like(const Tensor& t) { return op::empty(t.sizes(), t.dtype(), t.device()); }
Tensor zeros_like(const Tensor& t) { return zeros(t.sizes(), t.dtype(), t.device()); }
Tensor ones_like(const Tensor& t) { return ones(t.sizes(), t.dtype(), t.device()); }

Tensor scalar_tensor(const Scalar& value, ScalarType dtype, bool wrapped) {
  Tensor t = full({}, value, dtype, Device(DeviceType::CPU));
  t.impl()->set_wrapped_number(wrapped);
  return t;
}
Tensor scalar_to_tensor(const Scalar& value, bool wrapped) {
  // A wrapped Python float keeps its double value (as in PyTorch): promotion
  // treats it as the default float dtype anyway (Note [Wrapped numbers]), and
  // `float64_tensor + 0.1` must not see 0.1 rounded to float32.
  const ScalarType dtype = wrapped && value.is_floating()  ? ScalarType::Float64
                           : wrapped && value.is_complex() ? ScalarType::ComplexDouble
                                                           : value.default_dtype();
  return scalar_tensor(value, dtype, wrapped);
}

Tensor& composite::zero_(Tensor& self) { return op::fill_(self, 0); }

}  // namespace flambeau
