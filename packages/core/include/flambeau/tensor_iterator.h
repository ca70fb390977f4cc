#pragma once
// Note [TensorIterator]
// The one elementwise iterator of flambeau. Public (installed with core's
// headers): core's CPU kernels run its loop (for_each below) and a device
// backend reads the same description (device(), ndim(), shape(d),
// stride_bytes(d, k), data(k), dtype(k), is_host_scalar(k)) to launch its own
// kernels, e.g. flambeau-cuda's OffsetCalculator (Note [CUDA index math]), so
// broadcasting, type promotion, casts, overlap and dim coalescing are decided
// in one place for every device. It takes
// an output (given, for in-place ops and copy_, or allocated) and up to three
// inputs, and turns them into a loop over raw pointers:
//   1. broadcasting: NumPy rules over all operands; a given output must
//      already have the broadcast shape;
//   2. dtypes: each input is read in the compute dtype. A 1-element input of
//      another dtype is converted into a small buffer inside the iterator (no
//      allocation, the common `t + 2.5` case); a larger one is cast to a new
//      tensor. A given output is written in its own dtype (kernels assume
//      output dtype == compute dtype, or bool for comparisons);
//   3. strides: byte strides per operand, 0 on broadcast dims, dims stored
//      innermost first and coalesced, so contiguous operands become one 1-D
//      loop (and a fast path skips the general work when every operand is
//      contiguous with the same shape);
//   4. overlap: an input that partially overlaps a given output is copied
//      first, so `x.add_(x.t())` or `x[1:].add_(x[:-1])` read the old values;
//      a given output whose elements share memory (an expand) is an error;
//   5. threads: for_each splits the index space with parallel_for and a
//      grain (Note [Elementwise grain]); small tensors stay on one thread.
//   6. devices: the output goes on the operands' device (a given output's,
//      else the first input that is not a 0-dim cpu tensor); a 0-dim cpu
//      input of a device op is a host scalar (is_host_scalar: data(k) is a
//      host pointer to one element of dtype(k), stride 0), any other input
//      on another device is an error.
// A kernel supplies `loop(char** data, const int64_t* strides, int64_t n)`
// where data[0] is the output, data[1..] the inputs and strides[k] the byte
// stride of operand k along the inner dimension.
//
// Type promotion (result_type) is PyTorch's: operands fall in three classes,
// tensors with dims, 0-dim tensors, and wrapped numbers (Note [Wrapped
// numbers]); a lower class only raises the category (bool < integer <
// floating) of a higher one, never its width.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>

#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "flambeau/parallel.h"

namespace flambeau {

inline constexpr int kMaxIterDims = 25;  // as PyTorch's MAX_DIMS

// Note [Elementwise grain]
// A memory-bound loop (add, copy, compare, sum) runs at ~0.1 ns per element,
// so a second thread pays only once each thread gets enough of it to hide the
// wake-up of a passively waiting worker (tens of microseconds). With the
// dynamic chunks of parallel_for (Note [Dynamic chunks]) a worker that wakes
// late only takes what is left, which moved the break-even down. Measured on
// the 2-core machine (float32, contiguous, 2 threads, benchmarks/ops_row_ops.py,
// medians of 9 rounds): a + b at 512Ki elements 67 us on one thread vs 35 us on
// two, 1Mi 155 vs 70 us, 4Mi unchanged or better; at 256Ki (a grain of 128Ki)
// 34 us either way: the second thread does not pay there. mul, relu,
// threshold_backward and copy_ the same. So each thread gets at least 256Ki
// elements (a 512Ki loop splits in two). Transcendental loops (exp, tanh, pow)
// cost several times more per element and keep kGrainSize (Note [Grain size]).
inline constexpr int64_t kMemoryBoundGrain = 1 << 18;
inline constexpr int kMaxIterOperands = 4;  // output + 3 inputs (where)

/// PyTorch's result_type over tensors (Note [TensorIterator]).
FB_API ScalarType result_type(std::span<const Tensor* const> operands);
inline ScalarType result_type(const Tensor& a, const Tensor& b) {
  const Tensor* ops[2] = {&a, &b};
  return result_type(ops);
}
/// PyTorch's canCast: no floating -> integral, no non-bool -> bool.
FB_API bool can_cast(ScalarType from, ScalarType to);
/// The dtype an integer/bool input of a "true-valued" op (div, exp, ...) computes in.
inline ScalarType to_float_dtype(ScalarType t) {
  return is_floating(t) || is_complex(t) ? t : default_float_dtype();
}

class FB_API TensorIterator {
 public:
  /// out: an existing output (its dtype and shape are kept), or nullptr to
  /// allocate one of `out_dtype`. Inputs are read as `compute_dtype`, except
  /// those whose bit is set in `keep_dtype_mask` (bit i for input i).
  TensorIterator(const char* op, const Tensor* out, ScalarType out_dtype,
                 std::span<const Tensor* const> inputs, ScalarType compute_dtype,
                 unsigned keep_dtype_mask = 0);

  // Common shapes of iterator.
  static TensorIterator unary(const char* op, const Tensor& a, ScalarType compute, ScalarType out_dtype);
  static TensorIterator binary(const char* op, const Tensor& a, const Tensor& b, ScalarType compute,
                               ScalarType out_dtype);
  /// Into a given output (Note [Structured kernels]: a structured op's out kernel), inputs read as
  /// `compute`; the output keeps its dtype and shape.
  static TensorIterator into(const char* op, const Tensor& out, const Tensor& a, ScalarType compute);
  static TensorIterator into(const char* op, const Tensor& out, const Tensor& a, const Tensor& b,
                             ScalarType compute);
  /// In-place `self op= other`: computes in self's dtype; TypeError if the
  /// promoted type cannot be cast to it, ValueError if other does not
  /// broadcast to self's shape.
  static TensorIterator inplace(const char* op, Tensor& self, const Tensor& other,
                                bool true_division = false);

