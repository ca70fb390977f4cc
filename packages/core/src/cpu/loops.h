#pragma once
// Inner loops of the elementwise and reduction kernels, written once as
// templates and compiled several times: by the plain kernel files, and by
// vec_avx2.cpp / vec_avx512.cpp with wider instruction sets (Note [CPU
// capabilities] in vec_table.h). Everything here lives in a namespace named
// after the capability being compiled, so the AVX copies never merge with the
// baseline ones at link time (which would run AVX code on a CPU without it).
// Only plain arithmetic and C math builtins are used in the loop bodies.
#include <cmath>
#include <cstdint>
#include <type_traits>

#ifndef FB_CPU_CAPABILITY
#define FB_CPU_CAPABILITY base
#endif

namespace flambeau::cpu::FB_CPU_CAPABILITY {

// ---- 1-D loops over the iterator's pointers (Note [TensorIterator]) ----

template <class R, class T, class F>
inline void unary_loop(char** d, const int64_t* s, int64_t n, const F& f) {
  R* out = reinterpret_cast<R*>(d[0]);
  const T* a = reinterpret_cast<const T*>(d[1]);
  if (s[0] == sizeof(R) && s[1] == sizeof(T)) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) out[i] = f(a[i]);
  } else if (s[0] == sizeof(R) && s[1] == 0) {
    const R v = f(*a);
    for (int64_t i = 0; i < n; ++i) out[i] = v;
  } else {
    for (int64_t i = 0; i < n; ++i)
      *reinterpret_cast<R*>(d[0] + i * s[0]) = f(*reinterpret_cast<const T*>(d[1] + i * s[1]));
  }
}

template <class R, class T, class F>
inline void binary_loop(char** d, const int64_t* s, int64_t n, const F& f) {
  R* out = reinterpret_cast<R*>(d[0]);
  const T* a = reinterpret_cast<const T*>(d[1]);
  const T* b = reinterpret_cast<const T*>(d[2]);
  if (s[0] == sizeof(R) && s[1] == sizeof(T) && s[2] == sizeof(T)) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], b[i]);
  } else if (s[0] == sizeof(R) && s[1] == sizeof(T) && s[2] == 0) {
    const T bv = *b;
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], bv);
  } else if (s[0] == sizeof(R) && s[1] == 0 && s[2] == sizeof(T)) {
    const T av = *a;
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) out[i] = f(av, b[i]);
  } else {
    for (int64_t i = 0; i < n; ++i)
      *reinterpret_cast<R*>(d[0] + i * s[0]) =
          f(*reinterpret_cast<const T*>(d[1] + i * s[1]), *reinterpret_cast<const T*>(d[2] + i * s[2]));
  }
}

// ---- elementwise functions (T = the compute dtype) ----

template <class T> inline T max_propagate_nan(T a, T b) { return (a > b || a != a) ? a : b; }
template <class T> inline T min_propagate_nan(T a, T b) { return (a < b || a != a) ? a : b; }

template <class T> void add_loop(char** d, const int64_t* s, int64_t n, double alpha) {
  if constexpr (std::is_same_v<T, bool>) {  // bool: logical or
    binary_loop<T, T>(d, s, n, [](T a, T b) { return static_cast<T>(a || b); });
  } else if (alpha == 1) {
    binary_loop<T, T>(d, s, n, [](T a, T b) { return static_cast<T>(a + b); });
  } else {
    const T al = static_cast<T>(alpha);
    binary_loop<T, T>(d, s, n, [al](T a, T b) { return static_cast<T>(a + al * b); });
  }
}
template <class T> void sub_loop(char** d, const int64_t* s, int64_t n, double alpha) {
  if (alpha == 1) {
    binary_loop<T, T>(d, s, n, [](T a, T b) { return static_cast<T>(a - b); });
  } else {
    const T al = static_cast<T>(alpha);
    binary_loop<T, T>(d, s, n, [al](T a, T b) { return static_cast<T>(a - al * b); });
  }
}
template <class T> void mul_loop(char** d, const int64_t* s, int64_t n, double) {
  if constexpr (std::is_same_v<T, bool>)
    binary_loop<T, T>(d, s, n, [](T a, T b) { return static_cast<T>(a && b); });
  else
    binary_loop<T, T>(d, s, n, [](T a, T b) { return static_cast<T>(a * b); });
}
template <class T> void div_loop(char** d, const int64_t* s, int64_t n, double) {
  binary_loop<T, T>(d, s, n, [](T a, T b) { return a / b; });
}
template <class T> void maximum_loop(char** d, const int64_t* s, int64_t n, double) {
  binary_loop<T, T>(d, s, n, [](T a, T b) { return max_propagate_nan(a, b); });
}
template <class T> void minimum_loop(char** d, const int64_t* s, int64_t n, double) {
  binary_loop<T, T>(d, s, n, [](T a, T b) { return min_propagate_nan(a, b); });
}

