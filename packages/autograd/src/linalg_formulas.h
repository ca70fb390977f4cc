#pragma once
// The forward (JVP) formulas of the linear-algebra entries of derivatives.yaml
// that need more than one expression (Note [Forward formulas] in
// codegen/gen_autograd.py). Written with core ops, like formula_helpers.h.
//
// Each is the differential of the factorization, with conjugate transposes for
// complex inputs, as PyTorch's (FunctionsManual.cpp). The tangent dA is used as
// given (eigh and cholesky read one triangle of A: a Hermitian dA is assumed,
// as PyTorch does). Where an output is defined up to a gauge (the phase of
// complex singular vectors and eigenvectors), the gauge is PyTorch's.
// A multi-output op computes each output's tangent by its own call.
#include <utility>

#include "formula_helpers.h"

namespace flambeau::autograd::formulas {

/// The size of dim i (negative: from the end) of t.
inline int64_t size_at(const Tensor& t, int64_t i) { return t.sizes()[i < 0 ? t.dim() + i : i]; }
/// The conjugate transpose of the last two dims (the transpose for real tensors).
inline Tensor mat_h(const Tensor& t) { return cj(op::transpose(t, -2, -1)); }
inline Tensor mat_t(const Tensor& t) { return op::transpose(t, -2, -1); }
inline Tensor mat_rows(const Tensor& t, int64_t b, int64_t e) { return op::slice(t, -2, b, e, 1); }
inline Tensor mat_cols(const Tensor& t, int64_t b, int64_t e) { return op::slice(t, -1, b, e, 1); }
/// X with X M = Y for a square nonsingular M.
inline Tensor solve_right(const Tensor& Y, const Tensor& M) {
  return mat_t(op::_linalg_solve(mat_t(M), mat_t(Y)));
}
/// The main diagonal of each matrix, as a vector.
inline Tensor mat_diagonal(const Tensor& t) { return op::diagonal(t, 0, -2, -1); }
/// (n, n) 1 off the diagonal and 0 on it over (n, n) E + I: the 1 / E_ij of the eigen- and singular-vector
/// formulas, 0 on the diagonal (where E is 0).
inline Tensor off_diagonal_reciprocal(const Tensor& E) {
  const int64_t n = size_at(E, -1);
  const Tensor eye = op::eye(n, std::nullopt, to_real_dtype(E.dtype()), E.device());
  return (1.0 - eye) / (E + eye);
}

// ---- determinants and inverses ----

/// log|det A| (output 0): Re tr(A^{-1} dA); the sign (output 1): sign * i Im tr(A^{-1} dA) for complex A,
/// 0 for real A (piecewise constant).
inline Tensor slogdet_jvp(const Tensor& A_t, const Tensor& A, const Tensor& sign, int output) {
  const int64_t last[1] = {-1};
  const Tensor tr = op::sum(mat_diagonal(op::_linalg_solve(A, A_t)), IntArrayRef(last), false, std::nullopt);
  if (!is_complex(tr.dtype())) return output == 0 ? tr : zeros_like(sign);
  if (output == 0) return op::real(tr);
  const Tensor im = op::imag(tr);
  return sign * op::complex(zeros_like(im), im);
}

/// dX = -X dA X + X X^H dA^H (I - A X) + (I - X A) dA^H X^H X for X = pinv(A) (of constant rank).
inline Tensor linalg_pinv_jvp(const Tensor& A_t, const Tensor& X, const Tensor& A) {
  const Tensor dAh = mat_h(A_t), Xh = mat_h(X);
  const Tensor own = -op::matmul(X, op::matmul(A_t, X));
  const Tensor left = op::matmul(op::matmul(X, Xh), dAh - op::matmul(dAh, op::matmul(A, X)));
  const Tensor right = op::matmul(dAh - op::matmul(op::matmul(X, A), dAh), op::matmul(Xh, X));
  return own + left + right;
}

// ---- cholesky, qr ----

/// A = L L^H: dL = L Phi(L^{-1} dA L^{-H}), Phi the lower triangle with the diagonal halved; upper: U = L^H.
inline Tensor linalg_cholesky_jvp(const Tensor& A_t, const Tensor& factor, bool upper) {
  const Tensor L = upper ? mat_h(factor) : factor;
  const Tensor inner = op::_linalg_solve(L, mat_h(op::_linalg_solve(L, mat_h(A_t))));
  const Tensor phi = op::tril(inner, -1) + op::diag_embed(mat_diagonal(inner), 0, -2, -1) * 0.5;
  const Tensor dL = op::matmul(L, phi);
  return upper ? mat_h(dL) : dL;
}

/// (dQ, dR) of A = Q R with m >= n (R square): X = dA R^{-1}, C = Q^H X; Q^H dQ = Omega is C's strict lower
/// triangle made skew-Hermitian (plus i Im diag(C), R's diagonal being real), dR = (C - Omega) R and
/// dQ = X - Q (C - Omega) (X's part outside Q's span stays in dQ).
inline std::pair<Tensor, Tensor> qr_jvp_tall(const Tensor& dA, const Tensor& Q, const Tensor& R) {
  const Tensor X = solve_right(dA, R);
  const Tensor C = op::matmul(mat_h(Q), X);
  const Tensor low = op::tril(C, -1);
  Tensor omega = low - mat_h(low);
  if (is_complex(C.dtype())) {
    const Tensor im = op::imag(mat_diagonal(C));
    omega = omega + op::diag_embed(op::complex(zeros_like(im), im), 0, -2, -1);
  }
  const Tensor upper = C - omega;
  return {X - op::matmul(Q, upper), op::matmul(upper, R)};
}

/// The tangent of Q (want_q) or R. m < n: A = Q [U | V] with U square, the square case for A's first m
/// columns, and dV = Q^H (dA_2 - dQ V).
inline Tensor linalg_qr_jvp(const Tensor& A_t, const Tensor& Q, const Tensor& R, const std::string& mode,
                            bool want_q) {
  FB_CHECK_VALUE(
      mode != "r",
      "[linalg.qr] The derivative of linalg.qr depends on Q, which is not computed when mode='r'. "
      "Please use linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.");
  const int64_t m = size_at(Q, -2), n = size_at(R, -1);
  FB_CHECK_VALUE(
      !(mode == "complete" && m > n),
      "[linalg.qr] The QR decomposition is not differentiable when mode='complete' and nrows > ncols.");
  if (m >= n) {
    auto [dQ, dR] = qr_jvp_tall(A_t, Q, R);
    return want_q ? dQ : dR;
  }
  auto [dQ, dU] = qr_jvp_tall(mat_cols(A_t, 0, m), Q, mat_cols(R, 0, m));
  if (want_q) return dQ;
  const Tensor dV = op::matmul(mat_h(Q), mat_cols(A_t, m, n) - op::matmul(dQ, mat_cols(R, m, n)));
  return op::cat({dU, dV}, -1);
}

// ---- svd, eigh, eig ----

/// The tangents of U, S and Vh of A = U diag(S) Vh, k = min(m, n), from one dP:
///   dP = U^H dA V, dS = Re diag(dP),
///   dU = U (F o (dP S + S dP^H)) + (dA V - U dP) S^{-1}   (the second term for m > k),
///   dV = V (F o (S dP + dP^H S)) + (dA^H U - V dP^H) S^{-1}   (n > k),
/// F_ij = 1 / (s_j^2 - s_i^2) off the diagonal. Complex A: the phase i Im(dP_ii) / s_i goes to U's
/// diagonal; full_matrices: the columns of U (rows of Vh) past k get zeros (both PyTorch's gauge).
/// Without compute_uv (svdvals) the vectors are recomputed for dS, and U, Vh (empty) get no tangent.
inline std::tuple<Tensor, Tensor, Tensor> linalg_svd_jvp(const Tensor& A_t, const Tensor& A, const Tensor& U_,
                                                         const Tensor& S, const Tensor& Vh_, bool full_matrices,
                                                         bool compute_uv) {
  const int64_t m = size_at(A, -2), n = size_at(A, -1), k = size_at(S, -1);
  Tensor U = U_, Vh = Vh_;
  if (!compute_uv) {
    std::tie(U, std::ignore, Vh) = op::_linalg_svd(A, false, true);
  } else if (full_matrices) {
    U = mat_cols(U, 0, k);
    Vh = mat_rows(Vh, 0, k);
  }
  const Tensor V = mat_h(Vh);
  const Tensor AV = op::matmul(A_t, V);
  const Tensor dP = op::matmul(mat_h(U), AV);
  const Tensor d = mat_diagonal(dP);
  const Tensor dS = is_complex(d.dtype()) ? op::real(d) : d;
  if (!compute_uv) return {Tensor(), dS, Tensor()};
  const Tensor S_row = op::unsqueeze(S, -2), S_col = op::unsqueeze(S, -1);
  const Tensor S2 = S * S;
  const Tensor F = off_diagonal_reciprocal(op::unsqueeze(S2, -2) - op::unsqueeze(S2, -1));
  Tensor inner = F * (dP * S_row + S_col * mat_h(dP));
  if (is_complex(dP.dtype())) {
    const Tensor im = op::imag(d) / S;
    inner = inner + op::diag_embed(op::complex(zeros_like(im), im), 0, -2, -1);
  }
  Tensor dU = op::matmul(U, inner);
  if (m > k) dU = dU + (AV - op::matmul(U, dP)) / S_row;
  if (full_matrices && m > k) {
    Shape s(dU.sizes().begin(), dU.sizes().end());
    s.back() = m - k;
    dU = op::cat({dU, zeros(s, dU.dtype(), dU.device())}, -1);
  }
  Tensor dV = op::matmul(V, F * (S_col * dP + mat_h(dP) * S_row));
  if (n > k) dV = dV + (op::matmul(mat_h(A_t), U) - op::matmul(V, mat_h(dP))) / S_row;
  Tensor dVh = mat_h(dV);
  if (full_matrices && n > k) {
    Shape s(dVh.sizes().begin(), dVh.sizes().end());
    s[s.size() - 2] = n - k;
    dVh = op::cat({dVh, zeros(s, dVh.dtype(), dVh.device())}, -2);
  }
  return {dU, dS, dVh};
}

/// A = V diag(L) V^H: dL = Re diag(V^H dA V), dV = V (F o V^H dA V), F_ij = 1 / (l_j - l_i) off the
/// diagonal (V^H dV's diagonal 0: PyTorch's gauge), both from one product. Without compute_v
/// (eigvalsh) the vectors are recomputed for dL, and the (empty) eigenvectors get no tangent.
inline std::tuple<Tensor, Tensor> linalg_eigh_jvp(const Tensor& A_t, const Tensor& A, const Tensor& L,
                                                  const Tensor& V_, const std::string& uplo, bool compute_v) {
  const Tensor V = compute_v ? V_ : std::get<1>(op::_linalg_eigh(A, uplo, true));
  const Tensor dP = op::matmul(mat_h(V), op::matmul(A_t, V));
  const Tensor d = mat_diagonal(dP);
  const Tensor dL = is_complex(d.dtype()) ? op::real(d) : d;
  if (!compute_v) return {dL, Tensor()};
  return {dL, op::matmul(V, off_diagonal_reciprocal(op::unsqueeze(L, -2) - op::unsqueeze(L, -1)) * dP)};
}

/// A = V diag(L) V^{-1}: dP = V^{-1} dA V, dL = diag(dP) (output 0); X = V (F o dP), F_ij = 1 / (l_j - l_i)
/// off the diagonal, and dV = X - V Re(diag(V^H X)) keeps the eigenvectors at unit norm (output 1; PyTorch's
/// gauge). Without compute_v (eigvals) the vectors are recomputed for dL.
inline Tensor linalg_eig_jvp(const Tensor& A_t, const Tensor& A, const Tensor& L, const Tensor& V_,
                             bool compute_v, int output) {
  Tensor V = V_;
  if (!compute_v) {
    if (output != 0) return Tensor();
    V = std::get<1>(op::_linalg_eig(A, true));
  }
  const Tensor dA = is_complex(A_t.dtype()) ? A_t : op::cast(A_t, V.dtype());
  const Tensor dP = op::_linalg_solve(V, op::matmul(dA, V));
  if (output == 0) return mat_diagonal(dP);
  const Tensor X = op::matmul(V, off_diagonal_reciprocal(op::unsqueeze(L, -2) - op::unsqueeze(L, -1)) * dP);
  const Tensor re = op::real(mat_diagonal(op::matmul(mat_h(V), X)));
  return X - V * op::unsqueeze(re, -2);
}

// ---- LU ----

/// The permutation matrix P (m, m) of LAPACK's row swaps, A = P L U, in like's dtype.
inline Tensor lu_permutation_matrix(const Tensor& pivots, int64_t m, const Tensor& like) {
  const Tensor perm = op::_lu_pivots_to_permutation(pivots, m);
  const Tensor r = op::unsqueeze(op::arange(0, m, 1, ScalarType::Int64, like.device()), -1);
  return op::cast(op::eq(r, op::unsqueeze(perm, -2)), like.dtype());  // P[r, i] = (r == perm[i])
}

/// The unit lower L (m, k) and upper U (k, n) of a packed LU (m, n).
inline std::pair<Tensor, Tensor> lu_factors(const Tensor& LU) {
  const int64_t m = size_at(LU, -2), n = size_at(LU, -1), k = std::min(m, n);
  const Tensor L = op::tril(mat_cols(LU, 0, k), -1) + op::eye(m, k, LU.dtype(), LU.device());
  return {L, op::triu(mat_rows(LU, 0, k), 0)};
}

/// The tangent of the packed LU of A = P L U. Square: X = L^{-1} P^T dA U^{-1}, dL = L tril(X, -1),
/// dU = triu(X) U. Wide (U = [U1 U2]): the square case for the first m columns, dU2 = L^{-1} (B2 - dL U2).
/// Tall (L = [L1; L2]): the square case for the first n rows, dL2 = (B2 - L2 dU) U^{-1}; B = P^T dA.
inline Tensor linalg_lu_factor_jvp(const Tensor& A_t, const Tensor& LU, const Tensor& pivots) {
  const int64_t m = size_at(LU, -2), n = size_at(LU, -1);
  if (LU.numel() == 0) return zeros_like(LU);
  auto [L, U] = lu_factors(LU);
  const Tensor B = op::matmul(mat_t(lu_permutation_matrix(pivots, m, LU)), A_t);
  auto square = [](const Tensor& Bs, const Tensor& Ls, const Tensor& Us) {
    const Tensor X = solve_right(op::_linalg_solve(Ls, Bs), Us);
    return std::pair<Tensor, Tensor>{op::matmul(Ls, op::tril(X, -1)), op::matmul(op::triu(X, 0), Us)};
  };
  if (m == n) {
    auto [dL, dU] = square(B, L, U);
    return dL + dU;
  }
  if (m < n) {
    const Tensor U2 = mat_cols(U, m, n);
    auto [dL, dU1] = square(mat_cols(B, 0, m), L, mat_cols(U, 0, m));
    const Tensor dU2 = op::_linalg_solve(L, mat_cols(B, m, n) - op::matmul(dL, U2));
    return op::cat({dL + dU1, dU2}, -1);
  }
  const Tensor L2 = mat_rows(L, n, m);
  auto [dL1, dU] = square(mat_rows(B, 0, n), mat_rows(L, 0, n), U);
  const Tensor dL2 = solve_right(mat_rows(B, n, m) - op::matmul(L2, dU), U);
  return op::cat({dL1 + dU, dL2}, -2);
}

/// lu_solve's term of the packed LU's tangent: dA = P (dL U + L dU) (dL = tril(LU_t, -1), dU = triu(LU_t)),
/// and d(op(A)^{-1}) = -op(A)^{-1} d op(A) op(A)^{-1}: -op(A)^{-1} d op(A) X (left) or -X d op(A) op(A)^{-1}.
inline Tensor linalg_lu_solve_jvp_LU(const Tensor& LU_t, const Tensor& LU, const Tensor& pivots, const Tensor& X,
                                     bool left, bool adjoint) {
  auto [L, U] = lu_factors(LU);
  const Tensor dA = op::matmul(lu_permutation_matrix(pivots, size_at(LU, -2), LU),
                               op::matmul(op::tril(LU_t, -1), U) + op::matmul(L, op::triu(LU_t, 0)));
  const Tensor d_op = adjoint ? mat_h(dA) : dA;
  const Tensor rhs = left ? -op::matmul(d_op, X) : -op::matmul(X, d_op);
  return op::_linalg_lu_solve(LU, pivots, rhs, left, adjoint);
}

}  // namespace flambeau::autograd::formulas
