// Derivatives of the FFT primitives (ops.yaml, section fft; kernels in
// src/cpu/fft/fft.cpp), written as composites of core ops so that
// create_graph=True differentiates them again.
#include <vector>

#include "composite_generated.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"

namespace flambeau {

// The derivatives (PyTorch's fft_r2c_backward / fft_c2r_backward):
//   r2c: the adjoint of the onesided transform is the inverse c2c of the
//     gradient zero-padded to the full last dim (the same unnormalized sum with
//     the opposite sign), real part.
//   c2r: the adjoint is a forward onesided r2c of the gradient, the bins whose
//     mirror image lies outside the onesided range (1 .. n - n//2 - 1) doubled,
//     since each stands for two bins of the full spectrum.
Tensor composite::_fft_r2c_backward(const Tensor& grad, IntArrayRef dim, int64_t normalization, bool onesided,
                                    IntArrayRef self_sizes) {
  if (!onesided) return op::real(op::_fft_c2c(grad, dim, normalization, false));
  int64_t last = dim.back();
  if (last < 0) last += grad.dim();
  const int64_t full = self_sizes[static_cast<size_t>(last)];
  const int64_t have = grad.sizes()[last];
  Tensor g = grad;
  if (full > have) {
    // cat is real-only: pad the (..., 2) real view of the gradient with zeros
    const Tensor r = op::view_as_real(grad);
    Shape zs(r.sizes().begin(), r.sizes().end());
    zs[static_cast<size_t>(last)] = full - have;
    g = op::view_as_complex(op::cat({r, zeros(zs, r.dtype(), r.device())}, last));
  }
  return op::real(op::_fft_c2c(g, dim, normalization, false));
}

Tensor composite::_fft_c2r_backward(const Tensor& grad, IntArrayRef dim, int64_t normalization) {
  int64_t last = dim.back();
  if (last < 0) last += grad.dim();
  const int64_t n = grad.sizes()[last];
  Tensor gI = op::_fft_r2c(grad, dim, normalization, true);
  const int64_t dbl = n - gI.sizes()[last];
  if (dbl <= 0) return gI;
  const int64_t h = gI.sizes()[last];
  // scale = [1, 2 x dbl, 1 x (h - 1 - dbl)] along the last transformed dim
  Shape ss(static_cast<size_t>(grad.dim()), 1);
  ss[static_cast<size_t>(last)] = h;
  const Tensor idx = op::arange(0, h, 1, ScalarType::Int64, grad.device());
  const Tensor twice = op::logical_and(op::ge(idx, scalar_tensor(1, ScalarType::Int64)),
                                       op::le(idx, scalar_tensor(dbl, ScalarType::Int64)));
  const ScalarType rt = to_real_dtype(gI.dtype());
  const Tensor scale = op::add(op::cast(twice, rt), scalar_tensor(1.0, rt), 1);
  return op::mul(gI, op::reshape(scale, ss));
}

}  // namespace flambeau
