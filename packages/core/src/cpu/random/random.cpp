// CPU kernels: random_ (integers on [low, high)), randperm, and bernoulli_
// with a number or tensor probability. Each element's value depends only on
// its index and the reserved counter (Note [Random numbers]), so results do
// not depend on the thread count.
#include "flambeau/random.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>
#include <vector>

#include "fill_indexed.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "flambeau/parallel.h"
#include "flambeau/type_dispatch.h"
#include "generic/shape_utils.h"

namespace flambeau {
namespace {

/// A draw mapped to [0, range) by a 64x64 -> 128-bit multiply (Lemire; the
/// bias is below 2^-64 * range, far under what a test could see).
inline uint64_t below(uint64_t bits, uint64_t range) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(bits) * range) >> 64);
}

Tensor& random_cpu(Tensor& self, int64_t low, int64_t high, Generator* gen) {
  FB_CHECK_VALUE(low < high, "[random_] expects 'from' to be less than 'to', but got from=", low,
                 " >= to=", high);
  Generator& g = gen ? *gen : default_generator();
  const uint64_t base = g.reserve(static_cast<uint64_t>(self.numel()));
  const uint64_t seed = g.initial_seed();
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  visit_dtype(self.dtype(), "random_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      FB_CHECK_VALUE(low >= 0 && high <= 2, "[random_] bool tensors take values in [0, 2), got [", low, ", ",
                     high, ")");
    } else if constexpr (std::is_integral_v<T>) {
      FB_CHECK_VALUE(low >= static_cast<int64_t>(std::numeric_limits<T>::lowest()) &&
                         high - 1 <= static_cast<int64_t>(std::numeric_limits<T>::max()),
                     "[random_] the range [", low, ", ", high, ") does not fit dtype ",
                     dtype_name(self.dtype()));
    }
    cpu::fill_indexed<T>(self, [&](int64_t i) {
      return static_cast<T>(
          static_cast<int64_t>(static_cast<uint64_t>(low) + below(Generator::draw(seed, base + i), range)));
    });
  });
  self.impl()->bump_version();
  return self;
}

// Fisher-Yates from the top: swap i with a draw below i + 1.
Tensor randperm_cpu(int64_t n, Generator* gen, ScalarType dtype, Device device) {
  FB_CHECK_VALUE(n >= 0, "[randperm] n must be non-negative, got ", n);
  FB_CHECK_TYPE(dtype != ScalarType::Bool || n <= 2, "[randperm] n=", n, " does not fit dtype bool");
  Generator& g = gen ? *gen : default_generator();
  const uint64_t base = g.reserve(static_cast<uint64_t>(n));
  const uint64_t seed = g.initial_seed();
  std::vector<int64_t> perm(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) perm[i] = i;
  for (int64_t i = n - 1; i > 0; --i)
    std::swap(perm[i], perm[below(Generator::draw(seed, base + i), static_cast<uint64_t>(i + 1))]);
  Tensor out = op::empty(Shape{n}, dtype, device);
  visit_dtype(dtype, "randperm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool> && std::is_integral_v<T>)
      FB_CHECK_VALUE(n == 0 || n - 1 <= static_cast<int64_t>(std::numeric_limits<T>::max()),
                     "[randperm] n=", n, " does not fit dtype ", dtype_name(dtype));
    T* p = out.data<T>();
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(perm[i]);
  });
  return out;
}

Tensor& bernoulli_p_cpu(Tensor& self, double p, Generator* gen) {
  FB_CHECK_VALUE(p >= 0 && p <= 1, "[bernoulli_] expects p to be in [0, 1], but got p=", p);
  Generator& g = gen ? *gen : default_generator();
  const uint64_t base = g.reserve(static_cast<uint64_t>(self.numel()));
  const uint64_t seed = g.initial_seed();
  // float16/bfloat16 too: 0 and 1 are exact (the same draws as any dtype).
  visit_dtypes<kDtBool | kDtInts | kDtFloats | kDtHalf>(self.dtype(), "bernoulli_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    cpu::fill_indexed<T>(self, [&](int64_t i) {
      return static_cast<T>(Generator::to_unit(Generator::draw(seed, base + i)) < p ? 1.0f : 0.0f);
    });
  });
  self.impl()->bump_version();
  return self;
}

Tensor& bernoulli_tensor_cpu(Tensor& self, const Tensor& p, Generator* gen) {
  FB_CHECK_TYPE(is_floating(p.dtype()),
                "[bernoulli_] expects a floating point probability tensor, got dtype ",
                dtype_name(p.dtype()));
  // p broadcast to self's shape, as float64 in row-major order.
  const Tensor probs =
      op::cast(op::contiguous(op::expand(p, self.sizes()), MemoryFormat::Contiguous), ScalarType::Float64);
  const double* q = probs.data<double>();
  const int64_t n = self.numel();
  for (int64_t i = 0; i < n; ++i)
    FB_CHECK_VALUE(q[i] >= 0 && q[i] <= 1, "[bernoulli_] expects all elements of p to be in [0, 1], got ",
                   q[i]);
  Generator& g = gen ? *gen : default_generator();
  const uint64_t base = g.reserve(static_cast<uint64_t>(n));
  const uint64_t seed = g.initial_seed();
  visit_dtypes<kDtBool | kDtInts | kDtFloats | kDtHalf>(self.dtype(), "bernoulli_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    cpu::fill_indexed<T>(self, [&](int64_t i) {
      return static_cast<T>(Generator::to_unit(Generator::draw(seed, base + i)) < q[i] ? 1.0f : 0.0f);
    });
  });
  self.impl()->bump_version();
  return self;
}

FB_REGISTER_KERNEL(op::random_, CPU, random_cpu);
FB_REGISTER_KERNEL(op::randperm, CPU, randperm_cpu);
FB_REGISTER_KERNEL(op::bernoulli_, CPU, bernoulli_p_cpu);
FB_REGISTER_KERNEL(op::bernoulli__tensor, CPU, bernoulli_tensor_cpu);

}  // namespace
}  // namespace flambeau
