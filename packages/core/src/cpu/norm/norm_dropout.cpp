// CPU kernels: native_dropout, _feature_dropout and native_dropout_backward.
// One pass draws the keep decision of each element (Note [Dropout hash] in
// norm_kernels.h), writes the bool mask and the scaled output; the backward
// reuses the mask (grad * mask * scale, one pass). The key of a call comes
// from the default generator, which reserves one draw per element as the
// other random fills do, so manual_seed reproduces a run and the thread count
// does not change the result. They are structured ops: out kernels filling the
// outputs the meta step allocated (its rules in src/meta/nn_layer_rules.cpp).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <vector>

#include "cpu/low_precision.h"
#include "cpu/write_out.h"
#include "flambeau/error.h"
#include "flambeau/ops.h"
#include "flambeau/parallel.h"
#include "flambeau/random.h"
#include "norm_common.h"
#include "norm_kernels.h"

namespace flambeau {
namespace {

using cpu::contig;

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

// Note [16-bit dropout]
// PyTorch's CPU dropout of a float16/bfloat16 tensor is x * noise, noise the mask in the 16-bit dtype
// divided by 1 - p (1 / 0.9 is 1.109375 in bfloat16), each product rounded once; its gradient is
// grad * noise. Dropout here keeps those bits: the scale is rounded to the 16-bit dtype first.
Tensor times_noise(const Tensor& x, const Tensor& mask, double scale) {
  const Tensor noise = op::mul(to_dtype(mask, x.dtype()), scalar_tensor(scale, x.dtype()));
  return op::mul(x, noise);
}

// Structured ops (Note [Structured kernels]): meta::check_dropout checked input and p; out and mask have
// input's shape. The loops write contiguous results: out and mask themselves, or new tensors copied into
// them (cpu::write_contiguous_outs: out= strided, or sharing memory with input or with each other).
void dropout_fill(const Tensor& out, const Tensor& mask, const Tensor& input, double p, std::optional<bool> train) {
  const char* op = "dropout";
  const int64_t n = input.numel();
  if (cpu::is_low_precision(input.dtype()) && n > 0) {
    // The float32 loop draws the mask (the same draws); then x * noise as PyTorch's CPU dropout
    // (Note [16-bit dropout]).
    dropout_fill(op::empty(input.sizes(), ScalarType::Float32, input.device()), mask,
                 to_dtype(input, ScalarType::Float32), p, train);
    const bool keep_all = (train && !*train) || p == 0;
    cpu::copy_out(out, times_noise(input, mask, keep_all ? 1.0 : p == 1 ? 0.0 : 1.0 / (1.0 - p)));
    return;
  }
  if ((train && !*train) || p == 0) {
    if (n > 0) std::memset(mask.data_ptr(), 1, static_cast<size_t>(n));
    Tensor dst = out;
    op::copy_(dst, input);
    return;
  }
  if (n == 0) return;
  if (p == 1) {
    std::memset(mask.data_ptr(), 0, static_cast<size_t>(n));
    std::memset(out.data_ptr(), 0, static_cast<size_t>(n) * (input.dtype() == ScalarType::Float32 ? 4 : 8));
    return;
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
}

void dropout_out_cpu(const Tensor& out, const Tensor& mask, const Tensor& input, double p,
                     std::optional<bool> train) {
  cpu::write_contiguous_outs<2>({out, mask}, input, [&](const std::array<Tensor, 2>& dst) {
    dropout_fill(dst[0], dst[1], input, p, train);
  });
}

// Channel dropout, forward and backward: y's row r is x's row r times scale where the (N, C) mask keeps
// it, zeros where it does not.
template <class T, class Fns>
void scale_kept_rows(const Fns& k, T* y, const T* x, const uint8_t* m, int64_t rows, int64_t inner, T scale) {
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

// meta::check_feature_dropout checked input (at least (N, C)) and p; mask is (N, C, 1, ...).
void feature_dropout_fill(const Tensor& out, const Tensor& mask, const Tensor& input, double p) {
  const char* op = "feature_dropout";
  const int64_t nb = input.sizes()[0], nc = input.sizes()[1];
  int64_t inner = 1;
  for (int64_t d = 2; d < input.dim(); ++d) inner *= input.sizes()[d];
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
  if (out.numel() == 0) return;
  if (cpu::is_low_precision(input.dtype()))  // Note [16-bit dropout]
    return cpu::copy_out(out, times_noise(input, mask, p < 1 ? 1.0 / (1.0 - p) : 0.0));
  visit_dtype(input.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const auto& k = cpu::norm_fns<T>();
      Tensor hx = contig(input);
      const T* x = hx.data<T>();
      T* y = out.data<T>();
      const T scale = p < 1 ? static_cast<T>(1.0 / (1.0 - p)) : T(0);
      scale_kept_rows(k, y, x, m, rows, inner, scale);
    }
  });
}

void feature_dropout_out_cpu(const Tensor& out, const Tensor& mask, const Tensor& input, double p) {
  cpu::write_contiguous_outs<2>({out, mask}, input, [&](const std::array<Tensor, 2>& dst) {
    feature_dropout_fill(dst[0], dst[1], input, p);
  });
}

// meta::check_dropout_grad checked grad_output and the mask (grad's shape, or (N, C, 1, ...)).
void dropout_backward_out_cpu(const Tensor& out, const Tensor& grad_output, const Tensor& mask, double scale) {
  const char* op = "dropout_backward";
  const bool same = std::ranges::equal(mask.sizes(), grad_output.sizes());
  const int64_t n = grad_output.numel();
  if (n == 0) return;
  if (cpu::is_low_precision(grad_output.dtype()))  // Note [16-bit dropout]
    return cpu::copy_out(out, times_noise(grad_output, mask, scale));
  cpu::write_contiguous(out, {&grad_output, &mask}, [&](const Tensor& dst) {
    visit_dtype(grad_output.dtype(), op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<T>) {
        const auto& k = cpu::norm_fns<T>();
        Tensor hg = contig(grad_output), hm = contig(mask);
        const T* g = hg.data<T>();
        const uint8_t* m = static_cast<const uint8_t*>(hm.data_ptr());
        T* o = dst.data<T>();
        const T sc = static_cast<T>(scale);
        if (same) {
          parallel_for(0, n, kGrainSize,
                       [&](int64_t b, int64_t e) { k.dropout_bwd(g + b, m + b, o + b, e - b, sc); });
          return;
        }
        const int64_t rows = mask.numel();
        scale_kept_rows(k, o, g, m, rows, n / rows, sc);
      }
    });
  });
}

FB_REGISTER_OUT_KERNEL(op::native_dropout, CPU, dropout_out_cpu);
FB_REGISTER_OUT_KERNEL(op::_feature_dropout, CPU, feature_dropout_out_cpu);
FB_REGISTER_OUT_KERNEL(op::native_dropout_backward, CPU, dropout_backward_out_cpu);

}  // namespace
}  // namespace flambeau
