#pragma once
// Backward formulas of the reductions, scans and sorts (the `# ---- reduce ----`
// section of derivatives.yaml). Written with core ops, so create_graph=True
// differentiates them again. Included at the end of formula_helpers.h.
#include <limits>
#include <utility>

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

/// What var's derivatives share: the reduced dims, x - mean over them (kept) and 2 / (N - correction).
struct VarParts {
  Shape dims;
  Tensor dev;
  double scale;
};
inline VarParts var_parts(const Tensor& self, const std::optional<Shape>& dim,
                          const std::optional<Scalar>& correction) {
  const Shape sizes(self.sizes().begin(), self.sizes().end());
  Shape dims = reduced_dims(sizes, dim, "var");
  const double c = correction ? correction->to_double() : 1.0;
  const double n = static_cast<double>(reduced_count(sizes, dims));
  const OptionalIntArrayRef od = dims.empty() ? std::nullopt : OptionalIntArrayRef(IntArrayRef(dims));
  Tensor dev = self - op::mean(self, od, /*keepdim=*/true, std::nullopt);
  return {std::move(dims), std::move(dev), 2.0 / std::max(0.0, n - c)};
}

/// var: 2 (x - mean) / (N - correction) times the gradient.
inline Tensor var_backward(const Tensor& grad, const Tensor& self, const std::optional<Shape>& dim,
                           const std::optional<Scalar>& correction, bool keepdim) {
  const VarParts v = var_parts(self, dim, correction);
  return unsqueeze_dims(grad, v.dims, keepdim) * v.dev * v.scale;
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

// ---- forward mode (Note [Forward formulas] in gen_autograd.py) ----

/// The tangent of a value-selecting op (max/min/mode along dim, sort, topk, cummax, cummin): the input's
/// tangent read at the chosen indices. keepdim=false indices lack the reduced dim.
inline Tensor gather_jvp(const Tensor& t, int64_t dim, const Tensor& indices, bool keepdim) {
  if (t.dim() == 0) return t;
  const int64_t d = wrap_dim(dim, t.dim(), "gather_jvp");
  if (keepdim) return op::gather(t, d, indices);
  const int64_t squeezed[1] = {d};
  return op::squeeze(op::gather(t, d, op::unsqueeze(indices, d)), IntArrayRef(squeezed));
}

/// max/min over all elements: the mean of the tangents at the maxima (or at the NaNs), as the backward
/// shares the gradient among them.
inline Tensor evenly_read_jvp(const Tensor& t, const Tensor& self, const Tensor& result) {
  const Tensor mask = op::where(op::ne(result, result), op::ne(self, self), op::eq(self, result));
  const Tensor count = op::sum(mask, std::nullopt, false, std::nullopt);
  return op::sum(where(mask, t, 0.0), std::nullopt, false, std::nullopt) / count;
}

/// amax/amin: the mean of the tangents at the elements equal to the result (amax_amin_backward's split).
inline Tensor amax_amin_jvp(const Tensor& t, const Tensor& self, const Tensor& result, const Shape& dim,
                            bool keepdim) {
  const Shape sizes(self.sizes().begin(), self.sizes().end());
  const Shape dims = reduced_dims(sizes, dim.empty() ? std::nullopt : std::optional<Shape>(dim), "amax");
  const Tensor r = unsqueeze_dims(result, dims, keepdim);
  const Tensor mask = op::where(op::ne(r, r), op::ne(self, self), op::eq(self, r));
  const OptionalIntArrayRef od = dims.empty() ? std::nullopt : OptionalIntArrayRef(IntArrayRef(dims));
  const Tensor count = op::sum(mask, od, /*keepdim=*/true, std::nullopt);
  return op::sum(where(mask, t, 0.0) / count, od, keepdim, std::nullopt);
}

/// prod along dim: prod * sum(t / x) in a row without zeros; with one zero, the zero's tangent times the
/// product of the others; with two or more, 0.
inline Tensor prod_jvp(const Tensor& t, const Tensor& self, int64_t dim, bool keepdim) {
  if (self.dim() == 0) return t;
  const int64_t d = wrap_dim(dim, self.dim(), "prod");
  const int64_t dims[1] = {d};
  const Tensor zero = op::eq(self, num(0));
  const Tensor nzeros = op::sum(zero, IntArrayRef(dims), /*keepdim=*/true, std::nullopt);
  const Tensor safe = where(zero, 1.0, self);
  const Tensor others = op::prod_dim_int(safe, d, /*keepdim=*/true, std::nullopt);  // of the nonzero ones
  const Tensor no_zero = op::sum(t / safe, IntArrayRef(dims), /*keepdim=*/true, std::nullopt);
  const Tensor at_zero = op::sum(where(zero, t, 0.0), IntArrayRef(dims), /*keepdim=*/true, std::nullopt);
  const Tensor out =
      others * op::where(op::eq(nzeros, num(0)), no_zero, where(op::eq(nzeros, num(1)), at_zero, 0.0));
  return keepdim ? out : op::squeeze(out, IntArrayRef(dims));
}

/// var: 2 sum(Re(conj(x - mean) t)) / (N - correction) (the mean's tangent drops out: sum(x - mean) = 0).
inline Tensor var_jvp(const Tensor& t, const Tensor& self, const std::optional<Shape>& dim,
                      const std::optional<Scalar>& correction, bool keepdim) {
  const VarParts v = var_parts(self, dim, correction);
  Tensor prod = cj(v.dev) * t;
  if (is_complex(prod.dtype())) prod = op::real(prod);
  const OptionalIntArrayRef od = v.dims.empty() ? std::nullopt : OptionalIntArrayRef(IntArrayRef(v.dims));
  return op::sum(prod, od, keepdim, std::nullopt) * v.scale;
}

/// cumprod: result_i sum_{j <= i} t_j / x_j before a row's first zero z; from z on, t_z times the
/// product of the others up to i (0 once a second zero is passed).
inline Tensor cumprod_jvp(const Tensor& t, const Tensor& self, const Tensor& result, int64_t dim) {
  if (self.dim() == 0 || self.numel() == 0) return t;
  const int64_t d = wrap_dim(dim, self.dim(), "cumprod");
  const int64_t dims[1] = {d};
  const Tensor zero = op::eq(self, num(0));
  const Tensor seen = op::cumsum(zero, d, std::nullopt);  // zeros up to and including i
  const Tensor before = op::eq(seen, num(0));
  const Tensor first = op::logical_and(zero, op::eq(seen, num(1)));
  const Tensor safe = where(zero, 1.0, self);
  const Tensor base = result * op::cumsum(where(before, t / safe, 0.0), d, std::nullopt);
  const Tensor others = op::cumprod(where(first, 1.0, self), d, std::nullopt);
  const Tensor t_zero = op::sum(where(first, t, 0.0), IntArrayRef(dims), /*keepdim=*/true, std::nullopt);
  return op::where(before, base, t_zero * others);
}

/// logcumsumexp: sum_{j <= i} t_j exp(x_j - out_i), in log space for the positive and the negative
/// tangents apart (exp(logcumsumexp(x + log|t|) - out)), so that no exp over- or underflows.
inline Tensor logcumsumexp_jvp(const Tensor& t, const Tensor& self, const Tensor& result, int64_t dim) {
  if (self.dim() == 0 || self.numel() == 0) return t;
  const int64_t d = wrap_dim(dim, self.dim(), "logcumsumexp");
  const double ninf = -std::numeric_limits<double>::infinity();
  auto part = [&](const Tensor& keep, const Tensor& magnitude) {
    const Tensor log_t = where(keep, op::log(where(keep, magnitude, 1.0)), ninf);
    const Tensor lse = op::logcumsumexp(self + log_t, d);
    // Where the prefix is all -inf (out_i = -inf), exp(-inf - -inf) would be NaN: no tangent there.
    return where(op::logical_or(op::eq(lse, num(ninf)), op::eq(result, num(ninf))), 0.0, op::exp(lse - result));
  };
  return part(t > 0.0, t) - part(t < 0.0, -t);
}

/// scatter_reduce: sum and mean are linear; amax/amin take the mean of the tangents of the elements equal
/// to the result (the backward's split); prod is the sum over the contributions of t_k times the product
/// of the others. Without include_self, self takes no part where src was scattered.
inline Tensor scatter_reduce_jvp(const Tensor& self, const Tensor& self_t, int64_t dim, const Tensor& index,
                                 const Tensor& src_, const Tensor& src_t_, const std::string& reduce,
                                 bool include_self, const Tensor& result) {
  if (reduce == "sum" || reduce == "mean") return op::scatter_reduce(self_t, dim, index, src_t_, reduce, include_self);
  const ScalarType dt = self_t.dtype();
  // A scatter reads only the first index.sizes() elements of src.
  auto leading = [&](Tensor t) {
    for (int64_t d = 0; d < index.dim(); ++d)
      if (t.sizes()[d] != index.sizes()[d]) t = op::slice(t, d, 0, index.sizes()[d], 1);
    return t;
  };
  const Tensor src = leading(src_), src_t = leading(src_t_);
  if (reduce == "amax" || reduce == "amin") {
    Tensor self_is = op::cast(op::eq(self, result), dt);
    if (!include_self) self_is = op::scatter_value(self_is, dim, index, Scalar(0.0), std::nullopt);
    const Tensor src_is = op::cast(op::eq(src, op::gather(result, dim, index)), dt);
    const Tensor count = op::scatter_add(self_is, dim, index, src_is);
    return op::scatter_add(self_is * self_t, dim, index, src_is * src_t) / count;
  }
  // prod: without include_self, self counts as 1 (tangent 0) where src was scattered.
  const Tensor s = include_self ? self : op::scatter_value(self, dim, index, Scalar(1.0), std::nullopt);
  const Tensor st = include_self ? self_t : op::scatter_value(self_t, dim, index, Scalar(0.0), std::nullopt);
  const Tensor zs = op::eq(s, num(0)), zsrc = op::eq(src, num(0));
  const Tensor s_safe = where(zs, 1.0, s), src_safe = where(zsrc, 1.0, src);
  const Tensor nzeros = op::scatter_add(op::cast(zs, dt), dim, index, op::cast(zsrc, dt));
  const Tensor others = op::scatter_reduce(s_safe, dim, index, src_safe, "prod", true);
  const Tensor no_zero = op::scatter_add(where(zs, 0.0, st / s_safe), dim, index, where(zsrc, 0.0, src_t / src_safe));
  const Tensor at_zero = op::scatter_add(where(zs, st, 0.0), dim, index, where(zsrc, src_t, 0.0));
  return others * op::where(op::eq(nzeros, num(0)), no_zero, where(op::eq(nzeros, num(1)), at_zero, 0.0));
}

}  // namespace flambeau::autograd::formulas
