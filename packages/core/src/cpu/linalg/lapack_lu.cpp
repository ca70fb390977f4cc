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
// broadcasts them). Pivots come from the user, so they are checked before
// LAPACK reads them: getrs and sytrs index rows with them unchecked.

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "cpu/linalg/lapack.h"
#include "cpu/linalg/lapack_batch.h"
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

void check_same_batch(const char* op, const Tensor& a, const char* an, int64_t a_tail, const Tensor& b,
                      const char* bn, int64_t b_tail) {
  const bool same = a.dim() - a_tail == b.dim() - b_tail &&
                    std::equal(a.sizes().begin(), a.sizes().end() - a_tail, b.sizes().begin());
  FB_CHECK_VALUE(same, "[", op, "] expected ", an, " and ", bn, " to have the same batch dimensions, got ",
                 an, " of shape ", shape_str(a.sizes()), " and ", bn, " of shape ", shape_str(b.sizes()));
}

void check_pivots_tensor(const char* op, const Tensor& pivots) {
  FB_CHECK_TYPE(pivots.dtype() == ScalarType::Int32, "[", op,
                "] expected pivots to be an int32 tensor, got ", dtype_name(pivots.dtype()), " (shape ",
                shape_str(pivots.sizes()), ")");
  FB_CHECK_VALUE(pivots.dim() >= 1, "[", op, "] expected pivots to have at least 1 dimension, got shape ",
                 shape_str(pivots.sizes()));
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

std::tuple<Tensor, Tensor, Tensor> linalg_lu_factor_ex_cpu(const Tensor& A, bool pivot, bool check_errors) {
  const char* op = "linalg.lu_factor";
  check_matrix(A, op, false, "A", true);
  FB_CHECK_VALUE(pivot, "[", op, "] LU without pivoting is not implemented on the CPU");
  const int64_t m = A.sizes()[A.dim() - 2], n = A.sizes()[A.dim() - 1], k = std::min(m, n);
  check_lapack_size(op, {m, n});
  const int64_t batch = batch_count(A);
  const Shape bs = batch_shape(A);
  Tensor buf = colmajor_copy(A);  // (*, n, m) row-major: column-major (m, n), lda m
  Tensor pivots = op::empty(with_tail(bs, {k}), ScalarType::Int32, A.device());
  Tensor info = zeros(bs, ScalarType::Int32, A.device());
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
  return {from_colmajor(buf), pivots, info};
}

// ---- lu_solve: getrs (right-hand side on the right: X A = B is A^H X^H = B^H) ----

Tensor lu_solve_left(const Tensor& LU, const Tensor& pivots, const Tensor& B, bool adjoint) {
  const char* op = "linalg.lu_solve";
  const int64_t n = LU.sizes()[LU.dim() - 1], k = B.sizes()[B.dim() - 1];
  check_lapack_size(op, {n, n});
  check_lapack_size(op, {n, k});
  const int64_t batch = batch_count(LU);
  Tensor piv = contiguous(pivots);
  Tensor a_buf = colmajor_copy(LU);
  Tensor b_buf = colmajor_copy(B);  // (*, k, n) row-major: column-major (n, k), ldb n
  if (batch == 0 || n == 0 || k == 0) return from_colmajor(b_buf);
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
  return from_colmajor(b_buf);
}

Tensor linalg_lu_solve_cpu(const Tensor& LU, const Tensor& pivots, const Tensor& B, bool left, bool adjoint) {
  const char* op = "linalg.lu_solve";
  check_matrix(LU, op, true, "LU", true);
  check_matrix(B, op, false, "B", true);
  check_pivots_tensor(op, pivots);
  FB_CHECK_TYPE(LU.dtype() == B.dtype(), "[", op, "] expected LU and B to have the same dtype, got ",
                dtype_name(LU.dtype()), " and ", dtype_name(B.dtype()));
  const int64_t n = LU.sizes()[LU.dim() - 1];
  FB_CHECK_VALUE(pivots.sizes()[pivots.dim() - 1] == n, "[", op,
                 "] expected pivots of shape (*, n) with n = ", n, " (LU of shape ", shape_str(LU.sizes()),
                 "), got shape ", shape_str(pivots.sizes()));
  check_same_batch(op, LU, "LU", 2, pivots, "pivots", 1);
  check_same_batch(op, LU, "LU", 2, B, "B", 2);
  const int64_t rows = B.sizes()[B.dim() - (left ? 2 : 1)];
  FB_CHECK_VALUE(rows == n, "[", op, "] incompatible shapes of LU and B for the equation ",
                 left ? "AX = B" : "XA = B", " (", shape_str(LU.sizes()), " and ", shape_str(B.sizes()), ")");
  if (left) return lu_solve_left(LU, pivots, B, adjoint);
  return conj_transpose(lu_solve_left(LU, pivots, conj_transpose(B), !adjoint));
}

// ---- the permutation of a sequence of LAPACK row swaps ----

Tensor lu_pivots_to_permutation_cpu(const Tensor& pivots, int64_t m) {
  const char* op = "lu_unpack";
  check_pivots_tensor(op, pivots);
  const int64_t k = pivots.sizes()[pivots.dim() - 1];
  FB_CHECK_VALUE(m >= k, "[", op, "] expected at least as many rows as pivots, got ", m,
                 " rows and pivots of shape ", shape_str(pivots.sizes()));
  Tensor piv = contiguous(pivots);
  Shape s(pivots.sizes().begin(), pivots.sizes().end() - 1);
  int64_t batch = 1;
  for (int64_t d : s) batch *= d;
  s.push_back(m);
  Tensor perm = op::empty(s, ScalarType::Int64, pivots.device());
  if (batch == 0 || m == 0) return perm;
  const int32_t* pd = piv.data<int32_t>();
  check_lu_pivot_values(op, pd, batch * k, m);
  int64_t* out = perm.data<int64_t>();
  parallel_for(0, batch, std::max<int64_t>(1, 4096 / std::max<int64_t>(m, 1)), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      int64_t* p = out + i * m;
      for (int64_t r = 0; r < m; ++r) p[r] = r;
      for (int64_t j = 0; j < k; ++j) std::swap(p[j], p[pd[i * k + j] - 1]);
    }
  });
  return perm;
}

