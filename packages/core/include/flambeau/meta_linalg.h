#pragma once
// The meta step's vocabulary for the LAPACK-backed linalg primitives (Note [Meta step], flambeau/meta.h;
// src/meta/linalg_rules.cpp): the checks of _linalg_inv ... _ormqr (their messages are the kernels' of
// before, naming the public function: "[linalg.solve] ...") and the shape functions they share.
#include <string_view>
#include <vector>

#include "flambeau/macros.h"
#include "flambeau/tensor.h"

namespace flambeau::meta {

// ---- checks ----
/// A float32/float64/complex batch (*, n, n) of square matrices, n within LAPACK's 32-bit sizes
/// (inv, slogdet, cholesky, ldl_factor).
FB_API void check_linalg_square(const char* op, const Tensor& A);
/// solve: A square, B (*, n, k) of A's dtype and batch dims.
FB_API void check_linalg_solve(const char* op, const Tensor& A, const Tensor& B);
/// qr: a float/complex batch of matrices, mode reduced, complete or r.
FB_API void check_linalg_qr(const char* op, const Tensor& A, std::string_view mode);
/// svd: a float/complex batch of matrices.
FB_API void check_linalg_svd(const char* op, const Tensor& A);
/// eigh: a square float/complex batch, uplo L or U (either case).
FB_API void check_linalg_eigh(const char* op, const Tensor& A, std::string_view uplo);
/// eig: a square float/complex batch; the messages name linalg.eig, or linalg.eigvals without compute_v.
FB_API void check_linalg_eig(const char* op, const Tensor& A, bool compute_v);
/// pinv: a float/complex batch of matrices, square with hermitian.
FB_API void check_linalg_pinv(const char* op, const Tensor& A, bool hermitian);
/// lu_factor: a float/complex batch of matrices, pivot=True.
FB_API void check_linalg_lu_factor(const char* op, const Tensor& A, bool pivot);
/// lu_solve: LU square, int32 pivots (*, n), B of LU's dtype and batch dims, n rows (left) or columns.
FB_API void check_linalg_lu_solve(const char* op, const Tensor& LU, const Tensor& pivots, const Tensor& B, bool left);
/// ldl_solve: LD square, int32 pivots (*, n), B (*, n, k) of LD's dtype and batch dims.
FB_API void check_linalg_ldl_solve(const char* op, const Tensor& LD, const Tensor& pivots, const Tensor& B);
/// _lu_pivots_to_permutation: int32 pivots (*, k) of at most m rows' swaps.
FB_API void check_lu_permutation(const char* op, const Tensor& pivots, int64_t m);
/// geqrf: a float/complex batch of matrices.
FB_API void check_geqrf(const char* op, const Tensor& A);
/// ormqr: input (*, mn, cols), tau (*, k), other (*, m, n) of one dtype and batch dims, k <= min(mn, cols),
/// mn the rows (left) or columns of other.
FB_API void check_ormqr(const char* op, const Tensor& input, const Tensor& tau, const Tensor& other, bool left);

// ---- shape functions ----
/// `matrix_batch`: the batch dims (*) of a batch of matrices (*, m, n).
FB_API Shape matrix_batch(const char* op, const Tensor& A);
/// `linalg_factor`: one shape per result of a factorization of A (*, m, n): the factor (*, m, n), then
/// (*, min(m, n)) (pivots, tau) and (*) (info).
FB_API std::vector<Shape> linalg_factor(const char* op, const Tensor& A);
/// `linalg_qr`: Q (*, m, m complete else k), (0,) for mode r, and R (*, m complete else k, n).
FB_API std::vector<Shape> linalg_qr(const char* op, const Tensor& A, std::string_view mode);
/// `linalg_svd`: U (*, m, m or k), S (*, k), Vh (*, n or k, n); U and Vh (0,) without compute_uv.
FB_API std::vector<Shape> linalg_svd(const char* op, const Tensor& A, bool full_matrices, bool compute_uv);
/// `linalg_eig`: eigenvalues (*, n) and eigenvectors (*, n, n), (0,) without compute_v.
FB_API std::vector<Shape> linalg_eig(const char* op, const Tensor& A, bool compute_v);
/// `lu_permutation`: (*, m) for pivots (*, k).
FB_API Shape lu_permutation(const char* op, const Tensor& pivots, int64_t m);
/// `linalg_pinv`: (*, n, m) for A (*, m, n), its batch dims broadcast with atol's and rtol's shapes as the
/// kernel's products broadcast them (their messages); A's batch dims when A is empty.
FB_API Shape linalg_pinv(const char* op, const Tensor& A, const Tensor& atol, const Tensor& rtol);

}  // namespace flambeau::meta
