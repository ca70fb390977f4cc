#pragma once
// Row-major GEMM through OpenBLAS (scipy-openblas32, symbols prefixed scipy_):
// c = alpha * op(a) @ op(b) + beta * c. Shared by linalg.cpp and conv.cpp.
#include <cblas.h>

extern "C" void scipy_openblas_set_num_threads(int num_threads);

namespace flambeau::cpu {

inline void gemm(bool ta, bool tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb,
                 float* c, int ldc, float beta = 0.0f) {
  scipy_cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k,
                    1.0f, a, lda, b, ldb, beta, c, ldc);
}
inline void gemm(bool ta, bool tb, int m, int n, int k, const double* a, int lda, const double* b, int ldb,
                 double* c, int ldc, double beta = 0.0) {
  scipy_cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k,
                    1.0, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace flambeau::cpu
