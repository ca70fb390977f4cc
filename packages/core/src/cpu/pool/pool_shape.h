#pragma once
// The pooling shape rules are public (flambeau/pool_shape.h): the CUDA
// kernels (flambeau-cuda's src/pool.cpp) check with the same code.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "flambeau/pool_shape.h"

namespace flambeau::pool {

/// A max pooling window's starting value: -inf for the floating types, the lowest value for the integers.
template <class T>
constexpr T max_identity() {
  if constexpr (std::is_floating_point_v<T>)
    return -std::numeric_limits<T>::infinity();
  else
    return std::numeric_limits<T>::lowest();
}

/// A max-pooling window along one dim (output position o): its first position inside the image and its
/// end (exclusive), stepping by the dilation d; lo >= hi for a window that reads only padding.
struct DilatedSpan {
  int64_t lo, hi;
};
inline DilatedSpan dilated_span(int64_t o, int64_t stride, int64_t pad, int64_t k, int64_t d, int64_t size) {
  int64_t lo = o * stride - pad;
  const int64_t hi = std::min(lo + (k - 1) * d + 1, size);
  while (lo < 0) lo += d;
  return {lo, hi};
}

}  // namespace flambeau::pool
