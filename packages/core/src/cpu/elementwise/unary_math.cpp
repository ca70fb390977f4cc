// CPU kernels: the float-valued unary math of FB_FLOAT_UNARY_MATH (sin ...
// reciprocal; integer and bool inputs compute in float32), the rounding and
// sign ops of FB_FLOAT_ROUNDING (integer inputs keep their dtype), the float
// checks isnan/isinf/isfinite, and nan_to_num.
#include <cmath>
#include <limits>
#include <tuple>

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

// Note [Structured kernels]: out has a's dtype (the `same` rule), or self's in place.
void unary_same_out(const char* op, const Tensor& out, const Tensor& a, VecOp vop, const IntLoops& ints) {
  const ScalarType t = out.dtype();
  const Loop1D loop = pick_loop(op, t, vop, ints);
  run_loop(TensorIterator::into(op, out, a, t), loop, 0);
}

constexpr IntLoops kCopyInts = FB_INT_LOOPS_NO_BOOL(copy_loop);

void floor_out_cpu(const Tensor& out, const Tensor& a) { unary_same_out("floor", out, a, kVec_floor, kCopyInts); }
void ceil_out_cpu(const Tensor& out, const Tensor& a) { unary_same_out("ceil", out, a, kVec_ceil, kCopyInts); }
void trunc_out_cpu(const Tensor& out, const Tensor& a) { unary_same_out("trunc", out, a, kVec_trunc, kCopyInts); }
void frac_out_cpu(const Tensor& out, const Tensor& a) { unary_same_out("frac", out, a, kVec_frac, kNoIntLoops); }
// Real only: the meta step's check_real raised for complex (TypeError; NotImplementedError in PyTorch).
void sign_out_cpu(const Tensor& out, const Tensor& a) {
  unary_same_out("sign", out, a, kVec_sign, FB_INT_LOOPS(sign_int_loop));
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

void round_out_cpu(const Tensor& out, const Tensor& a, int64_t decimals) {
  if (decimals == 0) return unary_same_out("round", out, a, kVec_round, kCopyInts);
  const ScalarType t = out.dtype();  // a's, floating (meta::check_round_decimals)
  // float16/bfloat16 round in float32, as PyTorch's opmath; the loops below are float32 and float64.
  if (t == ScalarType::Float16 || t == ScalarType::BFloat16) {
    const Tensor wide = op::cast(a, ScalarType::Float32);
    round_out_cpu(wide, wide, decimals);
    Tensor dst = out;
    op::copy_(dst, wide);
    return;
  }
  const Loop1D loop = t == ScalarType::Float32 ? &round_decimals_loop<float> : &round_decimals_loop<double>;
  run_loop(TensorIterator::into("round", out, a, t), loop, static_cast<double>(decimals));
}

FB_REGISTER_OUT_KERNEL(op::floor, CPU, floor_out_cpu);
FB_REGISTER_OUT_KERNEL(op::ceil, CPU, ceil_out_cpu);
FB_REGISTER_OUT_KERNEL(op::trunc, CPU, trunc_out_cpu);
FB_REGISTER_OUT_KERNEL(op::round, CPU, round_out_cpu);
FB_REGISTER_OUT_KERNEL(op::frac, CPU, frac_out_cpu);
FB_REGISTER_OUT_KERNEL(op::sign, CPU, sign_out_cpu);

// ---- isnan, isinf, isfinite: bool results, constant for integer tensors ----

// Note [Structured kernels]: out is bool (the `bool` rule).
template <class Pred>
void float_check(const char* op, const Tensor& out, const Tensor& a, bool integer_value, Pred pred) {
  const ScalarType t = a.dtype();
  if (!is_floating(t)) {
    Tensor dst = out;
    op::fill_(dst, Scalar(integer_value));
    return;
  }
  TensorIterator it = TensorIterator::into(op, out, a, t);
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
}

void isnan_out_cpu(const Tensor& out, const Tensor& a) {
  float_check("isnan", out, a, false, [](auto x) { return x != x; });
}
void isinf_out_cpu(const Tensor& out, const Tensor& a) {
  float_check("isinf", out, a, false, [](auto x) { return std::isinf(x); });
}
void isfinite_out_cpu(const Tensor& out, const Tensor& a) {
  float_check("isfinite", out, a, true, [](auto x) { return x - x == 0; });
}

// Note [Structured kernels]: out has a's dtype (or is a itself, in place); integers are copied.
void nan_to_num_out_cpu(const Tensor& out, const Tensor& a, std::optional<double> nan, std::optional<double> posinf,
                        std::optional<double> neginf) {
  const ScalarType t = out.dtype();
  if (!is_floating(t)) return identity_into(out, a);
  TensorIterator it = TensorIterator::into("nan_to_num", out, a, t);
  auto run = [&](auto tag) {
    using T = typename decltype(tag)::type;
    // The dtype's largest and lowest finite values, and infinity; float16/bfloat16 compare through float.
    const auto [big, low, inf] = [] {
      if constexpr (std::is_same_v<T, Half>)
        return std::tuple{T::from_bits(0x7BFF), T::from_bits(0xFBFF), T(std::numeric_limits<float>::infinity())};
      else if constexpr (std::is_same_v<T, BFloat16>)
        return std::tuple{T::from_bits(0x7F7F), T::from_bits(0xFF7F), T(std::numeric_limits<float>::infinity())};
      else
        return std::tuple{std::numeric_limits<T>::max(), std::numeric_limits<T>::lowest(),
                          std::numeric_limits<T>::infinity()};
    }();
    const T nv = static_cast<T>(nan.value_or(0.0));
    const T pv = posinf ? static_cast<T>(*posinf) : big;
    const T mv = neginf ? static_cast<T>(*neginf) : low;
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
  else if (t == ScalarType::Float16)
    run(type_tag<Half>{});
  else if (t == ScalarType::BFloat16)
    run(type_tag<BFloat16>{});
  else
    unsupported_dtype("nan_to_num", t);
}

FB_REGISTER_OUT_KERNEL(op::isnan, CPU, isnan_out_cpu);
FB_REGISTER_OUT_KERNEL(op::isinf, CPU, isinf_out_cpu);
FB_REGISTER_OUT_KERNEL(op::isfinite, CPU, isfinite_out_cpu);
FB_REGISTER_OUT_KERNEL(op::nan_to_num, CPU, nan_to_num_out_cpu);

}  // namespace
}  // namespace flambeau
