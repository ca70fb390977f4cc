// CPU kernels of the LAPACK-backed linalg primitives: _linalg_inv,
// _linalg_solve, _linalg_slogdet, _linalg_cholesky, _linalg_qr, _linalg_svd,
// _linalg_eigh, _linalg_lstsq (ops.yaml, section linalg) and _linalg_eig (section fft). The public
// functions (flambeau.linalg.*) are Python composites over these
// (flambeau_core/linalg.py); their derivatives are in autograd's
// derivatives.yaml and src/composite/linalg_backward.cpp.
//
// Each kernel takes a batch (*, m, n) of float32 or float64 matrices (and, since
// complex64/complex128 ones: every kernel but the real-only paths) and runs one
// LAPACK call per matrix (Note [LAPACK layout] in lapack.h). All but lstsq are
// structured ops (Note [Structured kernels]): their meta step (ops.yaml's rules,
// src/meta/linalg_rules.cpp) has checked the dtypes, the shapes and that every
// size LAPACK sees fits its 32-bit int, and allocated the results; the kernels
// here are out kernels that compute into them (a column-major buffer copied in
// transposed, or the outputs themselves through write_contiguous_outs). The matrices of a batch run
// in parallel, each thread calling LAPACK with OpenBLAS on one thread; only a
// single very large matrix uses OpenBLAS's own threads (Note [LAPACK threads]).
// A failure (singular matrix, not positive-definite, no convergence) is
// recorded per matrix and raised after the loop, naming the batch element as
// PyTorch does.

#include "cpu/linalg/lapack.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "cpu/linalg/gemm.h"
#include "cpu/linalg/lapack_batch.h"
#include "cpu/write_out.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "flambeau/parallel.h"
#include "generic/shape_utils.h"

namespace flambeau {
namespace {

namespace la = cpu::lapack;

using namespace cpu::lapack_batch;  // NOLINT(google-build-using-namespace)

// Note [non-finite LAPACK input]: the bundled LAPACK does not end on some matrices holding an infinity:
// gesdd in its bidiagonal QR (sbdsqr, reached through bdsdc), and gelsd; and geev rejects a NaN with an
// argument error that xerbla prints. Those kernels check each matrix first and never hand LAPACK a
// non-finite one: svd raises PyTorch's error for NaN input (for an infinity too, where PyTorch's MKL
// gives NaN or raises, by matrix), eig PyTorch's own pre-check message, and lstsq gives a NaN solution
// (PyTorch's gelsy does for an infinity).
constexpr int kNonFiniteInfo = INT_MIN;

template <typename T>
bool all_finite(const T* a, int64_t count) {
  for (int64_t j = 0; j < count; ++j) {
    if constexpr (is_complex_v<T>) {
      if (!std::isfinite(a[j].real()) || !std::isfinite(a[j].imag())) return false;
    } else {
      if (!std::isfinite(a[j])) return false;
    }
  }
  return true;
}

// ---- inv: getrf + getri ----

void linalg_inv_out_cpu(const Tensor& out, const Tensor& A) {
  const int64_t n = A.sizes()[A.dim() - 1];
  const int64_t batch = batch_count(A);
  if (A.numel() == 0) return;
  Tensor buf = colmajor_copy(A);
  std::vector<int> infos(static_cast<size_t>(batch), 0);
  visit_float_complex(A.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* data = buf.data<T>();
    const int ni = static_cast<int>(n);
    T wq{};
    int info = 0;
    la::getri(ni, data, ni, nullptr, &wq, -1, &info);
    const int lwork = workspace_size(wq, "linalg.inv");
    for_each_matrix(batch, 2.0 * static_cast<double>(n) * n * n, [&](int64_t i, Workspace& ws) {
      T* a = data + i * n * n;
      int* ipiv = ws.get<int>(0, n);
      int inf = 0;
      la::getrf(ni, ni, a, ni, ipiv, &inf);
      if (inf == 0) la::getri(ni, a, ni, ipiv, ws.get<T>(1, lwork), lwork, &inf);
      infos[static_cast<size_t>(i)] = inf;
    });
  });
  for (int64_t i = 0; i < batch; ++i) {
    const int inf = infos[static_cast<size_t>(i)];
    FB_CHECK_VALUE(inf <= 0, "linalg.inv: ", batch_prefix(batch, i), "The diagonal element ", inf,
                   " is zero, the inversion could not be completed because the input matrix is singular.");
    FB_CHECK(inf == 0, "linalg.inv: LAPACK getri failed with info ", inf);
  }
  cpu::copy_out(out, op::transpose(buf, -2, -1));
}

// ---- solve: getrf + getrs ----

void linalg_solve_out_cpu(const Tensor& out, const Tensor& A, const Tensor& B) {
  const int64_t n = A.sizes()[A.dim() - 1], k = B.sizes()[B.dim() - 1];
  const int64_t batch = batch_count(A);
  if (B.numel() == 0 && A.numel() == 0) return;
  Tensor a_buf = colmajor_copy(A);
  Tensor b_buf = colmajor_copy(B);  // (*, k, n) row-major = (n, k) column-major
  std::vector<int> infos(static_cast<size_t>(batch), 0);
  visit_float_complex(A.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* ad = a_buf.data<T>();
    T* bd = b_buf.data<T>();
    const int ni = static_cast<int>(n), ki = static_cast<int>(k);
    const double flops = 2.0 / 3.0 * n * n * n + 2.0 * n * n * k;
    for_each_matrix(batch, flops, [&](int64_t i, Workspace& ws) {
      T* a = ad + i * n * n;
      T* b = bd + i * n * k;
      int* ipiv = ws.get<int>(0, n);
      int inf = 0;
      if (n > 0) la::getrf(ni, ni, a, ni, ipiv, &inf);
      if (inf == 0 && n > 0 && k > 0) la::getrs('N', ni, ki, a, ni, ipiv, b, ni, &inf);
      infos[static_cast<size_t>(i)] = inf;
    });
  });
  for (int64_t i = 0; i < batch; ++i) {
    const int inf = infos[static_cast<size_t>(i)];
    FB_CHECK_VALUE(inf <= 0, "linalg.solve: ", batch_prefix(batch, i),
                   "The solver failed because the input matrix is singular.");
    FB_CHECK(inf == 0, "linalg.solve: LAPACK failed with info ", inf);
  }
  cpu::copy_out(out, op::transpose(b_buf, -2, -1));
}

