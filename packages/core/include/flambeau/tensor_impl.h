#pragma once
// The descriptor behind a Tensor handle: a view (sizes, strides, offset in
// elements) of a Storage, its dtype, and the autograd slot.
//
// Note [Version counter]
// Every in-place write bumps the version counter of the written tensor. The
// counter lives in the Storage, so all views of one buffer share it. Autograd
// records the version of each tensor it saves for backward and raises if it
// changed by the time backward runs.
//
// Note [Wrapped numbers]
// A Python scalar passed to a binary op becomes a 0-dim tensor flagged as a
// wrapped number. Type promotion treats it as "weak" (PyTorch's rule): it can
// raise the category of the result (int tensor + 2.5 -> float32) but never its
// width within a category (float32 tensor + 2.5 stays float32).
//
// Note [Size overflow]
// Sizes, strides and offsets are int64 element counts, and every product or
// sum of them is checked (__builtin_*_overflow) before it is used: a shape
// whose element count, contiguous strides or byte count would overflow int64
// raises a RuntimeError naming the op and the shape, instead of wrapping around
// to a small buffer behind a huge shape. A shape is *representable* when the
// product of max(size, 1) over its dims fits in int64 (PyTorch's rule too), so
// (0, 2**62, 2**62) is refused although it holds no element: its strides
// could not be written down.
//
// Note [View bounds]
// Every TensorImpl holds, checked whenever its sizes, strides or offset are
// set: the shape is representable, 0 <= offset and offset * itemsize fits in
// int64, and, unless it is empty, every element it addresses lies inside its
// storage. Ops check their arguments first, with errors that name the op; this
// check is the backstop, so a view that escapes its storage is an internal
// error (a bug), never a read or write of another tensor's memory.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "flambeau/autograd_meta.h"
#include "flambeau/dtype.h"
#include "flambeau/macros.h"
#include "flambeau/storage.h"

namespace flambeau {

using IntArrayRef = std::span<const int64_t>;
/// An optional list of ints (`int[]?` in the op table), e.g. reduction dims where none means all.
using OptionalIntArrayRef = std::optional<IntArrayRef>;
using Shape = std::vector<int64_t>;

/// Contiguous (row-major) strides for a shape. ValueError/RuntimeError naming
/// `op` as shape_numel for a negative size or an unrepresentable shape.
FB_API Shape contiguous_strides(IntArrayRef sizes, const char* op = "shape");
/// Product of sizes. ValueError (FlambeauError) naming `op` for a negative size,
/// and naming `op` and the shape if it is not representable (Note [Size overflow]).
FB_API int64_t shape_numel(IntArrayRef sizes, const char* op = "shape");
/// Bytes of a contiguous tensor of this shape and dtype, as shape_numel plus a
/// ValueError (FlambeauError) naming `op`, the shape and dtype if they overflow int64.
FB_API int64_t shape_nbytes(IntArrayRef sizes, ScalarType dtype, const char* op);

class FB_API TensorImpl {
 public:
  TensorImpl(Storage storage, ScalarType dtype, Shape sizes, Shape strides, int64_t offset);
  ~TensorImpl();
  TensorImpl(const TensorImpl&) = delete;
  TensorImpl& operator=(const TensorImpl&) = delete;

  IntArrayRef sizes() const { return sizes_; }
  IntArrayRef strides() const { return strides_; }
  int64_t size(int64_t d) const { return sizes_[d]; }
  int64_t stride(int64_t d) const { return strides_[d]; }
  int64_t dim() const { return static_cast<int64_t>(sizes_.size()); }
  int64_t numel() const { return numel_; }
  int64_t storage_offset() const { return offset_; }
  ScalarType dtype() const { return dtype_; }
  Device device() const { return storage_->device(); }
  bool is_contiguous() const { return is_contiguous_; }
  const Storage& storage() const { return storage_; }

  /// Address of element [0, 0, ...]; null for a view of an empty storage
  /// (which may still carry an offset, e.g. a slice of an empty tensor).
  void* data() const {
    char* base = static_cast<char*>(storage_->data());
    return base ? base + offset_ * static_cast<int64_t>(itemsize(dtype_)) : nullptr;
  }

  /// Re-points this tensor (used by in-place resizing ops and `set_`-like ops).
  /// Checks Note [View bounds] like the constructor.
  void set_sizes_and_strides(Shape sizes, Shape strides, int64_t offset);

  /// Makes this tensor show `other`'s storage, dtype, shape and strides, keeping
  /// its own identity and autograd state (PyTorch's `_set_data`: Module.to
  /// converts a Parameter in place, so optimizers holding it keep working).
  void set_data(const TensorImpl& other);

  // Note [Version counter]
  uint64_t version() const { return storage_->version(); }
  void bump_version() { storage_->bump_version(); }

  // Note [Wrapped numbers]
  bool is_wrapped_number() const { return is_wrapped_number_; }
  void set_wrapped_number(bool v) { is_wrapped_number_ = v; }

  /// True if this tensor was made by a view op from another tensor.
  bool is_view() const { return is_view_; }
  void set_is_view(bool v) { is_view_ = v; }

  // Note [Autograd slot]
  AutogradMetaInterface* autograd_meta() const { return autograd_meta_.get(); }
  /// Creates the metadata through the registered factory; raises RuntimeError
  /// naming flambeau-autograd if it is not installed.
  AutogradMetaInterface* ensure_autograd_meta();
  bool requires_grad() const { return autograd_meta_ && autograd_meta_->requires_grad(); }
  /// requires_grad(), or a forward-mode tangent: the dispatcher's test for the Autograd layer.
  bool needs_autograd() const { return autograd_meta_ && autograd_meta_->needs_autograd(); }
  void set_requires_grad(bool value);

 private:
  // Computes numel and contiguity, and checks Note [View bounds].
  void refresh_numel_and_contiguity();

  Storage storage_;
  Shape sizes_;
  Shape strides_;
  int64_t offset_;
  int64_t numel_ = 1;
  ScalarType dtype_;
  bool is_contiguous_ = true;
  bool is_wrapped_number_ = false;
  bool is_view_ = false;
  std::unique_ptr<AutogradMetaInterface> autograd_meta_;
};

}  // namespace flambeau
