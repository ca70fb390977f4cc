// CPU kernels: cat, gather, scatter_add.
#include <cstring>

#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "flambeau/parallel.h"
#include "flambeau/type_dispatch.h"
#include "generic/shape_utils.h"

namespace flambeau {
namespace {

Tensor cat_cpu(const TensorList& tensors, int64_t dim) {
  FB_CHECK_VALUE(!tensors.empty(), "[cat] expected a non-empty list of tensors");
  // As in PyTorch, 1-D empty tensors are skipped (legacy: they act as "nothing").
  TensorList parts;
  for (const auto& t : tensors)
    if (!(t.dim() == 1 && t.numel() == 0)) parts.push_back(t);
  ScalarType dtype = tensors[0].dtype();
  for (const auto& t : tensors) dtype = promote_types(dtype, t.dtype());
  if (parts.empty()) return op::empty(Shape{0}, dtype, tensors[0].device());
  const Tensor& ref = parts[0];
  FB_CHECK_VALUE(ref.dim() > 0, "[cat] zero-dimensional tensor cannot be concatenated");
  const int64_t d = wrap_dim(dim, ref.dim(), "cat");
  Shape out_shape(ref.sizes().begin(), ref.sizes().end());
  out_shape[d] = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const Tensor& t = parts[i];
    FB_CHECK(t.device() == ref.device(), "[cat] all tensors must be on the same device, got ",
             ref.device().str(), " and ", t.device().str());
    FB_CHECK_VALUE(t.dim() == ref.dim(), "[cat] tensors must have the same number of dims: shape ",
                   shape_str(ref.sizes()), " and shape ", shape_str(t.sizes()));
    for (int64_t k = 0; k < ref.dim(); ++k)
      FB_CHECK_VALUE(k == d || t.sizes()[k] == ref.sizes()[k], "[cat] sizes must match except in dimension ",
                     d, ": shapes ", shape_str(ref.sizes()), " and ", shape_str(t.sizes()),
                     " differ in dimension ", k);
    out_shape[d] += t.sizes()[d];
  }
  Tensor out = op::empty(out_shape, dtype, ref.device());
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < d; ++k) outer *= out_shape[k];
  for (int64_t k = d + 1; k < ref.dim(); ++k) inner *= out_shape[k];
  const int64_t out_row = out_shape[d] * inner;  // elements per outer index in out
  visit_dtype(dtype, "cat", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = out.data<T>();
    int64_t at = 0;  // offset along dim
    for (const auto& t : parts) {
      const Tensor src = t.dtype() == dtype ? t : op::cast(t, dtype);
      const int64_t chunk = src.sizes()[d] * inner;
      if (src.is_contiguous()) {
        const T* s = src.data<T>();
        if (outer == 1) {  // one block: split the copy itself across threads
          T* dst = o + at * inner;
          parallel_for(0, chunk, kGrainSize * 4, [&](int64_t b, int64_t e) {
            std::memcpy(dst + b, s + b, static_cast<size_t>(e - b) * sizeof(T));
          });
        } else {
          const int64_t grain = std::max<int64_t>(1, kGrainSize * 4 / std::max<int64_t>(chunk, 1));
          parallel_for(0, outer, grain, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i)
              std::memcpy(o + i * out_row + at * inner, s + i * chunk,
                          static_cast<size_t>(chunk) * sizeof(T));
          });
        }
      } else {
        const T* s = src.data<T>();
        int64_t i = 0;
        detail::for_each_offset(src.sizes(), src.strides(), [&](int64_t off) {
          o[(i / chunk) * out_row + at * inner + i % chunk] = s[off];
          ++i;
        });
      }
      at += src.sizes()[d];
    }
  });
  return out;
}

// Walks every position of `index` (row-major), calling f(index_off, pos) where
// pos holds the coordinates.
template <class F>
void for_each_position(const Tensor& index, F&& f) {
  const int64_t nd = index.dim();
  Shape pos(nd, 0);
  const int64_t n = index.numel();
  int64_t off = 0;
  for (int64_t i = 0; i < n; ++i) {
    f(off, pos);
    for (int64_t k = nd - 1; k >= 0; --k) {
      if (++pos[k] < index.sizes()[k]) {
        off += index.strides()[k];
        break;
      }
      off -= (index.sizes()[k] - 1) * index.strides()[k];
      pos[k] = 0;
    }
  }
}

