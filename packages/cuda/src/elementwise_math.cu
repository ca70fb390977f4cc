// The elementwise math kernels (elementwise_math.h): one kernel per compute
// type and layout (contiguous or OffsetCalculator-strided), the op a run-time
// switch (uniform across a warp), so the table below costs four kernel
// instantiations in all, not one per op. The ops of core's shared list
// (Note [Elementwise math list] in flambeau/elementwise_math.h) are its
// expressions, the very lines the CPU loops expand; the others are the CPU
// kernels' formulas (vec_act_kernels.inc of flambeau-core), written with
// CUDA's libdevice functions.
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "elementwise_math.h"
#include "launch.cuh"

namespace flambeau::cuda {
namespace {

// f(float) -> name##f, f(double) -> name: the libdevice function of each precision.
#define FBC_MATH1(name)                                            \
  __device__ inline float m_##name(float x) { return name##f(x); } \
  __device__ inline double m_##name(double x) { return ::name(x); }
FBC_MATH1(expm1)
FBC_MATH1(log1p)
FBC_MATH1(erfc)
FBC_MATH1(exp)
FBC_MATH1(tanh)
FBC_MATH1(nearbyint)
#undef FBC_MATH1
__device__ inline float m_copysign(float x, float y) { return copysignf(x, y); }
__device__ inline double m_copysign(double x, double y) { return ::copysign(x, y); }

// IEEE predicates from arithmetic alone (no fast-math here): x - x is 0 for a
// finite x and NaN for an infinity or a NaN.
template <class T>
__device__ inline bool is_finite_(T x) {
  return x - x == x - x;
}
template <class T>
__device__ inline bool is_inf_(T x) {
  return x == x && !is_finite_(x);
}
template <class T>
__device__ inline bool sign_bit_(T x) {  // true for -0.0 and a NaN with the sign bit set
  return m_copysign(T(1), x) < T(0);
}

constexpr double kSqrtHalf = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;
constexpr double kSqrt2OverPi = 0.79788456080286535588;
constexpr double kGeluC = 0.044715;

template <class T>
__device__ T float_unary(int op, T a, T p0, T p1, T p2) {
  const T x = a;
  switch (op) {
#define FBC_LIST_CASE(name, expr) \
  case kM_##name:                 \
    return static_cast<T>(expr);
    FB_FLOAT_UNARY_MATH(FBC_LIST_CASE)
    FB_FLOAT_ROUNDING(FBC_LIST_CASE)
#undef FBC_LIST_CASE
    case kMRoundDecimals:  // half to even; p0 = decimals, p1 = 10^|decimals|
      return p0 < T(0) ? m_nearbyint(a / p1) * p1 : m_nearbyint(a * p1) / p1;
    case kMSquare:
      return x * x;
    case kMGelu: {
      return x * (T(0.5) * m_erfc(-x * T(kSqrtHalf)));
    }
    case kMGeluTanh: {
      const T inner = T(kSqrt2OverPi) * (x + T(kGeluC) * x * x * x);
      return T(0.5) * x * (T(1) + m_tanh(inner));
    }
    case kMSilu:
      return x / (T(1) + m_exp(-x));
    case kMMish: {
      const T u = m_exp(x < T(20) ? x : T(20));
      const T m = u * (u + T(2));
      return x * (m / (m + T(2)));
    }
    case kMLeakyRelu:
      return x > T(0) ? x : x * p0;
    case kMElu:  // p0 alpha, p1 scale, p2 input_scale
      return x > T(0) ? x * p1 : m_expm1(x * p2) * (p0 * p1);
    case kMSoftplus: {  // p0 beta, p1 threshold
      const T bx = x * p0;
      return bx > p1 ? x : m_log1p(m_exp(bx)) / p0;
    }
    case kMHardtanh:  // p0 min_val, p1 max_val
      return x < p0 ? p0 : (x > p1 ? p1 : x);
    case kMHardswish: {
      T r = x + T(3);
      r = r < T(0) ? T(0) : (r > T(6) ? T(6) : r);
      return x * r / T(6);
    }
    case kMHardsigmoid: {
      T r = x + T(3);
      r = r < T(0) ? T(0) : (r > T(6) ? T(6) : r);
      return r / T(6);
    }
    case kMLogSigmoid: {
      const T e = m_exp(x < T(0) ? x : -x);
      return (x < T(0) ? x : T(0)) - m_log1p(e);
    }
    case kMSoftsign:
      return x / (T(1) + (x < T(0) ? -x : x));
    case kMNanToNum:
      return x != x ? p0 : (is_finite_(x) ? x : (x > T(0) ? p1 : p2));
    // predicates (written to a bool output as r != 0)
    case kMIsnan:
      return static_cast<T>(x != x);
    case kMIsinf:
      return static_cast<T>(is_inf_(x));
    case kMIsfinite:
      return static_cast<T>(is_finite_(x));
    case kMSignbit:
      return static_cast<T>(sign_bit_(x));
    case kMLogicalNot:
      return static_cast<T>(x == T(0));
    default:
      return x;
  }
}

template <class T>
__device__ T int_unary(int op, T x) {
  switch (op) {
    case kM_sign:
      return static_cast<T>((x > T(0)) - (x < T(0)));
    case kMSquare:
      return static_cast<T>(static_cast<uint64_t>(x) * static_cast<uint64_t>(x));  // wraps as PyTorch
    case kMIsnan:
    case kMIsinf:
      return T(0);
    case kMIsfinite:
      return T(1);
    case kMSignbit:
      return static_cast<T>(x < T(0));
    case kMLogicalNot:
      return static_cast<T>(x == T(0));
    case kMBitwiseNot:
      return ~x;
    default:  // floor ceil trunc round (decimals 0): integers are their own value
      return x;
  }
}

template <class T>
__device__ T float_binary(int op, T a, T b, T p0, T p1, T p2) {
  switch (op) {
#define FBC_LIST_CASE(name, kind, expr) \
  case kM_##name:                       \
    return static_cast<T>(expr);
    FB_BINARY_MATH(FBC_LIST_CASE)
#undef FBC_LIST_CASE
    case kMTruncDivide:
      return math::trunc_divide_of(a, b);
    case kMLogicalAnd:
      return static_cast<T>(a != T(0) && b != T(0));
    case kMLogicalOr:
      return static_cast<T>(a != T(0) || b != T(0));
    case kMLogicalXor:
      return static_cast<T>((a != T(0)) != (b != T(0)));
    default:
      break;
  }
  // activation backward: a = grad_output, b = self
  const T g = a, x = b;
  switch (op) {
    case kMGeluBackward: {
      const T e = m_exp(-x * x * T(0.5));
      return g * (T(0.5) * m_erfc(-x * T(kSqrtHalf)) + x * (e * T(kInvSqrt2Pi)));
    }
    case kMGeluTanhBackward: {
      const T x2 = x * x;
      const T inner = T(kSqrt2OverPi) * (x + T(kGeluC) * x2 * x);
      const T t = m_tanh(inner);
      const T dinner = T(kSqrt2OverPi) * (T(1) + T(3 * kGeluC) * x2);
      return g * (T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * dinner);
    }
    case kMSiluBackward: {
      const T sg = T(1) / (T(1) + m_exp(-x));
      return g * sg * (T(1) + x * (T(1) - sg));
    }
    case kMMishBackward: {
      const T u = m_exp(x < T(20) ? x : T(20));
      const T m = u * (u + T(2));
      const T tsp = m / (m + T(2));
      const T sg = u / (T(1) + u);
      return g * (tsp + x * sg * (T(1) - tsp * tsp));
    }
    case kMLeakyReluBackward:
      return x > T(0) ? g : g * p0;
    case kMEluBackward:
      return x > T(0) ? g * p1 : g * (p0 * p1 * p2) * m_exp(x * p2);
    case kMSoftplusBackward: {
      const T bx = x * p0;
      const T z = m_exp(bx < p1 ? bx : p1);
      return bx > p1 ? g : g * z / (z + T(1));
    }
    case kMHardtanhBackward:
      return (x <= p0 || x >= p1) ? T(0) : g;
    case kMHardswishBackward:
      return x < T(-3) ? T(0) : (x <= T(3) ? g * (x / T(3) + T(0.5)) : g);
    case kMHardsigmoidBackward:
      return (x > T(-3) && x < T(3)) ? g / T(6) : T(0);
    case kMLogSigmoidBackward: {
      const T e = m_exp(x < T(0) ? x : -x);
      return x < T(0) ? g / (T(1) + e) : g * e / (T(1) + e);
    }
    default: {  // kMSoftsignBackward
      const T den = T(1) + (x < T(0) ? -x : x);
      return g / (den * den);
    }
  }
}

template <class T>
__device__ T int_binary(int op, T a, T b) {
  switch (op) {
// the Division entries of the shared list (the host checked for zero divisors)
#define FBC_LIST_CASE(name, kind, expr)                           \
  case kM_##name:                                                 \
    if constexpr (math::Kind::kind == math::Kind::Division) {     \
      return static_cast<T>(expr);                                \
    } else {                                                      \
      return T(0);                                                \
    }
    FB_BINARY_MATH(FBC_LIST_CASE)
#undef FBC_LIST_CASE
    case kMTruncDivide:
      return math::trunc_divide_of(a, b);
    case kMLogicalAnd:
      return static_cast<T>(a != 0 && b != 0);
    case kMLogicalOr:
      return static_cast<T>(a != 0 || b != 0);
    case kMLogicalXor:
      return static_cast<T>((a != 0) != (b != 0));
    case kMBitwiseAnd:
      return a & b;
    case kMBitwiseOr:
      return a | b;
    case kMBitwiseXor:
      return a ^ b;
    case kMBitwiseLeftShift:  // as PyTorch: a shift by >= 64 or < 0 gives 0
      return (b < 0 || b >= 64) ? T(0) : static_cast<T>(static_cast<uint64_t>(a) << b);
    case kMBitwiseRightShift:  // arithmetic; >= 64 or < 0: the sign fill
      return (b < 0 || b >= 64) ? (a < 0 ? T(-1) : T(0)) : static_cast<T>(a >> b);
    default:
      return T(0);
  }
}

template <class T>
__device__ T math_op(int op, T a, T b, T p0, T p1, T p2) {
  if constexpr (std::is_floating_point_v<T>) {
    return op < kMFirstBinary ? float_unary<T>(op, a, p0, p1, p2) : float_binary<T>(op, a, b, p0, p1, p2);
  } else {
    return op < kMFirstBinary ? int_unary<T>(op, a) : int_binary<T>(op, a, b);
  }
}

template <class T, bool Contiguous>
__global__ void math_kernel(int op, EwArgs args, bool out_bool, int64_t n) {
  const T* in0 = static_cast<const T*>(args.in[0]);
  const T* in1 = static_cast<const T*>(args.in[1]);
  const T s0 = static_cast<T>(args.scalar[0]), s1 = static_cast<T>(args.scalar[1]);
  const T p0 = static_cast<T>(args.alpha), p1 = static_cast<T>(args.extra), p2 = static_cast<T>(args.extra2);
  const bool unary = op < kMFirstBinary;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    int64_t off[3];
    if constexpr (Contiguous) {
      off[0] = off[1] = off[2] = i;
    } else {
      args.calc.get(i, off);
    }
    const T a = in0 ? in0[off[1]] : s0;
    const T b = unary ? T(0) : (in1 ? in1[off[2]] : s1);
    const T r = math_op<T>(op, a, b, p0, p1, p2);
    if (out_bool)
      static_cast<bool*>(args.out)[off[0]] = r != T(0);
    else
      static_cast<T*>(args.out)[off[0]] = r;
  }
}

template <class T>
int launch_as(int op, const EwArgs& args, bool out_bool, int64_t n, cudaStream_t s) {
  if (args.contiguous)
    math_kernel<T, true><<<grid_for(n), kThreads, 0, s>>>(op, args, out_bool, n);
  else
    math_kernel<T, false><<<grid_for(n), kThreads, 0, s>>>(op, args, out_bool, n);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace

int launch_math(int op, int compute, const EwArgs& args, bool out_bool, int64_t n, void* stream) {
  if (n == 0) return 0;
  auto s = static_cast<cudaStream_t>(stream);
  switch (compute) {
    case 0:
      return launch_as<float>(op, args, out_bool, n, s);
    case 1:
      return launch_as<double>(op, args, out_bool, n, s);
    default:
      return launch_as<int64_t>(op, args, out_bool, n, s);
  }
}

}  // namespace flambeau::cuda
