// CPU kernels of the LU, LDL and Householder-QR primitives (ops.yaml, section
// "linalg: LU, LDL, geqrf, ormqr"): _linalg_lu_factor_ex (getrf),
// _linalg_lu_solve (getrs), _lu_pivots_to_permutation, _linalg_ldl_factor_ex
// (sytrf/hetrf), _linalg_ldl_solve (sytrs/hetrs), _geqrf and _ormqr
// (ormqr/unmqr). The public functions (flambeau.linalg.lu_factor, lu, ldl_factor,
// ..., flambeau.geqrf, ormqr) are Python composites in flambeau_core/_linalg_lu.py;
// the derivatives of the LU ones are in src/composite/linalg_lu_backward.cpp.
//
// As in lapack.cpp: float32/float64/complex64/complex128 batches, one LAPACK
// call per matrix, the batch in parallel (lapack_batch.h). The solves take
// factors and right-hand sides with the same batch dims (the Python side
// broadcasts them). All are structured ops: the meta step (ops.yaml's rules,
// src/meta/linalg_rules.cpp) checks the dtypes and shapes and allocates the
// results, and these out kernels compute into them. Pivots come from the user,
// so their values are checked here before LAPACK reads them: getrs and sytrs
// index rows with them unchecked.

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "cpu/linalg/lapack.h"
#include "cpu/linalg/lapack_batch.h"
#include "cpu/write_out.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"

