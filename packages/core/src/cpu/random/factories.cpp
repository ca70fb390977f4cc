// CPU kernels: empty, fill_, arange, and the random fills uniform_/normal_
// (Note [Random numbers] in flambeau/random.h).
#include <algorithm>
#include <climits>
#include <cmath>
#include <functional>
#include <numbers>

#include "fill_indexed.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "flambeau/parallel.h"
#include "flambeau/random.h"
#include "flambeau/type_dispatch.h"
#include "generic/shape_utils.h"

namespace flambeau {
namespace {

template <class F>
void detail_for_each(const Tensor& t, F&& f) {
  detail::for_each_offset(t.sizes(), t.strides(), std::forward<F>(f));
}

Tensor empty_cpu(IntArrayRef sizes, ScalarType dtype, Device device) {
  // Note [Size overflow]: the byte count is checked before anything is allocated.
  const int64_t nbytes = shape_nbytes(sizes, dtype, "empty");
  auto storage = StorageImpl::allocate(static_cast<size_t>(nbytes), device);
  Shape s(sizes.begin(), sizes.end());
  Shape st = contiguous_strides(s, "empty");
  return Tensor(std::make_shared<TensorImpl>(std::move(storage), dtype, std::move(s), std::move(st), 0));
}

// An expanded self is fine here (see check_no_internal_overlap in tensor.h).
Tensor& fill_cpu(Tensor& self, const Scalar& value) {
  check_scalar_fits(value, self.dtype(), "fill_");
  visit_dtype_all(self.dtype(), "fill_", [&](auto tag) {
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

// Note [arange length]
// PyTorch's rules. For an integer dtype, start, end and step are converted to
// int64 first (toward zero): arange(2.1, -2.9, -1.0, dtype=int64) is
// arange(2, -2, -1) = [2, 1, 0, -1], and a step that becomes 0 is refused.
// The length is then exact integer arithmetic, and element i is
// start + i * step, wrapped into a narrower dtype as PyTorch does. For a
// floating dtype the length is ceil((end - start) / step) in double, and
// element i is start + i * step in double (so a float32 range does not
// accumulate error), rounded to the dtype. A length beyond int64 raises
// instead of wrapping around (Note [Size overflow]).

int64_t arange_bound_to_int64(const Scalar& v, const char* what, ScalarType dtype) {
  if (!v.is_floating()) return v.to_int();
  const double d = std::trunc(v.to_double());
  FB_CHECK_VALUE(d >= -0x1p63 && d < 0x1p63, "[arange] ", what, " ", v.to_double(),
                 " does not fit in int64, which an arange of dtype ", dtype_name(dtype), " computes in");
  return static_cast<int64_t>(d);
}

[[noreturn]] void arange_inconsistent(double s, double e, double st) {
  throw ValueError(detail::cat_str("[arange] the range from ", s, " to ", e,
                                   " is inconsistent with the sign of step ", st));
}

Tensor arange_integral(const Scalar& start, const Scalar& end, const Scalar& step, ScalarType dtype,
                       Device device) {
  const int64_t si = arange_bound_to_int64(start, "start", dtype);
  const int64_t ei = arange_bound_to_int64(end, "end", dtype);
  const int64_t sti = arange_bound_to_int64(step, "step", dtype);
  FB_CHECK_VALUE(sti != 0, "[arange] step must be nonzero, got ", step.to_double(), ", which is 0 as dtype ",
                 dtype_name(dtype),
                 " (arange converts start, end and step to integers for an integer dtype)");
  if (!((sti > 0 && ei >= si) || (sti < 0 && ei <= si)))
    arange_inconsistent(static_cast<double>(si), static_cast<double>(ei), static_cast<double>(sti));
  // ceil(|ei - si| / |sti|) in uint64, where |ei - si| (which may not fit in int64) is exact.
  const auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
  const uint64_t dist = sti > 0 ? u(ei) - u(si) : u(si) - u(ei);
  const uint64_t abs_step = sti > 0 ? u(sti) : uint64_t{0} - u(sti);
  const uint64_t len = dist / abs_step + (dist % abs_step != 0);
  FB_CHECK(len <= static_cast<uint64_t>(INT64_MAX), "[arange] the range from ", si, " to ", ei, " by step ",
           sti, " has more elements than int64 can count");
  const auto n = static_cast<int64_t>(len);
  shape_nbytes(Shape{n}, dtype, "arange");
  Tensor out = op::empty(Shape{n}, dtype, device);
  visit_dtype_all(dtype, "arange", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = out.data<T>();
    // In uint64, where wrapping is defined; every element fits in int64 (it lies between start and end).
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(static_cast<int64_t>(u(si) + u(i) * u(sti)));
  });
  return out;
}

Tensor arange_cpu(const Scalar& start, const Scalar& end, const Scalar& step, ScalarType dtype,
                  Device device) {
  FB_CHECK_TYPE(dtype != ScalarType::Bool, "[arange] dtype bool is not supported");
  const double s = start.to_double(), e = end.to_double(), st = step.to_double();
  FB_CHECK_VALUE(std::isfinite(s) && std::isfinite(e), "[arange] start and end must be finite, got ", s,
                 " and ", e);
  FB_CHECK_VALUE(st != 0 && std::isfinite(st), "[arange] step must be nonzero and finite, got ", st);
  if (is_integral(dtype, false)) return arange_integral(start, end, step, dtype, device);
  if (!((st > 0 && e >= s) || (st < 0 && e <= s))) arange_inconsistent(s, e, st);
  // e - s may overflow to inf, and the quotient may be huge: both fail this test (as does NaN).
  const double len = std::ceil((e - s) / st);
  FB_CHECK(len < 0x1p63, "[arange] the range from ", s, " to ", e, " by step ", st, " has ", len,
           " elements, more than int64 can count");
  const auto n = static_cast<int64_t>(len);
  shape_nbytes(Shape{n}, dtype, "arange");
  Tensor out = op::empty(Shape{n}, dtype, device);
  visit_dtype_all(dtype, "arange", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = out.data<T>();
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(s + static_cast<double>(i) * st);
  });
  return out;
}

// float16/bfloat16 and complex: drawn in float32 / as the real pairs, as PyTorch.
bool random_other_dtype(Tensor& self, const char* op, const std::function<void(Tensor&)>& draw) {
  const ScalarType t = self.dtype();
  if (t == ScalarType::Float16 || t == ScalarType::BFloat16) {
    Tensor tmp = op::empty(self.sizes(), ScalarType::Float32, self.device());
    draw(tmp);
    op::copy_(self, tmp);
    return true;
  }
  if (is_complex(t)) {
    check_no_internal_overlap(self, op);
    Tensor pairs =
        op::view_as_real(self.is_contiguous() ? self : op::contiguous(self, MemoryFormat::Contiguous));
    draw(pairs);
    if (!self.is_contiguous()) op::copy_(self, op::view_as_complex(pairs));
    self.impl()->bump_version();
    return true;
  }
  return false;
}

Tensor& uniform_cpu(Tensor& self, double low, double high, Generator* gen) {
  if (random_other_dtype(self, "uniform_", [&](Tensor& t) { op::uniform_(t, low, high, gen); })) return self;
  FB_CHECK_VALUE(low <= high, "[uniform_] expects low <= high, got low=", low, ", high=", high);
  FB_CHECK_TYPE(self.dtype() == ScalarType::Float32 || self.dtype() == ScalarType::Float64,
                "[uniform_] needs a floating point tensor, got dtype ", dtype_name(self.dtype()));
  check_no_internal_overlap(self, "uniform_");
  Generator& g = gen ? *gen : default_generator();
  const uint64_t base = g.reserve(static_cast<uint64_t>(self.numel()));
  const uint64_t seed = g.initial_seed();
  const double width = high - low;
  visit_dtype(self.dtype(), "uniform_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      cpu::fill_indexed<T>(self, [&](int64_t i) {
        T v = static_cast<T>(low + width * Generator::to_unit(Generator::draw(seed, base + i)));
        // Rounding to float may land on `high`; keep the interval half-open.
        if (v >= static_cast<T>(high) && high > low)
          v = std::nextafter(static_cast<T>(high), static_cast<T>(low));
        return v;
      });
    }
  });
  self.impl()->bump_version();
  return self;
}

