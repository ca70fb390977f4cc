// CPU out kernel of _dot_small (a structured op: Note [Structured kernels]),
// the dot of two short float32/float64 vectors in one loop (composite _dot,
// src/composite/dot.cpp, calls it below kDotSmallMax elements; longer vectors
// go through matmul's BLAS dot).
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

// Note [Structured kernels]: out is 0-d of self's dtype (the check step checked the dtypes and sizes).
void dot_small_out_cpu(const Tensor& out, const Tensor& self, const Tensor& tensor) {
  visit_dtype(self.dtype(), "_dot_small", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const T s = dot_loop<T>(self.data<T>(), self.strides()[0], tensor.data<T>(), tensor.strides()[0],
                              self.sizes()[0]);
      *out.data<T>() = s;
    }
  });
}

FB_REGISTER_OUT_KERNEL(op::_dot_small, CPU, dot_small_out_cpu);

}  // namespace
}  // namespace flambeau