// ---- slogdet: getrf (det(A^T) = det(A), so the row-major copy is factored as is) ----

// Complex A (as PyTorch): a real log|det| and a complex sign det / |det|.
void linalg_slogdet_out_cpu(const Tensor& logabs_out, const Tensor& sign_out, const Tensor& A) {
  const int64_t n = A.sizes()[A.dim() - 1];
  const int64_t batch = batch_count(A);
  if (batch == 0) return;
  Tensor buf = owned_copy(A);
  cpu::write_contiguous_outs<2>({logabs_out, sign_out}, A, [&](const std::array<Tensor, 2>& dst) {
  visit_float_complex(A.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using R = decltype(std::abs(T{}));
    T* data = buf.data<T>();
    R* la_out = dst[0].data<R>();
    T* sg_out = dst[1].data<T>();
    const int ni = static_cast<int>(n);
    for_each_matrix(batch, 2.0 / 3.0 * n * n * n, [&](int64_t i, Workspace& ws) {
      T* a = data + i * n * n;
      int* ipiv = ws.get<int>(0, n);
      int inf = 0;
      if (n > 0) la::getrf(ni, ni, a, ni, ipiv, &inf);
      T s = 1;
      R l = 0;
      bool zero = false;
      for (int64_t j = 0; j < n; ++j) {
        const T d = a[j * n + j];
        const R ad = std::abs(d);
        if (ipiv[j] != j + 1) s = -s;
        if (ad == 0) zero = true;
        if constexpr (is_complex_v<T>) {
          if (ad != 0) s *= d / ad;
        } else {
          if (d < 0) s = -s;
        }
        l += std::log(ad);
      }
      if (zero) {
        s = 0;
        l = -std::numeric_limits<R>::infinity();
      }
      la_out[i] = l;
      sg_out[i] = s;
    });
  });
  });
}

