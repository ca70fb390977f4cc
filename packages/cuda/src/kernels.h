#pragma once
// Launchers of flambeau-cuda's kernels (kernels.cu). Plain C++ interface: the
// host code (compiled by the C++ compiler, with core's headers) calls these;
// the .cu files see only flambeau_cuda/device_math.h. Each returns the
// cudaError_t of the launch as an int (0: success) and enqueues on `stream`
// (a cudaStream_t).
#include <cstdint>

#include "flambeau_cuda/device_math.h"

namespace flambeau::cuda {

/// dtype codes: the values of flambeau::ScalarType (checked in copy.cpp).
enum DtypeCode : int {
  kBool = 0,
  kUInt8,
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kFloat16,
  kBFloat16,
  kFloat32,
  kFloat64,
  kUInt16,
  kUInt32,
  kUInt64,
  kComplexFloat,
  kComplexDouble,
};

/// Writes the `itemsize`-byte `pattern` (1, 2, 4, 8 or 16 bytes) to the n
/// elements of dst at offsets calc.get0(i) (elements).
int launch_fill(void* dst, int itemsize, const void* pattern, const OffsetCalculator<1>& calc, int64_t n,
                void* stream);

/// dst[calc[0](i)] = cast(src[calc[1](i)]) for i < n, between any two real
/// dtypes (complex: same dtype only, which is a copy of `itemsize` bytes).
int launch_copy(void* dst, int dst_dtype, const void* src, int src_dtype, const OffsetCalculator<2>& calc,
                int64_t n, void* stream);

}  // namespace flambeau::cuda
