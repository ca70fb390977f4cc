#pragma once
// Shared by the reduction kernels (reduce.cpp, reduce_extra.cpp, scan.cpp,
// sort.cpp): dim masks, (outer, n, inner) splits, rows views, and the
// min/max-with-index loop.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "flambeau/half.h"
#include "flambeau/ops.h"
#include "cpu/write_out.h"
#include "flambeau/parallel.h"
#include "vec_reduce.h"

namespace flambeau::cpu {

/// Reduced-dim bitmask from `dims` (all dims if empty); IndexError/ValueError naming op.
inline uint64_t reduce_mask(const char* op, IntArrayRef dims, int64_t ndim) {
  FB_CHECK_VALUE(ndim <= 64, "[", op, "] tensors with more than 64 dims are not supported");
  if (dims.empty()) return ndim == 64 ? ~uint64_t{0} : (uint64_t{1} << ndim) - 1;
  uint64_t mask = 0;
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, ndim, op);
    if (ndim == 0) continue;
    FB_CHECK_VALUE(!(mask >> w & 1), "[", op, "] dim ", w, " appears multiple times in the list of dims");
    mask |= uint64_t{1} << w;
  }
  return mask;
}

/// The result's shape of a reduction over `mask`.
inline Shape reduced_shape(IntArrayRef sizes, uint64_t mask, bool keepdim) {
  Shape out;
  for (int64_t d = 0; d < static_cast<int64_t>(sizes.size()); ++d) {
    if (!(mask >> d & 1))
      out.push_back(sizes[d]);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

/// self as contiguous rows: the kept dims first (outer = their product), the reduced ones last
/// (n = their product). No copy when self is contiguous with the reduced dims innermost.
inline Tensor as_rows(const Tensor& self, uint64_t mask, int64_t& outer, int64_t& n) {
  const int64_t nd = self.dim();
  Shape perm;
  outer = 1;
  n = 1;
  for (int64_t d = 0; d < nd; ++d)
    if (!(mask >> d & 1)) {
      perm.push_back(d);
      outer *= self.sizes()[d];
    }
  for (int64_t d = 0; d < nd; ++d)
    if (mask >> d & 1) {
      perm.push_back(d);
      n *= self.sizes()[d];
    }
  bool identity = true;
  for (int64_t d = 0; d < nd; ++d) identity &= perm[d] == d;
  return contiguous(identity ? self : op::permute(self, perm));
}

/// Shapes of a reduction along one dim: (outer, n, inner) and the result's sizes.
struct DimSplit {
  int64_t outer = 1, n = 1, inner = 1;
  Shape out_shape;
};

inline DimSplit split_dim(const Tensor& self, int64_t dim, bool keepdim, const char* op,
                          bool allow_empty = false) {
  DimSplit s;
  const int64_t nd = self.dim();
  if (nd == 0) return s;
  for (int64_t d = 0; d < nd; ++d) {
    const int64_t sz = self.sizes()[d];
    if (d < dim)
      s.outer *= sz;
    else if (d == dim)
      s.n = sz;
    else
      s.inner *= sz;
    if (d != dim)
      s.out_shape.push_back(sz);
    else if (keepdim)
      s.out_shape.push_back(1);
  }
  FB_CHECK_INDEX(allow_empty || s.n > 0, "[", op, "] cannot reduce over dim ", dim, " of size 0 (shape ",
                 shape_str(self.sizes()), "): the reduction has no identity");
  return s;
}

/// float16/bfloat16 compare as float32.
template <class T>
inline constexpr bool kIsHalfType = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

template <class T, bool IsMax>
inline bool extremum_better(T v, T best) {
  if constexpr (kIsHalfType<T>) {
    return extremum_better<float, IsMax>(static_cast<float>(v), static_cast<float>(best));
  } else if constexpr (std::is_floating_point_v<T>) {
    if (v != v) return best == best;  // the first NaN wins
    return IsMax ? v > best : v < best;
  } else {
    return IsMax ? v > best : v < best;
  }
}

template <class T, bool IsMax>
T extremum_of_row(const T* x, int64_t n) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    return IsMax ? reduce_fns<T>().row_max(x, n) : reduce_fns<T>().row_min(x, n);
  } else if constexpr (kIsHalfType<T>) {
    int64_t k = 0;
    for (int64_t i = 1; i < n; ++i)
      if (extremum_better<T, IsMax>(x[i], x[k])) k = i;
    return x[k];
  } else if constexpr (std::is_same_v<T, bool>) {
    int r = IsMax ? 0 : 1;
    if (IsMax) {
#pragma omp simd reduction(| : r)
      for (int64_t i = 0; i < n; ++i) r |= x[i];
    } else {
#pragma omp simd reduction(& : r)
      for (int64_t i = 0; i < n; ++i) r &= x[i];
    }
    return r != 0;
  } else {
    T m = x[0];
    if (IsMax) {
#pragma omp simd reduction(max : m)
      for (int64_t i = 1; i < n; ++i) m = x[i] > m ? x[i] : m;
    } else {
#pragma omp simd reduction(min : m)
      for (int64_t i = 1; i < n; ++i) m = x[i] < m ? x[i] : m;
    }
    return m;
  }
}

