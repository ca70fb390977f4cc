// Derivatives of the LAPACK primitives (ops.yaml, section linalg), written as
// composites of core ops so that create_graph=True differentiates them again.
// The formulas are PyTorch's (FunctionsManual.cpp) for real inputs:
//   cholesky: gA = sym(L^{-T} Phi(L^T gL) L^{-1}), Phi = lower triangle, diagonal halved
//   qr (m >= n): gA = (gQ + Q copyltu(M)) R^{-T}, M = R gR^T - gQ^T Q;
//      (m < n): A = Q [X | Y], R = [U | V]: gY = Q gV, and X's gradient from the
//      square case with gQ + Y gV^T
//   svd: gA = U [(skew(U^T gU) / E) S + S (skew(V^T gV) / E) + diag(gS)] V^T
//        + (I - U U^T) gU S^{-1} V^T + U S^{-1} gV^T (I - V V^T), E_ij = S_j^2 - S_i^2
//   eigh: gA = V (diag(gL) + (V^T gV) / E) V^T, E_ij = L_j - L_i off the diagonal
// The singular vectors and eigenvectors are defined up to sign: a loss that
// depends on that sign has no gradient (as in PyTorch, nothing checks it).
#include "composite_generated.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"

namespace flambeau {
namespace {

Tensor mT(const Tensor& t) { return op::transpose(t, -2, -1); }
/// The conjugate transpose (mT for real tensors; complex cholesky, issue 7).
Tensor mH(const Tensor& t) { return is_complex(t.dtype()) ? op::conj_physical(mT(t)) : mT(t); }
Tensor num(double v, const Tensor& like) { return scalar_tensor(v, like.dtype()); }

/// (n, n) mask of (row, col) pairs with `pred(row - col)`, in like's dtype.
template <class P>
Tensor index_mask(int64_t n, const Tensor& like, P pred) {
  Tensor r = op::unsqueeze(op::arange(0, n, 1, ScalarType::Int64, like.device()), -1);
  Tensor c = op::arange(0, n, 1, ScalarType::Int64, like.device());
  return op::cast(pred(op::sub(r, c, 1)), like.dtype());
}
Tensor eye_like(int64_t n, const Tensor& like) {
  return index_mask(n, like, [&](const Tensor& d) { return op::eq(d, scalar_tensor(0, ScalarType::Int64)); });
}
/// Lower triangle with the diagonal halved.
Tensor phi(const Tensor& X) {
  const int64_t n = X.sizes()[X.dim() - 1];
  Tensor strict =
      index_mask(n, X, [&](const Tensor& d) { return op::gt(d, scalar_tensor(0, ScalarType::Int64)); });
  Tensor mask = op::add(strict, op::mul(eye_like(n, X), num(0.5, X)), 1);
  return op::mul(X, mask);
}
/// tril(M) + tril(M, -1)^T: the symmetric matrix with M's lower triangle.
Tensor copyltu(const Tensor& M) {
  const int64_t n = M.sizes()[M.dim() - 1];
  Tensor strict =
      index_mask(n, M, [&](const Tensor& d) { return op::gt(d, scalar_tensor(0, ScalarType::Int64)); });
  Tensor low = op::mul(M, strict);
  return op::add(op::add(low, mT(low), 1), op::mul(M, eye_like(n, M)), 1);
}
Tensor diag_embed(const Tensor& v) {
  const int64_t n = v.sizes()[v.dim() - 1];
  return op::mul(op::unsqueeze(v, -1), eye_like(n, v));
}
bool has(const std::optional<Tensor>& g) { return g.has_value() && g->defined(); }
/// Zeros of shape batch(t) + (rows, cols), where t has `tail` trailing non-batch dims.
Tensor batch_zeros(const Tensor& t, int64_t tail, int64_t rows, int64_t cols) {
  Shape s(t.sizes().begin(), t.sizes().end() - tail);
  s.push_back(rows);
  s.push_back(cols);
  return zeros(s, t.dtype(), t.device());
}

/// The QR gradient when Q is square-or-tall and R square (m >= n = k).
Tensor qr_backward_tall(const std::optional<Tensor>& gQ, const std::optional<Tensor>& gR, const Tensor& Q,
                        const Tensor& R) {
  Tensor M;
  if (has(gR)) M = op::matmul(R, mT(*gR));
  if (has(gQ)) {
    Tensor t = op::matmul(mT(*gQ), Q);
    M = M.defined() ? op::sub(M, t, 1) : op::neg(t);
  }
  Tensor b = op::matmul(Q, copyltu(M));
  if (has(gQ)) b = op::add(b, *gQ, 1);
  return op::matmul(b, mT(op::_linalg_inv(R)));
}

}  // namespace

Tensor composite::_linalg_cholesky_backward(const Tensor& grad, const Tensor& L_, bool upper) {
  // Conjugate transposes: complex Hermitian A = L L^H (real: mH is mT), PyTorch's cholesky_backward.
  const Tensor L = upper ? mH(L_) : L_;
  const Tensor gL = upper ? mH(grad) : grad;
  Tensor Linv = op::_linalg_inv(L);
  Tensor P = phi(op::matmul(mH(L), gL));
  Tensor gA = op::matmul(mH(Linv), op::matmul(P, Linv));
  return op::mul(op::add(gA, mH(gA), 1), num(0.5, gA));
}

Tensor composite::_linalg_qr_backward(const std::optional<Tensor>& gQ, const std::optional<Tensor>& gR,
                                      const Tensor& Q, const Tensor& R, std::string_view mode) {
  FB_CHECK_VALUE(
      mode != "r",
      "[linalg.qr] The derivative of linalg.qr depends on Q, which is not computed when mode='r'. "
      "Please use linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.");
  const int64_t m = Q.sizes()[Q.dim() - 2], n = R.sizes()[R.dim() - 1];
  FB_CHECK_VALUE(
      !(mode == "complete" && m > n),
      "[linalg.qr] The QR decomposition is not differentiable when mode='complete' and nrows > ncols.");
  if (!has(gQ) && !has(gR)) return batch_zeros(Q, 2, m, n);
  if (m >= n) return qr_backward_tall(gQ, gR, Q, R);
  // m < n: A = Q [X | Y], R = [U | V] with U (m, m).
  const Tensor U = op::slice(R, -1, 0, m, 1);
  std::optional<Tensor> gU, gQx = gQ;
  Tensor gY;
  if (has(gR)) {
    gU = op::slice(*gR, -1, 0, m, 1);
    const Tensor gV = op::slice(*gR, -1, m, n, 1);
    const Tensor Y = op::matmul(Q, op::slice(R, -1, m, n, 1));
    gY = op::matmul(Q, gV);
    Tensor extra = op::matmul(Y, mT(gV));
    gQx = has(gQ) ? op::add(*gQ, extra, 1) : extra;
  }
  Tensor gX = qr_backward_tall(gQx, gU, Q, U);
  if (!gY.defined()) {
    Shape s(gX.sizes().begin(), gX.sizes().end());
    s.back() = n - m;
    gY = zeros(s, gX.dtype(), gX.device());
  }
  return op::cat({gX, gY}, -1);
}

Tensor composite::_linalg_svd_backward(const std::optional<Tensor>& gU_, const std::optional<Tensor>& gS,
                                       const std::optional<Tensor>& gVh_, const Tensor& U_, const Tensor& S,
                                       const Tensor& Vh_, bool full_matrices) {
  const int64_t m = U_.sizes()[U_.dim() - 2], n = Vh_.sizes()[Vh_.dim() - 1];
  const int64_t k = S.sizes()[S.dim() - 1];
  FB_CHECK_VALUE(U_.numel() > 0 || m * k == 0,
                 "[linalg.svd] the derivative needs the singular vectors: call it with compute_uv=True");
  // Only the first k singular vectors have a gradient (PyTorch's convention for full_matrices=True).
  const Tensor U = full_matrices ? op::slice(U_, -1, 0, k, 1) : U_;
  const Tensor Vh = full_matrices ? op::slice(Vh_, -2, 0, k, 1) : Vh_;
  std::optional<Tensor> gU = gU_, gVh = gVh_;
  if (full_matrices && has(gU)) gU = op::slice(*gU, -1, 0, k, 1);
  if (full_matrices && has(gVh)) gVh = op::slice(*gVh, -2, 0, k, 1);
  if (!has(gU) && !has(gVh)) {
    if (!has(gS)) return batch_zeros(S, 1, m, n);
    return op::matmul(op::mul(U, op::unsqueeze(*gS, -2)), Vh);
  }
  const Tensor V = mT(Vh);
  const Tensor S_row = op::unsqueeze(S, -2), S_col = op::unsqueeze(S, -1);
  const Tensor S2 = op::mul(S, S);
  const Tensor E = op::add(op::sub(op::unsqueeze(S2, -2), op::unsqueeze(S2, -1), 1), eye_like(k, S), 1);
  Tensor inner, UhgU, VhgV, gV;
  if (has(gU)) {
    UhgU = op::matmul(mT(U), *gU);
    inner = op::mul(op::sub(UhgU, mT(UhgU), 1), S_row);
  }
  if (has(gVh)) {
    gV = mT(*gVh);
    VhgV = op::matmul(Vh, gV);
    Tensor t = op::mul(S_col, op::sub(VhgV, mT(VhgV), 1));
    inner = inner.defined() ? op::add(inner, t, 1) : t;
  }
  inner = op::div(inner, E);
  if (has(gS)) inner = op::add(inner, diag_embed(*gS), 1);
  Tensor gA = op::matmul(U, op::matmul(inner, Vh));
  if (has(gU) && m > k) {
    Tensor perp = op::sub(*gU, op::matmul(U, UhgU), 1);
    gA = op::add(gA, op::matmul(op::div(perp, S_row), Vh), 1);
  }
  if (has(gVh) && n > k) {
    Tensor perp = op::sub(gV, op::matmul(V, VhgV), 1);
    gA = op::add(gA, op::matmul(U, mT(op::div(perp, S_row))), 1);
  }
  return gA;
}

Tensor composite::_linalg_eigh_backward(const std::optional<Tensor>& gL, const std::optional<Tensor>& gV,
                                        const Tensor& L, const Tensor& V) {
  const int64_t n = L.sizes()[L.dim() - 1];
  FB_CHECK_VALUE(V.numel() > 0 || n == 0,
                 "[linalg.eigh] the derivative needs the eigenvectors: call it with compute_v=True");
  Tensor inner;
  if (has(gV)) {
    const Tensor I = eye_like(n, L);
    const Tensor E = op::add(op::sub(op::unsqueeze(L, -2), op::unsqueeze(L, -1), 1), I, 1);
    inner = op::mul(op::div(op::matmul(mH(V), *gV), E), op::sub(num(1.0, L), I, 1));
  }
  if (has(gL)) {
    Tensor d = diag_embed(*gL);
    inner = inner.defined() ? op::add(inner, d, 1) : d;
  }
  if (!inner.defined()) return batch_zeros(L, 1, n, n);
  if (is_complex(V.dtype()) && !is_complex(inner.dtype())) inner = op::cast(inner, V.dtype());  // only gL
  return op::matmul(V, op::matmul(inner, mH(V)));  // complex (Hermitian) A: conjugate transposes
}

}  // namespace flambeau
