// CPU kernels of mode and frexp (ops.yaml, section linalgc; issue 7).
//
// mode: per row along `dim`, the (value, index) pairs are sorted stably by
// value (NaN last), and the longest run of equal values wins; ties go to the
// first run, i.e. the smallest value, and the index is that of the run's last
// element, i.e. the last occurrence of the value (PyTorch's CPU rule). NaN
// compares unequal to itself, so each NaN is a run of its own, as in PyTorch.
//
// frexp: self = mantissa * 2^exponent with |mantissa| in [0.5, 1), exponent
// int32; 0, inf and NaN give themselves and exponent 0 (PyTorch's values).
// float32/float64 split the bits directly (a branch-free loop for normal
// numbers); subnormals, zero and non-finite values go through std::frexp.
// float16/bfloat16 compute in float32 (every half value is a float32 normal or
// zero, and the mantissa has at most 11 significant bits, so it is exact).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "flambeau/parallel.h"
#include "flambeau/type_dispatch.h"
#include "generic/shape_utils.h"

namespace flambeau {
namespace {

// ---- mode ----

/// The value as compared: itself for built-in types, float32 for float16/bfloat16.
template <class T>
auto key_of(T v) {
  if constexpr (std::is_arithmetic_v<T>)
    return v;
  else
    return static_cast<float>(v);
}
template <class K>
bool is_nan_key(K k) {
  if constexpr (std::is_floating_point_v<K>)
    return std::isnan(k);
  else
    return false;
}

template <class T>
void mode_rows(const T* x, T* values, int64_t* indices, int64_t outer, int64_t n) {
  using K = decltype(key_of(T{}));
  const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(1, n));
  parallel_for(0, outer, grain, [&](int64_t b, int64_t e) {
    std::vector<std::pair<K, int64_t>> row(static_cast<size_t>(n));
    for (int64_t o = b; o < e; ++o) {
      const T* r = x + o * n;
      for (int64_t i = 0; i < n; ++i) row[static_cast<size_t>(i)] = {key_of(r[i]), i};
      std::stable_sort(row.begin(), row.end(), [](const auto& a, const auto& c) {
        if (is_nan_key(a.first)) return false;
        return is_nan_key(c.first) || a.first < c.first;
      });
      int64_t best = 0, best_len = 0, run = 0;
      for (int64_t i = 0; i < n; ++i) {
        ++run;
        const bool end =
            i + 1 == n || !(row[static_cast<size_t>(i)].first == row[static_cast<size_t>(i + 1)].first);
        if (end) {
          if (run > best_len) {
            best_len = run;
            best = i;
          }
          run = 0;
        }
      }
      const int64_t idx = row[static_cast<size_t>(best)].second;
      values[o] = r[idx];
      indices[o] = idx;
    }
  });
}

std::tuple<Tensor, Tensor> mode_cpu(const Tensor& self, int64_t dim, bool keepdim) {
  // Every real dtype, as PyTorch (complex raises naming mode and the dtype).
  visit_dtypes<kDtReal>(self.dtype(), "mode", [](auto) {});
  const int64_t nd = self.dim();
  dim = wrap_dim(dim, std::max<int64_t>(nd, 1), "mode");
  const int64_t n = nd == 0 ? 1 : self.sizes()[dim];
  FB_CHECK_INDEX(n > 0, "mode(): Expected reduction dim ", dim, " to have non-zero size (input shape ",
                 shape_str(self.sizes()), ")");
  // self with dim moved last, contiguous rows of n.
  Tensor rows;
  Shape out_shape;
  if (nd == 0) {
    rows = contiguous(op::reshape(self, Shape{1}));
  } else {
    Shape perm;
    for (int64_t d = 0; d < nd; ++d)
      if (d != dim) {
        perm.push_back(d);
        out_shape.push_back(self.sizes()[d]);
      }
    perm.push_back(dim);
    rows = contiguous(op::permute(self, perm));
  }
  const int64_t outer = n == 0 ? 0 : self.numel() / n;
  Tensor values = op::empty(out_shape, self.dtype(), self.device());
  Tensor indices = op::empty(out_shape, ScalarType::Int64, self.device());
  if (outer > 0)
    visit_dtypes<kDtReal>(self.dtype(), "mode", [&](auto tag) {
      using T = typename decltype(tag)::type;
      mode_rows<T>(rows.data<T>(), values.data<T>(), indices.data<int64_t>(), outer, n);
    });
  if (keepdim && nd > 0) {
    values = op::unsqueeze(values, dim);
    indices = op::unsqueeze(indices, dim);
  }
  return {values, indices};
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

std::tuple<Tensor, Tensor> frexp_cpu(const Tensor& self) {
  const ScalarType t = self.dtype();
  FB_CHECK_TYPE(t == ScalarType::Float16 || t == ScalarType::BFloat16 || t == ScalarType::Float32 ||
                    t == ScalarType::Float64,
                "frexp: only supports floating-point dtypes (float16, bfloat16, float32, float64), got ",
                dtype_name(t), " (shape ", shape_str(self.sizes()), ")");
  const Tensor x = contiguous(self);
  Tensor mantissa = op::empty(self.sizes(), t, self.device());
  Tensor exponent = op::empty(self.sizes(), ScalarType::Int32, self.device());
  const int64_t n = self.numel();
  if (n == 0) return {mantissa, exponent};
  int32_t* ed = exponent.data<int32_t>();
  visit_dtypes<kDtFloats | kDtHalf>(t, "frexp", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* xd = x.data<T>();
    T* md = mantissa.data<T>();
    parallel_for(0, n, 32768, [&](int64_t b, int64_t e) {
      if constexpr (std::is_floating_point_v<T>) {
        for (int64_t i = b; i < e; ++i) frexp_one<T>(xd[i], md + i, ed + i);
      } else {
        for (int64_t i = b; i < e; ++i) {
          float m = 0;
          frexp_one<float>(static_cast<float>(xd[i]), &m, ed + i);
          md[i] = static_cast<T>(m);
        }
      }
    });
  });
  return {mantissa, exponent};
}

FB_REGISTER_KERNEL(op::mode, CPU, mode_cpu);
FB_REGISTER_KERNEL(op::frexp, CPU, frexp_cpu);

}  // namespace
}  // namespace flambeau
