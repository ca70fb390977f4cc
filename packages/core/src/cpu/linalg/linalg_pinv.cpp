// CPU kernel of _linalg_pinv (ops.yaml, section "mode, frexp, pinv"): the Moore-Penrose
// pseudo-inverse of a batch of (*, m, n) float32/float64/complex64/complex128
// matrices, from the SVD A = U S Vh (pinv = V S^+ U^H) or, for hermitian=True,
// the eigendecomposition A = V L V^H (pinv = V L^+ V^H), both LAPACK through
// the primitives _linalg_svd/_linalg_eigh (src/cpu/linalg/lapack.cpp). Singular
// values (|eigenvalues|) <= max(atol, rtol * s_max) are dropped, atol and rtol
// real tensors broadcast against the batch dims (flambeau_core/_linalg_decompositions.py
// builds them from PyTorch's defaults). Its derivative is PyTorch's
// pinv_backward (src/composite/linalg_pinv_backward.cpp), defined for
// rank-deficient A too. A structured op: the meta step (src/meta/linalg_rules.cpp)
// checks A and gives the result's shape; this out kernel copies the product into it.

#include "cpu/write_out.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"

namespace flambeau {
namespace {

Tensor mH(const Tensor& t) {
  Tensor r = op::transpose(t, -2, -1);
  return is_complex(t.dtype()) ? op::conj_physical(r) : r;
}

/// 1 / s where s > tol, else 0 (s, tol real; tol (*, 1) against s (*, k)).
Tensor masked_reciprocal(const Tensor& s, const Tensor& abs_s, const Tensor& tol) {
  const Tensor keep = op::gt(abs_s, tol);
  const Tensor one = scalar_tensor(1, s.dtype());
  const Tensor safe = op::where(keep, s, one);
  return op::where(keep, op::reciprocal(safe), scalar_tensor(0, s.dtype()));
}

Tensor linalg_pinv(const Tensor& A, const Tensor& atol, const Tensor& rtol, bool hermitian) {
  const ScalarType t = A.dtype();
  // The tolerances keep their dtype (float64 for Python numbers, as PyTorch's): cast to float32 a bound
  // such as 1e300 would overflow; the comparisons promote as PyTorch's do.
  const Tensor at = op::unsqueeze(atol, -1);
  const Tensor rl = op::unsqueeze(rtol, -1);
  const Shape last{-1};
  if (hermitian) {
    auto [L, V] = op::_linalg_eigh(A, "L", true);
    const Tensor absL = op::abs(L);
    const Tensor tol = op::maximum(at, op::mul(rl, op::amax(absL, IntArrayRef(last), true)));
    Tensor inv = masked_reciprocal(L, absL, tol);
    if (is_complex(t)) inv = op::cast(inv, t);
    return op::matmul(op::mul(V, op::unsqueeze(inv, -2)), mH(V));
  }
  auto [U, S, Vh] = op::_linalg_svd(A, false, true);
  const Tensor tol = op::maximum(at, op::mul(rl, op::amax(S, IntArrayRef(last), true)));
  Tensor inv = masked_reciprocal(S, S, tol);
  if (is_complex(t)) inv = op::cast(inv, t);
  return op::matmul(op::mul(mH(Vh), op::unsqueeze(inv, -2)), mH(U));
}

// An empty A (m or n 0) has an empty pseudo-inverse: nothing to write.
void linalg_pinv_out_cpu(const Tensor& out, const Tensor& A, const Tensor& atol, const Tensor& rtol, bool hermitian) {
  if (out.numel() == 0) return;
  cpu::copy_out(out, linalg_pinv(A, atol, rtol, hermitian));
}

FB_REGISTER_OUT_KERNEL(op::_linalg_pinv, CPU, linalg_pinv_out_cpu);

}  // namespace
}  // namespace flambeau
