#pragma once
// The memory layout of an op's new result (Note [Result layout] in src/result_layout.cpp): the rules
// PyTorch applies when it allocates an output, so a channels-last input gives a channels-last result.
// Called by the generated structured adapters (codegen/gen_meta.py, the ops.yaml key `layout:`), the
// TensorIterator's own allocation and the kernels that lay out a result by hand.
#include <cstdint>
#include <utility>
#include <initializer_list>
#include <span>

#include "flambeau/memory_format.h"
#include "flambeau/tensor.h"

namespace flambeau {

/// PyTorch's suggest_memory_format: ChannelsLast for a 4-d tensor whose strides order its dims
/// N, H, W, C (ChannelsLast3d for 5-d), Contiguous for any other tensor and for the ambiguous cases
/// PyTorch resolves to Contiguous (an empty dim, size-1 channels with equal strides).
FB_API MemoryFormat suggest_memory_format(const Tensor& self);

/// A convolution's result format, as PyTorch's CPU convolutions choose it for their output and
/// gradients: ChannelsLast when `input` or `weight` (4-d) suggests it, Contiguous for an input with
/// no elements (PyTorch's empty convolution) and for every other rank.
FB_API MemoryFormat conv_memory_format(const Tensor& input, const Tensor& weight);

/// cat's result format, as PyTorch's: the inputs' suggested format when they all suggest the same
/// one (the skipped 1-d empty tensors included), else Contiguous.
FB_API MemoryFormat cat_memory_format(std::span<const Tensor> tensors);

/// An uninitialised tensor of `sizes` laid out in `format` (Contiguous or a channels-last format; a
/// channels-last format of another rank than its own gives Contiguous), with PyTorch's strides.
FB_API Tensor empty_in_format(IntArrayRef sizes, ScalarType dtype, Device device, MemoryFormat format);

/// An uninitialised elementwise result of `sizes` laid out as PyTorch's TensorIterator lays out the
/// result of `inputs` (which broadcast to `sizes`; a 0-d input is a scalar). Contiguous inputs of
/// the result's shape cost a few flag reads.
FB_API Tensor empty_elementwise(IntArrayRef sizes, ScalarType dtype, Device device,
                                std::span<const Tensor* const> inputs);
inline Tensor empty_elementwise(IntArrayRef sizes, ScalarType dtype, Device device,
                                std::initializer_list<const Tensor*> inputs) {
  return empty_elementwise(sizes, dtype, device,
                           std::span<const Tensor* const>(inputs.begin(), inputs.size()));
}

/// PyTorch's insertion sort of dims with ambiguous comparisons (TensorIterator's reorder_dimensions,
/// infer_dense_strides): `dims[0..n)` starts innermost first; compare(inner, outer) > 0 swaps them, < 0
/// stops the insertion, 0 (undecided: a broadcast dim) compares with the next one out.
template <class Int, class Compare>
void sort_dims_innermost_first(Int* dims, int64_t n, const Compare& compare) {
  for (int64_t i = 1; i < n; ++i) {
    int64_t moving = i;
    for (int64_t j = i - 1; j >= 0; --j) {
      const int c = compare(dims[j], dims[moving]);
      if (c > 0) {
        std::swap(dims[j], dims[moving]);
        moving = j;
      } else if (c < 0) {
        break;
      }
    }
  }
}

/// The strides empty_elementwise gives; an empty Shape means contiguous.
FB_API Shape elementwise_result_strides(IntArrayRef sizes, std::span<const Tensor* const> inputs);

}  // namespace flambeau
