// CPU kernels: the float-valued unary math of FB_FLOAT_UNARY_MATH (sin ...
// reciprocal; integer and bool inputs compute in float32), the rounding and
// sign ops of FB_FLOAT_ROUNDING (integer inputs keep their dtype), the float
// checks isnan/isinf/isfinite, and nan_to_num.
#include <cmath>
#include <limits>

#include "elementwise.h"
#include "flambeau/ops.h"
#include "flambeau/type_dispatch.h"

namespace flambeau {
namespace {
using namespace cpu;

// Note [Structured kernels]: out has the dtype of the `float` rule (integer and bool inputs give
// float32), which the loop computes in.
void unary_float_out(const char* op, const Tensor& out, const Tensor& a, VecOp vop) {
  const ScalarType t = out.dtype();
  const Loop1D loop = pick_loop(op, t, vop, kNoIntLoops);
  run_loop(TensorIterator::into(op, out, a, t), loop, 0, kGrainSize);
}

#define FB_FLOAT_UNARY_KERNEL(name, expr)                         \
  FB_REGISTER_OUT_KERNEL(                                         \
      op::name, CPU, +[](const Tensor& out, const Tensor& a) { unary_float_out(#name, out, a, kVec_##name); });
FB_FLOAT_UNARY_MATH(FB_FLOAT_UNARY_KERNEL)
#undef FB_FLOAT_UNARY_KERNEL

// ---- rounding and sign: integer tensors keep their dtype ----

template <class T>
void copy_loop(char** d, const int64_t* s, int64_t n, double) {
  base::unary_loop<T, T>(d, s, n, [](T a) { return a; });
}
template <class T>
void sign_int_loop(char** d, const int64_t* s, int64_t n, double) {
  if constexpr (std::is_unsigned_v<T> || std::is_same_v<T, bool>)
    base::unary_loop<T, T>(d, s, n, [](T a) { return static_cast<T>(a != 0); });
  else
    base::unary_loop<T, T>(d, s, n, [](T a) { return static_cast<T>((a > 0) - (a < 0)); });
}

Tensor unary_same(const char* op, const Tensor& a, VecOp vop, const IntLoops& ints) {
  const ScalarType t = a.dtype();
  const Loop1D loop = pick_loop(op, t, vop, ints);
  TensorIterator it = TensorIterator::unary(op, a, t, t);
  run_loop(it, loop, 0);
  return it.output();
}

constexpr IntLoops kCopyInts = FB_INT_LOOPS_NO_BOOL(copy_loop);

Tensor floor_cpu(const Tensor& a) { return unary_same("floor", a, kVec_floor, kCopyInts); }
Tensor ceil_cpu(const Tensor& a) { return unary_same("ceil", a, kVec_ceil, kCopyInts); }
Tensor trunc_cpu(const Tensor& a) { return unary_same("trunc", a, kVec_trunc, kCopyInts); }
Tensor frac_cpu(const Tensor& a) { return unary_same("frac", a, kVec_frac, kNoIntLoops); }
// Real only: the meta step's check_real raised for complex (TypeError; NotImplementedError in PyTorch).
Tensor sign_cpu(const Tensor& a) {
  return unary_same("sign", a, kVec_sign, FB_INT_LOOPS(sign_int_loop));
}

// round(x, decimals) as PyTorch: nearbyint(x * 10^d) / 10^d (d > 0), or
// nearbyint(x / 10^-d) * 10^-d (d < 0), half to even.
template <class T>
void round_decimals_loop(char** d, const int64_t* s, int64_t n, double decimals) {
  const bool neg = decimals < 0;
  const T ten_pow = static_cast<T>(std::pow(10.0, neg ? -decimals : decimals));
  if (neg)
    base::unary_loop<T, T>(d, s, n, [ten_pow](T a) { return std::nearbyint(a / ten_pow) * ten_pow; });
  else
    base::unary_loop<T, T>(d, s, n, [ten_pow](T a) { return std::nearbyint(a * ten_pow) / ten_pow; });
}

Tensor round_cpu(const Tensor& a, int64_t decimals) {
  if (decimals == 0) return unary_same("round", a, kVec_round, kCopyInts);
  const ScalarType t = a.dtype();  // floating (meta::check_round_decimals)
  // float16/bfloat16 round in float32, as PyTorch's opmath; the loops below are float32 and float64.
  if (t == ScalarType::Float16 || t == ScalarType::BFloat16)
    return op::cast(round_cpu(op::cast(a, ScalarType::Float32), decimals), t);
  TensorIterator it = TensorIterator::unary("round", a, t, t);
  const Loop1D loop = t == ScalarType::Float32 ? &round_decimals_loop<float> : &round_decimals_loop<double>;
  run_loop(it, loop, static_cast<double>(decimals));
  return it.output();
}

FB_REGISTER_KERNEL(op::floor, CPU, floor_cpu);
FB_REGISTER_KERNEL(op::ceil, CPU, ceil_cpu);
FB_REGISTER_KERNEL(op::trunc, CPU, trunc_cpu);
FB_REGISTER_KERNEL(op::round, CPU, round_cpu);
FB_REGISTER_KERNEL(op::frac, CPU, frac_cpu);
FB_REGISTER_KERNEL(op::sign, CPU, sign_cpu);

// ---- isnan, isinf, isfinite: bool results, constant for integer tensors ----

template <class Pred>
Tensor float_check(const char* op, const Tensor& a, bool integer_value, Pred pred) {
  const ScalarType t = a.dtype();
  if (!is_floating(t)) return full(a.sizes(), integer_value, ScalarType::Bool, a.device());
  TensorIterator it = TensorIterator::unary(op, a, t, ScalarType::Bool);
  auto run = [&](auto tag) {
    using T = typename decltype(tag)::type;
    it.for_each(
        [&](char** d, const int64_t* s, int64_t n) {
          base::unary_loop<bool, T>(d, s, n, [&](T x) {
            if constexpr (is_half_v<T>)
              return pred(static_cast<float>(x));  // exact: every float16/bfloat16 value is a float32
            else
              return pred(x);
          });
        },
        kMemoryBoundGrain);
  };
  visit_dtypes<kDtFloats | kDtHalf>(t, op, run);
  return it.output();
}

Tensor isnan_cpu(const Tensor& a) {
  return float_check("isnan", a, false, [](auto x) { return x != x; });
}
Tensor isinf_cpu(const Tensor& a) {
  return float_check("isinf", a, false, [](auto x) { return std::isinf(x); });
}
Tensor isfinite_cpu(const Tensor& a) {
  return float_check("isfinite", a, true, [](auto x) { return x - x == 0; });
}

Tensor nan_to_num_cpu(const Tensor& a, std::optional<double> nan, std::optional<double> posinf,
                      std::optional<double> neginf) {
  const ScalarType t = a.dtype();
  if (!is_floating(t)) return op::clone(a, MemoryFormat::Preserve);
  TensorIterator it = TensorIterator::unary("nan_to_num", a, t, t);
  auto run = [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T nv = static_cast<T>(nan.value_or(0.0));
    const T pv = posinf ? static_cast<T>(*posinf) : std::numeric_limits<T>::max();
    const T mv = neginf ? static_cast<T>(*neginf) : std::numeric_limits<T>::lowest();
    constexpr T inf = std::numeric_limits<T>::infinity();
    it.for_each(
        [=](char** d, const int64_t* s, int64_t n) {
          base::unary_loop<T, T>(d, s, n, [=](T x) {
            return x != x ? nv : x == inf ? pv : x == -inf ? mv : x;
          });
        },
        kMemoryBoundGrain);
  };
  if (t == ScalarType::Float32)
    run(type_tag<float>{});
  else if (t == ScalarType::Float64)
    run(type_tag<double>{});
  else
    unsupported_dtype("nan_to_num", t);
  return it.output();
}

FB_REGISTER_KERNEL(op::isnan, CPU, isnan_cpu);
FB_REGISTER_KERNEL(op::isinf, CPU, isinf_cpu);
FB_REGISTER_KERNEL(op::isfinite, CPU, isfinite_cpu);
FB_REGISTER_KERNEL(op::nan_to_num, CPU, nan_to_num_cpu);

}  // namespace
}  // namespace flambeau
