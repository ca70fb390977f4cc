// CPU kernels: atan2, hypot, fmod, remainder, floor_divide, and clamp with
// number bounds. Broadcasting and promotion: Note [TensorIterator].
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string_view>
#include <type_traits>

#include "elementwise.h"
#include "flambeau/meta.h"
#include "flambeau/ops.h"
#include "flambeau/type_dispatch.h"
#include "wrapping.h"

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

template <class T>
T fmod_of(T x, T y) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::fmod(x, y);
  } else if constexpr (std::is_signed_v<T>) {
    return y == 0 || y == -1 ? T(0) : static_cast<T>(x % y);  // y == -1: INT_MIN % -1 overflows in C
  } else {
    return y == 0 ? T(0) : static_cast<T>(x % y);
  }
}

template <class T>
T remainder_of(T x, T y) {
  T m = fmod_of(x, y);
  if constexpr (std::is_signed_v<T> || std::is_floating_point_v<T>)
    if (m != 0 && ((y < 0) != (m < 0))) m = static_cast<T>(m + y);
  return m;
}

// PyTorch's div_floor: exact for floats (fmod first, then the quotient).
template <class T>
T floor_divide_of(T x, T y) {
  if constexpr (std::is_floating_point_v<T>) {
    if (y == 0) return x / y;
    const T mod = std::fmod(x, y);
    T div = (x - mod) / y;
    if (mod != 0 && ((y < 0) != (mod < 0))) div -= T(1);
    if (div == 0) return std::copysign(T(0), x / y);
    T floordiv = std::floor(div);
    if (div - floordiv > T(0.5)) floordiv += T(1);
    return floordiv;
  } else if constexpr (std::is_signed_v<T>) {
    if (y == 0) return T(0);
    if (y == -1) return wrapping_neg(x);  // wraps as PyTorch (Note [Integer wrap-around])
    const T q = static_cast<T>(x / y);
    return (x % y != 0 && ((x < 0) != (y < 0))) ? static_cast<T>(q - 1) : q;
  } else {
    return y == 0 ? T(0) : static_cast<T>(x / y);
  }
}

template <class T>
T trunc_divide_of(T x, T y) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::trunc(x / y);
  } else if constexpr (std::is_signed_v<T>) {
    if (y == 0) return T(0);
    if (y == -1) return wrapping_neg(x);  // wraps as PyTorch (Note [Integer wrap-around])
    return static_cast<T>(x / y);
  } else {
    return y == 0 ? T(0) : static_cast<T>(x / y);
  }
}

Tensor atan2_cpu(const Tensor& a, const Tensor& b) {
  return binary_typed<kFloats>("atan2", a, b, to_float_dtype(result_type(a, b)),
                               [](auto x, auto y) { return std::atan2(x, y); });
}
Tensor hypot_cpu(const Tensor& a, const Tensor& b) {
  return binary_typed<kFloats>("hypot", a, b, result_type(a, b),
                               [](auto x, auto y) { return std::hypot(x, y); });
}
Tensor fmod_cpu(const Tensor& a, const Tensor& b) {
  const ScalarType t = result_type(a, b);
  check_nonzero_divisor("fmod", b, t);
  return binary_typed<kFloats | kInts>("fmod", a, b, t, [](auto x, auto y) { return fmod_of(x, y); });
}
Tensor remainder_cpu(const Tensor& a, const Tensor& b) {
  const ScalarType t = result_type(a, b);
  check_nonzero_divisor("remainder", b, t);
  return binary_typed<kFloats | kInts>("remainder", a, b, t,
                                       [](auto x, auto y) { return remainder_of(x, y); });
}
Tensor floor_divide_cpu(const Tensor& a, const Tensor& b) {
  const ScalarType t = result_type(a, b);
  check_nonzero_divisor("floor_divide", b, t);
  return binary_typed<kFloats | kInts>("floor_divide", a, b, t,
                                       [](auto x, auto y) { return floor_divide_of(x, y); });
}

// div with rounding_mode: None is true division (op::div), 'floor' is floor_divide.
Tensor div_mode_cpu(const Tensor& a, const Tensor& b, std::optional<std::string_view> mode) {
  if (!mode) return op::div(a, b);
  if (*mode == "floor") return floor_divide_cpu(a, b);
  FB_CHECK_VALUE(*mode == "trunc",
                 "[div] expected rounding_mode to be one of None, 'trunc', or 'floor' but found '", *mode,
                 "'");
  const ScalarType t = result_type(a, b);
  check_nonzero_divisor("div", b, t);
  return binary_typed<kFloats | kInts>("div", a, b, t, [](auto x, auto y) { return trunc_divide_of(x, y); });
}

FB_REGISTER_KERNEL(op::atan2, CPU, atan2_cpu);
FB_REGISTER_KERNEL(op::div_mode, CPU, div_mode_cpu);
FB_REGISTER_KERNEL(op::hypot, CPU, hypot_cpu);
FB_REGISTER_KERNEL(op::fmod, CPU, fmod_cpu);
FB_REGISTER_KERNEL(op::remainder, CPU, remainder_cpu);
FB_REGISTER_KERNEL(op::floor_divide, CPU, floor_divide_cpu);

// ---- clamp with number bounds ----

// The result dtype promotes self with the bounds as Python numbers (PyTorch:
// an integer tensor clamped to 0.5 gives float32); NaN in input or a bound gives NaN, and
// where min > max every element becomes max.
Tensor clamp_cpu(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  // A bound is given: the meta step's check_clamp_bounds (Note [Meta step]).
  const ScalarType t = meta::clamp_dtype(self, min, max);
  TensorIterator it = TensorIterator::unary("clamp", self, t, t);
  visit_dtype(t, "clamp", [&](auto tag) {
    using T = typename decltype(tag)::type;
    // An absent bound is the dtype's end (infinity for floats, so inf stays inf).
    constexpr bool fp = std::is_floating_point_v<T>;
    const T lo = min  ? min->to<T>()
                 : fp ? -std::numeric_limits<T>::infinity()
                      : std::numeric_limits<T>::lowest();
    const T hi = max ? max->to<T>() : fp ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
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
  return it.output();
}

FB_REGISTER_KERNEL(op::clamp, CPU, clamp_cpu);

}  // namespace
}  // namespace flambeau
