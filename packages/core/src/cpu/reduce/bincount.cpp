// CPU kernel of _bincount, the kernel bincount (src/composite/statistics.cpp)
// runs on the CPU when no gradient is recorded for its weights.
//
// Note [bincount kernel]
// bincount's composite form reads the input three times (amin, amax, then a
// scatter_add of a tensor of ones). Here the first try is one pass: each
// part of the input (two per thread, claimed dynamically) is counted into its
// own bins for the values below a cap (a few thousand bins, cheap to zero),
// keeping the largest value; the parts are added in order after the join.
// An input with a value outside [0, cap) takes two passes instead: one finds the smallest and largest value
// (refusing a negative one, and a largest value whose max + 1 bins would
// overflow the byte count), one counts into the result. Counts (int64) are
// exact in any split; weighted sums run in input order on one thread, as
// PyTorch's CPU kernel adds them, so they round as its do: in float32 for
// float32 weights, in float64 for every other weight dtype (PyTorch's result
// dtypes).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "flambeau/parallel.h"
#include "flambeau/type_dispatch.h"
#include "generic/shape_utils.h"

namespace flambeau {
namespace {

// The smallest and the largest value, in one pass.
template <class T>
void value_range(const T* x, int64_t n, T& lo, T& hi) {
  T mn = x[0], mx = x[0];
  for (int64_t i = 1; i < n; ++i) {
    mn = x[i] < mn ? x[i] : mn;
    mx = x[i] > mx ? x[i] : mx;
  }
  lo = mn;
  hi = mx;
}

// Adds weight(i) to bins[x[i]] for i in [b, e) where 0 <= x[i] < cap; false (bins then partly written)
// if some value is outside. `largest` gets the largest value counted.
template <class T, class Acc, class Weight>
bool count_below(const T* x, int64_t b, int64_t e, uint64_t cap, Acc* bins, uint64_t& largest,
                 const Weight& weight) {
  uint64_t mx = 0;
  bool inside = true;
  for (int64_t i = b; i < e; ++i) {
    // A negative value converts to a huge one, outside too.
    const uint64_t u = static_cast<uint64_t>(static_cast<int64_t>(x[i]));
    if (u < cap) {
      bins[u] += weight(i);
      mx = u > mx ? u : mx;
    } else {
      inside = false;
    }
  }
  largest = mx;
  return inside;
}

// Parts of at least this many elements split the counting across threads, up to two parts per thread,
// claimed as threads come (Note [Dynamic chunks]): a thread that starts late counts fewer.
constexpr int64_t kSplitCounts = 16384;
constexpr int64_t kPartsPerThread = 2;

// Result dtype: int64 counts, float32 sums of float32 weights, else float64 (PyTorch's).
ScalarType bincount_dtype(const std::optional<Tensor>& weights) {
  if (!weights) return ScalarType::Int64;
  return weights->dtype() == ScalarType::Float32 ? ScalarType::Float32 : ScalarType::Float64;
}

template <class T, class Acc, class Weight>
Tensor bincount_typed(const T* x, int64_t n, int64_t minlength, ScalarType dtype, Device device,
                      const Weight& weight) {
  // One pass over values in [0, cap): `parts` threads (one for weights: their sums in input order).
  const bool counting = std::is_same_v<Acc, int64_t>;
  const int64_t parts =
      counting && !in_parallel_region() && get_num_threads() > 1
          ? std::max<int64_t>(1, std::min<int64_t>(get_num_threads() * kPartsPerThread, n / kSplitCounts))
          : 1;
  const int64_t cap = std::clamp<int64_t>(n / 32, 1024, 65536);
  std::vector<Acc> bins(static_cast<size_t>(parts * cap), Acc(0));
  std::vector<uint64_t> largest(static_cast<size_t>(parts), 0);
  std::vector<char> inside(static_cast<size_t>(parts), 1);
  const int64_t per = (n + parts - 1) / parts;
  const auto part = [&](int64_t p) {
    inside[p] = count_below(x, p * per, std::min(n, (p + 1) * per), static_cast<uint64_t>(cap),
                            bins.data() + p * cap, largest[p], weight);
  };
  if (parts > 1)
    parallel_for(0, parts, 1, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) part(p);
    });
  else
    part(0);
  if (std::all_of(inside.begin(), inside.end(), [](char c) { return c != 0; })) {
    const int64_t top = static_cast<int64_t>(*std::max_element(largest.begin(), largest.end())) + 1;
    Tensor out = zeros(Shape{std::max(minlength, top)}, dtype, device);
    Acc* o = out.data<Acc>();
    for (int64_t p = 0; p < parts; ++p) {
      const Acc* h = bins.data() + p * cap;
      for (int64_t i = 0; i < top; ++i) o[i] += h[i];
    }
    return out;
  }
  // Two passes: the range (checked), then the counts into the result.
  T lo, hi;
  value_range(x, n, lo, hi);
  if constexpr (std::is_signed_v<T>) FB_CHECK_VALUE(lo >= 0, "[bincount] input should contain only non-negative values");
  // max + 1 bins of 8 bytes each must be countable (PyTorch: "maximum value of input overflowed").
  constexpr uint64_t kMaxBins = static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / 8;
  FB_CHECK_VALUE(static_cast<uint64_t>(hi) < kMaxBins, "[bincount] maximum value of input overflowed: ", +hi,
                 " + 1 bins is too many");
  Tensor out = zeros(Shape{std::max(minlength, static_cast<int64_t>(hi) + 1)}, dtype, device);
  Acc* o = out.data<Acc>();
  for (int64_t i = 0; i < n; ++i) o[static_cast<int64_t>(x[i])] += weight(i);
  return out;
}

