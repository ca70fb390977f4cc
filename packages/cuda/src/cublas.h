#pragma once
// cuBLAS, loaded at the first GEMM (Note [cuBLAS loading] in cublas.cpp).
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

namespace flambeau::cuda {

/// Column-major GEMM C = alpha * op(A) op(B) + beta * C, batched with strides
/// (batch == 1: one GEMM), float32 or float64, on `stream` of the current
/// device. Loads cuBLAS first; raises what load_cublas raises.
void gemm_strided_batched(bool is_double, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                          double alpha, const void* a, int64_t lda, int64_t stride_a, const void* b,
                          int64_t ldb, int64_t stride_b, double beta, void* c, int64_t ldc, int64_t stride_c,
                          int64_t batch, cudaStream_t stream);

/// Loads libcublas (once): the nvidia-cublas wheel's lib folder in each
/// site-packages folder of `search_dirs` first, then the system's loader
/// path. Returns the path loaded; raises RuntimeError naming the wheel to
/// install (`pip install nvidia-cublas`) and every place tried otherwise.
std::string load_cublas(const std::vector<std::string>& search_dirs);
/// The library loaded, or "" if none yet.
std::string cublas_path();
/// Set by the Python side at import: the site-packages folders to search.
void set_cublas_search_dirs(std::vector<std::string> dirs);

}  // namespace flambeau::cuda