namespace flambeau {
namespace {

namespace la = cpu::lapack;
using namespace cpu::lapack_batch;  // NOLINT(google-build-using-namespace)

Tensor conj_transpose(const Tensor& t) {
  Tensor mt = op::transpose(t, -2, -1);
  return is_complex(t.dtype()) ? op::conj_physical(mt) : mt;
}

/// Checks that each LU pivot lies in [1, rows] (LAPACK's 1-based row indices).
void check_lu_pivot_values(const char* op, const int32_t* piv, int64_t count, int64_t rows) {
  for (int64_t i = 0; i < count; ++i)
    FB_CHECK_VALUE(piv[i] >= 1 && piv[i] <= rows, "[", op, "] pivots must be 1-based row indices in [1, ",
                   rows, "], got ", piv[i], " at position ", i);
}

/// Checks Bunch-Kaufman pivots (uplo 'L'): a positive p is a 1x1 block swapped with row p; a negative
/// one starts a 2x2 block with the next row, swapped with row -p.
void check_ldl_pivot_values(const char* op, const int32_t* piv, int64_t n) {
  for (int64_t k = 0; k < n;) {
    const int32_t p = piv[k];
    FB_CHECK_VALUE(p != 0 && p >= -n && p <= n, "[", op, "] pivots must be in [-", n, ", -1] or [1, ", n,
                   "], got ", p, " at position ", k);
    if (p > 0) {
      ++k;
    } else {
      FB_CHECK_VALUE(k + 1 < n, "[", op, "] a negative pivot (a 2x2 block) at the last position ", k,
                     " has no second row");
      k += 2;
    }
  }
}

/// check_errors: raises for the first matrix whose LAPACK info is not 0 (> 0: `factor`[info, info] is
/// zero, as PyTorch words it; < 0: an argument LAPACK refused, an internal error).
void raise_on_info(const char* op, const char* routine, const Tensor& info, int64_t batch, const char* factor,
                   const char* consequence) {
  const int32_t* id = info.data<int32_t>();
  for (int64_t i = 0; i < batch; ++i) {
    FB_CHECK(id[i] >= 0, "[", op, "] LAPACK ", routine, " failed with info ", id[i]);
    FB_CHECK_VALUE(id[i] == 0, "[", op, "] ", batch_prefix(batch, i), factor, "[", id[i], ",", id[i], "] ",
                   consequence);
  }
}

// ---- lu_factor: getrf on a column-major copy ----

void linalg_lu_factor_ex_out_cpu(const Tensor& lu_out, const Tensor& pivots_out, const Tensor& info_out,
                                 const Tensor& A, bool, bool check_errors) {
  const char* op = "linalg.lu_factor";
  const int64_t m = A.sizes()[A.dim() - 2], n = A.sizes()[A.dim() - 1], k = std::min(m, n);
  const int64_t batch = batch_count(A);
  Tensor buf = colmajor_copy(A);  // (*, n, m) row-major: column-major (m, n), lda m
  cpu::write_contiguous_outs<2>({pivots_out, info_out}, A, [&](const std::array<Tensor, 2>& dst) {
  const Tensor& pivots = dst[0];
  const Tensor& info = dst[1];
  Tensor info_fill = info;
  op::fill_(info_fill, 0);
  if (batch > 0 && k > 0) {
    visit_float_complex(A.dtype(), [&](auto tag) {
      using T = decltype(tag);
      T* data = buf.data<T>();
      int32_t* pd = pivots.data<int32_t>();
      int32_t* id = info.data<int32_t>();
      const int mi = static_cast<int>(m), ni = static_cast<int>(n);
      for_each_matrix(batch, (is_complex_v<T> ? 4.0 : 1.0) * m * n * k, [&](int64_t i, Workspace&) {
        int inf = 0;
        la::getrf(mi, ni, data + i * m * n, mi, pd + i * k, &inf);
        id[i] = inf;
      });
    });
  }
  if (check_errors)
    raise_on_info(op, "getrf", info, batch, "U",
                  "is zero and using it on lu_solve would result in a division by zero. If you still want to "
                  "perform the factorization, consider calling linalg.lu(A, pivot) or "
                  "linalg.lu_factor_ex(A, pivot)");
  });
  cpu::copy_out(lu_out, op::transpose(buf, -2, -1));
}

// ---- lu_solve: getrs (right-hand side on the right: X A = B is A^H X^H = B^H) ----

/// The column-major solution of A X = B (the meta step checked the sizes): (*, k, n) row-major.
Tensor lu_solve_left(const Tensor& LU, const Tensor& pivots, const Tensor& B, bool adjoint) {
  const char* op = "linalg.lu_solve";
  const int64_t n = LU.sizes()[LU.dim() - 1], k = B.sizes()[B.dim() - 1];
  const int64_t batch = batch_count(LU);
  Tensor piv = contiguous(pivots);
  Tensor a_buf = colmajor_copy(LU);
  Tensor b_buf = colmajor_copy(B);  // (*, k, n) row-major: column-major (n, k), ldb n
  if (batch == 0 || n == 0 || k == 0) return b_buf;
  check_lu_pivot_values(op, piv.data<int32_t>(), batch * n, n);
  const char trans = !adjoint ? 'N' : is_complex(LU.dtype()) ? 'C' : 'T';
  visit_float_complex(LU.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* ad = a_buf.data<T>();
    T* bd = b_buf.data<T>();
    const int32_t* pd = piv.data<int32_t>();
    const int ni = static_cast<int>(n), ki = static_cast<int>(k);
    for_each_matrix(batch, (is_complex_v<T> ? 8.0 : 2.0) * n * n * k, [&](int64_t i, Workspace&) {
      int inf = 0;
      la::getrs(trans, ni, ki, ad + i * n * n, ni, pd + i * n, bd + i * n * k, ni, &inf);
    });
  });
  return b_buf;
}

// X A = B is A^H X^H = B^H: the column-major solution of the latter read row-major is X^H^T = conj(X).
void linalg_lu_solve_out_cpu(const Tensor& out, const Tensor& LU, const Tensor& pivots, const Tensor& B, bool left,
                             bool adjoint) {
  if (left) return cpu::copy_out(out, op::transpose(lu_solve_left(LU, pivots, B, adjoint), -2, -1));
  const Tensor buf = lu_solve_left(LU, pivots, conj_transpose(B), !adjoint);
  cpu::copy_out(out, is_complex(buf.dtype()) ? op::conj_physical(buf) : buf);
}

// ---- the permutation of a sequence of LAPACK row swaps ----

void lu_pivots_to_permutation_out_cpu(const Tensor& perm_out, const Tensor& pivots, int64_t m) {
  const char* op = "lu_unpack";
  const int64_t k = pivots.sizes()[pivots.dim() - 1];
  Tensor piv = contiguous(pivots);
  int64_t batch = 1;
  for (int64_t d = 0; d + 1 < pivots.dim(); ++d) batch *= pivots.sizes()[d];
  if (batch == 0 || m == 0) return;
  const int32_t* pd = piv.data<int32_t>();
  check_lu_pivot_values(op, pd, batch * k, m);
  cpu::write_contiguous(perm_out, pivots, [&](const Tensor& perm) {
  int64_t* out = perm.data<int64_t>();
  parallel_for(0, batch, std::max<int64_t>(1, 4096 / std::max<int64_t>(m, 1)), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      int64_t* p = out + i * m;
      for (int64_t r = 0; r < m; ++r) p[r] = r;
      for (int64_t j = 0; j < k; ++j) std::swap(p[j], p[pd[i * k + j] - 1]);
    }
  });
  });
}