// ---- cholesky: potrf on the row-major copy (Note [LAPACK layout]) ----
// The row-major buffer is A^T column-major; potrf('U') of it reads A's lower
// triangle and leaves U with A^T = U^T U, whose row-major reading is L = U^T
// with A = L L^T. upper=True: potrf('L') reads A's upper triangle and leaves
// L' whose row-major reading is U = L'^T with A = U^T U.
// Complex Hermitian A: the buffer is A^T = conj(A), also Hermitian; potrf('U') gives
// conj(A) = U^H U, whose row-major reading L = U^T has L L^H = U^T conj(U) = conj(U^H U) = A.
// The factor is computed in place in out (a copy of A), or in a new tensor copied into a strided out or
// one sharing A's memory.
void linalg_cholesky_out_cpu(const Tensor& out, const Tensor& A, bool upper) {
  const int64_t n = A.sizes()[A.dim() - 1];
  const int64_t batch = batch_count(A);
  if (A.numel() == 0) return;
  std::vector<int> infos(static_cast<size_t>(batch), 0);
  cpu::write_contiguous(out, A, [&](const Tensor& buf) {
  Tensor dst = buf;
  op::copy_(dst, A);
  visit_float_complex(A.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* data = buf.data<T>();
    const int ni = static_cast<int>(n);
    for_each_matrix(batch, 1.0 / 3.0 * n * n * n, [&](int64_t i, Workspace&) {
      T* a = data + i * n * n;
      int inf = 0;
      la::potrf(upper ? 'L' : 'U', ni, a, ni, &inf);
      infos[static_cast<size_t>(i)] = inf;
      for (int64_t r = 0; r < n; ++r)  // zero the other triangle (row-major)
        for (int64_t c = 0; c < n; ++c)
          if (upper ? c < r : c > r) a[r * n + c] = 0;
    });
  });
  });
  for (int64_t i = 0; i < batch; ++i) {
    const int inf = infos[static_cast<size_t>(i)];
    FB_CHECK_VALUE(inf <= 0, "linalg.cholesky: ", batch_prefix(batch, i),
                   "The factorization could not be completed because the input is not positive-definite "
                   "(the leading minor of order ",
                   inf, " is not positive-definite).");
    FB_CHECK(inf == 0, "linalg.cholesky: LAPACK potrf failed with info ", inf);
  }
}

// ---- qr: geqrf + orgqr on a column-major copy ----

// Q is (0,) for mode r (the meta step's linalg_qr).
void linalg_qr_out_cpu(const Tensor& q_out, const Tensor& r_out, const Tensor& A, std::string_view mode) {
  const int64_t m = A.sizes()[A.dim() - 2], n = A.sizes()[A.dim() - 1], k = std::min(m, n);
  const bool complete = mode == "complete", want_q = mode != "r";
  const int64_t qcols = complete ? m : k, rrows = complete ? m : k;
  const int64_t batch = batch_count(A);
  const Shape bs = batch_shape(A);
  // Nothing to compute (also for a huge expanded batch of empty matrices: no loop over it).
  if (batch == 0 || (q_out.numel() == 0 && r_out.numel() == 0)) return;
  // Q is computed in place: a column-major (m, max(n, qcols)) buffer holds A, then Q.
  const int64_t wcols = std::max(n, qcols);
  Tensor work_buf = zeros(with_tail(bs, {wcols, m}), A.dtype(), A.device());
  if (A.numel() > 0) {
    Tensor head = op::slice(work_buf, -2, 0, n, 1);
    op::copy_(head, op::transpose(A, -2, -1));
  }
  cpu::write_contiguous_outs<2>({q_out, r_out}, A, [&](const std::array<Tensor, 2>& dst) {
  const Tensor& Q = dst[0];
  const Tensor& R = dst[1];
  Tensor r_fill = R;
  op::fill_(r_fill, 0);
  visit_float_complex(A.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* wd = work_buf.data<T>();
    T* qd = want_q ? Q.data<T>() : nullptr;
    T* rd = R.data<T>();
    const int mi = static_cast<int>(m), ni = static_cast<int>(n), ki = static_cast<int>(k);
    const int qi = static_cast<int>(qcols), ld = static_cast<int>(std::max<int64_t>(m, 1));
    int lwork = 1;
    T wq{};
    int info = 0;
    if (m > 0 && n > 0) {
      la::geqrf(mi, ni, wd, ld, nullptr, &wq, -1, &info);
      lwork = workspace_size(wq, "linalg.qr");
    }
    // orgqr's query also when n is 0 (no reflectors): the complete Q of an (m, 0) matrix is I.
    if (want_q && m > 0 && qcols > 0) {
      la::orgqr(mi, qi, ki, wd, ld, nullptr, &wq, -1, &info);
      lwork = std::max(lwork, workspace_size(wq, "linalg.qr"));
    }
    for_each_matrix(batch, 4.0 * m * n * k, [&](int64_t i, Workspace& ws) {
      T* a = wd + i * wcols * m;
      T* tau = ws.get<T>(0, k);
      T* work = ws.get<T>(1, lwork);
      int inf = 0;
      if (m > 0 && n > 0) la::geqrf(mi, ni, a, ld, tau, work, lwork, &inf);
      T* r = rd + i * rrows * n;
      for (int64_t row = 0; row < std::min(rrows, m); ++row)
        for (int64_t c = row; c < n; ++c) r[row * n + c] = a[c * m + row];
      if (!want_q) return;
      if (m > 0 && qcols > 0) la::orgqr(mi, qi, ki, a, ld, tau, work, lwork, &inf);
      T* q = qd + i * m * qcols;
      for (int64_t row = 0; row < m; ++row)
        for (int64_t c = 0; c < qcols; ++c) q[row * qcols + c] = a[c * m + row];
    });
  });
  });
}

