// CPU kernels: native_dropout, _feature_dropout and native_dropout_backward.
// One pass draws the keep decision of each element (Note [Dropout hash] in
// norm_kernels.h), writes the bool mask and the scaled output; the backward
// reuses the mask (grad * mask * scale, one pass). The key of a call comes
// from the default generator, which reserves one draw per element as the
// other random fills do, so manual_seed reproduces a run and the thread count
// does not change the result.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "flambeau/parallel.h"
#include "flambeau/random.h"
#include "norm_common.h"
#include "norm_kernels.h"

namespace flambeau {
namespace {

using cpu::check_floating;
using cpu::contig;

void check_p(double p, const char* op) {
  FB_CHECK_VALUE(p >= 0 && p <= 1, "[", op, "] dropout probability has to be between 0 and 1, but got ", p);
}

/// The generator key for a call drawing n decisions.
uint64_t dropout_key(int64_t n) {
  Generator& g = default_generator();
  const uint64_t base = g.reserve(static_cast<uint64_t>(std::max<int64_t>(n, 1)));
  return Generator::draw(g.initial_seed(), base);
}

uint32_t keep_threshold(double p) {
  const double t = std::round((1.0 - p) * 4294967296.0);
  return static_cast<uint32_t>(std::clamp(t, 1.0, 4294967295.0));
}

std::tuple<Tensor, Tensor> dropout_cpu(const Tensor& input, double p, std::optional<bool> train) {
  const char* op = "dropout";
  check_floating(input, op, "input");
  check_p(p, op);
  Tensor mask = op::empty(input.sizes(), ScalarType::Bool, input.device());
  const int64_t n = input.numel();
  if ((train && !*train) || p == 0) {
    if (n > 0) std::memset(mask.data_ptr(), 1, static_cast<size_t>(n));
    return {op::clone(input, MemoryFormat::Contiguous), mask};
  }
  Tensor out = op::empty(input.sizes(), input.dtype(), input.device());
  if (n == 0) return {out, mask};
  if (p == 1) {
    std::memset(mask.data_ptr(), 0, static_cast<size_t>(n));
    std::memset(out.data_ptr(), 0, static_cast<size_t>(n) * (input.dtype() == ScalarType::Float32 ? 4 : 8));
    return {out, mask};
  }
  const uint64_t key = dropout_key(n);
  const uint32_t thr = keep_threshold(p);
  visit_dtype(input.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const auto& k = cpu::norm_fns<T>();
      Tensor hx = contig(input);
      const T* x = hx.data<T>();
      T* y = out.data<T>();
      uint8_t* m = static_cast<uint8_t*>(mask.data_ptr());
      const T scale = static_cast<T>(1.0 / (1.0 - p));
      parallel_for(0, n, kGrainSize, [&](int64_t b, int64_t e) {
        while (b < e) {  // chunks never cross a multiple of 2^32 (the hash's high word)
          const uint64_t ub = static_cast<uint64_t>(b);
          const int64_t stop =
              static_cast<int64_t>(std::min<uint64_t>(static_cast<uint64_t>(e), ((ub >> 32) + 1) << 32));
          k.dropout(x + b, y + b, m + b, stop - b, static_cast<uint32_t>(ub), static_cast<uint32_t>(ub >> 32),
                    key, thr, scale);
          b = stop;
        }
      });
    }
  });
  return {out, mask};
}

