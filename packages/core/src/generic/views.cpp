// Device-generic kernels of the view ops (Note [Dispatch]: the Generic key):
// each returns a new TensorImpl over the same Storage (sizes, strides and
// offset changed, no data copied), marked as a view. Nothing here touches
// memory, so one kernel serves every device.
#include <algorithm>
#include <memory>
#include <new>

#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "shape_utils.h"

namespace flambeau {
namespace {

// Note [View blocks]
// A view's TensorImpl and its shared_ptr control block are one heap block. Views are made and dropped
// by the hundred per DataLoader batch (x[i], y[i] per sample), and glibc's per-thread cache keeps only
// 7 freed blocks of a size: the rest go to bins that the next large free (the previous batch) merges
// back, so most of a batch's views took malloc's slow path. Each thread keeps up to kMaxFree freed
// view blocks of its own instead (a block freed on another thread joins that thread's list; past the
// cap, or once the thread is exiting, blocks go back to operator delete). Not under AddressSanitizer,
// which must see every block freed.
#if defined(__SANITIZE_ADDRESS__)
#define FB_VIEW_BLOCKS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FB_VIEW_BLOCKS 0
#endif
#endif
#ifndef FB_VIEW_BLOCKS
#define FB_VIEW_BLOCKS 1
#endif

template <size_t Size>
struct ViewBlocks {
  static constexpr int kMaxFree = 1024;
  struct Free {
    Free* next;
  };
  Free* head = nullptr;
  int count = 0;
  ViewBlocks() = default;
  ViewBlocks(const ViewBlocks&) = delete;
  ViewBlocks& operator=(const ViewBlocks&) = delete;
  ~ViewBlocks() {
    exiting = true;
    while (head) {
      Free* next = head->next;
      ::operator delete(head);
      head = next;
    }
  }
  static thread_local bool exiting;  // trivially destructible: still readable while the thread exits
  static ViewBlocks& mine() {
    static thread_local ViewBlocks blocks;
    return blocks;
  }
  static void* take() {
    if (!exiting) {
      ViewBlocks& b = mine();
      if (Free* f = b.head) {
        b.head = f->next;
        --b.count;
        return f;
      }
    }
    return ::operator new(Size);
  }
  static void give(void* p) noexcept {
    if (!exiting) {
      ViewBlocks& b = mine();
      if (b.count < kMaxFree) {
        b.head = new (p) Free{b.head};
        ++b.count;
        return;
      }
    }
    ::operator delete(p);
  }
};
template <size_t Size>
thread_local bool ViewBlocks<Size>::exiting = false;

template <class T>
struct ViewBlockAllocator {
  using value_type = T;
  ViewBlockAllocator() = default;
  template <class U>
  ViewBlockAllocator(const ViewBlockAllocator<U>&) noexcept {}
  T* allocate(size_t n) {
    if (n == 1) return static_cast<T*>(ViewBlocks<sizeof(T)>::take());
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, size_t n) noexcept {
    if (n == 1) return ViewBlocks<sizeof(T)>::give(p);
    std::allocator<T>().deallocate(p, n);
  }
  template <class U>
  bool operator==(const ViewBlockAllocator<U>&) const noexcept {
    return true;
  }
};

// sizes and strides are copied into the view (Note [Inline sizes and strides]): the kernels below build
// them on the stack, so the sizes and strides of a view of 5 dims or fewer never reach malloc.
Tensor make_view(const Tensor& self, IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
#if FB_VIEW_BLOCKS
  auto impl = std::allocate_shared<TensorImpl>(ViewBlockAllocator<TensorImpl>(), self.impl()->storage(),
                                               self.dtype(), sizes, strides, offset);
#else
  auto impl = std::make_shared<TensorImpl>(self.impl()->storage(), self.dtype(), sizes, strides, offset);
#endif
  impl->set_is_view(true);
  return Tensor(std::move(impl));
}

using detail::DimVector;

/// self's storage offset moved by `index` steps along dim d. It cannot overflow
/// for a tensor with elements (the element is inside the storage), but an
/// empty one may carry any stride (as_strided), so it is checked.
int64_t offset_at(const Tensor& self, int64_t d, int64_t index, const char* op) {
  int64_t delta = 0, offset = 0, offset_bytes = 0;
  FB_CHECK(!__builtin_mul_overflow(index, self.strides()[d], &delta) &&
               !__builtin_add_overflow(self.storage_offset(), delta, &offset) &&
               !__builtin_mul_overflow(offset, static_cast<int64_t>(itemsize(self.dtype())), &offset_bytes),
           "[", op, "] index ", index, " in dimension ", d, " of a tensor of shape ", shape_str(self.sizes()),
           ", strides ", shape_str(self.strides()), " and storage offset ", self.storage_offset(),
           " gives a storage offset whose byte count overflows int64");
  return offset;
}

Tensor as_strided_generic(const Tensor& self, IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
  FB_CHECK_VALUE(sizes.size() == strides.size(), "[as_strided] got ", sizes.size(), " sizes but ",
                 strides.size(), " strides: size ", shape_str(sizes), ", stride ", shape_str(strides));
  FB_CHECK_VALUE(offset >= 0, "[as_strided] storage offset must be >= 0, got ", offset);
  int64_t offset_bytes = 0;
  FB_CHECK(!__builtin_mul_overflow(offset, static_cast<int64_t>(itemsize(self.dtype())), &offset_bytes),
           "[as_strided] storage offset ", offset, " of dtype ", dtype_name(self.dtype()),
           " is too large: its byte offset overflows int64");
  for (size_t i = 0; i < sizes.size(); ++i) {
    FB_CHECK_VALUE(sizes[i] >= 0, "[as_strided] negative size in ", shape_str(sizes));
    FB_CHECK_VALUE(strides[i] >= 0, "[as_strided] negative stride in ", shape_str(strides));
  }
  const bool empty = shape_numel(sizes, "as_strided") == 0;
  int64_t last = offset;  // largest element index the view reaches
  for (size_t i = 0; i < sizes.size() && !empty; ++i) {
    int64_t reach = 0;
    FB_CHECK(!__builtin_mul_overflow(sizes[i] - 1, strides[i], &reach) &&
                 !__builtin_add_overflow(last, reach, &last),
             "[as_strided] size ", shape_str(sizes), ", stride ", shape_str(strides), " and offset ", offset,
             " overflow int64");
  }
  const int64_t capacity = static_cast<int64_t>(self.impl()->storage()->nbytes() / itemsize(self.dtype()));
  FB_CHECK_VALUE(empty || last < capacity, "[as_strided] size ", shape_str(sizes), ", stride ",
                 shape_str(strides), " and offset ", offset, " reach element ", last,
                 " of a storage holding only ", capacity, " elements");
  return make_view(self, sizes, strides, offset);
}

Tensor view_generic(const Tensor& self, IntArrayRef sizes) {
  DimVector shape(sizes.size()), strides(sizes.size());
  detail::infer_size_into(sizes, self.numel(), "view", shape);
  const bool viewable = detail::compute_view_strides_into(self.sizes(), self.strides(), shape, strides);
  FB_CHECK_VALUE(
      viewable, "[view] cannot view a tensor of shape ", shape_str(self.sizes()), " and strides ",
      shape_str(self.strides()), " as shape ", shape_str(shape),
      ": its memory is not laid out compatibly (it spans non-contiguous chunks); use .reshape(...) "
      "instead, which copies when needed");
  return make_view(self, shape, strides, self.storage_offset());
}

Tensor permute_generic(const Tensor& self, IntArrayRef dims) {
  const int64_t nd = self.dim();
  FB_CHECK_VALUE(static_cast<int64_t>(dims.size()) == nd, "[permute] got ", dims.size(), " dims ",
                 shape_str(dims), " for a tensor of shape ", shape_str(self.sizes()), " with ", nd, " dims");
  DimVector sizes(nd), strides(nd), seen(nd, 0);
  for (int64_t i = 0; i < nd; ++i) {
    const int64_t d = wrap_dim(dims[i], nd, "permute");
    FB_CHECK_VALUE(!seen[d], "[permute] dim ", d, " repeats in ", shape_str(dims));
    seen[d] = 1;
    sizes[i] = self.sizes()[d];
    strides[i] = self.strides()[d];
  }
  return make_view(self, sizes, strides, self.storage_offset());
}

Tensor transpose_generic(const Tensor& self, int64_t dim0, int64_t dim1) {
  DimVector sizes(self.sizes()), strides(self.strides());
  if (self.dim() == 0) {
    wrap_dim(dim0, 0, "transpose");
    wrap_dim(dim1, 0, "transpose");
    return make_view(self, sizes, strides, self.storage_offset());
  }
  const int64_t a = wrap_dim(dim0, self.dim(), "transpose"), b = wrap_dim(dim1, self.dim(), "transpose");
  std::swap(sizes[a], sizes[b]);
  std::swap(strides[a], strides[b]);
  return make_view(self, sizes, strides, self.storage_offset());
}

Tensor unsqueeze_generic(const Tensor& self, int64_t dim) {
  const int64_t nd = self.dim();
  FB_CHECK_INDEX(dim >= -(nd + 1) && dim <= nd, "[unsqueeze] dimension ", dim, " out of range for a ", nd,
                 "-d tensor (expected in [", -(nd + 1), ", ", nd, "])");
  const int64_t d = dim < 0 ? dim + nd + 1 : dim;
  DimVector sizes(self.sizes()), strides(self.strides());
  // Any stride is right for a size-1 dim; PyTorch's choice, unless it overflows.
  int64_t st = 1;
  if (d < nd && __builtin_mul_overflow(sizes[d], strides[d], &st)) st = 1;
  sizes.insert(d, 1);
  strides.insert(d, st);
  return make_view(self, sizes, strides, self.storage_offset());
}

Tensor squeeze_generic(const Tensor& self, IntArrayRef dims) {
  const int64_t nd = self.dim();
  DimVector drop(nd, 0);
  if (dims.empty()) {
    for (int64_t d = 0; d < nd; ++d) drop[d] = self.sizes()[d] == 1;
  } else {
    for (int64_t dim : dims) {
      if (nd == 0) {
        wrap_dim(dim, 0, "squeeze");
        continue;
      }
      const int64_t d = wrap_dim(dim, nd, "squeeze");
      drop[d] = self.sizes()[d] == 1;  // squeezing a dim of size != 1 is a no-op, as in PyTorch
    }
  }
  DimVector sizes, strides;
  for (int64_t d = 0; d < nd; ++d) {
    if (drop[d]) continue;
    sizes.push_back(self.sizes()[d]);
    strides.push_back(self.strides()[d]);
  }
  return make_view(self, sizes, strides, self.storage_offset());
}

Tensor expand_generic(const Tensor& self, IntArrayRef sizes) {
  const int64_t nd = self.dim(), nn = static_cast<int64_t>(sizes.size());
  FB_CHECK_VALUE(nn >= nd, "[expand] the number of sizes (", nn, ") must be at least the number of dims (",
                 nd, ") of a tensor of shape ", shape_str(self.sizes()), ", got ", shape_str(sizes));
  DimVector out(nn), strides(nn);
  for (int64_t i = nn - 1; i >= 0; --i) {
    const int64_t d = i - (nn - nd);  // matching dim of self, or < 0 for a new leading dim
    if (d < 0) {
      FB_CHECK_VALUE(sizes[i] >= 0, "[expand] size -1 is not allowed for a new leading dim: expanding ",
                     shape_str(self.sizes()), " to ", shape_str(sizes));
      out[i] = sizes[i];
      // As PyTorch: a new dim of size 1 takes the stride a contiguous dim there would have, any other 0.
      strides[i] = sizes[i] == 1 && i + 1 < nn ? out[i + 1] * strides[i + 1] : 0;
      continue;
    }
    const int64_t have = self.sizes()[d];
    const int64_t want = sizes[i] == -1 ? have : sizes[i];
    FB_CHECK_VALUE(want >= 0, "[expand] invalid size ", sizes[i], " in ", shape_str(sizes));
    if (have == want) {
      out[i] = have;
      strides[i] = self.strides()[d];
    } else {
      FB_CHECK_VALUE(have == 1, "[expand] cannot expand shape ", shape_str(self.sizes()), " to ",
                     shape_str(sizes), ": dim ", d, " has size ", have,
                     " (only size-1 dims can be expanded, to ", want, ")");
      out[i] = want;
      strides[i] = 0;
    }
  }
  shape_numel(out, "expand");
  return make_view(self, out, strides, self.storage_offset());
}

Tensor slice_generic(const Tensor& self, int64_t dim, std::optional<int64_t> start,
                     std::optional<int64_t> end, int64_t step) {
  FB_CHECK_INDEX(self.dim() > 0, "[slice] cannot slice a 0-d tensor");
  const int64_t d = wrap_dim(dim, self.dim(), "slice");
  FB_CHECK_VALUE(step > 0, "[slice] step must be positive, got ", step);
  const int64_t n = self.sizes()[d];
  auto clamp = [n](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v < 0 ? *v + n : *v;
    return std::clamp<int64_t>(x, 0, n);
  };
  const int64_t b = clamp(start, 0);
  const int64_t e = std::max(b, clamp(end, n));
  DimVector sizes(self.sizes()), strides(self.strides());
  const int64_t offset = b < n ? offset_at(self, d, b, "slice") : self.storage_offset();
  sizes[d] = e > b ? (e - b - 1) / step + 1 : 0;  // no overflow for huge steps
  // With 2 or more elements, (size - 1) * stride * step stays inside the old
  // dim's reach; with fewer the stride is never applied, so keep it if it overflows.
  int64_t stride = 0;
  if (!__builtin_mul_overflow(strides[d], step, &stride)) strides[d] = stride;
  return make_view(self, sizes, strides, offset);
}

Tensor select_generic(const Tensor& self, int64_t dim, int64_t index) {
  FB_CHECK_INDEX(self.dim() > 0, "[select] cannot index a 0-d tensor");
  const int64_t d = wrap_dim(dim, self.dim(), "select");
  const int64_t n = self.sizes()[d];
  FB_CHECK_INDEX(index >= -n && index < n, "[select] index ", index, " is out of bounds for dimension ", d,
                 " with size ", n);
  const int64_t i = index < 0 ? index + n : index;
  DimVector sizes(self.sizes()), strides(self.strides());
  const int64_t offset = offset_at(self, d, i, "select");
  sizes.erase(d);
  strides.erase(d);
  return make_view(self, sizes, strides, offset);
}

FB_REGISTER_KERNEL(op::as_strided, Generic, as_strided_generic);
FB_REGISTER_KERNEL(op::view, Generic, view_generic);
FB_REGISTER_KERNEL(op::permute, Generic, permute_generic);
FB_REGISTER_KERNEL(op::transpose, Generic, transpose_generic);
FB_REGISTER_KERNEL(op::unsqueeze, Generic, unsqueeze_generic);
FB_REGISTER_KERNEL(op::squeeze, Generic, squeeze_generic);
FB_REGISTER_KERNEL(op::expand, Generic, expand_generic);
FB_REGISTER_KERNEL(op::slice, Generic, slice_generic);
FB_REGISTER_KERNEL(op::select, Generic, select_generic);

}  // namespace
}  // namespace flambeau
