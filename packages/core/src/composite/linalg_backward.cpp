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
//
// Complex inputs: the same formulas with conjugate
// transposes (mH for mT), as PyTorch's. Complex qr: copyltu keeps the real part
// of M's diagonal (R's diagonal is real). Complex svd: the diagonal gains
// i Im(diag(U^H gU)) / S; complex svd and eigh vectors are defined up to a phase
// e^{i phi}, and a loss that depends on it raises PyTorch's error (checked on
// the imaginary part of diag(U^H gU) + diag(V^H gV), resp. diag(V^H gV)). The
// eigh gradient is projected on the Hermitian matrices (skew part of V^H gV),
// as PyTorch's.
#include "composite_generated.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "host_read.h"

namespace flambeau {
namespace {

Tensor mT(const Tensor& t) { return op::transpose(t, -2, -1); }
/// The conjugate transpose (mT for real tensors; complex cholesky).
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
/// tril(M) + tril(M, -1)^H: the Hermitian matrix with M's lower triangle (the real part of its diagonal).
Tensor copyltu(const Tensor& M) {
  const int64_t n = M.sizes()[M.dim() - 1];
  Tensor strict =
      index_mask(n, M, [&](const Tensor& d) { return op::gt(d, scalar_tensor(0, ScalarType::Int64)); });
  Tensor low = op::mul(M, strict);
  Tensor diag = op::mul(M, eye_like(n, M));
  if (is_complex(diag.dtype())) diag = op::real(diag);
  return op::add(op::add(low, mH(low), 1), diag, 1);
}
/// Raises `message` when max(x) > tol (x real; the phase checks of complex svd and eigh).
void check_small(const Tensor& x, double tol, const char* message) {
  if (x.numel() == 0) return;
  const Tensor worst =
      op::contiguous(op::cast(op::amax(x, {}, false), ScalarType::Float64), MemoryFormat::Contiguous);
  const double w = composite_detail::read_first<double>(worst);  // on a device too (it waits, as PyTorch's)
  FB_CHECK_VALUE(!(w > tol), message);
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
  if (has(gR)) M = op::matmul(R, mH(*gR));
  if (has(gQ)) {
    Tensor t = op::matmul(mH(*gQ), Q);
    M = M.defined() ? op::sub(M, t, 1) : op::neg(t);
  }
  Tensor b = op::matmul(Q, copyltu(M));
  if (has(gQ)) b = op::add(b, *gQ, 1);
  return op::matmul(b, mH(op::_linalg_inv(R)));
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
    Tensor extra = op::matmul(Y, mH(gV));
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
  const bool cplx = is_complex(U.dtype());
  const Tensor V = mH(Vh);
  const Tensor S_row = op::unsqueeze(S, -2), S_col = op::unsqueeze(S, -1);
  const Tensor S2 = op::mul(S, S);
  const Tensor E = op::add(op::sub(op::unsqueeze(S2, -2), op::unsqueeze(S2, -1), 1), eye_like(k, S), 1);
  Tensor inner, UhgU, VhgV, gV, im_u;
  if (has(gU)) {
    UhgU = op::matmul(mH(U), *gU);
    inner = op::mul(op::sub(UhgU, mH(UhgU), 1), S_row);
  }
  if (has(gVh)) {
    gV = mH(*gVh);
    VhgV = op::matmul(Vh, gV);
    Tensor t = op::mul(S_col, op::sub(VhgV, mH(VhgV), 1));
    inner = inner.defined() ? op::add(inner, t, 1) : t;
  }
  if (cplx) {
    // The loss must not depend on the phases: Im diag(U^H gU) = -Im diag(V^H gV) (PyTorch's lax check).
    if (has(gU)) im_u = op::imag(op::diagonal(UhgU, 0, -2, -1));
    const Tensor im_v = has(gVh) ? op::imag(op::diagonal(VhgV, 0, -2, -1)) : Tensor();
    Tensor gap;
    if (im_u.defined() && im_v.defined())
      gap = op::sub(op::abs(op::add(im_u, im_v, 1)), op::mul(op::abs(im_v), num(1e-2, im_v)), 1);
    else
      gap = op::abs(im_u.defined() ? im_u : im_v);
    check_small(
        gap, 1e-2,
        "svd_backward: The singular vectors in the complex case are specified up to multiplication by "
        "e^{i phi}. The specified loss function depends on this phase term, making it ill-defined.");
  }
  inner = op::div(inner, E);
  if (has(gS)) inner = op::add(inner, diag_embed(*gS), 1);
  if (cplx && im_u.defined()) {
    const Tensor d = diag_embed(op::div(im_u, S));
    inner = op::add(inner, op::complex(op::mul(d, num(0.0, d)), d), 1);
  }
  Tensor gA = op::matmul(U, op::matmul(inner, Vh));
  if (has(gU) && m > k) {
    Tensor perp = op::sub(*gU, op::matmul(U, UhgU), 1);
    gA = op::add(gA, op::matmul(op::div(perp, S_row), Vh), 1);
  }
  if (has(gVh) && n > k) {
    Tensor perp = op::sub(gV, op::matmul(V, VhgV), 1);
    gA = op::add(gA, op::matmul(U, mH(op::div(perp, S_row))), 1);
  }
  return gA;
}

Tensor composite::_linalg_eigh_backward(const std::optional<Tensor>& gL, const std::optional<Tensor>& gV,
                                        const Tensor& L, const Tensor& V) {
  const int64_t n = L.sizes()[L.dim() - 1];
  FB_CHECK_VALUE(V.numel() > 0 || L.numel() == 0,
                 "[linalg.eigh] the derivative needs the eigenvectors: call it with compute_v=True");
  // No eigenvalues (an empty batch, or 0 x 0 matrices): an empty gradient, whatever V holds.
  if (L.numel() == 0) return batch_zeros(L, 1, n, n);
  Tensor inner;
  if (has(gV)) {
    const Tensor I = eye_like(n, L);
    const Tensor E = op::add(op::sub(op::unsqueeze(L, -2), op::unsqueeze(L, -1), 1), I, 1);
    Tensor VhgV = op::matmul(mH(V), *gV);
    if (is_complex(V.dtype()))
      check_small(
          op::abs(op::imag(op::diagonal(VhgV, 0, -2, -1))), 1e-2,
          "linalg_eigh_backward: The eigenvectors in the complex case are specified up to multiplication "
          "by e^{i phi}. The specified loss function depends on this quantity, so it is ill-defined.");
    // The projection on the tangent space of the unitary group (the skew-Hermitian part), as PyTorch's:
    // the gradient is then Hermitian.
    VhgV = op::mul(op::sub(VhgV, mH(VhgV), 1), num(0.5, L));
    inner = op::mul(op::div(VhgV, E), op::sub(num(1.0, L), I, 1));
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
