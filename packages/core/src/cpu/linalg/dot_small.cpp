// CPU kernel: _dot_small, the dot of two short float32/float64 vectors in one
// loop (composite _dot, src/composite/dot.cpp, calls it below
// kDotSmallMax elements; longer vectors go through matmul's BLAS dot).
#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "flambeau/type_dispatch.h"
#include "generic/shape_utils.h"

namespace flambeau {
namespace {

template <class T>
T dot_loop(const T* a, int64_t sa, const T* b, int64_t sb, int64_t n) {
  T s = 0;
  if (sa == 1 && sb == 1) {
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  } else {
    for (int64_t i = 0; i < n; ++i) s += a[i * sa] * b[i * sb];
  }
  return s;
}

Tensor dot_small_cpu(const Tensor& self, const Tensor& tensor) {
  FB_CHECK_TYPE((self.dtype() == ScalarType::Float32 || self.dtype() == ScalarType::Float64) &&
                    tensor.dtype() == self.dtype(),
                "[_dot_small] needs two float32 or two float64 tensors, got ", dtype_name(self.dtype()),
                " and ", dtype_name(tensor.dtype()));
  FB_CHECK_VALUE(self.dim() == 1 && tensor.dim() == 1 && self.sizes()[0] == tensor.sizes()[0],
                 "[_dot_small] needs two 1-D tensors of the same size, got shapes ", shape_str(self.sizes()),
                 " and ", shape_str(tensor.sizes()));
  Tensor out = op::empty(Shape{}, self.dtype(), self.device());
  visit_dtype(self.dtype(), "_dot_small", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>)
      *out.data<T>() = dot_loop<T>(self.data<T>(), self.strides()[0], tensor.data<T>(), tensor.strides()[0],
                                   self.sizes()[0]);
  });
  return out;
}

FB_REGISTER_KERNEL(op::_dot_small, CPU, dot_small_cpu);

}  // namespace
}  // namespace flambeau
