// CPU kernel: log_softmax along any dim. Numerically stable: each row is
// shifted by its maximum before exp, so exp never overflows, and
// log_softmax(x) = (x - max) - log(sum(exp(x - max))).
#include <cmath>
#include <limits>
#include <vector>

#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "flambeau/parallel.h"
#include "flambeau/type_dispatch.h"
#include "generic/shape_utils.h"
#include "vec_table.h"

namespace flambeau {
namespace {

Tensor log_softmax_cpu(const Tensor& self, int64_t dim) {
  // float16/bfloat16 (as PyTorch): computed in float32, rounded once.
  if (self.dtype() == ScalarType::Float16 || self.dtype() == ScalarType::BFloat16)
    return op::cast(log_softmax_cpu(op::cast(self, ScalarType::Float32), dim), self.dtype());
  FB_CHECK_TYPE(self.dtype() == ScalarType::Float32 || self.dtype() == ScalarType::Float64,
                "[log_softmax] needs a floating point tensor, got dtype ", dtype_name(self.dtype()));
  const int64_t d = wrap_dim(dim, self.dim(), "log_softmax");
  Tensor out = op::empty(self.sizes(), self.dtype(), self.device());
  if (self.numel() == 0) return out;
  // View the (contiguous) data as (outer, n, inner); a row is n elements `inner` apart.
  const int64_t n = self.dim() == 0 ? 1 : self.sizes()[d];
  int64_t inner = 1;
  for (int64_t i = d + 1; i < self.dim(); ++i) inner *= self.sizes()[i];
  const int64_t outer = self.numel() / (n * inner);
  visit_dtype(self.dtype(), "log_softmax", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      std::vector<T> packed;
      const T* x = self.data<T>();
      if (!self.is_contiguous()) {
        packed.resize(static_cast<size_t>(self.numel()));
        detail::pack_contiguous<T>(self, packed.data());
        x = packed.data();
      }
      T* y = out.data<T>();
      if (inner == 1) {
        // Contiguous rows: vectorized max, shift, exp (the CPU's widest exp kernel,
        // Note [CPU capabilities]) and sum, one scratch row per thread.
        const auto& vt = cpu::vec_table();
        const cpu::Loop1D exp_row = std::is_same_v<T, float> ? vt.f32[cpu::kVecExp] : vt.f64[cpu::kVecExp];
        const auto sum_row = std::is_same_v<T, float> ? vt.sum_f32 : vt.sum_f64;
        const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(n, 1) / 4);
        parallel_for(0, outer, grain, [&](int64_t begin, int64_t end) {
          std::vector<T> scratch(static_cast<size_t>(n));
          const int64_t strides[2] = {sizeof(T), sizeof(T)};
          for (int64_t r = begin; r < end; ++r) {
            const T* xr = x + r * n;
            T* yr = y + r * n;
            T mx = -std::numeric_limits<T>::infinity();
#pragma omp simd reduction(max : mx)
            for (int64_t j = 0; j < n; ++j) mx = xr[j] > mx ? xr[j] : mx;
            if (std::isinf(mx) && mx < 0) mx = 0;
#pragma omp simd
            for (int64_t j = 0; j < n; ++j) yr[j] = xr[j] - mx;
            char* ptrs[2] = {reinterpret_cast<char*>(scratch.data()), reinterpret_cast<char*>(yr)};
            exp_row(ptrs, strides, n, 0.0);
            const T log_s = static_cast<T>(std::log(sum_row(ptrs[0], n, sizeof(T))));
#pragma omp simd
            for (int64_t j = 0; j < n; ++j) yr[j] -= log_s;
          }
        });
        return;
      }
      const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(n, 1) / 4);
      parallel_for(0, outer * inner, grain, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          const int64_t base = (r / inner) * n * inner + r % inner;
          const T* xr = x + base;
          T* yr = y + base;
          T mx = -std::numeric_limits<T>::infinity();
          for (int64_t j = 0; j < n; ++j) mx = std::max(mx, xr[j * inner]);
          if (std::isinf(mx) && mx < 0) mx = 0;  // all -inf: avoid -inf - -inf = nan in the shift
          double s = 0;
          for (int64_t j = 0; j < n; ++j) s += std::exp(static_cast<double>(xr[j * inner] - mx));
          // (x - max) - log(s), not x - (max + log(s)): adding the small log(s)
          // to a large max first would round it away in float32.
          const T log_s = static_cast<T>(std::log(s));
          for (int64_t j = 0; j < n; ++j) yr[j * inner] = (xr[j * inner] - mx) - log_s;
        }
      });
    }
  });
  return out;
}

FB_REGISTER_KERNEL(op::_log_softmax, CPU, log_softmax_cpu);

}  // namespace
}  // namespace flambeau
