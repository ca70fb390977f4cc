// complex64/complex128 loops of the elementwise ops (std::complex arithmetic;
// the C library's complex functions for the transcendental ones, with C99
// Annex G's special values), handed to the kernels through pick_loop
// (elementwise.h), plus the real-valued abs of a complex tensor.
#include <complex>

#include "elementwise.h"
#include "flambeau/ops.h"

namespace flambeau::cpu {
namespace {

template <class T>
using Real = typename T::value_type;

template <class T, int Op>
void complex_binary_loop(char** d, const int64_t* s, int64_t n, double param) {
  const T alpha(static_cast<Real<T>>(param), 0);
  if constexpr (Op == kVecAdd)
    base::binary_loop<T, T>(d, s, n, [alpha](T a, T b) { return a + alpha * b; });
  else if constexpr (Op == kVecSub)
    base::binary_loop<T, T>(d, s, n, [alpha](T a, T b) { return a - alpha * b; });
  else if constexpr (Op == kVecMul)  // the plain formula, as PyTorch's CPU kernel (std::complex's
    // operator* calls __mulsc3/__muldc3 for C99's inf/NaN recovery: a call per element, ~5x slower)
    base::binary_loop<T, T>(d, s, n, [](T a, T b) {
      return T(a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real());
    });
  else
    base::binary_loop<T, T>(d, s, n, [](T a, T b) { return a / b; });
}

template <class T>
T complex_sigmoid(T z) {
  return T(1) / (T(1) + std::exp(-z));
}

template <class T, int Op>
void complex_unary_loop(char** d, const int64_t* s, int64_t n, double) {
  base::unary_loop<T, T>(d, s, n, [](T a) -> T {
    if constexpr (Op == kVecNeg) return -a;
    if constexpr (Op == kVecSqrt) return std::sqrt(a);
    if constexpr (Op == kVecExp) return std::exp(a);
    if constexpr (Op == kVecLog) return std::log(a);
    if constexpr (Op == kVecTanh) return std::tanh(a);
    if constexpr (Op == kVecSigmoid) return complex_sigmoid(a);
    if constexpr (Op == kVec_sin) return std::sin(a);
    if constexpr (Op == kVec_cos) return std::cos(a);
    if constexpr (Op == kVec_tan) return std::tan(a);
    if constexpr (Op == kVec_asin) return std::asin(a);
    if constexpr (Op == kVec_acos) return std::acos(a);
    if constexpr (Op == kVec_atan) return std::atan(a);
    if constexpr (Op == kVec_sinh) return std::sinh(a);
    if constexpr (Op == kVec_cosh) return std::cosh(a);
    if constexpr (Op == kVec_asinh) return std::asinh(a);
    if constexpr (Op == kVec_acosh) return std::acosh(a);
    if constexpr (Op == kVec_atanh) return std::atanh(a);
    if constexpr (Op == kVec_log10) return std::log10(a);
    if constexpr (Op == kVec_log2)
      return std::log(a) / static_cast<Real<T>>(0.693147180559945309417232121458176568);
    if constexpr (Op == kVec_reciprocal) return T(1) / a;
    if constexpr (Op == kVec_rsqrt) return T(1) / std::sqrt(a);
    if constexpr (Op == kVec_expm1) return std::exp(a) - T(1);
    if constexpr (Op == kVec_log1p) return std::log(T(1) + a);
    return a;
  });
}

template <class T>
Loop1D loop_for(VecOp op) {
  switch (op) {
    case kVecAdd:
      return &complex_binary_loop<T, kVecAdd>;
    case kVecSub:
      return &complex_binary_loop<T, kVecSub>;
    case kVecMul:
      return &complex_binary_loop<T, kVecMul>;
    case kVecDiv:
      return &complex_binary_loop<T, kVecDiv>;
#define FB_COMPLEX_UNARY(OP) \
  case OP:                   \
    return &complex_unary_loop<T, OP>;
      FB_COMPLEX_UNARY(kVecNeg)
      FB_COMPLEX_UNARY(kVecSqrt)
      FB_COMPLEX_UNARY(kVecExp)
      FB_COMPLEX_UNARY(kVecLog)
      FB_COMPLEX_UNARY(kVecTanh)
      FB_COMPLEX_UNARY(kVecSigmoid)
      FB_COMPLEX_UNARY(kVec_sin)
      FB_COMPLEX_UNARY(kVec_cos)
      FB_COMPLEX_UNARY(kVec_tan)
      FB_COMPLEX_UNARY(kVec_asin)
      FB_COMPLEX_UNARY(kVec_acos)
      FB_COMPLEX_UNARY(kVec_atan)
      FB_COMPLEX_UNARY(kVec_sinh)
      FB_COMPLEX_UNARY(kVec_cosh)
      FB_COMPLEX_UNARY(kVec_asinh)
      FB_COMPLEX_UNARY(kVec_acosh)
      FB_COMPLEX_UNARY(kVec_atanh)
      FB_COMPLEX_UNARY(kVec_log10)
      FB_COMPLEX_UNARY(kVec_log2)
      FB_COMPLEX_UNARY(kVec_reciprocal)
      FB_COMPLEX_UNARY(kVec_rsqrt)
      FB_COMPLEX_UNARY(kVec_expm1)
      FB_COMPLEX_UNARY(kVec_log1p)
#undef FB_COMPLEX_UNARY
    default:
      return nullptr;
  }
}

}  // namespace

Loop1D complex_loop(ScalarType t, VecOp op) {
  if (t == ScalarType::ComplexFloat) return loop_for<complex64>(op);
  if (t == ScalarType::ComplexDouble) return loop_for<complex128>(op);
  return nullptr;
}

// Note [Structured kernels]: out has the real dtype of a's complex one (abs's `real` rule).
void complex_abs_into(const Tensor& out, const Tensor& a) {
  const ScalarType t = a.dtype();
  TensorIterator it = TensorIterator::into("abs", out, a, t);
  visit_dtypes<kDtComplex>(t, "abs", [&](auto tag) {
    using T = typename decltype(tag)::type;
    it.for_each([](char** d, const int64_t* s,
                   int64_t n) { base::unary_loop<Real<T>, T>(d, s, n, [](T z) { return std::abs(z); }); },
                kGrainSize);
  });
}

}  // namespace flambeau::cpu
