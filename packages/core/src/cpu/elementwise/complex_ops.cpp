// CPU out kernels of the complex ops (Note [Structured kernels]): conj_physical, angle, complex.
#include <cmath>
#include <numbers>

#include "elementwise.h"
#include "flambeau/ops.h"

namespace flambeau {
namespace {
using namespace cpu;

// Note [Structured kernels]: out has a's dtype (or is a, in place); a real a is copied.
void conj_physical_out_cpu(const Tensor& out, const Tensor& a) {
  const ScalarType t = out.dtype();
  if (!is_complex(t)) return identity_into(out, a);
  TensorIterator it = TensorIterator::into("conj_physical", out, a, t);
  visit_dtypes<kDtComplex>(t, "conj_physical", [&](auto tag) {
    using T = typename decltype(tag)::type;
    it.for_each([](char** d, const int64_t* s,
                   int64_t n) { base::unary_loop<T, T>(d, s, n, [](T z) { return std::conj(z); }); },
                kMemoryBoundGrain);
  });
}

// PyTorch's angle: atan2(imag, real) for complex; for reals 0, pi for negatives, NaN for NaN. out has
// the real float dtype of a's (Note [Structured kernels]).
void angle_out_cpu(const Tensor& out, const Tensor& a) {
  const ScalarType t = a.dtype();
  const ScalarType compute = is_complex(t) ? t : to_float_dtype(t);
  TensorIterator it = TensorIterator::into("angle", out, a, compute);
  visit_dtypes<kDtFloats | kDtHalf | kDtComplex>(compute, "angle", [&](auto tag) {
    using T = typename decltype(tag)::type;
    it.for_each(
        [](char** d, const int64_t* s, int64_t n) {
          if constexpr (is_complex_v<T>) {
            using R = typename T::value_type;
            base::unary_loop<R, T>(d, s, n, [](T z) { return std::atan2(z.imag(), z.real()); });
          } else {
            base::unary_loop<T, T>(d, s, n, [](T x) -> T {
              if constexpr (is_half_v<T>) {
                const float f = x;
                return T(f != f ? f : f < 0 ? std::numbers::pi_v<float> : 0.0f);
              } else {
                return x != x ? x : x < 0 ? std::numbers::pi_v<T> : T(0);
              }
            });
          }
        },
        kGrainSize);
  });
}

// out: the complex dtype of re's and im's (checked: one dtype, float32 or float64), their broadcast shape.
void complex_out_cpu(const Tensor& out, const Tensor& re, const Tensor& im) {
  const ScalarType t = re.dtype();
  TensorIterator it = TensorIterator::into("complex", out, re, im, t);
  visit_dtypes<kDtFloats>(t, "complex", [&](auto tag) {
    using T = typename decltype(tag)::type;
    it.for_each(
        [](char** d, const int64_t* s, int64_t n) {
          base::binary_loop<std::complex<T>, T>(d, s, n, [](T x, T y) { return std::complex<T>(x, y); });
        },
        kMemoryBoundGrain);
  });
}

FB_REGISTER_OUT_KERNEL(op::conj_physical, CPU, conj_physical_out_cpu);
FB_REGISTER_OUT_KERNEL(op::angle, CPU, angle_out_cpu);
FB_REGISTER_OUT_KERNEL(op::complex, CPU, complex_out_cpu);

}  // namespace
}  // namespace flambeau
