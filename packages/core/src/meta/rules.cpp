// The vocabulary of the meta step (Note [Meta step], flambeau/meta.h): the
// shape rules, dtype rules and checks that the generated check steps and Meta
// kernels (src/meta_generated.cpp) call, and that backends share. This file
// holds the general ones (elementwise, reductions, indexing, matmul, cat);
// the nn ops' (pooling, conv, norms, losses, embedding) are in nn_rules.cpp.
#include <algorithm>
#include <string>

#include "flambeau/meta.h"
#include "flambeau/ops.h"
#include "flambeau/type_dispatch.h"
#include "meta/bool_products.h"
#include "tensor_iterator.h"

namespace flambeau::meta {

namespace {
std::span<const Tensor* const> as_span(Tensors ts) { return {ts.begin(), ts.size()}; }
}  // namespace

Tensor empty(IntArrayRef sizes, ScalarType dtype, const char* op) {
  const int64_t nbytes = shape_nbytes(sizes, dtype, op);
  auto storage = StorageImpl::allocate(static_cast<size_t>(nbytes), Device(DeviceType::Meta));
  Shape s(sizes.begin(), sizes.end());
  Shape st = contiguous_strides(s, op);
  return Tensor(std::make_shared<TensorImpl>(std::move(storage), dtype, std::move(s), std::move(st), 0));
}

// ---- dtype rules ----

ScalarType promote(Tensors ts) { return result_type(as_span(ts)); }

ScalarType float_valued(Tensors ts) { return to_float_dtype(result_type(as_span(ts))); }

ScalarType accumulate(const Tensor& self, std::optional<ScalarType> dtype) {
  if (dtype) return *dtype;
  return is_integral(self.dtype(), /*include_bool=*/true) ? ScalarType::Int64 : self.dtype();
}

ScalarType clamp_dtype(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  std::vector<Tensor> bounds;
  std::vector<const Tensor*> operands{&self};
  for (const auto& v : {min, max})
    if (v) bounds.push_back(scalar_to_tensor(*v, /*wrapped=*/true));
  for (const Tensor& t : bounds) operands.push_back(&t);
  return result_type(operands);
}

ScalarType promote_list(const TensorList& ts) {
  ScalarType t = ts.empty() ? ScalarType::Float32 : ts[0].dtype();
  for (const Tensor& x : ts) t = promote_types(t, x.dtype());
  return t;
}

ScalarType div_mode_dtype(Tensors ts, std::optional<std::string_view> rounding_mode) {
  return rounding_mode ? promote(ts) : float_valued(ts);
}

// ---- shape rules ----

Shape broadcast(const char* op, Tensors ts) {
  int nd = 0;
  for (const Tensor* t : ts) nd = std::max(nd, static_cast<int>(t->dim()));
  Shape reversed(nd);
  detail::broadcast_reversed(op, as_span(ts), reversed.data(), nd);
  std::reverse(reversed.begin(), reversed.end());
  return reversed;
}

// The reduced dims of a reduction over `dims` (all when none or empty) as a bit mask.
uint64_t reduce_mask(const char* op, const Tensor& self, OptionalIntArrayRef dims) {
  const int64_t nd = self.dim();
  FB_CHECK_VALUE(nd <= 64, "[", op, "] tensors with more than 64 dims are not supported");
  if (!dims || dims->empty()) return nd == 64 ? ~uint64_t{0} : (uint64_t{1} << nd) - 1;
  uint64_t mask = 0;
  for (int64_t d : *dims) {
    const int64_t w = wrap_dim(d, nd, op);
    if (nd == 0) continue;
    FB_CHECK_VALUE(!(mask >> w & 1), "[", op, "] dim ", w, " appears multiple times in the list of dims");
    mask |= uint64_t{1} << w;
  }
  return mask;
}

Shape reduce(const char* op, const Tensor& self, OptionalIntArrayRef dims, bool keepdim) {
  const uint64_t mask = reduce_mask(op, self, dims);
  Shape out;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (!(mask >> d & 1))
      out.push_back(self.sizes()[d]);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

Shape reduce_dim(const char* op, const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  if (!dim) return keepdim ? Shape(self.dim(), 1) : Shape{};
  const int64_t d = wrap_dim(*dim, self.dim(), op);
  Shape out;
  for (int64_t i = 0; i < self.dim(); ++i) {
    if (i != d)
      out.push_back(self.sizes()[i]);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

Shape mm(const char*, const Tensor& a, const Tensor& b) { return {a.sizes()[0], b.sizes()[1]}; }

Shape bmm(const char*, const Tensor& a, const Tensor& b) { return {a.sizes()[0], a.sizes()[1], b.sizes()[2]}; }

Shape sizes(const char*, IntArrayRef sizes) { return Shape(sizes.begin(), sizes.end()); }

Shape topk(const char* op, const Tensor& self, int64_t k, int64_t dim) {
  Shape out(self.sizes().begin(), self.sizes().end());
  if (!out.empty()) out[wrap_dim(dim, self.dim(), op)] = k;
  return out;
}

Shape cat(const char* op, const TensorList& tensors, int64_t dim) {
  FB_CHECK_VALUE(!tensors.empty(), "[", op, "] expected a non-empty list of tensors");
  // As in PyTorch, 1-D empty tensors are skipped (legacy: they act as "nothing").
  const auto skipped = [](const Tensor& t) { return t.dim() == 1 && t.numel() == 0; };
  const Tensor* ref = nullptr;
  for (const Tensor& t : tensors)
    if (!skipped(t)) {
      ref = &t;
      break;
    }
  if (!ref) return Shape{0};
  FB_CHECK_VALUE(ref->dim() > 0, "[", op, "] zero-dimensional tensor cannot be concatenated");
  const int64_t d = wrap_dim(dim, ref->dim(), op);
  Shape out(ref->sizes().begin(), ref->sizes().end());
  out[d] = 0;
  int64_t i = -1;
  for (const Tensor& t : tensors) {
    if (skipped(t)) continue;
    ++i;
    FB_CHECK(t.device() == ref->device(), "[", op, "] all tensors must be on the same device, got ",
             ref->device().str(), " and ", t.device().str());
    FB_CHECK_VALUE(t.dim() == ref->dim(), "[", op, "] tensors must have the same number of dims: shape ",
                   shape_str(ref->sizes()), " and shape ", shape_str(t.sizes()));
    for (int64_t k = 0; k < ref->dim(); ++k)
      FB_CHECK_VALUE(k == d || t.sizes()[k] == ref->sizes()[k], "[", op, "] sizes must match except in dimension ",
                     d, ": shapes ", shape_str(ref->sizes()), " and ", shape_str(t.sizes()),
                     " differ in dimension ", k);
    FB_CHECK(!__builtin_add_overflow(out[d], t.sizes()[d], &out[d]), "[", op, "] the sizes in dimension ", d,
             " of the tensors add up to more than int64 can count (overflow at tensor ", i, " of shape ",
             shape_str(t.sizes()), ")");
  }
  return out;
}

Shape index_select(const char* op, const Tensor& self, int64_t dim, const Tensor& index) {
  if (self.dim() == 0) {  // PyTorch's: one index, a 0-d result
    FB_CHECK_VALUE(index.numel() == 1, "[", op, "] a 0-d input takes exactly one index, got ", index.numel());
    return Shape{};
  }
  Shape out(self.sizes().begin(), self.sizes().end());
  out[wrap_dim(dim, self.dim(), op)] = index.numel();
  return out;
}

namespace {
bool is_mask(ScalarType t) { return t == ScalarType::Bool || t == ScalarType::UInt8; }
}  // namespace

Shape IndexLayout::result_shape(const Tensor& self) const {
  Shape r;
  for (int64_t k : pre) r.push_back(self.sizes()[k]);
  r.insert(r.end(), index_shape.begin(), index_shape.end());
  for (int64_t k : post) r.push_back(self.sizes()[k]);
  return r;
}

IndexLayout index_layout(const char* op, std::span<const Tensor> per_dim) {
  IndexLayout l;
  const auto shapes = [&] {
    std::string s;
    for (const Tensor& t : per_dim) {
      if (!t.defined()) continue;
      if (!s.empty()) s += ", ";
      s += shape_str(t.sizes());
    }
    return s;
  };
  // NumPy's broadcast of the index tensors; the error lists them all, as PyTorch's.
  for (const Tensor& t : per_dim) {
    if (!t.defined()) continue;
    const auto tn = static_cast<size_t>(t.dim());
    if (tn > l.index_shape.size()) l.index_shape.insert(l.index_shape.begin(), tn - l.index_shape.size(), 1);
    for (size_t k = 0; k < tn; ++k) {
      int64_t& b = l.index_shape[l.index_shape.size() - tn + k];
      const int64_t s = t.sizes()[k];
      FB_CHECK_INDEX(s == b || s == 1 || b == 1, "[", op,
                     "] shape mismatch: indexing tensors could not be broadcast together with shapes ", shapes());
      if (b == 1) b = s;
    }
  }
  const auto nd = static_cast<int64_t>(per_dim.size());
  int64_t first = -1, last = -1;
  for (int64_t k = 0; k < nd; ++k)
    if (per_dim[k].defined()) {
      if (first < 0) first = k;
      last = k;
    }
  bool adjacent = true;
  for (int64_t k = first; k <= last; ++k) adjacent = adjacent && per_dim[k].defined();
  for (int64_t k = 0; k < nd; ++k)
    if (!per_dim[k].defined()) (adjacent && k < first ? l.pre : l.post).push_back(k);
  return l;
}

namespace {
/// How many elements of a bool/uint8 mask are nonzero (index's result length along the mask's dims).
int64_t mask_count(const Tensor& mask) {
  if (mask.device().is_cpu() && mask.is_contiguous()) {
    const auto* m = static_cast<const uint8_t*>(mask.data_ptr());  // bool and uint8: one byte each
    int64_t n = 0;
    const int64_t total = mask.numel();
#pragma omp simd reduction(+ : n)
    for (int64_t i = 0; i < total; ++i) n += m[i] != 0;
    return n;
  }
  Tensor host = op::empty(Shape{}, ScalarType::Int64, Device{});
  op::copy_(host, op::count_nonzero(mask, std::nullopt));
  return *host.data<int64_t>();
}
}  // namespace

Shape index(const char* op, const Tensor& self, const OptionalTensorList& indices) {
  TensorList per_dim(static_cast<size_t>(self.dim()));
  size_t d = 0;
  for (const std::optional<Tensor>& t : indices) {
    if (t && is_mask(t->dtype())) {
      if (self.device().is_meta())
        throw NotImplementedError(detail::cat_str(
            "[", op, "] indexing with a ", dtype_name(t->dtype()), " mask of shape ", shape_str(t->sizes()),
            " gives as many rows as the mask has true elements, which only its values tell: ",
            "it cannot run on the '", self.device().str(),
            "' device (index with the mask's nonzero() coordinates instead)"));
      // A device with data counts the mask's true elements: each dim it covers gets that many coordinates
      // (index_layout reads only the shapes: meta tensors of that length stand for them).
      const Tensor coords = op::empty(Shape{mask_count(*t)}, ScalarType::Int64, Device(DeviceType::Meta));
      for (int64_t k = 0; k < t->dim(); ++k) per_dim[d++] = coords;
      continue;
    }
    if (t) per_dim[d] = *t;
    ++d;
  }
  const IndexLayout layout = index_layout(op, per_dim);
  // The kernels' table of an element offset per index position must fit too (checked first: its message
  // names the index shape).
  (void)shape_nbytes(layout.index_shape, ScalarType::Int64, op);
  return layout.result_shape(self);
}

// ---- checks ----

void check_same_device(const char* op, Tensors ts) {
  const Tensor* first = nullptr;
  for (const Tensor* t : ts) {
    if (!t->defined() || (t->device().is_cpu() && t->dim() == 0)) continue;
    if (!first) {
      first = t;
      continue;
    }
    FB_CHECK(t->device() == first->device(), "[", op,
             "] expected all tensors to be on the same device, but found at least two devices, ",
             first->device().str(), " and ", t->device().str());
  }
}

void check_alpha_value(const char* op, Tensors ts, const Scalar& alpha) {
  const ScalarType t = promote(ts);
  FB_CHECK_TYPE(!alpha.is_bool() || t == ScalarType::Bool, "[", op,
                "] a bool alpha is only supported for bool tensors, got ", dtype_name(t));
  FB_CHECK_TYPE(is_floating(t) || !alpha.is_floating(), "[", op, "] for ", dtype_name(t),
                " tensors, alpha must be an integer, got ", alpha.str());
  check_scalar_fits(alpha, t, op);
}

void check_ordered(const char* op, const Tensor& a, const Tensor& b) {
  const ScalarType t = result_type(a, b);
  if (is_complex(t))
    throw TypeError(detail::cat_str("[", op, "] is not supported for complex tensors (dtype ", dtype_name(t),
                                    ", inputs ", dtype_name(a.dtype()), " and ", dtype_name(b.dtype()), ")"));
}

void check_bool(const char* op, const Tensor& t, const char* what) {
  FB_CHECK_TYPE(t.dtype() == ScalarType::Bool, "[", op, "] expected a bool ", what, ", got dtype ",
                dtype_name(t.dtype()));
}

void check_floating(const char* op, const Tensor& t, const char* what) {
  FB_CHECK_TYPE(is_floating(t.dtype()), "[", op, "] ", what,
                " must be a float16, bfloat16, float32 or float64 tensor, got dtype ", dtype_name(t.dtype()));
}

void check_not_bool(const char* op, const Tensor& t) {
  FB_CHECK_TYPE(t.dtype() != ScalarType::Bool, "[", op, "] is not supported for dtype bool");
}

void check_softmax(const char* op, const Tensor& self, int64_t dim) {
  FB_CHECK_TYPE(is_floating(self.dtype()), "[", op, "] needs a floating point tensor, got dtype ",
                dtype_name(self.dtype()));
  wrap_dim(dim, self.dim(), op);
}

void check_softmax_grad(const char* op, const Tensor& grad_output, const Tensor& output, int64_t dim) {
  FB_CHECK_TYPE(output.dtype() == ScalarType::Float32 || output.dtype() == ScalarType::Float64, "[", op,
                "] needs a float32 or float64 output, got dtype ", dtype_name(output.dtype()));
  FB_CHECK_TYPE(grad_output.dtype() == output.dtype(), "[", op, "] grad_output dtype ",
                dtype_name(grad_output.dtype()), " does not match output dtype ", dtype_name(output.dtype()));
  FB_CHECK_VALUE(std::ranges::equal(grad_output.sizes(), output.sizes()), "[", op, "] grad_output shape ",
                 shape_str(grad_output.sizes()), " does not match output shape ", shape_str(output.sizes()));
  wrap_dim(dim, output.dim(), op);
}

void check_var(const char* op, const Tensor& self) {
  FB_CHECK_TYPE(is_floating(self.dtype()) || is_complex(self.dtype()), "[", op,
                "] var and std only support floating point and complex dtypes, got ", dtype_name(self.dtype()),
                " (shape ", shape_str(self.sizes()), ")");
}

void check_nonempty_dim(const char* op, const Tensor& self, int64_t dim) {
  dim = wrap_dim(dim, std::max<int64_t>(self.dim(), 1), op);
  const int64_t n = self.dim() == 0 ? 1 : self.sizes()[dim];
  FB_CHECK_INDEX(n > 0, "[", op, "] Expected reduction dim ", dim, " to have non-zero size (input shape ",
                 shape_str(self.sizes()), ")");
}

void check_rounding_mode(const char* op, std::optional<std::string_view> rounding_mode) {
  FB_CHECK_VALUE(!rounding_mode || *rounding_mode == "trunc" || *rounding_mode == "floor", "[", op,
                 "] expected rounding_mode to be one of None, 'trunc', or 'floor' but found '", *rounding_mode, "'");
}

void check_activation_grad(const char* op, const Tensor& grad_output, const Tensor& self) {
  const ScalarType t = self.dtype();
  if ((t == ScalarType::Float16 || t == ScalarType::BFloat16) && grad_output.dtype() == t) return;
  const auto check_float = [&](const Tensor& x, const char* what) {
    FB_CHECK_TYPE(x.dtype() == ScalarType::Float32 || x.dtype() == ScalarType::Float64, "[", op, "] ", what,
                  " must be a float16, bfloat16, float32 or float64 tensor, got dtype ", dtype_name(x.dtype()));
  };
  check_float(self, "input");
  check_float(grad_output, "grad_output");
  FB_CHECK_VALUE(std::ranges::equal(grad_output.sizes(), self.sizes()), "[", op, "] grad_output shape ",
                 shape_str(grad_output.sizes()), " does not match input shape ", shape_str(self.sizes()));
}

void check_gelu_approximate(const char*, std::string_view approximate) {
  if (approximate != "none" && approximate != "tanh")
    throw ValueError(detail::cat_str("[gelu] approximate argument must be either 'none' or 'tanh', got '",
                                     approximate, "'"));
}

void check_clamp_bounds(const char* op, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  FB_CHECK_VALUE(min || max, "[", op, "] at least one of min and max must not be None");
}

void check_int_pow_exponent(const char* op, const Tensor& self, const Tensor& exponent, ScalarType result) {
  // A wrapped number is a cpu tensor (scalar_to_tensor), readable whatever device self is on.
  if (!is_integral(result, /*include_bool=*/false) || !exponent.impl()->is_wrapped_number() ||
      exponent.dtype() != ScalarType::Int64 || exponent.device().type != DeviceType::CPU)
    return;
  const int64_t e = *exponent.data<int64_t>();
  FB_CHECK_VALUE(e >= 0, "[", op, "] integers to negative integer powers are not allowed: ", dtype_name(self.dtype()),
                 " tensor of shape ", shape_str(self.sizes()), " ** ", e, "; use a float base, e.g. t.float() ** ", e);
  check_scalar_fits(Scalar(e), result, op);
}

void check_round_decimals(const char* op, const Tensor& self, int64_t decimals) {
  FB_CHECK_TYPE(decimals == 0 || is_floating(self.dtype()), "[", op,
                "] decimals != 0 needs a floating point tensor, got dtype ", dtype_name(self.dtype()));
}

void check_hardtanh_bounds(const char* op, const Scalar& min_val, const Scalar& max_val) {
  FB_CHECK_VALUE(min_val.to_double() <= max_val.to_double(), "[", op, "] min_val (", min_val.to_double(),
                 ") cannot be greater than max_val (", max_val.to_double(), ")");
}

void check_topk(const char* op, const Tensor& self, int64_t k, int64_t dim) {
  dim = wrap_dim(dim, self.dim(), op);
  const int64_t n = self.dim() == 0 ? 1 : self.sizes()[dim];
  FB_CHECK(k >= 0 && k <= n, "[", op, "] k (", k, ") is out of range for dim ", dim, " of size ", n, " (shape ",
           shape_str(self.sizes()), ")");
}

void check_dtypes(const char* op, ScalarType computed, unsigned allowed, Tensors inputs) {
  if (dtype_set_of(computed) & allowed) [[likely]]
    return;
  std::string given;
  int count = 0;
  for (const Tensor* t : inputs) {
    if (!t->defined()) continue;
    given += detail::cat_str(count++ ? " and " : "", dtype_name(t->dtype()));
  }
  if (computed == ScalarType::Bool && count <= 1)
    throw TypeError(detail::cat_str("[", op, "] is not supported for bool tensors"));
  throw TypeError(detail::cat_str("[", op, "] is not supported for dtype ", dtype_name(computed),
                                  count > 1 ? detail::cat_str(" (inputs ", given, ")") : std::string()));
}

void check_real(const char* op, ScalarType t, const char* hint) {
  FB_CHECK_TYPE(!is_complex(t), "[", op, "] is not supported for dtype ", dtype_name(t), ": ", hint);
}

void check_matmul(const char* op, const Tensor& a, const Tensor& b, int64_t want_dim) {
  FB_CHECK_VALUE(a.dim() == want_dim && b.dim() == want_dim, "[", op, "] expected two ", want_dim,
                 "-D tensors, got shapes ", shape_str(a.sizes()), " and ", shape_str(b.sizes()));
  FB_CHECK_TYPE(a.dtype() == b.dtype(), "[", op, "] expected both operands to have the same dtype, got ",
                dtype_name(a.dtype()), " and ", dtype_name(b.dtype()));
  FB_CHECK(a.device() == b.device(), "[", op, "] expected both operands on the same device, got ",
           a.device().str(), " and ", b.device().str());
  const int64_t ka = a.sizes()[want_dim - 1], kb = b.sizes()[want_dim - 2];
  FB_CHECK_VALUE(ka == kb, "[", op, "] shapes ", shape_str(a.sizes()), " and ", shape_str(b.sizes()),
                 " cannot be multiplied: ", ka, " != ", kb);
  if (want_dim == 3)
    FB_CHECK_VALUE(a.sizes()[0] == b.sizes()[0], "[", op, "] batch sizes differ: shapes ", shape_str(a.sizes()),
                   " and ", shape_str(b.sizes()), " (", a.sizes()[0], " != ", b.sizes()[0], ")");
  const int64_t rows = a.sizes()[want_dim - 2], cols = b.sizes()[want_dim - 1];
  const int64_t batch = want_dim == 3 ? a.sizes()[0] : 1;
  // Note [Bool products]
  check_bool_product(op, a.dtype(), rows == 0 || cols == 0 || batch == 0 ? 0 : 1, ka);
}

void check_dim(const char* op, const Tensor& self, int64_t dim) { wrap_dim(dim, self.dim(), op); }

void check_reducible(const char* op, const Tensor& self, std::optional<int64_t> dim, const char* hint) {
  if (!dim) {
    FB_CHECK(self.numel() > 0, "[", op, "] ", op, "() of an empty tensor (shape ", shape_str(self.sizes()),
             ") is undefined", hint);
    return;
  }
  const int64_t d = wrap_dim(*dim, self.dim(), op);
  FB_CHECK_INDEX(self.dim() == 0 || self.sizes()[d] > 0, "[", op, "] cannot reduce over dim ", d, " of size 0 (shape ",
                 shape_str(self.sizes()), "): the reduction has no identity");
}

void check_reducible_dims(const char* op, const Tensor& self, IntArrayRef dims) {
  const uint64_t mask = reduce_mask(op, self, dims);
  for (int64_t d = 0; d < self.dim(); ++d)
    FB_CHECK_INDEX(!(mask >> d & 1) || self.sizes()[d] > 0, "[", op, "] cannot reduce over dim ", d,
                   " of size 0 (shape ", shape_str(self.sizes()), "): the reduction has no identity");
  FB_CHECK_INDEX(self.numel() > 0 || self.dim() > 0, "[", op, "] empty tensor");
}

void check_cat(const char* op, const TensorList& tensors, int64_t dim) {
  const Shape out = cat(op, tensors, dim);
  shape_nbytes(out, promote_list(tensors), op);  // Note [Size overflow]
}

void check_gather(const char* op, const Tensor& self, int64_t dim, const Tensor& index) {
  const int64_t d = wrap_dim(dim, self.dim(), op);
  // As PyTorch: an empty index gathers nothing, whatever its dtype and shape (the result has its shape);
  // a 0-d self counts as 1-d, so a 1-d index repeats its one element.
  if (index.numel() == 0) return;
  FB_CHECK_TYPE(index.dtype() == ScalarType::Int64 || index.dtype() == ScalarType::Int32, "[", op,
                "] index must be an int64 or int32 tensor, got dtype ", dtype_name(index.dtype()));
  const int64_t nd = std::max<int64_t>(self.dim(), 1);
  FB_CHECK_VALUE(std::max<int64_t>(index.dim(), 1) == nd, "[", op,
                 "] index must have as many dims as self: index shape ", shape_str(index.sizes()),
                 ", self shape ", shape_str(self.sizes()));
  for (int64_t k = 0; k < self.dim() && k < index.dim(); ++k)
    FB_CHECK_VALUE(k == d || index.sizes()[k] <= self.sizes()[k], "[", op, "] index shape ",
                   shape_str(index.sizes()), " is larger than self shape ", shape_str(self.sizes()),
                   " in dimension ", k);
}

void check_scatter(const char* op, const Tensor& self, int64_t dim, const Tensor& index, const Tensor* src) {
  const int64_t d = wrap_dim(dim, std::max<int64_t>(self.dim(), 1), op);
  // As PyTorch: an empty index scatters nothing, whatever its dtype and shape (src's dtype still counts).
  FB_CHECK_TYPE(
      index.dtype() == ScalarType::Int64 || index.dtype() == ScalarType::Int32 || index.numel() == 0, "[", op,
      "] index must be an int64 or int32 tensor, got dtype ", dtype_name(index.dtype()));
  if (src)
    FB_CHECK_TYPE(src->dtype() == self.dtype(), "[", op, "] src dtype ", dtype_name(src->dtype()),
                  " must match self dtype ", dtype_name(self.dtype()));
  if (index.numel() == 0) return;
  const int64_t nd = std::max<int64_t>(self.dim(), 1);
  FB_CHECK_VALUE(std::max<int64_t>(index.dim(), 1) == nd, "[", op,
                 "] index must have as many dims as self: index shape ", shape_str(index.sizes()),
                 ", self shape ", shape_str(self.sizes()));
  for (int64_t k = 0; k < index.dim() && self.dim() > 0; ++k)
    FB_CHECK_VALUE(k == d || index.sizes()[k] <= self.sizes()[k], "[", op, "] index shape ",
                   shape_str(index.sizes()), " is larger than self shape ", shape_str(self.sizes()),
                   " in dimension ", k);
  if (!src) return;
  FB_CHECK_VALUE(std::max<int64_t>(src->dim(), 1) == std::max<int64_t>(index.dim(), 1), "[", op,
                 "] src must have as many dims as index: src shape ", shape_str(src->sizes()),
                 ", index shape ", shape_str(index.sizes()));
  for (int64_t k = 0; k < index.dim() && src->dim() > 0; ++k)
    FB_CHECK_VALUE(index.sizes()[k] <= src->sizes()[k], "[", op, "] index shape ", shape_str(index.sizes()),
                   " is larger than src shape ", shape_str(src->sizes()), " in dimension ", k);
}

void check_scatter_reduce(const char* op, std::optional<std::string_view> reduce, bool scatter_reduce,
                          const Tensor& self) {
  if (!reduce) return;
  const std::string_view r = *reduce;
  if (!scatter_reduce) {
    if (r != "add" && r != "multiply")
      throw ValueError(detail::cat_str("[", op, "] reduce must be 'add' or 'multiply', got '", r, "'"));
    return;
  }
  if (r != "sum" && r != "prod" && r != "mean" && r != "amax" && r != "amin")
    throw ValueError(detail::cat_str("[", op, "] reduce must be one of 'sum', 'prod', 'mean', 'amax', 'amin', got '",
                                     r, "'"));
  FB_CHECK_TYPE(!is_complex(self.dtype()) || (r != "amax" && r != "amin"), "[", op,
                "] reduce 'amax' and 'amin' are not supported for dtype ", dtype_name(self.dtype()),
                " (complex numbers have no order)");
}

void check_index_slices(const char* op, const Tensor& self, int64_t dim, const Tensor& index,
                        const Tensor* source) {
  FB_CHECK_TYPE(index.dtype() == ScalarType::Int64 || index.dtype() == ScalarType::Int32, "[", op,
                "] index must be an int64 or int32 tensor, got dtype ", dtype_name(index.dtype()));
  FB_CHECK_VALUE(index.dim() <= 1, "[", op, "] index must be 0-d or 1-d, got shape ", shape_str(index.sizes()));
  const int64_t d = wrap_dim(dim, std::max<int64_t>(self.dim(), 1), op);
  if (!source) return;
  FB_CHECK_TYPE(source->dtype() == self.dtype(), "[", op, "] source dtype ", dtype_name(source->dtype()),
                " must match self dtype ", dtype_name(self.dtype()));
  bool ok = source->dim() == self.dim() || (self.dim() <= 1 && source->dim() <= 1);
  for (int64_t k = 0; ok && k < self.dim(); ++k) {
    const int64_t want = k == d ? index.numel() : self.sizes()[k];
    ok = (source->dim() == 0 ? 1 : source->sizes()[k]) == want;
  }
  if (self.dim() == 0) ok = source->numel() == index.numel();
  FB_CHECK_VALUE(ok, "[", op, "] source of shape ", shape_str(source->sizes()), " must have the shape of self ",
                 shape_str(self.sizes()), " except in dimension ", d, ", where it must have the number of indices (",
                 index.numel(), ")");
}

void check_index_put_values(const char* op, const Tensor& values, IntArrayRef result_shape) {
  const auto rn = static_cast<int64_t>(result_shape.size());
  bool fits = values.dim() <= rn;
  for (int64_t k = 1; fits && k <= values.dim(); ++k) {
    const int64_t vs = values.sizes()[values.dim() - k];
    fits = vs == 1 || vs == result_shape[rn - k];
  }
  FB_CHECK_VALUE(fits, "[", op, "] shape mismatch: values of shape ", shape_str(values.sizes()),
                 " cannot be broadcast to the indexing result of shape ", shape_str(result_shape));
}

void check_index_put(const char* op, const Tensor& self, const OptionalTensorList& indices, const Tensor& values) {
  FB_CHECK_TYPE(values.dtype() == self.dtype(), "[", op, "] values dtype ", dtype_name(values.dtype()),
                " must match self dtype ", dtype_name(self.dtype()), " (cast the values first)");
  FB_CHECK(values.device() == self.device() || (values.device().is_cpu() && values.dim() == 0), "[", op,
           "] values are on ", values.device().str(), " but self is on ", self.device().str());
  for (int64_t d = 0; d < self.dim(); ++d)
    FB_CHECK(self.strides()[d] != 0 || self.sizes()[d] <= 1, "[", op, "] cannot write into an expanded tensor (",
             self.describe(), ", strides ", shape_str(self.strides()),
             "): several of its elements share one memory location; clone() it first");
  check_index(op, self, indices);
  for (const std::optional<Tensor>& t : indices)
    if (t && is_mask(t->dtype())) return;  // the result's length is the mask's count of true elements
  check_index_put_values(op, values, index(op, self, indices));
}

void check_index(const char* op, const Tensor& self, const OptionalTensorList& indices) {
  const int64_t nd = self.dim();
  int64_t consumed = 0;
  bool any = false;
  for (size_t i = 0; i < indices.size(); ++i) {
    if (!indices[i]) {
      ++consumed;
      continue;
    }
    const Tensor& t = *indices[i];
    any = true;
    FB_CHECK(t.device() == self.device() || (t.device().is_cpu() && t.dim() == 0), "[", op, "] index ", i,
             " is on ", t.device().str(), " but self is on ", self.device().str());
    FB_CHECK_INDEX(is_mask(t.dtype()) || t.dtype() == ScalarType::Int64 || t.dtype() == ScalarType::Int32,
                   "[", op, "] tensors used as indices must be int64, int32, bool or uint8 tensors, got ",
                   dtype_name(t.dtype()), " for index ", i);
    FB_CHECK_INDEX(!is_mask(t.dtype()) || t.dim() > 0, "[", op, "] index ", i,
                   " is a 0-dim bool tensor, which indexes no dim; unsqueeze self and index it with a "
                   "1-element mask instead");
    consumed += is_mask(t.dtype()) ? t.dim() : 1;
  }
  FB_CHECK_INDEX(consumed <= nd, "[", op, "] too many indices for a tensor of dimension ", nd, " (got ", consumed,
                 ")");
  FB_CHECK_VALUE(any, "[", op, "] expected at least one index tensor, got only whole dims (None)");
  int64_t d = 0;
  for (size_t i = 0; i < indices.size(); ++i) {
    const std::optional<Tensor>& t = indices[i];
    if (!t || !is_mask(t->dtype())) {
      ++d;
      continue;
    }
    const auto covered = self.sizes().subspan(d, t->dim());
    FB_CHECK_INDEX(std::ranges::equal(covered, t->sizes()), "[", op, "] the shape ", shape_str(t->sizes()),
                   " of the mask at index ", i, " does not match the shape ", shape_str(covered),
                   " of the indexed tensor of shape ", shape_str(self.sizes()), " at dimension ", d);
    d += t->dim();
  }
}

void check_value_fits(const char* op, const Scalar& value, const Tensor& self) {
  check_scalar_fits(value, self.dtype(), op);
}

void check_inplace_dtype(const char* op, const Tensor& self, ScalarType result) {
  FB_CHECK_TYPE(can_cast(result, self.dtype()), "[", op, "] result type ", dtype_name(result),
                " can't be cast to the desired output type ", dtype_name(self.dtype()));
}

void check_broadcasts_to(const char* op, Tensors inputs, const Tensor& self) {
  detail::check_broadcast_to(op, as_span(inputs), self.sizes());
}

}  // namespace flambeau::meta