// ---- svd: gesdd on the row-major copy, i.e. of A^T = V S U^T (Note [LAPACK layout]) ----
// LAPACK's "U" of A^T is V, column-major (n, .): read row-major it is Vh.
// LAPACK's "VT" of A^T is U^T, column-major (., m): read row-major it is U.

// Complex A (as PyTorch): real singular values, complex U and Vh ((0,) without compute_uv).
void linalg_svd_out_cpu(const Tensor& u_out, const Tensor& s_out, const Tensor& vh_out, const Tensor& A,
                        bool full_matrices, bool compute_uv) {
  const int64_t m = A.sizes()[A.dim() - 2], n = A.sizes()[A.dim() - 1], k = std::min(m, n);
  const int64_t batch = batch_count(A);
  const int64_t ucols = full_matrices ? m : k, vrows = full_matrices ? n : k;
  if (batch == 0) return;
  std::vector<int> infos;  // sized once there is something to compute (a huge batch of empty matrices)
  cpu::write_contiguous_outs<3>({u_out, s_out, vh_out}, A, [&](const std::array<Tensor, 3>& dst) {
  const Tensor& U = dst[0];
  const Tensor& S = dst[1];
  const Tensor& Vh = dst[2];
  if (compute_uv) {
    Tensor u = U, vh = Vh;
    op::fill_(u, 0);
    op::fill_(vh, 0);
  }
  if (k == 0) {  // no singular values; full matrices are identities
    if (compute_uv && full_matrices && (m > 0 || n > 0)) {  // (else no loop over a huge empty batch)
      visit_float_complex(A.dtype(), [&](auto tag) {
        using T = decltype(tag);
        for (int64_t i = 0; i < batch; ++i) {
          for (int64_t j = 0; j < m; ++j) U.data<T>()[i * m * m + j * m + j] = 1;
          for (int64_t j = 0; j < n; ++j) Vh.data<T>()[i * n * n + j * n + j] = 1;
        }
      });
    }
    return;
  }
  infos.assign(static_cast<size_t>(batch), 0);
  Tensor buf = owned_copy(A);
  visit_float_complex(A.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using R = decltype(std::abs(T{}));
    T* ad = buf.data<T>();
    R* sd = S.data<R>();
    T* ud = compute_uv ? U.data<T>() : nullptr;
    T* vd = compute_uv ? Vh.data<T>() : nullptr;
    // LAPACK sees the (n, m) matrix A^T (complex A: A^T = conj(V) S U^T, so its "U" read row-major is
    // still Vh and its "VT" still U, no conjugation needed).
    const int lm = static_cast<int>(n), ln = static_cast<int>(m);
    const char jobz = !compute_uv ? 'N' : full_matrices ? 'A' : 'S';
    const int ldu = lm, ldvt = static_cast<int>(compute_uv ? ucols : 1);
    // Complex gesdd's real workspace (LAPACK's documented minimum).
    const int64_t mx = std::max(m, n);
    const int64_t lrwork64 = !compute_uv ? 7 * k : std::max(5 * k * k + 5 * k, 2 * mx * k + 2 * k * k + k);
    FB_CHECK_VALUE(lrwork64 <= INT_MAX, "[linalg.svd] the LAPACK workspace exceeds its 32-bit size limit");
    T wq{};
    int info = 0;
    std::vector<int> iw_q(static_cast<size_t>(8 * k));
    std::vector<R> rw_q(is_complex_v<T> ? static_cast<size_t>(lrwork64) : 1);
    T dummy{};
    auto call = [&](T* a, R* s, T* u, T* vt, T* work, int lwork, R* rwork, int* iwork, int* inf) {
      if constexpr (is_complex_v<T>)
        la::gesdd(jobz, lm, ln, a, lm, s, u, ldu, vt, ldvt, work, lwork, rwork, iwork, inf);
      else
        la::gesdd(jobz, lm, ln, a, lm, s, u, ldu, vt, ldvt, work, lwork, iwork, inf);
      (void)rwork;
    };
    call(ad, sd, compute_uv ? vd : &dummy, compute_uv ? ud : &dummy, &wq, -1, rw_q.data(), iw_q.data(),
         &info);
    const int lwork = workspace_size(wq, "linalg.svd");
    const int64_t lrwork = is_complex_v<T> ? lrwork64 : 1;
    for_each_matrix(batch, (is_complex_v<T> ? 56.0 : 14.0) * m * n * k, [&](int64_t i, Workspace& ws) {
      T* work = ws.get<T>(0, lwork);
      int* iwork = ws.get<int>(1, 8 * k);
      R* rwork = ws.get<R>(2, lrwork);
      T d1{}, d2{};
      if (!all_finite(ad + i * m * n, m * n)) {  // Note [non-finite LAPACK input]
        infos[static_cast<size_t>(i)] = kNonFiniteInfo;
        return;
      }
      int inf = 0;
      call(ad + i * m * n, sd + i * k, compute_uv ? vd + i * vrows * n : &d1,
           compute_uv ? ud + i * m * ucols : &d2, work, lwork, rwork, iwork, &inf);
      infos[static_cast<size_t>(i)] = inf;
    });
  });
  });
  for (size_t i = 0; i < infos.size(); ++i) {
    const int inf = infos[i];
    FB_CHECK_VALUE(inf != kNonFiniteInfo, "linalg.svd: ", batch_prefix(batch, i),
                   "The algorithm failed to converge because the input matrix contained non-finite values.");
    FB_CHECK_VALUE(inf <= 0, "linalg.svd: ", batch_prefix(batch, i),
                   "The algorithm failed to converge because the input matrix is ill-conditioned or has too "
                   "many repeated singular values (error code: ",
                   inf, ").");
    FB_CHECK(inf == 0, "linalg.svd: LAPACK gesdd failed with info ", inf,
             inf == -4 ? " (the input contains NaN or infinity)" : "");
  }
}

