// Derivative of the general eigendecomposition _linalg_eig (ops.yaml, section
// fft; kernel in src/cpu/linalg/lapack.cpp), as a composite of core ops so that
// create_graph=True differentiates it again. PyTorch's formula
// (linalg_eig_backward), for eigenvectors of unit norm:
//   gA = V^{-H} (diag(gL) + (V^H gV - V^H V Re(diag(V^H gV))) / conj(E)) V^H,
//   E_ij = L_j - L_i off the diagonal (1 on it).
// Each eigenvector is defined up to a phase e^{i phi}: a loss that depends on
// it has no gradient, and the imaginary part of diag(V^H gV) says so (checked,
// as PyTorch does). Repeated eigenvalues make E singular (inf/NaN), as in
// PyTorch. A real input takes the real part (autograd casts the gradient).
//
// core's matmul and solve are real-only: the complex products here are four
// real ones, and V^H X = Y is solved as the real system
// [[Re M, -Im M], [Im M, Re M]] [Re X; Im X] = [Re Y; Im Y].
#include "composite_generated.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "host_read.h"

namespace flambeau {
namespace {

Tensor mT(const Tensor& t) { return op::transpose(t, -2, -1); }
Tensor mH(const Tensor& t) { return op::conj(mT(t)); }

/// A @ B for complex A, B through real matmuls.
Tensor cmm(const Tensor& A, const Tensor& B) {
  const Tensor ar = op::real(A), ai = op::imag(A), br = op::real(B), bi = op::imag(B);
  const Tensor re = op::sub(op::matmul(ar, br), op::matmul(ai, bi), 1);
  const Tensor im = op::add(op::matmul(ar, bi), op::matmul(ai, br), 1);
  return op::complex(op::contiguous(re, MemoryFormat::Contiguous),
                     op::contiguous(im, MemoryFormat::Contiguous));
}

/// X with M X = Y for complex M (*, n, n) and Y (*, n, k), through the real 2n system.
Tensor csolve(const Tensor& M, const Tensor& Y) {
  const int64_t n = M.sizes()[M.dim() - 1];
  const Tensor mr = op::real(M), mi = op::imag(M);
  const Tensor big = op::cat({op::cat({mr, op::neg(mi)}, -1), op::cat({mi, mr}, -1)}, -2);
  const Tensor rhs = op::cat({op::real(Y), op::imag(Y)}, -2);
  const Tensor sol = op::_linalg_solve(big, rhs);
  return op::complex(op::contiguous(op::slice(sol, -2, 0, n, 1), MemoryFormat::Contiguous),
                     op::contiguous(op::slice(sol, -2, n, 2 * n, 1), MemoryFormat::Contiguous));
}

/// The (n, n) identity in the real dtype of `like`.
Tensor eye_real(int64_t n, const Tensor& like) {
  const Tensor r = op::unsqueeze(op::arange(0, n, 1, ScalarType::Int64, like.device()), -1);
  const Tensor c = op::arange(0, n, 1, ScalarType::Int64, like.device());
  return op::cast(op::eq(r, c), to_real_dtype(like.dtype()));
}

bool has(const std::optional<Tensor>& g) { return g.has_value() && g->defined(); }

}  // namespace

Tensor composite::_linalg_eig_backward(const std::optional<Tensor>& gL, const std::optional<Tensor>& gV,
                                       const Tensor& L, const Tensor& V) {
  const int64_t n = L.sizes()[L.dim() - 1];
  FB_CHECK_VALUE(V.numel() > 0 || L.numel() == 0,
                 "[linalg.eig] the derivative needs the eigenvectors: call it with compute_v=True");
  // No eigenvalues (an empty batch, or 0 x 0 matrices): an empty gradient, whatever V holds.
  if (L.numel() == 0 || (!has(gL) && !has(gV))) {
    Shape s(L.sizes().begin(), L.sizes().end());
    s.push_back(n);
    return zeros(s, L.dtype(), L.device());
  }
  const Tensor I = eye_real(n, L);
  const Tensor Vh = mH(V);
  Tensor inner;
  if (has(gV)) {
    Tensor VhgV = cmm(Vh, *gV);
    const Tensor diag = op::diagonal(VhgV, 0, -2, -1);
    if (diag.numel() > 0) {
      const Tensor worst =
          op::contiguous(op::cast(op::amax(op::abs(op::imag(diag)), {}, false), ScalarType::Float64),
                         MemoryFormat::Contiguous);
      const double w = composite_detail::read_first<double>(worst);  // on a device too
      FB_CHECK_VALUE(
          !(w > 1e-2),
          "linalg_eig_backward: The eigenvectors in the complex case are specified up to "
          "multiplication by e^{i phi}. The specified loss function depends on this quantity, so it is "
          "ill-defined.");
    }
    const Tensor re_diag = op::unsqueeze(op::real(diag), -2);
    VhgV = op::sub(VhgV, cmm(Vh, op::mul(V, re_diag)), 1);
    const Tensor Lc = op::conj(L);
    const Tensor E = op::add(op::sub(op::unsqueeze(Lc, -2), op::unsqueeze(Lc, -1), 1), I, 1);
    inner = op::div(VhgV, E);
  }
  if (has(gL)) {
    const Tensor d = op::mul(op::unsqueeze(*gL, -1), I);
    inner = inner.defined() ? op::add(inner, d, 1) : d;
  }
  if (inner.dtype() != V.dtype()) inner = op::cast(inner, V.dtype());
  return csolve(Vh, cmm(inner, Vh));
}

}  // namespace flambeau