// ---- ldl_factor: sytrf/hetrf('L') on a column-major copy ----

void linalg_ldl_factor_ex_out_cpu(const Tensor& ld_out, const Tensor& pivots_out, const Tensor& info_out,
                                  const Tensor& A, bool hermitian, bool check_errors) {
  const char* op = "linalg.ldl_factor";
  const int64_t n = A.sizes()[A.dim() - 1];
  const int64_t batch = batch_count(A);
  Tensor buf = colmajor_copy(A);
  cpu::write_contiguous_outs<2>({pivots_out, info_out}, A, [&](const std::array<Tensor, 2>& dst) {
  const Tensor& pivots = dst[0];
  const Tensor& info = dst[1];
  Tensor info_fill = info;
  op::fill_(info_fill, 0);
  if (batch > 0 && n > 0) {
    visit_float_complex(A.dtype(), [&](auto tag) {
      using T = decltype(tag);
      T* data = buf.data<T>();
      int32_t* pd = pivots.data<int32_t>();
      int32_t* id = info.data<int32_t>();
      const int ni = static_cast<int>(n);
      const bool herm = hermitian && is_complex_v<T>;  // a real Hermitian matrix is symmetric
      auto call = [&](T* a, int* ipiv, T* work, int lwork, int* inf) {
        if constexpr (is_complex_v<T>) {
          if (herm) return la::hetrf('L', ni, a, ni, ipiv, work, lwork, inf);
        }
        la::sytrf('L', ni, a, ni, ipiv, work, lwork, inf);
      };
      T wq{};
      int q = 0;
      call(data, pd, &wq, -1, &q);
      const int lwork = workspace_size(wq, op);
      const double flops = (is_complex_v<T> ? 4.0 : 1.0) / 3.0 * n * n * n;
      for_each_matrix(batch, flops, [&](int64_t i, Workspace& ws) {
        int inf = 0;
        call(data + i * n * n, pd + i * n, ws.get<T>(0, lwork), lwork, &inf);
        id[i] = inf;
      });
    });
  }
  if (check_errors)
    raise_on_info(op, "sytrf", info, batch, "D",
                  "is exactly zero: the factorization is complete, but D is singular and solving with it "
                  "would divide by zero. Call linalg.ldl_factor_ex to get the factorization anyway.");
  });
  // LAPACK leaves the strict upper triangle as it was; PyTorch returns it zeroed.
  cpu::copy_out(ld_out, op::tril(op::transpose(buf, -2, -1), 0));
}

// ---- ldl_solve: sytrs/hetrs('L') ----

void linalg_ldl_solve_out_cpu(const Tensor& out, const Tensor& LD, const Tensor& pivots, const Tensor& B,
                              bool hermitian) {
  const char* op = "linalg.ldl_solve";
  const int64_t n = LD.sizes()[LD.dim() - 1], k = B.sizes()[B.dim() - 1];
  const int64_t batch = batch_count(LD);
  if (batch == 0 || n == 0 || k == 0) return;
  Tensor piv = contiguous(pivots);
  Tensor a_buf = colmajor_copy(LD);
  Tensor b_buf = colmajor_copy(B);
  const int32_t* pd = piv.data<int32_t>();
  for (int64_t i = 0; i < batch; ++i) check_ldl_pivot_values(op, pd + i * n, n);
  visit_float_complex(LD.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* ad = a_buf.data<T>();
    T* bd = b_buf.data<T>();
    const int ni = static_cast<int>(n), ki = static_cast<int>(k);
    const bool herm = hermitian && is_complex_v<T>;
    for_each_matrix(batch, (is_complex_v<T> ? 8.0 : 2.0) * n * n * k, [&](int64_t i, Workspace&) {
      int inf = 0;
      if constexpr (is_complex_v<T>) {
        if (herm) return la::hetrs('L', ni, ki, ad + i * n * n, ni, pd + i * n, bd + i * n * k, ni, &inf);
      }
      la::sytrs('L', ni, ki, ad + i * n * n, ni, pd + i * n, bd + i * n * k, ni, &inf);
    });
  });
  cpu::copy_out(out, op::transpose(b_buf, -2, -1));
}

// ---- geqrf: the Householder QR as LAPACK stores it ----

