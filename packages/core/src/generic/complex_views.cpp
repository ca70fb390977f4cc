// Device-generic kernels of the views that read memory as another dtype:
// view(dtype), and the complex views view_as_real, view_as_complex, real,
// imag. A complex element is two reals side by side, so each is a TensorImpl
// of the other dtype over the same Storage with sizes, strides and offset
// rescaled (element units of the new dtype); nothing is copied, as in PyTorch.
#include <algorithm>

#include "flambeau/error.h"
#include "flambeau/ops.h"

namespace flambeau {
namespace {

Tensor make_typed_view(const Tensor& self, ScalarType dtype, IntArrayRef sizes, IntArrayRef strides,
                       int64_t offset) {
  auto impl = std::make_shared<TensorImpl>(self.impl()->storage(), dtype, sizes, strides, offset);
  impl->set_is_view(true);
  return Tensor(std::move(impl));
}

int64_t times2(int64_t v, const char* op) {
  int64_t r = 0;
  FB_CHECK_VALUE(!__builtin_mul_overflow(v, int64_t{2}, &r), "[", op, "] stride or offset ", v,
                 " overflows int64 when counted in real elements");
  return r;
}

// The geometry of the (..., 2) real view of a complex tensor, in real elements.
struct PairGeometry {
  Shape sizes, strides;
  int64_t offset = 0;
};

PairGeometry real_pairs_geometry(const Tensor& self, const char* op) {
  FB_CHECK_TYPE(is_complex(self.dtype()), "[", op, "] expects a complex tensor, got dtype ",
                dtype_name(self.dtype()));
  PairGeometry g;
  g.sizes.assign(self.sizes().begin(), self.sizes().end());
  for (int64_t s : self.strides()) g.strides.push_back(times2(s, op));
  g.sizes.push_back(2);
  g.strides.push_back(1);
  g.offset = times2(self.storage_offset(), op);
  return g;
}

// The (..., 2) real view of a complex tensor.
Tensor real_pairs(const Tensor& self, const char* op) {
  PairGeometry g = real_pairs_geometry(self, op);
  // (An expanded view of 2**62 complex elements or more has no real view: the product of its
  // sizes, empty dims counted as 1 as in Note [Size overflow], overflows.)
  int64_t n = 1;
  bool fits = true;
  for (int64_t sz : g.sizes) fits = fits && !__builtin_mul_overflow(n, std::max<int64_t>(sz, 1), &n);
  FB_CHECK_VALUE(fits, "[", op, "] the real view of shape ", shape_str(g.sizes),
                 " is too large: the product of its sizes overflows int64");
  return make_typed_view(self, to_real_dtype(self.dtype()), std::move(g.sizes), std::move(g.strides),
                         g.offset);
}

Tensor view_as_real_generic(const Tensor& self) { return real_pairs(self, "view_as_real"); }

Tensor view_as_complex_generic(const Tensor& self) {
  const ScalarType t = self.dtype();
  FB_CHECK_TYPE(t == ScalarType::Float32 || t == ScalarType::Float64,
                "[view_as_complex] is only supported for float32 and float64 tensors, got dtype ",
                dtype_name(t));
  FB_CHECK_VALUE(self.dim() >= 1 && self.sizes().back() == 2,
                 "[view_as_complex] the last dimension must have size 2, got shape ",
                 shape_str(self.sizes()));
  FB_CHECK_VALUE(self.strides().back() == 1,
                 "[view_as_complex] the last dimension must have stride 1, got strides ",
                 shape_str(self.strides()));
  Shape sizes(self.sizes().begin(), self.sizes().end() - 1);
  Shape strides;
  for (int64_t d = 0; d + 1 < self.dim(); ++d) {
    const int64_t s = self.strides()[d];
    FB_CHECK_VALUE(s % 2 == 0 || self.sizes()[d] <= 1,
                   "[view_as_complex] every stride but the last must be even, got strides ",
                   shape_str(self.strides()));
    strides.push_back(s / 2);
  }
  FB_CHECK_VALUE(self.storage_offset() % 2 == 0, "[view_as_complex] the storage offset must be even, got ",
                 self.storage_offset());
  return make_typed_view(self, to_complex_dtype(t), std::move(sizes), std::move(strides),
                         self.storage_offset() / 2);
}

Tensor part(const Tensor& self, int which, const char* op) {
  // From the pairs' geometry, without making the (..., 2) view (whose numel may overflow where self's does
  // not).
  PairGeometry g = real_pairs_geometry(self, op);
  Shape sizes(self.sizes().begin(), self.sizes().end());
  g.strides.pop_back();
  return make_typed_view(self, to_real_dtype(self.dtype()), std::move(sizes), std::move(g.strides),
                         g.offset + which);
}

Tensor real_generic(const Tensor& self) {
  if (!is_complex(self.dtype()))
    return make_typed_view(self, self.dtype(), Shape(self.sizes().begin(), self.sizes().end()),
                           Shape(self.strides().begin(), self.strides().end()), self.storage_offset());
  return part(self, 0, "real");
}

Tensor imag_generic(const Tensor& self) {
  FB_CHECK_TYPE(is_complex(self.dtype()),
                "[imag] is not implemented for tensors with non-complex dtypes, got ",
                dtype_name(self.dtype()));
  return part(self, 1, "imag");
}

// Tensor.view(dtype): the same bytes as `dtype`. Between element sizes that differ, the last dim (stride 1)
// holds `ratio` times more or fewer elements and the other strides and the offset scale with it; PyTorch's
// conditions and words.
Tensor view_dtype_generic(const Tensor& self, ScalarType dtype) {
  const int64_t from = itemsize(self.dtype()), to = itemsize(dtype);
  Shape sizes(self.sizes().begin(), self.sizes().end()), strides(self.strides().begin(), self.strides().end());
  int64_t offset = self.storage_offset();
  if (from == to) return make_typed_view(self, dtype, std::move(sizes), std::move(strides), offset);
  const std::string what = detail::cat_str(" to view ", dtype_name(self.dtype()), " as ", dtype_name(dtype),
                                           " (different element sizes)");
  FB_CHECK_VALUE(self.dim() > 0, "[view] self.dim() cannot be 0", what);
  FB_CHECK_VALUE(strides.back() == 1, "[view] self.stride(-1) must be 1", what, ", but got ", strides.back());
  if (from > to) {  // each element becomes `ratio` smaller ones
    const int64_t ratio = from / to;
    bool fits = !__builtin_mul_overflow(sizes.back(), ratio, &sizes.back()) &&
                !__builtin_mul_overflow(offset, ratio, &offset);
    for (size_t d = 0; d + 1 < strides.size(); ++d) fits = fits && !__builtin_mul_overflow(strides[d], ratio, &strides[d]);
    FB_CHECK_VALUE(fits, "[view] the sizes, strides or offset of shape ", shape_str(self.sizes()), " overflow int64", what);
    return make_typed_view(self, dtype, std::move(sizes), std::move(strides), offset);
  }
  const int64_t ratio = to / from;  // `ratio` elements become one
  FB_CHECK_VALUE(sizes.back() % ratio == 0, "[view] self.size(-1) must be divisible by ", ratio, what,
                 ", but got ", sizes.back());
  for (size_t d = 0; d + 1 < strides.size(); ++d)
    FB_CHECK_VALUE(strides[d] % ratio == 0, "[view] self.stride(", d, ") must be divisible by ", ratio, what,
                   ", but got ", strides[d]);
  FB_CHECK_VALUE(offset % ratio == 0, "[view] self.storage_offset() must be divisible by ", ratio, what,
                 ", but got ", offset);
  sizes.back() /= ratio;
  for (size_t d = 0; d + 1 < strides.size(); ++d) strides[d] /= ratio;
  return make_typed_view(self, dtype, std::move(sizes), std::move(strides), offset / ratio);
}

FB_REGISTER_KERNEL(op::view_dtype, Generic, view_dtype_generic);
FB_REGISTER_KERNEL(op::view_as_real, Generic, view_as_real_generic);
FB_REGISTER_KERNEL(op::view_as_complex, Generic, view_as_complex_generic);
FB_REGISTER_KERNEL(op::real, Generic, real_generic);
FB_REGISTER_KERNEL(op::imag, Generic, imag_generic);

}  // namespace
}  // namespace flambeau