/// Max (min) over the middle dim of a contiguous (outer, n, inner) array, n >= 1; writes the values
/// (may be null) and the first index holding them (may be null) of outer*inner results. NaN wins.
template <class T, bool IsMax>
void extremum_over(const T* x, int64_t outer, int64_t n, int64_t inner, T* values, int64_t* indices) {
  if (inner == 1) {
    // float/double rows run the vectorized one-pass loops at memory speed (~0.08 ns per float32
    // element): a second thread pays its wake-up only past ~1M elements each (Note [Elementwise
    // grain]); the scalar loops of the other dtypes keep kGrainSize.
    constexpr bool kVectorized = std::is_same_v<T, float> || std::is_same_v<T, double>;
    const int64_t grain_elems = kVectorized ? int64_t{1} << 20 : kGrainSize;
    parallel_for(0, outer, std::max<int64_t>(1, grain_elems / n), [&](int64_t ob, int64_t oe) {
      for (int64_t o = ob; o < oe; ++o) {
        const T* row = x + o * n;
        if (!indices) {
          values[o] = extremum_of_row<T, IsMax>(row, n);
          continue;
        }
        int64_t k = 0;
        if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
          // One pass for the index (the first NaN if any); the value is read back.
          k = IsMax ? reduce_fns<T>().row_argmax(row, n) : reduce_fns<T>().row_argmin(row, n);
        } else if constexpr (kIsHalfType<T>) {
          for (int64_t i = 1; i < n; ++i)
            if (extremum_better<T, IsMax>(row[i], row[k])) k = i;
        } else {
          const T m = extremum_of_row<T, IsMax>(row, n);
          while (row[k] != m) ++k;
        }
        indices[o] = k;
        if (values) values[o] = row[k];
      }
    });
    return;
  }
  constexpr int64_t kCols = 512;
  const int64_t nblk = (inner + kCols - 1) / kCols;
  parallel_for(0, outer * nblk, std::max<int64_t>(1, kGrainSize / (n * kCols)), [&](int64_t tb, int64_t te) {
    T best[kCols];
    int64_t where[kCols];
    for (int64_t t = tb; t < te; ++t) {
      const int64_t o = t / nblk, c0 = (t % nblk) * kCols, nc = std::min(kCols, inner - c0);
      const T* base = x + o * n * inner + c0;
      std::copy(base, base + nc, best);
      std::fill(where, where + nc, 0);
      for (int64_t k = 1; k < n; ++k) {
        const T* r = base + k * inner;
        for (int64_t i = 0; i < nc; ++i)
          if (extremum_better<T, IsMax>(r[i], best[i])) {
            best[i] = r[i];
            where[i] = k;
          }
      }
      if (values) std::copy(best, best + nc, values + o * inner + c0);
      if (indices) std::copy(where, where + nc, indices + o * inner + c0);
    }
  });
}

}  // namespace flambeau::cpu
