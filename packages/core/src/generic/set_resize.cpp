// Device-generic kernels of the ops that change which memory a tensor shows, in place: set_ (another
// tensor's storage and geometry) and resize_ (new sizes, the storage grown when they need more). Neither
// computes on elements except resize_'s copy of the old bytes into a grown storage, which goes through
// the device's copy_, so one kernel serves every device.
//
// Autograd does not record them (no derivatives.yaml entry, as PyTorch's set_/resize_ are not
// differentiable): resize_ refuses a tensor that requires grad, and set_ one that records (a leaf that
// requires grad while grad mode is on, or a tensor with a history), with PyTorch's messages.
#include <algorithm>

#include "flambeau/error.h"
#include "flambeau/memory_format.h"
#include "flambeau/ops.h"
#include "shape_utils.h"

namespace flambeau {
namespace {

Tensor& set_generic(Tensor& self, const Tensor& source) {
  FB_CHECK_TYPE(self.dtype() == source.dtype(), "[set_] could not set a tensor of dtype ",
                dtype_name(self.dtype()), " to a tensor of dtype ", dtype_name(source.dtype()));
  FB_CHECK(self.device() == source.device(), "[set_] could not set a tensor on ", self.device().str(),
           " to a tensor on ", source.device().str());
  if (self.requires_grad() && grad_mode_enabled())
    throw RuntimeError(detail::cat_str(
        "[set_] a leaf Variable that requires grad is being used in an in-place operation (shape ",
        shape_str(self.sizes()), "); do it under no_grad()"));
  self.impl()->set_data(*source.impl());
  return self;
}

Tensor& resize_generic(Tensor& self, IntArrayRef size, std::optional<MemoryFormat> memory_format) {
  FB_CHECK(!self.requires_grad(), "[resize_] cannot resize variables that require grad (shape ",
           shape_str(self.sizes()), ")");
  const MemoryFormat format = memory_format.value_or(MemoryFormat::Contiguous);
  FB_CHECK_VALUE(format != MemoryFormat::Preserve, "[resize_] preserve_format is not a layout to resize to");
  for (int64_t s : size)
    FB_CHECK_VALUE(s >= 0, "[resize_] negative size in ", shape_str(size), " (sizes must be >= 0)");
  // As PyTorch: the same sizes keep their strides, unless a memory format is asked for.
  if (!memory_format && std::ranges::equal(self.sizes(), size)) return self;
  const int64_t nbytes = shape_nbytes(size, self.dtype(), "resize_");  // Note [Size overflow]
  Shape strides = strides_for_memory_format(size, format, "resize_");
  const auto isz = static_cast<int64_t>(itemsize(self.dtype()));
  int64_t offset_bytes = 0, need = 0;
  FB_CHECK_VALUE(!__builtin_mul_overflow(self.storage_offset(), isz, &offset_bytes) &&
                     !__builtin_add_overflow(offset_bytes, nbytes, &need),
                 "[resize_] storage offset ", self.storage_offset(), " plus ", nbytes,
                 " bytes overflows int64");
  const int64_t offset = self.storage_offset();
  const Storage& storage = self.impl()->storage();
  if (need > static_cast<int64_t>(storage->nbytes())) {
    // A bigger storage, with the old bytes at its start (PyTorch grows the storage in place; other views
    // of the old storage keep the old one here).
    const int64_t have = static_cast<int64_t>(storage->nbytes()) / isz;
    const Tensor grown = op::empty(Shape{(need + isz - 1) / isz}, self.dtype(), self.device());
    if (have > 0) {
      const Tensor old_all = op::as_strided(self, Shape{have}, Shape{1}, 0);
      Tensor prefix = op::slice(grown, 0, 0, have, 1);
      op::copy_(prefix, old_all);
    }
    self.impl()->set_data(*grown.impl());
  }
  self.impl()->set_sizes_and_strides(Shape(size.begin(), size.end()), std::move(strides), offset);
  return self;
}

FB_REGISTER_KERNEL(op::set_, Generic, set_generic);
FB_REGISTER_KERNEL(op::resize_, Generic, resize_generic);

}  // namespace
}  // namespace flambeau
