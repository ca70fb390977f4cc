// The composite _dot: dot's checks and dispatch in C++ (flambeau_core.dot,
// linalg.py). Differentiable through the ops they call.
#include <string>

#include "composite_generated.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"

namespace flambeau {
namespace {
// The shape as flambeau_core.linalg._shape writes it: "(16)", "(2, 3)".
std::string paren_shape(const Tensor& t) {
  std::string s = "(";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.sizes()[i]);
  return s + ")";
}
}  // namespace

Tensor composite::_dot(const Tensor& self, const Tensor& tensor) {
  FB_CHECK_VALUE(self.dim() == 1 && tensor.dim() == 1, "dot: 1D tensors expected, but got ", self.dim(),
                 "D and ", tensor.dim(), "D tensors (shapes ", paren_shape(self), " and ",
                 paren_shape(tensor), ")");
  const int64_t n = self.sizes()[0], m = tensor.sizes()[0];
  FB_CHECK_VALUE(n == m, "dot: inconsistent tensor size, expected tensor [", n, "] and src [", m,
                 "] to have the same number of elements, but got ", n, " and ", m, " elements respectively");
  FB_CHECK_TYPE(self.dtype() == tensor.dtype(),
                "dot: expected both vectors to have same dtype, but found flambeau.",
                dtype_name(self.dtype()), " and flambeau.", dtype_name(tensor.dtype()));
  FB_CHECK_TYPE(self.dtype() != ScalarType::Bool, "[dot] is not implemented for dtype bool (as in PyTorch)");
  // The result keeps the operands' dtype (a uint8 dot is uint8, as PyTorch's), not sum's int64;
  // matmul of two vectors is the BLAS dot for float32/float64. float16/bfloat16 (no matmul
  // kernels): the sum of the products.
  if (self.dtype() == ScalarType::Float16 || self.dtype() == ScalarType::BFloat16)
    return op::sum(op::mul(self, tensor), std::nullopt, false, self.dtype());
  // Short float32/float64 vectors: one op instead of matmul's four (src/cpu/linalg/dot_small.cpp).
  constexpr int64_t kDotSmallMax = 4096;
  if (n <= kDotSmallMax && self.device().type == DeviceType::CPU &&
      (self.dtype() == ScalarType::Float32 || self.dtype() == ScalarType::Float64))
    return op::_dot_small(self, tensor);
  return op::matmul(self, tensor);
}

}  // namespace flambeau
