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
//
// Note [Inline sizes and strides]
// A TensorImpl keeps its sizes and strides in one SizesAndStrides: inside the
// TensorImpl for up to kInlineDims dims (every tensor of 5 dims or fewer, so
// making and dropping a view such as x[i] calls malloc for neither), in one
// heap block of 2 * dim int64 beyond. The constructor and
// set_sizes_and_strides take IntArrayRef, so a view kernel builds its shape on
// the stack (detail::DimVector) and copies it in; the accessors are unchanged
// (sizes() and strides() are IntArrayRef over whichever buffer holds them).
#include <algorithm>
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

namespace detail {

/// Sizes and strides of the same length, inline up to kInlineDims dims (Note [Inline sizes and strides]).
class SizesAndStrides {
 public:
  static constexpr size_t kInlineDims = 5;

  SizesAndStrides() noexcept {}
  SizesAndStrides(const SizesAndStrides& other) { assign(other.sizes(), other.strides()); }
  SizesAndStrides& operator=(const SizesAndStrides& other) {
    if (this != &other) assign(other.sizes(), other.strides());
    return *this;
  }
  ~SizesAndStrides() {
    if (!is_inline()) delete[] heap_;
  }

  size_t dim() const noexcept { return dim_; }
  bool is_inline() const noexcept { return dim_ <= kInlineDims; }
  IntArrayRef sizes() const noexcept { return {data(), dim_}; }
  IntArrayRef strides() const noexcept { return {data() + stride_pos(), dim_}; }
  int64_t size(size_t d) const noexcept { return data()[d]; }
  int64_t stride(size_t d) const noexcept { return data()[stride_pos() + d]; }

  /// Replaces both (the caller checks sizes.size() == strides.size()); either may view this object's own
  /// buffer. Allocates only past kInlineDims dims.
  void assign(IntArrayRef sizes, IntArrayRef strides) {
    const size_t n = sizes.size();
    if (n <= kInlineDims) {
      int64_t tmp[2 * kInlineDims];
      std::copy_n(sizes.data(), n, tmp);
      std::copy_n(strides.data(), n, tmp + kInlineDims);
      if (!is_inline()) delete[] heap_;
      std::copy_n(tmp, n, inline_);
      std::copy_n(tmp + kInlineDims, n, inline_ + kInlineDims);
    } else {
      auto* buf = new int64_t[2 * n];
      std::copy_n(sizes.data(), n, buf);
      std::copy_n(strides.data(), n, buf + n);
      if (!is_inline()) delete[] heap_;
      heap_ = buf;
    }
    dim_ = n;
  }

 private:
  const int64_t* data() const noexcept { return is_inline() ? inline_ : heap_; }
  size_t stride_pos() const noexcept { return is_inline() ? kInlineDims : dim_; }

  size_t dim_ = 0;
  union {
    int64_t inline_[2 * kInlineDims];  // sizes in [0, dim), strides in [kInlineDims, kInlineDims + dim)
    int64_t* heap_;                    // past kInlineDims: sizes in [0, dim), strides in [dim, 2 * dim)
  };
};

}  // namespace detail

class FB_API TensorImpl {
 public:
  /// sizes and strides are copied (Note [Inline sizes and strides]).
  TensorImpl(Storage storage, ScalarType dtype, IntArrayRef sizes, IntArrayRef strides, int64_t offset);
  ~TensorImpl();
  TensorImpl(const TensorImpl&) = delete;
  TensorImpl& operator=(const TensorImpl&) = delete;

  IntArrayRef sizes() const { return shape_.sizes(); }
  IntArrayRef strides() const { return shape_.strides(); }
  int64_t size(int64_t d) const { return shape_.size(static_cast<size_t>(d)); }
  int64_t stride(int64_t d) const { return shape_.stride(static_cast<size_t>(d)); }
  int64_t dim() const { return static_cast<int64_t>(shape_.dim()); }
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
  /// Checks Note [View bounds] like the constructor. sizes and strides may be this tensor's own.
  void set_sizes_and_strides(IntArrayRef sizes, IntArrayRef strides, int64_t offset);

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
  detail::SizesAndStrides shape_;  // Note [Inline sizes and strides]
  int64_t offset_;
  int64_t numel_ = 1;
  ScalarType dtype_;
  bool is_contiguous_ = true;
  bool is_wrapped_number_ = false;
  bool is_view_ = false;
  std::unique_ptr<AutogradMetaInterface> autograd_meta_;
};

}  // namespace flambeau