// ---- ldl_factor: sytrf/hetrf('L') on a column-major copy ----

std::tuple<Tensor, Tensor, Tensor> linalg_ldl_factor_ex_cpu(const Tensor& A, bool hermitian,
                                                            bool check_errors) {
  const char* op = "linalg.ldl_factor";
  check_matrix(A, op, true, "A", true);
  const int64_t n = A.sizes()[A.dim() - 1];
  check_lapack_size(op, {n, n});
  const int64_t batch = batch_count(A);
  const Shape bs = batch_shape(A);
  Tensor buf = colmajor_copy(A);
  Tensor pivots = op::empty(with_tail(bs, {n}), ScalarType::Int32, A.device());
  Tensor info = zeros(bs, ScalarType::Int32, A.device());
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
  // LAPACK leaves the strict upper triangle as it was; PyTorch returns it zeroed.
  return {op::tril(from_colmajor(buf), 0), pivots, info};
}

// ---- ldl_solve: sytrs/hetrs('L') ----

Tensor linalg_ldl_solve_cpu(const Tensor& LD, const Tensor& pivots, const Tensor& B, bool hermitian) {
  const char* op = "linalg.ldl_solve";
  check_matrix(LD, op, true, "LD", true);
  check_matrix(B, op, false, "B", true);
  check_pivots_tensor(op, pivots);
  FB_CHECK_TYPE(LD.dtype() == B.dtype(), "[", op, "] expected LD and B to have the same dtype, got ",
                dtype_name(LD.dtype()), " and ", dtype_name(B.dtype()));
  const int64_t n = LD.sizes()[LD.dim() - 1], k = B.sizes()[B.dim() - 1];
  FB_CHECK_VALUE(pivots.sizes()[pivots.dim() - 1] == n, "[", op,
                 "] expected pivots of shape (*, n) with n = ", n, " (LD of shape ", shape_str(LD.sizes()),
                 "), got shape ", shape_str(pivots.sizes()));
  check_same_batch(op, LD, "LD", 2, pivots, "pivots", 1);
  check_same_batch(op, LD, "LD", 2, B, "B", 2);
  FB_CHECK_VALUE(B.sizes()[B.dim() - 2] == n, "[", op,
                 "] incompatible shapes of LD and B for the equation AX = B (", shape_str(LD.sizes()),
                 " and ", shape_str(B.sizes()), ")");
  check_lapack_size(op, {n, n});
  check_lapack_size(op, {n, k});
  const int64_t batch = batch_count(LD);
  Tensor piv = contiguous(pivots);
  Tensor a_buf = colmajor_copy(LD);
  Tensor b_buf = colmajor_copy(B);
  if (batch == 0 || n == 0 || k == 0) return from_colmajor(b_buf);
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
  return from_colmajor(b_buf);
}

