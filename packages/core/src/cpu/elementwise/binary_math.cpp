// CPU kernels: the binary math of FB_BINARY_MATH (atan2, copysign, logaddexp,
// hypot, nextafter, fmod, remainder, floor_divide), div with rounding_mode,
// and clamp with number bounds. Broadcasting and promotion: Note [TensorIterator].
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string_view>
#include <type_traits>

#include "elementwise.h"
#include "flambeau/elementwise_math.h"
#include "flambeau/meta.h"
#include "flambeau/ops.h"
#include "flambeau/type_dispatch.h"

namespace flambeau {
namespace {
using namespace cpu;

/// Integer division by zero is an error (as PyTorch's ZeroDivisionError), checked before the loop.
void check_nonzero_divisor(const char* op, const Tensor& b, ScalarType t) {
  if (!is_integral(t, /*include_bool=*/false) || b.numel() == 0) return;
  const Tensor zero = op::eq(b, scalar_to_tensor(Scalar(int64_t{0})));
  FB_CHECK_VALUE(!*flambeau::any(zero).data<bool>(), "[", op,
                 "] ZeroDivisionError: integer division by zero (a ", dtype_name(b.dtype()),
                 " divisor of shape ", shape_str(b.sizes()), " holds a 0)");
}

// The binary math of FB_BINARY_MATH (Note [Elementwise math list]): the
// dtypes allowed follow the entry's math::Kind. Note [Structured kernels]: out
// has the meta step's dtype (float for FloatValued, else the promoted one), or
// self's in place, and the loops compute in it.
template <math::Kind K, class F>
void binary_math_out(const char* op, const Tensor& out, const Tensor& a, const Tensor& b, F f) {
  const ScalarType t = out.dtype();
  // float16/bfloat16 compute in float32 and round once, as PyTorch's opmath; not nextafter, whose step
  // is the 16-bit type's own (the table's dtypes: leave it float32/float64).
  if ((t == ScalarType::Float16 || t == ScalarType::BFloat16) && std::string_view(op) != "nextafter") {
    const Tensor wide = op::empty(out.sizes(), ScalarType::Float32, out.device());
    binary_math_out<K>(op, wide, op::cast(a, ScalarType::Float32), op::cast(b, ScalarType::Float32), f);
    Tensor dst = out;
    op::copy_(dst, wide);
    return;
  }
  if constexpr (K == math::Kind::FloatValued) {
    // xlogy and xlog1py run the vector table's loops for float32/float64 (Note [Vectorised special
    // functions] in vec_special.inc) in place of the list's expression
    const std::string_view name(op);
    if ((name == "xlogy" || name == "special_xlog1py") && (t == ScalarType::Float32 || t == ScalarType::Float64)) {
      run_loop(TensorIterator::into(op, out, a, b, t),
               pick_loop(op, t, name == "xlogy" ? kVecXlogy : kVecXlog1py, kNoIntLoops), 0, kGrainSize);
      return;
    }
    binary_typed_into<kFloats>(op, out, a, b, t, f);
  } else if constexpr (K == math::Kind::FloatOnly) {
    binary_typed_into<kFloats>(op, out, a, b, t, f);
  } else {
    check_nonzero_divisor(op, b, t);
    binary_typed_into<kFloats | kInts>(op, out, a, b, t, f);
  }
}

#define FB_BINARY_MATH_KERNEL(name, kind, expr)                                                         \
  FB_REGISTER_OUT_KERNEL(                                                                               \
      op::name, CPU, +[](const Tensor& out, const Tensor& x, const Tensor& y) {                         \
        binary_math_out<math::Kind::kind>(#name, out, x, y, []<class T>(T a, T b) { return expr; }); \
      });
FB_BINARY_MATH(FB_BINARY_MATH_KERNEL)
#undef FB_BINARY_MATH_KERNEL

// div with rounding_mode: None is true division (div's out kernel), 'floor' is floor_divide; out has
// the meta step's dtype (div_mode: float for None, else promoted), or self's in place.
void div_mode_out_cpu(const Tensor& out, const Tensor& a, const Tensor& b, std::optional<std::string_view> mode) {
  if (!mode) return op::div.run_out(out, a, b);
  if (*mode == "floor")
    return binary_math_out<math::Kind::Division>(
        "div", out, a, b, []<class T>(T x, T y) { return math::floor_divide_of(x, y); });
  // else 'trunc' (meta::check_rounding_mode, the op's check step)
  binary_math_out<math::Kind::Division>("div", out, a, b,
                                        []<class T>(T x, T y) { return math::trunc_divide_of(x, y); });
}

FB_REGISTER_OUT_KERNEL(op::div_mode, CPU, div_mode_out_cpu);

// ---- clamp with number bounds ----

// The result dtype promotes self with the bounds as Python numbers (PyTorch:
// an integer tensor clamped to 0.5 gives float32); NaN in input or a bound gives NaN, and
// where min > max every element becomes max. Note [Structured kernels]: out has that dtype (or is self,
// in place), and the loop computes in it.
void clamp_out_cpu(const Tensor& out, const Tensor& self, const std::optional<Scalar>& min,
                   const std::optional<Scalar>& max) {
  // A bound is given: the meta step's check_clamp_bounds (Note [Meta step]).
  const ScalarType t = out.dtype();
  TensorIterator it = TensorIterator::into("clamp", out, self, t);
  visit_dtypes<kDtReal>(t, "clamp", [&](auto tag) {
    using T = typename decltype(tag)::type;
    // An absent bound is the dtype's end (infinity for floats, so inf stays inf). float16/bfloat16
    // compare in float with the bounds rounded to the dtype, as PyTorch's kernel: rounding is
    // monotonic, so the result is the float32 clamp's, exactly.
    const auto end = [](bool upper) {
      if constexpr (is_half_v<T>)
        return T(upper ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity());
      else if constexpr (std::is_floating_point_v<T>)
        return upper ? std::numeric_limits<T>::infinity() : -std::numeric_limits<T>::infinity();
      else
        return upper ? std::numeric_limits<T>::max() : std::numeric_limits<T>::lowest();
    };
    const T lo = min ? min->to<T>() : end(false);
    const T hi = max ? max->to<T>() : end(true);
    it.for_each(
        [&](char** d, const int64_t* s, int64_t n) {
          // NaN in x or in a bound gives NaN (the comparisons with NaN are false).
          base::unary_loop<T, T>(d, s, n, [lo, hi](T x) {
            const T c = (x < lo || lo != lo) ? lo : x;
            return (c > hi || hi != hi) ? hi : c;
          });
        },
        kMemoryBoundGrain);
  });
}

FB_REGISTER_OUT_KERNEL(op::clamp, CPU, clamp_out_cpu);

}  // namespace
}  // namespace flambeau
