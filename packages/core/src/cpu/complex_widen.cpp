// CPU kernel of sgn (issue 7, complex everywhere the math is defined): z / |z| for
// complex inputs (0 where z is 0), sign(x) for real ones, as PyTorch's torch.sgn.
#include <cmath>

#include "elementwise.h"
#include "flambeau/ops.h"

namespace flambeau {
namespace {
using namespace cpu;

Tensor sgn_cpu(const Tensor& a) {
  const ScalarType t = a.dtype();
  if (!is_complex(t)) return op::sign(a);
  TensorIterator it = TensorIterator::unary("sgn", a, t, t);
  visit_dtypes<kDtComplex>(t, "sgn", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using R = typename T::value_type;
    it.for_each(
        [](char** d, const int64_t* s, int64_t n) {
          base::unary_loop<T, T>(d, s, n, [](T z) {
            const R r = std::hypot(z.real(), z.imag());
            return r == R(0) ? T(0) : T(z.real() / r, z.imag() / r);
          });
        },
        kMemoryBoundGrain);
  });
  return it.output();
}

FB_REGISTER_KERNEL(op::sgn, CPU, sgn_cpu);

}  // namespace
}  // namespace flambeau
