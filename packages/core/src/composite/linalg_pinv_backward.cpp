// The derivative of the pseudo-inverse (ops.yaml, section "mode, frexp, pinv"): PyTorch's
// pinv_backward, written with core ops so that create_graph=True
// differentiates it again. With P = pinv(A), G its gradient, A (m, n):
//   m <= n: K = G^H P,  gA = -(P K)^H + K P^H - A P K P^H + P^H P (G^H - K A)
//   m >  n: K = P G^H,  gA = -(K P)^H + (G^H - A K) P P^H + P^H K - P^H K P A
// It needs no singular value to be nonzero or distinct, so it is defined for
// rank-deficient A (where the gradient through the SVD divides by zero).
#include "composite_generated.h"
#include "flambeau/ops.h"

namespace flambeau {
namespace {

Tensor mH(const Tensor& t) {
  Tensor r = op::transpose(t, -2, -1);
  return is_complex(t.dtype()) ? op::conj_physical(r) : r;
}

}  // namespace

Tensor composite::_linalg_pinv_backward(const Tensor& grad, const Tensor& P, const Tensor& A) {
  const int64_t m = A.sizes()[A.dim() - 2], n = A.sizes()[A.dim() - 1];
  const Tensor Ph = mH(P), Gh = mH(grad);
  if (m <= n) {
    const Tensor K = op::matmul(Gh, P);
    const Tensor KPh = op::matmul(K, Ph);
    Tensor r = op::sub(KPh, mH(op::matmul(P, K)), 1);
    r = op::sub(r, op::matmul(op::matmul(A, P), KPh), 1);
    return op::add(r, op::matmul(op::matmul(Ph, P), op::sub(Gh, op::matmul(K, A), 1)), 1);
  }
  const Tensor K = op::matmul(P, Gh);
  const Tensor PhK = op::matmul(Ph, K);
  Tensor r =
      op::sub(op::matmul(op::matmul(op::sub(Gh, op::matmul(A, K), 1), P), Ph), mH(op::matmul(K, P)), 1);
  r = op::add(r, PhK, 1);
  return op::sub(r, op::matmul(op::matmul(PhK, P), A), 1);
}

}  // namespace flambeau