Tensor bincount_cpu(const Tensor& self, const std::optional<Tensor>& weights, int64_t minlength) {
  // bincount (the composite) checked its arguments; these guard a direct call of _bincount.
  FB_CHECK_VALUE(self.dim() == 1 && is_integral(self.dtype(), false) && minlength >= 0 &&
                     (!weights || (weights->dim() == 1 && weights->numel() == self.numel() &&
                                   !is_complex(weights->dtype()))),
                 "[bincount] invalid arguments for its CPU kernel: input ", dtype_name(self.dtype()), " of shape ",
                 shape_str(self.sizes()), ", minlength ", minlength);
  FB_CHECK_VALUE(minlength <= std::numeric_limits<int64_t>::max() / 8, "[bincount] minlength of ", minlength,
                 " bins is too many");
  const ScalarType dtype = bincount_dtype(weights);
  const int64_t n = self.numel();
  if (n == 0) return zeros(Shape{minlength}, dtype, self.device());
  const Tensor x = self.is_contiguous() ? self : op::contiguous(self, MemoryFormat::Contiguous);
  return visit_dtypes<kDtInts | kDtUInts>(x.dtype(), "bincount", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* xs = x.data<T>();
    if (!weights) return bincount_typed<T, int64_t>(xs, n, minlength, dtype, self.device(), [](int64_t) { return int64_t{1}; });
    // The weights in the result's dtype (a copy for other dtypes and layouts), summed in input order.
    const Tensor w = op::contiguous(op::cast(*weights, dtype), MemoryFormat::Contiguous);
    if (dtype == ScalarType::Float32) {
      const float* ws = w.data<float>();
      return bincount_typed<T, float>(xs, n, minlength, dtype, self.device(), [ws](int64_t i) { return ws[i]; });
    }
    const double* ws = w.data<double>();
    return bincount_typed<T, double>(xs, n, minlength, dtype, self.device(), [ws](int64_t i) { return ws[i]; });
  });
}

}  // namespace

FB_REGISTER_KERNEL(op::_bincount, CPU, bincount_cpu);

}  // namespace flambeau
