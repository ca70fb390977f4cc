#pragma once
// Backward formulas of the reductions, scans and sorts (the `# ---- reduce ----`
// section of derivatives.yaml). Written with core ops, so create_graph=True
// differentiates them again. Included at the end of formula_helpers.h.
#include "formula_helpers.h"

namespace flambeau::autograd::formulas {

/// The reduced dims of a reduction over `dim` (all dims if absent or empty), sorted.
inline Shape reduced_dims(const Shape& sizes, const std::optional<Shape>& dim, const char* op) {
  const int64_t nd = static_cast<int64_t>(sizes.size());
  Shape dims;
  if (!dim || dim->empty()) {
    dims.resize(nd);
    std::iota(dims.begin(), dims.end(), 0);
  } else {
    for (int64_t d : *dim)
      if (nd > 0) dims.push_back(wrap_dim(d, nd, op));
    std::ranges::sort(dims);
  }
  return dims;
}

/// t with size-1 dims put back where a keepdim=False reduction removed them.
inline Tensor unsqueeze_dims(const Tensor& t, const Shape& dims, bool keepdim) {
  if (keepdim) return t;
  Tensor r = t;
  for (int64_t d : dims) r = op::unsqueeze(r, d);
  return r;
}

inline int64_t reduced_count(const Shape& sizes, const Shape& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= sizes[d];
  return n;
}

/// amax/amin: the gradient shared evenly among the elements equal to the result (or the NaNs).
inline Tensor amax_amin_backward(const Tensor& grad, const Tensor& self, const Tensor& result,
                                 const Shape& dim, bool keepdim) {
  const Shape sizes(self.sizes().begin(), self.sizes().end());
  const Shape dims = reduced_dims(sizes, dim.empty() ? std::nullopt : std::optional<Shape>(dim), "amax");
  const Tensor r = unsqueeze_dims(result, dims, keepdim);
  const Tensor g = unsqueeze_dims(grad, dims, keepdim);
  const Tensor mask = op::where(op::ne(r, r), op::ne(self, self), op::eq(self, r));
  const Tensor count = op::sum(mask, dims.empty() ? std::nullopt : OptionalIntArrayRef(IntArrayRef(dims)),
                               /*keepdim=*/true, std::nullopt);
  return op::cast(mask, grad.dtype()) * (g / count);
}

/// prod along dim: result / x where no element is zero; with one zero in a row, the zero's gradient is
/// the product of the others and the rest 0; with two or more, all 0 (as PyTorch).
inline Tensor prod_backward(const Tensor& grad, const Tensor& self, const Tensor& result, int64_t dim,
                            bool keepdim) {
  if (self.dim() == 0) return grad;
  const int64_t d = wrap_dim(dim, self.dim(), "prod");
  const Shape dims{d};
  const Tensor g = unsqueeze_dims(grad, dims, keepdim);
  const Tensor r = unsqueeze_dims(result, dims, keepdim);
  const Tensor zero = op::eq(self, num(0));
  const Tensor nzeros = op::sum(zero, IntArrayRef(dims), /*keepdim=*/true, std::nullopt);
  const Tensor safe = where(zero, 1.0, self);
  const Tensor others = op::prod_dim_int(safe, d, /*keepdim=*/true, std::nullopt);
  // cj: complex inputs take the conjugate of the derivative (PyTorch's convention; no-op for real).
  const Tensor no_zero = g * cj(r / safe);
  const Tensor one_zero = where(op::logical_and(zero, op::eq(nzeros, num(1))), g * cj(others), 0.0);
  return op::where(op::eq(nzeros, num(0)), no_zero, one_zero);
}

/// var: 2 (x - mean) / (N - correction) times the gradient.
inline Tensor var_backward(const Tensor& grad, const Tensor& self, const std::optional<Shape>& dim,
                           const std::optional<Scalar>& correction, bool keepdim) {
  const Shape sizes(self.sizes().begin(), self.sizes().end());
  const Shape dims = reduced_dims(sizes, dim, "var");
  const double c = correction ? correction->to_double() : 1.0;
  const double n = static_cast<double>(reduced_count(sizes, dims));
  const Tensor g = unsqueeze_dims(grad, dims, keepdim);
  const OptionalIntArrayRef od = dims.empty() ? std::nullopt : OptionalIntArrayRef(IntArrayRef(dims));
  const Tensor mean = op::mean(self, od, /*keepdim=*/true, std::nullopt);
  return g * (self - mean) * (2.0 / std::max(0.0, n - c));
}

/// t reversed along dim (a gather, so it is differentiable).
inline Tensor reverse_along(const Tensor& t, int64_t d) {
  const int64_t n = t.sizes()[d];
  Shape shape(t.dim(), 1);
  shape[d] = n;
  Tensor idx = op::arange(n - 1, int64_t{-1}, int64_t{-1}, ScalarType::Int64, t.device());
  idx = op::contiguous(op::expand(op::view(idx, shape), t.sizes()), MemoryFormat::Contiguous);
  return op::gather(t, d, idx);
}

/// sum_{j >= i} t_j along dim.
inline Tensor reverse_cumsum(const Tensor& t, int64_t d) {
  return reverse_along(op::cumsum(reverse_along(t, d), d, std::nullopt), d);
}

inline Tensor cumsum_backward(const Tensor& grad, int64_t dim) {
  if (grad.dim() == 0 || grad.numel() == 0) return grad;
  return reverse_cumsum(grad, wrap_dim(dim, grad.dim(), "cumsum"));
}

/// cumprod: sum_{j >= k} g_j result_j / x_k before a row's first zero; at the first zero the sum of
/// g_j times the product of the others up to j; after it 0.
inline Tensor cumprod_backward(const Tensor& grad, const Tensor& self, const Tensor& result, int64_t dim) {
  if (self.dim() == 0 || self.numel() == 0) return grad;
  const int64_t d = wrap_dim(dim, self.dim(), "cumprod");
  const Tensor zero = op::eq(self, num(0));
  const Tensor seen = op::cumsum(zero, d, std::nullopt);  // zeros up to and including i
  const Tensor before = op::eq(seen, num(0));
  const Tensor first = op::logical_and(zero, op::eq(seen, num(1)));
  const Tensor safe = where(zero, 1.0, self);
  const Tensor base = where(before, reverse_cumsum(grad * cj(result), d) / cj(safe), 0.0);  // cj: complex
  const Tensor c1 = op::cumprod(where(first, 1.0, self), d, std::nullopt);
  const Tensor at_zero = op::sum(where(op::logical_not(before), grad * cj(c1), 0.0), IntArrayRef(Shape{d}),
                                 /*keepdim=*/true, std::nullopt);
  return op::where(first, at_zero, base);
}

/// logcumsumexp: grad_k = sum_{j >= k} g_j exp(x_k - out_j), shifted by the row's last (largest) output.
inline Tensor logcumsumexp_backward(const Tensor& grad, const Tensor& self, const Tensor& result,
                                    int64_t dim) {
  if (self.dim() == 0 || self.numel() == 0) return grad;
  const int64_t d = wrap_dim(dim, self.dim(), "logcumsumexp");
  const int64_t n = self.sizes()[d];
  Tensor last = op::slice(result, d, n - 1, n, 1);
  last = where(op::isinf(last), 0.0, last);
  const Tensor w = grad * op::exp(last - result);
  return op::exp(self - last) * reverse_cumsum(w, d);
}

}  // namespace flambeau::autograd::formulas
