// The meta device's own kernels (Note [Meta device], flambeau/meta.h): the
// factories, fills and copies, which have no shape rule in the table because
// they make or write memory. Every other op on meta tensors runs its generated
// Meta kernel (src/meta_generated.cpp), a Generic view, or a composite.
#include "flambeau/memory_format.h"
#include "flambeau/meta.h"
#include "flambeau/ops.h"
#include "tensor_iterator.h"

namespace flambeau {
namespace {

Tensor empty_meta(IntArrayRef sizes, ScalarType dtype, Device) { return meta::empty(sizes, dtype, "empty"); }

// The values are not computed, but the argument checks are the cpu's.
Tensor& fill_meta(Tensor& self, const Scalar& value) {
  check_scalar_fits(value, self.dtype(), "fill_");
  return self;
}

Tensor& copy_meta(Tensor& self, const Tensor& src) {
  if (!self.device().is_meta())
    throw NotImplementedError("[copy_] Cannot copy out of meta tensor; no data!");
  FB_CHECK(src.device().is_meta() || src.device().is_cpu(), "[copy_] cannot copy a ", src.device().str(),
           " tensor into a meta tensor");
  const Tensor* in[1] = {&src};
  detail::check_broadcast_to("copy_", in, self.sizes());
  self.impl()->bump_version();
  return self;
}

Tensor clone_meta(const Tensor& self, MemoryFormat memory_format) {
  shape_nbytes(self.sizes(), self.dtype(), "clone");
  return empty_like_in(self, self.dtype(), memory_format);
}

Tensor cast_meta(const Tensor& self, ScalarType dtype) { return meta::empty(self.sizes(), dtype, "cast"); }

// The random fills draw nothing on meta (PyTorch's meta tensors neither).
Tensor& uniform_meta(Tensor& self, double, double, Generator*) { return self; }
Tensor& normal_meta(Tensor& self, double, double, Generator*) { return self; }
Tensor& random_meta(Tensor& self, int64_t, int64_t, Generator*) { return self; }
Tensor& bernoulli_p_meta(Tensor& self, double, Generator*) { return self; }
Tensor& bernoulli_tensor_meta(Tensor& self, const Tensor&, Generator*) { return self; }

FB_REGISTER_KERNEL(op::empty, Meta, empty_meta);
FB_REGISTER_KERNEL(op::fill_, Meta, fill_meta);
FB_REGISTER_KERNEL(op::copy_, Meta, copy_meta);
FB_REGISTER_KERNEL(op::clone, Meta, clone_meta);
FB_REGISTER_KERNEL(op::cast, Meta, cast_meta);
FB_REGISTER_KERNEL(op::uniform_, Meta, uniform_meta);
FB_REGISTER_KERNEL(op::normal_, Meta, normal_meta);
FB_REGISTER_KERNEL(op::random_, Meta, random_meta);
FB_REGISTER_KERNEL(op::bernoulli_, Meta, bernoulli_p_meta);
FB_REGISTER_KERNEL(op::bernoulli__tensor, Meta, bernoulli_tensor_meta);

}  // namespace
}  // namespace flambeau
