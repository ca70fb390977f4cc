#include "flambeau/tensor_impl.h"

#include "flambeau/error.h"
#include "flambeau/tensor.h"

namespace flambeau {

Shape contiguous_strides(IntArrayRef sizes) {
  Shape strides(sizes.size());
  int64_t s = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = s;
    s *= std::max<int64_t>(sizes[i], 1);
  }
  return strides;
}

int64_t shape_numel(IntArrayRef sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) {
    FB_CHECK_VALUE(s >= 0, "[shape] negative dimension ", s, " in shape ", shape_str(sizes));
    n *= s;
  }
  return n;
}

TensorImpl::TensorImpl(Storage storage, ScalarType dtype, Shape sizes, Shape strides, int64_t offset)
    : storage_(std::move(storage)),
      sizes_(std::move(sizes)),
      strides_(std::move(strides)),
      offset_(offset),
      dtype_(dtype) {
  refresh_numel_and_contiguity();
}

TensorImpl::~TensorImpl() = default;

void TensorImpl::set_sizes_and_strides(Shape sizes, Shape strides, int64_t offset) {
  sizes_ = std::move(sizes);
  strides_ = std::move(strides);
  offset_ = offset;
  refresh_numel_and_contiguity();
}

void TensorImpl::refresh_numel_and_contiguity() {
  FB_INTERNAL_ASSERT(sizes_.size() == strides_.size());
  int64_t n = 1, expected = 1;
  bool contiguous = true;
  for (size_t i = sizes_.size(); i-- > 0;) {
    n *= sizes_[i];
    if (sizes_[i] != 1) {
      if (strides_[i] != expected) contiguous = false;
      expected *= sizes_[i];
    }
  }
  numel_ = n;
  is_contiguous_ = contiguous || n == 0;
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
    FB_CHECK_TYPE(is_floating(dtype_),
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
