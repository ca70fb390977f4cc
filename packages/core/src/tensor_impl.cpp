#include "flambeau/tensor_impl.h"

#include <algorithm>

#include "flambeau/error.h"
#include "flambeau/tensor.h"

namespace flambeau {

namespace {

[[noreturn]] void throw_too_large(IntArrayRef sizes, const char* op) {
  throw ValueError(detail::cat_str("[", op, "] shape ", shape_str(sizes),
                                   " is too large: the product of its sizes overflows int64"));
}

}  // namespace

// Note [Size overflow]
int64_t shape_numel(IntArrayRef sizes, const char* op) {
  for (int64_t s : sizes)
    FB_CHECK_VALUE(s >= 0, "[", op, "] negative dimension ", s, " in shape ", shape_str(sizes));
  int64_t span = 1;  // product of max(size, 1): the stride a dim in front would need
  bool empty = false;
  for (int64_t s : sizes) {
    if (__builtin_mul_overflow(span, std::max<int64_t>(s, 1), &span)) throw_too_large(sizes, op);
    empty |= s == 0;
  }
  return empty ? 0 : span;
}

int64_t shape_nbytes(IntArrayRef sizes, ScalarType dtype, const char* op) {
  const int64_t n = shape_numel(sizes, op);
  int64_t nbytes = 0;
  FB_CHECK_VALUE(!__builtin_mul_overflow(n, static_cast<int64_t>(itemsize(dtype)), &nbytes), "[", op,
                 "] shape ", shape_str(sizes), " of dtype ", dtype_name(dtype), " is too large: ", n,
                 " elements of ", itemsize(dtype), " bytes overflow int64");
  return nbytes;
}

Shape contiguous_strides(IntArrayRef sizes, const char* op) {
  shape_numel(sizes, op);  // every running product below fits
  Shape strides(sizes.size());
  int64_t s = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = s;
    s *= std::max<int64_t>(sizes[i], 1);
  }
  return strides;
}

TensorImpl::TensorImpl(Storage storage, ScalarType dtype, IntArrayRef sizes, IntArrayRef strides,
                       int64_t offset)
    : storage_(std::move(storage)), offset_(offset), dtype_(dtype) {
  FB_INTERNAL_ASSERT(sizes.size() == strides.size(), "shape ", shape_str(sizes), ", strides ",
                     shape_str(strides));
  shape_.assign(sizes, strides);
  refresh_numel_and_contiguity();
}

TensorImpl::~TensorImpl() = default;

void TensorImpl::set_sizes_and_strides(IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
  FB_INTERNAL_ASSERT(sizes.size() == strides.size(), "shape ", shape_str(sizes), ", strides ",
                     shape_str(strides));
  shape_.assign(sizes, strides);
  offset_ = offset;
  refresh_numel_and_contiguity();
}

void TensorImpl::set_data(const TensorImpl& other) {
  if (&other == this) return;
  storage_ = other.storage_;
  dtype_ = other.dtype_;
  shape_ = other.shape_;
  offset_ = other.offset_;
  refresh_numel_and_contiguity();
}

// Note [View bounds]
void TensorImpl::refresh_numel_and_contiguity() {
  const IntArrayRef sizes = shape_.sizes(), strides = shape_.strides();
  const auto isz = static_cast<int64_t>(itemsize(dtype_));
  int64_t span = 1, offset_bytes = 0;
  bool ok = offset_ >= 0 && !__builtin_mul_overflow(offset_, isz, &offset_bytes);
  bool empty = false;
  for (int64_t s : sizes) {
    ok = ok && s >= 0 && !__builtin_mul_overflow(span, std::max<int64_t>(s, 1), &span);
    empty |= s == 0;
  }
  // lo and hi: the smallest and largest element index the view reaches.
  int64_t lo = offset_, hi = offset_;
  for (size_t i = 0; ok && !empty && i < sizes.size(); ++i) {
    int64_t reach = 0;
    ok = !__builtin_mul_overflow(sizes[i] - 1, strides[i], &reach) &&
         !__builtin_add_overflow(reach < 0 ? lo : hi, reach, reach < 0 ? &lo : &hi);
  }
  const auto capacity = static_cast<int64_t>(storage_->nbytes() / static_cast<size_t>(isz));
  FB_INTERNAL_ASSERT(ok && (empty || (lo >= 0 && hi < capacity)), "a view of shape ", shape_str(sizes),
                     ", strides ", shape_str(strides), " and offset ", offset_, " (dtype ",
                     dtype_name(dtype_), ") reaches outside its storage of ", storage_->nbytes(),
                     " bytes; the op that made it should have refused it");
  numel_ = empty ? 0 : span;
  // Contiguity: a non-empty tensor whose non-1 dims have row-major strides
  // (the running product stays <= numel, so it cannot overflow).
  bool contiguous = true;
  int64_t expected = 1;
  for (size_t i = sizes.size(); !empty && i-- > 0;) {
    if (sizes[i] == 1) continue;
    if (strides[i] != expected) contiguous = false;
    expected *= sizes[i];
  }
  is_contiguous_ = contiguous;
}

AutogradMetaInterface* TensorImpl::ensure_autograd_meta() {
  if (!autograd_meta_) {
    const AutogradMetaFactory* f = autograd_meta_factory();
    FB_CHECK(f != nullptr,
             "[requires_grad] gradients need flambeau-autograd, which is not loaded: "
             "pip install flambeau-autograd and `import flambeau_autograd` (or `import flambeau`)");
    autograd_meta_ = f->make();
  }
  return autograd_meta_.get();
}

void TensorImpl::set_requires_grad(bool value) {
  if (!value && !autograd_meta_) return;
  if (value)
    FB_CHECK_TYPE(is_floating(dtype_) || is_complex(dtype_),
                  "[requires_grad] only floating point tensors can require "
                  "gradients, got dtype ",
                  dtype_name(dtype_));
  ensure_autograd_meta()->set_requires_grad(value, this);
}

namespace {
const AutogradMetaFactory* g_autograd_factory = nullptr;
}
void set_autograd_meta_factory(const AutogradMetaFactory* factory) { g_autograd_factory = factory; }
const AutogradMetaFactory* autograd_meta_factory() { return g_autograd_factory; }

// ---- Tensor ----

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  const int64_t n = ndim == 0 ? 1 : ndim;  // a 0-dim tensor accepts dim 0 and -1, as in PyTorch
  FB_CHECK_INDEX(dim >= -n && dim < n, "[", op, "] dimension ", dim, " out of range for a ", ndim,
                 "-d tensor (expected in [", -n, ", ", n - 1, "])");
  return dim < 0 ? dim + n : dim;
}

int64_t Tensor::size(int64_t d) const {
  FB_CHECK_INDEX(dim() > 0, "[size] a 0-d tensor has no dimension ", d);
  return impl_->size(wrap_dim(d, dim(), "size"));
}
int64_t Tensor::stride(int64_t d) const {
  FB_CHECK_INDEX(dim() > 0, "[stride] a 0-d tensor has no dimension ", d);
  return impl_->stride(wrap_dim(d, dim(), "stride"));
}

Tensor Tensor::grad() const {
  auto* m = impl_->autograd_meta();
  return m ? m->grad() : Tensor();
}

std::string Tensor::describe() const {
  if (!defined()) return "Tensor(undefined)";
  return detail::cat_str("Tensor(shape=", shape_str(sizes()), ", dtype=", dtype_name(dtype()),
                         ", device=", device().str(), ")");
}

}  // namespace flambeau
