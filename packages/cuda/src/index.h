#pragma once
// Row gathers and scatter-adds (index.cu): embedding and its backward.
#include <cstdint>

#include "flambeau_cuda/device_math.h"

namespace flambeau::cuda {

/// out[i, :] = table[idx[i], :] for i < k (rows of `row_bytes` bytes, contiguous; indices already checked).
int launch_gather_rows(void* out, const void* table, const int64_t* idx, int64_t k, int64_t row_bytes,
                       void* stream);
/// out[idx[i], :] += grad[i, :] (atomic), rows of d elements, skipping idx == padding_idx.
int launch_scatter_add_rows(void* out, const void* grad, const int64_t* idx, int64_t k, int64_t d,
                            int64_t padding_idx, bool is_double, void* stream);

}  // namespace flambeau::cuda

namespace flambeau::cuda {

/// out[c0(i)] = self[c1(i) + index[c2(i)] * self_dim_stride] for i < n (gather,
/// index_select; offsets in elements of `elem_size` bytes; indices checked).
int launch_gather_dim(void* out, const void* self, const int64_t* index, const OffsetCalculator<3>& calc,
                      int64_t self_dim_stride, int64_t n, int elem_size, void* stream);
/// out[c0(i) + index[c2(i)] * out_dim_stride] += src[c1(i)] (atomic; float32/float64).
int launch_scatter_add_dim(void* out, const void* src, const int64_t* index, const OffsetCalculator<3>& calc,
                           int64_t out_dim_stride, int64_t n, bool is_double, void* stream);

}  // namespace flambeau::cuda
