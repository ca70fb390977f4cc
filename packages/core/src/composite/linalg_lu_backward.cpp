// Derivatives of the LU primitives (ops.yaml, section "linalg: LU, LDL, geqrf,
// ormqr"), composites of core ops so that create_graph=True differentiates them
// again. Derived from A = P L U (P a permutation, L unit lower, U upper), with
// conjugate transposes (^H) for complex inputs, PyTorch's convention:
//
// Square A (m = n): P^T dA = dL U + L dU, so X = L^{-1} P^T dA U^{-1} splits into
// L^{-1} dL = tril(X, -1) and dU U^{-1} = triu(X); hence
//   gA = P L^{-H} [tril(L^H gL, -1) + triu(gU U^H)] U^{-H}.
// Wide A (m < n, U = [U1 U2], U1 square): the square case for A1 = P L U1, and
// dU2 = L^{-1} P^T dA2 - tril(X1, -1) U2 adds -tril(gU2 U2^H, -1) to X1's gradient:
//   gA1 = P L^{-H} [tril(L^H gL - gU2 U2^H, -1) + triu(gU1 U1^H)] U1^{-H},  gA2 = P L^{-H} gU2.
// Tall A (m > n, L = [L1; L2], L1 square): the square case for the top rows, and
// dL2 = (P^T dA)_2 U^{-1} - L2 triu(X1) adds -triu(L2^H gL2) to X1's gradient:
//   P^T gA = [L1^{-H} [tril(L1^H gL1, -1) + triu(gU U^H - L2^H gL2)] U^{-H};  gL2 U^{-H}].
// The packed LU of lu_factor has gL = tril(grad, -1) and gU = triu(grad).
//
// lu_solve: X = op(A)^{-1} B (left) or B op(A)^{-1}; gB solves the adjoint system, and
// gA follows from d(op(A)^{-1}) = -op(A)^{-1} d op(A) op(A)^{-1}; then the packed LU's gradient
// through A = P L U: gL = tril(P^T gA U^H, -1), gU = triu(L^H P^T gA).
#include "composite_generated.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"

namespace flambeau {
namespace {

Tensor mH(const Tensor& t) {
  Tensor mt = op::transpose(t, -2, -1);
  return is_complex(t.dtype()) ? op::conj_physical(mt) : mt;
}
Tensor rows(const Tensor& t, int64_t b, int64_t e) { return op::slice(t, -2, b, e, 1); }
Tensor cols(const Tensor& t, int64_t b, int64_t e) { return op::slice(t, -1, b, e, 1); }

/// The permutation matrix P (m, m) of LAPACK's row swaps, A = P L U, in like's dtype.
Tensor permutation_matrix(const Tensor& pivots, int64_t m, const Tensor& like) {
  Tensor perm = op::_lu_pivots_to_permutation(pivots, m);                               // (*, m)
  Tensor r = op::unsqueeze(op::arange(0, m, 1, ScalarType::Int64, like.device()), -1);  // (m, 1)
  return op::cast(op::eq(r, op::unsqueeze(perm, -2)), like.dtype());  // P[r, i] = (r == perm[i])
}
/// Unit lower L (m, k) and upper U (k, n) of a packed LU (m, n).
std::pair<Tensor, Tensor> unpack(const Tensor& LU) {
  const int64_t m = LU.sizes()[LU.dim() - 2], n = LU.sizes()[LU.dim() - 1], k = std::min(m, n);
  Tensor L = op::tril(cols(LU, 0, k), -1);
  Tensor eye = op::eye(m, k, LU.dtype(), LU.device());
  return {op::add(L, eye, 1), op::triu(rows(LU, 0, k), 0)};
}
/// M^{-H} Y and Y M^{-H} for a square nonsingular triangular M.
Tensor solve_left_h(const Tensor& M, const Tensor& Y) { return op::_linalg_solve(mH(M), Y); }
Tensor solve_right_h(const Tensor& Y, const Tensor& M) { return mH(op::_linalg_solve(M, mH(Y))); }

/// P^T gA of A = P L U from gL = tril(gL, -1) and gU = triu(gU) (the three cases above).
Tensor lu_backward_permuted(const Tensor& gL, const Tensor& gU, const Tensor& L, const Tensor& U) {
  const int64_t m = L.sizes()[L.dim() - 2], n = U.sizes()[U.dim() - 1];
  if (m == n) {
    Tensor gX = op::add(op::tril(op::matmul(mH(L), gL), -1), op::triu(op::matmul(gU, mH(U)), 0), 1);
    return solve_right_h(solve_left_h(L, gX), U);
  }
  if (m < n) {
    const Tensor U1 = cols(U, 0, m), U2 = cols(U, m, n), gU1 = cols(gU, 0, m), gU2 = cols(gU, m, n);
    Tensor low = op::tril(op::sub(op::matmul(mH(L), gL), op::matmul(gU2, mH(U2)), 1), -1);
    Tensor gX1 = op::add(low, op::triu(op::matmul(gU1, mH(U1)), 0), 1);
    return op::cat({solve_right_h(solve_left_h(L, gX1), U1), solve_left_h(L, gU2)}, -1);
  }
  const Tensor L1 = rows(L, 0, n), L2 = rows(L, n, m), gL1 = rows(gL, 0, n), gL2 = rows(gL, n, m);
  Tensor up = op::triu(op::sub(op::matmul(gU, mH(U)), op::matmul(mH(L2), gL2), 1), 0);
  Tensor gX1 = op::add(op::tril(op::matmul(mH(L1), gL1), -1), up, 1);
  return op::cat({solve_right_h(solve_left_h(L1, gX1), U), solve_right_h(gL2, U)}, -2);
}

}  // namespace

Tensor composite::_linalg_lu_factor_ex_backward(const Tensor& grad, const Tensor& LU, const Tensor& pivots) {
  const int64_t m = LU.sizes()[LU.dim() - 2], n = LU.sizes()[LU.dim() - 1];
  if (LU.numel() == 0 || m == 0 || n == 0) return op::mul(grad, scalar_tensor(0, grad.dtype()));
  auto [L, U] = unpack(LU);
  const int64_t k = std::min(m, n);
  Tensor gL = op::tril(cols(grad, 0, k), -1);
  Tensor gU = op::triu(rows(grad, 0, k), 0);
  Tensor PtgA = lu_backward_permuted(gL, gU, L, U);
  return op::matmul(permutation_matrix(pivots, m, LU), PtgA);
}

Tensor composite::_linalg_lu_solve_backward(const Tensor& grad, const Tensor& LU, const Tensor& pivots,
                                            const Tensor& X, bool left, bool adjoint) {
  const int64_t n = LU.sizes()[LU.dim() - 1];
  if (LU.numel() == 0 || X.numel() == 0 || n == 0) return op::mul(LU, scalar_tensor(0, LU.dtype()));
  Tensor gB = op::_linalg_lu_solve(LU, pivots, grad, left, !adjoint);
  Tensor gA = left ? (adjoint ? op::matmul(X, mH(gB)) : op::matmul(gB, mH(X)))
                   : (adjoint ? op::matmul(mH(gB), X) : op::matmul(mH(X), gB));
  gA = op::neg(gA);
  auto [L, U] = unpack(LU);
  Tensor PtgA = op::matmul(mH(permutation_matrix(pivots, n, LU)), gA);
  Tensor gL = op::tril(op::matmul(PtgA, mH(U)), -1);
  Tensor gU = op::triu(op::matmul(mH(L), PtgA), 0);
  return op::add(gL, gU, 1);
}

}  // namespace flambeau
