// Numeric and statistics composites of PyTorch's vocabulary (diff, trapezoid,
// cumulative_trapezoid, cov, corrcoef, isin, bincount, histc): built from op::
// calls, so autograd differentiates them through the ops they call. bincount and
// histc read one value on the host (the result's length, the data's range), as
// PyTorch's do.
#include <cmath>
#include <string>

#include "composite_generated.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "host_read.h"

namespace flambeau {
namespace {

Tensor wrapped(double v) { return scalar_tensor(v, ScalarType::Float64, /*wrapped=*/true); }

Tensor narrow(const Tensor& t, int64_t dim, int64_t start, int64_t length) {
  return op::slice(t, dim, start, start + length, 1);
}

// y[1:] - y[:-1] along dim (bool: the two differ).
Tensor diff_once(const Tensor& t, int64_t dim) {
  const int64_t n = t.sizes()[dim];
  if (n == 0) return t;
  const Tensor hi = narrow(t, dim, 1, n - 1), lo = narrow(t, dim, 0, n - 1);
  return t.dtype() == ScalarType::Bool ? op::logical_xor(hi, lo) : flambeau::sub(hi, lo);
}

void check_same_shape_but(const char* op, const Tensor& self, const Tensor& other, int64_t dim, const char* name) {
  FB_CHECK_VALUE(other.dim() == self.dim(), "[", op, "] expected ", name, " to have as many dims as input (",
                 self.dim(), "), got shape ", shape_str(other.sizes()));
  for (int64_t d = 0; d < self.dim(); ++d)
    FB_CHECK_VALUE(d == dim || other.sizes()[d] == self.sizes()[d], "[", op, "] expected ", name,
                   " to match input's shape ", shape_str(self.sizes()), " except on dim ", dim, ", got ",
                   shape_str(other.sizes()));
}

}  // namespace

Tensor composite::diff(const Tensor& self, int64_t n, int64_t dim, const std::optional<Tensor>& prepend,
                       const std::optional<Tensor>& append) {
  FB_CHECK_VALUE(self.dim() >= 1, "[diff] expects input to be at least one-dimensional");
  FB_CHECK_VALUE(n >= 0, "[diff] order must be non-negative but got ", n);
  const int64_t d = wrap_dim(dim, self.dim(), "diff");
  Tensor t = self;
  if (prepend || append) {
    TensorList parts;
    if (prepend) {
      check_same_shape_but("diff", self, *prepend, d, "prepend");
      parts.push_back(*prepend);
    }
    parts.push_back(self);
    if (append) {
      check_same_shape_but("diff", self, *append, d, "append");
      parts.push_back(*append);
    }
    t = op::cat(parts, d);
  }
  for (int64_t i = 0; i < n && t.sizes()[d] > 0; ++i) t = diff_once(t, d);
  return t;
}

namespace {
Tensor as_float(const Tensor& t) {
  return is_floating(t.dtype()) || is_complex(t.dtype()) ? t : to_dtype(t, default_float_dtype());
}

// The spacing of x along y's dim: a 1-D x applies along dim, else x broadcasts with y.
Tensor spacing(const char* op, const Tensor& y, const Tensor& x, int64_t d) {
  if (x.dim() == 1) {
    FB_CHECK_VALUE(x.numel() == y.sizes()[d], "[", op, "] there must be one x value per element of y along dim ", d,
                   ", got ", x.numel(), " x values and y of shape ", shape_str(y.sizes()));
    Shape shape(static_cast<size_t>(y.dim() - d), 1);
    shape[0] = x.numel();
    return diff_once(op::reshape(x, shape), 0);
  }
  return diff_once(x, x.dim() - (y.dim() - d));
}

// The areas of the trapezoids between neighbours along d: (y[1:] + y[:-1]) / 2 * dx.
Tensor areas(const Tensor& y, int64_t d, const Tensor& dx) {
  const int64_t n = y.sizes()[d];
  const Tensor mid = op::mul(flambeau::add(narrow(y, d, 1, n - 1), narrow(y, d, 0, n - 1)), wrapped(0.5));
  return op::mul(as_float(mid), dx);
}

int64_t trapezoid_dim(const char* op, const Tensor& y, int64_t dim) {
  FB_CHECK_VALUE(y.dim() >= 1, "[", op, "] expected y to be at least one-dimensional");
  return wrap_dim(dim, y.dim(), op);
}

Tensor empty_integral(const Tensor& y, int64_t d) {
  return op::sum(as_float(narrow(y, d, 0, 0)), Shape{d}, false, std::nullopt);
}
}  // namespace

Tensor composite::trapezoid(const Tensor& y, const Tensor& x, int64_t dim) {
  const int64_t d = trapezoid_dim("trapezoid", y, dim);
  if (y.sizes()[d] == 0) return empty_integral(y, d);
  return op::sum(areas(y, d, spacing("trapezoid", y, x, d)), Shape{d}, false, std::nullopt);
}

Tensor composite::trapezoid_dx(const Tensor& y, const Scalar& dx, int64_t dim) {
  const int64_t d = trapezoid_dim("trapezoid", y, dim);
  if (y.sizes()[d] == 0) return empty_integral(y, d);
  return op::sum(areas(y, d, scalar_to_tensor(dx)), Shape{d}, false, std::nullopt);
}

Tensor composite::cumulative_trapezoid(const Tensor& y, const Tensor& x, int64_t dim) {
  const int64_t d = trapezoid_dim("cumulative_trapezoid", y, dim);
  if (y.sizes()[d] == 0) return as_float(y);
  return op::cumsum(areas(y, d, spacing("cumulative_trapezoid", y, x, d)), d, std::nullopt);
}

Tensor composite::cumulative_trapezoid_dx(const Tensor& y, const Scalar& dx, int64_t dim) {
  const int64_t d = trapezoid_dim("cumulative_trapezoid", y, dim);
  if (y.sizes()[d] == 0) return as_float(y);
  return op::cumsum(areas(y, d, scalar_to_tensor(dx)), d, std::nullopt);
}

Tensor composite::cov(const Tensor& self, int64_t correction, const std::optional<Tensor>& fweights,
                      const std::optional<Tensor>& aweights) {
  FB_CHECK_VALUE(self.dim() <= 2, "[cov] expected input to have two or fewer dimensions but got an input with ",
                 self.dim(), " dimensions");
  // Variables in rows, observations in columns.
  const Tensor x = as_float(self.dim() < 2 ? op::reshape(self, Shape{1, -1}) : self);
  const int64_t n = x.sizes()[1];
  std::optional<Tensor> w;
  auto check_weights = [&](const Tensor& t, const char* name) {
    FB_CHECK_VALUE(t.dim() <= 1, "[cov] expected ", name, " to have one or fewer dimensions but got ", t.dim());
    FB_CHECK_VALUE(t.numel() == n, "[cov] expected ", name, " to have the same numel as there are observations (",
                   n, ") but got ", t.numel());
    FB_CHECK_VALUE(t.numel() == 0 || !composite_detail::read_first<bool>(op::any(
                                         op::lt(t, scalar_to_tensor(Scalar(int64_t(0)))), std::nullopt, false)),
                   "[cov] ", name, " cannot be negative");
  };
  if (fweights) {
    FB_CHECK_TYPE(is_integral(fweights->dtype(), false), "[cov] expected fweights to have an integral dtype, got ",
                  dtype_name(fweights->dtype()));
    check_weights(*fweights, "fweights");
    w = *fweights;
  }
  if (aweights) {
    FB_CHECK_TYPE(is_floating(aweights->dtype()), "[cov] expected aweights to have a floating point dtype, got ",
                  dtype_name(aweights->dtype()));
    check_weights(*aweights, "aweights");
    w = w ? op::mul(*w, *aweights) : *aweights;
  }
  Tensor avg, norm;
  if (w) {
    const Tensor w_sum = op::sum(*w, std::nullopt, false, std::nullopt);
    avg = op::div(op::sum(op::mul(x, *w), Shape{1}, false, std::nullopt), w_sum);
    norm = (aweights && correction != 0)
               ? flambeau::sub(w_sum, op::div(op::mul(op::sum(op::mul(*w, *aweights), std::nullopt, false, std::nullopt),
                                                scalar_to_tensor(Scalar(correction))),
                                        w_sum))
               : flambeau::sub(w_sum, scalar_to_tensor(Scalar(correction)));
  } else {
    avg = op::mean(x, Shape{1}, false, std::nullopt);
    norm = scalar_tensor(static_cast<double>(n - correction), ScalarType::Float64, /*wrapped=*/true);
  }
  norm = op::clamp_min(norm, Scalar(int64_t(0)));  // as PyTorch's: a non-positive count divides by 0
  const Tensor xm = flambeau::sub(x, op::unsqueeze(avg, 1));
  const Tensor xw = w ? op::mul(xm, *w) : xm;
  const Tensor c = op::div(op::mm(xm, op::conj(op::transpose(xw, 0, 1))), norm);
  // One variable gives a 0-d result, as PyTorch's (whose cov squeezes).
  return self.dim() < 2 || x.sizes()[0] == 1 ? op::reshape(c, Shape{}) : c;
}

Tensor composite::corrcoef(const Tensor& self) {
  FB_CHECK_VALUE(self.dim() <= 2, "[corrcoef] expected input to have two or fewer dimensions but got an input with ",
                 self.dim(), " dimensions");
  const Tensor c = op::cov(self, 1, std::nullopt, std::nullopt);
  if (c.dim() == 0) return op::div(c, c);
  const Tensor stddev = op::sqrt(is_complex(c.dtype()) ? op::real(op::diagonal(c, 0, 0, 1)) : op::diagonal(c, 0, 0, 1));
  const Tensor r = op::div(op::div(c, op::unsqueeze(stddev, 1)), op::unsqueeze(stddev, 0));
  if (is_complex(r.dtype())) return r;
  return op::clamp(r, Scalar(-1.0), Scalar(1.0));  // rounding can step just outside [-1, 1]
}

namespace {
// A Python number arrives as a 0-d cpu tensor: it joins the other operand's device.
Tensor beside(const Tensor& t, const Tensor& other) {
  if (t.device() == other.device() || t.dim() != 0 || !t.device().is_cpu()) return t;
  Tensor moved = empty(Shape{}, t.dtype(), other.device());
  return op::copy_(moved, t);
}
}  // namespace

Tensor composite::isin(const Tensor& elements_in, const Tensor& test_in, bool assume_unique, bool invert) {
  (void)assume_unique;  // a hint only: sorting handles repeats either way
  const Tensor elements = beside(elements_in, test_in), test_elements = beside(test_in, elements_in);
  const ScalarType t = promote_types(elements.dtype(), test_elements.dtype());
  FB_CHECK_TYPE(!is_complex(t), "[isin] is not supported for complex tensors, got ", dtype_name(t));
  const Tensor e = to_dtype(elements, t);
  Tensor found;
  if (test_elements.numel() == 0) {
    found = zeros(e.sizes(), ScalarType::Bool, e.device());
  } else {
    const Tensor sorted = std::get<0>(op::sort(op::reshape(to_dtype(test_elements, t), Shape{-1}), -1, false, false));
    const Tensor pos = op::clamp_max(op::searchsorted(sorted, e, false, false, std::nullopt, std::nullopt),
                                     Scalar(sorted.numel() - 1));
    found = op::eq(op::reshape(op::index_select(sorted, 0, op::reshape(pos, Shape{-1})), e.sizes()), e);
  }
  return invert ? op::logical_not(found) : found;
}

Tensor composite::bincount(const Tensor& self, const std::optional<Tensor>& weights, int64_t minlength) {
  FB_CHECK_VALUE(self.dim() == 1, "[bincount] expected a 1-D input, got shape ", shape_str(self.sizes()));
  FB_CHECK_TYPE(is_integral(self.dtype(), false), "[bincount] expected an integer input, got ",
                dtype_name(self.dtype()));
  // PyTorch's kernel takes uint8 and the signed integers, not the wider unsigned ones.
  const ScalarType st = self.dtype();
  FB_CHECK_IMPL(NotImplementedError,
                st != ScalarType::UInt16 && st != ScalarType::UInt32 && st != ScalarType::UInt64,
                "[bincount] \"bincount_cpu\" not implemented for '",
                st == ScalarType::UInt16   ? "UInt16"
                : st == ScalarType::UInt32 ? "UInt32"
                                           : "UInt64",
                "' (dtype ", dtype_name(st), "), as in PyTorch");
  FB_CHECK_VALUE(minlength >= 0, "[bincount] minlength should be >= 0, got ", minlength);
  if (weights)
    FB_CHECK_VALUE(weights->dim() == 1 && weights->numel() == self.numel(),
                   "[bincount] weights should be 1-D and have the same length as input, got shapes ",
                   shape_str(weights->sizes()), " and ", shape_str(self.sizes()));
  // On the CPU, one kernel (Note [bincount kernel]), unless a gradient of the weights is recorded (through
  // scatter_add below).
  const bool weights_recorded = weights && weights->impl()->needs_autograd() && grad_mode_enabled();
  if (self.device().is_cpu() && (!weights || weights->device().is_cpu()) && !weights_recorded)
    return op::_bincount(self, weights, minlength);
  int64_t length = minlength;
  const Tensor index = to_dtype(self, ScalarType::Int64);
  if (self.numel() > 0) {
    FB_CHECK_VALUE(composite_detail::read_first<int64_t>(op::amin(index, Shape{}, false)) >= 0,
                   "[bincount] input should contain only non-negative values");
    length = std::max(length, composite_detail::read_first<int64_t>(op::amax(index, Shape{}, false)) + 1);
  }
  // Counts are int64; sums of weights are float32 for float32 weights, else float64 (as PyTorch's).
  const ScalarType dtype = !weights                                     ? ScalarType::Int64
                           : weights->dtype() == ScalarType::Float32 ? ScalarType::Float32
                                                                       : ScalarType::Float64;
  const Tensor src = weights ? to_dtype(*weights, dtype) : ones(Shape{self.numel()}, dtype, self.device());
  return op::scatter_add(zeros(Shape{length}, dtype, self.device()), 0, index, src);
}

Tensor composite::histc(const Tensor& self, int64_t bins, const Scalar& min, const Scalar& max) {
  FB_CHECK_TYPE(is_floating(self.dtype()), "[histc] expected a floating point input, got ",
                dtype_name(self.dtype()));
  FB_CHECK_VALUE(bins > 0, "[histc] bins must be > 0, got ", bins);
  double lo = min.to_double(), hi = max.to_double();
  FB_CHECK_VALUE(!(lo > hi), "[histc] max must be larger than min, got min ", lo, " and max ", hi);
  const Tensor flat = op::reshape(self, Shape{-1});
  if (lo == hi && flat.numel() > 0) {
    // The data's range (a NaN in it makes the range NaN, which the check below refuses, as PyTorch's).
    lo = composite_detail::read_first<double>(to_dtype(op::amin(flat, Shape{}, false), ScalarType::Float64));
    hi = composite_detail::read_first<double>(to_dtype(op::amax(flat, Shape{}, false), ScalarType::Float64));
  }
  if (lo == hi) {
    lo -= 1;
    hi += 1;
  }
  FB_CHECK_VALUE(std::isfinite(lo) && std::isfinite(hi), "[histc] range of [", lo, ", ", hi, "] is not finite");
  const Tensor x = to_dtype(flat, ScalarType::Float64);
  const Tensor inside = op::logical_and(op::ge(x, wrapped(lo)), op::le(x, wrapped(hi)));
  const Tensor v = op::masked_select(x, inside);
  // bin = floor((v - lo) * bins / (hi - lo)); the right edge belongs to the last bin.
  const Tensor pos = op::floor(op::mul(flambeau::sub(v, wrapped(lo)), wrapped(static_cast<double>(bins) / (hi - lo))));
  const Tensor index = to_dtype(op::clamp(pos, Scalar(0.0), Scalar(static_cast<double>(bins - 1))), ScalarType::Int64);
  return op::scatter_add(zeros(Shape{bins}, self.dtype(), self.device()), 0, index,
                         ones(Shape{v.numel()}, self.dtype(), self.device()));
}

}  // namespace flambeau
