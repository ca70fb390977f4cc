// The vocabulary of the meta step (Note [Meta step], flambeau/meta.h): the
// shape rules, dtype rules and checks that the generated check steps and Meta
// kernels (src/meta_generated.cpp) call, and that backends share.
#include <algorithm>

#include "flambeau/meta.h"
#include "flambeau/ops.h"
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

void check_inplace_dtype(const char* op, const Tensor& self, ScalarType result) {
  FB_CHECK_TYPE(can_cast(result, self.dtype()), "[", op, "] result type ", dtype_name(result),
                " can't be cast to the desired output type ", dtype_name(self.dtype()));
}

void check_broadcasts_to(const char* op, Tensors inputs, const Tensor& self) {
  detail::check_broadcast_to(op, as_span(inputs), self.sizes());
}

}  // namespace flambeau::meta
