// Complex composites of the op table : conj, polar.
#include "composite_generated.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"

namespace flambeau {

// Materialises the conjugate (PyTorch sets a lazy conj bit instead; flambeau
// tensors have none). A real tensor comes back as a view of itself, as in PyTorch.
Tensor composite::conj(const Tensor& self) {
  if (!is_complex(self.dtype())) return op::view(self, self.sizes());
  return op::conj_physical(self);
}

Tensor composite::polar(const Tensor& abs, const Tensor& angle) {
  FB_CHECK_TYPE(abs.dtype() == angle.dtype() &&
                    (abs.dtype() == ScalarType::Float32 || abs.dtype() == ScalarType::Float64),
                "[polar] expects abs and angle of one dtype, float32 or float64, got ",
                dtype_name(abs.dtype()), " and ", dtype_name(angle.dtype()));
  return op::complex(op::mul(abs, op::cos(angle)), op::mul(abs, op::sin(angle)));
}

}  // namespace flambeau