void geqrf_out_cpu(const Tensor& a_out, const Tensor& tau_out, const Tensor& A) {
  const char* op = "geqrf";
  const int64_t m = A.sizes()[A.dim() - 2], n = A.sizes()[A.dim() - 1], k = std::min(m, n);
  const int64_t batch = batch_count(A);
  Tensor buf = colmajor_copy(A);
  if (batch > 0 && k > 0) {
    cpu::write_contiguous(tau_out, A, [&](const Tensor& tau) {
    visit_float_complex(A.dtype(), [&](auto tag) {
      using T = decltype(tag);
      T* data = buf.data<T>();
      T* td = tau.data<T>();
      const int mi = static_cast<int>(m), ni = static_cast<int>(n);
      T wq{};
      int q = 0;
      la::geqrf(mi, ni, data, mi, td, &wq, -1, &q);
      const int lwork = workspace_size(wq, op);
      for_each_matrix(batch, (is_complex_v<T> ? 8.0 : 2.0) * m * n * k, [&](int64_t i, Workspace& ws) {
        int inf = 0;
        la::geqrf(mi, ni, data + i * m * n, mi, td + i * k, ws.get<T>(0, lwork), lwork, &inf);
      });
    });
    });
  }
  cpu::copy_out(a_out, op::transpose(buf, -2, -1));
}

// ---- ormqr: C <- op(Q) C or C op(Q), Q the product of geqrf's reflectors ----

void ormqr_out_cpu(const Tensor& out, const Tensor& input, const Tensor& tau, const Tensor& other, bool left,
                   bool transpose) {
  const char* op = "ormqr";
  const int64_t mn = input.sizes()[input.dim() - 2], cols = input.sizes()[input.dim() - 1];
  const int64_t m = other.sizes()[other.dim() - 2], n = other.sizes()[other.dim() - 1];
  const int64_t k = tau.sizes()[tau.dim() - 1];
  const int64_t batch = batch_count(input);
  if (batch == 0 || m == 0 || n == 0) return;
  Tensor c_buf = colmajor_copy(other);  // column-major (m, n), ldc m
  if (k == 0) return cpu::copy_out(out, op::transpose(c_buf, -2, -1));  // Q = I
  Tensor a_buf = colmajor_copy(input);
  Tensor t_buf = contiguous(tau);
  const char side = left ? 'L' : 'R';
  const char trans = !transpose ? 'N' : is_complex(input.dtype()) ? 'C' : 'T';
  visit_float_complex(input.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* ad = a_buf.data<T>();
    const T* td = t_buf.data<T>();
    T* cd = c_buf.data<T>();
    const int mi = static_cast<int>(m), ni = static_cast<int>(n), ki = static_cast<int>(k);
    const int lda = static_cast<int>(std::max<int64_t>(mn, 1));
    T wq{};
    int q = 0;
    la::ormqr(side, trans, mi, ni, ki, ad, lda, td, cd, mi, &wq, -1, &q);
    const int lwork = workspace_size(wq, op);
    for_each_matrix(batch, (is_complex_v<T> ? 8.0 : 2.0) * m * n * k, [&](int64_t i, Workspace& ws) {
      int inf = 0;
      la::ormqr(side, trans, mi, ni, ki, ad + i * mn * cols, lda, td + i * k, cd + i * m * n, mi,
                ws.get<T>(0, lwork), lwork, &inf);
    });
  });
  cpu::copy_out(out, op::transpose(c_buf, -2, -1));
}

FB_REGISTER_OUT_KERNEL(op::_linalg_lu_factor_ex, CPU, linalg_lu_factor_ex_out_cpu);
FB_REGISTER_OUT_KERNEL(op::_linalg_lu_solve, CPU, linalg_lu_solve_out_cpu);
FB_REGISTER_OUT_KERNEL(op::_lu_pivots_to_permutation, CPU, lu_pivots_to_permutation_out_cpu);
FB_REGISTER_OUT_KERNEL(op::_linalg_ldl_factor_ex, CPU, linalg_ldl_factor_ex_out_cpu);
FB_REGISTER_OUT_KERNEL(op::_linalg_ldl_solve, CPU, linalg_ldl_solve_out_cpu);
FB_REGISTER_OUT_KERNEL(op::_geqrf, CPU, geqrf_out_cpu);
FB_REGISTER_OUT_KERNEL(op::_ormqr, CPU, ormqr_out_cpu);

}  // namespace
}  // namespace flambeau
