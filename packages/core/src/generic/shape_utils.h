#pragma once
// Shape helpers shared by the view kernels, the shape composites and the
// kernels of linalg/softmax/indexing. Private to libflambeau_core.
#include <algorithm>
#include <memory>
#include <optional>
#include <span>

#include "flambeau/error.h"
#include "flambeau/tensor.h"

namespace flambeau::detail {

/// A shape (or strides) built on the stack by a view kernel: kInline dims inline, a heap buffer beyond
/// (Note [Inline sizes and strides]). Converts to IntArrayRef. Neither copyable nor movable.
class DimVector {
 public:
  static constexpr size_t kInline = 8;

  DimVector() = default;
  explicit DimVector(size_t n, int64_t value = 0) {
    reserve(n);
    std::fill_n(data_, n, value);
    n_ = n;
  }
  explicit DimVector(IntArrayRef values) {
    reserve(values.size());
    std::copy(values.begin(), values.end(), data_);
    n_ = values.size();
  }
  DimVector(const DimVector&) = delete;
  DimVector& operator=(const DimVector&) = delete;

  size_t size() const noexcept { return n_; }
  bool empty() const noexcept { return n_ == 0; }
  int64_t* data() noexcept { return data_; }
  const int64_t* data() const noexcept { return data_; }
  int64_t* begin() noexcept { return data_; }
  int64_t* end() noexcept { return data_ + n_; }
  const int64_t* begin() const noexcept { return data_; }
  const int64_t* end() const noexcept { return data_ + n_; }
  int64_t& operator[](size_t i) noexcept { return data_[i]; }
  int64_t operator[](size_t i) const noexcept { return data_[i]; }

  void push_back(int64_t v) {
    reserve(n_ + 1);
    data_[n_++] = v;
  }
  void insert(size_t i, int64_t v) {
    reserve(n_ + 1);
    std::copy_backward(data_ + i, data_ + n_, data_ + n_ + 1);
    data_[i] = v;
    ++n_;
  }
  void erase(size_t i) noexcept {
    std::copy(data_ + i + 1, data_ + n_, data_ + i);
    --n_;
  }

 private:
  void reserve(size_t n) {
    if (n <= cap_) return;
    const size_t cap = std::max(n, 2 * cap_);
    auto buf = std::make_unique<int64_t[]>(cap);
    std::copy_n(data_, n_, buf.get());
    heap_ = std::move(buf);
    data_ = heap_.get();
    cap_ = cap;
  }

  int64_t inline_[kInline];
  std::unique_ptr<int64_t[]> heap_;
  int64_t* data_ = inline_;
  size_t n_ = 0;
  size_t cap_ = kInline;
};

/// Writes `shape` into out (of its length) with one -1 replaced by the size that makes numel match.
/// ValueError "[op] shape (4, 5) is invalid for input of size 6" otherwise.
inline void infer_size_into(IntArrayRef shape, int64_t numel, const char* op, std::span<int64_t> out) {
  std::copy(shape.begin(), shape.end(), out.begin());
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
}

/// infer_size_into, into a new Shape.
inline Shape infer_size(IntArrayRef shape, int64_t numel, const char* op) {
  Shape out(shape.size());
  infer_size_into(shape, numel, op, out);
  return out;
}

/// Strides that view a tensor of (old_sizes, old_strides) as new_sizes without
/// copying, or nullopt when its memory layout makes that impossible (PyTorch's
/// computeStride: each run of new dims must fit inside one contiguous chunk of
/// old dims). new_sizes must have the same numel. Written into new_strides (of new_sizes' length);
/// false where impossible.
inline bool compute_view_strides_into(IntArrayRef old_sizes, IntArrayRef old_strides, IntArrayRef new_sizes,
                                      std::span<int64_t> new_strides) {
  if (old_sizes.empty()) {
    std::fill(new_strides.begin(), new_strides.end(), 1);
    return true;
  }
  int64_t numel = 1;
  for (int64_t s : old_sizes) numel *= s;  // a valid tensor's numel fits
  if (numel == 0) {
    const Shape contiguous = contiguous_strides(new_sizes, "view");
    std::copy(contiguous.begin(), contiguous.end(), new_strides.begin());
    return true;
  }
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
      if (view_numel != tensor_numel) return false;
      if (d > 0) {
        chunk_base_stride = old_strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}

/// compute_view_strides_into, into a new Shape, or nullopt.
inline std::optional<Shape> compute_view_strides(IntArrayRef old_sizes, IntArrayRef old_strides,
                                                 IntArrayRef new_sizes) {
  Shape new_strides(new_sizes.size());
  if (!compute_view_strides_into(old_sizes, old_strides, new_sizes, new_strides)) return std::nullopt;
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
