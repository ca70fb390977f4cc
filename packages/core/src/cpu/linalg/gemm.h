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
#include <type_traits>
#include <vector>

#include "cpu/linalg/gemm_pool.h"
#include "cpu/linalg/sgemm.h"
#include "flambeau/half.h"
#include "flambeau/parallel.h"
#include "flambeau/tensor.h"
#include "generic/shape_utils.h"

// OpenBLAS's own thread count (conv.cpp runs single-threaded GEMMs inside its
// parallel regions).
extern "C" void scipy_openblas_set_num_threads(int num_threads);
extern "C" int scipy_openblas_get_num_threads(void);

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

// One serial GEMM: float32 on flambeau's own kernel where it applies (Note [Own sgemm]), else one
// OpenBLAS call on the calling thread's view of OpenBLAS's thread count.
inline void blas_gemm(bool ta, bool tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb,
                      float* c, int ldc, float alpha, float beta) {
  if (own_sgemm_applies(m, n, k, alpha, beta) &&
      own_sgemm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, beta != 0.0f))
    return;
  scipy_cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k,
                    alpha, a, lda, b, ldb, beta, c, ldc);
}
inline void blas_gemm(bool ta, bool tb, int m, int n, int k, const double* a, int lda, const double* b,
                      int ldb, double* c, int ldc, double alpha, double beta) {
  scipy_cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k,
                    alpha, a, lda, b, ldb, beta, c, ldc);
}
// complex64/complex128: cgemm/zgemm, alpha and beta passed by pointer. Conjugates are
// materialised before they get here (flambeau has no conj bit), so only plain transposes occur.
inline void blas_gemm(bool ta, bool tb, int m, int n, int k, const complex64* a, int lda, const complex64* b,
                      int ldb, complex64* c, int ldc, complex64 alpha, complex64 beta) {
  scipy_cblas_cgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k,
                    &alpha, a, lda, b, ldb, &beta, c, ldc);
}
inline void blas_gemm(bool ta, bool tb, int m, int n, int k, const complex128* a, int lda,
                      const complex128* b, int ldb, complex128* c, int ldc, complex128 alpha,
                      complex128 beta) {
  scipy_cblas_zgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k,
                    &alpha, a, lda, b, ldb, &beta, c, ldc);
}

// Note [GEMM threads]
// OpenBLAS's own threads are a second thread pool beside flambeau's OpenMP
// one: after a threaded OpenBLAS call its workers spin waiting for the next
// one, and on 2 cores they take the cores away from the OpenMP workers and
// from the serial code between GEMMs (measured with perf on the benchmark
// LSTM: a third of the samples in blas_thread_server/inner_thread spinning),
// while a worker not scheduled at once stalls the whole call. So gemm() never
// lets OpenBLAS thread: below kOwnThreadsMacs multiply-adds it is one serial
// OpenBLAS call; above, the larger of the output's two dims is split into one
// block per flambeau thread, each block a serial OpenBLAS call; the blocks
// run on the GEMM pool (Note [GEMM pool]), or on OpenMP (parallel_for) when
// another thread holds the pool. Inside a parallel region (a caller already
// splitting work) it calls OpenBLAS as is. LAPACK (lapack.cpp) keeps its own
// policy. From kPoolMacs up to kOwnThreadsMacs a GEMM is split too, on the
// pool (its fork and join cost a few microseconds, OpenMP's passive pool's
// tens; with the pool busy the blocks run one after the other): the MLP's
// last layer, 128 x 512 x 10 with bias, takes ~29 us as one OpenBLAS call
// (a narrow output, ~40% of peak) and ~13-14 us as two 64-row blocks, even
// run serially: each block is small enough for OpenBLAS's unpacked
// small-matrix kernel (its TN form needs M*N <= 1200 in column-major terms).
inline constexpr double kOwnThreadsMacs = double(int64_t{1} << 20);
inline constexpr double kPoolMacs = double(int64_t{1} << 18);

/// How gemm() cuts an m x n x k call (Note [GEMM threads]): `blocks` blocks of `per` columns (split_n)
/// or rows of c, the last one shorter; one block is one serial call. Block edges are multiples of
/// col_align (columns) or row_align (rows). `threaded`: more than one thread and outside a parallel
/// region, where gemm() holds OpenBLAS to one thread (SerialBlasScope); threads: get_num_threads().
struct GemmCut {
  int threads = 1;
  bool threaded = false;
  bool split_n = false;
  int dim = 0;  // n when split_n, else m
  int blocks = 1;
  int per = 0;
  /// Block blk: [lo, hi) along dim (empty when lo >= hi).
  int lo(int64_t blk) const { return static_cast<int>(blk) * per; }
  int hi(int64_t blk) const { return std::min(dim, lo(blk) + per); }
};
inline GemmCut gemm_cut(int m, int n, int k, int col_align, int row_align) {
  GemmCut cut;
  const int nt = cut.threads = get_num_threads();
  cut.threaded = nt > 1 && !in_parallel_region();
  cut.split_n = n >= m;
  cut.dim = cut.split_n ? n : m;
  cut.per = cut.dim;
  const int align = cut.split_n ? col_align : row_align;
  const int blocks = static_cast<int>(std::min<int64_t>(nt, cut.dim / (2 * align)));
  if (!cut.threaded || double(m) * double(n) * double(k) < kPoolMacs || blocks <= 1) return cut;
  cut.blocks = blocks;
  cut.per = ((cut.dim + blocks - 1) / blocks + align - 1) / align * align;
  return cut;
}
/// Block edges of gemm<T>: whole vectors of T.
template <class T>
inline constexpr int kGemmAlign = 64 / sizeof(T);