// ---- eigh: syevd on the row-major copy (A^T column-major; A's lower triangle is its upper) ----

// The eigenvalues (real for complex A) are written into w_out; the eigenvectors computed in a copy of A
// and copied into v_out ((0,) without compute_v).
void linalg_eigh_out_cpu(const Tensor& w_out, const Tensor& v_out, const Tensor& A, std::string_view uplo,
                         bool compute_v) {
  const bool lower = uplo == "L" || uplo == "l";
  const int64_t n = A.sizes()[A.dim() - 1];
  const int64_t batch = batch_count(A);
  if (A.numel() == 0) return;
  Tensor buf = owned_copy(A);
  std::vector<int> infos(static_cast<size_t>(batch), 0);
  cpu::write_contiguous(w_out, A, [&](const Tensor& W) {
  visit_float_complex(A.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* ad = buf.data<T>();
    const int ni = static_cast<int>(n);
    const char jobz = compute_v ? 'V' : 'N', lo = lower ? 'U' : 'L';
    if constexpr (is_complex_v<T>) {
      // Hermitian A: the buffer read column-major is A^T, whose `lo` triangle holds the conjugate of
      // A's `uplo` one: heevd returns A's eigenvalues and the conjugated eigenvectors (fixed below).
      using R = typename T::value_type;
      R* wd = W.data<R>();
      T wq{};
      R rwq{};
      int iwq = 0, info = 0;
      la::heevd(jobz, lo, ni, ad, ni, wd, &wq, -1, &rwq, -1, &iwq, -1, &info);
      const int lwork = workspace_size(wq, "linalg.eigh"), lrwork = workspace_size(rwq, "linalg.eigh"),
                liwork = std::max(1, iwq);
      for_each_matrix(batch, 9.0 * n * n * n, [&](int64_t i, Workspace& ws) {
        int inf = 0;
        la::heevd(jobz, lo, ni, ad + i * n * n, ni, wd + i * n, ws.get<T>(0, lwork), lwork,
                  ws.get<R>(1, lrwork), lrwork, ws.get<int>(2, liwork), liwork, &inf);
        infos[static_cast<size_t>(i)] = inf;
      });
      return;
    } else {
      T* wd = W.data<T>();
      T wq{};
      int iwq = 0, info = 0;
      la::syevd(jobz, lo, ni, ad, ni, wd, &wq, -1, &iwq, -1, &info);
      const int lwork = workspace_size(wq, "linalg.eigh"), liwork = std::max(1, iwq);
      for_each_matrix(batch, 9.0 * n * n * n, [&](int64_t i, Workspace& ws) {
        int inf = 0;
        la::syevd(jobz, lo, ni, ad + i * n * n, ni, wd + i * n, ws.get<T>(0, lwork), lwork,
                  ws.get<int>(1, liwork), liwork, &inf);
        infos[static_cast<size_t>(i)] = inf;
      });
    }
  });
  });
  for (int64_t i = 0; i < batch; ++i) {
    const int inf = infos[static_cast<size_t>(i)];
    FB_CHECK_VALUE(inf <= 0, "linalg.eigh: ", batch_prefix(batch, i),
                   "The algorithm failed to converge because the input matrix is ill-conditioned or has too "
                   "many repeated eigenvalues (error code: ",
                   inf, ").");
    FB_CHECK(inf == 0, "linalg.eigh: LAPACK syevd failed with info ", inf);
  }
  // Column-major eigenvectors (columns) read row-major are V^T (conj(V) for complex A, see above).
  if (!compute_v) return;
  const Tensor V = op::transpose(buf, -2, -1);
  cpu::copy_out(v_out, is_complex(A.dtype()) ? op::conj_physical(V) : V);
}

