#pragma once
// What the LAPACK-backed kernels share (src/cpu/linalg/lapack.cpp, lapack_lu.cpp):
// running one LAPACK call per matrix of a batch in parallel (Note [LAPACK
// threads]), reusable scratch buffers, the dtype and shape checks, LAPACK's
// 32-bit size limit, and the column-major copies (Note [LAPACK layout] in
// lapack.h).
#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "cpu/linalg/gemm.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "flambeau/parallel.h"
#include "generic/shape_utils.h"

namespace flambeau::cpu::lapack_batch {

// Note [LAPACK threads]: LAPACK's blocked algorithms call many small BLAS
// kernels; with OpenBLAS's own threads each call forks and joins, and on a
// loaded machine a worker not scheduled at once stalls the whole
// factorization for a time slice (measured on 2 shared cores with
// benchmarks/ops_linalg.py: a 256x256 SVD or QR took seconds with 2 OpenBLAS
// threads, milliseconds with 1). So LAPACK runs with OpenBLAS on one thread,
// and our threads split the batch; only a single matrix above this many flops
// gets OpenBLAS's threads.
inline constexpr double kThreadedBlasFlops = 4.0e9;

/// Scratch buffers (pivots, LAPACK workspaces) reused by the matrices one
/// thread factors, so a batch of small matrices allocates once per chunk.
struct Workspace {
  std::vector<std::vector<std::max_align_t>> slots;
  template <class U>
  U* get(size_t slot, int64_t n) {
    if (slots.size() <= slot) slots.resize(slot + 1);
    auto& v = slots[slot];
    const size_t bytes = static_cast<size_t>(std::max<int64_t>(n, 1)) * sizeof(U);
    const size_t need = (bytes + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t);
    if (v.size() < need) v.resize(need);
    return reinterpret_cast<U*>(v.data());
  }
};

/// Runs f(i, workspace) for each matrix i of the batch (Note [LAPACK threads]).
template <class F>
void for_each_matrix(int64_t batch, double flops_per_matrix, const F& f) {
  if (batch == 1 && flops_per_matrix >= kThreadedBlasFlops) {
    apply_pending_blas_threads();
    Workspace ws;
    f(0, ws);
    return;
  }
  const SerialBlasScope serial;
  const int64_t grain = std::max<int64_t>(1, static_cast<int64_t>(2.0e5 / std::max(1.0, flops_per_matrix)));
  parallel_for(0, batch, grain, [&](int64_t b, int64_t e) {
    Workspace ws;
    for (int64_t i = b; i < e; ++i) f(i, ws);
  });
}

inline void check_float(const Tensor& A, const char* op, const char* what = "A", bool complex_ok = false) {
  if (complex_ok && is_complex(A.dtype())) return;
  FB_CHECK_TYPE(A.dtype() == ScalarType::Float32 || A.dtype() == ScalarType::Float64, "[", op,
                "] expected a float32 or float64 tensor for ", what, ", got ", dtype_name(A.dtype()),
                " (shape ", shape_str(A.sizes()), ")",
                complex_ok ? "; complex64 and complex128 are accepted too" : "");
}

inline void check_matrix(const Tensor& A, const char* op, bool square, const char* what = "A",
                  bool complex_ok = false) {
  check_float(A, op, what, complex_ok);
  FB_CHECK_VALUE(A.dim() >= 2, "[", op, "] ", what, " must have at least 2 dimensions, got shape ",
                 shape_str(A.sizes()));
  if (square)
    FB_CHECK_VALUE(A.sizes()[A.dim() - 2] == A.sizes()[A.dim() - 1], "[", op, "] ", what,
                   " must be batches of square matrices, but they are ", A.sizes()[A.dim() - 2], " by ",
                   A.sizes()[A.dim() - 1], " matrices (shape ", shape_str(A.sizes()), ")");
}

/// LAPACK's integers are 32-bit: every dimension, and every matrix's element
/// count (its index arithmetic), must fit.
inline void check_lapack_size(const char* op, std::initializer_list<int64_t> dims) {
  int64_t prev = 1;
  for (int64_t d : dims) {
    FB_CHECK_VALUE(d <= INT_MAX, "[", op, "] a matrix dimension of ", d,
                   " exceeds LAPACK's 32-bit index limit (2^31 - 1)");
    FB_CHECK_VALUE(prev == 0 || d <= INT_MAX / std::max<int64_t>(prev, 1) || d == 0, "[", op,
                   "] a matrix of more than 2^31 - 1 elements exceeds LAPACK's 32-bit index limit");
    prev = std::max<int64_t>(d, 1);
  }
}

inline int64_t batch_count(const Tensor& A) {
  int64_t b = 1;
  for (int64_t d = 0; d < A.dim() - 2; ++d) b *= A.sizes()[d];
  return b;
}

inline Shape batch_shape(const Tensor& A) { return Shape(A.sizes().begin(), A.sizes().end() - 2); }

inline Shape with_tail(Shape s, std::initializer_list<int64_t> tail) {
  s.insert(s.end(), tail.begin(), tail.end());
  return s;
}

/// Row-major contiguous copy of the matrices transposed: the buffer reads as
/// column-major A (Note [LAPACK layout]). Always a copy (LAPACK writes it):
/// contiguous() would return A's own storage when the transpose is contiguous
/// already (a 1x1 or a transposed view).
inline Tensor colmajor_copy(const Tensor& A) {
  return op::clone(op::transpose(A, -2, -1), MemoryFormat::Contiguous);
}
/// A fresh contiguous copy (LAPACK overwrites its input).
inline Tensor owned_copy(const Tensor& A) { return op::clone(A, MemoryFormat::Contiguous); }
/// A buffer written column-major (batch of (rows, cols)) back as row-major.
inline Tensor from_colmajor(const Tensor& buf) { return contiguous(op::transpose(buf, -2, -1)); }

inline std::string batch_prefix(int64_t batch, int64_t i) {
  return batch > 1 || i > 0 ? detail::cat_str("(Batch element ", i, "): ") : std::string();
}

/// The LAPACK workspace size from a query (lwork = -1): work[0] as an int, checked.
template <class T>
int workspace_size(T w, const char* op) {
  double v;
  if constexpr (is_complex_v<T>)
    v = static_cast<double>(w.real());
  else
    v = static_cast<double>(w);
  FB_CHECK_VALUE(v <= static_cast<double>(INT_MAX), "[", op,
                 "] the LAPACK workspace exceeds its 32-bit size limit");
  return std::max(1, static_cast<int>(v));
}

template <class F>
void visit_float(ScalarType t, const F& f) {
  if (t == ScalarType::Float32)
    f(float{});
  else
    f(double{});
}

/// visit_float, and complex64/complex128 (the kernels widened to complex).
template <class F>
void visit_float_complex(ScalarType t, const F& f) {
  if (t == ScalarType::ComplexFloat)
    f(complex64{});
  else if (t == ScalarType::ComplexDouble)
    f(complex128{});
  else
    visit_float(t, f);
}

}  // namespace flambeau::cpu::lapack_batch
