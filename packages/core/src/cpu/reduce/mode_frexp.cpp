// CPU out kernels of mode and frexp (structured ops: Note [Structured
// kernels]; ops.yaml, section "mode, frexp, pinv").
//
// mode: per row along `dim`, the values are sorted (NaN last), and the longest
// run of equal values wins; ties go to the first run, i.e. the smallest value,
// and the index is that of the value's last occurrence in the row (PyTorch's
// CPU rule for rows it sorts stably). NaN compares unequal to itself, so each
// NaN is a run of its own, as in PyTorch.
//
// frexp: self = mantissa * 2^exponent with |mantissa| in [0.5, 1), exponent
// int32; 0, inf and NaN give themselves and exponent 0 (PyTorch's values).
// float32/float64 split the bits directly (a branch-free loop for normal
// numbers); subnormals, zero and non-finite values go through std::frexp.
// float16/bfloat16 compute in float32 (every half value is a float32 normal or
// zero, and the mantissa has at most 11 significant bits, so it is exact).

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "cpu/write_out.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "flambeau/parallel.h"
#include "flambeau/type_dispatch.h"
#include "generic/shape_utils.h"

namespace flambeau {
namespace {

// ---- mode ----

/// The value as compared, an integer for every dtype: itself for bool and integers; for floating
/// types the order-preserving unsigned image of its bits (computed in float32 for float16/bfloat16),
/// -0.0 as +0.0, and every NaN the all-ones key (a value of its own, after +inf). Integer keys sort
/// faster than floats with a NaN-aware comparison.
template <class T>
struct ModeKey {
  using K = T;
  static K of(T v) { return v; }
  static bool nan(K) { return false; }
};
template <class F, class U>
struct FloatModeKey {
  using K = U;
  static constexpr U kTop = U(1) << (8 * sizeof(U) - 1);
  static K of(F f) {
    if (std::isnan(f)) return ~U(0);
    if (f == 0) f = 0;  // -0.0 == +0.0
    U b;
    std::memcpy(&b, &f, sizeof(F));
    return (b & kTop) ? ~b : (b | kTop);
  }
  static bool nan(K k) { return k == ~U(0); }
};
template <>
struct ModeKey<float> : FloatModeKey<float, uint32_t> {};
template <>
struct ModeKey<double> : FloatModeKey<double, uint64_t> {};
template <>
struct ModeKey<Half> : FloatModeKey<float, uint32_t> {
  static K of(Half v) { return FloatModeKey<float, uint32_t>::of(static_cast<float>(v)); }
};
template <>
struct ModeKey<BFloat16> : FloatModeKey<float, uint32_t> {
  static K of(BFloat16 v) { return FloatModeKey<float, uint32_t>::of(static_cast<float>(v)); }
};

template <class T>
void mode_rows(const T* x, T* values, int64_t* indices, int64_t outer, int64_t n) {
  using MK = ModeKey<T>;
  using K = typename MK::K;
  const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(1, n));
  parallel_for(0, outer, grain, [&](int64_t b, int64_t e) {
    std::vector<K> keys(static_cast<size_t>(n));
    for (int64_t o = b; o < e; ++o) {
      const T* r = x + o * n;
      for (int64_t i = 0; i < n; ++i) keys[static_cast<size_t>(i)] = MK::of(r[i]);
      // The keys alone are sorted (NaN last); the index is found by a scan of the row afterwards.
      std::sort(keys.begin(), keys.end());  // NaN (all-ones) last
      int64_t best = 0, best_len = 0, run = 0;
      for (int64_t i = 0; i < n; ++i) {
        ++run;
        const K k = keys[static_cast<size_t>(i)];
        const bool end = i + 1 == n || MK::nan(k) || k != keys[static_cast<size_t>(i + 1)];
        if (end) {
          if (run > best_len) {
            best_len = run;
            best = i;
          }
          run = 0;
        }
      }
      const K v = keys[static_cast<size_t>(best)];
      int64_t idx = 0;
      if (MK::nan(v)) {  // a NaN mode (every run of length 1): the first NaN of the row
        while (idx + 1 < n && !MK::nan(MK::of(r[idx]))) ++idx;
      } else {  // the last occurrence of the mode
        idx = n - 1;
        while (idx > 0 && MK::of(r[idx]) != v) --idx;
      }
      values[o] = r[idx];
      indices[o] = idx;
    }
  });
}

// The out kernel (Note [Structured kernels]): the rows' results are contiguous in the order of the
// outputs without dim, which is also the layout of contiguous keepdim outputs.
void mode_out_cpu(const Tensor& values, const Tensor& indices, const Tensor& self, int64_t dim, bool keepdim) {
  (void)keepdim;  // the meta step gave the outputs their shape
  // Every real dtype, as PyTorch (complex raises naming mode and the dtype).
  visit_dtypes<kDtReal>(self.dtype(), "mode", [](auto) {});
  const int64_t nd = self.dim();
  dim = wrap_dim(dim, std::max<int64_t>(nd, 1), "mode");
  const int64_t n = nd == 0 ? 1 : self.sizes()[dim];  // > 0 (meta::check_nonempty_dim, the check step)
  // self with dim moved last, contiguous rows of n.
  Tensor rows;
  if (nd == 0) {
    rows = contiguous(op::reshape(self, Shape{1}));
  } else {
    Shape perm;
    for (int64_t d = 0; d < nd; ++d)
      if (d != dim) perm.push_back(d);
    perm.push_back(dim);
    rows = contiguous(op::permute(self, perm));
  }
  const int64_t outer = n == 0 ? 0 : self.numel() / n;
  cpu::write_contiguous_outs<2>({values, indices}, self, [&](const std::array<Tensor, 2>& dst) {
    if (outer > 0)
      visit_dtypes<kDtReal>(self.dtype(), "mode", [&](auto tag) {
        using T = typename decltype(tag)::type;
        mode_rows<T>(rows.data<T>(), dst[0].data<T>(), dst[1].data<int64_t>(), outer, n);
      });
  });
}

// ---- frexp ----

template <class T>
struct FloatBits;
template <>
struct FloatBits<float> {
  using U = uint32_t;
  static constexpr int kMant = 23, kBias = 126;
  static constexpr U kExpMask = 0xffu;
};
template <>
struct FloatBits<double> {
  using U = uint64_t;
  static constexpr int kMant = 52, kBias = 1022;
  static constexpr U kExpMask = 0x7ffu;
};

/// frexp of one float32/float64 by its bits; the rare cases (zero, subnormal, inf, NaN) by std::frexp.
template <class T>
inline void frexp_one(T x, T* m, int32_t* e) {
  using B = FloatBits<T>;
  using U = typename B::U;
  U bits;
  std::memcpy(&bits, &x, sizeof(T));
  const U ef = (bits >> B::kMant) & B::kExpMask;
  if (ef != 0 && ef != B::kExpMask) {  // normal: replace the exponent by the bias (|m| in [0.5, 1))
    *e = static_cast<int32_t>(ef) - B::kBias;
    const U mb = (bits & ~(B::kExpMask << B::kMant)) | (static_cast<U>(B::kBias) << B::kMant);
    std::memcpy(m, &mb, sizeof(T));
  } else if (ef == 0) {  // zero or subnormal
    int ex = 0;
    *m = std::frexp(x, &ex);
    *e = static_cast<int32_t>(ex);
  } else {  // inf or NaN: itself, exponent 0
    *m = x;
    *e = 0;
  }
}

// Note [Structured kernels]: mantissa (self's dtype, checked floating) and exponent (int32) have self's shape.
void frexp_out_cpu(const Tensor& mantissa_out, const Tensor& exponent_out, const Tensor& self) {
  const ScalarType t = self.dtype();
  const int64_t n = self.numel();
  if (n == 0) return;
  const Tensor x = contiguous(self);
  cpu::write_contiguous_outs<2>({mantissa_out, exponent_out}, self, [&](const std::array<Tensor, 2>& dst) {
    int32_t* ed = dst[1].data<int32_t>();
    visit_dtypes<kDtFloats | kDtHalf>(t, "frexp", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* xd = x.data<T>();
      T* md = dst[0].data<T>();
      parallel_for(0, n, 32768, [&](int64_t b, int64_t e) {
        if constexpr (std::is_floating_point_v<T>) {
          for (int64_t i = b; i < e; ++i) frexp_one<T>(xd[i], md + i, ed + i);
        } else {
          // float16 (5 exponent bits, bias 15) and bfloat16 (8, bias 127) normals by their bits: the
          // exponent field replaced by the bias - 1; zero, subnormals, inf and NaN through float32.
          constexpr int kMant = std::is_same_v<T, Half> ? 10 : 7;
          constexpr uint16_t kMask = std::is_same_v<T, Half> ? 0x1f : 0xff;
          constexpr int kBias = std::is_same_v<T, Half> ? 14 : 126;
          for (int64_t i = b; i < e; ++i) {
            const uint16_t bits = xd[i].x;
            const uint16_t ef = static_cast<uint16_t>((bits >> kMant) & kMask);
            if (ef != 0 && ef != kMask) {
              ed[i] = static_cast<int32_t>(ef) - kBias;
              md[i] = T::from_bits(static_cast<uint16_t>((bits & ~(kMask << kMant)) | (kBias << kMant)));
            } else {
              float m = 0;
              frexp_one<float>(static_cast<float>(xd[i]), &m, ed + i);
              md[i] = static_cast<T>(m);
            }
          }
        }
      });
    });
  });
}

FB_REGISTER_OUT_KERNEL(op::mode, CPU, mode_out_cpu);
FB_REGISTER_OUT_KERNEL(op::frexp, CPU, frexp_out_cpu);

}  // namespace
}  // namespace flambeau
