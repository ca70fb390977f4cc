#pragma once
// Note [Reduction kernels]
// The inner loops of the reductions and scans of reduce_extra.cpp and scan.cpp
// (min/max, amin/amax, var, prod, cumsum), compiled per instruction set like
// the elementwise loops (Note [CPU capabilities] in dispatch_stub.h):
// vec_reduce.inc is included by vec_reduce_base.cpp, vec_reduce_avx2.cpp and
// vec_reduce_avx512.cpp, which register their tables with reduce_table_stub.
// The callers do the checks, the layout (rows of n
// contiguous elements) and the threading.
#include <cstdint>

#include "cpu/dispatch/dispatch_stub.h"

namespace flambeau::cpu {

template <class T>
struct ReduceFns {
  /// The first i < n with x[i] == v (v not NaN), or with x[i] NaN if v is NaN; n if none.
  int64_t (*row_find)(const T* x, int64_t n, T v);
  /// The index of the first largest (smallest) element of x[0..n), n >= 1 (of the first NaN if any).
  int64_t (*row_argmax)(const T* x, int64_t n);
  int64_t (*row_argmin)(const T* x, int64_t n);
  /// The largest (smallest) of x[0..n), n >= 1; NaN if any element is NaN.
  T (*row_max)(const T* x, int64_t n);
  T (*row_min)(const T* x, int64_t n);
  /// mean and sum((x - mean)^2) of x[0..n), two passes in double.
  void (*row_moments)(const T* x, int64_t n, double* mean, double* m2);
  /// Sum of x[0..n): blocks of 1024 summed in 4 vectors of the element type (16 elements per lane for
  /// float32), the block sums added in double; four independent chains keep loads, not adds, the limit.
  double (*row_sum)(const T* x, int64_t n);
  /// Product of x[0..n) in double.
  double (*row_prod)(const T* x, int64_t n);
  /// Complex product of the n complex numbers (re, im pairs) at x, in double: 16 lanes
  /// (element i in lane i % 16) multiplied together in order at the end, then the tail.
  void (*row_cprod)(const T* x, int64_t n, double* re, double* im);
  /// Inclusive prefix sums of `rows` rows of n elements (row r at x + r * stride, y + r * stride),
  /// accumulated in double, eight rows at a time so the additions do not wait on each other.
  void (*cumsum_rows)(const T* x, T* y, int64_t rows, int64_t n, int64_t stride);
  /// y[i] += c for i < n.
  void (*add_const)(T* y, int64_t n, T c);
};

struct ReduceTable {
  const char* name;
  ReduceFns<float> f32;
  ReduceFns<double> f64;
};

void fill_reduce_table_base(ReduceTable& t);
void fill_reduce_table_avx2(ReduceTable& t);
void fill_reduce_table_avx512(ReduceTable& t);

FB_DECLARE_DISPATCH(const ReduceTable& (*)(), reduce_table_stub);

/// The table of the active instruction set (Note [CPU capabilities] in dispatch_stub.h).
const ReduceTable& reduce_table();

template <class T>
const ReduceFns<T>& reduce_fns() {
  if constexpr (sizeof(T) == 4)
    return reduce_table().f32;
  else
    return reduce_table().f64;
}

}  // namespace flambeau::cpu
