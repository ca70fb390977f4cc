// CPU kernels: copysign, signbit, nextafter, logaddexp (the IEEE 754 sign and
// neighbour functions; exact for signed zeros, infinities and NaN).
#include <cmath>

#include "elementwise.h"
#include "flambeau/ops.h"
#include "flambeau/type_dispatch.h"

namespace flambeau {
namespace {
using namespace cpu;

Tensor copysign_cpu(const Tensor& a, const Tensor& b) {
  return binary_typed<kFloats>("copysign", a, b, to_float_dtype(result_type(a, b)),
                               [](auto x, auto y) { return std::copysign(x, y); });
}

Tensor nextafter_cpu(const Tensor& a, const Tensor& b) {
  return binary_typed<kFloats>("nextafter", a, b, result_type(a, b),
                               [](auto x, auto y) { return std::nextafter(x, y); });
}

// max + log1p(exp(-|x - y|)); equal infinities would give inf - inf = NaN there, so they return x.
Tensor logaddexp_cpu(const Tensor& a, const Tensor& b) {
  return binary_typed<kFloats>("logaddexp", a, b, to_float_dtype(result_type(a, b)), [](auto x, auto y) {
    if (x == y && std::isinf(x)) return x;
    const auto m = x > y ? x : y;
    return m + std::log1p(std::exp(-std::abs(x - y)));
  });
}

Tensor signbit_cpu(const Tensor& a) {
  const ScalarType t = a.dtype();
  TensorIterator it = TensorIterator::unary("signbit", a, t, ScalarType::Bool);
  visit_dtype(t, "signbit", [&](auto tag) {
    using T = typename decltype(tag)::type;
    it.for_each(
        [](char** d, const int64_t* s, int64_t n) {
          base::unary_loop<bool, T>(d, s, n, [](T x) {
            if constexpr (std::is_floating_point_v<T>)
              return static_cast<bool>(std::signbit(x));
            else if constexpr (std::is_signed_v<T>)
              return x < 0;
            else
              return false;
          });
        },
        kMemoryBoundGrain);
  });
  return it.output();
}

FB_REGISTER_KERNEL(op::copysign, CPU, copysign_cpu);
FB_REGISTER_KERNEL(op::nextafter, CPU, nextafter_cpu);
FB_REGISTER_KERNEL(op::logaddexp, CPU, logaddexp_cpu);
FB_REGISTER_KERNEL(op::signbit, CPU, signbit_cpu);

}  // namespace
}  // namespace flambeau
