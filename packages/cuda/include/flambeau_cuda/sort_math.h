#pragma once
// Note [CUDA sort]
// sort and topk along a dim, as core's CPU kernels order elements (src/cpu/
// sort.cpp): by order-preserving unsigned keys (a float's bits with the sign
// flipped, all bits flipped when negative; -0.0 keyed as +0.0; every NaN the
// largest key; signed integers with the sign bit flipped), complemented for
// descending order (largest for topk), ties kept in index order. The rows
// are contiguous; one thread sorts one row with a bottom-up merge sort
// between two scratch buffers (keys widened to 64 bits, and indices): a
// simple, correct segmented sort, O(n log n) work per row, rows in parallel.
// __host__ __device__ (Note [CUDA index math]): tests/cpp checks it against
// core's sort and topk.
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "flambeau_cuda/device_math.h"

namespace flambeau::cuda {

/// The order-preserving key of v, widened to 64 bits.
template <class T>
FBC_HD uint64_t sort_key(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    using K = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    constexpr K top = K(1) << (8 * sizeof(K) - 1);
    if (v != v) return ~K(0);
    if (v == 0) v = 0;  // -0.0 as +0.0
    K u;
    memcpy(&u, &v, sizeof(u));
    return (u & top) ? static_cast<K>(~u) : static_cast<K>(u | top);
  } else if constexpr (std::is_same_v<T, bool>) {
    return v ? 1 : 0;
  } else if constexpr (std::is_signed_v<T>) {
    using U = std::make_unsigned_t<T>;
    constexpr U top = U(1) << (8 * sizeof(U) - 1);
    return static_cast<U>(static_cast<U>(v) ^ top);
  } else {
    return static_cast<uint64_t>(v);
  }
}

/// Sorts one row of n values: out_idx[j], out_vals[j] for j < k hold the
/// j-th element in order (k = n for sort, the k first for topk). Scratch: two
/// key and two index buffers of n each.
template <class T>
FBC_HD void sort_row(const T* row, int64_t n, bool descending, int64_t k, T* out_vals, int64_t* out_idx,
                     uint64_t* keys_a, uint64_t* keys_b, int64_t* idx_a, int64_t* idx_b) {
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t key = sort_key(row[i]);
    keys_a[i] = descending ? ~key : key;
    idx_a[i] = i;
  }
  for (int64_t width = 1; width < n; width *= 2) {
    for (int64_t lo = 0; lo < n; lo += 2 * width) {
      const int64_t mid = lo + width < n ? lo + width : n;
      const int64_t hi = lo + 2 * width < n ? lo + 2 * width : n;
      int64_t i = lo, j = mid, o = lo;
      while (i < mid && j < hi) {
        const bool left = keys_a[i] <= keys_a[j];  // ties: the earlier run (lower indices) first
        keys_b[o] = left ? keys_a[i] : keys_a[j];
        idx_b[o++] = left ? idx_a[i++] : idx_a[j++];
      }
      while (i < mid) {
        keys_b[o] = keys_a[i];
        idx_b[o++] = idx_a[i++];
      }
      while (j < hi) {
        keys_b[o] = keys_a[j];
        idx_b[o++] = idx_a[j++];
      }
    }
    uint64_t* tk = keys_a;
    keys_a = keys_b;
    keys_b = tk;
    int64_t* ti = idx_a;
    idx_a = idx_b;
    idx_b = ti;
  }
  for (int64_t j = 0; j < k; ++j) {
    out_idx[j] = idx_a[j];
    out_vals[j] = row[idx_a[j]];
  }
}

}  // namespace flambeau::cuda