/// Whether gemm<float> runs every block of this call on the own kernel (Note [Own sgemm]); any
/// other cut of the own kernel's work gives the same bits (each element's sum runs over k in order).
inline bool gemm_runs_own(int m, int n, int k, float alpha, float beta) {
  const GemmCut cut = gemm_cut(m, n, k, kGemmAlign<float>, kGemmAlign<float>);
  for (int blk = 0; blk < cut.blocks; ++blk) {
    const int len = cut.hi(blk) - cut.lo(blk);
    if (len > 0 && !own_sgemm_applies(cut.split_n ? m : len, cut.split_n ? len : n, k, alpha, beta))
      return false;
  }
  return true;
}

}  // namespace flambeau::cpu

namespace flambeau {
/// Before a call that lets OpenBLAS thread: gives OpenBLAS the count it had
/// before a fork (Note [OpenBLAS count across fork] in parallel.cpp), if
/// set_num_threads was not called since; nothing otherwise.
void apply_pending_blas_threads();
}  // namespace flambeau

namespace flambeau::cpu {

/// OpenBLAS on one thread for this scope (restores the previous count), while
/// our own threads each call it (or, `active` false, OpenBLAS gets a count
/// left pending by a fork, apply_pending_blas_threads, and nothing else
/// changes: the caller decided to let one BLAS call use OpenBLAS's threads).
class SerialBlasScope {
 public:
  explicit SerialBlasScope(bool active = true) : restore_(active ? scipy_openblas_get_num_threads() : 0) {
    if (!active) apply_pending_blas_threads();
    if (restore_ > 1)
      scipy_openblas_set_num_threads(1);
    else
      restore_ = 0;
  }
  ~SerialBlasScope() {
    if (restore_) scipy_openblas_set_num_threads(restore_);
  }
  SerialBlasScope(const SerialBlasScope&) = delete;
  SerialBlasScope& operator=(const SerialBlasScope&) = delete;

 private:
  int restore_;
};

// Rows [r0, r1) x columns [c0, c1) of c set to row[c0, c1) (a bias broadcast over the rows).
template <class T>
void fill_rows(T* c, int ldc, int r0, int r1, int c0, int c1, const T* row) {
  for (int r = r0; r < r1; ++r) std::copy(row + c0, row + c1, c + int64_t{r} * ldc + c0);
}

// One serial GEMM whose c rows start as row_init (n values) when given (beta must then be 1): on the
// own float32 kernel the bias is its accumulators' start (Note [Own sgemm]), elsewhere a fill first.
template <class T>
void serial_gemm(bool ta, bool tb, int m, int n, int k, const T* a, int lda, const T* b, int ldb, T* c,
                 int ldc, T alpha, T beta, const T* row_init) {
  if constexpr (std::is_same_v<T, float>) {
    if (row_init && own_sgemm_applies(m, n, k, alpha, beta) &&
        own_sgemm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, false, row_init))
      return;
  }
  if (row_init) fill_rows(c, ldc, 0, m, 0, n, row_init);
  blas_gemm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, alpha, beta);
}

// c = alpha * op(a) @ op(b) + beta * c, row-major (Note [GEMM threads]).
// With row_init, c's rows start as row_init (n values; linear's bias): each
// block's part is filled right before its GEMM, while it is in cache, or, on
// the own float32 kernel, is where its accumulators start (serial_gemm).
template <class T>
void gemm(bool ta, bool tb, int m, int n, int k, const T* a, int lda, const T* b, int ldb, T* c, int ldc,
          T alpha = T(1), T beta = T(0), const T* row_init = nullptr) {
  const GemmCut cut = gemm_cut(m, n, k, kGemmAlign<T>, kGemmAlign<T>);
  if (!cut.threaded) {
    serial_gemm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, alpha, beta, row_init);
    return;
  }
  const SerialBlasScope serial;
  if (cut.blocks <= 1) {
    serial_gemm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, alpha, beta, row_init);
    return;
  }
  auto block = [&](int64_t blk) {
    const int lo = cut.lo(blk), hi = cut.hi(blk);
    if (lo >= hi) return;
    if (cut.split_n) {  // columns [lo, hi) of op(b) and c
      serial_gemm(ta, tb, m, hi - lo, k, a, lda, tb ? b + int64_t{lo} * ldb : b + lo, ldb, c + lo, ldc, alpha,
                  beta, row_init ? row_init + lo : nullptr);
    } else {  // rows [lo, hi) of op(a) and c
      serial_gemm(ta, tb, hi - lo, n, k, ta ? a + lo : a + int64_t{lo} * lda, lda, b, ldb,
                  c + int64_t{lo} * ldc, ldc, alpha, beta, row_init);
    }
  };
  const int blocks = cut.blocks, nt = cut.threads;
  const double macs = double(m) * double(n) * double(k);
  if (gemm_pool_for(blocks, nt, block)) return;  // Note [GEMM pool]
  if (macs < kOwnThreadsMacs) {                  // too small for OpenMP's fork and join
    for (int blk = 0; blk < blocks; ++blk) block(blk);
    return;
  }
  parallel_for(0, blocks, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t blk = b0; blk < b1; ++blk) block(blk);
  });
}

}  // namespace flambeau::cpu
