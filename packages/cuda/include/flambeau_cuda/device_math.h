#pragma once
// Note [CUDA index math]
// ======================
// The index arithmetic of flambeau-cuda's kernels, written once as
// __host__ __device__ code so that the same lines run in a kernel and in a
// host C++ test (tests/cpp/test_device_math.cpp), where they are checked
// against core's CPU kernels: a machine without a GPU still tests them.
//   * OffsetCalculator<N>: linear index (row-major over `sizes`, last dim
//     fastest: the order of core's CPU iteration) -> element offset of each of
//     N operands, from per-operand strides in elements (0 where broadcast).
//   * ReduceSplit: (output index, reduction index) -> input offset, for a
//     reduction over any set of dims (kept dims form the output).
//   * draw / to_unit: core's counter-based generator (Note [Random numbers] in
//     flambeau/random.h), so a seed gives the same numbers on CPU and CUDA.
// Only <cstdint> here: kernels (.cu, compiled by nvcc) include it without
// core's headers.
#include <cstdint>

#if defined(__CUDACC__)
#define FBC_HD __host__ __device__ __forceinline__
#else
#define FBC_HD inline
#endif

namespace flambeau::cuda {

/// Dimensions a kernel's index math handles (core tensors may have more;
/// the launcher coalesces dims first and refuses beyond this).
inline constexpr int kMaxDims = 16;

template <int N>
struct OffsetCalculator {
  int ndim = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[N][kMaxDims] = {};  // in elements, per operand

  /// Element offsets of linear index `linear` (0 <= linear < prod(sizes)).
  FBC_HD void get(int64_t linear, int64_t (&out)[N]) const {
    for (int k = 0; k < N; ++k) out[k] = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t size = sizes[d];
      const int64_t i = linear % size;
      linear /= size;
      for (int k = 0; k < N; ++k) out[k] += i * strides[k][d];
    }
  }
  FBC_HD int64_t get0(int64_t linear) const {
    int64_t out[N];
    get(linear, out);
    return out[0];
  }
};

/// Merges adjacent dims that can be walked as one (stride[d] == stride[d+1] *
/// size[d+1] for every operand) and drops size-1 dims, in place; returns the
/// new ndim (>= 0). Fewer dims: fewer divisions per element.
template <int N>
FBC_HD int coalesce(OffsetCalculator<N>& c) {
  int out = 0;
  for (int d = 0; d < c.ndim; ++d) {
    if (c.sizes[d] == 1) continue;
    if (out > 0) {
      bool mergeable = true;
      for (int k = 0; k < N; ++k)
        if (c.strides[k][out - 1] != c.strides[k][d] * c.sizes[d]) mergeable = false;
      if (mergeable) {
        c.sizes[out - 1] *= c.sizes[d];
        for (int k = 0; k < N; ++k) c.strides[k][out - 1] = c.strides[k][d];
        continue;
      }
    }
    c.sizes[out] = c.sizes[d];
    for (int k = 0; k < N; ++k) c.strides[k][out] = c.strides[k][d];
    ++out;
  }
  c.ndim = out;
  return out;
}

/// A reduction over some dims of an input: the kept dims (in order) index the
/// output, the reduced dims (in order) index the elements reduced into one
/// output. input offset = outer.get0(o) + inner.get0(r).
struct ReduceSplit {
  OffsetCalculator<1> outer;  // kept dims, input strides
  OffsetCalculator<1> inner;  // reduced dims, input strides
  int64_t num_outputs = 1;
  int64_t reduce_size = 1;

  /// `reduced[d]` true for each reduced dim of an input of `ndim` dims.
  FBC_HD static ReduceSplit make(int ndim, const int64_t* sizes, const int64_t* strides,
                                 const bool* reduced) {
    ReduceSplit s;
    for (int d = 0; d < ndim; ++d) {
      OffsetCalculator<1>& c = reduced[d] ? s.inner : s.outer;
      c.sizes[c.ndim] = sizes[d];
      c.strides[0][c.ndim] = strides[d];
      ++c.ndim;
      (reduced[d] ? s.reduce_size : s.num_outputs) *= sizes[d];
    }
    return s;
  }
  FBC_HD int64_t offset(int64_t output_index, int64_t reduce_index) const {
    return outer.get0(output_index) + inner.get0(reduce_index);
  }
};

// ---- Note [Random numbers], the same function as flambeau::Generator::draw ----

/// The 64-bit draw number `counter` of a generator seeded with `seed`.
FBC_HD uint64_t draw(uint64_t seed, uint64_t counter) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ULL * (counter + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
/// Uniform double in [0, 1) from a draw (its top 53 bits).
FBC_HD double to_unit(uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

}  // namespace flambeau::cuda
