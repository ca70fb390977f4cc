#pragma once
// Memory formats (PyTorch's torch.memory_format): the order in which a dense
// tensor's elements sit in memory. `contiguous_format` is row-major;
// `channels_last` keeps the channels of a 4-d NCHW tensor innermost (NHWC in
// memory, sizes still NCHW), `channels_last_3d` the same for 5-d NCDHW;
// `preserve_format` asks an op to keep its input's layout (Note [Preserving a
// layout]).
#include <cstdint>

#include "flambeau/tensor.h"

namespace flambeau {

enum class MemoryFormat : uint8_t { Contiguous = 0, Preserve = 1, ChannelsLast = 2, ChannelsLast3d = 3 };
inline constexpr int kNumMemoryFormats = 4;

/// The Python name: "contiguous_format", "preserve_format", "channels_last", "channels_last_3d".
FB_API const char* memory_format_name(MemoryFormat f);

/// The strides of a dense tensor of `sizes` laid out in `format` (not Preserve).
/// Raises ValueError naming `op` when channels_last is asked of a tensor that is not 4-d (5-d for 3d).
FB_API Shape strides_for_memory_format(IntArrayRef sizes, MemoryFormat format, const char* op);

/// True if `self` is laid out densely in `format` (Preserve: always true).
FB_API bool is_contiguous_in(const Tensor& self, MemoryFormat format);

/// True if the elements of `self` occupy a gap-free block without overlap, in any order.
FB_API bool is_non_overlapping_and_dense(const Tensor& self);

/// self's dims from outermost to innermost as its strides order them
/// (PyTorch's infer_dense_strides): the order a preserving copy is laid out in.
FB_API Shape layout_order(const Tensor& self);

/// A new uninitialised tensor with self's sizes and device, of `dtype`, laid out
/// in `format`; Preserve keeps self's exact strides when self is dense and
/// non-overlapping, else lays it out densely in layout_order(self).
FB_API Tensor empty_like_in(const Tensor& self, ScalarType dtype, MemoryFormat format);

}  // namespace flambeau
