// CPU out kernels (structured: they serve the out= and in-place forms too):
// add, sub, mul, div, pow, maximum, minimum. Broadcasting, promotion and threads: Note [TensorIterator].
#include <cmath>

#include "elementwise.h"
#include "flambeau/ops.h"
#include "wrapping.h"

namespace flambeau {
namespace {
using namespace cpu;

template <class T>
void pow_loop(char** d, const int64_t* s, int64_t n, double) {
  if constexpr (is_half_v<T>) {
    base::binary_loop<T, T>(d, s, n, [](T a, T b) { return T(std::pow(float(a), float(b))); });
  } else if constexpr (is_complex_v<T>) {
    base::binary_loop<T, T>(d, s, n, [](T a, T b) { return std::pow(a, b); });
  } else if constexpr (std::is_floating_point_v<T>) {
    base::binary_loop<T, T>(d, s, n, [](T a, T b) { return std::pow(a, b); });
  } else if constexpr (std::is_same_v<T, bool>) {
    base::binary_loop<T, T>(d, s, n, [](T a, T b) { return static_cast<T>(a || !b); });
  } else {
    base::binary_loop<T, T>(d, s, n, [](T a, T b) {
      if constexpr (std::is_signed_v<T>)
        if (b < 0) return a == 1 ? T(1) : a == -1 ? ((b & 1) ? T(-1) : T(1)) : T(0);
      // Wrapping multiplication, as in PyTorch's integer pow (Note [Integer wrap-around]).
      T result = 1, base = a;
      for (T e = b; e; e >>= 1) {
        if (e & 1) result = wrapping_mul(result, base);
        base = wrapping_mul(base, base);
      }
      return result;
    });
  }
}

// Note [Structured kernels]: out has the meta step's dtype (promote; div: float), or self's for the
// in-place forms (add_ computes in self's dtype), and the loops compute in it. So do maximum,
// minimum and pow.
void binary_out(const char* op, const Tensor& out, const Tensor& a, const Tensor& b, VecOp vop,
                const IntLoops& ints, double param) {
  const Loop1D loop = pick_loop(op, out.dtype(), vop, ints);
  run_loop(TensorIterator::into(op, out, a, b, out.dtype()), loop, param);
}

constexpr IntLoops kAddInts = FB_INT_LOOPS(base::add_loop);
constexpr IntLoops kSubInts = FB_INT_LOOPS_NO_BOOL(base::sub_loop);
constexpr IntLoops kMulInts = FB_INT_LOOPS(base::mul_loop);
constexpr IntLoops kMaxInts = FB_INT_LOOPS(base::maximum_loop);
constexpr IntLoops kMinInts = FB_INT_LOOPS(base::minimum_loop);
constexpr IntLoops kPowInts = FB_INT_LOOPS(pow_loop);

// alpha passed the meta step's check_alpha (Note [Meta step]); for bool
// results any nonzero alpha means True. PyTorch reads alpha in the dtype it computes in
// (alpha.to<scalar_t>()): with float16/bfloat16 operands, x.add(y, alpha=0.7) multiplies by
// bfloat16(0.7), as x + 0.7 adds bfloat16(0.7) (Note [16-bit op and a number]); an operand of a
// wider floating dtype makes PyTorch compute in that dtype, with alpha as given.
double alpha_in(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha) {
  const double al = alpha.to_double();
  const ScalarType t = out.dtype();
  const auto wider = [t](const Tensor& x) {
    return !x.impl()->is_wrapped_number() && is_floating(x.dtype()) && x.dtype() != t;
  };
  if ((t != ScalarType::Float16 && t != ScalarType::BFloat16) || wider(a) || wider(b)) return al;
  const auto f = static_cast<float>(al);
  return t == ScalarType::BFloat16 ? static_cast<float>(BFloat16(f)) : static_cast<float>(Half(f));
}
void add_out_cpu(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha) {
  binary_out("add", out, a, b, kVecAdd, kAddInts, alpha_in(out, a, b, alpha));
}
void sub_out_cpu(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha) {
  binary_out("sub", out, a, b, kVecSub, kSubInts, alpha_in(out, a, b, alpha));
}

// Note [16-bit op and a number]
// mul and div of a float16/bfloat16 tensor by a number, or by a 0-dim tensor, read the number in float32,
// as PyTorch's kernels (opmath_t: they take iter.original_scalar_value<float>(2) and drop the operand): each
// element is widened, multiplied or divided in float32 and rounded once (half_scalar_loop, one pass), so
// x / 257 on bfloat16 divides by 257, not by bfloat16(257) = 256. torch's add and sub have no such case:
// x + 0.7 adds bfloat16(0.7) (the iterator's cast), and so do they here. Only a second operand is read
// so: a number or 0-dim tensor first, mul(0.7, x), is rounded to x's dtype first, as torch's function form
// (torch.mul(0.7, x) multiplies by bfloat16(0.7)); Python's `0.7 * x` is mul(x, 0.7), as torch's __rmul__.
bool binary_number_out(const char* op, VecOp vop, const Tensor& out, const Tensor& x, const Tensor& number) {
  const ScalarType t = out.dtype();
  if ((t != ScalarType::Float16 && t != ScalarType::BFloat16) || number.dim() != 0 || x.dim() == 0 ||
      is_complex(number.dtype()) || !number.device().is_cpu())
    return false;
  const float v = visit_dtypes<kDtReal>(number.dtype(), op, [&](auto tag) {
    return static_cast<float>(*number.data<typename decltype(tag)::type>());
  });
  run_loop(TensorIterator::into(op, out, x, t), half_scalar_loop(t, vop), v);
  return true;
}

void mul_out_cpu(const Tensor& out, const Tensor& a, const Tensor& b) {
  if (binary_number_out("mul", kVecMul, out, a, b)) return;
  binary_out("mul", out, a, b, kVecMul, kMulInts, 0);
}
void div_out_cpu(const Tensor& out, const Tensor& a, const Tensor& b) {
  if (binary_number_out("div", kVecDiv, out, a, b)) return;
  binary_out("div", out, a, b, kVecDiv, kNoIntLoops, 0);
}
void maximum_out_cpu(const Tensor& out, const Tensor& a, const Tensor& b) {
  binary_out("maximum", out, a, b, kVecMaximum, kMaxInts, 0);
}
void minimum_out_cpu(const Tensor& out, const Tensor& a, const Tensor& b) {
  binary_out("minimum", out, a, b, kVecMinimum, kMinInts, 0);
}

void pow_out_cpu(const Tensor& out, const Tensor& a, const Tensor& b) {
  const ScalarType t = out.dtype();  // the promoted dtype (or self's, in place)
  Loop1D loop = int_loop(kPowInts, t);  // bool and the integers
  switch (t) {
    case ScalarType::Float32:
      loop = &pow_loop<float>;
      break;
    case ScalarType::Float64:
      loop = &pow_loop<double>;
      break;
    case ScalarType::Float16:
      loop = &pow_loop<Half>;
      break;
    case ScalarType::BFloat16:
      loop = &pow_loop<BFloat16>;
      break;
    case ScalarType::ComplexFloat:
      loop = &pow_loop<complex64>;
      break;
    case ScalarType::ComplexDouble:
      loop = &pow_loop<complex128>;
      break;
    default:
      if (!loop) unsupported_dtype("pow", t);
  }
  run_loop(TensorIterator::into("pow", out, a, b, t), loop, 0, kGrainSize);
}

FB_REGISTER_OUT_KERNEL(op::add, CPU, add_out_cpu);
FB_REGISTER_OUT_KERNEL(op::sub, CPU, sub_out_cpu);
FB_REGISTER_OUT_KERNEL(op::mul, CPU, mul_out_cpu);
FB_REGISTER_OUT_KERNEL(op::div, CPU, div_out_cpu);
FB_REGISTER_OUT_KERNEL(op::pow, CPU, pow_out_cpu);
FB_REGISTER_OUT_KERNEL(op::maximum, CPU, maximum_out_cpu);
FB_REGISTER_OUT_KERNEL(op::minimum, CPU, minimum_out_cpu);

}  // namespace
}  // namespace flambeau