// ---- lstsq: gelsd on column-major copies ----

std::tuple<Tensor, Tensor, Tensor, Tensor> linalg_lstsq_cpu(const Tensor& A, const Tensor& B, double rcond) {
  check_matrix(A, "linalg.lstsq", false, "A", true);
  check_matrix(B, "linalg.lstsq", false, "B", true);
  FB_CHECK_TYPE(A.dtype() == B.dtype(), "[linalg.lstsq] expected A and B to have the same dtype, got ",
                dtype_name(A.dtype()), " and ", dtype_name(B.dtype()));
  const int64_t m = A.sizes()[A.dim() - 2], n = A.sizes()[A.dim() - 1], k = B.sizes()[B.dim() - 1];
  FB_CHECK_VALUE(A.dim() == B.dim() &&
                     std::equal(A.sizes().begin(), A.sizes().end() - 2, B.sizes().begin()) &&
                     B.sizes()[B.dim() - 2] == m,
                 "[linalg.lstsq] incompatible shapes of A and B for the equation AX = B (",
                 shape_str(A.sizes()), " and ", shape_str(B.sizes()), ")");
  const int64_t mx = std::max(m, n), mn = std::min(m, n);
  check_lapack_size("linalg.lstsq", {m, n});
  check_lapack_size("linalg.lstsq", {mx, k});
  const int64_t batch = batch_count(A);
  const Shape bs = batch_shape(A);
  Tensor a_buf = colmajor_copy(A);
  Tensor b_buf = zeros(with_tail(bs, {k, mx}), A.dtype(), A.device());  // column-major (mx, k)
  if (B.numel() > 0) {
    Tensor head = op::slice(b_buf, -1, 0, m, 1);
    op::copy_(head, op::transpose(B, -2, -1));
  }
  Tensor rank = zeros(bs, ScalarType::Int64, A.device());
  Tensor sv = zeros(with_tail(bs, {mn}), to_real_dtype(A.dtype()), A.device());  // real for complex A
  std::vector<int> infos(static_cast<size_t>(batch), 0);
  if (batch > 0 && mn > 0 && k > 0) {
    visit_float_complex(A.dtype(), [&](auto tag) {
      using T = decltype(tag);
      using R = decltype(std::abs(T{}));
      T* ad = a_buf.data<T>();
      T* bd = b_buf.data<T>();
      R* sd = sv.data<R>();
      int64_t* rd = rank.data<int64_t>();
      const int mi = static_cast<int>(m), ni = static_cast<int>(n), ki = static_cast<int>(k);
      const int ldb = static_cast<int>(mx);
      const R rc = rcond < 0 ? std::numeric_limits<R>::epsilon() * static_cast<R>(mx) : static_cast<R>(rcond);
      auto call = [&](T* a, T* b, R* s, int* r, T* work, int lwork, R* rwork, int* iwork, int* inf) {
        if constexpr (is_complex_v<T>)
          la::gelsd(mi, ni, ki, a, mi, b, ldb, s, rc, r, work, lwork, rwork, iwork, inf);
        else
          la::gelsd(mi, ni, ki, a, mi, b, ldb, s, rc, r, work, lwork, iwork, inf);
        (void)rwork;
      };
      T wq{};
      R rwq{};
      int iwq = 0, info = 0, rk = 0;
      call(ad, bd, sd, &rk, &wq, -1, &rwq, &iwq, &info);
      const int lwork = workspace_size(wq, "linalg.lstsq");
      const int lrwork = is_complex_v<T> ? workspace_size(rwq, "linalg.lstsq") : 1;
      const int liwork = std::max(1, iwq);
      for_each_matrix(batch, (is_complex_v<T> ? 48.0 : 12.0) * m * n * mn, [&](int64_t i, Workspace& ws) {
        int inf = 0, r = 0;
        if (!all_finite(ad + i * m * n, m * n) || !all_finite(bd + i * mx * k, mx * k)) {
          // Note [non-finite LAPACK input]: gelsd's bidiagonal solver would not end; the solution (and
          // the singular values) of a matrix with an infinity or NaN are NaN, rank 0.
          const R nan = std::numeric_limits<R>::quiet_NaN();
          if constexpr (is_complex_v<T>)
            std::fill(bd + i * mx * k, bd + (i + 1) * mx * k, T(nan, nan));
          else
            std::fill(bd + i * mx * k, bd + (i + 1) * mx * k, T(nan));
          std::fill(sd + i * mn, sd + (i + 1) * mn, nan);
          rd[i] = 0;
          return;
        }
        call(ad + i * m * n, bd + i * mx * k, sd + i * mn, &r, ws.get<T>(0, lwork), lwork,
             ws.get<R>(2, lrwork), ws.get<int>(1, liwork), &inf);
        rd[i] = r;
        infos[static_cast<size_t>(i)] = inf;
      });
    });
  }
  for (int64_t i = 0; i < batch; ++i) {
    const int inf = infos[static_cast<size_t>(i)];
    FB_CHECK_VALUE(
        inf <= 0, "linalg.lstsq: ", batch_prefix(batch, i),
        "The algorithm failed to converge because the input matrix is ill-conditioned (error code: ", inf,
        ").");
    FB_CHECK(inf == 0, "linalg.lstsq: LAPACK gelsd failed with info ", inf);
  }
  // Solution: the first n rows of the column-major (mx, k) result.
  Tensor X = contiguous(op::transpose(op::slice(b_buf, -1, 0, n, 1), -2, -1));
  // Residuals (as PyTorch): squared norms of rows n..m-1 when m > n and every matrix has full rank.
  Tensor residuals = op::empty(Shape{0}, to_real_dtype(A.dtype()), A.device());
  if (m > n && batch > 0 && mn > 0 && k > 0) {
    bool full = true;
    for (int64_t i = 0; i < batch; ++i) full = full && rank.data<int64_t>()[i] == n;
    if (full) {
      Tensor tail = op::slice(b_buf, -1, n, m, 1);
      if (is_complex(tail.dtype())) tail = op::abs(tail);  // |r|^2: real residuals for complex A
      const Shape last{-1};
      residuals = op::sum(op::mul(tail, tail), IntArrayRef(last), false, std::nullopt);
    }
  }
  return {X, residuals, rank, sv};
}