  const Tensor& output() const { return out_; }
  ScalarType compute_dtype() const { return compute_; }
  ScalarType dtype(int operand) const { return dtypes_[operand]; }
  int64_t numel() const { return numel_; }
  int ndim() const { return ndim_; }
  int ntensors() const { return ntensors_; }

  // ---- the description a device launcher reads (Note [TensorIterator]) ----
  /// The device of the output and of every input but host scalars.
  Device device() const { return out_.device(); }
  /// Size of dim d, innermost first (0 <= d < ndim()); dims are coalesced.
  int64_t shape(int d) const { return shape_[d]; }
  /// Byte stride of operand k (0: the output, k: input k-1) along dim d; 0 on broadcast dims.
  int64_t stride_bytes(int d, int k) const { return strides_[d][k]; }
  /// The first element of operand k, read or written in dtype(k).
  char* data(int k) const { return data_[k]; }
  /// Input k is one element in host memory while the output is on a device
  /// (a wrapped number or 0-dim cpu tensor): pass it to the kernel by value.
  bool is_host_scalar(int k) const { return host_scalar_[k]; }
  /// One dim, every operand (host scalars aside) walked with its itemsize as stride.
  bool is_contiguous() const {
    if (ndim_ != 1) return numel_ <= 1;
    for (int k = 0; k < ntensors_; ++k)
      if (!host_scalar_[k] && strides_[0][k] != static_cast<int64_t>(itemsize(dtypes_[k]))) return false;
    return true;
  }

  template <class Loop>
  void for_each(const Loop& loop, int64_t grain = kGrainSize) const {
    if (numel_ == 0) return;
    if (numel_ <= grain) {
      serial_for(loop, 0, numel_);
      return;
    }
    parallel_for(0, numel_, grain, [&](int64_t b, int64_t e) { serial_for(loop, b, e); });
  }

  template <class Loop>
  void serial_for(const Loop& loop, int64_t begin, int64_t end) const {
    char* ptrs[kMaxIterOperands];
    if (ndim_ == 1) {
      for (int k = 0; k < ntensors_; ++k) ptrs[k] = data_[k] + begin * strides_[0][k];
      loop(ptrs, strides_[0], end - begin);
      return;
    }
    int64_t idx[kMaxIterDims];
    int64_t rem = begin;
    for (int d = 0; d < ndim_; ++d) {
      idx[d] = rem % shape_[d];
      rem /= shape_[d];
    }
    // base[k]: operand k at the start of the current inner row, moved by one
    // stride per row (not recomputed from the index: short rows, as in a
    // broadcast over a small last dim, are dominated by that work otherwise).
    char* base[kMaxIterOperands];
    for (int k = 0; k < ntensors_; ++k) {
      char* p = data_[k];
      for (int d = 1; d < ndim_; ++d) p += idx[d] * strides_[d][k];
      base[k] = p;
    }
    int64_t i = begin;
    while (i < end) {
      const int64_t n = std::min(shape_[0] - idx[0], end - i);
      for (int k = 0; k < ntensors_; ++k) ptrs[k] = base[k] + idx[0] * strides_[0][k];
      loop(ptrs, strides_[0], n);
      i += n;
      idx[0] += n;
      if (idx[0] < shape_[0]) break;  // ended inside a row
      idx[0] = 0;
      for (int d = 1; d < ndim_; ++d) {
        for (int k = 0; k < ntensors_; ++k) base[k] += strides_[d][k];
        if (++idx[d] < shape_[d]) break;
        if (d + 1 == ndim_) break;  // past the last element: i == end
        for (int k = 0; k < ntensors_; ++k) base[k] -= shape_[d] * strides_[d][k];
        idx[d] = 0;
      }
    }
  }

 private:
  void broadcast_and_strides(const char* op, const Tensor* const* tensors);
  void coalesce();

  Tensor out_;
  Tensor owned_[kMaxIterOperands];  // casts and copies of inputs, kept alive
  char* data_[kMaxIterOperands];
  ScalarType dtypes_[kMaxIterOperands];
  bool host_scalar_[kMaxIterOperands] = {};
  int64_t shape_[kMaxIterDims];                        // innermost first
  int64_t strides_[kMaxIterDims][kMaxIterOperands];    // bytes
  alignas(16) char scalar_buf_[kMaxIterOperands][16];  // complex128 is 16 bytes
  int64_t numel_ = 0;
  int ndim_ = 0;
  int ntensors_ = 0;
  ScalarType compute_;
};

/// Converts one element between dtypes (bool, integers, float32/64).
FB_API void convert_element(ScalarType from, const void* src, ScalarType to, void* dst);

namespace detail {
// The broadcasting rule, shared by the iterator and the meta step's `broadcast`
// shape rule (meta.h), so that both raise the same errors.
/// Writes the broadcast shape of `inputs` innermost first into bshape[0, nd) where
/// nd = min(the largest dim, max_dims); ValueError "[op] shapes A and B cannot be broadcast".
FB_API void broadcast_reversed(const char* op, std::span<const Tensor* const> inputs, int64_t* bshape, int nd);
/// ValueError "[op] shape S cannot be broadcast to the shape T of self" unless each input broadcasts to `shape`.
FB_API void check_broadcast_to(const char* op, std::span<const Tensor* const> inputs, IntArrayRef shape);
}  // namespace detail

}  // namespace flambeau
