#pragma once
// Note [CUDA launcher on TensorIterator]
// The elementwise launcher's OffsetCalculator is built from core's
// TensorIterator description (Note [TensorIterator]): the iterator decides
// the broadcast shape, the result type, the casts (on the device), the
// overlap copies, the output's allocation and the coalescing of dims, for
// the cpu and for CUDA alike; this header only translates its description
// (dims innermost first, byte strides) into the kernels' index math (dims
// outermost first, element strides; Note [CUDA index math]). The linear
// index of the OffsetCalculator then walks the elements in the order of the
// iterator's CPU loop (serial_for), which the host tests check
// (tests/cpp/test_iterator_offsets.cpp). Host code only (core's headers).
#include <cstdint>

#include "flambeau/tensor_iterator.h"
#include "flambeau_cuda/device_math.h"

namespace flambeau::cuda {

/// The OffsetCalculator<N> of an iterator with at most N operands (output
/// first): element strides, 0 for host scalars and operands past ntensors().
/// ValueError when the coalesced dims exceed kMaxDims.
template <int N>
OffsetCalculator<N> offset_calculator(const TensorIterator& it, const char* op) {
  FB_INTERNAL_ASSERT(it.ntensors() <= N, "[", op, "] ", it.ntensors(), " operands for an OffsetCalculator<",
                     N, ">");
  FB_CHECK_VALUE(it.ndim() <= kMaxDims, "[", op, "] CUDA kernels handle up to ", kMaxDims,
                 " dims after coalescing, got ", it.ndim());
  OffsetCalculator<N> c;
  c.ndim = it.ndim();
  for (int d = 0; d < c.ndim; ++d) {
    const int row = c.ndim - 1 - d;  // innermost first -> outermost first
    c.sizes[row] = it.shape(d);
    for (int k = 0; k < it.ntensors(); ++k) {
      if (it.is_host_scalar(k)) continue;
      const auto isz = static_cast<int64_t>(itemsize(it.dtype(k)));
      FB_INTERNAL_ASSERT(it.stride_bytes(d, k) % isz == 0, "[", op, "] a stride of ", it.stride_bytes(d, k),
                         " bytes is not a multiple of the itemsize ", isz);
      c.strides[k][row] = it.stride_bytes(d, k) / isz;
    }
  }
  return c;
}

}  // namespace flambeau::cuda