// ---- eig: geev (right eigenvectors; real input: conjugate pairs unpacked) ----

// The eigenvalues are written into l_out (complex); the eigenvectors column-major into a buffer, copied
// into v_out transposed ((0,) without compute_v).
void linalg_eig_out_cpu(const Tensor& l_out, const Tensor& v_out, const Tensor& A, bool compute_v) {
  const char* op = compute_v ? "linalg.eig" : "linalg.eigvals";
  const ScalarType t = A.dtype();
  const int64_t n = A.sizes()[A.dim() - 1];
  const int64_t batch = batch_count(A);
  const ScalarType ct = is_complex(t) ? t : to_complex_dtype(t);
  if (A.numel() == 0) return;
  // V is written column-major: (batch, n, n) holding each V^T, transposed back at the end.
  Tensor V = op::empty(compute_v ? with_tail(batch_shape(A), {n, n}) : Shape{0}, ct, A.device());
  Tensor buf = colmajor_copy(A);
  bool finite = true;  // Note [non-finite LAPACK input]
  visit_float_complex(t, [&](auto tag) { finite = all_finite(buf.data<decltype(tag)>(), buf.numel()); });
  FB_CHECK_VALUE(finite, op, ": input tensor should not contain infs or NaNs.");
  std::vector<int> infos(static_cast<size_t>(batch), 0);
  const int ni = static_cast<int>(n);
  const char jobvr = compute_v ? 'V' : 'N';
  cpu::write_contiguous(l_out, A, [&](const Tensor& L) {
  const double flops = 10.0 * static_cast<double>(n) * n * n;
  auto run_real = [&](auto tag) {
    using T = decltype(tag);
    using C = std::complex<T>;
    T* data = buf.data<T>();
    C* ld = L.data<C>();
    C* vd = compute_v ? V.data<C>() : nullptr;
    T wq{};
    int info = 0;
    la::geev(jobvr, ni, data, ni, nullptr, nullptr, nullptr, ni, &wq, -1, &info);
    const int lwork = workspace_size(wq, op);
    for_each_matrix(batch, flops, [&](int64_t i, Workspace& ws) {
      T* wr = ws.get<T>(0, n);
      T* wi = ws.get<T>(1, n);
      T* vr = compute_v ? ws.get<T>(2, n * n) : ws.get<T>(2, 1);
      int inf = 0;
      la::geev(jobvr, ni, data + i * n * n, ni, wr, wi, vr, ni, ws.get<T>(3, lwork), lwork, &inf);
      infos[static_cast<size_t>(i)] = inf;
      if (inf != 0) return;
      C* l = ld + i * n;
      for (int64_t j = 0; j < n; ++j) l[j] = C(wr[j], wi[j]);
      if (!compute_v) return;
      C* v = vd + i * n * n;
      for (int64_t j = 0; j < n; ++j) {
        const T* c = vr + j * n;
        if (wi[j] == T(0) || j + 1 == n) {
          for (int64_t r = 0; r < n; ++r) v[j * n + r] = C(c[r], T(0));
        } else {  // a conjugate pair: columns j and j + 1 hold the real and imaginary parts
          const T* s = c + n;
          for (int64_t r = 0; r < n; ++r) {
            v[j * n + r] = C(c[r], s[r]);
            v[(j + 1) * n + r] = C(c[r], -s[r]);
          }
          ++j;
        }
      }
    });
  };
  auto run_complex = [&](auto tag) {
    using T = decltype(tag);
    using C = std::complex<T>;
    C* data = buf.data<C>();
    C* ld = L.data<C>();
    C* vd = compute_v ? V.data<C>() : nullptr;
    C wq{};
    int info = 0;
    {  // the workspace query, with real buffers (zgeev's query reads some of them)
      std::vector<C> w(static_cast<size_t>(n)), v(compute_v ? static_cast<size_t>(n * n) : 1);
      std::vector<T> rw(static_cast<size_t>(2 * n));
      la::geev(jobvr, ni, data, ni, w.data(), v.data(), ni, &wq, -1, rw.data(), &info);
    }
    const int lwork = workspace_size(wq.real(), op);
    for_each_matrix(batch, 4.0 * flops, [&](int64_t i, Workspace& ws) {
      int inf = 0;
      C* vr = compute_v ? vd + i * n * n : ws.get<C>(0, 1);
      la::geev(jobvr, ni, data + i * n * n, ni, ld + i * n, vr, ni, ws.get<C>(1, lwork), lwork,
               ws.get<T>(2, 2 * n), &inf);
      infos[static_cast<size_t>(i)] = inf;
    });
  };
  if (t == ScalarType::Float32)
    run_real(float{});
  else if (t == ScalarType::Float64)
    run_real(double{});
  else if (t == ScalarType::ComplexFloat)
    run_complex(float{});
  else
    run_complex(double{});
  });
  for (int64_t i = 0; i < batch; ++i) {
    const int inf = infos[static_cast<size_t>(i)];
    FB_CHECK_VALUE(
        inf <= 0, op, ": ", batch_prefix(batch, i),
        "The algorithm failed to converge because the input matrix is ill-conditioned or has too many "
        "repeated eigenvalues (error code: ",
        inf, ").");
    FB_CHECK(inf == 0, op, ": LAPACK geev failed with info ", inf);
  }
  if (compute_v) cpu::copy_out(v_out, op::transpose(V, -2, -1));
}

FB_REGISTER_OUT_KERNEL(op::_linalg_inv, CPU, linalg_inv_out_cpu);
FB_REGISTER_OUT_KERNEL(op::_linalg_solve, CPU, linalg_solve_out_cpu);
FB_REGISTER_OUT_KERNEL(op::_linalg_slogdet, CPU, linalg_slogdet_out_cpu);
FB_REGISTER_OUT_KERNEL(op::_linalg_cholesky, CPU, linalg_cholesky_out_cpu);
FB_REGISTER_OUT_KERNEL(op::_linalg_qr, CPU, linalg_qr_out_cpu);
FB_REGISTER_OUT_KERNEL(op::_linalg_svd, CPU, linalg_svd_out_cpu);
FB_REGISTER_OUT_KERNEL(op::_linalg_eigh, CPU, linalg_eigh_out_cpu);
FB_REGISTER_KERNEL(op::_linalg_lstsq, CPU, linalg_lstsq_cpu);
FB_REGISTER_OUT_KERNEL(op::_linalg_eig, CPU, linalg_eig_out_cpu);

}  // namespace
}  // namespace flambeau
