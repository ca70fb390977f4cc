#pragma once
// Tensor: a refcounted handle to a TensorImpl. Copying a Tensor copies the
// handle, not the data; the memory is freed when the last handle drops.
// Ops are free functions in flambeau/ops.h.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "flambeau/tensor_impl.h"

namespace flambeau {

class FB_API Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return static_cast<bool>(impl_); }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }

  IntArrayRef sizes() const { return impl_->sizes(); }
  IntArrayRef strides() const { return impl_->strides(); }
  /// Size of dimension d; negative d counts from the end. IndexError if out of range.
  int64_t size(int64_t d) const;
  int64_t stride(int64_t d) const;
  int64_t dim() const { return impl_->dim(); }
  int64_t numel() const { return impl_->numel(); }
  ScalarType dtype() const { return impl_->dtype(); }
  Device device() const { return impl_->device(); }
  bool is_contiguous() const { return impl_->is_contiguous(); }
  int64_t storage_offset() const { return impl_->storage_offset(); }
  void* data_ptr() const { return impl_->data(); }
  /// The first element, typed: PyTorch's `t.data_ptr<float>()` (the same pointer as data<T>()).
  template <class T>
  T* data_ptr() const {
    return static_cast<T*>(impl_->data());
  }
  template <class T>
  T* data() const {
    return static_cast<T*>(impl_->data());
  }

  bool requires_grad() const { return impl_->requires_grad(); }
  Tensor& set_requires_grad(bool v) {
    impl_->set_requires_grad(v);
    return *this;
  }
  /// The accumulated gradient (undefined Tensor if none or no autograd).
  Tensor grad() const;

  /// "Tensor(shape=(2, 3), dtype=float32, device=cpu)" for messages.
  std::string describe() const;

 private:
  std::shared_ptr<TensorImpl> impl_;
};

using TensorList = std::vector<Tensor>;
/// A list with holes (std::nullopt): advanced indexing's indices (a hole is a whole dim).
using OptionalTensorList = std::vector<std::optional<Tensor>>;

/// Normalizes a dim index into [0, ndim); IndexError naming `op` otherwise.
FB_API int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);

/// ValueError naming `op` if several elements of `t` share one memory location
/// (a dim of size > 1 with stride 0, as expand makes). Ops that write into a
/// tensor call it (TensorIterator's outputs, copy_, the random fills), as
/// PyTorch does; fill_ does not, since writing one value several times is
/// harmless (PyTorch's fill_ and zero_ accept expanded tensors too).
FB_API void check_no_internal_overlap(const Tensor& t, const char* op);

}  // namespace flambeau
