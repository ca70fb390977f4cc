#pragma once
// The GEMM helpers shared by the CPU kernels that call OpenBLAS (mm/bmm in
// linalg.cpp, linear in linear.cpp): scipy-openblas32's cblas, its symbols
// prefixed scipy_.
//
// Note [GEMM operands]
// A row-major 2-D operand with strides (s0, s1) goes to BLAS as-is when one
// of its dims is unit-stride: s1 == 1 is "no transpose" with ld = s0, s0 == 1
// (a transposed view) is "transpose" with ld = s1. Only an operand with
// neither layout (e.g. a slice with a step in both dims) is packed into a
// contiguous buffer first. Size-1 dims have no meaningful stride and are
// treated as matching either layout.
#include <cblas.h>

#include <algorithm>
#include <climits>
#include <vector>

#include "flambeau/tensor.h"
#include "generic/shape_utils.h"

// OpenBLAS's own thread count (conv.cpp runs single-threaded GEMMs inside its
// parallel regions).
extern "C" void scipy_openblas_set_num_threads(int num_threads);

namespace flambeau::cpu {

// One matrix operand of a GEMM call (Note [GEMM operands]).
template <class T>
struct GemmOperand {
  const T* data;         // element [0, 0] of batch 0
  int64_t batch_stride;  // elements between consecutive matrices
  bool trans;
  int ld;
  std::vector<T> packed;  // owns the data when it had to be copied
};

template <class T>
GemmOperand<T> gemm_operand(const Tensor& t, bool batched) {
  const int64_t nd = t.dim();
  const int64_t rows = t.sizes()[nd - 2], cols = t.sizes()[nd - 1];
  const int64_t s0 = t.strides()[nd - 2], s1 = t.strides()[nd - 1];
  GemmOperand<T> op{t.data<T>(), batched ? t.strides()[0] : 0, false, 1, {}};
  if ((s1 == 1 || cols == 1) && (rows == 1 || s0 >= std::max<int64_t>(1, cols)) && s0 <= INT_MAX) {
    op.ld = static_cast<int>(rows == 1 ? std::max<int64_t>(1, cols) : s0);
    return op;
  }
  if ((s0 == 1 || rows == 1) && (cols == 1 || s1 >= std::max<int64_t>(1, rows)) && s1 <= INT_MAX) {
    op.trans = true;
    op.ld = static_cast<int>(cols == 1 ? std::max<int64_t>(1, rows) : s1);
    return op;
  }
  op.packed.resize(static_cast<size_t>(t.numel()));
  detail::pack_contiguous<T>(t, op.packed.data());
  op.data = op.packed.data();
  op.batch_stride = rows * cols;
  op.ld = static_cast<int>(std::max<int64_t>(1, cols));
  return op;
}

// c = alpha * op(a) @ op(b) + beta * c, row-major.
inline void gemm(bool ta, bool tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb,
                 float* c, int ldc, float alpha = 1.0f, float beta = 0.0f) {
  scipy_cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k,
                    alpha, a, lda, b, ldb, beta, c, ldc);
}
inline void gemm(bool ta, bool tb, int m, int n, int k, const double* a, int lda, const double* b, int ldb,
                 double* c, int ldc, double alpha = 1.0, double beta = 0.0) {
  scipy_cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k,
                    alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace flambeau::cpu