int64_t dot_offset(const Shape& pos, IntArrayRef strides, int64_t skip_dim, int64_t at) {
  int64_t off = 0;
  for (size_t k = 0; k < pos.size(); ++k)
    off += (static_cast<int64_t>(k) == skip_dim ? at : pos[k]) * strides[k];
  return off;
}

void check_index(const char* op, const Tensor& self, int64_t d, const Tensor& index) {
  FB_CHECK_TYPE(index.dtype() == ScalarType::Int64, "[", op, "] index must be an int64 tensor, got dtype ",
                dtype_name(index.dtype()));
  FB_CHECK_VALUE(index.dim() == self.dim(), "[", op, "] index must have as many dims as self: index shape ",
                 shape_str(index.sizes()), ", self shape ", shape_str(self.sizes()));
  for (int64_t k = 0; k < self.dim(); ++k)
    FB_CHECK_VALUE(k == d || index.sizes()[k] <= self.sizes()[k], "[", op, "] index shape ",
                   shape_str(index.sizes()), " is larger than self shape ", shape_str(self.sizes()),
                   " in dimension ", k);
}

Tensor gather_cpu(const Tensor& self, int64_t dim, const Tensor& index) {
  const int64_t d = wrap_dim(dim, self.dim(), "gather");
  check_index("gather", self, d, index);
  Tensor out = op::empty(index.sizes(), self.dtype(), self.device());
  const int64_t n = self.dim() == 0 ? 1 : self.sizes()[d];
  const int64_t* idx = index.data<int64_t>();
  visit_dtype(self.dtype(), "gather", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* s = self.data<T>();
    T* o = out.data<T>();
    int64_t i = 0;
    for_each_position(index, [&](int64_t ioff, const Shape& pos) {
      const int64_t v = idx[ioff];
      FB_CHECK_INDEX(v >= 0 && v < n, "[gather] index ", v, " is out of bounds for dimension ", d,
                     " with size ", n);
      o[i++] = s[dot_offset(pos, self.strides(), d, v)];
    });
  });
  return out;
}

Tensor scatter_add_cpu(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  const int64_t d = wrap_dim(dim, self.dim(), "scatter_add");
  check_index("scatter_add", self, d, index);
  FB_CHECK_TYPE(src.dtype() == self.dtype(), "[scatter_add] src dtype ", dtype_name(src.dtype()),
                " must match self dtype ", dtype_name(self.dtype()));
  FB_CHECK_VALUE(src.dim() == index.dim(), "[scatter_add] src must have as many dims as index: src shape ",
                 shape_str(src.sizes()), ", index shape ", shape_str(index.sizes()));
  for (int64_t k = 0; k < src.dim(); ++k)
    FB_CHECK_VALUE(index.sizes()[k] <= src.sizes()[k], "[scatter_add] index shape ", shape_str(index.sizes()),
                   " is larger than src shape ", shape_str(src.sizes()), " in dimension ", k);
  Tensor out = op::empty(self.sizes(), self.dtype(), self.device());
  const Shape out_strides = contiguous_strides(self.sizes());
  const int64_t n = self.dim() == 0 ? 1 : self.sizes()[d];
  const int64_t* idx = index.data<int64_t>();
  visit_dtype(self.dtype(), "scatter_add", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = out.data<T>();
    detail::pack_contiguous<T>(self, o);
    const T* s = src.data<T>();
    for_each_position(index, [&](int64_t ioff, const Shape& pos) {
      const int64_t v = idx[ioff];
      FB_CHECK_INDEX(v >= 0 && v < n, "[scatter_add] index ", v, " is out of bounds for dimension ", d,
                     " with size ", n);
      const T add = s[dot_offset(pos, src.strides(), -1, 0)];
      T& dst = o[dot_offset(pos, out_strides, d, v)];
      if constexpr (std::is_same_v<T, bool>)
        dst = dst || add;
      else
        dst += add;
    });
  });
  return out;
}

FB_REGISTER_KERNEL(op::cat, CPU, cat_cpu);
FB_REGISTER_KERNEL(op::gather, CPU, gather_cpu);
FB_REGISTER_KERNEL(op::scatter_add, CPU, scatter_add_cpu);

}  // namespace
}  // namespace flambeau
