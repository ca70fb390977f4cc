#pragma once
// Launcher of the row sort (sort.cu; Note [CUDA sort]).
#include <cstdint>

#include "flambeau_cuda/sort_math.h"

namespace flambeau::cuda {

/// rows (rows, n) contiguous of dtype `dtype` (a kernels.h DtypeCode: float32,
/// float64, int64, int32, int16, int8, uint8, bool) -> values/indices (rows, k);
/// scratch: 2 * rows * n keys and 2 * rows * n indices.
int launch_sort_rows(int dtype, const void* rows_in, int64_t rows, int64_t n, bool descending, int64_t k,
                     void* values, int64_t* indices, uint64_t* keys, int64_t* idx, void* stream);

}  // namespace flambeau::cuda
