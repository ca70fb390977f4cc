#pragma once
// Shape helpers shared by the view kernels, the shape composites and the
// kernels of linalg/softmax/indexing. Private to libflambeau_core.
#include <optional>

#include "flambeau/error.h"
#include "flambeau/tensor.h"

namespace flambeau::detail {

/// Replaces one -1 in `shape` by the size that makes numel match.
/// ValueError "[op] shape (4, 5) is invalid for input of size 6" otherwise.
inline Shape infer_size(IntArrayRef shape, int64_t numel, const char* op) {
  Shape out(shape.begin(), shape.end());
  std::optional<size_t> infer;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      FB_CHECK_VALUE(!infer, "[", op, "] only one dimension can be inferred (-1), got shape ",
                     shape_str(shape));
      infer = i;
    } else {
      FB_CHECK_VALUE(out[i] >= 0, "[", op, "] invalid size ", out[i], " in shape ", shape_str(shape));
    }
  }
  if (infer) out[*infer] = 1;
  // Note [Size overflow]: the known sizes must form a representable shape.
  const int64_t known = shape_numel(out, op);
  if (infer) {
    FB_CHECK_VALUE(known != 0 && numel % known == 0, "[", op, "] shape ", shape_str(shape),
                   " is invalid for input of size ", numel);
    out[*infer] = numel / known;
  } else {
    FB_CHECK_VALUE(known == numel, "[", op, "] shape ", shape_str(shape), " is invalid for input of size ",
                   numel);
  }
  return out;
}

/// Strides that view a tensor of (old_sizes, old_strides) as new_sizes without
/// copying, or nullopt when its memory layout makes that impossible (PyTorch's
/// computeStride: each run of new dims must fit inside one contiguous chunk of
/// old dims). new_sizes must have the same numel.
inline std::optional<Shape> compute_view_strides(IntArrayRef old_sizes, IntArrayRef old_strides,
                                                 IntArrayRef new_sizes) {
  Shape new_strides(new_sizes.size());
  if (old_sizes.empty()) {
    std::fill(new_strides.begin(), new_strides.end(), 1);
    return new_strides;
  }
  int64_t numel = 1;
  for (int64_t s : old_sizes) numel *= s;  // a valid tensor's numel fits
  if (numel == 0) return contiguous_strides(new_sizes, "view");
  // Products with a stride can overflow only where the stride belongs to a
  // size-1 dim (a valid view's reach fits in int64), and such a stride is
  // never applied: an overflowing product cannot match a real stride, and
  // any stride will do for a new size-1 dim.
  const auto mul_or = [](int64_t a, int64_t b, int64_t fallback) {
    int64_t r = 0;
    return __builtin_mul_overflow(a, b, &r) ? fallback : r;
  };
  int64_t view_d = static_cast<int64_t>(new_sizes.size()) - 1;
  int64_t chunk_base_stride = old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(old_sizes.size()) - 1; d >= 0; --d) {
    tensor_numel *= old_sizes[d];
    int64_t chunk_stride = 0;
    if (d == 0 ||
        (old_sizes[d - 1] != 1 && (__builtin_mul_overflow(tensor_numel, chunk_base_stride, &chunk_stride) ||
                                   old_strides[d - 1] != chunk_stride))) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_sizes[view_d] == 1)) {
        new_strides[view_d] = mul_or(view_numel, chunk_base_stride, chunk_base_stride);
        view_numel *= new_sizes[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = old_strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return new_strides;
}

/// Calls f(offset) for each element of (sizes, strides), in row-major order;
/// offsets are in elements.
template <class F>
void for_each_offset(IntArrayRef sizes, IntArrayRef strides, F&& f) {
  const int64_t nd = static_cast<int64_t>(sizes.size());
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  if (n == 0) return;
  Shape idx(nd, 0);
  int64_t off = 0;
  for (int64_t i = 0; i < n; ++i) {
    f(off);
    for (int64_t d = nd - 1; d >= 0; --d) {
      if (++idx[d] < sizes[d]) {
        off += strides[d];
        break;
      }
      off -= (sizes[d] - 1) * strides[d];
      idx[d] = 0;
    }
  }
}

/// Copies a strided tensor of element type T into contiguous memory at dst.
template <class T>
void pack_contiguous(const Tensor& src, T* dst) {
  const T* p = src.data<T>();
  if (src.is_contiguous()) {
    std::copy(p, p + src.numel(), dst);
    return;
  }
  int64_t i = 0;
  for_each_offset(src.sizes(), src.strides(), [&](int64_t off) { dst[i++] = p[off]; });
}

}  // namespace flambeau::detail