// Box-Muller: elements 2j and 2j+1 come from draws 2j and 2j+1 (the cosine
// and sine halves of one pair), so each element depends only on its own index.
template <class T>
void normal_pair(uint64_t seed, uint64_t counter, double mean, double std, T* out2) {
  const double u1 = 1.0 - Generator::to_unit(Generator::draw(seed, counter));  // (0, 1]: log is finite
  const double u2 = Generator::to_unit(Generator::draw(seed, counter + 1));
  const double r = std * std::sqrt(-2.0 * std::log(u1));
  const double theta = 2.0 * std::numbers::pi * u2;
  out2[0] = static_cast<T>(mean + r * std::cos(theta));
  out2[1] = static_cast<T>(mean + r * std::sin(theta));
}

Tensor& normal_cpu(Tensor& self, double mean, double std, Generator* gen) {
  FB_CHECK_VALUE(std >= 0, "[normal_] expects std >= 0, got ", std);
  // Complex: each part N(mean, std^2 / 2), so that E|z - mean|^2 = std^2 (PyTorch's randn).
  const double part_std = is_complex(self.dtype()) ? std / std::numbers::sqrt2 : std;
  if (random_other_dtype(self, "normal_", [&](Tensor& t) { op::normal_(t, mean, part_std, gen); }))
    return self;
  FB_CHECK_TYPE(self.dtype() == ScalarType::Float32 || self.dtype() == ScalarType::Float64,
                "[normal_] needs a floating point tensor, got dtype ", dtype_name(self.dtype()));
  check_no_internal_overlap(self, "normal_");
  Generator& g = gen ? *gen : default_generator();
  const int64_t n = self.numel();
  const uint64_t base = g.reserve(static_cast<uint64_t>(n + (n & 1)));
  const uint64_t seed = g.initial_seed();
  visit_dtype(self.dtype(), "normal_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      T* p = self.data<T>();
      if (self.is_contiguous()) {
        // Whole pairs per chunk, so no two threads write one pair.
        parallel_for(0, (n + 1) / 2, kGrainSize / 8, [&](int64_t b, int64_t e) {
          T pair[2];
          for (int64_t j = b; j < e; ++j) {
            normal_pair<T>(seed, base + 2 * static_cast<uint64_t>(j), mean, std, pair);
            p[2 * j] = pair[0];
            if (2 * j + 1 < n) p[2 * j + 1] = pair[1];
          }
        });
      } else {
        int64_t i = 0;
        T pair[2];
        detail_for_each(self, [&](int64_t off) {
          if ((i & 1) == 0) normal_pair<T>(seed, base + static_cast<uint64_t>(i), mean, std, pair);
          p[off] = pair[i & 1];
          ++i;
        });
      }
    }
  });
  self.impl()->bump_version();
  return self;
}

FB_REGISTER_KERNEL(op::empty, CPU, empty_cpu);
FB_REGISTER_KERNEL(op::fill_, CPU, fill_cpu);
FB_REGISTER_KERNEL(op::arange, CPU, arange_cpu);
FB_REGISTER_KERNEL(op::uniform_, CPU, uniform_cpu);
FB_REGISTER_KERNEL(op::normal_, CPU, normal_cpu);

}  // namespace
}  // namespace flambeau
