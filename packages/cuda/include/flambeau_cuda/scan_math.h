#pragma once
// Note [CUDA scans]
// cumsum and cumprod along a dim, as core's CPU kernels accumulate
// (src/cpu/scan.cpp): floats in double (each output rounded once), integers
// in their unsigned type (wrapping as two's complement). The rows are
// contiguous; one thread scans one row. __host__ __device__ (Note [CUDA index
// math]): tests/cpp checks it against core's cumsum and cumprod.
#include <cstdint>
#include <type_traits>

#include "flambeau_cuda/device_math.h"

namespace flambeau::cuda {

template <class T>
FBC_HD void scan_row(const T* x, T* y, int64_t n, bool product) {
  if constexpr (std::is_floating_point_v<T>) {
    double acc = product ? 1.0 : 0.0;
    for (int64_t i = 0; i < n; ++i) {
      acc = product ? acc * static_cast<double>(x[i]) : acc + static_cast<double>(x[i]);
      y[i] = static_cast<T>(acc);
    }
  } else {
    using U = std::make_unsigned_t<T>;
    U acc = product ? U(1) : U(0);
    for (int64_t i = 0; i < n; ++i) {
      acc = product ? static_cast<U>(acc * static_cast<U>(x[i])) : static_cast<U>(acc + static_cast<U>(x[i]));
      y[i] = static_cast<T>(acc);
    }
  }
}

}  // namespace flambeau::cuda
