// CPU out kernel: signbit of every real dtype (exact for signed zeros, infinities and NaN). copysign,
// nextafter and logaddexp are entries of FB_BINARY_MATH (binary_math.cpp).
#include <cmath>

#include "elementwise.h"
#include "flambeau/ops.h"
#include "flambeau/type_dispatch.h"

namespace flambeau {
namespace {
using namespace cpu;

// Note [Structured kernels]: out is bool (the `bool` rule).
void signbit_out_cpu(const Tensor& out, const Tensor& a) {
  const ScalarType t = a.dtype();
  TensorIterator it = TensorIterator::into("signbit", out, a, t);
  visit_dtypes<kDtReal>(t, "signbit", [&](auto tag) {
    using T = typename decltype(tag)::type;
    it.for_each(
        [](char** d, const int64_t* s, int64_t n) {
          base::unary_loop<bool, T>(d, s, n, [](T x) {
            if constexpr (std::is_floating_point_v<T>)
              return static_cast<bool>(std::signbit(x));
            else if constexpr (is_half_v<T>)
              return (x.x >> 15) != 0;  // the sign bit of float16 and bfloat16 alike
            else if constexpr (std::is_signed_v<T>)
              return x < 0;
            else
              return false;
          });
        },
        kMemoryBoundGrain);
  });
}

FB_REGISTER_OUT_KERNEL(op::signbit, CPU, signbit_out_cpu);

}  // namespace
}  // namespace flambeau