template <class T> void neg_loop(char** d, const int64_t* s, int64_t n, double) {
  unary_loop<T, T>(d, s, n, [](T a) { return static_cast<T>(-a); });
}
template <class T> void abs_loop(char** d, const int64_t* s, int64_t n, double) {
  unary_loop<T, T>(d, s, n, [](T a) { return a < 0 ? static_cast<T>(-a) : a; });
}
template <class T> void relu_loop(char** d, const int64_t* s, int64_t n, double) {
  // NaN stays NaN, as in PyTorch.
  unary_loop<T, T>(d, s, n, [](T a) { return a < 0 ? T(0) : a; });
}
template <class T> void sqrt_loop(char** d, const int64_t* s, int64_t n, double) {
  unary_loop<T, T>(d, s, n, [](T a) { return std::sqrt(a); });
}
template <class T> void exp_loop(char** d, const int64_t* s, int64_t n, double) {
  unary_loop<T, T>(d, s, n, [](T a) { return std::exp(a); });
}
template <class T> void log_loop(char** d, const int64_t* s, int64_t n, double) {
  unary_loop<T, T>(d, s, n, [](T a) { return std::log(a); });
}
template <class T> void tanh_loop(char** d, const int64_t* s, int64_t n, double) {
  unary_loop<T, T>(d, s, n, [](T a) { return std::tanh(a); });
}
template <class T> void sigmoid_loop(char** d, const int64_t* s, int64_t n, double) {
  unary_loop<T, T>(d, s, n, [](T a) { return T(1) / (T(1) + std::exp(-a)); });
}

// ---- reductions ----

/// Sum of n elements `stride` bytes apart, accumulated in double: blocks
/// summed with independent SIMD lanes, blocks combined pairwise.
template <class T> double sum_strided(const char* p, int64_t n, int64_t stride) {
  constexpr int64_t kBlock = 512;
  if (n <= kBlock) {
    double acc = 0;
    if (stride == sizeof(T)) {
      const T* x = reinterpret_cast<const T*>(p);
#pragma omp simd reduction(+ : acc)
      for (int64_t i = 0; i < n; ++i) acc += static_cast<double>(x[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) acc += static_cast<double>(*reinterpret_cast<const T*>(p + i * stride));
    }
    return acc;
  }
  const int64_t half = (n / 2 + kBlock - 1) / kBlock * kBlock;
  return sum_strided<T>(p, half, stride) + sum_strided<T>(p + half * stride, n - half, stride);
}

/// acc[i] += x[i * stride] (a row of an outer reduction).
template <class T> void accumulate_row(double* acc, const char* p, int64_t n, int64_t stride) {
  if (stride == sizeof(T)) {
    const T* x = reinterpret_cast<const T*>(p);
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) acc[i] += static_cast<double>(x[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) acc[i] += static_cast<double>(*reinterpret_cast<const T*>(p + i * stride));
  }
}

}  // namespace flambeau::cpu::FB_CPU_CAPABILITY
