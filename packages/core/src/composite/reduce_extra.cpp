// Composites of the reduce section of the op table: the forms PyTorch spells
// several ways (var/std with unbiased or correction, var_mean, std_mean,
// aminmax, prod of all elements), the reductions built from others (norm,
// logsumexp, count_nonzero, nansum, nanmean), the order statistics built on
// sort (median, nanmedian, quantile, nanquantile, kthvalue, argsort, msort),
// and bucketize, argwhere, where(condition). Differentiable through the ops
// they call.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "composite_generated.h"
#include "flambeau/error.h"
#include "flambeau/meta.h"
#include "flambeau/ops.h"
#include "flambeau/type_dispatch.h"
#include "host_read.h"

namespace flambeau {
namespace {

Tensor num(double v) { return scalar_tensor(v, ScalarType::Float64, /*wrapped=*/true); }
Tensor inum(int64_t v) { return scalar_tensor(v, ScalarType::Int64, /*wrapped=*/true); }

Shape dims_of(std::optional<int64_t> dim) { return dim ? Shape{*dim} : Shape{}; }

void check_floating(const char* op, const Tensor& t) {
  FB_CHECK_TYPE(is_floating(t.dtype()), "[", op, "] expects a floating point tensor, got dtype ",
                dtype_name(t.dtype()));
}

}  // namespace

Tensor composite::min_other(const Tensor& self, const Tensor& other) { return op::minimum(self, other); }

std::tuple<Tensor, Tensor> composite::aminmax(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  const Shape d = dims_of(dim);
  return {op::amin(self, d, keepdim), op::amax(self, d, keepdim)};
}

Tensor composite::prod(const Tensor& self, std::optional<ScalarType> dtype) {
  return op::prod_dim_int(op::reshape(self, Shape{self.numel()}), 0, false, dtype);
}

namespace {
std::optional<Scalar> unbiased_correction(bool unbiased) { return Scalar(int64_t{unbiased ? 1 : 0}); }
/// s ** (1 / p) (sqrt for p = 2) whose gradient is 0 where s == 0, as PyTorch's std and norm backward
/// (not the inf * 0 = NaN of the plain root): both where()s route no gradient through the masked
/// elements. NaN stays NaN (NaN != 0).
Tensor root_zero_grad(const Tensor& s, double p) {
  const Tensor nz = op::ne(s, scalar_tensor(0, s.dtype()));
  const Tensor safe = op::where(nz, s, scalar_tensor(1, s.dtype()));
  const Tensor r = p == 2.0 ? op::sqrt(safe) : op::pow(safe, scalar_tensor(1.0 / p, s.dtype()));
  return op::where(nz, r, scalar_tensor(0, s.dtype()));
}
/// a ** p for 0 < p < 1 with gradient 0 where a == 0 (p a^(p-1) is inf there), as PyTorch's norm backward.
Tensor pow_zero_grad(const Tensor& a, double p) {
  const Tensor nz = op::ne(a, scalar_tensor(0, a.dtype()));
  const Tensor safe = op::where(nz, a, scalar_tensor(1, a.dtype()));
  return op::where(nz, op::pow(safe, scalar_tensor(p, a.dtype())), scalar_tensor(0, a.dtype()));
}
}  // namespace

Tensor composite::var(const Tensor& self, bool unbiased) {
  return op::var_correction(self, std::nullopt, unbiased_correction(unbiased), false);
}
Tensor composite::var_dim(const Tensor& self, OptionalIntArrayRef dim, bool unbiased, bool keepdim) {
  return op::var_correction(self, dim, unbiased_correction(unbiased), keepdim);
}
// std and the _mean forms run var.correction's check under their own name (before mean's own error).
Tensor composite::std_correction(const Tensor& self, OptionalIntArrayRef dim,
                                 const std::optional<Scalar>& correction, bool keepdim) {
  meta::check_var("std", self);
  // float16/bfloat16: the float32 root of the float32 variance, rounded once (PyTorch's CPU kernel); the
  // root of the rounded variance would round twice.
  if (self.dtype() == ScalarType::Float16 || self.dtype() == ScalarType::BFloat16)
    return to_dtype(op::std_correction(to_dtype(self, ScalarType::Float32), dim, correction, keepdim),
                    self.dtype());
  return root_zero_grad(op::var_correction(self, dim, correction, keepdim), 2.0);
}
Tensor composite::std(const Tensor& self, bool unbiased) {
  return op::std_correction(self, std::nullopt, unbiased_correction(unbiased), false);
}
Tensor composite::std_dim(const Tensor& self, OptionalIntArrayRef dim, bool unbiased, bool keepdim) {
  return op::std_correction(self, dim, unbiased_correction(unbiased), keepdim);
}
std::tuple<Tensor, Tensor> composite::var_mean_correction(const Tensor& self, OptionalIntArrayRef dim,
                                                          const std::optional<Scalar>& correction,
                                                          bool keepdim) {
  meta::check_var("var_mean", self);
  return {op::var_correction(self, dim, correction, keepdim), op::mean(self, dim, keepdim, std::nullopt)};
}
std::tuple<Tensor, Tensor> composite::var_mean(const Tensor& self, bool unbiased) {
  return op::var_mean_correction(self, std::nullopt, unbiased_correction(unbiased), false);
}
std::tuple<Tensor, Tensor> composite::var_mean_dim(const Tensor& self, OptionalIntArrayRef dim, bool unbiased,
                                                   bool keepdim) {
  return op::var_mean_correction(self, dim, unbiased_correction(unbiased), keepdim);
}
std::tuple<Tensor, Tensor> composite::std_mean_correction(const Tensor& self, OptionalIntArrayRef dim,
                                                          const std::optional<Scalar>& correction,
                                                          bool keepdim) {
  meta::check_var("std_mean", self);
  return {op::std_correction(self, dim, correction, keepdim), op::mean(self, dim, keepdim, std::nullopt)};
}
std::tuple<Tensor, Tensor> composite::std_mean(const Tensor& self, bool unbiased) {
  return op::std_mean_correction(self, std::nullopt, unbiased_correction(unbiased), false);
}
std::tuple<Tensor, Tensor> composite::std_mean_dim(const Tensor& self, OptionalIntArrayRef dim, bool unbiased,
                                                   bool keepdim) {
  return op::std_mean_correction(self, dim, unbiased_correction(unbiased), keepdim);
}

Tensor composite::norm(const Tensor& self, const std::optional<Scalar>& p, OptionalIntArrayRef dim,
                       bool keepdim, std::optional<ScalarType> dtype) {
  const Tensor x = dtype ? to_dtype(self, *dtype) : self;
  check_floating("norm", x);
  const double pv = p ? p->to_double() : 2.0;
  const IntArrayRef all_or_dim = dim.value_or(IntArrayRef{});
  if (std::isinf(pv)) {
    const Tensor a = op::abs(x);
    return pv > 0 ? op::amax(a, all_or_dim, keepdim) : op::amin(a, all_or_dim, keepdim);
  }
  if (pv == 0) {
    // The count of nonzeros, written as |x| where x == 0 so that the result stays connected to x with the
    // zero gradient PyTorch gives (a count of ne() would not require grad at all).
    const Tensor a = op::abs(x);
    return op::sum(op::where(op::ne(a, num(0)), num(1), a), dim, keepdim, std::nullopt);
  }
  if (pv == 1) return op::sum(op::abs(x), dim, keepdim, std::nullopt);
  if (pv == 2) return root_zero_grad(op::sum(op::mul(x, x), dim, keepdim, std::nullopt), 2.0);
  const Tensor a = op::abs(x);
  const Tensor powered = pv > 0 && pv < 1 ? pow_zero_grad(a, pv) : op::pow(a, num(pv));
  const Tensor sum = op::sum(powered, dim, keepdim, std::nullopt);
  return pv > 0 ? root_zero_grad(sum, pv) : op::pow(sum, num(1.0 / pv));
}

namespace {
// torch.norm(x, 'nuc', dim): the sum of the singular values of the matrices over the two dims `dim` (the
// only two dims of a 2-D x when dim is None), as linalg.matrix_norm(x, 'nuc', dim).
Tensor nuclear_norm_over(const Tensor& x, OptionalIntArrayRef dim, bool keepdim) {
  const int64_t nd = x.dim();
  if (dim) {
    FB_CHECK_VALUE(dim->size() == 2, "[norm] p='nuc' needs dim to hold two dims, got ", dim->size(),
                   " for an input of shape ", shape_str(x.sizes()));
  } else {
    FB_CHECK_VALUE(nd == 2, "[norm] p='nuc' without dim needs a 2-D input, got shape ", shape_str(x.sizes()),
                   " (pass the two matrix dims as dim)");
  }
  const int64_t d0 = dim ? wrap_dim((*dim)[0], nd, "norm") : 0;
  const int64_t d1 = dim ? wrap_dim((*dim)[1], nd, "norm") : 1;
  FB_CHECK_VALUE(d0 != d1, "[norm] p='nuc' needs two different dims, got dim (", (*dim)[0], ", ", (*dim)[1], ")");
  Shape perm;
  for (int64_t d = 0; d < nd; ++d)
    if (d != d0 && d != d1) perm.push_back(d);
  perm.push_back(d0);
  perm.push_back(d1);
  // The singular vectors are computed too: the derivative of the singular values needs them.
  const Tensor s = std::get<1>(op::_linalg_svd(op::permute(x, perm), false, true));
  Tensor r = op::sum(s, Shape{-1}, false, std::nullopt);
  if (keepdim) r = op::unsqueeze(op::unsqueeze(r, std::min(d0, d1)), std::max(d0, d1));
  return r;
}
}  // namespace

Tensor composite::norm_str(const Tensor& self, std::string_view p, OptionalIntArrayRef dim, bool keepdim,
                           std::optional<ScalarType> dtype) {
  FB_CHECK_VALUE(p == "fro" || p == "nuc", "[norm] p='", std::string(p),
                 "' is not a norm (expected 'fro', 'nuc' or a number)");
  if (p == "nuc") {
    const Tensor x = dtype ? to_dtype(self, *dtype) : self;
    check_floating("norm", x);
    return nuclear_norm_over(x, dim, keepdim);
  }
  return op::norm(self, Scalar(2.0), dim, keepdim, dtype);
}

Tensor composite::logsumexp(const Tensor& self, IntArrayRef dim, bool keepdim) {
  // (Cast to float32 below, a complex input lost its imaginary part: a wrong value, not PyTorch's.)
  FB_CHECK_TYPE(!is_complex(self.dtype()), "[logsumexp] dtype ", dtype_name(self.dtype()),
                " is not supported yet (real floating point or integer inputs)");
  const Tensor x = is_floating(self.dtype()) ? self : op::cast(self, ScalarType::Float32);
  if (x.numel() == 0) return op::log(op::sum(op::exp(x), OptionalIntArrayRef(dim), keepdim, std::nullopt));
  Tensor m = op::amax(x, dim, /*keepdim=*/true);
  m = op::where(op::isinf(m), num(0), m);
  const Tensor s =
      op::log(op::sum(op::exp(op::sub(x, m, 1)), OptionalIntArrayRef(dim), keepdim, std::nullopt));
  return op::add(s, op::reshape(m, Shape(s.sizes().begin(), s.sizes().end())), 1);
}

Tensor composite::count_nonzero(const Tensor& self, OptionalIntArrayRef dim) {
  return op::sum(op::ne(self, num(0)), dim, false, std::nullopt);
}

Tensor composite::nansum(const Tensor& self, OptionalIntArrayRef dim, bool keepdim,
                         std::optional<ScalarType> dtype) {
  // As PyTorch: no complex nansum (a complex NaN has two parts; PyTorch refuses rather than choose).
  FB_CHECK_TYPE(!is_complex(self.dtype()) && !(dtype && is_complex(*dtype)),
                "[nansum] is not implemented for dtype ",
                dtype_name(dtype && is_complex(*dtype) ? *dtype : self.dtype()), " (as in PyTorch)");
  const Tensor x = is_floating(self.dtype()) ? op::where(op::isnan(self), num(0), self) : self;
  return op::sum(x, dim, keepdim, dtype);
}

Tensor composite::nanmean(const Tensor& self, OptionalIntArrayRef dim, bool keepdim,
                          std::optional<ScalarType> dtype) {
  const Tensor x = dtype ? to_dtype(self, *dtype) : self;
  check_floating("nanmean", x);
  const Tensor keep = op::logical_not(op::isnan(x));
  const Tensor count = op::sum(keep, dim, keepdim, x.dtype());
  return op::div(op::nansum(x, dim, keepdim, std::nullopt), count);
}

namespace {
// The element at position pos (int64, keepdim shape) along dim of the sorted values, and its index.
std::tuple<Tensor, Tensor> pick_sorted(const Tensor& self, int64_t dim, bool keepdim, bool ignore_nan,
                                       const char* op) {
  if (self.dim() == 0) return {self, zeros(self.sizes(), ScalarType::Int64, self.device())};
  dim = wrap_dim(dim, self.dim(), op);
  const int64_t n = self.sizes()[dim];
  FB_CHECK_INDEX(n > 0, "[", op, "] cannot reduce over dim ", dim, " of size 0 (shape ",
                 shape_str(self.sizes()), ")");
  auto [values, indices] = op::sort(self, dim, false, true);
  const Tensor valid = op::sum(op::logical_not(op::isnan(self)), IntArrayRef(Shape{dim}), true, std::nullopt);
  Tensor pos;
  if (ignore_nan) {
    pos = op::floor_divide(op::clamp_min(op::sub(valid, inum(1), 1), Scalar(int64_t{0})), inum(2));
  } else {  // a row with a NaN gives its first NaN (sorted right after the numbers)
    pos = op::where(op::lt(valid, inum(n)), valid, inum((n - 1) / 2));
  }
  Tensor v = op::gather(values, dim, pos), i = op::gather(indices, dim, pos);
  if (!keepdim) {
    v = op::squeeze(v, Shape{dim});
    i = op::squeeze(i, Shape{dim});
  }
  return {v, i};
}

Tensor full_median(const Tensor& self, bool ignore_nan, const char* op) {
  if (self.numel() == 0)
    return full(Shape{}, std::numeric_limits<double>::quiet_NaN(), self.dtype(), self.device());
  return std::get<0>(pick_sorted(op::reshape(self, Shape{self.numel()}), 0, false, ignore_nan, op));
}
}  // namespace

Tensor composite::median(const Tensor& self) { return full_median(self, false, "median"); }
std::tuple<Tensor, Tensor> composite::median_dim(const Tensor& self, int64_t dim, bool keepdim) {
  return pick_sorted(self, dim, keepdim, false, "median");
}
Tensor composite::nanmedian(const Tensor& self) { return full_median(self, true, "nanmedian"); }
std::tuple<Tensor, Tensor> composite::nanmedian_dim(const Tensor& self, int64_t dim, bool keepdim) {
  return pick_sorted(self, dim, keepdim, true, "nanmedian");
}

namespace {
Tensor quantile_impl(const Tensor& self, const Tensor& q_in, bool q_scalar, std::optional<int64_t> dim,
                     bool keepdim, std::string_view interpolation, bool ignore_nan, const char* op) {
  check_floating(op, self);
  FB_CHECK_TYPE(q_in.dtype() == self.dtype(), "[", op, "] q (", dtype_name(q_in.dtype()),
                ") must have the input's dtype (", dtype_name(self.dtype()), ")");
  FB_CHECK_VALUE(q_in.dim() <= 1, "[", op, "] q must be a scalar or a 1-D tensor, got shape ",
                 shape_str(q_in.sizes()));
  FB_CHECK_VALUE(interpolation == "linear" || interpolation == "lower" || interpolation == "higher" ||
                     interpolation == "midpoint" || interpolation == "nearest",
                 "[", op, "] interpolation must be one of linear, lower, higher, midpoint, nearest; got '",
                 std::string(interpolation), "'");
  const Tensor qd = op::cast(q_in, ScalarType::Float64);
  FB_CHECK_VALUE(composite_detail::read_first<bool>(
                     op::all(op::logical_and(op::ge(qd, num(0)), op::le(qd, num(1))), std::nullopt, false)),
                 "[", op, "] q values must be in the range [0, 1]");
  // x with the reduced dim last: (..., n).
  Tensor x;
  int64_t d = 0;
  if (dim) {
    d = wrap_dim(*dim, self.dim(), op);
    x = self.dim() == 0 ? op::reshape(self, Shape{1}) : op::transpose(self, d, self.dim() - 1);
  } else {
    x = op::reshape(self, Shape{self.numel()});
  }
  const int64_t n = x.sizes()[x.dim() - 1];
  const Tensor q = op::reshape(q_in, Shape{q_in.numel()});  // (Q)
  const int64_t nq = q.numel();
  Shape lead(x.sizes().begin(), x.sizes().end() - 1);
  Tensor out;
  if (n == 0) {
    Shape s = lead;
    s.push_back(nq);
    out = full(s, std::numeric_limits<double>::quiet_NaN(), self.dtype(), self.device());
  } else {
    const Tensor sorted = std::get<0>(op::sort(x, -1, false, true));
    const Tensor valid =
        op::sum(op::logical_not(op::isnan(sorted)), IntArrayRef(Shape{-1}), true, self.dtype());
    const Tensor cnt =
        ignore_nan ? valid : full(Shape{1}, static_cast<double>(n), self.dtype(), self.device());
    const Tensor rank = op::mul(q, op::clamp_min(op::sub(cnt, num(1), 1), Scalar(0.0)));  // (..., Q)
    auto at = [&](const Tensor& r) {
      Tensor idx = op::cast(op::clamp(r, Scalar(0.0), Scalar(static_cast<double>(n - 1))), ScalarType::Int64);
      Shape s = lead;
      s.push_back(nq);
      idx = op::contiguous(op::expand(idx, s), MemoryFormat::Contiguous);
      return op::gather(sorted, -1, idx);
    };
    const Tensor lo = op::floor(rank), hi = op::ceil(rank);
    if (interpolation == "lower") {
      out = at(lo);
    } else if (interpolation == "higher") {
      out = at(hi);
    } else if (interpolation == "nearest") {
      out = at(op::round(rank, 0));
    } else {
      const Tensor vl = at(lo), vh = at(hi);
      const Tensor w =
          interpolation == "midpoint" ? op::where(op::eq(lo, hi), num(0), num(0.5)) : op::sub(rank, lo, 1);
      out = op::lerp_tensor(vl, vh, op::cast(w, self.dtype()));
    }
    if (!ignore_nan) {  // a row with a NaN gives NaN
      const Tensor has_nan = op::lt(valid, num(static_cast<double>(n)));
      out = op::where(has_nan, num(std::numeric_limits<double>::quiet_NaN()), out);
    } else {
      out = op::where(op::eq(valid, num(0)), num(std::numeric_limits<double>::quiet_NaN()), out);
    }
  }
  // out: (..., Q) -> (Q, ...) with the reduced dim back as size 1 if keepdim.
  if (dim && self.dim() > 0) {
    // lead is self's shape with d moved last then removed: restore the original order of the others.
    Shape tshape(self.sizes().begin(), self.sizes().end());
    std::swap(tshape[d], tshape[self.dim() - 1]);
    tshape.back() = nq;
    out = op::reshape(out, tshape);
    out = op::transpose(out, d, self.dim() - 1);  // (..., Q at d, ...)
    out = op::unsqueeze(out, 0);                  // (1, ..., Q at d+1, ...)
    out = op::transpose(out, 0, d + 1);           // (Q, ..., 1 at d+1, ...)
    out = op::squeeze(out, Shape{d + 1});
    if (keepdim) out = op::unsqueeze(out, d + 1);
  } else {
    out = op::reshape(out, Shape{nq});
    if (keepdim) {
      Shape s{nq};
      for (int64_t i = 0; i < self.dim(); ++i) s.push_back(1);
      out = op::reshape(out, s);
    }
  }
  if (q_scalar || q_in.dim() == 0) out = op::squeeze(out, Shape{0});
  return op::contiguous(out, MemoryFormat::Contiguous);
}
}  // namespace

Tensor composite::quantile(const Tensor& self, const Tensor& q, std::optional<int64_t> dim, bool keepdim,
                           std::string_view interpolation) {
  return quantile_impl(self, q, false, dim, keepdim, interpolation, false, "quantile");
}
Tensor composite::quantile_scalar(const Tensor& self, double q, std::optional<int64_t> dim, bool keepdim,
                                  std::string_view interpolation) {
  return quantile_impl(self, full(Shape{}, q, self.dtype(), self.device()), true, dim, keepdim, interpolation,
                       false, "quantile");
}
Tensor composite::nanquantile(const Tensor& self, const Tensor& q, std::optional<int64_t> dim, bool keepdim,
                              std::string_view interpolation) {
  return quantile_impl(self, q, false, dim, keepdim, interpolation, true, "nanquantile");
}
Tensor composite::nanquantile_scalar(const Tensor& self, double q, std::optional<int64_t> dim, bool keepdim,
                                     std::string_view interpolation) {
  return quantile_impl(self, full(Shape{}, q, self.dtype(), self.device()), true, dim, keepdim, interpolation,
                       true, "nanquantile");
}

Tensor composite::argsort(const Tensor& self, int64_t dim, bool descending, bool stable) {
  return std::get<1>(op::sort(self, dim, descending, stable));
}

// The values-only sort when no gradient is recorded (its gradient
// goes through sort's indices) and the tensor is on the CPU (its only kernel).
Tensor composite::msort(const Tensor& self) {
  if (self.device().type == DeviceType::CPU && !(self.impl()->needs_autograd() && grad_mode_enabled()))
    return op::_sort_values(self, 0, false);
  return std::get<0>(op::sort(self, 0, false, true));
}

std::tuple<Tensor, Tensor> composite::kthvalue(const Tensor& self, int64_t k, int64_t dim, bool keepdim) {
  FB_CHECK_TYPE(dtype_set_of(self.dtype()) != kDtUInts, "[kthvalue] is not supported for dtype ",
                dtype_name(self.dtype()), " (as in PyTorch)");
  const int64_t d = wrap_dim(dim, self.dim(), "kthvalue");
  const int64_t n = self.dim() == 0 ? 1 : self.sizes()[d];
  FB_CHECK_INDEX(k >= 1 && k <= n, "[kthvalue] k (", k, ") is out of range for dim ", d, " of size ", n,
                 " (shape ", shape_str(self.sizes()), ")");
  if (self.dim() == 0) return {self, zeros(self.sizes(), ScalarType::Int64, self.device())};
  auto [values, indices] = op::sort(self, d, false, true);
  Tensor v = op::select(values, d, k - 1), i = op::select(indices, d, k - 1);
  if (keepdim) {
    v = op::unsqueeze(v, d);
    i = op::unsqueeze(i, d);
  }
  return {v, i};
}

Tensor composite::bucketize(const Tensor& self, const Tensor& boundaries, bool out_int32, bool right) {
  FB_CHECK_VALUE(boundaries.dim() == 1, "[bucketize] boundaries must be 1-D, got shape ",
                 shape_str(boundaries.sizes()));
  return op::searchsorted(boundaries, self, out_int32, right, std::nullopt, std::nullopt);
}

Tensor composite::argwhere(const Tensor& self) { return op::nonzero(self); }

TensorList composite::where_cond(const Tensor& condition) {
  // A 0-d condition counts as 1-D (PyTorch's, as nonzero(as_tuple=True)): one index tensor, [0] or empty.
  const Shape one{1};
  const Tensor c = condition.dim() == 0 ? op::reshape(condition, one) : condition;
  const Tensor nz = op::nonzero(c);
  TensorList out;
  for (int64_t d = 0; d < c.dim(); ++d)
    out.push_back(op::contiguous(op::select(nz, 1, d), MemoryFormat::Contiguous));
  return out;
}

}  // namespace flambeau
