#pragma once
// Row gathers and scatter-adds (index.cu): embedding and its backward.
#include <cstdint>

namespace flambeau::cuda {

/// out[i, :] = table[idx[i], :] for i < k (rows of `row_bytes` bytes, contiguous; indices already checked).
int launch_gather_rows(void* out, const void* table, const int64_t* idx, int64_t k, int64_t row_bytes,
                       void* stream);
/// out[idx[i], :] += grad[i, :] (atomic), rows of d elements, skipping idx == padding_idx.
int launch_scatter_add_rows(void* out, const void* grad, const int64_t* idx, int64_t k, int64_t d,
                            int64_t padding_idx, bool is_double, void* stream);

}  // namespace flambeau::cuda
