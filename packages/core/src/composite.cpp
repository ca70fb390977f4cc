// Composite functions of flambeau/ops.h: built from ops, so they need no
// kernel and no derivative of their own.
#include "flambeau/error.h"
#include "flambeau/ops.h"

namespace flambeau {

Tensor empty(IntArrayRef sizes, ScalarType dtype, Device device) { return op::empty(sizes, dtype, device); }

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
  return scalar_tensor(value, value.default_dtype(), wrapped);
}

Tensor& zero_(Tensor& self) { return op::fill_(self, 0); }

}  // namespace flambeau
