// CPU kernels: copy_ (broadcast, cast, any strides), clone, cast.
#include <cstring>

#include "flambeau/ops.h"
#include "flambeau/type_dispatch.h"
#include "half_convert.h"
#include "loops.h"
#include "tensor_iterator.h"

namespace flambeau {
namespace {

// dst <- src elementwise (src broadcast to dst's shape, converted to dst's dtype).
void copy_into(Tensor& dst, const Tensor& src) {
  const Tensor* in[1] = {&src};
  TensorIterator it("copy_", &dst, dst.dtype(), in, src.dtype(), /*keep_dtype_mask=*/1);
  visit_dtype_all(dst.dtype(), "copy_", [&](auto to_tag) {
    using To = typename decltype(to_tag)::type;
    visit_dtype_all(src.dtype(), "copy_", [&](auto from_tag) {
      using From = typename decltype(from_tag)::type;
      it.for_each(
          [](char** d, const int64_t* s, int64_t n) {
            if constexpr (std::is_same_v<To, From>) {
              if (s[0] == sizeof(To) && s[1] == sizeof(To)) {
                std::memcpy(d[0], d[1], static_cast<size_t>(n) * sizeof(To));
                return;
              }
            } else if constexpr (std::is_same_v<From, float> && is_half_v<To>) {
              // Contiguous float32 -> 16-bit (autocast's casts): the CPU's conversion instructions
              // (half_convert.h), bit for bit the scalar rounding below.
              if (s[0] == 2 && s[1] == 4) {
                const cpu::HalfConvert& c = cpu::half_convert();
                (std::is_same_v<To, BFloat16> ? c.f32_to_bf16 : c.f32_to_f16)(
                    reinterpret_cast<const float*>(d[1]), reinterpret_cast<uint16_t*>(d[0]), n);
                return;
              }
            } else if constexpr (is_half_v<From> && std::is_same_v<To, float>) {
              if (s[0] == 4 && s[1] == 2) {
                const cpu::HalfConvert& c = cpu::half_convert();
                (std::is_same_v<From, BFloat16> ? c.bf16_to_f32 : c.f16_to_f32)(
                    reinterpret_cast<const uint16_t*>(d[1]), reinterpret_cast<float*>(d[0]), n);
                return;
              }
            }
            cpu::base::unary_loop<To, From>(d, s, n, [](From v) { return convert_element_as<To>(v); });
          },
          kMemoryBoundGrain);
    });
  });
}

Tensor& copy_cpu(Tensor& self, const Tensor& src) {
  const bool same = self.data_ptr() == src.data_ptr() && self.dtype() == src.dtype() &&
                    std::ranges::equal(self.sizes(), src.sizes()) &&
                    std::ranges::equal(self.strides(), src.strides());
  if (!same) copy_into(self, src);
  self.impl()->bump_version();
  return self;
}

// Note [Size overflow]: a broadcast (stride-0) view can have more elements
// than any buffer can hold; a copy of it must say so, naming the op.
Tensor clone_cpu(const Tensor& self, MemoryFormat memory_format) {
  shape_nbytes(self.sizes(), self.dtype(), "clone");
  Tensor out = empty_like_in(self, self.dtype(), memory_format);
  copy_into(out, self);
  return out;
}

Tensor cast_cpu(const Tensor& self, ScalarType dtype) {
  shape_nbytes(self.sizes(), dtype, "cast");
  Tensor out = op::empty(self.sizes(), dtype, self.device());
  copy_into(out, self);
  return out;
}

FB_REGISTER_KERNEL(op::copy_, CPU, copy_cpu);
FB_REGISTER_KERNEL(op::clone, CPU, clone_cpu);
FB_REGISTER_KERNEL(op::cast, CPU, cast_cpu);

}  // namespace
}  // namespace flambeau
