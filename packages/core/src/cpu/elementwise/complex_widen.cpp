// CPU kernel of sgn (complex everywhere the math is defined): z / |z| for
// complex inputs (0 where z is 0), sign(x) for real ones, as PyTorch's torch.sgn.
#include <cmath>
#include <limits>

#include "elementwise.h"
#include "flambeau/ops.h"

namespace flambeau {
namespace {
using namespace cpu;

// Note [Structured kernels]: out has a's dtype (or is a, in place); a real a runs sign's out kernel.
void sgn_out_cpu(const Tensor& out, const Tensor& a) {
  const ScalarType t = out.dtype();
  if (!is_complex(t)) return op::sign.run_out(out, a);
  TensorIterator it = TensorIterator::into("sgn", out, a, t);
  visit_dtypes<kDtComplex>(t, "sgn", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using R = typename T::value_type;
    it.for_each(
        [](char** d, const int64_t* s, int64_t n) {
          base::unary_loop<T, T>(d, s, n, [](T z) {
            // |z| as sqrt(re^2 + im^2) (vectorizable); hypot only where that over/underflows.
            const R s2 = z.real() * z.real() + z.imag() * z.imag();
            const R r = (s2 > std::numeric_limits<R>::min() && s2 < std::numeric_limits<R>::max())
                            ? std::sqrt(s2)
                            : std::hypot(z.real(), z.imag());
            return r == R(0) ? T(0) : T(z.real() / r, z.imag() / r);
          });
        },
        kMemoryBoundGrain);
  });
}

FB_REGISTER_OUT_KERNEL(op::sgn, CPU, sgn_out_cpu);

}  // namespace
}  // namespace flambeau
