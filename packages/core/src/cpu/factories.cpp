// CPU kernels: empty, fill_ (and, later, arange and random fills).
#include <algorithm>

#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "flambeau/parallel.h"
#include "flambeau/type_dispatch.h"

namespace flambeau {
namespace {

Tensor empty_cpu(IntArrayRef sizes, ScalarType dtype, Device device) {
  const int64_t n = shape_numel(sizes);
  auto storage = StorageImpl::allocate(static_cast<size_t>(n) * itemsize(dtype), device);
  Shape s(sizes.begin(), sizes.end());
  Shape st = contiguous_strides(s);
  return Tensor(std::make_shared<TensorImpl>(std::move(storage), dtype, std::move(s), std::move(st), 0));
}

Tensor& fill_cpu(Tensor& self, const Scalar& value) {
  visit_dtype(self.dtype(), "fill_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T v = value.to<T>();
    if (self.is_contiguous()) {
      T* p = self.data<T>();
      parallel_for(0, self.numel(), kGrainSize, [&](int64_t b, int64_t e) { std::fill(p + b, p + e, v); });
    } else {
      // General strides: walk the index space with a counter.
      const int64_t nd = self.dim();
      Shape idx(nd, 0);
      T* base = self.data<T>();
      for (int64_t i = 0; i < self.numel(); ++i) {
        int64_t off = 0;
        for (int64_t d = 0; d < nd; ++d) off += idx[d] * self.strides()[d];
        base[off] = v;
        for (int64_t d = nd - 1; d >= 0; --d) {
          if (++idx[d] < self.sizes()[d]) break;
          idx[d] = 0;
        }
      }
    }
  });
  self.impl()->bump_version();
  return self;
}

FB_REGISTER_KERNEL(op::empty, CPU, empty_cpu);
FB_REGISTER_KERNEL(op::fill_, CPU, fill_cpu);

}  // namespace
}  // namespace flambeau