// ---- geqrf: the Householder QR as LAPACK stores it ----

std::tuple<Tensor, Tensor> geqrf_cpu(const Tensor& A) {
  const char* op = "geqrf";
  check_matrix(A, op, false, "input", true);
  const int64_t m = A.sizes()[A.dim() - 2], n = A.sizes()[A.dim() - 1], k = std::min(m, n);
  check_lapack_size(op, {m, n});
  const int64_t batch = batch_count(A);
  Tensor buf = colmajor_copy(A);
  Tensor tau = op::empty(with_tail(batch_shape(A), {k}), A.dtype(), A.device());
  if (batch > 0 && k > 0) {
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
  }
  return {from_colmajor(buf), tau};
}

// ---- ormqr: C <- op(Q) C or C op(Q), Q the product of geqrf's reflectors ----

Tensor ormqr_cpu(const Tensor& input, const Tensor& tau, const Tensor& other, bool left, bool transpose) {
  const char* op = "ormqr";
  check_matrix(input, op, false, "input", true);
  check_matrix(other, op, false, "other", true);
  FB_CHECK_VALUE(tau.dim() >= 1, "[", op, "] expected tau to have at least 1 dimension, got shape ",
                 shape_str(tau.sizes()));
  FB_CHECK_TYPE(tau.dtype() == input.dtype() && other.dtype() == input.dtype(), "[", op,
                "] expected input, tau and other to have the same dtype, got ", dtype_name(input.dtype()),
                ", ", dtype_name(tau.dtype()), " and ", dtype_name(other.dtype()));
  check_same_batch(op, input, "input", 2, tau, "tau", 1);
  check_same_batch(op, input, "input", 2, other, "other", 2);
  const int64_t mn = input.sizes()[input.dim() - 2], cols = input.sizes()[input.dim() - 1];
  const int64_t m = other.sizes()[other.dim() - 2], n = other.sizes()[other.dim() - 1];
  const int64_t k = tau.sizes()[tau.dim() - 1];
  FB_CHECK_VALUE(mn == (left ? m : n), "[", op, "] input.shape[-2] must equal other.shape[", left ? -2 : -1,
                 "] (", left ? "left" : "right", "=True), got input of shape ", shape_str(input.sizes()),
                 " and other of shape ", shape_str(other.sizes()));
  FB_CHECK_VALUE(k <= cols, "[", op,
                 "] tau.shape[-1] must be less than or equal to input.shape[-1], got tau of shape ",
                 shape_str(tau.sizes()), " and input of shape ", shape_str(input.sizes()));
  FB_CHECK_VALUE(k <= mn, "[", op,
                 "] tau.shape[-1] must be less than or equal to input.shape[-2], got tau of shape ",
                 shape_str(tau.sizes()), " and input of shape ", shape_str(input.sizes()));
  check_lapack_size(op, {mn, cols});
  check_lapack_size(op, {m, n});
  const int64_t batch = batch_count(input);
  Tensor a_buf = colmajor_copy(input);
  Tensor t_buf = contiguous(tau);
  Tensor c_buf = colmajor_copy(other);  // column-major (m, n), ldc m
  if (batch == 0 || m == 0 || n == 0 || k == 0) return from_colmajor(c_buf);
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
  return from_colmajor(c_buf);
}

FB_REGISTER_KERNEL(op::_linalg_lu_factor_ex, CPU, linalg_lu_factor_ex_cpu);
FB_REGISTER_KERNEL(op::_linalg_lu_solve, CPU, linalg_lu_solve_cpu);
FB_REGISTER_KERNEL(op::_lu_pivots_to_permutation, CPU, lu_pivots_to_permutation_cpu);
FB_REGISTER_KERNEL(op::_linalg_ldl_factor_ex, CPU, linalg_ldl_factor_ex_cpu);
FB_REGISTER_KERNEL(op::_linalg_ldl_solve, CPU, linalg_ldl_solve_cpu);
FB_REGISTER_KERNEL(op::_geqrf, CPU, geqrf_cpu);
FB_REGISTER_KERNEL(op::_ormqr, CPU, ormqr_cpu);

}  // namespace
}  // namespace flambeau