std::tuple<Tensor, Tensor> feature_dropout_cpu(const Tensor& input, double p) {
  const char* op = "feature_dropout";
  check_floating(input, op, "input");
  check_p(p, op);
  FB_CHECK_VALUE(input.dim() >= 2, "[", op,
                 "] Feature dropout requires at least 2 dimensions in the input (N, C, ...), got shape ",
                 shape_str(input.sizes()));
  const int64_t nb = input.sizes()[0], nc = input.sizes()[1];
  Shape mshape{nb, nc};
  int64_t inner = 1;
  for (int64_t d = 2; d < input.dim(); ++d) {
    mshape.push_back(1);
    inner *= input.sizes()[d];
  }
  Tensor mask = op::empty(mshape, ScalarType::Bool, input.device());
  Tensor out = op::empty(input.sizes(), input.dtype(), input.device());
  const int64_t rows = nb * nc;
  uint8_t* m = static_cast<uint8_t*>(mask.data_ptr());
  if (rows > 0) {
    if (p == 0 || p == 1) {
      std::memset(m, p == 0 ? 1 : 0, static_cast<size_t>(rows));
    } else {
      const uint64_t key = dropout_key(rows);
      const uint32_t thr = keep_threshold(p);
      for (int64_t r = 0; r < rows; ++r) {
        const uint64_t i = static_cast<uint64_t>(r);
        const uint32_t h =
            cpu::dropout_mix(cpu::dropout_mix(static_cast<uint32_t>(i) ^ static_cast<uint32_t>(key)) +
                             (static_cast<uint32_t>(i >> 32) ^ static_cast<uint32_t>(key >> 32)));
        m[r] = h < thr;
      }
    }
  }
  if (out.numel() == 0) return {out, mask};
  visit_dtype(input.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const auto& k = cpu::norm_fns<T>();
      Tensor hx = contig(input);
      const T* x = hx.data<T>();
      T* y = out.data<T>();
      const T scale = p < 1 ? static_cast<T>(1.0 / (1.0 - p)) : T(0);
      const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(inner, 1));
      parallel_for(0, rows, grain, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          if (m[r])
            k.row_scale(y + r * inner, x + r * inner, inner, scale);
          else
            std::memset(y + r * inner, 0, static_cast<size_t>(inner) * sizeof(T));
        }
      });
    }
  });
  return {out, mask};
}

Tensor dropout_backward_cpu(const Tensor& grad_output, const Tensor& mask, double scale) {
  const char* op = "dropout_backward";
  check_floating(grad_output, op, "grad_output");
  FB_CHECK_TYPE(mask.dtype() == ScalarType::Bool, "[", op, "] mask must be a bool tensor, got dtype ",
                dtype_name(mask.dtype()));
  // The mask has grad's shape, or (N, C, 1, ...) for feature dropout.
  const bool same = std::ranges::equal(mask.sizes(), grad_output.sizes());
  bool feature = !same && mask.dim() == grad_output.dim() && mask.dim() >= 2 &&
                 mask.sizes()[0] == grad_output.sizes()[0] && mask.sizes()[1] == grad_output.sizes()[1];
  for (int64_t d = 2; feature && d < mask.dim(); ++d) feature = mask.sizes()[d] == 1;
  FB_CHECK_VALUE(same || feature, "[", op, "] mask shape ", shape_str(mask.sizes()),
                 " does not match grad shape ", shape_str(grad_output.sizes()));
  Tensor out = op::empty(grad_output.sizes(), grad_output.dtype(), grad_output.device());
  const int64_t n = grad_output.numel();
  if (n == 0) return out;
  visit_dtype(grad_output.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const auto& k = cpu::norm_fns<T>();
      Tensor hg = contig(grad_output), hm = contig(mask);
      const T* g = hg.data<T>();
      const uint8_t* m = static_cast<const uint8_t*>(hm.data_ptr());
      T* o = out.data<T>();
      const T sc = static_cast<T>(scale);
      if (same) {
        parallel_for(0, n, kGrainSize,
                     [&](int64_t b, int64_t e) { k.dropout_bwd(g + b, m + b, o + b, e - b, sc); });
        return;
      }
      const int64_t rows = mask.numel(), inner = n / rows;
      const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(inner, 1));
      parallel_for(0, rows, grain, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          if (m[r])
            k.row_scale(o + r * inner, g + r * inner, inner, sc);
          else
            std::memset(o + r * inner, 0, static_cast<size_t>(inner) * sizeof(T));
        }
      });
    }
  });
  return out;
}

FB_REGISTER_KERNEL(op::native_dropout, CPU, dropout_cpu);
FB_REGISTER_KERNEL(op::_feature_dropout, CPU, feature_dropout_cpu);
FB_REGISTER_KERNEL(op::native_dropout_backward, CPU, dropout_backward_cpu);

}  // namespace
}  // namespace flambeau
